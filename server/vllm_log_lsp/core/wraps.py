"""A log copied from a terminal that cut its long lines into rows: found, and read joined.

A terminal shows a line longer than its width W as rows of W columns and a last, shorter row.
Most terminals join those rows again when text is copied; some keep them as lines of their own
(GNU screen, a web or serial console, an old Windows console, a copy of a terminal's screen).
A log copied so has every long line cut: a rule's message no longer matches, a traceback's
exception line loses its end, and the rows after the first look like lines of nothing.

`wrap_width` finds the width from the shape such a copy has and a natural log does not:
- no row is wider than W, and several distinct rows are exactly W wide (every line longer than W
  leaves at least one);
- after each run of W-wide rows comes a shorter row that does not start the way a line does (a
  vLLM record, a process prefix, a timestamp, a traceback's header or frame, an exception): it
  is the end of the line that was cut.
A table printed at a fixed width (`nvidia-smi`) has runs of rows of one width too, but the row
after its run starts a line of its own, or is blank; a line cut at a fixed length by a collector
is followed by the next record. Neither is taken for a wrapped copy.

`unwrap` joins each row W wide with the rows that continue it, and `WrappedLines` maps positions
in the joined text (the transcript the analysis reads) back to the rows, as a JSON log's
transcript is mapped (`jsonlog.TranscriptLines`): a root cause is shown on the row where its
line starts, and a span over the cut on the rows it covers.

Widths are terminal columns: an East Asian wide character takes two, a combining mark none; a
wide character that does not fit in a row's last column goes to the next row. A copy may pad every
row with spaces to the width (an old Windows console), or trim the spaces that end a row (most
copies): a cut row that ends up to `_TRIMMED` columns short is given its spaces back. A cut that
fell inside a longer run of spaces (a traceback's indentation) is not joined.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter

from . import regexes
from .lines import OPERATOR_NAMES
from .text import Text, text_start

#: How much of the log's start `wrap_width` reads: a terminal copy is all of one width.
SAMPLE_CHARS = 1 << 16
#: Narrower than this is not a terminal's width (it would cut nearly every line).
_MIN_WIDTH = 60
#: The share of rows as wide as the widest in a copy that padded every row with spaces.
_PADDED = 0.9
#: Spaces a copy may have trimmed off the end of a cut row (where the cut fell after them).
_TRIMMED = 2
#: Runs of rows of the widest width, each followed by the end of its line, that make a width
#: (or one run of `_MIN_ROWS` rows); and distinct rows of that width.
_MIN_CUTS = 2
_MIN_ROWS = 3
#: Runs followed by a line of its own (a line exactly that wide), at most: one, or this share.
_MAX_WHOLE = 0.2

# A log's own way of starting a line: its first characters, digits as one, in this many rows.
_SHAPE_CHARS = 6
_DIGITS = str.maketrans("123456789", "000000000")
_MIN_SHAPE_ROWS = 3

# How a line of its own starts: a vLLM record (process prefix, level, time), torch's rank prefix,
# a bracketed or ISO time, a traceback's header or frame, a Python warning, a shell or launcher
# line. Not an exception's name: a cut inside a dotted name leaves one (`…exceptions.Ray` +
# `TaskError: …`).
_LINE_START = regexes.compile(
    r"""(?x)
    \(\w[\w.\-]*(?:"""
    + OPERATOR_NAMES
    + r""")?(?:\ \w[\w.\-]*)*\ pid=\d+  # vLLM's or Ray's process prefix
    | (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b
    | \[(?:rank\d+|default\d+|\d{4}-\d\d-\d\d|\d\d:\d\d|[A-Z]+\])
    | \d{4}-\d\d-\d\d[ T]\d\d:\d\d
    | [A-Z][a-z]{2}\ [ \d]\d\ \d\d:\d\d:\d\d     # syslog / journald
    | Traceback\ \(most\ recent\ call\ last\)
    | \ \ File\ "
    | During\ handling\ of\ the\ above | The\ above\ exception\ was
    | /[\w.\-/]+\.py:\d+:\ \w                     # a Python warning: `/path/x.py:12: UserWarning`
    | [$#>][ ] | \+[ ] | \w[\w.\-]*\s+\|[ ]     # a shell prompt, `set -x`, a compose service
    """
)


# The characters that may take other than one column: combining marks from U+0300, wide ones
# from U+1100 (Hangul Jamo) on.
_MAYBE_NOT_ONE = regexes.compile("[\u0300-\u036f\u0483-\u0489\u0591-\u0fff\u1100-\U0010ffff]")
# A traceback's frame line, whole, and the indented code line printed under it.
_FRAME = regexes.compile(r'^\s*File "[^"]*", line \d+, in [\w<>.]+$')
_CODE = regexes.compile(r"\s{4}\S")


def display_width(row: str) -> int:
    """The terminal columns `row` takes: two for a wide character, none for a combining mark."""
    if row.isascii():
        return len(row)
    import unicodedata  # (here: a log's rows are mostly ASCII, and a short check spares its import)

    width = len(row)
    for char in _MAYBE_NOT_ONE.findall(row):  # (most non-ASCII characters of a log take one)
        if unicodedata.combining(char):
            width -= 1
        elif unicodedata.east_asian_width(char) in "WF":
            width += 1
    return width


def starts_line(row: str, shapes: frozenset[str] = frozenset()) -> bool:
    """Whether `row` starts the way a log line of its own does (not the rest of a cut line):
    as lines of vLLM and the tools around it do, or with one of the log's own `shapes`."""
    return _LINE_START.match(row) is not None or _shape(row) in shapes


def _shape(row: str) -> str:
    return row[:_SHAPE_CHARS].translate(_DIGITS)


def _line_start_shapes(rows: list[str], widths: list[int], width: int) -> frozenset[str]:
    """How the log's own lines start: the shapes (`_shape`) common among the rows that follow
    a row that cannot have been cut (a line's first row, in a copy). A collector's column before every line
    (`[pod/vllm-0/vllm] `) is one; the rest of a cut line starts anywhere in its text."""
    firsts = [
        _shape(row)
        for at, row in enumerate(rows)
        if row and (at == 0 or _cut_padding(rows, widths, at - 1, width) is None)
    ]
    need = max(_MIN_SHAPE_ROWS, len(firsts) // 50)
    return frozenset(shape for shape, count in Counter(firsts).items() if count >= need)


def _widths(rows: list[str], least: int = 0) -> list[int]:
    """The columns each row takes (0 for a row shorter than `least` characters); in a copy that
    padded every row with spaces to the terminal's width, without those spaces."""
    widths = [display_width(row) if len(row) >= least else 0 for row in rows]
    filled = [width for width, row in zip(widths, rows, strict=True) if row.strip()]
    if filled and filled.count(max(filled)) >= _PADDED * len(filled):
        return [
            display_width(text) if len(text) >= least else 0 for text in (row.rstrip(" ") for row in rows)
        ]
    return widths


def _rows_of(text: str) -> list[str]:
    return [row[:-1] if row.endswith("\r") else row for row in text.split("\n")]


def _sample(text: Text) -> tuple[list[str], bool] | None:
    """The rows of the start of `text` (whole rows only), and whether they are all its rows;
    None when the text holds a bare `\r` or a colour code (a terminal copy has neither: the
    terminal drew them)."""
    head, whole = text_start(text, SAMPLE_CHARS)
    if "\r" in head.replace("\r\n", "") or "\x1b" in head:
        return None
    rows = _rows_of(head)
    if not whole:
        rows.pop()  # (cut by the sample)
    return rows, whole


def _is_cut(rows: list[str], widths: list[int], at: int, width: int) -> bool:
    """Whether row `at` was cut at `width` (its line goes on in the next row): it is that wide,
    or one column less where the next row starts with a wide character that did not fit."""
    if widths[at] == width:
        return True
    following = rows[at + 1] if at + 1 < len(rows) else ""
    return widths[at] == width - 1 and following != "" and display_width(following[0]) == 2


def wrap_width(text: Text) -> int | None:
    """The width a terminal copy cut `text`'s lines at (see the module doc), or None: the log's
    lines are its own. Reads the start of the text only."""
    sample = _sample(text)
    if sample is None:
        return None
    rows, _ = sample
    if len(rows) < _MIN_ROWS + 1:
        return None
    lengths = [len(row.rstrip(" ")) for row in rows]
    widest = max(lengths)
    # (An ASCII row's length is its width: too few rows this long is no copy, padded or not.)
    if widest < _MIN_WIDTH or (
        lengths.count(widest) < _MIN_ROWS and max(map(len, rows)) == widest and all(map(str.isascii, rows))
    ):
        return None
    widths = _widths(rows)
    width = max(widths)
    if width < _MIN_WIDTH:
        return None
    shapes = _line_start_shapes(rows, widths, width)
    ends = continued = longest = 0
    cut_rows: set[str] = set()
    at = 0
    while at < len(rows) - 1:
        if not _is_cut(rows, widths, at, width):
            at += 1
            continue
        run = at
        while run < len(rows) - 1 and _is_cut(rows, widths, run, width):
            cut_rows.add(rows[run])
            run += 1
        after = rows[run]
        ends += 1
        if after.strip() and widths[run] < width and _continues(rows[run - 1], after, shapes):
            continued += 1
            longest = max(longest, run - at)
        at = run + 1
    whole = ends - continued
    if (
        (continued < _MIN_CUTS and longest < _MIN_ROWS)
        or len(cut_rows) < _MIN_ROWS
        or whole > max(1, _MAX_WHOLE * ends)
    ):
        return None
    return width


class WrappedLines:
    """Positions in the joined text (the transcript: one line per line the terminal cut) as
    (row, column) of the copy, and back: the `source_map` of an analysis of a wrapped copy
    (the interface of `jsonlog.TranscriptLines`)."""

    identity = False

    def __init__(self, original: str, text: str, origin: array, row_lengths: array, pieces: array) -> None:
        self.original = original
        self.text = text  # the transcript
        self.origin = origin  # per transcript line: its first row
        self._row_lengths = row_lengths  # per row: its length in code points
        # ... and the length of its piece of the transcript line (a cut row's trimmed spaces
        # given back, its padding taken off)
        self._pieces = pieces

    def __eq__(self, other: object) -> bool:
        """The same map of the same copy (two analyses of one copy compare equal)."""
        if not isinstance(other, WrappedLines):
            return NotImplemented
        return (self.text, self.origin, self._pieces, self.original) == (
            other.text,
            other.origin,
            other._pieces,
            other.original,
        )

    def __hash__(self) -> int:
        return hash(self.text)

    def snapshot(self) -> WrappedLines:
        """This map (it never changes)."""
        return self

    def _rows(self, core_line: int) -> range:
        line = min(max(core_line, 0), len(self.origin) - 1)
        end = self.origin[line + 1] if line + 1 < len(self.origin) else len(self._row_lengths)
        return range(self.origin[line], end)

    def line(self, core_line: int) -> int:
        """The row where transcript line `core_line` starts."""
        if not self.origin:
            return 0
        return self._rows(core_line)[0]

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        """(row, code-point column) of a transcript position: past a row's end, on the next row
        of the line (the last row keeps any column past its end)."""
        if not self.origin:
            return 0, column
        rows = self._rows(core_line)
        for row in rows[:-1]:
            if column < self._pieces[row]:
                return row, min(column, self._row_lengths[row])
            column -= self._pieces[row]
        return rows[-1], column

    def core_position(self, line: int, column: int) -> tuple[int, int]:
        """The transcript position of (row, column) of the copy."""
        if not self.origin:
            return 0, column
        row = min(max(line, 0), len(self._row_lengths) - 1)
        core_line = bisect.bisect_right(self.origin, row) - 1
        before = sum(self._pieces[r] for r in range(self.origin[core_line], row))
        last = row + 1 == (
            self.origin[core_line + 1] if core_line + 1 < len(self.origin) else len(self._pieces)
        )
        return core_line, before + (column if last else min(column, self._pieces[row]))

    def core_line_range(self, line: int) -> tuple[int, int]:
        """The transcript lines written from row `line` (one: the line it is a row of)."""
        core_line = self.core_position(line, 0)[0]
        return core_line, core_line


def unwrap(text: str, width: int) -> WrappedLines:
    """The transcript of a copy cut at `width`: each cut row joined with the rows that continue
    it (not one that starts a line of its own: the cut row was then a line exactly that wide).
    A cut row is its text given back the spaces the copy trimmed (`_cut_padding`)."""
    rows = _rows_of(text)
    widths = _widths(rows, width // 2 - _TRIMMED)
    row_lengths = array("q", map(len, rows))
    origin, pieces = array("q"), array("q", row_lengths)
    shapes = _line_start_shapes(rows, widths, width)
    lines: list[str] = []
    at = 0
    while at < len(rows):
        origin.append(at)
        parts = []
        end = at
        while end + 1 < len(rows) and _continues(rows[end], rows[end + 1], shapes):
            padding = _cut_padding(rows, widths, end, width)
            if padding is None:
                break
            parts.append(rows[end] if not padding else rows[end].rstrip(" ") + " " * padding)
            pieces[end] = len(parts[-1])
            end += 1
        parts.append(rows[end])
        lines.append("".join(parts))
        at = end + 1
    return WrappedLines(text, "\n".join(lines), origin, row_lengths, pieces)


def _cut_padding(rows: list[str], widths: list[int], at: int, width: int) -> int | None:
    """How many spaces end row `at` of a line cut at `width` that the copy trimmed (a row is
    cut after a space as often as a line holds one), or None: it was not cut. A row whose text
    reaches the last column lost none; one column short before a wide character that did not
    fit, none either (the terminal left the column empty)."""
    if _is_cut(rows, widths, at, width):
        return 0
    short = width - widths[at]
    return short if 0 < short <= _TRIMMED else None


def _continues(row: str, following: str, shapes: frozenset[str]) -> bool:
    """Whether `following` can be the rest of the line `row` was cut from: it does not start a
    line of its own (`starts_line`), and is not the code line under a whole frame line."""
    if following == "" or starts_line(following, shapes):
        return False
    return not (_CODE.match(following) and _FRAME.search(row))
