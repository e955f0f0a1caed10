"""Step 2: group engine deaths into incidents and choose each one's root cause.

Symptoms of one run (runs are split by restart markers and by runtime prefix) form an incident.
Its root cause is the earliest real exception in the run before the death, after the last sign of
healthy serving: wrappers, shutdown decoys and warnings are skipped, so a worker's exception comes
before EngineCore's re-raise and the first of a chain before its wrappers. A death with no
exception at all is represented by its most telling symptom.
"""

from __future__ import annotations

import bisect
import re

from . import catalog as catalog_mod
from . import regexes
from .catalog import Catalog, Marker, Pattern, required_alternatives
from .lines import parse_line, starts_of_prefix
from .model import Confidence, Considered, ExceptionEvent, LineWords, LogLine, Precursor, Symptom
from .records import dataclass, field, replace
from .scan import FATAL_LEVELS, MAX_LINE, Candidate, Scan
from .text import LogIndex, as_printed, clip_line
from .tracebacks import Traceback, is_uncaught, looks_like_exception

# After the last symptom, how far to look for a cause printed late (core dumps, stderr order).
LATE_WINDOW = 400


# A prefix-less symptom this close after a prefixed death belongs to it.
_ATTACH_DISTANCE = 50


@dataclass
class Incident:
    """One engine death: the symptoms of one run of one runtime prefix (compose service)."""

    outer: str
    run_index: int
    symptoms: list[tuple[Symptom, Marker, LogLine]] = field(default_factory=list)


def run_lines(scan: Scan, outer: str) -> list[int]:
    """Lines where runs of this runtime prefix start. A banner and the args line a few lines
    later start one run: starts with no death and no fatal error between them are merged into
    the first (a run that died silently still ends where the next start marker begins)."""
    key = ("run_lines", outer, len(scan.run_starts), len(scan.symptoms), len(scan.events))
    cached = scan.cache.get(key)
    if not isinstance(cached, list):
        cached = scan.cache[key] = _run_lines(scan, outer)
    return cached


def _run_lines(scan: Scan, outer: str) -> list[int]:
    starts = starts_of_prefix(scan.run_starts, outer)
    ends = sorted({s.line for s, _, _ in scan.symptoms} | {c.event.line for c in scan.events if _fatal(c)})
    merged: list[int] = []
    for line in starts:
        if merged:
            between = bisect.bisect_left(ends, line) - bisect.bisect_left(ends, merged[-1])
            if between == 0:
                continue
        merged.append(line)
    return merged


def _fatal(cand: Candidate) -> bool:
    """An error that can end a run: not a wrapper, not one logged as a warning."""
    if cand.tier > 2:
        return False
    return cand.traceback is None or cand.traceback.level in FATAL_LEVELS


def group_incidents(index: LogIndex, catalog: Catalog, scan: Scan, pools: list[Candidate]) -> list[Incident]:
    """One incident per death: the symptoms of each run, and the runs that died silently (see
    `silent_deaths`)."""
    anchors = list(scan.symptoms)
    anchors.extend(_uncaught_tracebacks(scan))
    incidents = _by_run(scan, anchors)
    incidents.extend(silent_deaths(index, catalog, scan, pools, incidents))
    incidents.extend(hangs_at_end(index, catalog, scan, incidents))
    ordered = sorted(incidents, key=lambda inc: inc.symptoms[0][0].line)
    return _attach_unprefixed(ordered, sorted(n for n, _ in scan.run_starts))


def _by_run(scan: Scan, anchors: list[tuple[Symptom, Marker, LogLine]]) -> list[Incident]:
    incidents: dict[tuple[str, int], Incident] = {}
    starts_of: dict[str, list[int]] = {}
    for symptom, marker, line in sorted(anchors, key=lambda item: item[0].line):
        outer = line.outer or ""
        if outer not in starts_of:
            starts_of[outer] = run_lines(scan, outer)
        key = (outer, bisect.bisect_right(starts_of[outer], symptom.line))
        incident = incidents.setdefault(key, Incident(outer, key[1]))
        incident.symptoms.append((symptom, marker, line))
    return list(incidents.values())


# A death with no symptom line: at most this many lines may follow the last error of its run...
_TAIL_LINES = 300
# ... and of those, at most this many may be ordinary INFO lines (shutdown chatter).
_TAIL_INFO = 6

_SILENT = Marker("symptom", "silent-death", "", catalog_mod.compile_pattern("."), "Silent death")


def silent_deaths(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    pools: list[Candidate],
    incidents: list[Incident],
) -> list[Incident]:
    """Runs that died without any vLLM symptom line: an excerpt that ends in or right after a
    fatal traceback, a V0 engine or an offline `LLM(...)` run that raised, a fatal fault, a stop
    signal before the server ever served. The run's last fatal error is the death's anchor when
    its process made no progress after it and the run ends (or the log does) soon after."""
    taken = {(inc.outer, inc.run_index) for inc in incidents}
    last: dict[tuple[str, int], Candidate] = {}
    starts_of: dict[str, list[int]] = {}
    for cand in pools:
        if cand.tier > 2:
            continue
        outer = _outer_of(scan, cand) or ""
        if outer not in starts_of:
            starts_of[outer] = run_lines(scan, outer)
        key = (outer, bisect.bisect_right(starts_of[outer], cand.event.line))
        if key in taken or _decoy_reason(catalog, cand, 1 << 60):
            continue
        previous = last.get(key)
        if previous is None or _end_line(cand) >= _end_line(previous) or previous.tier == 2 < cand.tier:
            last[key] = cand
    found = []
    for (outer, run_index), cand in last.items():
        starts = starts_of[outer]
        run_end = starts[run_index] if run_index < len(starts) else None
        if _is_silent_death(index, catalog, scan, cand, outer, starts, run_index, run_end):
            symptom = Symptom(
                cand.event.line,
                cand.event.span,
                "silent-death",
                "The process stopped after this error",
                cand.event.text,
            )
            line = scan.lines.get(cand.event.line) or LogLine(cand.event.line, "", "", 0, outer=outer or None)
            found.append(Incident(outer, run_index, [(symptom, _SILENT, line)]))
    return found


_HUNG = Marker("symptom", "hung-at-end", "", catalog_mod.compile_pattern("."), "Hung")
#: A run that ends in stall reports hung when they say it waited this long (3 of vLLM's 60 s)...
_HANG_SECONDS = 180
#: ... and the run, or the log, ends within this many lines of the last of them.
_HANG_TAIL_LINES = 50


