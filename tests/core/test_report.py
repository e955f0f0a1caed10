"""The HTML report as text: self-contained, escaped, with the parts a reader needs (Chromium renders it
in tests/editors/test_html_report.py)."""

from __future__ import annotations

import re
from pathlib import Path

from pressure import V1_LOG, check_report, v0_preemption_log, v1_pressure_log
from support import HEALTHY, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.report.html import CSP, MAX_POINTS, render_report


def _report(text: str, name: str = "x.log") -> str:
    return render_report(name, text, analyze(text))


def test_report_is_self_contained() -> None:
    html = _report(v1_pressure_log())
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html
    assert "<script" not in html.lower()
    assert not re.search(r"""\b(?:src|href)\s*=|url\(|@import""", html)  # nothing to fetch


def test_report_has_timeline_charts_incident_record_and_fixes() -> None:
    html = _report(v1_pressure_log())
    assert 'class="timeline"' in html and html.count('<figure class="chart">') == 3
    assert html.count('class="death"') == 1 + 3  # on the timeline and in each chart
    assert "<h2>Incident 1: CUDA OOM while serving requests</h2>" in html
    assert "In the 3 min before the death: KV cache 97 → 99.9 %" in html
    assert "<code>--gpu-memory-utilization 0.85</code>" in html
    assert html.count('<div class="finding warning">') == 4


def test_log_text_is_escaped() -> None:
    text = (
        "ERROR 01-01 00:00:00 [core.py:1] EngineCore encountered a fatal error.\n"
        "ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):\n"
        'ERROR 01-01 00:00:00 [core.py:1]   File "/x.py", line 1, in f\n'
        "ERROR 01-01 00:00:00 [core.py:1] ValueError: bad <script>alert(1)</script> & <img src=x>\n"
        "ERROR 01-01 00:00:01 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
        "encountered an issue. See stack trace (above) for the root cause.\n"
    )
    html = _report(text, name="<evil>.log")
    assert "<script>alert" not in html and "<img src=x>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x&gt;" in html
    assert "vLLM log report: &lt;evil&gt;.log" in html


def test_healthy_log_without_stats() -> None:
    html = _report(read_log(HEALTHY / "003.log"))
    assert "No engine death found" in html and "has no stats lines" in html


def test_healthy_log_with_stats_has_charts_and_no_death() -> None:
    html = _report(v0_preemption_log())
    assert "No engine death found" in html and html.count('<figure class="chart">') == 3
    assert 'class="death"' not in html
    assert "Requests were preempted for lack of KV cache space" in html


def test_long_series_are_downsampled_keeping_the_peaks() -> None:
    stats = []
    for i in range(5000):
        kv = 99.7 if i == 3333 else 10.0 + (i % 7)
        second = i % 60
        stats.append(
            f"INFO 01-01 {i // 3600:02d}:{i // 60 % 60:02d}:{second:02d} [loggers.py:1] Engine 000: Avg prompt "
            f"throughput: 1.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 "
            f"reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%"
        )
    html = _report("\n".join(stats) + "\n")
    [kv_points] = re.findall(r'data-series="kv_usage" data-points="(\d+)" points="([^"]+)"', html)
    count, points = int(kv_points[0]), kv_points[1].split()
    assert count == len(points) <= MAX_POINTS
    # y = pad + (height - pad - bottom) * (1 - value / 100): the 99.7 % spike is the lowest y.
    assert min(float(p.split(",")[1]) for p in points) < 11


def test_check_report_flag(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    run = check_report(out, V1_LOG)
    assert run.returncode == 1 and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    two = check_report(out, V1_LOG, V1_LOG)
    assert two.returncode == 2 and "--report writes the report of one FILE" in two.stderr


def test_a_transcripts_lines_are_the_logs_own(tmp_path: Path) -> None:
    """A log read through a transcript (here one listed newest first, reversed) names and shows
    its lines by the file's numbers, as `check` does: the root cause's line holds its text."""
    from core.test_order import LOGS, newest_on_top

    shown = newest_on_top(LOGS["crash/007.log"])
    log = tmp_path / "newest-first.log"
    log.write_text(shown, encoding="utf-8")
    report = tmp_path / "report.html"
    assert check_report(report, log).returncode == 1
    page = report.read_text(encoding="utf-8")
    [line] = {int(n) for n in re.findall(r"Root cause on <b>line (\d+)</b>", page)}
    assert "OutOfMemoryError" in shown.split("\n")[line - 1]
    root_row = re.search(r'<span class="root"><span class="ln">\s*(\d+)</span>', page)
    assert root_row is not None and int(root_row.group(1)) == line
    numbers = [int(n) for n in re.findall(r'<span class="ln">\s*(\d+)</span>', page)]
    assert numbers == sorted(
        numbers, reverse=True
    )  # (the traceback read oldest first: the copy's lines go up)
