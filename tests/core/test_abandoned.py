"""A start-up its caller abandoned: the caller caught the engine's error and printed only its
message, then the executor shut the workers down (`core.abandoned`). Logs written from the
principle: the caller's words, the executor, the prefixes and line endings vary; a start-up that
completed, a report that is not right above the shutdown, and a run that goes on are no death."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze

PREFIXES = ["", "vllm-1  | ", "2025-02-07T03:25:19.123456789Z stderr F "]
ENDINGS = ["\n", "\r\n"]

START = [
    "INFO 04-16 16:11:50 [__init__.py:239] Automatically detected platform cuda.",
    "INFO 04-16 16:11:51 [llm_engine.py:242] Initializing a V0 LLM engine (v0.8.3) with config: model='facebook/opt-30b'",
    "INFO 04-16 16:11:57 [model_runner.py:1110] Starting to load model facebook/opt-30b...",
    "(VllmWorkerProcess pid=102961) INFO 04-16 16:11:57 [model_runner.py:1110] Starting to load model facebook/opt-30b...",
]
MULTIPROC_END = "INFO 04-16 16:11:58 [multiproc_worker_utils.py:137] Terminating local vLLM worker processes"
RAY_END = (
    "INFO 04-16 03:18:29 [ray_distributed_executor.py:127] Shutting down Ray distributed executor. If you see "
    "error log from logging.cc regarding SIGTERM received, please ignore because this is the expected "
    "termination process in Ray."
)
# What callers print for a caught exception, and the rule its message is named by.
REPORTS = [
    ("LLM init error: [Errno 122] Disk quota exceeded", "disk-full"),
    ("Error: [Errno 28] No space left on device", "disk-full"),
    (
        "Failed to initialize the engine: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}] "
        "within 1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough resources.",
        "ray-placement-group-timeout",
    ),
]


def _log(lines: list[str], prefix: str = "", ending: str = "\n") -> str:
    return ending.join(prefix + line for line in lines) + ending


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize(("report", "rule_id"), REPORTS)
@pytest.mark.parametrize("end", [MULTIPROC_END, RAY_END])
def test_the_callers_report_above_the_executors_shutdown_is_the_root(
    prefix: str, ending: str, report: str, rule_id: str, end: str
) -> None:
    lines = [*START, report, end]
    analysis = analyze(_log(lines, prefix, ending))
    [finding] = analysis.findings
    assert (finding.line, finding.rule_id) == (len(START), rule_id)
    assert finding.confidence == "low" and "caught" in (finding.why or "")


def test_workers_lines_between_the_report_and_the_shutdown_are_passed_over() -> None:
    worker = (
        "(VllmWorkerProcess pid=102961) INFO 04-16 16:11:58 [multiproc_worker_utils.py:253] Worker exiting"
    )
    lines = [*START, "LLM init error: [Errno 122] Disk quota exceeded", worker, worker, MULTIPROC_END, worker]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (len(START), "disk-full")


READY = "INFO 04-16 16:12:40 [llm_engine.py:447] init engine (profile, create kv cache, warmup model) took 41.2 seconds"


@pytest.mark.parametrize(
    "tail",
    [
        # (the engine was ready: the caller's error came after a start-up that completed)
        [READY, "Error: [Errno 122] Disk quota exceeded"],
        # (a plain line of the caller's that is no error report sits right above the shutdown)
        ["Error: [Errno 122] Disk quota exceeded", "Processed 128 prompts, writing results"],
    ],
)
def test_no_abandoned_start_up_without_its_signs(tail: list[str]) -> None:
    lines = [*START, *tail, MULTIPROC_END]
    assert not analyze(_log(lines)).findings


def test_a_run_that_goes_on_after_the_shutdown_is_not_abandoned_there() -> None:
    more = [f"INFO 04-16 16:12:{n:02d} [llm.py:1] still working {n}" for n in range(30)]
    lines = [*START, "Error: [Errno 122] Disk quota exceeded", MULTIPROC_END, *more]
    assert not analyze(_log(lines)).findings


def test_each_run_of_a_restarted_caller_is_judged_on_its_own() -> None:
    banner = "INFO 04-16 16:20:00 [api_server.py:1] vLLM API server version 0.8.3"
    abandoned = [*START, "Error: [Errno 122] Disk quota exceeded", MULTIPROC_END]
    ready = [
        banner,
        *START[1:],
        "INFO 04-16 16:21:40 [llm_engine.py:447] init engine (profile, create kv cache, warmup model) took 41.2 seconds",
        "Error: something the caller did later",
        MULTIPROC_END,
    ]
    findings = analyze(_log([*abandoned, *ready])).findings
    assert [(f.line, f.rule_id) for f in findings] == [(len(START), "disk-full")]
