"""Format-neutral reading and editing of a vLLM argument vector.

Every launch format (shell, compose, Kubernetes, Dockerfile) ends up as a list of argument
strings. This module finds where vLLM starts in such a list, reads its flags the way vLLM's
`FlexibleArgumentParser` does (`--flag value`, `--flag=value`, `_` ≡ `-`, dotted JSON keys,
short aliases) and plans a fix as abstract argument edits (replace argument i, append
arguments, insert before argument i). Each format then renders those edits in its own syntax.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.model import FixOp
from ..core.values import SHORT_ALIASES, canonical_flag, json_flag_spelling, json_value
from ..core.versions import Version, parse_version

#: Flags that never take a value (besides the `--enable-*`, `--disable-*`, `--no-*` families).
_BOOLEAN_FLAGS = frozenset(
    {
        "--enforce-eager",
        "--trust-remote-code",
        "--skip-tokenizer-init",
        "--worker-use-ray",
        "--engine-use-ray",
        "--use-v2-block-manager",
        "--headless",
        "--async-scheduling",
        "--fully-sharded-loras",
    }
)

_NUMBER = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")
_ENTRY_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_CONTAINER_CLIS = ("docker", "podman", "nerdctl")
#: docker/podman run options that take a separate value (so the value is not the image).
_DOCKER_VALUE_OPTIONS = frozenset(
    (  # noqa: SIM905 (a word list reads better than one option per line)
        "-e --env --env-file -p --publish -v --volume --mount --name --gpus --ipc --network --net "
        "-w --workdir --entrypoint -u --user --shm-size --runtime --device -l --label --ulimit "
        "--cpus --memory -m --restart --platform --hostname -h --add-host --security-opt "
        "--cap-add --cap-drop --log-driver --log-opt --pull --pid --userns --tmpfs --dns "
        "--group-add --cidfile --cgroupns --stop-signal --stop-timeout --memory-swap"
    ).split()
)


def is_boolean_flag(name: str) -> bool:
    """Whether a canonical flag is a switch (takes no value)."""
    return name in _BOOLEAN_FLAGS or name.startswith(("--enable-", "--disable-", "--no-"))


def _looks_like_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER.fullmatch(token)


def split_flag(token: str) -> tuple[str, str | None, bool, str | None]:
    """Read one flag token: (canonical base flag, dotted key, negated, inline value).

    `--max_num_seqs=8` → (`--max-num-seqs`, None, False, "8");
    `-cc.cudagraph_mode=NONE` → (`--compilation-config`, "cudagraph_mode", False, "NONE");
    `--no-enforce-eager` → (`--enforce-eager`, None, True, None); `-O3` → (`-O`, None, False, "3").
    """
    if re.fullmatch(r"-O\d", token):
        return "-O", None, False, token[2:]
    spelled, eq, inline = token.partition("=")
    head, dot, key = spelled.partition(".")
    base = SHORT_ALIASES.get(head) or canonical_flag(head)
    negated = False
    if base.startswith("--no-") and not dot:
        base, negated = "--" + base[len("--no-") :], True
    return base, (key if dot else None), negated, (inline if eq else None)


@dataclass(frozen=True)
class FlagUse:
    """One occurrence of a flag in an argument vector (indices into that vector)."""

    base: str
    key: str | None
    index: int
    value_index: int | None
    inline: bool
    value: str | None
    negated: bool

    @property
    def name(self) -> str:
        """The flag as `flags` reports it: `--max-num-seqs`, `--compilation-config.mode`."""
        return f"{self.base}.{self.key}" if self.key else self.base


@dataclass
class VllmArgs:
    """The vLLM part of an argument vector: flags, positional arguments, model."""

    argv: list[str]
    start: int  # first vLLM argument
    end: int  # one past the last
    uses: list[FlagUse] = field(default_factory=list)
    positionals: list[int] = field(default_factory=list)

    @property
    def model(self) -> str | None:
        for use in reversed(self.uses):
            if use.base == "--model" and use.value:
                return use.value
        return self.argv[self.positionals[0]] if self.positionals else None

    def flags(self) -> dict[str, str]:
        """Canonical flag → value text (`true`/`false` for switches; the last one wins)."""
        out: dict[str, str] = {}
        for use in self.uses:
            if use.value is not None:
                out[use.name] = use.value
            else:
                out[use.name] = "false" if use.negated else "true"
        return out

    def find(self, base: str, key: str | None = None) -> list[FlagUse]:
        return [u for u in self.uses if u.base == base and u.key == key]


def parse_vllm_args(argv: Sequence[str], start: int, end: int | None = None) -> VllmArgs:
    """Read argv[start:end] as vLLM flags; a non-flag token after a valued flag is its value."""
    argv = list(argv)
    end = len(argv) if end is None else end
    parsed = VllmArgs(argv=argv, start=start, end=end)
    i = start
    while i < end:
        token = argv[i]
        if not _looks_like_flag(token):
            parsed.positionals.append(i)
            i += 1
            continue
        base, key, negated, inline = split_flag(token)
        value_index = None
        value = inline
        takes_value = key is not None or not (negated or is_boolean_flag(base))
        if inline is None and takes_value and i + 1 < end and not _looks_like_flag(argv[i + 1]):
            value_index, value = i + 1, argv[i + 1]
        parsed.uses.append(FlagUse(base, key, i, value_index, inline is not None, value, negated))
        i += 2 if value_index is not None else 1
    return parsed


@dataclass(frozen=True)
class Entry:
    """Where vLLM starts in an argument vector and how it was started."""

    kind: str  # "vllm serve" | "api_server" | "docker run" | "image"
    args_start: int
    args_end: int
    image_index: int | None = None  # docker run: the image argument
    image: str | None = None


def find_entry(argv: Sequence[str], image_entry: bool = False) -> Entry | None:
    """Find `vllm serve`, `python -m vllm.entrypoints…`, or `docker run … vllm-image …`.

    `image_entry`: argv are arguments to a vLLM image's entrypoint (compose `command:` of a
    `vllm/vllm-openai` service) unless they start vLLM themselves.
    """
    for i, word in enumerate(argv):
        base = word.rsplit("/", 1)[-1]
        if base == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return Entry("vllm serve", i + 2, len(argv))
        if word == "-m" and i + 1 < len(argv) and argv[i + 1] in _ENTRY_MODULES:
            return Entry("api_server", i + 2, len(argv))
        if base in _CONTAINER_CLIS and i + 1 < len(argv) and argv[i + 1] == "run":
            docker = _docker_entry(argv, i + 2)
            if docker:
                return docker
    if image_entry:
        return Entry("image", 0, len(argv))
    return None


def _docker_entry(argv: Sequence[str], start: int) -> Entry | None:
    i = start
    while i < len(argv):
        word = argv[i]
        if word.startswith("-"):
            i += 2 if word in _DOCKER_VALUE_OPTIONS else 1
            continue
        if "vllm" not in word.lower():
            return None  # some other image
        inner = find_entry(argv[i + 1 :])
        args_start = i + 1 + inner.args_start if inner else i + 1
        return Entry("docker run", args_start, len(argv), image_index=i, image=word)
    return None


def image_version(image: str | None) -> Version | None:
    """The vLLM version in an image tag: `vllm/vllm-openai:v0.9.1` → (0, 9, 1)."""
    if not image or ":" not in image.rsplit("/", 1)[-1]:
        return None
    return parse_version(image.rsplit(":", 1)[1])


def docker_env_uses(argv: Sequence[str], entry: Entry) -> dict[str, int]:
    """`docker run -e NAME=value` options before the image: NAME → index of `NAME=value`."""
    found: dict[str, int] = {}
    if entry.image_index is None:
        return found
    i = 0
    while i < entry.image_index:
        word = argv[i]
        if word in ("-e", "--env") and i + 1 < entry.image_index:
            found[argv[i + 1].partition("=")[0]] = i + 1
            i += 2
            continue
        i += 1
    return found


# ---------------------------------------------------------------------------------------------
# Planning: a FixOp becomes abstract argument edits.


@dataclass(frozen=True)
class Replace:
    """Replace argument `index` with `value`."""

    index: int
    value: str


@dataclass(frozen=True)
class Append:
    """Add arguments after the last vLLM argument (one group: one line in multi-line layouts)."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class InsertBefore:
    """Add arguments before argument `index` (docker `-e` options go before the image)."""

    index: int
    values: tuple[str, ...]


