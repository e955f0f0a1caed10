"""`check --report`: the HTML report rendered in headless Chromium (renders, charts have data, no errors).

The page is opened from disk as a reader would; playwright-core (from the VS Code e2e's node_modules)
records console messages, page errors and every request, and takes the screenshot kept in
test-artifacts/ (docs/report.png is a copy of it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pressure import V1_LOG, check_report
from support import ROOT, unavailable

E2E = ROOT / "tests" / "editors" / "vscode"
PLAYWRIGHT = E2E / "node_modules" / "playwright-core"
CHROMIUM = Path(os.environ.get("VLLM_LOG_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict:
    if not PLAYWRIGHT.exists() or not CHROMIUM.exists() or shutil.which("node") is None:
        unavailable("playwright-core, chromium or node is missing", "scripts/install/40-vscode.sh")
    tmp = tmp_path_factory.mktemp("report")
    report = tmp / "report.html"
    check = check_report(report, V1_LOG)
    assert check.returncode == 1, check.stderr  # a death: exit 1, and the report is written anyway
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    run = subprocess.run(
        ["node", str(E2E / "report.mjs"), str(CHROMIUM), str(report), str(shot)],
        cwd=E2E,
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "HOME": str(tmp)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


@pytest.mark.editor
def test_report_renders_without_errors_or_network(rendered: dict) -> None:
    assert rendered["pageErrors"] == []
    assert [m for m in rendered["console"] if m["type"] in ("error", "warning")] == []
    assert [url for url in rendered["requests"] if not url.startswith("file://")] == []
    page = rendered["page"]
    assert page["title"] == "vLLM log report: kv-pressure-oom.log"
    assert page["verdict"] == "1 engine death: CUDA OOM while serving requests (line 47)"
    assert page["scripts"] == 0


@pytest.mark.editor
def test_report_charts_have_the_series_and_the_death(rendered: dict) -> None:
    page = rendered["page"]
    assert page["timeline"]["width"] > 600 and page["phases"] >= 3 and page["deathsOnTimeline"] == 1
    charts = {c["caption"]: c for c in page["charts"]}
    assert set(charts) == {"KV cache usage (%)", "Requests", "Throughput (tokens/s)"}
    expected = {
        "KV cache usage (%)": ["kv_usage"],
        "Requests": ["running", "waiting"],
        "Throughput (tokens/s)": ["generation_throughput", "prompt_throughput"],
    }
    for caption, chart in charts.items():
        assert [s["name"] for s in chart["series"]] == expected[caption]
        # One point per stats line (24), drawn with a visible length; the death is marked.
        assert all(s["points"] == 24 and s["length"] > 100 for s in chart["series"]), chart
        assert chart["deathMarkers"] == 1 and chart["size"]["height"] > 100


@pytest.mark.editor
def test_report_shows_root_cause_excerpt_and_fixes(rendered: dict) -> None:
    page = rendered["page"]
    assert "torch.OutOfMemoryError: CUDA out of memory" in page["excerpt"]
    assert page["excerpt"].strip().startswith("47")
    assert page["fixes"][:2] == ["--gpu-memory-utilization 0.85", "--max-num-seqs 32"]
    assert (ARTIFACTS / "report.png").stat().st_size > 50_000
