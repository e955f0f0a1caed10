"""The lines near a line read a block at a time (`nearby`) are exactly those the line-by-line
walks yield (`LogIndex.iter_lines_back` / `iter_lines_from`): the same numbers and texts, from
every line start, for every limit, over `str`, `bytes` and a memory map, whatever the line breaks
(bare `\\r` included), characters of several bytes and invalid UTF-8, and however the blocks fall
(blocks shorter than a line, a line longer than a block)."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core import nearby
from vllm_log_lsp.core.nearby import lines_before, lines_from
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, block=st.sampled_from([1, 2, 5, 16, 1 << 13]), limit=st.sampled_from([0, 1, 2, 7, 400]))
def test_block_reads_equal_the_line_walks(text: str, block: int, limit: int, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nearby, "BLOCK", block)
        for index in _indexes(text, tmp_path):
            for line in range(index.line_count):
                start = index.line_start(line)
                assert list(lines_before(index, start, line, limit)) == list(
                    index.iter_lines_back(start, line, limit)
                )
                assert list(lines_from(index, start, line, limit)) == list(
                    index.iter_lines_from(start, line, limit)
                )


def test_the_walks_compared_are_not_trivial() -> None:
    index = LogIndex(b"a\nbb\n\nccc\n")
    start = index.line_start(3)
    assert list(lines_before(index, start, 3, 5)) == [(2, ""), (1, "bb"), (0, "a")]
    assert list(lines_from(index, start, 3, 5)) == [(3, "ccc"), (4, "")]
