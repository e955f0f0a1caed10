"""Step 3: classify a root cause with the ordered catalog and build the finding.

The first rule whose signature matches the root-cause text (and whose frame, context and phase
conditions hold) wins; its named groups and evidence patterns give the values that fix values and
the diagnostic message use. The phase comes from `phase.death_phase` (the root's innermost telling
frame, else the last lifecycle marker before it, else unknown).
"""

from __future__ import annotations

import bisect

from . import catalog as catalog_mod
from . import origins
from .catalog import Catalog, Rule, RuleMatches, fill_placeholders
from .incidents import Incident, is_stop_dump, line_offset, stop_tracebacks_after
from .model import ExceptionEvent, Finding, Frame, ResolvedFix, RunContext, Symptom
from .phase import death_phase
from .scan import Candidate, Scan
from .text import LogIndex, as_printed, clip_line
from .tracebacks import looks_like_exception
from .values import resolve_op
from .versions import parse_version

# Around the root cause, how many lines feed rule context conditions and evidence.
_CONTEXT_RADIUS = 60


def classify(
    catalog: Catalog,
    root_text: str,
    chain: list[str],
    frames: list[str],
    window: list[str],
    phase: str,
    matches: RuleMatches | None = None,
) -> tuple[Rule | None, dict[str, str]]:
    """The first rule that matches, and its captures. `matches`: the analysis's remembered rule
    matches (see `RuleMatches`), for a log of many deaths, and its remembered results: the
    result depends on these inputs only, which each death of a restart loop repeats."""
    memo = matches if matches is not None else RuleMatches(catalog)
    key = (root_text, tuple(chain), tuple(frames), tuple(window), phase)
    if key not in memo.classified:
        memo.classified[key] = _first_rule(memo, *key)
    rule, captures = memo.classified[key]
    return rule, dict(captures)


def _first_rule(
    matches: RuleMatches,
    root_text: str,
    chain: tuple[str, ...],
    frames: tuple[str, ...],
    window: tuple[str, ...],
    phase: str,
) -> tuple[Rule | None, dict[str, str]]:
    # (Read as printed, only when not remembered: a restart loop repeats its deaths' texts.)
    root_text = as_printed(root_text)
    chain, frames, window = (tuple(map(as_printed, texts)) for texts in (chain, frames, window))
    window_blob = "\n".join(window)
    frames_blob = "\n".join(frames + chain)
    # The root's own text is one of its chain's exceptions: a paste that kept the exception line
    # but not its traceback header must meet `frames` as the whole traceback would.
    frame_items = (*frames, *chain, root_text)
    for rule, found in matches.matching(root_text):
        if rule.phases and phase not in rule.phases:
            continue
        if (
            rule.frames
            and phase not in rule.frames_or_phases
            and not any(p.search(item) for p in rule.frames for item in frame_items)
        ):
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


def _chain_texts(scan: Scan, cand: Candidate, run: tuple[int, int]) -> list[str]:
    texts: list[str] = []
    if cand.traceback is not None:
        texts.extend(e.text for e in cand.traceback.chain)
    # Copies of the same exception elsewhere in its run (EngineCore re-raise, API server) add
    # context; another run's copies are another death's (a restart loop repeats them).
    needle = cand.event.message[:80]
    if needle:
        texts.extend(
            c.event.text
            for c in _events_in(scan, run)
            if c.event.line != cand.event.line and needle in c.event.message
        )
    if cand.inner_text:
        texts.insert(0, cand.inner_text)
    return texts[:50]


def _events_in(scan: Scan, run: tuple[int, int]) -> list[Candidate]:
    """The scan's events on lines [run[0], run[1]), found by bisection in a line-sorted copy
    made once per analysis: a restart loop of many deaths does not rescan every event."""
    key = ("events_by_line", len(scan.events))
    ordered = scan.cache.get(key)
    if not isinstance(ordered, list):
        ordered = scan.cache[key] = sorted(scan.events, key=lambda c: c.event.line)
    lo = bisect.bisect_left(ordered, run[0], key=lambda c: c.event.line)
    hi = bisect.bisect_left(ordered, run[1], key=lambda c: c.event.line)
    return ordered[lo:hi]


# Related lines a finding lists at most.
_MAX_RELATED = 20


def _copies(scan: Scan, event: ExceptionEvent, run: tuple[int, int]) -> list[int]:
    """Lines of the other copies of `event`'s exception in its run (EngineCore's logged one, the
    API server's re-raise), in line order, at most `_MAX_RELATED`. Another run's copies belong to
    another death: a restart loop prints the same exception in every run."""
    if not event.message:
        return []
    same = (c.event.line for c in _events_in(scan, run) if c.event.message == event.message)
    return [line for line in same if line != event.line][:_MAX_RELATED]


