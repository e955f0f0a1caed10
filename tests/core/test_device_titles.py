"""Titles name the device that failed: from the error's own wording, else the run's platform.

The device a message names wins (`HIP out of memory` is ROCm whatever else the log says); a
message that names none (`torch.OutOfMemoryError: Tried to allocate …`, an NCCL or kernel fault)
takes the platform vLLM reported at start-up (`Automatically detected platform rocm`, a platform
plugin, the engine config's `device_config=npu`); without either a title says "GPU".
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze

PLATFORM_LINES = {
    "ROCm": "INFO 09-01 10:00:00 [__init__.py:207] Automatically detected platform rocm.",
    "CUDA": "INFO 09-01 10:00:00 [__init__.py:207] Automatically detected platform cuda.",
    "CPU": "INFO 09-01 10:00:00 [__init__.py:207] Automatically detected platform cpu.",
    "NPU": "INFO 09-01 10:00:00 [__init__.py:44] Platform plugin ascend is activated",
    "XPU": (
        "(EngineCore_DP0 pid=7) INFO 09-01 10:00:01 [core.py:77] Initializing a V1 LLM engine (v0.11.0) "
        "with config: model='m', tensor_parallel_size=1, device_config=xpu, seed=0"
    ),
}

DEVICELESS_OOM = "torch.OutOfMemoryError: Tried to allocate 2.00 GiB"
TRACEBACK = [
    "(EngineCore_DP0 pid=7) ERROR 09-01 10:00:05 [core.py:700] EngineCore failed to start.",
    "(EngineCore_DP0 pid=7) ERROR 09-01 10:00:05 [core.py:700] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 09-01 10:00:05 [core.py:700]   File "/x/vllm/v1/engine/core.py", line 1, in run',
    "(EngineCore_DP0 pid=7) ERROR 09-01 10:00:05 [core.py:700]     raise x",
]


def title_of(*lines: str) -> str:
    analysis = analyze("\n".join(lines) + "\n")
    assert analysis.findings, lines
    return analysis.findings[0].title


def crash(platform_line: str | None, error: str) -> list[str]:
    return ([platform_line] if platform_line else []) + [
        *TRACEBACK,
        f"(EngineCore_DP0 pid=7) ERROR 09-01 10:00:05 [core.py:700] {error}",
    ]


@pytest.mark.parametrize("device", sorted(PLATFORM_LINES))
def test_a_message_without_a_device_takes_the_runs_platform(device: str) -> None:
    assert title_of(*crash(PLATFORM_LINES[device], DEVICELESS_OOM)).startswith(f"{device} ")


def test_without_a_platform_the_title_says_gpu() -> None:
    assert title_of(*crash(None, DEVICELESS_OOM)).startswith("GPU ")


@pytest.mark.parametrize(
    "error, device",
    [
        ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.53 GiB.", "ROCm"),
        (
            "RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB (NPU 0; 60.96 GiB total capacity)",
            "NPU",
        ),
        ("RuntimeError: XPU out of memory. Tried to allocate 500.00 MiB", "XPU"),
    ],
)
def test_the_device_the_message_names_wins_over_the_platform(error: str, device: str) -> None:
    assert title_of(*crash(PLATFORM_LINES["CUDA"], error)).startswith(f"{device} ")


@pytest.mark.parametrize(
    "error, platform, title",
    [
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            None,
            "CUDA illegal memory access",
        ),
        (
            "RuntimeError: HIP error: an illegal memory access was encountered",
            None,
            "ROCm illegal memory access",
        ),
        ("RuntimeError: an illegal memory access was encountered", "ROCm", "ROCm illegal memory access"),
        (
            "torch.AcceleratorError: CUDA error: an illegal instruction was encountered",
            None,
            "CUDA illegal instruction",
        ),
        ("RuntimeError: HIP error: unspecified launch failure", None, "ROCm illegal instruction"),
        ("RuntimeError: CUDA error: invalid argument", None, "CUDA runtime error"),
        ("RuntimeError: HIP error: invalid argument", None, "ROCm runtime error"),
        (
            "RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx`",
            None,
            "CUDA runtime error",
        ),
    ],
)
def test_kernel_faults_name_their_runtime(error: str, platform: str | None, title: str) -> None:
    assert title_of(*crash(PLATFORM_LINES.get(platform or ""), error)) == title


@pytest.mark.parametrize("device", ["ROCm", "NPU"])
def test_cuda_wording_on_a_platform_behind_the_cuda_api_names_that_platform(device: str) -> None:
    """ROCm's PyTorch is `torch.cuda` (HIP underneath) and torch_npu can stand in for it: there
    "CUDA out of memory" or "CUDA error" names the API, the device is the platform's."""
    error = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert title_of(*crash(PLATFORM_LINES[device], error)).startswith(f"{device} ")
    fault = "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert title_of(*crash(PLATFORM_LINES[device], fault)) == f"{device} illegal memory access"


@pytest.mark.parametrize("device", ["CUDA", "CPU", "XPU"])
def test_cuda_wording_elsewhere_stays_cuda(device: str) -> None:
    error = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert title_of(*crash(PLATFORM_LINES[device], error)).startswith("CUDA ")