ArgEdit = Replace | Append | InsertBefore


@dataclass(frozen=True)
class Plan:
    """What one op does to one invocation: edits plus a human summary (empty edits = no-op)."""

    edits: tuple[ArgEdit, ...]
    summary: str


def same_value(a: str | None, b: str | None) -> bool:
    """Whether two flag values mean the same (`0.90` = `0.9`, `true` = `True`, JSON equal)."""
    if a is None or b is None:
        return a == b
    if a == b or (a.lower() == b.lower() and a.lower() in ("true", "false", "none")):
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        pass
    return json_value(a) == json_value(b)


def current_value(parsed: VllmArgs, op: FixOp) -> str | None:
    """The value the invocation currently gives the op's flag or JSON key (None if unset)."""
    if op.op == "merge_json":
        return json_key_value(parsed, op.name, op.key or "")
    uses = parsed.find(op.name)
    if not uses:
        return None
    last = uses[-1]
    if op.op == "add_flag":
        return "false" if last.negated else "true"
    return last.value


def json_key_value(parsed: VllmArgs, flag: str, key: str) -> str | None:
    """A JSON config key's current value, from a dotted flag or the flag's JSON object."""
    dotted = parsed.find(flag, key)
    if dotted:
        return dotted[-1].value
    for use in reversed(parsed.find(flag)):
        obj = _json_object(use.value)
        found = get_path(obj, key) if obj is not None else None
        if found is not None:
            return found if isinstance(found, str) else json.dumps(found)
    return None


