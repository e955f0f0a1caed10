"""vLLM's JSON log format, read into the same lines as a plain log.

vLLM 0.31+ (`LoggingConfig.formatter = "json"`, `--logging-config.formatter json`) logs through
python-json-logger's `JsonFormatter` with `JSON_FORMAT = "%(asctime)s %(levelname)s %(name)s
%(processName)s %(process)d %(message)s"`: one object per record and line,
`{"asctime": "2026-11-01 09:43:12,345", "levelname": "ERROR", "name": "vllm.v1.engine.core",
"processName": "EngineCore_DP0", "process": 4242, "message": "...", "exc_info": "Traceback ...",
"vllm_process_name": "EngineCore_DP0"}`. `exc_info` (a `logger.exception` traceback) and
`stack_info` are separate keys, every line break inside a value is the escape `\\n`, and
non-ASCII text is `\\uXXXX` (`ensure_ascii`). `vllm_process_name` is an extra of vLLM's record
factory (`Worker_TP1`), which the plain format prints and `processName` (`VllmWorker-1`) is not.
Lines vLLM's handler does not write stay plain in the same file: Python's own tracebacks
(`multiprocessing`'s `Process EngineCore_DP0:`), uvicorn, tqdm bars.

`transcribe` writes each record as vLLM's plain 0.31+ formatter would have (`(Name pid=N) LEVEL
MM-DD HH:MM:SS.mmm [file.py:0] message`, one header per line of the message, its traceback and its
stack, as `NewLineFormatter` repeats it) and copies every other line as it is, so the analysis
sees the lines of a plain log. `TranscriptLines` maps every position of that transcript back to
the JSON file's own line and column: a root cause inside a traceback lands on its escaped text in
the object's line.
"""

from __future__ import annotations

import bisect
from array import array

from . import regexes
from .linebreaks import NewlineLines
from .records import dataclass
from .text import Text

# How far into a line a runtime's prefix (`svc  | `, a CRI timestamp) may push the object.
_MAX_LEAD = 200
# Lines sampled from the start of a log to tell whether it is vLLM's JSON format.
_SNIFF_LINES = 200
_SNIFF_CHARS = 1 << 20
#: How much of a text `looks_like_json_log` reads (a text that only grows past it keeps its answer).
SNIFF_CHARS = _SNIFF_CHARS
# The keys that make an object a log record of python-json-logger with vLLM's format.
_RECORD_KEYS = ("levelname", "message")
_ASCTIME = regexes.compile(r"\d{4}-(\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[,.](\d+))?")
_NAME_CHARS = regexes.compile(r"[^\w.\-]")
# (`json` is imported by the first line that may be a record: a plain log never needs it, and
# its import, whose decoder compiles regexes, costs a short check.)
try:
    from _json import scanstring as _SCANSTRING  # json's C string scanner
except ImportError:  # an interpreter without the accelerator
    from json.decoder import py_scanstring as _SCANSTRING  # type: ignore[attr-defined,no-redef]
_DECODERS: list = []  # the one JSONDecoder, made on first need
_WHITESPACE = " \t\n\r"


# The values that hold text with line breaks: the message, `logger.exception`'s traceback, a stack.
_TEXT_KEYS = ("message", "exc_info", "stack_info")
# A log collector's JSON lines hold one line of the log as printed per object, under one of these
# keys: docker's json-file driver `log` (with its `\n`), Loki's `line`, Google Cloud Logging's
# `textPayload`, journald's `MESSAGE`, and `message` in an export without vLLM's `levelname`
# (CloudWatch, Elasticsearch). The first present is the line.
_COLLECTOR_KEYS = ("log", "line", "textPayload", "MESSAGE", "message")
# A file is read as a collector's when at least this share of its sampled lines are its objects
# (one object of vLLM's format is enough; a collector's object could be any line a program
# printed, such as an HTTP error's body).
_COLLECTOR_SHARE = 0.9


@dataclass(frozen=True)
class Record:
    """One JSON log record on a line: where its `{` is, its values, and for each text value
    (`keys`) the column just after its opening quote. `collected`: a log collector's object,
    whose one text value is a line of the log as printed (`_COLLECTOR_KEYS`); else vLLM's
    record (`_TEXT_KEYS`)."""

    lead: int
    values: dict[str, object]
    starts: dict[str, int]
    keys: tuple[str, ...] = _TEXT_KEYS
    collected: bool = False


