"""The literal pre-filter: which lines of a (possibly huge) log contain any marker literal.

Python's `str.find` scans about 3 GB/s per literal, and the catalog has some sixty literals, so a
100 MB log would take seconds. A multi-literal search matches all of them in one pass, in order
of preference (`candidate_lines`, one group of literals):
1. over a file's bytes, an Aho-Corasick automaton in process (`ahocorasick-rs`, the Rust
   `aho-corasick` crate with its SIMD prefilter: an optional, pinned binary wheel,
   `pip install vllm-log-lsp[fast]`), for inputs from a quarter megabyte: about 7x as fast as
   `grep -F` with this many literals and ~2x ripgrep, no subprocess, and it counts lines the way
   LSP does;
2. ripgrep (`rg`, SIMD literal search) for large inputs: a file on disk is read by rg itself, an
   editor's text is piped to it a piece at a time; the automaton next for an editor's text
   (searched as UTF-8 a piece at a time: `_search_str`);
3. `grep -F`, where neither is there (the bundled VS Code server has no automaton);
4. `str.find` per literal: small inputs, and everything else.
The tools end lines at `\n` only: in a log with bare `\r` (progress bars) their lines are split
into LSP's (`_split_at_bare_crs`). All paths return the same lines (tested), but that rg may
return a few more: it searches for a part of some literals (`search_forms`: the part its SIMD
search checks least often), and the lines' readers test each line for their own literal.

The analysis searches with `candidate_lines_by_group`, which runs its other work (the UTF-8
check) beside the search: there a file on disk goes to rg first, one process per group of
literals, as rg numbers the lines too and runs in a process of its own (a search started early,
`early`, hands over the scan group's process still running: the scan reads its rows as rg writes
them, `StreamedRows`, on the other core, instead of waiting for the end); then the automaton, one
pass per group in a thread over a file's bytes, one pass over the union for an editor's text
(each line given to the groups of the literals matched: `_automaton_by_group`); else one search
over the union, each line then split by the groups' literals.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from operator import itemgetter

# subprocess and threading are imported where a tool runs: a small log never needs them, and they
# cost a `check` of one a noticeable share of its start-up.
from . import early, regexes
from .source import release_pages
from .text import MASK_DIGITS, LogIndex, Text
from .tools import find_program

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any, TypeVar

    _T = TypeVar("_T")
    _Row = TypeVar("_Row", tuple[int, int], tuple[int, int | None])

# Below this many characters a subprocess costs more than it saves.
TOOL_THRESHOLD = early.TOOL_THRESHOLD
_TOOL_TIMEOUT = 120
#: Search tools in order of preference; `VLLM_LOG_LSP_NO_GREP=1` disables them all.
TOOLS = ("rg", "grep")

Tool = tuple[str, str]  # (kind, executable path)
Numbered = list[tuple[int, int]]  # (line start, line number) of the lines found


def search_tool(kinds: Iterable[str] = TOOLS) -> Tool | None:
    """The fastest literal-search tool on PATH (trusted entries only, see `tools`), or None."""
    if os.environ.get("VLLM_LOG_LSP_NO_GREP"):
        return None
    for kind in kinds:
        path = find_program(kind)
        if path:
            return kind, path
    return None


def candidate_lines(
    index: LogIndex, literals: Iterable[str], begin: int = 0, tool: Tool | None = None
) -> list[tuple[int, int | None]]:
    """Sorted (line start offset, line number or None) of lines at or after `begin` holding a literal.

    `tool` forces a search tool (tests); by default the best way is chosen (see the module doc).
    """
    literals = sorted(set(literals))
    # The tools count only `\n` as a line break: in a log with a bare `\r`, their lines are
    # split into LSP's (`_split_at_bare_crs`), from the text's start only (where `NewlineLines`
    # numbers them).
    splittable = not index.has_cr or (begin == 0 and not _spans_lines(literals))
    if tool is not None:
        found = _tool_scan(tool, index, literals, begin) if splittable else None
        return found if found is not None else _python_scan(index, literals, begin)
    size = len(index) - begin
    tools = size >= TOOL_THRESHOLD and splittable
    found = None
    # Over a file's bytes the automaton beats rg (no subprocess, no output to parse); over an
    # editor's text the two are about even (20 MB: 0.045-0.08 s each, the automaton searching
    # it as UTF-8), and rg numbers the lines it finds.
    automaton_first = index.is_bytes and size >= AUTOMATON_THRESHOLD
    if automaton_first:
        found = automaton_scan(index, literals, begin)
    rg = search_tool(("rg",)) if tools and found is None else None
    if rg is not None:
        found = _tool_scan(rg, index, literals, begin)
    if found is None and size >= AUTOMATON_THRESHOLD and not automaton_first:
        found = automaton_scan(index, literals, begin)
    grep = search_tool(("grep",)) if found is None and tools else None
    if grep is not None:
        found = _tool_scan(grep, index, literals, begin)
    return found if found is not None else _python_scan(index, literals, begin)


def candidate_lines_by_group(
    index: LogIndex,
    groups: Sequence[Iterable[str]],
    begin: int = 0,
    meanwhile: Callable[[], object] | None = None,
    stream_first: bool = False,
) -> list[Numbered]:
    """For each group of literals, the lines `candidate_lines` finds for it, every one numbered
    (`LogIndex.line_of` over all the groups' lines in order: each line break before the last
    line found is counted once, and the numbers stay known to the index).

    `meanwhile` runs in this thread while the search runs beside it, where it can:
    - a file on disk: one rg process per group, which read the file and number the lines
      themselves (nothing is counted here);
    - a file's bytes otherwise: one automaton pass per group in another thread (the search
      releases the GIL). Per group, because one pass over the union costs more than the passes
      it replaces (the SIMD prefilter verifies more false hits with more literals).
    Otherwise `meanwhile` runs first, then one search over the union (one rg or grep process,
    not one per group), each line given to the groups whose literals it holds.
    """
    sets = [sorted(set(group)) for group in groups]
    pending = [meanwhile] if meanwhile is not None else []
    found = _file_tool_groups(index, sets, begin, pending, stream_first) or _automaton_groups(
        index, sets, begin, pending
    )
    for work in pending:  # (not run yet: no search ran beside it)
        work()
    if found is None:
        found = _split_by_group(index, sets, begin)
    # (A tool's rows read when iterated are numbered: their checkpoints only are remembered.)
    _number_in_order(index, [rows.checkpoints() if isinstance(rows, ToolRows) else rows for rows in found])
    return found  # type: ignore[return-value]  # (numbered now)


#: Candidate lines up to this many are sorted in one list; more are merged group by group.
_SORT_AT_MOST = 4096


def _number_in_order(index: LogIndex, found: list[list[tuple[int, int | None]]]) -> None:
    """Number, in place, the lines of every group that have no number (`line_of`), and tell the
    index the numbers given (`remember`), in ascending order over all the groups' lines (each
    group's are sorted): each line break before the last line is then counted once. Only the
    distinct lines' numbers are held meanwhile, in two arrays (no set or dict of every line)."""
    groups = [lines for lines in found if lines]
    ordered: Iterable[tuple[int, int | None]]
    if len(groups) == 1:
        ordered = groups[0]
    elif sum(map(len, groups)) <= _SORT_AT_MOST:
        # A short log's few lines: one C sort of the runs (stable: a group's line before a
        # later group's, as the merge gives) spares importing heapq.
        ordered = sorted(chain.from_iterable(groups), key=itemgetter(0))
    else:
        import heapq  # (lazy: a large log's groups are merged without a list of them all)

        ordered = heapq.merge(*groups, key=itemgetter(0))
    starts, numbers = array("q"), array("q")
    last, unnumbered = -1, False
    released = 0  # (counting reads a mapped file's pages: let go those it has passed)
    known_start, known = -1, -1  # the last line numbered (counted from, when near)
    for start, number in ordered:
        if start == last:  # (the same line, found by another group)
            unnumbered = unnumbered or number is None
            continue
        if number is None:
            # The breaks since the last line numbered, counted in C (a log of candidates has
            # one in a few lines: a lookup each would cost a bisection and a Python step more).
            near = known_start >= 0 and start - known_start <= _SWEEP
            number = known + index._breaks(known_start, start) if near else index.line_of(start)
            unnumbered = True
            if start - released >= _RELEASE_STEP:
                released = release_pages(index.text, released, start)
        index.remember(start, number)
        known_start, known = start, number
        starts.append(start)
        numbers.append(number)
        last = start
    if not unnumbered:
        return
    release_pages(index.text, released, last)
    for lines in groups:
        for at, (start, number) in enumerate(lines):
            if number is None:
                lines[at] = (start, numbers[bisect.bisect_left(starts, start)])


