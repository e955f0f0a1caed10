"""Rebuild Python tracebacks from a log where several processes interleave.

A traceback is read forward from its `Traceback (most recent call last):` line, following only
lines of the same writer (stream and logger header), so that another process's lines in between
are skipped. Chained exceptions (`The above exception was the direct cause…`, `During handling…`)
and Ray's remote tracebacks (`RayTaskError(X): …` followed by more frames) become one chain whose
first link is the original exception. Python 3.10–3.14 styles are understood: carets, `~~~^^^`,
`...<N lines>...` elisions, multi-line code, collapsed indentation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from sys import intern

from . import regexes
from .lines import WriterPrefix, parse_line, writer_prefix
from .model import ExceptionEvent, Frame, LogLine, Span
from .records import dataclass, field
from .text import ESCAPE, LogIndex, Text, as_printed

TRACEBACK_HEADER = "Traceback (most recent call last):"

_FRAME = regexes.compile(
    r'\s*File "?(?P<path>[^",]*)"?(?:, line (?P<lineno>\d+))?(?:, in (?P<func>.+?))?\s*'
    r"(?:\[repeated \d+x across cluster\].*)?$"
)
# IPython's (Jupyter's) traceback: a header with the exception's type and no colon
# (`ValueError      Traceback (most recent call last)`), frames as `File /path/x.py:177, in
# f(self, a)` or a notebook cell's `Cell In[3], line 3`, and the frame's line among numbered
# context lines as `---> 177 code` (`-> 1161 code` for a long number).
_IPYTHON_HEADER = regexes.compile(r"\s*[A-Za-z_][\w.]*\s+Traceback \(most recent call last\)\s*$")
_IPYTHON_FRAME = regexes.compile(
    r"\s*(?:File (?P<path>[^\s\"]+?):(?P<lineno>\d+)(?:, in (?P<func>[^\s(]+)(?:\(.*)?)?"
    r"|(?P<cell>Cell In\[\d+\]), line (?P<cellno>\d+))\s*$"
)
_IPYTHON_ARROW = regexes.compile(r"-*> +\d+ ")
_CARETS = regexes.compile(r"\s*[~^\s]+$")
_ELISION = regexes.compile(
    r"\s*(?:\.\.\.<\d+ lines>\.\.\.|\[Previous line repeated \d+ more times?\]|\.+)\s*$"
)
# An exception group's traceback (PEP 654, Python 3.11+: anyio's and starlette's task groups)
# draws its tree in a margin: each line of a group or sub-exception after `| ` (deeper ones
# indented further), sub-exceptions between separators `+-+---- 1 ----`, `+---- 2 ----` (`...`
# past the ones shown), each group closed by `+------------`.
EXCEPTION_GROUP_HEADER = "Exception Group Traceback (most recent call last):"
_GROUP_MARGIN = regexes.compile(r"\s*\|(?: |$)")
_GROUP_SEPARATOR = regexes.compile(r"\s*\+(?:-\+)?-{3,}(?: (?P<number>\d+|\.\.\.) -{3,})?\s*$")
_CHAIN = regexes.compile(
    r"\s*(?:The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)\s*$"
)
# `pkg.mod.Type(Inner): message` in a traceback: the type is a dotted name whose last part is
# capitalised (or ends like an exception), optionally with Ray's `(Cause)`.
_EXCEPTION = regexes.compile(
    r"(?P<type>(?:[A-Za-z_][\w]*\.)*(?:[A-Z]\w*|\w*(?:Error|Exception|Interrupt|Exit))"
    r"(?:\((?P<inner>[\w.]+)\))?)(?::(?P<message>.*))?$"
)
# Outside a traceback a line must look unmistakably like an exception to count as one.
STANDALONE_EXCEPTION = regexes.compile(
    r"(?P<type>(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Fault|Timeout|Dead)"
    r"(?:\((?P<inner>[\w.]+)\))?):(?P<message>(?: .*)?)$"
)
_RAY_DEDUP_LITERAL = "[repeated "  # in every text `_RAY_DEDUP` matches
_FIELD_LOCATION = regexes.compile(r"[a-z_][\w]*(?:\.[\w]+)*$")
_RAY_DEDUP = regexes.compile(r"\s*\[repeated \d+x across cluster\](?: \(Ray deduplicates.*)?$")
_KEYWORDS = frozenset(
    [
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "nonlocal",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
        "match",
        "case",
    ]
)

# Stop reading a traceback after this many lines of the same writer that fit nowhere.
_MAX_STRAY = 40
_MAX_LINES = 4000
_MAX_MESSAGE_LINES = 12


@dataclass(slots=True)
class Traceback:
    """One printed traceback: its chain of exceptions (first = original) and the lines it used."""

    header_line: int
    stream: str
    chain: list[ExceptionEvent] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    preamble: str = ""  # the writer's line before the header (`Exception ignored in: ...`)
    preamble_record: LogLine | None = None  # that line, parsed
    cut_frames: tuple[Frame, ...] = ()  # frames read after the last exception (the text was cut)
    logged: bool = False  # printed through vLLM's logger (has a LEVEL header)
    level: str | None = None
    open: bool = False  # reading reached the end of the text: more may follow in a growing log
    outer: str | None = None  # the header line's runtime prefix (the header is not kept parsed)
    # Read without its header (a paste that starts inside it): `header_line` is its first frame
    # line, a line no literal passes (looked up with a fallback where a header's would be).
    headless: bool = False

    @property
    def last_line(self) -> int:
        return self.lines[-1] if self.lines else self.header_line


# Where a process's own code starts: a raw traceback whose first frame is one of these ended it.
_ENTRY_FUNCTIONS = ("_run_module_as_main", "<module>", "module", "_bootstrap", "main")


def is_uncaught(tb: Traceback) -> bool:
    """Whether Python printed `tb` as its process died (raw, no logger header, from an
    entry-point frame, not a clean `SystemExit`): each such traceback is a death of its own."""
    if tb.logged or not tb.chain or tb.preamble.startswith("Exception ignored"):
        return False
    first_frames = tb.chain[0].frames
    if not first_frames or (first_frames[0].function or "") not in _ENTRY_FUNCTIONS:
        return False
    last = tb.chain[-1]
    return not (last.type_name == "SystemExit" and last.message.strip() in ("", "0"))


def clean_message(message: str) -> str:
    """Drop Ray's dedup suffix and trailing white space from a message."""
    if _RAY_DEDUP_LITERAL not in message:
        return message.rstrip()  # (the pattern's `\\s*` would be tried at every position)
    return _RAY_DEDUP.sub("", message).rstrip()