# A root's message is looked for in a later exception's by at most this much of its start, and
# only when it is at least this long (a short one could be any message's words).
_CARRIED_CHARS = 120
_MIN_CARRIED = 24


def _carrier_frames(scan: Scan, event: ExceptionEvent, run: tuple[int, int]) -> list[str]:
    """The frames (`path:function`) of the first later exception in the run whose message quotes
    the root's (EngineCore's `RuntimeError: Worker failed with error '<message>'`, a re-raise
    wrapping it), or []: where the process that carried the failure on was when it learnt of it."""
    quoted = event.message.strip()[:_CARRIED_CHARS]
    if len(quoted) < _MIN_CARRIED:
        return []
    for cand in _events_in(scan, run):
        later = cand.event
        if (
            later.line > event.line
            and later.frames
            and later.message != event.message
            and quoted in later.message
        ):
            return [f"{f.path}:{f.function or ''}" for f in later.frames]
    return []


def _frames_text(cand: Candidate) -> list[str]:
    # (a fault's own frames: the stack `faulthandler` printed after it; a traceback cut before its
    # exception line has no chain: the frames read are the candidate's, see `scan._add_logged_message`)
    chain = cand.traceback.chain if cand.traceback is not None else ()
    events = chain or [cand.event]
    return [f"{f.path}:{f.function or ''}" for e in events for f in e.frames]


#: How far after a stop's frameless dump the traceback of the same stop may be printed.
_STOP_TRACEBACK_REACH = 400


def _stopped_where(catalog: Catalog, scan: Scan, cand: Candidate, run: tuple[int, int]) -> list[str]:
    """For a stop reported without frames (Ray's dump of the SIGTERM it received), the frames of
    the first traceback of the same stop that follows it in its run (the `SystemExit: 15` or
    `KeyboardInterrupt` the signal raised): where the process was when it was told to stop,
    which names what it was waiting for. [] otherwise."""
    if not is_stop_dump(cand.event):
        return []
    before = min(run[1], cand.event.line + _STOP_TRACEBACK_REACH)
    for stop in stop_tracebacks_after(catalog, scan, cand.event.line, before):
        frames = _frames_text(stop)
        if frames:
            return frames
    return []


def _window_text(index: LogIndex, root_offset: int, root_line: int, run: tuple[int, int]) -> list[str]:
    """The lines around the root cause, within its run (not the previous run's death)."""
    lo, hi = run
    lines = [t for n, t in index.iter_lines_back(root_offset, root_line, _CONTEXT_RADIUS) if n >= lo]
    lines.reverse()
    lines.extend(t for n, t in index.iter_lines_from(root_offset, root_line, _CONTEXT_RADIUS) if n < hi)
    return [clip_line(line, 2000) for line in lines]


def _root_text(cand: Candidate) -> str:
    if cand.inner_text:
        return cand.inner_text
    event = cand.event
    if event.kind in ("fault", "signal", "message"):
        return event.message
    return event.text


def _phase_end(index: LogIndex, scan: Scan, incident: Incident, root: ExceptionEvent, root_end: int) -> int:
    """Where the lifecycle lines that tell the phase of a death end: the root's line, or the
    death's first symptom when the root was printed after it (a core dump's stack pasted below
    the log): the lines between, the processes shutting down, are no phase the death was in."""
    first = min(symptom.line for symptom, _, _ in incident.symptoms)
    if root.line <= first:
        return root_end
    return index.line_end_at(line_offset(index, scan, first))


