"""When a line was written, as the log says it: the timestamp a line carries, or its writer's last.

A log line may carry two timestamps: the runtime's (`docker logs -t`, Kubernetes CRI, Docker
Desktop, Python logging: a full date, often to the microsecond) at the start, and vLLM's logger
header (`INFO 05-21 10:00:01[.123] [file.py:N]`: no year). The runtime's is the more complete and
wins. A traceback's lines carry none (Python prints them raw under the logger line), so the time of
a root cause is that of the nearest line above it written by the same process, in the same run:
a restarted service's earlier run was another process, however alike its lines look.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from functools import partial

from . import regexes
from .lines import VLLM_HEADER_DATE, line_stream, parse_line, starts_of_prefix
from .model import LogLine
from .text import ESCAPE, LogIndex, strip_ansi
from .tracebacks import stream_literals

#: A runtime's date and time at the start of a line (RFC 3339, ISO 8601 with a space, logging's
#: comma), after at most a short prefix (a compose service column, a markdown quote).
_RUNTIME = regexes.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?")
_RUNTIME_WITHIN = 48
#: vLLM's logger header: level, its time (`lines.VLLM_HEADER_DATE`) with an optional fraction, then
#: the source.
_VLLM = regexes.compile(
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) ("
    + VLLM_HEADER_DATE
    + r"(?:[.,]\d+)?) [\[(]?[\w./-]+\.py:\d+\]"
)
_VLLM_WITHIN = 200
#: How far above a line to look for its writer's last timestamp (a long traceback's height).
LOOK_BACK_LINES = 400


def line_timestamp(raw: str) -> str | None:
    """The timestamp written on this line, as written (the runtime's first), or None."""
    clean, _ = strip_ansi(raw[: _VLLM_WITHIN + _RUNTIME_WITHIN])
    runtime = _RUNTIME.search(clean, 0, _RUNTIME_WITHIN + 40)
    if runtime is not None and runtime.start() <= _RUNTIME_WITHIN:
        return runtime.group()
    header = _VLLM.search(clean)
    return header.group(1) if header is not None else None


#: A line can carry a timestamp only if its first `_READ` characters hold one of these: every
#: timestamp holds a time of day (`HH:MM:SS`, so `:MM:SS`), and a colour code (ESC, or one whose
#: ESC was lost before a process prefix) may hide one from a plain search. A necessary test, at
#: C speed: each alternative starts with a character most lines seldom hold (digits are common).
_READ = _VLLM_WITHIN + _RUNTIME_WITHIN
_MAY_HOLD_TIME = regexes.compile(r":\d\d:\d\d|\x1b|m\(")


def _may_hold_time(text: str) -> bool:
    """Whether the first `_READ` characters of `text` may hold a timestamp (see `_MAY_HOLD_TIME`).

    The pattern has no literal prefix, so the engine tries it at every position. Every time of
    day holds a `:`, colour codes or not, and a traceback's frame and code lines (most of a crash
    log) seldom do: they are passed over first at `str.find`'s speed."""
    return ":" in text and _MAY_HOLD_TIME.search(text, 0, _READ) is not None


def timestamp_at(index: LogIndex, line: int, run_starts: Sequence[int] = ()) -> str | None:
    """The time of core line `line`: its own timestamp, else the nearest one above it on a line of
    the same writer (its process prefix), within `LOOK_BACK_LINES` and not above the start of its
    run (`run_starts`: the lines where runs start, as `Analysis.run_starts`); None when there is
    none."""
    return Timestamps(index, run_starts).at(line)


class Timestamps:
    """`timestamp_at` for many lines of one index (a report's roots and symptoms), each line
    looked at once for all look-ups (one death's symptoms look above the same lines): the lines
    above are read a block at a time (`LogIndex.iter_lines_back`); those that lack a piece of text every line of
    the writer holds (`stream_literals`) are passed over, the others read for a time only if they
    may hold one (a traceback's lines hold none), and parsed for their writer only if they do. A
    look-up stops at an earlier look-up of the same writer, whose answer tells what lies above
    it (a restart loop's deaths look above each other)."""

    def __init__(self, index: LogIndex, run_starts: Sequence[int] = ()) -> None:
        self.index = index
        self._run_starts = sorted(set(run_starts))
        self._starts_of: dict[str | None, list[int]] = {}  # outer prefix -> the starts of its runs
        self._outers: list[tuple[int, str | None]] | None = None  # (run start, its outer prefix)
        self._times: dict[int, str | None] = {}  # line -> its own time
        self._writers: dict[int, str] = {}  # line -> its writer (stream), for lines that may hold a time
        # (line, writer) -> (line, time) of that writer's nearest timestamp above it, or None.
        self._nearest: dict[tuple[int, str], tuple[int, str] | None] = {}

    def at(self, line: int) -> str | None:
        """The time of core line `line` (see `timestamp_at`)."""
        index = self.index
        start = index.line_start(line)
        raw = index.slice(start, index.line_end_at(start))
        own = line_timestamp(raw)
        if own is not None:
            return own
        parsed = parse_line(line, raw)
        key = (line, parsed.stream)
        if key not in self._nearest:
            self._nearest[key] = self._nearest_above(start, parsed, self._run_start(line, parsed.outer))
        nearest = self._nearest[key]
        return nearest[1] if nearest is not None else None

    def _run_start(self, line: int, outer: str | None) -> int:
        """The first line of the run `line` (of runtime prefix `outer`) is in (0: the first run;
        which starts begin its runs: `lines.starts_of_prefix`)."""
        if not self._run_starts:
            return 0
        starts = self._run_starts if not outer else self._starts_of.get(outer)
        if starts is None:
            if self._outers is None:
                # (`line_start` walks from a line the index knows: `line_text` would build the
                # whole line table, every page of a mapped file)
                self._outers = [
                    (n, parse_line(n, self.index.line_at(self.index.line_start(n))).outer)
                    for n in self._run_starts
                ]
            starts = self._starts_of[outer] = starts_of_prefix(self._outers, outer)
        at = bisect_right(starts, line) - 1
        return starts[at] if at >= 0 else 0

    def _nearest_above(self, start: int, first: LogLine, run_start: int = 0) -> tuple[int, str] | None:
        """(line, time) of the nearest timestamp of `first`'s writer among the `LOOK_BACK_LINES`
        lines above it (`first` starts at `start`), none above `run_start`, or None."""
        stream, line = first.stream, first.number
        pieces = stream_literals(first)
        lowest = max(line - LOOK_BACK_LINES, run_start)
        # A line can answer only if it holds the writer's rarest piece (or a colour code that
        # may split it); a writer with none (lines without a prefix) answers only on a line
        # that may hold a time (`_MAY_HOLD_TIME`, searched for in C over each block: most lines
        # above hold a `:`, and reading each would cost a Python step). Only those are read.
        needles: tuple[Needle, ...] = (
            (pieces[0], *((ESCAPE,) if self.index.has_escape else ())) if pieces else (_MAY_HOLD_TIME,)
        )
        for number, text in self._lines_back_holding(start, line, line - lowest, needles):
            if (number, stream) in self._nearest:
                # Looked up before: nothing of the writer's lies between, and the window above
                # that line covers what is left of this one.
                found = self._nearest[(number, stream)]
                return found if found is not None and found[0] >= lowest else None
            if pieces and ESCAPE not in text and not all(piece in text for piece in pieces):
                continue  # another writer's (a colour code may split a piece in the raw text)
            # A line answers when it is the writer's and holds a time: whose it is is asked
            # first, as it is cheaper (`line_stream`) and, for a writer with no piece of text of
            # its own (lines without a prefix), the lines above are mostly other writers'.
            if not _may_hold_time(text):
                continue
            writer = self._writers.get(number)
            if writer is None:
                writer = self._writers[number] = line_stream(text)
            if writer != stream:
                continue
            time = self._times.get(number, _UNSEEN)
            if time is _UNSEEN:
                time = self._times[number] = line_timestamp(text)
            if time is not None:
                return number, time  # type: ignore[return-value]
        return None

    def _lines_back_holding(
        self, start: int, line: int, limit: int, needles: tuple[Needle, ...]
    ) -> Iterator[tuple[int, str]]:
        """What `LogIndex.iter_lines_back(start, line, limit)` yields, less the lines that hold
        none of `needles` (texts, or patterns that match within a line): the text above is
        decoded a block at a time and searched backwards for the needles at C speed (a pattern:
        forwards over the block, once), each hit's line numbered by counting the breaks passed.
        A text with a bare `\r` (which breaks lines too) is walked."""
        index = self.index
        if index.has_cr:
            for number, text in index.iter_lines_back(start, line, limit):
                if any(_holds(text, needle) for needle in needles):
                    yield number, text
            return
        lowest = line - limit  # the first line of the window
        end = start - 1  # the line break that ends the line above
        while end >= 0 and line > lowest:
            lo = index.line_start_at(max(0, end - _BLOCK))  # (whole lines, at least one)
            chunk = index.slice(lo, end)
            last_before = [_last_before(chunk, needle) for needle in needles]
            # Backwards through `chunk`: `tail` ends the part not searched yet, and `after` is
            # the number of the line that follows it.
            tail, after = len(chunk), line
            while tail >= 0:
                hit = max(last(tail) for last in last_before)
                if hit < 0:
                    break
                line_end = chunk.find("\n", hit, tail)
                if line_end < 0:
                    line_end = tail
                after -= chunk.count("\n", line_end, tail) + 1  # now the hit's line number
                if after < lowest:
                    return
                line_start = chunk.rfind("\n", 0, hit) + 1
                yield after, chunk[line_start:line_end]
                tail = line_start - 1  # (the break before it; -1: the chunk's first line)
            line -= chunk.count("\n") + 1
            end = lo - 1


#: What `_lines_back_holding` looks for: a text, or a pattern whose matches hold no line break.
Needle = str | re.Pattern[str]


def _holds(text: str, needle: Needle) -> bool:
    return needle in text if isinstance(needle, str) else needle.search(text) is not None


def _last_before(chunk: str, needle: Needle) -> Callable[[int], int]:
    """What finds where the last occurrence of `needle` in `chunk` that ends by an offset
    starts (-1: none), as `chunk.rfind(needle, 0, offset)` does for a text. A pattern's
    matches are found once, forwards (no engine here searches backwards); those it passes over
    inside an earlier match lie on that match's line, so the lines that hold one are the same."""
    if isinstance(needle, str):
        return partial(chunk.rfind, needle, 0)
    starts, ends = [], []
    for found in needle.finditer(chunk):
        starts.append(found.start())
        ends.append(found.end())

    def last(offset: int) -> int:
        at = bisect_right(ends, offset) - 1
        return starts[at] if at >= 0 else -1

    return last


#: How much text `_lines_back_holding` decodes at a time (to the start of the line it cuts).
_BLOCK = 1 << 13
_UNSEEN = object()
