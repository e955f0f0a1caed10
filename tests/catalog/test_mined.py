"""The mined message index (`mined/messages.json.gz`, written by scripts/mine_messages.py) and the
causes named from where a message is raised (`mined/families.toml`)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import regex

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.catalog import FAMILIES, builtin_catalog
from vllm_log_lsp.core.mined import (
    DATA_FILE,
    MessageIndex,
    MessageMatch,
    Template,
    best_match,
    encode_index,
    match_parts,
    message_index,
    message_of,
)
from vllm_log_lsp.core.origins import families, family_of, vllm_component
from vllm_log_lsp.core.versions import parse_version

INDEX = message_index()
TEMPLATES = list(INDEX)
VLLM = [t for t in TEMPLATES if t.package == "vllm"]


def test_index_covers_every_mined_release_and_package() -> None:
    assert set(INDEX.packages) >= {"vllm", "transformers", "huggingface_hub", "pydantic", "ray", "torch"}
    releases = INDEX.packages["vllm"]
    assert releases[0].startswith("0.4") and len(releases) >= 12
    assert [parse_version(r) for r in releases] == sorted(parse_version(r) for r in releases)
    counts = INDEX.templates_per_release["vllm"]
    assert len(counts) == len(releases) and all(n > 200 for n in counts)
    assert len(VLLM) > 5000


def test_templates_compile_and_none_is_only_placeholders() -> None:
    for template in TEMPLATES:
        assert len(template.parts) % 2 == 1, template
        assert all(re.fullmatch(r"[A-Za-z_]\w*", name) for name in template.names), template
        assert len(set(template.names)) == len(template.names), template
        assert re.search(r"[A-Za-z]{3,}.*[A-Za-z]{3,}", "".join(template.literals)), template
        re.compile(template.regex())
        regex.compile(template.regex())
        assert template.sites and template.kind


def _fill(template: Template, rng: random.Random) -> str:
    """The template with realistic values for its placeholders (chosen by their names)."""
    values = {}
    for name in template.names:
        if re.search(r"len|size|num|count|tokens|blocks|rank|world|bytes|dim|heads", name):
            value = str(rng.choice([1, 8, 4096, 16384, 131072]))
        elif "dtype" in name:
            value = rng.choice(["torch.float16", "bfloat16", "fp8_e4m3"])
        elif "model" in name or "repo" in name:
            value = rng.choice(["meta-llama/Llama-3.1-8B-Instruct", "/models/qwen2.5-7b"])
        elif "path" in name or "file" in name or "dir" in name:
            value = "/root/.cache/huggingface/hub/config.json"
        elif "memory" in name or "gib" in name:
            value = "3.52"
        else:
            value = rng.choice(["auto", "Qwen2ForCausalLM", "'cuda:0'", "None", "[0, 1]"])
        values[name] = value
    out = []
    for i, part in enumerate(template.parts):
        out.append(part if i % 2 == 0 else values[part])
    return "".join(out)


def test_match_agrees_with_the_templates_regex() -> None:
    rng = random.Random(10)
    for template in rng.sample(TEMPLATES, 2000):
        text = _fill(template, rng)
        found = re.fullmatch(template.regex(), text, re.S)
        assert found is not None, template
        assert template.match(text) == {k: v for k, v in found.groupdict().items()}, template
        assert template.match(text + " and more") is None or template.parts[-1] == ""


# The family a message raised in these modules must get, written here from the issue (not read
# from families.toml): the modules' meaning in vLLM's source tree.
EXPECTED_FAMILY = {
    "vllm/engine/arg_utils.py": "config",
    "vllm/config": "config",
    "vllm/model_executor/model_loader/": "model_loading",
    "vllm/transformers_utils/": "model_loading",
    "vllm/distributed/": "parallelism",
    "vllm/v1/core/": "scheduler",
    "vllm/attention/": "gpu_platform",
    "vllm/platforms/": "gpu_platform",
    "vllm/compilation/": "compile_graphs",
}


def _log_with(type_name: str, message: str, module: str) -> str:
    """A V1 start-up death as vLLM 0.11 prints it, with `message` raised in `module`."""
    head = "(EngineCore_DP0 pid=7) ERROR 10-01 10:00:01 [core.py:708]"
    return "\n".join(
        [
            "INFO 10-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
            f"{head} EngineCore failed to start.",
            f"{head} Traceback (most recent call last):",
            f'{head}   File "/usr/lib/python3.12/site-packages/{module}", line 10, in check',
            f"{head}     raise_it()",
            f"{head} {type_name}: {message}",
            "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {'EngineCore_DP0': 1}",
            "",
        ]
    )


def _sample_for_family():
    rng = random.Random(7)
    chosen = []
    for prefix, family in EXPECTED_FAMILY.items():
        pool = [
            t
            for t in VLLM
            if t.sites[0].module.startswith(prefix)
            and not t.kind.startswith("log.")
            and t.kind not in ("ImportError", "ModuleNotFoundError")  # a missing package, wherever
            and t.literal_length >= 25
        ]
        chosen += [(t, family) for t in rng.sample(pool, min(12, len(pool)))]
    return chosen


CATALOG = builtin_catalog()


@pytest.mark.parametrize(
    ("template", "family"), _sample_for_family(), ids=lambda v: getattr(v, "text", v)[:60]
)
def test_a_mined_message_gets_the_family_of_its_module(template: Template, family: str) -> None:
    text = _fill(template, random.Random(3))
    [finding] = analyze(_log_with(template.kind, text, template.sites[0].module), CATALOG).findings
    assert finding.origin is not None
    if finding.rule_id.startswith("mined-"):
        assert finding.family == family, (finding.rule_id, finding.origin)
        # the placeholders' values are the evidence (when the match is this very template; a
        # value holding the literal after it is cut there, as a lazy regex group would be)
        if finding.origin.template == template.text:
            captures = template.match(text)
            assert captures is not None
            for name, value in captures.items():
                if name != "rest" and value.strip():
                    assert finding.evidence[name] == (value if len(value) <= 300 else value[:300] + "…")
    else:  # a hand-written rule knew it first: that is allowed, never the fallback
        assert finding.rule_id != "unrecognized"


# Checked by hand against vLLM's source: `../shared/research/vllm-errors.json` gives, from every
# release's source, each message's first and last release; the expected value is that range seen
# through the mined releases (0.4.0 0.4.3 0.5.5 0.6.0 0.6.6 0.7.3 0.8.5 0.9.2 0.10.1.1 0.10.2 0.11.0
# 0.13.0 0.15.1 0.19.0 0.25.0 0.29.0 0.33.0).
HAND_CHECKED = [
    # kv_no_memory, oldest variant: 0.4.3..0.12.0 there; but vLLM 0.4.0's wheel raises it too, in
    # `vllm/executor/utils.py` `check_block_size_valid` (read by hand), so 0.4.0..0.12.0
    (
        "ValueError",
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
        "0.4.0–0.11.0",
    ),
    # cpu_kv_no_memory: 0.4.3..0.9.2
    (
        "ValueError",
        "No available memory for the cache blocks. Try increasing `VLLM_CPU_KVCACHE_SPACE` when "
        "initializing the engine.",
        "0.4.3–0.9.2",
    ),
    # ray_not_installed, V0 variant: 0.5.5..0.9.2
    ("ValueError", "Failed to import Ray, please install Ray with `pip install ray`.", "0.5.5–0.9.2"),
    # auto_tool_choice_parser: 0.6.0..0.33.0 (in serving_chat.py first, cli_args.py from 0.6.x on)
    ("TypeError", "Error: --enable-auto-tool-choice requires --tool-call-parser", "0.6.0–0.33.0"),
    # engines_initial_msg_timeout, with its typo: 0.9.2..0.13.0
    ("TimeoutError", "Timed out waiting for engines to sendinitial message on input socket.", "0.9.2–0.13.0"),
    # v0_iteration_timeout (a logger.error): 0.4.0..0.10.2
    ("log.error", "Engine iteration timed out. This should never happen!", "0.4.0–0.10.2"),
]


@pytest.mark.parametrize(("kind", "message", "expected"), HAND_CHECKED, ids=lambda v: str(v)[:40])
def test_version_ranges_checked_by_hand(kind: str, message: str, expected: str) -> None:
    found = INDEX.match(kind, message)
    assert found is not None and found.template.kind == kind
    assert found.template.held_ranges == expected


def test_cannot_be_from_a_version_outside_its_range() -> None:
    found = INDEX.match("ValueError", HAND_CHECKED[0][1])
    assert found is not None
    template = found.template
    assert template.cannot_be_from(parse_version("0.13.0"))  # mined 0.13.0 lacks it
    assert template.cannot_be_from(parse_version("0.15.1"))
    assert not template.cannot_be_from(parse_version("0.8.0"))
    assert not template.cannot_be_from(None)


def test_families_are_valid_and_known() -> None:
    ids = [f.rule.id for f in families()]
    assert len(ids) == len(set(ids))
    catalog_ids = {r.id for r in CATALOG.rules}
    for family in families():
        assert family.rule.family in FAMILIES and family.rule.family != "unrecognized"
        assert family.rule.id.startswith("mined-") and family.rule.id not in catalog_ids
        assert family.rule.explanation and family.rule.summary
        assert family.rule.fixes or family.rule.next_steps
        assert family.modules or family.kinds


def test_every_vllm_template_of_a_mapped_module_has_a_family() -> None:
    unmapped = [
        t
        for t in VLLM
        if t.sites[0].module.startswith(("vllm/config", "vllm/distributed/")) and family_of(t) is None
    ]
    assert not unmapped


def test_vllm_component_is_the_innermost_vllm_frame() -> None:
    paths = [
        "/usr/lib/python3.12/runpy.py",
        "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py",
        "/workspace/vllm/vllm/v1/worker/gpu_worker.py",
        "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py",
    ]
    assert vllm_component(paths) == "vllm/v1/worker/gpu_worker.py"
    assert vllm_component([r"C:\envs\x\Lib\site-packages\vllm\config.py"]) == "vllm/config.py"
    assert vllm_component(["/usr/lib/python3.12/runpy.py"]) is None


def test_the_data_layout_round_trips() -> None:
    header = {"packages": [{"name": "vllm", "releases": ["0.5.0", "0.6.0", "0.7.0"], "templates": [1, 2, 1]}]}
    anchors = {
        "quantization": [
            [0, "ValueError", ["Unknown quantization method: ", "method", ""], [[0, "f", 1, 1]], 0b010]
        ],
        "Tensor": [
            [0, "ValueError", ["Tensor parallel size ", "tp", " is too large"], [[1, "g", 0, 2]], 0b101]
        ],
    }
    index = MessageIndex(encode_index(header, anchors, ["vllm/config.py", "vllm/distributed/state.py"]))
    assert len(index) == 2
    found = index.match("ValueError", "Unknown quantization method: awq_marlin")
    assert found is not None and found.captures == {"method": "awq_marlin"}
    site = found.template.sites[0]
    assert (site.module, site.function, site.first, site.last) == ("vllm/config.py", "f", "0.6.0", "0.6.0")
    assert found.template.cannot_be_from((0, 7, 0)) and found.template.cannot_be_from((0, 5, 0))
    assert not found.template.cannot_be_from((0, 6, 0))
    assert not found.template.cannot_be_from((0, 6, 5))  # between 0.6.0 (holds it) and 0.7.0: unknown
    assert not found.template.cannot_be_from((0, 8, 0))  # newer than every mined release: unknown
    tensor = index.match("ValueError", "Tensor parallel size 8 is too large")
    assert tensor is not None and tensor.captures == {"tp": "8"}
    assert tensor.template.held_ranges == "0.5.0, 0.7.0" and tensor.template.cannot_be_from((0, 6, 0))
    assert index.match("ValueError", "Tensor parallel size 8 is too large, really") is None
    empty = MessageIndex.empty()
    assert len(empty) == 0 and empty.match("ValueError", "Unknown quantization method: awq") is None
    with pytest.raises(ValueError):
        MessageIndex(b"not an index")


def test_hand_written_rules_win_over_mined_messages() -> None:
    # The catalog's kv-cache rule and the mined index both know this message (vLLM 0.4.0–0.11.0).
    message = HAND_CHECKED[0][1]
    assert INDEX.match("ValueError", message) is not None
    [finding] = analyze(_log_with("ValueError", message, "vllm/v1/core/kv_cache_utils.py"), CATALOG).findings
    assert not finding.rule_id.startswith("mined-") and finding.recognized
    assert finding.origin is not None and finding.origin.module == "vllm/v1/core/kv_cache_utils.py"
    assert finding.origin.version_mismatch is None  # 0.11.0 holds it


def test_a_message_from_a_version_that_cannot_have_raised_it_says_so() -> None:
    message = HAND_CHECKED[0][1]
    text = _log_with("ValueError", message, "vllm/v1/core/kv_cache_utils.py").replace("0.11.0", "0.19.0")
    [finding] = analyze(text, CATALOG).findings
    assert finding.origin is not None and finding.origin.version_mismatch is not None
    assert finding.origin.version_mismatch.startswith("vLLM 0.19.0 cannot have raised it")


def test_unrecognized_still_says_what_it_knows() -> None:
    text = _log_with(
        "KeyError", "'model.layers.0.mlp.gate.weight_scale_inv'", "vllm/model_executor/models/qwen3.py"
    )
    [finding] = analyze(text, CATALOG).findings
    assert finding.rule_id == "unrecognized" and not finding.recognized
    assert finding.evidence["exception_type"] == "KeyError"
    assert finding.evidence["component"] == "vllm/model_executor/models/qwen3.py"
    assert (
        finding.message
        == "Unrecognized KeyError in vllm/model_executor/models/qwen3.py: no rule knows this message"
    )


_ENGINE = "(EngineCore_DP0 pid=42) ERROR 01-21 04:15:38 [core.py:938] "


@pytest.mark.parametrize(
    ("carried", "named"),
    [
        ("index 1 is out of bounds for dimension 0 with size 1", "error"),
        ("IndexError: index 1 is out of bounds for dimension 0 with size 1", "IndexError"),
    ],
)
def test_an_unrecognized_carried_error_is_told_as_the_error_not_its_wrapper(carried: str, named: str) -> None:
    """EngineCore re-raises a worker's error as `RuntimeError: Worker failed with error '…'`:
    the error no rule knows is the worker's (its own type when it names one), carried by that
    RuntimeError — not a RuntimeError of the executor's module."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 491, in step_with_batch_queue',
        "    exec_model_fut.result()",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 342, in get_response',
        "    raise RuntimeError(",
        f"RuntimeError: Worker failed with error '{carried}', please check the stack trace above for the root cause",
    ]
    [finding] = analyze("".join(_ENGINE + line + "\n" for line in lines), CATALOG).findings
    assert finding.rule_id == "unrecognized" and finding.line == 5
    assert finding.evidence["exception_type"] == named and "component" not in finding.evidence
    assert finding.evidence["carried_by"] == "RuntimeError in vllm/v1/executor/multiproc_executor.py"
    assert finding.message == (
        f"Unrecognized {named} carried by RuntimeError in vllm/v1/executor/multiproc_executor.py: "
        "no rule knows this message"
    )
    assert finding.phase == "serving"  # (EngineCore's step with a batch queue)


