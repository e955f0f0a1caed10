"""Per-document state: the text the editor synced, and the latest analysis of it.

This is the object other features read (hover, navigation, and the code actions that turn a
finding's fixes into launch-script edits). Use it like this::

    state = server.documents.get(uri)            # DocumentState | None
    if state and state.result:                   # the latest *published* analysis
        result = state.result
        result.analysis.findings                 # core `Finding`s (rule_id, fixes, context ...)
        result.version                           # the document version it was computed for
        result.line_text(n)                      # text of line n of the analysed text
        result.settings                          # effective `Settings` (launch_include/exclude ...)
    state.folder                                 # workspace folder URI holding it, or None
    server.workspace_folders                     # every workspace folder URI

`result` may lag behind `text`/`version` while a newer analysis runs; it is replaced in one
assignment on the event loop, so a reader always sees a consistent snapshot.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import cached_property

from ..core.analyze import Analyzer
from ..core.model import Analysis, Finding
from ..core.text import GrowingText, LogIndex, Text
from .positions import ClientLines
from .settings import Settings


@dataclass(frozen=True)
class AnalysisResult:
    """One analysis of one document version: immutable, safe to share across threads."""

    version: int | None
    index: LogIndex  # index.text is the text that was analysed (grown in place by appends since)
    analysis: Analysis
    settings: Settings
    skipped_reason: str | None = None  # set when the document was not analysed (too large, failed)
    failed: bool = False  # the analysis raised: `skipped_reason` says so, as an error
    newline_only: bool = False  # the client ends lines only at `\n` (see `ClientLines`)
    # The document's own text, when the analysed text is a transcript of it (a JSON log).
    document: LogIndex | None = None

    @property
    def text(self) -> Text:
        """What was analysed: a synced document's text, or a file's bytes (`vllmLog.analyzeFile`)."""
        return self.index.text

    def line_text(self, line: int) -> str:
        return self.index.line_text(line)

    @cached_property
    def lines(self) -> ClientLines:
        """Core lines and spans as positions in the client's lines, and back."""
        return ClientLines(self.index, self.newline_only, self.analysis.source_map, self.document)

    @property
    def last_line(self) -> tuple[int, int]:
        """(number, start offset) of the document's last line, as the client counts lines (see
        `textsync.last_line`), read from the line table."""
        return self.lines.last_line()

    def finding_at_root(self, line: int) -> list[Finding]:
        return [f for f in self.analysis.findings if f.root.line == line]

    def findings_with_symptom(self, line: int) -> list[Finding]:
        return [f for f in self.analysis.findings if any(s.line == line for s in f.symptoms)]


@dataclass(eq=False)
class DocumentState:
    """A document the server knows: synced by the editor, or read from disk by a command."""

    uri: str
    language_id: str
    version: int | None
    document: GrowingText  # the text the editor synced (appends grow it, see `textsync`)
    served: bool  # a vLLM log: analysed and given features; other documents are only tracked
    settings: Settings
    folder: str | None = None
    from_disk: bool = False  # loaded by `vllmLog.analyzeFile`, not open in the editor
    result: AnalysisResult | None = None
    # Internal to the pipeline: incremental analyzer, pending debounce task, one analysis at a time.
    analyzer: Analyzer | None = None
    pending: asyncio.Task | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_line: tuple[int, int] | None = None  # (number, start) of `text`'s last line, when known

    @property
    def text(self) -> str:
        """The document's text now."""
        return self.document.text


class DocumentStore:
    """URI → DocumentState for every document the server tracks."""

    def __init__(self) -> None:
        self._docs: dict[str, DocumentState] = {}

    def get(self, uri: str) -> DocumentState | None:
        return self._docs.get(uri)

    def put(self, state: DocumentState) -> None:
        self._docs[state.uri] = state

    def pop(self, uri: str) -> DocumentState | None:
        return self._docs.pop(uri, None)

    def __iter__(self):
        return iter(list(self._docs.values()))

    def result(self, uri: str) -> AnalysisResult | None:
        """The latest analysis of a served document, or None."""
        state = self._docs.get(uri)
        return state.result if state is not None and state.served else None
