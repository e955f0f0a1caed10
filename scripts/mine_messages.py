#!/usr/bin/env python3
"""Mine the messages vLLM and its stack can raise or log, for many releases, into the package.

Development-time only (never run by the tests or CI): it downloads released wheels from PyPI
with `pip download`, reads only their `.py` members straight from the zip, and with `ast` extracts
every `raise X(...)`, `logger.error/warning/exception/critical(...)` and `assert ..., msg`:

- the message as a template: literal text with f-string, `%` and `.format` placeholders turned
  into named captures (named after the expression they print);
- the exception type (or `log.LEVEL` for a logger call), the module and the function;
- the first and last mined release of the package that contain it (templates are merged across
  releases).

It writes `server/vllm_log_lsp/mined/messages.idx` (see `core/mined.py` for its format and how
it is matched; run the script with the project's `.venv/bin/python`, it imports the package). Templates too generic to tell anything (a bare placeholder, one short word)
are dropped. Wheels are deleted as soon as they are read.

    python3 scripts/mine_messages.py            # the default spread of releases
    python3 scripts/mine_messages.py --vllm 0.6.0 0.9.2 --no-libraries   # a quick partial run

Regenerate after a new vLLM release: add it to `VLLM_RELEASES` and run the script.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import string
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "server" / "vllm_log_lsp" / "mined" / "messages.idx"

#: A spread of vLLM releases from 0.4 to the newest (more near the versions users run most).
VLLM_RELEASES = (
    "0.4.0",
    "0.4.3",
    "0.5.5",
    "0.6.0",
    "0.6.6",
    "0.7.3",
    "0.8.5",
    "0.9.2",
    "0.10.1.1",
    "0.10.2",
    "0.11.0",
    "0.13.0",
    "0.15.1",
    "0.19.0",
    "0.25.0",
    "0.29.0",
    "0.33.0",
)

#: Libraries whose messages reach vLLM logs: releases, and which of their modules to read
#: (None: all). torch is read only where its messages end up in vLLM crashes.
LIBRARIES: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "transformers": (
        ("4.40.0", "4.46.0", "4.51.0", "4.56.0"),
        (
            "transformers/configuration_utils.py",
            "transformers/modeling_utils.py",
            "transformers/tokenization_utils",
            "transformers/processing_utils.py",
            "transformers/dynamic_module_utils.py",
            "transformers/utils/",
            "transformers/models/auto/",
            "transformers/quantizers/",
            "transformers/integrations/",
            "transformers/generation/configuration_utils.py",
            "transformers/convert_slow_tokenizer.py",
        ),
    ),
    "huggingface_hub": (("0.23.0", "0.30.0", "0.34.0"), None),
    "safetensors": (("0.4.5",), None),
    "pydantic": (("2.9.0", "2.11.0"), None),
    "ray": (
        ("2.40.0", "2.48.0"),
        ("ray/exceptions.py", "ray/_private/", "ray/util/placement_group.py", "ray/util/collective/"),
    ),
    "torch": (
        ("2.13.0",),
        (
            "torch/cuda/",
            "torch/distributed/",
            "torch/_dynamo/",
            "torch/_inductor/",
            "torch/serialization.py",
            "torch/utils/cpp_extension.py",
            "torch/_ops.py",
            "torch/library.py",
            "torch/_library/",
            "torch/multiprocessing/",
            "torch/storage.py",
            "torch/_utils.py",
            "torch/nn/modules/module.py",
        ),
    ),
}

#: Skip code that never runs inside a vLLM server (tests, benchmarks, examples, vendored tools).
SKIP_PARTS = (
    "/tests/",
    "/test/",
    "/testing/",
    "/benchmarks/",
    "/examples/",
    "/_vendor/",
    "/vendor/",
    "/thirdparty_files/",
)

#: Exception types whose first argument is an error code, not the message (pydantic-core's).
CODE_FIRST = {"PydanticKnownError", "PydanticCustomError"}

#: Messages shaped like CPython's own (a library that mimics them, e.g. torch's
#: `Module.__getattr__`, would otherwise be named as the origin of every such error).
BUILTIN_LOOKALIKES = re.compile(
    r"object has no attribute|object is not (?:subscriptable|callable|iterable)|"
    r"unexpected keyword argument|required positional argument|index out of range|"
    r"not supported between instances of|unsupported operand type|^No module named|"
    r"^cannot import name|takes \d+ positional arguments? but|object does not support item assignment"
)

LOG_METHODS = {
    "error": "error",
    "error_once": "error",
    "exception": "error",
    "critical": "critical",
    "fatal": "critical",
    "warning": "warning",
    "warning_once": "warning",
    "warn": "warning",
}

#: A template must have this many letters of literal text and this many words to be kept.
MIN_LETTERS = 14
MIN_WORDS = 2
MAX_TEMPLATE = 600
#: Places kept per template (a message copied into many model files keeps the newest few).
MAX_SITES = 3

_WORD = re.compile(r"[A-Za-z0-9_]+")
_PERCENT = re.compile(
    r"%(?:\((?P<key>\w+)\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])"
)


# -- templates ------------------------------------------------------------------------------------
@dataclass
class Hole:
    """A placeholder: the value of an expression, named after it."""

    name: str


Parts = list  # alternating str literals and Holes


def expr_name(node: ast.AST) -> str:
    """A capture name that says what the expression prints (`self.max_model_len` -> max_model_len)."""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript):
        inner = node.slice
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            name = inner.value
        else:
            name = expr_name(node.value)
    elif isinstance(node, ast.Call):
        func = expr_name(node.func)
        name = (
            f"{func}_{expr_name(node.args[0])}"
            if func in ("len", "type", "str", "repr") and node.args
            else func
        )
    elif isinstance(node, ast.FormattedValue):
        name = expr_name(node.value)
    else:
        name = "value"
    name = re.sub(r"\W+", "_", name).strip("_").lower() or "value"
    return ("v_" + name) if name[0].isdigit() else name[:40]


class Extractor:
    """Turns a message expression into template parts, resolving simple local variables."""

    def __init__(self, assignments: dict[str, ast.AST]) -> None:
        self.assignments = assignments

    def parts(self, node: ast.AST | None, depth: int = 0) -> Parts | None:
        """The template of a string-valued expression; None when it is not one."""
        if node is None or depth > 4:
            return None
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            out: Parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    out.append(str(value.value))
                else:
                    out.append(Hole(expr_name(value)))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self.parts(node.left, depth + 1)
            right = self.parts(node.right, depth + 1)
            if left is None and right is None:
                return None
            return (left or [Hole(expr_name(node.left))]) + (right or [Hole(expr_name(node.right))])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self.parts(node.left, depth + 1)
            if left is None or len(left) != 1 or not isinstance(left[0], str):
                return None
            return percent_parts(left[0], node.right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            base = self.parts(node.func.value, depth + 1)
            if base is None or len(base) != 1 or not isinstance(base[0], str):
                return None
            return format_parts(base[0], node.args, node.keywords)
        if isinstance(node, ast.Name) and node.id in self.assignments:
            return self.parts(self.assignments[node.id], depth + 1)
        return None


def percent_parts(fmt: str, args: ast.AST | list[ast.AST]) -> Parts:
    """`"a %s b %(k)d" % ...` as parts; holes are named after the arguments."""
    if isinstance(args, list):
        values = args
    elif isinstance(args, ast.Tuple):
        values = list(args.elts)
    else:
        values = [args]
    out: Parts = []
    pos, index = 0, 0
    for match in _PERCENT.finditer(fmt):
        out.append(fmt[pos : match.start()])
        pos = match.end()
        if match.group("conv") == "%":
            out.append("%")
            continue
        if match.group("key"):
            out.append(Hole(match.group("key")))
        else:
            out.append(Hole(expr_name(values[index]) if index < len(values) else "value"))
            index += 1
    out.append(fmt[pos:])
    return out


def format_parts(fmt: str, args: list[ast.AST], keywords: list[ast.keyword]) -> Parts | None:
    """`"a {} b {x}".format(...)` as parts."""
    named = {k.arg: k.value for k in keywords if k.arg}
    out: Parts = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return None
    for literal, field_name, _, _ in parsed:
        out.append(literal)
        if field_name is None:
            continue
        key = re.split(r"[.\[]", field_name, maxsplit=1)[0]
        if key == "":
            node = args[auto] if auto < len(args) else None
            auto += 1
            out.append(Hole(expr_name(node) if node is not None else "value"))
        elif key.isdigit():
            index = int(key)
            out.append(Hole(expr_name(args[index]) if index < len(args) else "value"))
        else:
            out.append(Hole(expr_name(named[key]) if key in named else key))
    return out


def normalise(parts: Parts) -> list[str] | None:
    """Alternating [literal, name, literal, ...] (starting and ending with a literal), cut at the
    first line break (logs show a multi-line message's first line on the exception line), with
    adjacent holes merged and names made unique. None when too generic to keep."""
    merged: list = [""]
    for part in parts:
        if isinstance(part, str):
            if isinstance(merged[-1], str):
                merged[-1] += part
            else:
                merged.append(part)
        elif isinstance(merged[-1], str):
            merged.append(part)
        # else: adjacent holes cannot be told apart; the first takes both
    if isinstance(merged[-1], Hole):
        merged.append("")
    # The exception line shows the first line: cut there, and let the rest be anything.
    for i in range(0, len(merged), 2):
        cut = merged[i].find("\n")
        if cut >= 0:
            head = merged[i][:cut]
            merged = [*merged[:i], head]
            if any(isinstance(p, Hole) for p in merged) or head:
                merged += [Hole("rest"), ""]
            break
    merged[0] = merged[0].lstrip()
    merged[-1] = merged[-1].rstrip()
    literal = "".join(p for p in merged if isinstance(p, str))
    if len(literal) > MAX_TEMPLATE:
        return None
    if BUILTIN_LOOKALIKES.search(literal):
        return None
    words = re.findall(r"[A-Za-z]{3,}", literal)
    if sum(map(len, words)) < MIN_LETTERS or len(words) < MIN_WORDS:
        return None
    out: list[str] = []
    seen: Counter = Counter()
    for part in merged:
        if isinstance(part, str):
            out.append(part)
        else:
            seen[part.name] += 1
            out.append(part.name if seen[part.name] == 1 else f"{part.name}_{seen[part.name]}")
    return out


# -- walking a module ---------------------------------------------------------------------------
@dataclass
class Message:
    parts: tuple[str, ...]
    kind: str  # exception type, or log.error / log.warning / log.critical
    module: str
    function: str


def _single_assignments(func: ast.AST) -> dict[str, ast.AST]:
    """Local names assigned exactly once in the function (e.g. `msg = f"..."`)."""
    counts: Counter = Counter()
    values: dict[str, ast.AST] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    counts[target.id] += 1
                    values[target.id] = node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            counts[node.target.id] += 2  # built up piecewise: too uncertain
    return {name: value for name, value in values.items() if counts[name] == 1}


def _exception_type(node: ast.AST) -> str | None:
    call = node.func if isinstance(node, ast.Call) else node
    if isinstance(call, ast.Name):
        return call.id
    if isinstance(call, ast.Attribute):
        return call.attr
    return None


def _is_logger(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return "log" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "log" in node.attr.lower()
    return False


class ModuleWalker(ast.NodeVisitor):
    """Collects the messages of one module, with the qualified name of the enclosing function."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.extractors: list[Extractor] = [Extractor({})]
        self.messages: list[Message] = []

    def _function(self, node: ast.AST) -> None:
        self.scope.append(node.name)
        self.extractors.append(Extractor(_single_assignments(node)))
        self.generic_visit(node)
        self.extractors.pop()
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def _add(self, parts: Parts | None, kind: str) -> None:
        if parts is None:
            return
        template = normalise(parts)
        if template is not None:
            self.messages.append(Message(tuple(template), kind, self.module, ".".join(self.scope)))

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            kind = _exception_type(exc)
            if kind and kind not in CODE_FIRST:
                self._add(self.extractors[-1].parts(exc.args[0]), kind)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None:
            self._add(self.extractors[-1].parts(node.msg), "AssertionError")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in LOG_METHODS
            and _is_logger(func.value)
            and node.args
        ):
            parts = self.extractors[-1].parts(node.args[0])
            if parts is not None and len(node.args) > 1 and len(parts) == 1 and isinstance(parts[0], str):
                parts = percent_parts(parts[0], list(node.args[1:]))
            self._add(parts, f"log.{LOG_METHODS[func.attr]}")
        self.generic_visit(node)


