"""Where the `**mapping` keyword arguments of an engine call come from.

`LLM(model=m, **ENGINE_KWARGS)`: a keyword added to the call while the mapping may hold the
same key raises `TypeError: got multiple values for keyword argument` at run time. A mapping
that is a literal in the file — a `{…}` display or `dict(…)`, given inline or bound once to a
name in the call's scope and never mutated — can be read and edited where it is written;
anything else (`**vars(args)`, a parameter, a dict built or updated elsewhere) is opaque, and
a keyword it might hold is not added.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

#: dict methods that change a dict in place.
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass
class Mapping:
    """A literal mapping unpacked into the call: a `{…}` display or a `dict(…)` call."""

    node: ast.Dict | ast.Call
    name: str  # how the summary names it: `ENGINE_KWARGS`, or `{…}` for an inline display

    def value(self, key: str) -> ast.expr | None:
        """The value node of `key` (None when the mapping does not have it)."""
        if isinstance(self.node, ast.Dict):
            for key_node, value in zip(self.node.keys, self.node.values, strict=True):
                if isinstance(key_node, ast.Constant) and key_node.value == key:
                    return value
            return None
        return next((k.value for k in self.node.keywords if k.arg == key), None)

    def names(self) -> list[str]:
        """The keys the mapping gives, in order."""
        if isinstance(self.node, ast.Dict):
            return [
                k.value for k in self.node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
        return [k.arg for k in self.node.keywords if k.arg]


@dataclass
class Unpacked:
    """The `**` arguments of one call: the literal ones, and why the others cannot be read."""

    mappings: list[Mapping]
    opaque: list[str]  # one reason per mapping that cannot be read


def unpacked(tree: ast.Module, call: ast.Call, text: str) -> Unpacked:
    """Resolve each `**expr` of `call` to a literal mapping in the file, where it is one."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found = Unpacked([], [])
    for keyword in call.keywords:
        if keyword.arg is not None:
            continue
        segment = ast.get_source_segment(text, keyword.value) or "…"
        resolved = _resolve(tree, parents, call, keyword.value)
        if isinstance(resolved, str):
            found.opaque.append(f"**{segment} ({resolved})")
        else:
            found.mappings.append(
                Mapping(resolved, segment if isinstance(keyword.value, ast.Name) else "{…}")
            )
    return found


def _resolve(
    tree: ast.Module, parents: dict[ast.AST, ast.AST], call: ast.Call, node: ast.expr
) -> ast.Dict | ast.Call | str:
    """The literal mapping `node` stands for, or why it is not one."""
    if _is_literal_mapping(node):
        return node  # type: ignore[return-value]
    if not isinstance(node, ast.Name):
        return "computed at run time"
    scope = _scope_of(call, parents)
    while True:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node.id in _params(
            scope
        ):
            return f"a parameter of {getattr(scope, 'name', 'a lambda')}(): it comes from the callers"
        bindings = _bindings(scope, node.id)
        if bindings or isinstance(scope, ast.Module):
            break
        scope = _scope_of(scope, parents)
    if len(bindings) != 1:
        return "not assigned once in this file" if bindings else "not assigned in this file"
    (binding,) = bindings
    value = getattr(binding, "value", None)
    if (
        not isinstance(binding, (ast.Assign, ast.AnnAssign))
        or value is None
        or not _is_literal_mapping(value)
    ):
        return "not a dict literal"
    if isinstance(binding, ast.Assign) and not (
        len(binding.targets) == 1 and isinstance(binding.targets[0], ast.Name)
    ):
        return "assigned together with other names"
    if _mutated(scope if not isinstance(scope, ast.Module) else tree, node.id):
        return "changed after it is written"
    return value


def _is_literal_mapping(node: ast.AST) -> bool:
    """A `{…}` display with constant keys, or `dict(k=v, …)`; no `**` inside either."""
    if isinstance(node, ast.Dict):
        return all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
        and all(k.arg is not None for k in node.keywords)
    )


def _scope_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The function, lambda or class around `node`, else the module."""
    parent = parents.get(node)
    while parent is not None and not isinstance(parent, (*_SCOPES, ast.Module)):
        parent = parents.get(parent)
    assert parent is not None
    return parent


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return set(names)


def _in_scope(scope: ast.AST) -> list[ast.AST]:
    """The nodes of `scope` itself, not of the functions or classes nested in it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (*_SCOPES, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _bindings(scope: ast.AST, name: str) -> list[ast.AST]:
    """Statements of `scope` that (re)bind `name`."""
    found: list[ast.AST] = []
    for node in _in_scope(scope):
        if _binds(node, name):
            found.append(node)
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.append(_statement_of(node, scope))
    return list(dict.fromkeys(found))


def _binds(node: ast.AST, name: str) -> bool:
    """A declaration, definition, import or `except … as` that binds `name`."""
    if isinstance(node, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom)):
        names = getattr(node, "names", [])
        return any((n if isinstance(n, str) else n.asname or n.name.split(".")[0]) == name for n in names)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
        return node.name == name
    return False


def _statement_of(name: ast.Name, scope: ast.AST) -> ast.AST:
    """The assignment whose whole target is `name`, else the name itself (another binding)."""
    for node in _in_scope(scope):
        if isinstance(node, ast.Assign) and any(t is name for t in node.targets):
            return node
        if isinstance(node, ast.AnnAssign) and node.target is name:
            return node
    return name


def _mutated(scope: ast.AST, name: str) -> bool:
    """Whether `name[...] = …`, `del name[...]`, `name |= …` or `name.update(…)` appears."""
    for node in ast.walk(scope):
        stored = isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del))
        if stored and isinstance(node.value, ast.Name) and node.value.id == name:  # type: ignore[attr-defined]
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
        ):
            return True
    return False
