"""From log text to findings: scan, rebuild tracebacks, group deaths into incidents, classify.

The pipeline, and why it is fast on a 100 MB log:
1. `_scan` finds candidate lines with `str.find` for a few dozen literals (tracebacks, exception
   suffixes and every marker's literal). Nothing else of the text is parsed.
2. Each candidate line is parsed; tracebacks are read forward from their header, following one
   writer; symptoms, faults, signals, run starts and precursors are recognised by their marker.
3. Symptoms of one run (runs are split by restart markers and by runtime prefix) form an incident.
   Its root cause is the earliest real exception in the run before the death, after the last sign
   of healthy serving: wrappers, shutdown decoys and warnings are skipped; a worker's exception
   comes before EngineCore's re-raise and the first of a chain before its wrappers.
4. The root cause is classified by the ordered catalog; the phase comes from the root's frames,
   else from the last lifecycle marker before it (found with `rfind`, bounded).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

from . import catalog as catalog_mod
from .catalog import Catalog, Marker, Rule
from .context import read_context
from .lines import parse_line
from .model import (
    Analysis,
    ExceptionEvent,
    Finding,
    Frame,
    LogLine,
    Precursor,
    ResolvedFix,
    RunContext,
    RunSegment,
    Symptom,
)
from .prefilter import candidate_lines
from .text import LogIndex
from .tracebacks import TRACEBACK_HEADER, Traceback, read_traceback, standalone_exception
from .values import resolve_op
from .versions import parse_version

# Literals that flag lines worth parsing besides the catalog's markers.
_BASE_LITERALS = ("Traceback (most recent call last)", "Error", "Exception", "Interrupt", "SystemExit")
# Lines longer than this are looked at only in their first part.
MAX_LINE = 20_000
# After the last symptom, how far to look for a cause printed late (core dumps, stderr order).
_LATE_WINDOW = 400
# Around the root cause, how many lines feed rule context conditions and evidence.
_CONTEXT_RADIUS = 60
# A prefix-less symptom this close after a prefixed death belongs to it.
_ATTACH_DISTANCE = 50
_FATAL_LEVELS = (None, "ERROR", "CRITICAL")
_ENTRY_FUNCTIONS = ("_run_module_as_main", "<module>", "module", "_bootstrap", "main")


@dataclass
class _Candidate:
    event: ExceptionEvent
    tier: int  # 0 real cause, 1 wrapper carrying a message, 2 stop signal
    traceback: Traceback | None = None
    inner_text: str | None = None  # a wrapper's carried message


@dataclass
class _Scan:
    lines: dict[int, LogLine] = field(default_factory=dict)
    offsets: dict[int, int] = field(default_factory=dict)
    tracebacks: list[Traceback] = field(default_factory=list)
    symptoms: list[tuple[Symptom, Marker, LogLine]] = field(default_factory=list)
    events: list[_Candidate] = field(default_factory=list)
    run_starts: list[tuple[int, str]] = field(default_factory=list)  # (line, outer)
    precursors: list[tuple[Precursor, LogLine]] = field(default_factory=list)
    consumed: set[int] = field(default_factory=set)  # lines read as part of a traceback
    exception_lines: set[int] = field(default_factory=set)  # their `Type: message` lines


@dataclass
class _Incident:
    outer: str
    run_index: int
    symptoms: list[tuple[Symptom, Marker, LogLine]] = field(default_factory=list)


def analyze(
    text: str | bytes, catalog: Catalog | None = None, warnings: tuple[str, ...] = (), path: str | None = None
) -> Analysis:
    """Analyse a whole log: a str, or the raw UTF-8 bytes of a file (see `inspect_log_bytes`;
    `path` names that file so the pre-filter can read it directly). Never raises on any input."""
    return Analyzer(catalog).analyze(text, warnings, path)


class Analyzer:
    """Analyses successive versions of one log, re-scanning only what a growing log appended.

    When the new text extends the previous one (a tailed file reloaded by the editor), the scan
    of everything before the last stable point is kept: the last line (it may have been
    incomplete) and any traceback still open at the old end are read again, the rest is reused.
    Grouping and classification are per incident and cheap, so they always run in full.
    """

    def __init__(self, catalog: Catalog | None = None) -> None:
        self.catalog = catalog or catalog_mod.builtin_catalog()
        self._text: str | None = None
        self._scan: _Scan | None = None
        self._index: LogIndex | None = None
        self.reused_offset = 0  # how much of the text the last call did not scan again

    def analyze(self, text: str | bytes, warnings: tuple[str, ...] = (), path: str | None = None) -> Analysis:
        index = LogIndex(text, path)
        scan, start = self._reusable_scan(text, index)
        self.reused_offset = start
        scan = _scan(index, self.catalog, scan, start)
        self._text, self._scan, self._index = text, scan, index
        return _analysis(index, self.catalog, scan, warnings)

    def _reusable_scan(self, text: str | bytes, index: LogIndex) -> tuple[_Scan | None, int]:
        old, scan, old_index = self._text, self._scan, self._index
        if old is None or scan is None or old_index is None:
            return None, 0
        if type(text) is not type(old) or len(text) < len(old) or not text.startswith(old):
            return None, 0
        index.adopt_checkpoints(old_index, len(old))
        # Re-read the last line (it may have been cut) and the one before it (a trailing `\r`
        # may turn out to be half of a `\r\n`).
        stable = old_index.line_start_at(max(0, old_index.line_start_at(len(old)) - 1))
        for tb in scan.tracebacks:
            if tb.open:
                stable = min(stable, scan.offsets.get(tb.header_line, 0))
        return _truncate_scan(scan, index.line_of(stable)), stable


def _analysis(index: LogIndex, catalog: Catalog, scan: _Scan, warnings: tuple[str, ...]) -> Analysis:
    incidents = _group_incidents(scan)
    findings: list[Finding] = []
    runs: dict[tuple[str, int], RunSegment] = {}
    for incident in incidents:
        finding = _diagnose(index, catalog, scan, incident, runs)
        if finding is not None:
            findings.append(finding)
    findings = _dedupe(findings)
    precursors = _precursors_for(scan, findings)
    return Analysis(
        findings=tuple(findings),
        precursors=tuple(precursors),
        phases=(),
        runs=tuple(runs.values()),
        line_count=index.line_of(len(index)) + 1,
        warnings=warnings + _encoding_warnings(index),
        folds=tuple(
            (tb.header_line, tb.last_line) for tb in scan.tracebacks if tb.last_line > tb.header_line
        ),
        run_starts=tuple(sorted({n for n, _ in scan.run_starts})),
    )


def _encoding_warnings(index: LogIndex) -> tuple[str, ...]:
    if index.invalid_utf8_line is None:
        return ()
    line = index.invalid_utf8_line + 1
    return (f"invalid UTF-8 (first seen on line {line}); undecodable bytes shown as U+FFFD",)


def _truncate_scan(scan: _Scan, line: int) -> _Scan:
    """The part of a scan that lies before `line` (tracebacks that started before and closed)."""
    return _Scan(
        lines={n: v for n, v in scan.lines.items() if n < line},
        offsets={n: v for n, v in scan.offsets.items() if n < line},
        tracebacks=[tb for tb in scan.tracebacks if tb.header_line < line and not tb.open],
        symptoms=[item for item in scan.symptoms if item[0].line < line],
        events=[c for c in scan.events if (c.traceback.header_line if c.traceback else c.event.line) < line],
        run_starts=[item for item in scan.run_starts if item[0] < line],
        precursors=[item for item in scan.precursors if item[0].line < line],
        consumed={n for n in scan.consumed if n < line},
        exception_lines={n for n in scan.exception_lines if n < line},
    )


# -- 1. scan -----------------------------------------------------------------------------------
_SCANNED_KINDS = ("symptom", "fault", "signal", "run_start", "precursor")


def _scan(index: LogIndex, catalog: Catalog, scan: _Scan | None = None, begin: int = 0) -> _Scan:
    """Find and interpret candidate lines from offset `begin` on, adding to `scan`."""
    literals = set(_BASE_LITERALS)
    for kind in _SCANNED_KINDS:
        literals.update(m.literal for m in catalog.markers_of(kind))
    candidates = candidate_lines(index, literals, begin)
    for start, number in candidates:
        if number is not None:
            index.remember(start, number)
    scan = scan or _Scan()
    consumed = scan.consumed
    for start, _ in candidates:
        number = index.line_of(start)
        raw = index.slice(start, min(index.line_end_at(start), start + MAX_LINE))
        line = parse_line(number, raw)
        scan.lines[number] = line
        scan.offsets[number] = start
        _classify_line(index, catalog, scan, line, start, consumed)
    return scan


def _classify_line(
    index: LogIndex, catalog: Catalog, scan: _Scan, line: LogLine, start: int, consumed: set[int]
) -> None:
    if line.number in consumed and line.number not in scan.exception_lines:
        return  # a frame, code or caret line of a traceback already read: `raise X("…")` is code
    message = line.message
    for marker in catalog.markers_of("run_start"):
        if marker.literal in line.text and marker.pattern.search(message):
            # A restart marker ends one run: the next run starts on the following line.
            scan.run_starts.append((line.number + marker.offset, line.outer or ""))
            break
    for marker in catalog.markers_of("symptom"):
        if marker.literal in message and (found := marker.pattern.search(message)):
            span = line.message_span
            scan.symptoms.append(
                (Symptom(line.number, span, marker.id, marker.title, message.strip()), marker, line)
            )
            inner = found.groupdict().get("inner")
            if inner and line.number not in consumed:
                event = _event_from_line(line, "message", "Error", inner)
                scan.events.append(_Candidate(event, tier=1, inner_text=inner))
            break
    for marker in catalog.markers_of("precursor"):
        if marker.literal in message and marker.pattern.search(message):
            precursor = Precursor(
                line.number, line.message_span, marker.id, marker.title, marker.explanation, message.strip()
            )
            scan.precursors.append((precursor, line))
            break
    if line.number in consumed:
        return
    if message.rstrip().endswith(TRACEBACK_HEADER):
        tb = read_traceback(index, start, line)
        consumed.update(tb.lines)
        scan.exception_lines.update(e.line for e in tb.chain)
        scan.tracebacks.append(tb)
        for event in tb.chain:
            scan.events.append(_Candidate(event, tier=0, traceback=tb))
        return
    for kind, tier in (("fault", 0), ("signal", 2)):
        for marker in catalog.markers_of(kind):
            if marker.literal in message and marker.pattern.search(message):
                event = _event_from_line(line, kind, marker.title, message.strip())
                scan.events.append(_Candidate(event, tier=tier))
                return
    event = standalone_exception(line) if line.level in _FATAL_LEVELS else None
    if event is not None:
        scan.events.append(_Candidate(event, tier=0))


def _event_from_line(line: LogLine, kind: str, type_name: str, message: str) -> ExceptionEvent:
    return ExceptionEvent(
        line=line.number,
        span=line.message_span,
        type_name=type_name,
        message=message,
        stream=line.stream,
        kind=kind,  # type: ignore[arg-type]
        process=line.process,
    )


# -- 2. incidents ----------------------------------------------------------------------------
def _run_lines(scan: _Scan, outer: str) -> list[int]:
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


def _group_incidents(scan: _Scan) -> list[_Incident]:
    incidents: dict[tuple[str, int], _Incident] = {}
    anchors = list(scan.symptoms)
    anchors.extend(_uncaught_tracebacks(scan))
    anchors.sort(key=lambda item: item[0].line)
    run_lines: dict[str, list[int]] = {}
    for symptom, marker, line in anchors:
        outer = line.outer or ""
        if outer not in run_lines:
            run_lines[outer] = _run_lines(scan, outer)
        key = (outer, bisect.bisect_right(run_lines[outer], symptom.line))
        incident = incidents.setdefault(key, _Incident(outer, key[1]))
        incident.symptoms.append((symptom, marker, line))
    ordered = sorted(incidents.values(), key=lambda inc: inc.symptoms[0][0].line)
    return _attach_unprefixed(ordered)


def _attach_unprefixed(incidents: list[_Incident]) -> list[_Incident]:
    """A symptom without a runtime prefix in a prefixed log (compose's own `svc exited with
    code 1`) belongs to the death just before it, not to a death of its own."""
    merged: list[_Incident] = []
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


def _uncaught_tracebacks(scan: _Scan) -> list[tuple[Symptom, Marker, LogLine]]:
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


# -- 3. root cause ------------------------------------------------------------------------------
def _is_wrapper(catalog: Catalog, text: str) -> bool:
    for kind in ("symptom", "wrapper"):
        for marker in catalog.markers_of(kind):
            if (kind == "wrapper" or marker.wrapper) and marker.pattern.search(text):
                return True
    return False


def _is_decoy(catalog: Catalog, cand: _Candidate, first_death: int) -> bool:
    event = cand.event
    if cand.traceback is not None:
        if cand.traceback.preamble.startswith("Exception ignored"):
            return True
        if cand.traceback.level not in _FATAL_LEVELS:
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


def _choose_root(
    index: LogIndex, catalog: Catalog, scan: _Scan, incident: _Incident, window: tuple[int, int]
) -> _Candidate | None:
    lo_line, next_run_line = window
    symptom_lines = [s.line for s, _, _ in incident.symptoms]
    first_death, last_death = min(symptom_lines), _death_end(scan, incident)
    outer = incident.outer
    healthy = -1
    first_offset = scan.offsets.get(first_death)
    lo_offset = scan.offsets.get(lo_line, 0) if lo_line > 0 else 0
    if first_offset is not None:
        healthy = _last_healthy(index, catalog, lo_offset, first_offset, outer)

    def eligible(cand: _Candidate, lo: int, hi: int) -> bool:
        line = cand.event.line
        if not (lo <= line <= hi):
            return False
        owner = scan.lines.get(cand.event.traceback_start or line)
        if owner is not None and (owner.outer or "") != outer:
            return False
        return not _is_decoy(catalog, cand, first_death)

    pools = [_unwrap(catalog, c) for c in scan.events]
    before = [c for c in pools if eligible(c, max(lo_line, healthy + 1), last_death)]
    after = [
        c for c in pools if eligible(c, last_death + 1, min(next_run_line - 1, last_death + _LATE_WINDOW))
    ]
    for tier in (0, 1):
        for group in (before, after):
            chosen = [c for c in group if c.tier == tier]
            if tier == 0 and group is after:
                chosen = [c for c in chosen if c.event.kind == "fault"]
            if chosen:
                return min(chosen, key=lambda c: (c.event.line, c.event.chain_index))
    signals = [c for c in before + after if c.tier == 2]
    if signals:
        return min(signals, key=lambda c: c.event.line)
    return None


def _death_end(scan: _Scan, incident: _Incident) -> int:
    """The last line of the death: a symptom such as `EngineCore failed to start.` heads the
    logged traceback that holds the cause, so that traceback belongs to the death too."""
    end = max(s.line for s, _, _ in incident.symptoms)
    heads = {(s.line, line.stream) for s, _, line in incident.symptoms}
    for tb in scan.tracebacks:
        if tb.lines and any(0 < tb.header_line - n <= 3 and stream == tb.stream for n, stream in heads):
            end = max(end, tb.lines[-1])
    return end


def _unwrap(catalog: Catalog, cand: _Candidate) -> _Candidate:
    """A wrapper exception is not a cause; one that carries the original message stands in for
    it (tier 1) when the original was not printed."""
    if cand.tier != 0 or not _is_wrapper(catalog, cand.event.text):
        return cand
    for marker in catalog.markers_of("symptom"):
        found = marker.pattern.search(cand.event.text)
        if found and found.groupdict().get("inner"):
            return replace(cand, tier=1, inner_text=found.group("inner"))
    return replace(cand, tier=9)


def _symptom_as_root(incident: _Incident) -> _Candidate:
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
    return _Candidate(event, tier=3)


# -- 4. diagnose ---------------------------------------------------------------------------------
def _diagnose(
    index: LogIndex,
    catalog: Catalog,
    scan: _Scan,
    incident: _Incident,
    runs: dict[tuple[str, int], RunSegment],
) -> Finding | None:
    run_lines = _run_lines(scan, incident.outer)
    run_start = run_lines[incident.run_index - 1] if incident.run_index > 0 else 0
    next_run = run_lines[incident.run_index] if incident.run_index < len(run_lines) else 1 << 60
    cand = _choose_root(index, catalog, scan, incident, (run_start, next_run)) or _symptom_as_root(incident)
    event = cand.event
    root_offset = _offset_of(index, scan, event.line)
    run_offset = _offset_of(index, scan, run_start) if run_start else 0
    key = (incident.outer, incident.run_index)
    if key not in runs:
        end_line = min(next_run - 1, max(s.line for s, _, _ in incident.symptoms) + _LATE_WINDOW)
        context = read_context(index, run_offset, root_offset + 1)
        runs[key] = RunSegment(run_start, end_line, incident.outer, context)
    context = runs[key].context
    return _build_finding(index, catalog, scan, incident, cand, context, run_offset, root_offset)


def _offset_of(index: LogIndex, scan: _Scan, line: int) -> int:
    if line in scan.offsets:
        return scan.offsets[line]
    return index.line_start(line)


def _chain_texts(scan: _Scan, cand: _Candidate) -> list[str]:
    texts = []
    if cand.traceback is not None:
        texts.extend(e.text for e in cand.traceback.chain)
    # Copies of the same exception elsewhere (EngineCore re-raise, API server) add context.
    needle = cand.event.message[:80]
    if needle:
        texts.extend(
            c.event.text for c in scan.events if c.event.line != cand.event.line and needle in c.event.message
        )
    if cand.inner_text:
        texts.insert(0, cand.inner_text)
    return texts[:50]


def _frames_text(cand: _Candidate) -> list[str]:
    if cand.traceback is None:
        return []
    return [f"{f.path}:{f.function or ''}" for e in cand.traceback.chain for f in e.frames]


def _window_text(index: LogIndex, root_offset: int, root_line: int) -> list[str]:
    lines = [t for _, t in index.iter_lines_back(root_offset, root_line, _CONTEXT_RADIUS)]
    lines.reverse()
    lines.extend(t for _, t in index.iter_lines_from(root_offset, root_line, _CONTEXT_RADIUS))
    return [line[:2000] for line in lines]


def classify(
    catalog: Catalog, root_text: str, chain: list[str], frames: list[str], window: list[str], phase: str
) -> tuple[Rule | None, dict[str, str]]:
    """The first rule that matches, and its captures."""
    window_blob = "\n".join(window)
    frames_blob = "\n".join(frames + chain)
    frame_items = frames + chain
    for rule in catalog.rules:
        found = None
        for pattern in rule.match:
            found = pattern.search(root_text)
            if found:
                break
        if not found:
            continue
        if rule.phases and phase not in rule.phases:
            continue
        if rule.frames and not any(p.search(item) for p in rule.frames for item in frame_items):
            continue
        if rule.context and not any(p.search(line) for p in rule.context for line in window + frame_items):
            continue
        captures = {k: v for k, v in found.groupdict().items() if v}
        for pattern in rule.evidence:
            for blob in (root_text, frames_blob, window_blob):
                extra = pattern.search(blob)
                if extra:
                    for name, value in extra.groupdict().items():
                        if value and name not in captures:
                            captures[name] = value
                    break
        return rule, captures
    return None, {}


def _phase_for(
    index: LogIndex, catalog: Catalog, frames: list[str], lo: int, hi: int
) -> tuple[str, int | None]:
    """The crash phase: from the root's frames when they tell, else the last marker before it."""
    for frame in reversed(frames):  # innermost call first: it tells the most
        for marker in catalog.markers_of("phase_frame"):
            if marker.pattern.search(frame):
                return marker.phase, None
    best_pos, best_phase = -1, "startup"
    for marker in catalog.markers_of("phase"):
        pos = index.rfind(marker.literal, max(lo, best_pos + 1), hi)
        tries = 0
        while pos >= 0 and tries < 10:
            start = index.line_start_at(pos)
            line = parse_line(0, index.line_at(pos, MAX_LINE))
            if marker.pattern.search(line.message.strip()):
                if pos > best_pos:
                    best_pos, best_phase = pos, marker.phase
                break
            pos = index.rfind(marker.literal, max(lo, best_pos + 1), start)
            tries += 1
    return best_phase, (index.line_of(best_pos) if best_pos >= 0 else None)


def _root_text(cand: _Candidate) -> str:
    if cand.inner_text:
        return cand.inner_text
    event = cand.event
    if event.kind in ("fault", "signal", "message"):
        return event.message
    return event.text


def _build_finding(
    index: LogIndex,
    catalog: Catalog,
    scan: _Scan,
    incident: _Incident,
    cand: _Candidate,
    context: RunContext,
    run_offset: int,
    root_offset: int,
) -> Finding:
    event = cand.event
    frames = _frames_text(cand)
    chain = _chain_texts(scan, cand)
    window = _window_text(index, root_offset, event.line)
    own_frames = [f"{f.path}:{f.function or ''}" for f in event.frames]
    root_end = index.line_end_at(root_offset)
    phase, phase_line = _phase_for(index, catalog, own_frames, run_offset, root_end)
    root_text = _root_text(cand)
    rule, captures = classify(catalog, root_text, chain, frames, window, phase)
    if rule is None:
        rule = catalog.rule("unrecognized") or _FALLBACK
    version = parse_version(context.vllm_version)
    fixes = []
    for fix in rule.fixes_for(version):
        ops = [resolve_op(op, captures, version, context.args) for op in fix.ops]
        if all(op is not None for op in ops):
            fixes.append(ResolvedFix(fix, tuple(op for op in ops if op is not None)))
    evidence = dict(captures)
    # A bare `AssertionError` says nothing: its failing frame and assert statement do.
    failing_frame = _failing_frame(event)
    if failing_frame is not None:
        evidence.setdefault(
            "failing_frame", f"{failing_frame.path}:{failing_frame.lineno} in {failing_frame.function}"
        )
        if event.context_lines:
            evidence.setdefault("assertion", event.context_lines[-1])
    symptoms = _distinct_symptoms(incident, event)
    copies = (
        c.event.line for c in scan.events if c.event.line != event.line and c.event.message == event.message
    )
    related = tuple(([failing_frame.line] if failing_frame else []) + [n for n in copies if event.message])[
        :20
    ]
    return Finding(
        root=event.span,
        root_text=event.text if event.kind == "python" else event.message,
        rule_id=rule.id,
        title=rule.title,
        family=rule.family,
        message=_message(rule, evidence),
        summary=rule.summary,
        explanation=rule.explanation,
        evidence=evidence,
        fixes=tuple(fixes),
        symptoms=symptoms,
        phase=phase,
        phase_line=phase_line,
        context=context,
        references=rule.references,
        exception=event,
        related_lines=related,
        next_steps=rule.next_steps,
        recognized=rule.family != "unrecognized",
    )


def _failing_frame(event: ExceptionEvent) -> Frame | None:
    if (
        event.kind == "python"
        and event.type_name.endswith("AssertionError")
        and not event.message
        and event.frames
    ):
        return event.frames[-1]
    return None


def _distinct_symptoms(incident: _Incident, root: ExceptionEvent) -> tuple[Symptom, ...]:
    """One symptom per line; raw copies of the root exception are copies, not symptoms."""
    by_line: dict[int, Symptom] = {}
    for symptom, _, _ in incident.symptoms:
        if symptom.line == root.line:
            continue
        if symptom.kind == "uncaught-exception" and root.message and root.message in symptom.text:
            continue
        if symptom.line not in by_line or by_line[symptom.line].kind == "uncaught-exception":
            by_line[symptom.line] = symptom
    return tuple(sorted(by_line.values(), key=lambda s: s.line))


def _message(rule: Rule, evidence: dict[str, str]) -> str:
    if rule.message:
        try:
            return rule.message.format_map(evidence)
        except (KeyError, IndexError, ValueError):
            pass
    return rule.title


_FALLBACK = Rule(
    id="unrecognized",
    title="Unrecognized cause",
    family="unrecognized",
    match=(catalog_mod.compile_pattern("."),),
    explanation="No rule in the catalog recognises this error. It is the original exception of this engine death.",
)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per root-cause line (two runs can share a late root, e.g. a core dump)."""
    seen: dict[int, Finding] = {}
    for finding in findings:
        if finding.line in seen:
            kept = seen[finding.line]
            seen[finding.line] = replace(kept, symptoms=kept.symptoms + finding.symptoms)
        else:
            seen[finding.line] = finding
    return list(seen.values())


def _precursors_for(scan: _Scan, findings: list[Finding]) -> list[Precursor]:
    """Precursors before a death in a run that died; healthy runs get none."""
    if not findings:
        return []
    last = max(max((s.line for s in f.symptoms), default=f.line) for f in findings)
    last = max(last, max(f.line for f in findings))
    return [p for p, _ in scan.precursors if p.line <= last]