def parse_record(line: str) -> Record | None:
    """The record `line` holds (after an optional runtime prefix), else None. Never raises."""
    lead = line.find('{"', 0, _MAX_LEAD)
    if lead < 0 or not line.rstrip().endswith("}"):
        return None
    import json

    try:
        values = json.loads(line[lead:])  # C speed; the positions are found after
    except (ValueError, RecursionError):
        return None
    if not isinstance(values, dict):
        return None
    keys = _text_keys(values)
    if keys is None:
        return None
    starts = _text_starts(line, lead, values, keys)
    if starts is None:
        try:
            starts = _scan_starts(line, lead)
        except (ValueError, IndexError):
            return None
    return Record(lead, values, starts, keys, collected=keys is not _TEXT_KEYS)


def _text_keys(values: dict[str, object]) -> tuple[str, ...] | None:
    """The keys of an object's text: vLLM's record's, a collector's line's, or None."""
    if all(isinstance(values.get(key), str) for key in _RECORD_KEYS):
        return _TEXT_KEYS
    key = next((key for key in _COLLECTOR_KEYS if isinstance(values.get(key), str)), None)
    return None if key is None else (key,)


def _text_starts(
    line: str, lead: int, values: dict[str, object], keys: tuple[str, ...]
) -> dict[str, int] | None:
    """Where each text value starts, found as `"key": "` (json.dumps's separators; inside a
    string every quote is escaped, so the first such key after `{` or `, ` is the record's own),
    each checked by decoding it there. None: another layout; scan it."""
    starts = {}
    for key in keys:
        value = values.get(key)
        if not isinstance(value, str):
            continue
        marker = f'"{key}": "'
        at = line.find(marker, lead)
        while at > lead and line[at - 1] not in "{ ":
            at = line.find(marker, at + 1)
        if at < 0:
            return None
        start = at + len(marker)
        try:
            if _SCANSTRING(line, start)[0] != value:
                return None
        except ValueError:
            return None
        starts[key] = start
    return starts


def _raw_decode(line: str, pos: int) -> int:
    """Where the JSON value at `pos` ends (ValueError when there is none)."""
    if not _DECODERS:
        import json

        _DECODERS.append(json.JSONDecoder())
    return _DECODERS[0].raw_decode(line, pos)[1]


def _scan_starts(line: str, pos: int) -> dict[str, int]:
    """Where each top-level string value of the object at `pos` starts (any JSON layout)."""
    starts: dict[str, int] = {}
    pos = _skip_space(line, pos + 1)
    if line[pos] == "}":
        return starts
    while True:
        if line[pos] != '"':
            raise ValueError("a key must be a string")
        key, pos = _SCANSTRING(line, pos + 1)
        pos = _skip_space(line, pos)
        if line[pos] != ":":
            raise ValueError("':' expected")
        pos = _skip_space(line, pos + 1)
        if line[pos] == '"':
            starts[key] = pos + 1
            end = _SCANSTRING(line, pos + 1)[1]
        else:
            end = _raw_decode(line, pos)
        pos = _skip_space(line, end)
        if line[pos] == "}":
            return starts
        if line[pos] != ",":
            raise ValueError("',' expected")
        pos = _skip_space(line, pos + 1)


def _skip_space(line: str, pos: int) -> int:
    while line[pos] in _WHITESPACE:
        pos += 1
    return pos


def raw_column(line: str, start: int, decoded: int) -> int:
    """The column in `line` of code point `decoded` of the JSON string whose text starts at
    `start` (after its quote): an escape is one code point (`\\n`, `\\uXXXX`, a surrogate pair)."""
    pos, count, end = start, 0, len(line)
    while count < decoded and pos < end:
        char = line[pos]
        if char == '"':
            break
        if char != "\\":
            pos += 1
        elif line.startswith("u", pos + 1):
            high = 0xD800 <= int(line[pos + 2 : pos + 6] or "0", 16) < 0xDC00
            pos += 12 if high and line.startswith("\\u", pos + 6) else 6
        else:
            pos += 2
        count += 1
    return pos


