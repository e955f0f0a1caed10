"""Every fix operation on every fixture shape: parses, once, intended value, idempotent, local,
and the same with CRLF line ends (Windows editors, `git config core.autocrlf`)."""

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
    # nor a JSON object with blanks to a shell string that the command splits into words
    ("string_args.sh", "merge_json", "0.8.5"): "splits into words",
}


LINE_ENDS = pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])


def load_with(name: str, eol: str) -> tuple[str, str]:
    path, text = load(name)
    return path, text.replace("\n", eol)


@pytest.mark.parametrize("name", fixture_names())
@pytest.mark.parametrize("op_name", sorted(OPS))
@LINE_ENDS
def test_each_operation(name: str, op_name: str, eol: str) -> None:
    path, text = load_with(name, eol)
    result = check_fix(path, text, [OPS[op_name]])
    if eol != "\n":  # the same edit as on the LF file, with the file's line ends
        lf_result = check_fix(*load(name), [OPS[op_name]])
        assert result.new_text == lf_result.new_text.replace("\n", eol)


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
@LINE_ENDS
def test_all_operations_together(name: str, eol: str) -> None:
    path, text = load_with(name, eol)
    check_fix(path, text, list(OPS.values()), version="0.11.0")
