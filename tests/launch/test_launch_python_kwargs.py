"""Python engine calls that take keyword arguments through `**mapping`.

`LLM(model=m, **ENGINE_KWARGS)` with `max_num_seqs` added to the call while the mapping holds it
too raises `TypeError: got multiple values for keyword argument` when the script runs. A literal
mapping in the file is edited where the key is (or gets the key); an opaque one means the key
is not added, with a reason.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from vllm_log_lsp.core.model import FixOp, RunContext, ValueSpec
from vllm_log_lsp.launch import fix_text, invocations_in_text

SEQS_128 = FixOp("set_flag", "--max-num-seqs", ValueSpec(literal="128"))
EAGER = FixOp("add_flag", "--enforce-eager")
NO_GRAPHS = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode")
BLOCKING = FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1"))


def keywords_of_call(text: str) -> list[str]:
    """Every keyword the engine call gets, from the call and from the literal `**` mappings it
    unpacks (found by name at module or function level), duplicates kept."""
    tree = ast.parse(text)
    literals: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(target, ast.Name):
            if isinstance(node.value, ast.Dict):
                literals[target.id] = [k.value for k in node.value.keys]  # type: ignore[union-attr]
            elif isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "dict":
                literals[target.id] = [k.arg for k in node.value.keywords]  # type: ignore[misc]
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "LLM"]
    names: list[str] = []
    for keyword in call.keywords:
        if keyword.arg is not None:
            names.append(keyword.arg)
        elif isinstance(keyword.value, ast.Dict):
            names.extend(k.value for k in keyword.value.keys)  # type: ignore[union-attr]
        else:
            names.extend(literals[keyword.value.id])  # type: ignore[attr-defined]
    return names


def apply(text: str, *ops: FixOp) -> str:
    text = textwrap.dedent(text)
    result = fix_text(text, "serve.py", list(ops), context=RunContext(vllm_version="0.11.0"))
    assert result.status == "changed", result.reason
    again = fix_text(result.new_text, "serve.py", list(ops), context=RunContext(vllm_version="0.11.0"))
    assert again.status == "unchanged", again.diff()
    names = keywords_of_call(result.new_text)  # parses, too
    assert len(names) == len(set(names)), names  # no keyword given twice: no TypeError
    return result.new_text


def test_key_in_a_module_level_dict_is_edited_there() -> None:
    text = """\
        from vllm import LLM

        ENGINE_KWARGS = {
            "max_num_seqs": 256,
            "dtype": "auto",
        }

        llm = LLM(model="m", **ENGINE_KWARGS)
        """
    new = apply(text, SEQS_128, EAGER)
    assert new == textwrap.dedent(
        """\
        from vllm import LLM

        ENGINE_KWARGS = {
            "max_num_seqs": 128,
            "dtype": "auto",
            "enforce_eager": True,
        }

        llm = LLM(model="m", **ENGINE_KWARGS)
        """
    )
    (inv,) = invocations_in_text("serve.py", new)
    assert inv.flags["--max-num-seqs"] == "128" and inv.flags["--enforce-eager"] == "true"


def test_json_key_merged_into_the_dicts_nested_config() -> None:
    text = """\
        from vllm import LLM
        KW = {"compilation_config": {"level": 3}}
        LLM("m", **KW)
        """
    assert apply(text, NO_GRAPHS).splitlines()[1] == (
        'KW = {"compilation_config": {"level": 3, "cudagraph_mode": "NONE"}}'
    )
    missing = 'from vllm import LLM\nKW = {"dtype": "auto"}\nLLM("m", **KW)\n'
    assert apply(missing, NO_GRAPHS).splitlines()[1] == (
        'KW = {"dtype": "auto", "compilation_config": {"cudagraph_mode": "NONE"}}'
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # an inline display
        ("from vllm import LLM\nLLM('m', **{'max_num_seqs': 256})\n", "LLM('m', **{'max_num_seqs': 128})"),
        # dict(...) with keywords
        (
            "from vllm import LLM\nKW = dict(max_num_seqs=256)\nLLM('m', **KW)\n",
            "KW = dict(max_num_seqs=128)",
        ),
        # a dict local to the function that makes the call
        (
            "from vllm import LLM\ndef main():\n    kw = {'max_num_seqs': 256}\n    return LLM('m', **kw)\n",
            "    kw = {'max_num_seqs': 128}",
        ),
        # an annotated module constant read from inside a function
        (
            "from vllm import LLM\nKW: dict = {'max_num_seqs': 256}\ndef main():\n    return LLM('m', **KW)\n",
            "KW: dict = {'max_num_seqs': 128}",
        ),
    ],
)
def test_literal_mappings_of_every_shape(text: str, line: str) -> None:
    assert line in apply(text, SEQS_128).splitlines()


def test_key_missing_from_every_literal_mapping_goes_into_the_last() -> None:
    text = "from vllm import LLM\nA = {'dtype': 'auto'}\nB = {'seed': 0}\nLLM('m', **A, **B)\n"
    assert apply(text, SEQS_128).splitlines()[2] == "B = {'seed': 0, 'max_num_seqs': 128}"


OPAQUE = {
    "parsed arguments": "import argparse\nfrom vllm import LLM\nargs = argparse.Namespace()\nLLM('m', **vars(args))\n",
    "a parameter": "from vllm import LLM\ndef build(**engine_kwargs):\n    return LLM('m', **engine_kwargs)\n",
    "shadowed by a parameter": (
        "from vllm import LLM\nKW = {'dtype': 'auto'}\ndef build(KW):\n    return LLM('m', **KW)\n"
    ),
    "updated later": "from vllm import LLM\nKW = {'dtype': 'auto'}\nKW.update(OVERRIDES)\nLLM('m', **KW)\n",
    "item set later": "from vllm import LLM\nKW = {}\nKW['max_num_seqs'] = 8\nLLM('m', **KW)\n",
    "assigned twice": (
        "import os\nfrom vllm import LLM\nif os.environ.get('BIG'):\n    KW = {'max_num_seqs': 512}\n"
        "else:\n    KW = {'dtype': 'auto'}\nLLM('m', **KW)\n"
    ),
    "merged from another dict": "from vllm import LLM\nBASE = {}\nKW = {**BASE, 'seed': 0}\nLLM('m', **KW)\n",
    "loaded from a file": "import json\nfrom vllm import LLM\nKW = json.load(open('e.json'))\nLLM('m', **KW)\n",
    "imported": "from vllm import LLM\nfrom settings import KW\nLLM('m', **KW)\n",
}


@pytest.mark.parametrize("name", sorted(OPAQUE))
@pytest.mark.parametrize("op", [SEQS_128, EAGER, NO_GRAPHS], ids=["set", "switch", "json"])
def test_opaque_mapping_means_no_new_keyword_with_a_reason(name: str, op: FixOp) -> None:
    text = OPAQUE[name]
    result = fix_text(text, "serve.py", [op])
    assert result.status == "skipped" and result.new_text == text
    assert "**" in result.reason and "TypeError" in result.reason and "by hand" in result.reason, (
        result.reason
    )
    # the environment does not go through the call: still fixed
    assert fix_text(text, "serve.py", [BLOCKING]).changed


def test_a_keyword_already_in_the_call_is_edited_even_with_an_opaque_mapping() -> None:
    """The script runs, so the mapping cannot hold that key too: editing it is safe."""
    text = "from vllm import LLM\nLLM('m', max_num_seqs=256, **vars(args))\n"
    result = fix_text(text, "serve.py", [SEQS_128])
    assert result.new_text == text.replace("256", "128")
