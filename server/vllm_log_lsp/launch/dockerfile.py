"""Dockerfile `CMD`/`ENTRYPOINT` (exec and shell form) and `ENV`.

Instructions and their line ranges come from `dockerfile-parse`. An exec-form array is read
element by element with Python's JSON decoder at known offsets (so each argument's position
is exact); a shell-form command is read with the shell module. Environment variables are
`ENV` instructions of the same build stage; a new one goes on its own line just above the
`CMD`/`ENTRYPOINT` that starts vLLM.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from dockerfile_parse import DockerfileParser

from .argv import find_entry
from .shell import ShellRenderer, scan_shell
from .sites import Arg, ArgvSite, OpPlan, Site, quote_like
from .text import Edit, LineIndex, SourceMap
from .yaml_launch import is_vllm_image


@dataclass(frozen=True)
class Instruction:
    keyword: str
    start: int  # offset of the keyword
    end: int  # offset after the instruction's last character (its newline excluded)
    args_start: int  # offset of the first character after the keyword and its blanks
    value: str


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions with absolute offsets (comments left out)."""
    parser = DockerfileParser(fileobj=io.StringIO(text))
    lines = LineIndex(text)
    out = []
    for item in parser.structure:
        keyword = item["instruction"].upper()
        if keyword == "COMMENT":
            continue
        start = lines.offset(item["startline"])
        start += len(lines.line_text(start)) - len(lines.line_text(start).lstrip())
        end = lines.line_end(lines.offset(item["endline"]))
        match = re.match(r"\S+[ \t]*", text[start:end])
        args_start = start + (match.end() if match else 0)
        out.append(Instruction(keyword, start, end, args_start, item["value"]))
    return out


def dockerfile_problem(text: str) -> str | None:
    """None when the Dockerfile parses and its exec-form arrays are valid JSON."""
    try:
        found = instructions(text)
    except Exception as exc:  # dockerfile-parse raises assorted errors
        return f"cannot parse Dockerfile: {exc}"
    for ins in found:
        # Docker would run a broken array as a shell command; for a vLLM launch that is a bug
        exec_form = ins.keyword in ("CMD", "ENTRYPOINT") and _is_exec(text, ins)
        if exec_form and _exec_args(text, ins) is None:
            line = LineIndex(text).position(ins.start)[0] + 1
            return f"{ins.keyword} at line {line} is not a valid JSON array"
    return None


# ---------------------------------------------------------------------------------------------
# Exec form.


def _exec_args(text: str, ins: Instruction) -> list[tuple[str, int, int]] | None:
    """(value, start, end) of each string in an exec-form array; None if it is not one."""
    decoder = json.JSONDecoder()
    pos = ins.args_start + 1
    out: list[tuple[str, int, int]] = []
    while True:
        pos = _skip_blanks(text, pos, ins.end)
        if pos >= ins.end:
            return None
        if text[pos] == "]" and not out:
            return out if not text[pos + 1 : ins.end].strip() else None
        if text[pos] != '"':
            return None
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        out.append((value, pos, end))
        pos = _skip_blanks(text, end, ins.end)
        if text[pos : pos + 1] == "]":
            return out if not text[pos + 1 : ins.end].strip() else None
        if text[pos : pos + 1] != ",":
            return None
        pos += 1


def _skip_blanks(text: str, pos: int, end: int) -> int:
    """Skip blanks and Dockerfile line continuations (`\\` + newline)."""
    while pos < end:
        if text[pos] in " \t\n":
            pos += 1
        elif text.startswith("\\\n", pos):
            pos += 2
        else:
            break
    return pos


@dataclass
class JsonArrayRenderer:
    """Argument edits as strings of an exec-form JSON array, keeping its line layout."""

    text: str
    items: list[tuple[str, int, int]]

    def replace(self, arg: Arg, value: str) -> Edit:
        return Edit(arg.start, arg.end, _json(value))

    def insert_after(self, arg: Arg, values: Sequence[str]) -> Edit:
        # one group (a flag and its value) per line when the array is laid out on lines
        items = [_json(v) for v in values]
        text = self._separator() + ", ".join(items)
        return Edit(arg.end, arg.end, text)

    def insert_before(self, arg: Arg, values: Sequence[str]) -> Edit:
        return Edit(arg.start, arg.start, "".join(_json(v) + ", " for v in values))

    def _separator(self) -> str:
        """The last element separator that ends a line (comma, backslash, newline), else `, `."""
        for previous, following in reversed(list(pairwise(self.items))):
            between = self.text[previous[2] : following[1]]
            if "\n" in between and between.strip(" \t\n\\") == ",":
                return between
        return ", "


