"""Quick fixes on launch scripts, as VS Code (UTF-16, documentChanges, disabled actions) and as
Neovim 0.11 (UTF-8, `changes`, no disabled actions).

One server per client profile; each test gets its own workspace folder (added with
`workspace/didChangeWorkspaceFolders`, removed afterwards) holding copies of the launch
fixtures, and opens a real crash log from the corpus. Every returned edit is applied here, as
the editor would, and the result is checked: it still parses, the flag is there once with the
intended value, nothing outside the invocation moved, and a second request offers nothing more.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls import uris
from pytest_lsp import ClientServerConfig, LanguageClient
from ruamel.yaml import YAML

from vllm_log_lsp.launch import invocations_in_text
from vllm_log_lsp.launch.formats import parse_sites, problem

from .conftest import CLIENTS, SERVER_COMMAND, init_params, make_client, units, wait_published

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[1]
CRASH = ROOT / "fixtures" / "crash"
LAUNCH = ROOT / "launch" / "fixtures"

#: The models the corpus logs ran, so that a script can be "the" logged run.
MODEL_007 = "/mnt/dolphinfs/ssd_pool/docker/user/hadoop-ai-search/zhangyuchao05/Qwen2.5-Math-1.5B"
MODEL_011 = "/opt/models/qwen2_5_14b_instruct_awq"
FIXTURE_MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def client_with_window() -> LanguageClient:
    """The conftest client, plus answers to the requests our server sends."""
    client = make_client()
    # lsprotocol structures any code action that has a `command` as a `Command`, losing the
    # action; editors tell them apart by the type of `command` (a string only for a Command).
    converter = client.protocol._converter

    def command_or_action(obj: Any, _: type) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        return converter.structure(obj, kind)

    converter.register_structure_hook(types.Command | types.CodeAction, command_or_action)
    client.shown = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(params: types.ShowMessageRequestParams) -> None:
        client.shown.append(params.message)  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    return client


CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=client_with_window)


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS, scope="module")
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    lsp_client.profile = request.param  # type: ignore[attr-defined]
    await lsp_client.initialize_session(init_params(request.param))
    yield lsp_client
    await lsp_client.shutdown_session()


def is_vscode(client: LanguageClient) -> bool:
    return client.profile == "visual-studio-code"  # type: ignore[attr-defined]


def encoding_of(client: LanguageClient) -> str:
    return "utf-16" if is_vscode(client) else "utf-8"


# -- workspace and log helpers --------------------------------------------------------------------
@contextlib.asynccontextmanager
async def workspace(client: LanguageClient, folder: Path) -> AsyncIterator[str]:
    """`folder` as the only workspace folder for the duration of a test."""
    uri = uris.from_fs_path(str(folder))
    assert uri is not None
    added = types.WorkspaceFolder(uri=uri, name=folder.name)
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(types.WorkspaceFoldersChangeEvent(added=[added], removed=[]))
    )
    try:
        yield uri
    finally:
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                types.WorkspaceFoldersChangeEvent(added=[], removed=[added])
            )
        )


def script(folder: Path, fixture: str, name: str | None = None, model: str | None = None) -> Path:
    """A copy of a launch fixture in `folder` (`.py.txt` fixtures become `.py`).

    With `model=MODEL_007` it is the script of 007.log's run, which had 1024 sequences (its
    sampler warmed up 1024 dummy requests): the log's advice is then 1024 → 512.
    """
    name = name or (fixture[: -len(".txt")] if fixture.endswith(".py.txt") else fixture)
    text = (LAUNCH / fixture).read_text(encoding="utf-8")
    if model is not None:
        text = text.replace(FIXTURE_MODEL, model)
    if model == MODEL_007:
        text = text.replace("--max_num_seqs=256", "--max_num_seqs=1024").replace(
            "--max-num-seqs 256", "--max-num-seqs 1024"
        )
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


async def open_log(client: LanguageClient, folder: Path, log: str) -> tuple[str, types.Diagnostic]:
    """Open a corpus crash log; return its URI and the first root-cause diagnostic."""
    path = folder / "logs" / log
    path.parent.mkdir(exist_ok=True)
    shutil.copy(CRASH / log, path)
    uri = uris.from_fs_path(str(path))
    text = (CRASH / log).read_text(encoding="utf-8", errors="replace")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "vllm-log", 1, text))
    )
    diagnostics = await wait_published(client, uri, 1)
    root = next(d for d in diagnostics if isinstance(d.data, dict) and d.data.get("role") == "root")
    return uri, root


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


async def actions_for(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert all(isinstance(a, types.CodeAction) for a in result or []), result
    return list(result or [])


def watched_change(client: LanguageClient, path: Path, kind=types.FileChangeType.Changed) -> None:
    """What the client's file watcher would report after a change on disk."""
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(uri=uris.from_fs_path(str(path)), type=kind)])
    )


