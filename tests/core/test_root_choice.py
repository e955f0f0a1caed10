"""How the root cause of a death is chosen, on synthetic logs written from each principle.

Each mechanism is tested on variants (prefixes, line endings, versions' wordings), not on the
fixture that revealed it:
- a death with no symptom line (the run ends after a fatal error; a traceback cut after the
  message `logger.exception` printed; a stop before the server ever served);
- exceptions the process survived (asyncio's unretrieved-task reports, logging's own errors,
  a later lifecycle marker or answered request of the same writer) are not the cause;
- an original error over a timeout that waited on it;
- every choice says why, what else was considered, and how sure it is.
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze

# Runtime prefixes a line can carry (none, docker compose, Kubernetes CRI).
PREFIXES = ["", "vllm-1  | ", "2025-02-07T03:25:19.123456789Z stderr F "]
ENDINGS = ["\n", "\r\n"]


def _log(lines: list[str], prefix: str = "", ending: str = "\n") -> str:
    return ending.join(prefix + line for line in lines) + ending


def _roots(text: str) -> list[str]:
    return [f.root_text for f in analyze(text).findings]


V0_PROFILE = [
    "INFO 02-07 03:25:10 llm_engine.py:249] Initializing an LLM engine (v0.7.2) with config: model='m'",
    "INFO 02-07 03:25:12 model_runner.py:1072] Starting to load model m...",
    "INFO 02-07 03:25:18 model_runner.py:1077] Loading model weights took 14.2 GB",
]

CUT_TRACEBACK = [
    "ERROR 02-07 03:25:19 engine.py:389] {message}",
    "ERROR 02-07 03:25:19 engine.py:389] Traceback (most recent call last):",
    'ERROR 02-07 03:25:19 engine.py:389]   File "/x/vllm/engine/multiprocessing/engine.py", line 380, in run_mp_engine',
    "ERROR 02-07 03:25:19 engine.py:389]     engine = MQLLMEngine.from_engine_args(engine_args=engine_args,",
    'ERROR 02-07 03:25:19 engine.py:389]   File "/x/vllm/worker/worker.py", line 229, in determine_num_available_blocks',
    "ERROR 02-07 03:25:19 engine.py:389]     self.model_runner.profile_run()",
]

MESSAGES = [
    "CUDA out of memory. Tried to allocate 150.00 MiB. GPU 0 has a total capacity of 14.58 GiB of which 95.56 MiB is free.",
    "The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (37696).",
    "invalid literal for int() with base 10: 'tcp://10.0.0.1:8000'",
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("message", MESSAGES)
def test_a_traceback_cut_after_logger_exception_is_a_death_with_its_message(
    prefix: str, ending: str, message: str
) -> None:
    lines = V0_PROFILE + [line.format(message=message) for line in CUT_TRACEBACK]
    analysis = analyze(_log(lines, prefix, ending))
    assert [f.root_text for f in analysis.findings] == [message]
    finding = analysis.findings[0]
    assert finding.line == len(V0_PROFILE)
    assert "cut before its last line" in finding.why
    assert finding.phase == "memory_profiling"  # from the cut traceback's frames


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    "tail",
    [
        ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB."],
        [
            '  File "/x/vllm/worker/model_runner.py", line 1100, in load_model',
            "    self.model = get_model(vllm_config=self.vllm_config)",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB.",
        ],
        [
            "ERROR 03-25 21:01:39 engine.py:389] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB."
        ],
    ],
    ids=["bare-line", "traceback-tail", "logged-line"],
)
def test_a_log_that_ends_in_a_fatal_error_is_a_death(prefix: str, tail: list[str]) -> None:
    text = _log(V0_PROFILE + tail, prefix)
    assert _roots(text) == ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB."]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_an_error_followed_by_normal_progress_is_no_death(prefix: str) -> None:
    lines = [
        *V0_PROFILE[:2],
        "ERROR 02-07 03:25:13 weight_utils.py:90] Error retrieving safetensors: Repo id must use alphanumeric chars",
        "ERROR 02-07 03:25:13 weight_utils.py:90] Traceback (most recent call last):",
        'ERROR 02-07 03:25:13 weight_utils.py:90]   File "/x/huggingface_hub/utils/_validators.py", line 154, in validate_repo_id',
        "ERROR 02-07 03:25:13 weight_utils.py:90]     raise HFValidationError(",
        "ERROR 02-07 03:25:13 weight_utils.py:90] huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars",
        V0_PROFILE[2],
        "INFO 02-07 03:25:30 api_server.py:937] Starting vLLM API server on http://0.0.0.0:8000",
    ]
    assert _roots(_log(lines, prefix)) == []


@pytest.mark.parametrize("status", ["500 Internal Server Error", "400 Bad Request", "200 OK"])
def test_a_request_error_the_server_answered_is_no_death(status: str) -> None:
    lines = [
        "(APIServer pid=7) ERROR 09-01 10:00:00 [serving_chat.py:222] Error in preprocessing prompt inputs",
        "(APIServer pid=7) Traceback (most recent call last):",
        '(APIServer pid=7)   File "/x/vllm/entrypoints/openai/serving_chat.py", line 210, in create_chat_completion',
        "(APIServer pid=7)     raise ValueError(msg)",
        "(APIServer pid=7) ValueError: This model's maximum context length is 4096 tokens.",
        f'(APIServer pid=7) INFO:     10.0.0.2:5100 - "POST /v1/chat/completions HTTP/1.1" {status}',
    ]
    assert _roots(_log(lines)) == []


ASYNCIO_REPORT = [
    "Task exception was never retrieved",
    "future: <Task finished name='Task-2' coro=<MQLLMEngineClient.run_output_handler_loop() done> exception=ZMQError()>",
    "Traceback (most recent call last):",
    '  File "/x/vllm/engine/multiprocessing/client.py", line 184, in run_output_handler_loop',
    "    while await self.output_socket.poll(timeout=VLLM_RPC_TIMEOUT",
    "zmq.error.ZMQError: Operation not supported",
]

LOGGING_ERROR = [
    "--- Logging error ---",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/logging/__init__.py", line 1160, in emit',
    "    msg = self.format(record)",
    "TypeError: not all arguments converted during string formatting",
    "Call stack:",
]

REAL_DEATH = [
    "ERROR 01-16 18:12:00 engine.py:366] RuntimeError: CUDA error: an illegal memory access was encountered",
    "Traceback (most recent call last):",
    '  File "/x/vllm/entrypoints/openai/api_server.py", line 210, in build_async_engine_client_from_engine_args',
    "    raise RuntimeError(",
    "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
]


@pytest.mark.parametrize("survived", [ASYNCIO_REPORT, LOGGING_ERROR], ids=["asyncio", "logging"])
def test_a_traceback_the_process_survived_is_not_the_cause(survived: list[str]) -> None:
    analysis = analyze(_log(V0_PROFILE + survived + REAL_DEATH))
    [finding] = analysis.findings
    assert finding.root_text == "RuntimeError: CUDA error: an illegal memory access was encountered"
    survived_line = len(V0_PROFILE) + len(survived) - (2 if survived is LOGGING_ERROR else 1)
    reasons = {c.line: c.why_not for c in finding.considered}
    assert survived_line in reasons, reasons


def test_a_survived_consequence_stands_in_when_nothing_else_explains_the_death() -> None:
    # The engine vanished without a word; only its client's closed socket is left.
    [finding] = analyze(_log(V0_PROFILE + ASYNCIO_REPORT + REAL_DEATH[1:])).findings
    assert finding.root_text == "zmq.error.ZMQError: Operation not supported"
    assert "nothing else explains the death" in finding.why
    assert finding.confidence != "high"


@pytest.mark.parametrize(
    "timeout",
    [
        "TimeoutError: RPC call to execute_model timed out.",
        "RuntimeError: Worker did not respond within 300 s: timed out",
    ],
)
def test_the_error_waited_on_wins_over_the_timeout(timeout: str) -> None:
    lines = [
        f"(EngineCore_DP0 pid=10) ERROR 09-01 10:00:00 [core.py:700] {timeout}",
        "(Worker_TP1 pid=12) ERROR 09-01 10:00:01 [multiproc_executor.py:600] ValueError: bad shape for layer 3",
        "(EngineCore_DP0 pid=10) ERROR 09-01 10:00:02 [core.py:710] EngineCore encountered a fatal error.",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.root_text == "ValueError: bad shape for layer 3"
    assert any("timeout" in c.why_not for c in finding.considered)


STARTUP = [
    "(APIServer pid=1) INFO 09-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
    "(EngineCore_DP0 pid=2) INFO 09-01 10:00:05 [gpu_model_runner.py:1] Starting to load model m...",
]


def test_a_stop_before_the_server_served_is_a_death_and_after_it_is_not() -> None:
    stop = "(APIServer pid=1) KeyboardInterrupt: terminated"
    [finding] = analyze(_log([*STARTUP, stop])).findings
    assert finding.root_text.endswith("terminated")
    served = [
        *STARTUP,
        "(APIServer pid=1) INFO 09-01 10:01:00 [launcher.py:1] Application startup complete.",
        '(APIServer pid=1) INFO:     10.0.0.2:5100 - "POST /v1/completions HTTP/1.1" 200 OK',
        stop,
    ]
    assert _roots(_log(served)) == []


def test_check_json_says_why_and_what_else_was_considered(tmp_path) -> None:
    import json
    import subprocess
    import sys

    log = tmp_path / "x.log"
    log.write_text(_log(V0_PROFILE + LOGGING_ERROR + REAL_DEATH))
    out = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(log)],
        capture_output=True,
        text=True,
    )
    root = json.loads(out.stdout)["files"][0]["incidents"][0]["root_cause"]
    assert root["confidence"] in ("high", "medium", "low") and root["why"]
    assert any("logging" in c["why_not"].lower() for c in root["considered"])
    assert all({"line", "text", "why_not"} <= set(c) for c in root["considered"])


@pytest.mark.parametrize(
    ("module", "fatal"),
    [
        (
            "vllm._C",
            "AttributeError: '_OpNamespace' '_C_utils' object has no attribute 'init_cpu_threads_env'",
        ),
        ("vllm._moe_C", "AttributeError: '_OpNamespace' '_moe_C' object has no attribute 'topk_softmax'"),
        ("vllm._C", "RuntimeError: operator _C::rms_norm does not exist"),
    ],
)
def test_a_warning_is_the_cause_when_the_fatal_error_names_what_it_names(module: str, fatal: str) -> None:
    warning = f'WARNING 08-13 09:55:12 [_custom_ops.py:20] Failed to import from {module} with ImportError("undefined symbol")'
    lines = [*V0_PROFILE[:2], warning, V0_PROFILE[2], f"ERROR 08-13 09:55:20 [core.py:1] {fatal}"]
    analysis = analyze(_log(lines))
    [finding] = analysis.findings
    assert finding.line == 2 and "Failed to import" in finding.root_text
    assert module in finding.why and any(c.line == 4 for c in finding.considered)
    assert all(p.line != 2 for p in analysis.precursors)  # not also shown as a precursor


def test_a_warning_about_something_else_stays_a_precursor() -> None:
    warning = 'WARNING 08-13 09:55:12 [_custom_ops.py:20] Failed to import from vllm._C with ImportError("x")'
    fatal = "ERROR 08-13 09:55:20 [core.py:1] ValueError: unknown quantization method 'fp5'"
    [finding] = analyze(_log([*V0_PROFILE[:2], warning, V0_PROFILE[2], fatal])).findings
    assert finding.root_text == "ValueError: unknown quantization method 'fp5'"


@pytest.mark.parametrize(
    "fatal",
    [
        "NotImplementedError: _C::rotary_embedding: attempted to run this operator with Meta tensors, but there "
        "was no fake impl or Meta kernel registered.",
        "NotImplementedError: _C::rms_norm.default: attempted to run this operator with Meta tensors, but there "
        "was no fake impl or Meta kernel registered. You may have run into this message while using torch.compile",
    ],
)
def test_an_op_that_is_registered_but_untraceable_is_not_blamed_on_a_failed_import(fatal: str) -> None:
    """`_C::op` lacking only a fake (Meta) kernel was registered (a platform plugin's op under
    `_C`, vLLM's own extension unused there): the failed `vllm._C` import did not take it away,
    and the op's own error is the root."""
    warning = 'WARNING 08-13 09:55:12 [_custom_ops.py:20] Failed to import from vllm._C with ImportError("x")'
    lines = [*V0_PROFILE[:2], warning, V0_PROFILE[2], f"ERROR 08-13 09:55:20 [core.py:1] {fatal}"]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == 4 and finding.rule_id == "custom-op-no-fake-kernel"


@pytest.mark.parametrize("signal", ["SIGSEGV", "SIGBUS", "SIGABRT"])
@pytest.mark.parametrize("prefix", ["", "(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=233, ip=10.0.0.5) "])
def test_a_failure_signal_dump_is_a_fatal_fault(signal: str, prefix: str) -> None:
    dump = f"{prefix}*** {signal} received at time=1762945937 on cpu 6 ***"
    later = f"{prefix}Fatal Python error: Segmentation fault"
    [finding] = analyze(_log([*STARTUP, dump, f"{prefix}PC: @ 0x7f0 (unknown)", later])).findings
    assert finding.line == len(STARTUP)


@pytest.mark.parametrize("kind", ["TimeoutError", "asyncio.exceptions.TimeoutError", "queue.Empty"])
def test_a_bare_exception_re_raised_with_words_is_told_by_the_worded_link(kind: str) -> None:
    short = kind.rsplit(".", 1)[-1]
    engine = "(EngineCore_DP0 pid=9) ERROR 11-25 12:06:16 [core.py:710] "
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/distributed/device_communicators/shm_broadcast.py", line 460, in acquire_read',
        f"    raise {short}",
        kind,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/executor/multiproc_executor.py", line 273, in collective_rpc',
        f'    raise {short}(f"RPC call to {{method}} timed out.") from e',
        f"{kind}: RPC call to execute_model timed out.",
    ]
    text = _log([engine + line for line in lines] + [engine + "EngineCore encountered a fatal error."])
    [finding] = analyze(text).findings
    assert finding.root_text == f"{kind}: RPC call to execute_model timed out."


