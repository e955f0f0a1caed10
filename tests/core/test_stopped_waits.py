"""A start-up stopped while it waited for what it could not get was stopped because of that wait.

vLLM's Ray executor reserves one GPU bundle per worker as a placement group before anything else
starts: it warns when the cluster has fewer GPUs than the bundles, then reports the wait with the
time waited so far (10, 30, 70, 150 … seconds) until it gives up at 1800 s. A person or a
supervisor that stops the start-up meanwhile (SIGTERM, Ctrl-C, a SLURM time limit) ends that wait:
the stop is how the death ends, the wait is why. The first report of the wait is the root (the
warning when there is one), named by its rule; a wait that ended (a later lifecycle step) is no
cause of a later stop, and a stop with no wait before it stays a stop.

A log that ends in those waits, with no stop, hung there once they say minutes were waited; their
seconds are the wait so far, so the last one counts, not their sum.
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze

PREFIXES = ["", "vllm-1  | ", "2025-02-07T03:25:19.123456789Z stderr F "]
ENDINGS = ["\n", "\r\n"]

SPECS = "[{'GPU': 1.0, 'node:10.8.0.7': 0.001}, {'GPU': 1.0}, {'GPU': 1.0}, {'GPU': 1.0}]"
START = [
    "INFO 04-16 02:35:50 [api_server.py:1043] vLLM API server version 0.8.5",
    "INFO 04-16 02:35:58 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5) with config: model='m'",
    "INFO 04-16 02:35:59 [ray_utils.py:335] No current placement group found. Creating a new placement group.",
]
SHORT = (
    "WARNING 04-16 02:35:59 [ray_utils.py:342] The number of required GPUs exceeds the total number of"
    " available GPUs in the placement group."
)


def waits(*seconds: int) -> list[str]:
    return [
        f"INFO 04-16 02:36:09 [ray_utils.py:233] Waiting for creating a placement group of specs for {s}"
        f" seconds. specs={SPECS}. Check `ray status` and `ray list nodes` to see if you have enough resources."
        for s in seconds
    ]


# How a stop reads: the V1 signal handler's traceback, Ray's failure-signal dump, the SIGTERM
# handler's SystemExit, Ctrl-C, a SLURM time limit.
STOPS = {
    "keyboard-interrupt-terminated": [
        "Traceback (most recent call last):",
        '  File "/x/vllm/executor/ray_utils.py", line 227, in _wait_until_pg_ready',
        "    ready, _ = ray.wait([pg_ready_ref], timeout=wait_interval)",
        "KeyboardInterrupt: terminated",
    ],
    "ray-sigterm-dump": [
        "*** SIGTERM received at time=1748300290 on cpu 8 ***",
        "PC: @     0x7a30bba98d71  (unknown)  (unknown)",
        "    @     0x7a2fb123629f       1184  ray::core::GetRequest::Wait()",
    ],
    "system-exit": [
        "ERROR 04-16 02:40:11 [engine.py:448] 15",
        "ERROR 04-16 02:40:11 [engine.py:448] Traceback (most recent call last):",
        'ERROR 04-16 02:40:11 [engine.py:448]   File "/x/ray/_private/worker.py", line 1539, in sigterm_handler',
        "ERROR 04-16 02:40:11 [engine.py:448]     sys.exit(signum)",
        "ERROR 04-16 02:40:11 [engine.py:448] SystemExit: 15",
    ],
    "ctrl-c": [
        "^C",
        "Traceback (most recent call last):",
        '  File "/x/vllm/scripts.py", line 1, in main',
        "KeyboardInterrupt",
    ],
    "slurm": [
        "slurmstepd: error: *** JOB 4242 ON gpu-07 CANCELLED AT 2025-04-16T03:05:00 DUE TO TIME LIMIT ***"
    ],
}


def _log(lines: list[str], prefix: str = "", ending: str = "\n") -> str:
    return ending.join(prefix + line for line in lines) + ending


def _first(text: str) -> tuple[int, str]:
    [finding] = analyze(text).findings
    return finding.line, finding.rule_id


@pytest.mark.parametrize("ending", ENDINGS, ids=["lf", "crlf"])
@pytest.mark.parametrize("prefix", PREFIXES, ids=["plain", "compose", "cri"])
@pytest.mark.parametrize("stop", list(STOPS), ids=list(STOPS))
def test_a_stop_during_the_wait_for_gpus_is_told_by_the_warning(stop: str, prefix: str, ending: str) -> None:
    lines = [*START, SHORT, *waits(10, 30, 70), *STOPS[stop]]
    assert _first(_log(lines, prefix, ending)) == (3, "ray-cluster-gpus-short")  # (0-based)


@pytest.mark.parametrize("stop", list(STOPS), ids=list(STOPS))
def test_without_the_warning_the_first_report_of_the_wait_is_the_root(stop: str) -> None:
    lines = [*START, *waits(10, 30, 70, 150), *STOPS[stop]]
    line, rule = _first(_log(lines))
    assert (line, rule) == (3, "ray-placement-group-wait")
    [finding] = analyze(_log(lines)).findings
    assert "waited 10 seconds" in finding.message


def test_the_root_says_why_and_the_stop_is_considered() -> None:
    lines = [*START, SHORT, *waits(10), *STOPS["keyboard-interrupt-terminated"]]
    [finding] = analyze(_log(lines)).findings
    assert "was stopped on line 9" in str(finding.why)
    assert any(
        c.line == 8 and "during the wait reported from line 4" in str(c.why_not) for c in finding.considered
    )
    assert any(f.title.startswith("Ask for no more GPUs") for f in finding.fixes)


@pytest.mark.parametrize(
    "between",
    [
        # the group was placed: the workers started and loaded the model
        ["INFO 04-16 02:37:00 [model_runner.py:1072] Starting to load model m..."],
        ["INFO 04-16 02:37:30 [model_runner.py:1077] Loading model weights took 14.2 GB"],
    ],
    ids=["loading-started", "weights-loaded"],
)
def test_a_wait_that_ended_is_not_the_cause_of_a_later_stop(between: list[str]) -> None:
    lines = [*START, SHORT, *waits(10, 30), *between, *STOPS["keyboard-interrupt-terminated"]]
    line, rule = _first(_log(lines))
    assert rule != "ray-cluster-gpus-short" and rule != "ray-placement-group-wait"
    assert line > len(START) + 2


def test_a_stop_with_no_wait_before_it_stays_a_stop() -> None:
    lines = [*START, *STOPS["keyboard-interrupt-terminated"]]
    line, rule = _first(_log(lines))
    assert line == len(lines) - 1 and rule.startswith("stopped-")


def test_a_crash_signal_is_no_stop_that_ends_a_wait() -> None:
    crash = [
        "*** SIGSEGV received at time=1748300290 on cpu 8 ***",
        "PC: @     0x7a30bba98d71  (unknown)  (unknown)",
    ]
    lines = [*START, SHORT, *waits(10, 30), *crash]
    line, _ = _first(_log(lines))
    assert line == len(START) + 3  # the fault's own line


def test_a_restart_that_went_on_does_not_reach_back_into_the_earlier_wait() -> None:
    """(Starts with no death between them are one run: the restart's own steps end the wait.)"""
    lines = [*START, SHORT, *waits(10), *START[:2], *STOPS["keyboard-interrupt-terminated"]]
    findings = analyze(_log(lines)).findings
    assert findings and findings[-1].line == len(lines) - 1


@pytest.mark.parametrize(
    "seconds, hung",
    [((10, 30, 70, 150), False), ((10, 30, 70, 150, 310), True), ((10, 30, 70, 150, 310, 630, 1270), True)],
    ids=["150s", "310s", "1270s"],
)
def test_a_log_that_ends_waiting_for_gpus_hung_once_minutes_were_waited(
    seconds: tuple[int, ...], hung: bool
) -> None:
    """The reports count the wait so far (their sum, 260 s for 150 s waited, would call it hung)."""
    lines = [*START, SHORT, *waits(*seconds)]
    findings = analyze(_log(lines)).findings
    if not hung:
        assert not findings
        return
    [finding] = findings
    assert (finding.line, finding.rule_id) == (3, "ray-cluster-gpus-short")


@pytest.mark.parametrize("ending", ENDINGS, ids=["lf", "crlf"])
def test_a_wait_whose_end_the_caller_reported_is_that_report_not_a_hang(ending: str) -> None:
    """vLLM gave up after 1800 s; the user's script caught the error, printed its message and
    let the executor shut down (`core.abandoned`): the report is the root, the waits precursors."""
    report = (
        f"Error: Cannot provide a placement group of placement_group_specs={SPECS} within 1800 seconds."
        " See `ray status` and `ray list nodes` to make sure the cluster has enough resources."
    )
    shutdown = "INFO 04-16 03:18:29 [ray_distributed_executor.py:127] Shutting down Ray distributed executor."
    lines = [*START, SHORT, *waits(10, 30, 70, 150, 310, 630, 1270), report, shutdown]
    analysis = analyze(_log(lines, "", ending))
    [finding] = analysis.findings
    assert (finding.line, finding.rule_id) == (len(lines) - 2, "ray-placement-group-timeout")
    assert {p.id for p in analysis.precursors} >= {"ray-gpus-short", "ray-placement-group-wait"}


# A stop reported twice: Ray's failure-signal handler dumps the SIGTERM it received (C++ frames
# only), then the signal raises in Python where the process was (`SystemExit: 15` from Ray's
# handler, `KeyboardInterrupt` from vLLM's). The dump comes first; the traceback says where.
DUMP = [
    "*** SIGTERM received at time=1748300290 on cpu 8 ***",
    "PC: @     0x7a30bba98d71  (unknown)  (unknown)",
    "    @     0x7a2fb123629f       1184  ray::core::GetRequest::Wait()",
]


def _stop_traceback(*frames: str, last: str = "SystemExit: 15") -> list[str]:
    body = [f'  File "/x/{path}", line 1, in {function}' for path, function in (f.split(":") for f in frames)]
    return [
        "Traceback (most recent call last):",
        *body,
        '  File "/x/ray/_private/worker.py", line 1539, in sigterm_handler',
        "    sys.exit(signum)",
        last,
    ]


WHERE = [
    (("huggingface_hub/file_download.py:http_get",), "stopped-while-downloading"),
    (("vllm/executor/ray_utils.py:_wait_until_pg_ready",), "stopped-waiting-for-placement-group"),
    (("torch/_inductor/compile_fx.py:compile_fx",), "stopped-during-compile"),
    (("torch/distributed/distributed_c10d.py:init_process_group",), "stopped-waiting-for-peers"),
]


@pytest.mark.parametrize("prefix", PREFIXES, ids=["plain", "compose", "cri"])
@pytest.mark.parametrize("last", ["SystemExit: 15", "KeyboardInterrupt: terminated"])
@pytest.mark.parametrize(("frames", "rule_id"), WHERE, ids=[r for _, r in WHERE])
def test_a_frameless_stop_dump_is_told_by_the_traceback_of_the_same_stop(
    frames: tuple[str, ...], rule_id: str, last: str, prefix: str
) -> None:
    lines = [*START, *DUMP, *_stop_traceback(*frames, last=last)]
    assert _first(_log(lines, prefix)) == (len(START), rule_id)


def test_a_crash_dump_does_not_borrow_a_later_stops_frames() -> None:
    crash = ["*** SIGSEGV received at time=1748300290 on cpu 8 ***", *DUMP[1:]]
    lines = [*START, *crash, *_stop_traceback("huggingface_hub/file_download.py:http_get")]
    line, rule = _first(_log(lines))
    assert line == len(START) and rule != "stopped-while-downloading"


def test_a_stop_dump_does_not_borrow_frames_from_the_next_run() -> None:
    restart = [
        "INFO 04-16 03:00:00 [api_server.py:1043] vLLM API server version 0.8.5",
        "INFO 04-16 03:00:01 [api_server.py:1044] args: Namespace(model='m')",
        "Traceback (most recent call last):",
        '  File "/x/vllm/engine/llm_engine.py", line 1, in __init__',
        "ValueError: boom",
    ]
    lines = [*START, *DUMP, *restart, *_stop_traceback("huggingface_hub/file_download.py:http_get")]
    findings = analyze(_log(lines)).findings
    assert findings and findings[0].line == len(START) and findings[0].rule_id == "stopped-during-startup"
