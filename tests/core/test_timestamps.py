"""A line's time read by `Timestamps` (a block of lines above at a time, only the lines that may
hold a time parsed, each line read once for many queries) equals the plain walk: the line's own
timestamp, else its writer's last one within `LOOK_BACK_LINES` lines above, line by line.

Checked on the corpus (every tenth line and every root and symptom line, over `str`, `bytes` and
a memory map) and on generated texts of timestamped lines of several writers, traceback lines
without times, colour codes, long lines, invalid UTF-8 and every kind of line break, read with
blocks short enough that a line spans several."""

from __future__ import annotations

import mmap
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, healthy_logs, read_log
from vllm_log_lsp.core import timestamps
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.text import LogIndex
from vllm_log_lsp.core.timestamps import LOOK_BACK_LINES, Timestamps, line_timestamp, timestamp_at


def plain_timestamp(
    index: LogIndex, line: int, look_back: int = LOOK_BACK_LINES, run_starts: tuple[int, ...] = ()
) -> str | None:
    """The specification: the line's own time, else a walk up, line by line, not above the start
    of the line's run (the last of `run_starts` at or above it whose runtime prefix is the
    line's, or which has none; any, for a line with none)."""
    text = index.line_text(line)
    if (own := line_timestamp(text)) is not None:
        return own
    parsed = parse_line(line, text)
    outer = parsed.outer
    starts = [
        n
        for n in run_starts
        if n <= line and (not outer or not (o := parse_line(n, index.line_text(n)).outer) or o == outer)
    ]
    floor = max(starts, default=0)
    above = index.iter_lines_back(index.line_start(line), line, min(look_back, line - floor))
    stamped = ((time, n, raw) for n, raw in above if (time := line_timestamp(raw)) is not None)
    return next((time for time, n, raw in stamped if parse_line(n, raw).stream == parsed.stream), None)


def _indexes(data: bytes, tmp_path: Path) -> list[LogIndex]:
    path = tmp_path / "log"
    path.write_bytes(data)
    handle = open(path, "rb")  # noqa: SIM115 - the map outlives this function
    indexes = [LogIndex(data.decode("utf-8", "replace")), LogIndex(data)]
    if data:
        indexes.append(LogIndex(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)))
    return indexes


CORPUS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log"), *healthy_logs()])


