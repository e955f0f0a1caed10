"""Walking the lines near a line (`LogIndex.iter_lines_back` / `iter_lines_from`) yields what a
plain walk over the line table yields (`line_text` of each number in turn): the same numbers and
texts, from every line start, for every limit, stepping line by line or reading a block at a
time, over `str`, `bytes` and a memory map, whatever the line breaks (bare `\\r` included),
characters of several bytes and invalid UTF-8, and however the blocks fall (blocks shorter than
a line, a line longer than a block)."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core.text import LogIndex

PIECES = ["ab", "x" * 40, "模型", "\x1b[0m", " ", "\n", "\n", "\n", "\r\n", "\r", "\xe2"]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


def _indexes(text: str, tmp_path: Path) -> list[LogIndex]:
    data = text.encode("utf-8").replace("\xe2".encode(), b"\xe2")  # a cut character
    path = tmp_path / "log"
    path.write_bytes(data)
    indexes = [LogIndex(text), LogIndex(data)]
    if data:
        handle = open(path, "rb")  # noqa: SIM115 - the map outlives this function
        indexes.append(LogIndex(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)))
    return indexes


def plain_back(index: LogIndex, line: int, limit: int) -> list[tuple[int, str]]:
    """The specification: the numbers above `line`, nearest first, each line's text by number."""
    return [(n, index.line_text(n)) for n in range(line - 1, max(-1, line - 1 - limit), -1)]


def plain_from(index: LogIndex, line: int, limit: int) -> list[tuple[int, str]]:
    return [(n, index.line_text(n)) for n in range(line, min(index.line_count, line + limit))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=texts,
    block=st.sampled_from([1, 2, 5, 16, 1 << 13]),
    limit=st.sampled_from([0, 1, 2, 7, 9, 400]),
    steps=st.sampled_from([0, 8, 1000]),  # always blocks, the default, always steps
)
def test_walks_equal_the_plain_walk(text: str, block: int, limit: int, steps: int, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LogIndex, "_BLOCK", block)
        patch.setattr(LogIndex, "_STEP_LINES", steps)
        for index in _indexes(text, tmp_path):
            for line in range(index.line_count):
                start = index.line_start(line)
                assert list(index.iter_lines_back(start, line, limit)) == plain_back(index, line, limit)
                assert list(index.iter_lines_from(start, line, limit)) == plain_from(index, line, limit)


@pytest.mark.parametrize("steps", [0, 1000])
def test_the_walks_compared_are_not_trivial(steps: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LogIndex, "_STEP_LINES", steps)
        index = LogIndex(b"a\nbb\n\nccc\n")
        start = index.line_start(3)
        assert list(index.iter_lines_back(start, 3, 5)) == [(2, ""), (1, "bb"), (0, "a")]
        assert list(index.iter_lines_from(start, 3, 5)) == [(3, "ccc"), (4, "")]
