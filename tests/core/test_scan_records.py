"""What the scan keeps per line (`scan.Scan`): a record of each candidate line it classified, and
none of a traceback's frame and code lines (nothing classifies them: `raise X("…")` is code).

Principle: keeping fewer records changes no answer; the lines the analysis looks up again (a
traceback's header, its exception lines, lines outside tracebacks) are all kept.
"""

from __future__ import annotations

import pytest

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.prefilter import candidate_lines
from vllm_log_lsp.core.scan import _BASE_LITERALS, _SCANNED_KINDS, scan_lines
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
LOGS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])

TRACEBACK = """\
(EngineCore_DP0 pid=7) ERROR 10-03 21:00:01 [core.py:1] EngineCore failed to start.
(EngineCore_DP0 pid=7) ERROR 10-03 21:00:01 [core.py:1] Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR 10-03 21:00:01 [core.py:1]   File "/x/gpu_worker.py", line 3, in load
(EngineCore_DP0 pid=7) ERROR 10-03 21:00:01 [core.py:1]     raise RuntimeError("CUDA error: out of memory")
(EngineCore_DP0 pid=7) ERROR 10-03 21:00:01 [core.py:1] RuntimeError: CUDA error: out of memory
(EngineCore_DP0 pid=7) ERROR 10-03 21:00:02 [core.py:1] RuntimeError: Engine core initialization failed.
"""


def _candidates(index: LogIndex) -> set[int]:
    literals = set(_BASE_LITERALS)
    for kind in _SCANNED_KINDS:
        literals.update(m.literal for m in CATALOG.markers_of(kind))
    return {index.line_of(start) for start, _ in candidate_lines(index, literals, 0)}


def test_a_code_line_is_neither_kept_nor_classified() -> None:
    scan = scan_lines(LogIndex(TRACEBACK), CATALOG)
    assert sorted(scan.lines) == [0, 1, 4, 5]  # the code line 3 holds `Error` too
    assert 3 in scan.consumed and sorted(scan.offsets) == sorted(scan.lines)
    assert [c.event.line for c in scan.events] == [4, 5]
    assert all(symptom.line != 3 for symptom, _, _ in scan.symptoms)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_scan_keeps_every_candidate_line_but_frames_and_code(path) -> None:
    index = LogIndex(read_log(path))
    scan = scan_lines(index, CATALOG)
    skipped = scan.consumed - scan.exception_lines
    assert set(scan.lines) == _candidates(index) - skipped
    looked_up = {cand.event.traceback_start or cand.event.line for cand in scan.events}
    looked_up.update(tb.header_line for tb in scan.tracebacks)
    assert not looked_up & skipped  # (a line the pre-filter did not pass was never kept)
