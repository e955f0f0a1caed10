"""The compact line records a scan keeps behave as the set and dict they replace.

- `LineRuns` holds exactly the numbers added, in any order and any grouping (runs that touch,
  overlap, nest, come before or between others, repeats), answers membership as a set does,
  and cuts below a limit as a filtered set would;
- `LineMap` holds each line's last value, in any order of adding, and cuts like a filtered dict;
- a scan's records equal the plain set and dict built from its tracebacks and lines, on the
  corpus and on a log of thousands of logged tracebacks, where they take a fraction of the memory;
- a candidate line the scan did not keep parsed (`CandidateLines`) reads as the scan parsed it,
  on the corpus (bytes and text) and on generated logs (tracebacks logged and raw, events of every
  kind, lines cut by the scan, colour codes, undecodable bytes, CRLF), and after a cut;
- the sets a scan asks while it runs (`_ReadLines`) answer as its compact records would, also
  for a scan read again from inside a traceback it kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, read_log, scan_values
from vllm_log_lsp.core import repeats
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.linesets import LineMap, LineRuns
from vllm_log_lsp.core.scan import CandidateLines, Scan, _ReadLines, scan_lines, truncate_scan
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
LOGS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])


@pytest.fixture(autouse=True)
def _every_traceback_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the records of the tracebacks a scan reads: every one of them (a log
    of request errors repeats one, which the scan would otherwise read once: see test_repeats)."""
    monkeypatch.setattr(repeats, "SKIP_REPEATS", False)


# Groups of numbers as tracebacks give them: a run, a run with holes (another writer's lines in
# between), anywhere (before, between or over earlier groups), in any order, with repeats.
_GROUPS = st.lists(
    st.one_of(
        st.tuples(st.integers(0, 200), st.integers(0, 30)).map(lambda t: list(range(t[0], t[0] + t[1]))),
        st.lists(st.integers(0, 250), max_size=12),
    ),
    max_size=12,
)


@settings(max_examples=500, deadline=None)
@given(_GROUPS, st.integers(-1, 260))
def test_runs_hold_what_a_set_holds(groups: list[list[int]], limit: int) -> None:
    runs, plain = LineRuns(), set()
    for group in groups:
        runs.update(group)
        plain.update(group)
        assert list(runs) == sorted(plain)
    assert len(runs) == len(plain)
    for number in range(-2, 262):
        assert (number in runs) == (number in plain)
    below = runs.below(limit)
    assert list(below) == sorted(n for n in plain if n < limit)
    assert all((n in below) == (n in plain and n < limit) for n in range(-2, 262))
    assert runs == LineRuns(plain) and (runs == LineRuns(plain | {300})) is False


def test_runs_merge_into_as_few_as_the_numbers_allow() -> None:
    runs = LineRuns([5, 6, 7])
    runs.update([9, 10])
    runs.update([8])  # fills the gap: one run
    runs.update([1, 2, 3, 3, 2])
    runs.update([4])  # touches both sides
    runs.update([20, 22, 21])
    assert repr(runs) == "LineRuns([(1, 11), (20, 23)])"
    runs.update(range(0, 30))  # over everything
    assert repr(runs) == "LineRuns([(0, 30)])"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10**9)), max_size=40), st.integers(-1, 101))
def test_map_holds_what_a_dict_holds(items: list[tuple[int, int]], limit: int) -> None:
    mapped, plain = LineMap(), {}
    for line, value in items:
        mapped[line] = value
        plain[line] = value
    assert sorted(mapped) == list(mapped) == sorted(plain)
    assert len(mapped) == len(plain) and dict(mapped.items()) == plain and mapped == plain
    for line in range(-1, 102):
        assert (line in mapped) == (line in plain)
        assert mapped.get(line) == plain.get(line)
    below = mapped.below(limit)
    assert dict(below.items()) == {k: v for k, v in plain.items() if k < limit}
    assert below == LineMap(sorted((k, v) for k, v in plain.items() if k < limit))


def _plain_records(scan: Scan) -> tuple[set[int], set[int], dict[int, int]]:
    consumed = {n for tb in scan.tracebacks for n in tb.lines}
    exception_lines = {e.line for tb in scan.tracebacks for e in tb.chain}
    return consumed, exception_lines, dict(scan.offsets.items())


