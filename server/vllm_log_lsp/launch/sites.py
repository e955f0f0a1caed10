"""Located invocations ("sites"): an invocation plus what is needed to edit it in its text.

A site is internal and short-lived: it is built by parsing one text, asked to plan one
operation, and thrown away. Formats differ only in how an argument or environment variable
is spelled, so they provide small renderers (`ArgRenderer`, `EnvTarget`) and share the
planning in `ArgvSite`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..core.model import FixOp
from ..core.versions import Version
from .argv import (
    Append,
    ArgEdit,
    Entry,
    InsertBefore,
    Replace,
    VllmArgs,
    current_value,
    parse_vllm_args,
    plan_flag_op,
)
from .argv import image_version as tag_version
from .model import Format, Invocation, SourceRange
from .text import Edit, LineIndex


class Malformed(Exception):
    """The text cannot be parsed as its format; the message is for humans."""


@dataclass(frozen=True)
class OpPlan:
    """File edits for one operation and a one-line description (no edits: already done)."""

    edits: tuple[Edit, ...]
    summary: str


class ArgRenderer(Protocol):
    """Spells argument edits in one container's syntax (shell words, YAML items, JSON)."""

    def replace(self, arg: Arg, value: str) -> Edit: ...

    def insert_after(self, arg: Arg, values: Sequence[str]) -> Edit: ...

    def insert_before(self, arg: Arg, values: Sequence[str]) -> Edit: ...


@dataclass
class Arg:
    """One argument: its value and where it lies (file offsets for YAML/JSON items)."""

    value: str
    start: int
    end: int
    renderer: ArgRenderer
    opaque: bool = False  # expands to words this file does not show (`$ARGS` of unknown words)


class EnvTarget(Protocol):
    """Where an invocation's environment variables live (export lines, `environment:`, ENV)."""

    def values(self) -> dict[str, str]: ...

    def plan_set(self, name: str, value: str) -> OpPlan | str: ...


