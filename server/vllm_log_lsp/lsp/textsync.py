"""Applying `didChange` content changes to a document's text, with LSP-exact line numbers.

We keep log text ourselves instead of in pygls's workspace: pygls numbers lines with
`str.splitlines` (which also breaks on form feeds, `\\x1c-\\x1e`, `\\x85`, U+2028/U+2029: a log
containing one would be edited at the wrong place) and rebuilds the whole text in a Python loop
on every change. Here an append (a tailed log growing) is one concatenation, and any other edit
costs one C-speed line index of the text.
"""

from __future__ import annotations

from lsprotocol import types

from ..core.text import LogIndex
from .positions import ClientLines, from_client_column


def _last_line(text: str, newline_only: bool) -> tuple[int, int]:
    """(number, start offset) of the last line of `text`, as the client counts lines."""
    count = text.count("\n")
    last = text.rfind("\n")
    if "\r" in text and not newline_only:
        count += text.count("\r") - text.count("\r\n")
        last = max(last, text.rfind("\r"))
    return count, last + 1


def apply_change(
    text: str, change: types.TextDocumentContentChangeEvent, encoding: str, newline_only: bool = False
) -> str:
    """The text after one content change (full replacement or a range edit); positions are in the
    client's lines (`newline_only`: a bare `\\r` does not end one, see `ClientLines`)."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return change.text
    start, end = change.range.start, change.range.end
    if start == end:
        # Fast path: an insertion at (or past) the end of the text is an append (a tailed log).
        last_line, last_start = _last_line(text, newline_only)
        tail = text[last_start:]
        at_end = start.line == last_line and from_client_column(tail, start.character, encoding) == len(tail)
        if start.line > last_line or at_end:
            return text + change.text
    lines = ClientLines(LogIndex(text), newline_only)
    a = lines.offset(start, encoding)
    b = max(a, lines.offset(end, encoding))
    return text[:a] + change.text + text[b:]


def apply_changes(
    text: str,
    changes: list[types.TextDocumentContentChangeEvent] | tuple,
    encoding: str,
    newline_only: bool = False,
) -> str:
    """Apply changes in order, as the protocol requires."""
    for change in changes:
        text = apply_change(text, change, encoding, newline_only)
    return text
