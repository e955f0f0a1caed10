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