def looks_like_exception(message: str) -> re.Match[str] | None:
    """Match a traceback's final `Type: message` line (inside a traceback)."""
    text = message.strip()
    if not text or text.startswith(("File ", "Traceback")) or len(text) > 20000:
        return None
    match = _EXCEPTION.match(text)
    if not match:
        return None
    type_name = match.group("type")
    if type_name in _KEYWORDS or (
        match.group("message") is None
        and "." not in type_name
        and not type_name.endswith(("Error", "Exception", "Interrupt", "Exit"))
    ):
        return None
    return match


def is_caret_or_elision(message: str, stripped: str) -> bool:
    """Whether a traceback line (`stripped`: its message stripped, not empty) shows carets or an
    elision. Their patterns have no literal prefix; the first character they allow after white
    space is tested first, so a code line (most of a traceback) costs no pattern run."""
    lead = stripped[0]
    return bool((lead in "~^" and _CARETS.match(message)) or (lead in ".[" and _ELISION.match(message)))


_CHAIN_STARTS = ("The above exception", "During handling")  # how `_CHAIN`'s lines start, stripped


def is_chain_line(message: str, stripped: str) -> bool:
    """Whether a line joins two exceptions of a chain (`The above exception was …`)."""
    return stripped.startswith(_CHAIN_STARTS) and _CHAIN.match(message) is not None


def _same_writer(line: LogLine, first: LogLine) -> bool:
    return line.stream == first.stream and line.source == first.source


# Whether a logged traceback ends at its process's next record (off: read on to the writer's
# next line, the reference the tests compare with).
_END_AT_THE_NEXT_RECORD = True
_AFTER_EXCEPTION = ("exception", "between")  # the reader's states once an exception line was read


def _one_process_record(first: LogLine) -> bool:
    """Whether `first` is a line of a record that vLLM's logger wrote in one piece, on a stream
    that is one process's: its traceback then ends where that process's next record starts.

    vLLM's handler formats a record, its `logger.exception` traceback and chain included, into
    one message with the header on every line (`NewLineFormatter`) and writes it under the
    handler's lock, so no other record of the process falls between its lines. A process prefix
    `(Name pid=N)` names one process; an unprefixed stream, a compose service or a rank may
    hold the lines of several, and raw tracebacks are written line by line (logged records may
    fall between them). So once the exception line is read, a line of the same stream with a
    logger header of another source is a later record: the traceback has ended. Lines without
    a header (a print, a raw traceback on stderr) may fall anywhere and end nothing.
    """
    return first.source is not None and first.process is not None and first.pid is not None


