"""Several files of one run (one per rank, per process or per pod) as one timeline.

When TP/DP workers or pods log to files of their own, one engine death is spread over them: the
worker's original exception in one, EngineCore's re-raise and the API server's `EngineDeadError`
in another. Checked one by one, each file is a death of its own, and the EngineCore file's root
is the re-raise. `merge_logs` interleaves the files' lines by their timestamps into one text, so
the analysis sees what one file holding every process would have shown, and `MergedLog.locate`
maps each line of it back to its file and line.

A line without a timestamp (a traceback Python printed, a continuation, a tqdm bar) stays glued
to the line before it in its file; lines with equal times keep the order of the files given. The
clock is vLLM's header time (`MM-DD HH:MM:SS[.fff]`, local time, the same on every node) unless
every file has a runtime's full timestamp (Kubernetes, `docker logs -t`), which is finer.
"""

from __future__ import annotations

import heapq
import re
from array import array
from collections.abc import Iterator, Sequence

from . import regexes
from .catalog import Catalog
from .jsonlog import Transcriber, looks_like_json_log
from .linebreaks import NewlineLines
from .lines import PROCESS_NAME
from .order import newest_first, oldest_first
from .records import dataclass, field
from .wraps import unwrap, wrap_width

# vLLM's header time (after the level; `lines.VLLM_HEADER_DATE`, here by fields) and a runtime's
# full timestamp at the line start.
_HEADER_TIME = regexes.compile(
    r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:\d{4}-)?(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d+))? "
)
_RUNTIME_TIME = regexes.compile(r"(?:\S+ )?\d{4}-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
# How far into a line a timestamp is looked for.
_TIME_REACH = 200
# A process prefix: who wrote a line (`(Worker_TP1 pid=7)`).
_WRITER = regexes.compile(r"\((" + PROCESS_NAME + r"(?: \w+=?\w*)?) pid=(\d+)")
# Lines sampled from each file to choose the clock and to tell whether files are one run.
_SAMPLE_LINES = 4000

Stamp = tuple[int, int, int, int, int, float]


def header_time(line: str) -> Stamp | None:
    """vLLM's header time of a line, as (month, day, hour, minute, second, fraction)."""
    return _stamp(_HEADER_TIME.search(line, 0, _TIME_REACH))


def runtime_time(line: str) -> Stamp | None:
    """A runtime's full timestamp at the start of a line (its year is left out, as vLLM's is)."""
    return _stamp(_RUNTIME_TIME.match(line, 0, _TIME_REACH))


def _stamp(match: re.Match[str] | None) -> Stamp | None:
    if match is None:
        return None
    month, day, hour, minute, second = (int(g) for g in match.groups()[:5])
    fraction = match.group(6)
    return month, day, hour, minute, second, float("0." + fraction) if fraction else 0.0


@dataclass(frozen=True)
class Part:
    """One file of the run: how it is named and its text (a JSON log's is its transcript)."""

    name: str
    text: str
    lines: list[str] = field(default_factory=list)  # its `\n`-lines (without the break)
    # A transcript's map from its `\n`-lines to the file's own lines (a JSON log's, a terminal
    # copy's, a newest-first log's); None: the same.
    origin: array | None = None

    def own_line(self, line: int) -> int:
        """The file's own `\\n`-line of line `line` of `text`."""
        return line if self.origin is None else self.origin[min(line, len(self.origin) - 1)]


def read_part(name: str, text: str) -> Part:
    """A file of the run, read as the analysis reads it (a JSON log through its transcript, a
    terminal copy's cut lines joined, a log listed newest first reversed)."""
    origin = None
    if looks_like_json_log(text):
        transcript = Transcriber().transcribe(text)
        text, origin = transcript.text, transcript.origin
    elif (width := wrap_width(text)) is not None:
        joined = unwrap(text, width)
        text, origin = joined.text, joined.origin
    elif newest_first(text):
        reversed_lines = oldest_first(text)
        text, origin = reversed_lines.text, reversed_lines.origin
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return Part(name, text, lines, origin)


@dataclass
class MergedLog:
    """The interleaved timeline and where each of its `\\n`-lines comes from."""

    parts: Sequence[Part]
    text: str
    part_of: array  # per merged line: the index of its part
    line_of: array  # ... and its line in that part's text

    def locate(self, line: int) -> tuple[int, int]:
        """(part index, the file's own 0-based `\\n`-line) of merged `\\n`-line `line`."""
        line = max(0, min(line, len(self.part_of) - 1))
        part = self.part_of[line]
        return part, self.parts[part].own_line(self.line_of[line])


def choose_clock(parts: Sequence[Part]):
    """The timestamp every file has: the runtime's when all have it (finer, one time zone),
    else vLLM's header time."""

    def has(read, part: Part) -> bool:
        return any(read(line) for line in part.lines[:_SAMPLE_LINES])

    if all(has(runtime_time, p) for p in parts):
        return runtime_time
    return header_time


def merge_logs(parts: Sequence[Part]) -> MergedLog:
    """Interleave `parts` by time into one text (see the module docstring)."""
    clock = choose_clock(parts)
    streams = [_blocks(index, part, clock) for index, part in enumerate(parts)]
    part_of, line_of = array("i"), array("q")
    out: list[str] = []
    for _, index, first, last in heapq.merge(*streams):
        lines = parts[index].lines
        for number in range(first, last):
            out.append(lines[number])
            part_of.append(index)
            line_of.append(number)
    text = "\n".join(out) + ("\n" if out else "")
    return MergedLog(parts, text, part_of, line_of)


def _blocks(index: int, part: Part, clock) -> Iterator[tuple[Stamp, int, int, int]]:
    """(time, part, first line, end line) of each timed line with the untimed lines after it;
    lines before the first time take that time (they were printed just before it)."""
    lines = part.lines
    timed = [(n, stamp) for n, line in enumerate(lines) if (stamp := clock(line)) is not None]
    if not timed:
        if lines:
            yield (0, 0, 0, 0, 0, 0.0), index, 0, len(lines)
        return
    bounds = [0] + [n for n, _ in timed[1:]] + [len(lines)]
    last: Stamp = timed[0][1]
    for (_, stamp), start, end in zip(timed, bounds, bounds[1:], strict=False):
        last = max(last, stamp)  # a clock step back (a restart's log rotation) keeps file order
        yield last, index, start, end


def writers(part: Part) -> set[tuple[str, str]]:
    """The (process, pid) prefixes of a file's sampled lines."""
    found: set[tuple[str, str]] = set()
    for line in part.lines[:_SAMPLE_LINES]:
        match = _WRITER.search(line, 0, _TIME_REACH)
        if match:
            found.add((match.group(1), match.group(2)))
    return found


def time_range(part: Part, clock) -> tuple[Stamp, Stamp] | None:
    stamps = [s for line in part.lines if (s := clock(line)) is not None]
    return (min(stamps), max(stamps)) if stamps else None


def saw_start(part: Part, catalog: Catalog) -> bool:
    """Whether a file shows vLLM starting (a run-start marker of the catalog), by literal search."""
    text = part.text
    for marker in catalog.markers_of("run_start"):
        at = text.find(marker.literal)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            if marker.pattern.search(text[start : end if end >= 0 else len(text)]):
                return True
            at = text.find(marker.literal, at + 1) if end >= 0 else -1
    return False


def one_run(parts: Sequence[Part], started: Sequence[bool]) -> bool:
    """Whether files given together are evidently one run split per process (checked without
    asking): each has timestamps, their times overlap, no process prefix appears in two of them
    (one writer, one file), and at most one of them saw vLLM start (`started`, see
    `saw_start`). Per-pod files, each with its own start, are merged only when asked."""
    if len(parts) < 2 or sum(started) > 1:
        return False
    clock = choose_clock(parts)
    ranges = [time_range(p, clock) for p in parts]
    if any(r is None for r in ranges):
        return False
    starts = [r[0] for r in ranges if r is not None]
    ends = [r[1] for r in ranges if r is not None]
    if max(starts) > min(ends):
        return False
    seen: set[tuple[str, str]] = set()
    for part in parts:
        own = writers(part)
        if not own or own & seen:
            return False
        seen |= own
    return True


class MergedNumbering:
    """Core lines of a merged text as each file's own `\n`-lines (`line`, `position`) and the
    file they are in (`path_of`)."""

    def __init__(self, merged: MergedLog) -> None:
        self.merged = merged
        self.newlines = NewlineLines(merged.text)

    def line(self, core_line: int) -> int:
        return self.merged.locate(self.newlines.line(core_line))[1]

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        line, column = self.newlines.position(core_line, column)
        part, own = self.merged.locate(line)
        if self.merged.parts[part].origin is not None:
            column = 0  # a JSON record's line: columns are the transcript's, not the file's
        return own, column

    def path_of(self, core_line: int) -> str:
        return self.merged.parts[self.merged.locate(self.newlines.line(core_line))[0]].name
