"""Docker compose services and Kubernetes containers that run vLLM.

Located with ruamel.yaml's composer, whose nodes carry exact start/end offsets, and edited
as text at those offsets, so comments, quoting and flow/block style stay as the user wrote
them. New scalars copy the quoting of their neighbours. After an edit the whole file is
loaded again (in `apply`) to prove it is still YAML.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .argv import find_entry
from .model import Format
from .shell import ShellRenderer, scan_shell, shell_sites
from .sites import Arg, ArgvSite, CannotRender, EnvTarget, OpPlan, Site
from .text import Edit, LineIndex, SourceMap

_WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet", "CronJob")
_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env bash", "/usr/bin/bash")
_YAML11_WORDS = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"])


def yaml_problem(text: str) -> str | None:
    """None when `text` is valid YAML (all documents); else where and why it is not."""
    try:
        for _ in YAML(typ="safe", pure=True).load_all(text):
            pass
    except YAMLError as exc:
        return describe_yaml_error(exc)
    return None


def describe_yaml_error(exc: YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}" if mark is not None else ""
    return f"invalid YAML{where}: {problem}"


def compose_documents(text: str) -> list[Node]:
    """The node trees of all documents; raises YAMLError on invalid YAML."""
    return [doc for doc in YAML().compose_all(text) if doc is not None]


def get(node: Node | None, key: str) -> Node | None:
    """The value node of `key` in a mapping node (None when absent or not a mapping)."""
    if not isinstance(node, MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return value_node
    return None


def scalar(node: Node | None) -> str | None:
    if isinstance(node, ScalarNode):
        return node.value.replace("\a", "")  # ruamel marks folding points with BEL
    return None


def is_compose(doc: Node) -> bool:
    return isinstance(get(doc, "services"), MappingNode)


def is_kubernetes(doc: Node) -> bool:
    return scalar(get(doc, "kind")) is not None and get(doc, "apiVersion") is not None


def is_vllm_image(image: str | None) -> bool:
    return bool(image) and "vllm" in image.rsplit("/", 1)[-1].lower()  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# Scalars: rendering new ones, and mapping a scalar's value back to the file.


def render_scalar(value: str, style: str | None, flow: bool, old: str | None = None) -> str:
    """A YAML scalar for `value`, in `style` when that stays correct, else double-quoted."""
    if style == "'" and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    if not style and _plain_ok(value, flow, old):
        return value
    return json.dumps(value, ensure_ascii=False)


_SAFE = YAML(typ="safe", pure=True)


def _plain_ok(value: str, flow: bool, old: str | None) -> bool:
    """A plain scalar is fine if it reads back as the same string (YAML 1.1 and 1.2 alike).

    Exception: a user who wrote `- 256` (a YAML number) gets `- 128`, not `- "128"`.
    """
    if not value or "\n" in value or value != value.strip():
        return False
    try:
        loaded = _SAFE.load(f"[{value}]" if flow else f"- {value}")
    except YAMLError:
        return False
    if loaded == [value]:
        return value.lower() not in _YAML11_WORDS
    if old is None or not old.strip():
        return False
    try:
        loaded_old = _SAFE.load(f"- {old}")
    except YAMLError:
        return False
    return type(loaded_old[0]) is type(loaded[0]) and not isinstance(loaded[0], str)


def scalar_map(text: str, node: ScalarNode) -> SourceMap | None:
    """Where each character of a scalar's value lies in the file; None for unsupported styles."""
    start, end = node.start_mark.index, node.end_mark.index
    value = scalar(node) or ""
    candidate: SourceMap | None
    if not node.style:
        candidate = SourceMap.identity(text[start:end], start)
        candidate.encode_kind = "yaml_plain"
    elif node.style in ("'", '"'):
        candidate = _quoted_map(text, start, end, node.style)
    elif node.style in ("|", ">"):
        candidate = _block_map(text, start, end, node.style)
    else:
        return None
    if candidate is None:
        return None
    if candidate.decoded.rstrip("\n") != value.rstrip("\n"):
        return None  # a form we do not decode exactly (multi-line plain, escapes …)
    n = len(value.rstrip("\n"))
    return SourceMap(
        candidate.decoded[:n], candidate.offsets[: n + 1], candidate.encode_kind, candidate.indent
    )