def _another_record(line: LogLine, first: LogLine) -> bool:
    """Whether `line`, not of `first`'s writer, is a logged record of the same process."""
    return line.stream == first.stream and line.source is not None


def writer_literals(first: LogLine) -> tuple[str, ...]:
    """Pieces of text every line of `first`'s writer holds (barring colour codes), rarest first.

    A same-writer line has the same logger source (`file.py:N`) and the same prefix chain, so
    its text holds that source, its process prefix `Name pid=N`, and every piece of the chain
    (a runtime prefix, `rank0`, `raylet`): each is copied verbatim from the line. A writer with
    none of them (plain lines of an unprefixed log) has none.
    """
    return _pieces(first, [first.source] if first.source else [])


def stream_literals(line: LogLine) -> tuple[str, ...]:
    """Pieces of text every line of `line`'s stream holds (barring colour codes), rarest first:
    its writer's literals less the logger source (see `writer_literals`)."""
    return _pieces(line, [])


# Pieces by the writer's fields and its pid as printed: one log has few writers, and each of its
# tracebacks and timestamp look-ups asks again.
_PIECES: dict[tuple[str, str | None, str | None, tuple[str, ...]], tuple[str, ...]] = {}
_MAX_PIECES = 1024
_DIGITS = regexes.compile(r"\d+")
_LAST_PRINTED: tuple[LogLine | None, str | None] = (None, None)  # the last line asked, its process


def _pieces(first: LogLine, found: list[str]) -> tuple[str, ...]:
    global _LAST_PRINTED
    if _LAST_PRINTED[0] is first:  # (a traceback asks for its writer's and its stream's pieces)
        printed = _LAST_PRINTED[1]
    else:
        printed = _printed_process(first) if first.process else None
        _LAST_PRINTED = (first, printed)
    key = (first.stream, first.process, printed, tuple(found))
    pieces = _PIECES.get(key)
    if pieces is None:
        if len(_PIECES) >= _MAX_PIECES:
            _PIECES.clear()
        pieces = _PIECES[key] = _pieces_of(first.stream, first.process, printed, found)
    return pieces


def _printed_process(first: LogLine) -> str | None:
    """`Name pid=N` as `first`'s text prints it (`pid=07` is parsed as 7): the first `Name pid=`
    followed by a digit, with its digits (what `re.search(Name + r" pid=\\d+")` finds)."""
    head = f"{first.process} pid="
    at = first.text.find(head)
    while at >= 0:
        digits = _DIGITS.match(first.text, at + len(head))
        if digits:
            return first.text[at : digits.end()]
        at = first.text.find(head, at + 1)
    return None


def _pieces_of(stream: str, process: str | None, printed: str | None, found: list[str]) -> tuple[str, ...]:
    if process:
        # (a Ray Data worker's name holds parentheses, `MapWorker(MapBatches(f)) pid=7`: its parts)
        found.extend(p for p in re.split(r"[()]", printed or f"{process} pid=") if p)
    pieces = sorted((p for p in re.split(r"[|/:()]", stream) if p), key=len, reverse=True)
    found.extend(p for p in pieces if not any(p in f for f in found))
    # A colour code that lost its ESC is stripped next to a parenthesis (`[0;36m(Name pid=1)`):
    # a piece holding one might be split by a code in the raw text.
    return tuple(f for f in found if "(" not in f and ")" not in f)


