"""Step 1 of the analysis: find candidate lines and interpret each one.

Only lines holding one of the catalog's literals are parsed (see `prefilter`). Each is matched
against the markers (symptoms, faults, signals, run starts, precursors); a traceback header makes
the traceback be read forward, following one writer, and its lines are then skipped.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping

from . import regexes, repeats
from .catalog import Catalog, Marker
from .lines import parse_line
from .linesets import LineMap, LineRuns
from .model import ExceptionEvent, Frame, LogLine, Precursor, Symptom
from .prefilter import Numbered, ToolRows, candidate_lines_by_group
from .records import dataclass, field, replace
from .repeats import RepeatRun, first_copy, marker_literals, skip_copies
from .source import release_pages
from .text import ESCAPE, LogIndex, as_printed
from .tracebacks import (
    FAULT_LITERAL,
    BodyMemo,
    Traceback,
    faulthandler_stack,
    is_caret_or_elision,
    is_frame_line,
    is_traceback_header,
    looks_like_exception,
    read_traceback,
    standalone_exception,
    stream_literals,
)

# Literals that flag lines worth parsing besides the catalog's markers.
_BASE_LITERALS = ("Traceback (most recent call last)", "Error", "Exception", "Interrupt", "SystemExit")


# Lines longer than this are looked at only in their first part.
MAX_LINE = 20_000


# Levels at which a printed exception can be what killed the process (None: printed raw).
FATAL_LEVELS = (None, "ERROR", "CRITICAL")
# Marker kinds found through the pre-filter (phases and healthy activity are looked up on demand).
_SCANNED_KINDS = ("symptom", "fault", "signal", "run_start", "precursor")


@dataclass(eq=False, slots=True)
class Candidate:
    """An exception or fault that might be an incident's root cause.

    Candidates are identities (a death ranks thousands: compared by value, each comparison walks
    two events field by field), and there is one per exception a log printed.
    """

    event: ExceptionEvent
    tier: int  # 0 real cause, 1 wrapper carrying the original message, 2 stop signal, 3 a symptom
    traceback: Traceback | None = None
    inner_text: str | None = None  # a wrapper's carried message


class CandidateLines(Mapping[int, LogLine]):
    """The scan's candidate lines, parsed, by number (the keys of the scan's `offsets`).

    Only the lines the analysis looks up again by number (the line of an event of its own; a
    traceback keeps what is asked of its header) stay parsed, with the last `_RECENT` others
    (a traceback's reader looks at the lines above its header); any other is parsed again from
    its offset when asked for, exactly as the scan parsed it (`_candidate`). A log of logged request errors has a candidate
    line in three or four, each record a few hundred bytes, and asks again for few of them.
    """

    __slots__ = ("_index", "_kept", "_offsets", "_recent")
    _RECENT = 64

    def __init__(self) -> None:
        self._kept: dict[int, LogLine] = {}
        self._recent: dict[int, LogLine] = {}  # (in the order added: the oldest goes first)
        self._index: LogIndex | None = None
        self._offsets: LineMap = LineMap()

    def bind(self, index: LogIndex, offsets: LineMap) -> None:
        """Read lines from `index` (the text being scanned) at `offsets` (the scan's)."""
        self._index, self._offsets = index, offsets

    def add(self, line: LogLine, looked_up: bool) -> None:
        """Add a parsed candidate line (its offset is in the scan's `offsets`)."""
        if looked_up:
            self._kept[line.number] = line
            self._recent.pop(line.number, None)  # (a line read again after a cut: the new one)
            return
        self._kept.pop(line.number, None)
        recent = self._recent
        recent[line.number] = line
        if len(recent) > self._RECENT:
            del recent[next(iter(recent))]

    def __getitem__(self, number: int) -> LogLine:
        line = self._kept.get(number) or self._recent.get(number)
        if line is not None:
            return line
        if self._index is None or number not in self._offsets:
            raise KeyError(number)
        return _candidate(self._index, self._offsets[number], number, {})

    def __contains__(self, number: object) -> bool:
        return number in self._offsets

    def __iter__(self) -> Iterator[int]:
        return iter(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    def __repr__(self) -> str:
        return f"CandidateLines({len(self)} lines, {len(self._kept) + len(self._recent)} parsed)"

    def below(self, limit: int) -> CandidateLines:
        """The lines before line `limit` (bound by `scan_lines` to the text it reads then)."""
        kept = CandidateLines()
        kept._kept = {n: line for n, line in self._kept.items() if n < limit}
        kept._recent = {n: line for n, line in self._recent.items() if n < limit}
        return kept


@dataclass
class Scan:
    """Everything the candidate lines said, keyed by line number."""

    lines: CandidateLines = field(default_factory=CandidateLines)  # (a traceback's frames, code: none)
    offsets: LineMap = field(default_factory=LineMap)  # line -> offset of its start, for `lines`
    tracebacks: list[Traceback] = field(default_factory=list)
    symptoms: list[tuple[Symptom, Marker, LogLine]] = field(default_factory=list)
    events: list[Candidate] = field(default_factory=list)
    run_starts: list[tuple[int, str]] = field(default_factory=list)  # (line, outer)
    # The line of the marker of each run start (a restart marker's run starts on the next line).
    run_start_markers: list[int] = field(default_factory=list)
    precursors: list[tuple[Precursor, LogLine]] = field(default_factory=list)
    # Kept compact (see `linesets`): a log of logged request errors has one traceback in ten lines.
    consumed: LineRuns = field(default_factory=LineRuns)  # lines read as part of a traceback
    exception_lines: LineRuns = field(default_factory=LineRuns)  # their `Type: message` lines
    # Tracebacks repeated back to back, their copies after the first skipped (see `repeats`).
    repeats: list[RepeatRun] = field(default_factory=list)
    # (line, offset) of each fault whose `faulthandler` stack was read to the end of the text: a
    # growing log may go on with more of it (such a fault is read again, as an open traceback is).
    open_faults: list[tuple[int, int]] = field(default_factory=list)
    # The events standing for a traceback the text ends inside (`CUT_TRACEBACK`), among `events`.
    cut_events: list[Candidate] = field(default_factory=list)
    # Derived lookups, built on first use by the incident code (one analysis reads them per death).
    cache: dict[object, object] = field(default_factory=dict, repr=False, compare=False)


def scan_literals(catalog: Catalog) -> set[str]:
    """The literals whose lines the scan reads (`scan_lines`' pre-filter)."""
    literals = set(_BASE_LITERALS)
    for kind in _SCANNED_KINDS:
        literals.update(m.literal for m in catalog.markers_of(kind))
    return literals


def run_start_literals(catalog: Catalog) -> set[str]:
    """The literals of the run-start markers (a part of `scan_literals`): the scan finds the lines
    that hold one before it reads any traceback (`_RunStartsAhead`)."""
    return {m.literal for m in catalog.markers_of("run_start")}


def scan_lines(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan | None = None,
    begin: int = 0,
    candidates: Numbered | None = None,
    marker_lines: Numbered | None = None,
) -> Scan:
    """Find and interpret candidate lines from offset `begin` on, adding to `scan`.

    `candidates` and `marker_lines`: the pre-filter's lines of `scan_literals` and of
    `run_start_literals` from `begin` on, numbered, when the caller searched already
    (`prefilter.candidate_lines_by_group`); both or neither."""
    if candidates is None or marker_lines is None:
        if (candidates is None) != (marker_lines is None):
            raise ValueError("scan_lines takes the candidates and the marker lines together")
        groups = [scan_literals(catalog), run_start_literals(catalog)]
        candidates, marker_lines = candidate_lines_by_group(index, groups, begin)
    scan = scan or Scan()
    scan.lines.bind(index, scan.offsets)
    consumed, exception_lines = scan.consumed, scan.exception_lines
    # The lines of the tracebacks read in this call are also kept in sets while it runs: each
    # candidate is asked about (most lines of a long traceback are candidates), and a set answers
    # in C where the compact records bisect in Python. Lines past `before` are in the sets only.
    read = _ReadLines(scan, catalog)
    taken_now, exceptions_now, before = read.consumed, read.exceptions, read.before
    # Lines a traceback's reading parsed already (whole lines: the same text when within MAX_LINE).
    parsed: dict[int, LogLine] = {}
    markers = _MarkersByMessage(catalog)
    restarts = _RunStartsAhead(index, catalog, marker_lines)
    if scan.repeats and scan.repeats[-1].end == begin and begin > 0:
        read.skip_from(index, scan.repeats[-1])  # (a run cut where the text is read again)
    released = 0  # (a mapped file's pages the scan has passed are let go: see `release_pages`)
    rows = iter(candidates)
    while (row := next(rows, None)) is not None:
        start, number = row
        if read.skip_start <= start < read.skip_to:  # (a repeated traceback's copy, counted: see `repeats`)
            if isinstance(candidates, ToolRows):
                rows = candidates.from_offset(read.skip_to)
            continue
        if start - released > _RELEASE_STEP:
            released = release_pages(index.text, released, start - _KEEP_BEHIND)
        taken = number in taken_now or (number < before and number in consumed)
        if taken and not (number in exceptions_now or (number < before and number in exception_lines)):
            # A frame, code or caret line of a traceback already read (`raise X("…")` is code):
            # nothing to classify, and its record would only take memory.
            parsed.pop(number, None)
            continue
        line = restarts.lines.pop(number, None)
        if line is None:
            line = _candidate(index, start, number, parsed)
        looked_up = _classify_line(index, markers, scan, line, start, taken, read, parsed, restarts)
        if looked_up is None:
            continue  # (a frame or its code, of a traceback without its header: not kept)
        scan.offsets[number] = start
        scan.lines.add(line, looked_up)
    _settle_cut_tracebacks(scan)
    return scan


def _settle_cut_tracebacks(scan: Scan) -> None:
    """A traceback the text ends inside stands for its missing exception (`CUT_TRACEBACK`) only
    where nothing was raised after its header: where writers interleave, one writer's traceback
    may read on to the end of the text while another's exception is the death's."""
    if not scan.cut_events:
        return
    last = max(c.event.line for c in scan.events)
    answered = {id(c) for c in scan.cut_events if c.event.line < last}
    if answered:
        scan.events[:] = [c for c in scan.events if id(c) not in answered]
        scan.cut_events = [c for c in scan.cut_events if id(c) not in answered]


# How far the scan goes past the pages it released last before it releases again, and how much
# text it keeps mapped behind its candidate (a traceback's reader reads the lines above a header).
# Pages read again are mapped again from the page cache: only the scan's memory depends on it.
_RELEASE_STEP = 1 << 23
_KEEP_BEHIND = 1 << 20


class _ReadLines:
    """The lines the tracebacks a scan reads consume, added to its compact records and, for the
    time the scan runs, to sets (see `scan_lines`); the copies of a traceback repeated back to
    back, skipped (see `repeats`)."""

    def __init__(self, scan: Scan, catalog: Catalog) -> None:
        self.scan = scan
        self.consumed: set[int] = set()
        self.exceptions: set[int] = set()  # their `Type: message` lines
        self.before = max(scan.consumed.end, scan.exception_lines.end)  # (the records' lines are below)
        self.bodies = BodyMemo()  # (the bodies of the tracebacks read, replayed where they repeat)
        self.literals = marker_literals(
            frozenset(m.literal for kind in _SCANNED_KINDS for m in catalog.markers_of(kind))
        )
        self.gap_literals = marker_literals(frozenset(scan_literals(catalog)))
        # Candidates from `skip_start` to before `skip_to` lie in skipped copies (those of the
        # first copy, after the header just read, are read).
        self.skip_start = self.skip_to = -1
        self.released = 0  # (pages of a mapped file the copies' comparison has passed)

    def add(self, tb: Traceback) -> None:
        """Keep a traceback just read: its lines, its exceptions as candidates of their own."""
        self.scan.tracebacks.append(tb)
        self.scan.events.extend(Candidate(event, tier=0, traceback=tb) for event in tb.chain)
        self.scan.consumed.update(tb.lines)
        self.consumed.update(tb.lines)
        exception_lines = [e.line for e in tb.chain]
        self.scan.exception_lines.update(exception_lines)
        self.exceptions.update(exception_lines)

    def repeated(self, index: LogIndex, tb: Traceback, header: LogLine, header_start: int) -> None:
        """Skip the copies of `tb` (just read) that follow it back to back, but the last."""
        if not repeats.SKIP_REPEATS:  # (read here: the tests turn it off)
            return
        run = first_copy(index, tb, header, header_start, self.literals, self.gap_literals)
        if run is not None and self.skip_from(index, run):
            self.scan.repeats.append(run)

    def skip_from(self, index: LogIndex, run: RepeatRun) -> bool:
        """Skip the copies from `run.end` on but the last (see `skip_copies`); whether one
        followed at all (a run of two copies skips none, but is a run: a scan that reads its
        text again, grown, goes on comparing from its last copy: `repeats.resume_point`)."""
        before = run.skipped
        found, added, self.released = skip_copies(index, run, self.released)
        if added:
            self.skip_start = run.bounds[before]
            first = run.first_line + before * run.lines
            exceptions = tuple((at, at + 1) for at in run.exceptions)
            self.scan.consumed.add_periodic(first, run.lines, added, run.consumed)
            self.scan.exception_lines.add_periodic(first, run.lines, added, exceptions)
            self.skip_to = run.end
        return found > 0


def _candidate(index: LogIndex, start: int, number: int, parsed: dict[int, LogLine]) -> LogLine:
    """The candidate line at `start`, parsed (or taken from a traceback's reading)."""
    end = index.line_end_at(start)
    line = parsed.pop(number, None)
    if line is None or end - start > MAX_LINE:
        line = parse_line(number, index.slice_within(start, end, MAX_LINE))
    return line


def _run_start(catalog: Catalog, line: LogLine) -> tuple[int, str] | None:
    """(first line of the run, runtime prefix) when `line` marks that vLLM (re)started."""
    for marker in catalog.markers_of("run_start"):
        if marker.literal in line.text and marker.pattern.search(line.message):
            # A restart marker ends one run: the next run starts on the following line.
            return line.number + marker.offset, line.outer or ""
    return None


class _RunStartsAhead:
    """The run starts among the candidate lines, found before any traceback is read.

    A traceback is printed by a process of one run: when the service restarts, the process that
    printed it has exited, so none of its lines follow the next run's start marker (of the same
    runtime prefix). Its reader stops there instead of waiting for the writer's next line, which
    for a writer with no identity of its own (raw unprefixed lines; `APIServer pid=1` in every
    container) comes a run later. The marker lines are the pre-filter's lines of
    `run_start_literals`, found in the same search as the candidates (they are candidates too);
    they are parsed once here and handed to the scan (`lines`).
    """

    def __init__(self, index: LogIndex, catalog: Catalog, marker_lines: Numbered) -> None:
        self.lines: dict[int, LogLine] = {}
        # Each marker line's `_run_start`: no other line holds a marker's literal, so no other
        # line is one (the scan asks each candidate).
        self.found: dict[int, tuple[int, str]] = {}
        for offset, number in marker_lines:
            line = self.lines[number] = _candidate(index, offset, number, {})
            if (run_start := _run_start(catalog, line)) is not None:
                self.found[number] = run_start
        self.starts = sorted(set(self.found.values()))
        self.numbers = [number for number, _ in self.starts]

    def next_after(self, line: LogLine) -> int | None:
        """The first line of the next run after `line` of its runtime prefix (None: none)."""
        outer = line.outer or ""
        for number, other in self.starts[bisect.bisect_right(self.numbers, line.number) :]:
            if other == outer or not other or not outer:
                return number
        return None


# Distinct messages whose markers are remembered (per scan) before starting over.
_MAX_MESSAGES = 4096


class _MarkersByMessage:
    """The first symptom, precursor and fault or signal marker that a message matches: each a
    function of the message alone, remembered per distinct message (a log repeats its errors,
    and each message is otherwise searched by every marker again)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._found: dict[str, tuple[Marker | None, str | None, Marker | None]] = {}
        self._stops: dict[str, tuple[str, int, Marker] | None] = {}

    def of(self, message: str) -> tuple[Marker | None, str | None, Marker | None]:
        """(symptom marker, its `inner` group, precursor marker), each None when none matches."""
        found = self._found.get(message)
        if found is None:
            if len(self._found) >= _MAX_MESSAGES:
                self._found.clear()
            printed = as_printed(message)
            found = self._found[message] = (*self._symptom(printed), self._first("precursor", printed))
        return found

    def stop(self, message: str) -> tuple[str, int, Marker] | None:
        """(kind, tier, marker) of the first fault marker, else signal marker, that matches."""
        if message in self._stops:
            return self._stops[message]
        if len(self._stops) >= _MAX_MESSAGES:
            self._stops.clear()
        found = None
        printed = as_printed(message)
        for kind, tier in (("fault", 0), ("signal", 2)):
            marker = self._first(kind, printed)
            if marker is not None:
                found = (kind, tier, marker)
                break
        self._stops[message] = found
        return found

    def _symptom(self, message: str) -> tuple[Marker | None, str | None]:
        for marker in self.catalog.markers_of("symptom"):
            if marker.literal in message and (found := _printed_match(marker, message)):
                return marker, found.groupdict().get("inner")
        return None, None

    def _first(self, kind: str, message: str) -> Marker | None:
        for marker in self.catalog.markers_of(kind):
            if marker.literal in message and _printed_match(marker, message):
                return marker
        return None


def _printed_match(marker: Marker, message: str) -> re.Match[str] | None:
    """The first match of `marker` in `message` that is not inside a Markdown code span: a
    write-up around a pasted log quotes the messages it talks about (`EngineDeadError`), and
    vLLM never prints one of them between backticks."""
    found = marker.pattern.search(message)
    if found is None or "`" not in message:
        return found
    # (A marker is built-in: its compiled pattern is the standard engine's, no time limit.)
    for found in marker.pattern.compiled.finditer(message):
        if message.count("`", 0, found.start()) % 2 == 0 or "`" not in message[found.end() :]:
            return found
    return None


def _classify_line(
    index: LogIndex,
    markers: _MarkersByMessage,
    scan: Scan,
    line: LogLine,
    start: int,
    taken: bool,
    read: _ReadLines,
    parsed: dict[int, LogLine],
    restarts: _RunStartsAhead,
) -> bool | None:
    """Interpret one candidate line; whether the analysis will look it up again by its number
    (the line of an event of its own: see `CandidateLines`); None: the line is a traceback's
    frame or code whose header the text does not hold, which the scan does not keep (as it does
    not keep those of a traceback read from its header)."""
    message = line.message
    if not taken:
        if line.text.startswith("#") and _MARKDOWN_HEADING.match(line.text):
            return None  # (a person's title over a pasted log, `# [Bug]: RuntimeError: …`: no process's line)
        # (The walks above a line stop at the last run start: another run's lines are not its own.)
        floor = scan.run_start_markers[-1] if scan.run_start_markers else -1
        if is_frame_line(message) or _frame_code(index, line, start, floor):
            return None
        if (headless := _headless_start(index, line, start, floor)) is not None:
            _read_headless(index, scan, read, parsed, restarts, *headless)
            taken = True  # (this line is the traceback's exception line now)
    if (run_start := restarts.found.get(line.number)) is not None:
        scan.run_starts.append(run_start)
        scan.run_start_markers.append(line.number)
    symptom, inner, precursor = markers.of(message)
    if symptom is not None:
        span = line.message_span
        scan.symptoms.append(
            (Symptom(line.number, span, symptom.id, symptom.title, message.strip()), symptom, line)
        )
        if inner and not taken:
            event = _event_from_line(line, "message", "Error", inner)
            scan.events.append(Candidate(event, tier=1, inner_text=inner))
    if precursor is not None:
        found = Precursor(
            line.number,
            line.message_span,
            precursor.id,
            precursor.title,
            precursor.explanation,
            message.strip(),
        )
        scan.precursors.append((found, line))
    if taken:  # (an exception line of a traceback read already)
        return False
    if is_traceback_header(message):
        for passed in [n for n in parsed if n < line.number]:
            del parsed[passed]  # lines behind the scan (of another writer, or no candidates)
        until = restarts.next_after(line)
        tb = read_traceback(index, start, line, parsed, known=scan.lines, until=until, bodies=read.bodies)
        read.add(tb)
        if not tb.chain:
            _add_logged_message(scan, tb, line)
        read.repeated(index, tb, line, start)
        tb.preamble_record = None  # (read: the line is the scan's, parsed again if asked for)
        # The header is not kept parsed: what the analysis asks of it is kept on the traceback
        # (`Traceback.outer`), and a log of request errors has tens of thousands.
        return False
    stop = markers.stop(message)
    if stop is not None:
        kind, tier, marker = stop
        event = _event_from_line(line, kind, marker.title, message.strip())
        if FAULT_LITERAL in message:
            # (the Python stack `faulthandler` printed: where the process crashed)
            frames, open_end = _fault_stack(index, line, start)
            event = replace(event, frames=frames)
            if open_end:
                scan.open_faults.append((line.number, start))
        scan.events.append(Candidate(event, tier=tier))
        return True
    standalone = standalone_exception(line) if line.level in FATAL_LEVELS else None
    if standalone is not None:
        scan.events.append(Candidate(standalone, tier=0))
    return standalone is not None or bool(symptom and inner)


def _fault_stack(index: LogIndex, line: LogLine, start: int) -> tuple[tuple[Frame, ...], bool]:
    """The crashing thread's Python stack that `faulthandler` printed after the fault `line`
    (its writer's next lines; other writers' lines in between passed over), or (); and whether
    its reading reached the text's last line (which a growing log may go on, or complete)."""
    reached_end = False

    def writers_lines() -> Iterator[tuple[int, str]]:
        nonlocal reached_end
        others = 0  # other writers' lines in a row (the dump is written at once)
        offset, length = index.next_line_start(start), len(index.text)
        for number in range(line.number + 1, line.number + 1 + _FAULT_REACH):
            if offset >= length:
                reached_end = True
                return
            end = index.line_end_at(offset)
            reached_end = end >= length  # (the last line, maybe cut: what follows may change it)
            after = parse_line(number, index.slice_within(offset, end, MAX_LINE))
            if after.stream == line.stream:
                others = 0
                yield number, after.message
            elif (others := others + 1) > _FAULT_OTHERS:
                return
            offset = index.next_line_start(offset)

    frames = tuple(faulthandler_stack(writers_lines()))
    return frames, reached_end


#: Lines after a `Fatal Python error` read for the stack `faulthandler` printed, at most, and
#: other writers' lines in a row past which it is not looked for.
_FAULT_REACH = 400
_FAULT_OTHERS = 40


def _frame_code(index: LogIndex, line: LogLine, start: int, floor: int = -1) -> bool:
    """Whether `line` is the source line of a traceback frame whose header the text does not
    hold (a paste of a log's last lines starts inside a traceback): indented, right below the
    same writer's `  File "…", line N, in f`. It is code (`raise RuntimeError(f"NCCL error:
    {error_str}")`), never a message: read with its header it is a frame's, and a root cause
    named after it was the source of the error, not the error."""
    if not line.message[:1].isspace() or line.number == 0:
        return False
    reach = _BLANKS_BETWEEN + 1 + _HEADLESS_OTHERS
    above = next(_writer_lines_above(index, line, start, reach, _HEADLESS_OTHERS, floor), None)
    return above is not None and is_frame_line(above.message)


def _writer_lines_above(
    index: LogIndex, line: LogLine, start: int, reach: int, others: int = 0, floor: int = -1
) -> Iterator[LogLine]:
    """The lines of `line`'s writer right above it (of at most `reach`, nearest first, below line
    `floor`), parsed, up to more than `others` lines of other writers in a row: blank lines, and
    the writer's lines with nothing after its prefix, are passed over, as a traceback's reader
    passes over them (a double-spaced copy). Other writers' lines are told without a parse where
    they lack a piece of text every line of the writer holds (`stream_literals`)."""
    pieces = stream_literals(line) if others else ()
    in_a_row = 0
    reach = min(reach, line.number - floor - 1) if floor >= 0 else reach
    for number, text in index.iter_lines_back(start, line.number, reach):
        if not text.strip():
            continue
        mine = not pieces or ESCAPE in text or all(piece in text for piece in pieces)
        above = parse_line(number, text) if mine else None
        if above is None or above.stream != line.stream:
            in_a_row += 1
            if in_a_row > others:
                return
            continue
        in_a_row = 0
        if above.message.strip():
            yield above


#: A Markdown heading (an issue's write-up around a pasted log): no process prints one.
_MARKDOWN_HEADING = regexes.compile(r"#{1,6} \S")

#: The most blank lines between a traceback's lines that are passed over (a double-spaced copy).
_BLANKS_BETWEEN = 2


#: How far above an exception line the frames of a traceback without its header are looked for,
#: and the most lines a frame's code, carets and elisions take.
_HEADLESS_REACH = 400
_FRAME_BODY = 8
#: Other writers' lines in a row passed over there: workers that fail alike print their tracebacks
#: at once, a line of each in turn (sixteen tensor-parallel ranks, sixteen lines apart).
_HEADLESS_OTHERS = 64


def _headless_start(
    index: LogIndex, line: LogLine, start: int, floor: int = -1
) -> tuple[int, LogLine] | None:
    """(offset, parsed line) of the first frame line of the traceback whose exception `line` is,
    when the text does not hold its header (a paste that starts inside it): `line` reads like an
    exception and right above it, below line `floor` (the last run start), are the same writer's
    frames (`  File "…", line N, in f`), their code, carets and elisions, up to a line that is
    none of these. None otherwise (no frame right above; or the header is there: its reader took
    these lines already)."""
    if line.number == 0 or line.message[:1].isspace() or looks_like_exception(line.message) is None:
        return None
    first: LogLine | None = None
    since_frame = 0  # lines walked since the last frame line (a frame's code, carets, elisions)
    for above in _writer_lines_above(index, line, start, _HEADLESS_REACH, _HEADLESS_OTHERS, floor):
        message = above.message
        if is_frame_line(message):
            first, since_frame = above, 0
            continue
        if is_traceback_header(message):
            return None
        since_frame += 1
        code = message[:1].isspace() or is_caret_or_elision(message, message.strip())
        if since_frame > _FRAME_BODY or not code:
            break
    return (index.line_start(first.number), first) if first is not None else None


def _read_headless(
    index: LogIndex,
    scan: Scan,
    read: _ReadLines,
    parsed: dict[int, LogLine],
    restarts: _RunStartsAhead,
    offset: int,
    first: LogLine,
) -> None:
    """Read the traceback without its header from its first frame line, as the scan reads one
    from its header (its copies are not looked for: a run is told by its header)."""
    until = restarts.next_after(first)
    read.add(read_traceback(index, offset, first, parsed, known=scan.lines, until=until, headless=True))


def _add_logged_message(scan: Scan, tb: Traceback, header: LogLine) -> None:
    """A traceback cut before its exception line (an excerpt, a log that ends there): when the
    same writer logged an error just before it (`logger.exception(e)` prints `str(e)`, then the
    traceback), that message is the exception's text. Otherwise, when the text ends inside it
    (a paste cut short), the traceback itself stands for the exception it does not show
    (`CUT_TRACEBACK`), its frames saying where it was raised."""
    record = tb.preamble_record
    if record is None or record.level not in ("ERROR", "CRITICAL") or not record.message.strip():
        if tb.open and tb.cut_frames:
            event = _event_from_line(header, "message", "Cut off", CUT_TRACEBACK)
            scan.cut_events.append(Candidate(replace(event, frames=tb.cut_frames), tier=0, traceback=tb))
            scan.events.append(scan.cut_events[-1])
        return
    if any(c.event.line == record.number for c in scan.events[-4:]):
        return  # already a candidate of its own (it reads like `ValueError: ...`)
    event = replace(
        _event_from_line(record, "message", "Error", record.message.strip()), frames=tb.cut_frames
    )
    scan.events.append(Candidate(event, tier=0, traceback=tb))


#: The text that stands for a traceback the log ends inside, before its exception line: its
#: header, which no exception's `Type: message` reads as (the `traceback-cut-off` rule's match).
CUT_TRACEBACK = "Traceback (most recent call last):"


def _event_from_line(line: LogLine, kind: str, type_name: str, message: str) -> ExceptionEvent:
    return ExceptionEvent(
        line=line.number,
        span=line.message_span,
        type_name=type_name,
        message=message,
        stream=line.stream,
        kind=kind,  # type: ignore[arg-type]
        process=line.process,
    )


def truncate_scan(scan: Scan, line: int) -> Scan:
    """The part of a scan that lies before `line` (tracebacks that started before and closed;
    run starts whose marker lies before, wherever the run starts: the scan from `line` on does
    not read that marker again)."""
    kept_starts = [at for at, marker in enumerate(scan.run_start_markers) if marker < line]
    kept = [tb for tb in scan.tracebacks if tb.header_line < line and not tb.open]
    consumed, exception_lines = scan.consumed.below(line), scan.exception_lines.below(line)
    # A kept traceback may have read lines from `line` on: its writer's lines went on past the
    # header of another writer's traceback that is read again (still open at the old end).
    # They stay its own, as a fresh scan takes them: read again, they would be another event.
    # (A traceback's lines are taken in order: only those that reach the line are looked at.)
    reaching = [tb for tb in kept if tb.lines and tb.lines[-1] >= line]
    consumed.update(number for tb in reaching for number in tb.lines if number >= line)
    exception_lines.update(e.line for tb in reaching for e in tb.chain if e.line >= line)
    return Scan(
        lines=scan.lines.below(line),
        offsets=scan.offsets.below(line),
        tracebacks=kept,
        symptoms=[item for item in scan.symptoms if item[0].line < line],
        events=[c for c in scan.events if (c.traceback.header_line if c.traceback else c.event.line) < line],
        run_starts=[scan.run_starts[at] for at in kept_starts],
        run_start_markers=[scan.run_start_markers[at] for at in kept_starts],
        precursors=[item for item in scan.precursors if item[0].line < line],
        consumed=consumed,
        exception_lines=exception_lines,
        repeats=[
            run.cut(min(run.skipped, (line - run.first_line) // run.lines))
            for run in scan.repeats
            if run.first_line <= line
        ],
        open_faults=[fault for fault in scan.open_faults if fault[0] < line],
        cut_events=[c for c in scan.cut_events if c.traceback is not None and c.traceback.header_line < line],
    )
