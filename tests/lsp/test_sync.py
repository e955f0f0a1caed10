"""Growing logs, the stale-version race, the analyzeFile command and work-done progress."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from support import lsp_lines

from .conftest import (
    close,
    doc,
    encoding_of,
    fixture_path,
    fixture_text,
    fresh_uri,
    open_log,
    pos,
    units,
    wait_published,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def append(client, uri: str, version: int, at_line: int, text: str) -> None:
    """An incremental change inserting `text` at the start of line `at_line` (the end of a log
    that ends with a line break), as an editor reloading a tailed file sends it."""
    end = pos(at_line, 0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(end, end), text=text)],
        )
    )


def growing_log() -> tuple[str, str, int, int]:
    """(healthy head, crashing tail, lines in head, root-cause line of the whole)."""
    head = fixture_text("healthy-017.log")
    if not head.endswith("\n"):
        head += "\n"
    n = head.count("\n")
    return head, fixture_text("crash-unicode.log"), n, n + 10


def errors(diagnostics):
    return [d.range.start.line for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]


async def test_appended_lines_are_analysed(client):
    head, tail, n, root = growing_log()
    uri = fresh_uri("tail.log")
    assert await open_log(client, uri, head) == []  # still healthy
    append(client, uri, 2, n, tail)
    assert errors(await wait_published(client, uri, version=2)) == [root]
    close(client, uri)


async def test_only_the_latest_version_is_published(client):
    head, tail, n, root = growing_log()
    cut = tail.index("\n", len(tail) // 2) + 1
    middle, rest = tail[:cut], tail[cut:]
    uri = fresh_uri("race.log")
    await open_log(client, uri, head)
    append(client, uri, 2, n, middle)
    append(client, uri, 3, n + middle.count("\n"), rest)
    assert errors(await wait_published(client, uri, version=3)) == [root]
    await asyncio.sleep(0.5)
    versions = [p.version for p in client.recorder.for_uri(uri)]
    assert versions == [1, 3]
    close(client, uri)


async def test_edit_in_the_middle_and_full_replacement(client):
    text = fixture_text("crash-041.log")
    uri = fresh_uri("edit.log")
    await open_log(client, uri, text)
    # Replace the root-cause line's text with something harmless: the crash is re-diagnosed.
    line = text.splitlines()[108]
    change = types.TextDocumentContentChangePartial(
        range=types.Range(pos(108, 0), pos(108, len(line))), text="INFO 01-01 00:00:00 [x.py:1] all good"
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(uri=uri, version=2), [change])
    )
    assert 108 not in errors(await wait_published(client, uri, version=2))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            [types.TextDocumentContentChangeWholeDocument(text=fixture_text("healthy-017.log"))],
        )
    )
    assert await wait_published(client, uri, version=3) == []
    close(client, uri)


async def test_analyze_file_command_on_an_unopened_file(client, tmp_path: Path):
    path = tmp_path / "big-server.log"
    shutil.copy(fixture_path("crash-038.log"), path)
    summary = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.analyzeFile", arguments=[str(path)])
    )
    assert summary["healthy"] is False
    assert [f["line"] for f in summary["findings"]] == [134]
    assert summary["findings"][0]["fixes"][0]["commandLine"] == "--enforce-eager"
    uri = summary["uri"]
    assert uri == path.as_uri()
    assert errors(await wait_published(client, uri)) == [133]
    # Hover works on the analysed file too.
    hover = await client.text_document_hover_async(types.HoverParams(doc(uri), pos(133)))
    assert hover is not None and "Root cause" in hover.contents.value
    # A file: URI is accepted as well.
    again = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.analyzeFile", arguments=[path.as_uri()])
    )
    assert again["findings"] == summary["findings"]


async def test_analyze_file_errors_are_error_responses(client, tmp_path: Path):
    for arguments in ([str(tmp_path / "missing.log")], [], [42]):
        with pytest.raises(Exception, match=r"analyzeFile|no such file|expects"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="vllmLog.analyzeFile", arguments=arguments)
            )
    assert (
        await client.text_document_hover_async(types.HoverParams(doc("file:///nowhere.log"), pos(0))) is None
    )


async def test_large_document_reports_progress(client):
    healthy = fixture_text("healthy-017.log")
    text = healthy * (2_100_000 // len(healthy) + 1) + fixture_text("crash-041.log")
    uri = fresh_uri("large.log")
    before = set(client.progress_reports)
    diagnostics = await open_log(client, uri, text)
    assert errors(diagnostics)
    new = [client.progress_reports[t] for t in client.progress_reports if t not in before]
    assert (
        new
        and isinstance(new[0][0], types.WorkDoneProgressBegin)
        and isinstance(new[0][-1], types.WorkDoneProgressEnd)
    )
    close(client, uri)


def end_of(text: str, encoding: str) -> types.Position:
    """The position just past the last character of `text`, as LSP (and the client) counts."""
    lines = lsp_lines(text)
    return pos(len(lines) - 1, units(lines[-1], encoding))


def cuts_of(text: str) -> list[int]:
    """Where to cut a corpus log into appends: inside its first traceback (between its header
    and its last line, mid-line), just after its last `ERROR` line, and in the last line."""
    header = text.find("Traceback (most recent call last)")
    inside = text.find("\n", header + 40) + 5 if header >= 0 else len(text) // 3
    after_error = text.find("\n", text.rfind("ERROR")) + 1
    return sorted({c for c in (inside, after_error, len(text) - 2) if 0 < c < len(text)})


@pytest.mark.parametrize("name", ["crash-041.log", "crash-019.log", "crash-032.log"])
async def test_appends_publish_what_opening_the_whole_log_does(client, name: str):
    """Diagnostics after a log grew by appends (cut inside a traceback, after a death, inside
    its last line) are exactly those of opening the whole log, and after each append exactly
    those of opening what the editor had then."""
    text = fixture_text(name)
    encoding = encoding_of(client)
    cuts = cuts_of(text)
    uri = fresh_uri(name)
    await open_log(client, uri, text[: cuts[0]])
    for version, (start, end) in enumerate(zip(cuts, [*cuts[1:], len(text)], strict=True), start=2):
        here = end_of(text[:start], encoding)
        change = types.TextDocumentContentChangePartial(range=types.Range(here, here), text=text[start:end])
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version), [change]
            )
        )
        grown = await wait_published(client, uri, version=version)
        whole_uri = fresh_uri(name)
        whole = await open_log(client, whole_uri, text[:end])
        close(client, whole_uri)
        # (Related information names each document's own URI.)
        assert repr(grown).replace(uri, "URI") == repr(whole).replace(whole_uri, "URI"), f"up to {end}"
        assert errors(grown)
    close(client, uri)


async def test_an_append_to_a_large_document_reports_no_progress(client):
    """Progress is for a full analysis; re-analysing what an append added reuses the rest and
    costs what was appended, so a tailed log does not flash a progress bar on every line."""
    healthy = fixture_text("healthy-017.log")
    text = healthy * (2_100_000 // len(healthy) + 1)
    uri = fresh_uri("large-tail.log")
    before = set(client.progress_reports)
    await open_log(client, uri, text)
    opened = set(client.progress_reports) - before
    assert opened  # the full analysis of the opened document had its progress
    append(client, uri, 2, text.count("\n"), fixture_text("crash-041.log"))
    assert errors(await wait_published(client, uri, version=2))
    assert set(client.progress_reports) - before == opened
    close(client, uri)
