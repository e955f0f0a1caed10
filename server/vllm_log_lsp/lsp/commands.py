"""`vllmLog.analyzeFile`: analyse a log from disk, for logs the editor will not sync;
`vllmLog.report`: the HTML report of a log (the VS Code client shows it in a webview).

VS Code never sends documents over 50 MB to a language server, so its client calls this command
with the file's path or URI. The server reads and analyses the file in a worker thread, publishes
diagnostics for the file's URI (hover and navigation then work on it too) and returns a JSON
summary. A document the editor already syncs is analysed from its synced text instead.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls import uris

from ..core.analyze import Analyzer
from ..core.catalog import Catalog
from ..core.phase import phase_title
from ..core.precursors import collapse_precursors
from ..core.source import open_log
from ..core.text import GrowingText
from ..report.html import render_report
from .pipeline import result_of
from .safety import guarded
from .settings import Settings
from .state import AnalysisResult, DocumentState

if TYPE_CHECKING:
    from .server import VllmLogServer

ANALYZE_FILE = "vllmLog.analyzeFile"
REPORT = "vllmLog.report"


def resolve_target(arg: Any) -> tuple[Path, str]:
    """A path, a `file:` URI, or `{"path"|"uri": ...}` → (path on disk, document URI)."""
    if isinstance(arg, dict):
        arg = arg.get("uri") or arg.get("path")
    if not isinstance(arg, str) or not arg:
        raise ValueError(f"{ANALYZE_FILE} expects a file path or a file: URI, got {arg!r}")
    if arg.startswith("file:"):
        fs_path = uris.to_fs_path(arg)
        if fs_path is None:
            raise ValueError(f"not a file URI: {arg}")
        return Path(fs_path), arg
    path = Path(arg).expanduser().resolve()
    return path, uris.from_fs_path(str(path)) or path.as_uri()


def summary(uri: str, result: AnalysisResult) -> dict[str, Any]:
    """What the command returns: line numbers are 1-based, as editors show them (the client's
    lines: a JSON log's or a cut copy's own, not its transcript's)."""
    analysis = result.analysis
    shown = result.lines.line
    return {
        "uri": uri,
        "lineCount": result.lines.last_line()[0] + 1 if analysis.line_count else 0,
        "healthy": analysis.healthy,
        "skipped": result.skipped_reason,
        "warnings": list(analysis.warnings),
        "findings": [
            {
                "line": shown(f.root.line) + 1,
                "ruleId": f.rule_id,
                "title": f.title,
                "message": f.message,
                "phase": phase_title(f.phase),
                "vllmVersion": f.context.vllm_version,
                "model": f.context.model,
                "symptomLines": sorted({shown(s.line) + 1 for s in f.symptoms}),
                "fixes": [
                    {"title": fx.title, "kind": fx.fix.kind, "commandLine": fx.command_line} for fx in f.fixes
                ],
            }
            for f in analysis.findings
        ],
        "precursors": [
            {"line": shown(g.first.line) + 1, "id": g.first.id, "title": g.first.title, "count": g.count}
            for g in collapse_precursors(analysis.precursors, analysis.findings)
        ],
    }


def _read_and_analyze(
    server: VllmLogServer, path: Path, settings: Settings, catalog: Catalog
) -> AnalysisResult:
    """`check`'s reading of a log (`open_log`: regular files only, large ones mapped, compressed
    and UTF-16 ones decoded, binary refused) and its analysis of the bytes: the pre-filter reads
    the file itself and only the lines read are decoded. Whatever its size: an explicit request
    (the limit guards automatic analysis)."""
    source = open_log(str(path))
    # The editor keeps showing the file: a mapping would break if it shrank (a rotated log), so
    # the bytes are copied once; the pre-filter still reads the file (`plain_path`).
    data = source.data if isinstance(source.data, bytes) else bytes(source.data)
    if isinstance(source.data, mmap.mmap):
        source.data.close()
    analyzer = Analyzer(catalog)
    analysis = analyzer.analyze(data, tuple(source.warnings), source.plain_path, line_table=True)
    return result_of(analyzer, None, analysis, settings, server.newline_only_lines)


async def _current_result(server: VllmLogServer, state: DocumentState | None) -> AnalysisResult | None:
    """The analysis of a document the editor syncs, brought up to its latest version."""
    if state is None or state.from_disk or not state.served:
        return None
    return await server.pipeline.run(state) or state.result


async def report_html(server: VllmLogServer, arg: Any) -> str:
    """`vllmLog.report`: the HTML report of an open log (its synced text), else of a file on disk."""
    named = arg.get("uri") if isinstance(arg, dict) else arg
    state = server.documents.get(named) if isinstance(named, str) else None  # also `untitled:` ones
    if state is None:
        path, uri = resolve_target(arg)
        state = server.documents.get(uri)
    else:
        uri = state.uri
        path = Path(uris.to_fs_path(uri) or uri)
    result = await _current_result(server, state)
    if result is None or result.skipped_reason:
        if not path.exists():  # anything else (a FIFO, a device) is refused by open_log, with why
            raise FileNotFoundError(f"{REPORT}: no such file: {path}")
        settings = server.settings.for_uri(uri)
        catalog = await server.catalogs.for_uri(uri)
        result = await server.pipeline.in_worker(_read_and_analyze, server, path, settings, catalog)
    return await server.pipeline.in_worker(
        render_report, str(path), result.text, result.analysis, server.catalog
    )


def register(server: VllmLogServer) -> None:
    @server.command(REPORT)
    @guarded(server, reraise=True)
    async def report(*args) -> str:  # unannotated: pygls structures annotated args
        if not args:
            raise ValueError(f"{REPORT} expects a document URI or a file path")
        return await report_html(server, args[0])

    @server.command(ANALYZE_FILE)
    @guarded(server, reraise=True)
    async def analyze_file(*args) -> dict[str, Any]:  # unannotated: pygls structures annotated args
        if not args:
            raise ValueError(f"{ANALYZE_FILE} expects a file path or a file: URI")
        path, uri = resolve_target(args[0])
        result = await _current_result(server, server.documents.get(uri))
        if result is not None:
            return summary(uri, result)
        if not path.exists():  # anything else (a FIFO, a device) is refused by open_log, with why
            raise FileNotFoundError(f"{ANALYZE_FILE}: no such file: {path}")
        settings = server.settings.for_uri(uri)
        catalog = await server.catalogs.for_uri(uri)
        result = await server.pipeline.in_worker(_read_and_analyze, server, path, settings, catalog)
        state = DocumentState(
            uri=uri,
            language_id="vllm-log",
            version=None,
            document=GrowingText(""),  # never decoded whole: the features read `result.index`
            served=True,
            settings=settings,
            folder=server.folder_of(uri),
            from_disk=True,
            result=result,
        )
        if (current := server.documents.get(uri)) is None or current.from_disk:
            server.documents.put(state)
            server.pipeline.publish(state)
        return summary(uri, result)
