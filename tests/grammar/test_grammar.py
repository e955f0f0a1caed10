"""Tests for the vLLM log TextMate grammars (grammars/*.tmLanguage.json).

* pure Python: valid JSON, generated files up to date, every regex compiles (Python `regex` as an
  approximation of Oniguruma), every scope name pairs a generic theme scope with a `.vllm` one;
* node (vscode-tmgrammar-test 0.1.3, `bash scripts/install/30-grammar.sh`): the assertion files
  tests/grammar/**/*.test.log, the snapshots tests/grammar/snap/*.log.snap, and a time bound on
  100k-character lines. Without the node tool these skip, or fail when $CI is set.

Regenerate snapshots after an intended grammar change:
    grammars/node_modules/.bin/vscode-tmgrammar-snap --config grammars/test-support/contributes.json \
        -s text.log.vllm -u 'tests/grammar/snap/*.log'
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import regex

from support import unavailable

ROOT = Path(__file__).resolve().parents[2]
GRAMMARS = ROOT / "grammars"
HERE = Path(__file__).resolve().parent
MAIN = GRAMMARS / "vllm-log.tmLanguage.json"
INJECTION = GRAMMARS / "vllm-log-injection.tmLanguage.json"
CONFIG = GRAMMARS / "test-support" / "contributes.json"
BASE_LOG = GRAMMARS / "test-support" / "log.tmLanguage.json"
BIN = GRAMMARS / "node_modules" / ".bin"
TOOL_TIMEOUT_S = 120

# First segment of a TextMate scope that themes know how to colour.
THEME_ROOTS = {
    "comment",
    "constant",
    "entity",
    "invalid",
    "keyword",
    "markup",
    "meta",
    "punctuation",
    "storage",
    "string",
    "support",
    "variable",
}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def build_module():
    """grammars/build_grammars.py, imported."""
    spec = importlib.util.spec_from_file_location("build_grammars", GRAMMARS / "build_grammars.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def walk(node: object) -> Iterator[tuple[str, object]]:
    """Every (key, value) pair anywhere in a grammar."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


# ----------------------------------------------------------------------------------------------
# Pure Python
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [MAIN, INJECTION, BASE_LOG, CONFIG], ids=lambda p: p.name)
def test_grammar_file_is_valid_json(path: Path) -> None:
    data = load(path)
    assert isinstance(data, dict)


def test_grammar_identity() -> None:
    main, injection = load(MAIN), load(INJECTION)
    assert main["scopeName"] == "text.log.vllm"
    assert injection["scopeName"] == "vllm-log.injection"
    # injected into the log language, but never into our own text.log.vllm (which has all of it)
    assert injection["injectionSelector"] == "L:text.log -text.log.vllm"


def test_generated_grammars_are_up_to_date() -> None:
    module = build_module()
    for path, text in module.outputs().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run python3 grammars/build_grammars.py"
        )


def test_includes_resolve() -> None:
    for path in (MAIN, INJECTION):
        grammar = load(path)
        repo = grammar.get("repository", {})
        for key, value in walk(grammar):
            if key == "include" and value.startswith("#"):
                assert value[1:] in repo, f"{path.name}: unresolved include {value}"


def to_python_regex(pattern: str) -> str | None:
    """Translate the few Oniguruma-only spellings; None when a construct has no equivalent."""
    if "\\h" in pattern or "\\H" in pattern or "(?~" in pattern:  # Oniguruma hex class, absent op
        return None
    return pattern