# -- applying edits the way an editor does ---------------------------------------------------------
def offset(text: str, position: types.Position, encoding: str) -> int:
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    column = 0
    while column < len(line) and units(line[: column + 1], encoding) <= position.character:
        column += 1
    assert units(line[:column], encoding) == position.character, "position inside a character"
    return start + column


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    spans = sorted(
        (
            (offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text)
            for e in edits
        ),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_of(
    client: LanguageClient, action: types.CodeAction
) -> tuple[str, int | None, list[types.TextEdit]]:
    """(uri, version or None, edits) of a one-file edit, checking the shape the client asked for."""
    edit = action.edit
    assert edit is not None
    if is_vscode(client):
        assert edit.changes is None and edit.document_changes is not None
        (change,) = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        return change.text_document.uri, change.text_document.version, list(change.edits)
    assert edit.document_changes is None and edit.changes is not None
    ((uri, edits),) = edit.changes.items()
    return uri, None, list(edits)


def apply_action(
    client: LanguageClient, action: types.CodeAction, path: Path, text: str | None = None
) -> str:
    uri, _, edits = edits_of(client, action)
    assert uri == uris.from_fs_path(str(path))
    return apply_edits(path.read_text(encoding="utf-8") if text is None else text, edits, encoding_of(client))


# -- checks on the fixed file ------------------------------------------------------------------------
def assert_parses(path: Path, text: str) -> None:
    name = path.name
    if name.endswith(".sh"):
        subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    elif name.endswith((".yaml", ".yml")):
        list(YAML(typ="safe").load_all(text))
    elif name.endswith(".py"):
        ast.parse(text)
    fmt, _ = parse_sites(str(path), text)
    assert problem(fmt, text) is None


def assert_only_invocation_changed(path: Path, old: str, new: str) -> None:
    """Lines before and after the invocation are untouched."""
    (before,) = invocations_in_text(str(path), old)
    (after,) = invocations_in_text(str(path), new)
    old_lines, new_lines = old.split("\n"), new.split("\n")
    assert old_lines[: before.range.start_line] == new_lines[: after.range.start_line]
    old_tail, new_tail = old_lines[before.range.end_line + 1 :], new_lines[after.range.end_line + 1 :]
    assert old_tail == new_tail


def flag_count(text: str, flag: str) -> int:
    """Spellings of a flag in any style: `--max-num-seqs`, `--max_num_seqs`, `max_num_seqs=`."""
    words = flag.lstrip("-").split("-")
    return len(re.findall(r"\b" + "[-_]".join(words) + r"\b", text))


def titles(actions: list[types.CodeAction]) -> list[str]:
    return [a.title for a in actions]


# -- tests ---------------------------------------------------------------------------------------------
async def test_shell_script_fix_is_preferred_and_applies_once(client, tmp_path):
    serve = script(tmp_path, "continuations.sh", "serve.sh", model=MODEL_007)
    old = serve.read_text()
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "007.log")  # sampler OOM → halve --max-num-seqs
        actions = await actions_for(client, uri, root)
        assert titles(actions) == [
            "Fix: Lower the number of concurrent sequences — serve.sh:15: --max-num-seqs 1024 → 512",
            "Fix: Leave more memory outside vLLM's budget — serve.sh:17: added --gpu-memory-utilization 0.85",
        ]
        first = actions[0]
        assert first.is_preferred is True and actions[1].is_preferred is not True
        assert first.kind == types.CodeActionKind.QuickFix and list(first.diagnostics) == [root]
        _, version, _ = edits_of(client, first)
        assert version is None  # not open in the editor

        new = apply_action(client, first, serve)
        assert_parses(serve, new)
        assert_only_invocation_changed(serve, old, new)
        (invocation,) = invocations_in_text(str(serve), new)
        assert invocation.flags["--max-num-seqs"] == "512"
        assert flag_count(new, "--max-num-seqs") == 1

        # Saved to disk: the same fix is not offered again (no 512 → 256), the other one still is;
        # a client that shows disabled actions is told the first one is already applied.
        serve.write_text(new)
        watched_change(client, serve)
        again = await actions_for(client, uri, root)
        other = (
            "Fix: Leave more memory outside vLLM's budget — serve.sh:17: added --gpu-memory-utilization 0.85"
        )
        if is_vscode(client):
            assert titles(again) == [
                "Fix: Lower the number of concurrent sequences — serve.sh: already applied",
                other,
            ]
            assert again[0].edit is None and again[0].disabled is not None
            assert again[0].disabled.reason == "serve.sh:13: already applied: --max-num-seqs 512"
        else:
            assert titles(again) == [other]
        close(client, uri)