class Site:
    """One invocation located in a text: summarise it, read current values, plan edits."""

    fmt: Format
    label: str
    start: int
    end: int
    entry: str
    image: str | None = None

    def flags(self) -> dict[str, str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def model(self) -> str | None:
        raise NotImplementedError

    def current(self, op: FixOp) -> str | None:
        """The value this invocation gives the op's target now (None when unset)."""
        raise NotImplementedError

    def plan(
        self, op: FixOp, value: str | None, version: Version | None, logged: bool | None = None
    ) -> OpPlan | str:
        """File edits making the op true, or a reason why it cannot be done here.

        `logged`: whether the log shows the crashed run set the op's flag (None: unknown).
        """
        raise NotImplementedError

    def extra_regions(self) -> list[tuple[int, int]]:
        """Offset ranges outside the invocation that define part of it (a `**` mapping, a shell
        array): its edits may land there."""
        return []

    def invocation(self, path: str, index: int, lines: LineIndex) -> Invocation:
        flags = self.flags()
        sl, sc = lines.position(self.start)
        el, ec = lines.position(self.end)
        tag = tag_version(self.image)
        return Invocation(
            path=path,
            format=self.fmt,
            index=index,
            range=SourceRange(sl, sc, el, ec),
            entry=self.entry,
            label=self.label,
            model=self.model(),
            port=_as_int(flags.get("--port")),
            tensor_parallel_size=_as_int(flags.get("--tensor-parallel-size")),
            flags=flags,
            env=self.env(),
            image=self.image,
            vllm_version=".".join(map(str, tag)) if tag else None,
        )


def _as_int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@dataclass
class NoEnv:
    """An invocation whose format has nowhere to put environment variables."""

    reason: str

    def values(self) -> dict[str, str]:
        return {}

    def plan_set(self, name: str, value: str) -> OpPlan | str:
        return self.reason


_VAR_REF = re.compile(r"\$(\w+)|\$\{(\w+)\}")
#: Words that expand to arguments this file does not show: `"$@"`, `"${ARGS[@]}"`.
_OPAQUE = re.compile(r"\$\{?[@*]\}?|\$\{\w+\[[@*]\]\}")


@dataclass
class ArgvSite(Site):
    """An invocation given as an argument vector (shell, compose, Kubernetes, Dockerfile)."""

    fmt: Format
    label: str
    start: int
    end: int
    args: list[Arg]
    entry_info: Entry
    env_target: EnvTarget
    variables: dict[str, str] = field(default_factory=dict)  # shell variables for `$MODEL`
    image: str | None = None  # the container image, when the format names one
    extra: list[tuple[int, int]] = field(default_factory=list)  # see `extra_regions`
    parsed: VllmArgs = field(init=False)

    def __post_init__(self) -> None:
        self.entry = self.entry_info.kind
        self.image = self.entry_info.image or self.image
        values = [a.value for a in self.args]
        self.parsed = parse_vllm_args(values, self.entry_info.args_start, self.entry_info.args_end)

    def _expand(self, text: str | None) -> str | None:
        """`$MODEL` → its value when the script assigns it; unresolved references → None."""
        if text is None or "$" not in text:
            return text
        expanded = _VAR_REF.sub(lambda m: self.variables.get(m.group(1) or m.group(2), "\0"), text)
        return None if "\0" in expanded else expanded

    def flags(self) -> dict[str, str]:
        return {k: self._expand(v) or v for k, v in self.parsed.flags().items()}

    def env(self) -> dict[str, str]:
        return self.env_target.values()

    def model(self) -> str | None:
        model = self.parsed.model
        return None if model is not None and _OPAQUE.fullmatch(model) else self._expand(model)

    def extra_regions(self) -> list[tuple[int, int]]:
        return list(self.extra)

    def opaque_words(self) -> list[str]:
        """The words of the vLLM arguments that expand to arguments not in this file."""
        args = self.args[self.parsed.start : self.parsed.end]
        return list(dict.fromkeys(a.value for a in args if a.opaque or _OPAQUE.fullmatch(a.value)))

    def current(self, op: FixOp) -> str | None:
        if op.op == "set_env":
            return self.env_target.values().get(op.name)
        return self._expand(current_value(self.parsed, op))

    def plan(
        self, op: FixOp, value: str | None, version: Version | None, logged: bool | None = None
    ) -> OpPlan | str:
        if op.op == "set_env":
            return self.env_target.plan_set(op.name, value or "")
        hidden = self.opaque_words()
        if hidden and op.op != "add_flag" and current_value(self.parsed, op) is None and logged is not False:
            # the flag may come through those words: a second one would override it unseen
            target = f"{op.name}.{op.key}" if op.op == "merge_json" else op.name
            words = ", ".join(hidden)
            if logged:
                return (
                    f"the logged run's {target} is not in {self.label}: it comes through {words}; "
                    "set it where those arguments are given"
                )
            return (
                f"{self.label} passes on {words}, which may already set {target}; "
                "set it where those arguments are given"
            )
        planned = plan_flag_op(self.parsed, op, value, version)
        if isinstance(planned, str):
            return planned
        try:
            edits = tuple(self._render(edit) for edit in planned.edits)
        except (CannotRender, ValueError) as exc:  # ValueError: SourceMap.encode refused
            return str(exc)
        return OpPlan(edits, planned.summary)

    def _render(self, edit: ArgEdit) -> Edit:
        if isinstance(edit, Replace):
            arg = self.args[edit.index]
            return arg.renderer.replace(arg, edit.value)
        if isinstance(edit, InsertBefore):
            arg = self.args[edit.index]
            return arg.renderer.insert_before(arg, edit.values)
        assert isinstance(edit, Append)
        last = self.parsed.end - 1
        if last < 0:
            raise CannotRender(f"{self.label} has no arguments to add {edit.values[0]} after")
        arg = self.args[last]
        return arg.renderer.insert_after(arg, edit.values)


class CannotRender(Exception):
    """An edit cannot be spelled safely in this container; the message says why."""


# ---------------------------------------------------------------------------------------------
# Shell quoting shared by formats that embed shell words.


def quote_like(old_source: str, value: str) -> str:
    """Quote `value` for a shell the way `old_source` was quoted, when that stays correct."""
    if len(old_source) >= 2 and old_source[0] == old_source[-1] == "'" and "'" not in value:
        return f"'{value}'"
    if (
        len(old_source) >= 2
        and old_source[0] == old_source[-1] == '"'
        and not any(c in value for c in '"\\$`')
    ):
        return f'"{value}"'
    return shlex.quote(value)


def join_words(values: Sequence[str], quote: Callable[[str], str] = shlex.quote) -> str:
    return " ".join(quote(v) for v in values)
