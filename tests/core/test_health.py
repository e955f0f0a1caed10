"""Health findings and pre-failure records from the stats lines (thresholds from the catalog)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pressure import V0_LOG, V1_LOG, v0_preemption_log, v1_line_of, v1_pressure_log
from support import HEALTHY, healthy_logs, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.catalog import CatalogError
from vllm_log_lsp.core.datacache import package_text
from vllm_log_lsp.core.health import (
    HEALTH_FILE,
    LineOffsets,
    build_health,
    health_catalog,
    parse_health_catalog,
    sparkline,
)
from vllm_log_lsp.core.stats import scan_stats
from vllm_log_lsp.core.text import LogIndex

PRESSURE_FIXES = [
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    None,  # more replicas / tensor parallelism: advice
]


def _summary(findings):
    return [(f.id, f.severity, f.line, f.first_line, f.last_line, f.count) for f in findings]


def test_pressure_log_findings_are_exact() -> None:
    health = analyze(v1_pressure_log()).health
    assert health is not None
    assert _summary(health.findings) == [
        # KV ≥ 95 % from stats line 7 (97.0 %) to the last one.
        ("kv-cache-pressure", "warning", v1_line_of(7), v1_line_of(7), v1_line_of(23), 17),
        # Waiting grows from the last empty queue (stats line 8) while running stays at 60–64.
        ("queue-growing", "warning", v1_line_of(8), v1_line_of(8), v1_line_of(23), 16),
        # V1 `Preemptions: 1` on the last six stats lines: one finding, six intervals.
        ("preemptions", "warning", v1_line_of(18), v1_line_of(18), v1_line_of(23), 6),
        # 1520 tok/s peak, then 120 (≤ 10 %) with 64 running: the collapse starts at stats line 20.
        ("throughput-collapse", "warning", v1_line_of(20), v1_line_of(20), v1_line_of(23), 4),
    ]
    messages = {f.id: f.message for f in health.findings}
    assert messages["kv-cache-pressure"] == "KV cache usage ≥ 95% for 3 min (peak 99.9%)"
    assert messages["preemptions"].startswith("6 requests preempted in 6 stats intervals")
    assert messages["throughput-collapse"].startswith("generation throughput fell from 1520 to 120 tok/s")


def test_pressure_log_prefailure_record_is_exact() -> None:
    analysis = analyze(v1_pressure_log())
    [finding] = analysis.findings
    record = analysis.health.record_for(finding.line)
    assert record is not None
    # The death at 21:24:05; the window reaches back 180 s: stats lines 7 (21:21:10) to 23 (21:23:50).
    assert (record.first_line, record.last_line, record.samples) == (v1_line_of(7), v1_line_of(23), 17)
    assert record.seconds == 175
    assert (record.kv_usage.first, record.kv_usage.last, record.kv_usage.peak) == (97.0, 99.9, 99.9)
    assert record.kv_usage.trend == "rising"
    assert (record.waiting.first, record.waiting.last, record.waiting.trend) == (0, 80, "rising")
    assert (record.running.first, record.running.last, record.running.trend) == (64, 64, "flat")
    gen = record.generation_throughput
    assert (gen.first, gen.last, gen.peak, gen.trend) == (1520, 0, 1520, "falling")
    assert record.preemptions == 6
    assert record.prefix_hit_rate.last == 35.2
    # The last `200 OK` follows stats line 19 (21:23:10): 55 s before the death.
    assert record.last_success_line == v1_line_of(19) + 1
    assert record.seconds_since_success == 55
    assert record.summary == (
        "in the 3 min before the death: KV cache 97 → 99.9 %, running 64 → 64, waiting 0 → 80, "
        "generation throughput 1520 → 0 tok/s, 6 preemptions, prefix-cache hit rate 35.2 %; "
        "last successful request 55 s before"
    )


def test_repeated_preemption_warnings_collapse_into_one_finding() -> None:
    text = v0_preemption_log()
    health = analyze(text).health
    [finding] = [f for f in health.findings if f.id == "preemptions"]
    lines = [n for n, line in enumerate(text.splitlines()) if "is preempted by" in line]
    assert (finding.line, finding.first_line, finding.last_line, finding.count) == (
        lines[0],
        lines[0],
        lines[-1],
        6,
    )
    assert finding.message == "6 preemption warnings (vLLM's cumulative count reached 251)"
    assert finding.lines_text() == f"lines {lines[0] + 1}–{lines[-1] + 1}"
    # The preemption lines are no longer one precursor each.
    assert not [p for p in analyze(text).precursors if "preempt" in p.title.lower()]


def test_fixes_come_in_the_catalog_order_with_values_from_the_launch_args() -> None:
    health = analyze(v0_preemption_log()).health
    [finding] = [f for f in health.findings if f.id == "kv-cache-pressure"]
    names = [fix.ops[0].op.name if fix.ops else None for fix in finding.fixes]
    assert names == PRESSURE_FIXES
    assert finding.fixes[0].command_line == "--max-num-seqs 128"  # half of vLLM's default 256


def test_health_fixes_never_contradict_the_death_fix() -> None:
    # The run died out of memory and its rule lowers --gpu-memory-utilization: health does not raise it.
    analysis = analyze(v1_pressure_log())
    death_values = {op.op.name: op.value for fix in analysis.findings[0].fixes for op in fix.ops}
    assert death_values["--gpu-memory-utilization"] == "0.85"
    for finding in analysis.health.findings:
        names = [op.op.name for fix in finding.fixes for op in fix.ops]
        assert "--gpu-memory-utilization" not in names
        # From the launch args (max_num_seqs 64), as the death's fix computes it.
        assert finding.fixes[0].command_line == "--max-num-seqs 32"


def test_thresholds_are_catalog_data() -> None:
    text = package_text(HEALTH_FILE)
    stricter = parse_health_catalog(text.replace("kv_usage_min = 95.0", "kv_usage_min = 99.5"), "test")
    index = LogIndex(v1_pressure_log())
    health = build_health(index, scan_stats(index), (), index.line_count, (), stricter)
    [kv] = [f for f in health.findings if f.id == "kv-cache-pressure"]
    assert (kv.first_line, kv.count) == (v1_line_of(18), 6)  # 99.5 % and above: stats lines 18–23


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('severity = "warning"', 'severity = "error"'),
        ('fixes = ["check-prefixes"', 'fixes = ["no-such-fix"'),
    ],
)
def test_bad_health_catalog_is_refused(change: tuple[str, str], message: str) -> None:
    text = package_text(HEALTH_FILE)
    with pytest.raises(CatalogError):
        parse_health_catalog(text.replace(change, message, 1), "test")


def test_healthy_logs_get_no_health_warnings() -> None:
    for path in healthy_logs():
        health = analyze(read_log(path)).health
        assert health is not None
        assert {f.severity for f in health.findings} <= {"information"}, path.name
        assert not health.records, path.name


def test_healthy_serving_log_has_its_series() -> None:
    health = analyze(read_log(HEALTHY / "009.log")).health
    [series] = health.series
    assert (series.run, series.engine, len(series.samples)) == (0, "Engine 000", 64)
    assert series.peak("generation_throughput").generation_throughput == max(
        s.generation_throughput for s in series.samples
    )


def test_no_stats_no_health() -> None:
    health = analyze("INFO 01-01 00:00:00 [x.py:1] hello\n").health
    assert health is not None and health.series == () and health.findings == ()


def test_sparkline_scales() -> None:
    assert sparkline([0, 50, 100], top=100) == "▁▅█"
    assert sparkline([0, None, 4]) == "▁ █"
    assert sparkline([0, 0]) == "▁▁"


def test_check_prints_and_emits_the_health() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", str(V1_LOG)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert text.returncode == 1
    assert (
        "  pre-failure record (stats lines 20–40): in the 3 min before the death: KV cache 97 → 99.9 %"
        in text.stdout
    )
    assert (
        f"{V1_LOG}:20: warning: kv-cache-pressure — KV cache usage stayed at or above 95%: "
        "KV cache usage ≥ 95% for 3 min (peak 99.9%) (lines 20–40)"
    ) in text.stdout
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(V1_LOG), str(V0_LOG)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(result.stdout)
    first, second = report["files"]
    record = first["incidents"][0]["prefailure"]
    assert record["kv_cache_usage_percent"] == {
        "first": 97.0,
        "last": 99.9,
        "peak": 99.9,
        "peak_line": 39,
        "trend": "rising",
    }
    assert record["preemptions"] == 6 and record["seconds_since_last_successful_request"] == 55
    assert [f["id"] for f in first["health"]["findings"]] == [
        "kv-cache-pressure",
        "queue-growing",
        "preemptions",
        "throughput-collapse",
    ]
    assert first["health"]["series"][0]["peaks"]["waiting"] == {"value": 80, "line": 40}
    assert second["incidents"] == [] and "preemptions" in [f["id"] for f in second["health"]["findings"]]


def test_shipped_catalog_loads() -> None:
    catalog = health_catalog()
    assert set(catalog.conditions) == {
        "kv-cache-pressure",
        "queue-growing",
        "preemptions",
        "throughput-collapse",
        "prefix-cache-cold",
    }
    assert {c.severity for c in catalog.conditions.values()} <= {"information", "warning"}


def test_check_numbers_health_lines_as_grep_does(tmp_path) -> None:
    # A progress bar redrawn with a bare `\r` is one line for grep -n/less/vim, two for LSP.
    text = v1_pressure_log().replace(
        "Starting to load model", "Loading 10%\rLoading 100%\n" + "Starting to load model", 1
    )
    log = tmp_path / "cr.log"
    log.write_bytes(text.encode())
    grep_line = next(n for n, line in enumerate(text.split("\n"), 1) if "GPU KV cache usage: 97.0%" in line)
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    [file] = json.loads(result.stdout)["files"]
    [kv] = [f for f in file["health"]["findings"] if f["id"] == "kv-cache-pressure"]
    assert kv["line"] == grep_line and file["incidents"][0]["prefailure"]["first_line"] == grep_line
    text_out = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", str(log)], capture_output=True, text=True, timeout=60
    ).stdout
    assert f"{log}:{grep_line}: warning: kv-cache-pressure" in text_out
    assert f"(peak 99.9%) (lines {grep_line}–{grep_line + 20})" in text_out


def test_line_offsets_from_known_lines_match_the_line_table() -> None:
    text = v1_pressure_log() * 3 + "tail without newline"
    index = LogIndex(text)
    known = {s.line: s.offset for s in scan_stats(index).samples}
    offsets = LineOffsets(LogIndex(text), known)
    for line in range(index.line_count):
        assert offsets(line) == index.line_start(line), line


def test_queue_growth_on_a_long_series_is_found_once_per_rise() -> None:
    # Ten rises of the queue (0 → 45) with the batch full, each followed by a drain.
    lines = []
    for cycle in range(10):
        for step, waiting in enumerate([0, 5, 15, 30, 45, 0]):
            second = (cycle * 6 + step) * 10
            lines.append(
                f"INFO 01-01 00:{second // 60:02d}:{second % 60:02d} [loggers.py:1] Engine 000: Avg prompt "
                f"throughput: 9.0 tokens/s, Avg generation throughput: 90.0 tokens/s, Running: 32 reqs, "
                f"Waiting: {waiting} reqs, GPU KV cache usage: 50.0%, Prefix cache hit rate: 10.0%"
            )
    health = analyze("\n".join(lines) + "\n").health
    rises = [(f.first_line, f.last_line, f.count) for f in health.findings if f.id == "queue-growing"]
    assert rises == [(6 * c, 6 * c + 4, 5) for c in range(10)]
