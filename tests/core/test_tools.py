"""External programs are found only in PATH entries a workspace cannot plant them in."""

from __future__ import annotations

import os
from pathlib import Path

from vllm_log_lsp.core import tools


def program(folder: Path, name: str = "rg") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_only_absolute_entries_outside_the_cwd_count(tmp_path, monkeypatch):
    workspace, system = tmp_path / "workspace", tmp_path / "system"
    program(workspace)
    program(workspace / "rel")
    wanted = program(system)
    monkeypatch.chdir(workspace)
    # Empty, `.`, relative and the cwd itself all mean the workspace: skipped, the system one is found.
    for hostile in ("", ".", "rel", "./rel", str(workspace)):
        path_value = os.pathsep.join([hostile, str(system)])
        assert tools.find_program("rg", path_value) == str(wanted), hostile
        assert tools.find_program("rg", hostile) is None, hostile


def test_untrusted_folders_and_their_subfolders_are_skipped(tmp_path, monkeypatch):
    folder, system = tmp_path / "project", tmp_path / "usr-bin"
    program(folder / "bin")
    wanted = program(system)
    monkeypatch.chdir(tmp_path)
    path_value = os.pathsep.join([str(folder / "bin"), str(system)])
    assert tools.find_program("rg", path_value) == str(folder / "bin" / "rg")
    tools.distrust([str(folder)])
    assert tools.find_program("rg", path_value) == str(wanted)
    # A symlink into the folder is the folder.
    (tmp_path / "link").symlink_to(folder / "bin")
    assert tools.find_program("rg", str(tmp_path / "link")) is None


def test_not_executable_or_not_a_file_is_not_a_program(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plain = tmp_path / "a"
    plain.mkdir()
    (plain / "rg").write_text("not executable")
    (plain / "grep").mkdir()
    assert tools.find_program("rg", str(plain)) is None
    assert tools.find_program("grep", str(plain)) is None
    assert tools.find_program("rg", "") is None
