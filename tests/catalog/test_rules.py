"""Every built-in rule: well formed, its samples match it (and no earlier rule), its fixes
spell flags that exist in the vLLM versions they are offered for."""

from __future__ import annotations

import re

import pytest

from vllm_log_lsp.core.analyze import classify
from vllm_log_lsp.core.catalog import FAMILIES, builtin_catalog
from vllm_log_lsp.core.values import resolve_op
from vllm_log_lsp.core.versions import in_range, parse_version

CATALOG = builtin_catalog()
RULES = CATALOG.rules
SAMPLES = [(rule, sample) for rule in RULES for sample in rule.samples]


def classify_sample(rule, text: str):
    phase = rule.sample_phase or (rule.phases[0] if rule.phases else "startup")
    frames = list(rule.sample_frames)
    return classify(CATALOG, text, [], frames, list(rule.sample_context), phase)


def test_catalog_loads_cleanly() -> None:
    assert not CATALOG.errors, [str(e) for e in CATALOG.errors]


def test_enough_rules_and_unique_ids() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids)), "duplicate rule ids"
    causes = [rule for rule in RULES if rule.family != "unrecognized"]
    assert len(causes) >= 55


def test_fallback_is_last() -> None:
    assert RULES[-1].id == "unrecognized"


@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_rule_is_documented(rule) -> None:
    assert rule.family in FAMILIES
    assert rule.samples, "every rule needs at least one real sample"
    assert rule.explanation and rule.summary
    if rule.family not in ("unrecognized",):
        assert rule.fixes or rule.next_steps, "a cause needs something to do"


@pytest.mark.parametrize(
    ("rule", "sample"), SAMPLES, ids=[f"{rule.id}-{i}" for i, (rule, _) in enumerate(SAMPLES)]
)
def test_sample_matches_its_own_rule_first(rule, sample: str) -> None:
    found, _ = classify_sample(rule, sample)
    assert found is not None and found.id == rule.id, (
        f"sample of {rule.id} classified as {found.id if found else None}"
    )


# -- flag and environment history (vllm-facts.md, sections 5 and 6) ---------------------------
# flag -> versions in which it exists
FLAG_HISTORY = {
    "--attention-backend": ">=0.13",
    "--max-cudagraph-capture-size": ">=0.11.2",
    "--cudagraph-capture-sizes": ">=0.11.2",
    "--swap-space": "<0.18",
    "--optimization-level": ">=0.12",
    "--kv-cache-memory-bytes": ">=0.10.2",
    "--max-seq-len-to-capture": "<0.11",
    "--disable-async-output-proc": "<0.11",
    "--guided-decoding-backend": "<0.11",
}
ENV_HISTORY = {
    "VLLM_ATTENTION_BACKEND": "<0.15",
    "VLLM_USE_V1": "<0.11",
    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": ">=0.9.2",
    "VLLM_ENGINE_READY_TIMEOUT_S": ">=0.14.1",
    "VLLM_ENGINE_ITERATION_TIMEOUT_S": "<0.11",
    "VLLM_RPC_TIMEOUT": "<0.11",
}
PROBES = [
    parse_version(v)
    for v in (
        "0.6.3",
        "0.8.5",
        "0.9.2",
        "0.10.2",
        "0.11.0",
        "0.11.2",
        "0.12.0",
        "0.13.0",
        "0.14.1",
        "0.17.1",
        "0.18.1",
        "0.25.0",
        "0.33.0",
    )
]
FIXES = [(rule, fix) for rule in RULES for fix in rule.fixes]


@pytest.mark.parametrize(("rule", "fix"), FIXES, ids=[f"{rule.id}-{i}" for i, (rule, _) in enumerate(FIXES)])
def test_fix_spells_flags_that_exist(rule, fix) -> None:
    for op in fix.ops:
        history = FLAG_HISTORY.get(op.name) if op.op != "set_env" else ENV_HISTORY.get(op.name)
        assert op.name != "--cudagraph-mode", "no --cudagraph-mode flag exists: use -cc.cudagraph_mode"
        assert op.name != "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "never advise the long-max-model-len override"
        if history is None:
            continue
        for version in PROBES:
            if in_range(version, fix.versions):
                assert in_range(version, history), (
                    f"{rule.id}: {op.name} offered for {'.'.join(map(str, version))} "
                    f"but exists only {history}"
                )


def test_no_fix_advises_long_max_model_len_override() -> None:
    for rule in RULES:
        for fix in rule.fixes:
            text = f"{fix.title} {fix.detail}"
            assert not re.search(r"VLLM_ALLOW_LONG_MAX_MODEL_LEN\s*=\s*1", text), rule.id


