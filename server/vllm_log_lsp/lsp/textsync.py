"""Applying `didChange` content changes to a document's text, with LSP-exact line numbers.

We keep log text ourselves instead of in pygls's workspace: pygls numbers lines with
`str.splitlines` (which also breaks on form feeds, `\\x1c-\\x1e`, `\\x85`, U+2028/U+2029: a log
containing one would be edited at the wrong place) and rebuilds the whole text in a Python loop
on every change. Here an append (a tailed log growing) grows the document's `GrowingText` (in
place where nothing else reads it) and counts what it appends (the last line is kept between
edits); any other edit costs one C-speed line index of the text and makes a new `GrowingText`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from lsprotocol import types

from ..core.text import GrowingText, LogIndex
from .positions import ClientLines, from_client_column

#: (number, start offset) of a text's last line, as the client counts lines.
LastLine = tuple[int, int]


def last_line(text: str, newline_only: bool = False) -> LastLine:
    """(number, start offset) of the last line of `text`, as the client counts lines
    (`newline_only`: a bare `\\r` does not end one). Counts every line: once per document."""
    count = text.count("\n")
    last = text.rfind("\n")
    if "\r" in text and not newline_only:
        count += text.count("\r") - text.count("\r\n")
        last = max(last, text.rfind("\r"))
    return count, last + 1


def _after_append(last: LastLine, text: str, appended: str, newline_only: bool) -> LastLine:
    """The last line of `text + appended`, from that of `text`: the cost of `appended` only."""
    number, start = last
    breaks = appended.count("\n")
    final = appended.rfind("\n")
    if not newline_only:
        if "\r" in appended:
            breaks += appended.count("\r") - appended.count("\r\n")
            final = max(final, appended.rfind("\r"))
        if text.endswith("\r") and appended.startswith("\n"):
            breaks -= 1  # the `\r` that ended `text` and this `\n` are one `\r\n`
    return number + breaks, (len(text) + final + 1 if final >= 0 else start)


class Edited(NamedTuple):
    """A document after content changes: its last line when known cheaply, and whether every
    change only appended (then `document` is the one edited, grown; else a new one)."""

    document: GrowingText
    last: LastLine | None
    appended: bool


def apply_change(
    document: GrowingText,
    change: types.TextDocumentContentChangeEvent,
    encoding: str,
    newline_only: bool = False,
    last: LastLine | None = None,
    *,
    exclusive: bool = False,
) -> Edited:
    """The document after one content change (full replacement or a range edit), and its last
    line when it is known cheaply; positions are in the client's lines (`newline_only`: a bare
    `\\r` does not end one, see `ClientLines`). `last` is the document's last line if known.
    An append grows `document` (in place when `exclusive`, see `GrowingText.append`); any other
    change makes a new one."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return Edited(GrowingText(change.text), None, False)
    text = document.text
    start, end = change.range.start, change.range.end
    if start == end:
        # Fast path: an insertion at (or past) the end of the text is an append (a tailed log).
        last = last if last is not None else last_line(text, newline_only)
        number, last_start = last
        tail = text[last_start:]
        at_end = start.line == number and from_client_column(tail, start.character, encoding) == len(tail)
        if start.line > number or at_end:
            last = _after_append(last, text, change.text, newline_only)
            del text, tail  # (a reference to the text would keep it from growing in place)
            document.append(change.text, exclusive=exclusive)
            return Edited(document, last, True)
    lines = ClientLines(LogIndex(text), newline_only)
    a = lines.offset(start, encoding)
    b = max(a, lines.offset(end, encoding))
    return Edited(GrowingText(text[:a] + change.text + text[b:]), None, False)


def apply_changes(
    document: GrowingText,
    changes: Sequence[types.TextDocumentContentChangeEvent],
    encoding: str,
    newline_only: bool = False,
    last: LastLine | None = None,
    *,
    exclusive: bool = False,
) -> Edited:
    """Apply changes in order, as the protocol requires: the document, its last line (None where
    unknown) and whether they only appended. Keeping the last line lets each append cost what
    it appends; `exclusive`: as for `apply_change`."""
    appended = True
    for change in changes:
        document, last, appended_now = apply_change(
            document, change, encoding, newline_only, last, exclusive=exclusive
        )
        appended = appended and appended_now
    return Edited(document, last, appended)
