"""Python `LLM(...)`, `EngineArgs(...)` and `AsyncEngineArgs(...)` calls.

Located with `ast` (exact node ranges) in files that import vLLM; trailing commas and comments
between arguments are read with `tokenize`. Keyword arguments that come through `**mapping`
are read and edited in the mapping when it is a literal in the file (`python_kwargs`); a
keyword an opaque mapping might hold is never added (it would raise `TypeError`). Flags become keyword arguments (`--max-num-seqs`
→ `max_num_seqs=128`, a switch → `enforce_eager=True`, a JSON key → an entry of the
`compilation_config={...}` dict, or a keyword of `CompilationConfig(...)`).

Environment variables: `os.environ["NAME"] = "value"` is updated where it exists; otherwise it
is inserted just above the module-level statement that imports vLLM (or that contains the
call), with `import os` when needed. vLLM reads most variables when its modules load, and CUDA
ones at CUDA initialisation, so the assignment must run before the import; an explicit
assignment (not `setdefault`) is used so the fix holds even when the shell sets another value.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize
from dataclasses import dataclass

from ..core.model import FixOp
from ..core.values import json_value
from ..core.versions import Version
from .argv import get_path, same_value
from .python_kwargs import Mapping, unpacked
from .sites import OpPlan, Site
from .text import Edit, LineIndex

CALL_NAMES = ("LLM", "EngineArgs", "AsyncEngineArgs")


class Positions:
    """Converts ast (1-based line, UTF-8 byte column) to absolute code-point offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = LineIndex(text)

    def offset(self, lineno: int, col_bytes: int) -> int:
        start = self.lines.offset(lineno - 1)
        line = self.text[start : self.lines.line_end(start)]
        return start + len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="replace"))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


def python_problem(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"Python syntax error at line {exc.lineno}: {exc.msg}"
    return None


def python_sites(text: str) -> list[Site]:
    """Sites for the vLLM engine calls of a module that imports vLLM; raises SyntaxError."""
    tree = ast.parse(text)
    if not _imports_vllm(tree):
        return []
    pos = Positions(text)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _call_name(n) in CALL_NAMES]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return [PythonSite(text, tree, call, pos) for call in calls]


