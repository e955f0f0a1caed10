"""Root-cause selection on small constructed logs: chains, decoys, faults, deaths with no traceback."""

from __future__ import annotations

import textwrap

from vllm_log_lsp.core.analyze import analyze


def log(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def roots(text: str) -> list[tuple[int, str]]:
    return [(f.line + 1, f.root_text.splitlines()[0]) for f in analyze(text).findings]


def test_first_of_a_chain_is_the_cause() -> None:
    text = log(
        """
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] EngineCore failed to start.
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] Traceback (most recent call last):
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708]   File "/vllm/v1/worker/gpu_model_runner.py", line 2200, in _dummy_sampler_run
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708]     sampler_output = self.sampler(logits=logits,
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 312.00 MiB is free.
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708]
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] The above exception was the direct cause of the following exception:
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708]
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] Traceback (most recent call last):
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708]   File "/vllm/v1/worker/gpu_model_runner.py", line 2210, in _dummy_sampler_run
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708]     raise RuntimeError(
        (EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.
        (APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}
        """
    )
    [finding] = analyze(text).findings
    assert finding.line + 1 == 5
    assert finding.rule_id == "oom-sampler-warmup"
    assert finding.phase == "warmup"
    assert finding.message == "CUDA OOM during sampler warm-up: tried 2.00 GiB, 312.00 MiB free"
    assert finding.evidence["dummy_requests"] == "1024"
    # Halving starts from the 1024 requests the log says were warmed up.
    assert finding.fixes[0].command_line == "--max-num-seqs 512"


def test_shutdown_decoys_after_the_death_are_ignored() -> None:
    text = log(
        """
        ERROR 05-19 09:49:02 [core.py:398] EngineCore encountered a fatal error.
        ERROR 05-19 09:49:02 [core.py:398] Traceback (most recent call last):
        ERROR 05-19 09:49:02 [core.py:398]   File "/vllm/v1/engine/core.py", line 389, in run_engine_core
        ERROR 05-19 09:49:02 [core.py:398]     engine_core.run_busy_loop()
        ERROR 05-19 09:49:02 [core.py:398] ValueError: Expected a cuda device, but got: npu:0
        ERROR 05-19 09:49:02 [async_llm.py:399] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
        Exception ignored in: <function ExecutorBase.__del__ at 0x7f>
        Traceback (most recent call last):
          File "/vllm/executor/executor_base.py", line 120, in __del__
            self.shutdown()
        AttributeError: 'NoneType' object has no attribute 'ensure_kv_transfer_shutdown'
        Traceback (most recent call last):
          File "/usr/lib/python3.10/multiprocessing/connection.py", line 383, in _recv
            raise EOFError
        EOFError
        SystemExit: 15
        """
    )
    assert roots(text) == [(5, "ValueError: Expected a cuda device, but got: npu:0")]


def test_errors_before_healthy_serving_are_not_the_cause() -> None:
    text = log(
        """
        (APIServer pid=1) INFO 08-01 21:30:00 [api_server.py:1] vLLM API server version 0.10.2
        (APIServer pid=1) ERROR 08-01 21:30:10 [serving_chat.py:223] Error in preprocessing prompt inputs
        (APIServer pid=1) ERROR 08-01 21:30:10 [serving_chat.py:223] Traceback (most recent call last):
        (APIServer pid=1) ERROR 08-01 21:30:10 [serving_chat.py:223]   File "/vllm/entrypoints/openai/serving_chat.py", line 200, in create_chat_completion
        (APIServer pid=1) ERROR 08-01 21:30:10 [serving_chat.py:223]     request_prompts = await self._preprocess_chat(
        (APIServer pid=1) ERROR 08-01 21:30:10 [serving_chat.py:223] ValueError: This model's maximum context length is 4096 tokens.
        (APIServer pid=1) INFO 08-01 21:34:29 [loggers.py:273] Engine 000: Avg prompt throughput: 1843.9 tokens/s, Avg generation throughput: 80.8 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:00 [core.py:710] EngineCore encountered a fatal error.
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:00 [core.py:710] Traceback (most recent call last):
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:00 [core.py:710]   File "/vllm/v1/worker/gpu_model_runner.py", line 99, in execute_model
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:00 [core.py:710]     return fn()
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:00 [core.py:710] torch.AcceleratorError: CUDA error: an illegal memory access was encountered
        (APIServer pid=1) ERROR 08-01 21:35:00 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
        """
    )
    assert roots(text) == [
        (12, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    ]


def test_bare_assertion_points_at_its_failing_frame() -> None:
    text = log(
        """
        (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] EngineCore encountered a fatal error.
        (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] Traceback (most recent call last):
        (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799]   File "/vllm/v1/core/sched/scheduler.py", line 512, in schedule
        (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799]     assert num_new_tokens > 0
        (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799]            ^^^^^^^^^^^^^^^^^^
        (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] AssertionError
        (APIServer pid=1) ERROR 10-19 13:07:53 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
        """
    )
    [finding] = analyze(text).findings
    assert finding.line + 1 == 6
    assert finding.evidence["failing_frame"] == "/vllm/v1/core/sched/scheduler.py:512 in schedule"
    assert finding.evidence["assertion"] == "assert num_new_tokens > 0"
    assert finding.related_lines[0] + 1 == 3  # the failing frame, for "related information"


def test_worker_killed_without_traceback() -> None:
    text = log(
        """
        (APIServer pid=1) INFO 11-01 09:00:00 [api_server.py:1] vLLM API server version 0.26.0
        (EngineCore_DP0 pid=2) ERROR 11-01 09:10:00 [multiproc_executor.py:150] Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.
        (EngineCore_DP0 pid=2) ERROR 11-01 09:10:00 [core.py:710] EngineCore encountered a fatal error.
        (EngineCore_DP0 pid=2) ERROR 11-01 09:10:00 [core.py:710] Traceback (most recent call last):
        (EngineCore_DP0 pid=2) ERROR 11-01 09:10:00 [core.py:710]   File "/vllm/v1/engine/core.py", line 701, in run_engine_core
        (EngineCore_DP0 pid=2) ERROR 11-01 09:10:00 [core.py:710]     raise RuntimeError("Executor failed.")
        (EngineCore_DP0 pid=2) ERROR 11-01 09:10:00 [core.py:710] RuntimeError: Executor failed.
        (APIServer pid=1) ERROR 11-01 09:10:00 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
        """
    )
    [finding] = analyze(text).findings
    # No exception explains the death: the line with the exit code is the most telling one.
    assert finding.line + 1 == 2
    assert "exit code: -9" in finding.root_text


def test_empty_failed_core_procs_is_an_incident() -> None:
    text = log(
        """
        (APIServer pid=1) INFO 11-01 09:00:00 [api_server.py:1] vLLM API server version 0.16.0
        (APIServer pid=1) INFO 11-01 09:00:01 [utils.py:1] non-default args: {'model': 'm'}
        Traceback (most recent call last):
          File "/usr/bin/vllm", line 8, in <module>
            sys.exit(main())
          File "/vllm/v1/engine/utils.py", line 1010, in wait_for_engine_startup
            raise RuntimeError(
        RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
        """
    )
    [finding] = analyze(text).findings
    assert finding.line + 1 == 8
    assert finding.phase == "startup"


def test_startup_timeout_is_an_incident() -> None:
    text = log(
        """
        (APIServer pid=1) INFO 11-01 09:00:00 [api_server.py:1] vLLM API server version 0.20.0
        (EngineCore_DP0 pid=2) INFO 11-01 09:00:10 [gpu_model_runner.py:1] Starting to load model big/model...
        Traceback (most recent call last):
          File "/usr/bin/vllm", line 8, in <module>
            sys.exit(main())
          File "/vllm/v1/engine/utils.py", line 900, in wait_for_engine_startup
            raise TimeoutError(
        TimeoutError: Timed out waiting for engine core processes to start. This is often caused by slow weight loading for large models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S). To increase the timeout, set the environment variable: VLLM_ENGINE_READY_TIMEOUT_S=<seconds>
        """
    )
    [finding] = analyze(text).findings
    assert finding.line + 1 == 8
    assert finding.phase == "model_loading"


def test_restarts_make_separate_incidents() -> None:
    crash = (
        "(APIServer pid={p}) INFO 11-01 09:00:00 [api_server.py:1] vLLM API server version 0.16.0\n"
        "(APIServer pid={p}) INFO 11-01 09:00:01 [utils.py:1] non-default args: {{'model': 'm'}}\n"
        "(EngineCore_DP0 pid={e}) ERROR 11-01 09:00:44 [core.py:1100] EngineCore failed to start.\n"
        "(EngineCore_DP0 pid={e}) ERROR 11-01 09:00:44 [core.py:1100] Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid={e}) ERROR 11-01 09:00:44 [core.py:1100]   File "/vllm/v1/core/kv_cache_utils.py", line 623, in _check_enough_kv_cache_memory\n'
        "(EngineCore_DP0 pid={e}) ERROR 11-01 09:00:44 [core.py:1100]     raise ValueError(\n"
        "(EngineCore_DP0 pid={e}) ERROR 11-01 09:00:44 [core.py:1100] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
        "(APIServer pid={p}) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}\n"
    )
    text = "".join(crash.format(p=p, e=p + 1) for p in (10, 20, 30))
    analysis = analyze(text)
    assert [f.line + 1 for f in analysis.findings] == [7, 15, 23]
    assert all(f.rule_id == "kv-cache-no-memory" for f in analysis.findings)


def test_non_python_faults() -> None:
    cases = {
        "Memory access fault by GPU node-6 (Agent handle: 0x501def90) on address 0x7f5e50c00000. Reason: Unknown.": "fault",
        "Fatal Python error: Segmentation fault": "fault",
        "[rank0]:[E1028 10:45:49.123 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered": "fault",
        "EZ9999: Inner Error! EZ9999: [PID: 1] 2025-09-18-10:34:30.123.456 The error from device(chipId:0, dieId:0), serial number is 2, an exception occurred during AICPU execution": "fault",
        "terminate called after throwing an instance of 'c10::DistBackendError'": "fault",
    }
    for fault, kind in cases.items():
        text = (
            "(APIServer pid=1) INFO 11-01 09:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 5.0 tokens/s\n"
            f"{fault}\n"
            "(APIServer pid=1) ERROR 11-01 09:10:00 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.\n"
        )
        [finding] = analyze(text).findings
        assert finding.line == 1, fault
        assert finding.exception is not None and finding.exception.kind == kind


def test_deliberate_stop_is_reported_as_such() -> None:
    text = log(
        """
        (APIServer pid=1) INFO 08-01 21:34:49 [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs
        (EngineCore pid=2) INFO 08-01 21:34:51 [core.py:1214] [shutdown] EngineCore: trigger received signal=SIGTERM
        (APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704] AsyncLLM output_handler failed.
        (APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
        """
    )
    [finding] = analyze(text).findings
    assert finding.line + 1 == 2
    assert finding.phase == "shutdown"


def test_warning_level_tracebacks_are_not_causes() -> None:
    text = log(
        """
        (EngineCore_DP0 pid=2) WARNING 11-01 09:00:00 [utils.py:1] Failed to import flash_attn
        (EngineCore_DP0 pid=2) WARNING 11-01 09:00:00 [utils.py:1] Traceback (most recent call last):
        (EngineCore_DP0 pid=2) WARNING 11-01 09:00:00 [utils.py:1]   File "/x.py", line 1, in <module>
        (EngineCore_DP0 pid=2) WARNING 11-01 09:00:00 [utils.py:1] ImportError: libcudart.so.12: cannot open shared object file
        (EngineCore_DP0 pid=2) ERROR 11-01 09:00:09 [core.py:1100] EngineCore failed to start.
        (EngineCore_DP0 pid=2) ERROR 11-01 09:00:09 [core.py:1100] Traceback (most recent call last):
        (EngineCore_DP0 pid=2) ERROR 11-01 09:00:09 [core.py:1100]   File "/vllm/config/model.py", line 10, in __post_init__
        (EngineCore_DP0 pid=2) ERROR 11-01 09:00:09 [core.py:1100] ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).
        """
    )
    assert roots(text) == [
        (8, "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).")
    ]


def test_healthy_serving_log_has_nothing() -> None:
    line = "(APIServer pid=1) INFO 11-01 09:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%\n"
    analysis = analyze(line * 1000)
    assert analysis.findings == () and analysis.precursors == ()


def test_a_request_error_in_the_api_server_is_not_the_engines_death() -> None:
    text = log(
        """
        (APIServer pid=1) ERROR 08-01 21:35:00 [serving_chat.py:223] Error in preprocessing prompt inputs
        (APIServer pid=1) ERROR 08-01 21:35:00 [serving_chat.py:223] Traceback (most recent call last):
        (APIServer pid=1) ERROR 08-01 21:35:00 [serving_chat.py:223]   File "/vllm/entrypoints/openai/serving_chat.py", line 200, in create_chat_completion
        (APIServer pid=1) ERROR 08-01 21:35:00 [serving_chat.py:223]     request_prompts = await self._preprocess_chat(
        (APIServer pid=1) ERROR 08-01 21:35:00 [serving_chat.py:223] ValueError: This model's maximum context length is 4096 tokens.
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:01 [core.py:710] EngineCore encountered a fatal error.
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:01 [core.py:710] Traceback (most recent call last):
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:01 [core.py:710]   File "/vllm/v1/worker/gpu_model_runner.py", line 99, in execute_model
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:01 [core.py:710]     return fn()
        (EngineCore_DP0 pid=2) ERROR 08-01 21:35:01 [core.py:710] torch.AcceleratorError: CUDA error: an illegal memory access was encountered
        (APIServer pid=1) ERROR 08-01 21:35:01 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
        """
    )
    assert roots(text) == [
        (10, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    ]


def test_the_api_server_can_be_the_one_that_died() -> None:
    text = log(
        """
        (APIServer pid=1) INFO 06-20 20:03:41 [api_server.py:1287] vLLM API server version 0.10.2
        Traceback (most recent call last):
          File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
            return _run_code(code, main_globals, None,
          File "/vllm/entrypoints/openai/api_server.py", line 1263, in create_server_socket
            sock.bind(addr)
        OSError: [Errno 98] Address already in use
        """
    )
    assert roots(text) == [(7, "OSError: [Errno 98] Address already in use")]