def header(values: dict[str, object]) -> str:
    """vLLM's plain 0.31+ header for a record: `(Name pid=N) LEVEL MM-DD HH:MM:SS.mmm [file.py:0] `.

    The JSON format has no `filename`/`lineno`: the logger's name (its module, `init_logger(
    __name__)`) gives the file, and line 0 says the number is unknown."""

    def text(key: str) -> str:
        value = values.get(key)
        return value if isinstance(value, str) else ""

    name = _NAME_CHARS.sub("_", text("vllm_process_name") or text("processName")) or "MainProcess"
    pid = values.get("process")
    pid_text = str(pid) if isinstance(pid, int) and not isinstance(pid, bool) else "0"
    level = text("levelname").upper() or "INFO"
    stamp = _ASCTIME.search(text("asctime"))
    when = f"{stamp.group(1)} {stamp.group(2)}" if stamp else "01-01 00:00:00"
    if stamp and stamp.group(3):
        when += "." + stamp.group(3)
    module = text("name").rsplit(".", 1)[-1] or "root"
    return f"({name} pid={pid_text}) {level} {when} [{_NAME_CHARS.sub('_', module)}.py:0] "


def looks_like_json_log(text: Text) -> bool:
    """Whether the start of `text` holds records of vLLM's JSON log format, or is a log
    collector's JSON lines. One record of vLLM's is enough: every other line is copied to the
    transcript as it is, so a plain log with a stray record reads the same either way (only
    slower). A collector's objects must be nearly every line (`_COLLECTOR_SHARE`)."""
    head = text[:_SNIFF_CHARS]
    if not isinstance(head, str):
        head = bytes(head).decode("utf-8", "replace")
    lines = [line for line in head.split("\n", _SNIFF_LINES)[:_SNIFF_LINES] if line.strip()]
    records = [parse_record(line) for line in lines]
    if any(record is not None and not record.collected for record in records):
        return True
    collected = sum(record is not None for record in records)
    return collected >= 1 and collected >= _COLLECTOR_SHARE * len(lines)


class TranscriptLines:
    """Positions in a transcript (core lines: LSP's) as (`\\n`-line, column) of the JSON log it
    was written from, and back; the same interface as `NewlineLines`."""

    def __init__(self, original: str) -> None:
        self.original = original
        self.text = ""  # the transcript, set by `Transcriber`
        # Per `\n`-line of the transcript: its original line, where that line starts in the
        # original, the column its text starts at in the transcript line (a header's end), and
        # for a record's line the column of its value's first character and the code point of
        # the value it begins with (-1: a plain line, copied as it is).
        self.origin = array("q")
        self.origin_start = array("q")
        self.text_col = array("q")
        self.raw_start = array("q")
        self.value_start = array("q")
        self.lead = array("q")  # a runtime prefix copied before the header
        self._nl: NewlineLines | None = None

    identity = False

    def snapshot(self) -> TranscriptLines:
        """A copy that later appends do not change (the tables are copied at C speed)."""
        copy = TranscriptLines(self.original)
        copy.text = self.text
        for mine, theirs in zip(copy.columns(), self.columns(), strict=True):
            mine.extend(theirs)
        return copy

    def columns(self) -> tuple[array, ...]:
        """The per-line tables, in `Transcriber._append`'s order."""
        return (self.origin, self.origin_start, self.text_col, self.raw_start, self.value_start, self.lead)

    @property
    def _newlines(self) -> NewlineLines:
        if self._nl is None or self._nl.text is not self.text:
            self._nl = NewlineLines(self.text)
        return self._nl

    def line(self, core_line: int) -> int:
        """The original `\\n`-line (0-based) of transcript core line `core_line`."""
        return self._origin_of(self._newlines.line(core_line))

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        """(original `\\n`-line, code-point column) of a transcript position."""
        tline, tcol = self._newlines.position(core_line, column)
        tline = min(tline, len(self.origin) - 1)
        if tline < 0:
            return 0, 0
        line = self.origin[tline]
        if self.raw_start[tline] < 0:
            return line, tcol
        if tcol < self.lead[tline]:
            return line, tcol
        if tcol < self.text_col[tline]:  # in the header, which the JSON line does not have
            first_of_line = tline == 0 or self.origin[tline - 1] != line
            if first_of_line:
                return line, self.lead[tline]
            return line, raw_column(
                self._original_line(tline), self.raw_start[tline], self.value_start[tline]
            )
        raw = self._original_line(tline)
        decoded = self.value_start[tline] + tcol - self.text_col[tline]
        return line, raw_column(raw, self.raw_start[tline], decoded)

    def core_position(self, line: int, column: int) -> tuple[int, int]:
        """The transcript core position of an original (`\\n`-line, column)."""
        first, last = self._tlines_of(line)
        if first >= last:
            return self._newlines.core_position(max(0, min(first, len(self.origin)) - 1), 0)
        chosen, tcol = first, column
        if self.raw_start[first] >= 0 and column >= self.lead[first]:
            raw = self._original_line(first)
            for tline in range(first, last):
                if raw_column(raw, self.raw_start[tline], self.value_start[tline]) <= column:
                    chosen = tline
            start, skipped = self.raw_start[chosen], self.value_start[chosen]
            decoded = _decoded_length(raw, start, column) - skipped if column >= start else 0
            tcol = self.text_col[chosen] + max(0, decoded)
        return self._newlines.core_position(chosen, tcol)

    def core_line_range(self, line: int) -> tuple[int, int]:
        """The first and last transcript core lines written from original line `line`."""
        first, last = self._tlines_of(line)
        last = max(first, last - 1)
        return self._newlines.core_line_range(first)[0], self._newlines.core_line_range(last)[1]

    # -- helpers ------------------------------------------------------------------------------
    def _origin_of(self, tline: int) -> int:
        if not self.origin:
            return 0
        return self.origin[min(max(tline, 0), len(self.origin) - 1)]

    def _tlines_of(self, line: int) -> tuple[int, int]:
        return bisect.bisect_left(self.origin, line), bisect.bisect_right(self.origin, line)

    def _original_line(self, tline: int) -> str:
        start = self.origin_start[tline]
        end = self.original.find("\n", start)
        return self.original[start : end if end >= 0 else len(self.original)]


