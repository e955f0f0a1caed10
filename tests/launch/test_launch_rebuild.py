"""The fixed launch command when the workspace has no launch script."""

from __future__ import annotations

import shlex

from vllm_log_lsp.core.model import FixOp, RunContext, ValueSpec
from vllm_log_lsp.launch import rebuild_command

HALVE = FixOp("set_flag", "--max-num-seqs", ValueSpec(derive="halve", default="256"))
EAGER = FixOp("add_flag", "--enforce-eager")
GRAPHS = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode")
BLOCKING = FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1"))


def test_log_args_plus_fix_with_flags_updated_in_place() -> None:
    context = RunContext(
        vllm_version="0.11.0",
        model="meta-llama/Llama-3.1-8B-Instruct",
        args={
            "--model": "meta-llama/Llama-3.1-8B-Instruct",
            "--max-num-seqs": "512",
            "--tensor-parallel-size": "2",
        },
    )
    command = rebuild_command(context, [HALVE, EAGER])
    assert command == (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 256 "
        "--tensor-parallel-size 2 --enforce-eager"
    )


def test_env_becomes_a_prefix_and_json_follows_the_version() -> None:
    context = RunContext(vllm_version="0.8.5", model="m", args={})
    command = rebuild_command(context, [BLOCKING, GRAPHS])
    assert (
        command == 'CUDA_LAUNCH_BLOCKING=1 vllm serve m --compilation-config \'{"cudagraph_mode": "NONE"}\''
    )


def test_logged_python_values_become_flags() -> None:
    context = RunContext(
        vllm_version="0.12.0",
        model="m",
        args={
            "--trust-remote-code": "True",
            "--enable-prefix-caching": "False",
            "--compilation-config": "{'level': 3}",
            "--quantization": "None",
        },
    )
    command = rebuild_command(context, [GRAPHS])
    assert shlex.split(command) == [
        "vllm",
        "serve",
        "m",
        "--trust-remote-code",
        "--no-enable-prefix-caching",
        "--compilation-config",
        '{"level": 3, "cudagraph_mode": "NONE"}',
    ]


def test_unknown_model_is_a_placeholder() -> None:
    assert rebuild_command(RunContext(), [EAGER]) == "vllm serve MODEL --enforce-eager"
