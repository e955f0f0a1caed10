"""Column conversion between the core's code points and the client's position encoding.

The core counts columns in Python code points. LSP clients count UTF-16 code units (VS Code, the
default) or UTF-8 bytes (Neovim 0.11 negotiates it). pygls's codec walks characters in Python; we
encode the line prefix instead, which runs at C speed even on a 10 MB single-line log.
"""

from __future__ import annotations

from lsprotocol import types

from ..core.linebreaks import NewlineLines, SourceMap
from ..core.model import Span
from ..core.text import LogIndex

UTF8 = types.PositionEncodingKind.Utf8
UTF16 = types.PositionEncodingKind.Utf16
UTF32 = types.PositionEncodingKind.Utf32


def to_client_column(line: str, column: int, encoding: str) -> int:
    """Code-point `column` of `line` in the client's units."""
    column = max(0, min(column, len(line)))
    prefix = line[:column]
    if encoding == UTF32 or prefix.isascii():
        return column
    if encoding == UTF8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def from_client_column(line: str, units: int, encoding: str) -> int:
    """The code-point column of client column `units` on `line` (clamped to the line's end).

    A position inside a multi-unit character (half a surrogate pair, part of a UTF-8 sequence)
    maps to the start of that character.
    """
    units = max(0, units)
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    if encoding == UTF8:
        data = line.encode("utf-8", "surrogatepass")[:units]
        return len(data.decode("utf-8", "ignore"))
    data = line.encode("utf-16-le", "surrogatepass")[: units * 2]
    return len(data.decode("utf-16-le", "ignore"))


def span_range(line_text: str, span: Span, encoding: str) -> types.Range:
    """An LSP range for a core span on a line whose text is `line_text`."""
    return types.Range(
        start=types.Position(span.line, to_client_column(line_text, span.start, encoding)),
        end=types.Position(span.line, to_client_column(line_text, span.end, encoding)),
    )


def line_range(line: int, line_text: str, encoding: str) -> types.Range:
    """The whole text of one line (without its line break)."""
    end = to_client_column(line_text, len(line_text), encoding)
    return types.Range(start=types.Position(line, 0), end=types.Position(line, end))


#: `clientInfo.name` of the clients whose lines end only at `\n`, against the LSP spec (which also
#: ends a line at a bare `\r`): their buffers keep a bare `\r` inside the line. Neovim (tested in
#: tests/editors), Eglot and lsp-mode (Emacs counts lines at `\n` in a unix-EOL buffer).
NEWLINE_ONLY_CLIENTS = frozenset({"Neovim", "Eglot", "emacs"})