def test_scan_records_are_the_tracebacks_lines_on_the_corpus() -> None:
    for path in LOGS:
        index = LogIndex(read_log(path))
        scan = scan_lines(index, CATALOG)
        consumed, exception_lines, offsets = _plain_records(scan)
        assert set(scan.consumed) == consumed, path.name
        assert set(scan.exception_lines) == exception_lines
        assert sorted(offsets) == sorted(scan.lines)
        assert all(index.line_start(n) == offset for n, offset in offsets.items())
        middle = sorted(scan.lines)[len(scan.lines) // 2] if scan.lines else 0
        cut = truncate_scan(scan, middle)
        # (A traceback kept, which started before the cut, keeps the lines it read after it.)
        kept = [tb for tb in scan.tracebacks if tb.header_line < middle and not tb.open]
        assert set(cut.consumed) == {n for n in consumed if n < middle} | {n for tb in kept for n in tb.lines}
        assert set(cut.exception_lines) == {n for n in exception_lines if n < middle} | {
            e.line for tb in kept for e in tb.chain
        }
        assert dict(cut.offsets.items()) == {n: o for n, o in offsets.items() if n < middle}


_REQUEST_ERROR = (
    "(APIServer pid=1) ERROR 10-03 21:00:{s:02d} [serving_chat.py:245] Error in preprocessing prompt inputs\n"
    "(APIServer pid=1) ERROR 10-03 21:00:{s:02d} [serving_chat.py:245] Traceback (most recent call last):\n"
    '(APIServer pid=1) ERROR 10-03 21:00:{s:02d} [serving_chat.py:245]   File "/v/serving_chat.py", line 229, in f\n'
    "(APIServer pid=1) ERROR 10-03 21:00:{s:02d} [serving_chat.py:245]     raise ValueError(n)\n"
    "(APIServer pid=1) ERROR 10-03 21:00:{s:02d} [serving_chat.py:245] ValueError: request {n} is too long\n"
    "(APIServer pid=1) INFO 10-03 21:00:{s:02d} [logger.py:1] Received request {n}\n"
)


def test_a_log_of_logged_tracebacks_keeps_one_run_a_traceback() -> None:
    text = "".join(_REQUEST_ERROR.format(s=n % 60, n=n) for n in range(3000))
    scan = scan_lines(LogIndex(text), CATALOG)
    consumed, exception_lines, _ = _plain_records(scan)
    assert len(scan.tracebacks) == 3000
    assert set(scan.consumed) == consumed and set(scan.exception_lines) == exception_lines
    held = sum(sys.getsizeof(a) for a in (scan.consumed._starts, scan.consumed._ends))
    assert len(scan.consumed._starts) == 3000  # one run a traceback
    assert held * 4 < sys.getsizeof(consumed)


# -- candidate lines: kept parsed when looked up again, else parsed again on demand --------------
def _scan_keeping_all(index: LogIndex) -> dict[int, object]:
    """The specification: every candidate line as the scan parsed it (nothing parsed again)."""
    with pytest.MonkeyPatch.context() as patch:
        original = CandidateLines.add
        patch.setattr(CandidateLines, "add", lambda self, line, looked_up: original(self, line, True))
        scan = scan_lines(index, CATALOG)
        return {n: scan.lines[n] for n in scan.lines}


def _assert_lines_as_parsed(index: LogIndex, recent: int = 1) -> Scan:
    """Every candidate line read from a scan that keeps `recent` others parsed is as parsed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CandidateLines, "_RECENT", recent)
        scan = scan_lines(index, CATALOG)
    wanted = _scan_keeping_all(index)
    assert list(scan.lines) == list(wanted) == list(scan.offsets)
    for number in reversed(list(wanted)):  # (the oldest first or last: the recent ones are kept)
        assert scan.lines[number] == wanted[number], number
        assert scan.lines.get(number) == wanted[number]
    assert scan.lines.get(-1) is None and (10**9 in scan.lines) is False
    middle = list(wanted)[len(wanted) // 2] if wanted else 0
    cut = truncate_scan(scan, middle)
    cut.lines.bind(index, cut.offsets)  # (as the next scan_lines does)
    assert {n: cut.lines[n] for n in cut.lines} == {n: v for n, v in wanted.items() if n < middle}
    return scan


@pytest.mark.parametrize("path", LOGS[::3], ids=lambda p: p.name)
def test_corpus_candidate_lines_read_again_are_as_parsed(path: Path) -> None:
    data = path.read_bytes()
    for source in (data, data.decode("utf-8", "replace")):
        for recent in (0, 1, 64):
            _assert_lines_as_parsed(LogIndex(source), recent)


_LINES = [
    "(APIServer pid=1) ERROR 10-03 21:00:01 [serving_chat.py:245] Error in preprocessing prompt inputs",
    "(APIServer pid=1) ERROR 10-03 21:00:01 [serving_chat.py:245] Traceback (most recent call last):",
    '(APIServer pid=1) ERROR 10-03 21:00:01 [serving_chat.py:245]   File "/v/x.py", line 2, in f',
    "(APIServer pid=1) ERROR 10-03 21:00:01 [serving_chat.py:245]     raise ValueError('Error')",
    "(APIServer pid=1) ERROR 10-03 21:00:01 [serving_chat.py:245] ValueError: too long",
    "ERROR 10-03 21:00:02 [core.py:1] EngineCore failed to start.",
    "RuntimeError: Engine core initialization failed. See root cause above.",
    "Traceback (most recent call last):",
    '  File "a.py", line 1, in <module>',
    "KeyboardInterrupt",
    "INFO 10-03 21:00:03 [api_server.py:1] vLLM API server version 0.11.0",
    "(EngineCore_DP0 pid=7) ERROR 10-03 21:00:04 [core.py:2] Error " + "y" * 20_050 + " past the cut",
    "\x1b[1;36m(EngineCore_DP0 pid=7)\x1b[0;0m ERROR 10-03 21:00:05 [core.py:3] Error coloured",
    "WARNING 10-03 21:00:06 [x.py:1] Exception in callback: invalid \udcff bytes",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=120), st.sampled_from(["\n", "\r\n"]), st.integers(0, 3))
def test_generated_candidate_lines_read_again_are_as_parsed(
    lines: list[str], newline: str, recent: int
) -> None:
    """Logged and raw tracebacks, events of every kind, lines cut by the scan, colour codes and
    undecodable bytes, more candidates than the recent ones kept."""
    text = newline.join(lines) + newline
    for source in (
        text.encode("utf-8", "surrogateescape"),
        text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
    ):
        _assert_lines_as_parsed(LogIndex(source), recent)


def test_a_log_of_logged_tracebacks_keeps_none_of_their_lines_parsed() -> None:
    """Of a traceback's three candidate lines (the logged error, its header, its exception line)
    none stays parsed but the few recent ones: what the analysis asks of the header (its runtime
    prefix) the traceback keeps."""
    text = "".join(_REQUEST_ERROR.format(s=n % 60, n=n) for n in range(3000))
    scan = _assert_lines_as_parsed(LogIndex(text), CandidateLines._RECENT)
    assert len(scan.lines) == 3 * 3000
    assert len(scan.lines._kept) + len(scan.lines._recent) <= CandidateLines._RECENT
    assert all(tb.preamble_record is None for tb in scan.tracebacks)  # (the scan's, read again)


@pytest.mark.parametrize(("prefix", "outer"), [("", None), ("api-1  | ", "api-1"), ("vllm-2  | ", "vllm-2")])
def test_a_traceback_keeps_its_headers_runtime_prefix(prefix: str, outer: str | None) -> None:
    """The runtime prefix (a compose service's) of each traceback's header, as its line parses,
    is on the traceback: the analysis asks it of every error's run."""
    lines = [line for n in range(50) for line in _REQUEST_ERROR.format(s=n, n=n).splitlines()]
    scan = scan_lines(LogIndex("".join(prefix + line + "\n" for line in lines)), CATALOG)
    assert len(scan.tracebacks) == 50
    assert all(tb.outer == scan.lines[tb.header_line].outer == outer for tb in scan.tracebacks)


def test_a_grown_log_reads_its_lines_as_a_fresh_scan_does() -> None:
    """A log read again as it grows, cut inside a line (the line read again differs): every
    candidate line reads as a fresh scan of the whole text parses it."""
    from vllm_log_lsp.core.analyze import Analyzer

    text = "".join(_REQUEST_ERROR.format(s=n % 60, n=n) for n in range(40))
    text = text.replace("Received request 39", "EngineCore failed to start. Received request 39")
    for cut in (len(text) - 30, len(text) - 200, len(text) // 2 + 11):
        analyzer = Analyzer(CATALOG)
        analyzer.analyze(text[:cut])
        analyzer.analyze(text)
        assert analyzer.reused_offset > 0
        scan = analyzer._scan
        assert scan is not None
        fresh = _scan_keeping_all(LogIndex(text))
        assert {n: scan.lines[n] for n in scan.lines} == fresh


# -- the sets a scan keeps while it runs answer as its compact records do -------------------------
def _asking_the_records(index: LogIndex, scan: Scan | None = None, begin: int = 0) -> Scan:
    """The specification: every candidate asked of the compact records themselves."""
    with pytest.MonkeyPatch.context() as patch:
        original = _ReadLines.__init__

        def records_only(self: _ReadLines, scan: Scan, *more: object) -> None:
            original(self, scan, *more)  # type: ignore[arg-type]
            self.before = 1 << 60

        patch.setattr(_ReadLines, "__init__", records_only)
        return scan_lines(index, CATALOG, scan, begin)


@pytest.mark.parametrize("path", LOGS[1::4], ids=lambda p: p.name)
def test_the_scans_sets_answer_as_its_records(path: Path) -> None:
    """A scan, and a scan read again from a point before the end of tracebacks it kept (the
    records then hold lines the new reading meets)."""
    index = LogIndex(read_log(path))
    assert scan_values(scan_lines(index, CATALOG)) == scan_values(_asking_the_records(index))
    whole = scan_lines(index, CATALOG)
    for tb in whole.tracebacks[:3]:
        kept = truncate_scan(whole, tb.last_line + 1)
        begin = index.line_start(tb.header_line + 1)  # (inside the traceback: its lines are kept)
        again = scan_lines(index, CATALOG, truncate_scan(whole, tb.last_line + 1), begin)
        assert scan_values(again) == scan_values(_asking_the_records(index, kept, begin))


def test_candidate_lines_read_the_same_in_a_repr() -> None:
    """A scan's repr names what it holds, not where (two equal scans read the same)."""
    text = "".join(_REQUEST_ERROR.format(s=n, n=n) for n in range(5))
    one, two = scan_lines(LogIndex(text), CATALOG), scan_lines(LogIndex(text), CATALOG)
    assert repr(one.lines) == repr(two.lines) == "CandidateLines(15 lines, 15 parsed)"
