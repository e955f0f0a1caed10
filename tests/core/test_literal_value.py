"""`context.literal_value` is `ast.literal_eval`: the plain reader (vLLM's `non-default args:`
line without importing `ast`) gives the same value, or leaves the text to `ast`, which then
gives the same value or raises the same exception."""

from __future__ import annotations

import ast
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core import context
from vllm_log_lsp.core.context import literal_value, parse_args_text


def _same(text: str) -> None:
    try:
        expected: object = ast.literal_eval(text)
    except Exception as err:  # the very exception type must come back
        with pytest.raises(type(err)):
            literal_value(text)
        return
    got = literal_value(text)
    assert _typed(got) == _typed(expected), text


def _typed(value: object) -> object:
    """A value with every part's type beside it (1 == 1.0 == True would hide a wrong type), NaN
    made comparable."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, repr(value))


def _plain(text: str) -> bool:
    try:
        context._PlainReader(text).document()
    except Exception:
        return False
    return True


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(
            scalars.filter(lambda v: not isinstance(v, float) or not math.isnan(v)), inner, max_size=4
        )
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_the_repr_of_any_plain_value_reads_as_ast_reads_it(value: object) -> None:
    _same(repr(value))


# Texts near the plain subset's edges: each either read alike or left to `ast`.
EDGES = [
    "{'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 2, 'max_num_seqs': 256, 'port': 8000}",
    "{'enforce_eager': True, 'gpu_memory_utilization': 0.9, 'seed': None, 'x': -1, 'y': -0.0}",
    "{'a': [1, 2, (3,)], 'b': (), 'c': (1), 'd': {}, 'e': [], 'f': {'g': 'h'},}",
    "{'swap_space': 1e-05, 'big': 5e+20, 'inf': 1e999, 'neg': -1E3}",
    '{"it\'s": "quoted"}',
    "{'a': 1} # a comment",
    "{'a': 'b' 'c'}",
    "{'a': 1, 'a': 2, 1: 'x', 1.0: 'y', True: 'z'}",
    "{1, 2}",
    "{'a': [1] [0]}",
    "{'a': 01}",
    "{'a': 00}",
    "{'a': 0x10, 'b': 1_000, 'c': 1j, 'd': 1.}",
    "{'a': .5}",
    "{'a': - 1, 'b': +1, 'c': --1}",
    "{'a': 1 - 1}",
    "{'a': inf, 'b': nan}",
    "{'a': b'x', 'b': r'y', 'c': f'z', 'd': u'w'}",
    "{'a': '\\n', 'b': 'caf\u00e9', 'c': '\\x00'}",
    "{'a':\t1}",
    "{'a':\n1}",
    "{[1]: 2}",
    "{(1, [2]): 3}",
    "{'a': Truex, 'b': None1}",
    "[1, 2,, 3]",
    "[,]",
    "(,)",
    "{:}",
    "{'a' 1}",
    "{'a': 1 'b': 2}",
    "",
    "   ",
    " {'a': 1} ",
    "'unterminated",
    "{'a': 1",
    "{'a': 1}}",
    "[" * 60 + "]" * 60,
    "[" * 300 + "]" * 300,
    "{'a': '\x00'}",
    "{'a': 1" + "0" * 5000 + "}",
    "True",
    "None",
    "-7",
    "(1, 2)",
]


@pytest.mark.parametrize("text", EDGES)
def test_texts_at_the_edge_of_the_plain_subset_read_as_ast_reads_them(text: str) -> None:
    _same(text)


def test_vllm_args_lines_are_read_without_ast() -> None:
    # The shapes vLLM prints (`non-default args: {...}`): the plain reader takes them itself.
    for text in EDGES[:4]:
        assert _plain(text), text
    assert not _plain("{'a': '\\n'}")  # an escape: left to ast


def test_the_args_line_gives_the_same_flags_as_before() -> None:
    message = (
        "non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'model': 'Qwen/Qwen3-8B', "
        "'tensor_parallel_size': 2, 'enforce_eager': True, 'gpu_memory_utilization': 0.85, "
        "'compilation_config': {'level': 3, 'cudagraph_capture_sizes': [1, 2, 4]}}"
    )
    args = parse_args_text(message)
    assert args["--tensor-parallel-size"] == "2"
    assert args["--enforce-eager"] == "true"
    assert args["--gpu-memory-utilization"] == "0.85"
    assert args["--compilation-config"] == '{"level": 3, "cudagraph_capture_sizes": [1, 2, 4]}'


def test_an_args_line_read_again_is_remembered_and_each_caller_gets_its_own_dict(monkeypatch) -> None:
    from vllm_log_lsp.core import context

    message = "non-default args: {'model': 'm', 'tensor_parallel_size': 2}"
    reads: list[str] = []
    read = context._read_args
    monkeypatch.setattr(context, "_read_args", lambda text: reads.append(text) or read(text))
    monkeypatch.setattr(context, "_ARGS_READ", {})
    first = parse_args_text(message)
    first["--model"] = "changed by a caller"
    again = parse_args_text(message)
    assert again == read(message) == {"--model": "m", "--tensor-parallel-size": "2"}
    assert reads == [message]
    # Bounded: past its size it starts over.
    monkeypatch.setattr(context, "_MAX_ARGS_READ", 2)
    for n in range(5):
        parse_args_text(f"args: Namespace(model='m{n}')")
    assert len(context._ARGS_READ) <= 2
    assert parse_args_text("args: Namespace(model='m0')") == {"--model": "m0"}


@pytest.mark.parametrize("text", ["{'path': '\\o'}", "{'a': {'b': b'\\q'}}", "('\\d+', 1)"])
def test_an_invalid_escape_in_a_logs_args_reads_as_python_reads_it_without_a_warning(text: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ast.literal_eval(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a warning would reach the user's terminal)
        assert _typed(literal_value(text)) == _typed(expected)