def build_finding(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    incident: Incident,
    cand: Candidate,
    context: RunContext,
    run_offset: int,
    root_offset: int,
    run: tuple[int, int],
    matches: RuleMatches | None = None,
) -> Finding:
    """The finding for `incident` with root cause `cand`: its rule, evidence, phase and fixes.
    `run` is the incident's run as lines [first, next run's first); `matches`, the analysis's
    remembered rule matches."""
    event = cand.event
    frames = _frames_text(cand) or _stopped_where(catalog, scan, cand, run)
    chain = _chain_texts(scan, cand, run)
    window = _window_text(index, root_offset, event.line, run)
    own_frames = [f"{f.path}:{f.function or ''}" for f in event.frames]
    root_end = index.line_end_at(root_offset)
    phase, phase_line, phase_source = death_phase(
        index,
        catalog,
        own_frames,
        run_offset,
        _phase_end(index, scan, incident, event, root_end),
        lambda: _carrier_frames(scan, event, run),
    )
    root_text = _root_text(cand)
    rule, captures = classify(catalog, root_text, chain, frames, window, phase, matches)
    version = parse_version(context.vllm_version)
    mined = origins.match_event(event, cand.inner_text, version)
    origin = origins.origin_of(mined, version, context.vllm_version) if mined else None
    message = None
    if rule is not None and rule.family == "unrecognized":
        rule = None  # the catalog's last-resort rule: a mined message says more
    if rule is None and mined is not None:
        # No hand-written rule knows it, but vLLM's (or a library's) source does: where it is
        # raised names the cause.
        family = origins.family_of(mined.template)
        if family is not None:
            rule, captures = family.rule, origins.evidence_of(mined)
            message = (
                f"{rule.title} ({mined.template.kind} {origin.summary.replace('`', '')})" if origin else None
            )
    if rule is None:
        rule = catalog.rule("unrecognized") or _FALLBACK
        captures = _what_is_known(event, own_frames or frames, mined, cand.inner_text)
        message = _unrecognized_message(captures)
    fixes = []
    for fix in rule.fixes_for(version):
        if fix.unless_stack and frames:
            continue  # (a way to get the stack the log holds)
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
    if event.kind in ("fault", "message") and event.frames:
        # Where the Python stack `faulthandler` printed crashed; where a traceback cut before its
        # exception line was raised (its last frame read).
        innermost = event.frames[-1]
        where = f"{innermost.path}:{innermost.lineno} in {innermost.function}"
        evidence.setdefault("crashed_in" if event.kind == "fault" else "raised_in", where)
    symptoms = _distinct_symptoms(incident, event)
    copies = _copies(scan, event, run)
    related = tuple(([failing_frame.line] if failing_frame else []) + copies)[:_MAX_RELATED]
    return Finding(
        root=event.span,
        root_text=event.text if event.kind == "python" else event.message,
        rule_id=rule.id,
        title=rule.title_for(evidence, context.platform),
        family=rule.family,
        message=message or _message(rule, evidence, context.platform),
        summary=rule.summary,
        explanation=rule.explanation,
        evidence=evidence,
        fixes=tuple(fixes),
        symptoms=symptoms,
        phase=phase,
        phase_line=phase_line,
        phase_source=phase_source,
        context=context,
        references=rule.references,
        exception=event,
        related_lines=related,
        next_steps=rule.next_steps,
        recognized=rule.family != "unrecognized",
        origin=origin,
    )


def _what_is_known(
    event: ExceptionEvent, frames: list[str], mined: origins.MessageMatch | None, carried: str | None = None
) -> dict[str, str]:
    """What an unrecognised root cause still tells: its type, the vLLM module it came from (its
    frames, else where the mined message is raised), and the mined message's values. A message
    `carried` by a wrapper (`Worker failed with error '…'`) is the error: its own type (when it
    names one), and the wrapper that carried it from another process."""
    known = {"exception_type": event.type_name}
    component = origins.vllm_component([f.rsplit(":", 1)[0] for f in frames])
    if component is None and mined is not None:
        component = mined.template.sites[0].module
    if carried:
        named = looks_like_exception(carried)
        known["exception_type"] = named.group("type") if named else "error"
        known["carried_by"] = f"{event.type_name} in {component}" if component else event.type_name
        component = None  # (where the wrapper was raised, not the error)
    if component:
        known["component"] = component
    if mined is not None:
        known.update(origins.evidence_of(mined))
    return known


def _unrecognized_message(known: dict[str, str]) -> str:
    if "carried_by" in known:
        return f"Unrecognized {known['exception_type']} carried by {known['carried_by']}: no rule knows this message"
    where = f" in {known['component']}" if "component" in known else ""
    return f"Unrecognized {known['exception_type']}{where}: no rule knows this message"


def _failing_frame(event: ExceptionEvent) -> Frame | None:
    if (
        event.kind == "python"
        and event.type_name.endswith("AssertionError")
        and not event.message
        and event.frames
    ):
        return event.frames[-1]
    return None


def _distinct_symptoms(incident: Incident, root: ExceptionEvent) -> tuple[Symptom, ...]:
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


def _message(rule: Rule, evidence: dict[str, str], platform: str | None = None) -> str:
    filled = fill_placeholders(rule.message, evidence) if rule.message else None
    return filled or rule.title_for(evidence, platform)


_FALLBACK = Rule(
    id="unrecognized",
    title="Unrecognized cause",
    family="unrecognized",
    match=(catalog_mod.compile_pattern("."),),
    explanation="No rule in the catalog recognises this error. It is the original exception of this engine death.",
)