def hangs_at_end(index: LogIndex, catalog: Catalog, scan: Scan, incidents: list[Incident]) -> list[Incident]:
    """Runs with no death that end hung: their last stall reports (a `hang` precursor: EngineCore
    waiting on its workers, repeated every minute while it waits) say one process waited
    minutes, nothing progressed from the first of them to the end of the run, and the run (or
    the log) ends soon after the last. The first report of that wait is where the hang began: a
    log that ends there was cut from a server that never came back (killed by its operator
    later, or still hanging)."""
    taken = {(inc.outer, inc.run_index) for inc in incidents}
    streaks: dict[tuple[str, int], list[tuple[Precursor, LogLine, int]]] = {}
    starts_of: dict[str, list[int]] = {}
    hang_ids = {m.id: m for m in catalog.markers_of("precursor") if m.hang}
    for precursor, line in scan.precursors:
        marker = hang_ids.get(precursor.id)
        if marker is None:
            continue
        outer = line.outer or ""
        if outer not in starts_of:
            starts_of[outer] = run_lines(scan, outer)
        key = (outer, bisect.bisect_right(starts_of[outer], precursor.line))
        if key in taken:
            continue
        found = marker.pattern.search(as_printed(precursor.text))
        seconds = int(found["seconds"]) if found is not None and found.groupdict().get("seconds") else 0
        streak = streaks.setdefault(key, [])
        if streak and streak[-1][1].stream != line.stream:
            streak.clear()  # (another process's wait: the last one to wait is the one that hung)
        streak.append((precursor, line, seconds))
    progress = _moving_markers(catalog)
    found_hangs = []
    for (outer, run_index), streak in streaks.items():
        starts = starts_of[outer]
        run_end = starts[run_index] if run_index < len(starts) else None
        # The wait that ends the run ends with the streak's last report: one far from the run's
        # end is no hang (told before the search for progress, which reads the rest of the run).
        if (run_end if run_end is not None else index.line_count) - streak[-1][0].line > _HANG_TAIL_LINES:
            continue
        first, _, _ = streak[0]
        # The wait that ends the run: the reports after the last progress before the run's end.
        end = line_offset(index, scan, run_end) if run_end is not None else len(index)
        moved = _last_marked(index, progress, line_offset(index, scan, first.line), end, None)
        waiting = [item for item in streak if item[0].line > moved]
        if not waiting or _waited(hang_ids, waiting) < _HANG_SECONDS:
            continue
        began, line, _ = waiting[0]
        symptom = Symptom(began.line, began.span, "hung-at-end", "The processes hung from here", began.text)
        found_hangs.append(Incident(outer, run_index, [(symptom, _HUNG, line)]))
    return found_hangs


def _waited(markers: dict[str, Marker], reports: list[tuple[Precursor, LogLine, int]]) -> int:
    """The seconds a streak of wait reports says was waited: the sum of the periodic reports'
    seconds (each the time since the one before), and the last of each kind whose count is the
    whole wait so far (`Marker.elapsed`)."""
    periodic = sum(seconds for p, _, seconds in reports if not markers[p.id].elapsed)
    so_far = {p.id: seconds for p, _, seconds in reports if markers[p.id].elapsed}
    return periodic + sum(so_far.values())


#: Why a symptom stands in for the root cause of a death that printed no error, by the kind of
#: incident (its first symptom's), else `_STAND_IN_WHY[None]`.
_STAND_IN_WHY = {
    "startup-abandoned": (
        "no traceback was printed: the caller caught the engine's start-up error and printed only "
        "its message (this line); the engine's executor shut down right after, before start-up "
        "completed"
    ),
    "hung-at-end": (
        "no error was printed: the log ends in a hang; from this line on, the process reported "
        "that it waited in vain, and nothing progressed until the run ended"
    ),
    None: "no exception or fault was printed for this death: its most telling symptom stands in",
}


def stand_in_why(incident: Incident) -> str:
    """Why a symptom stands in for the root cause of `incident`, which printed no error."""
    kind = incident.symptoms[0][0].kind
    return _STAND_IN_WHY.get(kind, _STAND_IN_WHY[None])


def _end_line(cand: Candidate) -> int:
    return cand.traceback.last_line if cand.traceback is not None else cand.event.line


def _is_silent_death(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    cand: Candidate,
    outer: str,
    starts: list[int],
    run_index: int,
    run_end: int | None,
) -> bool:
    run_lo = line_offset(index, scan, starts[run_index - 1]) if run_index > 0 else 0
    cand_offset = line_offset(index, scan, cand.traceback.header_line if cand.traceback else cand.event.line)
    served = _last_healthy(index, catalog, run_lo, cand_offset, outer) >= 0
    if cand.tier == 2:
        # Stopping a server that served is an operator's choice; stopping one that never came
        # up is how a hang in start-up ends.
        return not served and not reached_serving(index, catalog, run_lo, cand_offset)
    if served and _request_error(cand):
        return False
    if run_end is not None and _bare(cand):
        # An exception that ends a process comes with its traceback: a bare line followed by
        # a run's start is one the process printed and survived (a library at import).
        return False
    until = line_offset(index, scan, run_end) if run_end is not None else len(index)
    if Progress(index, catalog, scan, until).after(cand) is not None:
        return False
    return _quiet_tail(index, scan, cand, run_end)


def _start_after(index: LogIndex, scan: Scan, line: int) -> int:
    """Where the line after core line `line` starts (the text's end after its last line)."""
    start = index.line_end_at(line_offset(index, scan, line))
    return index.next_line_start(start) if start < len(index) else start


def _quiet_tail(index: LogIndex, scan: Scan, cand: Candidate, run_end: int | None) -> bool:
    """After `cand`, the run (or the log) ends within `_TAIL_LINES` lines with little else said."""
    end_line = _end_line(cand)
    start = _start_after(index, scan, end_line)
    since = _timestamp(index, scan, cand.event.line)
    info = 0
    seen = 0
    for number, raw in index.iter_lines_from(start, end_line + 1, _TAIL_LINES + 1):
        if run_end is not None and number >= run_end:
            return True
        seen += 1
        if seen > _TAIL_LINES:
            return False
        if number in scan.consumed:
            continue
        line = parse_line(number, clip_line(raw, MAX_LINE))
        if line.level in ("INFO", "DEBUG") and not _TEARDOWN.search(line.message):
            if _earlier(line.timestamp, since):
                continue  # flushed late (Ray's `[repeated Nx across cluster]`): said before the error
            info += 1
            if info > _TAIL_INFO:
                return False
    return True


