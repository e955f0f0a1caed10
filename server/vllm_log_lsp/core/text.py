"""Line bookkeeping over the original text, exactly as LSP counts lines.

LSP splits lines on `\\n`, `\\r\\n` and a bare `\\r`; so do we (never `str.splitlines`, which also
splits on form feeds and Unicode separators). A 100 MB log has about a million lines, so the
index is built lazily: offsets found by a literal pre-filter are turned into line numbers by
counting line breaks between them, at C speed, without splitting the whole text.

The index works over a `str` (a document an editor sent) or over the raw UTF-8 `bytes` of a file
(the CLI and the analyse-from-disk command): then nothing is decoded but the lines the analysis
reads, and offsets are byte offsets. Either way lines come out as `str`, and columns are code
points of the line.
"""

from __future__ import annotations

import bisect
import mmap
import re
from array import array
from collections.abc import Callable, Generator, Iterator, Sequence
from itertools import accumulate

from . import regexes

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from .linebreaks import NewlineLines

    class TextReader(Protocol):
        """What a `GrowingText` keeps up to date: something that reads its text."""

        text: Any

        def grew(self, text: str, old_length: int) -> None: ...


#: What the index can read: an editor's text, a file's bytes, or a file mapped into memory.
Buffer = bytes | mmap.mmap
Text = str | Buffer
#: What is searched for in a `Text`: a `str` in a `str`, `bytes` in the others. The pairing is
#: each index's invariant (`LogIndex._lit`), which a union cannot say: hence `Any`.
if TYPE_CHECKING:
    Needle = Any
else:  # a name for annotations only
    Needle = object

ESCAPE = "\x1b"
#: A `bytes.translate` table that masks every ASCII digit as `0`: texts that differ only in their
#: digits mask alike (each user says why what it looks for treats all digits alike).
MASK_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_UNCHECKED = object()
#: Bytes of a mapped file copied at a time to count its line breaks.
_COUNT_BLOCK = 1 << 20
#: A colour or control code that starts with its ESC (CSI `ESC [ … final`, or a two-character one).
_ESC_CODE = r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_])"
_ANSI = regexes.compile(
    _ESC_CODE
    + (
        # A colour code whose ESC byte was lost in a copy (GitHub, a terminal paste) around vLLM's
        # process prefix: `[0;36m(EngineCore pid=1)[0;0m `.
        r"|\[(?:\d{1,3};)*\d{1,3}m(?=\()|(?<=\))\[(?:\d{1,3};)*\d{1,3}m"
        # A colour code whose ESC the tool that showed the log wrote out: `cat -v`'s `^[`, a JSON
        # or Python string's `\u001b` and `\x1b`, a shell's `\033` and `\e`, the symbol `␛`.
        r"|(?:\^\[|\\u001[bB]|\\x1[bB]|\\033|\\e|\u241b)\[(?:\d{1,3};)*\d{0,3}m"
        # NUL bytes: no printed text, but where a write was lost (a crash before the page cache
        # reached the disk leaves a hole) or a file was truncated in place (logrotate's copytruncate).
        r"|\x00+"
    )
)
#: `_ANSI`'s codes that start with an ESC, alone: most coloured lines hold no other kind, and a
#: pattern whose one alternative starts with a literal is searched for at C speed (the whole
#: `_ANSI`, with its look-behind and its other forms, is tried at every position: 3x slower).
_ANSI_ESCAPES = regexes.compile(_ESC_CODE)
#: Lines whose text without colour codes `LogIndex.without_colour` remembers, at most (about
#: 10 MB of lines), before it starts over.
_COLOUR_MEMO = 1 << 15
#: How a colour code's ESC is written out after a backslash (`may_hold_colour`).
_ESCAPED_ESC = ("\\u001", "\\x1", "\\033[", "\\e[")


# What a copy through a word processor, a chat or a web page's source makes of a log's ASCII
# punctuation: typographic quotes, and HTML's character references. The rules are written
# against the log as printed, so they read the text as it was printed.
_TYPOGRAPHY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_HTML_REFERENCES = {"&quot;": '"', "&#34;": '"', "&#x22;": '"', "&apos;": "'", "&#39;": "'", "&#x27;": "'"}
_HTML_REFERENCES.update({"&lt;": "<", "&gt;": ">", "&#60;": "<", "&#62;": ">"})
_HTML_REFERENCE = regexes.compile("|".join(map(re.escape, [*_HTML_REFERENCES, "&amp;"])))


def as_printed(text: str) -> str:
    """`text` with typographic quotes as ASCII ones and HTML's character references decoded
    (`&amp;` last, so `&amp;quot;` reads `&quot;`); the same `str` when it holds neither."""
    if "&" in text and ";" in text:
        text = _HTML_REFERENCE.sub(lambda found: _HTML_REFERENCES.get(found.group(), "&"), text)
    if not text.isascii():
        text = text.translate(_TYPOGRAPHY)
    return text


def text_start(text: Text, chars: int) -> tuple[str, bool]:
    """The first `chars` characters of `text`, and whether they are all of it: of a file's
    bytes, the same characters as of its text (a character takes at most four bytes), so a
    decision read from them does not depend on which the caller has."""
    if isinstance(text, str):
        head = text[:chars]
        return head, len(head) == len(text)
    raw = text[: 4 * chars]
    decoded = bytes(raw).decode("utf-8", "replace")
    return decoded[:chars], len(raw) == len(text) and len(decoded) <= chars


