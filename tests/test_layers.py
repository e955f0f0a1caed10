"""The layering docs/architecture.md describes, checked on the source: imports only go down
(core ← launch, report ← lsp ← the command line) and no module imports another package's private
names (what a layer offers is public)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "vllm_log_lsp"
#: What each package may import from the project (the top-level modules are the command line).
ALLOWED = {
    "core": {"core"},
    "launch": {"core", "launch"},
    "report": {"core", "report"},
    "lsp": {"core", "launch", "report", "lsp"},
}
MODULES = sorted(PACKAGE.rglob("*.py"))


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) of each project import in `path`."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = parts[:-1]  # the package a relative import starts from (also for __init__.py)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
    return [(m, names) for m, names in found if m == "vllm_log_lsp" or m.startswith("vllm_log_lsp.")]


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else "(top)"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_and_use_public_names(path: Path) -> None:
    own = package_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    for module, names in imports(path):
        target = package_of(module)
        if own in ALLOWED:
            assert target in ALLOWED[own] or module == "vllm_log_lsp", f"{own} imports {module}"
        if target != own:
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{module}: {private}"


def test_the_check_sees_the_imports() -> None:
    """The scan resolves relative imports (a check that found nothing would pass vacuously)."""
    hover = imports(PACKAGE / "lsp" / "hover.py")
    assert ("vllm_log_lsp.core.health", ["health_catalog"]) in hover
    assert package_of("vllm_log_lsp.launch.plan") == "launch" and package_of("vllm_log_lsp.cli") == "(top)"