def test_the_corpus_has_times_read_from_lines_above() -> None:
    """Not vacuous: some roots or symptoms carry no time of their own."""
    misses = 0
    for path in CORPUS[:20]:
        index = LogIndex(path.read_bytes())
        for finding in analyze(path.read_bytes()).findings:
            lines = [finding.line, *(s.line for s in finding.symptoms)]
            misses += sum(line_timestamp(index.line_text(n)) is None for n in lines)
    assert misses > 5


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_times_equal_the_plain_walk(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    analysis = analyze(data)
    starts = analysis.run_starts
    for index in _indexes(data, tmp_path):
        wanted = {n for f in analysis.findings for n in (f.line, *(s.line for s in f.symptoms))}
        wanted.update(range(0, index.line_count, 10))
        times = Timestamps(index, starts)
        for line in sorted(wanted, reverse=True):  # later lines first: the memo is then used
            assert times.at(line) == plain_timestamp(index, line, run_starts=starts), line
            assert timestamp_at(index, line, starts) == times.at(line)
        forward = Timestamps(index, starts)  # earlier lines first: a query stops at the one above it
        for line in sorted(wanted):
            assert forward.at(line) == plain_timestamp(index, line, run_starts=starts), line


PIECES = [
    "(EngineCore_DP0 pid=7) ERROR 10-03 21:22:40 [core.py:1] EngineCore failed to start.",
    "(APIServer pid=1) INFO 10-03 21:22:59 [api.py:1] Waiting",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.",
    "INFO 10-03 21:23:01 [api_server.py:1] vLLM API server version 0.11.0",
    "2025-10-03T21:22:07.000001Z (EngineCore_DP0 pid=7) Traceback (most recent call last):",
    "(EngineCore_DP0 pid=7) Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7)   File "x.py", line 1, in f',
    "ValueError: No available memory for the cache blocks.",
    "\x1b[1;36m(EngineCore_DP0 pid=7)\x1b[0;0m INFO 10-03 21:24:00 [core.py:2] colour",
    "[0;36m(APIServer pid=1)[0;0m ERROR 10-03 21:24:01 [x.py:3] lost escape",
    "svc-1  | INFO 10-03 21:25:00 [core.py:4] compose",
    # Writers whose prefixes hold another's: `pid=1` in `pid=10`, a service in a longer one.
    "(APIServer pid=10) INFO 10-03 21:22:58 [api.py:1] another process",
    "svc-1  | (APIServer pid=1) ERROR 10-03 21:25:02 [api.py:2] compose and process",
    "svc-12  | (APIServer pid=1) INFO 10-03 21:25:03 [api.py:2] another service",
    "svc-1  | (APIServer pid=1) ValueError: raw, under compose",
    # A colour code inside a prefix splits it in the raw text.
    "\x1b[36m(APIServer \x1b[1mpid=1)\x1b[0m INFO 10-03 21:24:05 [x.py:6] split prefix",
    "(APIServer pid=1) RuntimeError: under the split prefix",
    "(APIServer pid=1) INFO 10-03 21:\x1b[1m27:00 [x.py:5] a colour code inside the time",
    "é" * 30 + " 12:00:00 not a header",
    "x" * 300 + " INFO 10-03 21:26:00 [late.py:1] too far in",
    "",
]
# A log's line breaks: `\n` (most logs), `\r\n`, or any mix with bare `\r` (a progress bar).
BREAKS = {"unix": ["\n"], "windows": ["\r\n"], "mixed": ["\n", "\r\n", "\r"]}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.tuples(st.sampled_from(PIECES), st.integers(0, 2)), min_size=1, max_size=40),
    breaks=st.sampled_from(sorted(BREAKS)),
    invalid=st.booleans(),
    block=st.sampled_from([1, 7, 64, 1 << 13]),
    look_back=st.sampled_from([2, 5, LOOK_BACK_LINES]),
    order=st.sampled_from(["backward", "forward", "shuffled"]),
    data_=st.data(),
)
def test_generated_times_equal_the_plain_walk(
    lines: list[tuple[str, int]],
    breaks: str,
    invalid: bool,
    block: int,
    look_back: int,
    order: str,
    data_: st.DataObject,
    tmp_path: Path,
) -> None:
    """In every order of queries: a query stops at an earlier one of the same writer above it
    (forward), or at none (backward); either way the answer is the walk's."""
    kinds = BREAKS[breaks]
    data = "".join(text + kinds[k % len(kinds)] for text, k in lines).encode("utf-8")
    if invalid:
        data = data.replace(b"ValueError", b"Value\xe2\x82Error")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LogIndex, "_BLOCK", block)
        patch.setattr(timestamps, "_BLOCK", block)
        patch.setattr(timestamps, "LOOK_BACK_LINES", look_back)
        for index in _indexes(data, tmp_path):
            run_starts = tuple(data_.draw(st.lists(st.integers(0, index.line_count), max_size=3)))
            times = Timestamps(index, run_starts)
            queries = list(range(index.line_count))
            if order == "backward":
                queries.reverse()
            elif order == "shuffled":
                queries = data_.draw(st.permutations(queries))
            for line in queries:
                assert times.at(line) == plain_timestamp(index, line, look_back, run_starts), line


@pytest.mark.parametrize("above", PIECES)
def test_every_line_above_every_other_gives_the_plain_walks_time(above: str) -> None:
    """Each pair of lines: the lower one's time comes from the upper one exactly when the walk
    says so (a writer's pieces, split by a colour code or held in another's prefix)."""
    for below in PIECES:
        index = LogIndex(f"{above}\n{below}\n")
        assert Timestamps(index).at(1) == plain_timestamp(index, 1), below