def _timestamp(index: LogIndex, scan: Scan, line: int) -> str | None:
    known = scan.lines.get(line)
    if known is not None:
        return known.timestamp
    return parse_line(line, clip_line(index.line_text(line), MAX_LINE)).timestamp


def _earlier(stamp: str | None, than: str | None) -> bool:
    """`stamp` is before `than`, both written by vLLM's one format (`MM-DD HH:MM:SS`, which
    sorts as text within a year); stamps of different shapes are not compared."""
    if not stamp or not than or len(stamp) != len(than):
        return False
    return stamp < than


# What processes say while they exit: not progress.
_TEARDOWN = catalog_mod.compile_pattern(
    r"(?i)shut(?:ting)? ?down|shutdown|terminat|exiting|stopp(?:ed|ing)|finished server process"
    r"|waiting for application|cleaning up|destroy|killed|leaked|resource_tracker"
)
_SERVING_PHASES = ("serving",)


def reached_serving(index: LogIndex, catalog: Catalog, lo: int, hi: int) -> bool:
    """Whether a serving marker (the API server up, a response; not a weak sign such as a stats
    line) lies in [lo, hi)."""
    for marker in catalog.markers_of("phase"):
        if marker.phase not in _SERVING_PHASES or marker.id in _WEAK_PROGRESS:
            continue
        pos = index.find(marker.literal, lo, hi)
        if pos >= 0 and marker.pattern.search(
            as_printed(parse_line(0, index.line_at(pos, MAX_LINE)).message)
        ):
            return True
    return False


# Where the API server handles one request: an error there is that request's, not the engine's.
_REQUEST_FRAMES = ("entrypoints/openai/serving", "entrypoints/openai/api_server.py", "fastapi", "starlette")
_ENGINE_FRAMES = ("/engine/", "/worker", "/executor/", "/model_executor/", "/v1/", "/distributed/")


def _request_error(cand: Candidate) -> bool:
    process = cand.event.process or ""
    if process.startswith(_SERVER_PROCESSES):
        return True
    paths = [f.path for f in cand.event.frames]
    if not paths:
        return False
    in_request = any(any(k in p for k in _REQUEST_FRAMES) for p in paths)
    return in_request and not any(any(k in p for k in _ENGINE_FRAMES) for p in paths[-3:])


def _attach_unprefixed(incidents: list[Incident], run_starts: list[int]) -> list[Incident]:
    """A symptom without a runtime prefix in a prefixed log (compose's own `svc exited with
    code 1`) belongs to the death just before it, not to a death of its own, unless a new run
    started between them (a restart loop's next run printed without the prefix)."""
    merged: list[Incident] = []
    for incident in incidents:
        previous = merged[-1] if merged else None
        first = incident.symptoms[0][0].line
        if (
            previous is not None
            and not incident.outer
            and previous.outer
            and first - previous.symptoms[-1][0].line <= _ATTACH_DISTANCE
            and not _started_between(run_starts, previous.symptoms[-1][0].line, first)
        ):
            previous.symptoms.extend(incident.symptoms)
            continue
        merged.append(incident)
    return merged


def _started_between(run_starts: list[int], lo: int, hi: int) -> bool:
    return bisect.bisect_right(run_starts, lo) < bisect.bisect_right(run_starts, hi)


_UNCAUGHT = Marker(
    "symptom", "uncaught-exception", "", catalog_mod.compile_pattern("."), "Uncaught exception"
)


def _uncaught_tracebacks(scan: Scan) -> list[tuple[Symptom, Marker, LogLine]]:
    """Raw tracebacks printed by Python as a process died (no logger header, entry-point frame)."""
    found = []
    for tb in scan.tracebacks:
        if not is_uncaught(tb):
            continue
        last = tb.chain[-1]
        line = scan.lines.get(tb.header_line) or LogLine(last.line, "", "", 0, stream=tb.stream)
        symptom = Symptom(
            last.line, last.span, "uncaught-exception", "The process died of an uncaught exception", last.text
        )
        found.append((symptom, _UNCAUGHT, line))
    return found


def wrapper_patterns(catalog: Catalog) -> tuple[tuple[tuple[str, ...], Pattern], ...]:
    """The patterns of an exception text that wraps another (the symptoms marked `wrapper`, then
    the wrapper markers), in the catalog's order, each with texts of which every match holds one
    (its `required` literal, or one per alternative: see `required_alternatives`): most texts
    hold none, and are passed over at `in`'s speed. Nothing is required of a pattern that is
    not the stdlib engine's (a user's `regex`, which the stdlib parser may read otherwise)."""
    markers = [m for m in catalog.markers_of("symptom") if m.wrapper] + catalog.markers_of("wrapper")
    return tuple((_required_texts(m.pattern), m.pattern) for m in markers)


def _required_texts(pattern: Pattern) -> tuple[str, ...]:
    if pattern.required:
        return (pattern.required,)
    return required_alternatives(pattern.source) if pattern.timeout is None else ()


def _is_wrapper(wrappers: tuple[tuple[tuple[str, ...], Pattern], ...], text: str) -> bool:
    """Whether one of `wrappers` (see `wrapper_patterns`) finds `text`."""
    for required, pattern in wrappers:  # (plain loops: this runs per distinct exception text)
        if required:
            for piece in required:
                if piece in text:
                    break
            else:
                continue  # it holds none of them: no match
        if pattern.search(text):
            return True
    return False


def _decoy_reason(catalog: Catalog, cand: Candidate, first_death: int) -> str:
    """Why `cand` is an exception its process lived through or printed while tearing down."""
    event = cand.event
    tb = cand.traceback
    if tb is not None:
        if tb.preamble.startswith("Exception ignored"):
            return "Python ignored it (`Exception ignored in ...`)"
        for marker in catalog.markers_of("survived"):
            if (
                marker.literal in tb.preamble
                and marker.pattern.search(tb.preamble)
                and not marker.last_resort
            ):
                return marker.title
        if tb.level not in FATAL_LEVELS:
            return f"logged as {tb.level}: vLLM carried on"
    text = event.text
    for marker in catalog.markers_of("decoy"):
        if marker.after_death_only and event.line < first_death:
            continue
        if marker.pattern.search(text):
            return "an exception printed while the processes shut down"
    return ""


# Lifecycle phases whose marker proves a process was still doing its normal work.
_IDLE_PHASES = ("shutdown",)
_WEAK_PROGRESS = ("stats", "request", "request-added")


def _progress_markers(catalog: Catalog) -> list[Marker]:
    """Lifecycle markers that prove a process was still doing its normal work."""
    return [
        m for m in catalog.markers_of("phase") if m.phase not in _IDLE_PHASES and m.id not in _WEAK_PROGRESS
    ]


