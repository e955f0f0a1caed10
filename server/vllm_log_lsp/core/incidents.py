"""Step 2: group engine deaths into incidents and choose each one's root cause.

Symptoms of one run (runs are split by restart markers and by runtime prefix) form an incident.
Its root cause is the earliest real exception in the run before the death, after the last sign of
healthy serving: wrappers, shutdown decoys and warnings are skipped, so a worker's exception comes
before EngineCore's re-raise and the first of a chain before its wrappers. A death with no
exception at all is represented by its most telling symptom.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

from . import catalog as catalog_mod
from .catalog import Catalog, Marker
from .lines import parse_line
from .model import ExceptionEvent, LogLine, Symptom
from .scan import FATAL_LEVELS, MAX_LINE, Candidate, Scan
from .text import LogIndex

# After the last symptom, how far to look for a cause printed late (core dumps, stderr order).
LATE_WINDOW = 400


# A prefix-less symptom this close after a prefixed death belongs to it.
_ATTACH_DISTANCE = 50


_ENTRY_FUNCTIONS = ("_run_module_as_main", "<module>", "module", "_bootstrap", "main")


@dataclass
class Incident:
    """One engine death: the symptoms of one run of one runtime prefix (compose service)."""

    outer: str
    run_index: int
    symptoms: list[tuple[Symptom, Marker, LogLine]] = field(default_factory=list)


def run_lines(scan: Scan, outer: str) -> list[int]:
    """Lines where runs of this runtime prefix start. A banner and the args line a few lines
    later start one run: starts with no symptom between them are merged into the first."""
    starts = sorted({n for n, o in scan.run_starts if o == outer or not o or not outer})
    deaths = sorted(s.line for s, _, _ in scan.symptoms)
    merged: list[int] = []
    for line in starts:
        if merged:
            between = bisect.bisect_left(deaths, line) - bisect.bisect_left(deaths, merged[-1])
            if between == 0:
                continue
        merged.append(line)
    return merged


def group_incidents(scan: Scan) -> list[Incident]:
    incidents: dict[tuple[str, int], Incident] = {}
    anchors = list(scan.symptoms)
    anchors.extend(_uncaught_tracebacks(scan))
    anchors.sort(key=lambda item: item[0].line)
    starts_of: dict[str, list[int]] = {}
    for symptom, marker, line in anchors:
        outer = line.outer or ""
        if outer not in starts_of:
            starts_of[outer] = run_lines(scan, outer)
        key = (outer, bisect.bisect_right(starts_of[outer], symptom.line))
        incident = incidents.setdefault(key, Incident(outer, key[1]))
        incident.symptoms.append((symptom, marker, line))
    ordered = sorted(incidents.values(), key=lambda inc: inc.symptoms[0][0].line)
    return _attach_unprefixed(ordered)


def _attach_unprefixed(incidents: list[Incident]) -> list[Incident]:
    """A symptom without a runtime prefix in a prefixed log (compose's own `svc exited with
    code 1`) belongs to the death just before it, not to a death of its own."""
    merged: list[Incident] = []
    for incident in incidents:
        previous = merged[-1] if merged else None
        first = incident.symptoms[0][0].line
        if (
            previous is not None
            and not incident.outer
            and previous.outer
            and first - previous.symptoms[-1][0].line <= _ATTACH_DISTANCE
        ):
            previous.symptoms.extend(incident.symptoms)
            continue
        merged.append(incident)
    return merged


_UNCAUGHT = Marker(
    "symptom", "uncaught-exception", "", catalog_mod.compile_pattern("."), "Uncaught exception"
)


def _uncaught_tracebacks(scan: Scan) -> list[tuple[Symptom, Marker, LogLine]]:
    """Raw tracebacks printed by Python as a process died (no logger header, entry-point frame)."""
    found = []
    for tb in scan.tracebacks:
        if tb.logged or not tb.chain or tb.preamble.startswith("Exception ignored"):
            continue
        first_frames = tb.chain[0].frames
        if not first_frames or (first_frames[0].function or "") not in _ENTRY_FUNCTIONS:
            continue
        last = tb.chain[-1]
        if last.type_name in ("SystemExit",) and last.message.strip() in ("", "0"):
            continue
        line = scan.lines.get(tb.header_line) or LogLine(last.line, "", "", 0, stream=tb.stream)
        symptom = Symptom(
            last.line, last.span, "uncaught-exception", "The process died of an uncaught exception", last.text
        )
        found.append((symptom, _UNCAUGHT, line))
    return found


def _is_wrapper(catalog: Catalog, text: str) -> bool:
    for kind in ("symptom", "wrapper"):
        for marker in catalog.markers_of(kind):
            if (kind == "wrapper" or marker.wrapper) and marker.pattern.search(text):
                return True
    return False


def _is_decoy(catalog: Catalog, cand: Candidate, first_death: int) -> bool:
    event = cand.event
    if cand.traceback is not None:
        if cand.traceback.preamble.startswith("Exception ignored"):
            return True
        if cand.traceback.level not in FATAL_LEVELS:
            return True  # logged as a warning: vLLM carried on
    text = event.text
    for marker in catalog.markers_of("decoy"):
        if marker.after_death_only and event.line < first_death:
            continue
        if marker.pattern.search(text):
            return True
    return False


def _last_healthy(index: LogIndex, catalog: Catalog, lo: int, hi: int, outer: str) -> int:
    """Line of the last healthy-serving marker in [lo, hi) offsets, or -1."""
    best = -1
    for marker in catalog.markers_of("healthy"):
        pos = index.rfind(marker.literal, lo, hi)
        tries = 0
        while pos >= 0 and tries < 20:
            start = index.line_start_at(pos)
            line = parse_line(0, index.line_at(pos, MAX_LINE))
            if (line.outer or "") == outer and marker.pattern.search(line.message):
                best = max(best, index.line_of(pos))
                break
            pos = index.rfind(marker.literal, lo, start)
            tries += 1
    return best


def unwrap_candidates(catalog: Catalog, scan: Scan) -> list[Candidate]:
    """Every candidate with wrappers recognised (once per analysis, not once per incident)."""
    return [_unwrap(catalog, c) for c in scan.events]


def choose_root(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    incident: Incident,
    window: tuple[int, int],
    pools: list[Candidate],
) -> Candidate | None:
    """The root cause of `incident` among `pools` (see `unwrap_candidates`); None: no exception."""
    lo_line, next_run_line = window
    symptom_lines = [s.line for s, _, _ in incident.symptoms]
    first_death, last_death = min(symptom_lines), _death_end(scan, incident)
    outer = incident.outer
    healthy = -1
    first_offset = scan.offsets.get(first_death)
    lo_offset = scan.offsets.get(lo_line, 0) if lo_line > 0 else 0
    if first_offset is not None:
        healthy = _last_healthy(index, catalog, lo_offset, first_offset, outer)

    def eligible(cand: Candidate, lo: int, hi: int) -> bool:
        line = cand.event.line
        if not (lo <= line <= hi):
            return False
        owner = scan.lines.get(cand.event.traceback_start or line)
        if owner is not None and (owner.outer or "") != outer:
            return False
        return not _is_decoy(catalog, cand, first_death)

    before = [c for c in pools if eligible(c, max(lo_line, healthy + 1), last_death)]
    after = [
        c for c in pools if eligible(c, last_death + 1, min(next_run_line - 1, last_death + LATE_WINDOW))
    ]
    for tier in (0, 1):
        for group in (before, after):
            chosen = [c for c in group if c.tier == tier]
            if tier == 0 and group is after:
                chosen = [c for c in chosen if c.event.kind == "fault"]
            chosen = _engine_side(chosen)
            if chosen:
                return min(chosen, key=lambda c: (c.event.line, c.event.chain_index))
    signals = [c for c in before + after if c.tier == 2]
    if signals:
        return min(signals, key=lambda c: c.event.line)
    return None


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
    logged traceback that holds the cause, so that traceback belongs to the death too."""
    end = max(s.line for s, _, _ in incident.symptoms)
    heads = {(s.line, line.stream) for s, _, line in incident.symptoms}
    for tb in scan.tracebacks:
        if tb.lines and any(0 < tb.header_line - n <= 3 and stream == tb.stream for n, stream in heads):
            end = max(end, tb.lines[-1])
    return end


def _unwrap(catalog: Catalog, cand: Candidate) -> Candidate:
    """A wrapper exception is not a cause; one that carries the original message stands in for
    it (tier 1) when the original was not printed."""
    if cand.tier != 0 or not _is_wrapper(catalog, cand.event.text):
        return cand
    for marker in catalog.markers_of("symptom"):
        found = marker.pattern.search(cand.event.text)
        if found and found.groupdict().get("inner"):
            return replace(cand, tier=1, inner_text=found.group("inner"))
    return replace(cand, tier=9)


def symptom_as_root(incident: Incident) -> Candidate:
    """No exception at all: the most telling symptom stands for the cause."""

    def telling(item: tuple[Symptom, Marker, LogLine]) -> tuple[int, int]:
        symptom, marker, _ = item
        found = marker.pattern.search(symptom.text)
        groups = found.groupdict() if found else {}
        has_code = bool(groups.get("exit_code") or groups.get("status"))
        empty_procs = groups.get("procs") == "{}"
        return (0 if has_code else 1 if empty_procs else 2, symptom.line)

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