def _groups(rule) -> set[str]:
    names: set[str] = set()
    for pattern in rule.match + rule.evidence:
        names |= set(pattern.compiled.groupindex)
    return names


@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_placeholders_and_captures_exist(rule) -> None:
    groups = _groups(rule)
    assert set(re.findall(r"\{(\w+)\}", rule.message)) <= groups, "message names an unknown capture"
    # The explanation is shown as is: it must not rely on evidence placeholders.
    assert not re.findall(r"\{(\w+)\}", rule.explanation)
    for fix in rule.fixes:
        for op in fix.ops:
            for name in (op.value.capture, op.value.base_capture) if op.value else ():
                assert name is None or name in groups, f"{fix.title}: unknown capture {name}"


@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_fixes_resolve_for_the_first_sample(rule) -> None:
    _, captures = classify_sample(rule, rule.samples[0])
    for fix in rule.fixes:
        for op in fix.ops:
            resolved = resolve_op(op, captures, None)
            uses_capture = op.value is not None and op.value.capture and not op.value.derive
            if uses_capture and op.value.literal is None and op.value.capture not in captures:
                continue  # the value only exists when the log carries it
            assert resolved is not None, f"{fix.title}: {op.name} has no value"


def test_patterns_compile_under_the_stdlib_engine() -> None:
    """The catalog falls back to `re` where `regex` is missing (a bundled copy): every built-in
    pattern must compile there too (no global flag mid-pattern, no duplicate group names)."""
    bad = []
    for rule in RULES:
        for pattern in rule.match + rule.frames + rule.context + rule.evidence:
            try:
                re.compile(pattern.source)
            except re.error as err:
                bad.append(f"{rule.id}: {pattern.source!r}: {err}")
    for kind, markers in CATALOG.markers.items():
        for marker in markers:
            try:
                re.compile(marker.pattern.source)
            except re.error as err:
                bad.append(f"{kind} {marker.id}: {err}")
    assert not bad, bad


@pytest.mark.parametrize(
    ("frames", "phase", "expected"),
    [
        (["/x/torch/cuda/graphs.py:capture_end"], "", "cudagraph-capture-not-permitted"),
        ([], "cuda_graph_capture", "cudagraph-capture-not-permitted"),
        (["/x/vllm/v1/worker/gpu_model_runner.py:execute_model"], "serving", "cuda-error"),
    ],
)
def test_operation_not_permitted_is_a_capture_failure_only_where_capture_ran(frames, phase, expected) -> None:
    """`cudaErrorNotPermitted` at the end of a graph capture is the capture's failure; the same
    words elsewhere are a plain CUDA error."""
    text = "torch.AcceleratorError: CUDA error: operation not permitted"
    found, _ = classify(CATALOG, text, [text], frames, [], phase)
    assert found is not None and found.id == expected


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        (
            ["/x/vllm/v1/worker/gpu_worker.py:init_device", "/x/torch/cuda/__init__.py:set_device"],
            "gpu-index-not-visible",
        ),
        (["/x/vllm/worker/worker.py:init_device"], "gpu-index-not-visible"),
        (["/x/vllm/v1/worker/gpu_model_runner.py:execute_model"], "cuda-error"),
        ([], "cuda-error"),
    ],
)
def test_invalid_device_ordinal_is_a_layout_problem_only_where_a_worker_selects_its_gpu(
    frames, expected
) -> None:
    """`invalid device ordinal` while a worker selects its GPU is a parallel layout wider than
    the visible devices; the same words elsewhere are a plain CUDA error."""
    text = "torch.AcceleratorError: CUDA error: invalid device ordinal"
    found, _ = classify(CATALOG, text, [text], frames, [], "")
    assert found is not None and found.id == expected


