"""Document synchronisation: logs into our `DocumentStore`, everything else into pygls's workspace.

Log-like documents (language ids `vllm-log`, `log`, `plaintext`) are kept by us (see `textsync`
for why); other documents (launch scripts a client may sync) stay in `server.workspace` as pygls
keeps them. A `log`/`plaintext` document that does not look like a vLLM log is tracked but not
served, and sniffed again as it grows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from ..core.text import GrowingText
from .safety import log_to_client
from .sniff import SNIFFED_LANGUAGE_IDS, VLLM_LANGUAGE_IDS, should_serve
from .state import DocumentState
from .textsync import apply_changes

if TYPE_CHECKING:
    from .server import VllmLogServer

_OURS = VLLM_LANGUAGE_IDS | SNIFFED_LANGUAGE_IDS


class VllmLogProtocol(LanguageServerProtocol):
    """pygls's protocol, with log documents routed to our store before user handlers run."""

    _server: VllmLogServer

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        doc = params.text_document
        if doc.language_id not in _OURS:
            return (yield from super().lsp_text_document__did_open(params))
        server = self._server
        text = doc.text if isinstance(doc.text, str) else ""
        server.documents.put(
            DocumentState(
                uri=doc.uri,
                language_id=doc.language_id,
                version=doc.version,
                document=GrowingText(text),
                served=should_serve(doc.language_id, text),
                settings=server.settings.for_uri(doc.uri),
                folder=server.folder_of(doc.uri),
            )
        )
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        state = self._server.documents.get(params.text_document.uri)
        if state is None or state.from_disk:
            if params.text_document.uri in self.workspace.text_documents:
                return (yield from super().lsp_text_document__did_change(params))
            log_to_client(
                self._server, f"vllm-log: didChange for a document not open: {params.text_document.uri}"
            )
            return None
        server = self._server
        state.document, state.last_line, _ = apply_changes(
            state.document,
            params.content_changes,
            server.position_encoding,
            server.newline_only_lines,
            state.last_line,
            exclusive=server.pipeline.idle,
        )
        state.version = params.text_document.version
        if not state.served:
            state.served = should_serve(state.language_id, state.text)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        if self._server.documents.get(uri) is None:
            if uri in self.workspace.text_documents:
                return (yield from super().lsp_text_document__did_close(params))
            return None
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


def register(server: VllmLogServer) -> None:
    """Analyse on open (at once) and on change (debounced); clear on close."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        state = server.documents.get(params.text_document.uri)
        if state is not None and state.served:
            server.pipeline.schedule(state, delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        state = server.documents.get(params.text_document.uri)
        if state is not None and state.served:
            server.pipeline.schedule(state)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        state = server.documents.pop(params.text_document.uri)
        if state is not None:
            server.pipeline.cancel(state)
            if state.served:
                server.pipeline.clear(state.uri)