def read_traceback(
    index: LogIndex,
    start_offset: int,
    first: LogLine,
    parsed: dict[int, LogLine] | None = None,
    known: Mapping[int, LogLine] | None = None,
    until: int | None = None,
    bodies: BodyMemo | None = None,
    headless: bool = False,
) -> Traceback:
    """Read the traceback whose header is `first` (a parsed line starting at `start_offset`);
    `headless`: `first` is the first frame line of a traceback printed without its header (a
    paste that starts inside it), read as the header's next line would be.

    Each line after the header that it parses goes into `parsed` (by number), when given: the
    scan reads many of them again as candidates of its own (`ERROR … ` lines) and takes them
    from there instead of parsing them twice. `known`: lines parsed already (the scan's), taken
    instead of parsing the lines before the header again when their text is the same. `until`:
    the first line of a later run of the writer's service; the traceback ends before it.
    `bodies`: the bodies of the tracebacks read before (one scan's): a body that repeats one
    of them is replayed instead of read (see `BodyMemo`), and a new one is remembered.
    """
    tb = Traceback(
        header_line=first.number,
        stream=first.stream,
        logged=first.source is not None,
        level=first.level,
        outer=first.outer,
        headless=headless,
    )
    for prev_no, prev_text in index.iter_lines_back(start_offset, first.number, 3):
        prev = known.get(prev_no) if known is not None else None
        if prev is None or prev.text != prev_text:  # (the scan cut a long line: parse it whole)
            prev = parse_line(prev_no, prev_text)
        if _same_writer(prev, first):
            tb.preamble = prev.message.strip()
            tb.preamble_record = prev
            break
    # The writer's lines that start as the header's line does are sliced, not parsed (most of
    # a traceback: see `writer_prefix`).
    prefix = writer_prefix(first) if _SLICE_WRITER_LINES else None
    reader = _ChainReader(tb, prefix, parsed)
    if EXCEPTION_GROUP_HEADER in first.message:
        reader.open_group()
        bodies = None  # (a group's tree is read line by line: a body holds no margins)
    if headless:
        reader.feed(first.number, first.text, first.message, first)
        bodies = None  # (a body is remembered by the lines after a header)
    # Only lines that can be the writer's are read: other processes' lines in between are
    # skipped at C speed (see `LineWindow`).
    start = index.next_line_start(start_offset)
    limit = _MAX_LINES if until is None else min(_MAX_LINES, until - first.number - 1)
    literals = writer_literals(first)
    next_number = first.number + 1
    recording: _Recording | None = None
    if bodies is not None and prefix is not None and bodies.takes(prefix, literals):
        start, next_number, limit = bodies.replay(index, start, next_number, limit, prefix, reader)
        if next_number == first.number + 1:  # (nothing replayed: this body is remembered)
            recording = _Recording(bodies, prefix, reader)
    window = index.window(start, next_number, limit, literals)
    # (a stream with no piece of text of its own cannot be watched for its next record)
    one_record = _END_AT_THE_NEXT_RECORD and _one_process_record(first) and bool(stream_literals(first))
    watching = False  # whether the process's other records are read (see `_one_process_record`)
    feed = reader.feed
    for number, raw in window:
        message = prefix.message_of(raw) if prefix is not None else None
        if message is not None:
            fed = feed(number, raw, message, None)
            if recording is not None and not recording.took(number, raw, fed):
                recording.stop()
                recording = None
        else:
            if recording is not None:
                recording.stop()
                recording = None
            if watching and ".py:" not in raw and ESCAPE not in raw:
                continue  # (no logger header: neither the writer's line nor another record)
            line = parse_line(number, raw)
            if parsed is not None:
                parsed[number] = line
            if not _same_writer(line, first):
                if not (watching and reader.state in _AFTER_EXCEPTION and _another_record(line, first)):
                    continue
                fed = False  # the process wrote its next record: this one has ended
            else:
                fed = feed(number, raw, line.message, line)
        if fed and one_record and not watching and reader.state in _AFTER_EXCEPTION:
            window.widen(stream_literals(first))
            watching = True
        if not fed:
            # Ended by the text's last line: in a growing log that line may be cut, and read
            # whole it may continue the traceback instead.
            tb.open = window.at_last_line
            break
    else:
        # Open only when the text ended: a growing log may continue it. A traceback whose
        # window closed before the end cannot change when text is appended.
        tb.open = window.reached_end
    if recording is not None:
        recording.stop()
    reader.finish()
    return tb


# Whether a traceback body that repeats one read before is replayed instead of read again (off:
# the reference the tests compare with).
_REPLAY_BODIES = True
_BODY_STATES = ("frames", "code")  # the reader's states before an exception line
_MIN_BODY = 2  # lines: a shorter body costs less to read than to look up
_MAX_BODIES = 1024  # first lines whose bodies are remembered per scan before starting over
# Bodies remembered under one first line (most recent first): many tracebacks start alike
# (`multiprocessing/process.py`, `_bootstrap`) and go on differently.
_BODIES_PER_FIRST_LINE = 4


@dataclass(slots=True)
class _Body:
    """The part of a traceback before its exception line, as its reader took it: the text of
    each line after the writer's prefix, and the reader's state after the last one, its line
    numbers given as places in the body (1: the line after the header)."""

    rests: tuple[str, ...]
    bare: bool  # (the prefix kind it was read with: `WriterPrefix.message_of` depends on it)
    lines: tuple[int, ...]  # the traceback's lines taken
    frames: tuple[tuple[int, str, int | None, str | None], ...]  # (place, path, lineno, function)
    context: tuple[str, ...]
    state: str
    code_taken: bool
    stray: int
    blanks: int


