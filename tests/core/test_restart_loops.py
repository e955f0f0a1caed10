"""A restart loop (the same server dying and starting again, or one log after another) is
diagnosed run by run: each run's death is found with the same root cause and rule as when its
run is read alone. Checked on every corpus log that starts a run, and on synthetic variants of
each mechanism that used to leak across runs (silent deaths merged into one run, an unprefixed
run attached to a prefixed death, context and copies read from another run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.lines import parse_line


def _logs() -> list[Path]:
    return sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])


def _text(path: Path) -> str:
    text = read_log(path)
    return text if text.endswith("\n") else text + "\n"


def _roots(text: str) -> list[tuple[int, str | None]]:
    return [(f.line, f.rule_id) for f in analyze(text).findings]


def _lines(text: str) -> int:
    return analyze(text).line_count - 1  # the empty line after the final newline is not one


def _starts_a_run(text: str) -> bool:
    starts = analyze(text).run_starts
    return bool(starts) and min(starts) <= 3


STARTING = [p for p in _logs() if _starts_a_run(_text(p))]


def test_the_corpus_has_logs_that_start_a_run() -> None:
    assert len(STARTING) >= 10  # the checks below are not vacuous


@pytest.mark.parametrize("path", STARTING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_run_repeated_three_times_is_three_deaths_with_the_same_cause(path: Path) -> None:
    text = _text(path)
    once, lines = _roots(text), _lines(text)
    assert once, "every corpus log has a death"
    want = [(line + k * lines, rule) for k in range(3) for line, rule in once]
    assert _roots(text * 3) == want


def _prefixed(text: str) -> bool:
    return bool(parse_line(0, text.split("\n", 1)[0]).outer)


@pytest.mark.parametrize("path", STARTING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_run_after_another_log_is_diagnosed_as_alone(path: Path) -> None:
    """The log before it is the corpus log before it in order with the same kind of prefix (a
    restart loop keeps its deployment's prefix)."""
    text = _text(path)
    others = [p for p in _logs() if p != path and _prefixed(_text(p)) == _prefixed(text)]
    before = max((p for p in others if p < path), default=others[-1])
    first = _text(before)
    want = _roots(first) + [(line + _lines(first), rule) for line, rule in _roots(text)]
    assert _roots(first + text) == want


BANNER = "INFO 10-03 21:20:01 [api_server.py:1805] vLLM API server version 0.11.0"
LOADING = "INFO 10-03 21:20:05 [gpu_model_runner.py:1] Starting to load model m..."


@pytest.mark.parametrize(
    "death",
    [
        ["KeyboardInterrupt: terminated"],  # a stop before the server ever served
        [
            "Traceback (most recent call last):",
            '  File "/x/vllm/entrypoints/openai/api_server.py", line 1, in <module>',
            "ValueError: unknown quantization method 'fp5'",
        ],
    ],
)
@pytest.mark.parametrize("runs", [2, 3])
def test_each_run_that_died_silently_is_its_own_death(death: list[str], runs: int) -> None:
    run = [BANNER, LOADING, *death]
    [(line, _)] = _roots("\n".join(run) + "\n")
    assert [ln for ln, _ in _roots("\n".join(run * runs) + "\n")] == [
        line + k * len(run) for k in range(runs)
    ]


def test_an_unprefixed_new_run_is_not_part_of_the_prefixed_death_before_it() -> None:
    prefixed = [
        "svc-1  | (EngineCore_DP0 pid=7) ERROR 10-03 21:19:58 [core.py:1] ValueError: bad config",
        "svc-1  | (APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
    ]
    again = [
        BANNER,
        LOADING,
        "(EngineCore_DP0 pid=9) ERROR 10-03 21:20:09 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
    ]
    findings = analyze("\n".join(prefixed + again) + "\n").findings
    assert [f.line for f in findings] == [0, len(prefixed) + 2]


def test_a_rules_context_is_read_in_the_roots_own_run() -> None:
    """A KV-connector frame in the previous run's traceback does not make this run's error a
    connector failure."""
    connector = [
        BANNER,
        "Traceback (most recent call last):",
        '  File "/x/lmcache/integration/vllm/lmcache_connector_v1.py", line 1, in start_load_kv',
        "AssertionError",
    ]
    silent = [
        BANNER,
        LOADING,
        "Task exception was never retrieved",
        "future: <Task finished name='Task-2' coro=<MQLLMEngineClient.run_output_handler_loop() done> exception=ZMQError('Operation not supported')>",
        "Traceback (most recent call last):",
        '  File "/x/vllm/engine/multiprocessing/client.py", line 184, in run_output_handler_loop',
        "zmq.error.ZMQError: Operation not supported",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ]
    alone = analyze("\n".join(silent) + "\n").findings[-1].rule_id
    after = analyze("\n".join(connector + silent) + "\n").findings[-1].rule_id
    assert after == alone and alone != "kv-connector-failure"


RAY_ERROR = [
    "(RayWorkerWrapper pid=120292) ERROR 02-26 15:54:06 worker_base.py:574] Error executing method 'init_device'. This might cause deadlock in distributed execution.",
    "(RayWorkerWrapper pid=120292) ERROR 02-26 15:54:06 worker_base.py:574] Traceback (most recent call last):",
    '(RayWorkerWrapper pid=120292) ERROR 02-26 15:54:06 worker_base.py:574]   File "/x/vllm/worker/worker_base.py", line 566, in execute_method',
    "(RayWorkerWrapper pid=120292) ERROR 02-26 15:54:06 worker_base.py:574] RuntimeError: NPU function error: c10_npu::SetDevice(device_id_)",
]


def _dedup_lines(minute: str, count: int = 10) -> list[str]:
    return [
        f"(pid=80888, ip=10.0.0.{i}) INFO 02-26 15:{minute} __init__.py:44] plugin ascend loaded. [repeated 31x across cluster]"
        for i in range(count)
    ]


@pytest.mark.parametrize("then", ["", BANNER])
def test_lines_flushed_late_with_earlier_times_are_not_progress_after_the_error(then: str) -> None:
    """Ray prints its de-duplicated summaries after the error, stamped with the time the lines
    were first said; they show nothing of the dying process."""
    lines = [*RAY_ERROR, *_dedup_lines("54:01"), *([then, LOADING] if then else [])]
    findings = analyze("\n".join(lines) + "\n").findings
    assert findings and findings[0].line == 3


def test_later_lines_are_progress_after_the_error() -> None:
    lines = [*RAY_ERROR, *_dedup_lines("55:30")]
    assert analyze("\n".join(lines) + "\n").findings == ()


def _related(text: str) -> list[tuple[int, ...]]:
    return [f.related_lines for f in analyze(text).findings]


def test_the_corpus_has_runs_whose_root_is_copied() -> None:
    assert any(any(_related(_text(p))) for p in STARTING)  # the check below is not vacuous


@pytest.mark.parametrize("path", STARTING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_repeated_runs_copies_of_its_root_are_its_own(path: Path) -> None:
    """The copies of a root cause's exception a finding lists (EngineCore's logged one, the API
    server's re-raise) are those of its own run, as when the run is read alone: the other runs
    of a restart loop print the same exception for their own deaths."""
    text = _text(path)
    once, lines = _related(text), _lines(text)
    want = [tuple(n + k * lines for n in related) for k in range(3) for related in once]
    assert _related(text * 3) == want


ENGINE_DEATH = [
    BANNER,
    LOADING,
    "(EngineCore_DP0 pid=7) ERROR 10-03 21:20:09 [core.py:1] EngineCore failed to start.",
    "(EngineCore_DP0 pid=7) ERROR 10-03 21:20:09 [core.py:1] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 10-03 21:20:09 [core.py:1]   File "/x/vllm/v1/engine/core.py", line 1, in run_engine_core',
    "(EngineCore_DP0 pid=7) ERROR 10-03 21:20:09 [core.py:1] ValueError: unknown quantization method 'fp5'",
    "(APIServer pid=1) Traceback (most recent call last):",
    '(APIServer pid=1)   File "/x/vllm/entrypoints/openai/api_server.py", line 1, in <module>',
    "(APIServer pid=1) ValueError: unknown quantization method 'fp5'",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


@pytest.mark.parametrize("runs", [2, 3])
def test_copies_of_the_root_come_from_its_own_run(runs: int) -> None:
    """Each death's copies of its exception are the copy its own run printed, in every run."""
    findings = analyze("\n".join(ENGINE_DEATH * runs) + "\n").findings
    assert [f.line for f in findings] == [5 + k * len(ENGINE_DEATH) for k in range(runs)]
    assert [f.related_lines for f in findings] == [(8 + k * len(ENGINE_DEATH),) for k in range(runs)]