#: Lines at most this far after the last line numbered are numbered by counting from it.
_SWEEP = 1 << 16
#: How far the numbering sweep goes past the pages it released last before it releases again.
_RELEASE_STEP = 1 << 22


def _file_tool_groups(
    index: LogIndex,
    sets: list[list[str]],
    begin: int,
    pending: list[Callable[[], object]],
    stream_first: bool = False,
) -> list[list[tuple[int, int | None]]] | None:
    """Each group's lines of a file on disk, read by an rg process of its own (which numbers
    them: nothing is counted here), the processes running while the `pending` work runs here
    (taken off the list); None when rg is missing or fails, or the text is not a whole file.
    In a text with a bare `\r`, rg's `\n` lines are split into LSP's (`_split_at_bare_crs`)."""
    if index.path is None or begin or not index.is_bytes or len(index) < TOOL_THRESHOLD:
        return None
    if index.has_cr and any(_spans_lines(group) for group in sets):
        return None
    rg = search_tool(("rg",))
    if rg is None:
        return None
    searched = [group for group in sets if group]
    # (Started before the analysis was imported, when the cache knew these groups: `early`.)
    running = 0 if stream_first and sets[0] and not index.has_cr else None
    outputs = early.take(index.path, searched, pending, running) or _run_tools(
        rg, searched, index.path, pending
    )
    if outputs is None:
        return None
    found: list[list[tuple[int, int | None]]] = []
    for group in sets:
        output = outputs.pop(0) if group else b""
        if not isinstance(output, bytes):  # (still running: its rows are read as it writes them)
            found.append(StreamedRows(output, len(index)))  # type: ignore[arg-type]
            continue
        if len(output) >= LAZY_ROWS and not index.has_cr and (lazy := ToolRows.of(output, len(index))):
            found.append(lazy)  # type: ignore[arg-type]  # (numbered, read when iterated)
            continue
        rows = parse_rows(output) if group else []
        if rows:
            rows = _within(rows, len(index))
        if rows and index.has_cr:
            rows = _split_at_bare_crs(index, rows, group)
        if rows is None:
            return None
        found.append(rows)  # type: ignore[arg-type]  # (numbered: `int | None` for those to number)
    return found


