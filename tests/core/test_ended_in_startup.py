"""A log with no death that ends in start-up says so (`phase.ended_in_startup`): the phase and
the lifecycle line that entered it, in `check`'s text and JSON. A server killed from outside
while it starts (the OOM killer, a memory guard, `docker kill`) leaves exactly such a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import run_cli
from vllm_log_lsp.core.analyze import analyze

STARTUP = [
    "(APIServer pid=1) INFO 09-28 00:52:01 [api_server.py:1] vLLM API server version 0.30.0",
    "(EngineCore pid=318) INFO 09-28 00:52:30 [gpu_model_runner.py:1] Starting to load model Qwen/Qwen3-8B...",
    "(Worker_TP0 pid=390) INFO 09-28 01:06:18 [model_runner.py:375] Model loading took 89.55 GiB and 817.96 seconds",
    "(Worker_TP0 pid=390) INFO 09-28 01:06:22 [encoder_runner.py:119] Encoder cache will be initialized with a budget of 32242 tokens",
]
READY = "(EngineCore pid=318) INFO 09-28 01:07:40 [core.py:1] init engine (profile, create kv cache, warmup model) took 78.1 seconds"
SERVING = "(APIServer pid=1) INFO 09-28 01:07:45 [launcher.py:1] Application startup complete."


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_log_that_stops_in_start_up_says_where(ending: str) -> None:
    analysis = analyze(ending.join(STARTUP) + ending)
    assert not analysis.findings
    ended = analysis.ended_in_startup
    assert ended is not None and (ended.line, ended.phase) == (2, "memory_profiling")


@pytest.mark.parametrize("last", [READY, SERVING])
def test_a_start_up_that_completed_is_no_note(last: str) -> None:
    assert analyze("\n".join([*STARTUP, last]) + "\n").ended_in_startup is None


def test_a_death_in_start_up_is_the_finding_not_a_note() -> None:
    dead = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    analysis = analyze("\n".join([*STARTUP, dead]) + "\n")
    assert analysis.findings and analysis.ended_in_startup is None


def test_only_the_end_of_a_long_log_is_read_for_it() -> None:
    # The start-up marker lies before the last 256 KiB: what the end holds says nothing of a phase.
    filler = [f"progress {n}: nothing to see here" for n in range(12_000)]
    assert analyze("\n".join([*STARTUP, *filler]) + "\n").ended_in_startup is None


def test_check_prints_the_note_and_the_json_field(tmp_path: Path) -> None:
    log = tmp_path / "starting.log"
    # (a progress bar's bare `\r` before the marker: the note numbers lines as `grep -n` does)
    log.write_text("Loading shards:  50%\rLoading shards: 100%\n" + "\n".join(STARTUP) + "\n")
    text = run_cli("check", str(log))
    assert text.returncode == 0
    assert "the log ends during start-up (memory profiling and KV-cache sizing, from line 4)" in text.stdout
    report = json.loads(run_cli("check", "--format", "json", str(log)).stdout)
    assert report["files"][0]["ended_in_startup"] == {"phase": "memory_profiling", "line": 4}
    assert report["files"][0]["summary"]["status"] == "no-death"
