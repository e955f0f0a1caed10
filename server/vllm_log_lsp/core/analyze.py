"""From log text to findings: the analysis pipeline and its incremental driver.

1. `scan.scan_lines` finds candidate lines with a literal pre-filter (one pass of rg/grep, or
   `find`) and interprets them: tracebacks, symptoms, faults, run starts, precursors. Nothing else of
   the text is parsed.
2. `incidents` groups the deaths of each run and chooses each one's root cause.
3. `classify` names the cause with the ordered catalog, its phase, evidence and fixes.
4. `stats` reads the periodic stats lines (its own literal pre-filter pass) and `health` turns
   them into health findings and a pre-failure record per death.
`Analyzer` keeps the scan of a growing log and re-scans only what was appended.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from . import catalog as catalog_mod
from .abandoned import abandoned_startups
from .catalog import Catalog, RuleMatches
from .classify import build_finding, classify
from .context import read_context
from .health import build_health
from .incidents import (
    LATE_WINDOW,
    Incident,
    RootChoice,
    braces_kept,
    choose_root,
    group_incidents,
    line_offset,
    promote_precursor,
    run_lines,
    stand_in_why,
    stopped,
    symptom_as_root,
    unwrap_candidates,
)
from .jsonlog import SNIFF_CHARS, Transcriber, looks_like_json_log
from .lines import learn_outer_prefix, learned_prefix, parse_line
from .model import (
    Analysis,
    Considered,
    ExceptionEvent,
    Finding,
    LineWords,
    Precursor,
    RunContext,
    RunSegment,
    Span,
)
from .order import SAMPLE_CHARS as ORDER_SAMPLE_CHARS
from .order import ReversedLines, newest_first, oldest_first
from .phase import ended_in_startup
from .prefilter import SearchFailed, candidate_lines_by_group
from .records import replace
from .repeats import next_copy_end, resume_point
from .scan import Candidate, Scan, run_start_literals, scan_lines, scan_literals, truncate_scan
from .stats import LITERALS as STATS_LITERALS
from .stats import StatsScan, scan_stats
from .text import GrowingText, LogIndex, Text, extends
from .wraps import SAMPLE_CHARS as WRAP_SAMPLE_CHARS
from .wraps import WrappedLines, unwrap, wrap_width

# How many lines from the start of a log teach its own outer prefix.
_LEARN_LINES = 400

__all__ = ["Analyzer", "analyze", "classify"]


def analyze(
    text: Text, catalog: Catalog | None = None, warnings: tuple[str, ...] = (), path: str | None = None
) -> Analysis:
    """Analyse a whole log: a str, or the raw UTF-8 bytes of a file, read or mapped (see
    `inspect_log_bytes`; `path` names that file so the pre-filter can read it directly). Never
    raises on any input."""
    return Analyzer(catalog).analyze(text, warnings, path)


class Analyzer:
    """Analyses successive versions of one log, re-scanning only what a growing log appended.

    When the new text extends the previous one (a tailed file reloaded by the editor), the scan
    of everything before the last stable point is kept: the last line (it may have been
    incomplete) and any traceback still open at the old end are read again, the rest is reused.
    Grouping and classification are per incident and cheap, so they always run in full.
    """

    def __init__(self, catalog: Catalog | None = None) -> None:
        self.catalog = catalog or catalog_mod.builtin_catalog()
        self._text: Text | None = None  # the text analysed last (None for a `GrowingText`)
        self._growing: GrowingText | None = None  # ... or the growing text, then
        self._length = 0  # ... and its length then
        self._scan: Scan | None = None
        self._index: LogIndex | None = None
        self._stats: StatsScan | None = None
        self.reused_offset = 0  # how much of the text the last call did not scan again
        self._prefix: re.Pattern[str] | None = None  # the log's own outer prefix (learned)
        self._learned_whole = False  # ... from all the lines it learns from (a text long enough)
        # The last scan's candidates and each with its wrappers recognised, kept for those a
        # re-scan reuses (recognising them is the costly part of grouping a long log's deaths).
        self._unwrapped: tuple[tuple[Candidate, ...], list[Candidate]] = ((), [])
        self._transcriber: Transcriber | None = None  # a JSON log's, kept while it grows
        self._wrap_width: int | None = None  # a terminal copy's width (see `wraps`)
        self._newest_first = False  # a log shown newest first (see `order`)
        self._document: LogIndex | None = None

    @property
    def index(self) -> LogIndex | None:
        """The line index of the text last analysed (of its transcript, for a JSON log)."""
        return self._index

    @property
    def document(self) -> LogIndex | None:
        """The JSON log's own line index, when the text last analysed was one (with
        `line_table`; `index` is then its transcript's)."""
        return self._document

    def analyze(
        self,
        text: Text | GrowingText,
        warnings: tuple[str, ...] = (),
        path: str | None = None,
        *,
        line_table: bool = False,
        grown_from: Text | GrowingText | None = None,
    ) -> Analysis:
        """Analyse `text` (`path`: the file holding exactly it, for the pre-filter). vLLM's JSON
        log format is analysed through its transcript: the result's `source_map` maps its lines
        back to `text`.

        `line_table`: build the whole line table first, extending the previous text's when `text`
        only appends to it (a growing log costs its appended part). The language server's
        features then read lines by number from `index` without counting; the analysis numbers
        lines by lookup too.

        `grown_from`: a text the caller knows `text` only appends to (an editor that synced
        appends). When it is the very text analysed last, the two are not compared: an append
        then costs what it appends, not a comparison of the whole log. Anything else is compared.

        A `GrowingText` (an editor's growing document) is analysed as its text now; analysed
        again after appends, it is known to have grown (it only ever does), like `grown_from`,
        and the line index built over it has followed its appends already.
        """
        growing = text if isinstance(text, GrowingText) else None
        if isinstance(text, GrowingText):
            text = text.text  # (this very str is read throughout: an append meanwhile copies)
        if growing is not None:
            grown_from = growing if self.continues(growing) else None
        # A plain log that only grew past the part the sniff reads is still one.
        sniffed = self.continues(grown_from) and len(grown_from or "") >= SNIFF_CHARS
        if not sniffed and looks_like_json_log(text):
            source = text if growing is None else growing
            self._document = LogIndex.following(source, self._document, path) if line_table else None
            return self._analyze_json(text, warnings, line_table)
        self._transcriber = None
        # A terminal copy that cut its lines is read joined; a log that only grew past the part
        # `wrap_width` reads keeps its answer.
        if not (self.continues(grown_from) and len(grown_from or "") >= WRAP_SAMPLE_CHARS):
            self._wrap_width = wrap_width(text)
        # ... and one shown newest first is read oldest first.
        if self._wrap_width is None and not (
            self.continues(grown_from) and len(grown_from or "") >= ORDER_SAMPLE_CHARS
        ):
            self._newest_first = newest_first(text)
        if self._wrap_width is not None or self._newest_first:
            source = text if growing is None else growing
            self._document = LogIndex.following(source, self._document, path) if line_table else None
            return self._analyze_rewritten(text, warnings, line_table)
        self._document = None
        grown = self._grew(text, grown_from)
        index = self._index_of(text if growing is None else growing, path, line_table, grown)
        analysis = self._analyze_plain(text, warnings, index, grown)
        self._text, self._growing = (None, growing) if growing is not None else (text, None)
        return analysis

    def continues(self, grown_from: Text | GrowingText | None) -> bool:
        """Whether `grown_from` is the text analysed last (or the growing text it was, which has
        only grown since): an analysis of a text that only appends to it then reuses the previous
        one (see `analyze`)."""
        if grown_from is None:
            return False
        if isinstance(grown_from, GrowingText):
            return grown_from is self._growing and len(grown_from) >= self._length
        return grown_from is self._text

    def _grew(self, text: Text, grown_from: Text | GrowingText | None) -> bool:
        """Whether `text` extends the text analysed last (compared only when not known)."""
        if isinstance(grown_from, GrowingText):
            return self.continues(grown_from)
        old = self._text
        if old is None:
            return False
        if self.continues(grown_from) and type(text) is type(old) and isinstance(text, (str, bytes)):
            return len(text) >= len(old)
        return extends(text, old)

    def _index_of(
        self, text: Text | GrowingText, path: str | None, line_table: bool, grown: bool
    ) -> LogIndex:
        if not line_table:
            return LogIndex(text, path)
        return LogIndex.following(text, self._index if grown else None, path, grown=grown)

    def _analyze_json(self, text: Text, warnings: tuple[str, ...], line_table: bool) -> Analysis:
        """A JSON log: its plain transcript analysed, positions mapped back (see `jsonlog`)."""
        if not isinstance(text, str):
            warnings = warnings + _encoding_warnings(LogIndex(text))
            text = bytes(text).decode("utf-8", "replace")
        self._transcriber = self._transcriber or Transcriber()
        lines = self._transcriber.transcribe(text).snapshot()
        grown = self._grew(lines.text, None)
        index = self._index_of(lines.text, None, line_table, grown)
        analysis = self._analyze_plain(lines.text, warnings, index, grown)
        self._text, self._growing = lines.text, None
        return replace(analysis, source_map=lines)

    def _analyze_rewritten(self, text: Text, warnings: tuple[str, ...], line_table: bool) -> Analysis:
        """A terminal copy that cut its lines (the lines joined, see `wraps`) or a log shown
        newest first (its lines reversed, see `order`): that transcript analysed, positions
        mapped back to the log. Analysed whole each time: such a copy does not grow."""
        if not isinstance(text, str):
            warnings = warnings + _encoding_warnings(LogIndex(text))
            text = bytes(text).decode("utf-8", "replace")
        lines: WrappedLines | ReversedLines
        if self._wrap_width is not None:
            lines = unwrap(text, self._wrap_width)
            note = (
                f"the log's long lines were cut into rows of {self._wrap_width} columns (a copy of a "
                "terminal): they are read joined"
            )
        else:
            lines = oldest_first(text)
            note = "the log lists its newest lines first (a log viewer's order): it is read oldest first"
        index = self._index_of(lines.text, None, line_table, False)
        analysis = self._analyze_plain(lines.text, (*warnings, note), index, False)
        self._text, self._growing = lines.text, None
        return replace(analysis, source_map=lines)

    def _analyze_plain(self, text: Text, warnings: tuple[str, ...], index: LogIndex, grown: bool) -> Analysis:
        scan, start = self._reusable_scan(text, index, grown)
        if start and not self._learned_whole:
            # The prefix was learned from a text shorter than the lines it learns from: learned
            # again from the grown text, another prefix reads every line anew.
            prefix, self._learned_whole = _learn_prefix(index)
            if _pattern_text(prefix) != _pattern_text(self._prefix):
                scan, start = None, 0
        if start == 0:
            self._prefix, self._learned_whole = _learn_prefix(index)
        with learned_prefix(self._prefix):
            self.reused_offset = start
            kept = self._stats.before(index.line_of(start)) if self._stats is not None and start else None
            stats_begin = start if kept is not None else 0
            # One pre-filter pass for the scan and the stats; a file's bytes are checked for
            # invalid UTF-8 (for `_encoding_warnings`) meanwhile, while the search runs (a large
            # mapped file's check goes on beside the analysis: `LogIndex.start_utf8_check`).
            groups = [scan_literals(self.catalog), STATS_LITERALS, run_start_literals(self.catalog)]
            begin = min(start, stats_begin)
            # A fresh scan reads the scan group's lines as rg finds them (`StreamedRows`): its
            # search runs on beside the scan. Should it fail meanwhile, the scan (fresh: `scan`
            # is still None, `begin` 0) is done again from lines searched for the usual way.
            try:
                scanned, stats_lines, marker_lines = candidate_lines_by_group(
                    index, groups, begin, meanwhile=index.start_utf8_check, stream_first=scan is None
                )
                if stats_begin < start:
                    scanned = [line for line in scanned if line[0] >= start]
                    marker_lines = [line for line in marker_lines if line[0] >= start]
                scan = scan_lines(index, self.catalog, scan, start, scanned, marker_lines)
            except SearchFailed:
                scanned, stats_lines, marker_lines = candidate_lines_by_group(index, groups, begin)
                scan = scan_lines(index, self.catalog, None, start, scanned, marker_lines)
            stats = scan_stats(index, kept, stats_begin, stats_lines)
            # (read: not held through the analysis, a line in a few each)
            del scanned, stats_lines, marker_lines
            self._length, self._scan, self._index, self._stats = len(text), scan, index, stats
            return _analysis(index, self.catalog, scan, warnings, stats, self._unwrap)

    def _unwrap(self, scan: Scan) -> list[Candidate]:
        """`unwrap_candidates` of the scan, recognising only the candidates after those it shares
        with the last scan: a re-scan keeps the candidates before the point it reads again, in
        order, and appends (`truncate_scan`). Two lists, not an entry per candidate: a log of
        logged request errors has tens of thousands."""
        old_events, old_unwrapped = self._unwrapped
        events = scan.events
        shared = 0
        for old, new in zip(old_events, events, strict=False):  # (the same objects, not equal ones)
            if old is not new:
                break
            shared += 1
        unwrapped = old_unwrapped[:shared] + unwrap_candidates(self.catalog, Scan(events=events[shared:]))
        self._unwrapped = (tuple(events), unwrapped)
        return unwrapped

    def _reusable_scan(self, text: Text, index: LogIndex, grown: bool) -> tuple[Scan | None, int]:
        """The previous scan cut where `text` (which extends the old text when `grown`) must be
        read again, and that offset; (None, 0) when nothing can be reused."""
        old_length, scan, old_index = self._length, self._scan, self._index
        if scan is None or old_index is None or not grown:
            return None, 0
        if index is not old_index:
            index.adopt_checkpoints(old_index, old_length)
        # Re-read the last line (it may have been cut) and the one before it (a trailing `\r`
        # may turn out to be half of a `\r\n`).
        stable = old_index.line_start_at(max(0, old_index.line_start_at(old_length) - 1))
        # A traceback still open at the old end, or one whose last lines are read again, is
        # read again whole (its lines would otherwise be parsed as lines of their own).
        stable_line = old_index.line_of(stable)
        # So is one whose copy might follow it in lines read again: whether the next lines are
        # a copy of it was decided on the old text (see `repeats`).
        for tb in scan.tracebacks:
            if tb.open or next_copy_end(tb) >= stable_line:
                stable = min(stable, scan.offsets.get(tb.header_line, 0))
        # So is a fault whose `faulthandler` stack was read to the old end (more may follow).
        for _, offset in scan.open_faults:
            stable = min(stable, offset)
        # In the new text the cut may have fallen between the halves of a `\r\n`: start at
        # the beginning of the line that holds it.
        if index.inside_crlf(stable):
            stable = index.line_start_at(stable - 1)
        stable = resume_point(index, scan.repeats, stable)
        return truncate_scan(scan, index.line_of(stable)), stable


