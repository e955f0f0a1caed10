"""Property tests on launch files as users write them: the real launch among text that only
mentions vLLM, values defined away from the command, any line ends.

For every format: the fix applies (`check_fix`: the file still parses, the flag is there once
with the intended value, a second apply changes nothing, nothing outside the invocation moves,
line ends are kept), and the surrounding text is byte for byte what it was.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launch.launch_support import check_fix
from vllm_log_lsp.core.model import FixOp, ValueSpec

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

OPS = st.sampled_from(
    [
        FixOp("set_flag", "--max-num-seqs", ValueSpec(derive="halve", default="256", minimum=1)),
        FixOp("add_flag", "--enforce-eager"),
        FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode"),
        FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1")),
    ]
)
line_ends = st.sampled_from(["\n", "\r\n"])
numbers = st.integers(min_value=2, max_value=4096).map(str)

#: Shell text that mentions a launch but runs none (each ends with a newline).
SHELL_NOISE = st.sampled_from(
    [
        "# vllm serve other --max-num-seqs 999\n",
        "cat <<EOF\nusage: $0\n  runs vllm serve MODEL --max-num-seqs 999\nEOF\n",
        "cat <<'END'\nit's vllm serve M --enforce-eager\nEND\n",
        'echo "starting vllm serve M --max-num-seqs 999"\n',
        'echo "multi\nvllm serve M --port 1\n"\n',
        "printf '%s\\n' 'vllm serve M'\n",
        '[[ -n "${DEBUG:-}" ]] && set -x\n',  # bash that bashlex cannot parse
        'case "${1:-}" in\n  -h) echo "vllm serve M"; exit 0;;\nesac\n',
        "OTHER=(--max-num-seqs 999)\n",
    ]
)


@st.composite
def shell_launch(draw: st.DrawFn) -> str:
    """The launch, with its flags inline, in an array, or passed by a function's caller."""
    seqs = draw(numbers)
    flags = f"--max-num-seqs {seqs} --compilation-config '{{\"level\": 3}}' --port 8000"
    style = draw(st.sampled_from(["inline", "array", "function"]))
    if style == "array":
        return f'ARGS=(\n  {flags}\n)\nvllm serve org/m "${{ARGS[@]}}"\n'
    if style == "function":
        return f'serve() {{\n  vllm serve org/m "$@"\n}}\nserve {flags}\n'
    return f"vllm serve org/m {flags}\n"


@FAST
@given(
    before=st.lists(SHELL_NOISE, max_size=3),
    launch=shell_launch(),
    after=st.lists(SHELL_NOISE, max_size=2),
    op=OPS,
    eol=line_ends,
)
def test_shell_launch_among_text_that_is_not_run(
    before: list[str], launch: str, after: list[str], op: FixOp, eol: str
) -> None:
    head, tail = "".join(before).replace("\n", eol), "".join(after).replace("\n", eol)
    text = head + launch.replace("\n", eol) + tail
    result = check_fix("run.sh", text, [op], version="0.8.5")
    assert result.new_text.startswith(head) and result.new_text.endswith(tail)


@st.composite
def python_launch(draw: st.DrawFn) -> tuple[str, str]:
    """(module text, the part around the engine keywords): inline, a dict, or dict(...)."""
    style = draw(st.sampled_from(["keywords", "dict", "dict call", "inline"]))
    seqs = draw(numbers)
    if style == "keywords":
        return "", f"LLM(model='org/m', max_num_seqs={seqs}, compilation_config={{'level': 3}})\n"
    if style == "dict":
        return f"KW = {{\n    'max_num_seqs': {seqs},\n    'compilation_config': {{'level': 3}},\n}}\n", (
            "LLM(model='org/m', **KW)\n"
        )
    if style == "dict call":
        return f"KW = dict(max_num_seqs={seqs})\n", "LLM(model='org/m', **KW)\n"
    return "", f"LLM(model='org/m', **{{'max_num_seqs': {seqs}}})\n"


PY_NOISE = st.sampled_from(
    [
        "# LLM(model='x', max_num_seqs=1) in a comment\n",
        'USAGE = """run: vllm serve m --max-num-seqs 999"""\n',
        "def helper(**kw):\n    return dict(kw)\n",
    ]
)


@FAST
@given(launch=python_launch(), noise=st.lists(PY_NOISE, max_size=2), op=OPS, eol=line_ends)
def test_python_keywords_wherever_they_are_written(
    launch: tuple[str, str], noise: list[str], op: FixOp, eol: str
) -> None:
    definitions, call = launch
    text = ("from vllm import LLM\n" + "".join(noise) + definitions + call).replace("\n", eol)
    check_fix("run.py", text, [op])


@FAST
@given(
    prose=st.sampled_from(["Run vllm serve with --max-num-seqs 999 if it is slow.\n", "Plain text.\n"]),
    prompt=st.sampled_from(["$ ", ""]),
    op=OPS,
    eol=line_ends,
)
def test_markdown_opted_in_edits_the_shell_block_only(prose: str, prompt: str, op: FixOp, eol: str) -> None:
    text = (
        f"# Serving\n\n{prose}\n```python\nllm = 'vllm serve org/py --max-num-seqs 999'\n```\n\n"
        f"```bash\n{prompt}vllm serve org/m --max-num-seqs 256 --port 8000\nINFO: vllm serve org/m started\n```\n"
    ).replace("\n", eol)
    result = check_fix("README.md", text, [op], version="0.8.5")
    head = text[: text.index("```bash")]
    assert result.new_text.startswith(head)  # prose and the Python block untouched