def _match_building_every_template(index: MessageIndex, type_name: str, message: str):
    """`MessageIndex.match` as it read before templates were built for matches only: every
    template of each anchor built, then matched and ranked the same way."""
    text = message_of(type_name, message)
    short_type = type_name.rsplit(".", 1)[-1]
    found = []
    for word in set(re.findall(r"[A-Za-z0-9_]+", text)):
        anchor = index._anchor(word)
        for template in index._templates(anchor) if anchor is not None else ():
            captures = template.match(text)
            if captures is not None:
                found.append(((False, template.kind == short_type), MessageMatch(template, captures)))
    return best_match(found)  # (the ranking is shared: what differs is which templates are built)


def test_matching_builds_templates_for_matches_only_and_finds_the_same() -> None:
    rng = random.Random(21)
    with open(DATA_FILE, "rb") as handle:
        data = handle.read()
    for template in rng.sample(TEMPLATES, 300):
        text = _fill(template, rng)
        lazy, eager = MessageIndex(data), MessageIndex(data)
        got = lazy.match(template.kind, text)
        assert got is not None and got == _match_building_every_template(eager, template.kind, text)
        message = message_of(template.kind, text)
        matching = [
            r for raws in lazy._raw_of.values() for r in raws if match_parts(r[2], message) is not None
        ]
        assert len(lazy._template_of) == len(matching)  # built: the matches, no other template