def _within(rows: list[_Row], length: int) -> list[_Row]:
    """The rows (sorted by line start) of lines that start within the text's `length`: a tool
    reads a file as it is when it runs, and a file still being written may have grown since the
    text was mapped; the lines past its end are not the text's."""
    if not rows or rows[-1][0] < length:
        return rows
    return rows[: bisect.bisect_left(rows, (length,))]


def _split_at_bare_crs(index: LogIndex, rows: Numbered, literals: list[str]) -> Numbered | None:
    """A tool's rows (line start, `\n` line number) as LSP's lines: rg and grep end a line at
    `\n` only, LSP at a bare `\r` too (a progress bar's redraws are one `\n` line of many
    pieces). A row whose `\n` line is one LSP line is renumbered (`NewlineLines`, built once per
    text: the report numbers lines as grep does with it); a row of pieces becomes each piece
    holding a literal (none spans a piece: `_spans_lines`). A file's bytes or an editor's text.
    None when the pieces do not add up (not expected: the caller then searches another way)."""
    lines = index.newline_lines()
    if lines.identity:  # (only `\r\n`: the same lines)
        return rows
    text, nl, cr = index.text, index._nl, index._cr
    needles = [literal.encode("utf-8") for literal in literals] if index.is_bytes else list(literals)
    nl_before, bare = lines.newlines_before_bare_crs, len(lines.newlines_before_bare_crs)
    split: Numbered = []
    for start, number in rows:
        # (`core_line_range` inlined: one search, most lines hold no bare `\r`)
        crs_before = bisect.bisect_left(nl_before, number)
        if crs_before == bare or nl_before[crs_before] != number:
            split.append((start, number + crs_before))
            continue
        first, last = lines.core_line_range(number)
        line_end = text.find(nl, start)
        line_end = len(text) if line_end < 0 else line_end
        if line_end < len(text) and text[line_end - 1 : line_end] == cr:
            line_end -= 1  # (a `\r\n` break: the `\r` ends no piece)
        pieces = text[start:line_end].split(cr)
        if len(pieces) != last - first + 1:
            return None
        for number_of_piece, piece in enumerate(pieces, first):
            if any(needle in piece for needle in needles):
                split.append((start, number_of_piece))
            start += len(piece) + 1
    return split


def _run_tools(
    tool: Tool, groups: list[list[str]], path: str, pending: list[Callable[[], object]]
) -> list[bytes] | None:
    """The output of one `tool` process per group of literals over the file at `path`, all
    running (their output read by threads) while the `pending` work runs here; None if one
    failed."""
    import subprocess
    import threading

    outputs: list[bytes | None] = [None] * len(groups)
    processes: list[subprocess.Popen] = []
    readers: list[threading.Thread] = []

    def read(slot: int, process: subprocess.Popen) -> None:
        outputs[slot] = process.stdout.read() if process.stdout else b""

    try:
        try:
            for slot, literals in enumerate(groups):
                process = subprocess.Popen(
                    _command(tool, literals, path),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env={**os.environ, "LC_ALL": "C"},
                )
                processes.append(process)
                readers.append(threading.Thread(target=read, args=(slot, process), daemon=True))
                readers[-1].start()
        finally:
            while pending:
                pending.pop()()
            for reader in readers:
                reader.join()
        codes = [process.wait(timeout=_TOOL_TIMEOUT) for process in processes]
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for process in processes:
            if process.stdout is not None:
                process.stdout.close()
    if len(processes) < len(groups) or any(code not in (0, 1) for code in codes):
        return None  # (1: no line matched)
    return [output or b"" for output in outputs]


def _automaton_groups(
    index: LogIndex, sets: list[list[str]], begin: int, pending: list[Callable[[], object]]
) -> list[list[tuple[int, int | None]]] | None:
    """Each group's lines of a file's bytes by its automaton, searched in another thread while
    the `pending` work runs here (only the searches run there; the matches are read here
    after)."""
    if not index.is_bytes or len(index) - begin < AUTOMATON_THRESHOLD:
        return None
    if any(_spans_lines(group) for group in sets):
        return None
    # (Only that a line holds one of a group's literals matters here: the fewest find the same
    # lines, and within rg's limit the crate keeps its SIMD search too: see `early.fewest_literals`.)
    automata = [_automaton(tuple(early.fewest_literals(group))) if group else None for group in sets]
    if any(a is None for a, group in zip(automata, sets, strict=True) if group):
        return None

    def search() -> list[list[tuple[int, list[tuple[int, int, int]]]]]:
        return _search_bytes(index, automata, begin)

    return [
        [line for offset, matches in pieces for line in _match_lines(index, offset, matches)]
        for pieces in _in_thread(search, pending)
    ]


