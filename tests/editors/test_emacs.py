"""Emacs + eglot end-to-end: the documented set-up (`editors/emacs/vllm-log.el`) in a real Emacs, batch mode.

`emacs --batch -q -l editors/emacs/vllm-log.el -l tests/editors/emacs/e2e.el` runs in a copy of
`tests/editors/fixtures/editor-workspace` (plus an empty `.git/`, the project root) with HOME in a temporary
directory and the virtual environment's `bin/` first on PATH, so eglot starts the real `vllm-log-lsp serve`
over stdio. e2e.el opens `crash.log` with `find-file` (the mode comes from content sniffing, eglot from the
mode hook), reads flymake's diagnostics, hovers, jumps to the definition with xref, applies the quick fix
with `eglot-code-actions`, and writes what it saw as JSON; the assertions are here.

eglot 1.9 (Emacs 28) negotiates no position encoding, so the server talks UTF-16 to it: `crash.log` carries
non-ASCII text before the exception on the root-cause line, so a wrong encoding shows as a wrong column.

`scripts/install/20-editors.sh` installs Emacs and eglot (Debian `emacs-nox elpa-eglot`). Without them the
tests skip, or fail when CI is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support import (
    EDITOR_CORPUS_FILE,
    EDITOR_FIX_FLAG,
    EDITOR_FIX_VALUE,
    EDITOR_LOG,
    EDITOR_RULE,
    EDITOR_SCRIPT,
    EDITOR_TIMEOUT_S,
    EDITOR_WORKSPACE,
    MAX_QUICK_FIXES,
    crash_label,
    editor_bin_dirs,
    editor_finding_title,
    hover_first_screen_problems,
    serve_another_model,
    unavailable,
)

pytestmark = pytest.mark.editor
INSTALLER = "scripts/install/20-editors.sh"

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "editors" / "emacs" / "vllm-log.el"
E2E = ROOT / "tests" / "editors" / "emacs" / "e2e.el"
WORKSPACE = EDITOR_WORKSPACE
CORPUS_FILE, LOG, SCRIPT = EDITOR_CORPUS_FILE, EDITOR_LOG, EDITOR_SCRIPT
RULE, FIX_FLAG, FIX_VALUE, TIMEOUT_S = EDITOR_RULE, EDITOR_FIX_FLAG, EDITOR_FIX_VALUE, EDITOR_TIMEOUT_S
_bin_dirs = editor_bin_dirs


def _find_emacs() -> str:
    emacs = shutil.which("emacs")
    if emacs is None:
        unavailable("emacs not found", INSTALLER)
    probe = subprocess.run(
        [emacs, "--batch", "-q", "--eval", '(progn (package-initialize) (princ (locate-library "eglot")))'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0 or "eglot" not in probe.stdout:
        unavailable(
            f"eglot not found by {emacs} ({probe.stdout.strip()} {probe.stderr.strip()[-200:]})", INSTALLER
        )
    return emacs


@pytest.fixture(scope="module")
def emacs_run(tmp_path_factory):
    return run_emacs(tmp_path_factory.mktemp("emacs"))


def run_emacs(
    tmp: Path, *, code_actions: str = "require", prepare: Callable[[Path], None] | None = None
) -> tuple[dict, Path, float]:
    """Run e2e.el against a fresh copy of the workspace (changed by `prepare`, if given);
    returns (its JSON, workspace, seconds)."""
    emacs = _find_emacs()
    if shutil.which("vllm-log-lsp", path=os.pathsep.join(_bin_dirs())) is None:
        unavailable("vllm-log-lsp not installed in .venv (run scripts/install/10-python.sh)", INSTALLER)
    workspace = tmp / "workspace"
    shutil.copytree(WORKSPACE, workspace)
    (workspace / ".git").mkdir()
    if prepare is not None:
        prepare(workspace)
    (tmp / "home").mkdir()
    labels = crash_label(CORPUS_FILE)
    out = tmp / "e2e.json"
    env = {
        **os.environ,
        "PATH": os.pathsep.join([*_bin_dirs(), os.environ.get("PATH", "")]),
        "HOME": str(tmp / "home"),
        "LANG": "C.UTF-8",
        "E2E_OUT": str(out),
        "E2E_LOG": LOG,
        "E2E_ROOT_LINE": str(labels["root_cause_line"] - 1),
        "E2E_SYMPTOM_LINE": str(labels["symptom_lines"][-1] - 1),
        "E2E_SCRIPT": str(workspace / SCRIPT),
        "E2E_FIX_TITLE": FIX_FLAG,
        "E2E_CODE_ACTIONS": code_actions,
    }
    cmd = [emacs, "--batch", "-q", "-l", str(SETUP), "-l", str(E2E)]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd,
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"emacs did not finish in {TIMEOUT_S} s: {exc.stdout!r} {exc.stderr!r}")
    seconds = time.monotonic() - start
    if not out.exists():
        pytest.fail(f"emacs wrote no result (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    result = json.loads(out.read_text(encoding="utf-8"))
    assert not result.get("error"), f"{json.dumps(result, indent=1)}\n{proc.stderr}"
    assert proc.returncode == 0, proc.stderr
    return result, workspace, seconds


@pytest.fixture(scope="module")
def expected():
    labels = crash_label(CORPUS_FILE)
    from vllm_log_lsp.core.catalog import builtin_catalog

    rule = builtin_catalog().rule(RULE)
    assert rule is not None, RULE
    root = labels["root_cause_line"] - 1
    root_text = (WORKSPACE / LOG).read_bytes().split(b"\n")[root].decode("utf-8")
    return {
        "root": root,
        "symptoms": [n - 1 for n in labels["symptom_lines"]],
        "title": editor_finding_title(),
        # Emacs columns count characters (the fixture's non-ASCII prefix is in the BMP: = UTF-16 units).
        "exception_col": root_text.index("torch.OutOfMemoryError"),
        "line_chars": len(root_text.rstrip("\r")),
    }


def test_emacs_mode_by_content_and_eglot_connects(emacs_run):
    result, workspace, seconds = emacs_run
    assert "vllm" not in LOG  # not the auto-mode-alist pattern: magic-mode-alist sniffs the content
    assert result["major_mode"] == "vllm-log-mode"
    assert result["language_id"] == "vllm-log"
    assert Path(result["project_root"]).resolve() == workspace.resolve()
    assert seconds < 30, f"the Emacs run took {seconds:.1f} s"


def test_emacs_flymake_error_on_root_cause_line(emacs_run, expected):
    result, _, _ = emacs_run
    errors = [d for d in result["diagnostics"] if d["type"] == "eglot-error"]
    assert [d["line"] for d in errors] == [expected["root"]], result["diagnostics"]
    error = errors[0]
    assert f"[{RULE}]" in error["text"] and error["text"].startswith("vllm-log")  # eglot: "source [code]: …"
    assert error["col"] == expected["exception_col"], (error, expected)
    assert error["end_line"] == expected["root"]
    assert expected["exception_col"] < error["end_col"] <= expected["line_chars"]
    warned = {d["line"] for d in result["diagnostics"] if d["type"] == "eglot-warning"}
    assert set(expected["symptoms"]) <= warned, result["diagnostics"]


def test_emacs_hover_shows_the_cause(emacs_run, expected):
    result, _, _ = emacs_run
    assert result["hover_kind"] == "markdown"
    assert expected["title"] in result["hover"], result["hover"]
    assert hover_first_screen_problems(result["hover"]) == [], result["hover"]


def test_emacs_definition_from_symptom(emacs_run, expected):
    result, workspace, _ = emacs_run
    (definition,) = result["definitions"]
    assert Path(definition["file"]).resolve() == (workspace / LOG).resolve()
    assert (definition["line"], definition["col"]) == (expected["root"], expected["exception_col"])


def test_emacs_quick_fix_edits_launch_script(emacs_run):
    """`M-x eglot-code-actions` then RET: eglot's default is the one preferred action, and it edits
    the script that is the logged run (never `embed.sh`, another model's service)."""
    result, workspace, _ = emacs_run
    assert result["code_action_capable"] is True, "the server does not advertise codeActionProvider"
    actions = result["code_actions"]
    assert 1 <= len(actions) <= MAX_QUICK_FIXES, actions
    preferred = [a for a in actions if a["preferred"] is True]
    assert len(preferred) == 1 and FIX_FLAG in preferred[0]["title"], actions
    assert {Path(f).name for a in actions for f in a["files"]} == {SCRIPT}, actions
    assert result["code_action_default"] == preferred[0]["title"]
    assert result["script_modified"] is True
    before = (WORKSPACE / SCRIPT).read_text(encoding="utf-8")
    after = (workspace / SCRIPT).read_text(encoding="utf-8")
    assert re.findall(rf"{FIX_FLAG}[ =](\S+)", after) == [FIX_VALUE], after
    assert after == before.replace(f"{FIX_FLAG} 1024", f"{FIX_FLAG} {FIX_VALUE}"), after


def test_emacs_without_a_matching_script_offers_the_fixed_command_first(tmp_path):
    result, _, _ = run_emacs(tmp_path, code_actions="list", prepare=serve_another_model)
    actions = result["code_actions"]
    assert 1 <= len(actions) <= MAX_QUICK_FIXES, actions
    assert actions[0]["title"].startswith("Copy the fixed launch command"), actions
    assert actions[0]["command"] == "vllmLog.copyFixedCommand" and not actions[0]["files"]
    assert not any(a["preferred"] is True for a in actions), actions
    for action in actions[1:]:
        if action["files"]:
            assert "(only plausible: serves another model" in action["title"], action


@pytest.mark.parametrize(
    ("name", "text", "mode"),
    [
        ("other.log", "2024-01-01 12:00:00 nginx started\n", "fundamental-mode"),  # a log, not vLLM's
        ("run-vllm-7.log", "no marker at all\n", "vllm-log-mode"),  # *vllm*.log: by name
        ("api.log", "INFO 05-21 10:00:01 [api_server.py:123] Starting\n", "vllm-log-mode"),  # vLLM's header
        ("serve.sh", "vllm serve m --max-num-seqs 8\n", "sh-mode"),  # vLLM text, not a log
    ],
)
def test_emacs_mode_rules(tmp_path, name, text, mode):
    emacs = shutil.which("emacs") or unavailable("emacs not found", INSTALLER)
    (tmp_path / name).write_text(text, encoding="utf-8")
    # Without eglot loaded the mode hook starts nothing: only the major mode is looked at.
    env = {**os.environ, "HOME": str(tmp_path)}
    code = f'(progn (find-file "{name}") (princ major-mode))'
    proc = subprocess.run(
        [emacs, "--batch", "-q", "-l", str(SETUP), "--eval", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout == mode, proc.stderr


def test_emacs_setup_byte_compiles_cleanly(tmp_path):
    emacs = shutil.which("emacs") or unavailable("emacs not found", INSTALLER)
    copy = tmp_path / SETUP.name
    shutil.copy(SETUP, copy)
    proc = subprocess.run(
        [
            emacs,
            "--batch",
            "-q",
            "--eval",
            "(setq byte-compile-error-on-warn t)",
            "-f",
            "batch-byte-compile",
            str(copy),
        ],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
