"""Property tests: random existing values, spellings and layouts."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launch.launch_support import check_fix
from vllm_log_lsp.core.model import FixOp, ValueSpec
from vllm_log_lsp.launch import apply_text_edits, fix_text
from vllm_log_lsp.launch.text import diff_edits

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

numbers = st.integers(min_value=1, max_value=100_000).map(str)
flag_spellings = st.sampled_from(["--max-num-seqs", "--max_num_seqs"])
joiners = st.sampled_from([" ", "="])
quotes = st.sampled_from(["", "'", '"'])
names = st.text(alphabet="abcdefghijklmnop_", min_size=1, max_size=8)
line_ends = st.sampled_from(["\n", "\r\n"])
json_values = st.one_of(st.integers(-5, 5), st.booleans(), st.text("ABCxyz", max_size=5))


@FAST
@given(
    old=numbers,
    new=numbers,
    flag=flag_spellings,
    joiner=joiners,
    quote=quotes,
    lines=st.booleans(),
    eol=line_ends,
)
def test_shell_flag_set_once_whatever_the_spelling(
    old: str, new: str, flag: str, joiner: str, quote: str, lines: bool, eol: str
) -> None:
    separator = " \\\n  " if lines else " "
    text = f"vllm serve org/m{separator}{flag}{joiner}{quote}{old}{quote}{separator}--port 8000\n"
    check_fix(
        "run.sh", text.replace("\n", eol), [FixOp("set_flag", "--max-num-seqs", ValueSpec(literal=new))]
    )


@FAST
@given(existing=st.dictionaries(names, json_values, max_size=4), compact=st.booleans(), key=names)
def test_json_merge_keeps_every_other_key(existing: dict, compact: bool, key: str) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    blob = json.dumps(existing, separators=separators)
    text = f"vllm serve m --compilation-config '{blob}'\n"
    op = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key=key)
    result = check_fix("run.sh", text, [op], version="0.8.5")
    merged = json.loads(result.new_text.split("'")[1])
    assert merged == {**existing, key: "NONE"}


@FAST
@given(
    old=numbers,
    new=numbers,
    flow=st.booleans(),
    quote=st.sampled_from(["", "'", '"']),
    equals=st.booleans(),
    eol=line_ends,
)
def test_yaml_args_any_style(old: str, new: str, flow: bool, quote: str, equals: bool, eol: str) -> None:
    items = ["m", f"--max-num-seqs={old}"] if equals else ["m", "--max-num-seqs", old]
    if not equals and not quote:
        items[-1] = f'"{old}"'  # numbers must be strings in Kubernetes
    rendered = [f"{quote}{i}{quote}" if quote and not i.startswith('"') else i for i in items]
    if flow:
        args = f"      args: [{', '.join(rendered)}]\n"
    else:
        args = "      args:\n" + "".join(f"        - {r}\n" for r in rendered)
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
        "    - name: c\n      image: vllm/vllm-openai\n" + args
    )
    check_fix(
        "pod.yaml", text.replace("\n", eol), [FixOp("set_flag", "--max-num-seqs", ValueSpec(literal=new))]
    )


@FAST
@given(
    kwargs=st.lists(st.sampled_from(["dtype='auto'", "seed=0", "max_num_seqs=64"]), unique=True),
    multiline=st.booleans(),
    trailing_comma=st.booleans(),
    value=numbers,
    eol=line_ends,
)
def test_python_call_any_layout(
    kwargs: list[str], multiline: bool, trailing_comma: bool, value: str, eol: str
) -> None:
    args = ["model='m'", *kwargs]
    if multiline:
        body = "".join(f"    {a},\n" for a in args)
        body = body if trailing_comma else body[:-2] + "\n"
        call = f"llm = LLM(\n{body})\n"
    else:
        call = f"llm = LLM({', '.join(args)}{',' if trailing_comma else ''})\n"
    text = "from vllm import LLM\n\n" + call
    check_fix(
        "run.py", text.replace("\n", eol), [FixOp("set_flag", "--max-num-seqs", ValueSpec(literal=value))]
    )


@settings(max_examples=200, deadline=None)
@given(old=st.text("ab \n-=x", max_size=40), new=st.text("ab \n-=x", max_size=40))
def test_diff_edits_reproduce_the_new_text(old: str, new: str) -> None:
    assert apply_text_edits(old, diff_edits(old, new)) == new


def test_result_edits_reproduce_new_text_for_unicode() -> None:
    text = "# модель 🚀\nvllm serve org/мой-model --max-num-seqs 256  # ≥ 2 GPUs\n"
    result = fix_text(text, "run.sh", [FixOp("set_flag", "--max-num-seqs", ValueSpec(literal="8"))])
    assert apply_text_edits(text, result.edits) == result.new_text
    (edit,) = result.edits
    assert (edit.start_line, edit.start_col, edit.new_text) == (1, 40, "8")