def _learn_prefix(index: LogIndex) -> tuple[re.Pattern[str] | None, bool]:
    """The log's own outer prefix (`learn_outer_prefix` of its first `_LEARN_LINES` lines), and
    whether the text held more lines than those (a text that grows cannot change them then)."""
    lines = [raw for _, raw in index.iter_lines_from(0, 0, _LEARN_LINES + 1)]
    return learn_outer_prefix(lines[:_LEARN_LINES]), len(lines) > _LEARN_LINES


def _pattern_text(pattern: re.Pattern[str] | None) -> str | None:
    return pattern.pattern if pattern is not None else None


def _with_abandoned(
    index: LogIndex, catalog: Catalog, scan: Scan, incidents: list[Incident]
) -> list[Incident]:
    """`incidents` with the runs whose start-up its caller abandoned (`abandoned_startups`). A
    run that seemed to end hung is one of them when its caller printed why the wait ended (vLLM
    gave up on a placement group, and the caller printed its error): the report replaces the hang."""
    hung = {id(inc) for inc in incidents if inc.symptoms[0][0].kind == "hung-at-end"}
    abandoned = abandoned_startups(index, catalog, scan, [inc for inc in incidents if id(inc) not in hung])
    if not abandoned:
        return incidents
    ended = {(inc.outer, inc.run_index) for inc in abandoned}
    kept = [inc for inc in incidents if id(inc) not in hung or (inc.outer, inc.run_index) not in ended]
    return sorted([*kept, *abandoned], key=lambda inc: inc.symptoms[0][0].line)


