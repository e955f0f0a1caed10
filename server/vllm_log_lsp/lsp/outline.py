"""The log as a timeline: document symbols (runs → phases and incidents) and folding ranges.

The outline needs a few bounded text searches per run (`core.outline.build_outline`), so it is
built in the worker pool on first request and cached per analysed version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from lsprotocol import types

from ..core.model import Finding
from ..core.outline import RunOutline, build_outline, run_boundaries
from .health_render import series_symbols
from .safety import guarded
from .state import AnalysisResult, DocumentState

if TYPE_CHECKING:
    from .server import VllmLogServer


def run_name(number: int, run: RunOutline, result: AnalysisResult) -> str:
    version, model = run.version, run.model
    for segment in result.analysis.runs:  # runs without a death still know their context
        if run.start_line <= segment.start_line <= run.end_line:
            version = version or segment.context.vllm_version
            model = model or segment.context.model
    name = f"Run {number}: vLLM {version}" if version else f"Run {number}: vLLM"
    return f"{name} · {model}" if model else name


def _lines_text(result: AnalysisResult, first: int, last: int) -> str:
    """`lines a–b` as the client numbers them, the first it shows first."""
    shown = sorted((result.lines.line(first) + 1, result.lines.line(last) + 1))
    return f"lines {shown[0]}–{shown[1]}"


def document_symbols(
    result: AnalysisResult, outline: list[RunOutline], encoding: str
) -> list[types.DocumentSymbol]:
    """Runs → phase segments → the deaths in them (so the breadcrumb at a root cause names the
    phase its diagnostic and hover name)."""
    symbols = []
    for number, run in enumerate(outline, 1):
        children: list[tuple[int, types.DocumentSymbol]] = []
        segments = _phase_segments(result, run, encoding)
        for finding in run.findings:
            segment = next((seg for seg in reversed(segments) if seg[0] <= finding.root.line), None)
            last = segment[1] if segment else run.end_line
            symbol = _death_symbol(result, finding, last, encoding)
            if segment is None:
                children.append((finding.root.line, symbol))
            else:
                segment[2].children = [*(segment[2].children or []), symbol]
        children += [(first, symbol) for first, _, symbol in segments]
        if result.analysis.health is not None:
            children += series_symbols(result, result.analysis.health, number - 1, encoding)
        children.sort(key=lambda item: item[0])
        symbols.append(
            types.DocumentSymbol(
                name=run_name(number, run, result),
                kind=types.SymbolKind.Module,
                detail=_lines_text(result, run.start_line, run.end_line)
                + (f", {len(run.findings)} incident(s)" if run.findings else ""),
                range=result.lines.lines_range(run.start_line, run.end_line, encoding),
                selection_range=result.lines.line_range(run.start_line, encoding),
                children=[symbol for _, symbol in children],
            )
        )
    return symbols


def _phase_segments(
    result: AnalysisResult, run: RunOutline, encoding: str
) -> list[tuple[int, int, types.DocumentSymbol]]:
    """(first line, last line, symbol) of each phase segment: a mark up to the next one."""
    marks = list(run.phases)
    segments = []
    for i, mark in enumerate(marks):
        last = max(mark.line, marks[i + 1].line - 1 if i + 1 < len(marks) else run.end_line)
        symbol = types.DocumentSymbol(
            name=mark.title,
            kind=types.SymbolKind.Event,
            detail=f"line {result.lines.line(mark.line) + 1}",
            range=result.lines.lines_range(mark.line, last, encoding),
            selection_range=result.lines.line_range(mark.line, encoding),
        )
        segments.append((mark.line, last, symbol))
    return segments


def _death_symbol(result: AnalysisResult, finding: Finding, last: int, encoding: str) -> types.DocumentSymbol:
    """A death from its root to its last symptom, kept inside the segment that holds it."""
    lines = [finding.root.line] + [s.line for s in finding.symptoms if finding.root.line <= s.line <= last]
    return types.DocumentSymbol(
        name=finding.title,
        kind=types.SymbolKind.Object,
        detail=f"root cause, line {result.lines.line(finding.root.line) + 1} ({finding.rule_id})",
        range=result.lines.lines_range(finding.root.line, max(lines), encoding),
        selection_range=result.lines.range(finding.root, encoding),
    )


def folding_ranges(result: AnalysisResult) -> list[types.FoldingRange]:
    """Tracebacks and runs, in the client's lines (a JSON log's transcript lines map to its own)."""
    analysis, client = result.analysis, result.lines.line
    spans = [*analysis.folds, *run_boundaries(analysis.run_starts, analysis.line_count)]
    ranges = {
        (min(client(first), client(last)), max(client(first), client(last)))
        for first, last in spans
        if last > first and client(last) != client(first)
    }
    return [
        types.FoldingRange(start_line=first, end_line=last, kind=types.FoldingRangeKind.Region)
        for first, last in sorted(ranges, key=lambda r: (r[0], -r[1]))
    ]


class OutlineCache:
    """Each document's outline, for the result it was built from (editors ask on every edit and
    every breadcrumb move); an entry goes with its document, its next result, or new settings."""

    def __init__(self) -> None:
        self._items: WeakKeyDictionary[DocumentState, tuple[AnalysisResult, list[RunOutline]]] = (
            WeakKeyDictionary()
        )

    async def outline(
        self, server: VllmLogServer, state: DocumentState, result: AnalysisResult
    ) -> list[RunOutline]:
        cached = self._items.get(state)
        if cached is not None and cached[0] is result:
            return cached[1]
        outline = await server.pipeline.in_worker(build_outline, result.text, result.analysis, server.catalog)
        self._items[state] = (result, outline)
        return outline

    def forget(self, state: DocumentState) -> None:
        self._items.pop(state, None)

    def clear(self) -> None:
        self._items.clear()


def register(server: VllmLogServer) -> None:
    cache = OutlineCache()
    server.pipeline.on_published(cache.forget)
    server.on_settings_changed(cache.clear)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(server, empty=[])
    async def document_symbol(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        state = server.documents.get(params.text_document.uri)
        if state is None or not state.served or state.result is None or state.result.skipped_reason:
            return []
        result = state.result
        outline = await cache.outline(server, state, result)
        return document_symbols(result, outline, server.position_encoding)

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded(server, empty=[])
    async def folding_range(params: types.FoldingRangeParams) -> list[types.FoldingRange]:
        result = server.documents.result(params.text_document.uri)
        return folding_ranges(result) if result is not None else []
