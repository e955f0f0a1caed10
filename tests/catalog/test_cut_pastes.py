"""Pastes cut short, as users post them in issues: the exception line without the traceback above it,
the error vLLM logged without the traceback under it, or only the API server's part of the output.

Where a message names its cause by itself, the cut paste names the same cause as the whole log: a
rule's `frames` that a chained exception's text meets are met by the root's own text too (it is one
of its chain's exceptions). Where it does not (a `KeyError` of a tensor name needs the loader's
frames), the whole log names it. An `EngineDeadError` with nothing of EngineCore's before it says
that the engine's error is missing, and stays a symptom where the log holds that error. A log that
ends inside a traceback, before its exception line, says so and where it was raised, unless something
was raised after it; a growing log reads that traceback again until its exception arrives.
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import Analyzer, analyze

HEAD = "INFO 01-01 00:00:00 [core.py:1] Initializing a V1 LLM engine (v0.10.1) with config: model='m'\n"
E = "(EngineCore_DP0 pid=11) ERROR 01-01 00:00:02 [core.py:1] "
A = "(APIServer pid=10) ERROR 01-01 00:00:03 [async_llm.py:1] "
OLD = "ERROR 12-09 00:49:29 engine.py:366] "  # vLLM 0.6's MQLLMEngine


def _traceback(prefix: str, frames: list[tuple[str, str]], *exception: str) -> str:
    """A traceback as `prefix`'s writer prints it: `frames` as (path, function), then the exception
    (none: a traceback the text ends inside)."""
    lines = ["Traceback (most recent call last):"]
    for path, function in frames:
        lines += [f'  File "{path}", line 1, in {function}', "    call()"]
    lines += exception
    return "".join(f"{prefix}{line}\n" for line in lines)


def _causes(text: str) -> list[str]:
    return [finding.rule_id for finding in analyze(text).findings]


SAMPLER = "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. "
SAMPLER_HINT = "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
INSPECT = "Error in inspecting model architecture 'LlamaForCausalLM'"
SUBPROCESS = (
    "subprocess.CalledProcessError: Command '['C:\\\\envs\\\\vllm\\\\python.exe', '-m', "
    "'vllm.model_executor.models.registry']' returned non-zero exit status 1."
)
ALLREDUCE = "RuntimeError: CUDA error at custom_all_reduce.cuh:307 'invalid argument'"
EAGLE = "AttributeError: 'EagleProposer' object has no attribute 'positions'"

# cause -> (the whole log, the pastes cut from it)
CUT = {
    "oom-sampler-warmup": (
        HEAD
        + E
        + "EngineCore failed to start.\n"
        + _traceback(
            E,
            [("/x/vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model")],
            SAMPLER + SAMPLER_HINT,
        ),
        [SAMPLER + "\n" + SAMPLER_HINT + "\n", SAMPLER.rstrip() + "\n"],
    ),
    "model-inspection-failed": (
        f"ERROR 10-26 11:35:32 registry.py:267] {INSPECT}\n"
        + _traceback(
            "ERROR 10-26 11:35:32 registry.py:267] ",
            [
                (
                    "D:\\envs\\vllm\\lib\\site-packages\\vllm\\model_executor\\models\\registry.py",
                    "_run_in_subprocess",
                )
            ],
            SUBPROCESS,
        ),
        [
            # (cut below the traceback's first frame)
            f"ERROR 10-26 11:35:32 registry.py:267] {INSPECT}\n"
            + "ERROR 10-26 11:35:32 registry.py:267] Traceback (most recent call last):\n"
            + 'ERROR 10-26 11:35:32 registry.py:267]   File "D:\\x\\registry.py", line 1, in _run_in_subprocess\n',
            SUBPROCESS + "\n",
            f"RuntimeError: {INSPECT}\n",
        ],
    ),
    "speculative-decoding-failure": (
        HEAD
        + E
        + "EngineCore encountered a fatal error.\n"
        + _traceback(E, [("/x/vllm/v1/spec_decode/eagle.py", "propose")], EAGLE),
        [EAGLE + "\n"],
    ),
    "custom-allreduce-failure": (
        HEAD
        + E
        + "EngineCore failed to start.\n"
        + _traceback(E, [("/x/vllm/distributed/parallel_state.py", "all_reduce")], ALLREDUCE),
        [ALLREDUCE + "\n"],
    ),
}


@pytest.mark.parametrize("cause", sorted(CUT))
def test_a_whole_log_and_its_cut_pastes_name_one_cause(cause: str) -> None:
    whole, pastes = CUT[cause]
    assert _causes(whole) == [cause]
    for paste in pastes:
        assert _causes(paste) == [cause], paste


LOADER_FRAMES = [
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/loader.py", "load_model"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py", "load_weights"),
]


@pytest.mark.parametrize(
    ("key", "cause"),
    [
        # bitsandbytes' quantization state beside a weight: the checkpoint is a `-bnb-4bit` one.
        ("layers.0.mlp.down_proj.weight.absmax", "bnb-checkpoint-not-loaded-as-bnb"),
        (
            "model.layers.3.self_attn.o_proj.weight.quant_state.bitsandbytes__nf4",
            "bnb-checkpoint-not-loaded-as-bnb",
        ),
        ("layers.0.mlp.down_proj.weight.quant_map", "bnb-checkpoint-not-loaded-as-bnb"),
        # The inner model's `load_weights` sees names without the outer `model.`.
        ("layers.62.mlp.down_proj.weight", "checkpoint-param-unexpected"),
        ("model.layers.0.mlp.experts.w13_weight", "checkpoint-param-unexpected"),
        ("encoder.blocks.1.attn.proj.bias", "checkpoint-param-unexpected"),
        # A quantizer's tensors for a layer vLLM keeps unquantized.
        ("layers.0.mlp.gate.qweight", "checkpoint-quantized-param-unexpected"),
    ],
)
def test_a_tensor_name_the_loader_does_not_know(key: str, cause: str) -> None:
    # vLLM 0.6 logs the exception's text (the key) above the traceback.
    log = f"{OLD}'{key}'\n" + _traceback(OLD, LOADER_FRAMES, f"KeyError: '{key}'")
    assert _causes(log) == [cause]


def test_a_key_error_outside_the_loader_is_no_checkpoint_mismatch() -> None:
    frames = [("/x/vllm/entrypoints/openai/serving_chat.py", "create_chat_completion")]
    log = HEAD + E + "EngineCore encountered a fatal error.\n" + _traceback(E, frames, "KeyError: 'a.b'")
    assert "checkpoint-param-unexpected" not in _causes(log)


DEAD = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."
API_SERVER_PART = _traceback(A, [("/x/vllm/v1/engine/async_llm.py", "output_handler")], DEAD)


@pytest.mark.parametrize(
    "log",
    [
        API_SERVER_PART,
        # (as the API server logs it: the symptom it logs above the traceback of the one raised)
        A + "AsyncLLM output_handler failed.\n" + API_SERVER_PART,
        DEAD + "\n",
        # (as pytest prints it, in a test suite that drives vLLM)
        "[2026-01-31T04:40:19Z] E           " + DEAD + "\n",
        # EngineCore's report of a worker that failed while starting
        _traceback(
            "(EngineCore_0 pid=13055) ",
            [("/x/vllm/v1/executor/multiproc_executor.py", "wait_for_ready")],
            "Exception: WorkerProc initialization failed due to an exception in a background process. "
            "See stack trace for root cause.",
        ),
    ],
)
def test_another_process_s_report_alone_says_its_error_is_missing(log: str) -> None:
    assert _causes(log) == ["error-not-in-log"]


@pytest.mark.parametrize("order", ["raised last", "raised first"])
def test_a_symptom_raised_stands_in_before_one_only_logged(order: str) -> None:
    """With no error of the failing process, the stand-in is the symptom raised as an exception
    (it says what failed) whether it comes before or after the one logged."""
    logged = A + "AsyncLLM output_handler failed.\n"
    raised = A + DEAD + "\n"
    log = logged + raised if order == "raised last" else raised + logged
    [finding] = analyze(log).findings
    assert (finding.rule_id, finding.line) == ("error-not-in-log", log.splitlines().index(raised.rstrip()))


def test_a_symptom_with_an_exit_code_stands_in_before_one_raised() -> None:
    died = "(APIServer pid=10) ERROR 01-01 00:00:04 [core_client.py:1] Engine core proc EngineCore_DP0 died unexpectedly (exit code: -9)\n"
    log = A + DEAD + "\n" + died
    [finding] = analyze(log).findings
    assert finding.line == 1


def test_a_report_stays_a_symptom_of_the_error_above_it() -> None:
    engine = (
        E
        + "EngineCore encountered a fatal error.\n"
        + _traceback(
            E,
            [("/x/vllm/v1/worker/gpu_model_runner.py", "execute_model")],
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        )
    )
    findings = analyze(HEAD + engine + API_SERVER_PART).findings
    assert [f.rule_id for f in findings] == ["illegal-memory-access"]


TOOL = "(APIServer pid=1) ERROR 12-24 17:16:37 [glm4_moe_tool_parser.py:123] "


@pytest.mark.parametrize(
    "exception", ["TypeError: expected string or buffer", "IndexError: list index out of range"]
)
def test_any_error_raised_in_a_tool_call_parser_is_the_parser_s(exception: str) -> None:
    frames = [
        (
            "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py",
            "chat_completion_full_generator",
        ),
        (
            "/usr/local/lib/python3.12/dist-packages/vllm/tool_parsers/glm4_moe_tool_parser.py",
            "extract_tool_calls",
        ),
    ]
    log = TOOL + "Failed to extract tool call spec\n" + _traceback(TOOL, frames, exception)
    [finding] = analyze(log).findings
    assert finding.rule_id == "tool-call-parser-crash"
    assert "glm4_moe" in finding.message


def test_an_error_in_serving_chat_alone_is_no_tool_call_parser_crash() -> None:
    frames = [("/x/vllm/entrypoints/openai/serving_chat.py", "chat_completion_full_generator")]
    log = (
        TOOL + "Error in chat completion\n" + _traceback(TOOL, frames, "IndexError: list index out of range")
    )
    assert "tool-call-parser-crash" not in _causes(log)


RAW = "(EngineCore_DP0 pid=11) "
RAW_FRAMES = [
    ("/x/vllm/v1/engine/core.py", "run_engine_core"),
    ("/x/vllm/v1/engine/core.py", "_initialize_kv_caches"),
    ("/x/vllm/v1/worker/gpu_worker.py", "determine_available_memory"),
]


@pytest.mark.parametrize("prefix", ["", RAW, "[rank0]: "])
def test_a_log_that_ends_inside_a_traceback_says_so(prefix: str) -> None:
    text = HEAD + _traceback(prefix, RAW_FRAMES)
    [finding] = analyze(text).findings
    assert finding.rule_id == "traceback-cut-off"
    assert finding.root.line == 1  # (the traceback's header)
    assert finding.evidence["raised_in"] == "/x/vllm/v1/worker/gpu_worker.py:1 in determine_available_memory"


def test_a_cut_traceback_in_a_known_component_is_that_component_s() -> None:
    frames = [*RAW_FRAMES[:1], ("/x/vllm/v1/spec_decode/eagle.py", "propose")]
    assert _causes(HEAD + _traceback(RAW, frames)) == ["speculative-decoding-failure"]


def test_a_cut_traceback_stands_in_only_where_nothing_was_raised_after_it() -> None:
    # Another writer's exception after the header: that writer's traceback is the death's; the
    # cut one (whose writer's lines go on interleaved to the end) is no candidate.
    other = "(Worker_TP1 pid=12) "
    text = (
        HEAD
        + RAW
        + "Traceback (most recent call last):\n"
        + _traceback(other, [("/x/vllm/v1/worker/gpu_model_runner.py", "execute_model")], EAGLE)
        + RAW
        + '  File "/x/vllm/v1/engine/core.py", line 1, in run_engine_core\n'
    )
    findings = analyze(text).findings
    assert [f.rule_id for f in findings] == ["speculative-decoding-failure"]
    assert findings[0].root.line == 5


def test_a_traceback_cut_after_an_error_vllm_logged_is_that_error() -> None:
    # (`logger.exception(e)` printed the error's text above the traceback)
    text = f"{OLD}'layers.0.mlp.down_proj.weight.absmax'\n" + _traceback(OLD, LOADER_FRAMES)
    assert "traceback-cut-off" not in _causes(text)


def test_a_growing_log_that_ends_inside_a_traceback_finds_its_exception_when_it_arrives() -> None:
    """At every cut of a growing log, the grown analysis is the fresh one: a cut traceback is
    read again as the log grows (an open traceback), and its exception replaces it."""
    text = HEAD + _traceback(RAW, RAW_FRAMES, SAMPLER + SAMPLER_HINT)
    fresh = Analyzer().analyze(text, line_table=True)
    assert [f.rule_id for f in fresh.findings] == ["oom-sampler-warmup"]
    cut_off = Analyzer().analyze(text[: text.index(SAMPLER)], line_table=True)
    assert [f.rule_id for f in cut_off.findings] == ["traceback-cut-off"]
    differ = []
    for cut in range(len(HEAD), len(text), 17):
        analyzer = Analyzer()
        before = analyzer.analyze(text[:cut], line_table=True)
        if analyzer.analyze(text[:cut], line_table=True) != before:
            differ.append(("again", cut))
        if analyzer.analyze(text, line_table=True, grown_from=text[:cut]) != fresh:
            differ.append(("grown", cut))
    assert differ == []


@pytest.mark.parametrize(
    "inner", ["index 1 is out of bounds for dimension 0 with size 1", "IndexError: list index out of range"]
)
def test_a_worker_error_carried_by_engine_core_is_not_named_by_the_wrapper_s_origin(inner: str) -> None:
    """EngineCore's `Worker failed with error 'X'`, the worker's own traceback not in the log: X
    is the error. Where the wrapper is raised (`multiproc_executor.py`, whose mined family is
    'setting up the distributed workers') says nothing of X."""
    log = HEAD + _traceback(
        E,
        [("/x/vllm/v1/executor/multiproc_executor.py", "collective_rpc")],
        f"RuntimeError: Worker failed with error '{inner}', please check the stack trace above for the root cause",
    )
    [finding] = analyze(log).findings
    assert finding.rule_id == "unrecognized"
    assert finding.origin is None or "multiproc_executor" not in finding.origin.summary


@pytest.mark.parametrize("heading", ["# ", "## [Issue #2190] ", "### "])
def test_a_markdown_heading_over_a_pasted_log_is_no_line_of_it(heading: str) -> None:
    """An issue's write-up titles the log it pastes with the error it shows (`# [Issue]: NCCL WARN
    Error while attaching to shared memory segment`). The title is a person's, no process's line:
    the log's own NCCL report is the root, as in the log alone (the title was taken for the first
    process to report the failure)."""
    worker = "(Worker pid=13740) ERROR 05-22 10:26:17 [multiproc_executor.py:870] "
    warn = (
        "[2026-05-22 10:26:17] d4fde3314201:13740:13740 [7] misc/shmutils.cc:132 NCCL WARN Error while "
        "attaching to shared memory segment /dev/shm/nccl-Ab (size 0), error: No such file or directory (2)"
    )
    pasted = (
        warn
        + "\n"
        + worker
        + "WorkerProc failed to start.\n"
        + _traceback(
            worker,
            [("/x/vllm/distributed/device_communicators/pynccl.py", "__init__")],
            "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        )
    )
    log = (
        f"{heading}[Issue]: NCCL WARN Error while attaching to shared memory segment\n\nThe log:\n\n{pasted}"
    )
    [finding] = analyze(log).findings
    assert finding.line == log.splitlines().index(warn)
    assert [finding.rule_id] == _causes(pasted)