def _imports_vllm(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "vllm" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "vllm":
            return True
    return False


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _literal(node: ast.AST | None) -> tuple[bool, object]:
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _as_text(value: object) -> str:
    """A Python literal as flag text: True → `true`, a dict → JSON, 128 → `128`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def py_literal(value: object, quote: str = '"') -> str:
    """Python source for a JSON-like value, strings quoted with `quote`."""
    if isinstance(value, str):
        if quote == "'":
            body = json.dumps(value, ensure_ascii=False)[1:-1].replace('\\"', '"')
            return "'" + body.replace("'", "\\'") + "'"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, dict):
        items = ", ".join(f"{py_literal(k, quote)}: {py_literal(v, quote)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v, quote) for v in value) + "]"
    return repr(value)


def flag_literal(text: str) -> object:
    """A flag value as the Python value it stands for: `128` → 128, `true` → True."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return json_value(text)


@dataclass
class _Container:
    """The elements of a call's arguments or a dict display, for inserting one more."""

    open_at: int  # offset of the opening bracket
    close_at: int  # offset of the closing bracket
    elements: list[tuple[int, int]]  # (start, end) of each element, in order


class PythonSite(Site):
    """One engine call: its keyword arguments are the flags."""

    fmt = "python"

    def __init__(self, text: str, tree: ast.Module, call: ast.Call, pos: Positions) -> None:
        self.text, self.tree, self.call, self.pos = text, tree, call, pos
        self.entry = _call_name(call) or "LLM"
        self.start, self.end = pos.start(call), pos.end(call)
        self.label = f"{self.entry}(...) at line {call.lineno}"
        self.keywords = {k.arg: k for k in call.keywords if k.arg}
        self.unpacked = unpacked(tree, call, text)
        self.quote = self._quote_style()

    # -- reading ------------------------------------------------------------------------------

    def _quote_style(self) -> str:
        for node in ast.walk(self.call):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                first = self.text[self.pos.start(node)]
                if first in "'\"":
                    return first
        return '"'

    def _keyword_values(self) -> dict[str, ast.expr]:
        """Every keyword the call gets, from `**` literal mappings and its own arguments."""
        values: dict[str, ast.expr] = {}
        for mapping in self.unpacked.mappings:
            values.update({key: node for key in mapping.names() if (node := mapping.value(key)) is not None})
        values.update({name: keyword.value for name, keyword in self.keywords.items()})
        return values

    def extra_regions(self) -> list[tuple[int, int]]:
        return [(self.pos.start(m.node), self.pos.end(m.node)) for m in self.unpacked.mappings]

    def model(self) -> str | None:
        node = self._keyword_values().get("model")
        if node is None and self.call.args:
            node = self.call.args[0]
        ok, value = _literal(node)
        return value if ok and isinstance(value, str) else None

    def flags(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, node in self._keyword_values().items():
            ok, value = _literal(node)
            flag = "--" + name.replace("_", "-")
            out[flag] = _as_text(value) if ok else ast.get_source_segment(self.text, node) or ""
        return out

    def env(self) -> dict[str, str]:
        return {name: value for name, (_, value) in _environ_assignments(self.tree).items()}

    def current(self, op: FixOp) -> str | None:
        if op.op == "set_env":
            return self.env().get(op.name)
        node = self._keyword_values().get(op.kwarg or "")
        if node is None:
            return None
        ok, value = _literal(node)
        if op.op == "merge_json":
            if isinstance(value, dict):
                found = get_path(value, op.key or "")
                return None if found is None else _as_text(found)
            return self._config_call_value(node, op.key or "")
        return _as_text(value) if ok else None

    def _config_call_value(self, node: ast.AST, key: str) -> str | None:
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == key:
                    ok, value = _literal(keyword.value)
                    return _as_text(value) if ok else None
        return None

    # -- planning -----------------------------------------------------------------------------

    def plan(
        self, op: FixOp, value: str | None, version: Version | None, logged: bool | None = None
    ) -> OpPlan | str:
        if op.op == "set_env":
            return self._plan_env(op.name, value or "")
        kwarg = op.kwarg or ""
        if op.op == "merge_json":
            return self._plan_merge(kwarg, op.key or "", flag_literal(value or ""))
        wanted = True if op.op == "add_flag" else flag_literal(value or "")
        if kwarg in self.keywords or not (self.unpacked.mappings or self.unpacked.opaque):
            return self._plan_keyword(self.call, kwarg, wanted)
        mapping = self._mapping_with(kwarg)
        if mapping is None and self.unpacked.opaque:
            return self._opaque(kwarg)
        return self._plan_in_mapping(mapping or self.unpacked.mappings[-1], kwarg, wanted)

    def _mapping_with(self, key: str) -> Mapping | None:
        """The last literal `**` mapping that has `key` (the one Python would complain about)."""
        return next((m for m in reversed(self.unpacked.mappings) if m.value(key) is not None), None)

    def _opaque(self, kwarg: str) -> str:
        sources = ", ".join(self.unpacked.opaque)
        return (
            f"{self.label} also gets keyword arguments from {sources}; adding {kwarg}= could "
            f"repeat one of them (TypeError: multiple values); set {kwarg} there by hand"
        )

    def _plan_in_mapping(self, mapping: Mapping, key: str, wanted: object) -> OpPlan | str:
        """Set `key` (dotted: nested) in a literal mapping, adding it when it is missing."""
        if isinstance(mapping.node, ast.Dict):
            return self._plan_dict_key(mapping.node, key, wanted, mapping.name)
        head, _, rest = key.partition(".")
        return self._plan_keyword(mapping.node, head, _nest(rest, wanted))

    def _plan_keyword(self, call: ast.Call, name: str, wanted: object) -> OpPlan | str:
        keyword = next((k for k in call.keywords if k.arg == name), None)
        new = py_literal(wanted, self.quote)
        if keyword is None:
            edit = self._insert(self._call_container(call), f"{name}={new}")
            return OpPlan((edit,), f"added {name}={new}")
        ok, old = _literal(keyword.value)
        if not ok:
            segment = ast.get_source_segment(self.text, keyword.value)
            return f"{name} is computed ({segment}); change it by hand"
        if old == wanted or same_value(_as_text(old), _as_text(wanted)):
            return OpPlan((), f"{name} already {new}")
        old_text = self.text[self.pos.start(keyword.value) : self.pos.end(keyword.value)]
        edit = Edit(self.pos.start(keyword.value), self.pos.end(keyword.value), new)
        return OpPlan((edit,), f"{name}={old_text} → {new}")

    def _plan_merge(self, kwarg: str, key: str, wanted: object) -> OpPlan | str:
        keyword = self.keywords.get(kwarg)
        where = kwarg
        if keyword is not None:
            node = keyword.value
        elif (mapping := self._mapping_with(kwarg)) is not None:
            node, where = mapping.value(kwarg), f"{mapping.name}[{kwarg!r}]"  # type: ignore[assignment]
        elif self.unpacked.opaque:
            return self._opaque(kwarg)
        elif self.unpacked.mappings:
            return self._plan_in_mapping(self.unpacked.mappings[-1], f"{kwarg}.{key}", wanted)
        else:
            return self._plan_keyword(self.call, kwarg, _nest(key, wanted))
        if isinstance(node, ast.Dict):
            return self._plan_dict_key(node, key, wanted, where)
        if isinstance(node, ast.Call) and "." not in key:
            return self._plan_keyword(node, key, wanted)
        segment = ast.get_source_segment(self.text, node)
        return f"{kwarg}={segment} is not a dict literal; cannot merge {key!r} into it"

    def _plan_dict_key(self, node: ast.Dict, key: str, wanted: object, where: str) -> OpPlan | str:
        head, _, rest = key.partition(".")
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            ok, name = _literal(key_node)
            if not ok or name != head:
                continue
            if rest:
                if not isinstance(value_node, ast.Dict):
                    return f"{where}[{head!r}] is not a dict literal"
                return self._plan_dict_key(value_node, rest, wanted, f"{where}[{head!r}]")
            ok, old = _literal(value_node)
            new = py_literal(wanted, self.quote)
            if ok and old == wanted:
                return OpPlan((), f"{where} {head} already {new}")
            start, end = self.pos.start(value_node), self.pos.end(value_node)
            old_text = self.text[start:end]
            return OpPlan((Edit(start, end, new),), f"{where}[{head!r}] {old_text} → {new}")
        entry = f"{py_literal(head, self.quote)}: {py_literal(_nest(rest, wanted), self.quote)}"
        return OpPlan((self._insert(self._dict_container(node), entry),), f"{where}: added {entry}")

    # -- inserting an element, keeping the call's layout ---------------------------------------

    def _call_container(self, call: ast.Call) -> _Container:
        elements = [*call.args, *call.keywords]
        spans = sorted((self.pos.start(e), self.pos.end(e)) for e in elements)
        close_at = self.pos.end(call) - 1
        open_at = self._find_open(self.pos.end(call.func), "(")
        return _Container(open_at, close_at, spans)

    def _dict_container(self, node: ast.Dict) -> _Container:
        spans = []
        for key, value in zip(node.keys, node.values, strict=True):
            start = self.pos.start(key) if key is not None else self.pos.start(value) - 2
            spans.append((start, self.pos.end(value)))
        return _Container(self.pos.start(node), self.pos.end(node) - 1, spans)

    def _find_open(self, after: int, bracket: str) -> int:
        return self.text.index(bracket, after)

    def _insert(self, box: _Container, element: str) -> Edit:
        lines = self.pos.lines
        if not box.elements:
            return Edit(box.close_at, box.close_at, element)
        last_start, last_end = box.elements[-1]
        comma = _trailing_comma(self.text, last_end, box.close_at)
        multiline = lines.position(box.open_at)[0] != lines.position(box.close_at)[0]
        if not multiline:
            return Edit(last_end, last_end, f", {element}")
        line_start = lines.line_start(last_start)
        before = self.text[line_start:last_start]
        indent = before if not before.strip() else " " * (last_start - line_start)
        if comma is None:
            return Edit(last_end, last_end, f",\n{indent}{element}")
        if lines.position(comma)[0] == lines.position(box.close_at)[0]:
            return Edit(comma + 1, comma + 1, f" {element},")
        at = lines.line_end(comma)
        return Edit(at, at, f"\n{indent}{element},")

    # -- environment ---------------------------------------------------------------------------

    def _plan_env(self, name: str, value: str) -> OpPlan | str:
        found = _environ_assignments(self.tree).get(name)
        if found is not None:
            node, old = found
            if old == value:
                return OpPlan((), f"os.environ[{name!r}] already {value!r}")
            quote = self.text[self.pos.start(node)]
            new = py_literal(value, quote if quote in "'\"" else self.quote)
            edit = Edit(self.pos.start(node), self.pos.end(node), new)
            return OpPlan((edit,), f"os.environ[{name!r}] {old!r} → {value!r}")
        anchor = self._env_anchor()
        line_start = self.pos.lines.line_start(self.pos.start(anchor))
        setting = f"os.environ[{py_literal(name, self.quote)}] = {py_literal(value, self.quote)}\n"
        if not _imports_os_before(self.tree, anchor):
            setting = "import os\n" + setting
        return OpPlan((Edit(line_start, line_start, setting),), f"added os.environ[{name!r}] = {value!r}")

    def _env_anchor(self) -> ast.stmt:
        """The first module-level statement that imports vLLM or holds the call."""
        for stmt in self.tree.body:
            if _imports_vllm(ast.Module(body=[stmt], type_ignores=[])):
                return _with_decorators(stmt)
            if any(node is self.call for node in ast.walk(stmt)):
                return _with_decorators(stmt)
        return self.tree.body[0]


def _with_decorators(stmt: ast.stmt) -> ast.stmt:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0] if decorators else stmt


def _imports_os_before(tree: ast.Module, anchor: ast.AST) -> bool:
    for stmt in tree.body:
        if stmt.lineno >= anchor.lineno:  # type: ignore[attr-defined]
            return False
        if isinstance(stmt, ast.Import) and any(a.name == "os" and not a.asname for a in stmt.names):
            return True
    return False


def _environ_assignments(tree: ast.Module) -> dict[str, tuple[ast.expr, str]]:
    """`os.environ["X"] = "v"` and `os.environ.setdefault("X", "v")`: X → (value node, v)."""
    found: dict[str, tuple[ast.expr, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Subscript) and _is_environ(target.value):
                ok_key, key = _literal(target.slice)
                ok_value, value = _literal(node.value)
                if ok_key and ok_value and isinstance(key, str) and isinstance(value, str):
                    found[key] = (node.value, value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "setdefault"
            and _is_environ(node.func.value)
            and len(node.args) == 2
        ):
            ok_key, key = _literal(node.args[0])
            ok_value, value = _literal(node.args[1])
            if ok_key and ok_value and isinstance(key, str) and isinstance(value, str):
                found[key] = (node.args[1], value)
    return found


def _is_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _trailing_comma(text: str, after: int, close_at: int) -> int | None:
    """Offset of a comma between the last element and the closing bracket, if any."""
    between = text[after:close_at]
    try:
        for token in tokenize.generate_tokens(io.StringIO(between).readline):
            if token.type == tokenize.OP and token.string == ",":
                line_offsets = LineIndex(between)
                return after + line_offsets.offset(token.start[0] - 1, token.start[1])
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT):
                break
    except (tokenize.TokenError, IndentationError):
        pass
    return None


def _nest(key: str, value: object) -> object:
    """`a.b`, 1 → {"a": {"b": 1}}; an empty key returns the value itself."""
    if not key:
        return value
    result: object = value
    for part in reversed(key.split(".")):
        result = {part: result}
    return result
