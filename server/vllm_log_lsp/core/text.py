"""Line bookkeeping over the original text, exactly as LSP counts lines.

LSP splits lines on `\\n`, `\\r\\n` and a bare `\\r`; so do we (never `str.splitlines`, which also
splits on form feeds and Unicode separators). A 100 MB log has about a million lines, so the
index is built lazily: offsets found by a literal pre-filter are turned into line numbers by
counting line breaks between them, at C speed, without splitting the whole text.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def decode_log(data: bytes) -> tuple[str, list[str]]:
    """Decode log bytes for analysis. Returns (text, warnings about the input).

    Invalid UTF-8 is replaced (one U+FFFD per bad byte), so line numbers stay right and nothing
    is lost but the bad bytes themselves. NUL bytes suggest a binary file: still analysed.
    """
    warnings: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        text = data.decode("utf-8", errors="replace")
        warnings.append(f"invalid UTF-8 at byte {err.start}; undecodable bytes shown as U+FFFD")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text[:65536]:
        warnings.append("the file contains NUL bytes: it may be binary, not a log")
    return text, warnings


def strip_ansi(line: str) -> tuple[str, list[int] | None]:
    """Remove ANSI escape sequences. Returns (clean, colmap) where colmap[i] is the column in the
    original line of clean column i (plus one entry for the end); None when nothing was removed."""
    if "\x1b" not in line:
        return line, None
    pieces: list[str] = []
    colmap: list[int] = []
    pos = 0
    for match in _ANSI.finditer(line):
        pieces.append(line[pos : match.start()])
        colmap.extend(range(pos, match.start()))
        pos = match.end()
    pieces.append(line[pos:])
    colmap.extend(range(pos, len(line)))
    colmap.append(len(line))
    return "".join(pieces), colmap


class LogIndex:
    """Maps between offsets in `text` and LSP line numbers; reads lines by number."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.has_cr = "\r" in text
        self._starts: array | None = None
        # Checkpoints (offset, line) learned while counting, for cheap incremental lookups.
        self._cp_offsets: list[int] = [0]
        self._cp_lines: list[int] = [0]

    def adopt_checkpoints(self, other: LogIndex, limit: int) -> None:
        """Reuse another index's line checkpoints below `limit` (the texts share that prefix)."""
        pairs = [(o, n) for o, n in zip(other._cp_offsets, other._cp_lines, strict=True) if o < limit]
        if pairs:
            self._cp_offsets = [o for o, _ in pairs]
            self._cp_lines = [n for _, n in pairs]

    # -- counting -----------------------------------------------------------------------------
    def _breaks(self, start: int, end: int) -> int:
        """Number of line breaks in text[start:end] (a `\\r\\n` counts once)."""
        text = self.text
        count = text.count("\n", start, end)
        if self.has_cr:
            count += text.count("\r", start, end) - text.count("\r\n", start, end)
            # A `\r\n` split by `end` was counted as a bare `\r`: it is one break with the `\n`.
            if end < len(text) and end > start and text[end - 1] == "\r" and text[end] == "\n":
                count -= 1
        return count

    def line_of(self, offset: int) -> int:
        """The line holding `offset` (0-based)."""
        if self._starts is not None:
            return bisect.bisect_right(self._starts, offset) - 1
        i = bisect.bisect_right(self._cp_offsets, offset) - 1
        base_offset, base_line = self._cp_offsets[i], self._cp_lines[i]
        line = base_line + self._breaks(base_offset, offset)
        if i == len(self._cp_offsets) - 1:
            start = self.line_start_at(offset)
            if start > base_offset:
                self._cp_offsets.append(start)
                self._cp_lines.append(line)
        return line

    def line_start_at(self, offset: int) -> int:
        """Offset of the start of the line holding `offset`."""
        start = self.text.rfind("\n", 0, offset) + 1
        if self.has_cr:
            start = max(start, self.text.rfind("\r", 0, offset) + 1)
        return start

    def line_end_at(self, offset: int) -> int:
        """Offset just past the text of the line holding `offset` (before its line break)."""
        text = self.text
        end = text.find("\n", offset)
        if end < 0:
            end = len(text)
        if self.has_cr:
            cr = text.find("\r", offset, end)
            if cr >= 0:
                end = cr
        return end

    # -- full index (built on demand) ---------------------------------------------------------
    def _build(self) -> array:
        if self._starts is None:
            text = self.text
            if self.has_cr:
                ends = [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
            else:
                ends = []
                pos = text.find("\n")
                # Accumulating split lengths is far faster than a find() loop in Python.
                if pos >= 0:
                    total = 0
                    for part in text.split("\n")[:-1]:
                        total += len(part) + 1
                        ends.append(total)
            starts = array("q", [0])
            starts.extend(ends)
            self._starts = starts
        return self._starts

    @property
    def line_count(self) -> int:
        """Number of lines as LSP counts them (a final line break starts an empty last line)."""
        return len(self._build())

    def line_start(self, line: int) -> int:
        starts = self._build()
        return starts[max(0, min(line, len(starts) - 1))]

    def line_text(self, line: int) -> str:
        """The text of `line` without its line break; '' past the end."""
        starts = self._build()
        if line < 0 or line >= len(starts):
            return ""
        start = starts[line]
        return self.text[start : self.line_end_at(start)]

    # -- walking ------------------------------------------------------------------------------
    def next_line_start(self, start: int) -> int:
        """Offset of the line after the one starting at `start`; len(text) at the end."""
        text = self.text
        end = self.line_end_at(start)
        if end >= len(text):
            return len(text)
        return end + 2 if text.startswith("\r\n", end) else end + 1

    def iter_lines_from(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        """Yield (line number, text) from the line starting at `start` (numbered `line`)."""
        text = self.text
        n = len(text)
        for _ in range(limit):
            if start > n:
                return
            end = self.line_end_at(start)
            yield line, text[start:end]
            if end >= n:
                return
            start = end + 2 if text.startswith("\r\n", end) else end + 1
            line += 1

    def iter_lines_back(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        """Yield (line number, text) for the lines before the one starting at `start`."""
        text = self.text
        for _ in range(limit):
            if start <= 0:
                return
            end = start - 1
            if end > 0 and text[end] == "\n" and text[end - 1] == "\r":
                end -= 1
            prev = self.line_start_at(end)
            line -= 1
            yield line, text[prev:end]
            start = prev