class ClientLines:
    """Positions in the client's lines for the core's lines of one analysed text, and back.

    LSP says a bare `\\r` ends a line, and VS Code counts so, like the core. Neovim and Emacs end
    lines only at `\\n` (a progress bar redrawn with `\\r` is one line there): for such a client
    (`newline_only`) every position is mapped through `NewlineLines`, so a diagnostic after the
    bar lands on the line the user sees, and a position the client sends finds the core line.
    """

    def __init__(
        self,
        index: LogIndex,
        newline_only: bool = False,
        source_map: SourceMap | None = None,
        document: LogIndex | None = None,
    ) -> None:
        self.index = index
        # The text the client has: the analysed text itself, or the log a transcript was
        # written from (`source_map`: a JSON log's, see `core/jsonlog`; a terminal copy's rows
        # joined, see `core/wraps`).
        self.document = document if source_map is not None and document is not None else index
        lines = self.document.newline_lines() if newline_only else None
        self.client_lines = lines if lines is not None and not lines.identity else None
        if self.document is not index and source_map is not None:
            self.map: NewlineLines | TranscriptClient | None = TranscriptClient(
                source_map, None if newline_only else self.document.newline_lines()
            )
        else:
            self.map = self.client_lines

    # -- core → client --------------------------------------------------------------------------
    def position(self, line: int, column: int, encoding: str) -> types.Position:
        if self.map is None:
            return types.Position(line, to_client_column(self.index.line_text(line), column, encoding))
        client_line, client_column = self.map.position(line, column)
        text = self._client_line_text(client_line)
        return types.Position(client_line, to_client_column(text, client_column, encoding))

    def range(self, span: Span, encoding: str) -> types.Range:
        """The client range of a core span."""
        return types.Range(
            start=self.position(span.line, span.start, encoding),
            end=self.position(span.line, span.end, encoding),
        )

    def line_range(self, line: int, encoding: str) -> types.Range:
        """The client range of the whole text of core line `line` (without its line break)."""
        end = len(self.index.line_text(line))
        return types.Range(start=self.position(line, 0, encoding), end=self.position(line, end, encoding))

    def lines_range(self, first: int, last: int, encoding: str) -> types.Range:
        """The client range of core lines `first` to `last`, whole: from the start of the one
        the client shows first to the end of the other (a log shown newest first has them the
        other way round, see `core/order`)."""
        start, end = self.line_range(first, encoding), self.line_range(last, encoding)
        if (end.start.line, end.start.character) < (start.start.line, start.start.character):
            start, end = end, start
        return types.Range(start.start, end.end)

    def line(self, line: int) -> int:
        """The client's number of core line `line`."""
        return line if self.map is None else self.map.line(line)

    def last_line(self) -> tuple[int, int]:
        """(number, start offset) of the last line of the client's text, as the client counts
        lines (`textsync.last_line`), from the line table: no counting."""
        document = self.document
        core_last = document.line_count - 1
        if self.client_lines is None:
            return core_last, document.line_start(core_last)
        start = document.rfind("\n") + 1
        return self.client_lines.line(core_last), start

    # -- client → core --------------------------------------------------------------------------
    def core_position(self, position: types.Position, encoding: str) -> tuple[int, int]:
        """The core (line, code-point column) of a client position."""
        line = max(position.line, 0)
        if self.map is None:
            return line, from_client_column(self.index.line_text(line), position.character, encoding)
        column = from_client_column(self._client_line_text(line), position.character, encoding)
        return self.map.core_position(line, column)

    def core_line(self, position: types.Position, encoding: str) -> int:
        return self.core_position(position, encoding)[0]

    def offset(self, position: types.Position, encoding: str) -> int:
        """The offset in the text of a client position (clamped to the text)."""
        line, column = self.core_position(position, encoding)
        if line >= self.index.line_count:
            return len(self.index.text)
        start = self.index.line_start(line)
        return start + min(column, len(self.index.line_text(line)))

    def _client_line_text(self, client_line: int) -> str:
        """The text of a client line: a document line, or for a `\n`-only client its core
        lines joined by their bare `\r`s."""
        document = self.document
        if self.client_lines is None:
            return document.line_text(client_line) if client_line < document.line_count else ""
        first, last = self.client_lines.core_line_range(client_line)
        if first >= document.line_count:
            return ""
        start = document.line_start(first)
        end = document.line_start(last) + len(document.line_text(last))
        return document.slice(start, end)


class TranscriptClient:
    """A JSON log's transcript positions as the client's positions in the log, and back: the
    transcript's map to the log's `\n`-lines, then (for a client that also ends lines at a bare
    `\r`, as LSP says) the log's `NewlineLines` to its core lines."""

    def __init__(self, source_map: SourceMap, document_lines: NewlineLines | None) -> None:
        self.source_map = source_map
        self.document_lines = document_lines

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        line, column = self.source_map.position(core_line, column)
        return self.document_lines.core_position(line, column) if self.document_lines else (line, column)

    def core_position(self, line: int, column: int) -> tuple[int, int]:
        if self.document_lines is not None:
            line, column = self.document_lines.position(line, column)
        return self.source_map.core_position(line, column)

    def line(self, core_line: int) -> int:
        return self.position(core_line, 0)[0]
