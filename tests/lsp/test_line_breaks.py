"""Progress bars redrawn with a bare `\\r` before the root cause: every position lands on the line
the client shows. VS Code ends a line at a bare `\\r` (as LSP says); Neovim keeps it inside the line
(as do Emacs, grep, less and vim). Run with both pytest-lsp profiles, which send each client's
`clientInfo`; tests/editors/test_neovim.py checks the same in a real Neovim."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types

from support import progress_redraws

from .conftest import close, encoding_of, fixture_text, fresh_uri, open_log, units, wait_published

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT_TEXT = "torch.OutOfMemoryError"


def log_with_redraws() -> str:
    """Corpus 007 with bars before the root cause, one of them on the root-cause line itself."""
    lines = fixture_text("crash-007.log").split("\n")
    root = next(i for i, line in enumerate(lines) if ROOT_TEXT in line)
    lines[root] = progress_redraws("Capturing CUDA graphs", 3) + "\r" + lines[root]
    lines.insert(root - 5, progress_redraws("Loading safetensors checkpoint shards", 4))
    lines.insert(2, progress_redraws("Profiling", 6))
    return "\n".join(lines)


def client_lines(text: str, client) -> list[str]:
    """The lines as this client's buffer holds them."""
    if client.profile.startswith("neovim"):
        return [line.removesuffix("\r") for line in text.split("\n")]
    return re.split(r"\r\n|\r|\n", text)


def where(text: str, needle: str, client) -> tuple[int, int]:
    """(line, column in the client's units) of the first `needle`, as the client counts."""
    for number, line in enumerate(client_lines(text, client)):
        if needle in line:
            return number, units(line[: line.index(needle)], encoding_of(client))
    raise AssertionError(needle)


async def test_diagnostics_land_on_the_lines_the_client_shows(client):
    text = log_with_redraws()
    uri = fresh_uri("redraws.log")
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    line, column = where(text, ROOT_TEXT, client)
    assert (root.range.start.line, root.range.start.character) == (line, column)
    shown = client_lines(text, client)
    for diagnostic in diagnostics:
        start, end = diagnostic.range.start, diagnostic.range.end
        assert start.line == end.line < len(shown)
        assert end.character <= units(shown[start.line], encoding_of(client))
    symptom_line, _ = where(text, "EngineCore failed to start.", client)
    assert any(d.range.start.line == symptom_line for d in diagnostics if d is not root)
    # A symptom's message names the root cause's line as the client numbers it (1-based).
    assert any(f"caused by line {line + 1}:" in d.message for d in diagnostics)

    # Hover and go-to-definition take the client's positions.
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, column + 1))
    )
    assert hover is not None and "Root cause" in hover.contents.value
    definition = await client.text_document_definition_async(
        types.DefinitionParams(types.TextDocumentIdentifier(uri), types.Position(symptom_line, 0))
    )
    assert [(d.range.start.line, d.range.start.character) for d in definition] == [(line, column)]
    close(client, uri)


async def test_the_hover_names_lines_as_the_client_numbers_them(client):
    """The diagnosis names other lines (what died where, what else was considered and why
    not): each number is the client's, so it agrees with the diagnostics around it."""
    from core.test_line_words import DEATH, START

    text = "\n".join([*START, progress_redraws("Loading safetensors checkpoint shards", 4), *DEATH]) + "\n"
    uri = fresh_uri("hover-lines.log")
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    line, column = where(text, "RuntimeError: weights of rank 0", client)
    later, _ = where(text, "RuntimeError: weights of rank 1", client)
    assert root.range.start.line == line
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, column + 1))
    )
    assert hover is not None
    shown = hover.contents.value
    assert f"(line {line + 1})" in shown.split("\n\n")[1]  # what died, and where
    assert f"- not line {later + 1} (`" in shown
    assert f"came after line {line + 1}" in shown
    close(client, uri)


async def test_an_edit_after_the_redraws_lands_where_the_client_made_it(client):
    """Incremental sync: the client's line numbers locate the edit in the server's copy."""
    text = log_with_redraws()
    uri = fresh_uri("edited.log")
    await open_log(client, uri, text)
    line, column = where(text, "Tried to allocate 594.00 MiB", client)
    size = units("594.00 MiB", encoding_of(client))
    start = types.Position(line, column + units("Tried to allocate ", encoding_of(client)))
    end = types.Position(line, start.character + size)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(start, end), text="7.25 GiB")
            ],
        )
    )
    diagnostics = await wait_published(client, uri, version=2)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    assert "tried 7.25 GiB" in root.message, root.message
    assert root.range.start.line == where(text, ROOT_TEXT, client)[0]
    close(client, uri)