def plan_flag_op(parsed: VllmArgs, op: FixOp, value: str | None, version: Version | None) -> Plan | str:
    """Plan a flag op (`add_flag`, `set_flag`, `merge_json`); a string is a reason to skip."""
    if op.op == "add_flag":
        return _plan_add_flag(parsed, op.name)
    if op.op == "set_flag":
        return _plan_set_flag(parsed, op.name, value or "")
    if op.op == "merge_json":
        return _plan_merge_json(parsed, op.name, op.key or "", value or "", version)
    return f"{op.op} is not a flag operation"


def _plan_add_flag(parsed: VllmArgs, name: str) -> Plan:
    uses = parsed.find(name)
    if uses and not uses[-1].negated:
        return Plan((), f"{name} already set")
    if uses:
        edits = tuple(Replace(u.index, name) for u in uses if u.negated)
        return Plan(edits, f"{parsed.argv[uses[-1].index]} → {name}")
    return Plan((Append((name,)),), f"added {name}")


def _plan_set_flag(parsed: VllmArgs, name: str, value: str, key: str | None = None) -> Plan:
    uses = parsed.find(name, key)
    spelled = f"{name}.{key}" if key else name
    if not uses:
        return Plan((Append((spelled, value)),), f"added {spelled} {value}")
    edits: list[ArgEdit] = []
    old = uses[-1].value
    for use in uses:
        if same_value(use.value, value):
            continue
        if use.inline:
            head = parsed.argv[use.index].partition("=")[0]
            edits.append(Replace(use.index, f"{head}={value}"))
        elif use.value_index is not None:
            edits.append(Replace(use.value_index, value))
        else:  # a valued flag written without a value: give it one
            edits.append(Replace(use.index, f"{parsed.argv[use.index]}={value}"))
    if not edits:
        return Plan((), f"{spelled} already {value}")
    return Plan(tuple(edits), f"{spelled} {old if old is not None else '(no value)'} → {value}")


def _plan_merge_json(
    parsed: VllmArgs, flag: str, key: str, value: str, version: Version | None
) -> Plan | str:
    if parsed.find(flag, key):
        return _plan_set_flag(parsed, flag, value, key)
    objects = [u for u in parsed.find(flag) if u.value is not None]
    if objects:
        use = objects[-1]
        obj = _json_object(use.value)
        if obj is None:
            return f"{flag} is given as {use.value!r}, not a JSON object; cannot merge {key!r} into it"
        wanted = json_value(value)
        old = get_path(obj, key)
        if old == wanted:
            return Plan((), f"{flag} {key} already {value}")
        _set_path(obj, key, wanted)
        new_json = _dump_like(obj, use.value or "")
        if use.inline:
            head = parsed.argv[use.index].partition("=")[0]
            edit: ArgEdit = Replace(use.index, f"{head}={new_json}")
        else:
            edit = Replace(use.value_index, new_json)  # type: ignore[arg-type]
        if old is None:
            return Plan((edit,), f"{flag}: added {json.dumps(key)}: {json.dumps(wanted)}")
        return Plan((edit,), f"{flag} {key}: {json.dumps(old)} → {json.dumps(wanted)}")
    spelling = json_flag_spelling(flag, key, value, version)
    values = tuple(_split_spelling(spelling))
    return Plan((Append(values),), f"added {' '.join(values)}")


def _split_spelling(spelling: str) -> list[str]:
    return shlex.split(spelling)


def _json_object(text: str | None) -> dict | None:
    try:
        obj = json.loads(text or "")
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def get_path(obj: dict, key: str) -> object:
    """The value at a dotted `key` inside nested dicts (None when a part is missing)."""
    node: object = obj
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _set_path(obj: dict, key: str, value: object) -> None:
    parts = key.split(".")
    node = obj
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def _dump_like(obj: dict, original: str) -> str:
    """Serialise JSON with the original's spacing (`{"a": 1}` or `{"a":1}`)."""
    compact = bool(original.strip("{} ")) and ": " not in original and ":" in original
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(obj, separators=separators, ensure_ascii=False)
