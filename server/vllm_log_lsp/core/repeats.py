"""Runs of a traceback repeated back to back, told apart only by their digits: read once.

A server that fails every request the same way (a prompt over the context length, a client
that keeps disconnecting) logs the same traceback for each request, one right after the other,
tens of thousands of times: the same writer, the same frames, the same exception; only the
timestamps, the token counts and the request ids differ, and those are digits. Between two
copies there may be a few lines of others, the same each time: the request's access-log line
(`"POST /v1/chat/completions HTTP/1.1" 400 Bad Request`), another logger's record. The scan reads
the first copy of such a run (`scan.scan_lines`), then compares the text that follows with it,
a copy at a time at C speed: the copies between the first and the last are counted, not read;
the last is read as usual (what follows a run, a death most of all, is then read exactly as
before, and a run's last copy is the one a death right after it may come from).

What a copy is: the first copy is the traceback's lines (with its writer's line directly above
the header, when there is one), each starting with the writer's prefix, holding none of the
scan's marker literals. A copy is as many lines right after the previous copy, each starting
with one prefix that is the first copy's but for its timestamp (the same process, pid and
logger source: the same writer), whose text is the first copy's once each run of digits is
written as one `0`. A copy may end with up to `MAX_GAP` lines after its traceback (the gap),
when the line after them starts the next copy: lines holding none of the scan's literals (no
candidate, no marker: the scan reads nothing on them) and no colour code, which every copy
has alike but for its digits (any writer's). So its reading would take the same lines the
same way: the reader's decisions read the lines' shapes (`File "…", line N`, `Type: message`,
indentation, the writer), never the value or the length of a number in a message or a
timestamp. Its frames' line numbers and its message's numbers are its own: the analysis does
not keep them; it keeps the run (`RepeatRun`), from which each copy's lines (its fold, the
lines it consumed) follow.

What a skipped copy is not: a candidate root cause. The deaths, their root causes, phases and
fixes are those of reading every copy (the first and the last copy are candidates, and a run
holds no marker line, so no death and no window bound falls between them); what names other
candidates (the "also considered" list, the other copies of a root cause) leaves the skipped
ones out. A traceback Python printed as its process died (`tracebacks.is_uncaught`) is a death
of its own: its copies are always read.
"""

from __future__ import annotations

import bisect
import functools
import re
from array import array
from collections.abc import Iterable, Iterator

from . import regexes
from .lines import writer_prefix
from .linesets import LineRuns
from .model import LogLine
from .records import dataclass
from .source import release_pages
from .text import MASK_DIGITS, LogIndex, Text
from .tracebacks import Traceback, is_uncaught

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import AnyStr

#: A first copy is compared only when it is at most this long (bytes or characters) ...
MAX_COPY_SIZE = 1 << 16
#: ... and at most this many lines: the work on a traceback that repeats nothing stays bounded.
MAX_COPY_LINES = 1000
#: The most lines a copy may end with after its traceback, before the next copy (see above).
MAX_GAP = 3
#: The texts (a traceback's, digits collapsed) whose markers' answer and copy pattern are kept:
#: a log repeats a few kinds of error (each text at most `MAX_COPY_SIZE`: the memory is bounded).
_TEXTS_KEPT = 32
#: Whether runs are skipped at all (off: the reference the tests compare with).
SKIP_REPEATS = True
_MASK_STR = str.maketrans("123456789", "000000000")
# How far the comparison goes past the pages it released last before it releases again, and what
# it keeps mapped behind its position (the scan reads lines above the next header).
_RELEASE_STEP = 1 << 23
_KEEP_BEHIND = 1 << 20


def collapse_digits(piece: AnyStr) -> AnyStr:
    """`piece` with each run of ASCII digits written as one `0` (a few C-speed passes)."""
    if isinstance(piece, str):
        masked = piece.translate(_MASK_STR)
        while "00" in masked:
            masked = masked.replace("00", "0")
        return masked
    masked_bytes = piece.translate(MASK_DIGITS)
    while b"00" in masked_bytes:
        masked_bytes = masked_bytes.replace(b"00", b"0")
    return masked_bytes


_DIGIT_RUNS = regexes.compile(r"([0-9]+)")  # (split, the runs kept)
_NO_DIGITS = re.compile(r"[^0-9]*")
_NO_DIGIT_BYTES = re.compile(rb"[^0-9]*")
_DIGIT_RUNS_ONLY = regexes.compile(r"[0-9]+")


