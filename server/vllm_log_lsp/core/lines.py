"""Take one log line apart: runtime prefixes, process prefixes, vLLM's logger header, message.

Formats handled (see the project README for examples):
- outer prefixes added by runtimes and collectors, in any nesting: markdown `> `, Kubernetes/CRI
  `<RFC3339> stderr F `, `docker logs -t` timestamps, Docker Desktop `YYYY-MM-DD HH:MM:SS.mmm | `,
  docker compose / podman-compose `svc  | `, journalctl `Mon DD HH:MM:SS host unit[pid]: `,
  PowerShell's `docker : `, and `grep -n` / editor search results (`5223:` / `Line 122: `);
- process prefixes `(EngineCore_DP0 pid=1)`, `(VllmWorker rank=1 pid=2)`, Ray's
  `(RayWorkerWrapper pid=2, ip=10.0.0.1)`, `(raylet)`, nested ones, torch's `[rank0]: `, and a
  launcher's per-rank tag: torchrun's `[default0]:` (`--tee`), mpirun's `[1,0]<stderr>:`
  (`--tag-output`);
- vLLM's logger header in every generation: `LEVEL MM-DD HH:MM:SS file.py:N]`,
  `[file.py:N]`, `[v1/engine/core.py:N]`, `[a/.../b.py:N]` (and OCR's `(file.py:N]`), after an
  optional user prefix;
- uvicorn's `INFO:     `, Python logging `2025-06-20 20:02:20,931 - name - LEVEL - `, Ray's
  `2026-01-31 14:20:59,483\tINFO file.py:N -- `.
A line that matches none of these is kept whole as its own message.
"""

from __future__ import annotations

import re
from _thread import _local
from collections import Counter
from collections.abc import Iterable
from sys import intern

from . import regexes
from .model import LogLine
from .text import MASK_DIGITS, ColumnMap, clip_line, may_hold_colour, strip_ansi

_OUTER = regexes.compile(
    r"""
    (?P<quote>>[ ]?)
  | (?P<cri>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)[ ](?:stdout|stderr)[ ][FP][ ])
  | (?P<dockerts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:?\d\d)[ ])
  | (?P<desktop>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d\.\d{3}[ ]\|[ ])
  | (?P<compose>(?P<service>\[?[A-Za-z0-9][\w.-]*\]?)[ ]+\|[ ]?)
  | (?P<journal>[A-Z][a-z]{2}[ ][ \d]\d[ ]\d\d:\d\d:\d\d[ ]\S+[ ](?P<unit>[\w.@-]+)(?:\[\d+\])?:[ ])
  | (?P<powershell>docker[ ]:[ ])
  | (?P<grepn>Line[ ]\d+:[ ]|\d{1,8}:(?=\(|[A-Z]{4,}|Traceback|[ ]|[A-Z][a-z]{2}[ ][ \d]\d[ ]\d\d:\d\d:\d\d[ ]))
    """,
    re.VERBOSE,
)

#: A process's name in its prefix: vLLM's (`EngineCore_DP0`, `Worker_TP1`), a Ray actor's class
#: (`RayWorkerWrapper`), or a Ray Data worker's, which names the operators it runs with their
#: parentheses (`MapWorker(MapBatches(vLLMEngineStageUDF))`, `MapWorker(ReadParquet->Map(f))`):
#: `OPERATOR_NAMES`, one level of them nested (`wraps` reads the same names).
OPERATOR_NAMES = r"\((?:[\w.\->]|\([\w.\->]*\))*\)"
PROCESS_NAME = r"[A-Za-z_][\w.\-]*(?:" + OPERATOR_NAMES + ")?"


def starts_of_prefix(starts: Iterable[tuple[int, str | None]], outer: str | None) -> list[int]:
    """The lines of `starts` ((line, runtime prefix) of each run start) that start a run of lines
    of runtime prefix `outer`, sorted: a start of the same prefix, or one with none (a plain log's
    start is every service's); a line with no prefix is in the run of any start."""
    return sorted({line for line, prefix in starts if prefix == outer or not prefix or not outer})