class BodyMemo:
    """The bodies of the tracebacks one scan read, by the text of their first line after the
    writer's prefix. A log prints the same traceback again and again (a request error logged
    for every bad request, a restart loop's same death): its frames and code lines are the same
    text under another timestamp.

    Why replaying is reading: the reader takes a writer's line whose prefix is the header's by
    the text after it alone (`WriterPrefix.message_of`: the same for any prefix of the same
    kind), and before an exception line its state is a function of those texts in order; line
    numbers are only recorded. So where the lines right after a header are that prefix followed
    by a remembered body's texts, each line in turn, they are the window's next lines (each
    holds the writer's literals, which the prefix holds) and the reader would take them as it
    took them then: the state after them is the remembered one, with this traceback's numbers.
    The comparison is one string comparison at C speed. It also proves the lines: the text is
    the prefix's lines each ended by one break, `\n` or `\r\n` (the first line's), and the
    lines hold no `\r` of their own, so those are its lines, whatever the rest of the text
    holds (a progress bar's bare `\r`); lines ended otherwise never match, and are read as
    usual.
    """

    def __init__(self) -> None:
        self._bodies: dict[str, list[_Body]] = {}

    def takes(self, prefix: WriterPrefix, literals: tuple[str, ...]) -> bool:
        """Whether bodies of this writer can be replayed and remembered."""
        return _REPLAY_BODIES and all(piece in prefix.text for piece in literals)

    def replay(
        self, index: LogIndex, start: int, number: int, limit: int, prefix: WriterPrefix, reader: _ChainReader
    ) -> tuple[int, int, int]:
        """Give `reader` (fresh) the remembered body that the lines from `start` (numbered
        `number`, at most `limit` of them) repeat, if one does: (start, number, limit) of what
        is left to read."""
        text = index.text
        if not self._bodies:
            return start, number, limit
        end = index.line_end_at(start)
        if end >= len(text):  # (the last line: no body line ends after it)
            return start, number, limit
        raw = index.slice(start, end)
        bodies = self._bodies.get(raw[prefix.length :], ()) if raw.startswith(prefix.text) else ()
        # The lines are compared with the break that ends the first one (a log saved with
        # `\r\n` has it on every line).
        newline = "\r\n" if index.has_cr and text[end : end + 1] in ("\r", b"\r") else "\n"
        for body in bodies:
            length = self._repeated(text, start, limit, prefix, body, newline)
            if length:
                break
        else:
            return start, number, limit
        header = number - 1
        reader.frames = [Frame(header + at, path, lineno, func) for at, path, lineno, func in body.frames]
        reader.context = list(body.context)
        reader.tb.lines = [header + at for at in body.lines]
        reader.state, reader.code_taken, reader.stray, reader.blanks = (
            body.state,
            body.code_taken,
            body.stray,
            body.blanks,
        )
        taken = len(body.rests)
        return start + length, number + taken, limit - taken

    @staticmethod
    def _repeated(text: Text, start: int, limit: int, prefix: WriterPrefix, body: _Body, newline: str) -> int:
        """How much text from `start` the prefix's lines of `body` are, each ended by `newline`
        (0: they are not there)."""
        if body.bare != prefix.bare or len(body.rests) > limit:
            return 0
        head = prefix.text
        expected = head + (newline + head).join(body.rests) + newline
        if isinstance(text, str):
            return len(expected) if text.startswith(expected, start) else 0
        encoded = expected.encode("utf-8")
        return len(encoded) if text[start : start + len(encoded)] == encoded else 0

    def remember(self, body: _Body) -> None:
        first = body.rests[0]
        bodies = self._bodies.get(first)
        if bodies is None:
            if len(self._bodies) >= _MAX_BODIES:
                self._bodies.clear()
            bodies = self._bodies[first] = []
        bodies.insert(0, body)
        del bodies[_BODIES_PER_FIRST_LINE:]


