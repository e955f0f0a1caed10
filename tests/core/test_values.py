"""Fix values computed from the log, and flag spellings that exist in the log's vLLM version."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.model import FixOp, ValueSpec
from vllm_log_lsp.core.values import canonical_flag, resolve_op, resolve_value, spell_op
from vllm_log_lsp.core.versions import in_range, parse_version


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.11.2.dev7+ge10703fe8", (0, 11, 2)),
        ("0.19.2rc1.dev8", (0, 19, 2)),
        ("0.10.1.1", (0, 10, 1, 1)),
        ("v0.9", (0, 9, 0)),
        ("", None),
    ],
)
def test_parse_version(text: str, expected) -> None:
    assert parse_version(text) == expected


def test_in_range() -> None:
    assert in_range((0, 12, 0), ">=0.11.2,<0.18")
    assert not in_range((0, 18, 1), ">=0.11.2,<0.18")
    assert in_range(None, ">=1.0")  # unknown version: show the fix
    with pytest.raises(ValueError):
        in_range((0, 1, 0), "~=1.0")


def test_canonical_flag() -> None:
    assert canonical_flag("max_num_seqs") == "--max-num-seqs"
    assert canonical_flag("--max_num_seqs") == "--max-num-seqs"
    assert canonical_flag("-cc.cudagraph_mode") == "--compilation-config.cudagraph_mode"
    assert canonical_flag("-tp") == "--tensor-parallel-size"
    assert canonical_flag("-O3") == "-O3"


def test_derivation_prefers_script_then_log_evidence_then_args_then_default() -> None:
    spec = ValueSpec(derive="halve", base_capture="dummy", default="256", minimum=1)
    assert resolve_value(spec, {"dummy": "1024"}, current="300", log_value="512")[0] == "150"
    assert resolve_value(spec, {"dummy": "1024"}, log_value="512")[0] == "512"
    assert resolve_value(spec, {}, log_value="512")[0] == "256"
    assert resolve_value(spec, {})[0] == "128"
    assert resolve_value(ValueSpec(derive="step_down", default="0.9"), {})[0] == "0.85"
    assert (
        resolve_value(ValueSpec(derive="step_up", default="0.9", maximum=0.95), {}, current="0.93")[0]
        == "0.95"
    )
    assert (
        resolve_value(ValueSpec(capture="fit", derive="halve", default="8192"), {"fit": "10,224"})[0]
        == "10224"
    )


@pytest.mark.parametrize(
    ("version", "spelling"),
    [
        ("0.8.5", """--compilation-config '{"cudagraph_mode": "NONE"}'"""),
        ("0.10.2", "--compilation-config.cudagraph_mode=NONE"),
        ("0.12.0", "-cc.cudagraph_mode=NONE"),
        (None, "-cc.cudagraph_mode=NONE"),
    ],
)
def test_json_flag_spelling_follows_the_version(version, spelling: str) -> None:
    op = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode")
    assert spell_op(op, "NONE", parse_version(version)) == spelling


def test_resolve_op_needs_a_value() -> None:
    op = FixOp("set_flag", "--max-model-len", ValueSpec(capture="fit"))
    assert resolve_op(op, {}, None) is None
    resolved = resolve_op(op, {"fit": "7680"}, None)
    assert resolved is not None and resolved.spelling == "--max-model-len 7680"
    env = resolve_op(FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1")), {}, None)
    assert env is not None and env.spelling == "CUDA_LAUNCH_BLOCKING=1"
    assert FixOp("add_flag", "--enforce-eager").kwarg == "enforce_eager"


def test_builtin_rule_files_load_lazily_and_cleanly() -> None:
    from vllm_log_lsp.core.catalog import _builtin_files, build_catalog

    catalog = build_catalog(_builtin_files(), [])
    assert catalog.markers_of("symptom")  # markers are there at once
    first = next(catalog.iter_rules())
    assert first.id and catalog._pending  # only the first rule file was read
    ids = [r.id for r in catalog.rules]
    assert not catalog._pending and catalog.errors == []
    assert ids[-1] == "unrecognized" and len(ids) == len(set(ids))
    assert [r.id for r in catalog.iter_rules()] == ids