def test_the_shipped_index_is_mapped_and_answers_as_the_read_one() -> None:
    """`message_index` maps the file instead of reading it: the same templates, matched alike."""
    import mmap

    with open(DATA_FILE, "rb") as handle:
        read = MessageIndex(handle.read())
    assert isinstance(INDEX._payload.obj, mmap.mmap)
    assert INDEX._words == read._words and len(INDEX) == len(read)
    rng = random.Random(5)
    for template in rng.sample(TEMPLATES, 50):
        text = _fill(template, rng)
        assert INDEX.match(template.kind, text) == read.match(template.kind, text)


@pytest.mark.parametrize("content", [None, b"", b"vllm-log-lsp", 12, 30, 200])
def test_a_missing_empty_or_cut_index_file_gives_an_empty_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | int | None
) -> None:
    """A bundle without the file, a foreign one, or one cut short (an interrupted install; an
    int here: the shipped file's first bytes) still analyses: no message has an origin."""
    from vllm_log_lsp.core import mined

    path = tmp_path / "messages.idx"
    if isinstance(content, int):
        with open(DATA_FILE, "rb") as handle:
            content = handle.read(content)
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setattr(mined, "DATA_FILE", str(path))
    monkeypatch.setattr(mined, "_INDEX", None)
    index = mined.message_index()
    assert len(index) == 0 and index.match("ValueError", "Unknown quantization method: awq") is None