def messages_of_source(source: str, module: str) -> list[Message]:
    """Every message of one module's source (nothing if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        print(f"    cannot parse {module}", file=sys.stderr)
        return []
    walker = ModuleWalker(module)
    walker.visit(tree)
    return walker.messages


def messages_of_wheel(wheel: Path, prefixes: tuple[str, ...] | None) -> list[Message]:
    """Messages of a wheel's `.py` members (read from the zip, nothing extracted)."""
    out: list[Message] = []
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.endswith(".py") or ".dist-info/" in name or ".data/" in name:
                continue
            if any(part in "/" + name for part in SKIP_PARTS):
                continue
            if prefixes is not None and not name.startswith(prefixes):
                continue
            source = archive.read(name).decode("utf-8", errors="replace")
            out.extend(messages_of_source(source, name))
    return out


# -- releases -----------------------------------------------------------------------------------
def download(package: str, version: str, directory: Path) -> Path | None:
    """One release's wheel via pip (no dependencies, binary only); None when there is none."""
    local = _local_wheel(package, version)
    if local is not None:
        return local
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-q",
            f"{package}=={version}",
            "-d",
            str(directory),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(f"  {package} {version}: no wheel ({done.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    wheels = sorted(directory.glob("*.whl"))
    return wheels[0] if wheels else None


def _local_wheel(package: str, version: str) -> Path | None:
    """A wheel already on this machine's disk (the torch CPU build)."""
    for folder in (Path("/opt/pypi"), Path("/opt/pypi-more"), Path("/opt/wheels")):
        if folder.is_dir():
            for wheel in folder.rglob(f"{package}-{version}[-+]*.whl"):
                return wheel
    return None


@dataclass
class Entry:
    """One message of one package: where it is raised, in which releases.

    Messages are told apart by their literal text and type only: a placeholder renamed between
    releases (`{needed_memory / GiB_bytes}` → `{format_gib(needed_memory)}`) is the same message,
    and keeps the newest release's names."""

    parts: tuple[str, ...]
    kind: str
    newest: int = -1  # the newest release index `parts` was taken from
    sites: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (module, function) -> release idx


def release_messages(
    package: str, version: str, prefixes: tuple[str, ...] | None, cache: Path | None
) -> list[Message] | None:
    """The messages of one release (from `cache` when it was read before); None: no wheel."""
    cached = cache / f"{package}-{version}.json" if cache else None
    if cached is not None and cached.exists():
        return [Message(tuple(m[0]), m[1], m[2], m[3]) for m in json.loads(cached.read_text())]
    with tempfile.TemporaryDirectory(prefix="mine-") as tmp:
        wheel = download(package, version, Path(tmp))
        if wheel is None:
            return None
        messages = messages_of_wheel(wheel, prefixes)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps([[m.parts, m.kind, m.module, m.function] for m in messages]))
    return messages