def _quoted_map(text: str, start: int, end: int, quote: str) -> SourceMap | None:
    inner_start, inner_end = start + 1, end - 1
    decoded: list[str] = []
    offsets: list[int] = []
    i = inner_start
    while i < inner_end:
        ch = text[i]
        if ch == "\n":
            return None  # line folding inside quotes: not supported
        if quote == "'" and ch == "'" and text[i + 1 : i + 2] == "'":
            decoded.append("'")
            offsets.append(i)
            i += 2
            continue
        if quote == '"' and ch == "\\":
            escaped = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t"}.get(text[i + 1 : i + 2])
            if escaped is None:
                return None
            decoded.append(escaped)
            offsets.append(i)
            i += 2
            continue
        decoded.append(ch)
        offsets.append(i)
        i += 1
    offsets.append(inner_end)
    kind = "yaml_single" if quote == "'" else "json"
    return SourceMap("".join(decoded), offsets, kind)


def _block_map(text: str, start: int, end: int, style: str) -> SourceMap | None:
    """Literal (`|`) and simple folded (`>`) block scalars with one indentation."""
    header_end = text.find("\n", start)
    if header_end < 0:
        return None
    body = text[header_end + 1 : end]
    lines = body.split("\n")
    content = [line for line in lines if line.strip()]
    if not content:
        return None
    indent = content[0][: len(content[0]) - len(content[0].lstrip(" "))]
    decoded: list[str] = []
    offsets: list[int] = []
    pos = header_end + 1
    for number, line in enumerate(lines):
        if line.strip() and not line.startswith(indent):
            break  # dedented: the scalar ended (trailing comment lines and the like)
        if style == ">" and line.strip() and line[len(indent) :].startswith((" ", "\t")):
            return None  # more-indented lines fold differently
        body_start = pos + min(len(indent), len(line))
        for i, ch in enumerate(text[body_start : pos + len(line)]):
            decoded.append(ch)
            offsets.append(body_start + i)
        if number < len(lines) - 1:
            if style == ">" and not line.strip():
                return None  # blank lines inside folded scalars keep newlines: not supported
            decoded.append("\n" if style == "|" else " ")
            offsets.append(pos + len(line))
        pos += len(line) + 1
    offsets.append(offsets[-1] + 1 if offsets else pos)
    kind = "yaml_block" if style == "|" else "identity"
    return SourceMap("".join(decoded), offsets, kind, indent)


def last_scalar_end(text: str, node: Node) -> int:
    """Offset just after the last scalar inside `node`, ignoring trailing blanks and newlines.

    A block collection's end mark lies after trailing comments, so new entries are placed
    after its last scalar instead.
    """
    while isinstance(node, (MappingNode, SequenceNode)) and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    end = node.end_mark.index
    if isinstance(node, (MappingNode, SequenceNode)):  # an empty `[]` or `{}`
        return end
    while end > node.start_mark.index and text[end - 1] in " \t\n":
        end -= 1
    return end


def item_prefix(text: str, lines: LineIndex, item: Node) -> str:
    """The `    - ` in front of a block sequence item (indentation included)."""
    start = item.start_mark.index
    prefix = text[lines.line_start(start) : start]
    if prefix.strip() == "-":
        return prefix
    return " " * max(item.start_mark.column - 2, 0) + "- "


# ---------------------------------------------------------------------------------------------
# Renderers.


