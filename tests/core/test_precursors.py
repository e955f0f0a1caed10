"""Repeated precursors collapse into one, per marker and per death they lead to; `check` reports
them once with a count (text and JSON).

A run that ends hung, with no death (`incidents.hangs_at_end`): EngineCore repeats, every minute
while it waits, that its workers took nothing (`No available shared memory broadcast block found
in 60 seconds`). When those reports say it waited minutes, nothing progressed from the first of
them on, and the run (or the log) ends soon after the last, the run hung there: the first report
of that wait is the root, named by the stall's rule. A wait that ended (a later lifecycle step,
serving), a short one, or one long before the end is no hang."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.precursors import collapse_precursors

STALL = (
    "(EngineCore_DP0 pid=7) WARNING 03-03 19:{minute:02d}:00 [shm_broadcast.py:466] No available shared"
    " memory broadcast block found in 60 seconds. This typically happens when some processes are hanging."
)
SPAWN = (
    "(APIServer pid=1) WARNING 03-03 19:00:00 [multiproc_worker_utils.py:1] We must use the `spawn`"
    " multiprocessing start method. Overriding VLLM_WORKER_MULTIPROC_METHOD to 'spawn'."
)
DEATH = [
    "(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708]   File "/vllm/v1/engine/core.py", line 1, in run_busy_loop',
    "(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708]     step()",
    "(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708] TimeoutError: RPC call to sample_tokens timed out.",
]
ARGS = "(APIServer pid=1) INFO 03-03 19:00:00 [utils.py:1] non-default args: {'model': 'm'}"


def stalls(count: int, start: int = 1) -> list[str]:
    return [STALL.format(minute=start + i) for i in range(count)]


def groups_of(text: str) -> list[tuple[str, int, list[int]]]:
    analysis = analyze(text)
    return [
        (g.first.id, g.count, [p.line for p in g.occurrences])
        for g in collapse_precursors(analysis.precursors, analysis.findings)
    ]


@pytest.mark.parametrize("count", [2, 6, 40])
def test_the_same_precursor_before_one_death_is_one_with_a_count(count: int) -> None:
    text = "\n".join([ARGS, *stalls(count), *DEATH]) + "\n"
    [(marker, seen, lines)] = groups_of(text)
    assert (marker, seen, lines) == ("shm-broadcast-stall", count, list(range(1, count + 1)))


def test_a_single_precursor_keeps_its_plain_title() -> None:
    analysis = analyze("\n".join([ARGS, *stalls(1), *DEATH]) + "\n")
    [group] = collapse_precursors(analysis.precursors, analysis.findings)
    assert group.count == 1 and group.title() == "Processes stopped making progress"


def test_different_precursors_stay_apart_even_interleaved() -> None:
    text = "\n".join([ARGS, STALL.format(minute=1), SPAWN, STALL.format(minute=2), SPAWN, *DEATH]) + "\n"
    assert groups_of(text) == [("shm-broadcast-stall", 2, [1, 3]), ("spawn-override", 2, [2, 4])]


def test_a_death_between_repeats_ends_the_group() -> None:
    # Died, restarted, stalled again, died again: each death gets its own lead-up.
    text = "\n".join([ARGS, *stalls(3), *DEATH, ARGS, *stalls(2, start=30), *DEATH]) + "\n"
    analysis = analyze(text)
    assert len(analysis.findings) == 2
    assert [(m, n) for m, n, _ in groups_of(text)] == [("shm-broadcast-stall", 3), ("shm-broadcast-stall", 2)]


def check(text: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", *args, "-"],
        input=text.encode("utf-8"),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    return result.stdout.decode("utf-8")


def test_check_reports_a_repeated_precursor_once_with_its_count() -> None:
    text = "\n".join([ARGS, *stalls(6), *DEATH]) + "\n"
    report = check(text, "--color", "never")
    notes = [line for line in report.splitlines() if "precursor" in line]
    assert notes == [
        "<stdin>:2: note: precursor shm-broadcast-stall — Processes stopped making progress (6 times, lines 2–7)"
    ]
    [file] = json.loads(check(text, "--format", "json"))["files"]
    [entry] = file["precursors"]
    assert {k: entry[k] for k in ("line", "id", "title", "count", "lines")} == {
        "line": 2,
        "id": "shm-broadcast-stall",
        "title": "Processes stopped making progress",
        "count": 6,
        "lines": [2, 3, 4, 5, 6, 7],
    }
    assert file["summary"]["precursors"] == 1


CAPTURED = "(Worker_TP0 pid=8) INFO 03-03 19:00:30 [gpu_model_runner.py:6854] Graph capturing finished in 12 secs, took 0.92 GiB"
SERVING = "(APIServer pid=1) INFO 03-03 19:40:00 [launcher.py:1] Application startup complete."


def _text(lines: list[str], prefix: str = "") -> str:
    return "".join(prefix + line + "\n" for line in lines)


@pytest.mark.parametrize("prefix", ["", "vllm-1  | ", "2025-10-09T11:00:00.000000000Z stderr F "])
@pytest.mark.parametrize("count", [3, 12])
def test_a_start_up_that_ends_waiting_for_minutes_hung_where_the_wait_began(prefix: str, count: int) -> None:
    lines = [ARGS, CAPTURED, *stalls(count)]
    [finding] = analyze(_text(lines, prefix)).findings
    assert (finding.line, finding.rule_id) == (2, "shm-broadcast-stall")
    assert "hang" in finding.why and finding.confidence == "low"


def test_only_the_wait_that_ends_the_run_is_the_hang() -> None:
    """A wait while compiling that ended (a later lifecycle step) is not where the hang began."""
    lines = [ARGS, *stalls(2), CAPTURED, *stalls(4, start=10)]
    [finding] = analyze(_text(lines)).findings
    assert finding.line == 4


@pytest.mark.parametrize(
    "lines",
    [
        [ARGS, CAPTURED, *stalls(2)],  # (two minutes: a slow step as often as a hang)
        [ARGS, CAPTURED, *stalls(5), SERVING],  # (the wait ended: the server came up)
        [ARGS, CAPTURED, *stalls(5), *[f"(Worker_TP0 pid=8) unrelated output {i}" for i in range(80)]],
    ],
    ids=["short", "ended", "long-before-the-end"],
)
def test_a_wait_that_ended_was_short_or_lies_far_from_the_end_is_no_hang(lines: list[str]) -> None:
    assert analyze(_text(lines)).findings == ()


def test_a_run_that_died_keeps_its_death_and_a_hang_its_own_run() -> None:
    """Stall reports before an error that ended the run are its precursors, not a second death;
    the next run, which ends waiting, hung."""
    lines = [ARGS, *stalls(4), *DEATH, ARGS, *stalls(4, start=30)]
    died, hung = analyze(_text(lines)).findings
    assert died.line == 4 + len(DEATH)
    assert (hung.line, hung.rule_id) == (6 + len(DEATH), "shm-broadcast-stall")