def _plain_values(value: object) -> bool:
    if isinstance(value, list):
        return all(_plain_values(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain_values(item) for key, item in value.items())
    return value is None or isinstance(value, (str, bool, int, float))


def test_the_shipped_index_holds_plain_values_only() -> None:
    """The index is marshal data: every block holds lists, dicts, strings and numbers — no code
    object, nothing but what JSON could hold — and every anchor has a list of templates."""
    with open(DATA_FILE, "rb") as handle:
        index = MessageIndex(handle.read())
    for anchor in range(len(index._words)):
        raw = index._raw(anchor)
        assert raw and _plain_values(raw), index._words[anchor]


def test_an_index_is_written_from_plain_values_only() -> None:
    """What the miner hands over is written as JSON would read it back (tuples as lists); what
    no JSON holds is refused, so that a data file never carries code."""
    header = {"packages": [{"name": "vllm", "releases": ("0.6.0",), "templates": (1,)}]}
    anchors = {"quantization": [(0, "ValueError", ("Unknown quantization method: ", "m", ""), [], 1)]}
    index = MessageIndex(encode_index(header, anchors, ["vllm/config.py"]))
    assert index.packages == {"vllm": ("0.6.0",)}
    assert index._raw(0) == [[0, "ValueError", ["Unknown quantization method: ", "m", ""], [], 1]]
    for bad in ({1, 2}, b"bytes", compile("0", "x", "eval")):
        with pytest.raises(TypeError):
            encode_index(header, {"word": [bad]}, [])