def _split_by_group(index: LogIndex, sets: list[list[str]], begin: int) -> list[list[tuple[int, int | None]]]:
    """Each group's lines, from one search over the union of the groups' literals."""
    union = sorted({literal for group in sets for literal in group})
    found: list[list[tuple[int, int | None]]] = [[] for _ in sets]
    if len(sets) == 1 or len(index) - begin < AUTOMATON_THRESHOLD:
        # (Small: `find` per literal either way, and no line to split.)
        return [candidate_lines(index, group, begin) if group else [] for group in sets]
    # The automaton's matches say which literal each is, and so which groups each line goes to:
    # over an editor's text it beats rg's search and the lines' split (20 MB of a serving log
    # 0.08 s against 0.09, 47 MB of real logs 0.22 against 0.50).
    by_literal = _automaton_by_group(index, sets, begin)
    if by_literal is not None:
        return by_literal
    rows = candidate_lines(index, union, begin) if union else []
    text, end_of, masks = index.text, index.line_end_at, _LayoutMasks(sets)
    if isinstance(text, str):
        line_masks = [
            masks.of(text[start : end_of(start)].encode("utf-8", "surrogatepass")) for start, _ in rows
        ]
    else:
        line_masks = [masks.of(text[start : end_of(start)]) for start, _ in rows]
    for (start, number), mask in zip(rows, line_masks, strict=True):
        _add_by_mask(found, start, mask, number)
    return found


def _automaton_by_group(
    index: LogIndex, sets: list[list[str]], begin: int
) -> list[list[tuple[int, int | None]]] | None:
    """Each group's lines from one automaton pass over the union of the groups' literals, each
    line given to the groups of the literals matched in it; None without the automaton.

    The automaton reports non-overlapping matches: an occurrence of a literal goes unreported
    only where it overlaps a match (`_may_overlap`). So a line also goes to the groups of the
    literals a match in it might have hidden, those of groups the matched literal is not in,
    when the line holds them (looked for in the line: a few, for few lines)."""
    union = sorted({literal for group in sets for literal in group})
    if not union or _spans_lines(union):
        return None
    automaton = _automaton(tuple(union))
    if automaton is None:
        return None
    groups_of, hideable = _hideable_literals(tuple(tuple(group) for group in sets), index.is_bytes)
    if index.is_bytes:
        [pieces] = _search_bytes(index, [automaton], begin)
    else:
        pieces = _search_str(index, automaton, begin)
    found: list[list[tuple[int, int | None]]] = [[] for _ in sets]
    text = index.text
    line_start, line_end, mask = -1, -1, 0
    hidden: tuple[tuple[int, str | bytes], ...] = ()
    for offset, matches in pieces:
        for literal, start, _ in matches:
            pos = offset + start
            if pos >= line_end:  # (a line after the last one: the last is complete)
                mask = _with_hidden(text, line_start, line_end, mask, hidden)
                _add_by_mask(found, line_start, mask)
                line_start, line_end, mask, hidden = index.line_start_at(pos), index.line_end_at(pos), 0, ()
            mask |= groups_of[literal]
            if hideable[literal]:
                hidden += hideable[literal]
    mask = _with_hidden(text, line_start, line_end, mask, hidden)
    _add_by_mask(found, line_start, mask)
    return found


def _with_hidden(
    text: Text, start: int, end: int, mask: int, hidden: tuple[tuple[int, str | bytes], ...]
) -> int:
    """`mask` with the groups of each (groups, literal) of `hidden` whose literal the line from
    `start` to `end` holds, where they add a group."""
    line = None
    for groups, literal in hidden:
        if groups & ~mask:
            line = text[start:end] if line is None else line
            if literal in line:  # type: ignore[operator]  # (both of the text's kind)
                mask |= groups
    return mask


def _add_by_mask(
    found: list[list[tuple[int, int | None]]], start: int, mask: int, number: int | None = None
) -> None:
    """Add the line at `start` (numbered `number`, None: to number) to each group of `mask`
    (nothing for no line: `start` < 0)."""
    if start < 0:
        return
    for bit, lines in enumerate(found):
        if mask >> bit & 1:
            lines.append((start, number))


@functools.lru_cache(maxsize=8)
def _hideable_literals(
    sets: tuple[tuple[str, ...], ...], as_bytes: bool
) -> tuple[list[int], list[tuple[tuple[int, str | bytes], ...]]]:
    """For each literal of the groups' union (sorted, the automaton's order): the groups it is
    in (a bit each), and the (groups, literal) of each literal a match of it may hide that is in
    a group it is not in."""
    union = sorted({literal for group in sets for literal in group})
    groups_of = [sum(1 << bit for bit, group in enumerate(sets) if literal in group) for literal in union]
    hideable = [
        tuple(
            (groups_of[other], union[other].encode("utf-8") if as_bytes else union[other])
            for other in range(len(union))
            if groups_of[other] & ~groups_of[matched] and _may_overlap(union[matched], union[other])
        )
        for matched in range(len(union))
    ]
    return groups_of, hideable