def _moving_markers(catalog: Catalog) -> list[Marker]:
    """The lifecycle markers of normal work and the healthy serving lines: what shows a wait
    ended or a process went on."""
    return _progress_markers(catalog) + catalog.markers_of("healthy")


class Progress:
    """Where each writer showed normal progress (a lifecycle marker, healthy serving) before
    `until_offset`, asked for candidates from the latest to the earliest: every part of the text
    is searched once, at C speed, however many candidates there are."""

    def __init__(self, index: LogIndex, catalog: Catalog, scan: Scan, until_offset: int) -> None:
        self.index, self.scan = index, scan
        self.markers = _moving_markers(catalog)
        self.lo = until_offset  # [lo, until_offset) has been searched
        self.first: dict[str, int] = {}  # stream -> its earliest progress line in that range

    def after(self, cand: Candidate) -> int | None:
        """The first line after `cand` (and its traceback) where its writer made progress."""
        end_line = _end_line(cand)
        start = self.index.line_end_at(line_offset(self.index, self.scan, end_line))
        if start < self.lo:
            self._search(start, self.lo)
            self.lo = start
        found = self.first.get(cand.event.stream)
        return found if found is not None and found > end_line else None

    def _search(self, lo: int, hi: int) -> None:
        earliest: dict[str, int] = {}
        for marker in self.markers:
            pos = self.index.find(marker.literal, lo, hi)
            while pos >= 0:
                line = parse_line(0, self.index.line_at(pos, MAX_LINE))
                if marker.pattern.search(as_printed(line.message.strip())):
                    number = self.index.line_of(pos)
                    if number < earliest.get(line.stream, 1 << 60):
                        earliest[line.stream] = number
                pos = self.index.find(marker.literal, self.index.line_end_at(pos), hi)
        self.first.update(earliest)


def _last_healthy(index: LogIndex, catalog: Catalog, lo: int, hi: int, outer: str) -> int:
    """Line of the last healthy-serving marker of runtime prefix `outer` in [lo, hi) offsets, or -1."""
    return _last_marked(index, catalog.markers_of("healthy"), lo, hi, outer)


def _last_marked(index: LogIndex, markers: list[Marker], lo: int, hi: int, outer: str | None) -> int:
    """Line of the last line in [lo, hi) offsets that one of `markers` recognises (of runtime
    prefix `outer` unless None), or -1. Searched backwards at C speed, a few tries a marker."""
    best = -1
    for marker in markers:
        pos = index.rfind(marker.literal, lo, hi)
        tries = 0
        while pos >= 0 and tries < 20:
            start = index.line_start_at(pos)
            line = parse_line(0, index.line_at(pos, MAX_LINE))
            if (outer is None or (line.outer or "") == outer) and marker.pattern.search(
                as_printed(line.message)
            ):
                best = max(best, index.line_of(pos))
                break
            pos = index.rfind(marker.literal, lo, start)
            tries += 1
    return best


def unwrap_candidates(catalog: Catalog, scan: Scan) -> list[Candidate]:
    """Every candidate with wrappers recognised (once per analysis, not once per incident), each
    distinct text once (a restart loop prints the same wrappers in every run)."""
    wrapping: dict[str, tuple[int, str | None] | None] = {}
    wrappers = wrapper_patterns(catalog)
    unwrapped = []
    for cand in scan.events:
        text = cand.event.text
        if cand.tier == 0 and text not in wrapping:
            wrapping[text] = _wrapping(catalog, wrappers, text)
        how = wrapping[text] if cand.tier == 0 else None
        if how is None:
            unwrapped.append(cand)
        else:
            tier, inner = how
            unwrapped.append(
                replace(cand, tier=tier, inner_text=inner) if inner else replace(cand, tier=tier)
            )
    return unwrapped


@dataclass(frozen=True)
class RootChoice:
    """The chosen root cause of one incident, why it was chosen, and what else was considered."""

    candidate: Candidate
    why: str
    considered: tuple[Considered, ...]
    confidence: Confidence


# How many rejected candidates an explanation lists (the nearest to the death first).
_MAX_CONSIDERED = 8


def choose_root(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    incident: Incident,
    window: tuple[int, int],
    pools: list[Candidate],
) -> RootChoice | None:
    """The root cause of `incident` among `pools` (see `unwrap_candidates`, sorted by line);
    None: no exception.

    Candidates are the exceptions and faults of the incident's run after its last healthy
    serving line. A candidate is ruled out when its process evidently survived it (a decoy, a
    warning, a traceback Python reports while carrying on, later progress of the same process)
    or when it only wraps another error. The rest are ranked on evidence any log shows: a real
    exception before the death over a fatal fault printed after it, over a wrapper that carries
    the original message, over a stop signal; the engine side over the API server; an original
    error over a timeout that waited on it; then the earliest, first in its chain.
    """
    lo_line, next_run_line = window
    symptom_lines = [s.line for s, _, _ in incident.symptoms]
    first_death, last_death = min(symptom_lines), _death_end(scan, incident)
    outer = incident.outer
    healthy = -1
    first_offset = scan.offsets.get(first_death)
    lo_offset = scan.offsets.get(lo_line, 0) if lo_line > 0 else 0
    if first_offset is not None:
        healthy = _last_healthy(index, catalog, lo_offset, first_offset, outer)
    death_offset = line_offset(index, scan, first_death)
    late_end = min(next_run_line - 1, last_death + LATE_WINDOW)
    rejected: list[tuple[Candidate, str]] = []
    viable: list[tuple[int, Candidate]] = []
    progress = Progress(index, catalog, scan, death_offset)
    lo = bisect.bisect_left(pools, max(lo_line, healthy + 1), key=_line)
    hi = bisect.bisect_right(pools, late_end, key=_line)
    in_window = [c for c in pools[lo:hi] if _same_outer(scan, c, outer)]
    for cand in sorted(in_window, key=_end_line, reverse=True):
        after = cand.event.line > last_death
        why_not = _ruled_out(catalog, cand, first_death, progress, after)
        if why_not:
            rejected.append((cand, why_not))
            continue
        viable.append((_group(catalog, cand, after), cand))
    if not viable:
        return None
    chosen, demoted = _rank(viable)
    rejected.extend(demoted)
    group = next(g for g, c in viable if c is chosen)
    return RootChoice(
        chosen,
        _why(chosen, group, first_death, healthy),
        _considered(rejected, chosen),
        _confidence(chosen, group, viable),
    )


def _line(cand: Candidate) -> int:
    return cand.event.line