FORMATS = [
    # (fixture, log, flag, value): every launch format, with a set-flag and an add-flag fix
    ("continuations.sh", "011.log", "--max-model-len", "10224"),
    ("compose_list.yml", "011.log", "--max-model-len", "10224"),
    ("compose_flow.yaml", "038.log", "--enforce-eager", "true"),
    ("k8s_deployment.yaml", "011.log", "--max-model-len", "10224"),
    ("k8s_pod_command.yaml", "038.log", "--enforce-eager", "true"),
    ("Dockerfile.exec", "011.log", "--max-model-len", "10224"),
    ("Dockerfile.shell", "038.log", "--enforce-eager", "true"),
    ("offline.py.txt", "011.log", "--max-model-len", "10224"),
    ("engine_args.py.txt", "038.log", "--enforce-eager", "true"),
]


async def test_every_format_is_fixed_in_place(client, tmp_path):
    """One workspace per fixture, all in one test (one log open per round trip)."""
    for number, (fixture, log, flag, value) in enumerate(FORMATS):
        folder = tmp_path / str(number)
        folder.mkdir()
        path = script(folder, fixture, model=MODEL_011 if log == "011.log" else None)
        old = path.read_text()
        async with workspace(client, folder):
            uri, root = await open_log(client, folder, log)
            actions = await actions_for(client, uri, root)
            # (the fixtures are not the logged run: another port or image version makes them only
            # plausible, so the fixed command may come first; the ranking has tests of its own)
            first = next((a for a in actions if a.edit is not None), None)
            assert first is not None, (fixture, titles(actions))
            assert first.title.startswith("Fix: ") and path.name in first.title, first.title
            new = apply_action(client, first, path)
            assert_parses(path, new)
            assert_only_invocation_changed(path, old, new)
            (invocation,) = invocations_in_text(str(path), new)
            assert invocation.flags.get(flag) == value, (fixture, invocation.flags)
            assert flag_count(new, flag) == 1, (fixture, new)

            path.write_text(new)
            watched_change(client, path)
            again = await actions_for(client, uri, root)
            same = [a for a in again if a.title.split(" — ")[0] == first.title.split(" — ")[0]]
            # not offered again: at most a disabled "already applied" for clients that show those
            assert all(a.edit is None and a.title.endswith(": already applied") for a in same), fixture
            # (said for the logged run's script only: a merely plausible one is just not offered)
            told = is_vscode(client) and "(only plausible: " not in first.title
            assert len(same) == (1 if told else 0), (fixture, titles(again))
            close(client, uri)


