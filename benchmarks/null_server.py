"""The anchor of the LSP benchmark: a pygls server that does nothing but answer.

It keeps documents as pygls does and publishes empty diagnostics for every version, so
`didOpen → publishDiagnostics` against it measures the protocol (the text crossing the pipe,
JSON decoding, pygls's dispatch) and nothing else.

    python benchmarks/null_server.py   # stdio
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("null-server", "1")


def _publish(uri: str, version: int) -> None:
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=version)
    )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(params: types.DidOpenTextDocumentParams) -> None:
    _publish(params.text_document.uri, params.text_document.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(params: types.DidChangeTextDocumentParams) -> None:
    _publish(params.text_document.uri, params.text_document.version)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(params: types.HoverParams) -> types.Hover | None:
    return None


if __name__ == "__main__":
    server.start_io()