_PROCESS = regexes.compile(
    r"""
    \((?P<name>"""
    + PROCESS_NAME
    + r"""(?:[ ](?:rank=\d+|TP\d+|PP\d+(?:_TP\d+)?))?)
    [ ]pid=(?P<pid>\d+)(?:,[ ]ip=(?P<ip>[0-9A-Fa-f.:]+))?\)[ ]?
  | \((?P<ray>raylet|autoscaler[^)]*|pid=(?P<barepid>\d+)(?:,[ ]ip=[0-9A-Fa-f.:]+)?)\)[ ]?
  | \[rank(?P<rank>\d+)\]:[ ]?
  | \[(?P<launcher>default\d+|\d+,\d+\]<std(?:out|err)>)\]?:[ ]?
    """,
    re.VERBOSE,
)

# A progress bar at the start of a line: tqdm's `desc: 65%|██▌ | 17/26 [00:02<00:01, 5.98it/s]`
# (sizes too: `| 9.9G/10.0G [...]`) and vLLM's `… 50% Completed | 1/2 [00:01<00:01, 1.20s/it]`.
# It starts with no space, so a line of a writer whose prefix ends with one is not taken apart
# differently when it follows that prefix (see `writer_prefix`); its description holds no `]`
# or `|`, so it never swallows a logger's header (`INFO 10-03 21:00:01 [x.py:1] Loading: 50%|…`)
# or a compose service (`svc-1  | 50%|…`).
_GLUED_BAR = regexes.compile(
    r"[^\s%\]|][^\n%\]|]{0,120}?\d{1,3}%(?:\|[^|\n]{0,160}\||[ ]Completed[ ]\|)[ ]*"
    r"[\d.]+[kMGT]?B?/[\d.]+[kMGT]?B?[ ]\[[^\]\n]{0,80}\]"
)
_BAR_REACH = 140  # how far into a line a bar's `%` is looked for

# What each pattern's every alternative starts with: a line starting otherwise is not tried
# (most lines start with a process prefix `(`, which no runtime prefix does).
_PROCESS_FIRST = ("(", "[")


def _may_start_outer(char: str) -> bool:
    """Whether `_OUTER` can match at a `char`: `>`, `[`, an ASCII letter, or a digit (`\\d`: any
    Unicode decimal digit, which `str.isdecimal` tells)."""
    return char in _OUTER_FIRST or char.isdecimal()