def _analysis(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    warnings: tuple[str, ...],
    stats: StatsScan,
    unwrap: Callable[[Scan], list[Candidate]] | None = None,
) -> Analysis:
    unwrapped = unwrap(scan) if unwrap is not None else unwrap_candidates(catalog, scan)
    pools = sorted(unwrapped, key=lambda c: c.event.line)
    incidents = _with_abandoned(index, catalog, scan, group_incidents(index, catalog, scan, pools))
    findings: list[Finding] = []
    runs: dict[tuple[str, int], RunSegment] = {}
    matches = RuleMatches(catalog)  # deaths of a restart loop repeat their causes
    for incident in incidents:
        finding = _diagnose(index, catalog, scan, incident, runs, pools, matches)
        if finding is not None:
            findings.append(finding)
    findings = _dedupe(findings)
    precursors = _precursors_for(scan, findings)
    line_count = index.line_of(len(index)) + 1
    run_starts = tuple(sorted({n for n, _ in scan.run_starts}))
    return Analysis(
        findings=tuple(findings),
        precursors=tuple(precursors),
        runs=tuple(runs.values()),
        line_count=line_count,
        warnings=warnings + _encoding_warnings(index),
        folds=_folds(scan),
        run_starts=run_starts,
        health=build_health(index, stats, run_starts, line_count, findings, known_offsets=scan.offsets),
        ended_in_startup=None if findings else ended_in_startup(index, catalog),
    )