def mine_package(
    package: str, releases: tuple[str, ...], prefixes: tuple[str, ...] | None, cache: Path | None = None
) -> tuple[tuple[list[str], list[int]], dict]:
    """Templates of every release of one package, merged across releases."""
    entries: dict[tuple[tuple[str, ...], str], Entry] = {}
    mined: list[str] = []
    counts: list[int] = []
    for version in releases:
        messages = release_messages(package, version, prefixes, cache)
        if messages is None:
            continue
        index = len(mined)
        mined.append(version)
        unique = {(m.parts, m.kind, m.module, m.function) for m in messages}
        counts.append(len({(m.parts[0::2], m.kind) for m in messages}))
        print(f"  {package} {version}: {counts[-1]} templates", file=sys.stderr)
        for parts, kind, module, function in sorted(unique):
            entry = entries.setdefault((parts[0::2], kind), Entry(parts, kind))
            if index > entry.newest:
                entry.parts, entry.newest = parts, index
            releases_here = entry.sites.setdefault((module, function), [])
            if index not in releases_here:
                releases_here.append(index)
    return (mined, counts), entries


def _anchor_frequency(all_entries: list[Entry]) -> Counter:
    freq: Counter = Counter()
    for entry in all_entries:
        freq.update(set(anchor_words(entry.parts)))
    return freq


