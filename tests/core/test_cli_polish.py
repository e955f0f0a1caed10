"""The command line as documentation: help for every option, the exit codes in `--help`, errors
that say what would have worked, and every command a message names exists."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support import FORMATS, ROOT, USER_OOM_RULE, run_cli
from vllm_log_lsp.cli import build_parser

OOM = FORMATS / "tp2-worker-oom.log"
CRASH = ROOT / "tests" / "fixtures" / "crash"
LAUNCH = ROOT / "tests" / "launch" / "fixtures"


run = run_cli


def test_rules_option_is_accepted_after_the_command(tmp_path: Path) -> None:
    rules = tmp_path / "mine.toml"
    rules.write_text(USER_OOM_RULE, encoding="utf-8")
    before = run("--rules", str(rules), "check", str(OOM))
    after = run("check", str(OOM), "--rules", str(rules))
    assert after.returncode == before.returncode == 1
    assert ": my-oom — Our cluster OOM" in after.stdout
    assert after.stdout == before.stdout
    assert "my-oom" in run("rules", "--rules", str(rules)).stdout
    assert run("explain", "my-oom", "--rules", str(rules)).returncode == 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_option_has_help_and_the_exit_codes_are_in_help() -> None:
    parser = build_parser()
    for name, command in {"": parser, **_subparsers(parser)}.items():
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{name or 'vllm-log-lsp'} {action.option_strings or action.dest} has no help"
    for args in (["--help"], ["check", "--help"]):
        text = " ".join(run(*args).stdout.split())
        assert "0 every log was read and shows no engine death" in text
        assert "1 an engine death was found" in text
        assert "2 an input or usage error" in text
        assert "3 an internal error" in text


def test_an_unknown_family_lists_the_families() -> None:
    result = run("rules", "--family", "nope")
    assert result.returncode == 2
    families = {r["family"] for r in json.loads(run("rules", "--format", "json").stdout)}
    assert "memory" in families
    for family in families:
        assert family in result.stderr
    assert run("rules", "--family", "memory").returncode == 0


@pytest.mark.parametrize("typo", ["kv-cache-too-smal", "kv_cache_too_small", "KV-cache-too-small"])
def test_explain_suggests_close_ids(typo: str) -> None:
    result = run("explain", typo)
    assert result.returncode == 2
    assert "did you mean kv-cache-too-small" in result.stderr


def test_standard_input_is_named_alike_in_text_and_json() -> None:
    text = run("check", "-", stdin=OOM.read_bytes())
    report = json.loads(run("check", "--format", "json", "-", stdin=OOM.read_bytes()).stdout)
    assert text.stdout.startswith("<stdin>:27: ")
    assert report["files"][0]["path"] == "<stdin>"


def _git_apply_check(diff: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "apply", "--check", "-"], input=diff.encode(), cwd=cwd, capture_output=True, timeout=60
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="fixture"),
        pytest.param("#!/bin/sh\nvllm serve m --max-num-seqs 256", id="no-final-newline"),
        pytest.param("#!/bin/sh\r\nvllm serve m \\\r\n  --max-num-seqs 256\r\n", id="crlf"),
    ],
)
def test_fix_diffs_are_accepted_by_git_apply(tmp_path: Path, content: str | None) -> None:
    log = str(CRASH / "007.log")
    folder = tmp_path / "deploy"
    folder.mkdir()
    script = folder / "serve.sh"
    if content is None:
        shutil.copy(LAUNCH / "continuations.sh", script)
    else:
        script.write_bytes(content.encode())
    # From the script's folder, from above it, and from elsewhere (then relative to its folder).
    for cwd in (folder, tmp_path):
        result = run("check", log, "--fix", str(script.relative_to(cwd)), cwd=cwd)
        assert result.returncode == 1, result.stderr
        applied = _git_apply_check(result.stdout, cwd)
        assert applied.returncode == 0, applied.stderr.decode()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run("check", log, "--fix", str(script), cwd=elsewhere)
    assert result.returncode == 1
    assert f"relative to {folder}" in result.stderr
    assert _git_apply_check(result.stdout, folder).returncode == 0


# -- every command named in a message exists (item 14) ---------------------------------------------
_COMMAND = re.compile(
    r"(?:vllm-log-lsp|python3? -m vllm_log_lsp)((?: --?[\w-]+(?:[ =][^\s`'\"]+)?)*) ([a-z][\w-]*)"
)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _python_messages(path: Path) -> list[str]:
    """The string literals of a module that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _named_in(text: str, code_only: bool) -> set[str]:
    """`vllm-log-lsp COMMAND` in code spans, in code lines, or (messages) anywhere."""
    pieces = [text] if not code_only else _CODE_SPAN.findall(text) + _code_lines(text)
    return {m.group(2) for piece in pieces for m in _COMMAND.finditer(piece)}


def _code_lines(markdown: str) -> list[str]:
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced and re.match(r"\s*(\$ )?(vllm-log-lsp|python3? -m vllm_log_lsp) ", line):
            lines.append(line)
    return lines


def named_commands() -> dict[str, set[str]]:
    """COMMAND → where it is named: the server's messages, the catalog, the VS Code client, docs."""
    found: dict[str, set[str]] = {}

    def add(commands: set[str], where: Path) -> None:
        for command in commands:
            found.setdefault(command, set()).add(str(where.relative_to(ROOT)))

    for path in (ROOT / "server" / "vllm_log_lsp").rglob("*.py"):
        for message in _python_messages(path):
            add(_named_in(message, code_only=False), path)
    sources = [
        *(ROOT / "server" / "vllm_log_lsp" / "catalog").glob("*.toml"),
        *(ROOT / "vscode-client" / "src").rglob("*.ts"),
        ROOT / "vscode-client" / "package.json",
        ROOT / "vscode-client" / "README.md",
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
    for path in sources:
        if path.is_file():
            add(_named_in(path.read_text(encoding="utf-8"), code_only=True), path)
    return found


def test_message_extraction_finds_the_known_commands() -> None:
    """The extraction itself works: it sees the commands the README and the server name."""
    named = named_commands()
    assert {"check", "rules", "explain", "serve"} <= set(named)
    assert _named_in("run `vllm-log-lsp analyze FILE`", code_only=True) == {"analyze"}
    assert _named_in("see vllm-log-lsp --rules X.toml check LOG", code_only=False) == {"check"}


def test_every_command_named_in_a_message_exists() -> None:
    for command, where in sorted(named_commands().items()):
        result = run(command, "--help")
        assert result.returncode == 0, f"`vllm-log-lsp {command}` (named in {sorted(where)}) does not exist"