@pytest.mark.parametrize(
    ("text", "frames", "expected"),
    [
        # a plugin importing a vLLM module this vLLM lacks
        (
            "ModuleNotFoundError: No module named 'vllm.v1.worker.gpu_input_batch'",
            ["/x/vllm_ascend/worker/model_runner_v1.py:__init__"],
            "plugin-version-mismatch",
        ),
        # the same words from vLLM's own code: its compiled extension was never built (or the
        # source folder shadows the installed package)
        (
            "ModuleNotFoundError: No module named 'vllm._C'",
            ["/x/vllm/_custom_ops.py:<module>"],
            "vllm-extension-not-built",
        ),
        ("ModuleNotFoundError: No module named 'vllm._moe_C'", [], "vllm-extension-not-built"),
        # another of vLLM's modules missing from vLLM's own frames: a broken install
        (
            "ModuleNotFoundError: No module named 'vllm.third_party'",
            ["/x/vllm/_custom_ops.py:<module>"],
            "missing-python-module",
        ),
        # vLLM asking the plugin for a module this plugin release lacks, from vLLM's frames
        (
            "ModuleNotFoundError: No module named 'vllm_ascend.compilation'",
            ["/x/vllm/utils.py:resolve_obj_by_qualname"],
            "plugin-module-missing",
        ),
        # a plugin that is not installed at all is a missing package
        ("ModuleNotFoundError: No module named 'vllm_ascend'", [], "missing-python-module"),
    ],
)
def test_a_module_missing_between_vllm_and_its_plugin_is_a_version_mismatch(text, frames, expected) -> None:
    found, _ = classify(CATALOG, text, [text], frames, [], "")
    assert found is not None and found.id == expected


@pytest.mark.parametrize(
    ("frames", "is_mismatch"),
    [
        (
            [
                "/x/vllm/transformers_utils/tokenizer.py:get_cached_tokenizer",
                "/x/transformers/tokenization_utils_base.py:__getattr__",
            ],
            True,
        ),
        (["/x/vllm/config.py:__init__", "/x/transformers/configuration_utils.py:__getattribute__"], True),
        (["/x/vllm/model_executor/models/llama.py:forward"], False),  # vLLM's own object: not transformers'
    ],
)
def test_an_attribute_only_transformers_refuses_is_a_transformers_mismatch(frames, is_mismatch: bool) -> None:
    text = "AttributeError: TokenizersBackend has no attribute all_special_tokens_extended"
    found, _ = classify(CATALOG, text, [text], frames, [], "")
    assert (found is not None and found.id == "transformers-api-mismatch") == is_mismatch


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("161002", "ascend-operator-bad-arguments"),  # ACLNN_ERR_PARAM_INVALID: the caller's inputs
        ("161001", "ascend-operator-bad-arguments"),  # ACLNN_ERR_PARAM_NULLPTR
        ("561103", "ascend-operator-failed"),  # an inner error: kernels, chip, versions
        ("561002", "ascend-operator-failed"),
    ],
)
def test_an_aclnn_parameter_check_is_the_callers_inputs_not_the_installation(
    code: str, expected: str
) -> None:
    text = f"RuntimeError: addmm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:112 NPU function error: call aclnnAddmm failed, error code is {code}"
    frames = ["/x/torch_npu/utils/_module.py:forward", "/x/vllm_ascend/ops/linear.py:apply"]
    found, _ = classify(CATALOG, text, [text], frames, ["Ascend"], "")
    assert found is not None and found.id == expected


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: MT5ForConditionalGeneration has no vLLM implementation and the Transformers implementation is not compatible with vLLM.",
        "ValueError: BartModel has no vLLM implementation and the Transformers implementation is not compatible with vLLM. Try setting VLLM_USE_V1=0.",
        "ValueError: Model architectures ['MyNewForCausalLM'] are not supported for now. Supported architectures: dict_keys(['LlamaForCausalLM'])",
    ],
)
def test_an_architecture_neither_vllm_nor_its_transformers_fallback_runs_is_unsupported(text: str) -> None:
    frames = ["/x/vllm/model_executor/model_loader/utils.py:resolve_transformers_fallback"]
    found, captures = classify(CATALOG, text, [text], frames, [], "model_loading")
    assert found is not None and found.id == "model-architecture-unsupported"
    assert captures["architectures"] in text
    # (a fallback that works is a warning, no death)
    quiet = (
        "MT5ForConditionalGeneration has no vLLM implementation, falling back to Transformers implementation."
    )
    other, _ = classify(CATALOG, quiet, [], [], [], "model_loading")
    assert other is None or other.id != "model-architecture-unsupported"


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        # the separate package, from a vision encoder of 0.11 or the shared encoder attention later
        (
            "/venv/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py:_flash_attn_varlen_forward",
            True,
        ),
        ("/usr/local/lib/python3.12/dist-packages/flash_attn/flash_attn_interface.py:forward", True),
        # vLLM's own build says the same words for another reason
        (
            "/usr/local/lib/python3.12/dist-packages/vllm/vllm_flash_attn/flash_attn_interface.py:flash_attn_varlen_func",
            False,
        ),
    ],
)
@pytest.mark.parametrize("seqlens", ["cu_seqlens_q", "cu_seqlens_k"])
def test_the_separate_flash_attn_package_in_a_vision_encoder_is_named_by_its_frames(
    frame: str, expected: bool, seqlens: str
) -> None:
    text = f"RuntimeError: {seqlens} must be on CUDA"
    frames = ["/x/vllm/model_executor/models/qwen2_5_vl.py:forward", frame]
    found, _ = classify(CATALOG, text, [text], frames, [], "memory_profiling")
    named = found is not None and found.id == "flash-attn-package-in-vision-encoder"
    assert named == expected


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("ImportError: Numba needs NumPy 2.2 or less. Got NumPy 2.4.", "2.4"),
        ("ImportError: Numba needs NumPy 1.24 or greater. Got NumPy 1.23.5.", "1.23.5"),
        ("(EngineCore_DP0 pid=7) ImportError: Numba needs NumPy 2.0 or less. Got NumPy 2.1.", "2.1"),
    ],
)
def test_a_dependency_version_a_package_refuses_at_import_is_a_version_conflict(
    text: str, found: str
) -> None:
    frames = ["/x/vllm/v1/spec_decode/ngram_proposer.py:<module>", "/x/numba/__init__.py:<module>"]
    rule, captures = classify(CATALOG, text, [text], frames, [], "startup")
    assert rule is not None and rule.id == "package-version-conflict"
    assert captures["found"] == found and captures["dependency"] == "NumPy"


