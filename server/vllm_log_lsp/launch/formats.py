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
    scan_script,
    shell_sites,
    shifted,
    without_prompt,
)
from .sites import Malformed, Site
from .text import SourceMap
from .yaml_launch import describe_yaml_error, yaml_problem, yaml_sites

_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
_PYTHON_SUFFIXES = (".py",)
_YAML_SUFFIXES = (".yaml", ".yml")
_DOCKERFILE_NAMES = ("Dockerfile", "Containerfile")  # also `Dockerfile.<variant>`, any case
_DOCKERFILE_SUFFIXES = (".dockerfile", ".containerfile")
#: Documentation: its commands are examples, edited only when the user opts in (`docs=True`).
_DOC_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".adoc")
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_TEXT_SUFFIXES = (".mk", ".service", ".conf")
_TEXT_NAMES = ("Makefile", "makefile", "GNUmakefile", "Procfile", "Justfile", "justfile")
_SHEBANG = re.compile(r"#!\s*\S*\b(env\s+)?(ba|z|k|da)?sh\b")


def _alternatives(items: tuple[str, ...]) -> str:
    return "{" + ",".join(items) + "}"


#: File-watcher globs (LSP `GlobPattern`s) for every file `file_kind` recognises by its name,
#: built from the same lists so that a new format is watched as soon as it is recognised.
WATCHED_GLOBS = (
    "**/*."
    + _alternatives(
        tuple(
            s[1:]
            for s in (
                *_SHELL_SUFFIXES,
                *_PYTHON_SUFFIXES,
                *_YAML_SUFFIXES,
                *_DOC_SUFFIXES,
                *_TEXT_SUFFIXES,
            )
        )
    ),
    "**/"
    + _alternatives(
        (
            *_DOCKERFILE_NAMES,
            *(f"{name}.*" for name in _DOCKERFILE_NAMES),
            *(f"*{s}" for s in _DOCKERFILE_SUFFIXES),
        )
    ),
    "**/" + _alternatives(_TEXT_NAMES),
)


def file_kind(path: str, text: str | None = None) -> str | None:
    """`shell`, `text`, `docs`, `yaml`, `dockerfile`, `python` or None (not a launch file).

    `text` (the first line is enough) lets extension-less scripts be recognised by shebang.
    """
    name = os.path.basename(path)
    lower = name.lower()
    if lower.endswith(_PYTHON_SUFFIXES):
        return "python"
    if lower.endswith(_YAML_SUFFIXES):
        return "yaml"
    dockerfiles = tuple(n.lower() for n in _DOCKERFILE_NAMES)
    if lower in dockerfiles or lower.startswith(tuple(f"{n}." for n in dockerfiles)):
        return "dockerfile"
    if lower.endswith(_DOCKERFILE_SUFFIXES):
        return "dockerfile"
    if lower.endswith(_SHELL_SUFFIXES):
        return "shell"
    if text is not None and _SHEBANG.match(text.split("\n", 1)[0]):
        return "shell"
    if lower.endswith(_DOC_SUFFIXES):
        return "docs"
    if lower.endswith(_TEXT_SUFFIXES) or name in _TEXT_NAMES:
        return "text"
    return None


def parse_sites(path: str, text: str, docs: bool = False) -> tuple[Format | None, list[Site]]:
    """The file's format and its vLLM sites in order; raises Malformed when it cannot be read.

    Shell files parse leniently here (so a script bash would reject is still listed and the
    fix can say why it was skipped); `problem` is the strict check. Documentation (README.md …)
    has sites only with `docs` (the user's opt-in): in Markdown, the commands of fenced shell
    blocks; elsewhere, lines that start with a vLLM command.
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
        commands, lexed = scan_script(text)
        sites = shell_sites(text, smap, "shell", commands, env_mode="file", lexed=lexed)
        if not sites and _VLLM_COMMAND.search(text) and (bad := check_shell(text)):
            # The vLLM line itself does not parse: say so, rather than finding nothing.
            raise Malformed(bad)
        return "shell", sites
    if kind == "text":
        return "text", _text_sites(text)
    if kind == "docs" and docs:
        regions = _markdown_code(text) if path.lower().endswith(_MARKDOWN_SUFFIXES) else None
        return "docs", _text_sites(text, regions, commands_only=True)
    return None, []


# A command that starts vLLM, as text (for scripts too broken to parse into commands).
_VLLM_COMMAND = re.compile(r"\bvllm\s+serve\b|vllm\.entrypoints\.|vllm/vllm-openai")


def _text_sites(
    text: str, regions: list[tuple[int, int]] | None = None, commands_only: bool = False
) -> list[Site]:
    """Commands in a Makefile or docs: each logical line that mentions vLLM on its own.

    `regions`: only lines inside these offset ranges (fenced code). `commands_only`: the line
    must start with the command (after a prompt and `NAME=value` prefixes), so a sentence that
    mentions `vllm serve` is not one.
    """
    sites: list[Site] = []
    smap = SourceMap.identity(text)
    fmt: Format = "docs" if commands_only else "text"
    for start, chunk in logical_lines(text):
        if "vllm" not in chunk.lower():
            continue
        if regions is not None and not any(a <= start < b for a, b in regions):
            continue
        try:
            commands = parse_shell(chunk)
        except Exception:  # bashlex raises assorted errors on prose
            continue
        moved = [without_prompt(shifted(c, start)) for c in commands]
        if commands_only:
            moved = [c for c in moved if c.words and _starts_a_launch(c.words[0].value)]
        sites.extend(shell_sites(text, smap, fmt, moved, env_mode="inline"))
    return sites


#: Fenced blocks whose info string names a shell (or none) hold commands.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*([^\s`{]*)")
_SHELL_FENCES = frozenset({"", "bash", "sh", "shell", "zsh", "console", "shell-session", "terminal"})
#: The first word of a documented launch command (wrappers included: `nohup vllm serve …`).
_LAUNCH_WORDS = frozenset({"vllm", "docker", "podman", "nerdctl", "sudo", "nohup", "exec", "env", "time"})


def _markdown_code(text: str) -> list[tuple[int, int]]:
    """Offset ranges of Markdown code that holds commands: fenced blocks in a shell language
    (or none), and indented code blocks."""
    regions: list[tuple[int, int]] = []
    fence: tuple[str, int, bool, int] | None = None  # (char, length, shell?, body start)
    indented = False
    previous_blank = True
    offset = 0
    for line in text.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        match = _FENCE.match(content)
        if fence is not None:
            closes = match and match.group(1)[0] == fence[0] and len(match.group(1)) >= fence[1]
            if closes and not match.group(2):  # type: ignore[union-attr]
                if fence[2]:
                    regions.append((fence[3], offset))
                fence = None
        elif match:
            shell = match.group(2).lower() in _SHELL_FENCES
            fence = (match.group(1)[0], len(match.group(1)), shell, offset + len(line))
        elif content.startswith(("    ", "\t")) and (previous_blank or indented):
            regions.append((offset, offset + len(line)))
            indented = True
        elif content.strip():
            indented = False
        previous_blank = not content.strip()
        offset += len(line)
    if fence is not None and fence[2]:
        regions.append((fence[3], len(text)))
    return regions


def _starts_a_launch(word: str) -> bool:
    base = word.rsplit("/", 1)[-1]
    return base in _LAUNCH_WORDS or base.startswith("python")


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