def _same_outer(scan: Scan, cand: Candidate, outer: str) -> bool:
    owner = _outer_of(scan, cand, unknown=outer)
    return (owner or "") == outer


def _outer_of(scan: Scan, cand: Candidate, unknown: str | None = None) -> str | None:
    """The runtime prefix of the line that printed `cand` (its traceback's header, else its own
    line); `unknown` when that line is not one of the scan's."""
    tb = cand.traceback
    if tb is not None and cand.event.traceback_start == tb.header_line:
        return tb.outer  # (a header is not kept parsed: a log of request errors has thousands)
    owner = scan.lines.get(cand.event.traceback_start or cand.event.line)
    return owner.outer if owner is not None else unknown


def line_offset(index: LogIndex, scan: Scan, line: int) -> int:
    """Where line `line` starts: known from the scan (a line it read), else walked to from a line
    the index knows."""
    found = scan.offsets.get(line)
    return found if found is not None else index.line_start(line)


def _ruled_out(catalog: Catalog, cand: Candidate, first_death: int, progress: Progress, after: bool) -> str:
    """Why `cand` cannot be the root cause, or "" when it can."""
    if cand.tier >= 9:
        return "it only wraps another error"
    decoy = _decoy_reason(catalog, cand, first_death)
    if decoy:
        return decoy
    if after and cand.tier == 0 and cand.event.kind != "fault":
        return "printed after the death, while the processes were shutting down"
    if after and cand.tier == 2:
        # A stop told after the death is the shutdown's (vLLM stops its own processes, and the
        # resource tracker reports what a killed process left only as the program exits).
        return "a stop printed after the death, while the processes were shutting down"
    if not after and cand.tier < 2:
        carried_on = progress.after(cand)
        if carried_on is None and _bare(cand):
            carried_on = _logged_on(progress.index, progress.scan, cand, first_death)
        if carried_on is not None:
            return LineWords("its process carried on afterwards (line {0})", carried_on)
    return ""


#: How far below a bare exception line its writer's next ordinary log line is looked for.
_LOGGED_ON_LINES = 200


def _logged_on(index: LogIndex, scan: Scan, cand: Candidate, before: int) -> int | None:
    """The first ordinary log line (INFO or WARNING with a logger's time, not shutdown chatter) of `cand`'s writer within
    `_LOGGED_ON_LINES` lines below it and before line `before`, or None. Only for a bare
    exception line: Python prints the traceback of an exception that ends a process, so a bare
    line after which its writer goes on logging is one it printed and survived (a library
    reporting an error it caught at import). A traceback's exception needs a lifecycle step
    (`Progress`): a dying process's other threads may still log."""
    start = _start_after(index, scan, cand.event.line)
    for number, raw in index.iter_lines_from(start, cand.event.line + 1, _LOGGED_ON_LINES):
        if number >= before:
            return None
        line = parse_line(number, clip_line(raw, MAX_LINE))
        if (
            line.level in ("INFO", "WARNING")
            and line.timestamp is not None  # (a logger's line, not a server's `INFO:     Shutting down`)
            and line.stream == cand.event.stream
            and not _TEARDOWN.search(line.message)
        ):
            return number
    return None


def _group(catalog: Catalog, cand: Candidate, after: bool) -> int:
    """Evidence strength: a real exception before the death (0), a fatal fault printed after it
    (1), a wrapper carrying the original message (2, 3 after), a stop signal (4), a consequence
    the reporting process survived (5)."""
    if _last_resort(catalog, cand):
        return 5
    if cand.tier == 0 and stopped(catalog, cand):
        return 4
    if cand.tier == 0:
        return 1 if after else 0
    if cand.tier == 1:
        return 3 if after else 2
    return 4


def _rank(viable: list[tuple[int, Candidate]]) -> tuple[Candidate, list[tuple[Candidate, str]]]:
    best_group = min(group for group, _ in viable)
    group = [c for g, c in viable if g == best_group]
    engine = _engine_side(group)
    originals = [c for c in engine if not _is_waiting(c)] or engine
    chosen = _in_words(min(originals, key=lambda c: (c.event.line, c.event.chain_index)), group)
    reporter, chosen = chosen, _embedded_cause(chosen, group)
    # Membership by identity: comparing candidates by value walks their events field by field,
    # and a death with thousands of candidates (a log of nothing but tracebacks) made it quadratic.
    in_engine = {id(c) for c in engine}
    in_originals = {id(c) for c in originals}
    demoted = []
    for g, cand in viable:
        if cand is chosen:
            continue
        if g != best_group:
            why = _GROUP_WHY[best_group]
        elif id(cand) not in in_engine:
            why = "an API server error, while the engine side failed"
        elif id(cand) not in in_originals:
            why = "a timeout waiting on another process, which failed"
        elif reporter is not chosen and cand.traceback is reporter.traceback:
            why = LineWords(
                "it reports the error of a subprocess, printed in its message (line {0})", chosen.event.line
            )
        elif cand.traceback is not None and cand.traceback is chosen.traceback:
            why = "a later link of the same exception chain"
        else:
            why = LineWords("came after line {0}", chosen.event.line)
        demoted.append((cand, why))
    return chosen, demoted


#: How many lines after an exception line whose message ends in a colon the traceback it embeds
#: may start (a warning or two the subprocess printed first).
_EMBED_GAP = 4


def _embedded_cause(chosen: Candidate, group: list[Candidate]) -> Candidate:
    """The error a subprocess raised, when `chosen`'s chain ends in an exception whose message
    embeds that subprocess's output: it ends in a colon (`RuntimeError: Error raised in
    subprocess:`, vLLM's model inspection) and the same writer's next lines hold a traceback,
    printed as part of the message. That error happened first (the parent only reports it):
    the original exception of the embedded traceback stands; otherwise `chosen`."""
    tb = chosen.traceback
    if tb is None or not tb.chain or not tb.chain[-1].message.rstrip().endswith(":"):
        return chosen
    last = tb.chain[-1].line
    embedded = [
        cand
        for cand in group
        if cand.traceback is not None
        and cand.traceback is not tb
        and cand.event.stream == chosen.event.stream
        and 0 < cand.traceback.header_line - last <= _EMBED_GAP
    ]
    return min(embedded, key=lambda c: (c.event.line, c.event.chain_index)) if embedded else chosen


def _bare(cand: Candidate) -> bool:
    """Whether `cand` is an exception line printed without a traceback (`standalone_exception`)."""
    return cand.traceback is None and cand.event.kind == "python"