def copy_pattern(block: str, prefix: str, stamp: tuple[int, int], as_bytes: bool, gap: int = 0) -> re.Pattern:
    """The pattern a copy of `block` (the first copy's lines, each starting with `prefix`, its
    timestamp at `stamp` in it; (0, 0): none; then `gap` lines of others) matches, from its
    start to its end (`match`): as many lines, the first starting with `prefix` but for its
    timestamp (the same widths of digits), every other but the gap's with that same prefix, the
    rest of each line (a gap line: all of it) the block's once each run of digits may be any
    other run of digits.

    The pattern depends on the block's text only with its digits collapsed: a traceback the log
    printed before (the same error again, elsewhere) has its pattern made once (`_pattern_of`;
    escaping a traceback's text for a pattern costs more than reading it)."""
    a, b = stamp
    own_time = "".join(
        f"[0-9]{{{len(part)}}}" if _DIGIT_RUNS_ONLY.fullmatch(part) else re.escape(part)
        for part in _DIGIT_RUNS.split(prefix[a:b])
        if part
    )
    lines = block.split("\n")[:-1]
    own = len(lines) - gap
    texts = [row[len(prefix) :] for row in lines[:own]] + lines[own:]  # (a gap line: all of it)
    timed = (prefix[:a], own_time, prefix[b:]) if b > a else None
    return _pattern_of(prefix, timed, collapse_digits("\n".join(texts)), own, as_bytes)


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _pattern_of(
    prefix: str, timed: tuple[str, str, str] | None, texts: str, own: int, as_bytes: bool
) -> re.Pattern:
    """`copy_pattern`'s pattern: `own` lines of `prefix` (`timed`: the prefix around its
    timestamp and the timestamp's pattern) then the gap's, `texts` the lines' texts but the
    prefix, `\n`-joined, digits collapsed (each `0` a run of digits); made in one pass over the
    text (`re.escape` writes a line break as `\\` and the break)."""
    rests = _digits_any(texts).split("\\\n")
    if timed is not None:
        head, tail = re.escape(timed[0]), re.escape(timed[2])
        first, others = f"{head}(?P<t>{timed[1]}){tail}", f"{head}(?P=t){tail}"
    else:
        first = others = re.escape(prefix)
    rows = [first + rests[0], *(others + rest for rest in rests[1:own]), *rests[own:]]
    pattern = "\n".join(rows) + "\n"
    return re.compile(pattern.encode("utf-8")) if as_bytes else re.compile(pattern)


def _digits_any(text: str) -> str:
    """A pattern of `text` whose runs of digits may be any others (`re.escape` leaves digits
    as they are, so its runs of digits are the text's)."""
    return _DIGIT_RUNS_ONLY.sub("[0-9]+", re.escape(text))


def _end_of_lines(text: Text, newline: Text, start: int, count: int) -> int:
    """The offset after the `newline` ending the `count`-th line from `start` (-1: the text
    ends first). A block of text at a time is split in C (a traceback has dozens of lines)."""
    if count <= 0:
        return start
    size = _FIRST_BLOCK
    while True:
        block = text[start : start + size]
        parts = block.split(newline, count)  # type: ignore[arg-type]
        if len(parts) > count:
            return start + len(newline.join(parts[:count])) + 1  # type: ignore[arg-type, union-attr]
        if start + size >= len(text):
            return -1
        size *= 4


# The text `_end_of_lines` splits at first (grown while it holds too few lines).
_FIRST_BLOCK = 1 << 12


@dataclass(eq=False, slots=True)
class RepeatRun:
    """Copies of a traceback that the scan skipped, one after another, each `lines` lines and
    matching `pattern` (`copy_pattern`): copy 1 starts at line `first_line`, offset `bounds[0]`,
    and each copy ends where the next starts (`bounds[i]`: the start of copy i + 1). The first
    copy (copy 0, read as usual) ends where copy 1 starts; the copy at the last bound was read as
    usual too. Places are lines within a copy (0: its first line)."""

    pattern: re.Pattern
    lines: int
    first_line: int
    bounds: array[int]
    header_at: int  # the traceback header's place
    consumed: tuple[tuple[int, int], ...]  # the places the traceback consumed, as runs [a, b)
    exceptions: tuple[int, ...]  # the places of its `Type: message` lines

    @property
    def skipped(self) -> int:
        return len(self.bounds) - 1

    @property
    def start(self) -> int:
        """The offset of the first skipped copy."""
        return self.bounds[0]

    @property
    def end(self) -> int:
        """The offset after the last skipped copy."""
        return self.bounds[-1]

    def folds(self) -> Iterator[tuple[int, int]]:
        """(header, last line) of each skipped copy (see `Analysis.folds`)."""
        header = self.first_line + self.header_at
        last = self.first_line + self.consumed[-1][1] - 1
        for copy in range(self.skipped):
            yield header + copy * self.lines, last + copy * self.lines

    def cut(self, copies: int) -> RepeatRun:
        """The run with its first `copies` skipped copies only."""
        bounds = self.bounds[: copies + 1]
        return RepeatRun(
            self.pattern, self.lines, self.first_line, bounds, self.header_at, self.consumed, self.exceptions
        )