def clip_line(line: str, limit: int) -> str:
    """The first `limit` characters of `line` after any run of NULs it starts with (the run
    kept: columns stay the line's own). NULs count for nothing where a line is read within a
    limit: a hole a lost write left, or a file truncated in place, starts a line with them."""
    if not line.startswith("\x00"):
        return line[:limit]
    return line[: len(line) - len(line.lstrip("\x00")) + limit]


def may_hold_colour(line: str) -> bool:
    """Whether `line` may hold a colour code or a NUL (`strip_ansi` changes nothing in any
    other): an ESC, a code that lost its ESC before a parenthesis (`m(`), one whose ESC is
    written out, a NUL. Parts of the parse that read a line as its own text (layouts
    remembered, a writer's lines sliced) ask this first. (Six `in` tests, the backslash forms
    behind one: it is asked per line.)"""
    return (
        ESCAPE in line
        or "\x00" in line
        or "m(" in line
        or "^[[" in line
        or "\u241b" in line
        or ("\\" in line and any(form in line for form in _ESCAPED_ESC))
    )


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


def inspect_log_bytes(data: Buffer) -> tuple[Buffer, list[str]]:
    """Prepare raw log bytes (`bytes` or a read-only `mmap`) for analysis without decoding them.
    Returns (data, warnings).

    Invalid UTF-8 is found lazily, in the lines the analysis reads (see `LogIndex.slice`).
    """
    warnings: list[str] = []
    head = bytes(data[:65536])
    if head.startswith(b"\x1f\x8b"):
        warnings.append("the file is gzip-compressed: decompress it first (gunzip)")
    elif b"\x00" in head:
        warnings.append("the file contains NUL bytes: it may be binary, not a log")
    if head.startswith(b"\xef\xbb\xbf"):
        data = bytes(data[3:])
    return data, warnings


class ColumnMap:
    """The column in a line of each column of its text with escape sequences removed
    (`strip_ansi`). A line is read for one column or two, near its start (the message's, after
    the process prefix the colours are on): each look-up walks the line's escape sequences from
    its start and stops at the column, so a line's later codes are never looked at, and the
    clean text is made at C speed (`re.sub`) without them."""

    __slots__ = ("_line",)

    def __init__(self, line: str) -> None:
        self._line = line

    def __getitem__(self, column: int) -> int:
        """The line's column of clean column `column` (0 to the clean text's length). A
        sequence removed right at `column` lies before it: the column is the text after it."""
        gone = 0
        for match in _ANSI.finditer(self._line):
            start, end = match.span()
            if start - gone > column:
                break
            gone += end - start
        return column + gone


def strip_ansi(line: str) -> tuple[str, ColumnMap | None]:
    """Remove ANSI escape sequences. Returns (clean, colmap) where colmap[i] is the column in the
    original line of clean column i (i up to the clean text's length); None when nothing was
    removed."""
    if not may_hold_colour(line):
        return line, None
    # The ESC codes first; the whole pattern only where what is left may hold another kind (a
    # code that lost its ESC before or after a parenthesis, a written-out ESC, NULs). Where it
    # does not, the whole pattern would have removed the same codes.
    clean = _ANSI_ESCAPES.sub("", line) if ESCAPE in line else line
    if clean is line or may_hold_colour(clean) or ")[" in clean:
        clean = _ANSI.sub("", line)
    return (line, None) if len(clean) == len(line) else (clean, ColumnMap(line))


def extends(text: Text, old: Text) -> bool:
    """Whether `text` is `old` with more appended: both a `str`, or both `bytes` (a mapped file is
    never compared: reading it whole would defeat the mapping)."""
    if isinstance(text, str):
        return isinstance(old, str) and len(text) >= len(old) and text.startswith(old)
    if isinstance(text, bytes):
        return isinstance(old, bytes) and len(text) >= len(old) and text.startswith(old)
    return False


class GrowingText:
    """An editor's document of a log that only grows at its end (a tailed file), held in one place.

    Appending to a `str` copies it whole: for a 100 MB log that copy, and the fresh memory it
    faults in, was most of what an append cost. CPython grows a `str` in place when nothing else
    refers to it. So the indexes built over this text (its readers, see `attach`) let go of it
    for that moment and are then extended over what was appended: an append costs what it
    appends. Where something else still holds the text (a worker thread analysing it), the
    append copies, as any `str` concatenation does, and the readers keep the text they index.
    """

    __slots__ = ("_readers", "_text")

    def __init__(self, text: str) -> None:
        import weakref  # (only the language server grows texts)

        self._text = text
        self._readers: weakref.WeakSet[TextReader] = weakref.WeakSet()
        _warm_up_growth()

    @property
    def text(self) -> str:
        """The whole text now (it may be grown in place later: read it again after an append)."""
        return self._text

    def __len__(self) -> int:
        return len(self._text)

    def attach(self, reader: TextReader) -> None:
        """Have `reader` (an index of this text, or a line map) follow its appends (see
        `append`)."""
        self._readers.add(reader)

    def append(self, more: str, *, exclusive: bool = False) -> None:
        """Append `more`. `exclusive`: the caller knows that no other thread reads this text or
        its readers now; only then may it grow in place (its readers are rebound meanwhile)."""
        if not more:
            return
        if not exclusive:
            self._text += more  # a new str: the readers keep indexing the one they have
            return
        readers = self._current_readers()
        text = self._text  # (a plain local, not one a closure shares: `+=` needs that, see below)
        old_length = len(text)
        try:
            self._text = ""
            for reader in readers:
                reader.text = ""  # (for this moment only: nobody else reads, see `exclusive`)
            text += more  # grown in place when `text` is its only reference (CPython), else copied
        finally:
            self._text = text
            for reader in readers:
                reader.grew(text, old_length)

    def _current_readers(self) -> list[TextReader]:
        """The readers that index the text as it is now. Readers of an older version (an older
        result keeps its index) index that one: they are left as they are, and forgotten."""
        current = [reader for reader in self._readers if reader.text is self._text]
        for stale in [reader for reader in self._readers if reader.text is not self._text]:
            self._readers.discard(stale)
        return current


