"""Rules that a traceback's frames decide: each told from the frames as Python and as IPython
print them, and not claimed where the same words come from elsewhere."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze

SITE = "/usr/local/lib/python3.12/site-packages"


def _python(frames: list[tuple[str, int, str]], error: str) -> list[str]:
    lines = ["Traceback (most recent call last):"]
    for path, lineno, function in frames:
        lines += [f'  File "{path}", line {lineno}, in {function}', "    call()"]
    return [*lines, error]


def _ipython(frames: list[tuple[str, int, str]], error: str) -> list[str]:
    lines = [
        "---------------------------------------------------------------------------",
        "TypeError    Traceback (most recent call last)",
    ]
    for path, lineno, function in frames:
        lines += [f"File {path}:{lineno}, in {function}(self, arg)", f"--> {lineno}     call()", ""]
    return [*lines, error]


SPM_FRAMES = [
    (f"{SITE}/vllm/entrypoints/llm.py", 243, "LLM.__init__"),
    (f"{SITE}/transformers/models/llama/tokenization_llama.py", 171, "LlamaTokenizer.__init__"),
    (f"{SITE}/transformers/models/llama/tokenization_llama.py", 198, "LlamaTokenizer.get_spm_processor"),
    (f"{SITE}/sentencepiece/__init__.py", 961, "SentencePieceProcessor.Load"),
    (f"{SITE}/sentencepiece/__init__.py", 316, "SentencePieceProcessor.LoadFromFile"),
]
OLD_SPM_FRAMES = [
    (f"{SITE}/transformers/tokenization_utils_base.py", 1850, "_from_pretrained"),
    ("/usr/local/lib/python3.6/dist-packages/sentencepiece.py", 214, "load"),
]


@pytest.mark.parametrize("render", [_python, _ipython])
@pytest.mark.parametrize("frames", [SPM_FRAMES, OLD_SPM_FRAMES])
def test_sentencepiece_given_no_file_is_a_missing_tokenizer_model(render, frames) -> None:
    lines = render(frames, "TypeError: not a string")
    [finding] = analyze("\n".join(lines) + "\n").findings
    assert finding.rule_id == "tokenizer-model-file-missing"
    assert finding.line == len(lines) - 1


def test_not_a_string_from_elsewhere_is_not_a_tokenizer_file() -> None:
    frames = [
        (f"{SITE}/vllm/entrypoints/llm.py", 243, "LLM.__init__"),
        (f"{SITE}/yaml/reader.py", 7, "check"),
    ]
    lines = _python(frames, "TypeError: not a string")
    [finding] = analyze("\n".join(lines) + "\n").findings
    assert finding.rule_id != "tokenizer-model-file-missing"
