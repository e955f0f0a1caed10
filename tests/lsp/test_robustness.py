"""Malformed and hostile input never crashes the server or stops it answering."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import close, doc, fixture_text, fresh_uri, open_log, pos

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def still_answers(client) -> None:
    """A real request on a real log still gets its answer, promptly."""
    uri = fresh_uri("alive.log")
    await open_log(client, uri, fixture_text("crash-038.log"))
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(doc(uri), pos(133))), 10
    )
    assert hover is not None
    close(client, uri)


async def test_requests_on_unknown_documents(client):
    unknown = doc("file:///never/opened.log")
    assert await client.text_document_hover_async(types.HoverParams(unknown, pos(3, 4))) is None
    assert not await client.text_document_definition_async(types.DefinitionParams(unknown, pos(0)))
    assert not await client.text_document_code_lens_async(types.CodeLensParams(unknown))
    assert not await client.text_document_document_symbol_async(types.DocumentSymbolParams(unknown))
    assert not await client.text_document_folding_range_async(types.FoldingRangeParams(unknown))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=unknown.uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text="x")],
        )
    )
    close(client, unknown.uri)
    await still_answers(client)


async def test_positions_past_the_end(client):
    uri = fresh_uri("short.log")
    await open_log(client, uri, fixture_text("crash-031.log"))
    far = pos(10_000, 99_999)
    assert await client.text_document_hover_async(types.HoverParams(doc(uri), far)) is None
    assert await client.text_document_hover_async(types.HoverParams(doc(uri), pos(24, 99_999))) is not None
    assert not await client.text_document_definition_async(types.DefinitionParams(doc(uri), far))
    # An edit whose range lies past the end is applied at the end, not a crash.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(range=types.Range(far, far), text="\nmore\n")],
        )
    )
    await still_answers(client)
    close(client, uri)


async def test_binary_content(client):
    uri = fresh_uri("core.bin")
    data = bytes(range(256)) * 64 + b"\x00\x00vllm\xff\xfe"
    await open_log(client, uri, data.decode("latin-1"))
    await still_answers(client)
    close(client, uri)


async def test_a_10_mb_single_line(client):
    uri = fresh_uri("one-line.log")
    text = "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] " + "模型🚀█x" * 2_500_000
    await open_log(client, uri, text, wait=False)
    await still_answers(client)
    # A request on the huge line itself is answered too (whatever the analysis made of it).
    await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(doc(uri), pos(0, 5_000_000))), 10
    )
    close(client, uri)


async def test_bad_command_arguments(client):
    with pytest.raises(Exception, match="goToRootCause"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="vllmLog.goToRootCause", arguments=[{"bad": 1}])
        )
    await still_answers(client)


async def test_a_failed_analysis_is_an_error_never_a_healthy_looking_log(tmp_path):
    """A damaged install (a built-in rule file cut short) makes the analysis raise when it
    reaches that file: the log gets one error that says it was not diagnosed and why, not an
    empty list of diagnostics, and the server goes on answering."""
    import os
    import shutil

    from pytest_lsp import ClientServerConfig

    import vllm_log_lsp

    from .conftest import SERVER_COMMAND, init_params, make_client, stopped, wait_published

    package = tmp_path / "server" / "vllm_log_lsp"
    shutil.copytree(Path(vllm_log_lsp.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    damaged = package / "catalog" / "10-memory.toml"
    damaged.write_text(damaged.read_text(encoding="utf-8")[:-40], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "server"), "VLLM_LOG_LSP_CACHE_DIR": ""}
    config = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client, server_env=env)
    client = await config.start()
    try:
        await client.initialize_session(init_params("visual-studio-code"))
        uri = fresh_uri("damaged.log")
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(
                    uri=uri, language_id="vllm-log", version=1, text=fixture_text("crash-038.log")
                )
            )
        )
        [diagnostic] = await wait_published(client, uri, 1, timeout=30)
        assert diagnostic.severity == types.DiagnosticSeverity.Error and diagnostic.code == "analysis-failed"
        assert "Not diagnosed" in diagnostic.message and "catalog/10-memory.toml" in diagnostic.message
        assert await client.text_document_hover_async(types.HoverParams(doc(uri), pos(0))) is None
    finally:
        await stopped(client)
