"""A log copied from a terminal that cut its long lines into rows, in the editor: diagnostics,
hover and navigation land on the rows the editor shows, in each client's position units."""

from __future__ import annotations

import pytest
from lsprotocol import types

from core.test_wraps import cut

from . import conftest as lsp
from .conftest import close, doc, units

pytestmark = pytest.mark.asyncio(loop_scope="module")

WIDTH = 70


def cut_text() -> str:
    """A death whose root cause holds wide characters and an emoji, as a terminal of `WIDTH`
    columns shows it."""
    return cut(lsp.fixture_text("crash-unicode.log"), WIDTH)[0]


def _column(line: str, character: int, encoding: str) -> int:
    return next(i for i in range(len(line) + 1) if units(line[:i], encoding) == character)


async def test_the_root_cause_lands_on_its_row(client):
    text = cut_text()
    uri, diagnostics, root = await lsp.open_with_root(client, text)
    rows = text.split("\n")
    encoding = lsp.encoding_of(client)
    start = root.range.start
    row = rows[start.line]
    shown = "".join([row[_column(row, start.character, encoding) :], *rows[start.line + 1 : start.line + 3]])
    assert shown.startswith("ValueError: 模型 🚀 '/数据/模型/Qwen3-4B'")
    for diagnostic in diagnostics:  # every range lies inside the document's rows
        end = diagnostic.range.end
        assert end.line < len(rows) and end.character <= units(rows[end.line], encoding)
    hover = await client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=start))
    assert hover is not None and "Qwen3-4B" in str(hover.contents)
    [note] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Information]
    assert "cut into rows of 70 columns" in note.message  # (the user is told the lines were joined)
    close(client, uri)


async def test_a_symptom_leads_to_the_root_row_and_folds_stay_in_the_rows(client):
    text = cut_text()
    uri, diagnostics, root = await lsp.open_with_root(client, text)
    symptom = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Warning)
    assert f"caused by line {root.range.start.line + 1}:" in symptom.message
    targets = await lsp.definition_targets(client, uri, symptom.range.start)
    assert any(t.range.start == root.range.start for t in targets)
    count = len(text.split("\n"))
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(doc(uri)))
    assert folds and all(0 <= f.start_line < f.end_line < count for f in folds)
    close(client, uri)


async def test_analyze_file_numbers_the_rows(client, tmp_path):
    text = cut_text()
    path = tmp_path / "serve.log"
    path.write_text(text, encoding="utf-8")
    summary = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.analyzeFile", arguments=[str(path)])
    )
    rows = text.split("\n")
    assert summary["lineCount"] == len(rows)
    [finding] = summary["findings"]
    assert rows[finding["line"] - 1].startswith("(EngineCore_DP0 pid=200) ERROR")  # (the line's first row)
    assert "ValueError: 模型" in rows[finding["line"] - 1] + rows[finding["line"]]
    assert all(rows[line - 1].startswith("(") for line in finding["symptomLines"])
