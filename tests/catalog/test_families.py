"""Family rules: one cause recognised by what it is, in every wording, with its sub-type told by
the frames or the crash phase, and titled by the device that failed."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import classify
from vllm_log_lsp.core.catalog import build_catalog, builtin_catalog, load_rule_text

CATALOG = builtin_catalog()

# One allocation failure in the words of each platform (torch's CUDA/ROCm/XPU allocators across
# releases, torch_npu, runtime error codes, cuBLAS, the caching allocator's NVML assert).
OOM_WORDINGS = {
    "CUDA": [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 39.38 GiB of which 1.05 GiB is free.",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 10.75 GiB total capacity; 9.80 GiB already allocated; 40.62 MiB free; 9.95 GiB reserved in total by PyTorch)",
        "RuntimeError: CUDA error: out of memory\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":830, please report a bug to PyTorch.',
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "RuntimeError: Worker failed with error 'CUDA out of memory. Tried to allocate 128.00 MiB.', please check the stack trace above for the root cause",
    ],
    "ROCm": [
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 7.00 GiB. GPU 0 has a total capacity of 191.98 GiB of which 3.27 GiB is free.",
        "RuntimeError: HIP error: out of memory",
        "RuntimeError: hipErrorOutOfMemory",
    ],
    "NPU": [
        "RuntimeError: NPU out of memory. Tried to allocate 1.17 GiB (NPU 3; 29.50 GiB total capacity; 26.92 GiB already allocated; 26.92 GiB current active; 964.39 MiB free; 27.48 GiB reserved in total by PyTorch)",
    ],
    "XPU": [
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 15.11 GiB of which 244.00 MiB is free.",
        "RuntimeError: level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
    ],
    "CPU": [
        "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to allocate 4294967296 bytes.",
    ],
}
OOM_CASES = [(device, text) for device, texts in OOM_WORDINGS.items() for text in texts]

# Where the allocation failed -> the sub-type, told by a frame or, without frames, by the phase.
SUBTYPE_BY_FRAME = [
    ("vllm/v1/worker/gpu_model_runner.py:_dummy_sampler_run", "warmup", "oom-sampler-warmup"),
    ("torch/cuda/graphs.py:capture_end", "cuda_graph_capture", "oom-cuda-graph-capture"),
    (
        "vllm/model_executor/model_loader/default_loader.py:load_weights",
        "model_loading",
        "oom-weight-loading",
    ),
    ("vllm/v1/worker/gpu_model_runner.py:profile_run", "memory_profiling", "oom-profiling"),
    ("vllm/v1/worker/gpu_model_runner.py:execute_model", "serving", "oom-serving"),
]
SUBTYPE_BY_PHASE = [
    ("cuda_graph_capture", "oom-cuda-graph-capture"),
    ("model_loading", "oom-weight-loading"),
    ("memory_profiling", "oom-profiling"),
    ("serving", "oom-serving"),
    ("startup", "device-oom"),
    ("shutdown", "device-oom"),
]


@pytest.mark.parametrize(
    ("device", "text"), OOM_CASES, ids=[f"{d}-{i}" for i, (d, _) in enumerate(OOM_CASES)]
)
def test_every_oom_wording_is_memory_and_titled_by_its_device(device: str, text: str) -> None:
    rule, captures = classify(CATALOG, text, [], [], [], "startup")
    assert rule is not None and rule.id == "device-oom"
    assert rule.title_for(captures) == f"{device} out of memory"


@pytest.mark.parametrize(
    ("device", "text"), OOM_CASES, ids=[f"{d}-{i}" for i, (d, _) in enumerate(OOM_CASES)]
)
def test_the_sub_type_keeps_the_device(device: str, text: str) -> None:
    rule, captures = classify(CATALOG, text, [], [], [], "model_loading")
    assert rule is not None and rule.id == "oom-weight-loading"
    assert rule.title_for(captures).startswith(f"{device} OOM")


@pytest.mark.parametrize(
    ("frame", "phase", "rule_id"), SUBTYPE_BY_FRAME, ids=[r for _, _, r in SUBTYPE_BY_FRAME]
)
def test_oom_sub_type_from_the_frames(frame: str, phase: str, rule_id: str) -> None:
    text = OOM_WORDINGS["CUDA"][0]
    rule, _ = classify(CATALOG, text, [], ["vllm/v1/engine/core.py:run_engine_core", frame], [], phase)
    assert rule is not None and rule.id == rule_id


@pytest.mark.parametrize(("phase", "rule_id"), SUBTYPE_BY_PHASE, ids=[p for p, _ in SUBTYPE_BY_PHASE])
def test_oom_sub_type_from_the_phase_when_no_frame_tells(phase: str, rule_id: str) -> None:
    rule, _ = classify(CATALOG, OOM_WORDINGS["NPU"][0], [], [], [], phase)
    assert rule is not None and rule.id == rule_id


def test_a_title_without_its_capture_reads_with_the_default() -> None:
    rule = CATALOG.rule("device-oom")
    assert rule is not None
    assert rule.title == "GPU out of memory"  # what `rules` lists
    assert rule.title_for({}) == "GPU out of memory"
    assert rule.title_for({"device": "hip"}) == "ROCm out of memory"


SIGNED = """
[signature.cluster-oom]
match = ['our allocator gave up']
evidence = ['node (?P<node>\\w+)']