def test_a_bare_exception_with_a_different_successor_stays_the_root() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 10, in execute_model',
        "    assert num_tokens > 0",
        "AssertionError",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/engine/core.py", line 20, in step',
        "RuntimeError: Worker failed with error '', please check the stack trace above for the root cause",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.root_text == "AssertionError"


@pytest.mark.parametrize("code", ["0;36", "1;33", "36"])
def test_colour_codes_that_lost_their_escape_byte_still_frame_the_process(code: str) -> None:
    worker = f"[{code}m(Worker_TP2 pid=7)[0;0m "
    engine = f"[{code}m(EngineCore_DP0 pid=3)[0;0m "
    lines = [
        worker + "Exception in thread Thread-3 (send_async):",
        worker + "Traceback (most recent call last):",
        worker + '  File "/x/vllm/distributed/kv_transfer/p2p_nccl_engine.py", line 513, in send_sync',
        worker + '    "shape": tensor.shape,',
        worker + "AttributeError: 'NoneType' object has no attribute 'shape'",
        engine + "ERROR 03-16 00:55:10 [core.py:868] TimeoutError: RPC call to execute_model timed out.",
        engine + "ERROR 03-16 00:55:10 [core.py:868] EngineCore encountered a fatal error.",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.root_text == "AttributeError: 'NoneType' object has no attribute 'shape'"
    assert finding.exception is not None and finding.exception.process == "Worker_TP2"


LEAKED = (
    "/usr/lib/python3.12/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: "
    "There appear to be {n} leaked semaphore objects to clean up at shutdown"
)


@pytest.mark.parametrize("n", [1, 3])
def test_an_exit_mid_start_up_with_only_leaked_semaphores_is_a_death_but_not_after_serving(n: int) -> None:
    leaked = LEAKED.format(n=n)
    [finding] = analyze(
        _log([*STARTUP, leaked, "  warnings.warn('resource_tracker: There appear to be %d '"])
    ).findings
    assert "leaked semaphore" in finding.root_text and finding.confidence == "low"
    served = [
        *STARTUP,
        "(APIServer pid=1) INFO 09-01 10:01:00 [launcher.py:1] Application startup complete.",
        leaked,
    ]
    assert _roots(_log(served)) == []


SERVED = [
    *STARTUP,
    "(APIServer pid=1) INFO 09-01 10:01:00 [launcher.py:1] Application startup complete.",
    '(APIServer pid=1) INFO:     10.0.0.2:5100 - "POST /v1/completions HTTP/1.1" 200 OK',
]
ENGINE_DIED = "(APIServer pid=1) ERROR 09-01 13:09:47 [core_client.py:600] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."
DEAD_RAISED = [
    "(APIServer pid=1) ERROR 09-01 13:09:47 [async_llm.py:546] AsyncLLM output_handler failed.",
    "(APIServer pid=1) ERROR 09-01 13:09:47 [async_llm.py:546] Traceback (most recent call last):",
    '(APIServer pid=1) ERROR 09-01 13:09:47 [async_llm.py:546]   File "/x/vllm/v1/engine/core_client.py", line 885, in get_output_async',
    "(APIServer pid=1) ERROR 09-01 13:09:47 [async_llm.py:546]     raise self._format_exception(outputs) from None",
    "(APIServer pid=1) ERROR 09-01 13:09:47 [async_llm.py:546] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
]
TEARDOWN = [
    "(APIServer pid=1) INFO:     Shutting down",
    "(APIServer pid=1) INFO:     Finished server process [1]",
]


@pytest.mark.parametrize(
    "after",
    [
        [LEAKED.format(n=1), "  warnings.warn('resource_tracker: There appear to be %d '"],
        ["(APIServer pid=1) KeyboardInterrupt: terminated"],
        [LEAKED.format(n=2).replace("semaphore", "shared_memory")],
    ],
)
@pytest.mark.parametrize("dead_raised", [False, True])
def test_a_stop_printed_after_vllm_reported_the_death_is_the_shutdown_s(
    after: list[str], dead_raised: bool
) -> None:
    """vLLM's report of which process died stands for a death with no error of its own; a stop or
    the resource tracker's leak report printed after it, as the program exits, is its shutdown."""
    lines = [*SERVED, ENGINE_DIED, *(DEAD_RAISED if dead_raised else []), *TEARDOWN, *after]
    for prefix in PREFIXES:
        [finding] = analyze(_log(lines, prefix)).findings
        assert finding.line == lines.index(ENGINE_DIED)
        assert finding.rule_id == "silent-process-death"
        assert finding.confidence == "low"


def test_a_process_s_exit_named_stands_in_before_an_engine_dead_error_raised() -> None:
    """With no error at all, the report that names the process that exited is the most telling
    symptom, before or after the API server's `EngineDeadError` (which names none)."""
    for order in ("report first", "report last"):
        lines = (
            [*SERVED, *DEAD_RAISED, ENGINE_DIED]
            if order == "report last"
            else [*SERVED, ENGINE_DIED, *DEAD_RAISED]
        )
        [finding] = analyze(_log(lines)).findings
        assert finding.line == lines.index(ENGINE_DIED), order


@pytest.mark.parametrize("prefix", ["", "(EngineCore_DP0 pid=5) ERROR 09-01 10:00:00 [core.py:1] "])
@pytest.mark.parametrize(
    ("details", "telling"),
    [
        (
            [
                "  Value error, Invalid repository ID or local directory specified: '/m'. [type=value_error, input_value=ArgsKwargs((), {})]"
            ],
            0,
        ),
        (
            [
                "max_model_len",
                "  Input should be a valid integer [type=int_type, input_value='4k', input_type=str]",
            ],
            1,
        ),
        (["  Assertion failed, tensor_parallel_size must divide 7 [type=assertion_error, input_value=3]"], 0),
    ],
)
def test_a_pydantic_error_points_at_the_line_that_states_the_reason(
    prefix: str, details: list[str], telling: int
) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/engine/arg_utils.py", line 1000, in create_model_config',
        "    return ModelConfig(",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        *details,
        "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
    ]
    [finding] = analyze(_log([prefix + line for line in lines])).findings
    assert finding.line == 4 + telling
    assert "validation error for ModelConfig" in finding.root_text


