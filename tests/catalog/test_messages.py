"""Rules stay in step with what vLLM prints: every template a rule lists (vllm_messages) must
classify into that rule, in every wording vLLM has used.

`data/vllm-errors.json` is a copy of the research file `vllm-errors.json`: exact message
templates extracted from vLLM's source, with f-string fields (`{expr}`) and %-style slots.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vllm_log_lsp.core.analyze import classify
from vllm_log_lsp.core.catalog import builtin_catalog

CATALOG = builtin_catalog()
TEMPLATES = {
    entry["id"]: entry
    for entry in json.loads((Path(__file__).parent / "data" / "vllm-errors.json").read_text())
}

# Plausible values for template slots, chosen by what the slot's expression names.
_SLOT_VALUES = [
    (r"architectures", "['MyModelForCausalLM']"),
    (r"supported_archs|all_supported", "['LlamaForCausalLM', 'Qwen2ForCausalLM']"),
    (r"estimated_msg", "Based on the available memory, the estimated maximum model length is 7680. "),
    (r"gpu_name", "Tesla V100-SXM2-32GB"),
    (r"compute_str", "has compute capability 7.0"),
    (r"compute_capability\[0\]", "7"),
    (r"compute_capability\[1\]", "0"),
    (r"get_min_capability|min_capability", "80"),
    (r"\bcapability\b", "75"),
    (r"device_name", "cuda"),
    (r"device_?\b|\.device_", "cuda:0"),
    (r"config_str", "head_size: 80, dtype: torch.float16, kv_cache_dtype: auto, block_size: 16"),
    (r"reasons_str", "['compute capability not supported']"),
    (r"hint", ""),
    (r"supported_dtypes|supported_quantization|keys\(\)|head_sizes|backend_members", "['a', 'b']"),
    (r"quant_method|quantization", "awq"),
    (r"\.dtype\b", "torch.bfloat16"),
    (r"backend_by_env_var", "FLASH_ATTN_V2"),
    (r"attn_type|min_cg_attn_backend", "FlashAttentionBackend"),
    (r"min_cg_support", "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE"),
    (r"cudagraph_mode\.name", "FULL"),
    (r"type\(model\)", "Qwen3NextForCausalLM"),
    (r"error_str", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"),
    (r"\bmethod\b", "execute_model"),
    (r"\burl\b", "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json"),
    (r"ray_import_err|\be\b", "No module named 'ray'"),
    (r"result", "CUDA error: an illegal memory access was encountered"),
    (r"repr\(error\)", "RuntimeError('boom')"),
    (r"finished", "{'EngineCore_DP0': 1}"),
    (r"prompt_type|operation", "decoder"),
    (r"qualifier|suggestion|\?", ""),
    (r"max_len_key", "max_position_embeddings"),
    (r"model_max_length", "None"),
    (r"format_gib|GiB|/ GiB_bytes|memory|in_use", "1.5"),
    (r"Process N has", "Process 1234 has 2.00 GiB memory in use. "),
]
# Whole-slot expansions for a few templates whose slot holds a sentence.
_MSG = {
    "max_model_len_gt_derived": (
        "User-specified max_model_len (40960) is greater than the derived max_model_len "
        "(max_position_embeddings=32768 or model_max_length=None in model's config.json)."
    ),
}
_PERCENT = {"%s": "16", "%d": "16", "%r": "'x'"}


def _value(expr: str) -> str:
    for pattern, value in _SLOT_VALUES:
        if re.search(pattern, expr):
            return value
    return "16"  # numbers fit numeric slots and `.+`/`\S+` captures alike


def _fill(template_id: str, template: str) -> str:
    def brace(match: re.Match) -> str:
        expr = match.group(1)
        if expr == "msg" and template_id in _MSG:
            return _MSG[template_id]
        return _value(expr)

    text = re.sub(r"\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", brace, template)
    return re.sub(r"%(?:\.\d+)?[sdrf]", lambda m: _PERCENT.get(m.group(0), "1.0"), text)


def _wordings(entry: dict) -> list[str]:
    return [entry["template"]] + [v["template"] for v in entry.get("variants", [])]


CLAIMS = [
    (rule, message_id, index, wording)
    for rule in CATALOG.rules
    for message_id in rule.vllm_messages
    for index, wording in enumerate(_wordings(TEMPLATES.get(message_id, {"template": ""})))
]


def test_listed_templates_exist() -> None:
    unknown = [(r.id, m) for r in CATALOG.rules for m in r.vllm_messages if m not in TEMPLATES]
    assert not unknown


@pytest.mark.parametrize(
    ("rule", "message_id", "index", "wording"),
    CLAIMS,
    ids=[f"{rule.id}-{mid}-{i}" for rule, mid, i, _ in CLAIMS],
)
def test_template_classifies_into_its_rule(rule, message_id: str, index: int, wording: str) -> None:
    text = _fill(message_id, wording)
    phase = rule.sample_phase or (rule.phases[0] if rule.phases else "startup")
    found, _ = classify(CATALOG, text, [], list(rule.sample_frames), list(rule.sample_context), phase)
    assert found is not None and found.id == rule.id, (
        f"{message_id}[{index}] -> {found.id if found else None}: {text!r}"
    )


def unclaimed_templates() -> list[str]:
    claimed = {m for r in CATALOG.rules for m in r.vllm_messages}
    return sorted(set(TEMPLATES) - claimed)


# Templates no rule claims on purpose: wrappers and symptoms (markers.toml), and warnings or
# notices that are never the cause of a death.
NOT_CAUSES = {
    "engine_dead",
    "engine_core_init_failed",
    "worker_failed_with_error",
    "v0_mq_engine_dead",
    "v0_async_engine_dead",
    "swap_space_too_large",
    "cudagraph_mem_profiling_notice",
    "kv_cache_memory_hint",
    "custom_allreduce_p2p",
    "custom_allreduce_pcie",
    "force_spawn",
    "port_in_use",
    "enforce_eager_notice",
    "unknown_vllm_env",
}


def test_every_cause_template_is_claimed() -> None:
    missing = [t for t in unclaimed_templates() if t not in NOT_CAUSES]
    assert not missing, f"templates of causes that no rule claims: {missing}"