def _folds(scan: Scan) -> tuple[tuple[int, int], ...]:
    """(first, last) line of each traceback of more than one line, a repeated one's skipped
    copies included, in line order. (The scan lists a traceback when it reads it: one without its
    header is read from its exception line, after those whose headers lie between.)"""
    read = sorted((tb.header_line, tb.last_line) for tb in scan.tracebacks if tb.last_line > tb.header_line)
    if not scan.repeats:
        return tuple(read)
    import heapq  # (here: a log without repeated tracebacks never merges)

    return tuple(heapq.merge(read, *(run.folds() for run in scan.repeats)))


def _encoding_warnings(index: LogIndex) -> tuple[str, ...]:
    """Invalid UTF-8 anywhere in a file's bytes (one C-speed pass), not only in the lines read."""
    offset = index.first_invalid_utf8()  # (an editor's text is decoded already: None)
    if offset is None:
        return ()
    line = index.newline_lines().line(index.line_of(offset)) + 1  # as grep -n numbers it
    return (f"invalid UTF-8 (first seen on line {line}); undecodable bytes shown as U+FFFD",)


def _diagnose(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    incident: Incident,
    runs: dict[tuple[str, int], RunSegment],
    pools: list[Candidate],
    matches: RuleMatches,
) -> Finding | None:
    starts = run_lines(scan, incident.outer)
    run_start = starts[incident.run_index - 1] if incident.run_index > 0 else 0
    next_run = starts[incident.run_index] if incident.run_index < len(starts) else 1 << 60
    window = (run_start, next_run)
    choice = choose_root(index, catalog, scan, incident, window, pools)
    if choice is not None:
        choice = promote_precursor(index, catalog, scan, choice, run_start)
    cand = choice.candidate if choice is not None else symptom_as_root(incident)
    event = cand.event
    root_offset = line_offset(index, scan, event.line)
    run_offset = line_offset(index, scan, run_start) if run_start else 0
    key = (incident.outer, incident.run_index)
    if key not in runs:
        end_line = min(next_run - 1, max(s.line for s, _, _ in incident.symptoms) + LATE_WINDOW)
        context = read_context(index, run_offset, root_offset + 1)
        runs[key] = RunSegment(run_start, end_line, incident.outer, context)
    context = runs[key].context
    finding = build_finding(
        index, catalog, scan, incident, cand, context, run_offset, root_offset, window, matches
    )
    said_by_link = None
    if choice is not None and not finding.recognized:
        said_by_link = _named_by_a_later_link(
            index, catalog, scan, incident, cand, pools, context, window, matches
        )
    if said_by_link is not None:
        original, (cand, finding) = cand, said_by_link
        event = cand.event
    telling = _telling_line(index, catalog, event)
    if telling is not None:
        span, words = telling
        # A reason above the error is not part of its text: the finding quotes the line it points at.
        text = finding.root_text if span.line in event.message_lines else f"{words}\n{finding.root_text}"
        finding = replace(finding, root=span, root_text=text)
    if choice is None:
        return replace(finding, why=stand_in_why(incident), confidence="low")
    if said_by_link is not None:
        return _told_by_link(finding, choice, original, cand)
    return replace(finding, why=choice.why, considered=choice.considered, confidence=choice.confidence)


