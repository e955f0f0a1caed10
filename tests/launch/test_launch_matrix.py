"""Every fix operation on every fixture shape: parses, once, intended value, idempotent, local."""

from __future__ import annotations

import pytest

from launch.launch_support import check_fix, context_for, fixture_names, load
from vllm_log_lsp.core.model import FixOp, ValueSpec
from vllm_log_lsp.launch import fix_text

OPS: dict[str, FixOp] = {
    "add_flag": FixOp("add_flag", "--enforce-eager"),
    "set_flag_halve": FixOp(
        "set_flag", "--max-num-seqs", ValueSpec(derive="halve", default="256", minimum=1)
    ),
    "set_flag_literal": FixOp("set_flag", "--gpu-memory-utilization", ValueSpec(literal="0.85")),
    "merge_json": FixOp(
        "merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode"
    ),
    "set_env_new": FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1")),
    "set_env_existing": FixOp("set_env", "VLLM_LOGGING_LEVEL", ValueSpec(literal="DEBUG")),
}

#: (fixture, op, version) combinations that must be refused, and a word of the reason.
EXPECTED_SKIPS = {
    # a JSON object with ": " cannot be appended to an unquoted YAML string command
    ("compose_string.yml", "merge_json", "0.8.5"): "unquoted YAML string",
}


@pytest.mark.parametrize("name", fixture_names())
@pytest.mark.parametrize("op_name", sorted(OPS))
def test_each_operation(name: str, op_name: str) -> None:
    path, text = load(name)
    check_fix(path, text, [OPS[op_name]])


@pytest.mark.parametrize("name", fixture_names())
@pytest.mark.parametrize("version", [None, "0.8.5", "0.11.0", "0.12.0"])
def test_merge_json_across_versions(name: str, version: str | None) -> None:
    path, text = load(name)
    skip = EXPECTED_SKIPS.get((name, "merge_json", version))
    if skip:
        context = context_for(path, text, version=version)
        result = fix_text(text, path, [OPS["merge_json"]], context=context)
        assert result.status == "skipped" and skip in result.reason
        assert result.new_text == text and not result.edits
        return
    check_fix(path, text, [OPS["merge_json"]], version=version)


@pytest.mark.parametrize("name", fixture_names())
def test_all_operations_together(name: str) -> None:
    path, text = load(name)
    check_fix(path, text, list(OPS.values()), version="0.11.0")
