"""One phase for a death: its frames, else its last lifecycle marker, else unknown; and the outline's
timeline puts the death inside a segment of that same phase."""

from __future__ import annotations

import textwrap

import pytest

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.outline import build_outline
from vllm_log_lsp.core.phase import UNKNOWN, phase_words

HEAD = "(EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] "
INFO = "(EngineCore_DP0 pid=7) INFO 03-03 19:38:20 [{src}] "


def log(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def info(message: str, src: str = "gpu_model_runner.py:1") -> str:
    return INFO.format(src=src) + message


def traceback(frames: list[str], final: str) -> list[str]:
    lines = [HEAD + "EngineCore failed to start.", HEAD + "Traceback (most recent call last):"]
    for function in frames:
        lines.append(HEAD + f'  File "/vllm/v1/worker/gpu_worker.py", line 10, in {function}')
        lines.append(HEAD + "    x()")
    lines.append(HEAD + final)
    return lines


OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 312.00 MiB is free."
MARKERS = {
    "model_loading": "Starting to load model /m/qwen...",
    "torch_compile": "Dynamo bytecode transform time: 8.12 s",
    "cuda_graph_capture": "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%",
}


def timeline_phase_at(text: str, line: int) -> str | None:
    """The phase of the outline segment that holds `line` (None: no segment)."""
    [run] = [r for r in build_outline(text, analyze(text)) if r.start_line <= line <= r.end_line]
    marks = [m for m in run.phases if m.line <= line]
    return marks[-1].phase if marks else None


@pytest.mark.parametrize("marker_phase", sorted(MARKERS))
@pytest.mark.parametrize(
    ("frame", "frame_phase"),
    [
        ("determine_available_memory", "memory_profiling"),
        ("capture_model", "cuda_graph_capture"),
        ("load_model", "model_loading"),
        ("_dummy_sampler_run", "warmup"),
        ("step_with_batch_queue", "serving"),  # EngineCore's step with a batch queue (PP, async scheduling)
    ],
)
def test_frames_beat_the_last_marker_and_the_outline_agrees(
    marker_phase: str, frame: str, frame_phase: str
) -> None:
    lines = [
        info("non-default args: {'model': 'm'}", "utils.py:1"),
        info(MARKERS[marker_phase]),
        *traceback(["run_engine_core", frame], OOM),
    ]
    text = "\n".join(lines) + "\n"
    [finding] = analyze(text).findings
    assert finding.phase == frame_phase and finding.phase_source == "frames"
    assert finding.phase_line is None
    assert timeline_phase_at(text, finding.line) == frame_phase
    assert "from the root cause's stack frames" in phase_words(finding)


@pytest.mark.parametrize("marker_phase", sorted(MARKERS))
def test_without_telling_frames_the_last_marker_names_the_phase(marker_phase: str) -> None:
    lines = [
        info("non-default args: {'model': 'm'}", "utils.py:1"),
        info(MARKERS[marker_phase]),
        *traceback(["run_engine_core", "some_helper"], OOM),
    ]
    text = "\n".join(lines) + "\n"
    [finding] = analyze(text).findings
    assert (finding.phase, finding.phase_line, finding.phase_source) == (marker_phase, 1, "marker")
    assert timeline_phase_at(text, finding.line) == marker_phase
    assert phase_words(finding).endswith("(entered on line 2)")


@pytest.mark.parametrize(
    "text",
    [
        OOM + "\n",  # a one-line paste
        "\n".join(traceback(["run_engine_core", "some_helper"], OOM)) + "\n",  # frames that do not tell
        'Traceback (most recent call last):\n  File "x.py", line 1, in main\nValueError: bad value\n',
    ],
)
def test_no_marker_and_no_telling_frame_is_unknown_not_startup(text: str) -> None:
    [finding] = analyze(text).findings
    assert finding.phase == UNKNOWN and finding.phase_source == "unknown"
    assert phase_words(finding).startswith("unknown")
    assert timeline_phase_at(text, finding.line) is None  # no segment claims it


def test_a_later_marker_after_the_death_does_not_claim_it() -> None:
    lines = [
        info("non-default args: {'model': 'm'}", "utils.py:1"),
        info(MARKERS["torch_compile"]),
        *traceback(["run_engine_core", "determine_available_memory"], OOM),
        info(MARKERS["cuda_graph_capture"]),  # e.g. another process still going
    ]
    text = "\n".join(lines) + "\n"
    [finding] = analyze(text).findings
    assert timeline_phase_at(text, finding.line) == "memory_profiling"
    [run] = build_outline(text, analyze(text))
    death_mark = next(m for m in run.phases if m.phase == "memory_profiling")
    assert death_mark.line == 3  # entered at the root's traceback header, not earlier
    assert [m.phase for m in run.phases] == [
        "startup",
        "torch_compile",
        "memory_profiling",
        "cuda_graph_capture",
    ]


def test_unknown_phase_rules_out_phase_bound_rules() -> None:
    # An OOM with no phase is the generic device OOM, not the serving one.
    [finding] = analyze(OOM + "\n").findings
    assert finding.rule_id == "device-oom"


WORKER = "(VllmWorker TP0 pid=9) ERROR 03-03 19:38:29 [multiproc_executor.py:671] "
FAILED = (
    "RuntimeError: Format of weight in npu_grouped_matmul is FRACTAL_NZ, current CANN version do not support"
)


def carried_death(frame: str, message: str = FAILED, quoted: str | None = None) -> list[str]:
    """A worker's error logged without a stack, then EngineCore's RPC wrapper quoting it."""
    quoted = message.split(": ", 1)[1] if quoted is None else quoted
    return [
        WORKER + message,
        *traceback(
            ["run_engine_core", frame, "collective_rpc"],
            f"RuntimeError: Worker failed with error '{quoted}', please check the stack trace above for the root cause",
        ),
    ]


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ("determine_available_memory", "memory_profiling"),
        ("load_model", "model_loading"),
        ("capture_model", "cuda_graph_capture"),
    ],
)
def test_a_worker_error_without_a_stack_takes_the_phase_of_the_stack_that_carried_it(
    frame: str, expected: str
) -> None:
    """The worker logged its error with no traceback; EngineCore's wrapper quoting it was in the
    RPC that asked the worker for that step: its frames name the phase."""
    lines = carried_death(frame)
    text = "\n".join(lines) + "\n"
    [finding] = analyze(text).findings
    assert finding.line == 0  # the worker's own line is the root, not the wrapper
    assert (finding.phase, finding.phase_line, finding.phase_source) == (expected, None, "carrier")
    assert "carried the error on" in phase_words(finding)
    assert timeline_phase_at(text, finding.line) == expected


