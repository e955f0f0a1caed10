"""Every line format seen in the wild, applied to one crash: the diagnosis must not change.

`tp2-worker-oom.log` is a V1 TP=2 crash (a worker's CUDA OOM, re-raised by EngineCore, then
EngineDeadError in the API server and a raw multiprocessing copy). Each transform rewrites it the
way a runtime, a collector or another vLLM version would; the root cause must stay on the line
holding the worker's `torch.OutOfMemoryError`, and its range must start exactly at that text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from support import FORMATS, lsp_lines
from vllm_log_lsp.core.analyze import analyze

BASE = (FORMATS / "tp2-worker-oom.log").read_text(encoding="utf-8")
ROOT_TEXT = "torch.OutOfMemoryError: CUDA out of memory"


def per_line(fn: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(fn(line) if line else line for line in text.split("\n"))


def ansi(line: str) -> str:
    line = re.sub(r"^\(([^)]*)\) ", "\x1b[1;36m(\\1)\x1b[0;0m ", line)
    return re.sub(r" (ERROR|INFO|WARNING) (\d\d-\d\d \S+) ", " \x1b[31m\\1\x1b[0m \x1b[90m\\2\x1b[0m ", line)


def bare_cr_progress(text: str) -> str:
    bar = "Loading safetensors checkpoint shards: 100% Completed | 5/5"
    redraws = "\r".join(
        f"Loading safetensors checkpoint shards:  {p}% Completed | {p // 20}/5" for p in (0, 20, 40)
    )
    return text.replace(bar, redraws + "\r" + bar)


def user_prefix(line: str) -> str:
    return re.sub(r"^(\([^)]*\) )(ERROR|INFO) ", r"\1[job-17] \2 ", line)


def v031_raw_tracebacks(text: str) -> str:
    """0.31+: vLLM puts the process in its format; raw (multiprocessing) lines have no prefix."""
    out = []
    for line in text.split("\n"):
        prefix = re.match(r"\((EngineCore_DP0) pid=\d+\) (?!ERROR|INFO)", line)
        out.append(line[prefix.end() :] if prefix else line)
    return "\n".join(out)


def ray_workers(text: str) -> str:
    text = text.replace(
        "(Worker_TP1 pid=302) ", "(EngineCore_DP0 pid=200) (RayWorkerWrapper pid=302, ip=10.0.0.2) "
    )
    return text.replace(", in execute_model\n", ", in execute_model [repeated 2x across cluster]\n", 1)


def rename(old: str, new: str) -> Callable[[str], str]:
    return lambda text: text.replace(old, new)


def path_sources(text: str) -> str:
    return text.replace("[multiproc_executor.py:671]", "[v1/executor/multiproc_executor.py:671]").replace(
        "[core.py:710]", "[v1/engine/core.py:710]"
    )


def dated_with_year(line: str) -> str:
    """A date format of the user's (`VLLM_LOGGING_CONFIG_PATH`, a plugin's): the year and
    milliseconds in vLLM's layout (`ERROR 2025-11-25 15:18:55.343 [file.py:N] `)."""
    return re.sub(r" (ERROR|INFO|WARNING) (\d\d-\d\d) (\d\d:\d\d:\d\d) ", r" \1 2025-\2 \3.343 ", line)


def level_and_time_cut(line: str) -> str:
    """Only vLLM's `[file.py:N] ` left of its header (a copy of some columns)."""
    return re.sub(r"(ERROR|INFO|WARNING) \d\d-\d\d \d\d:\d\d:\d\d (\[)", r"\2", line)


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "plain": lambda text: text,
    "ansi-colour": per_line(ansi),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "bare-cr-redraws": bare_cr_progress,
    "docker-compose": per_line(lambda line: "vllm-openai-1  | " + line),
    "podman-compose": per_line(lambda line: "[vllm]                 | " + line),
    "docker-logs-t": per_line(lambda line: "2025-10-03T21:22:46.123456789Z " + line),
    "kubernetes-cri": per_line(lambda line: "2025-10-03T21:22:46.123456789Z stderr F " + line),
    "journalctl": per_line(lambda line: "Oct 03 21:22:46 gpu-node-7 vllm[1633]: " + line),
    "docker-desktop": per_line(lambda line: "2025-10-03 23:22:46.123 | " + line),
    "markdown-quote": per_line(lambda line: "> " + line),
    "cri-in-markdown": per_line(lambda line: "> 2025-10-03T21:22:46.6703347Z stderr F " + line),
    "vllm-logging-prefix": per_line(user_prefix),
    "powershell-docker": per_line(lambda line: "docker : " + line),
    "grep-n": lambda text: "\n".join(
        f"{i + 5200}:{line}" if line else line for i, line in enumerate(text.split("\n"))
    ),
    "search-results": lambda text: "\n".join(
        f"Line {i + 1}: {line}" if line else line for i, line in enumerate(text.split("\n"))
    ),
    "ocr-bracket": lambda text: text.replace(
        "ERROR 10-03 21:22:46 [multiproc_executor.py:671]", "ERROR 10-03 21:22:46 (multiproc_executor.py:671]"
    ),
    "v0.31-raw-tracebacks": v031_raw_tracebacks,
    "ray-nested-prefix": ray_workers,
    "path-style-sources": path_sources,
    "vllmworker-rank": rename("(Worker_TP1 pid=302)", "(VllmWorker rank=1 pid=302)"),
    "vllmworker-tp": rename("(Worker_TP1 pid=302)", "(VllmWorker TP1 pid=302)"),
    "worker-pp-tp": rename("(Worker_TP1 pid=302)", "(Worker_PP1_TP3 pid=302)"),
    "enginecore-0": rename("EngineCore_DP0 pid=200", "EngineCore_0 pid=200"),
    "enginecore-plain": rename("EngineCore_DP0 pid=200", "EngineCore pid=200"),
    "apiserver-n": rename("(APIServer pid=100)", "(ApiServer_1 pid=100)"),
    "torch-rank-prefix": rename("(Worker_TP1 pid=302) ERROR", "(Worker_TP1 pid=302) [rank1]: ERROR"),
    "date-with-year": per_line(dated_with_year),
    "level-and-time-cut": per_line(level_and_time_cut),
}


