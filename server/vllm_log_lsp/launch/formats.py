"""Which format a file is, how to find its vLLM sites, and how to check that it still parses."""

from __future__ import annotations

import os
import re

from ruamel.yaml.error import YAMLError

from .dockerfile import dockerfile_problem, dockerfile_sites
from .model import Format
from .python_launch import python_problem, python_sites
from .shell import (
    check_shell,
    logical_lines,
    parse_shell,
    scan_shell,
    shell_sites,
    shifted,
    without_prompt,
)
from .sites import Malformed, Site
from .text import SourceMap
from .yaml_launch import describe_yaml_error, yaml_problem, yaml_sites

_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
_TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".adoc", ".mk", ".service", ".conf")
_TEXT_NAMES = ("Makefile", "makefile", "GNUmakefile", "Procfile", "Justfile", "justfile")
_SHEBANG = re.compile(r"#!\s*\S*\b(env\s+)?(ba|z|k|da)?sh\b")


def file_kind(path: str, text: str | None = None) -> str | None:
    """`shell`, `text`, `yaml`, `dockerfile`, `python` or None (not a launch file).

    `text` (the first line is enough) lets extension-less scripts be recognised by shebang.
    """
    name = os.path.basename(path)
    lower = name.lower()
    if lower.endswith(".py"):
        return "python"
    if lower.endswith((".yaml", ".yml")):
        return "yaml"
    if lower in ("dockerfile", "containerfile") or lower.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if lower.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if lower.endswith(_SHELL_SUFFIXES):
        return "shell"
    if text is not None and _SHEBANG.match(text.split("\n", 1)[0]):
        return "shell"
    if lower.endswith(_TEXT_SUFFIXES) or name in _TEXT_NAMES:
        return "text"
    return None


def parse_sites(path: str, text: str) -> tuple[Format | None, list[Site]]:
    """The file's format and its vLLM sites in order; raises Malformed when it cannot be read.

    Shell files parse leniently here (so a script bash would reject is still listed and the
    fix can say why it was skipped); `problem` is the strict check.
    """
    kind = file_kind(path, text)
    if kind == "python":
        try:
            return "python", python_sites(text)
        except SyntaxError as exc:
            raise Malformed(f"Python syntax error at line {exc.lineno}: {exc.msg}") from exc
    if kind == "yaml":
        try:
            return yaml_sites(text)
        except YAMLError as exc:
            raise Malformed(describe_yaml_error(exc)) from exc
    if kind == "dockerfile":
        try:
            return "dockerfile", dockerfile_sites(text)
        except Exception as exc:  # dockerfile-parse raises assorted errors
            raise Malformed(f"cannot parse Dockerfile: {exc}") from exc
    if kind == "shell":
        smap = SourceMap.identity(text)
        sites = shell_sites(text, smap, "shell", scan_shell(text), env_mode="file")
        if not sites and _VLLM_COMMAND.search(text) and (bad := check_shell(text)):
            # The vLLM line itself does not parse: say so, rather than finding nothing.
            raise Malformed(bad)
        return "shell", sites
    if kind == "text":
        return "text", _text_sites(text)
    return None, []


# A command that starts vLLM, as text (for scripts too broken to parse into commands).
_VLLM_COMMAND = re.compile(r"\bvllm\s+serve\b|vllm\.entrypoints\.|vllm/vllm-openai")


def _text_sites(text: str) -> list[Site]:
    """Commands in prose or a Makefile: each logical line that mentions vLLM on its own."""
    sites: list[Site] = []
    smap = SourceMap.identity(text)
    for start, chunk in logical_lines(text):
        if "vllm" not in chunk.lower():
            continue
        try:
            commands = parse_shell(chunk)
        except Exception:  # bashlex raises assorted errors on prose
            continue
        moved = [without_prompt(shifted(c, start)) for c in commands]
        sites.extend(shell_sites(text, smap, "text", moved, env_mode="inline"))
    return sites


def problem(fmt: Format | None, text: str) -> str | None:
    """Why `text` is not a valid file of its format (None when it is)."""
    if fmt == "shell":
        return check_shell(text)
    if fmt in ("compose", "kubernetes"):
        return yaml_problem(text)
    if fmt == "dockerfile":
        return dockerfile_problem(text)
    if fmt == "python":
        return python_problem(text)
    return None
