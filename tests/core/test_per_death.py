"""What one analysis remembers between its deaths gives what each death would compute alone:

- the precursors of a line range (`precursors_in`, by bisection) are the scan's precursors on
  those lines, in scan order, whatever order the scan found them in;
- wrappers recognised once per distinct text (`unwrap_candidates`) are each candidate recognised
  on its own, on corpus logs repeated as a restart loop repeats them;
- the mined message of an exception, remembered by its parts (`origins.match_event`), is the one
  the message index gives for those parts, on every exception of the corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core import origins
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.incidents import precursors_in, unwrap_candidates
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.mined import message_index
from vllm_log_lsp.core.model import Precursor, Span
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
    """The specification: the wrapper's carried message first, then the exception's own."""
    index, paths = message_index(), tuple(f.path for f in event.frames)
    if inner_text:
        type_name, _, message = inner_text.partition(": ")
        if message and type_name.replace(".", "").replace("_", "").isalnum():
            found = index.match(type_name, message, version, paths)
            if found is not None:
                return found
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