def anchor_words(parts: tuple[str, ...]) -> list[str]:
    """Words of the literal text that a message shows whole: not touching a placeholder."""
    words = []
    last = len(parts) - 1
    for i in range(0, len(parts), 2):
        literal = parts[i]
        for match in _WORD.finditer(literal):
            if match.start() == 0 and i > 0:
                continue  # glued to the placeholder before it
            if match.end() == len(literal) and i < last:
                continue  # glued to the placeholder after it
            if len(match.group()) >= 4 and not match.group().isdigit():
                words.append(match.group())
    return words


def build_data(packages: dict[str, tuple[tuple[list[str], list[int]], dict]]) -> dict:
    """The data file's content: releases, modules, and templates grouped by anchor word."""
    all_entries = [e for _, entries in packages.values() for e in entries.values()]
    freq = _anchor_frequency(all_entries)
    modules: dict[str, int] = {}
    package_names = list(packages)
    by_anchor: dict[str, list] = {}
    dropped = 0
    for package_index, (_, entries) in enumerate(packages.values()):
        for entry in entries.values():
            words = anchor_words(entry.parts)
            if not words:
                dropped += 1
                continue
            anchor = min(words, key=lambda w: (freq[w], -len(w), w))
            # Newest place first; at most MAX_SITES, always with the oldest (the range starts there).
            ordered = sorted(entry.sites.items(), key=lambda s: (-max(s[1]), min(s[1]), s[0]))
            oldest = min(ordered, key=lambda s: (min(s[1]), s[0]))
            kept = (
                ordered[:MAX_SITES] if oldest in ordered[:MAX_SITES] else [*ordered[: MAX_SITES - 1], oldest]
            )
            sites = []
            for (module, function), indices in kept:
                module_index = modules.setdefault(module, len(modules))
                sites.append([module_index, function, min(indices), max(indices)])
            # Every mined release that holds it anywhere, as a bit mask (release index = bit).
            held = sum(1 << i for i in {i for indices in entry.sites.values() for i in indices})
            by_anchor.setdefault(anchor, []).append(
                [package_index, entry.kind, list(entry.parts), sites, held]
            )
    print(f"dropped {dropped} templates with no whole word", file=sys.stderr)
    return {
        "format": 2,
        "generated_by": "scripts/mine_messages.py (do not edit by hand)",
        "packages": [
            {"name": name, "releases": packages[name][0][0], "templates": packages[name][0][1]}
            for name in package_names
        ],
        "modules": list(modules),
        "anchors": dict(sorted(by_anchor.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vllm", nargs="*", default=list(VLLM_RELEASES), help="vLLM releases to read")
    parser.add_argument("--no-libraries", action="store_true", help="only vLLM")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument(
        "--cache", type=Path, help="keep each release's extracted messages here (re-runs skip the download)"
    )
    args = parser.parse_args(argv)
    packages: dict[str, tuple[tuple[list[str], list[int]], dict]] = {}
    print("vllm", file=sys.stderr)
    packages["vllm"] = mine_package("vllm", tuple(args.vllm), None, args.cache)
    if not args.no_libraries:
        for name, (releases, prefixes) in LIBRARIES.items():
            print(name, file=sys.stderr)
            packages[name] = mine_package(name, releases, prefixes, args.cache)
    write(build_data(packages), args.output)
    return 0


def write(data: dict, output: Path) -> None:
    """The data file, in the layout `core/mined.py` reads in place."""
    from vllm_log_lsp.core.mined import encode_index

    header = {key: data[key] for key in ("format", "generated_by", "packages")}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(encode_index(header, data["anchors"], data["modules"]))
    count = sum(len(v) for v in data["anchors"].values())
    print(f"{count} templates, {output.stat().st_size} bytes written to {output}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