@pytest.mark.parametrize("path", [MAIN, INJECTION, BASE_LOG], ids=lambda p: p.name)
def test_every_regex_compiles(path: Path) -> None:
    checked, errors = 0, []
    for key, value in walk(load(path)):
        if key not in {"match", "begin", "end", "while"} or not isinstance(value, str):
            continue
        pattern = to_python_regex(value)
        if pattern is None:
            continue
        try:
            regex.compile(pattern)
        except regex.error as exc:
            errors.append(f"{value!r}: {exc}")
        checked += 1
    assert checked > 10 or path == BASE_LOG
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("path", [MAIN, INJECTION], ids=lambda p: p.name)
def test_scope_names_pair_generic_and_specific(path: Path) -> None:
    names = [
        value for key, value in walk(load(path)) if key in {"name", "contentName"} and isinstance(value, str)
    ]
    names = [n for n in names if n != load(path).get("name")]  # the grammar's display name
    assert len(names) > 30
    bad = []
    for name in set(names):
        parts = name.split()
        ok = (
            len(parts) >= 2
            and all(p.endswith(".vllm") for p in parts)
            and parts[0].split(".")[0] in THEME_ROOTS
            and parts[-1].endswith(".log.vllm")
        )
        if not ok:
            bad.append(name)
    assert not bad, f"scope names without a generic part and a specific .log.vllm part: {bad}"


def grammar_scopes() -> dict[str, str]:
    """build_grammars.S: role -> scope pair."""
    return build_module().S


# What a reader's eye should find first: quiet framing, levels by severity, the failure loud.
QUIET_ROLES = {"DEBUG", "INFO", "timestamp", "blob", "quote", "ray-dedup", "caret", "elided"} | {
    role
    for role in grammar_scopes()
    if role.startswith(("source-", "runtime-", "process-")) or role in ("rank", "tag")
}
LOUD_ROLES = {"ERROR", "CRITICAL", "fatal", "error-code", "http-server-error", "stat-value-high"}


@pytest.mark.parametrize("role", sorted(QUIET_ROLES))
def test_prefixes_timestamps_sources_and_quiet_levels_are_comment_like(role: str) -> None:
    assert grammar_scopes()[role].startswith("comment."), grammar_scopes()[role]


def test_only_failures_are_loud() -> None:
    scopes = grammar_scopes()
    loud = {role for role, scope in scopes.items() if scope.startswith("invalid.")}
    assert loud == LOUD_ROLES
    # CRITICAL is louder still: bold in every theme that has markup.bold.
    assert " markup.bold." in scopes["CRITICAL"]


def test_warnings_are_medium_and_tracebacks_distinct() -> None:
    scopes = grammar_scopes()
    assert scopes["WARNING"].startswith("markup.changed.") and scopes["warning-category"].startswith(
        "markup.changed."
    )
    assert scopes["traceback-header"].startswith("markup.heading.")
    assert scopes["exception-type"].startswith("entity.name.type.")
    assert scopes["exception-message"].startswith("markup.bold.")
    # A frame's path is neither a string nor an error colour (in the light theme both are red).
    assert scopes["frame-path"].startswith("variable.")
    # A symptom says the engine died; the root cause (the diagnostic) must outshine it.
    assert not scopes["symptom"].startswith("invalid.")


# ----------------------------------------------------------------------------------------------
# Node: vscode-tmgrammar-test / vscode-tmgrammar-snap
# ----------------------------------------------------------------------------------------------
def node_tool(name: str) -> Path:
    tool = BIN / name
    if tool.exists() and shutil.which("node"):
        return tool
    unavailable(f"{tool} or node not found", "bash scripts/install/30-grammar.sh")


def run_tool(args: list[str], timeout: float = TOOL_TIMEOUT_S) -> tuple[str, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    elapsed = time.monotonic() - start
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"{Path(args[0]).name} exited {proc.returncode}:\n{output}", pytrace=False)
    return output, elapsed


def test_assertion_files() -> None:
    tool = node_tool("vscode-tmgrammar-test")
    cases = sorted(HERE.glob("*.test.log")) + sorted(HERE.glob("injection/*.test.log"))
    assert len(cases) >= 6
    # --config registers all three grammars the way the extension contributes them, so the
    # text.log.vllm cases also prove that the injection does not leak into our own language.
    output, _ = run_tool([tool, "--compact", "--config", CONFIG, *cases])
    assert output.count("run successfuly") == len(cases), output


