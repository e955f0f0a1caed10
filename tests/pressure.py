"""Synthetic pressure logs built from vLLM's own stats-line spellings (see `core/stats.py`).

A V1 log (0.11.2+ spelling, with the `Preemptions:` part) whose KV cache ramps to 99.9 % with the
waiting queue growing to 80 and generation throughput falling to 0 before a serving OOM, and a V0
log (0.6 spelling) with six preemption warnings. The figures are chosen so that every health
condition and the pre-failure record have one exact expected value. `python tests/pressure.py`
rewrites the committed copies under tests/fixtures/formats/.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FORMATS = Path(__file__).parent / "fixtures" / "formats"
V1_LOG = FORMATS / "kv-pressure-oom.log"
V0_LOG = FORMATS / "v0-preemptions.log"

# 24 stats lines, 10 s apart from 21:20:00: a healthy ramp (0–6), then pressure (7–23).
KV = [12.5, 25.0, 38.4, 51.2, 64.0, 78.3, 90.1]
KV += [97.0, 97.3, 97.6, 97.9, 98.2, 98.4, 98.6, 98.8, 99.0, 99.2, 99.4, 99.5, 99.6, 99.7, 99.8, 99.9, 99.9]
RUNNING = [8, 16, 24, 32, 40, 52, 60] + [64] * 17
WAITING = [0] * 7 + [0, 0, 2, 5, 9, 14, 20, 26, 33, 40, 47, 54, 60, 66, 72, 76, 80]
GENERATION = [400.0, 820.0, 1100.0, 1310.0, 1450.0, 1500.0, 1520.0]
GENERATION += [1520.0, 1510.0, 1490.0, 1460.0, 1400.0, 1320.0, 1200.0, 1050.0, 880.0]
GENERATION += [700.0, 520.0, 350.0, 210.0, 120.0, 60.0, 20.0, 0.0]
PROMPT = [2400.0, 2100.0, 1800.0, 1500.0, 1300.0, 1100.0, 900.0] + [600.0] * 10 + [300.0] * 7
PREEMPTIONS = [0] * 18 + [1] * 6
HIT_RATE = [35.2] * 24
# A successful request follows these stats lines (the last one at 21:23:10).
SUCCESS_AFTER = {1, 3, 5, 8, 12, 16, 19}

_API = "(APIServer pid=100)"
_HEADER = [
    f"{_API} INFO 10-03 21:18:01 [api_server.py:1805] vLLM API server version 0.11.2",
    f"{_API} INFO 10-03 21:18:01 [utils.py:233] non-default args: {{'model_tag': 'Qwen/Qwen3-8B', "
    "'model': 'Qwen/Qwen3-8B', 'max_num_seqs': 64, 'port': 8000}",
    "(EngineCore_DP0 pid=200) INFO 10-03 21:18:10 [core.py:77] Initializing a V1 LLM engine (v0.11.2) "
    "with config: model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B'",
    "(EngineCore_DP0 pid=200) INFO 10-03 21:18:20 [gpu_model_runner.py:2602] Starting to load model Qwen/Qwen3-8B...",
    "(EngineCore_DP0 pid=200) INFO 10-03 21:18:30 [gpu_model_runner.py:2653] Model loading took 15.27 GiB and 9.1 seconds",
    "(EngineCore_DP0 pid=200) INFO 10-03 21:18:50 [kv_cache_utils.py:1087] GPU KV cache size: 52,432 tokens",
    "(EngineCore_DP0 pid=200) INFO 10-03 21:19:12 [core.py:210] init engine (profile, create kv cache, "
    "warmup model) took 52.10 seconds",
    f"{_API} INFO 10-03 21:19:30 [api_server.py:1847] Starting vLLM API server 0 on http://0.0.0.0:8000",
    f"{_API} INFO:     Application startup complete.",
]
_OOM = [
    "(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710]   File "/usr/local/lib/python3.12/'
    'dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core',
    "(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710]     engine_core.run_busy_loop()",
    '(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710]   File "/usr/local/lib/python3.12/'
    'dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2120, in execute_model',
    "(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710]     hidden_states = self._model_forward(",
    "(EngineCore_DP0 pid=200) ERROR 10-03 21:24:05 [core.py:710] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 310.00 MiB is free. "
    "Including non-PyTorch memory, this process has 78.87 GiB memory in use.",
    f"{_API} ERROR 10-03 21:24:05 [async_llm.py:480] AsyncLLM output_handler failed.",
    f"{_API} ERROR 10-03 21:24:05 [async_llm.py:480] Traceback (most recent call last):",
    f'{_API} ERROR 10-03 21:24:05 [async_llm.py:480]   File "/usr/local/lib/python3.12/dist-packages/'
    'vllm/v1/engine/async_llm.py", line 439, in output_handler',
    f"{_API} ERROR 10-03 21:24:05 [async_llm.py:480]     outputs = await engine_core.get_output_async()",
    f"{_API} ERROR 10-03 21:24:05 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    f"{_API} INFO:     Shutting down",
    f"{_API} INFO:     Application shutdown complete.",
]


def _clock(index: int) -> str:
    seconds = 20 * 60 + 10 * index
    return f"21:{seconds // 60:02d}:{seconds % 60:02d}"


def v1_stats_line(index: int) -> str:
    """The 0.11.2+ spelling: `Engine 000: ` + parts, `Preemptions:` only when there were some."""
    parts = [
        f"Avg prompt throughput: {PROMPT[index]:.1f} tokens/s",
        f"Avg generation throughput: {GENERATION[index]:.1f} tokens/s",
        f"Running: {RUNNING[index]} reqs",
        f"Waiting: {WAITING[index]} reqs",
    ]
    if PREEMPTIONS[index]:
        parts.append(f"Preemptions: {PREEMPTIONS[index]}")
    parts += [f"GPU KV cache usage: {KV[index]:.1f}%", f"Prefix cache hit rate: {HIT_RATE[index]:.1f}%"]
    return f"{_API} INFO 10-03 {_clock(index)} [loggers.py:236] Engine 000: " + ", ".join(parts)


def v1_pressure_log() -> str:
    lines = list(_HEADER)
    for index in range(len(KV)):
        lines.append(v1_stats_line(index))
        if index in SUCCESS_AFTER:
            lines.append(
                f'{_API} INFO:     127.0.0.1:40{index:03d} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
            )
    return "\n".join(lines + _OOM) + "\n"


def v1_line_of(index: int) -> int:
    """0-based line of stats line `index` in `v1_pressure_log()`."""
    return len(_HEADER) + index + sum(1 for i in SUCCESS_AFTER if i < index)


V0_CUMULATIVE = [1, 51, 101, 151, 201, 251]


def v0_preemption_log() -> str:
    """A V0 (0.6) run: stats lines with the CPU cache part, six preemption warnings, no death."""
    lines = [
        "INFO 04-28 16:50:01 api_server.py:528] vLLM API server version 0.6.3",
        "INFO 04-28 16:50:40 api_server.py:250] Started engine process with PID 77",
    ]
    for index in range(12):
        stamp = f"16:5{1 + index // 6}:{(index % 6) * 10:02d}"
        running, waiting = (48, 3 * index) if index >= 4 else (12 * index, 0)
        kv = min(99.5, 30.0 + 8.0 * index)
        lines.append(
            f"INFO 04-28 {stamp} metrics.py:351] Avg prompt throughput: 850.0 tokens/s, Avg generation "
            f"throughput: 610.5 tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: {waiting} reqs, "
            f"GPU KV cache usage: {kv:.1f}%, CPU KV cache usage: 0.0%."
        )
        if index >= 6:
            count = V0_CUMULATIVE[index - 6]
            lines.append(
                f"WARNING 04-28 {stamp} scheduler.py:1481] Sequence group cmpl-{index} is preempted by "
                "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect "
                "the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to "
                f"provide more KV cache memory. total_num_cumulative_preemption={count}"
            )
    return "\n".join(lines) + "\n"


def check_report(out: Path, *logs: Path) -> subprocess.CompletedProcess[str]:
    """`vllm-log-lsp check --report OUT LOG...` as a user runs it."""
    command = [sys.executable, "-m", "vllm_log_lsp", "check", "--report", str(out), *map(str, logs)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


if __name__ == "__main__":
    V1_LOG.write_text(v1_pressure_log(), encoding="utf-8")
    V0_LOG.write_text(v0_preemption_log(), encoding="utf-8")
