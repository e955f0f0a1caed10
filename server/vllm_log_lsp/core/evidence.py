"""Evidence for people: a rule's capture names (`tried`, `total2`, `fit_len`) as words.

Captures are named for the rule's regexes; a hover or report shows what they mean. A name with
a number (`total2`, `path3`) is an alternative capture of one value (the rule's patterns spell
it several ways), so it reads like its base name and only the first of them is shown.
"""

from __future__ import annotations

from . import regexes

#: Names whose words alone would not say what the value is.
LABELS: dict[str, str] = {
    "tried": "tried to allocate",
    "free": "free on the device",
    "total": "device memory",
    "reserved": "reserved by PyTorch",
    "needed": "KV-cache memory needed",
    "available": "memory available",
    "fit_len": "longest context that fits",
    "max_model_len": "maximum model length",
    "max_len": "maximum length",
    "profile_len": "length profiled",
    "dummy_requests": "dummy requests warmed up at once",
    "desired": "memory asked for",
    "utilization": "GPU memory utilization",
    "initial_free": "free at start-up",
    "current_free": "free now",
    "mnbt": "max batched tokens",
    "max_num_seqs": "max concurrent sequences",
    "tp": "tensor-parallel size",
    "pp": "pipeline-parallel size",
    "world_size": "processes (world size)",
    "gfx": "GPU target",
    "sm": "compute capability",
    "capability": "compute capability",
    "min_capability": "compute capability needed",
    "gpu_name": "GPU",
    "gpus": "GPUs",
    "ms": "milliseconds",
    "seconds": "seconds",
    "gib": "GiB",
    "weights": "weights",
    "graph_memory": "CUDA-graph memory (estimated)",
    "cuda_error": "CUDA error",
    "cuda_failure": "CUDA failure",
    "hsa_error": "HSA (ROCm) error",
    "hccl_code": "HCCL error code",
    "ascend_code": "Ascend error code",
    "nccl_error": "NCCL error",
    "nccl_version": "NCCL version",
    "nccl_path": "NCCL library",
    "hf_error": "Hugging Face error",
    "json_error": "JSON error",
    "import_error": "import error",
    "dynamo_error": "torch.compile (Dynamo) error",
    "triton_error": "Triton error",
    "api": "library",
    "op": "operator",
    "arg_quant": "quantization asked for",
    "model_quant": "quantization of the checkpoint",
    "init_ip": "address",
    "init_port": "port",
    "rank_a": "rank",
    "rank_b": "other rank",
    "signum": "signal number",
    "failing_frame": "failing frame",
    "first_choice": "first valid choice",
    "what": "what failed",
    "rest": "detail",
    "inner": "inner error",
    "expr": "expression",
}

_ALTERNATIVE = regexes.compile(r"^(?P<base>.*?[a-z])\d+$")


def base_name(name: str) -> str:
    """`total2` → `total`: the value an alternative capture stands for."""
    found = _ALTERNATIVE.match(name)
    return found.group("base") if found else name


def label(name: str) -> str:
    """A capture name in words: `fit_len` → "longest context that fits", `head_size` → "head size"."""
    base = base_name(name)
    return LABELS.get(base, base.replace("_", " "))


def evidence_rows(evidence: dict[str, str]) -> list[tuple[str, str]]:
    """(label, value) per value the log gave, in the rule's order, each value once."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, value in evidence.items():
        base = base_name(name)
        if base in seen or not str(value).strip():
            continue
        seen.add(base)
        rows.append((label(name), str(value)))
    return rows