_growth_warm = False


def _warm_up_growth() -> None:
    """Run `GrowingText.append` a few times on a tiny text: CPython (3.11+) grows a `str` in
    place only once the interpreter has specialised that `+=` for strings, after a few runs."""
    global _growth_warm
    if _growth_warm:
        return
    _growth_warm = True
    tiny = GrowingText("")
    for _ in range(16):
        tiny.append("x", exclusive=True)


def _find_everywhere(text: Text, needle: Needle) -> int:
    """`text.find(needle)` over the whole text (see `_find_each`)."""
    if not isinstance(text, mmap.mmap):
        return text.find(needle)
    [found] = _find_each(text, (needle,))
    return found


def _find_each(text: mmap.mmap, needles: tuple[bytes, ...]) -> list[int]:
    """Where each needle first occurs in a mapped file (-1: nowhere), in one pass whose pages
    are let go once searched (`source.find_releasing`): a search of every byte would otherwise
    hold the whole file."""
    from .source import find_releasing  # (source reads files: it imports this module)

    return find_releasing(text, needles)


#: Units of a run of NULs read at a time (`LogIndex.after_nul_run`).
_NUL_BLOCK = 1 << 16
#: A backward search of a mapped file over more than this lets the pages it passed go.
_RELEASING_SPAN = 1 << 22