def test_a_kernel_assertion_before_the_device_side_assert_is_the_root() -> None:
    kernel = (
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [0,0,0], thread: [3,0,0] "
        'Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.'
    )
    worker = "(Worker_TP0 pid=3) ERROR 09-01 10:00:00 [multiproc_executor.py:1] "
    lines = [
        kernel,
        kernel.replace("[3,0,0]", "[4,0,0]"),
        worker + "Traceback (most recent call last):",
        worker + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 10, in execute_model',
        worker + "RuntimeError: CUDA error: device-side assert triggered",
        "(EngineCore_DP0 pid=2) ERROR 09-01 10:00:01 [core.py:1] EngineCore encountered a fatal error.",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == 0


@pytest.mark.parametrize("prefix", ["", "ERROR 01-01 10:00:00 engine.py:160] "])
@pytest.mark.parametrize(
    "symptom",
    [
        "ERROR 01-01 10:00:00 client.py:250] MQLLMEngine is already dead, terminating server process",
        "ERROR 01-01 10:00:00 async_llm_engine.py:60] Engine background task failed",
    ],
)
def test_a_bare_assertion_before_a_v0_symptom_is_the_root(prefix: str, symptom: str) -> None:
    lines = [
        "INFO 01-01 09:59:00 llm_engine.py:1] Initializing an LLM engine (v0.6.3) with config: model='m'",
        prefix + "Traceback (most recent call last):",
        prefix + '  File "/x/vllm/engine/multiprocessing/engine.py", line 200, in run_engine_loop',
        prefix + "    request_outputs = self.engine_step()",
        prefix + '  File "/x/vllm/core/scheduler.py", line 900, in _schedule_prefills',
        prefix + "    assert len(seq_groups) > 0",
        prefix + "AssertionError",
        symptom,
        'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.root_text) == (6, "AssertionError")
    assert finding.evidence.get("assertion") == "assert len(seq_groups) > 0"


# Outer prefixes no built-in format knows: each is learned from the log's own lines.
UNKNOWN_PREFIXES = [
    "Jan 07 10:00:{s:02d}.123456 gpu-node-3 ",
    "[pod/vllm-7d9f8b-x2x/vllm] ",
    "2025-01-07 10:00:{s:02d},123 [vllm] ",
    "job-123/worker-0: ",
]

MP_DEATH = [
    "(APIServer pid=1) INFO 01-07 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
    "(EngineCore_DP0 pid=2) INFO 01-07 10:00:01 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='m'",
    "(EngineCore_DP0 pid=2) INFO 01-07 10:00:02 [gpu_model_runner.py:1] Starting to load model m...",
    "(Worker_TP1 pid=4) INFO 01-07 10:00:03 [gpu_model_runner.py:1] Starting to load model m...",
    "(Worker_TP1 pid=4) ERROR 01-07 10:00:04 [multiproc_executor.py:1] WorkerProc failed to start.",
    "(Worker_TP1 pid=4) Traceback (most recent call last):",
    '(Worker_TP1 pid=4)   File "/x/vllm/v1/worker/gpu_worker.py", line 10, in load_model',
    "(Worker_TP1 pid=4)     self.model_runner.load_model()",
    "(Worker_TP1 pid=4) ValueError: weight shape [4096, 11008] does not match [4096, 5504]",
    "(EngineCore_DP0 pid=2) ERROR 01-07 10:00:05 [core.py:2] EngineCore failed to start.",
    "(EngineCore_DP0 pid=2) Traceback (most recent call last):",
    '(EngineCore_DP0 pid=2)   File "/x/vllm/v1/engine/core.py", line 20, in run_engine_core',
    "(EngineCore_DP0 pid=2)     raise e",
    "(EngineCore_DP0 pid=2) RuntimeError: Worker failed with error 'weight shape [4096, 11008] does not match [4096, 5504]'",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


@pytest.mark.parametrize("prefix", UNKNOWN_PREFIXES)
def test_an_unknown_outer_prefix_is_learned_from_the_log(prefix: str) -> None:
    text = "".join(prefix.format(s=n) + line + "\n" for n, line in enumerate(MP_DEATH))
    [finding] = analyze(text).findings
    assert finding.root_text == "ValueError: weight shape [4096, 11008] does not match [4096, 5504]"
    assert finding.exception is not None and finding.exception.process == "Worker_TP1"


@pytest.mark.parametrize("prefix", UNKNOWN_PREFIXES)
def test_a_learned_prefix_raises_no_alarm_on_a_healthy_log(prefix: str) -> None:
    healthy = [
        *MP_DEATH[:4],
        "(APIServer pid=1) INFO 01-07 10:01:00 [launcher.py:1] Application startup complete.",
        '(APIServer pid=1) INFO:     10.0.0.2:5100 - "POST /v1/completions HTTP/1.1" 200 OK',
    ]
    text = "".join(prefix.format(s=n) + line + "\n" for n, line in enumerate(healthy))
    assert analyze(text).findings == ()


# -- a collector's column before every line of a log with few vLLM lines -----------------------------
# What `kubectl logs --prefix`, stern (plain and coloured) and kubetail put before each line.
COLLECTOR_COLUMNS = [
    "[pod/vllm-7d9f8b-x2x/vllm] ",
    "vllm-7d9f8b-x2x vllm ",
    "\x1b[32mvllm-7d9f8b-x2x\x1b[0m \x1b[33mvllm\x1b[0m ",
    "[vllm-7d9f8b-x2x] ",
]

# An offline script's death: one vLLM line, then Python's bare traceback (no process prefix).
OFFLINE_DEATH = [
    "INFO 01-07 10:00:00 [__init__.py:216] Automatically detected platform cuda.",
    "Traceback (most recent call last):",
    '  File "/app/run.py", line 13, in <module>',
    "    llm = LLM(model='m', max_model_len=131072)",
    '  File "/x/vllm/entrypoints/llm.py", line 22, in __init__',
    "    self.llm_engine = LLMEngine.from_engine_args(engine_args)",
    '  File "/x/vllm/config.py", line 50, in __post_init__',
    "    raise ValueError(",
    "ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len "
    "(max_position_embeddings=32768 or model_max_length=None in model's config.json).",
]

# A message that goes on over indented lines (multiprocessing's, raised in a spawned child).
SPAWN_DEATH = [
    "INFO 01-07 10:00:00 [__init__.py:216] Automatically detected platform cuda.",
    "Traceback (most recent call last):",
    '  File "<string>", line 1, in <module>',
    '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 122, in spawn_main',
    "    exitcode = _main(fd, parent_sentinel)",
    '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 140, in _check_not_importing_main',
    "    raise RuntimeError('''",
    "RuntimeError:",
    "        An attempt has been made to start a new process before the",
    "        current process has finished its bootstrapping phase.",
    "",
    "        This probably means that you are not using fork to start your",
    "        child processes and you have forgotten to use the proper idiom",
    "        in the main module:",
]

# torch's own rank prefix after the column (a run under torchrun).
RANK_DEATH = [
    "INFO 01-07 10:00:00 [__init__.py:216] Automatically detected platform cuda.",
    "[rank1]: Traceback (most recent call last):",
    '[rank1]:   File "/app/run.py", line 13, in <module>',
    "[rank1]:     llm = LLM(model='m', tensor_parallel_size=2)",
    '[rank1]:   File "/x/vllm/distributed/parallel_state.py", line 40, in init',
    "[rank1]:     torch.distributed.barrier()",
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, "
    "unhandled cuda error, NCCL version 2.21.5",
]


def _answer(text: str) -> list[tuple[int, str, str, str | None]]:
    """Each finding's line, rule, root text and the process of its exception."""
    return [
        (f.line, f.rule_id, f.root_text, f.exception.process if f.exception else None)
        for f in analyze(text).findings
    ]


@pytest.mark.parametrize("column", COLLECTOR_COLUMNS)
@pytest.mark.parametrize("death", [OFFLINE_DEATH, SPAWN_DEATH, RANK_DEATH], ids=["offline", "spawn", "rank"])
def test_a_column_before_every_line_is_learned_with_few_vllm_lines(column: str, death: list[str]) -> None:
    """A log gathered from a pod has the pod's column before every line, also before the lines
    that start no vLLM line (`  File …`, a message's indented lines): it is learned from the
    few that do, and the answer is the one without it. The traceback's and the message's own
    indentation stays theirs; torch's `[rank1]: ` after the column is read as in any log."""
    plain = _answer(_log(death))
    assert plain and plain[0][1] != "unrecognized"
    assert _answer(_log(death, column)) == plain
    assert _answer(_log(death, column, "\r\n")) == plain


def test_a_column_on_some_lines_only_is_not_learned() -> None:
    """Learned from few vLLM lines only when it leads nearly every line: a column before half of
    them is not one."""
    from vllm_log_lsp.core.lines import learn_outer_prefix

    column = COLLECTOR_COLUMNS[0]
    half = [column + line if n % 2 else line for n, line in enumerate(OFFLINE_DEATH)]
    assert learn_outer_prefix(half) is None
    assert learn_outer_prefix([column + line for line in OFFLINE_DEATH]) is not None


@pytest.mark.parametrize("indent", ["    ", "\t", "> "])
@pytest.mark.parametrize("death", [OFFLINE_DEATH, SPAWN_DEATH, RANK_DEATH], ids=["offline", "spawn", "rank"])
def test_a_log_pasted_indented_answers_as_the_log(indent: str, death: list[str]) -> None:
    """A log pasted into a Markdown code block or a quote has the same indentation before every
    line: it is taken off exactly, the traceback keeps its own."""
    assert _answer(_log(death, indent)) == _answer(_log(death))


def test_every_corpus_log_answers_alike_under_a_collectors_column() -> None:
    """The corpus, each log under one of the columns in turn: the same deaths, root-cause lines
    and rules as without (healthy logs stay healthy)."""
    from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log

    logs = [p for folder in (CRASH, CRASH2, CRASH3, HEALTHY) for p in sorted(folder.glob("*.log"))]
    differ = []
    for at, path in enumerate(logs):
        text = read_log(path)
        column = COLLECTOR_COLUMNS[at % len(COLLECTOR_COLUMNS)]
        prefixed = "\n".join(column + line for line in text.split("\n"))
        plain = [(f.line, f.rule_id) for f in analyze(text).findings]
        if [(f.line, f.rule_id) for f in analyze(prefixed).findings] != plain:
            differ.append(path.name)
    assert not differ


def test_no_prefix_is_learned_where_the_known_formats_take_lines_apart() -> None:
    from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
    from vllm_log_lsp.core.lines import learn_outer_prefix

    logs = [p for folder in (CRASH, CRASH2, CRASH3, HEALTHY) for p in sorted(folder.glob("*.log"))]
    assert len(logs) > 80
    learned = {p.name: learn_outer_prefix(read_log(p).split("\n")[:400]) for p in logs}
    assert not {name: p.pattern for name, p in learned.items() if p is not None}


# -- a fatal error that defers to details printed elsewhere (NCCL's own WARN lines) ------------------
def _nccl_report(
    pid: int, dev: int, when: str = "[2026-05-22 10:26:17] ", file_line: bool = True
) -> list[str]:
    """One rank's NCCL_DEBUG report of a failed attach: the system call first, then what NCCL was
    doing, then the unwinding `-> 2` lines."""
    where = "misc/shmutils.cc:{} " if file_line else ""
    return [
        f"{when}host:{pid}:{pid} [{dev}] {where.format(93)}NCCL WARN Call to open failed : No such file or directory",
        "",
        f"{when}host:{pid}:{pid} [{dev}] {where.format(132)}NCCL WARN Error while attaching to shared memory "
        f"segment /dev/shm/nccl-Xy{pid} (size 0), error: No such file or directory (2)",
        f"host:{pid}:{pid} [{dev}] NCCL INFO transport/shm.cc:634 -> 2",
        f"host:{pid}:{pid} [{dev}] NCCL INFO group.cc:149 -> 2",
    ]


def _nccl_failure(pid: int, prefix: str = "") -> list[str]:
    head = f"{prefix}(Worker pid={pid}) ERROR 05-22 10:26:17 [multiproc_executor.py:870] "
    return [
        head + "WorkerProc failed to start.",
        head + "Traceback (most recent call last):",
        head + '  File "/x/vllm/distributed/device_communicators/pynccl_wrapper.py", line 382, in NCCL_CHECK',
        head + '    raise RuntimeError(f"NCCL error: {error_str}")',
        head + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ]


NCCL_INIT = [
    "(EngineCore_DP0 pid=9) INFO 05-22 10:26:10 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='m'",
    "host:13735:13735 [2] NCCL INFO Channel 00 : 2[2] -> 3[3] via SHM/direct/direct",
]


@pytest.mark.parametrize("file_line", [True, False])
@pytest.mark.parametrize("when", ["[2026-05-22 10:26:17] ", ""])
@pytest.mark.parametrize("ray", ["", "(RayWorkerWrapper pid=13737, ip=10.0.0.5) "])
def test_a_generic_nccl_error_is_told_by_the_first_ranks_own_report(
    file_line: bool, when: str, ray: str
) -> None:
    first = [ray + line if line else line for line in _nccl_report(13737, 4, when, file_line)]
    second = _nccl_report(13740, 7, when, file_line)
    lines = [*NCCL_INIT, *first, *second, *_nccl_failure(13740), *_nccl_failure(13737)]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == len(NCCL_INIT) + 2  # the first rank's attach error, not its `Call to open`
    assert "Error while attaching" in finding.root_text
    assert finding.rule_id == "nccl-shm-attach-failed"
    assert "only reports the failure" in finding.why
    assert any("NCCL error: unhandled system error" in c.text for c in finding.considered)


def test_nccl_advice_about_performance_is_not_a_failures_report() -> None:
    advice = 'host:233:233 [0] /src/init.cc:140 NCCL WARN NUMA auto balancing enabled which can lead to variability in the RCCL performance! Disable by "sudo sysctl kernel.numa_balancing=0"'
    [finding] = analyze(_log([*NCCL_INIT, advice, *_nccl_failure(13740)])).findings
    assert finding.root_text.startswith("RuntimeError: NCCL error: unhandled system error")


def test_nccl_warnings_before_the_last_lifecycle_step_are_not_this_failures_report() -> None:
    earlier = _nccl_report(13737, 4)
    progress = (
        "(EngineCore_DP0 pid=9) INFO 05-22 10:27:00 [gpu_model_runner.py:1] Starting to load model m..."
    )
    [finding] = analyze(_log([*NCCL_INIT, *earlier, progress, *_nccl_failure(13740)])).findings
    assert finding.root_text.startswith("RuntimeError: NCCL error")


def test_an_error_that_states_its_own_cause_keeps_it_after_nccl_warnings() -> None:
    fatal = "(Worker pid=13740) ERROR 05-22 10:26:17 [multiproc_executor.py:870] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    head = fatal.split("torch.")[0]
    lines = [
        *NCCL_INIT,
        *_nccl_report(13737, 4),
        head + "WorkerProc failed to start.",
        head + "Traceback (most recent call last):",
        head + '  File "/x/vllm/v1/worker/gpu_worker.py", line 1, in load_model',
        fatal,
    ]
    [finding] = analyze(_log(lines)).findings
    assert "CUDA out of memory" in finding.root_text


# -- the line that states the cause in words: CANN's `[Error]:` line over its error code ----------
def _cann_block(code: str = "EZ9903", words: str = "The aicore execution is abnormal.") -> list[str]:
    return [
        "[ERROR] 2025-08-28-02:40:01 (PID:1456, Device:0, RankID:-1) ERR00100 PTA call acl api failed",
        f"[Error]: {words} ",
        "        Rectify the fault based on the error information in the ascend log.",
        f"{code}: [PID: 1456] 2025-08-28-02:40:01.123.456 rtKernelLaunchWithHandleV2 failed: 507035",
        "        Solution: In this scenario, collect the plog when the fault occurs and locate the fault based on the plog.",
        "        TraceBack (most recent call last):",
    ]


ASCEND_START = [
    "(EngineCore_DP0 pid=9) INFO 08-28 02:33:00 [core.py:1] Initializing a V1 LLM engine (v0.10.0) with config: model='m'",
]


@pytest.mark.parametrize(
    "prefix", ["", "vllm-1  | ", "(Worker_TP0 pid=1456) ERROR 08-28 02:40:01 [multiproc_executor.py:654] "]
)
@pytest.mark.parametrize(
    ("code", "words"),
    [("EZ9903", "The aicore execution is abnormal."), ("EH9999", "The aicpu execution is abnormal.")],
)
def test_an_ascend_error_code_is_told_by_the_words_above_it(prefix: str, code: str, words: str) -> None:
    block = [prefix + line for line in _cann_block(code, words)]
    [finding] = analyze(_log([*ASCEND_START, *block])).findings
    assert finding.line == len(ASCEND_START) + 1
    assert finding.root_text.startswith(f"[Error]: {words}")
    assert code in finding.root_text  # the code still travels with it


def test_words_separated_from_the_code_by_a_blank_line_are_another_message() -> None:
    block = _cann_block()
    block.insert(3, "")
    [finding] = analyze(_log([*ASCEND_START, *block])).findings
    assert finding.line == len(ASCEND_START) + 4 and finding.root_text.startswith("EZ9903")


def test_a_python_exception_that_states_the_npu_error_stays_the_root() -> None:
    head = "(Worker_TP0 pid=1456) ERROR 08-28 02:40:01 [multiproc_executor.py:654] "
    error = (
        head
        + "RuntimeError: zero_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: call aclnnInplaceZero failed, error code is 561103"
    )
    tb = [
        head + "Traceback (most recent call last):",
        head + '  File "/x/vllm_ascend/worker/model_runner_v1.py", line 1, in execute_model',
        head + "    x.zero_()",
        error,
    ]
    [finding] = analyze(_log([*ASCEND_START, *tb, *[head + line for line in _cann_block()]])).findings
    assert finding.line == len(ASCEND_START) + 3


# -- a paste of a log's last lines, starting inside a traceback ---------------------------------------
HEADLESS_NCCL = [
    '  File "/x/vllm/distributed/device_communicators/pynccl.py", line 118, in all_reduce',
    "    self.nccl.ncclAllReduce(buffer_type(tensor.data_ptr()),",
    '  File "/x/vllm/distributed/device_communicators/pynccl_wrapper.py", line 223, in NCCL_CHECK',
    '    raise RuntimeError(f"NCCL error: {error_str}")',
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    "ERROR 10-30 13:46:29 api_server.py:186] RPCServer process died before responding to readiness probe",
]
HEADLESS_ENGINE = [
    '  File "/x/vllm/v1/engine/utils.py", line 1010, in wait_for_engine_startup',
    '    raise RuntimeError("Engine core initialization failed. "',
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]
WRITERS = ["", "(Worker_TP0 pid=4) ", "(EngineCore_DP0 pid=2) ERROR 05-22 10:26:17 [core.py:1] "]
TRACEBACK_LINE = "Traceback (most recent call last):"


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("frames", [HEADLESS_NCCL, HEADLESS_ENGINE], ids=["nccl", "engine"])
def test_a_frames_source_line_is_no_root_cause_without_its_header(writer: str, frames: list[str]) -> None:
    """A paste that starts inside a traceback has frames without their header. A frame's source
    line (`raise RuntimeError(f"NCCL error: {error_str}")`) is code, not a message: the root cause
    is the exception line, as it is with the header (before, the code line was named the root
    cause, its f-string placeholder quoted as the error)."""
    lines = [writer + line if n < len(frames) else line for n, line in enumerate(frames)]
    headless = analyze(_log(lines)).findings
    whole = analyze(_log([writer + TRACEBACK_LINE, *lines])).findings
    exception_line = next(n for n, line in enumerate(frames) if line.startswith("RuntimeError:"))
    assert [(f.line, f.root_text) for f in headless] == [(exception_line, frames[exception_line])]
    assert [(f.rule_id, f.root_text) for f in headless] == [(f.rule_id, f.root_text) for f in whole]


def test_an_indented_line_below_no_frame_is_still_read() -> None:
    """Only a line right below the same writer's frame line is taken for its code."""
    from vllm_log_lsp.core.lines import parse_line
    from vllm_log_lsp.core.scan import _frame_code
    from vllm_log_lsp.core.text import LogIndex

    text = _log(
        [
            '(A pid=1)   File "/x/a.py", line 1, in f',
            '(A pid=1)     raise RuntimeError(f"NCCL error: {e}")',
            '(B pid=2)     raise RuntimeError(f"NCCL error: {e}")',
            "(A pid=1) INFO 01-01 00:00:00 [a.py:1] waiting",
            "(A pid=1)     NCCL error: unhandled cuda error",
        ]
    )
    index = LogIndex(text)

    def code(number: int) -> bool:
        start = index.line_start(number)
        return _frame_code(index, parse_line(number, text.split("\n")[number]), start)

    assert code(1)
    assert not code(2)  # (another writer's line below the frame)
    assert not code(4)  # (below a message, not a frame)


FRAMES_SPAWN = [
    '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 122, in spawn_main',
    "    exitcode = _main(fd, parent_sentinel)",
    "               ^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 140, in _check_not_importing_main',
    "    raise RuntimeError('''",
    "RuntimeError:",
    "        An attempt has been made to start a new process before the",
    "        current process has finished its bootstrapping phase.",
]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("spacing", ["single", "double"])
@pytest.mark.parametrize(
    "frames", [HEADLESS_NCCL[:5], HEADLESS_ENGINE, FRAMES_SPAWN], ids=["nccl", "engine", "spawn"]
)
def test_a_traceback_without_its_header_is_read_from_its_first_frame(
    writer: str, spacing: str, frames: list[str]
) -> None:
    """Frames, their code and carets, then the exception (its message over indented lines), with
    no header above: read as the traceback they are, from the first frame, with the header's
    answer: the same cause, root text and frames. Written by one writer, single- or
    double-spaced (a copy with a blank line after each)."""

    def lines(with_header: bool) -> list[str]:
        body = [writer + line for line in ([TRACEBACK_LINE] if with_header else []) + frames]
        return [x for line in body for x in ([line, ""] if spacing == "double" else [line])]

    whole = analyze(
        _log(["INFO 01-07 10:00:00 [api_server.py:1] vLLM API server version 0.11.0", *lines(True)])
    )
    headless = analyze(
        _log(["INFO 01-07 10:00:00 [api_server.py:1] vLLM API server version 0.11.0", *lines(False)])
    )
    # (Double-spaced, the spawn message's lines are cut from it by the blank lines: none then.)
    assert whole.findings or (spacing == "double" and frames is FRAMES_SPAWN)
    assert [(f.rule_id, f.root_text) for f in headless.findings] == [
        (f.rule_id, f.root_text) for f in whole.findings
    ]
    frames_of = [
        tuple(fr.path for fr in f.exception.frames) if f.exception else () for f in headless.findings
    ]
    assert frames_of == [
        tuple(fr.path for fr in f.exception.frames) if f.exception else () for f in whole.findings
    ]
    # The frames are read as one traceback (one fold), as with the header.
    assert len(headless.folds) == len(whole.folds) == 1


@pytest.mark.parametrize("workers", [2, 4, 16])
@pytest.mark.parametrize("logged", [False, True], ids=["printed", "logged"])
def test_tracebacks_without_headers_printed_a_line_of_each_worker_in_turn_are_each_read(
    workers: int, logged: bool
) -> None:
    """Tensor-parallel workers that fail alike print their tracebacks at once, a line of each in
    turn; a paste that starts inside them holds no header. Each worker's frames are read back
    over the other workers' lines, as its whole traceback would be: the same cause and frames."""
    level = "ERROR 12-13 11:25:59 [multiproc_executor.py:822] " if logged else ""
    writers = [f"(Worker_TP{rank} pid={100 + rank}) {level}" for rank in range(workers)]

    def turns(with_header: bool) -> list[str]:
        lines = ([TRACEBACK_LINE] if with_header else []) + HEADLESS_NCCL[:5]
        return [writer + line for line in lines for writer in writers]

    head = "INFO 01-07 10:00:00 [api_server.py:1] vLLM API server version 0.11.0"
    whole = analyze(_log([head, *turns(True)]))
    headless = analyze(_log([head, *turns(False)]))
    assert [f.rule_id for f in whole.findings] == ["nccl-cuda-error"]
    assert [(f.rule_id, f.root_text) for f in headless.findings] == [
        (f.rule_id, f.root_text) for f in whole.findings
    ]
    [finding] = headless.findings
    assert finding.exception is not None
    assert [fr.path for fr in finding.exception.frames] == [
        fr.path for fr in whole.findings[0].exception.frames
    ]


def test_a_traceback_without_its_header_is_not_read_over_a_run_start() -> None:
    """The walk above an exception line passes over other writers' lines, never over a run start:
    frames above one belong to an earlier run. A log grown past the run start reads the same."""
    from vllm_log_lsp.core.analyze import Analyzer

    worker = "ocr-2  | (EngineCore_DP0 pid=36) "
    server = "(APIServer pid=387) INFO 09-21 21:35:59 [api_server.py:1] "
    lines = [
        worker + '  File "/x/vllm/v1/engine/core.py", line 1, in step',
        worker + "    outputs = self.step_fn()",
        server + "vLLM API server version 0.10.2",
        server + "non-default args: {'model_tag': 'm'}",
        worker + "IndexError: list index out of range",
    ]
    text = _log(lines)
    [finding] = analyze(text).findings
    assert finding.exception is None or not finding.exception.frames
    cut = text.index(server + "non-default")
    analyzer = Analyzer()
    analyzer.analyze(text[:cut])
    grown = analyzer.analyze(text, grown_from=text[:cut])
    assert [(f.line, f.rule_id) for f in grown.findings] == [(finding.line, finding.rule_id)]
    assert grown.folds == analyze(text).folds == ()


def test_an_exception_below_indented_text_that_is_no_frame_is_read_alone() -> None:
    """An exception line under an indented block with no frame line in reach (a dumped config)
    is no traceback's: it is read as a line of its own, as before."""
    from vllm_log_lsp.core.lines import parse_line
    from vllm_log_lsp.core.scan import _headless_start
    from vllm_log_lsp.core.text import LogIndex

    dumped = ["Config:", *[f"    key_{n}: {n}" for n in range(12)], "ValueError: bad config"]
    text = _log(dumped)
    index = LogIndex(text)
    last = len(dumped) - 1
    assert _headless_start(index, parse_line(last, dumped[last]), index.line_start(last)) is None
    # ... and a frame further up than a frame's code reaches is not taken either.
    far = ['  File "/x/a.py", line 1, in f', *dumped[1:]]
    index = LogIndex(_log(far))
    assert _headless_start(index, parse_line(last, far[last]), index.line_start(last)) is None


# vLLM 0.7-0.8's V1 EngineCore logged its traceback as one record under the symptom:
# `logger.error("EngineCore hit an exception: %s", traceback.format_exc())`.
_HIT = "ERROR 03-26 17:25:01 [core.py:340] "
_HIT_FRAMES = [
    '  File "/x/vllm/v1/engine/core.py", line 333, in run_engine_core',
    "    engine_core.run_busy_loop()",
    '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 1000, in execute_model',
    "    hidden_states = self.model(",
]
_FATAL = (
    "CRITICAL 03-26 17:25:01 [core_client.py:269] Got fatal signal from worker processes, shutting down. "
    "See stack trace above for root cause issue."
)


@pytest.mark.parametrize("after", [[], [_FATAL], [_FATAL, "Killed"]], ids=["alone", "fatal-signal", "killed"])
def test_a_traceback_logged_on_the_symptoms_own_line_holds_the_root(after: list[str]) -> None:
    """The traceback whose header is on the symptom's line belongs to the death, as one whose
    header is right below it does: its exception is the root, not shutdown noise after it."""
    exception = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 10.00 MiB is free."
    lines = [
        "INFO 03-26 17:20:00 [api_server.py:1] vLLM API server version 0.8.2",
        "INFO 03-26 17:24:00 [loggers.py:1] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 1 reqs",
        _HIT + "EngineCore hit an exception: Traceback (most recent call last):",
        *[_HIT + frame for frame in _HIT_FRAMES],
        _HIT + exception,
        _HIT,
        *after,
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (lines.index(_HIT + exception), "oom-serving")


@pytest.mark.parametrize(
    ("message", "waits"),
    [
        (
            "NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 107027",
            False,
        ),
        ("call to get_timeout_ms() failed", False),
        ("RPC call to execute_model timed out.", True),
        ("Timeout waiting for the workers", True),
        ("the store did not respond", True),
    ],
)
def test_a_wait_is_told_by_its_words_not_by_a_name_that_holds_one(message: str, waits: bool) -> None:
    """An error that waited on another process (a timeout) yields to that process's error; an
    API named `…WithTimeout` that failed waited on nothing."""
    from vllm_log_lsp.core.incidents import Candidate, _is_waiting
    from vllm_log_lsp.core.model import ExceptionEvent, Span

    event = ExceptionEvent(line=4, span=Span(4, 0, 10), type_name="RuntimeError", message=message, stream="w")
    assert _is_waiting(Candidate(event, tier=0)) is waits


def test_a_failed_api_whose_name_holds_timeout_is_the_root_before_the_fault_after_it() -> None:
    """e-007's shape (a vllm-ascend issue): the worker's RuntimeError from
    `AclrtSynchronizeStreamWithTimeout`, then the CANN error lines of its message."""
    worker = "(VllmWorker rank=2 pid=36130) ERROR 08-21 08:26:21 [multiproc_executor.py:546] "
    engine = "(EngineCore_DP0 pid=2) ERROR 08-21 08:26:21 [core.py:1] "
    lines = [
        worker + "WorkerProc hit an exception.",
        worker + "Traceback (most recent call last):",
        worker + '  File "/x/vllm/v1/worker/gpu_worker.py", line 1, in execute_model',
        worker + "    output = self.model_runner.execute_model()",
        worker
        + "RuntimeError: NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 107027",
        worker
        + "[ERROR] 2025-08-21-08:26:21 (PID:36130, Device:2, RankID:-1) ERR00100 PTA call acl api failed.",
        worker + "EE9999: Inner Error!",
        engine + "EngineCore encountered a fatal error.",
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (4, "ascend-runtime-error")


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("writer", ["(EngineCore_DP0 pid=2) ERROR 09-01 10:00:00 [core.py:1] ", "[rank0]: "])
def test_an_error_re_raised_by_the_torchscript_interpreter_is_read_from_the_end_of_its_message(
    prefix: str, writer: str
) -> None:
    """torch re-raises a failure inside a scripted or traced module as `The following operation
    failed in the TorchScript interpreter.`, its message going on with TorchScript's tracebacks
    and ending with the original error: that error is the root, not the wrapper."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/worker/model_runner.py", line 10, in execute_model',
        "    outputs = self.model(*args)",
        "RuntimeError: The following operation failed in the TorchScript interpreter.",
        "Traceback of TorchScript, serialized code (most recent call last):",
        '  File "code/__torch__/trace/spmd.py", line 17, in forward',
        "    return (nxd_model).forward(_0, )",
        "            ~~~~~~~~~~~~~~~~~~ <--- HERE",
        "",
        "Traceback of TorchScript, original code (most recent call last):",
        '  File "/x/site-packages/trace/spmd.py", line 237, in forward',
        "        result = model.forward(flattened_inputs)",
        "                 ~~~~~~~~~~~~~ <--- HERE",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.00 GiB "
        "of which 1.00 GiB is free.",
        "EngineCore encountered a fatal error.",
    ]
    [finding] = analyze(_log([writer + line for line in lines], prefix)).findings
    assert finding.root_text.startswith("RuntimeError: CUDA out of memory.")
    assert finding.line == 13


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize(
    ("inner", "rules"),
    [
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "15.00 GiB of which 1.00 GiB is free.",
            {"device-oom", "oom-profiling", "oom-cuda-graph-capture"},
        ),
        ("AssertionError: expected size 4 but got 8", {"torch-compile-failure"}),
    ],
)
def test_the_backends_own_error_under_backend_compiler_failed_is_its_message(
    prefix: str, ending: str, inner: str, rules: set[str]
) -> None:
    """torch.compile's `BackendCompilerFailed: backend='…' raised:` goes on with the backend's
    exception on the next line: read as its message, a known cause in it names the death, and
    torch.compile's failure is the answer otherwise."""
    core = "(EngineCore_DP0 pid=2) ERROR 09-01 10:00:00 [core.py:1] "
    lines = [
        core + "EngineCore failed to start.",
        core + "Traceback (most recent call last):",
        core + '  File "/x/torch/_dynamo/output_graph.py", line 1446, in _call_user_compiler',
        core + "    raise BackendCompilerFailed(self.compiler_fn, e) from e",
        core + "torch._dynamo.exc.BackendCompilerFailed: backend='<vllm.compilation.backends.VllmBackend "
        "object at 0x7f>' raised:",
        core + inner,
        core,
        core + 'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information',
    ]
    [finding] = analyze(_log(lines, prefix, ending)).findings
    assert finding.rule_id in rules
    assert finding.line == 4
    assert inner in finding.root_text


@pytest.mark.parametrize(
    "cancel",
    [
        "slurmstepd: error: *** JOB 6753 ON gpuh04 CANCELLED AT 2026-01-07T10:29:37 DUE TO TIME LIMIT ***",
        "slurmstepd: error: *** STEP 954640.28 ON node-021 CANCELLED AT 2026-07-16T19:29:42 ***",
        "slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2026-01-07T10:29:37 DUE TO PREEMPTION ***",
    ],
)
def test_slurm_cancelling_the_job_is_a_stop_not_a_rejected_command_line(cancel: str) -> None:
    """SLURM's daemon says `slurmstepd: error: *** JOB … CANCELLED …` when the job's time limit,
    a preemption or `scancel` ends it: a stop from outside (a death only before the server served),
    not argparse's `prog: error: …`."""
    [finding] = analyze(_log([*STARTUP, cancel])).findings
    assert finding.rule_id == "stopped-while-loading-weights"  # (the start-up's last step: loading)
    served = [
        *STARTUP,
        "(APIServer pid=1) INFO 09-01 10:01:00 [launcher.py:1] Application startup complete.",
        '(APIServer pid=1) INFO:     10.0.0.2:5100 - "POST /v1/completions HTTP/1.1" 200 OK',
        cancel,
    ]
    assert _roots(_log(served)) == []


def test_an_argparse_error_is_still_a_rejected_command_line() -> None:
    lines = ["api_server.py: error: unrecognized arguments: --enable-metrics"]
    [finding] = analyze(_log(lines)).findings
    assert finding.rule_id == "cli-unrecognized-arguments"


# A worker told to stop (its executor's signal handler raised, or Ctrl-C reached it) prints a
# chain whose original exception is the stop; the links after it follow from the stop.
_STOPPED_WORKER = [
    "{w} Traceback (most recent call last):",
    '{w}   File "/x/vllm/distributed/device_communicators/shm_broadcast.py", line 400, in acquire_read',
    "{w}     time.sleep(0.001)",
    '{w}   File "/x/vllm/v1/executor/multiproc_executor.py", line 380, in signal_handler',
    "{w}     raise SystemExit()",
    "{w} {stop}",
    "{w} ",
    "{w} During handling of the above exception, another exception occurred:",
    "{w} ",
    "{w} Traceback (most recent call last):",
    '{w}   File "/x/vllm/v1/executor/multiproc_executor.py", line 522, in worker_busy_loop',
    "{w}     output = func(*args, **kwargs)",
    "{w} RuntimeError: cancelled",
]
_FAILED_WORKER = [
    "{w} Traceback (most recent call last):",
    '{w}   File "/x/vllm/v1/worker/gpu_model_runner.py", line 1290, in execute_model',
    "{w}     valid_sampled_token_ids = sampled_token_ids.tolist()",
    "{w} {error}",
]
_ENGINE_DEAD = [
    "ERROR 05-02 10:05:02 [core.py:517] EngineCore encountered a fatal error.",
    "ERROR 05-02 10:05:02 [async_llm.py:420] AsyncLLM output_handler failed.",
    "ERROR 05-02 10:05:02 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
    "an issue. See stack trace (above) for the root cause.",
]
_SERVING = ["INFO 05-02 10:00:00 [api_server.py:1] vLLM API server version 0.9.1"]


def _worker(lines: list[str], rank: int, **fields: str) -> list[str]:
    writer = f"(VllmWorker rank={rank} pid={2200 + rank}) ERROR 05-02 10:05:00 [multiproc_executor.py:527]"
    header = f"{writer} WorkerProc hit an exception."
    return [header, *(line.format(w=writer, **fields) for line in lines)]


@pytest.mark.parametrize("stop", ["SystemExit", "SystemExit: 15", "KeyboardInterrupt"])
@pytest.mark.parametrize(
    "error",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ],
)
@pytest.mark.parametrize("stopped_first", [True, False])
def test_another_processs_error_wins_over_a_chain_that_began_with_a_stop(
    stop: str, error: str, stopped_first: bool
) -> None:
    """Each process writes its own traceback: the worker told to stop may print before the one
    whose error stopped it. Its chain (the stop, then what the stop broke) ranks as the stop."""
    stopped = _worker(_STOPPED_WORKER, 0, stop=stop)
    failed = _worker(_FAILED_WORKER, 1, error=error)
    middle = stopped + failed if stopped_first else failed + stopped
    assert _roots(_log(_SERVING + middle + _ENGINE_DEAD)) == [error]


@pytest.mark.parametrize("stop", ["SystemExit", "KeyboardInterrupt"])
def test_a_chain_that_began_with_a_stop_is_the_stop_when_nothing_else_failed(stop: str) -> None:
    """With no other error, the stop is the root (its first link, not what the stop broke), and
    the choice says the process was told to stop."""
    text = _log(_SERVING + _worker(_STOPPED_WORKER, 0, stop=stop) + _ENGINE_DEAD)
    (finding,) = analyze(text).findings
    assert finding.root_text == stop
    assert "told to stop" in finding.why


# A chain whose original exception is a library's bare error, and a later link (raised from it,
# or while handling it) that says what went wrong in words a rule knows.
_LINKED_CHAIN = [
    "Traceback (most recent call last):",
    '  File "/x/site-packages/{library}", line 403, in {function}',
    "    raise {short}",
    "{original}",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/x/site-packages/transformers/utils/hub.py", line 479, in cached_files',
    "    hf_hub_download(",
    "{worded}",
    "",
    "{between}",
    "",
    "Traceback (most recent call last):",
    '  File "/x/bin/vllm", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/x/site-packages/vllm/engine/arg_utils.py", line 1499, in create_engine_config',
    "    config = self.create_model_config()",
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}",
]
_LINKED = [
    (
        "requests/models.py",
        "raise_for_status",
        "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://hf-mirror.com/o/m/resolve/main/config.json",
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-6a07)",
        "hf-gated-repo",
    ),
    (
        "httpcore/_exceptions.py",
        "map_exceptions",
        "httpcore.ConnectError: [Errno 111] Connection refused",
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files.",
        "hf-hub-unreachable",
    ),
]


@pytest.mark.parametrize(("library", "function", "original", "worded", "cause"), _LINKED)
@pytest.mark.parametrize(
    "between",
    [
        "During handling of the above exception, another exception occurred:",
        "The above exception was the direct cause of the following exception:",
    ],
)
@pytest.mark.parametrize("prefix", ["", "(APIServer pid=29052) "])
def test_a_later_link_that_names_the_cause_stands_for_a_chain_whose_original_names_none(
    library: str, function: str, original: str, worded: str, cause: str, between: str, prefix: str
) -> None:
    """The original says only that a request failed; the link raised from it says why: that
    link is the root, and the original is listed as considered."""
    lines = [
        line.format(
            library=library,
            function=function,
            short=original.split(":")[0],
            original=original,
            worded=worded,
            between=between,
        )
        for line in _LINKED_CHAIN
    ]
    (finding,) = analyze(_log(lines, prefix)).findings
    assert (finding.rule_id, finding.root_text) == (cause, worded)
    assert original in [item.text for item in finding.considered]
    assert "names no cause" in finding.why


def test_an_original_a_rule_knows_stays_the_root_of_its_chain() -> None:
    """A chain whose original names its cause keeps it, whatever its later links say."""
    lines = [
        line.format(
            library="torch/cuda/memory.py",
            function="empty_cache",
            short="torch.OutOfMemoryError",
            original="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            worded="OSError: We couldn't connect to 'https://huggingface.co' to load this file.",
            between="During handling of the above exception, another exception occurred:",
        )
        for line in _LINKED_CHAIN
    ]
    (finding,) = analyze(_log(lines)).findings
    assert finding.root_text.startswith("torch.OutOfMemoryError")


def test_a_chain_whose_later_links_are_only_wrappers_keeps_its_unknown_original() -> None:
    """Only a link that names a cause stands in: a wrapper (`Engine core initialization
    failed`) never does, so an original no rule knows stays the root, told as unknown."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/site-packages/somelib/core.py", line 12, in run',
        "    raise FrobnicationError('bad frob')",
        "somelib.FrobnicationError: bad frob",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/bin/vllm", line 8, in <module>',
        "    sys.exit(main())",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    (finding,) = analyze(_log(lines)).findings
    assert (finding.rule_id, finding.root_text) == ("unrecognized", "somelib.FrobnicationError: bad frob")


# What a library prints at import when it catches an error and goes on (protobuf under
# TensorFlow): bare exception lines, no traceback, then the process's ordinary logging.
_IMPORT_NOISE = [
    "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'",
    "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'",
    "/x/site-packages/matplotlib/projections/__init__.py:63: UserWarning: Unable to import Axes3D.",
    "INFO 06-17 05:17:17 __init__.py:207] Automatically detected platform cuda.",
]
_V0_START = [
    "INFO 06-17 05:17:17 api_server.py:912] vLLM API server version 0.7.3",
    "INFO 06-17 05:17:17 api_server.py:913] args: Namespace(host=None, port=8080, model='m')",
]
_V0_DEATH = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
    "    return _run_code(code, main_globals, None,",
    '  File "/x/vllm/model_executor/model_loader/weight_utils.py", line 193, in get_quant_config',
    "    raise ValueError(",
    "ValueError: Cannot find the config file for awq",
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("ending", ENDINGS)
def test_bare_exception_lines_a_process_logged_past_are_neither_root_nor_death(
    prefix: str, ending: str
) -> None:
    """Before the banner (a prologue, not a run that died) and again after it (the engine
    process importing the same libraries), the bare lines are followed by their writer's
    ordinary logging: the traceback's exception is the one death's root."""
    lines = (
        _IMPORT_NOISE
        + _V0_START
        + _IMPORT_NOISE
        + ["INFO 06-17 05:17:26 config.py:549] Defaulting to 'generate'."]
    )
    findings = analyze(_log(lines + _V0_DEATH, prefix, ending)).findings
    assert [f.root_text for f in findings] == ["ValueError: Cannot find the config file for awq"]
    (finding,) = findings
    assert finding.rule_id == "quantization-config-missing"


def test_a_bare_exception_line_its_writer_never_logged_past_stays_a_candidate() -> None:
    """A bare line with no ordinary logging of its writer after it (a traceback torn from its
    lines by another process's output) is still the earliest error, and the root."""
    lines = [
        *_V0_START,
        "(Worker_TP3 pid=3) AttributeError: 'NoneType' object has no attribute 'shape'",
        "(Worker_TP1 pid=1) INFO 03-16 00:50:11 [p2p_nccl_engine.py:226] ncclCommInitRank Success",
        "(Worker_TP3 pid=3) Traceback (most recent call last):",
        '(Worker_TP3 pid=3)   File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner',
        "(Worker_TP3 pid=3)     self.run()",
        "(Worker_TP3 pid=3) RuntimeError: send failed",
        "ERROR 03-16 00:50:20 [core.py:1] EngineCore encountered a fatal error.",
    ]
    assert _roots(_log(lines))[0] == "AttributeError: 'NoneType' object has no attribute 'shape'"


_WRITE_UP_LOG = [
    "```",
    "INFO 05-02 10:00:00 [api_server.py:1] vLLM API server version 0.9.1",
    "ERROR 05-02 10:05:00 [core.py:517] EngineCore encountered a fatal error.",
    "ERROR 05-02 10:05:00 [core.py:517] Traceback (most recent call last):",
    'ERROR 05-02 10:05:00 [core.py:517]   File "/x/vllm/v1/engine/core.py", line 508, in run_engine_core',
    "ERROR 05-02 10:05:00 [core.py:517]     engine_core.run_busy_loop()",
    "ERROR 05-02 10:05:00 [core.py:517] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "ERROR 05-02 10:05:00 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
    "an issue. See stack trace (above) for the root cause.",
    "```",
]


@pytest.mark.parametrize(
    "prose",
    [
        "When I send 64 requests the server dies with `EngineDeadError` and clients get 500s.",
        "Sometimes it is `EngineCore failed to start.` instead, or `Segmentation fault (core dumped)`.",
        "The worker logs `WorkerProc hit an exception.` and then `KeyboardInterrupt` when I stop it.",
    ],
)
@pytest.mark.parametrize("where", ["above", "below"])
def test_a_message_quoted_in_a_code_span_of_a_write_up_is_no_death(prose: str, where: str) -> None:
    """A write-up around a pasted log names the messages it saw between backticks: vLLM never
    prints them so, and the one death is the pasted log's."""
    lines = [prose, "", *_WRITE_UP_LOG] if where == "above" else [*_WRITE_UP_LOG, "", prose]
    assert _roots(_log(lines)) == ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]


def test_a_message_outside_the_code_spans_of_its_line_still_counts() -> None:
    """Backticks elsewhere on the line (vLLM's own, around a flag) leave the message printed."""
    line = (
        "ERROR 05-02 10:05:00 [core.py:1] EngineCore failed to start. Try raising `--gpu-memory-utilization` "
        "(now `0.9`)."
    )
    findings = analyze(
        _log(["INFO 05-02 10:00:00 [api_server.py:1] vLLM API server version 0.9.1", line])
    ).findings
    assert [f.line for f in findings] == [1]  # (the death it reports, standing in for its cause)


NPU_SUFFIX = (
    "[ERROR] 2025-04-16-13:55:33 (PID:2867459, Device:-1, RankID:-1) ERR99999 UNKNOWN applicaiton exception"
)


@pytest.mark.parametrize("prefix", ["", "(APIServer pid=3100) "])
def test_torch_npus_unknown_exception_suffix_is_no_cause(prefix: str) -> None:
    """torch_npu prints `ERR99999 UNKNOWN applicaiton exception` under the message of any
    exception without an error code of its own: it repeats the exception above it, and is
    neither the root nor a candidate."""
    text = "\n".join(
        [
            prefix + "Traceback (most recent call last):",
            prefix + '  File "/x/vllm/engine/arg_utils.py", line 1126, in create_engine_config',
            prefix + "    device_config = DeviceConfig(device=self.device)",
            prefix + "RuntimeError: Failed to infer device type",
            prefix + NPU_SUFFIX,
        ]
    )
    [finding] = analyze(text + "\n").findings
    assert finding.line == 3 and finding.root_text.endswith("Failed to infer device type")
    assert all(c.line != 4 for c in finding.considered)


def test_an_echoed_outcome_with_the_npu_suffix_does_not_outrank_the_log_under_it() -> None:
    """An issue pastes the last lines it saw (the exception and torch_npu's suffix) above the
    whole log: the log's own failure is the root."""
    text = "\n".join(
        [
            "RuntimeError: Failed to infer device type",
            NPU_SUFFIX,
            "INFO 04-16 13:55:44 __init__.py:30] Available plugins for group vllm.platform_plugins:",
            "ERROR 04-16 13:55:44 __init__.py:46] Failed to load plugin ascend",
            "ERROR 04-16 13:55:44 __init__.py:46] Traceback (most recent call last):",
            'ERROR 04-16 13:55:44 __init__.py:46]   File "/x/vllm/plugins/__init__.py", line 42, in load_plugins_by_group',
            "ERROR 04-16 13:55:44 __init__.py:46]     func = plugin.load()",
            "ERROR 04-16 13:55:44 __init__.py:46] ModuleNotFoundError: No module named 'vllm_ascend'",
            "INFO 04-16 13:55:44 __init__.py:211] No platform detected, vLLM is running on UnspecifiedPlatform",
            "ERROR 04-16 13:55:44 engine.py:400] Failed to infer device type",
            "ERROR 04-16 13:55:44 engine.py:400] Traceback (most recent call last):",
            'ERROR 04-16 13:55:44 engine.py:400]   File "/x/vllm/config.py", line 1660, in __init__',
            'ERROR 04-16 13:55:44 engine.py:400]     raise RuntimeError("Failed to infer device type")',
            "ERROR 04-16 13:55:44 engine.py:400] RuntimeError: Failed to infer device type",
        ]
    )
    findings = analyze(text + "\n").findings
    assert findings and findings[0].line == 7 and findings[0].rule_id == "missing-python-module"


def _re_raised(context: str, final: str, link: str, prefix: str) -> list[str]:
    """A lookup's exception (`context`, raised in a library) chained to `final`, raised by a
    mapping's `__missing__` while vLLM's own frames called it."""
    return [
        prefix + line
        for line in [
            "EngineCore hit an exception: Traceback (most recent call last):",
            '  File "/x/site-packages/cachetools/__init__.py", line 68, in __getitem__',
            "    return self.__data[key]",
            "           ~~~~~~~~~~~^^^^^",
            context,
            "",
            link,
            "",
            "Traceback (most recent call last):",
            '  File "/x/vllm/v1/engine/core.py", line 380, in run_engine_core',
            "    engine_core.run_busy_loop()",
            '  File "/x/vllm/v1/engine/mm_input_cache.py", line 76, in get_and_update_p1',
            "    mm_input = self.mm_cache[mm_hash]",
            '  File "/x/site-packages/cachetools/__init__.py", line 97, in __missing__',
            "    raise KeyError(key)",
            final,
            "",
        ]
    ]


HANDLING = "During handling of the above exception, another exception occurred:"
DIRECT = "The above exception was the direct cause of the following exception:"
ENGINE_ERROR = "ERROR 07-01 17:00:59 [core.py:387] "


@pytest.mark.parametrize("link", [HANDLING, DIRECT])
@pytest.mark.parametrize("prefix", [ENGINE_ERROR, "(EngineCore_DP0 pid=9) " + ENGINE_ERROR])
@pytest.mark.parametrize(
    "key", ["'1ec007c256916d72e00681199e5e467a489a2b307e30b6dbbf168dc8d54f85bd'", "'0f3a9c2b1d4e5f60'"]
)
def test_an_exception_re_raised_as_itself_is_told_by_the_link_that_holds_the_callers_frames(
    link: str, prefix: str, key: str
) -> None:
    """The same type and message again (a `__missing__` re-raising the lookup's `KeyError`): one
    error, and the later link's frames say where in vLLM it failed."""
    error = f"KeyError: {key}"
    lines = [*STARTUP, *_re_raised(error, error, link, prefix)]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == len(STARTUP) + 15
    assert finding.rule_id == "multimodal-cache-miss"


@pytest.mark.parametrize(
    "final",
    [
        "KeyError: 'another-key'",
        "RuntimeError: cleanup failed while handling the lookup",
        "ValueError: '0f3a9c2b1d4e5f60'",
    ],
)
def test_a_different_error_raised_while_handling_one_leaves_the_first_the_root(final: str) -> None:
    """Another message or another type raised while handling the lookup's error: the first is
    the cause and stays the root."""
    lines = [*STARTUP, *_re_raised("KeyError: '0f3a9c2b1d4e5f60'", final, HANDLING, ENGINE_ERROR)]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == len(STARTUP) + 4


@pytest.mark.parametrize("prefix", ["", "[rank0]: "])
def test_an_error_re_raised_as_itself_by_a_wrapper_around_vllm_stays_where_vllm_raised_it(
    prefix: str,
) -> None:
    """A fine-tuning library loading vLLM catches its error and raises it again with the same
    words from its own frames: the first link's frames are vLLM's, where it failed."""
    error = "RuntimeError: Qwen2.5-VL does not support _Backend.FLASHINFER backend now."
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/models/qwen2_5_vl.py", line 255, in __init__',
        "    raise RuntimeError(",
        error,
        "",
        HANDLING,
        "",
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 79, in <module>',
        "    model, tokenizer = FastVisionModel.from_pretrained(",
        '  File "/usr/local/lib/python3.10/dist-packages/unsloth_zoo/vllm_utils.py", line 1690, in load_vllm',
        "    raise RuntimeError(error)",
        error,
    ]
    [finding] = analyze(_log([*STARTUP, *(prefix + line for line in lines)])).findings
    assert finding.line == len(STARTUP) + 3


@pytest.mark.parametrize(
    "actor", ["MapWorker(MapBatches(vLLMEngineStageUDF))", "MapWorker(ReadParquet->MapBatches(PrepareImage))"]
)
@pytest.mark.parametrize("cut_frame", [True, False])
def test_a_ray_data_worker_whose_name_holds_parentheses_is_one_writer(actor: str, cut_frame: bool) -> None:
    """Ray Data names a map worker by the operators it runs (`MapWorker(MapBatches(f))`): its
    lines are one writer's, and its traceback is read (here a paste that starts inside it, its
    first frame line cut from its prefix, as copied from a terminal)."""
    head = f"({actor} pid=674640) ERROR 10-19 12:18:50 [core.py:588] "
    rope = "/x/vllm/model_executor/layers/rotary_embedding.py"
    lines = [
        *(['File "/x/vllm/executor/ray_utils.py", line 135, in execute_model_ray'] if cut_frame else []),
        head + "    output = self.worker.model_runner.execute_model(",
        head + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 456, in _update_states',
        head + "    MRotaryEmbedding.get_input_positions_tensor(",
        head + f'  File "{rope}", line 1330, in _vl_get_input_positions_tensor',
        head + "    image_grid_thw[image_index][0],",
        head + "    ~~~~~~~~~~~~~~^^^^^^^^^^^^^",
        head + "IndexError: list index out of range",
        f"({actor} pid=674640) INFO 10-19 12:18:50 [ray_distributed_executor.py:128] Shutting down Ray distributed executor.",
        f"({actor} pid=674640) ERROR 10-19 12:18:50 [async_llm.py:419] AsyncLLM output_handler failed.",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == len(lines) - 3
    assert finding.rule_id == "multimodal-placeholder-without-item"


@pytest.mark.parametrize(
    ("error", "rule"),
    [
        (
            "ValueError: GGUF model with architecture ernie4_5-moe is not supported yet.",
            "gguf-architecture-unsupported",
        ),
        (
            "ValueError: GGUF model with architecture qwen3next is not supported yet.",
            "gguf-architecture-unsupported",
        ),
        (
            "OSError: /models/m does not appear to have a file named config.json. Checkout "
            "'https://huggingface.co//models/m/tree/None' for available files.",
            "model-config-missing",
        ),
        ("RuntimeError: the config holds an unexpected rope_scaling key 'mrope_interleaved'", None),
    ],
)
def test_a_config_read_at_start_up_is_not_speculative_decoding(error: str, rule: str | None) -> None:
    """vLLM reads every model's config through `maybe_override_with_speculators` (whether it is a
    speculators model): an error there is the config's, not speculative decoding's."""
    api = "(APIServer pid=162062) "
    site = "/root/miniconda3/envs/vllm/lib/python3.10/site-packages"
    lines = [
        "Traceback (most recent call last):",
        f'  File "{site}/vllm/engine/arg_utils.py", line 1351, in create_engine_config',
        "    maybe_override_with_speculators(",
        f'  File "{site}/vllm/transformers_utils/config.py", line 530, in maybe_override_with_speculators',
        "    config_dict, _ = PretrainedConfig.get_config_dict(",
        f'  File "{site}/transformers/modeling_gguf_pytorch_utils.py", line 431, in load_gguf_checkpoint',
        '    raise ValueError(f"GGUF model with architecture {architecture} is not supported yet.")',
        error,
    ]
    [finding] = analyze(_log([api + line for line in lines])).findings
    assert finding.rule_id == rule if rule else finding.rule_id != "speculative-decoding-failure"


@pytest.mark.parametrize("number", ["9:", "1204:"])
def test_a_grep_n_of_a_journal_is_taken_apart(number: str) -> None:
    """`journalctl -u vllm | grep -n …`: each line numbered by grep before the journal's prefix."""
    journal = "Feb 26 17:41:22 host-1 python3.12[409240]: (EngineCore_DP0 pid=409240) "
    lines = [
        f"{number}{journal}ValueError: Free memory on device cuda:0 (0.32/23.56 GiB) on startup is less than "
        "desired GPU memory utilization (0.9, 21.2 GiB). Decrease GPU memory utilization or reduce GPU memory "
        "used by other processes.",
        "67:Feb 26 17:41:24 host-1 systemd[1669]: vllm.service: Main process exited, code=exited, status=1/FAILURE",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.line == 0 and finding.rule_id == "gpu-memory-in-use"


@pytest.mark.parametrize("prefix", ["", "qwen36-nightly  | "])
@pytest.mark.parametrize("flags", [["api_key"], ["api_key", "ssl_keyfile"]])
def test_the_rust_frontends_refusal_far_above_its_death_is_the_root(prefix: str, flags: list[str]) -> None:
    """The Rust frontend refuses flags and exits at once; the launcher reports its death minutes
    later, after the engine started: the refusal is the cause."""
    lines = [
        STARTUP[0],
        "The following arguments are not implemented in Rust frontend yet:",
        *(f"- {flag}" for flag in flags),
        "",
        "Remove these arguments to continue.",
        *STARTUP[1:],
        "ERROR 06-01 21:42:59 [utils.py:550] Exception occurred while running API servers: Process RustFrontend "
        "(PID: 353) died with exit code 2",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/utils.py", line 537, in wait_for_completion_or_failure',
        "    raise RuntimeError(",
        "RuntimeError: Process RustFrontend (PID: 353) died with exit code 2",
    ]
    [finding] = analyze(_log([prefix + line for line in lines])).findings
    assert finding.line == 1 and finding.rule_id == "rust-frontend-unsupported-arguments"
    assert "`api_key`" in finding.message


@pytest.mark.parametrize("prefix", ["", "vllm-1  | "])
@pytest.mark.parametrize("tp", [1, 2])
def test_a_v0_heartbeat_that_finds_the_engine_loop_stalled_names_a_hang(prefix: str, tp: int) -> None:
    """V0's MQLLMEngine heartbeat says `Engine loop has died` when the loop has not come round for
    3 × VLLM_RPC_TIMEOUT without raising (an error would be sent instead): a step hung. The API
    server logs it with a traceback, then terminates itself."""
    client = "ERROR 03-12 06:01:27 client.py:250] "
    lines = [
        f"INFO 03-12 06:00:10 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: tensor_parallel_size={tp}",
        "INFO 03-12 06:00:56 engine.py:290] Added request chat-1.",
        client + "RuntimeError('Engine loop has died')",
        client + "Traceback (most recent call last):",
        client + '  File "/x/vllm/engine/multiprocessing/client.py", line 150, in run_heartbeat_loop',
        client + "    await self._check_success(",
        client + '  File "/x/vllm/engine/multiprocessing/client.py", line 314, in _check_success',
        client + "    raise response",
        client + "RuntimeError: Engine loop has died",
        "CRITICAL 03-12 06:01:36 launcher.py:99] MQLLMEngine is already dead, terminating server process",
        'INFO:     192.168.0.17:45520 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "INFO:     Shutting down",
    ]
    [finding] = analyze(_log(lines, prefix)).findings
    assert finding.rule_id == "v0-engine-loop-stalled"
    assert finding.line in (2, 8)
    assert "--disable-custom-all-reduce" in str(finding.fixes)


@pytest.mark.parametrize("gfx", ["gfx1101", "gfx1201"])
@pytest.mark.parametrize("prefix", ["", "vllm-ovis  | (APIServer pid=1) "])
def test_aiter_that_does_not_know_the_gpu_is_named_by_the_link_that_says_so(gfx: str, prefix: str) -> None:
    """AITER's chip lookup fails as a bare `KeyError` of the gfx name, re-raised as a `KeyError` that
    says the architecture is unknown, then wrapped in a `RuntimeError` that repeats it: the link
    that says so is the root, whichever link the chain starts with."""
    chip = "/usr/local/lib/python3.12/dist-packages/aiter/jit/utils/chip_info.py"
    unknown = (
        f"Unknown GPU architecture: {gfx}. Supported architectures: ['native', 'gfx90a', 'gfx942', 'gfx950']"
    )
    lines = [
        "INFO 11-20 09:59:38 [api_server.py:1978] vLLM API server version 0.11.2",
        "Traceback (most recent call last):",
        f'  File "{chip}", line 63, in get_gfx_custom_op_core',
        '    return gfx_mapping[line.split(":")[-1].strip()]',
        f"KeyError: '{gfx}'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        f'  File "{chip}", line 65, in get_gfx_custom_op_core',
        "    raise KeyError(",
        f'KeyError: "{unknown}"',
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/vllm/model_executor/layers/quantization/quark/schemes/quark_ocp_mx.py", line 51, in <module>',
        "    import aiter",
        f'  File "{chip}", line 71, in get_gfx_custom_op_core',
        '    raise RuntimeError(f"Get GPU arch from rocminfo failed {str(e)}")',
        f'RuntimeError: Get GPU arch from rocminfo failed "{unknown}"',
    ]
    [finding] = analyze(_log(lines, prefix)).findings
    assert finding.rule_id == "aiter-unsupported-gpu-arch"
    assert gfx in finding.message
    assert finding.line in (11, 20)


@pytest.mark.parametrize("device", ["CUDA", "NPU", "XPU"])
def test_a_device_initialised_before_the_fork_is_named_for_every_device(device: str) -> None:
    engine = "(EngineCore_DP0 pid=14421) ERROR 11-27 08:19:08 [core.py:708] "
    lines = [
        engine + "EngineCore failed to start.",
        engine + "Traceback (most recent call last):",
        engine + '  File "/x/vllm/v1/worker/worker_base.py", line 248, in init_worker',
        engine + "    self.worker = worker_class(**kwargs)",
        engine + f"RuntimeError: Cannot re-initialize {device} in forked subprocess. To use {device} with "
        "multiprocessing, you must use the 'spawn' start method",
    ]
    [finding] = analyze(_log(lines)).findings
    assert finding.rule_id == "cuda-reinit-in-forked-subprocess"
    assert device in finding.message


@pytest.mark.parametrize("prefix", ["", "(EngineCore_DP0 pid=243) ERROR 06-27 02:23:02 [core.py:1008] "])
def test_a_neuron_graph_that_ran_out_of_bounds_is_named_under_its_torchscript_frames(prefix: str) -> None:
    """The Neuron runtime's refusal ends a TorchScript traceback (`<--- HERE` marks and code
    without frames): the runtime error is the root, the API server's report a symptom."""
    lines = [
        "Traceback of TorchScript, original code (most recent call last):",
        '  File "/opt/conda/lib/python3.12/site-packages/neuronx_distributed/trace/spmd.py", line 32, in forward',
        "        if initialized:",
        "            output = self.models[bucket_idx].forward(inputs)",
        "                     ~~~~~~~~~~~~~~~~~~~~~~~ <--- HERE",
        "            return output",
        "RuntimeError: Failed to execute the model status=1006 message=Execution Out-Of-Bounds Memory Access",
    ]
    api = "(APIServer pid=41) ERROR 06-27 02:23:02 [async_llm.py:710] "
    log = _log([prefix + line for line in lines]) + _log(
        [
            api + "AsyncLLM output_handler failed.",
            api
            + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
        ]
    )
    [finding] = analyze(log).findings
    assert (finding.line, finding.rule_id) == (6, "neuron-execution-out-of-bounds")
    assert "1006" in finding.message


@pytest.mark.parametrize("prefix", ["", "(APIServer pid=147522) "])
def test_numa_binding_without_a_known_topology_is_named(prefix: str) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/engine/utils.py", line 197, in __init__',
        "    with numa_utils.configure_subprocess(",
        '  File "/x/vllm/utils/numa_utils.py", line 254, in _get_numa_node',
        "    raise RuntimeError(",
        "RuntimeError: NUMA binding was requested, but vLLM could not detect the GPU-to-NUMA topology "
        "automatically. Pass --numa-bind-nodes explicitly or disable --numa-bind.",
    ]
    text = _log([prefix + line for line in lines]) + "srun: error: node-1: task 0: Exited with exit code 1\n"
    [finding] = analyze(text).findings
    assert (finding.line, finding.rule_id) == (5, "numa-bind-topology-unknown")


KV_SIZED = [
    "(EngineCore pid=2) INFO 07-17 15:09:15 [kv_cache_utils.py:2216] GPU KV cache size: 400,000 tokens",
    "(EngineCore pid=2) INFO 07-17 15:09:15 [kv_cache_utils.py:2217] Maximum concurrency for 400,000 tokens per request: 1.00x",
]


@pytest.mark.parametrize(
    ("inner", "rule"),
    [
        ([("warmup/kernel_warmup.py", "flashinfer_autotune")], "oom-kernel-warmup"),
        (
            [
                ("warmup/kernel_warmup.py", "kernel_warmup"),
                ("warmup/deep_gemm_warmup.py", "deep_gemm_warmup"),
            ],
            "oom-kernel-warmup",
        ),
        ([("v1/worker/gpu_model_runner.py", "capture_model")], "oom-cuda-graph-capture"),
    ],
)
def test_an_oom_after_the_kv_cache_was_sized_is_told_by_the_warm_up_step_it_hit(
    inner: list[tuple[str, str]], rule: str
) -> None:
    """After the KV cache is sized vLLM warms up its kernels (autotuning), then captures CUDA
    graphs; both run dummy batches through the graph wrapper, so the frames of the step say which
    ran out of memory, not the lifecycle line before it."""
    worker = "(Worker_TP2 pid=5) ERROR 07-17 15:09:17 [multiproc_executor.py:1007] "
    frames = [
        ("v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
        *inner,
        ("v1/worker/gpu_model_runner.py", "_dummy_run"),
        ("compilation/cuda_graph.py", "__call__"),
    ]
    lines = [*KV_SIZED, worker + "Traceback (most recent call last):"]
    for path, function in frames:
        lines += [worker + f'  File "/x/vllm/{path}", line 1, in {function}', worker + "    call()"]
    lines.append(
        worker + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. "
        "GPU 2 has a total capacity of 95.00 GiB of which 510.31 MiB is free."
    )
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (len(lines) - 1, rule)


INSPECTION = [
    "Error in inspecting model architecture 'Gemma4ForConditionalGeneration'",
    "Traceback (most recent call last):",
    '  File "/x/vllm/model_executor/models/registry.py", line 1398, in _run_in_subprocess',
    "    returned.check_returncode()",
    "subprocess.CalledProcessError: Command '['/usr/bin/python3', '-m', 'vllm.model_executor.models.registry']' "
    "returned non-zero exit status 1.",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/x/vllm/model_executor/models/registry.py", line 1401, in _run_in_subprocess',
    "    raise RuntimeError(",
    "RuntimeError: Error raised in subprocess:",
]
SUBPROCESS_ERROR = [
    "Traceback (most recent call last):",
    '  File "/x/vllm/model_executor/models/registry.py", line 1424, in <module>',
    "    _run()",
    '  File "/x/vllm/vllm_flash_attn/__init__.py", line 33, in <module>',
    "    raise ImportError(",
    "ImportError: vllm.vllm_flash_attn requires the CUDA flash attention extensions (_vllm_fa2_C or _vllm_fa3_C). "
    "On ROCm, use upstream flash_attn.",
]
WARNING = (
    "<frozen runpy>:128: RuntimeWarning: 'vllm.model_executor.models.registry' found in sys.modules after "
    "import of package 'vllm.model_executor.models'"
)


@pytest.mark.parametrize("prefix", ["", "(APIServer pid=1) ERROR 06-10 23:08:47 [registry.py:963] "])
@pytest.mark.parametrize("warned", [False, True])
def test_a_subprocess_error_printed_in_its_reporters_message_is_the_root(prefix: str, warned: bool) -> None:
    """vLLM inspects a model in a subprocess and raises `RuntimeError: Error raised in subprocess:`
    with the subprocess's output as the rest of its message: the traceback printed there is the
    error that happened first; the parent's chain only reports it."""
    lines = [*INSPECTION, *([WARNING] if warned else []), *SUBPROCESS_ERROR]
    [finding] = analyze(_log([prefix + line for line in lines])).findings
    assert (finding.line, finding.rule_id) == (len(lines) - 1, "vllm-extension-not-built")
    assert "_vllm_fa2_C" in finding.message
    why_not = {c.line: c.why_not for c in finding.considered}
    assert "subprocess" in str(why_not[4])


@pytest.mark.parametrize(
    ("last", "writer"),
    [
        ("RuntimeError: Error raised in subprocess", ""),  # (no colon: the message embeds nothing)
        ("RuntimeError: Error raised in subprocess:", "(Worker pid=9) "),  # (another process's traceback)
    ],
)
def test_a_traceback_that_is_not_in_the_message_leaves_the_original_error(last: str, writer: str) -> None:
    lines = [*INSPECTION[:-1], last, *(writer + line for line in SUBPROCESS_ERROR)]
    findings = analyze(_log(lines)).findings
    assert findings[0].line == 4


@pytest.mark.parametrize(
    "error",
    [
        "RuntimeError: cutlass_gemm_caller, /workspace/csrc/libtorch_stable/quantization/w8a8/cutlass/c3x/"
        "cutlass_gemm_caller.cuh:62, Error Internal",
        "RuntimeError: Dummy run failed: cutlass_scaled_mm_sm80_epilogue, /workspace/csrc/quantization/w8a8/cutlass/"
        "scaled_mm_c2x.cu:89",
    ],
)
def test_a_cutlass_w8a8_kernel_that_fails_in_the_first_forward_pass_is_named(error: str) -> None:
    engine = "(EngineCore pid=292) ERROR 08-14 07:51:19 [core.py:1330] "
    lines = [
        "(EngineCore pid=292) INFO 08-14 07:46:38 [__init__.py:604] Selected CutlassFp8BlockScaledMMKernel for Fp8LinearMethod",
        engine + "EngineCore failed to start.",
        engine + "Traceback (most recent call last):",
        engine + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 1, in profile_run',
        engine + "    self._dummy_run(self.max_num_tokens)",
        engine + error,
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (5, "cutlass-scaled-mm-failed")


@pytest.mark.parametrize("layer", ["ScaledMM", "WNA16"])
def test_no_kernel_for_a_quantized_layer_is_named_with_its_reasons_below(layer: str) -> None:
    engine = "(EngineCore pid=277) ERROR 08-14 08:00:55 [core.py:1330] "
    lines = [
        engine + "Traceback (most recent call last):",
        engine
        + '  File "/x/vllm/model_executor/kernels/linear/__init__.py", line 574, in choose_scaled_mm_linear_kernel',
        engine + "    raise ValueError(",
        engine
        + f"ValueError: Failed to find a kernel that can implement the {layer} linear layer. Reasons: ",
        engine + "MarlinFP8ScaledMMLinearKernel To apply FP8 Marlin on high-capability GPUs, please set "
        "VLLM_TEST_FORCE_FP8_MARLIN=1.",
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (3, "no-scaled-mm-kernel")
    assert layer in finding.message


@pytest.mark.parametrize("writer", ["", "(APIServer pid=12) "])
def test_a_thread_the_os_refused_while_tokenizing_is_the_root_not_the_teardown(writer: str) -> None:
    lines = [
        "(EngineCore pid=20) INFO 05-05 09:33:40 [core.py:100] init engine (profile, create kv cache, warmup model) took 80.1 seconds",
        writer + "Traceback (most recent call last):",
        writer + '  File "/x/vllm/entrypoints/llm.py", line 866, in _preprocess_cmpl',
        writer + "    return renderer.render_cmpl(parsed_prompts, tok_params)",
        writer + '  File "/x/transformers/tokenization_utils_fast.py", line 553, in _batch_encode_plus',
        writer + "    encodings = self._tokenizer.encode_batch(",
        writer
        + "pyo3_runtime.PanicException: The global thread pool has not been initialized.: ThreadPoolBuildError "
        '{ kind: IOError(Os { code: 11, kind: WouldBlock, message: "Resource temporarily unavailable" }) }',
        "(EngineCore pid=20) INFO 05-05 09:33:52 [core.py:1384] Shutdown initiated (timeout=0)",
        "[rank2]:[W505 09:33:53.754859063 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=101): Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?",
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (6, "thread-limit-reached")


def test_an_xla_program_that_does_not_fit_in_tpu_warm_up_is_a_tpu_oom() -> None:
    engine = "(EngineCore pid=187) ERROR 08-07 23:27:17 [core.py:1349] "
    lines = [
        "(EngineCore pid=187) INFO 08-07 23:27:16 [compilation_manager.py:137] Precompile structured_decode --> {'num_reqs': 256}",
        engine + "EngineCore failed to start.",
        engine + "Traceback (most recent call last):",
        engine + '  File "/w/tpu_inference/runner/compilation_manager.py", line 222, in _flush_compilations',
        engine + "    out = warmup_handler(fn, args, call_kwargs)",
        engine + "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E0101: RuntimeProgramAllocationFailure:",
        engine
        + "Error loading program 'jit_sample_fn': Attempting to reserve 96.00M at the bottom of memory. "
        "That was not possible. There are 80.50M free, 0B reserved, and 80.50M reservable.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    [finding] = analyze(_log(lines)).findings
    assert (finding.line, finding.rule_id) == (5, "tpu-hbm-oom")
    assert "96.00M" in finding.message and "80.50M" in finding.message


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_placement_group_ray_never_placed_is_named_after_the_waits(prefix: str) -> None:
    specs = "[{'GPU': 1.0, 'node:10.8.0.7': 0.001}, {'GPU': 1.0}, {'GPU': 1.0}, {'GPU': 1.0}]"
    lines = [
        "INFO 04-16 02:35:59 [ray_utils.py:335] No current placement group found. Creating a new placement group.",
        "WARNING 04-16 02:35:59 [ray_utils.py:342] The number of required GPUs exceeds the total number of available GPUs in the placement group.",
        *(
            f"INFO 04-16 02:36:09 [ray_utils.py:233] Waiting for creating a placement group of specs for {s} seconds. specs={specs}."
            for s in (10, 30, 70, 150, 310, 630, 1270)
        ),
        "Traceback (most recent call last):",
        '  File "/x/vllm/executor/ray_utils.py", line 240, in _wait_until_pg_ready',
        "    raise ValueError(",
        f"ValueError: Cannot provide a placement group of placement_group_specs={specs} within 1800 seconds. "
        "See `ray status` and `ray list nodes` to make sure the cluster has enough resources.",
    ]
    [finding] = analyze(_log(lines, prefix)).findings
    assert (finding.line, finding.rule_id) == (len(lines) - 1, "ray-placement-group-timeout")
    assert "1800 seconds" in finding.message
