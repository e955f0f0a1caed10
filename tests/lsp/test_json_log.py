"""vLLM's JSON log format in the editor: diagnostics, hover and navigation land on the JSON
file's own lines, on the escaped text of the root cause inside its record."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types

from json_twins import json_twin

from .conftest import (
    close,
    definition_targets,
    doc,
    encoding_of,
    fixture_text,
    fresh_uri,
    open_log,
    units,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def twin_text() -> str:
    """Corpus 007 (a traceback logged by EngineCore) as vLLM's JSON formatter writes it."""
    return json_twin(fixture_text("crash-007.log")).text


async def test_the_root_cause_lands_on_its_escaped_text_in_the_record(client):
    text = twin_text()
    uri = fresh_uri("serve.log")
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    lines = text.split("\n")
    line = lines[root.range.start.line]
    assert line.startswith("{") and root.range.start.line == root.range.end.line
    encoding = encoding_of(client)
    start = next(i for i in range(len(line) + 1) if units(line[:i], encoding) == root.range.start.character)
    end = next(i for i in range(len(line) + 1) if units(line[:i], encoding) == root.range.end.character)
    shown = json.loads('"' + line[start:end] + '"')
    assert shown.startswith("torch.OutOfMemoryError")
    for diagnostic in diagnostics:  # every range lies inside the document's lines
        assert diagnostic.range.start.line < len(lines)
        assert diagnostic.range.end.character <= units(lines[diagnostic.range.end.line], encoding)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=root.range.start)
    )
    assert hover is not None and "out of memory" in str(hover.contents).lower()
    close(client, uri)


async def test_go_to_definition_from_a_symptom_reaches_the_record(client):
    text = twin_text()
    uri = fresh_uri("serve.log")
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    symptom = next(
        d
        for d in diagnostics
        if d.severity != types.DiagnosticSeverity.Error and d.range.start.line != root.range.start.line
    )
    targets = await definition_targets(client, uri, symptom.range.start)
    assert any(t.range.start.line == root.range.start.line for t in targets)
    close(client, uri)


async def test_folds_and_outline_are_in_the_documents_own_lines(client):
    text = twin_text()
    uri = fresh_uri("serve.log")
    await open_log(client, uri, text)
    count = len(text.split("\n"))
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(doc(uri)))
    assert folds is not None
    assert all(0 <= f.start_line < f.end_line < count for f in folds)
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    assert symbols

    def walk(items):
        for item in items:
            yield item
            yield from walk(item.children or [])

    assert all(s.range.end.line < count for s in walk(symbols))
    close(client, uri)


async def test_a_docker_json_file_log_lands_on_the_escaped_line(client):
    """docker's json-file driver: `{"log": "<the line>\\n", "stream": …, "time": …}` per line."""
    from core.test_collector_json import collected

    text = collected(fixture_text("crash-unicode.log"), "docker json-file")
    uri = fresh_uri("container-json.log")
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    line = text.split("\n")[root.range.start.line]
    encoding = encoding_of(client)
    start = next(i for i in range(len(line) + 1) if units(line[:i], encoding) == root.range.start.character)
    assert line.startswith('{"log": "') and json.loads('"' + line[start:].split('\\n"')[0] + '"').startswith(
        "ValueError: 模型 🚀"
    )
    symptom = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Warning)
    targets = await definition_targets(client, uri, symptom.range.start)
    assert any(t.range.start == root.range.start for t in targets)
    close(client, uri)
