"""Line numbers as `grep -n`, less, vim, Neovim and Emacs count them: only `\\n` ends a line.

The analysis counts lines as LSP does (`LogIndex`: `\\n`, `\\r\\n` and a bare `\\r` each end one),
which is what VS Code shows. A progress bar redrawn with bare `\\r` (tqdm's `\\r 10%…\\r 20%…`) is
one line for the other tools, so every line after it has a smaller number there. `NewlineLines`
maps a core (line, column) to that numbering and back; a core line that starts after a bare `\\r`
is a piece of a longer line there, so its columns move right by the text before it.

Built from the text in one C-speed pass; when the text has no bare `\\r` every mapping is the
identity and costs nothing.
"""

from __future__ import annotations

import bisect
import mmap
from array import array

from . import regexes
from .text import Needle, Text

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
else:  # `Numbering` is a plain base class at run time: nothing checks it
    Protocol = object

_BARE_CR = regexes.compile(r"\r(?!\n)")
_BARE_CR_BYTES = regexes.compile(rb"\r(?!\n)")


class Numbering(Protocol):
    """Core positions as a reader numbers them: `NewlineLines`, or a JSON log's transcript map."""

    def line(self, core_line: int) -> int: ...

    def position(self, core_line: int, column: int) -> tuple[int, int]: ...


class SourceMap(Numbering, Protocol):
    """The map of a transcript the analysis read instead of the log (a JSON log's, a terminal
    copy's joined lines, a newest-first log's lines reversed) to the log's `\\n`-lines and
    columns, and back."""

    text: str  # the transcript

    def core_position(self, line: int, column: int) -> tuple[int, int]: ...

    def core_line_range(self, line: int) -> tuple[int, int]: ...


class NewlineLines:
    """Maps core line numbers (LSP's) to `\\n`-only line numbers and back."""

    def __init__(self, text: Text, has_cr: bool | None = None) -> None:
        """`has_cr`: whether `text` holds a `\r`, when known (else it is searched for)."""
        self.text = text
        self.is_bytes = not isinstance(text, str)
        self._nl: Needle = b"\n" if self.is_bytes else "\n"
        #: Offsets of the bare `\r`s, and for each the number of `\n` before it.
        self._crs = array("q")
        self._nl_before = array("q")
        #: The core line that each bare `\r` ends: its `\n` line plus the bare `\r`s before it.
        self._ends = array("q")
        cr: Needle = b"\r" if self.is_bytes else "\r"
        if has_cr is False or (has_cr is None and text.find(cr) < 0):
            return
        self._add_bare_crs(0)

    def _add_bare_crs(self, start: int) -> None:
        """Record the bare `\r`s from `start` on (after every one recorded)."""
        text = self.text
        matches = (
            _BARE_CR.finditer(text, start) if isinstance(text, str) else _BARE_CR_BYTES.finditer(text, start)
        )
        crs, nl_before, ends = self._crs, self._nl_before, self._ends
        newlines, counted_to = (nl_before[-1], crs[-1]) if crs else (0, 0)
        for match in matches:
            offset = match.start()
            newlines += self._count_newlines(counted_to, offset)
            counted_to = offset
            crs.append(offset)
            nl_before.append(newlines)
            ends.append(newlines + len(crs) - 1)

    def grew(self, text: str, old_length: int) -> None:
        """Map `text`, which is the text mapped so far with more appended (see
        `core.text.GrowingText`): only the appended part is searched."""
        self.text = text
        if self._crs and self._crs[-1] == old_length - 1 and text[old_length : old_length + 1] == "\n":
            for table in (self._crs, self._nl_before, self._ends):
                table.pop()  # the `\r` that ended the old text is half of a `\r\n` now
        if text.find("\r", old_length) >= 0:
            self._add_bare_crs(old_length)

    @property
    def newlines_before_bare_crs(self) -> array:
        """For each bare `\r` in order, the number of `\n` before it (its `\n` line)."""
        return self._nl_before

    @property
    def identity(self) -> bool:
        """Whether both numberings agree everywhere (no bare `\\r`)."""
        return not self._crs

    def line(self, core_line: int) -> int:
        """The `\\n`-only number of core line `core_line` (both 0-based)."""
        if not self._crs:
            return core_line
        return core_line - bisect.bisect_left(self._ends, core_line)

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        """(line, code-point column) in the `\\n`-only numbering of a core position."""
        if not self._crs:
            return core_line, column
        before = bisect.bisect_left(self._ends, core_line)
        if before and self._ends[before - 1] == core_line - 1:  # it starts just after a bare \r
            column += self._code_points(self._line_start(self._crs[before - 1]), self._crs[before - 1] + 1)
        return core_line - before, column

    def core_position(self, line: int, column: int) -> tuple[int, int]:
        """The core (line, code-point column) of a position in the `\\n`-only numbering."""
        if not self._crs:
            return line, column
        first = bisect.bisect_left(self._nl_before, line)  # bare \r on earlier lines
        last = bisect.bisect_right(self._nl_before, line)  # ... and on this one
        core_line = line + first
        if first == last:
            return core_line, column
        start = self._line_start(self._crs[first])
        piece_start = 0
        for i in range(first, last):  # the pieces of this line, each after one bare \r
            after = self._code_points(start, self._crs[i] + 1)
            if column < after:
                break
            core_line, piece_start = line + i + 1, after
        return core_line, column - piece_start

    def core_line_range(self, line: int) -> tuple[int, int]:
        """The first and last core lines that make up `\\n`-only line `line`."""
        first = bisect.bisect_left(self._nl_before, line)
        last = bisect.bisect_right(self._nl_before, line)
        return line + first, line + last

    # -- helpers ------------------------------------------------------------------------------
    def _count_newlines(self, start: int, end: int) -> int:
        text = self.text
        if isinstance(text, mmap.mmap):  # mmap has no count(): count a copy of the range
            return text[start:end].count(b"\n")
        return text.count(self._nl, start, end)

    def _line_start(self, offset: int) -> int:
        return self.text.rfind(self._nl, 0, offset) + 1

    def _code_points(self, start: int, end: int) -> int:
        text = self.text
        if isinstance(text, str):
            return end - start
        return len(bytes(text[start:end]).decode("utf-8", "replace"))