def test_snapshots() -> None:
    tool = node_tool("vscode-tmgrammar-snap")
    logs = sorted((HERE / "snap").glob("*.log"))
    assert len(logs) >= 6
    for log in logs:
        assert log.with_name(log.name + ".snap").exists(), f"missing snapshot for {log.name}"
    run_tool([tool, "--config", CONFIG, "--scope", "text.log.vllm", *logs])


def stress_lines(n: int = 100_000) -> list[str]:
    """Lines that would blow up a grammar with backtracking or unbounded nesting."""
    return [
        "(EngineCore_DP0 pid=1) ERROR 01-31 14:21:03 [core.py:946] " + "^" * n,
        "ERROR 01-31 14:21:03 [core.py:946]     " + "~" * n + "^",
        "INFO 01-31 14:21:03 [core.py:946] " + "it's a 'x " * (n // 10),
        "INFO 01-31 14:21:03 [core.py:946] " + 'File "abc ' * (n // 10),
        "INFO 01-31 14:21:03 [core.py:946] " + '"abc ' * (n // 6),
        "(a pid=1) " * (n // 10),
        "x  | " * (n // 5),
        "> " * (n // 2),
        "INFO 01-31 14:21:03 [core.py:946] Dumping scheduler output: "
        + "{'req_id': 'abc', 'tokens': [1, 2, 3], 'x': 0.5e-3}, " * (n // 50),
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  10%|█  | 7/67 [00:00<00:05]\r" * (n // 90),
        "ValueError" + "a" * n,
        "Error." * (n // 6) + ": x",
        "(" + "a " * (n // 2),
        "INFO 01-31 14:21:03 [" + "a/" * (n // 2) + "x.py:1] ok",
        "http://" + "a" * n,
        "1.2" * (n // 3),
        "\x1b[1;36m" * (n // 7),
        "2026-08-31T17:43:36.650052872Z " + "stderr F " * (n // 9),
        "word " * (n // 5) + "initialization failed",
        " " * n + "x",
    ]


@pytest.mark.parametrize("scope", ["text.log.vllm", "vllm-log.injection"])
def test_long_lines_stay_cheap(tmp_path: Path, scope: str) -> None:
    """20 lines of about 100k characters, each built to trip backtracking or deep nesting."""
    node_tool("vscode-tmgrammar-test")  # skip/fail like the others when node is absent
    log = tmp_path / "stress.log"
    log.write_text("\n".join(stress_lines()) + "\n", encoding="utf-8")
    args = ["node", HERE / "tokenize_timing.js"]
    if scope == "text.log.vllm":
        args += ["text.log.vllm", log, CONFIG]
    else:
        # The injection alone, into an empty text.log: the stand-in base grammar (like VS Code's
        # own log grammar, whose dotted-word pattern it mirrors) is itself quadratic on "1.21.2...".
        empty = tmp_path / "empty-log.tmLanguage.json"
        empty.write_text(json.dumps({"scopeName": "text.log", "patterns": []}), encoding="utf-8")
        config = tmp_path / "contributes.json"
        grammars = [
            {"scopeName": "text.log", "path": str(empty)},
            {"scopeName": scope, "path": str(INJECTION), "injectTo": ["text.log"]},
        ]
        config.write_text(json.dumps({"contributes": {"grammars": grammars}}), encoding="utf-8")
        args += ["text.log", log, config]
    output, elapsed = run_tool(args)
    per_line = json.loads(output)["ms"]
    slowest = max(per_line)
    # About 0.1-0.4 s a line on a 2-core machine; a backtracking or nesting blow-up takes minutes.
    assert slowest < 5000, f"{scope}: slowest 100k-character line took {slowest:.0f} ms: {per_line}"
    assert elapsed < TOOL_TIMEOUT_S