def _in_words(chosen: Candidate, group: list[Candidate]) -> Candidate:
    """The link of `chosen`'s chain that says its error best. A bare exception (`TimeoutError`,
    no message) re-raised as the same type with a message (`TimeoutError: RPC call to
    execute_model timed out.`) is said in words by the later link. One re-raised as the same
    type with the same message is the same error: the link whose frames pass through vLLM (or
    a platform plugin) says where it failed. That is the first, unless only the later one has
    such frames: a mapping's `__missing__` raising the `KeyError` it was handling prints the
    lookup first, with only the library's frames, then the caller's; a wrapper around vLLM
    (`raise RuntimeError(str(e))` in a fine-tuning library) re-raises it from its own frames."""
    tb = chosen.traceback
    if tb is None:
        return chosen
    while True:
        event = chosen.event
        bare = event.type_name.rsplit(".", 1)[-1]
        later = next(
            (
                cand
                for cand in group
                if cand.traceback is tb
                and cand.event.chain_index == event.chain_index + 1
                and cand.event.message
                and cand.event.type_name.rsplit(".", 1)[-1] == bare
                and (not event.message or cand.event.message == event.message)
            ),
            None,
        )
        if later is None or (event.message and (_through_vllm(event) or not _through_vllm(later.event))):
            return chosen
        chosen = later


# A frame of vLLM's package or of a platform plugin's (`vllm_ascend/`), not a file named `vllm_*.py`
# (either slash: a Windows path too).
_VLLM_FRAME = regexes.compile(r"[/\\]vllm(?:_\w+)?[/\\]")


def _through_vllm(event: ExceptionEvent) -> bool:
    """Whether a frame of `event`'s traceback is vLLM's (or a platform plugin's)."""
    return any(_VLLM_FRAME.search(frame.path) for frame in event.frames)


_GROUP_WHY = {
    0: "an exception before the death explains it better",
    1: "the fatal fault printed after the death explains it better",
    2: "a wrapper's message stands in for a cause that was not printed; this is weaker evidence",
    3: "a wrapper's message stands in for a cause that was not printed; this is weaker evidence",
    4: "a stop signal",
    5: "a consequence its process reported and survived",
}


def stopped(catalog: Catalog, cand: Candidate) -> bool:
    """Whether `cand` belongs to a traceback whose original exception is a stop (a signal
    marker's: `KeyboardInterrupt`, the `SystemExit` a signal handler raises): the process was
    told to stop, and each later link of its chain (`RuntimeError: cancelled`) followed from
    that. Another process's error told them to stop as often as a person did, and its traceback
    may be printed after theirs (each process writes its own)."""
    tb = cand.traceback
    if tb is None or not tb.chain:
        return False
    original = tb.chain[0].text
    return any(m.literal in original and m.pattern.search(original) for m in catalog.markers_of("signal"))


def _last_resort(catalog: Catalog, cand: Candidate) -> bool:
    preamble = cand.traceback.preamble if cand.traceback is not None else ""
    return bool(preamble) and any(
        m.last_resort and m.literal in preamble and m.pattern.search(preamble)
        for m in catalog.markers_of("survived")
    )


# Exceptions that only say one process waited on another in vain.
_WAITING_TYPES = ("TimeoutError", "Timeout", "DeadlineExceeded")
# Words, not parts of a name: `AclrtSynchronizeStreamWithTimeout(copy_stream)` failing is no wait.
_WAITING_WORDS = regexes.compile(r"\b(?:timed out|timeout|did not respond|no response)\b")


def _is_waiting(cand: Candidate) -> bool:
    name = cand.event.type_name.rsplit(".", 1)[-1]
    if name.endswith(_WAITING_TYPES):
        return True
    message = cand.event.message[:300].lower()
    return cand.event.kind != "fault" and _WAITING_WORDS.search(message) is not None


def _why(chosen: Candidate, group: int, first_death: int, healthy: int) -> str:
    event = chosen.event
    who = f" by {event.process}" if event.process else ""
    if chosen.tier == 2 or group == 4:
        return f"the process was told to stop{who} and nothing else explains the death"
    if group == 5:
        return f"nothing else explains the death: this consequence{who} shows how it looked from outside"
    if chosen.tier == 1:
        return f"a wrapper{who} carries the original error, which was not printed itself"
    if event.kind == "fault":
        what = "a fatal runtime fault"
    elif chosen.traceback is not None and len(chosen.traceback.chain) > 1 and event.chain_index == 0:
        what = f"the original exception of a chain of {len(chosen.traceback.chain)}"
    elif chosen.traceback is not None and chosen.traceback.chain:
        what = "the exception that ends its traceback"
    elif chosen.traceback is not None:
        what = "the error logged with a traceback that was cut before its last line"
    else:
        what = "an error line"
    where = "before the death" if event.line <= first_death else "just after the death"
    words = braces_kept(f"{what}, printed{who} {where}")
    if healthy < 0:
        return LineWords(words + "; its process made no progress after it")
    return LineWords(
        words + ", after the last healthy line ({0}); its process made no progress after it", healthy
    )


def _confidence(chosen: Candidate, group: int, viable: list[tuple[int, Candidate]]) -> Confidence:
    if group >= 4:
        return "low"
    if chosen.tier == 0 and chosen.event.kind == "python" and chosen.traceback is not None:
        return "high"
    if chosen.tier <= 1 and len(viable) <= 3:
        return "medium"
    return "low"


def promote_precursor(
    index: LogIndex, catalog: Catalog, scan: Scan, choice: RootChoice, run_start: int
) -> RootChoice:
    """A warning is the cause when the fatal error refers to what it names (`Failed to import
    vllm._C` before `'_C_utils' object has no attribute ...`), when the fatal error only
    reports a failure whose details that warning states (see `promote_details`), or when the
    death is a stop that came while start-up waited for what it could not get (`_promote_wait`)."""
    choice = _promote_wait(index, catalog, scan, choice, run_start)
    return promote_details(index, catalog, scan, _promote_named(catalog, scan, choice, run_start), run_start)


#: A fatal signal's dump for a signal that asks a process to stop (not a crash of its own).
_STOP_SIGNAL = regexes.compile(r"\bSIG(?:TERM|INT)\b")


def is_stop_dump(event: ExceptionEvent) -> bool:
    """Whether `event` is a fatal-signal dump (Ray's, abseil's) of a signal that asks a process
    to stop, SIGTERM or SIGINT: no crash of its own, and no Python frames."""
    return event.kind == "fault" and _STOP_SIGNAL.search(event.text) is not None


