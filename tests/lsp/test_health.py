"""Health over LSP: diagnostics at the stats line where trouble began, hovers, the outline."""

from __future__ import annotations

import pytest
from lsprotocol import types

from pressure import v0_preemption_log, v1_line_of, v1_pressure_log

from .conftest import close, doc, fixture_text, fresh_uri, open_log, pos

pytestmark = pytest.mark.asyncio(loop_scope="module")
SEV = types.DiagnosticSeverity


async def hover_text(client, uri: str, line: int) -> str | None:
    result = await client.text_document_hover_async(types.HoverParams(doc(uri), pos(line, 3)))
    return None if result is None else result.contents.value


async def test_health_diagnostics_are_warnings_at_the_start_of_trouble(client):
    uri = fresh_uri("pressure.log")
    diagnostics = await open_log(client, uri, v1_pressure_log())
    health = sorted(
        (d.range.start.line, d.code, d.severity) for d in diagnostics if d.data.get("role") == "health"
    )
    assert health == [
        (v1_line_of(7), "kv-cache-pressure", SEV.Warning),
        (v1_line_of(8), "queue-growing", SEV.Warning),
        (v1_line_of(18), "preemptions", SEV.Warning),
        (v1_line_of(20), "throughput-collapse", SEV.Warning),
    ]
    [kv] = [d for d in diagnostics if d.code == "kv-cache-pressure"]
    assert kv.message.endswith(f"(peak 99.9%) (lines {v1_line_of(7) + 1}–{v1_line_of(23) + 1})")
    line = v1_pressure_log().splitlines()[v1_line_of(7)]
    assert kv.range.start.character == line.index("Engine 000")  # the stats text, not the prefix
    assert [r.location.range.start.line for r in kv.related_information] == [v1_line_of(23)]
    # The death itself is still the only Error.
    assert [d.range.start.line for d in diagnostics if d.severity == SEV.Error] == [46]
    close(client, uri)


async def test_repeated_preemption_warnings_are_one_diagnostic(client):
    uri = fresh_uri("v0.log")
    diagnostics = await open_log(client, uri, v0_preemption_log())
    preempted = [d for d in diagnostics if d.code == "preemptions"]
    assert len(preempted) == 1 and "6 preemption warnings" in preempted[0].message
    assert SEV.Error not in {d.severity for d in diagnostics}
    close(client, uri)


async def test_healthy_log_has_no_health_warnings(client):
    uri = fresh_uri("009.log")
    diagnostics = await open_log(client, uri, fixture_text("healthy-009.log"))
    assert {d.severity for d in diagnostics} <= {SEV.Information}
    close(client, uri)


async def test_hover_on_root_cause_has_the_prefailure_record(client):
    uri = fresh_uri("pressure.log")
    await open_log(client, uri, v1_pressure_log())
    text = await hover_text(client, uri, 46)
    assert text is not None and "#### Before the death" in text
    assert "In the 3 min before the death: KV cache 97 → 99.9 %" in text
    assert "| waiting | 0 | 80 | 80 (line 40) | rising |" in text
    close(client, uri)


async def test_hover_on_a_stats_line_shows_sparklines(client):
    uri = fresh_uri("pressure.log")
    await open_log(client, uri, v1_pressure_log())
    text = await hover_text(client, uri, v1_line_of(12))
    assert text is not None and "### Stats: Engine 000 at 10-03 21:22:00" in text
    assert "KV cache 98.4 % · running 64 · waiting 14" in text
    kv_line = next(line for line in text.splitlines() if line.startswith("KV cache   "))
    # 12 samples before, the hovered one and 11 after (the series has 24).
    assert len(kv_line.split()[2]) == 24
    assert "▲" in text
    # The stats line where the KV pressure began also explains it.
    text = await hover_text(client, uri, v1_line_of(7))
    assert "### Health: KV cache usage stayed at or above 95%" in text and "--max-num-seqs 32" in text
    close(client, uri)


async def test_outline_shows_the_series_and_where_trouble_starts(client):
    uri = fresh_uri("pressure.log")
    await open_log(client, uri, v1_pressure_log())
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    [run] = symbols
    [stats] = [c for c in run.children if c.name.startswith("Stats")]
    assert stats.name == "Stats (Engine 000): 24 samples"
    assert stats.detail == "peaks: KV 99.9 %, waiting 80, gen 1520 tok/s"
    assert [(c.name, c.detail) for c in stats.children] == [
        ("Trouble starts: KV cache usage stayed at or above 95%", f"line {v1_line_of(7) + 1}"),
        (
            "Trouble starts: The waiting queue kept growing while the running batch was flat",
            f"line {v1_line_of(8) + 1}",
        ),
        ("Trouble starts: Requests were preempted for lack of KV cache space", f"line {v1_line_of(18) + 1}"),
        (
            "Trouble starts: Generation throughput collapsed while requests were running",
            f"line {v1_line_of(20) + 1}",
        ),
    ]
    close(client, uri)


async def test_report_command_renders_the_open_document(client):
    uri = fresh_uri("pressure.log")
    await open_log(client, uri, v1_pressure_log())
    html = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.report", arguments=[uri])
    )
    assert html.startswith("<!DOCTYPE html>") and "vLLM log report: pressure.log" in html
    assert "1 engine death: CUDA OOM while serving requests (line 47)" in html
    assert html.count('<figure class="chart">') == 3
    # An untitled document (no file behind it) is reported from its synced text too.
    untitled = fresh_uri("v0.log", scheme="untitled")
    await open_log(client, untitled, v0_preemption_log())
    html = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.report", arguments=[{"uri": untitled}])
    )
    assert "No engine death found" in html and "Requests were preempted" in html
    close(client, uri)
    close(client, untitled)


async def test_report_command_reads_an_unopened_file(client, tmp_path):
    path = tmp_path / "pressure.log"
    path.write_text(v1_pressure_log(), encoding="utf-8")
    html = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.report", arguments=[str(path)])
    )
    assert "vLLM log report: pressure.log" in html and 'class="death"' in html
    with pytest.raises(Exception, match=r"report|no such file|expects"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="vllmLog.report", arguments=[str(tmp_path / "missing.log")])
        )


STARTING = [
    "(APIServer pid=1) INFO 09-28 00:52:01 [api_server.py:1] vLLM API server version 0.30.0",
    "(Worker_TP0 pid=390) INFO 09-28 01:06:18 [model_runner.py:375] Model loading took 89.55 GiB and 817.96 seconds",
    "(Worker_TP0 pid=390) INFO 09-28 01:06:22 [encoder_runner.py:119] Encoder cache will be initialized",
]


async def test_a_log_that_ends_in_start_up_gets_a_note_not_an_error(client):
    uri = fresh_uri("starting.log")
    diagnostics = await open_log(client, uri, "\n".join(STARTING) + "\n")
    assert [(d.range.start.line, d.code, d.severity) for d in diagnostics] == [
        (1, "ended-in-startup", SEV.Information)
    ]
    assert "memory profiling" in diagnostics[0].message
    close(client, uri)
    uri = fresh_uri("started.log")
    up = "(APIServer pid=1) INFO 09-28 01:07:45 [launcher.py:1] Application startup complete."
    diagnostics = await open_log(client, uri, "\n".join([*STARTING, up]) + "\n")
    assert "ended-in-startup" not in {d.code for d in diagnostics}
    close(client, uri)
