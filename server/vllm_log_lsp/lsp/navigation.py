"""Between symptoms and their cause: definition, references, code lenses.

- `textDocument/definition` on a symptom line → the root cause (Neovim `<C-]>`, VS Code F12).
- `textDocument/references` on a root-cause line → its symptoms (and itself if asked).
- A code lens above each symptom line, "Root cause: <title> (line N)", runs the server command
  `vllmLog.goToRootCause` which asks the client to show the cause (`window/showDocument`), so it
  works in every client that supports showDocument, not only VS Code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..core.model import Finding
from .safety import guarded
from .state import AnalysisResult

if TYPE_CHECKING:
    from .server import VllmLogServer

GO_TO_ROOT_CAUSE = "vllmLog.goToRootCause"


def root_location(uri: str, result: AnalysisResult, finding: Finding, encoding: str) -> types.Location:
    return types.Location(uri=uri, range=result.lines.range(finding.root, encoding))


def symptom_locations(
    uri: str, result: AnalysisResult, finding: Finding, encoding: str
) -> list[types.Location]:
    seen: set[int] = set()
    out = []
    for symptom in finding.symptoms:
        if symptom.line in seen or symptom.line == finding.root.line:
            continue
        seen.add(symptom.line)
        out.append(types.Location(uri=uri, range=result.lines.range(symptom.span, encoding)))
    return out


def register(server: VllmLogServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guarded(server, empty=[])
    async def definition(params: types.DefinitionParams) -> list[types.Location]:
        uri = params.text_document.uri
        result = server.documents.result(uri)
        if result is None:
            return []
        line = result.lines.core_line(params.position, server.position_encoding)
        return [
            root_location(uri, result, f, server.position_encoding)
            for f in result.findings_with_symptom(line)
            if f.root.line != line
        ]

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @guarded(server, empty=[])
    async def references(params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        result = server.documents.result(uri)
        if result is None:
            return []
        encoding = server.position_encoding
        out: list[types.Location] = []
        for finding in result.finding_at_root(result.lines.core_line(params.position, encoding)):
            if params.context.include_declaration:
                out.append(root_location(uri, result, finding, encoding))
            out.extend(symptom_locations(uri, result, finding, encoding))
        return out

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @guarded(server, empty=[])
    async def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        result = server.documents.result(uri)
        if result is None:
            return []
        lenses = []
        for finding in result.analysis.findings:
            for location in symptom_locations(uri, result, finding, server.position_encoding):
                line = location.range.start.line
                lenses.append(
                    types.CodeLens(
                        range=types.Range(types.Position(line, 0), types.Position(line, 0)),
                        command=types.Command(
                            title=f"Root cause: {finding.title} (line {result.lines.line(finding.root.line) + 1})",
                            command=GO_TO_ROOT_CAUSE,
                            arguments=[uri, finding.root.line],
                        ),
                    )
                )
        return lenses

    @server.command(GO_TO_ROOT_CAUSE)
    @guarded(server, reraise=True)
    async def go_to_root_cause(*args) -> bool:  # unannotated: pygls structures annotated args
        """Arguments: the log's URI and the root-cause line (0-based). Returns whether shown."""
        if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], int):
            raise ValueError(f"{GO_TO_ROOT_CAUSE} expects [uri, line], got {list(args)!r}")
        uri, line = args[0], args[1]
        result = server.documents.result(uri)
        selection = types.Range(types.Position(line, 0), types.Position(line, 0))
        if result is not None:
            start = result.lines.position(line, 0, server.position_encoding)
            selection = types.Range(start, start)
            for finding in result.finding_at_root(line):
                selection = root_location(uri, result, finding, server.position_encoding).range
        shown = await server.window_show_document_async(
            types.ShowDocumentParams(uri=uri, take_focus=True, selection=selection)
        )
        return bool(shown and shown.success)
