"""Start-ups abandoned by their caller: an error caught and printed, then the engine shut down.

An offline script (`LLM(...)`) or a launcher that catches the exception of a failed start-up and
prints only its message (`print(f"Error: {e}")`) leaves no traceback and no vLLM symptom: what
the log shows is that message, then vLLM's executor shutting down its workers as the engine is
garbage-collected, and the end of the run. The engine died in start-up all the same. Such a run,
whose start-up never completed, ends with the executor's shutdown right under the caller's
report; the report stands in for the root cause and is named by the catalog like any error.
"""

from __future__ import annotations

import bisect

from . import catalog as catalog_mod
from . import regexes
from .catalog import Catalog, Marker
from .incidents import Incident, line_offset, reached_serving, run_lines
from .lines import parse_line
from .model import LogLine, Span, Symptom
from .phase import READY_MARKERS
from .scan import Scan
from .text import LogIndex

#: The executor's shutdown: the run must end within this many lines after it (its workers'
#: goodbyes) ...
_TAIL_LINES = 20
#: ... and the caller's report must be among the main process's lines right above it.
_LOOK_UP_LINES = 8
#: How much of a run's end is read for the shutdown (bytes or characters: whole lines of it).
_TAIL_SPAN = 16384

#: What a caller prints for a caught exception: a word or two, an error word, a colon, the
#: message (`Error: …`, `LLM init error: …`, `Failed to start the engine: …`).
_CALLER_REPORT = regexes.compile(
    r"^(?:[A-Za-z][\w.()-]*(?: [\w.()-]+){0,3} )?(?:[Ee]rror|ERROR|[Ff]ailed|FAILED|[Ee]xception)"
    r"(?: [\w-]+){0,5}: +(?P<message>\S.{3,})$"
)

ABANDONED = Marker("symptom", "startup-abandoned", "", catalog_mod.compile_pattern("."), "Start-up abandoned")


def abandoned_startups(
    index: LogIndex, catalog: Catalog, scan: Scan, incidents: list[Incident]
) -> list[Incident]:
    """Runs with no death whose start-up was abandoned (see the module docstring), one incident
    each, its symptom the caller's report."""
    shutdowns = [m for m in catalog.markers_of("phase") if m.id == "executor-shutdown"]
    if not shutdowns:
        return []
    taken = {(inc.outer, inc.run_index) for inc in incidents}
    found = []
    known = {outer or "" for _, outer in scan.run_starts}
    for outer in sorted(known | {""}):
        starts = run_lines(scan, outer)
        for run_index in range(len(starts) + 1):
            if (outer, run_index) in taken:
                continue
            lo = line_offset(index, scan, starts[run_index - 1]) if run_index > 0 else 0
            hi = line_offset(index, scan, starts[run_index]) if run_index < len(starts) else len(index)
            # (a runtime prefix with no run start of its own, a compose service's, is read with
            # the lines of no prefix: their run starts are its too)
            writers = {outer} if outer else None
            incident = _abandoned_run(index, catalog, shutdowns, writers, known, lo, hi)
            if incident is None:
                continue
            # Numbered among the runs of the prefix it was written under.
            writer = incident.outer
            incident.run_index = bisect.bisect_right(run_lines(scan, writer), incident.symptoms[0][0].line)
            if (writer, incident.run_index) not in taken:
                taken.add((writer, incident.run_index))
                found.append(incident)
    return found


def _abandoned_run(
    index: LogIndex,
    catalog: Catalog,
    shutdowns: list[Marker],
    writers: set[str] | None,
    known: set[str],
    lo: int,
    hi: int,
) -> Incident | None:
    """The incident of the run in [lo, hi) if its start-up was abandoned, else None (its run
    index still to be set). `writers`: the runtime prefix whose run it is, or None for the
    lines of no prefix and of prefixes with no run start of their own (not in `known`)."""
    # Only the run's last lines are read, and only if they hold a shutdown's words.
    tail_start = index.line_start_at(max(lo, hi - _TAIL_SPAN))
    if not any(index.find(marker.literal, tail_start, hi) >= 0 for marker in shutdowns):
        return None
    starts, lines = _tail_lines(index, tail_start, hi)
    at = _last_shutdown(lines, shutdowns, writers, known)
    if at is None or len(lines) - 1 - at > _TAIL_LINES:
        return None
    report = _caller_report(lines, at, parse_line(0, lines[at]).stream)
    if report is None:
        return None
    offset = starts[report]
    if reached_serving(index, catalog, lo, offset) or _ready(index, catalog, lo, offset):
        return None
    number = index.line_of(offset)
    parsed = parse_line(number, lines[report])
    span = Span(number, parsed.message_col, parsed.message_col + len(parsed.message.rstrip()))
    title = "The caller reported this error and shut the engine down"
    symptom = Symptom(number, span, ABANDONED.id, title, parsed.message.strip())
    return Incident(parsed.outer or "", 0, [(symptom, ABANDONED, parsed)])


def _tail_lines(index: LogIndex, start: int, end: int) -> tuple[list[int], list[str]]:
    """The lines in [start, end) (`start` a line's start): their offsets and texts, split at
    `\n` as the index's bytes or characters lie (a line's `\r\n` and any bare `\r` kept out of
    the text's end)."""
    starts: list[int] = []
    lines: list[str] = []
    pos = start
    while pos < end:
        line_end = index.find("\n", pos, end)
        if line_end < 0:
            line_end = end
        starts.append(pos)
        lines.append(index.slice(pos, line_end).rstrip("\r"))
        pos = line_end + 1
    return starts, lines


def _last_shutdown(
    lines: list[str], shutdowns: list[Marker], writers: set[str] | None, known: set[str]
) -> int | None:
    """Index in `lines` of the last executor shutdown written by the run's writers (see
    `_abandoned_run`)."""
    for at in range(len(lines) - 1, -1, -1):
        line = lines[at]
        for marker in shutdowns:
            if marker.literal in line:
                parsed = parse_line(0, line)
                outer = parsed.outer or ""
                ours = outer in writers if writers is not None else outer not in known or not outer
                if ours and marker.pattern.search(parsed.message.strip()):
                    return at
    return None


def _caller_report(lines: list[str], at: int, stream: str) -> int | None:
    """Index of the caller's report right above line `at` (its writer's lines only; vLLM's own
    logger lines skipped), or None when the writer's first plain line above is something else."""
    for above in range(at - 1, max(-1, at - 1 - _LOOK_UP_LINES), -1):
        parsed: LogLine = parse_line(0, lines[above])
        if parsed.stream != stream or parsed.level is not None or not parsed.message.strip():
            continue
        return above if _CALLER_REPORT.match(parsed.message.strip()) else None
    return None


def _ready(index: LogIndex, catalog: Catalog, lo: int, hi: int) -> bool:
    """Whether the engine said it was ready (start-up complete) in [lo, hi)."""
    for marker in catalog.markers_of("phase"):
        if marker.id in READY_MARKERS and index.find(marker.literal, lo, hi) >= 0:
            return True
    return False