async def test_columns_follow_the_position_encoding(client, tmp_path):
    serve = tmp_path / "serve.sh"
    serve.write_text(
        "#!/bin/sh\n"
        "# Démarrage du serveur 🚀 (modèle quantifié)\n"
        f'vllm serve {MODEL_007} --served-model-name "modèle-🚀" --max-num-seqs 1024 --port 8000\n',
        encoding="utf-8",
    )
    old = serve.read_text(encoding="utf-8")
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "007.log")
        actions = await actions_for(client, uri, root)
        first = actions[0]
        assert first.title.endswith("serve.sh:3: --max-num-seqs 1024 → 512")
        _, _, edits = edits_of(client, first)
        line = old.split("\n")[2]
        column = line.index("1024")
        (edit,) = edits
        assert edit.range.start.character == units(line[:column], encoding_of(client))
        assert edit.range.start.character != column  # the prefix is not ASCII
        new = apply_action(client, first, serve)
        assert new == old.replace("--max-num-seqs 1024", "--max-num-seqs 512")
        close(client, uri)


async def test_open_modified_script_is_edited_in_its_open_version(client, tmp_path):
    serve = script(tmp_path, "one_line.sh", "serve.sh", model=MODEL_007)
    disk = serve.read_text()
    # Unsaved in the editor: a new line above the command, and another port.
    buffer = disk.replace("#!/usr/bin/env bash\n", "#!/usr/bin/env bash\n# tuned today\n").replace(
        "8000", "9000"
    )
    script_uri = uris.from_fs_path(str(serve))
    async with workspace(client, tmp_path):
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(script_uri, "shellscript", 7, buffer))
        )
        uri, root = await open_log(client, tmp_path, "007.log")
        actions = await actions_for(client, uri, root)
        first = actions[0]
        assert first.title.endswith("serve.sh:3: --max-num-seqs 1024 → 512")  # line 3 of the buffer
        edit_uri, version, _ = edits_of(client, first)
        assert edit_uri == script_uri
        if is_vscode(client):
            assert version == 7
        new = apply_action(client, first, serve, text=buffer)
        assert new == buffer.replace("1024", "512")

        # Edited in the editor (didChange) and saved (didSave): the fix is in, nothing offered.
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=8, uri=script_uri),
                [types.TextDocumentContentChangeWholeDocument(text=new)],
            )
        )
        serve.write_text(new)
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(script_uri))
        )
        again = await actions_for(client, uri, root)
        lowered = [a for a in again if "Lower the number of concurrent sequences" in a.title]
        assert all(a.edit is None and a.title.endswith("already applied") for a in lowered), titles(again)
        close(client, script_uri)
        close(client, uri)


async def test_malformed_scripts_are_explained_not_edited(client, tmp_path):
    broken = f"#!/bin/sh\necho 'unbalanced\nvllm serve {MODEL_007} --max-num-seqs 256 --port 8000\n"
    (tmp_path / "broken.sh").write_text(broken)
    # Here the quote breaks the vLLM line itself: no command can be read from it at all.
    (tmp_path / "quoted.sh").write_text(f"vllm serve {MODEL_007} --max-num-seqs 256 --served-model-name 'x\n")
    (tmp_path / "compose.yml").write_text(
        f"services:\n  vllm:\n    command: [--model, {MODEL_007}, --max-num-seqs, 256\n  bad: [\n"
    )
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "007.log")
        actions = await actions_for(client, uri, root)
        # none of them can be read as a launch bash would run (broken.sh's vLLM line is inside
        # the unterminated quote), so the fixed command is offered as well
        copy = [a for a in actions if a.title.startswith("Copy the fixed launch command")]
        assert copy
        explained = {}
        for action in actions:
            if action in copy:
                continue
            assert action.edit is None and action.command is None
            if is_vscode(client):
                assert action.disabled is not None and action.disabled.reason.startswith("skipped ")
                explained[action.title] = action.disabled.reason
            else:
                assert action.disabled is None and " — skipped " in action.title
                explained[action.title] = action.title
        reasons = " | ".join(explained.values())
        assert "skipped broken.sh:" in reasons and "skipped compose.yml:" in reasons, reasons
        assert "skipped quoted.sh:" in reasons, reasons
        assert (tmp_path / "broken.sh").read_text() == broken  # untouched
        close(client, uri)