class LogIndex:
    """Maps between offsets in the text and LSP line numbers; reads lines by number.

    `text` is a `str`, or UTF-8 `bytes` (see the module docstring); `path`, when given, names a
    file holding exactly those bytes, so the pre-filter can let grep read it directly. Built over
    a `GrowingText`, the index indexes its text now and follows its appends (`grew`).
    """

    def __init__(
        self, text: Text | GrowingText, path: str | None = None, *, has_cr: bool | None = None
    ) -> None:
        self._growing = text if isinstance(text, GrowingText) else None
        if isinstance(text, GrowingText):
            text.attach(self)
            self.text: Text = text.text
        else:
            self.text = text
        text = self.text
        self._newline_lines: NewlineLines | None = None
        self.path = path
        self.is_bytes = not isinstance(text, str)
        self._nl: Needle
        self._cr: Needle
        self._crlf: Needle
        self._nl, self._cr, self._crlf = (b"\n", b"\r", b"\r\n") if self.is_bytes else ("\n", "\r", "\r\n")
        self._has_escape: bool | None = None
        if has_cr is None and isinstance(text, mmap.mmap):
            # One pass over a mapped file for both (each pass reads every page in again).
            has_cr, self._has_escape = (found >= 0 for found in _find_each(text, (b"\r", b"\x1b")))
        elif has_cr is None:  # (known already when the text extends an indexed one)
            has_cr = text.find(self._cr) >= 0
        self.has_cr = has_cr
        self.invalid_utf8_line: int | None = None  # first line seen with undecodable bytes
        # See `first_invalid_utf8`: the answer, or a function that waits for it (started).
        self._utf8_error: int | object | None = _UNCHECKED
        self._starts: array | None = None
        # Checkpoints (offset, line) learned while counting, for cheap incremental lookups.
        self._cp_offsets: list[int] = [0]
        self._cp_lines: list[int] = [0]
        # Set by `following`: a checkpoint every few KB, all of them, never changed afterwards
        # (so threads may share the index), and the number of lines.
        self._dense = False
        self._line_total = 0
        self._literals: dict[str, bytes] = {}
        self._without_colour: dict[str, str] = {}  # see `without_colour`

    def __len__(self) -> int:
        return len(self.text)

    @property
    def has_line_table(self) -> bool:
        """Whether any line's number and start are found in bounded time: the full line table
        is built, or a checkpoint every few KB (`following`)."""
        return self._starts is not None or self._dense

    @property
    def has_escape(self) -> bool:
        """Whether the text holds an ESC (ANSI colours): then a line's raw text may not contain
        what its parsed prefix says (a colour code may sit inside it)."""
        if self._has_escape is None:
            self._has_escape = _find_everywhere(self.text, self._lit(ESCAPE)) >= 0
        return self._has_escape

    def first_invalid_utf8(self) -> int | None:
        """Offset of the first byte of a file's bytes that is not valid UTF-8, or None (always
        None for an editor's text, decoded already); checked once (`source.first_invalid_utf8`),
        or collected from the check `start_utf8_check` started."""
        if self._utf8_error is _UNCHECKED:
            self.start_utf8_check()
        if callable(self._utf8_error):
            self._utf8_error = self._utf8_error()
        return self._utf8_error  # type: ignore[return-value]

    def start_utf8_check(self) -> None:
        """Start the check `first_invalid_utf8` answers: a large mapped file's runs beside this
        process (`source.utf8_check_beside`: rg, or a forked child) while the analysis goes on;
        any other runs now."""
        if self._utf8_error is not _UNCHECKED:
            return
        if isinstance(self.text, str):
            self._utf8_error = None
            return
        from .source import utf8_check_beside  # (source reads files: it imports this module)

        self._utf8_error = utf8_check_beside(self.text, self.path)

    def without_colour(self, line: str) -> str:
        """`strip_ansi(line)`'s text, remembered by the line's text: the windows after each
        traceback of a coloured log read the same lines again (`LineWindow`)."""
        clean = self._without_colour.get(line)
        if clean is None:
            if len(self._without_colour) >= _COLOUR_MEMO:
                self._without_colour.clear()
            clean = self._without_colour[line] = strip_ansi(line)[0]
        return clean

    # -- searching ----------------------------------------------------------------------------
    def _lit(self, literal: str) -> Needle:
        if not self.is_bytes:
            return literal
        encoded = self._literals.get(literal)
        if encoded is None:
            encoded = self._literals[literal] = literal.encode("utf-8")
        return encoded

    def find(self, literal: str, start: int = 0, end: int | None = None) -> int:
        return self.text.find(self._lit(literal), start, len(self.text) if end is None else end)

    def rfind(self, literal: str, start: int = 0, end: int | None = None) -> int:
        end = len(self.text) if end is None else end
        if isinstance(self.text, mmap.mmap) and end - start > _RELEASING_SPAN:
            from .source import rfind_releasing  # (source reads files: it imports this module)

            return rfind_releasing(self.text, self._lit(literal), start, end)
        return self.text.rfind(self._lit(literal), start, end)

    def slice(self, start: int, end: int) -> str:
        """text[start:end] as a str (decoded from UTF-8 when the index holds bytes)."""
        text = self.text
        if isinstance(text, str):
            return text[start:end]
        # A cut inside a line (a length limit) must not split a UTF-8 sequence: back off to the
        # sequence's first byte, or the partial character would read as invalid UTF-8.
        while start < end < len(text) and text[end] & 0xC0 == 0x80:
            end -= 1
        piece = text[start:end]
        decoded = bytes(piece).decode("utf-8", "replace")
        if self.invalid_utf8_line is None and "\ufffd" in decoded and b"\xef\xbf\xbd" not in piece:
            self.invalid_utf8_line = self.line_of(start)
        return decoded

    def line_at(self, offset: int, limit: int | None = None) -> str:
        """The text of the line holding `offset` (at most `limit` units of it after any run of
        NULs it starts with: see `clip_line`)."""
        start = self.line_start_at(offset)
        end = self.line_end_at(offset)
        return self.slice(start, end) if limit is None else self.slice_within(start, end, limit)

    def slice_within(self, start: int, end: int, limit: int) -> str:
        """The text of the line from `start` to `end` (its end), at most `limit` units of it
        after any run of NULs it starts with (see `clip_line`)."""
        return self.slice(start, min(end, self.after_nul_run(start, end) + limit))

    def remember(self, offset: int, line: int) -> None:
        """Record that the line starting at `offset` is `line` (learnt elsewhere, e.g. grep -n)."""
        if self._starts is None and not self._dense and offset > self._cp_offsets[-1]:
            self._cp_offsets.append(offset)
            self._cp_lines.append(line)

    def adopt_checkpoints(self, other: LogIndex, limit: int) -> None:
        """Reuse another index's line checkpoints below `limit` (the texts share that prefix);
        a dense index keeps its own."""
        if self._dense:
            return
        pairs = [(o, n) for o, n in zip(other._cp_offsets, other._cp_lines, strict=True) if o < limit]
        if pairs:
            self._cp_offsets = [o for o, _ in pairs]
            self._cp_lines = [n for _, n in pairs]

    def newline_lines(self) -> NewlineLines:
        """The text's `\\n`-only line numbering (built once; over a `GrowingText` it follows the
        appends as the index does)."""
        if self._newline_lines is None:
            from .linebreaks import NewlineLines

            self._newline_lines = NewlineLines(self.text, has_cr=self.has_cr)
            if self._growing is not None:
                self._growing.attach(self._newline_lines)
        return self._newline_lines

    def grew(self, text: str, old_length: int) -> None:
        """Index `text`, which is the text indexed so far with more appended (its first
        `old_length` characters are that text): only the appended part is counted, as in
        `following`. Called by the `GrowingText` it was built over."""
        self.text = text
        if len(text) == old_length:
            return
        if self._dense:
            line, resume = self._resume_after(old_length)
        else:
            resume = self.line_start_at(max(0, self.line_start_at(old_length) - 1))
        self.has_cr = self.has_cr or text.find(self._cr, resume) >= 0
        if self._has_escape is False:
            self._has_escape = text.find(ESCAPE, resume) >= 0
        if self._dense:
            self._checkpoint_from(resume, line)
            return
        self._starts = None  # (the full table is built again on demand)
        while len(self._cp_offsets) > 1 and self._cp_offsets[-1] >= resume:
            self._cp_offsets.pop()
            self._cp_lines.pop()

    # -- counting -----------------------------------------------------------------------------
    def _breaks(self, start: int, end: int) -> int:
        """Number of line breaks in text[start:end] (a `\\r\\n` counts once)."""
        text = self.text
        # A `\\r\\n` split by `end` is counted below as a bare `\\r`: it is one break with the `\\n`.
        split_crlf = self.has_cr and start < end < len(text) and text[end - 1 : end + 1] == self._crlf
        if not isinstance(text, mmap.mmap):
            return self._count(text, start, end) - split_crlf
        # mmap has no count(): count copies of the range, a bounded block at a time (a `\\r\\n`
        # split between two blocks is counted in both). A long count (the first candidate of a
        # file far into it) lets go of the pages it has counted through: it would hold them all.
        release: Callable[[Text, int, int], int] | None = None
        if end - start > _COUNT_BLOCK:
            from .source import release_pages as release  # (source reads files: it imports this)
        count, released = 0, start
        for pos in range(start, end, _COUNT_BLOCK):
            stop = min(end, pos + _COUNT_BLOCK)
            count += self._count(text[pos:stop], 0, stop - pos)
            if self.has_cr and stop < end and text[stop - 1 : stop + 1] == self._crlf:
                count -= 1
            if release is not None:
                released = release(text, released, stop)
        return count - split_crlf

    def _count(self, text: str | bytes, start: int, end: int) -> int:
        count = text.count(self._nl, start, end)
        if self.has_cr:
            count += text.count(self._cr, start, end) - text.count(self._crlf, start, end)
        return count

    def line_of(self, offset: int) -> int:
        """The line holding `offset` (0-based)."""
        if self._starts is not None:
            return bisect.bisect_right(self._starts, offset) - 1
        offsets, lines = self._cp_offsets, self._cp_lines
        i = bisect.bisect_right(offsets, offset) - 1
        # Count from the nearer checkpoint, forwards or backwards: the pre-filter leaves
        # checkpoints around the interesting lines, which may be far from the start.
        if i + 1 < len(offsets) and offsets[i + 1] - offset < offset - offsets[i]:
            line = lines[i + 1] - self._breaks(offset, offsets[i + 1])
        else:
            line = lines[i] + self._breaks(offsets[i], offset)
        if self._dense:
            return line  # (checkpoints enough; and never changed, for threads that share it)
        start = self.line_start_at(offset)
        if start > offsets[i] and (i + 1 == len(offsets) or start < offsets[i + 1]):
            offsets.insert(i + 1, start)
            lines.insert(i + 1, line)
        return line

    def inside_crlf(self, offset: int) -> bool:
        """Whether `offset` falls between the two halves of a `\r\n` line break."""
        text = self.text
        return (
            0 < offset < len(text)
            and text[offset : offset + 1] == self._nl
            and text[offset - 1 : offset] == self._cr
        )

    def line_start_at(self, offset: int) -> int:
        """Offset of the start of the line holding `offset`."""
        start = self.text.rfind(self._nl, 0, offset) + 1
        if self.has_cr:
            # Only a `\r` after the last `\n` can start the line later (searched back to the
            # `\n` only: the last `\r` of a log may lie megabytes behind).
            start = max(start, self.text.rfind(self._cr, start, offset) + 1)
        return start

    def after_nul_run(self, offset: int, end: int) -> int:
        """Where the run of NULs at `offset` ends (at most `end`; `offset` when none starts
        there): a hole a lost write left, or a file truncated in place, before a line's text."""
        text, nul = self.text, (b"\x00" if self.is_bytes else "\x00")
        while offset < end and text[offset : offset + 1] == nul:
            piece = text[offset : min(end, offset + _NUL_BLOCK)]
            offset += len(piece) - len(piece.lstrip(nul))  # type: ignore[arg-type]
            if len(piece) < _NUL_BLOCK:
                break
        return offset

    def line_end_at(self, offset: int) -> int:
        """Offset just past the text of the line holding `offset` (before its line break)."""
        text = self.text
        end = text.find(self._nl, offset)
        if end < 0:
            end = len(text)
        if self.has_cr:
            cr = text.find(self._cr, offset, end)
            if cr >= 0:
                end = cr
        return end

    @classmethod
    def following(
        cls,
        text: Text | GrowingText,
        previous: LogIndex | None,
        path: str | None = None,
        *,
        grown: bool | None = None,
    ) -> LogIndex:
        """An index of `text` that reads any line by number in bounded time: a checkpoint
        (offset, line) every few KB, counted at C speed (a full line table would split the whole
        text into line strings). When `text` only appends to the text `previous` indexed (a
        growing log), `previous`'s checkpoints are kept and only the appended part is counted.
        `path`: as for the constructor. `grown`: whether the caller already knows that `text`
        extends `previous.text` (None: compare them here)."""
        growing = text if isinstance(text, GrowingText) else None
        if isinstance(text, GrowingText):
            text = text.text
            if previous is not None and previous._dense and previous.text is text and grown is not False:
                return previous  # it followed the appends in place (see `GrowingText.append`)
        if (
            previous is None
            or not previous._dense
            or isinstance(text, str) == previous.is_bytes
            or isinstance(text, mmap.mmap)
            or not (extends(text, previous.text) if grown is None else grown)
        ):
            index = cls(text if growing is None else growing, path)
            index._checkpoint_from(0, 0)
            return index
        # Keep every checkpoint before the old last line (its end may have moved), count on from it.
        line, resume = previous._resume_after(len(previous.text))
        # What the old text held, it still holds: only the appended part is searched.
        cr = previous.has_cr or text.find(previous._cr, resume) >= 0
        index = cls(text if growing is None else growing, path, has_cr=cr)
        if previous._has_escape is not None:
            index._has_escape = previous._has_escape or text.find(previous._lit(ESCAPE), resume) >= 0
        index.adopt_checkpoints(previous, resume)
        index._checkpoint_from(resume, line)
        return index

    def _resume_after(self, old_length: int) -> tuple[int, int]:
        """(number, start) of the line of a dense index from which an append to its first
        `old_length` units is counted again: the old last line (it may go on in the appended
        part), or the one before it when the old text ended in `\r` (an appended `\n` joins it)."""
        line = self._line_total - 1
        if line > 0 and self.text[old_length - 1 : old_length] == self._cr:
            line -= 1
        return line, self.line_start(line)

    #: Units between two checkpoints of a dense index (`following`), at most ...
    _DENSE_BLOCK = 1 << 13
    #: ... and about how many lines (a log of short lines gets them closer), at least this far.
    _DENSE_LINES = 64
    _DENSE_MIN = 64

    def _checkpoint_from(self, start: int, line: int) -> None:
        """Make the index dense: a checkpoint at `start` (the start of line `line`) and after it
        one every `_DENSE_BLOCK` units or so, at the first line start past each block, counted
        at C speed; the checkpoints before `start` are kept."""
        offsets, lines = self._cp_offsets, self._cp_lines
        while offsets and offsets[-1] >= start:
            offsets.pop()
            lines.pop()
        offsets.append(start)
        lines.append(line)
        n, block = len(self.text), self._DENSE_BLOCK
        while True:
            end = self.line_end_at(min(n, start + block))  # (a forward find: linear overall)
            if end >= n:
                break
            following = self._after_break(end)
            breaks = self._breaks(start, following)
            if breaks > 2 * self._DENSE_LINES and block > self._DENSE_MIN:  # lines much shorter
                block = max(self._DENSE_MIN, block * self._DENSE_LINES // breaks)
                continue  # (counted again from the same start: at most about twice in all)
            line += breaks
            offsets.append(following)
            lines.append(line)
            # As many units as about `_DENSE_LINES` lines of the size just seen take.
            block = (following - start) * self._DENSE_LINES // breaks
            block = max(self._DENSE_MIN, min(self._DENSE_BLOCK, block))
            start = following
        self._line_total = line + self._breaks(start, n) + 1
        self._dense = True

    # -- full index (built on demand) ---------------------------------------------------------
    def _build(self) -> array:
        if self._starts is None:
            starts = array("q", [0])
            if self.has_cr:
                text = bytes(self.text) if isinstance(self.text, mmap.mmap) else self.text
                if isinstance(text, str):
                    starts.extend(m.end() for m in re.finditer(r"\r\n|\r|\n", text))
                else:
                    starts.extend(m.end() for m in re.finditer(rb"\r\n|\r|\n", text))
            else:
                self._extend_starts(starts)
            self._starts = starts
        return self._starts

    #: Characters split at a time when building the line table (bounds its transient memory).
    _BUILD_CHUNK = 1 << 20

    def _extend_starts(self, starts: array) -> None:
        """Append the start of every line after the first (text without `\r`), chunk by chunk:
        each chunk is split on `\n` and its line lengths accumulated in C."""
        text, nl, n = self.text, self._nl, len(self.text)
        pos = 0
        while pos < n:
            end = text.find(nl, min(n, pos + self._BUILD_CHUNK) - 1)
            end = n if end < 0 else end + 1  # the chunk ends just after a line break
            parts = text[pos:end].split(nl)
            parts.pop()  # what follows the chunk's last break belongs to the next chunk
            following = accumulate(map((1).__add__, map(len, parts)), initial=pos)
            next(following)  # `pos` itself is already in the table
            starts.extend(following)
            pos = end

    @property
    def line_count(self) -> int:
        """Number of lines as LSP counts them (a final line break starts an empty last line)."""
        if self._dense:
            return self._line_total
        if self._starts is None:
            return self.line_of(len(self.text)) + 1
        return len(self._starts)

    #: How many lines past a known one `line_start` walks before it builds the whole table.
    _WALK = 256

    def line_start(self, line: int) -> int:
        """Offset of the start of `line` (clamped to the first and last lines). Near a line whose
        start is known (the pre-filter's, or one counted) it walks there; else it builds the table."""
        if self._dense:
            return self._dense_start(max(0, min(line, self._line_total - 1)))
        if self._starts is None and (near := self._start_near(line)) is not None:
            return near
        starts = self._build()
        return starts[max(0, min(line, len(starts) - 1))]

    def _dense_start(self, line: int) -> int:
        """The start of `line` (one of the text's) in a dense index: from the checkpoint before
        it, a `find` per line (a few dozen lines)."""
        i = bisect.bisect_right(self._cp_lines, line) - 1
        pos, steps = self._cp_offsets[i], line - self._cp_lines[i]
        if self.has_cr:
            for _ in range(steps):
                pos = self._after_break(self.line_end_at(pos))
            return pos
        find, nl = self.text.find, self._nl
        for _ in range(steps):
            pos = find(nl, pos) + 1
        return pos

    def _start_near(self, line: int) -> int | None:
        i = bisect.bisect_right(self._cp_lines, line) - 1
        if i < 0 or line - self._cp_lines[i] > self._WALK:
            return None
        pos = self._cp_offsets[i]
        for _ in range(line - self._cp_lines[i]):
            end = self.line_end_at(pos)
            if end >= len(self.text):
                return None  # past the last line: clamped by the table
            pos = self._after_break(end)
        return pos

    def line_text(self, line: int) -> str:
        """The text of `line` without its line break; '' past the end."""
        if self._dense:
            if line < 0 or line >= self._line_total:
                return ""
            start = self.line_start(line)
        else:
            starts = self._build()
            if line < 0 or line >= len(starts):
                return ""
            start = starts[line]
        return self.slice(start, self.line_end_at(start))

    # -- walking ------------------------------------------------------------------------------
    def _after_break(self, end: int) -> int:
        """Offset after the line break at `end`."""
        return end + 2 if self.text[end : end + 2] == self._crlf else end + 1

    def next_line_start(self, start: int) -> int:
        """Offset of the line after the one starting at `start`; len(text) at the end."""
        end = self.line_end_at(start)
        if end >= len(self.text):
            return len(self.text)
        return self._after_break(end)

    #: Walks of up to this many lines step line by line (a traceback's preamble); longer ones (a
    #: root's context window, the lines above it that carry its time) read a block of text at a
    #: time: one decode and split in C where a step takes a search, a slice and a decode per line.
    _STEP_LINES = 8
    #: How much text a block read takes at a time (doubled while a block holds no whole line).
    _BLOCK = 1 << 13

    def iter_lines_from(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        """Yield (line number, text) of up to `limit` lines from the line starting at `start`
        (numbered `line`)."""
        if limit > self._STEP_LINES and not self.has_cr:  # (a bare `\r` breaks lines too)
            return self._blocks_from(start, line, limit)
        return self._steps_from(start, line, limit)

    def _steps_from(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        n = len(self.text)
        for _ in range(limit):
            if start > n:
                return
            end = self.line_end_at(start)
            yield line, self.slice(start, end)
            if end >= n:
                return
            start = self._after_break(end)
            line += 1

    def _blocks_from(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        n, block = len(self.text), self._BLOCK
        while limit > 0 and start <= n:
            hi = min(n, start + block)
            if hi < n:  # the block ends at a line end
                last_break = self.rfind("\n", start, hi)
                if last_break < 0:
                    block *= 2
                    continue
                hi = last_break
            texts = self.slice(start, hi).split("\n")[:limit]
            for text in texts:
                yield line, text
                line += 1
            limit -= len(texts)
            if hi >= n:
                return
            start = hi + 1

    def window(self, start: int, line: int, limit: int, literals: Sequence[str] = ()) -> LineWindow:
        """The `limit` lines from the line starting at `start` (numbered `line`); with `literals`,
        only those that may hold them all (see `LineWindow`)."""
        return LineWindow(self, start, line, limit, tuple(literals))

    def iter_lines_back(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        """Yield (line number, text) of up to `limit` lines before the one starting at `start`
        (numbered `line`), nearest first."""
        if limit > self._STEP_LINES and not self.has_cr:
            return self._blocks_back(start, line, limit)
        return self._steps_back(start, line, limit)

    def _steps_back(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        text = self.text
        for _ in range(limit):
            if start <= 0:
                return
            end = start - 1
            if end > 0 and text[end - 1 : end + 1] == self._crlf:
                end -= 1
            prev = self.line_start_at(end)
            line -= 1
            yield line, self.slice(prev, end)
            start = prev

    def _blocks_back(self, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
        end, block = start - 1, self._BLOCK  # `end`: the line break that ends the line above
        while limit > 0 and end >= 0:
            lo = max(0, end - block)
            if lo > 0:  # the block starts at a line start
                first_break = self.find("\n", lo, end)
                if first_break < 0:
                    block *= 2
                    continue
                lo = first_break + 1
            texts = self.slice(lo, end).split("\n")[-limit:]
            for text in reversed(texts):
                line -= 1
                yield line, text
            limit -= len(texts)
            end = lo - 1


class LineWindow:
    """Iterates (line number, text) over a window of `limit` lines of an index.

    With `literals`, only the lines holding all of them are read: the first is found with `find`
    at C speed, the others checked in the line found, and line numbers are counted with `count`
    from the last line numbered (looked up past a long gap): reading the one writer's lines that follow a
    traceback costs what `find` costs, not a Python step per line of every other writer. Lines
    holding an ESC are read too (a colour code may split a literal in the raw text). The search
    goes block by block, so a literal that never occurs again costs the window, not the rest of
    the text. After iterating, `reached_end` tells whether the text ended inside the window (only
    then may more of it follow in a growing log); `at_last_line`, whether the line last yielded
    is the text's last (in a growing log it may be cut).
    """

    _FIRST_BLOCK = 1 << 16
    _MAX_BLOCK = 1 << 22

    def __init__(self, index: LogIndex, start: int, line: int, limit: int, literals: tuple[str, ...]) -> None:
        self.index = index
        self.start, self.line, self.limit = start, line, limit
        self.literals = literals
        self.reached_end = False
        self.at_last_line = False  # the line just yielded is the text's last (it may be cut)
        self._known = (start, line)  # (offset, number) of the last line numbered
        self._wider: tuple[str, ...] | None = None  # literals to read by from the next line on

    def widen(self, literals: Sequence[str]) -> None:
        """From the line after the one last yielded on, yield the lines holding `literals`
        instead (at least one: a window of literals stays one). A window of every line has
        them already."""
        assert literals
        if self.literals:
            self._wider = tuple(literals)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        if self.limit <= 0 or self.start > len(self.index.text):
            return iter(())
        return self._lines_holding() if self.literals else self._every_line()

    def _every_line(self) -> Iterator[tuple[int, str]]:
        index, n = self.index, len(self.index.text)
        pos, number, last = self.start, self.line, self.line + self.limit - 1
        while True:
            end = index.line_end_at(pos)
            self.at_last_line = end >= n
            yield number, index.slice(pos, end)
            if end >= n:
                self.reached_end = True
                return
            if number == last:
                return
            pos, number = index._after_break(end), number + 1

    def _next_hit(self, needles: list[Needle], pos: int, end: int) -> int:
        """The first offset in [pos, end) where one of `needles` starts, or -1. Each needle after
        a hit is searched for only before that hit (a rare one, an ESC, would otherwise be
        searched for to the end of the block at every line the window yields)."""
        text = self.index.text
        best = -1
        for needle in needles:
            hit = text.find(needle, pos, end + len(needle) - 1)
            if hit >= 0:
                best = end = hit  # (the next needle must start before it)
        return best

    #: Past this many units from the last numbered line, a number is looked up (`line_of`, which
    #: counts from the nearest known line, e.g. one the pre-filter's tool numbered) instead of
    #: counted from it.
    _NEAR = 1 << 16

    def _number(self, offset: int) -> int:
        """The line holding `offset` (at or after the last line numbered in this window)."""
        index = self.index
        known_pos, known_line = self._known
        if index.has_line_table or offset - known_pos > self._NEAR:
            line = index.line_of(offset)
        else:
            line = known_line + index._breaks(known_pos, offset)
        self._known = (offset, line)
        return line

    #: Text read at a time by `_run` at first (doubled while all of it is the window's lines).
    _RUN_BLOCK = 1 << 10
    _MAX_RUN_BLOCK = 1 << 16

    def _run(
        self, needles: list[Needle], start: int, number: int, last: int
    ) -> Generator[tuple[int, str], None, tuple[int, int] | None]:
        """Yield the window's lines from the one at `start` (numbered `number`) on while each
        holds a needle, as `_lines_holding` yields them, reading a block of text at a time (one
        slice and split where the search takes a find, two line-end searches and a slice per
        line). Returns (start, number) of the first line holding none, or None when the
        window has ended; `number` is at most `last`.

        The block is split on `\n`. In a text with a `\r`, a piece ending in the only `\r` it
        holds, with a `\n` after it, is a line ended by `\r\n`; a piece with any other `\r`
        (a progress bar's bare `\r` breaks, a `\r` at the end of the text) is handed back
        (its start is returned) to be read line by line."""
        index = self.index
        text, n, nl, cr = index.text, len(index.text), index._nl, index._cr if index.has_cr else None
        literal, escape = needles[0], needles[1] if len(needles) > 1 else None
        block = self._RUN_BLOCK
        while True:
            hi = min(n, start + block)
            if hi < n:  # the block ends at a line end
                cut = text.rfind(nl, start, hi)
                if cut < 0:
                    return start, number  # (a line longer than the block: searched for as usual)
                hi = cut
            for piece in text[start:hi].split(nl):
                after = start + len(piece) + 1  # (the next piece's start)
                if cr is not None and cr in piece:
                    if piece.find(cr) != len(piece) - 1 or after > n:
                        return start, number  # (a bare `\r`: read line by line)
                    piece = piece[:-1]  # (a `\r\n` line)
                end = start + len(piece)
                if literal not in piece and (escape is None or escape not in piece):
                    return start, number
                line = piece if isinstance(piece, str) else self._decoded(piece, start, end)
                if self._holds(line):
                    self.at_last_line = end >= n
                    yield number, line
                if end >= n:
                    self.reached_end = True
                    return None
                if number == last:
                    return None
                start, number = after, number + 1
                if self._widened():  # (the next lines are read by the new literals)
                    needles = self._needles()
                    literal, escape = needles[0], needles[1] if len(needles) > 1 else None
            block = min(block * 2, self._MAX_RUN_BLOCK)

    def _holds(self, line: str) -> bool:
        """Whether a line found holding the first literal or an ESC holds every literal: in its
        text; with an ESC, in its text or in its text without colour codes, which may split one.
        (Most lines of a coloured log hold an ESC: yielding each, the window after every
        traceback would have its reader parse every other writer's line.)"""
        literals = self.literals
        if all(literal in line for literal in literals):
            return True
        return ESCAPE in line and all(literal in self.index.without_colour(line) for literal in literals)

    def _decoded(self, piece: bytes, start: int, end: int) -> str:
        """`index.slice(start, end)` of a line whose bytes `piece` are at hand."""
        line = piece.decode("utf-8", "replace")
        return line if "\ufffd" not in line else self.index.slice(start, end)

    def _needles(self) -> list[Needle]:
        """What the search looks for: the first literal, and an ESC where the text has one (a
        line found must then hold every literal: `_holds`)."""
        index = self.index
        needles = [index._lit(self.literals[0])]
        if index.has_escape:
            needles.append(index._lit(ESCAPE))
        return needles

    def _widened(self) -> bool:
        """Take the literals `widen` asked for, if it did."""
        if self._wider is None:
            return False
        self.literals, self._wider = self._wider, None
        return True

    def _lines_holding(self) -> Iterator[tuple[int, str]]:
        index, n = self.index, len(self.index.text)
        needles = self._needles()
        pos, last = self.start, self.line + self.limit - 1
        self._known = (self.start, self.line)
        # The line after the last one read, and its number: when the next hit is on it (the
        # writer's lines in a row: a traceback), its number is known without counting.
        next_start, next_number = self.start, self.line
        block = self._FIRST_BLOCK
        while True:
            block_end = min(n, pos + block)
            hit = self._next_hit(needles, pos, block_end)
            if hit < 0:
                if block_end >= n:
                    self.reached_end = self._number(n) <= last
                    return
                if self._number(block_end) > last:
                    return
                pos, block = block_end, min(block * 2, self._MAX_BLOCK)
                continue
            start, end = index.line_start_at(hit), index.line_end_at(hit)
            if start == next_start:
                number = next_number
                self._known = (start, number)
            else:
                number = self._number(max(start, self._known[0]))
            if number > last:
                return
            consecutive = start == next_start
            text = index.slice(start, end)
            if self._holds(text):
                self.at_last_line = end >= n
                yield number, text
            if end >= n:
                self.reached_end = True
                return
            if number == last:
                return
            pos = next_start = index._after_break(end)
            next_number = number + 1
            if self._widened():
                needles = self._needles()
            if consecutive:
                # Two of the window's lines in a row (a traceback): the next ones probably
                # are too, and are read as one block while they are.
                literals = self.literals
                stopped = yield from self._run(needles, pos, next_number, last)
                if stopped is None:
                    return
                pos = next_start = stopped[0]
                next_number = stopped[1]
                self._known = stopped
                if self.literals is not literals:  # (widened during the run)
                    needles = self._needles()
