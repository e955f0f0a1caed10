"""A `GrowingText` grows in place when nothing else reads it, and its indexes follow.

An editor's document of a tailed log only grows. Concatenating a 100 MB `str` copies it whole
(and faults in as much fresh memory): that was most of an append's cost in the language server.
CPython grows an unshared `str` in place; the indexes over the text let go of it for that moment
and are then extended over the appended part. Whatever happens, each index must answer exactly
as a fresh index of the text it now holds, and a text someone else still holds is never changed
under them.
"""

from __future__ import annotations

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core.linebreaks import NewlineLines
from vllm_log_lsp.core.text import GrowingText, LogIndex

pieces = st.lists(
    st.sampled_from(["a", "é", "\n", "\r", "\r\n", "x\n", "😀", "\x1b[0m", "line\n"]), max_size=10
).map("".join)


def assert_indexes(index: LogIndex, text: str) -> None:
    """`index` answers as a fresh index of `text` of the same kind does, everywhere (asked in
    the same order: a plain index learns checkpoints as it is asked)."""
    fresh = LogIndex.following(text, None) if index.has_line_table else LogIndex(text)
    assert index.text == text
    assert (index.line_count, index.has_cr, index.has_escape) == (
        fresh.line_count,
        fresh.has_cr,
        fresh.has_escape,
    )
    for offset in range(len(text) + 1):
        assert index.line_of(offset) == fresh.line_of(offset), offset
    for line in range(fresh.line_count):
        assert index.line_start(line) == fresh.line_start(line), line
        assert index.line_text(line) == fresh.line_text(line), line


def assert_maps(lines: NewlineLines, text: str) -> None:
    """`lines` maps positions as a fresh `NewlineLines` of `text` does."""
    fresh, index = NewlineLines(text), LogIndex(text)
    assert lines.text == text and lines.identity == fresh.identity
    for core_line in range(index.line_count):
        width = len(index.line_text(core_line))
        for column in {0, width // 2, width}:
            assert lines.position(core_line, column) == fresh.position(core_line, column)
    for line in range(text.count("\n") + 1):
        assert lines.core_line_range(line) == fresh.core_line_range(line)
        assert lines.core_position(line, 1) == fresh.core_position(line, 1)


@settings(max_examples=300, deadline=None)
@given(pieces, st.lists(st.tuples(pieces, st.booleans(), st.booleans()), max_size=6))
def test_indexes_follow_appends(start: str, appends: list[tuple[str, bool, bool]]) -> None:
    """Dense and plain indexes over a growing text, appends in place or copied, a reference
    held or not: an index that follows the text indexes it as it is; one left behind (the text
    was copied away from it) still indexes the text it had."""
    document = GrowingText(start)
    dense, plain = LogIndex.following(document, None), LogIndex(document)
    lines = dense.newline_lines()  # (the `\n`-only numbering a Neovim client is served in)
    for appended, exclusive, hold in appends:
        held = document.text if hold else None
        before = document.text
        document.append(appended, exclusive=exclusive)
        assert document.text == before + appended
        if held is not None:
            assert held == before  # a text someone holds never changes under them
        del before, held
        for index in (dense, plain):
            assert_indexes(index, index.text)
            assert document.text.startswith(index.text)
        assert_maps(lines, lines.text)
        assert lines.text is dense.text  # (they follow the document together, or stay behind)
        # An index built now indexes the text as it is.
        assert_indexes(LogIndex.following(document, dense), document.text)


def test_an_unshared_text_grows_in_place() -> None:
    """Appending 1 KB to a 40 MB document with its index and `\n`-only line map adds about
    1 KB to the memory in use at its peak, not another 40 MB (the text is not copied), and both
    follow: the index is the one the next analysis uses."""
    line = "(APIServer pid=1) INFO 10-03 21:20:01 [loggers.py:123] Avg prompt throughput: 1.0 …\n"
    tracemalloc.start()
    try:
        bar = "Loading shards:  50%|█████     | 1/2\rLoading shards: 100%|██████████| 2/2\n"
        document = GrowingText(bar + line * (20_000_000 // len(line)))
        index = LogIndex.following(document, None)
        newline_lines = index.newline_lines()  # (a Neovim client's numbering, kept too)
        lines = index.line_count
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        document.append(line * 12, exclusive=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - before < 1_000_000, f"the append needed {peak - before} bytes more: the text was copied"
    assert index.text is document.text and index.line_count == lines + 12
    assert newline_lines.text is document.text and newline_lines.line(lines + 11) == lines + 10
    assert LogIndex.following(document, index) is index


def test_a_text_read_elsewhere_is_copied_not_changed() -> None:
    """A reference held elsewhere (a worker still analysing the text) keeps it from growing in
    place: the append copies, and an index attached to the text still answers exactly."""
    document = GrowingText("first\n" * 1000)
    index = LogIndex.following(document, None)
    held = document.text
    document.append("second\n", exclusive=True)
    assert held == "first\n" * 1000
    assert document.text == held + "second\n"
    assert_indexes(index, index.text)


def test_without_exclusive_access_the_readers_keep_their_text() -> None:
    """Not told that it is alone (a worker thread may read the index), the append copies and
    leaves every reader as it was: the next analysis builds a new index."""
    document = GrowingText("a\nb\n")
    index = LogIndex.following(document, None)
    document.append("c\n")
    assert index.text == "a\nb\n" and index.line_count == 3
    following = LogIndex.following(document, index, grown=True)
    assert following is not index
    assert_indexes(following, "a\nb\nc\n")
