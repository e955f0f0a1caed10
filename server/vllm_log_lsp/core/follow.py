"""A log that keeps growing (`check --follow`, `tail -f … | check -`): each death when it is
complete, in bounded memory.

`Follower` is fed the text as it arrives and re-analysed with the language server's incremental
`Analyzer` (only what was appended is scanned again). A death is complete, and reported once, when
the log has gone on for the analysis's late window after its last symptom (`LATE_WINDOW` lines:
the window in which a fault printed after the death can still become its root cause), when vLLM
started again after it, or when the log has been quiet for a while (`idle`) or ended.

Memory stays bounded on a server that runs for weeks: when the kept text passes `max_chars`, the
older half is dropped, except the start of the current run (its first lines hold what a later
death's report needs: the vLLM version, the model, the launch arguments). Line numbers stay the
log's own: `Death.numbering` maps the kept text's lines back to them.
"""

from __future__ import annotations

import bisect

from .analyze import Analyzer
from .catalog import Catalog
from .incidents import LATE_WINDOW
from .linebreaks import NewlineLines, Numbering
from .model import Analysis, Finding
from .records import dataclass, replace

#: How much text is kept at most (characters), and how much of a run's start survives a trim
#: (at most a quarter of the kept text).
MAX_KEPT_CHARS = 64 << 20
RUN_HEAD_CHARS = 1 << 20
RUN_HEAD_LINES = 2000


class KeptLines:
    """Lines of the kept text (core lines, as the analysis numbers them) as the log's own
    `\\n`-lines: the kept text is a run's head and a tail, each a piece of the log."""

    def __init__(self, inner: Numbering, pieces: list[tuple[int, int]]) -> None:
        self.inner = inner  # core lines of the kept text -> its `\n`-lines
        self.pieces = pieces  # (first `\n`-line of a piece in the kept text, its line in the log)
        self._starts = [kept for kept, _ in pieces]

    def line(self, core_line: int) -> int:
        return self._real(self.inner.line(core_line))

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        line, column = self.inner.position(core_line, column)
        return self._real(line), column

    def _real(self, kept_line: int) -> int:
        return real_line(self.pieces, kept_line, self._starts)


def real_line(pieces: list[tuple[int, int]], kept_line: int, starts: list[int] | None = None) -> int:
    """The log's own line of `\n`-line `kept_line` of a kept text made of `pieces`."""
    starts = starts if starts is not None else [kept for kept, _ in pieces]
    start, real = pieces[max(0, bisect.bisect_right(starts, kept_line) - 1)]
    return real + kept_line - start


@dataclass(frozen=True)
class Death:
    """A complete engine death: its finding, numbered by `numbering` in the log's own lines."""

    finding: Finding
    numbering: KeptLines
    analysis: Analysis  # the analysis it comes from (its health holds the pre-failure record)

    @property
    def line(self) -> int:
        """The log's own 0-based `\\n`-line of the root cause."""
        return self.numbering.line(self.finding.line)


