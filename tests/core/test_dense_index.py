"""The language server's line index: a checkpoint every few KB instead of a full line table.

`LogIndex.following` counts line breaks at C speed and keeps a checkpoint (offset, line) at the
first line start past each block, so any line is read by number after a short walk. Whatever the
text (`\\n`, `\\r\\n`, bare `\\r`, lines longer or much shorter than a block) and however it grew,
it must number lines, find their starts and read their texts exactly as the full line table does.
Blocks are made tiny here so that every case crosses many checkpoints.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from support import lsp_lines
from vllm_log_lsp.core.text import LogIndex

pieces = st.sampled_from(["a", "bb", "é模", "😀", " ", "\n", "\r", "\r\n", "\n\n", "x" * 40])
texts = st.lists(pieces, max_size=60).map("".join)
SOME = settings(max_examples=300, deadline=None)


class TinyBlocks(LogIndex):
    """Checkpoints every few characters (the shipped block is 8 K)."""

    _DENSE_BLOCK = 7
    _DENSE_LINES = 2
    _DENSE_MIN = 1


def assert_reads_as_the_full_table(index: LogIndex, text: str, step: int = 1) -> None:
    lines = lsp_lines(text)
    table = LogIndex(text)
    table.line_start(len(lines))  # (far from any checkpoint: builds the full table)
    assert index.has_line_table
    assert index.line_count == len(lines) == table.line_count
    for number, expected in enumerate(lines):
        assert index.line_text(number) == expected
        assert index.line_start(number) == table.line_start(number)
    assert index.line_text(len(lines)) == index.line_text(-1) == ""
    assert index.line_start(len(lines) + 5) == table.line_start(len(lines) - 1)  # clamped
    for offset in [*range(0, len(text), step), len(text)]:
        assert index.line_of(offset) == table.line_of(offset)


@SOME
@given(texts, st.booleans())
def test_a_dense_index_reads_as_the_full_table(text: str, as_bytes: bool) -> None:
    index = TinyBlocks.following(text, None)
    assert_reads_as_the_full_table(index, text)
    if as_bytes:  # a file's bytes: offsets are byte offsets, lines come out as str
        data = text.encode("utf-8")
        dense = TinyBlocks.following(data, None)
        table = LogIndex(data)
        assert dense.line_count == table.line_count
        for number in range(dense.line_count):
            assert dense.line_start(number) == table.line_start(number)
            assert dense.line_text(number) == table.line_text(number)


@SOME
@given(texts, st.lists(texts, min_size=1, max_size=5), st.booleans())
def test_a_grown_dense_index_reads_as_a_fresh_one(text: str, appends: list[str], told: bool) -> None:
    """Appends keep the old checkpoints and count only what was appended; a `\\r` at the old end
    may turn into half of a `\\r\\n`, and the old last line may go on."""
    index = TinyBlocks.following(text, None)
    for appended in appends:
        grown = text + appended
        index = TinyBlocks.following(grown, index, grown=True if told else None)
        text = grown
        assert_reads_as_the_full_table(index, text)


def test_the_shipped_block_on_a_long_log() -> None:
    """Lines longer than a block, a run of empty lines, and ordinary ones, at the real size."""
    text = ("x" * 20_000 + "\n") * 3 + "\n" * 5_000 + "".join(f"line {n}\r\n" for n in range(20_000))
    index = LogIndex.following(text, None)
    assert_reads_as_the_full_table(index, text, step=97)
    grown = LogIndex.following(text + "tail\rmore", index, grown=True)
    assert grown.line_count == index.line_count + 1
    assert grown.line_text(grown.line_count - 2) == "tail"
    assert grown.line_text(grown.line_count - 1) == "more"


def test_a_wrong_or_unknown_previous_index_is_not_reused() -> None:
    """A previous index that is not dense, or whose text the new one does not extend, is not
    taken over: the new index is counted afresh."""
    old = "a\nb\nc\n"
    assert_reads_as_the_full_table(
        LogIndex.following("z\n" + old, LogIndex.following(old, None)), "z\n" + old
    )
    assert_reads_as_the_full_table(LogIndex.following(old + "d", LogIndex(old)), old + "d")


@given(
    text=st.lists(st.sampled_from(["a", "é", "\n", "\r", "\r\n"]), max_size=60).map("".join),
    block=st.integers(1, 9),
    cuts=st.lists(st.integers(0, 200), max_size=6),
)
@settings(max_examples=200, deadline=None)
def test_a_mapped_file_counts_line_breaks_a_block_at_a_time(text: str, block: int, cuts: list[int]) -> None:
    """A mapped file's lines are counted in copies of at most a block (`mmap` has no count):
    every offset gets the number the whole text gives it, even when a `\\r\\n` falls between two
    blocks or at the end of the range counted."""
    import mmap
    import tempfile

    from vllm_log_lsp.core import text as text_mod

    data = text.encode("utf-8")
    expected = LogIndex(data)
    with tempfile.TemporaryFile() as handle:
        handle.write(data or b"x")
        handle.flush()
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if not data:
                return
            saved = text_mod._COUNT_BLOCK
            text_mod._COUNT_BLOCK = block
            try:
                index = LogIndex(mapped)
                offsets = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
                for offset in offsets:
                    assert index.line_of(offset) == expected.line_of(offset)
                for start, end in itertools.pairwise(offsets):
                    assert LogIndex(mapped)._breaks(start, end) == LogIndex(data)._breaks(start, end)
            finally:
                text_mod._COUNT_BLOCK = saved