def test_a_marker_before_the_root_still_names_the_phase_of_a_carried_error() -> None:
    lines = [info(MARKERS["model_loading"]), *carried_death("determine_available_memory")]
    [finding] = analyze("\n".join(lines) + "\n").findings
    assert (finding.phase, finding.phase_source) == ("model_loading", "marker")


@pytest.mark.parametrize(
    "lines",
    [
        # a later exception that does not quote the root
        carried_death("determine_available_memory", quoted="something else went wrong on the worker"),
        # a root too short to be told from other messages' words
        carried_death("determine_available_memory", message="RuntimeError: failed"),
    ],
    ids=["not-quoted", "too-short"],
)
def test_only_an_exception_quoting_the_root_lends_it_a_phase(lines: list[str]) -> None:
    [finding] = analyze("\n".join(lines) + "\n").findings
    assert finding.line == 0 and finding.phase == UNKNOWN and finding.phase_source == "unknown"


def test_a_root_printed_after_the_death_has_the_phase_of_the_death() -> None:
    """A core dump's stack pasted below the log: the shutdown lines between the death and it are
    no phase the death was in."""
    from vllm_log_lsp.core.analyze import analyze

    lines = [
        "(APIServer pid=1) INFO 10-16 16:27:50 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
        '(APIServer pid=1) INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "(APIServer pid=1) ERROR 10-16 16:27:53 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
        "(APIServer pid=1) INFO:     Shutting down",
        "(APIServer pid=1) INFO:     Finished server process [1]",
        "",
        "Program terminated with signal SIGBUS, Bus error.",
    ]
    [finding] = analyze("\n".join(lines) + "\n").findings
    assert finding.line == 6 and finding.phase == "serving"