def _json(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# ENV.


@dataclass
class DockerEnv:
    """`ENV` instructions of one stage that come before the vLLM `CMD`/`ENTRYPOINT`."""

    text: str
    envs: list[Instruction]
    before: Instruction  # the first of the CMD/ENTRYPOINT instructions of the invocation

    def _assignments(self) -> list[tuple[str, str, int, int]]:
        """(name, value, value start, value end) for every variable the ENV lines set."""
        out = []
        for ins in self.envs:
            source = self.text[ins.args_start : ins.end]
            if "=" not in source.split(None, 1)[0]:  # legacy `ENV NAME value with spaces`
                name, _, rest = source.partition(" ")
                value_start = ins.args_start + len(name) + 1
                value_start += len(rest) - len(rest.lstrip())
                out.append((name, rest.strip(), value_start, ins.end))
                continue
            for command in scan_shell(source):
                for word in [*command.assignments, *command.words]:
                    name, _, value = word.value.partition("=")
                    start = ins.args_start + word.start + len(name) + 1
                    out.append((name, value, start, ins.args_start + word.end))
        return out

    def values(self) -> dict[str, str]:
        return {name: value for name, value, _, _ in self._assignments()}

    def plan_set(self, name: str, value: str) -> OpPlan | str:
        found = [a for a in self._assignments() if a[0] == name]
        if found:
            _, old, start, end = found[-1]
            if old == value:
                return OpPlan((), f"ENV {name} already {value}")
            edit = Edit(start, end, quote_like(self.text[start:end], value))
            return OpPlan((edit,), f"ENV {name} {old} → {value}")
        line_start = LineIndex(self.text).line_start(self.before.start)
        edit = Edit(line_start, line_start, f"ENV {name}={quote_like('', value)}\n")
        return OpPlan((edit,), f"added ENV {name}={value}")


# ---------------------------------------------------------------------------------------------
# Sites.


def dockerfile_sites(text: str) -> list[Site]:
    """One site per build stage whose effective CMD/ENTRYPOINT starts vLLM."""
    sites: list[Site] = []
    for stage in _stages(instructions(text)):
        site = _stage_site(text, stage)
        if site is not None:
            sites.append(site)
    return sites


def _stages(found: list[Instruction]) -> list[list[Instruction]]:
    stages: list[list[Instruction]] = [[]]
    for ins in found:
        if ins.keyword == "FROM" and stages[-1]:
            stages.append([])
        stages[-1].append(ins)
    return stages


def _stage_site(text: str, stage: list[Instruction]) -> Site | None:
    image = next((_from_image(i.value) for i in stage if i.keyword == "FROM"), None)
    entrypoint = next((i for i in reversed(stage) if i.keyword == "ENTRYPOINT"), None)
    cmd = next((i for i in reversed(stage) if i.keyword == "CMD"), None)
    parts = [i for i in (entrypoint, cmd) if i is not None]
    if entrypoint is not None and not _is_exec(text, entrypoint):
        parts = [entrypoint]  # a shell-form ENTRYPOINT ignores CMD
    if not parts:
        return None
    args: list[Arg] = []
    for ins in parts:
        instruction_args = _instruction_args(text, ins)
        if instruction_args is None:
            return None
        args.extend(instruction_args)
    values = [a.value for a in args]
    entry = find_entry(values, image_entry=is_vllm_image(image) and entrypoint is None)
    if entry is None:
        return None
    envs = [i for i in stage if i.keyword == "ENV" and i.start < parts[0].start]
    env = DockerEnv(text, envs, parts[0])
    label = " + ".join(i.keyword for i in parts)
    return ArgvSite("dockerfile", label, parts[0].start, parts[-1].end, args, entry, env, image=image)


def _from_image(value: str) -> str | None:
    words = [w for w in value.split() if not w.startswith("--")]
    return words[0] if words else None


def _is_exec(text: str, ins: Instruction) -> bool:
    return text[ins.args_start : ins.end].startswith("[")


def _instruction_args(text: str, ins: Instruction) -> list[Arg] | None:
    if _is_exec(text, ins):
        items = _exec_args(text, ins)
        if items is None:
            return None
        renderer = JsonArrayRenderer(text, items)
        return [Arg(value, start, end, renderer) for value, start, end in items]
    source = text[ins.args_start : ins.end]
    smap = SourceMap.identity(source, ins.args_start)
    commands = scan_shell(source)
    if not commands:
        return None
    # a shell-form CMD is one command line; take the command that starts vLLM, else the first
    chosen = next((c for c in commands if find_entry([w.value for w in c.words])), commands[0])
    shell = ShellRenderer(source, smap, chosen)
    return [Arg(w.value, w.start, w.end, shell) for w in chosen.words]
