"""Every labelled real crash log classifies into the right family.

The root-cause line is the core's business (tests/core/test_corpus.py); here only the rule the
catalog picks for that root matters. Label categories are mapped to catalog families; where we
read a log differently from its label, the expected family is overridden below with the reason.
"""

from __future__ import annotations

import pytest

from support import CRASH, crash_labels, healthy_logs, read_log
from vllm_log_lsp.core.analyze import analyze

LABELS = crash_labels()

FAMILY_OF_CATEGORY = {
    "cuda_oom": "memory",
    "kv_cache_too_small": "memory",
    "dependency_import": "build_dependencies",
    "illegal_memory_access": "runtime_faults",
    "config_error": "config",
    "nccl": "parallelism",
    "scheduler_state_assertion": "scheduler",
    "shape_mismatch_quantization": "parallelism",
    "model_load": "model_loading",
    "cuda_graph_capture": "compile_graphs",
    "timeout_hang": "hangs",
}

# Logs labelled `other` (no family implied) and logs whose label we read differently.
EXPECTED_FAMILY = {
    # other: the server was stopped with SIGTERM; nothing crashed.
    "014.log": "shutdown",
    # other: the CPU backend failed parsing `lscpu -J` on WSL (platform support).
    "027.log": "gpu_platform",
    # other: an RL trainer's checkpoint file is missing; a missing file of the run.
    "030.log": "model_loading",
    # other: SIGBUS seen only in the core dump (a process death; /dev/shm is the likely cause).
    "031.log": "process",
    # Label `config_error`: `Address already in use` is a port clash with a leftover process, which
    # the catalog files under parallelism (processes, ports, networking), not a bad value.
    "019.log": "parallelism",
    # Label `config_error`: a script without `if __name__ == "__main__":` under spawn; the catalog
    # files multiprocessing start-method problems under parallelism.
    "028.log": "parallelism",
    # Label `cuda_graph_capture`: the failure is `CUDA error: out of memory` *during* capture; the
    # catalog's sub-type is the memory rule `oom-cuda-graph-capture`.
    "038.log": "memory",
    # Label `dependency_import`: `HIP error: invalid kernel file` means the ROCm libraries (RCCL)
    # have no code object for this GPU's gfx target: a GPU/platform support problem.
    "039.log": "gpu_platform",
}

# Specific rules the real logs must reach (guards against a generic rule shadowing them).
EXPECTED_RULE = {
    "002.log": "plugin-version-mismatch",
    "004.log": "moe-backend-invalid",
    "007.log": "oom-sampler-warmup",
    "011.log": "kv-cache-too-small",
    "014.log": "deliberate-stop",
    "021.log": "gpu-memory-in-use",
    "023.log": "stopped-during-startup",
    "024.log": "kv-connector-assertion",
    "028.log": "missing-main-guard",
    "029.log": "nccl-cuda-error",
    "032.log": "kv-cache-no-memory",
    "033.log": "hip-memory-fault-aiter",
    "034.log": "vllm-op-missing",
    "035.log": "quantized-weight-shape-vs-tp",
    "036.log": "model-file-missing",
    "038.log": "oom-cuda-graph-capture",
    "039.log": "rocm-no-kernels-for-gfx",
}


def _root_finding(label: dict):
    analysis = analyze(read_log(CRASH / label["file"]))
    found = [f for f in analysis.findings if f.line + 1 == label["root_cause_line"]]
    assert found, f"the core picked another root line than {label['root_cause_line']}"
    return found[0]


@pytest.mark.parametrize("label", LABELS, ids=[entry["file"] for entry in LABELS])
def test_root_classifies_into_family(label: dict) -> None:
    finding = _root_finding(label)
    expected = EXPECTED_FAMILY.get(label["file"]) or FAMILY_OF_CATEGORY[label["category"]]
    assert finding.family == expected, f"{finding.rule_id} ({finding.family}), expected {expected}"
    assert finding.recognized
    if label["file"] in EXPECTED_RULE:
        assert finding.rule_id == EXPECTED_RULE[label["file"]]


def test_every_log_has_a_recognized_finding() -> None:
    for label in LABELS:
        analysis = analyze(read_log(CRASH / label["file"]))
        assert all(f.recognized for f in analysis.findings), label["file"]


@pytest.mark.parametrize("path", healthy_logs(), ids=lambda p: p.name)
def test_healthy_logs_have_no_finding(path) -> None:
    assert not analyze(read_log(path)).findings
