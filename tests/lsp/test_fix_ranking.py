"""Which launch script the quick fixes edit, over stdio as VS Code and as Neovim.

A small deployment repository: several launch files, one of which (or none) is the run in the
log (corpus 011: `/opt/models/qwen2_5_14b_instruct_awq` served as `local-assistant` on port
8001 by vLLM 0.15.1, KV cache too small). Where one matches, only it is edited and its first
fix is the one preferred action; where none does, the fixed command comes first, then the first
fix of a few plausible scripts, each saying why it is only plausible; never more than five.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from . import test_code_actions as base
from .test_code_actions import actions_for, close, edits_of, open_log, workspace

client = base.client  # the same server fixture (one per client profile and module)

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "/opt/models/qwen2_5_14b_instruct_awq"
MAX_ACTIONS = 5

THE_RUN = (
    "#!/bin/sh\n"
    f"vllm serve {MODEL} --served-model-name local-assistant --port 8001 \\\n"
    "    --max-model-len 16384 --max-num-seqs 8 --quantization awq\n"
)
ANOTHER_MODEL = "#!/bin/sh\nvllm serve Qwen/Qwen3-8B --port 8001 --max-model-len 16384\n"
OLD_IMAGE = (
    "FROM vllm/vllm-openai:v0.9.1\n"
    f'CMD ["--model", "{MODEL}", "--port", "8001", "--max-model-len", "16384"]\n'
)
EMBEDDINGS = (
    "services:\n  embed:\n    image: vllm/vllm-openai:v0.15.1\n"
    "    command: [--model, BAAI/bge-m3, --port, '8002', --task, embed]\n"
)
UNRESOLVED = '#!/bin/sh\nvllm serve "$MODEL" --max-model-len 16384\n'
ANOTHER_PORT = f"#!/bin/sh\nvllm serve {MODEL} --port 9000\n"
#: A deployment repository's other launch files: none of them is the run in the log.
OTHERS = {
    "chat.sh": ANOTHER_MODEL,
    "Dockerfile": OLD_IMAGE,
    "compose.yml": EMBEDDINGS,
    "dev.sh": UNRESOLVED,
    "test.sh": ANOTHER_PORT,
}


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def edited_file(client, action: types.CodeAction) -> str:
    uri, _, _ = edits_of(client, action)
    return uri.rsplit("/", 1)[-1]


async def test_only_the_matching_script_is_edited_and_its_first_fix_is_preferred(client, tmp_path):
    write(tmp_path, {"serve.sh": THE_RUN, **OTHERS})
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        actions = await actions_for(client, uri, root)
        assert 1 <= len(actions) <= MAX_ACTIONS
        assert all(a.edit is not None for a in actions), [a.title for a in actions]
        assert {edited_file(client, a) for a in actions} == {"serve.sh"}
        preferred = [a for a in actions if a.is_preferred]
        assert preferred == [actions[0]]
        assert actions[0].title == (
            "Fix: Set the maximum model length to what fits — serve.sh:3: --max-model-len 16384 → 10224"
        )
        assert not any("only plausible" in a.title for a in actions)
        close(client, uri)


async def test_two_matching_scripts_still_give_one_preferred_action(client, tmp_path):
    """Two copies of the run (say, prod and staging): both are offered, one is preferred."""
    write(tmp_path, {"a.sh": THE_RUN, "b.sh": THE_RUN})
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        actions = await actions_for(client, uri, root)
        assert len(actions) <= MAX_ACTIONS
        assert {edited_file(client, a) for a in actions} == {"a.sh", "b.sh"}
        assert [a.is_preferred for a in actions].count(True) == 1 and actions[0].is_preferred
        close(client, uri)


async def test_without_a_matching_script_the_fixed_command_comes_first(client, tmp_path):
    write(tmp_path, OTHERS)
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        actions = await actions_for(client, uri, root)
        assert len(actions) <= MAX_ACTIONS
        first = actions[0]
        assert first.title == "Copy the fixed launch command: Set the maximum model length to what fits"
        assert first.command is not None and first.edit is None
        assert not any(a.is_preferred for a in actions)  # "Auto Fix" must not guess
        edits = [a for a in actions if a.edit is not None]
        assert 1 <= len(edits) <= 3
        for action in edits:  # the first fix only, each saying why the script may not be the run
            assert action.title.startswith("Fix: Set the maximum model length to what fits — ")
            assert "(only plausible: " in action.title, action.title
        # The same model on another port or vLLM version is more plausible than another model.
        assert edited_file(client, edits[0]) in ("Dockerfile", "test.sh")
        said = " ".join(a.title for a in edits)
        assert "listens on port 9000, the log's run on 8001" in said or "the log ran 0.15.1" in said
        close(client, uri)


async def test_another_model_is_said_so(client, tmp_path):
    write(tmp_path, {"chat.sh": ANOTHER_MODEL})
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        titles = [a.title for a in await actions_for(client, uri, root)]
        assert titles[0].startswith("Copy the fixed launch command")
        assert titles[1] == (
            "Fix: Set the maximum model length to what fits — chat.sh:2: --max-model-len 16384 → 10224"
            " (only plausible: serves another model (Qwen/Qwen3-8B))"
        )
        assert len(titles) <= MAX_ACTIONS
        close(client, uri)


def first_screen(hover: types.Hover) -> list[str]:
    return hover.contents.value.split("\n---\n", 1)[0].split("\n")


async def test_the_hover_names_the_fix_and_the_script_it_edits_on_its_first_screen(client, tmp_path):
    write(tmp_path, {"serve.sh": THE_RUN, "chat.sh": ANOTHER_MODEL})
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), root.range.start)
        )
        text = hover.contents.value
        head = first_screen(hover)
        assert len(head) <= 12, head
        assert head[0] == "### Root cause: KV cache too small for the maximum model length"
        assert any(line.startswith("**EngineCore_DP0** died during memory profiling") for line in head), head
        evidence = next(line for line in head if line.startswith("**Evidence**: "))
        assert "16384" in evidence and "10224" in evidence and "GiB" in evidence
        assert (
            "**First fix**: Set the maximum model length to what fits: `--max-model-len 10224`"
            " in `serve.sh:3` (`--max-model-len 16384 → 10224`)"
        ) in head
        assert "searching" not in text
        # the reference below the rule: evidence in words, values said in words
        assert "- longest context that fits: `10224`" in text
        assert "fit_len" not in text and "(value from" not in text
        close(client, uri)