@pytest.mark.parametrize(
    ("op", "allocation"),
    [
        ("new_empty", True),
        ("empty", True),
        ("new_zeros", True),
        ("empty_strided", True),
        ("mm", False),
        ("copy_", False),
    ],
)
def test_a_stable_abi_call_that_failed_is_memory_only_for_an_allocation(op: str, allocation: bool) -> None:
    """torch's stable ABI reports a failed ATen call without its reason: for an allocation the
    reason is nearly always memory; for any other op nothing says which."""
    text = (
        f'RuntimeError: torch_call_dispatcher( "aten::{op}", "", stack.data(), TORCH_ABI_VERSION) API call failed'
        " at /build/torch/include/torch/csrc/stable/ops.h:150"
    )
    frames = ["/x/vllm/third_party/flashmla/flash_mla_interface.py:flash_mla_with_kvcache"]
    rule, captures = classify(CATALOG, text, [text], frames, [], "serving")
    assert (rule is not None and rule.id == "kernel-allocation-failed") == allocation
    if allocation:
        assert captures["op"] == op


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "ValueError: Unsupported mxfp4_backend for Mxfp4MoEMethod: Mxfp4MoeBackend.FLASHINFER_CUTLASS_MXFP4_MXFP8. Expected TRTLLM, Triton, AITER, or XPU backend.",
            "FLASHINFER_CUTLASS_MXFP4_MXFP8",
        ),
        (
            "ValueError: Unsupported nvfp4_backend for ModelOptNvFp4FusedMoE: NvFp4MoeBackend.MARLIN. Expected CUTLASS or FLASHINFER_TRTLLM backends.",
            "MARLIN",
        ),
    ],
)
def test_a_moe_backend_the_quantization_method_cannot_convert_for_is_named(text: str, value: str) -> None:
    # (also when the draft model's loading runs the conversion: the message names the cause)
    frames = [
        "/x/vllm/v1/spec_decode/eagle.py:load_model",
        "/x/vllm/model_executor/layers/fused_moe/oracle/mxfp4.py:convert_weight_to_mxfp4_moe_kernel_format",
    ]
    rule, captures = classify(CATALOG, text, [text], frames, [], "model_loading")
    assert rule is not None and rule.id == "moe-backend-unsupported-by-method"
    assert captures["value"] == value


@pytest.mark.parametrize(("seqs", "blocks"), [("1024", "578"), ("256", "31"), ("64", "1")])
def test_fewer_mamba_cache_blocks_than_sequences_sets_max_num_seqs_to_the_blocks(
    seqs: str, blocks: str
) -> None:
    text = (
        f"ValueError: max_num_seqs ({seqs}) exceeds available Mamba cache blocks ({blocks}). Each decode sequence "
        f"requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at "
        f"most {blocks} or increase gpu_memory_utilization."
    )
    frames = ["/x/vllm/config/compilation.py:resolve_cudagraph_mode_and_sizes"]
    rule, captures = classify(CATALOG, text, [text], frames, [], "memory_profiling")
    assert rule is not None and rule.id == "mamba-cache-blocks-short"
    assert (captures["max_num_seqs"], captures["blocks"]) == (seqs, blocks)
    [first, _] = rule.fixes
    [op] = [resolve_op(op, captures, None) for op in first.ops]
    assert op is not None and (op.op.name, op.value) == ("--max-num-seqs", blocks)