def _is_stop(catalog: Catalog, cand: Candidate) -> bool:
    """Whether `cand` says its process was told to stop: a signal marker's line, a traceback of
    a stop (`stopped`), or a fatal-signal dump of SIGTERM or SIGINT."""
    return cand.tier == 2 or stopped(catalog, cand) or is_stop_dump(cand.event)


def stop_tracebacks_after(catalog: Catalog, scan: Scan, line: int, before: int) -> list[Candidate]:
    """The candidates of the tracebacks of a stop (`stopped`) on lines (`line`, `before`), in
    line order: where the processes were when a stop reported without frames (`is_stop_dump`)
    came. Found by bisection in a list made once per analysis."""
    key = ("stop_tracebacks", len(scan.events))
    found = scan.cache.get(key)
    if not isinstance(found, list):
        found = scan.cache[key] = sorted(
            (c for c in scan.events if c.traceback is not None and stopped(catalog, c)),
            key=lambda c: c.event.line,
        )
    lo = bisect.bisect_right(found, line, key=lambda c: c.event.line)
    hi = bisect.bisect_left(found, before, key=lambda c: c.event.line)
    return found[lo:hi]


def _promote_wait(
    index: LogIndex, catalog: Catalog, scan: Scan, choice: RootChoice, run_start: int
) -> RootChoice:
    """A stop that came while start-up waited for what it could not get (a `stalls` precursor:
    Ray cannot place vLLM's GPUs), with no progress between the wait's reports and the stop,
    was the end of that wait: the first report of the last process to wait is the root."""
    cand = choice.candidate
    if not _is_stop(catalog, cand):
        return choice
    stop_line = cand.event.line
    stalling = {m.id for m in catalog.markers_of("precursor") if m.stalls}
    if not stalling:
        return choice
    lo = line_offset(index, scan, run_start) if run_start > 0 else 0
    moved = _last_marked(index, _moving_markers(catalog), lo, line_offset(index, scan, stop_line), None)
    waits = [
        (p, line) for p, line in precursors_in(scan, max(run_start, moved + 1), stop_line) if p.id in stalling
    ]
    if not waits:
        return choice
    stream = waits[-1][1].stream
    first = len(waits) - 1
    while first > 0 and waits[first - 1][1].stream == stream:
        first -= 1
    precursor, line = waits[first]
    why = LineWords(
        "start-up waited from this line on (" + braces_kept(precursor.title.lower()) + "), made no "
        "progress, and was stopped on line {0}: the stop ended the wait",
        stop_line,
    )
    return _warning_root(
        choice,
        precursor,
        line,
        why,
        LineWords("it came during the wait reported from line {0}", precursor.line),
    )


def _promote_named(catalog: Catalog, scan: Scan, choice: RootChoice, run_start: int) -> RootChoice:
    root = choice.candidate.event
    haystack = "\n".join([root.text] + [f"{f.path} {f.function or ''}" for f in root.frames])
    promoting = {m.id: m for m in catalog.markers_of("precursor") if m.promote}
    for precursor, line in precursors_in(scan, run_start, root.line):
        marker = promoting.get(precursor.id)
        if marker is None or (marker.promote_unless is not None and marker.promote_unless.search(root.text)):
            continue
        found = marker.pattern.search(line.message)
        subject = (found.groupdict().get(marker.promote) or "") if found else ""
        token = subject.rsplit(".", 1)[-1]
        if len(token) < 2 or not re.search(rf"(?<![A-Za-z0-9]){re.escape(token)}(?![A-Za-z0-9])", haystack):
            continue
        why = LineWords(
            "the fatal error on line {0} refers to `"
            + braces_kept(subject)
            + "`, and this earlier warning says it failed ("
            + braces_kept(marker.title.lower())
            + "); the error follows from it",
            root.line,
        )
        return _warning_root(
            choice, precursor, line, why, LineWords("it follows from the warning on line {0}", precursor.line)
        )
    return choice


def precursors_in(scan: Scan, lo: int, hi: int) -> list[tuple[Precursor, LogLine]]:
    """The scan's precursors on lines [lo, hi), in scan order, found by bisection in a copy
    ordered by line made once per analysis: a restart loop's deaths do not each read them all."""
    key = ("precursors_by_line", len(scan.precursors))
    ordered = scan.cache.get(key)
    if not isinstance(ordered, list):
        ordered = scan.cache[key] = sorted(
            range(len(scan.precursors)), key=lambda i: scan.precursors[i][0].line
        )
    first = bisect.bisect_left(ordered, lo, key=lambda i: scan.precursors[i][0].line)
    last = bisect.bisect_left(ordered, hi, key=lambda i: scan.precursors[i][0].line)
    return [scan.precursors[i] for i in sorted(ordered[first:last])]


def _warning_root(
    choice: RootChoice, precursor: Precursor, line: LogLine, why: str, why_not: str
) -> RootChoice:
    """`choice` with the warning on `precursor`'s line as its root; the old root is considered."""
    root = choice.candidate.event
    event = ExceptionEvent(
        line=precursor.line,
        span=precursor.span,
        type_name="Warning",
        message=precursor.text,
        stream=line.stream,
        kind="message",
        process=line.process,
    )
    demoted = Considered(root.line, root.text[:200], why_not)
    considered = tuple(sorted((*choice.considered, demoted), key=lambda c: c.line))
    return RootChoice(Candidate(event, tier=0), why, considered, "medium")


# A burst of detail lines (one process's report of one failure, innermost call first): a line
# this far from the previous one of the same process starts a new report.
_BURST_GAP = 6


def promote_details(
    index: LogIndex, catalog: Catalog, scan: Scan, choice: RootChoice, run_start: int
) -> RootChoice:
    """A fatal error that only reports a failure printed in detail elsewhere (`NCCL error:
    unhandled system error (run with NCCL_DEBUG=INFO for details)`) is told by that detail
    (`NCCL WARN Error while attaching to shared memory segment …`).

    The details are the detail lines printed since the run's last lifecycle progress (the same
    step of start-up or serving) and before the error. The first process to report is the one
    that failed first (the others fail with it in a collective); of its report, the last line is
    the outermost, which says what it was doing (`Error while attaching …`) rather than the
    system call (`Call to open failed`)."""
    root = choice.candidate.event
    markers = {m.id: m for m in catalog.markers_of("precursor") if m.details_for is not None}
    deferring = [
        m.id for m in markers.values() if m.details_for is not None and m.details_for.search(root.text)
    ]
    if not deferring:
        return choice
    since = max(run_start, _last_progress_line(index, catalog, scan, run_start, root.line))
    details = [(p, line) for p, line in precursors_in(scan, since, root.line) if p.id in deferring]
    if not details:
        return choice
    burst = _first_burst(markers, details)
    precursor, line = burst[-1]
    marker = markers[precursor.id]
    why = LineWords(
        "the fatal error on line {0} only reports the failure; "
        + braces_kept(marker.title.lower())
        + " on line {1}, the first process to report it, says what failed",
        root.line,
        precursor.line,
    )
    return _warning_root(
        choice, precursor, line, why, LineWords("it reports the failure detailed on line {0}", precursor.line)
    )