class _Recording:
    """A fresh reader's body being remembered, line by line, until the first line it did not
    take as a body line of the writer's prefix (an exception line, a parsed line, the end)."""

    __slots__ = ("bodies", "numbers", "prefix", "reader", "rests", "state")

    def __init__(self, bodies: BodyMemo, prefix: WriterPrefix, reader: _ChainReader) -> None:
        self.bodies, self.prefix, self.reader = bodies, prefix, reader
        self.rests: list[str] = []
        self.numbers: list[int] = []
        self.state: tuple[str, bool, int, int, int, int, int] | None = None

    def took(self, number: int, raw: str, fed: bool) -> bool:
        """Add the line the reader was just fed (one of the prefix's); False when it is not a
        body line (the recording then stops before it)."""
        reader = self.reader
        if not fed or reader.state not in _BODY_STATES:
            return False
        self.rests.append(raw[self.prefix.length :])
        self.numbers.append(number)
        self.state = (
            reader.state,
            reader.code_taken,
            reader.stray,
            reader.blanks,
            len(reader.frames),
            len(reader.context),
            len(reader.tb.lines),
        )
        return True

    def stop(self) -> None:
        """Remember the body taken so far (when long enough)."""
        if self.state is None or len(self.rests) < _MIN_BODY:
            return
        state, code_taken, stray, blanks, frames, context, lines = self.state
        reader = self.reader
        place = {number: at for at, number in enumerate(self.numbers, 1)}
        self.bodies.remember(
            _Body(
                rests=tuple(self.rests),
                bare=self.prefix.bare,
                lines=tuple(place[n] for n in reader.tb.lines[:lines]),
                frames=tuple((place[f.line], f.path, f.lineno, f.function) for f in reader.frames[:frames]),
                context=tuple(reader.context[:context]),
                state=state,
                code_taken=code_taken,
                stray=stray,
                blanks=blanks,
            )
        )


# Whether the writer's lines that share the header's prefix are sliced instead of parsed (off:
# the reference the tests compare with).
_SLICE_WRITER_LINES = True


