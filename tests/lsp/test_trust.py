"""A hostile workspace never gets the server to run its programs.

Each test starts a server of its own the way an editor may: with a workspace folder as its working
directory and a `PATH` that holds an empty entry, `.`, a relative entry and a folder inside the
workspace, every one of which holds a planted `bash`, `rg` and `grep` that record that they ran. The
features that run those tools (quick fixes check a shell script with `bash -n`; a log of 4 MB or more
is pre-filtered with `rg` or `grep`) must still work, with the system's tools or without any.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types
from pygls import uris
from pytest_lsp import LanguageClient

from vllm_log_lsp.core.prefilter import TOOL_THRESHOLD

from .conftest import SERVER_COMMAND, SHARED_FIXTURES, init_params, wait_published
from .test_code_actions import MODEL_007, actions_for, client_with_window, open_log, script

pytestmark = pytest.mark.asyncio(loop_scope="function")

PLANTED = ("bash", "rg", "grep")


def plant_programs(folder: Path, record: Path) -> None:
    """Executables named like the tools the server runs; each appends its path to `record`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        program = folder / name
        program.write_text(f'#!/bin/sh\necho "$0" >> {record}\nexit 2\n')
        program.chmod(0o755)


def hostile_path(workspace: Path) -> str:
    """An empty entry, `.`, a relative entry and a workspace folder, then the real PATH."""
    return os.pathsep.join(["", ".", "tools", str(workspace / "bin"), os.environ.get("PATH", os.defpath)])


@contextlib.asynccontextmanager
async def server_in(workspace: Path) -> AsyncIterator[LanguageClient]:
    """A server started in `workspace` (its cwd and only folder) with the hostile PATH."""
    for folder in (workspace, workspace / "tools", workspace / "bin"):
        plant_programs(folder, workspace.parent / "ran.txt")
    client = client_with_window()
    client.profile = "visual-studio-code"  # type: ignore[attr-defined]
    env = {**os.environ, "PATH": hostile_path(workspace)}
    await client.start_io(*SERVER_COMMAND, env=env, cwd=str(workspace))
    try:
        folder_uri = uris.from_fs_path(str(workspace))
        await client.initialize_session(init_params("visual-studio-code", None, [folder_uri]))
        yield client
        await client.shutdown_session()
    finally:
        await client.stop()


def ran(workspace: Path) -> list[str]:
    record = workspace.parent / "ran.txt"
    return record.read_text().splitlines() if record.exists() else []


async def test_quick_fixes_never_run_a_workspace_bash(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script(workspace, "continuations.sh", "serve.sh", model=MODEL_007)
    async with server_in(workspace) as client:
        uri, root = await open_log(client, workspace, "007.log")
        actions = await actions_for(client, uri, root)
        # The fix is still offered: the script was checked with the system's bash (or bashlex).
        assert any("serve.sh" in a.title for a in actions), [a.title for a in actions]
    assert ran(workspace) == []


async def test_the_prefilter_never_runs_a_workspace_rg_or_grep(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    crash = (SHARED_FIXTURES / "crash" / "007.log").read_text(encoding="utf-8", errors="replace")
    filler = "INFO 01-01 00:00:00 [loader.py:1] Loading weights took 1.00 seconds\n"
    text = filler * (TOOL_THRESHOLD // len(filler) + 1) + crash  # big enough for a search tool
    async with server_in(workspace) as client:
        uri = uris.from_fs_path(str(workspace / "big.log"))
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "vllm-log", 1, text))
        )
        diagnostics = await wait_published(client, uri, 1, timeout=60)
        assert any(isinstance(d.data, dict) and d.data.get("role") == "root" for d in diagnostics)
    assert ran(workspace) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
async def test_special_files_and_links_out_of_the_workspace_are_never_edited(tmp_path):
    """A FIFO named like a launch script does not hang the quick fixes, a link to `/dev/zero` is not
    read, and a link to a script outside the workspace is not edited through, even when it is open."""
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    os.mkfifo(workspace / "serve.sh")
    (workspace / "zero.sh").symlink_to("/dev/zero")
    target = script(outside, "continuations.sh", "serve.sh", model=MODEL_007)
    (workspace / "linked.sh").symlink_to(target)
    before = target.read_text()
    async with server_in(workspace) as client:
        uri, root = await open_log(client, workspace, "007.log")
        actions = await asyncio.wait_for(actions_for(client, uri, root), 30)
        assert not [a for a in actions if a.edit], [a.title for a in actions]
        # Open in the editor under the link's path: still not a script of this workspace.
        link_uri = uris.from_fs_path(str(workspace / "linked.sh"))
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(link_uri, "shellscript", 1, before))
        )
        actions = await asyncio.wait_for(actions_for(client, uri, root), 30)
        assert not [a for a in actions if a.edit], [a.title for a in actions]
    assert target.read_text() == before