def _named_by_a_later_link(
    index: LogIndex,
    catalog: Catalog,
    scan: Scan,
    incident: Incident,
    cand: Candidate,
    pools: list[Candidate],
    context: RunContext,
    window: tuple[int, int],
    matches: RuleMatches,
) -> tuple[Candidate, Finding] | None:
    """The first later link of `cand`'s exception chain (raised while handling it, or from it)
    that a rule knows, with its finding, when the chain's root names no cause (`HTTPError: 403
    Client Error` under `GatedRepoError`, a library's bare error under vLLM's words for it);
    None when none does. A wrapper (`Engine core initialization failed`) is never one."""
    tb = cand.traceback
    if tb is None or len(tb.chain) <= cand.event.chain_index + 1 or stopped(catalog, cand):
        return None  # (a stop names its cause: what it broke afterwards does not)
    lo = bisect.bisect_left(pools, cand.event.line, key=lambda c: c.event.line)
    hi = bisect.bisect_right(pools, tb.last_line, key=lambda c: c.event.line)
    later = sorted(
        (
            c
            for c in pools[lo:hi]
            if c.traceback is tb and c.event.chain_index > cand.event.chain_index and c.tier < 9
        ),
        key=lambda c: c.event.chain_index,
    )
    run_offset = line_offset(index, scan, window[0]) if window[0] else 0
    for link in later:
        link_offset = line_offset(index, scan, link.event.line)
        finding = build_finding(
            index, catalog, scan, incident, link, context, run_offset, link_offset, window, matches
        )
        if finding.recognized:
            return link, finding
    return None


