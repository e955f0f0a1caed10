"""Appends keep the document's last line without counting the whole text, and stay exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from support import lsp_lines
from vllm_log_lsp.core.text import GrowingText, LogIndex
from vllm_log_lsp.lsp.positions import ClientLines
from vllm_log_lsp.lsp.textsync import apply_changes, last_line

pieces = st.lists(st.sampled_from(["a", "é", "\n", "\r", "\r\n", "x\n", "😀"]), max_size=12).map("".join)


def at_end(text: str, newline_only: bool) -> types.Position:
    lines = text.split("\n") if newline_only else lsp_lines(text)
    return types.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)


@settings(max_examples=200, deadline=None)
@given(pieces, st.lists(st.tuples(pieces, st.booleans()), max_size=6), st.booleans())
def test_appends_track_the_last_line(text: str, appends: list[tuple[str, bool]], newline_only: bool) -> None:
    """Each append grows the same document (in place or not) and keeps its last line exact."""
    document = GrowingText(text)
    known = last_line(text, newline_only)
    for appended, exclusive in appends:
        end = at_end(text, newline_only)
        change = types.TextDocumentContentChangePartial(range=types.Range(end, end), text=appended)
        edited, known, only_appended = apply_changes(
            document, [change], "utf-16", newline_only, known, exclusive=exclusive
        )
        assert edited is document and document.text == text + appended
        assert known == last_line(document.text, newline_only)
        assert only_appended
        text = document.text


@given(pieces, pieces)
def test_a_range_edit_or_replacement_forgets_the_last_line(text: str, inserted: str) -> None:
    start = types.Position(0, 0)
    edit = types.TextDocumentContentChangePartial(range=types.Range(start, start), text=inserted)
    document = GrowingText(text)
    edited, known, appended = apply_changes(document, [edit], "utf-16", last=last_line(text))
    assert edited.text == inserted + text
    assert known is None or known == last_line(edited.text)
    assert appended == (text == "")  # an insertion at the start is an append only to nothing
    if not appended:  # another edit makes a new document: the old one only ever grows
        assert edited is not document and document.text == text
    whole = types.TextDocumentContentChangeWholeDocument(text=inserted)
    replaced = apply_changes(document, [whole], "utf-16", last=last_line(text))
    assert (replaced.document.text, replaced.last, replaced.appended) == (inserted, None, False)
    assert replaced.document is not document


@given(pieces, pieces, pieces)
def test_an_edit_among_appends_is_not_an_append(text: str, appended: str, inserted: str) -> None:
    """Only when every change of a didChange appended is the old text still the beginning."""
    end = at_end(text, False)
    append = types.TextDocumentContentChangePartial(range=types.Range(end, end), text=appended)
    start = types.Position(0, 0)
    edit = types.TextDocumentContentChangePartial(range=types.Range(start, start), text=inserted)
    edited, _, only_appended = apply_changes(GrowingText(text), [append, edit], "utf-16")
    assert edited.text == inserted + text + appended
    assert only_appended == (text + appended == "")


@settings(max_examples=200, deadline=None)
@given(pieces, st.booleans())
def test_the_line_table_tells_the_last_line_as_counting_does(text: str, newline_only: bool) -> None:
    """The server takes a document's last line from its analysis's line table (no counting)."""
    index = LogIndex.following(text, None)
    assert ClientLines(index, newline_only).last_line() == last_line(text, newline_only)