def braces_kept(text: str) -> str:
    """`text` (a log's or the catalog's words) as literal text in a `LineWords` template."""
    return text.replace("{", "{{").replace("}", "}}")


def _first_burst(
    markers: dict[str, Marker], details: list[tuple[Precursor, LogLine]]
) -> list[tuple[Precursor, LogLine]]:
    """The first process's report: its detail lines up to a gap or another process's report."""

    def who(item: tuple[Precursor, LogLine]) -> str:
        found = markers[item[0].id].pattern.search(item[1].message)
        return (found.groupdict().get("pid") or "") if found else ""

    burst = [details[0]]
    for item in details[1:]:
        if who(item) != who(burst[0]) or item[0].line - burst[-1][0].line > _BURST_GAP:
            break
        burst.append(item)
    return burst


def _last_progress_line(index: LogIndex, catalog: Catalog, scan: Scan, run_start: int, before: int) -> int:
    """The last lifecycle marker (of any process) in the run before line `before`, or -1."""
    lo = line_offset(index, scan, run_start) if run_start > 0 else 0
    return _last_marked(index, _progress_markers(catalog), lo, line_offset(index, scan, before), None)


def _considered(rejected: list[tuple[Candidate, str]], chosen: Candidate) -> tuple[Considered, ...]:
    seen: set[int] = {chosen.event.line}
    items: list[Considered] = []
    nearest = sorted(rejected, key=lambda item: abs(item[0].event.line - chosen.event.line))
    for cand, why in nearest:
        if cand.event.line in seen:
            continue
        seen.add(cand.event.line)
        items.append(Considered(cand.event.line, cand.event.text[:200], why))
        if len(items) >= _MAX_CONSIDERED:
            break
    return tuple(sorted(items, key=lambda item: item.line))


# Process names of the engine side (EngineCore, its workers, Ray's actors); the API server's own
# errors are usually one request's (a bad prompt), which does not kill the engine.
_ENGINE_PROCESSES = ("EngineCore", "Worker", "VllmWorker", "RayWorker", "Ray", "MainProcess")
_SERVER_PROCESSES = ("APIServer", "ApiServer")


def _engine_side(candidates: list[Candidate]) -> list[Candidate]:
    """When the engine side printed exceptions, the API server's earlier ones are not the cause."""

    def role(cand: Candidate) -> str:
        process = cand.event.process or ""
        if process.startswith(_SERVER_PROCESSES):
            return "server"
        return "engine" if process.startswith(_ENGINE_PROCESSES) else "unknown"

    if any(role(c) == "engine" for c in candidates):
        return [c for c in candidates if role(c) != "server"]
    return candidates


def _death_end(scan: Scan, incident: Incident) -> int:
    """The last line of the death: a symptom such as `EngineCore failed to start.` heads the
    logged traceback that holds the cause, so that traceback belongs to the death too; so does
    one whose header is on the symptom's own line (vLLM 0.7–0.8 logged `EngineCore hit an
    exception: Traceback (most recent call last):` and the traceback as one record)."""
    end = max(s.line for s, _, _ in incident.symptoms)
    ordered, headers = _tracebacks_by_header(scan)
    for symptom, _, line in incident.symptoms:
        # The tracebacks whose header is the symptom's line or one of the 3 lines below it.
        lo, hi = bisect.bisect_left(headers, symptom.line), bisect.bisect_left(headers, symptom.line + 4)
        for tb in ordered[lo:hi]:
            if tb.lines and tb.stream == line.stream:
                end = max(end, tb.lines[-1])
    return end


def _tracebacks_by_header(scan: Scan) -> tuple[list[Traceback], list[int]]:
    """The scan's tracebacks sorted by header line, and those lines: made once per analysis (a
    list, not a dict of lists: a log of logged request errors has tens of thousands)."""
    key = ("tracebacks_by_header", len(scan.tracebacks))
    cached = scan.cache.get(key)
    if not isinstance(cached, tuple):
        ordered = sorted(scan.tracebacks, key=lambda tb: tb.header_line)  # (stable: scan order kept)
        cached = scan.cache[key] = (ordered, [tb.header_line for tb in ordered])
    return cached


def _wrapping(
    catalog: Catalog, wrappers: tuple[tuple[tuple[str, ...], Pattern], ...], text: str
) -> tuple[int, str | None] | None:
    """How an exception of `text` wraps another: (1, the original message it carries), which
    stands in for the original when that was not printed; (9, None): it only wraps, and is not
    a cause. None: it wraps nothing."""
    if not _is_wrapper(wrappers, text):
        return None
    for marker in catalog.markers_of("symptom"):
        found = marker.pattern.search(text)
        if found and found.groupdict().get("inner"):
            return 1, found.group("inner")
    return 9, None


def symptom_as_root(incident: Incident) -> Candidate:
    """No exception at all: the most telling symptom stands for the cause: one that carries an
    exit code, then a failure with no failed process named, then a report of which process
    exited (a marker that reads an exit code, printed without one: `Engine core proc
    EngineCore_DP0 died unexpectedly`), then one raised as an exception over one only logged
    (`AsyncLLM output_handler failed.` is logged above the traceback of the `EngineDeadError`
    that says what failed: the engine, elsewhere), then the earliest."""

    def telling(item: tuple[Symptom, Marker, LogLine]) -> tuple[int, int, int]:
        symptom, marker, _ = item
        found = marker.pattern.search(symptom.text)
        groups = found.groupdict() if found else {}
        has_code = bool(groups.get("exit_code") or groups.get("status"))
        empty_procs = groups.get("procs") == "{}"
        names_exit = "exit_code" in marker.pattern.compiled.groupindex
        raised = looks_like_exception(symptom.text) is not None
        rank = 0 if has_code else 1 if empty_procs else 2 if names_exit else 3
        return (rank, 0 if raised else 1, symptom.line)

    symptom, _, line = min(incident.symptoms, key=telling)
    event = ExceptionEvent(
        line=symptom.line,
        span=symptom.span,
        type_name=symptom.title,
        message=symptom.text,
        stream=line.stream,
        kind="message",
        process=line.process,
    )
    return Candidate(event, tier=3)
