"""What one analysis remembers between its deaths gives what each death would compute alone:

- the precursors of a line range (`precursors_in`, by bisection) are the scan's precursors on
  those lines, in scan order, whatever order the scan found them in;
- wrappers recognised once per distinct text (`unwrap_candidates`) are each candidate recognised
  on its own, on corpus logs repeated as a restart loop repeats them;
- the mined message of an exception, remembered by its parts (`origins.match_event`), is the one
  the message index gives for those parts, on every exception of the corpus;
- a classification remembered by its inputs (`classify`) is the one computed alone, for every
  corpus exception in every phase, with and without its window and frames;
- the run a finding's launch context belongs to, found by bisection (`health._Contexts`), is the
  run whose lines hold it, looking at every run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core import origins
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.catalog import RuleMatches, builtin_catalog
from vllm_log_lsp.core.classify import classify
from vllm_log_lsp.core.health import _Contexts
from vllm_log_lsp.core.incidents import precursors_in, unwrap_candidates
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.mined import message_index
from vllm_log_lsp.core.model import Finding, Precursor, Span
from vllm_log_lsp.core.outline import run_boundaries
from vllm_log_lsp.core.records import replace
from vllm_log_lsp.core.scan import Scan, scan_lines
from vllm_log_lsp.core.text import LogIndex
from vllm_log_lsp.core.versions import parse_version

CATALOG = builtin_catalog()
LOGS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])


def _precursor(line: int) -> tuple[Precursor, object]:
    return Precursor(line, Span(line, 0, 1), f"id{line % 3}", "title", "why", "text"), parse_line(line, "x")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=15), st.integers(0, 42), st.integers(0, 42))
def test_precursors_in_a_range_are_the_plain_filter_in_scan_order(lines: list[int], lo: int, hi: int) -> None:
    scan = Scan(precursors=[_precursor(n) for n in lines])
    for _ in range(2):
        want = [item for item in scan.precursors if lo <= item[0].line < hi]
        assert precursors_in(scan, lo, hi) == want
        scan.precursors.append(_precursor(lo))  # found later: the order is rebuilt


def _scan(text: str) -> Scan:
    return scan_lines(LogIndex(text), CATALOG)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_wrappers_recognised_once_per_text_are_each_recognised_alone(path: Path) -> None:
    text = read_log(path)
    text = text if text.endswith("\n") else text + "\n"
    scan = _scan(text * 3)
    alone = [unwrap_candidates(CATALOG, Scan(events=[cand]))[0] for cand in scan.events]
    assert _values(unwrap_candidates(CATALOG, scan)) == _values(alone)


def _values(candidates: list) -> list[tuple]:
    """Candidates by what they hold (a candidate compares by identity)."""
    return [(c.event, c.tier, c.traceback, c.inner_text) for c in candidates]


def test_the_corpus_has_wrappers_of_both_kinds() -> None:
    tiers = {c.tier for path in LOGS for c in unwrap_candidates(CATALOG, _scan(read_log(path)))}
    assert {0, 1, 9} <= tiers


def _index_match(event, inner_text, version):
    """The specification: the wrapper's carried message alone where there is one (where the
    wrapper is raised says nothing of it), else the exception's own."""
    index, paths = message_index(), tuple(f.path for f in event.frames)
    if inner_text:
        type_name, _, message = inner_text.partition(": ")
        if message and type_name.replace(".", "").replace("_", "").isalnum():
            return index.match(type_name, message, version, paths)
        return None
    return index.match(event.type_name, event.message, version, paths) if event.message else None


def test_remembered_mined_messages_equal_the_index_on_the_corpus() -> None:
    matched = 0
    for version in (None, parse_version("0.6.3"), parse_version("0.11.0")):
        for path in LOGS:
            for cand in unwrap_candidates(CATALOG, _scan(read_log(path))):
                if cand.event.kind not in ("python", "message"):
                    continue
                got = origins.match_event(cand.event, cand.inner_text, version)
                assert got == _index_match(cand.event, cand.inner_text, version)
                matched += got is not None
    assert matched > 50


PHASES = ("startup", "model-loading", "cuda-graph-capture", "serving", "unknown")


def test_remembered_classifications_equal_each_classified_alone() -> None:
    shared = RuleMatches(CATALOG)
    rules = set()
    for path in LOGS:
        text = read_log(path)
        index = LogIndex(text)
        for cand in _scan(text).events:
            event = cand.event
            frames = [f"{f.path}:{f.function or ''}" for f in event.frames]
            chain = [e.text for e in cand.traceback.chain] if cand.traceback else []
            start = index.line_start(max(0, event.line - 3))
            around = [t for _, t in index.iter_lines_from(start, max(0, event.line - 3), 7)]
            for phase in PHASES:
                for window, own_frames in ((around, frames), ([], frames), (around, [])):
                    alone = classify(CATALOG, event.text, chain, own_frames, window, phase)
                    remembered = classify(CATALOG, event.text, chain, own_frames, window, phase, shared)
                    assert remembered == alone
                    remembered[1]["changed"] = "by the caller"  # its own copy
                    rules.add(alone[0].id if alone[0] else None)
    assert len(rules) > 30  # not vacuous


def _finding_at(finding: Finding, line: int) -> Finding:
    return replace(finding, root=replace(finding.root, line=line))


FINDINGS = [f for path in LOGS[:12] for f in analyze(read_log(path)).findings]


@settings(max_examples=200, deadline=None)
@given(
    starts=st.lists(st.integers(0, 300), max_size=12),
    lines=st.lists(st.tuples(st.integers(0, 320), st.integers(0, len(FINDINGS) - 1)), max_size=20),
    line_count=st.integers(1, 330),
)
def test_a_findings_run_is_the_run_holding_its_line(
    starts: list[int], lines: list[tuple[int, int]], line_count: int
) -> None:
    bounds = run_boundaries(starts, line_count)
    findings = [_finding_at(FINDINGS[k], line) for line, k in lines]
    contexts = _Contexts(LogIndex(""), bounds, findings, lambda line: 0)
    known: dict[int, object] = {}
    prescribed: dict[int, dict[str, str | None]] = {}
    for finding in findings:  # the specification: every run is looked at
        for run, (first, last) in enumerate(bounds):
            if first <= finding.line <= last:
                known.setdefault(run, finding.context)
                values = prescribed.setdefault(run, {})
                for fix in finding.fixes:
                    for op in fix.ops:
                        values.setdefault(op.op.name, op.value)
    assert (contexts.known, contexts.prescribed) == (known, prescribed)