_OUTER_FIRST = frozenset(">[ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

#: The time in vLLM's logger header: `MM-DD HH:MM:SS`, a year before it where a date format of
#: the user's (a logging config, a plugin's) prints one. Its fraction of a second is not part of it.
#: (`timestamps` and `_VLLM_START` read the header with it; `merge` takes it apart by fields.)
VLLM_HEADER_DATE = r"(?:\d{4}-)?\d\d-\d\d[ ]\d\d:\d\d:\d\d"

_VLLM_HEADER = regexes.compile(
    r"""
    (?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ ]
    (?P<date>"""
    + VLLM_HEADER_DATE
    + r""")(?:[.,]\d+)?[ ]
    [\[(]?(?P<source>[\w.\-]+(?:/[\w.\-]+)*\.py:\d+)\][ ]?
    """,
    re.VERBOSE,
)

# Other loggers' headers: uvicorn's; Python's `asctime - name - levelname - `; Ray's. And a
# format of the user's own (`VLLM_LOGGING_CONFIG_PATH`, `VLLM_CONFIGURE_LOGGING=0` and a handler
# of theirs, a server that embeds vLLM), by the fields such formats print:
# - `bracketed`: fields in brackets, one the time and one the level (`[2025-04-23 21:09:12]
#   [ERROR] [vllm.core] `, gunicorn's `[… +0000] [1234] [ERROR] `);
# - `stamped`: the time, the level, then a logger's name in brackets or a module's dotted path
#   (`2025-04-23 21:09:12,123 ERROR vllm.core: `; not an exception's `torch.AcceleratorError: `,
#   whose class starts with a capital);
# - `leveled`: a level in brackets alone, its time taken off before as a collector's
#   (`2025-04-23T21:09:12.123Z [ERROR] `);
# - `basic`: Python's `logging.basicConfig` (`ERROR:vllm.core:`, torchrun's `WARNING:torch.…:`);
# - `sourced`: vLLM's `[file.py:N] ` with no level or time before it (cut off by a copy of some
#   columns, or a format of the user's that prints only where a record came from).
# A level is followed by one space: the message after it keeps its own (a frame's indentation).
_OTHER_HEADER = regexes.compile(
    r"""
    (?P<uvicorn>(?P<ulevel>DEBUG|INFO|WARNING|ERROR|CRITICAL):[ ]+)
  | (?P<pylog>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d,\d{3}[ ]-[ ](?:[\w.]+[ ]-[ ])?
        (?P<plevel>DEBUG|INFO|WARNING|ERROR|CRITICAL)[ ]-[ ](?:[\w.]+:\d+[ ]-[ ])?)
  | (?P<raylog>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d,\d{3}\t(?P<rlevel>DEBUG|INFO|WARNING|ERROR)[ ][\w.]+:\d+[ ]--[ ])
  | (?P<bracketed>(?:\[[^\]\n]{1,40}\][ ]){0,2}\[[^\]\n]{0,24}\d\d:\d\d:\d\d[^\]\n]{0,24}\][ ]
        (?:\[[^\]\n]{1,40}\][ ]){0,2}\[(?P<blevel>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\][ ]?
        (?:\[[\w.\-:]{1,80}\][ ]?)?)
  | (?P<stamped>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[ ]?(?:Z|[+-]\d\d:?\d\d|UTC))?[ ]+
        (?:\[?\d+\]?[ ]+)?\[?(?P<slevel>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?:?[ ]
        (?:\[[\w.\-:]{1,80}\]:?[ ]?|[a-z_][\w\-]*(?:\.[a-z_][\w\-]*)+:?[ ])?)
  | (?P<leveled>\[(?P<llevel>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\][ ](?:\[[\w.\-:]{1,80}\][ ]?)?)
  | (?P<basic>(?P<clevel>DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.\-<>]+:)
  | (?P<sourced>\[[\w.\-]+(?:/[\w.\-]+)*\.py:\d+\][ ])
    """,
    re.VERBOSE,
)
# The names some formats give a level, as vLLM's logger names it.
_LEVEL_NAMES = {"WARN": "WARNING", "FATAL": "CRITICAL"}
_OTHER_LEVELS = ("ulevel", "plevel", "rlevel", "blevel", "slevel", "llevel", "clevel")

# How far into a line a user's VLLM_LOGGING_PREFIX may push vLLM's header.
_MAX_USER_PREFIX = 80
# How far past the process prefixes the header search reaches (`_layout_of`).
_HEADER_REACH = _MAX_USER_PREFIX + 60


# The outer prefix learned from the log being analysed (see `learn_outer_prefix`) with the
# layouts parsed under it: set for the duration of one analysis, in the thread that runs it.
class _Parsing:
    """The learned outer prefix of an analysis (or none) and the layouts of the lines parsed
    with it, by their digit-masked text."""

    __slots__ = ("layouts", "learned")

    def __init__(self, learned: re.Pattern[str] | None) -> None:
        self.learned = learned
        self.layouts: dict[bytes, _Layout] = {}


_NO_PREFIX = _Parsing(None)  # shared by every analysis of a log with no outer prefix to learn


class _Learned(_local):
    """The outer prefix `learned_prefix` set for this thread (a thread-local, not a ContextVar:
    `contextvars`' import costs a short check, and an analysis runs in one thread)."""

    parsing: _Parsing = _NO_PREFIX


_LEARNED = _Learned()

# Lines up to this long have their layout remembered (a key is kept per distinct shape).
_MEMO_MAX_LINE = 2000
# Layouts remembered per analysis (or, without a learned prefix, per process) before starting over.
_MEMO_MAX_LAYOUTS = 4096
# Writers remembered per layout before starting over.
_MEMO_MAX_WRITERS = 256
# Layouts are remembered by the line with its digits masked (`MASK_DIGITS`): the prefix patterns
# treat all digits alike (`\d`, `[0-9]`, `\w`, `\S`, `str.isdecimal`; none names a digit), so
# lines differing only in their digits have the same layout (tests/core/test_line_layouts.py
# checks the patterns for it).


class _Layout:
    """Where `parse_line` finds a line's parts: spans into its ANSI-free text, and the level.

    It depends only on the line's shape with its digits masked, so one layout serves every line
    of that shape; the values are then sliced from each line's own text (`_line_from`).
    """

    __slots__ = (
        "chain",
        "header",
        "journal",
        "level",
        "message_start",
        "outer",
        "writer_end",
        "writer_start",
        "writers",
    )

    def __init__(self) -> None:
        self.outer: list[tuple[int, int]] = []  # compose services, brackets included
        self.journal: tuple[int, int] | None = None  # a journal's unit
        # Process prefixes in order: (kind, start, end, pid start, pid end); kind "name" (name
        # and pid), "ray" (the parenthesised text), "launcher" (its tag) or "rank" (its digits).
        self.chain: list[tuple[str, int, int, int, int]] = []
        # The text the writer's fields are read from: its first service, unit or process
        # prefix up to the end of the last.
        self.writer_start = 0
        self.writer_end = 0
        self.level: str | None = None
        self.header: tuple[int, int, int, int] | None = None  # vLLM's: its time and source spans
        self.message_start = 0
        # The writer's fields (stream, process, pid, outer) by that text: one log has few writers.
        self.writers: dict[str, tuple[str, str | None, int | None, str | None]] = {}


def parse_line(number: int, raw: str) -> LogLine:
    """Parse one line (without its line break) into a LogLine. Never raises."""
    clean, colmap = strip_ansi(raw)
    return _line_from(number, raw, clean, colmap, _remembered_layout(clean, _LEARNED.parsing))


def _remembered_layout(clean: str, parsing: _Parsing) -> _Layout:
    """The layout of `clean` (see `_Layout`), remembered by its digit-masked text."""
    if len(clean) > _MEMO_MAX_LINE:
        return _layout_of(clean, parsing.learned)
    key = clean.encode("utf-8", "surrogatepass").translate(MASK_DIGITS)
    layouts = parsing.layouts
    layout = layouts.get(key)
    if layout is None:
        layout = _layout_of(clean, parsing.learned)
        if len(layouts) >= _MEMO_MAX_LAYOUTS:
            layouts.clear()
        layouts[key] = layout
    return layout


class WriterPrefix:
    """The text a writer's lines start with, up to their message, as one line printed it, when
    every line starting with that text parses as a line of the same writer (stream, process,
    level, time, source) whose message is the rest: its lines are then taken apart by slicing
    (`message_of`, `line`), with no `parse_line` each. See `writer_prefix` for when that holds.
    """

    __slots__ = ("bare", "first", "length", "text")

    def __init__(self, text: str, first: LogLine, bare: bool) -> None:
        self.text = text
        self.length = len(text)
        self.first = first
        # No logger header: the rest of a line might start one (or another prefix), so only a
        # rest that cannot is taken (see `message_of`).
        self.bare = bare

    def message_of(self, raw: str) -> str | None:
        """The message of `raw` (one line) when it parses as a line of this writer with the text
        after the prefix as its message; None when it might not (then parse it)."""
        if not raw.startswith(self.text) or may_hold_colour(raw):
            return None
        length = self.length
        # After a bare prefix (it ends in a space), a rest starting with one more space starts no
        # runtime, process or uvicorn/logging prefix, and no vLLM header lies in reach of the
        # header search without its `.py:`.
        if (
            self.bare
            and len(raw) > length
            and (raw[length] != " " or raw.find(".py:", length, length + _HEADER_REACH) >= 0)
        ):
            return None
        return raw[length:].rstrip("\r")

    def line(self, number: int, raw: str, message: str) -> LogLine:
        """The LogLine `parse_line(number, raw)` gives for a line whose `message_of` is `message`."""
        first = self.first
        return LogLine(
            number,
            raw,
            message,
            self.length,
            first.stream,
            first.process,
            first.pid,
            first.level,
            first.timestamp,
            first.source,
            first.outer,
        )


def writer_prefix(line: LogLine) -> WriterPrefix | None:
    """The prefix of `line`'s writer that its other lines share (see `WriterPrefix`), when a
    line starting with it provably parses alike; None otherwise (then each line is parsed).

    Why the parse of `prefix + rest` cannot depend on `rest` in the cases taken:
    - no colour code in the line (`strip_ansi` changes nothing) and no learned outer prefix;
    - with vLLM's header, the prefix ends with the header's `] ` (its optional space taken).
      The runtime and process prefixes before it, and the header search, are decided inside
      the prefix: each of their patterns stops at a space or a fixed character before reaching
      the header's end, except Ray's `(autoscaler[^)]*` which may run to a `)` anywhere in the
      line (so a prefix where that attempt is made is not taken); nothing else is read after
      the header;
    - without a header (a raw traceback), the prefix is empty or ends with the optional space
      of its last prefix, and the line's rest must start with a space and hold no `.py:` in
      the header search's reach (`WriterPrefix.message_of`): a space starts no further prefix
      and no uvicorn or logging header, and is no compose service's implausible follow-up.
    tests/core/test_writer_prefix.py checks this against `parse_line` on adversarial rests.
    """
    clean = line.text
    parsing = _LEARNED.parsing
    if may_hold_colour(clean) or parsing.learned is not None:
        return None
    layout = _remembered_layout(clean, parsing)
    prefix = clean[: layout.message_start]
    if layout.header is not None:
        if not prefix.endswith("] ") or clean.startswith("(autoscaler", layout.writer_end):
            return None
        return WriterPrefix(prefix, line, bare=False)
    if layout.level is not None or (prefix and not prefix.endswith(" ")):
        return None
    return WriterPrefix(prefix, line, bare=True)


def _layout_of(clean: str, learned: re.Pattern[str] | None) -> _Layout:
    """Take `clean` apart: runtime prefixes, process prefixes, logger header (as spans)."""
    layout = _Layout()
    pos = 0
    if learned is not None and (found := learned.match(clean)):
        pos = found.end()
    pos = _outer_prefixes(clean, pos, layout)
    while clean.startswith(_PROCESS_FIRST, pos):
        match = _PROCESS.match(clean, pos)
        if not match:
            break
        if match.group("name"):
            layout.chain.append(("name", *match.span("name"), *match.span("pid")))
        elif match.group("ray"):
            layout.chain.append(("ray", *match.span("ray"), 0, 0))
        elif match.group("launcher"):
            layout.chain.append(("launcher", *match.span("launcher"), 0, 0))
        else:
            layout.chain.append(("rank", *match.span("rank"), 0, 0))
        pos = match.end()
    layout.writer_end = pos
    starts = [span[0] for span in layout.outer] + [span[1] for span in layout.chain]
    if layout.journal:
        starts.append(layout.journal[0])
    layout.writer_start = min(starts, default=pos)
    header = _VLLM_HEADER.search(clean, pos, pos + _HEADER_REACH)
    if header and header.start() - pos <= _MAX_USER_PREFIX:
        layout.level = header.group("level")
        layout.header = (*header.span("date"), *header.span("source"))
        pos = header.end()
    else:
        other = _OTHER_HEADER.match(clean, pos)
        if other:
            # (None: vLLM's `[file.py:N] ` alone, its level and time cut off: a column copy)
            layout.level = next((level for level in other.group(*_OTHER_LEVELS) if level), None)
            pos = other.end()
    if layout.level in _LEVEL_NAMES:
        layout.level = _LEVEL_NAMES[layout.level]
    layout.message_start = pos
    return layout


def line_stream(raw: str) -> str:
    """`parse_line(n, raw).stream`, without making the record (a walk over other writers' lines
    asks each only whose it is)."""
    clean, _ = strip_ansi(raw)
    return _writer_of(clean, _remembered_layout(clean, _LEARNED.parsing))[0]


def _writer_of(clean: str, layout: _Layout) -> tuple[str, str | None, int | None, str | None]:
    """`_writer(clean, layout)`, remembered by the layout's prefix text."""
    prefixes = clean[layout.writer_start : layout.writer_end]
    writers = layout.writers
    writer = writers.get(prefixes)
    if writer is None:
        if len(writers) >= _MEMO_MAX_WRITERS:
            writers.clear()
        writer = writers[prefixes] = _writer(clean, layout)
    return writer


def _line_from(number: int, raw: str, clean: str, colmap: ColumnMap | None, layout: _Layout) -> LogLine:
    """The LogLine of a line whose text `clean` has `layout`."""
    stream, process, pid, outer = _writer_of(clean, layout)
    timestamp = source = None
    if layout.header is not None:
        # A log repeats its times and sources: the records of its lines share one text of each
        # (`sys.intern` keeps a text only while something holds it).
        time_start, time_end, source_start, source_end = layout.header
        timestamp = intern(clean[time_start:time_end])
        source = intern(clean[source_start:source_end])
    pos = layout.message_start
    # Positional (number, text, message, message_col, stream, process, pid, level, timestamp,
    # source, outer): a third cheaper than by keyword, and this runs for every line read.
    return LogLine(
        number,
        raw,
        clean[pos:].rstrip("\r"),
        colmap[pos] if colmap else pos,
        stream,
        process,
        pid,
        layout.level,
        timestamp,
        source,
        outer,
    )


def _writer(clean: str, layout: _Layout) -> tuple[str, str | None, int | None, str | None]:
    """(stream, process, pid, outer) from the prefixes of `clean` that `layout` found."""
    outer = "/".join(clean[start:end].strip("[]") for start, end in layout.outer) or None
    chain = [clean[slice(*layout.journal)]] if layout.journal else []
    process = pid = None
    for kind, start, end, pid_start, pid_end in layout.chain:
        if kind == "name":
            process, pid = clean[start:end], int(clean[pid_start:pid_end])
            chain.append(f"{process}:{pid}")
        elif kind == "ray":
            chain.append(clean[start:end].split(" ")[0])
        elif kind == "launcher":
            chain.append(clean[start:end])  # (its text: the writer is found by it)
        else:
            chain.append(f"rank{clean[start:end]}")
    stream = "|".join(filter(None, [outer or "", *chain]))
    # (one text per writer across the shapes of its lines)
    return intern(stream), process and intern(process), pid, outer and intern(outer)


def _outer_prefixes(clean: str, pos: int, layout: _Layout | None = None) -> int:
    """Take the known runtime prefixes off from `pos`: where they end. Their services and a
    journal's unit go into `layout`, when given. A progress bar that shares its row with the
    line after it is taken off too (`_GLUED_BAR`)."""
    while pos < len(clean) and _may_start_outer(clean[pos]):
        match = _OUTER.match(clean, pos)
        if (
            not match
            or match.end() == pos
            or (match.group("compose") and not _plausible_compose(clean, match))
        ):
            # (a bar only where no runtime prefix starts: its text could be a bar's description)
            after = _after_glued_bars(clean, pos)
            if after == pos:
                break
            pos = after
            continue
        if layout is not None and match.group("service"):
            layout.outer.append(match.span("service"))
        elif layout is not None and match.group("unit"):
            # One journal interleaves a service's processes (env[12], systemd[1]): a writer, not
            # a separate service.
            layout.journal = match.span("unit")
        pos = match.end()
    return pos


def _after_glued_bars(clean: str, pos: int) -> int:
    """Where the line goes on after the progress bars at `pos` that have more text after them
    (`pos` when none): a bar's process ended no row, so the next line printed (another
    process's, often) shares the bar's row (`…5.98it/s](Worker_TP1 pid=515) INFO …`)."""
    while clean.find("%", pos, pos + _BAR_REACH) >= 0:
        bar = _GLUED_BAR.match(clean, pos)
        if bar is None or clean[bar.end() :].isspace() or bar.end() == len(clean):
            break  # (a bar alone on its row, padded or not)
        pos = bar.end()
    return pos


def _plausible_compose(clean: str, match: re.Match[str]) -> bool:
    """A compose prefix is `name  | ` at the start; reject tqdm bars and table rows like `a | b`."""
    service = match.group("service")
    if service[0] == "[":
        return True
    if service.isdecimal():
        return False  # a viewer's line-number gutter (`  12 | `), read as a learned prefix
    # compose pads the service name with spaces to align the bars; tables rarely start with a
    # single word followed by a bar and then a vLLM-looking line.
    rest = clean[match.end() : match.end() + 40]
    return (
        rest.startswith(("(", "INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "Traceback", " ", "["))
        or "  " in match.group(0)
        or not rest
    )


# Where vLLM's own part of a line begins: a process prefix, a logger header, a traceback line.
_VLLM_START = regexes.compile(
    r"\((?:" + PROCESS_NAME + r"(?:[ ]\w+=?\w*)?)[ ]pid=\d+[^)]*\)"
    r"|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ ]"
    + VLLM_HEADER_DATE
    + r"|Traceback[ ]\(most[ ]recent[ ]call[ ]last\):"
)
# A learned prefix must lead this share of the sampled vLLM lines, and at least this many.
_LEARN_SHARE = 0.6
_LEARN_MIN_LINES = 5
_MAX_PREFIX = 120


def learn_outer_prefix(lines: Iterable[str]) -> re.Pattern[str] | None:
    """The log's own outer prefix, when most of its vLLM lines start with one the known formats
    do not take apart (a collector's timestamp and host, a pod column, a job name), or, in a log
    with few vLLM lines, when it leads nearly every line (`_leading_every_line`): its shape, with
    digits generalised, as a pattern anchored at the line start. None: nothing to learn."""
    shapes: Counter[str] = Counter()
    anchored = 0
    cleans: list[str] = []
    for raw in lines:
        clean, _ = strip_ansi(clip_line(raw, 400))
        cleans.append(clean)
        start = _VLLM_START.search(clean, 0, _MAX_PREFIX + 80)
        if start is None:
            continue
        anchored += 1
        if start.start() == 0 or start.start() > _MAX_PREFIX or _known_prefix_ends_at(clean, start.start()):
            continue
        shapes[_shape(clean[: _unknown_end(clean, start.start())])] += 1
    if not shapes:
        return None
    shape, count = shapes.most_common(1)[0]
    if count >= _LEARN_MIN_LINES and count >= _LEARN_SHARE * anchored:
        return re.compile(shape)
    return _leading_every_line(shape, cleans)


# A prefix seen before too few vLLM lines is learned when it leads this share of all the lines.
_EVERY_LINE_SHARE = 0.9


def _leading_every_line(shape: str, cleans: list[str]) -> re.Pattern[str] | None:
    """`shape` as the outer prefix when it leads nearly every non-blank line (`_EVERY_LINE_SHARE`
    of them, at least `_LEARN_MIN_LINES`), though few lines show vLLM's start after it: a pod's
    log gathered by `kubectl logs --prefix` or stern puts its column before every line, and a
    short log, or an offline script's bare traceback (`  File …` lines start no vLLM line), has
    few such starts; a log pasted indented (a Markdown code block) has the same spaces before
    every line (the shape ends in its own white space, so the lines keep their indentation).
    Not where the known runtime prefixes take it apart."""
    pattern = re.compile(shape)
    texts = [clean for clean in cleans if clean.strip()]
    # (A line whose start the known runtime prefixes take apart, a collector's timestamp, is not
    # led by a column of its own.)
    led = sum(
        1 for clean in texts if (found := pattern.match(clean)) and _outer_prefixes(clean, 0) < found.end()
    )
    if len(texts) < _LEARN_MIN_LINES or led < _EVERY_LINE_SHARE * len(texts):
        return None
    return pattern


_SPACES = regexes.compile(r"\s+")
# A column's bar with no space after it (a viewer's line-number gutter `  12|`, `12│`).
_BARS = regexes.compile(r"[|│┃](?=\S)")


def _unknown_end(clean: str, end: int) -> int:
    """Where the part of `clean[:end]` that no known prefix takes apart ends: the first place
    after white space from which the runtime and process prefixes `parse_line` knows reach
    `end` (a pod's column before torch's `[rank0]: `: the column is learned, the rank is read
    as in any log); else the first such place after a column's bar with no space after it (a
    gutter `  12|[rank0]: ` has no white space to end at); else `end`."""
    for splits in (_SPACES, _BARS):
        for split in splits.finditer(clean, 0, end):
            if split.end() >= end:
                break  # (a place at `end` itself takes nothing apart)
            pos = _outer_prefixes(clean, split.end())
            while clean.startswith(_PROCESS_FIRST, pos) and (match := _PROCESS.match(clean, pos)):
                pos = match.end()
            if pos >= end:
                return split.end()
    return end


def _known_prefix_ends_at(clean: str, end: int) -> bool:
    """Whether the runtime prefixes `parse_line` knows take the line apart up to `end`, or a
    vLLM header follows them within the reach of a user's VLLM_LOGGING_PREFIX."""
    pos = _outer_prefixes(clean, 0)
    if pos >= end:
        return True
    header = (
        _VLLM_HEADER.match(clean, end)
        if clean.startswith(("DEBUG", "INFO", "WARN", "ERROR", "CRIT"), end)
        else None
    )
    return header is not None and end - pos <= _MAX_USER_PREFIX and not clean.startswith("(", pos)


def _shape(prefix: str) -> str:
    """A prefix as a pattern: digit runs and white-space runs generalised, the rest literal; but
    the white space that ends it is itself (after it the line's own text begins, whose
    indentation is its own: a traceback's `  File` and code lines, a message's next lines)."""
    out = []
    tokens = re.findall(r"\d+|\s+|[^\d\s]+", prefix)
    for at, token in enumerate(tokens):
        if token[0].isdigit():
            out.append(r"\d+")
        elif token[0].isspace() and at < len(tokens) - 1:
            out.append(r"\s+")
        else:
            out.append(re.escape(token))
    return "".join(out)


def learned_prefix(pattern: re.Pattern[str] | None) -> _LearnedPrefix:
    """Parse lines with `pattern` as the log's outer prefix while the block runs
    (`with learned_prefix(pattern): ...`)."""
    return _LearnedPrefix(_Parsing(pattern) if pattern is not None else _NO_PREFIX)


class _LearnedPrefix:
    """`learned_prefix`'s context manager (a class: `contextlib` would cost a short check's
    start-up its import)."""

    def __init__(self, parsing: _Parsing) -> None:
        self._parsing = parsing
        self._saved: list[_Parsing] = []

    def __enter__(self) -> None:
        self._saved.append(_LEARNED.parsing)
        _LEARNED.parsing = self._parsing

    def __exit__(self, *exc_info: object) -> None:
        _LEARNED.parsing = self._saved.pop()