def _told_by_link(finding: Finding, choice: RootChoice, original: Candidate, link: Candidate) -> Finding:
    """`finding` (of `link`, a later link of `original`'s chain) saying why the link stands for
    the chain, with the original among what was considered."""
    kind = original.event.type_name.rsplit(".", 1)[-1] or "exception"
    chain = original.traceback.chain if original.traceback is not None else []
    # (The choice's words describe the original: where it was printed, what came after it.)
    said = choice.why
    template = said.template if isinstance(said, LineWords) else braces_kept(said)
    lines = said.lines if isinstance(said, LineWords) else ()
    _, _, where = template.partition(", printed")
    head = braces_kept(
        f"link {link.event.chain_index + 1} of a chain of {len(chain)}, raised from its original"
        f" exception ({kind}), which names no cause a rule knows"
    )
    why = LineWords(head + (f", printed{where}" if where else ""), *lines)
    considered = [item for item in choice.considered if item.line != link.event.line]
    considered.append(
        Considered(original.event.line, original.event.text[:200], "names no cause; a later link does")
    )
    return replace(
        finding,
        why=why,
        considered=tuple(sorted(considered, key=lambda c: c.line)),
        confidence=choice.confidence,
    )


def _telling_line(index: LogIndex, catalog: Catalog, event: ExceptionEvent) -> tuple[Span, str] | None:
    """Where a multi-line error states its cause in words, when its first line only announces
    it (`1 validation error for ModelConfig` above `Value error, ...`) or gives a code (Ascend's
    `EZ9903: … rtKernelLaunch failed` under `[Error]: The aicore execution is abnormal.`)."""
    first = event.text.split("\n", 1)[0]
    for marker in catalog.markers_of("headline"):
        if marker.reason is None or marker.literal not in first or not marker.pattern.search(first):
            continue
        above = range(event.line - 1, max(-1, event.line - 1 - marker.above), -1)
        for number in (*event.message_lines, *_same_block(index, event, above)):
            line = parse_line(number, index.line_text(number))
            message = line.message.strip()
            if marker.reason.search(message):
                col = line.message_col + (len(line.message) - len(line.message.lstrip()))
                return Span(number, col, len(line.text.rstrip())), message
    return None


def _same_block(index: LogIndex, event: ExceptionEvent, numbers: range) -> list[int]:
    """Of `numbers` (walking away from the event), those of the event's writer up to a blank line."""
    found = []
    for number in numbers:
        line = parse_line(number, index.line_text(number))
        if not line.message.strip() or line.stream != event.stream:
            break
        found.append(number)
    return found


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per root-cause line (two runs can share a late root, e.g. a core dump)."""
    seen: dict[int, Finding] = {}
    for finding in findings:
        if finding.line in seen:
            kept = seen[finding.line]
            seen[finding.line] = replace(kept, symptoms=kept.symptoms + finding.symptoms)
        else:
            seen[finding.line] = finding
    return list(seen.values())


def _precursors_for(scan: Scan, findings: list[Finding]) -> list[Precursor]:
    """Precursors before a death in a run that died; healthy runs get none."""
    if not findings:
        return []
    last = max(max((s.line for s in f.symptoms), default=f.line) for f in findings)
    last = max(last, max(f.line for f in findings))
    roots = {f.line for f in findings}  # a warning promoted to a root cause is not also a precursor
    return [p for p, _ in scan.precursors if p.line <= last and p.line not in roots]