class MarkerLiterals:
    """Literals a copy must not hold (the scan's markers: a line holding one means more than
    its traceback), looked for in a text with its digits collapsed, as literals with theirs
    collapsed: a copy with other digits might hold one where the first copy does not (`EZ9`
    where it reads `EZ1234`), and a literal without a digit is in a text exactly when it is in
    that text collapsed."""

    __slots__ = ("_held", "literals")

    def __init__(self, literals: Iterable[str]) -> None:
        self.literals = tuple(sorted({collapse_digits(literal) for literal in literals}))
        # (A text's answer kept: a log prints the same traceback again, digits aside.)
        self._held = functools.lru_cache(maxsize=_TEXTS_KEPT)(self._held_by_collapsed)

    def held_by(self, block: str) -> bool:
        """Whether `block`, or a copy of it with other digits, might hold one of the literals."""
        return self._held(collapse_digits(block))

    def _held_by_collapsed(self, collapsed: str) -> bool:
        # (One C-speed `in` a literal: a few dozen over a block beat one alternation's search.)
        return any(literal in collapsed for literal in self.literals)


@functools.lru_cache(maxsize=8)
def marker_literals(literals: frozenset[str]) -> MarkerLiterals:
    """`MarkerLiterals` of the scan's marker literals (one catalog's, built once)."""
    return MarkerLiterals(literals)


def first_copy(
    index: LogIndex,
    tb: Traceback,
    header: LogLine,
    header_start: int,
    literals: MarkerLiterals,
    gap_literals: MarkerLiterals,
) -> RepeatRun | None:
    """The run (no copy skipped yet) that copies of the traceback just read would make, when
    they could be skipped; None otherwise. `literals`: those no copy may hold (the markers);
    `gap_literals`: those no line of a gap may hold (all the scan's)."""
    if tb.open or not tb.lines or tb.last_line <= tb.header_line or is_uncaught(tb):
        return None  # (a process's death is never one of many copies: each is read)
    prefix = writer_prefix(header)
    if prefix is None:
        return None
    text, newline = index.text, index._nl
    first_start, first_line = header_start, tb.header_line
    above = tb.preamble_record
    if above is not None and above.number == header.number - 1:
        first_start, first_line = index.line_start_at(header_start - 1), above.number
    lines = tb.last_line - first_line + 1
    end = _end_of_lines(text, newline, first_start, lines) if lines <= MAX_COPY_LINES else -1
    if end < 0 or end - first_start > MAX_COPY_SIZE:
        return None
    next_start = _next_copy_start(text, newline, first_start, end)
    if next_start < 0 or next_start - first_start > MAX_COPY_SIZE:
        return None
    piece = text[first_start:next_start]
    if not _next_copy_alike(text, newline, piece, next_start):
        return None  # (what a copy matching the pattern needs: no pattern made for nothing)
    block = piece if isinstance(piece, str) else bytes(piece).decode("utf-8", "replace")
    rows = block.split("\n")[:-1]  # (the block ends with its last line's `\n`)
    own, gap = rows[:lines], rows[lines:]
    if "\r" in block or "\ufffd" in block or any(not row.startswith(prefix.text) for row in own):
        return None  # (a progress bar's bare `\r`; undecodable bytes: lengths would not agree)
    if literals.held_by(block):
        return None
    if gap and ("\x1b" in (between := "\n".join(gap)) or gap_literals.held_by(between)):
        return None  # (a gap line the scan would read, or whose text its parse would not be)
    stamp = _stamp_span(prefix.text, header.timestamp)
    return RepeatRun(
        copy_pattern(block, prefix.text, stamp, not isinstance(piece, str), len(gap)),
        len(rows),
        first_line + len(rows),
        array("q", [next_start]),
        tb.header_line - first_line,
        LineRuns([n - first_line for n in tb.lines]).runs(),
        tuple(e.line - first_line for e in tb.chain),
    )


