"""A log copied from a viewer that lists the newest line first, in the editor: diagnostics,
hover, navigation, folds and the outline land on the copy's lines, each range from the line the
editor shows first, in each client's position units."""

from __future__ import annotations

import pytest
from lsprotocol import types

from core.test_order import newest_on_top

from . import conftest as lsp
from .conftest import close, doc, units

pytestmark = pytest.mark.asyncio(loop_scope="module")


def reversed_text() -> str:
    """A death whose root cause holds wide characters and an emoji, newest line first."""
    return newest_on_top(lsp.fixture_text("crash-unicode.log"))


def _ordered(r: types.Range) -> bool:
    return (r.start.line, r.start.character) <= (r.end.line, r.end.character)


async def test_the_root_cause_lands_on_its_line(client):
    text = reversed_text()
    uri, diagnostics, root = await lsp.open_with_root(client, text)
    lines = text.split("\n")
    encoding = lsp.encoding_of(client)
    line = lines[root.range.start.line]
    column = next(i for i in range(len(line) + 1) if units(line[:i], encoding) == root.range.start.character)
    assert line[column:].startswith("ValueError: 模型 🚀 '/数据/模型/Qwen3-4B'")
    for diagnostic in diagnostics:
        assert _ordered(diagnostic.range) and diagnostic.range.end.line < len(lines)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=root.range.start)
    )
    assert hover is not None and "Qwen3-4B" in str(hover.contents)
    assert any("newest lines first" in d.message for d in diagnostics)
    close(client, uri)


async def test_a_symptom_above_leads_to_the_root_cause_below(client):
    text = reversed_text()
    uri, diagnostics, root = await lsp.open_with_root(client, text)
    symptoms = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Warning]
    above = [s for s in symptoms if s.range.start.line < root.range.start.line]  # (printed after it)
    assert above and all(f"caused by line {root.range.start.line + 1}:" in s.message for s in symptoms)
    for symptom in above:
        targets = await lsp.definition_targets(client, uri, symptom.range.start)
        assert any(t.range.start == root.range.start for t in targets)
    close(client, uri)


async def test_folds_and_the_outline_run_down_the_document(client):
    text = reversed_text()
    uri, _, root = await lsp.open_with_root(client, text)
    count = len(text.split("\n"))
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(doc(uri)))
    assert folds and all(0 <= f.start_line < f.end_line < count for f in folds)
    assert any(f.start_line <= root.range.start.line <= f.end_line for f in folds)  # its traceback
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    assert symbols

    def check(symbol: types.DocumentSymbol) -> None:
        assert _ordered(symbol.range) and symbol.range.end.line < count
        inner = symbol.selection_range
        assert (symbol.range.start.line, symbol.range.start.character) <= (
            inner.start.line,
            inner.start.character,
        )
        assert (inner.end.line, inner.end.character) <= (symbol.range.end.line, symbol.range.end.character)
        for child in symbol.children or []:
            check(child)

    for symbol in symbols:
        check(symbol)
    first, last = (int(n) for n in symbols[0].detail.split(",")[0].removeprefix("lines ").split("–"))
    assert first <= last
    close(client, uri)


async def test_the_report_of_the_open_copy_shows_its_own_lines(client):
    """`vllmLog.report` of an open newest-first copy: the excerpt is the traceback read oldest
    first, each row numbered and marked by the copy's line."""
    import re

    text = reversed_text()
    uri, _, root = await lsp.open_with_root(client, text)
    html = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.report", arguments=[uri])
    )
    assert f"Root cause on <b>line {root.range.start.line + 1}</b>" in html
    marked = re.search(r'<span class="root"><span class="ln">\s*(\d+)</span> (.*?)</span>', html)
    assert marked is not None and int(marked.group(1)) == root.range.start.line + 1
    assert "Qwen3-4B" in marked.group(2)
    close(client, uri)