class _ChainReader:
    """A small state machine fed one same-writer line at a time: a parsed `LogLine`, or (None)
    a line of `prefix`'s writer whose record is made only where one is kept (an exception's)."""

    def __init__(self, tb: Traceback, prefix: WriterPrefix | None, parsed: dict[int, LogLine] | None) -> None:
        self.tb = tb
        self.prefix = prefix
        self.parsed = parsed
        self.frames: list[Frame] = []
        self.context: list[str] = []
        self.state = "frames"  # frames | code | exception | between
        self.code_taken = False
        self.stray = 0
        self.blanks = 0
        self.current: dict | None = None  # the exception being read (message may continue)
        self.numbered = False  # the last frame is IPython's (its context lines are numbered)
        # Exception groups open (their tree's margin read off each line; 0 when none), and
        # whether the outermost has closed (the traceback has ended).
        self.groups = 0
        self.closed = False

    def open_group(self) -> None:
        """The header just read opens an exception group (`EXCEPTION_GROUP_HEADER`)."""
        self.groups += 1

    def feed(self, number: int, raw: str, message: str, line: LogLine | None) -> bool:
        """Consume line `number` (its text `raw`, its message, and its record unless it is one
        of `prefix`'s lines); False when the traceback has ended."""
        message = clean_message(message)
        margin = 0
        if self.closed:
            return False  # (the outermost exception group has closed)
        if self.groups:
            if message.lstrip().startswith("+") and (separator := _GROUP_SEPARATOR.match(message)):
                return self._group_separator(number, separator.group("number") is None)
            if found := _GROUP_MARGIN.match(message):
                margin, message = found.end(), message[found.end() :]
                if message.startswith(EXCEPTION_GROUP_HEADER):
                    self.open_group()
        stripped = message.strip()
        if self.state in ("exception", "between"):
            return self._after_exception(number, raw, line, message, stripped)
        if not stripped:
            return True
        frame = frame_parts(message, stripped)
        if frame:
            self._take_frame(number, frame)
            self.numbered = not stripped.startswith('File "')  # (IPython's: context lines numbered)
            return True
        if self.numbered and self.state == "code" and (stripped[:1].isdigit() or stripped[:1] in "->"):
            # IPython's numbered context lines around the frame's own line, `---> 177 code`.
            arrow = _IPYTHON_ARROW.match(stripped)
            if arrow:
                self.code_taken = True
                self.context.append(intern(stripped[arrow.end() :].strip()))
            self.tb.lines.append(number)
            return True
        if is_caret_or_elision(message, stripped):
            self.tb.lines.append(number)
            return True
        indented = message[:1].isspace()
        # Code under a frame is indented; in a paste that lost its indentation, the first line
        # after a frame is still code unless it reads like the exception.
        match = None if indented or self.state != "code" or self.code_taken else looks_like_exception(message)
        if self.state == "code" and (indented or (not self.code_taken and not match)):
            self.code_taken = True
            self.context.append(intern(stripped))
            self.tb.lines.append(number)
            return True
        if match is None:
            match = looks_like_exception(message)
        if match and (self.frames or self.tb.chain or self.state == "code"):
            self._start_exception(line or self._record(number, raw), match, margin)
            return True
        if is_traceback_header(stripped):
            self.tb.lines.append(number)
            return True
        self.stray += 1
        return self.stray <= _MAX_STRAY

    def _record(self, number: int, raw: str) -> LogLine:
        """The record of one of `prefix`'s lines (an exception's: the scan reads it again)."""
        assert self.prefix is not None
        line = self.prefix.line(number, raw, raw[self.prefix.length :].rstrip("\r"))
        if self.parsed is not None:
            self.parsed[number] = line
        return line

    def _take_frame(self, number: int, frame: tuple[str, str | None, str | None]) -> None:
        path, lineno, function = frame
        # Copies of a traceback repeat their frames: they share one text of each path and name.
        self.frames.append(
            Frame(number, intern(path), int(lineno) if lineno else None, function and intern(function))
        )
        self.tb.lines.append(number)
        self.state = "code"
        self.code_taken = False
        self.stray = 0

    def _group_separator(self, number: int, closing: bool) -> bool:
        """A separator of an exception group's tree: the exception read so far has ended, and
        a sub-exception follows (its traceback, or its exception line alone); a closing one
        closes a group, and the outermost's closing ends the traceback."""
        self._close_exception()
        self.tb.lines.append(number)
        self.state, self.code_taken, self.stray, self.blanks = "frames", False, 0, 0
        if closing:
            self.groups -= 1
            self.closed = self.groups <= 0
        return True

    def _start_exception(self, line: LogLine, match: re.Match[str], margin: int = 0) -> None:
        self._close_exception()
        message = (match.group("message") or "").strip()
        text = line.message[margin:]  # (after an exception group's margin)
        col = line.message_col + margin + (len(text) - len(text.lstrip()))
        self.current = {
            "line": line,
            "type": match.group("type"),
            "message": [message] if message else [],
            "span": Span(line.number, col, len(line.text.rstrip())),
            "lines": [],
        }
        self.tb.lines.append(line.number)
        self.state = "exception"

    def _after_exception(
        self, number: int, raw: str, line: LogLine | None, message: str, stripped: str
    ) -> bool:
        if is_chain_line(message, stripped):
            self._close_exception()
            self.tb.lines.append(number)
            self.state = "between"
            return True
        if not stripped:
            self.blanks += 1
            return self.blanks <= 2
        self.blanks = 0
        if stripped.startswith("File ") and (frame := frame_parts(message, stripped)):
            # Ray prints the remote traceback right under `RayTaskError(X): ...`.
            self._close_exception()
            self._take_frame(number, frame)
            return True
        if is_traceback_header(stripped):
            if self.state == "between":
                self.tb.lines.append(number)
                self.state = "frames"
                return True
            return False  # a new, separate traceback from the same writer
        if self.state == "exception" and self.current is not None:
            indented = message[:1].isspace()
            # pydantic prints a field's location unindented (`max_model_len`) above its reason.
            location = self.current["message"] and _FIELD_LOCATION.match(stripped) is not None
            # torch.compile's `BackendCompilerFailed: backend='…' raised:` goes on with the backend's
            # own exception, `Type: message`, on the next line: that line is its message.
            announced = (
                len(self.current["message"]) == 1
                and not self.current["lines"]
                and number == self.current["line"].number + 1
                and self.current["message"][0].endswith(" raised:")
            )
            continues = (
                indented
                or location
                or announced
                or (not self.current["message"] and not looks_like_exception(message))
            )
            # A line with a logger level of its own (uvicorn's `INFO:`) is another writer's, even
            # when a raw traceback shares its stream; a first continuation follows right below.
            # (a line of `prefix`'s writer has the header's level)
            continues = continues and (line is None or line.level == self.tb.level)
            if not self.current["message"] and number != self.current["line"].number + 1:
                continues = False
            if continues and len(self.current["message"]) < _MAX_MESSAGE_LINES:
                self.current["message"].append(stripped)
                self.current["lines"].append(number)
                self.tb.lines.append(number)
                return True
        return False

    def _close_exception(self) -> None:
        current = self.current
        if current is None:
            return
        line: LogLine = current["line"]
        self.tb.chain.append(
            ExceptionEvent(
                line=line.number,
                span=current["span"],
                type_name=current["type"],
                message="\n".join(current["message"]),
                stream=self.tb.stream,
                kind="python",
                process=line.process,
                frames=tuple(self.frames),
                traceback_start=self.tb.header_line,
                chain_index=len(self.tb.chain),
                context_lines=tuple(self.context[-3:]),
                message_lines=tuple(current["lines"]),
            )
        )
        self.current = None
        self.frames = []
        self.context = []

    def finish(self) -> None:
        self._close_exception()
        self.tb.cut_frames = tuple(self.frames)