def _next_copy_start(text: Text, newline: Text, first_start: int, end: int) -> int:
    """The start of the line, at `end` or up to `MAX_GAP` lines after it, that reads as the
    line at `first_start` but for its digits (-1: none): where a copy after the one from
    `first_start` to `end` would start (most tracebacks are followed by something else: this
    is all they cost)."""
    first_line: str | bytes = text[first_start : text.find(newline, first_start)]  # type: ignore[arg-type]
    first = _collapsed(first_line)
    # (What comes before a line's first digit is not collapsed: a line that differs there is
    # no copy's, told without collapsing it.)
    head = first_line[: _digits_from(first_line)]
    at = end
    for _ in range(MAX_GAP + 1):
        after = text.find(newline, at)  # type: ignore[arg-type]
        if after < 0:
            return -1
        if text[at : at + len(head)] == head and _collapsed(text[at:after]) == first:
            return at
        at = after + 1
    return -1


def _digits_from(line: str | bytes) -> int:
    """Where the first digit of `line` is (its length: none)."""
    found = _NO_DIGITS.match(line) if isinstance(line, str) else _NO_DIGIT_BYTES.match(line)
    return found.end() if found else 0


def _next_copy_alike(text: Text, newline: Text, piece: str | bytes, start: int) -> bool:
    """Whether the lines from `start` read as `piece` (the first copy, whole lines) but for their
    digits: what a copy there needs to match the first copy's pattern (each run of digits the
    pattern reads is one in the collapsed text), checked in C before the pattern is made."""
    count = piece.count("\n") if isinstance(piece, str) else piece.count(b"\n")
    end = _end_of_lines(text, newline, start, count)
    if end < 0:
        return False
    following = text[start:end]
    # The last lines first (tracebacks of one place differ in their exception, at the end; the
    # lines after it are the gap's): most tracebacks that are no copy are told there.
    tail = MAX_GAP + 2
    if _collapsed(_last_lines(following, tail)) != _collapsed(_last_lines(piece, tail)):
        return False
    return _collapsed(following) == _collapsed(piece)


def _last_lines(text: str | bytes, count: int) -> str | bytes:
    """The last `count` lines of `text` (which ends with a line break), or all of it (split
    from the end: as far as those lines)."""
    if isinstance(text, str):
        parts = text.rsplit("\n", count + 1)
        return "\n".join(parts[1:]) if len(parts) == count + 2 else text
    pieces = text.rsplit(b"\n", count + 1)
    return b"\n".join(pieces[1:]) if len(pieces) == count + 2 else text


def _collapsed(piece: str | bytes) -> str | bytes:
    """`collapse_digits` of a slice of the text (an editor's str, or a file's bytes: a mapping's
    slice is bytes already; the two calls are one each for the type checker's `AnyStr`)."""
    if isinstance(piece, str):
        return collapse_digits(piece)
    return collapse_digits(piece)


def _stamp_span(prefix: str, timestamp: str | None) -> tuple[int, int]:
    at = prefix.find(timestamp) if timestamp else -1
    return (at, at + len(timestamp)) if timestamp and at >= 0 else (0, 0)


def skip_copies(index: LogIndex, run: RepeatRun, released: int) -> tuple[int, int, int]:
    """Add to `run` the copies that follow one another from its end but the last (read as
    usual): how many copies followed, how many were added, and where the pages of a mapped
    file were released up to (see `source.release_pages`)."""
    text, match, bounds = index.text, run.pattern.match, run.bounds
    at, found = bounds[-1], 0
    while (copy := match(text, at)) is not None:
        if found:
            bounds.append(at)
        found += 1
        at = copy.end()
        if at - released > _RELEASE_STEP:
            released = release_pages(text, released, at - _KEEP_BEHIND)
    return found, max(found - 1, 0), released


def next_copy_end(tb: Traceback) -> int:
    """The last line a copy after `tb` could reach (a gap, its writer's line above the header,
    its lines and its own gap): where the scan looked to tell whether one follows."""
    return tb.last_line + (tb.last_line - tb.header_line + 2) + 2 * MAX_GAP


def resume_point(index: LogIndex, runs: list[RepeatRun], stable: int) -> int:
    """Where a scan cut at offset `stable` must read again for a run of copies to go on as one.

    Whether a run went on was decided by its text up to the end of the copy after its last (the
    one that did not match) or of the text: a cut before that goes back to the start of a copy,
    at most the last copy's (the copies before it stay skipped: `truncate_scan`; the scan goes
    on comparing from there: `scan_lines`)."""
    text, newline = index.text, index._nl
    for run in runs:
        if stable <= run.start:
            break
        last_end = _end_of_lines(text, newline, run.end, run.lines)
        decided = _end_of_lines(text, newline, last_end, run.lines) if last_end >= 0 else -1
        if decided < 0 or stable < decided:
            return run.bounds[bisect.bisect_right(run.bounds, stable) - 1]
    return stable
