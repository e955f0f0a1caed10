"""A large tool output's rows are read as they are asked for (`prefilter.ToolRows`), and give
exactly what parsing the whole output gives (`parse_rows`, cut at the text's length by
`_within`): from the start, from any offset (a bisection in the output), as checkpoints; an
output with a line that is not a row is refused; a real rg run over a log whose every line is a
candidate hands the analysis such rows, with the same answer as the rows parsed whole.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import unavailable
from vllm_log_lsp.core import prefilter
from vllm_log_lsp.core.prefilter import ToolRows, _within, parse_rows, search_tool


def output_of(rows: list[tuple[int, int]], texts: list[bytes]) -> bytes:
    return b"".join(
        b"%d:%d:%s\n" % (number + 1, start, text) for (start, number), text in zip(rows, texts, strict=True)
    )


@st.composite
def tool_outputs(draw) -> tuple[bytes, list[tuple[int, int]]]:
    gaps = draw(st.lists(st.integers(1, 500), min_size=0, max_size=60))
    rows, start, number = [], 0, 0
    for gap in gaps:
        start += gap
        number += draw(st.integers(1, 3))
        rows.append((start, number))
    texts = [draw(st.sampled_from([b"", b"[Omitted long matching line]", b"x", b"1:2:3"])) for _ in rows]
    return output_of(rows, texts), rows


@settings(max_examples=200, deadline=None)
@given(data=tool_outputs(), offset=st.integers(-5, 40_000), limit=st.integers(0, 40_000))
def test_rows_read_lazily_are_the_rows_parsed_whole(data, offset: int, limit: int) -> None:
    output, rows = data
    assert parse_rows(output) == rows
    lazy = ToolRows.of(output, limit) if output else None
    if not output:
        return
    assert lazy is not None
    whole = _within(rows, limit)
    assert list(lazy) == whole
    assert lazy == whole
    assert list(lazy.from_offset(offset)) == [row for row in whole if row[0] >= offset]
    checkpoints = lazy.checkpoints(every=64)
    assert checkpoints == sorted(set(checkpoints))
    assert set(checkpoints) <= set(whole)


@pytest.mark.parametrize(
    "output",
    [b"1:0:a\nnot a row\n2:9:b\n", b"x1:0:a\n", b"1:0:a\n2:9:b", b"1:0:a\n\n2:9:b\n"],
)
def test_an_output_with_a_line_that_is_not_a_row_is_refused(output: bytes) -> None:
    assert ToolRows.of(output, 1 << 30) is None


@pytest.mark.skipif(search_tool(("rg",)) is None, reason="ripgrep is not installed")
def test_a_log_of_candidates_is_searched_into_rows_read_lazily(tmp_path, monkeypatch) -> None:
    from vllm_log_lsp.core.analyze import Analyzer
    from vllm_log_lsp.core.source import open_log
    from vllm_log_lsp.core.text import LogIndex

    rng = random.Random(4)
    lines = [
        f"ERROR 10-03 21:00:{i % 60:02d} [x.py:1] Error number {rng.randint(0, 10**6)}" for i in range(90_000)
    ]
    path = tmp_path / "errors.log"
    path.write_text("\n".join(lines) + "\n")
    made: list[ToolRows] = []
    original = ToolRows.of

    def recording(output: bytes, limit: int) -> ToolRows | None:
        rows = original(output, limit)
        made.extend([rows] if rows is not None else [])
        return rows

    monkeypatch.setattr(prefilter.ToolRows, "of", staticmethod(recording))
    source = open_log(str(path))
    lazy = Analyzer().analyze(source.data, path=source.plain_path)
    assert made and len(made[0]) == len(lines)
    monkeypatch.setattr(prefilter, "LAZY_ROWS", 1 << 62)
    whole = Analyzer().analyze(source.data, path=source.plain_path)
    assert lazy == whole
    assert LogIndex(source.data, source.plain_path).line_of(source.data.rfind(b"Error")) == len(lines) - 1


@pytest.mark.skipif(search_tool(("rg",)) is None, reason="ripgrep is not installed")
def test_rg_reads_a_large_log_without_holding_it(tmp_path) -> None:
    """rg reads the file in blocks, not mapped (a mapped file's pages read stay in its memory,
    the whole file by its end): its peak memory stays far below the file's size."""
    import subprocess
    import sys

    path = tmp_path / "big.log"
    line = b"INFO 10-03 21:00:00 [x.py:1] " + b"y" * 90 + b"\n"
    with open(path, "wb") as handle:
        for _ in range(48):
            handle.write(line * ((1 << 20) // len(line)) + b"ERROR 10-03 21:00:00 [x.py:1] Error\n")
    size_kb = path.stat().st_size // 1024
    code = (
        "import resource, sys\n"
        "from vllm_log_lsp.core import prefilter\n"
        "from vllm_log_lsp.core.source import open_log\n"
        "from vllm_log_lsp.core.text import LogIndex\n"
        "source = open_log(sys.argv[1])\n"
        "found = prefilter.candidate_lines_by_group(LogIndex(source.data, source.plain_path), [['Error']])\n"
        "assert len(found[0]) == 48, found\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, check=True, text=True)
    assert size_kb > 40_000
    assert int(out.stdout) < size_kb // 2  # (mapped: more than the whole file; read: about 15 MB)


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(["a", "bb", "\n", "\r\n", "\r", "é", "x" * 50]), max_size=80),
    picks=st.lists(st.integers(0, 10_000), max_size=30),
    sweep=st.sampled_from([1, 8, 1 << 16]),
    as_bytes=st.booleans(),
)
def test_rows_numbered_by_counting_from_the_last_are_numbered_as_looked_up(
    pieces, picks, sweep: int, as_bytes: bool
) -> None:
    """The pre-filter numbers an unnumbered row by counting the breaks since the row before it
    (when near: `_SWEEP`) instead of looking each up: the same numbers (`\\r\\n`, bare `\\r`,
    rows of two groups, rows already numbered among them)."""
    from vllm_log_lsp.core.text import LogIndex

    text = "".join(pieces)
    data = text.encode() if as_bytes else text
    reference = LogIndex(data)
    starts = sorted({reference.line_start(p % (reference.line_count or 1)) for p in picks})
    expected = [reference.line_of(start) for start in starts]
    index = LogIndex(data)
    one = [(start, None) for start in starts[::2]]
    two = [
        (start, number if at % 3 == 0 else None)
        for at, (start, number) in enumerate(zip(starts, expected, strict=True))
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "_SWEEP", sweep)
        prefilter._number_in_order(index, [one, two])
    assert dict(one) == {start: n for start, n in zip(starts, expected, strict=True) if start in dict(one)}
    assert [number for _, number in two] == expected


# A process that writes rows a few at a time, flushing and pausing between (as rg writes its
# output a buffer at a time while it searches), then exits with the code given.
_WRITER = """
import sys, time
rows, code = [row for row in sys.argv[1].split(";") if row], int(sys.argv[2])
for at, row in enumerate(rows):
    sys.stdout.write(row + "\\n")
    if at % 3 == 2:
        sys.stdout.flush()
        time.sleep(0.01)
sys.stdout.flush()
sys.exit(code)
"""


def _running(rows: list[tuple[int, int]], code: int = 0):
    import os
    import sys

    from vllm_log_lsp.core import early

    if not hasattr(os, "memfd_create"):
        unavailable("in-memory files (memfd_create) are needed", "the tests on Linux, as CI does")
    spec = ";".join(f"{number + 1}:{start}:text" for start, number in rows)
    return early._Process([sys.executable, "-c", _WRITER, spec, str(code)])


ROWS = [(start * 97, start * 3) for start in range(1, 40)]


@pytest.mark.parametrize("limit", [1 << 30, ROWS[20][0]])
def test_rows_read_while_their_search_runs_are_the_rows_it_wrote(limit: int) -> None:
    """`StreamedRows` waits for rows the process has not written yet, and gives the rows of the
    whole output, whether read from the start or from an offset first asked for mid-way."""
    whole = _within(ROWS, limit)
    assert list(prefilter.StreamedRows(_running(ROWS), limit)) == whole
    streamed = prefilter.StreamedRows(_running(ROWS), limit)
    rows = iter(streamed)
    first = [next(rows) for _ in range(4)]
    offset = ROWS[12][0] + 1  # (skipped to while the process still writes)
    assert first + list(streamed.from_offset(offset)) == whole[:4] + [
        row for row in whole if row[0] >= offset
    ]
    assert list(streamed) == whole  # (read again: the rows read are kept)
    assert len(streamed) == len(ROWS)


def test_a_search_that_fails_while_its_rows_are_read_says_so() -> None:
    """rg failing mid-way (exit 2) is not taken for a search that found fewer lines."""
    with pytest.raises(prefilter.SearchFailed):
        list(prefilter.StreamedRows(_running(ROWS, code=2), 1 << 30))
    assert list(prefilter.StreamedRows(_running([], code=1), 1 << 30)) == []  # (1: no line matched)