def _decoded_length(line: str, start: int, column: int) -> int:
    """How many code points of the string starting at `start` lie before `column`."""
    low, high = 0, column - start
    while low < high:  # raw_column is monotonic in the code point
        mid = (low + high + 1) // 2
        if raw_column(line, start, mid) <= column:
            low = mid
        else:
            high = mid - 1
    return low


class Transcriber:
    """Writes the transcript of a JSON log, and of what a growing one appends: the whole lines
    written before are kept, and an unfinished last line is written again each time."""

    def __init__(self) -> None:
        self.lines = TranscriptLines("")
        self._done = 0  # the original text written so far, whole lines only
        self._line = 0  # its `\n`-lines
        self._count = 0  # the transcript lines they wrote
        self._length = 0  # and their length
        self._pieces: list[str] = []
        self._pending = 0  # the length written for the line being read

    def transcribe(self, original: str) -> TranscriptLines:
        """The transcript of `original` (reusing the last one's whole lines when it extends it)."""
        lines = self.lines
        if original[: self._done] != lines.original[: self._done]:
            self.__init__()  # type: ignore[misc]
            lines = self.lines
        lines.original = original
        for column in lines.columns():
            del column[self._count :]
        self._pieces = [lines.text[: self._length]]
        self._pending = 0
        pos = self._done
        while pos < len(original):
            end = original.find("\n", pos)
            if end < 0:
                self._write_line(original[pos:], pos, whole=False)
                break
            self._write_line(original[pos : end + 1], pos, whole=True)
            self._done, self._line, self._count = end + 1, self._line + 1, len(lines.origin)
            self._length, self._pending = self._length + self._pending, 0
            pos = end + 1
        lines.text = "".join(self._pieces)
        self._pieces = []
        return lines

    def _write_line(self, line: str, start: int, whole: bool) -> None:
        """Write one original line (with its line break when `whole`)."""
        raw = line.rstrip("\n").removesuffix("\r") if whole else line
        record = parse_record(raw)
        if record is None:
            if whole or not raw.lstrip().startswith("{"):  # half a record waits for the rest
                self._append(line, start, -1, 0, 0, 0)
            return
        # A collector's line is the log's line as printed; vLLM's record is written with the
        # header its plain format prints.
        head = raw[: record.lead] + ("" if record.collected else header(record.values))
        for key in record.keys:
            value, raw_start = record.values.get(key), record.starts.get(key)
            if not isinstance(value, str) or raw_start is None:
                continue
            if not record.collected and key != "message" and not value:
                continue
            if record.collected:
                value = value.removesuffix("\n").removesuffix("\r")  # (docker keeps the line's break)
            offset = 0
            for piece in value.split("\n"):
                self._append(head + piece + "\n", start, raw_start, offset, len(head), record.lead)
                offset += len(piece) + 1

    def _append(
        self, text: str, start: int, raw_start: int, value_start: int, text_col: int, lead: int
    ) -> None:
        lines = self.lines
        for column, value in zip(
            lines.columns(), (self._line, start, text_col, raw_start, value_start, lead), strict=True
        ):
            column.append(value)
        self._pieces.append(text)
        self._pending += len(text)
