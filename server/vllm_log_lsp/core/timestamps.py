"""When a line was written, as the log says it: the timestamp a line carries, or its writer's last.

A log line may carry two timestamps: the runtime's (`docker logs -t`, Kubernetes CRI, Docker
Desktop, Python logging: a full date, often to the microsecond) at the start, and vLLM's logger
header (`INFO 05-21 10:00:01[.123] [file.py:N]`: no year). The runtime's is the more complete and
wins. A traceback's lines carry none (Python prints them raw under the logger line), so the time of
a root cause is that of the nearest line above it written by the same process.
"""

from __future__ import annotations

from . import regexes
from .lines import parse_line
from .nearby import lines_before
from .text import LogIndex, strip_ansi

#: A runtime's date and time at the start of a line (RFC 3339, ISO 8601 with a space, logging's
#: comma), after at most a short prefix (a compose service column, a markdown quote).
_RUNTIME = regexes.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?")
_RUNTIME_WITHIN = 48
#: vLLM's logger header: level, `MM-DD HH:MM:SS` with an optional fraction, then the source.
_VLLM = regexes.compile(
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) [\[(]?[\w./-]+\.py:\d+\]"
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
#: timestamp holds a time of day, and a colour code (ESC, or one whose ESC was lost before a
#: process prefix) may hide one from a plain search. A necessary test, at C speed.
_READ = _VLLM_WITHIN + _RUNTIME_WITHIN
_MAY_HOLD_TIME = regexes.compile(r"\d\d:\d\d:\d\d|\x1b|m\(")


def _may_hold_time(text: str) -> bool:
    """Whether the first `_READ` characters of `text` may hold a timestamp (see `_MAY_HOLD_TIME`).

    The pattern has no literal prefix, so the engine tries it at every position. Every time of
    day holds a `:`, colour codes or not, and a traceback's frame and code lines (most of a crash
    log) seldom do: they are passed over first at `str.find`'s speed."""
    return ":" in text and _MAY_HOLD_TIME.search(text, 0, _READ) is not None


def timestamp_at(index: LogIndex, line: int) -> str | None:
    """The time of core line `line`: its own timestamp, else the nearest one above it on a line of
    the same writer (its process prefix), within `LOOK_BACK_LINES`; None when the log has none."""
    return Timestamps(index).at(line)


class Timestamps:
    """`timestamp_at` for many lines of one index (a report's roots and symptoms): the lines
    above are read a block at a time (`nearby`), only those that may hold a time are parsed (the
    lines of a traceback hold none), each line is looked at once (one death's symptoms look above
    the same lines), and a look-up stops at an earlier look-up of the same writer, whose answer
    tells what lies above it (a restart loop's deaths look above each other)."""

    def __init__(self, index: LogIndex) -> None:
        self.index = index
        self._known: dict[int, tuple[str, str] | None] = {}  # line -> (its time, its writer)
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
        stream = parse_line(line, raw).stream
        key = (line, stream)
        if key not in self._nearest:
            self._nearest[key] = self._nearest_above(start, line, stream)
        nearest = self._nearest[key]
        return nearest[1] if nearest is not None else None

    def _nearest_above(self, start: int, line: int, stream: str) -> tuple[int, str] | None:
        """(line, time) of `stream`'s nearest timestamp among the `LOOK_BACK_LINES` lines above
        the one starting at `start` (numbered `line`), or None."""
        lowest = line - LOOK_BACK_LINES
        for number, text in lines_before(self.index, start, line, LOOK_BACK_LINES):
            if (number, stream) in self._nearest:
                # Looked up before: nothing of the writer's lies between, and the window above
                # that line covers what is left of this one.
                found = self._nearest[(number, stream)]
                return found if found is not None and found[0] >= lowest else None
            known = self._known.get(number, _UNSEEN)
            if known is _UNSEEN:
                time = line_timestamp(text) if _may_hold_time(text) else None
                known = self._known[number] = (time, parse_line(number, text).stream) if time else None
            if known is not None and known[1] == stream:  # type: ignore[index]
                return number, known[0]  # type: ignore[index]
        return None


_UNSEEN = object()