def expected_root(text: str) -> tuple[int, str]:
    lines = lsp_lines(text)
    number = next(i for i, line in enumerate(lines) if ROOT_TEXT in line and "Worker failed" not in line)
    return number, lines[number]


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_format_keeps_the_diagnosis(name: str) -> None:
    text = TRANSFORMS[name](BASE)
    root_line, raw = expected_root(text)
    analysis = analyze(text)
    assert len(analysis.findings) == 1, [(f.line, f.root_text[:80]) for f in analysis.findings]
    finding = analysis.findings[0]
    assert finding.line == root_line
    assert raw[finding.root.start :].startswith(ROOT_TEXT)
    assert finding.rule_id == "oom-serving"
    assert finding.phase == "serving"
    assert finding.context.vllm_version == "0.11.0"
    assert finding.context.model == "Qwen/Qwen3-8B"
    assert finding.context.tensor_parallel_size == 2
    symptoms = {s.kind for s in finding.symptoms}
    assert {"engine-dead", "worker-failed", "engine-fatal-error"} <= symptoms


def test_raw_copy_is_not_a_second_incident() -> None:
    analysis = analyze(BASE)
    assert [f.line + 1 for f in analysis.findings] == [27]
    # The re-raise and the raw copy carry the same message: they are linked, not separate causes.
    assert {s.line + 1 for s in analysis.findings[0].symptoms} >= {34, 42, 49}


V0_LOG = """\
INFO 01-21 08:20:01 api_server.py:651] vLLM API server version 0.6.6
INFO 01-21 08:20:01 api_server.py:652] args: Namespace(host=None, port=8000, model='meta-llama/Llama-3.1-8B-Instruct', tensor_parallel_size=1, max_num_seqs=256, enforce_eager=False)
INFO 01-21 08:21:10 model_runner.py:1099] Starting to load model meta-llama/Llama-3.1-8B-Instruct...
INFO 01-21 08:22:40 metrics.py:467] Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 30.1 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.
ERROR 01-21 08:27:34 engine.py:366] CUDA error: an illegal memory access was encountered
ERROR 01-21 08:27:34 engine.py:366] Traceback (most recent call last):
ERROR 01-21 08:27:34 engine.py:366]   File "/usr/local/lib/python3.12/dist-packages/vllm/engine/multiprocessing/engine.py", line 364, in run_mp_engine
ERROR 01-21 08:27:34 engine.py:366]     engine.start()
ERROR 01-21 08:27:34 engine.py:366]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/model_runner.py", line 1719, in execute_model
ERROR 01-21 08:27:34 engine.py:366]     hidden_or_intermediate_states = model_executable(
ERROR 01-21 08:27:34 engine.py:366] RuntimeError: CUDA error: an illegal memory access was encountered
CRITICAL 01-21 08:27:35 launcher.py:99] MQLLMEngine is already dead, terminating server process
INFO:     127.0.0.1:52220 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error
"""


def test_v0_format_without_brackets() -> None:
    analysis = analyze(V0_LOG)
    assert [f.line + 1 for f in analysis.findings] == [11]
    finding = analysis.findings[0]
    assert finding.root_text.startswith("RuntimeError: CUDA error: an illegal memory access")
    assert finding.context.vllm_version == "0.6.6"
    assert finding.context.args["--max-num-seqs"] == "256"
    assert finding.phase == "serving"
    assert [s.kind for s in finding.symptoms] == ["v0-server-terminating"]