# Patterns a walk looks for: the pre-test of a time (matches overlap, and cross blocks of 7
# bytes), and one whose matches run into each other.
_PATTERNS = [timestamps._MAY_HOLD_TIME, re.compile(r"[0-9]+:?")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.tuples(st.sampled_from(PIECES), st.integers(0, 2)), min_size=1, max_size=40),
    breaks=st.sampled_from(sorted(BREAKS)),
    block=st.sampled_from([1, 7, 64, 1 << 13]),
    limit=st.integers(0, 45),
    needles=st.lists(
        st.sampled_from(["pid=1", "APIServer pid=1", ":", "\x1b", "svc-1", "é", "x", *_PATTERNS]),
        min_size=1,
        max_size=3,
    ),
    data_=st.data(),
)
def test_lines_holding_a_needle_are_those_of_the_walk(
    lines: list[tuple[str, int]],
    breaks: str,
    block: int,
    limit: int,
    needles: list[str | re.Pattern[str]],
    data_: st.DataObject,
    tmp_path: Path,
) -> None:
    """The search backwards for the lines that may answer yields, numbered and in order, exactly
    the lines of the plain walk above that hold one of the needles (across blocks shorter than a
    line, at the window's edge, at the start of the text)."""
    kinds = BREAKS[breaks]
    data = "".join(text + kinds[k % len(kinds)] for text, k in lines).encode("utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timestamps, "_BLOCK", block)
        for index in _indexes(data, tmp_path):
            line = data_.draw(st.integers(0, index.line_count - 1))
            start = index.line_start(line)
            walk = [
                (n, t)
                for n, t in index.iter_lines_back(start, line, limit)
                if any(x in t if isinstance(x, str) else x.search(t) for x in needles)
            ]
            found = list(Timestamps(index)._lines_back_holding(start, line, limit, tuple(needles)))
            assert found == walk


_TIME_PIECES = [
    "2025-10-03T21:22:07.000001Z ",
    "2025-10-03 21:22:07,123 ",
    "INFO 10-03 21:22:40 [core.py:1] ",
    "ERROR 10-03 21:22:40.5 [x.py:2] ",
    "(APIServer pid=1) ",
    "svc-1  | ",
    "\x1b[1;36m",
    "\x1b[0m",
    "[0;36m(",
    "INFO 10-03 ",
    "2025-10-03T",
    "21:",
    "22",
    ":",
    "07",
    "22:40",
    " [core.py:1] split",
    "\x1b[1m",
    " ",
    "x" * 60,
    "é",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_TIME_PIECES), max_size=10))
def test_a_line_with_a_time_passes_the_pre_test(pieces: list[str]) -> None:
    """The cheap test a line passes before it is read for a time never turns one away: a time
    written whole, split by colour codes, after codes that lost their ESC, past long prefixes."""
    text = "".join(pieces)
    if line_timestamp(text) is not None:
        assert timestamps._may_hold_time(text), text


@pytest.mark.parametrize(
    "text",
    [
        "INFO 10-03 21:\x1b[1m22:40 [core.py:1] a code inside the time",
        "\x1b[32mINFO\x1b[0m 10-03 21:22\x1b[0m:40 [core.py:1] codes around and inside",
        "2025-10-03T21\x1b[2m:22:07Z raw",
        "[0;36m(APIServer pid=1)[0;0m ERROR 10-03 21:24:01 [x.py:3] lost escape",
    ],
)
def test_a_time_split_by_colour_codes_passes_the_pre_test(text: str) -> None:
    assert line_timestamp(text) is not None
    assert timestamps._may_hold_time(text)


def test_corpus_lines_with_a_time_pass_the_pre_test() -> None:
    timed = 0
    for path in CORPUS:
        for raw in read_log(path).splitlines():
            if line_timestamp(raw) is not None:
                timed += 1
                assert timestamps._may_hold_time(raw), raw
    assert timed > 1000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3), st.text(max_size=20))
def test_a_lines_stream_is_its_parses(pieces: list[str], rest: str) -> None:
    """`line_stream` (asked of each line above a root whose writer has no text of its own) is
    the stream `parse_line` gives, whatever the prefixes, colour codes and text."""
    from vllm_log_lsp.core.lines import line_stream

    for text in (*pieces, "".join(pieces) + rest, rest + pieces[0]):
        assert line_stream(text) == parse_line(0, text).stream, text


def test_corpus_lines_streams_are_their_parses() -> None:
    from vllm_log_lsp.core.lines import line_stream

    for path in CORPUS[::3]:
        for text in path.read_text(encoding="utf-8", errors="replace").splitlines()[:3000]:
            assert line_stream(text) == parse_line(0, text).stream, (path.name, text)


def test_a_time_is_not_taken_from_a_run_before_the_lines_own() -> None:
    """A restarted service's earlier run was another process: a raw traceback's line of the new
    run takes no time from it, and the JSON report says none rather than the old run's."""
    run = [
        "INFO 10-03 21:{minute}:00 api_server.py:1] vLLM API server version 0.6.3",
        "Traceback (most recent call last):",
        '  File "/x/vllm/engine/llm_engine.py", line 1, in step',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    text = "".join(line.format(minute=10) + "\n" for line in run)
    text += "".join(line.format(minute=20) + "\n" for line in run[1:])  # (a run with no time of its own)
    text += "".join(line.format(minute=30) + "\n" for line in run)
    index = LogIndex(text)
    starts = (0, 4, 7)
    times = Timestamps(index, starts)
    assert times.at(3) == "10-03 21:10:00"  # (its own run's banner)
    assert times.at(6) is None  # (the run before it is not its)
    assert times.at(10) == "10-03 21:30:00"
    assert Timestamps(index).at(6) == "10-03 21:10:00"  # (without runs: the writer's last time)
