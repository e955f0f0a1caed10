"""The pre-filter's literals pick out the lines worth reading, not a log's ordinary lines.

Every line holding one of the scan's literals is parsed and classified; a literal that ordinary
lines hold (a process's name: `EngineCore` is on every line an EngineCore process writes) makes
the scan parse most of a log for nothing. On the real logs of the corpus (crash and healthy):
- the candidate lines are a small part of all lines;
- no literal is by itself the reason for more than a few percent of the lines;
- every match of a scanned marker's pattern holds the marker's literal (the pre-filter never
  loses a line the marker would have matched: the literal is not made too narrow either).
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, healthy_logs, read_log
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.scan import _SCANNED_KINDS, scan_lines, scan_literals
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
LITERALS = sorted(scan_literals(CATALOG))
LOGS = [*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log"), *healthy_logs()]

#: Of all the corpus's lines, at most this share are candidates (4.7 % now; 25 % when a marker's
#: literal was `EngineCore`).
MAX_CANDIDATE_SHARE = 0.10
#: At most this share of the corpus's lines hold one literal and no other (`Error`: 1 %).
MAX_SOLE_SHARE = 0.03


def _corpus_lines() -> list[str]:
    return [line for path in sorted(LOGS) for line in read_log(path).splitlines()]


def test_candidate_lines_are_a_small_part_of_real_logs() -> None:
    lines = _corpus_lines()
    sole: Counter[str] = Counter()
    candidates = 0
    for line in lines:
        held = [literal for literal in LITERALS if literal in line]
        candidates += bool(held)
        if len(held) == 1:
            sole[held[0]] += 1
    assert len(lines) > 10_000
    assert candidates <= MAX_CANDIDATE_SHARE * len(lines), (candidates, len(lines), sole.most_common(5))
    broad = {literal: n for literal, n in sole.items() if n > MAX_SOLE_SHARE * len(lines)}
    assert not broad, broad


# The scan's markers, and those searched for by their literal elsewhere (`rfind` for the last
# lifecycle step, the healthy serving lines): a literal that some match lacks hides that match
# from every search.
SEARCHED = [(kind, m) for kind in (*_SCANNED_KINDS, "phase", "healthy") for m in CATALOG.markers_of(kind)]


@pytest.mark.parametrize(("kind", "marker"), SEARCHED, ids=lambda v: getattr(v, "id", v))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(data=st.data())
def test_every_match_of_a_searched_marker_holds_its_literal(kind: str, marker, data: st.DataObject) -> None:
    match = data.draw(st.from_regex(marker.pattern.source, fullmatch=True))
    assert marker.literal in match, (marker.id, marker.literal, match)


# Each wording a marker's pattern names is read, including those a literal of the marker's
# other wording used to hide (vLLM's texts from research/vllm-facts.md, NCCL's and gdb's).
WORDINGS = [
    (
        "symptom",
        "engine-init-failed",
        "RuntimeError: Frontend process failed during engine core initialization. See root cause above. "
        "Failed frontend proc(s): {'ApiServer_0': 1}",
    ),
    (
        "symptom",
        "engine-init-failed",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ),
    ("symptom", "proc-died", "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup"),
    (
        "symptom",
        "proc-died",
        "Worker proc VllmWorker-0 died unexpectedly (exit code: -9), shutting down executor.",
    ),
    ("symptom", "engine-fatal-error", "EngineCore encountered a fatal error."),
    ("symptom", "engine-fatal-error", "EngineCore hit an exception: Traceback (most recent call last):"),
    (
        "fault",
        "nccl-shm-error",
        "host:1:2 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12 to 9637892 bytes",
    ),
    (
        "fault",
        "nccl-shm-error",
        "Error while creating shared memory segment /dev/shm/nccl-Ab12 (size 9637888)",
    ),
    ("fault", "segfault", 'Thread 1 "python3" received signal SIGSEGV'),
    ("fault", "segfault", "Segmentation fault (core dumped)"),
    ("fault", "bus-error", "Program terminated with signal SIGBUS, Bus error."),
    ("fault", "bus-error", "Bus error (core dumped)"),
]


@pytest.mark.parametrize(("kind", "marker_id", "message"), WORDINGS)
def test_each_wording_of_a_marker_is_read(kind: str, marker_id: str, message: str) -> None:
    assert any(literal in message for literal in LITERALS)  # (the pre-filter keeps the line)
    found = next(
        (m for m in CATALOG.markers_of(kind) if m.literal in message and m.pattern.search(message)), None
    )
    assert found is not None and found.id == marker_id, (message, found)
    scan = scan_lines(LogIndex(f"INFO 10-03 21:00:00 [x.py:1] start\n{message}\n"), CATALOG)
    if kind == "symptom":
        assert [s.kind for s, _, _ in scan.symptoms] == [marker_id]
    else:
        assert [c.event.type_name for c in scan.events] == [found.title]