def _may_overlap(a: str, b: str) -> bool:
    """Whether occurrences of `a` and `b` can share a character: one holds the other, or an
    end of one is a start of the other."""
    shorter = min(len(a), len(b))
    return a in b or b in a or any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, shorter))


def _in_thread(search: Callable[[], _T], pending: list[Callable[[], object]]) -> _T:
    """`search()` in a thread while the `pending` work runs in this one (taken off the list);
    `search`'s result, or its exception."""
    if not pending:
        return search()
    import threading

    result: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(search())
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    worker = threading.Thread(target=run, name="prefilter search", daemon=True)
    worker.start()
    try:
        while pending:
            pending.pop()()
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return result[0]


class _LayoutMasks:
    """The groups with a literal in a line (its UTF-8), a line at a time, remembered per layout
    for the literals without a digit: a log repeats a few layouts with other digits (every
    stats line), and each line is otherwise looked at with every literal of every group.

    Why the layout is enough: a literal without an ASCII digit is in a line exactly where it is
    in the line with every ASCII digit masked (no byte of it changes; nor does any byte of a
    multi-byte character), so lines of one masked text hold the same such literals. Literals
    with a digit are looked for in each line."""

    _MAX = 4096

    def __init__(self, sets: list[list[str]]) -> None:
        def encoded(with_digit: bool) -> list[list[bytes]]:
            return [[lit.encode("utf-8") for lit in group if _has_digit(lit) == with_digit] for group in sets]

        self.plain, self.with_digits = encoded(False), encoded(True)
        self.memo: dict[bytes, int] = {}

    def of(self, line: bytes) -> int:
        """The groups (a bit each) with a literal in `line`."""
        key = line.translate(MASK_DIGITS)
        mask = self.memo.get(key)
        if mask is None:
            mask = sum(1 << bit for bit, group in enumerate(self.plain) if any(lit in line for lit in group))
            if len(self.memo) >= self._MAX:
                self.memo.clear()
            self.memo[key] = mask
        for bit, group in enumerate(self.with_digits):
            if group and not mask >> bit & 1 and any(lit in line for lit in group):
                mask |= 1 << bit
        return mask


def _has_digit(literal: str) -> bool:
    return any("0" <= char <= "9" for char in literal)


def _spans_lines(literals: Iterable[str]) -> bool:
    return any("\n" in literal or "\r" in literal for literal in literals)


#: From this many characters the in-process automaton beats one `find` per literal.
AUTOMATON_THRESHOLD = 1 << 18
#: Characters of an editor's text searched at a time (each piece is searched as UTF-8).
_AUTOMATON_PIECE = 1 << 22
#: Bytes of a file searched at a time (a mapped file's pages are released after each piece).
_BYTES_PIECE = 1 << 23


@functools.lru_cache(maxsize=8)
def _automaton(literals: tuple[str, ...]) -> Any:
    """An Aho-Corasick automaton of `literals` (as UTF-8) over bytes, or None without
    `ahocorasick-rs` (an editor's text is searched as UTF-8 too: `_search_str`)."""
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    # Leftmost-first matching lets the crate use its SIMD prefilter (Teddy): ~3.5x faster than
    # the standard kind here. Which literal matches matters only where groups share a search
    # (`_automaton_by_group`); elsewhere only that every line holding one is hit.
    kind = ahocorasick_rs.MatchKind.LeftmostFirst
    return ahocorasick_rs.BytesAhoCorasick([literal.encode("utf-8") for literal in literals], matchkind=kind)


def automaton_scan(
    index: LogIndex, literals: list[str], begin: int = 0
) -> list[tuple[int, int | None]] | None:
    """The lines holding a literal, by one Aho-Corasick pass; None without `ahocorasick-rs`."""
    if not literals or _spans_lines(literals):
        return None
    automaton = _automaton(tuple(early.fewest_literals(literals)))
    if automaton is None:
        return None
    if index.is_bytes:
        [pieces] = _search_bytes(index, [automaton], begin)
    else:
        pieces = _search_str(index, automaton, begin)
    return [line for offset, matches in pieces for line in _match_lines(index, offset, matches)]


def _search_bytes(
    index: LogIndex, automata: list[Any], begin: int
) -> list[list[tuple[int, list[tuple[int, int, int]]]]]:
    """Each automaton's matches over a file's bytes from `begin` on, as (piece offset, matches
    in the piece) a piece at a time: pieces end after a `\n` (no literal spans one), and a
    mapped file's pages are released once searched (all of them would be held otherwise)."""
    text = index.text
    found: list[list[tuple[int, list[tuple[int, int, int]]]]] = [[] for _ in automata]
    released = begin
    with memoryview(text) as view:  # type: ignore[arg-type]
        start = begin
        while start < len(text):
            end = text.find(b"\n", start + _BYTES_PIECE) + 1 or len(text)  # type: ignore[arg-type]
            with view[start:end] as piece:
                for matches, automaton in zip(found, automata, strict=True):
                    if automaton is not None:
                        matches.append((start, automaton.find_matches_as_indexes(piece)))
            released = release_pages(text, released, end)
            start = end
    return found