[[rule]]
id = "cluster-oom-in-loading"
title = "{device} OOM on our cluster while loading"
family = "memory"
match = ['loader ran dry']
signatures = ["cluster-oom"]
frames = ['load_weights']
frames_or_phases = ["model_loading"]
summary = "s"
explanation = "e"
samples = ["RuntimeError: our allocator gave up on node a17"]
"""


def test_a_signature_adds_its_patterns_after_the_rules_own() -> None:
    rules, _, errors = load_rule_text(SIGNED, "user.toml", user=True)
    assert not errors
    assert [p.source for p in rules[0].match] == ["loader ran dry", "our allocator gave up"]
    catalog = build_catalog([], [("user.toml", SIGNED)])
    rule, captures = classify(
        catalog, "RuntimeError: our allocator gave up on node a17", [], [], [], "model_loading"
    )
    assert rule is not None and rule.id == "cluster-oom-in-loading"
    assert captures["node"] == "a17"
    assert rule.title_for(captures) == "GPU OOM on our cluster while loading"
    # Neither a frame nor the phase: the rule does not apply.
    assert classify(catalog, "RuntimeError: our allocator gave up", [], [], [], "serving")[0] is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            SIGNED.replace('signatures = ["cluster-oom"]', 'signatures = ["no-such"]'),
            "no signature 'no-such'",
        ),
        (SIGNED.replace("{device} OOM", "{node} OOM"), "title placeholders"),
        (
            SIGNED.replace('frames_or_phases = ["model_loading"]', 'frames_or_phases = ["loading"]'),
            "unknown phase",
        ),
    ],
    ids=["unknown-signature", "title-placeholder", "unknown-phase"],
)
def test_schema_mistakes_are_reported(text: str, problem: str) -> None:
    rules, _, errors = load_rule_text(text, "user.toml", user=True)
    assert not rules
    assert errors and problem in errors[0].message


# A stop signal's traceback says what the process was doing when the signal came.
STOP_FRAMES = [
    ("huggingface_hub/file_download.py:http_get", "startup", "stopped-while-downloading"),
    ("urllib3/connectionpool.py:urlopen", "model_loading", "stopped-while-downloading"),
    ("torch/distributed/distributed_c10d.py:init_process_group", "startup", "stopped-waiting-for-peers"),
    ("vllm/executor/ray_utils.py:_wait_until_pg_ready", "startup", "stopped-waiting-for-placement-group"),
    ("torch/_inductor/compile_fx.py:compile_fx", "startup", "stopped-during-compile"),
    (
        "vllm/model_executor/models/registry.py:_run_in_subprocess",
        "startup",
        "stopped-during-model-inspection",
    ),
    (
        "vllm/model_executor/model_loader/weight_utils.py:safetensors_weights_iterator",
        "startup",
        "stopped-while-loading-weights",
    ),
    ("vllm/entrypoints/openai/api_server.py:run_server", "startup", "stopped-during-startup"),
    # A running server that is stopped is not a hang, whatever it was waiting on.
    ("socket.py:recv_into", "serving", "deliberate-stop"),
]


@pytest.mark.parametrize("text", ["KeyboardInterrupt: terminated", "KeyboardInterrupt"])
@pytest.mark.parametrize(("frame", "phase", "rule_id"), STOP_FRAMES, ids=[r for _, _, r in STOP_FRAMES])
def test_a_stop_says_what_it_interrupted(text: str, frame: str, phase: str, rule_id: str) -> None:
    frames = [frame, "vllm/entrypoints/openai/api_server.py:signal_handler"]
    rule, _ = classify(CATALOG, text, [], frames, [], phase)
    assert rule is not None and rule.id == rule_id


def test_a_stop_during_compile_is_told_by_the_phase_too() -> None:
    rule, _ = classify(CATALOG, "KeyboardInterrupt: terminated", [], [], [], "torch_compile")
    assert rule is not None and rule.id == "stopped-during-compile"


# Wordings written from each family's principle (not the rules' own samples) -> the family.
FAMILY_WORDINGS = [
    (
        "ImportError: /opt/venv/lib/python3.11/site-packages/xformers/_C.so: undefined symbol: _ZNK3c1010TensorImpl4sizeEv",
        "build_dependencies",
    ),
    (
        "OSError: libnuma.so.1: cannot open shared object file: No such file or directory",
        "build_dependencies",
    ),
    (
        "torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: (None, 'g++')",
        "build_dependencies",
    ),
    ("ModuleNotFoundError: No module named 'vllm._C'", "build_dependencies"),
    (
        "ImportError: accelerate>=0.26.0 is required for a normal functioning of this module, but found accelerate==0.21.0.",
        "build_dependencies",
    ),
    (
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url https://huggingface.co/google/gemma-3-27b-it/resolve/main/config.json.",
        "model_loading",
    ),
    (
        "huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-68) Repository Not Found for url: https://huggingface.co/api/models/org/typo.",
        "model_loading",
    ),
    (
        "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub and we cannot find the requested files in the local cache.",
        "model_loading",
    ),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "runtime_faults"),
    ("RuntimeError: HIP error: an illegal memory access was encountered", "runtime_faults"),
    (
        "Memory access fault by GPU node-2 (Agent handle: 0x55d1) on address 0x7f12. Reason: Page not present or supervisor privilege.",
        "runtime_faults",
    ),
    (
        "RuntimeError: ACL stream synchronize failed, error code:507015 [ERROR] EZ9999: Inner Error! The aicore execution is abnormal.",
        "runtime_faults",
    ),
    (
        "EI0002: The wait execution of the Notify register times out. Reason: The Notify register has not received the Notify record from remote rank [3].",
        "parallelism",
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2",
        "parallelism",
    ),
    (
        "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Read error [10.1.2.3]:62415: Connection reset by peer",
        "parallelism",
    ),
    (
        "torch._dynamo.exc.Unsupported: call_method UserDefinedObjectVariable(MyCache) update [TensorVariable()] {}",
        "compile_graphs",
    ),
    ("triton.compiler.errors.CompilationError: at 10:4: def _fwd_kernel(", "compile_graphs"),
    (
        "ImportError: dlopen(/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.dylib, 0x0002): Symbol not found: __ZN2at4_ops3add4callERKNS_6TensorE",
        "build_dependencies",
    ),
    (
        "RuntimeError: rotary_embedding:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:52 NPU function error: call aclnnRotaryPosEmb failed, error code is 561103",
        "gpu_platform",
    ),
    (  # (161002: aclnn's parameter check refused the inputs: the caller's tensors, not the install)
        "RuntimeError: rotary_embedding:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:52 NPU function error: call aclnnRotaryPosEmb failed, error code is 161002",
        "runtime_faults",
    ),
    ("ValueError: Sliding window with chunked prefill is not supported for this model.", "config"),
    ("NotImplementedError: LoRA is not implemented for encoder-decoder models", "config"),
]


@pytest.mark.parametrize(
    ("text", "family"), FAMILY_WORDINGS, ids=[f"{f}-{i}" for i, (_, f) in enumerate(FAMILY_WORDINGS)]
)
def test_a_family_is_recognised_in_other_wordings(text: str, family: str) -> None:
    window = [text]  # in a log the root's own line is among the lines around it
    rule, _ = classify(CATALOG, text, [], [], window, "startup")
    assert rule is not None and rule.family == family, rule.id if rule else None


PYDANTIC_LOG = """INFO 05-01 10:00:00 [__init__.py:239] Automatically detected platform cuda.
Traceback (most recent call last):
  File "/usr/local/bin/vllm", line 10, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1020, in create_model_config
    return ModelConfig(
pydantic_core._pydantic_core.ValidationError: 1 validation error for {config}
{field_line}  {reason} [type={error_type}, input_value={value}, input_type=str]
    For further information visit https://errors.pydantic.dev/2.11/v/{error_type}
"""


@pytest.mark.parametrize(
    ("config", "field", "reason", "error_type", "value"),
    [
        (
            "ModelConfig",
            "max_model_len",
            "Input should be a valid integer, unable to parse string as an integer",
            "int_parsing",
            "'32k'",
        ),
        (
            "CacheConfig",
            "gpu_memory_utilization",
            "Input should be less than or equal to 1",
            "less_than_equal",
            "1.5",
        ),
        (
            "ParallelConfig",
            "",
            "Value error, Unsupported distributed executor backend: 'rayy'",
            "value_error",
            "ArgsKwargs(())",
        ),
    ],
)
def test_a_validation_error_names_the_field_and_reason(config, field, reason, error_type, value) -> None:
    from vllm_log_lsp.core.analyze import analyze

    text = PYDANTIC_LOG.format(
        config=config,
        field_line=f"{field}\n" if field else "",
        reason=reason,
        error_type=error_type,
        value=value,
    )
    (finding,) = analyze(text).findings
    assert finding.rule_id == "config-validation-error"
    assert finding.evidence["detail"] == reason.removeprefix("Value error, ")
    assert finding.evidence.get("field") == (field or None)
    assert finding.evidence["input_value"] == value
    assert finding.message.startswith(f"{config}: ")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"url": "https://hf.co/x", "n": "2"}, "No access (https://hf.co/x), 2 tries"),
        ({"repo": "org/x", "n": "2"}, "No access (org/x), 2 tries"),
        ({"n": "2"}, None),  # neither alternative: the message cannot be written
        ({"url": "u"}, None),  # a plain placeholder without its capture
        ({"url": "{odd}", "n": "1"}, "No access ({odd}), 1 tries"),  # values are text, not templates
    ],
)
def test_adjacent_placeholders_are_alternatives(values: dict, expected: str | None) -> None:
    from vllm_log_lsp.core.catalog import fill_placeholders

    assert fill_placeholders("No access ({url}{repo}), {n} tries", values) == expected


CONNECTOR_FRAME = (
    '  File "/x/vllm/distributed/kv_transfer/kv_connector/v1/p2p/p2p_nccl_engine.py", line 480, in send_async'
)
CONNECTOR_INFO = "(Worker_TP4 pid=1) INFO 03-16 00:50:11 [p2p_nccl_engine.py:226] ncclCommInitRank Success"


@pytest.mark.parametrize(
    ("frames", "window", "connector"),
    [
        (["/opt/LMCache/lmcache/v1/gpu_connector.py:to_gpu"], [], True),  # a frame of the traceback read
        ([], [CONNECTOR_FRAME], True),  # a frame line near the root of a traceback broken apart
        ([], [CONNECTOR_INFO], False),  # the connector merely in use
    ],
    ids=["frame", "frame-line", "info-line"],
)
def test_a_connector_failure_needs_a_connector_frame(frames, window, connector) -> None:
    rule, _ = classify(
        CATALOG, "AttributeError: 'NoneType' object has no attribute 'shape'", [], frames, window, "serving"
    )
    assert rule is not None and (rule.id == "kv-connector-failure") == connector


def test_leaked_resources_at_shutdown_mean_a_kill() -> None:
    text = "UserWarning: resource_tracker: There appear to be 2 leaked shared_memory objects to clean up at shutdown"
    rule, captures = classify(CATALOG, text, [], [], [text], "model_loading")
    assert rule is not None and rule.family == "process" and captures["count"] == "2"


# Each library's words for a thread the OS would not start (EAGAIN from pthread_create), and
# the same status codes and types where they mean something else.
THREAD_LIMIT = [
    ("RuntimeError: can't start new thread", [], "thread-limit-reached"),
    (
        "pyo3_runtime.PanicException: The global thread pool has not been initialized.: ThreadPoolBuildError "
        '{ kind: IOError(Os { code: 11, kind: WouldBlock, message: "Resource temporarily unavailable" }) }',
        [],
        "thread-limit-reached",
    ),
    (
        "RuntimeError: OpenBLAS blas_thread_init: pthread_create failed for thread 3 of 128: Resource temporarily unavailable",
        [],
        "thread-limit-reached",
    ),
    (
        "terminate called after throwing an instance of 'std::system_error'",
        ["  what():  Resource temporarily unavailable"],
        "thread-limit-reached",
    ),
    # (std::system_error for another errno is some other failed call: a native abort)
    (
        "terminate called after throwing an instance of 'std::system_error'",
        ["  what():  Invalid argument"],
        "native-abort",
    ),
]


@pytest.mark.parametrize(("text", "window", "rule_id"), THREAD_LIMIT)
def test_a_thread_the_os_refused_is_the_thread_limit(text: str, window: list[str], rule_id: str) -> None:
    rule, _ = classify(CATALOG, text, [], [], [text, *window], "serving")
    assert rule is not None and rule.id == rule_id


# XLA's out-of-memory wordings (JAX, torch_xla, compile time) with their numbers; gRPC's
# RESOURCE_EXHAUSTED for a message too large is not memory.
TPU_OOM = [
    (
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E0101: RuntimeProgramAllocationFailure:",
        "Error loading program 'jit_decode_fn': Attempting to reserve 1.50G at the bottom of memory. That was not possible. There are 1.02G free, 0B reserved.",
        {"tried": "1.50G", "free": "1.02G", "program": "jit_decode_fn"},
    ),
    (
        "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00G. That was not possible. There are 7.25G free.; (0x0x0_HBM0)",
        "",
        {"tried": "8.00G", "free": "7.25G"},
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 33.10G of 31.25G hbm. Exceeded hbm capacity by 1.85G.",
        "",
        {"used": "33.10G", "total": "31.25G", "space": "hbm"},
    ),
]


@pytest.mark.parametrize(("text", "next_line", "captures"), TPU_OOM)
def test_xla_out_of_memory_is_the_tpu_oom_with_its_numbers(text: str, next_line: str, captures: dict) -> None:
    rule, found = classify(CATALOG, text, [], [], [text, next_line], "warmup")
    assert rule is not None and rule.id == "tpu-hbm-oom"
    assert captures.items() <= found.items()


def test_grpc_resource_exhausted_is_not_memory() -> None:
    text = "grpc._channel._InactiveRpcError: RESOURCE_EXHAUSTED: Received message larger than max (8388608 vs. 4194304)"
    rule, _ = classify(CATALOG, text, [], [], [text], "serving")
    assert rule is None or rule.family != "memory"


# NVML's errors by what they mean: a query the GPU slice will not answer, or no NVML at all.
NVML_ERRORS = [
    ("pynvml.NVMLError_NoPermission: Insufficient Permissions", "nvml-query-refused"),
    ("pynvml.NVMLError_NotSupported: Not Supported", "nvml-query-refused"),
    ("pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found", "no-gpu-or-driver"),
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "no-gpu-or-driver"),
]


@pytest.mark.parametrize(("text", "rule_id"), NVML_ERRORS)
def test_an_nvml_error_is_told_by_what_it_means(text: str, rule_id: str) -> None:
    frames = ["humming/utils/device.py:calculate_gpu_bandwidth", "pynvml.py:nvmlDeviceGetMemoryBusWidth"]
    rule, captures = classify(CATALOG, text, [], frames, [text], "memory_profiling")
    assert rule is not None and rule.id == rule_id
    if rule_id == "nvml-query-refused":
        assert captures["query"] == "nvmlDeviceGetMemoryBusWidth"


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. Reason: ['kv_cache_dtype not supported']",
        "ValueError: Selected backend _Backend.FLASH_ATTN is not valid for this configuration. Reason: ['compute capability not supported']",
    ],
)
def test_a_chosen_attention_backend_refused_for_the_configuration_gives_its_reasons(text: str) -> None:
    frames = [
        "vllm/v1/attention/selector.py:_cached_get_attn_backend",
        "vllm/platforms/cuda.py:get_attn_backend_cls",
    ]
    rule, captures = classify(CATALOG, text, [], frames, [text], "model_loading")
    assert rule is not None and rule.id == "attention-backend-unsupported"
    assert "not supported" in captures["reasons"]


@pytest.mark.parametrize(
    ("frames", "rule_id"),
    [
        (
            ["vllm/engine/arg_utils.py:create_engine_config", "vllm/config/device.py:__post_init__"],
            "platform-detection-failed",
        ),
        (["my_app/loader.py:to_device"], "unrecognized"),  # (torch's words elsewhere: an empty device string)
    ],
)
def test_an_empty_device_string_is_no_platform_only_in_vllms_device_config(
    frames: list[str], rule_id: str
) -> None:
    text = "RuntimeError: Device string must not be empty"
    rule, _ = classify(CATALOG, text, [], frames, [text], "startup")
    assert rule is not None and rule.id == rule_id