async def test_no_script_offers_the_fixed_command(client, tmp_path):
    (tmp_path / "README.txt").write_text("nothing to launch here\n")
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        actions = await actions_for(client, uri, root)
        assert (
            titles(actions)[0] == "Copy the fixed launch command: Set the maximum model length to what fits"
        )
        command = actions[0].command
        assert command is not None and command.command == "vllmLog.copyFixedCommand"
        assert actions[0].edit is None
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
        )
        assert result.startswith(f"vllm serve {MODEL_011} ")
        assert "--max-model-len 10224" in result and flag_count(result, "--max-model-len") == 1
        for _ in range(100):
            if client.shown:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.02)
        assert result in client.shown[-1]  # type: ignore[attr-defined]
        close(client, uri)


async def test_advice_only_fixes_give_no_action(client, tmp_path):
    script(tmp_path, "one_line.sh", "serve.sh")
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "002.log")  # plugin version mismatch: advice
        assert await actions_for(client, uri, root) == []
        close(client, uri)


async def test_new_script_found_after_watched_file_event(client, tmp_path):
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "007.log")
        assert titles(await actions_for(client, uri, root))[0].startswith("Copy the fixed launch command")
        serve = script(tmp_path, "one_line.sh", "serve.sh", model=MODEL_007)
        watched_change(client, serve, types.FileChangeType.Created)
        assert titles(await actions_for(client, uri, root))[0].endswith(
            "serve.sh:2: --max-num-seqs 1024 → 512"
        )
        close(client, uri)
    if is_vscode(client):  # the server asked VS Code to watch launch files
        methods = [r.method for r in client.registrations]  # type: ignore[attr-defined]
        assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES in methods


def first_screen(hover: types.Hover) -> list[str]:
    """The hover's lines above its first rule."""
    return hover.contents.value.split("\n---\n", 1)[0].split("\n")


async def test_hover_previews_each_fix(client, tmp_path):
    script(tmp_path, "continuations.sh", "serve.sh", model=MODEL_007)
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "007.log")
        params = types.HoverParams(types.TextDocumentIdentifier(uri), root.range.start)
        # The first hover, before any code action: it finds the scripts before it answers.
        hover = await client.text_document_hover_async(params)
        assert "searching" not in hover.contents.value and "…_" not in hover.contents.value
        head = first_screen(hover)
        assert len(head) <= 12, head
        assert (
            "**First fix**: Lower the number of concurrent sequences: `--max-num-seqs 512`"
            " in `serve.sh:15` (`--max-num-seqs 1024 → 512`)"
        ) in head
        fixes = hover.contents.value.split("#### Fixes", 1)[1]
        assert "↳ `serve.sh:15`: `--max-num-seqs 1024 → 512`" in fixes
        assert "↳ `serve.sh:17`: `added --gpu-memory-utilization 0.85`" in fixes
        assert fixes.index("→ 512") < fixes.index("gpu-memory-utilization 0.85`")
        close(client, uri)


async def test_hover_without_script_shows_the_fixed_command(client, tmp_path):
    async with workspace(client, tmp_path):
        uri, root = await open_log(client, tmp_path, "011.log")
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), root.range.start)
        )
        head = first_screen(hover)
        assert any(
            line.startswith(
                "**First fix**: Set the maximum model length to what fits: `--max-model-len 10224`"
            )
            and "a quick fix copies the fixed command" in line
            for line in head
        ), head
        fixes = hover.contents.value.split("#### Fixes", 1)[1]
        assert f"↳ fixed command: `vllm serve {MODEL_011} " in fixes
        assert "--max-model-len 10224`" in fixes
        close(client, uri)
