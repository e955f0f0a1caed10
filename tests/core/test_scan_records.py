"""What the scan keeps per line (`scan.Scan`): a record of each candidate line it classified, and
none of a traceback's frame and code lines (nothing classifies them: `raise X("…")` is code).

Principle: keeping fewer records changes no answer; the lines the analysis looks up again (a
traceback's header, its exception lines, lines outside tracebacks) are all kept.
"""

from __future__ import annotations

import pytest

from support import CRASH, CRASH2, CRASH3, read_log, skipped_copy_lines
from vllm_log_lsp.core import scan as scan_mod
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
    skipped = set(scan.consumed) - set(scan.exception_lines)
    # (and the lines of the copies of a repeated traceback, counted, not read: see `repeats`)
    skipped |= skipped_copy_lines(scan)
    assert set(scan.lines) == _candidates(index) - skipped
    # (A traceback read without its header starts at a frame line, which no literal passes: it
    # is looked up with a fallback.)
    headless = {tb.header_line for tb in scan.tracebacks if tb.headless}
    looked_up = {cand.event.traceback_start or cand.event.line for cand in scan.events} - headless
    looked_up.update(tb.header_line for tb in scan.tracebacks if not tb.headless)
    assert not looked_up & skipped  # (a line the pre-filter did not pass was never kept)


def _values(scan) -> tuple:
    """A scan by what it found (its candidates compare by identity)."""
    events = [(c.event, c.tier, c.traceback, c.inner_text) for c in scan.events]
    return scan.lines, scan.symptoms, scan.precursors, scan.run_starts, events, scan.tracebacks


class _EachAlone(scan_mod._MarkersByMessage):
    """The markers of every message searched anew (nothing remembered)."""

    def of(self, message: str):
        self._found.clear()
        return super().of(message)

    def stop(self, message: str):
        self._stops.clear()
        return super().stop(message)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_markers_remembered_per_message_find_what_each_message_finds_alone(path, monkeypatch) -> None:
    """A log repeats its messages (here: the log three times over): the markers found for a
    message seen before are those a search of it finds."""
    text = read_log(path)
    text = (text if text.endswith("\n") else text + "\n") * 3
    remembered = scan_lines(LogIndex(text), CATALOG)
    monkeypatch.setattr(scan_mod, "_MarkersByMessage", _EachAlone)
    alone = scan_lines(LogIndex(text), CATALOG)
    assert _values(remembered) == _values(alone)


def _first(kind: str, message: str):
    return next(
        (m for m in CATALOG.markers_of(kind) if m.literal in message and m.pattern.search(message)), None
    )


@pytest.mark.parametrize(
    "message",
    [
        "Segmentation fault (core dumped)",
        "Fatal Python error: Aborted",
        "KeyboardInterrupt: terminated",
        "EngineCore failed to start.",
        "all is well",
    ],
)
def test_the_first_matching_marker_of_each_kind_is_remembered(message: str) -> None:
    markers = scan_mod._MarkersByMessage(CATALOG)
    fault, signal = _first("fault", message), _first("signal", message)
    want = ("fault", 0, fault) if fault else ("signal", 2, signal) if signal else None
    for _ in range(2):
        assert markers.stop(message) == want
        assert markers.of(message)[0] is _first("symptom", message)
        assert markers.of(message)[2] is _first("precursor", message)
    assert any(markers.stop(m) for m in ("Segmentation fault", "KeyboardInterrupt"))  # (fault and signal)


def test_remembered_messages_are_bounded() -> None:
    markers = scan_mod._MarkersByMessage(CATALOG)
    for n in range(scan_mod._MAX_MESSAGES + 10):
        markers.of(f"line {n}")
        markers.stop(f"line {n}")
    assert len(markers._found) <= scan_mod._MAX_MESSAGES and len(markers._stops) <= scan_mod._MAX_MESSAGES


def test_copies_of_a_traceback_share_their_frames_texts() -> None:
    scan = scan_lines(LogIndex(TRACEBACK.replace("21:00:01", "21:00:03") + TRACEBACK), CATALOG)
    first, second = (tb.chain[0] for tb in scan.tracebacks)
    assert first.frames[0].line != second.frames[0].line  # (two records)
    assert first.frames[0].path is second.frames[0].path
    assert first.frames[0].function is second.frames[0].function
    assert first.context_lines[0] is second.context_lines[0]