def _match_lines(
    index: LogIndex, offset: int, matches: list[tuple[int, int, int]]
) -> list[tuple[int, int | None]]:
    """(line start, None) of each line holding a match (at `offset` + its start).

    Literals never span lines, so the automaton's non-overlapping matches hit every line that
    holds one; each line is taken once."""
    found: list[tuple[int, int | None]] = []
    line_end = -1
    for _, start, _ in matches:
        pos = offset + start
        if pos < line_end:
            continue  # another literal of a line already taken
        found.append((index.line_start_at(pos), None))
        line_end = index.line_end_at(pos)
    return found


def _search_str(index: LogIndex, automaton: Any, begin: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
    """A bytes automaton's matches over an editor's text from `begin` on, as (piece offset,
    matches in the piece, their starts in characters) a piece at a time.

    Each piece is searched as UTF-8 (five times as fast here as the crate's str search, which
    maps every match back itself): an encoded literal matches the encoded text only where the
    literal is (UTF-8 is self-synchronising), and the matches are the same, in the same order.
    A piece that is not ASCII has its matches' byte starts counted back in characters, the text
    between two matches decoded once."""
    found: list[tuple[int, list[tuple[int, int, int]]]] = []
    for offset, piece in _str_pieces(index, begin):
        data = piece.encode("utf-8", "surrogatepass")
        matches = automaton.find_matches_as_indexes(data)
        if matches and len(data) != len(piece):
            chars = byte = 0
            in_characters = []
            for literal, start, end in matches:
                chars += len(data[byte:start].decode("utf-8", "surrogatepass"))
                byte = start
                in_characters.append((literal, chars, end))  # (the end is not read)
            matches = in_characters
        found.append((offset, matches))
    return found


def _str_pieces(index: LogIndex, begin: int) -> Iterator[tuple[int, str]]:
    """(offset, piece) covering an editor's text[begin:], in pieces that end after a `\n` (no
    literal spans one)."""
    text = index.text
    assert isinstance(text, str)
    start = begin
    while start < len(text):
        end = text.find("\n", start + _AUTOMATON_PIECE) + 1 or len(text)
        yield start, text[start:end]
        start = end


def _python_scan(index: LogIndex, literals: list[str], begin: int) -> list[tuple[int, int | None]]:
    starts: set[int] = set()
    for literal in literals:
        pos = index.find(literal, begin)
        while pos >= 0:
            starts.add(index.line_start_at(pos))
            pos = index.find(literal, index.line_end_at(pos))
    return [(start, None) for start in sorted(starts)]


def _command(tool: Tool, literals: list[str], path: str | None) -> list[str]:
    """A command printing `LINE:BYTEOFFSET:text` for each line holding any literal."""
    kind, binary = tool
    if kind == "rg":
        return early.rg_command(binary, literals, path)
    command = [binary, "-a", "-n", "-b", "-F"]
    for literal in early.fewest_literals(literals):
        command += ["-e", literal]
    return [*command, "--", path if path is not None else "-"]


def _run_tool(
    tool: Tool, literals: list[str], path: str | None, data: bytes | Iterable[bytes] | None
) -> bytes | None:
    """The tool's output rows for `path` (or `data` piped in); None if the tool failed."""
    import subprocess
    import threading

    try:
        with subprocess.Popen(
            _command(tool, literals, path),
            stdin=subprocess.PIPE if path is None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "LC_ALL": "C"},
        ) as proc:
            if path is None:
                # One big write from a thread: communicate() would write 4 KiB at a time.
                threading.Thread(target=_feed, args=(proc, data), daemon=True).start()
            output = proc.stdout.read() if proc.stdout else b""
            code = proc.wait(timeout=_TOOL_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return output if code in (0, 1) else None  # 1: no line matched


def _feed(proc: subprocess.Popen, data: bytes | Iterable[bytes] | None) -> None:
    try:
        if proc.stdin is not None:
            for piece in [data] if isinstance(data, bytes) else data or ():
                proc.stdin.write(piece)
            proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


#: Characters encoded at a time when an editor's text is piped to a tool.
_PIPE_CHUNK = 1 << 22


def _utf8_pieces(text: str, begin: int) -> Iterator[bytes]:
    """text[begin:] as UTF-8, a piece at a time (never the whole text encoded at once)."""
    for start in range(begin, len(text), _PIPE_CHUNK):
        yield text[start : start + _PIPE_CHUNK].encode("utf-8", "surrogatepass")


def _tool_scan(
    tool: Tool, index: LogIndex, literals: list[str], begin: int
) -> list[tuple[int, int | None]] | None:
    text = index.text
    segment: bytes | None
    if isinstance(text, str) and index.has_line_table:
        # An editor's text with its line table: the tool's line numbers give the offsets, so
        # the text is piped a piece at a time and no byte offset needs converting.
        output = _run_tool(tool, literals, None, _utf8_pieces(text, begin))
        if output is None:
            return None
        if index.has_cr:  # (from the start: see `candidate_lines`)
            rows = _newline_rows(index, output)
            # (numbered: `int | None` for the lines left to number)
            return None if rows is None else _split_at_bare_crs(index, rows, literals)  # type: ignore[return-value]
        return _rows_by_line(index, output, begin)
    if not isinstance(text, str):
        direct = index.path is not None and begin == 0
        segment = None if direct else bytes(text[begin:])
        output = _run_tool(tool, literals, index.path if direct else None, segment)
    else:
        segment = text[begin:].encode("utf-8", "surrogatepass")
        output = _run_tool(tool, literals, None, segment)
    if output is None:
        return None
    first_line = index.line_of(begin) if begin else 0
    # In a str index, byte offsets become code-point offsets (free when the text is ASCII).
    convert = isinstance(text, str) and not text.isascii()
    rows = parse_rows(output)
    if rows is None:
        return None
    found: list[tuple[int, int | None]] = []
    byte_pos, pos = 0, begin
    for byte_offset, line_no in rows:
        if convert and segment is not None:  # (a str text is always piped as a segment)
            pos += len(segment[byte_pos:byte_offset].decode("utf-8", "replace"))
        else:
            pos = begin + byte_offset
        byte_pos = byte_offset
        found.append((pos, first_line + line_no))
    found = _within(found, len(index))
    if index.has_cr:  # (from the start: see `candidate_lines`)
        return _split_at_bare_crs(index, found, literals)  # type: ignore[arg-type,return-value]
    return found


#: A tool's output of at least this many bytes is read row by row as its lines are asked for
#: (`ToolRows`); a smaller one is parsed whole.
LAZY_ROWS = 1 << 18
# A line of a tool's output that does not start as a row.
_NOT_A_ROW = regexes.compile(rb"\n(?![0-9]+:[0-9]+:)")


class ToolRows:
    """A tool's `LINE:BYTEOFFSET:text` rows of one group, (line start, 0-based line number) each,
    read as they are iterated; `from_offset` starts at a line start, found by bisection in the
    output. A log whose every line holds a literal (every request's traceback logged) has a row
    a line, and the scan skips most of them (the copies of a repeated traceback: `repeats`):
    parsed whole, its rows would cost more than reading the log. The rows of lines that start
    past `limit` (a file that grew after the text was mapped: see `_within`) are left out."""

    __slots__ = ("_count", "_limit", "_output")

    def __init__(self, output: bytes | bytearray, limit: int) -> None:
        self._output = output
        self._limit = limit
        self._count = output.count(b"\n")

    @classmethod
    def of(cls, output: bytes, limit: int) -> ToolRows | None:
        """The rows of `output`; None when a line of it is not a row (not the tool's output)."""
        if (
            not output.endswith(b"\n")
            or not _ROW.match(output)
            or _NOT_A_ROW.search(output, 0, len(output) - 1)
        ):
            return None
        return cls(output, limit)

    def __len__(self) -> int:
        return self._count  # (rows past `limit` included: only whether there are any is asked)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ToolRows, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (equal to a list of its rows)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return self.from_offset(0)

    def from_offset(self, offset: int) -> Iterator[tuple[int, int]]:
        """The rows of lines that start at or after `offset`, in order."""
        output, limit, match, find = self._output, self._limit, _ROW.match, self._output.find
        pos = self._position(offset)
        while pos < len(output):
            row = match(output, pos)
            assert row is not None  # (every line is a row: `of`)
            start = int(row[2])
            if start >= limit:
                return
            yield start, int(row[1]) - 1
            pos = find(b"\n", row.end()) + 1

    def checkpoints(self, every: int = 1 << 13) -> list[tuple[int, int]]:
        """Rows about `every` bytes of output apart (each line's number, for `LogIndex.remember`)."""
        output = self._output
        found: list[tuple[int, int]] = []
        for at in range(0, len(output), every):
            row = _ROW.match(output, output.rfind(b"\n", 0, at) + 1)
            if row is not None and int(row[2]) < self._limit:
                pair = (int(row[2]), int(row[1]) - 1)
                if not found or found[-1] != pair:
                    found.append(pair)
        return found

    def _position(self, offset: int) -> int:
        """Where in the output the first row of a line starting at or after `offset` is."""
        output = self._output
        lo, hi = 0, len(output)
        while lo < hi:  # (rows before `lo` start before `offset`, rows from `hi` on not)
            mid = (lo + hi) // 2
            row = output.rfind(b"\n", 0, mid) + 1
            found = _ROW.match(output, row)
            if found is not None and int(found[2]) < offset:
                lo = output.find(b"\n", mid) + 1 or len(output)
            else:
                hi = row
        return lo


class SearchFailed(Exception):
    """A search whose rows were read as it ran failed before it ended."""


class StreamedRows(ToolRows):
    """`ToolRows` of an rg process that still runs (`early`): its rows are read as it writes
    them (a buffer at a time), so the scan reads the lines found first while rg searches on.
    Iterating waits for more rows or the process's end; a process that fails raises
    `SearchFailed` there. The output read is kept (`from_offset` bisects its whole rows)."""

    __slots__ = ("_code", "_process", "_whole")

    def __init__(self, process: Any, limit: int) -> None:
        super().__init__(b"", limit)
        self._output = bytearray()  # (grown in place: a new bytes each time is quadratic)
        self._process = process
        self._whole = 0  # the output's length up to its last line break (its whole rows)
        self._code: int | None = None  # the exit code, once the process ended

    def __len__(self) -> int:
        while self._more():
            pass
        return self._output.count(b"\n")

    def __del__(self) -> None:
        if self._code is None:  # (read no further: the search is not needed any more)
            # (`contextlib.suppress` would cost every check importing it)
            try:  # noqa: SIM105
                self._process.stop()
            except Exception:  # (at interpreter exit, when nothing can be imported any more)
                pass

    def _more(self) -> bool:
        """Wait until more whole rows are read (True), or the process ended with all read
        (False)."""
        import time

        while self._code is None:
            piece = self._process.written(len(self._output))
            if not piece:
                code = self._process.ended()
                if code is None:
                    time.sleep(_STREAM_POLL)
                    continue
                self._code = code
                self._output += self._process.written(len(self._output))
                self._process.stop()
                if code not in (0, 1):  # (1: no line matched)
                    raise SearchFailed(f"rg exited with code {code}")
                return self._rows_grew()
            self._output += piece
            if self._rows_grew():
                return True
        return False

    def _rows_grew(self) -> bool:
        whole = self._output.rfind(b"\n") + 1
        grew, self._whole = whole > self._whole, whole
        return grew

    def from_offset(self, offset: int) -> Iterator[tuple[int, int]]:
        """The rows of lines that start at or after `offset`, in order, as they are written."""
        limit, match, output = self._limit, _ROW.match, self._output
        pos = self._position(offset)
        while True:
            while pos < self._whole:
                row = match(output, pos)
                if row is None:
                    raise SearchFailed("a line of rg's output is not a row")
                start = int(row[2])
                if start >= limit:
                    return
                pos = output.find(b"\n", row.end()) + 1
                if start >= offset:
                    yield start, int(row[1]) - 1
            if not self._more():
                return

    def _position(self, offset: int) -> int:
        """Where in the whole rows read so far the first row of a line at or after `offset` is
        (their end: none yet)."""
        output = self._output
        lo, hi = 0, self._whole
        while lo < hi:  # (rows before `lo` start before `offset`, rows from `hi` on not)
            mid = (lo + hi) // 2
            row = output.rfind(b"\n", 0, mid) + 1
            found = _ROW.match(output, row)
            if found is not None and int(found[2]) < offset:
                lo = output.find(b"\n", mid, self._whole) + 1 or self._whole
            else:
                hi = row
        return lo

    def checkpoints(self, every: int = 1 << 13) -> list[tuple[int, int]]:
        """None: the rows are numbered by rg, and read after the other groups' are numbered."""
        return []


#: How long reading a running search's rows waits before it looks for more.
_STREAM_POLL = 0.0005


def parse_rows(output: bytes) -> list[tuple[int, int]] | None:
    """(byte offset, 0-based line number) of each `LINE:BYTEOFFSET:text` row, in the order the
    pre-filter's lines are kept; None when a row is not one. (Matched in place, into the one
    list kept: for every line of a 100 MB log a list of the rows, or a second list of pairs,
    would each be bigger than the output.)"""
    rows = [(int(found[2]), int(found[1]) - 1) for found in _ROW.finditer(output)]
    lines = output.count(b"\n") + (not output.endswith(b"\n") and len(output) > 0)
    return rows if len(rows) == lines else None  # (a line that is not a row: not the tool's output)


# A row's line number and byte offset, at the start of each line of a tool's output.
_ROW = regexes.compile(rb"^([0-9]+):([0-9]+):", re.MULTILINE)


def _newline_rows(index: LogIndex, output: bytes) -> Numbered | None:
    """(line start, `\n` line number) of each `LINE:...` row of a tool that read the whole
    text: the start of each `\n` line is that of its first LSP line."""
    numbers = _row_numbers(output)
    if numbers is None:
        return None
    lines = index.newline_lines()
    return [(index.line_start(lines.core_line_range(number)[0]), number) for number in numbers]


def _row_numbers(output: bytes) -> list[int] | None:
    """The 0-based line number of each `LINE:...` row of a tool's output; None when a row is
    not one."""
    numbers = []
    for row in output.split(b"\n"):
        if not row:
            continue
        number, _, _ = row.partition(b":")
        try:
            numbers.append(int(number) - 1)
        except ValueError:
            return None
    return numbers


def _rows_by_line(index: LogIndex, output: bytes, begin: int) -> list[tuple[int, int | None]] | None:
    """(line start, line number) of each `LINE:...` row, the numbers counted from `begin`'s line."""
    numbers = _row_numbers(output)
    if numbers is None:
        return None
    first_line = index.line_of(begin)
    return [(index.line_start(first_line + number), first_line + number) for number in numbers]
