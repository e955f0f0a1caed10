"""Coverage of the research catalogue (/work/shared/research/known-causes.json, 57 causes from
vLLM's issue tracker) and a few whole-log checks of how rules meet the scanner's markers."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.catalog import builtin_catalog

CATALOG = builtin_catalog()

# known-causes.json id -> the rules that recognise it.
KNOWN_CAUSES = {
    "kv_cache_insufficient_for_max_model_len": ["kv-cache-too-small"],
    "sampler_warmup_oom": ["oom-sampler-warmup"],
    "profile_run_activation_oom": ["oom-profiling"],
    "multimodal_profiling_oom": ["oom-multimodal-profiling"],
    "cudagraph_capture_oom": ["oom-cuda-graph-capture"],
    "weight_load_oom": ["oom-weight-loading"],
    "gpu_memory_already_in_use": ["gpu-memory-in-use"],
    "runtime_oom_during_serving": ["oom-serving"],
    "mllama_cross_attention": ["oom-mllama"],
    "host_ram_oom_killed": ["host-ram-oom-killed"],
    "silent_process_death": [
        "silent-process-death",
        "segmentation-fault",
        "native-abort",
        "killed-by-signal",
    ],
    "docker_shm_too_small": ["dev-shm-too-small", "bus-error"],
    "bf16_unsupported_gpu": ["bf16-unsupported-gpu"],
    "gpu_compute_capability_below_7": ["gpu-too-old"],
    "quant_method_unsupported_on_gpu": ["quantization-unsupported-gpu"],
    "no_kernel_image_for_gpu_arch": ["no-kernel-image"],
    "attention_backend_unsupported": ["attention-backend-unsupported", "attention-head-size-unsupported"],
    "rocm_invalid_device_function": ["rocm-no-kernels-for-gfx"],
    "no_cuda_gpu_or_driver_too_old": ["no-gpu-or-driver"],
    "platform_detection_failed": ["platform-detection-failed"],
    "vllm_C_undefined_symbol": ["vllm-c-undefined-symbol", "vllm-op-missing"],
    "triton_no_c_compiler": ["triton-no-c-compiler"],
    "flashinfer_jit_toolchain": ["flashinfer-jit-failed", "jit-toolchain-missing"],
    "trust_remote_code_required": ["trust-remote-code-required"],
    "hf_gated_repo_unauthorized": ["hf-gated-repo"],
    "transformers_too_old_for_model": ["transformers-too-old"],
    "model_architecture_not_supported_or_inspect_failed": [
        "model-architecture-unsupported",
        "model-inspection-failed",
    ],
    "tp_size_not_dividing_heads": ["tp-heads-not-divisible"],
    "quantized_weight_shape_vs_tp": ["quantized-weight-shape-vs-tp"],
    "nccl_init_system_error": ["nccl-system-error"],
    "nccl_hang_watchdog_timeout": ["nccl-watchdog-timeout"],
    "custom_allreduce_failure": ["custom-allreduce-failure"],
    "nccl_unhandled_cuda_error": ["nccl-cuda-error"],
    "cuda_reinit_in_forked_subprocess": ["cuda-reinit-in-forked-subprocess"],
    "missing_main_guard_with_spawn": ["missing-main-guard"],
    "port_already_in_use": ["port-in-use"],
    "multinode_network_misconfig": ["multinode-network"],
    "cudagraph_capture_illegal_op": ["cudagraph-capture-illegal-op"],
    "cudagraph_mode_unsupported": ["cudagraph-mode-unsupported"],
    "torch_compile_failure": ["torch-compile-failure"],
    "compile_cache_corrupted": ["compile-cache-corrupted"],
    "max_model_len_exceeds_model_limit": ["max-model-len-exceeds-model"],
    "max_num_batched_tokens_below_max_model_len": ["max-num-batched-tokens-below-max-model-len"],
    "illegal_memory_access": ["illegal-memory-access", "illegal-memory-access-attention"],
    "device_side_assert_index_out_of_bounds": ["device-side-assert"],
    "nan_probabilities_fp16_overflow": ["nan-probabilities"],
    "triton_out_of_shared_memory": ["triton-out-of-shared-memory"],
    "deepgemm_assertion": ["deepgemm-failure"],
    "execute_model_rpc_timeout": ["execute-model-rpc-timeout", "v0-engine-iteration-timeout"],
    "shm_broadcast_stall": ["shm-broadcast-stall"],
    "scheduler_kv_block_assertion": ["scheduler-kv-block-assertion", "v1-core-assertion"],
    "hybrid_kv_cache_manager_incompatible": ["hybrid-kv-cache-manager"],
    "multimodal_placeholder_mismatch": ["multimodal-placeholder-mismatch"],
    "tool_call_parser_error": ["tool-call-parser-error"],
    "structured_output_grammar_crash": ["structured-output-failure"],
    "lora_rank_exceeds_max": ["lora-rank-too-large"],
    "speculative_decoding_failure": ["speculative-decoding-failure"],
}


def test_all_57_known_causes_have_rules() -> None:
    assert len(KNOWN_CAUSES) == 57
    missing = [(c, r) for c, rules in KNOWN_CAUSES.items() for r in rules if CATALOG.rule(r) is None]
    assert not missing


HEAD = "INFO 01-01 00:00:00 [core.py:1] Initializing a V1 LLM engine (v0.10.1) with config: model='m'\n"
W = "(VllmWorker rank=1 pid=12) ERROR 01-01 00:00:01 [multiproc_executor.py:1] "
E = "(EngineCore_DP0 pid=11) ERROR 01-01 00:00:02 [core.py:1] "
LOGS = {
    # NCCL's own warning names the real cause of `unhandled system error`.
    "dev-shm-too-small": HEAD
    + "(VllmWorker rank=1 pid=12) include/shm.h:28 NCCL WARN Call to posix_fallocate failed : "
    "No space left on device. Error while creating shared memory segment /dev/shm/nccl-ab (size 9637888)\n"
    + W
    + "WorkerProc failed to start.\n"
    + W
    + "Traceback (most recent call last):\n"
    + W
    + '  File "/x/vllm/distributed/device_communicators/pynccl.py", line 1, in __init__\n'
    + W
    + "    x()\n"
    + W
    + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}\n",
    # Only EngineCore's re-raise carries the worker's message.
    "illegal-memory-access": HEAD
    + E
    + "EngineCore encountered a fatal error.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/vllm/v1/executor/multiproc_executor.py", line 1, in get_response\n'
    + E
    + "    raise RuntimeError(\n"
    + E
    + "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered', "
    "please check the stack trace above for the root cause\n",
    # A worker killed with SIGKILL and nothing else.
    "host-ram-oom-killed": HEAD
    + E
    + "Worker proc VllmWorker-0 died unexpectedly (exit code: -9), shutting down executor.\n",
    # vLLM 0.6 loading an adapter trained with `modules_to_save` (a full lm_head).
    "lora-adapter-unsupported-weights": "ERROR 10-11 16:03:09 engine.py:157] RuntimeError('Error in model execution: "
    "Loading lora /m/adapter failed')\n"
    + "ERROR 10-11 16:03:09 engine.py:157] Traceback (most recent call last):\n"
    + 'ERROR 10-11 16:03:09 engine.py:157]   File "/x/vllm/lora/models.py", line 218, in from_local_checkpoint\n'
    + "ERROR 10-11 16:03:09 engine.py:157]     module_name, _ = parse_fine_tuned_lora_name(lora_module)\n"
    + 'ERROR 10-11 16:03:09 engine.py:157]   File "/x/vllm/lora/utils.py", line 113, in parse_fine_tuned_lora_name\n'
    + 'ERROR 10-11 16:03:09 engine.py:157]     raise ValueError(f"{name} is unsupported LoRA weight")\n'
    + "ERROR 10-11 16:03:09 engine.py:157] ValueError: base_model.model.lm_head.weight is unsupported LoRA weight\n",
    # An adapter path that holds no adapter, as V1 wraps the worker's error.
    "lora-adapter-not-found": HEAD
    + E
    + "EngineCore encountered a fatal error.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/vllm/lora/worker_manager.py", line 1, in _load_adapter\n'
    + E
    + "    raise ValueError(\n"
    + E
    + "ValueError: Loading lora sql failed: No adapter found for /data/ckpt/checkpoint-500\n",
    # An engine that vanished at start-up without a word.
    "host-ram-oom-killed-empty": HEAD
    + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
    # vLLM 0.6's V0 server: Triton's LLVM aborts the engine process (a Pascal GPU), no traceback.
    "native-abort": "INFO 12-06 14:07:30 api_server.py:585] vLLM API server version 0.6.4.post1\n"
    + "INFO 12-06 14:09:27 engine.py:267] Added request cmpl-24f0-0.\n"
    + "LLVM ERROR: out of memory\n"
    + "ERROR 12-06 14:09:37 client.py:282] RuntimeError('Engine process (pid 16470) died.')\n"
    + "CRITICAL 12-06 14:09:39 launcher.py:99] MQLLMEngine is already dead, terminating server process\n",
    # Triton, compiling a kernel's float conversion on a GPU it has no instruction for (a GTX 1080,
    # a T4): the abort is Triton's, after it names the conversion.
    "triton-compile-error": "INFO 12-06 14:07:30 api_server.py:585] vLLM API server version 0.6.4.post1\n"
    + "INFO 12-06 14:09:27 engine.py:267] Added request cmpl-24f0-0.\n"
    + "Unsupported conversion from f16 to f16\n"
    + "LLVM ERROR: Unsupported rounding mode for conversion.\n"
    + "ERROR 12-06 14:09:37 client.py:282] RuntimeError('Engine process (pid 16470) died.')\n"
    + "CRITICAL 12-06 14:09:39 launcher.py:99] MQLLMEngine is already dead, terminating server process\n",
    # Waking a model from sleep mode (an RL trainer): vLLM's own allocator is out of memory.
    "device-oom": "[rank0]: Traceback (most recent call last):\n"
    + '[rank0]:   File "/x/vllm/device_allocator/cumem.py", line 1, in wake_up\n'
    + "[rank0]:     create_and_map(handle)\n"
    + "[rank0]: RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n",
    # vLLM 0.5's default backend refusing Gemma-2 while profiling (a worker's copy, then the driver's).
    "softcap-needs-flashinfer": "INFO 11-15 04:18:00 llm_engine.py:176] Initializing an LLM engine (v0.5.3) "
    "with config: model='/m/gemma-2-27b-it'\n"
    + "[rank0]: Traceback (most recent call last):\n"
    + '[rank0]:   File "/x/vllm/attention/backends/flash_attn.py", line 1, in __init__\n'
    + "[rank0]:     raise ValueError(\n"
    + "[rank0]: ValueError: Please use Flashinfer backend for models with logits_soft_cap (i.e., Gemma-2). "
    "Otherwise, the output might be wrong. Set Flashinfer backend by export VLLM_ATTENTION_BACKEND=FLASHINFER.\n",
    # Ray's node without the device resource (Ascend NPUs are registered by hand).
    "ray-node-without-device": HEAD
    + E
    + "EngineCore failed to start.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/vllm/v1/executor/ray_utils.py", line 368, in initialize_ray_cluster\n'
    + E
    + "    raise ValueError(\n"
    + E
    + "ValueError: Current node has no NPU available. current_node_resource={'CPU': 192.0, 'GPU': 8.0}. "
    "vLLM engine cannot start without NPU. Make sure you have at least 1 NPU available in a node "
    "current_node_id='a7' current_ip='10.0.0.1'.\n",
    # A packed (int4-in-int8) checkpoint cut by a weight loader as if it were not.
    "checkpoint-shape-mismatch": HEAD
    + E
    + "EngineCore failed to start.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/vllm/model_executor/layers/linear.py", line 738, in weight_loader\n'
    + E
    + "    loaded_weight = loaded_weight.narrow(output_dim, start_idx, shard_size)\n"
    + E
    + "RuntimeError: start (0) + length (6144) exceeds dimension size (3072).\n",
    # FlashInfer's sampler JIT-builds its kernel on first use, and finds no CUDA toolkit.
    "jit-toolchain-missing": HEAD
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/site-packages/flashinfer/jit/cpp_ext.py", line 61, in get_cuda_path\n'
    + E
    + "    raise RuntimeError(\n"
    + E
    + "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist\n",
    # Triton's kernel, assembled by its own (newer) ptxas, refused by an older driver.
    "cuda-ptx-toolchain": HEAD
    + E
    + "EngineCore failed to start.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/site-packages/triton/compiler/compiler.py", line 408, in _init_handles\n'
    + E
    + "    self.module, self.function, self.n_regs, self.n_spills = driver.active.utils.load_binary(\n"
    + E
    + "RuntimeError: Triton Error [CUDA]: device kernel image is invalid\n",
    # A plugin's wrapper of a vLLM function, written for another vLLM's signature.
    "dependency-api-mismatch": HEAD
    + E
    + "EngineCore failed to start.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/site-packages/some_plugin/adaptor/weight_utils.py", line 94, in postprocess_loading\n'
    + E
    + "    func(self)\n"
    + E
    + '  File "/x/vllm/model_executor/model_loader/default_loader.py", line 198, in _get_weights_iterator\n'
    + E
    + "    weights_iterator = safetensors_weights_iterator(\n"
    + E
    + "TypeError: wrapper.<locals>._iterator() missing 1 required positional argument: 'files'\n",
    # huggingface_hub 1.x (httpx) asked the Hub for a model name that is a local alias.
    "model-not-found": "Traceback (most recent call last):\n"
    + '  File "/x/site-packages/huggingface_hub/utils/_http.py", line 1, in hf_raise_for_status\n'
    + "    response.raise_for_status()\n"
    + "httpx.HTTPStatusError: Client error '404 Not Found' for url "
    "'https://huggingface.co/my-local-alias/resolve/main/config.json'\n",
    # vLLM 0.9.2+ words the profiling check in GiB.
    "gpu-memory-in-use": HEAD
    + E
    + "EngineCore failed to start.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/vllm/v1/worker/gpu_worker.py", line 1, in determine_available_memory\n'
    + E
    + "    assert self.init_snapshot.free_memory > free_gpu_memory, (\n"
    + E
    + "AssertionError: Error in memory profiling. Initial free memory 43.37 GiB, current free memory "
    "43.94 GiB. This happens when other processes sharing the same container release GPU memory while "
    "vLLM is profiling during initialization.\n",
    # A package imported on a Python older than its type hints (`array.array[int]` needs 3.12).
    "python-too-old": HEAD
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/site-packages/vllm/model_executor/warmup/kernel_warmup.py", line 100, in kernel_warmup\n'
    + E
    + "    import flashinfer.comm as _flashinfer_comm\n"
    + E
    + '  File "/x/site-packages/flashinfer/comm/fd_exchange.py", line 55, in <module>\n'
    + E
    + "    def _fd_ancillary(fd: int) -> tuple[tuple[int, int, array.array[int]]]:\n"
    + E
    + "TypeError: type 'array.array' is not subscriptable\n",
    # vLLM merges a request's image embeddings with `masked_scatter_`: too few for the placeholders
    # fail torch's kernel check, then the worker's next CUDA call.
    "multimodal-placeholder-mismatch": HEAD
    + "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:402: masked_scatter_size_check: block: [0,0,0], "
    "thread: [0,0,0] Assertion `totalElements <= srcSize` failed.\n"
    + E
    + "EngineCore encountered a fatal error.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/vllm/model_executor/models/utils.py", line 1, in _merge_multimodal_embeddings\n'
    + E
    + "    inputs_embeds.masked_scatter_(is_multimodal.unsqueeze(-1), mm_embeds_flat)\n"
    + E
    + "torch.AcceleratorError: CUDA error: device-side assert triggered\n",
    # The model's download into a home directory with a quota (huggingface_hub's xet downloader).
    "disk-full": HEAD
    + E
    + "EngineCore failed to start.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/site-packages/huggingface_hub/file_download.py", line 563, in xet_get\n'
    + E
    + "    with session.new_file_download_group(\n"
    + E
    + "RuntimeError: Task error: File reconstruction error: IO Error: Disk quota exceeded (os error 122)\n",
    # FlashInfer's own check of a kernel's configuration (`FLASHINFER_ERROR`).
    "flashinfer-kernel-error": HEAD
    + E
    + "EngineCore encountered a fatal error.\n"
    + E
    + "Traceback (most recent call last):\n"
    + E
    + '  File "/x/site-packages/flashinfer/prefill.py", line 720, in paged_run\n'
    + E
    + "    paged_run_func(\n"
    + E
    + "RuntimeError: Error in function 'BatchPrefillWithPagedKVCacheDispatched' at "
    "/x/include/flashinfer/attention/prefill.cuh:3201: Unsupported max_mma_kv: 0\n",
    # Stopped while starting: Ray's failure-signal handler dumps the stack for SIGTERM too.
    "stopped-during-startup": "INFO 05-26 18:53:37 [api_server.py:1043] vLLM API server version 0.8.5.post1\n"
    + "INFO 05-26 18:53:50 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5.post1) with config: "
    "model='m'\n"
    + "*** SIGTERM received at time=1748300290 on cpu 8 ***\n"
    + "PC: @     0x7a30bba98d71  (unknown)  (unknown)\n"
    + "    @     0x7a30bba9bc8e        224  pthread_cond_timedwait\n",
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_whole_log_classification(name: str) -> None:
    expected = name.removesuffix("-empty")
    findings = analyze(LOGS[name]).findings
    assert [f.rule_id for f in findings] == [expected]


def test_a_type_not_subscriptable_outside_an_import_is_no_old_python() -> None:
    """The same words raised by running code (not a module's body as it is imported) are a
    program's own bug, not a Python too old for its hints."""
    log = LOGS["python-too-old"].replace("line 55, in <module>", "line 55, in _fd_ancillary")
    assert [f.rule_id for f in analyze(log).findings] != ["python-too-old"]
