"""A traceback as IPython prints it (Jupyter, Colab: vLLM's offline `LLM(...)` in a notebook):
a header with the exception's type and no colon, frames as `File /path/x.py:177, in f(…)` or a
cell's `Cell In[3], line 3`, the frame's line among numbered context lines as `---> 177 code`.

Before, such a traceback's frames were not read: rules that read frames fell back to generic
causes on 5 of the 19 corpus logs whose tracebacks were converted (028 `missing-main-guard` →
`unrecognized`, 029 `nccl-cuda-error` → `nccl-error`, 107, 134, 023); now none changes.
"""

from __future__ import annotations

import re

import pytest

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.tracebacks import frame_parts, is_traceback_header

_FRAME = re.compile(r'^  File "([^"]+)", line (\d+), in (.+)$')
HEADER = "Traceback (most recent call last):"


def as_ipython(text: str) -> tuple[str, int]:
    """`text` with each traceback that has no prefix printed as IPython prints it; and how many."""
    lines, out, count, at = text.split("\n"), [], 0, 0
    while at < len(lines):
        if lines[at].rstrip("\r") != HEADER:
            out.append(lines[at])
            at += 1
            continue
        end = at + 1
        while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
            end += 1
        if end == len(lines):
            out.append(lines[at])
            at += 1
            continue
        out += ["-" * 75, f"{lines[end].split(':')[0]:<42}Traceback (most recent call last)"]
        for number in range(at + 1, end):
            frame = _FRAME.match(lines[number].rstrip("\r"))
            if frame:
                path, lineno, function = frame.groups()
                code = lines[number + 1].strip() if number + 1 < end else ""
                out += [f"File {path}:{lineno}, in {function}(*args, **kwargs)"]
                out += [f"   {int(lineno) - 1:>4}     # the line above", f"--> {int(lineno):>4} {code}", ""]
        count += 1
        at = end
    return "\n".join(out), count


LOGS = {
    f"{p.parent.name}/{p.name}": read_log(p)
    for folder in (CRASH, CRASH2, CRASH3)
    for p in sorted(folder.glob("*.log"))
}


def _causes(text: str) -> list[tuple[str, str]]:
    return [(f.rule_id, f.root_text) for f in analyze(text).findings]


def test_every_corpus_traceback_printed_by_ipython_gives_the_same_cause() -> None:
    converted = {name: as_ipython(text) for name, text in LOGS.items()}
    taken = {name: text for name, (text, count) in converted.items() if count}
    assert len(taken) >= 15
    assert [name for name, text in taken.items() if _causes(text) != _causes(LOGS[name])] == []


NOTEBOOK = """\
---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[3], line 3
      1 from vllm import LLM, SamplingParams
----> 3 llm = LLM(model="Qwen/Qwen2.5-7B-Instruct", dtype="half")

File /usr/local/lib/python3.11/dist-packages/vllm/entrypoints/llm.py:247, in LLM.__init__(self, model, **kwargs)
    245 # Create the Engine (autoselects V0 vs V1)
--> 247 self.llm_engine = LLMEngine.from_engine_args(
    248     engine_args=engine_args, usage_context=UsageContext.LLM_CLASS)

File /usr/local/lib/python3.11/dist-packages/vllm/worker/worker.py:580, in raise_if_cache_size_invalid(num_gpu_blocks, block_size)
    579 if max_model_len > max_seq_len:
--> 580     raise ValueError(
    581         f"The model's max seq len ({max_model_len}) "

ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (11520).
"""


def test_a_notebooks_traceback_has_its_frames_and_cause() -> None:
    [finding] = analyze(NOTEBOOK).findings
    assert finding.rule_id == "kv-cache-too-small" and finding.line == 16
    assert finding.exception is not None
    frames = [(f.path, f.lineno, f.function) for f in finding.exception.frames]
    assert frames == [
        ("Cell In[3]", 3, None),
        ("/usr/local/lib/python3.11/dist-packages/vllm/entrypoints/llm.py", 247, "LLM.__init__"),
        ("/usr/local/lib/python3.11/dist-packages/vllm/worker/worker.py", 580, "raise_if_cache_size_invalid"),
    ]
    assert finding.exception.context_lines[-1] == "raise ValueError("


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ('  File "/x/y.py", line 3, in f', ("/x/y.py", "3", "f")),
        ("File /x/y.py:3, in f(a, b=(1, 2))", ("/x/y.py", "3", "f")),
        ("File /x/y.py:3", ("/x/y.py", "3", None)),
        # (a Windows path read with `/`: `posix_path`)
        ("File C:\\envs\\vllm\\y.py:3, in Cls.<locals>.g()", ("C:/envs/vllm/y.py", "3", "Cls.<locals>.g")),
        ("Cell In[12], line 4", ("Cell In[12]", "4", None)),
        ("Cellular network down", None),
    ],
)
def test_frame_lines_of_each_printer(line: str, parts: tuple[str, str, str | None] | None) -> None:
    assert frame_parts(line, line.strip()) == parts


@pytest.mark.parametrize(
    ("line", "header"),
    [
        ("Traceback (most recent call last):", True),
        ("(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):", True),
        ("ValueError                                Traceback (most recent call last)", True),
        ("torch.OutOfMemoryError                    Traceback (most recent call last)", True),
        ("see the Traceback (most recent call last) above", False),
    ],
)
def test_headers_of_each_printer(line: str, header: bool) -> None:
    assert is_traceback_header(line) is header