class Follower:
    """Analyses a growing log and says which deaths are complete (see the module docstring)."""

    def __init__(
        self,
        catalog: Catalog | None = None,
        max_chars: int = MAX_KEPT_CHARS,
        settle_lines: int = LATE_WINDOW,
    ) -> None:
        self.analyzer = Analyzer(catalog)
        self.max_chars = max_chars
        self.settle_lines = settle_lines
        self._kept = ""
        self._pieces: list[tuple[int, int]] = [(0, 0)]
        self._head_lines = 0  # the kept run head's `\n`-lines (0: no head kept)
        self._kept_lines = 0  # `\n` in the kept text
        self._reported: set[int] = set()  # log lines of reported roots and symptoms
        self._fed = False
        self.last: Analysis | None = None

    @property
    def kept_chars(self) -> int:
        """How much text is kept now (`complete` trims it past `max_chars`)."""
        return len(self._kept)

    @property
    def total_lines(self) -> int:
        """The log's `\\n`-lines so far."""
        start, real = self._pieces[-1]
        return real + self._kept_lines - start

    def feed(self, text: str) -> None:
        """Append text that arrived (any amount: a line may be cut anywhere)."""
        if text:
            self._kept += text
            self._kept_lines += text.count("\n")
            self._fed = True

    def complete(self, idle: bool = False) -> list[Death]:
        """The deaths that are complete and not reported yet, in log order; `idle`: the log has
        been quiet (or has ended), so every death it shows is complete."""
        if not self._fed and self.last is not None:
            analysis = self.last
        else:
            analysis = self.analyzer.analyze(self._kept)
            self.last, self._fed = analysis, False
        numbering = KeptLines(analysis.source_map or NewlineLines(self._kept), list(self._pieces))
        deaths = [
            Death(f, numbering, analysis)
            for f in analysis.findings
            if self._is_new(f, numbering) and (idle or self._settled(f, analysis, numbering))
        ]
        for death in deaths:
            self._reported.update(self._lines_of(death.finding, numbering))
        if len(self._kept) > self.max_chars:
            self._trim(analysis)
        return deaths

    # -- completeness ---------------------------------------------------------------------------
    @staticmethod
    def _lines_of(finding: Finding, numbering: KeptLines) -> set[int]:
        return {numbering.line(finding.line), *(numbering.line(s.line) for s in finding.symptoms)}

    def _is_new(self, finding: Finding, numbering: KeptLines) -> bool:
        """Not a death reported before: a later analysis may choose another root for it (more
        of its lines arrived, or its start was trimmed), but its symptoms stay on their lines."""
        return not self._lines_of(finding, numbering) & self._reported

    def _settled(self, finding: Finding, analysis: Analysis, numbering: KeptLines) -> bool:
        last = max([finding.line, *(s.line for s in finding.symptoms)])
        if self.total_lines - numbering.line(last) > self.settle_lines:
            return True
        return any(start > last for start in analysis.run_starts)  # vLLM started again

    # -- bounded memory ---------------------------------------------------------------------------
    def _trim(self, analysis: Analysis) -> None:
        """Keep the newer half of the text and the start of the run it belongs to."""
        kept = self._kept
        cut = kept.find("\n", len(kept) - self.max_chars // 2) + 1
        if cut <= 0:
            return  # one line longer than the limit: nothing to cut at
        cut_line = self._head_lines + kept.count("\n", self._head_offset(), cut)
        tail_real = self._real_of_kept_line(cut_line)
        head, head_real = self._run_head(analysis, cut_line)
        head_lines = head.count("\n")
        self._kept = head + kept[cut:]
        self._pieces = [(0, head_real), (head_lines, tail_real)] if head else [(0, tail_real)]
        self._head_lines = head_lines
        self._kept_lines = self._kept.count("\n")
        floor = head_real if head else tail_real
        self._reported = {line for line in self._reported if line >= floor}
        self.analyzer = Analyzer(self.analyzer.catalog)  # the kept text no longer extends the old
        self.last, self._fed = None, True

    def _head_offset(self) -> int:
        """Where the tail starts in the kept text (after the run head)."""
        if not self._head_lines:
            return 0
        pos = -1
        for _ in range(self._head_lines):
            pos = self._kept.find("\n", pos + 1)
        return pos + 1

    def _real_of_kept_line(self, kept_line: int) -> int:
        return real_line(self._pieces, kept_line)

    def _run_head(self, analysis: Analysis, cut_line: int) -> tuple[str, int]:
        """The first lines of the run that is going on at the cut (text, its first log line)."""
        numbering = analysis.source_map or NewlineLines(self._kept)
        starts = [numbering.line(s) for s in analysis.run_starts]
        before = [s for s in starts if s < cut_line]
        first = before[-1] if before else 0
        if self._head_lines and first < self._head_lines:
            first = 0  # the run began in the head kept before: keep that head
        lines = self._kept.split("\n", first + RUN_HEAD_LINES)
        head_lines = lines[first : min(first + RUN_HEAD_LINES, cut_line)]
        head = "".join(line + "\n" for line in head_lines)[: min(RUN_HEAD_CHARS, self.max_chars // 4)]
        head = head[: head.rfind("\n") + 1]
        return head, self._real_of_kept_line(first)


def with_only(analysis: Analysis, findings: list[Finding]) -> Analysis:
    """`analysis` reduced to some of its findings, without its health findings and warnings
    (a follow report prints each death once, as it completes)."""
    return replace(analysis, findings=tuple(findings), warnings=(), precursors=())
