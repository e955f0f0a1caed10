"""Hover, definition/references, code lenses, document symbols and folding on real logs."""

from __future__ import annotations

import pytest
from lsprotocol import types

from .conftest import close, doc, encoding_of, fixture_text, fresh_uri, open_log, pos, units

pytestmark = pytest.mark.asyncio(loop_scope="module")


def incidents_of(symbol: types.DocumentSymbol) -> list[types.DocumentSymbol]:
    """The deaths below a symbol, at any depth (a run holds them in its phase segments)."""
    found = []
    for child in symbol.children or []:
        if child.kind == types.SymbolKind.Object:
            found.append(child)
        found += incidents_of(child)
    return found


async def hover_text(client, uri: str, line: int, character: int = 0) -> str | None:
    result = await client.text_document_hover_async(types.HoverParams(doc(uri), pos(line, character)))
    if result is None:
        return None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


async def test_hover_on_root_cause_explains_it(client):
    uri = fresh_uri("011.log")  # KV cache too small, vLLM 0.15.1, journalctl
    await open_log(client, uri, fixture_text("crash-011.log"))
    text = await hover_text(client, uri, 51, 5)
    assert text is not None
    assert "Root cause: " in text and "KV cache" in text
    assert "#### Why it happens" in text
    assert "#### Evidence from this log" in text
    assert "memory profiling" in text  # the phase
    assert "0.15.1" in text and "qwen2_5_14b_instruct_awq" in text  # how the run got there
    assert "--max-model-len 10224" in text  # the exact fix for this log
    fixes = text.split("#### Fixes, in order", 1)[1]
    assert fixes.index("--max-model-len 10224") < fixes.index("--gpu-memory-utilization 0.95")
    close(client, uri)


async def test_hover_says_why_this_line_and_what_else_was_considered(client):
    uri = fresh_uri("why.log")
    text = "\n".join(
        [
            "(EngineCore_DP0 pid=10) ERROR 09-01 10:00:00 [core.py:700] TimeoutError: RPC call to execute_model timed out.",
            "(Worker_TP1 pid=12) ERROR 09-01 10:00:01 [multiproc_executor.py:600] ValueError: bad shape for layer 3",
            "(EngineCore_DP0 pid=10) ERROR 09-01 10:00:02 [core.py:710] EngineCore encountered a fatal error.",
        ]
    )
    await open_log(client, uri, text + "\n")
    hover = await hover_text(client, uri, 1, 80)
    assert hover is not None and "#### Why this line" in hover
    why = hover.split("#### Why this line", 1)[1]
    assert "confidence" in why and "not line 1" in why and "timeout" in why
    close(client, uri)


async def test_hover_range_is_the_exception_span(client):
    encoding = encoding_of(client)
    text = fixture_text("crash-unicode-compose.log")
    uri = fresh_uri("unicode.log")
    await open_log(client, uri, text)
    result = await client.text_document_hover_async(types.HoverParams(doc(uri), pos(10, 3)))
    line = text.splitlines()[10]
    assert result.range.start.character == units(line[:72], encoding)
    assert result.range.end.character == units(line, encoding)
    close(client, uri)


async def test_hover_on_symptom_points_to_root(client):
    uri = fresh_uri("038.log")
    await open_log(client, uri, fixture_text("crash-038.log"))
    text = await hover_text(client, uri, 274)
    assert text is not None and "Symptom" in text and "line 134" in text
    assert await hover_text(client, uri, 0) is None  # an ordinary line
    close(client, uri)


async def test_hover_on_precursor(client):
    uri = fresh_uri("032.log")
    await open_log(client, uri, fixture_text("crash-032.log"))
    text = await hover_text(client, uri, 135)
    assert text is not None and "Precursor" in text
    close(client, uri)