# Python's `faulthandler` (`PYTHONFAULTHANDLER=1`, `-X faulthandler`; torch turns it on in some
# launchers) prints the Python stack of every thread after `Fatal Python error: Segmentation
# fault`: a header per thread, `Current thread 0x… (most recent call first):` for the one that
# crashed, then its frames as `  File "…", line N in f` (no comma: not a traceback's).
FAULT_LITERAL = "Fatal Python error:"
_FAULT_THREAD = regexes.compile(
    r"\s*(?:(?P<current>Current thread)|Thread|Stack)(?: 0x[0-9a-fA-F]+)?(?: \[[^\]]*\])?"
    r" \(most recent call first\):\s*$"
)
_FAULT_FRAME = regexes.compile(r'\s*File "(?P<path>[^"]*)", line (?P<lineno>\d+) in (?P<func>\S+)\s*$')
# What else such a dump prints between its stacks (`<no Python frame>`, a cut stack's `...`,
# the runtime's state, the extension modules loaded).
_FAULT_OTHER = ("<no Python frame>", "...", "Python runtime state", "Extension modules", "Garbage-collecting")


def faulthandler_stack(lines: Iterable[tuple[int, str]]) -> list[Frame]:
    """The crashing thread's stack that `faulthandler` printed in `lines` (the messages of the
    writer's lines after its `Fatal Python error: …`, numbered), its frames in a traceback's
    order (the innermost last); [] when none follows."""
    stacks: list[tuple[bool, list[Frame]]] = []
    for number, message in lines:
        stripped = message.strip()
        if thread := _FAULT_THREAD.match(message):
            stacks.append((thread.group("current") is not None, []))
        elif stacks and (frame := _FAULT_FRAME.match(message)):
            path, lineno, func = frame.group("path", "lineno", "func")
            stacks[-1][1].append(Frame(number, intern(posix_path(path)), int(lineno), intern(func)))
        elif stripped and not stripped.startswith(_FAULT_OTHER):
            break
    if not stacks:
        return []
    current = next((frames for is_current, frames in stacks if is_current), stacks[0][1])
    return current[::-1]


def is_traceback_header(message: str) -> bool:
    """Whether a line's message ends with a traceback's header: Python's `Traceback (most
    recent call last):`, or IPython's `ValueError    Traceback (most recent call last)`."""
    text = message.rstrip()
    if text.endswith(TRACEBACK_HEADER):
        return True
    return text.endswith("(most recent call last)") and _IPYTHON_HEADER.match(text) is not None


def posix_path(path: str) -> str:
    """A frame's path with `/` between its parts: Windows prints `C:\\…\\vllm\\config.py`, and
    what reads frames (the rules, the module a frame lies in) is written with `/`."""
    return path.replace("\\", "/") if "\\" in path else path


def frame_parts(message: str, stripped: str) -> tuple[str, str | None, str | None] | None:
    """(path, line number, function) of a frame line (`stripped`: its message stripped):
    Python's `File "…", line N, in f`, IPython's `File /…/x.py:N, in f(…)` or `Cell In[3], line 3`;
    quotes a copy made typographic or HTML references (`File “…”`, `File &quot;…&quot;`) read as
    printed."""
    if stripped.startswith("File "):
        printed = as_printed(message)
        if printed is not message:  # (the same str unless a copy changed its punctuation)
            message, stripped = printed, printed.strip()
        if not stripped.startswith('File "') and (ipython := _IPYTHON_FRAME.match(message)):
            return posix_path(ipython.group("path")), ipython.group("lineno"), ipython.group("func")
        frame = _FRAME.match(message)
        return (
            (posix_path(frame.group("path")), frame.group("lineno"), frame.group("func")) if frame else None
        )
    if stripped.startswith("Cell In[") and (cell := _IPYTHON_FRAME.match(message)):
        return cell.group("cell"), cell.group("cellno"), None
    return None


def is_frame_line(message: str) -> bool:
    """Whether a line's message is a traceback frame's `  File "…", line N, in f` line."""
    return message.lstrip().startswith("File ") and _FRAME.match(message) is not None


def standalone_exception(line: LogLine) -> ExceptionEvent | None:
    """An exception line seen without its traceback (a tail-only paste, a one-line error)."""
    message = clean_message(line.message).strip()
    match = STANDALONE_EXCEPTION.match(message)
    if not match:
        return None
    col = line.message_col + (len(line.message) - len(line.message.lstrip()))
    return ExceptionEvent(
        line=line.number,
        span=Span(line.number, col, len(line.text.rstrip())),
        type_name=match.group("type"),
        message=match.group("message").strip(),
        stream=line.stream,
        kind="python",
        process=line.process,
    )