@dataclass
class YamlSeqRenderer:
    """Argument edits as items of a YAML sequence (`command: [...]` or `- item` lines)."""

    text: str
    lines: LineIndex
    seq: SequenceNode
    nodes: dict[int, ScalarNode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.nodes = {n.start_mark.index: n for n in self.seq.value if isinstance(n, ScalarNode)}

    def _style(self, arg: Arg) -> str | None:
        """The quoting most items of the sequence use (the anchor's on a tie)."""
        styles = [None if n.style in ("|", ">") else n.style for n in self.nodes.values()]
        anchor = self.nodes[arg.start].style
        anchor = None if anchor in ("|", ">") else anchor
        return max(dict.fromkeys([anchor, *styles]), key=styles.count)

    def replace(self, arg: Arg, value: str) -> Edit:
        node = self.nodes[arg.start]
        style = None if node.style in ("|", ">") else node.style  # keep this item's quoting
        return Edit(arg.start, arg.end, render_scalar(value, style, self.flow, node.value))

    @property
    def flow(self) -> bool:
        return bool(self.seq.flow_style)

    def insert_after(self, arg: Arg, values: Sequence[str]) -> Edit:
        items = [render_scalar(v, self._style(arg), self.flow) for v in values]
        if self.flow:
            return Edit(arg.end, arg.end, "".join(", " + item for item in items))
        node = self.nodes[arg.start]
        pos = self.lines.line_end(last_scalar_end(self.text, node))
        prefix = item_prefix(self.text, self.lines, node)
        return Edit(pos, pos, "".join("\n" + prefix + item for item in items))

    def insert_before(self, arg: Arg, values: Sequence[str]) -> Edit:
        items = [render_scalar(v, self._style(arg), self.flow) for v in values]
        if self.flow:
            return Edit(arg.start, arg.start, "".join(item + ", " for item in items))
        node = self.nodes[arg.start]
        prefix = item_prefix(self.text, self.lines, node)
        pos = self.lines.line_start(arg.start)
        return Edit(pos, pos, "".join(prefix + item + "\n" for item in items))


@dataclass
class ReadOnlyRenderer:
    """For arguments we can read but not edit safely (an unsupported scalar style)."""

    reason: str

    def replace(self, arg: Arg, value: str) -> Edit:
        raise CannotRender(self.reason)

    def insert_after(self, arg: Arg, values: Sequence[str]) -> Edit:
        raise CannotRender(self.reason)

    def insert_before(self, arg: Arg, values: Sequence[str]) -> Edit:
        raise CannotRender(self.reason)


# ---------------------------------------------------------------------------------------------
# Environment targets.


def _mapping_append(text: str, lines: LineIndex, mapping: MappingNode, entry: str) -> Edit:
    """Add `entry` (a `key: value` text, possibly multi-line) as the mapping's last entry."""
    if mapping.flow_style:
        raise CannotRender("a flow-style mapping; add it by hand")
    indent = " " * mapping.value[0][0].start_mark.column if mapping.value else "  "
    pos = lines.line_end(last_scalar_end(text, mapping))
    body = "\n".join(indent + line for line in entry.split("\n"))
    return Edit(pos, pos, "\n" + body)


@dataclass
class ComposeEnv:
    """A compose service's `environment:` (a mapping or a `- NAME=value` list)."""

    text: str
    lines: LineIndex
    service: MappingNode

    def values(self) -> dict[str, str]:
        node = get(self.service, "environment")
        out: dict[str, str] = {}
        if isinstance(node, MappingNode):
            for key, value in node.value:
                out[scalar(key) or ""] = scalar(value) or ""
        elif isinstance(node, SequenceNode):
            for item in node.value:
                name, _, value = (scalar(item) or "").partition("=")
                out[name] = value
        return out

    def plan_set(self, name: str, value: str) -> OpPlan | str:
        node = get(self.service, "environment")
        try:
            if node is None:
                entry = f"environment:\n  {name}: {render_scalar(value, None, False)}"
                edit = _mapping_append(self.text, self.lines, self.service, entry)
                return OpPlan((edit,), f"added environment {name}={value}")
            if isinstance(node, MappingNode):
                return self._set_in_mapping(node, name, value)
            if isinstance(node, SequenceNode):
                return self._set_in_list(node, name, value)
        except CannotRender as exc:
            return str(exc)
        return "environment: is neither a mapping nor a list"

    def _set_in_mapping(self, node: MappingNode, name: str, value: str) -> OpPlan:
        for key, old in node.value:
            if scalar(key) != name:
                continue
            if scalar(old) == value:
                return OpPlan((), f"{name} already {value}")
            if not isinstance(old, ScalarNode):
                raise CannotRender(f"environment {name} is not a scalar")
            new = render_scalar(value, old.style, bool(node.flow_style), old.value)
            start, end = old.start_mark.index, old.end_mark.index
            if start == end and self.text[start - 1 : start] == ":":
                new = " " + new  # `NAME:` with no value
            return OpPlan((Edit(start, end, new),), f"{name} {scalar(old)} → {value}")
        rendered = render_scalar(value, None, bool(node.flow_style))
        if node.flow_style:
            if node.value:
                pos = node.value[-1][1].end_mark.index
                edit = Edit(pos, pos, f", {name}: {rendered}")
            else:
                edit = Edit(node.start_mark.index, node.end_mark.index, f"{{{name}: {rendered}}}")
        else:
            edit = _mapping_append(self.text, self.lines, node, f"{name}: {rendered}")
        return OpPlan((edit,), f"added {name}={value}")

    def _set_in_list(self, node: SequenceNode, name: str, value: str) -> OpPlan:
        wanted = f"{name}={value}"
        renderer = YamlSeqRenderer(self.text, self.lines, node)
        for item in node.value:
            text = scalar(item) or ""
            if text.partition("=")[0] == name:
                if text == wanted:
                    return OpPlan((), f"{name} already {value}")
                arg = Arg(text, item.start_mark.index, item.end_mark.index, renderer)
                old = text.partition("=")[2]
                return OpPlan((renderer.replace(arg, wanted),), f"{name} {old} → {value}")
        if not node.value:
            raise CannotRender("environment: is an empty list; add it by hand")
        last = node.value[-1]
        arg = Arg(scalar(last) or "", last.start_mark.index, last.end_mark.index, renderer)
        return OpPlan((renderer.insert_after(arg, [wanted]),), f"added {wanted}")


@dataclass
class KubernetesEnv:
    """A container's `env:` list of `{name, value}` entries."""

    text: str
    lines: LineIndex
    container: MappingNode

    def _entries(self) -> Iterator[tuple[str, MappingNode]]:
        node = get(self.container, "env")
        if isinstance(node, SequenceNode):
            for item in node.value:
                if isinstance(item, MappingNode):
                    yield scalar(get(item, "name")) or "", item

    def values(self) -> dict[str, str]:
        return {name: scalar(get(item, "value")) or "" for name, item in self._entries()}

    def plan_set(self, name: str, value: str) -> OpPlan | str:
        rendered = render_scalar(value, None, False)
        for entry_name, item in self._entries():
            if entry_name != name:
                continue
            old = get(item, "value")
            if not isinstance(old, ScalarNode):
                return f"env {name} is set with valueFrom; change it by hand"
            if scalar(old) == value:
                return OpPlan((), f"{name} already {value}")
            new = render_scalar(value, old.style, bool(item.flow_style))
            edit = Edit(old.start_mark.index, old.end_mark.index, new)
            return OpPlan((edit,), f"{name} {scalar(old)} → {value}")
        node = get(self.container, "env")
        try:
            edit = self._add(node, name, rendered)
        except CannotRender as exc:
            return str(exc)
        return OpPlan((edit,), f"added env {name}={value}")

    def _add(self, node: Node | None, name: str, rendered: str) -> Edit:
        if node is None:
            entry = f"env:\n  - name: {name}\n    value: {rendered}"
            return _mapping_append(self.text, self.lines, self.container, entry)
        if not isinstance(node, SequenceNode):
            raise CannotRender("env: is not a list")
        if node.flow_style or not node.value:
            if node.value:
                pos = node.value[-1].end_mark.index
                return Edit(pos, pos, f", {{name: {name}, value: {rendered}}}")
            return Edit(node.start_mark.index, node.end_mark.index, f"[{{name: {name}, value: {rendered}}}]")
        last = node.value[-1]
        prefix = item_prefix(self.text, self.lines, last)
        pos = self.lines.line_end(last_scalar_end(self.text, last))
        if isinstance(last, MappingNode) and last.flow_style:
            return Edit(pos, pos, f"\n{prefix}{{name: {name}, value: {rendered}}}")
        inner = " " * len(prefix)
        return Edit(pos, pos, f"\n{prefix}name: {name}\n{inner}value: {rendered}")


# ---------------------------------------------------------------------------------------------
# Sites.


def yaml_sites(text: str) -> tuple[Format | None, list[Site]]:
    """The format (compose / kubernetes / None) and its vLLM sites; raises YAMLError."""
    lines = LineIndex(text)
    sites: list[Site] = []
    fmt: Format | None = None
    for doc in compose_documents(text):
        if is_compose(doc):
            fmt = "compose"
            services = get(doc, "services")
            assert isinstance(services, MappingNode)
            for key, service in services.value:
                if isinstance(service, MappingNode):
                    sites.extend(_compose_service(text, lines, scalar(key) or "?", service))
        elif is_kubernetes(doc):
            fmt = fmt or "kubernetes"
            kind = scalar(get(doc, "kind")) or "?"
            name = scalar(get(get(doc, "metadata"), "name")) or "?"
            for container in _containers(doc):
                cname = scalar(get(container, "name")) or "?"
                label = f"{kind}/{name} container {cname}"
                sites.extend(_kubernetes_container(text, lines, label, container))
    return fmt, sites


def _containers(node: Node) -> Iterator[MappingNode]:
    """Every `containers:` entry anywhere under a Kubernetes object (templates, CRDs)."""
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if scalar(key) == "containers" and isinstance(value, SequenceNode):
                yield from (c for c in value.value if isinstance(c, MappingNode))
            else:
                yield from _containers(value)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            yield from _containers(item)


def _compose_service(text: str, lines: LineIndex, name: str, service: MappingNode) -> list[Site]:
    image = scalar(get(service, "image"))
    entrypoint = get(service, "entrypoint")
    env = ComposeEnv(text, lines, service)
    image_entry = is_vllm_image(image) and entrypoint is None
    nodes = [n for n in (entrypoint, get(service, "command")) if n is not None]
    return _argv_sites(text, lines, nodes, "compose", f"service {name}", env, image, image_entry)


def _kubernetes_container(text: str, lines: LineIndex, label: str, container: MappingNode) -> list[Site]:
    image = scalar(get(container, "image"))
    command = get(container, "command")
    env = KubernetesEnv(text, lines, container)
    image_entry = is_vllm_image(image) and command is None
    nodes = [n for n in (command, get(container, "args")) if n is not None]
    return _argv_sites(text, lines, nodes, "kubernetes", label, env, image, image_entry)


def _argv_sites(
    text: str,
    lines: LineIndex,
    nodes: list[Node],
    fmt: Format,
    label: str,
    env: EnvTarget,
    image: str | None,
    image_entry: bool,
) -> list[Site]:
    args: list[Arg] = []
    for node in nodes:
        args.extend(_node_args(text, lines, node))
    if not args:
        return []
    values = [a.value for a in args]
    for i in range(len(values) - 2):
        if values[i] in _SHELLS and values[i + 1] == "-c":
            nested = _nested_shell(text, args[i + 2], fmt, env)
            for site in nested:
                site.label = label
                if isinstance(site, ArgvSite):
                    site.image = site.image or image
            return nested
    entry = find_entry(values, image_entry=image_entry)
    if entry is None:
        return []
    start = min(n.start_mark.index for n in nodes)
    end = max(last_scalar_end(text, n) for n in nodes)
    return [ArgvSite(fmt, label, start, end, args, entry, env, image=image)]


def _node_args(text: str, lines: LineIndex, node: Node) -> list[Arg]:
    """Arguments of a `command:`/`args:` node: list items, or the words of a string."""
    if isinstance(node, SequenceNode):
        renderer = YamlSeqRenderer(text, lines, node)
        return [
            Arg(scalar(item) or "", item.start_mark.index, item.end_mark.index, renderer)
            for item in node.value
            if isinstance(item, ScalarNode)
        ]
    if isinstance(node, ScalarNode):
        smap = scalar_map(text, node)
        if smap is None:
            reason = "the command is a YAML string in a style this tool cannot edit safely"
            try:
                words = shlex.split(scalar(node) or "")
            except ValueError:
                return []
            start, end = node.start_mark.index, node.end_mark.index
            return [Arg(w, start, end, ReadOnlyRenderer(reason)) for w in words]
        commands = scan_shell(smap.decoded)
        if len(commands) != 1:
            return []
        command = commands[0]
        shell = ShellRenderer(smap.decoded, smap, command)
        return [Arg(w.value, w.start, w.end, shell) for w in command.words]
    return []


def _nested_shell(text: str, script: Arg, fmt: Format, env: EnvTarget) -> list[Site]:
    """`sh -c "vllm serve …"`: the script's commands, with the container's environment."""
    renderer = script.renderer
    if not isinstance(renderer, YamlSeqRenderer):
        return []
    node = renderer.nodes[script.start]
    smap = scalar_map(text, node)
    if smap is None:
        return []
    commands = scan_shell(smap.decoded)
    return shell_sites(smap.decoded, smap, fmt, commands, outer_env=env)