async def test_definition_and_references(client):
    uri = fresh_uri("002.log")
    text = fixture_text("crash-002.log")
    await open_log(client, uri, text)
    definition = await client.text_document_definition_async(types.DefinitionParams(doc(uri), pos(32, 4)))
    assert [(loc.uri, loc.range.start.line) for loc in definition] == [(uri, 15)]
    assert definition[0].range.start.character == text.splitlines()[15].index("TypeError")

    refs = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(uri),
            position=pos(15),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    lines = {loc.range.start.line for loc in refs}
    assert {32, 54, 138} <= lines and 15 not in lines
    with_decl = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(uri), position=pos(15), context=types.ReferenceContext(include_declaration=True)
        )
    )
    assert 15 in {loc.range.start.line for loc in with_decl}
    # Nothing to jump to from an ordinary line.
    assert not await client.text_document_definition_async(types.DefinitionParams(doc(uri), pos(5)))
    close(client, uri)


async def test_code_lens_jumps_to_root_cause(client):
    uri = fresh_uri("041.log")
    await open_log(client, uri, fixture_text("crash-041.log"))
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(doc(uri)))
    by_line = {lens.range.start.line: lens for lens in lenses}
    assert 279 in by_line
    command = by_line[279].command
    assert command.title.startswith("Root cause: ") and command.title.endswith("(line 109)")
    before = len(client.shown_documents)
    shown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert shown is True
    target = client.shown_documents[before]
    assert target.uri == uri and target.selection.start.line == 108
    close(client, uri)


async def test_document_symbols_outline_runs_phases_incidents(client):
    uri = fresh_uri("032.log")  # docker compose; vLLM 0.16.1
    await open_log(client, uri, fixture_text("crash-032.log"))
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    assert symbols and all(isinstance(s, types.DocumentSymbol) for s in symbols)
    crashed = [s for s in symbols if incidents_of(s)]
    assert crashed, [s.name for s in symbols]
    run = crashed[0]
    assert run.name.startswith("Run ") and "vLLM 0.16.1" in run.name and "Qwen3.5-" in run.name
    [incident] = incidents_of(run)
    assert incident.selection_range.start.line == 159
    phases = [c for c in run.children if c.kind == types.SymbolKind.Event]
    assert phases, run.children
    # The death lies in a segment of its own phase (the hover's): memory profiling.
    [holder] = [p for p in phases if incident in (p.children or [])]
    assert holder.name == "memory profiling and KV-cache sizing"

    def inside(parent: types.DocumentSymbol) -> None:  # children lie inside their parent
        for child in parent.children or []:
            assert (
                parent.range.start.line
                <= child.range.start.line
                <= child.range.end.line
                <= parent.range.end.line
            )
            inside(child)

    for symbol in symbols:
        inside(symbol)
    close(client, uri)


async def test_restarts_are_separate_incidents(client):
    uri = fresh_uri("019.log")  # vLLM 0.9.1 died, was restarted, and died again
    diagnostics = await open_log(client, uri, fixture_text("crash-019.log"))
    roots = [d.range.start.line for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    assert roots == [143, 177]
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    incidents = [c for s in symbols for c in incidents_of(s)]
    assert [c.selection_range.start.line for c in incidents] == [143, 177]
    close(client, uri)


async def test_each_run_is_a_symbol_and_a_fold(client):
    uri = fresh_uri("032.log")  # two compose services started: two runs
    await open_log(client, uri, fixture_text("crash-032.log"))
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    assert [s.name.split(":")[0] for s in symbols] == ["Run 1", "Run 2"]
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(doc(uri)))
    fold_lines = {(f.start_line, f.end_line) for f in folds}
    for symbol in symbols:
        assert (symbol.range.start.line, symbol.range.end.line) in fold_lines
    close(client, uri)


async def test_folding_ranges_cover_tracebacks(client):
    uri = fresh_uri("unicode.log")
    await open_log(client, uri, fixture_text("crash-unicode.log"))
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(doc(uri)))
    assert {(5, 10), (12, 15)} <= {(f.start_line, f.end_line) for f in folds}
    close(client, uri)
