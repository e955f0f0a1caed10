"""The VS Code extension: its .vsix, its node-side unit tests, and an end-to-end run in real VS Code.

The end-to-end test starts code-server (VS Code 1.100.3 in the browser) on 127.0.0.1 with a fresh user-data
dir, extensions dir and HOME, installs the built .vsix, opens a workspace holding a real vLLM crash log and a
launch script, and drives it with headless Chromium (tests/editors/vscode/e2e.mjs) like a user: language
mode, Problems panel, hover, go to definition, quick fix.

`scripts/install/40-vscode.sh` installs code-server, playwright-core, chromium and builds the .vsix. Without
them the tests skip, or fail when CI is set. Nothing is downloaded here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from support import HOVER_FIRST_SCREEN_LINES, MAX_QUICK_FIXES, unavailable
from vllm_log_lsp.lsp.settings import CLIENT_ONLY_KEYS, SECTION, contributed_properties

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "vscode-client"
E2E = ROOT / "tests" / "editors" / "vscode"
WORKSPACE_FIXTURE = ROOT / "tests" / "editors" / "fixtures" / "vscode-workspace"
ARTIFACTS = ROOT / "test-artifacts"
CODE_SERVER = E2E / "node_modules" / ".bin" / "code-server"
CHROMIUM = Path(os.environ.get("VLLM_LOG_CHROMIUM", "/usr/bin/chromium"))

# The crash logs in the workspace, with the lines from /work/shared/corpus/crash/labels.jsonl (1-based).
# vllm-serve-crash.log is corpus 005.log: NPU out of memory while serving (vllm-ascend 0.11, TP=4);
# EngineCore re-raises the worker's OOM as "RuntimeError: Worker failed with error ..." on line 29, and the
# API server's EngineDeadError follows on lines 42 and 59. Its name matches `*vllm*.log` -> vLLM Log.
INSTALLER = "scripts/install/40-vscode.sh"
LOG = "vllm-serve-crash.log"
LOG_ROOT_CAUSE_LINE = 29
LOG_SYMPTOM_LINE = 42
# server-041.log is corpus 041.log: CUDA OOM in the encoder's memory profiling (line 109); it opens in
# VS Code's own Log language, and the server must still diagnose it.
PLAIN_LOG = "server-041.log"
PLAIN_LOG_ROOT_CAUSE_LINE = 109
# app.log: an application's log that mentions vllm (a pip line) but is not vLLM's: it stays a Log.
OTHER_LOG = "app.log"
# Screenshots of the crash log in the default themes, for docs/ (tests/editors/vscode/screenshots.py).
THEMES = {"dark": "Dark Modern", "light": "Light Modern"}  # their names in the theme picker
SCRIPT = "serve.sh"
# The same log as server-041.log, outside the workspace, for `vLLM Log: Analyze Log File from Disk...`.
DISK_LOG = "big-041.log"
# tests/fixtures/formats/kv-pressure-oom.log (tests/pressure.py): KV cache filling up before a serving
# OOM on line 47, for `vLLM Log: Show Report`.
REPORT_LOG = "kv-pressure-vllm.log"
REPORT_LOG_ROOT_CAUSE_LINE = 47


def _vsix() -> Path:
    found = sorted(CLIENT.glob("vllm-log-*.vsix"), key=lambda p: p.stat().st_mtime)
    if not found:
        unavailable("no vscode-client/vllm-log-*.vsix", INSTALLER)
    return found[-1]


# ------------------------------------------------------------------------------------------------------
# The package


@pytest.fixture(scope="module")
def vsix_tree(tmp_path_factory) -> Path:
    vsix = _vsix()
    out = tmp_path_factory.mktemp("vsix")
    with zipfile.ZipFile(vsix) as z:
        bad = z.testzip()
        assert bad is None, f"corrupt member {bad} in {vsix.name}"
        z.extractall(out)
    return out / "extension"


def test_vsix_manifest(vsix_tree: Path):
    manifest = json.loads((vsix_tree / "package.json").read_text())
    assert manifest["name"] == "vllm-log"
    assert manifest["main"] == "./out/extension.js"
    assert (vsix_tree / "out" / "extension.js").stat().st_size > 10_000
    events = set(manifest["activationEvents"])
    assert {"onLanguage:vllm-log", "onLanguage:log"} <= events
    contributes = manifest["contributes"]
    (lang,) = [x for x in contributes["languages"] if x["id"] == "vllm-log"]
    assert "vLLM Log" in lang["aliases"]
    assert "*vllm*.log" in lang["filenamePatterns"]
    # The first-line pattern (a JavaScript regex) must accept typical vLLM first lines.
    first_line = re.compile(lang["firstLine"])
    for line in (
        "INFO 05-12 10:00:00 [__init__.py:239] Automatically detected platform cuda.",
        "(APIServer pid=1) INFO 11-10 12:30:50 [api_server.py:1839] vLLM API server version 0.11.0",
        "INFO 01-02 03:04:05 api_server.py:585] vLLM API server version 0.6.3",
        "\x1b[1;36m(APIServer pid=7)\x1b[0;0m INFO 11-10 12:30:50 [utils.py:233] non-default args",
    ):
        assert first_line.search(line), line
    assert not first_line.search("2024-01-01 12:00:00 INFO something else entirely")
    commands = {c["command"] for c in contributes["commands"]}
    assert commands == {
        "vllmLog.restartServer",
        "vllmLog.analyzeFile",
        "vllmLog.goToRootCause",
        "vllmLog.showOutput",
        "vllmLog.showReport",
    }
    props = contributes["configuration"]["properties"]
    # Every setting the server reads (settings.py is their one source) and the client's own ones.
    for key in [*contributed_properties(), *(f"{SECTION}.{k}" for k in CLIENT_ONLY_KEYS)]:
        assert key in props, key
        assert props[key].get("markdownDescription") or props[key].get("description"), key
    assert props["vllmLog.diagnostics.precursors"]["default"] is True
    assert props["vllmLog.maxFileSizeMB"]["default"] == 200
    assert props["vllmLog.trace.server"]["enum"] == ["off", "messages", "verbose"]
    trust = manifest["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited"
    # Settings that choose a program to run or files the server reads: user values only in Restricted Mode.
    assert set(trust["restrictedConfigurations"]) == {
        "vllmLog.interpreter",
        "vllmLog.serverArgs",
        "vllmLog.rules.extraFiles",
    }


def test_vsix_grammars(vsix_tree: Path):
    manifest = json.loads((vsix_tree / "package.json").read_text())
    grammars = manifest["contributes"]["grammars"]
    by_path = {g["path"]: g for g in grammars}
    main = by_path["./syntaxes/vllm-log.tmLanguage.json"]
    injection = by_path["./syntaxes/vllm-log-injection.tmLanguage.json"]
    assert main["language"] == "vllm-log"
    assert injection["injectTo"] == ["text.log"]
    for contribution in grammars:
        shipped = vsix_tree / contribution["path"]
        grammar = json.loads(shipped.read_text())
        # The contribution's scope must be the grammar file's own scope.
        assert grammar["scopeName"] == contribution["scopeName"], contribution["path"]
        source = ROOT / "grammars" / shipped.name
        if source.exists():  # the shipped copy is the repository's grammar, not a placeholder
            assert shipped.read_bytes() == source.read_bytes(), f"{shipped.name} is stale"
    assert main["scopeName"] == "text.log.vllm"
    assert json.loads((vsix_tree / injection["path"]).read_text())["injectionSelector"].startswith(
        "L:text.log"
    )


def test_vsix_bundles_server_and_pure_python_libs(vsix_tree: Path):
    server = vsix_tree / "bundled" / "server" / "vllm_log_lsp"
    for src in (ROOT / "server" / "vllm_log_lsp").rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts and src.suffix != ".pyc":
            rel = src.relative_to(ROOT / "server" / "vllm_log_lsp")
            assert (server / rel).exists(), f"{rel} missing from the .vsix"
    libs = vsix_tree / "bundled" / "libs"
    for pkg in ("pygls", "lsprotocol", "cattrs", "attrs", "attr", "ruamel/yaml", "bashlex", "tomli"):
        assert (libs / pkg).is_dir(), pkg
    assert (libs / "dockerfile_parse").is_dir()
    assert (libs / "typing_extensions.py").is_file()
    # Pure Python only: one .vsix for every platform; `regex` (compiled) is deliberately not bundled.
    compiled = [p.name for p in libs.rglob("*") if p.suffix in (".so", ".pyd", ".dylib")]
    assert compiled == []
    assert not (libs / "regex").exists()
    assert not list(vsix_tree.rglob("__pycache__"))
    # The client starts the server through this script (isolated import path; see python.ts).
    assert (vsix_tree / "launcher" / "start_server.py").is_file()


def test_bundle_imports_without_site_packages(vsix_tree: Path):
    """The bundled libs alone (python -S: no site-packages at all) are enough to import the server."""
    bundled = vsix_tree / "bundled"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(bundled / "server"), str(bundled / "libs")]),
    }
    code = (
        "import pygls.lsp.server, lsprotocol.types, cattrs, attrs, ruamel.yaml, bashlex,"
        " dockerfile_parse, typing_extensions, vllm_log_lsp, sys;"
        " print(vllm_log_lsp.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(bundled / "server"))


def _lsp_message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _lsp_frames(data: bytes) -> list[dict]:
    frames = []
    while (head := data.find(b"\r\n\r\n")) >= 0:
        length = int(re.search(rb"Content-Length: *(\d+)", data[:head], re.I).group(1))
        frames.append(json.loads(data[head + 4 : head + 4 + length]))
        data = data[head + 4 + length :]
    return frames


@pytest.fixture(scope="module")
def bundled_initialize(vsix_tree: Path) -> dict:
    """`python -S -m vllm_log_lsp serve` run from the unpacked .vsix: its answer to initialize."""
    bundled = vsix_tree / "bundled"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(bundled / "server"), str(bundled / "libs")]),
    }
    messages = b"".join(
        _lsp_message(m)
        for m in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}},
            },
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        )
    )
    out = subprocess.run(
        [sys.executable, "-S", "-m", "vllm_log_lsp", "serve"],
        input=messages,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    answers = [f for f in _lsp_frames(out.stdout) if f.get("id") == 1]
    assert answers, out.stderr.decode(errors="replace")[-2000:]
    return answers[0]


def test_bundled_server_starts_from_the_vsix(bundled_initialize: dict):
    """The server runs from the .vsix alone (no venv, no site-packages, no `regex`)."""
    caps = bundled_initialize["result"]["capabilities"]
    assert caps.get("hoverProvider")
    assert caps.get("definitionProvider")
    assert "vllmLog.analyzeFile" in caps["executeCommandProvider"]["commands"]


def test_node_unit_tests():
    """The extension's node-side unit tests (interpreter finder, settings) pass."""
    if shutil.which("node") is None or not (CLIENT / "node_modules" / "esbuild").exists():
        unavailable("node or vscode-client/node_modules is missing", INSTALLER)
    out = subprocess.run(
        ["npm", "run", "--silent", "test:unit"],
        cwd=CLIENT,
        env={**os.environ, "VLLM_LOG_TEST_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert re.search(r"^# fail 0$", out.stdout, re.M), out.stdout[-2000:]
    assert re.search(r"^# pass [1-9]", out.stdout, re.M), out.stdout[-2000:]


# ------------------------------------------------------------------------------------------------------
# Real VS Code (code-server) in headless Chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _column_of(path: Path, line: int, pattern: str) -> int:
    """1-based column of the regex match on a 1-based line (where the cursor goes for hover etc.)."""
    text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not on line {line} of {path.name}"
    return m.start() + 1


def _interpreter() -> list[str]:
    override = os.environ.get("VLLM_LOG_E2E_INTERPRETER")  # e.g. a wrapper for a development server
    return json.loads(override) if override else [sys.executable]


@pytest.fixture(scope="module")
def vscode_run(tmp_path_factory):
    """Runs the whole user session; the tests below each check one part of what it saw.

    A real editor on a loaded 2-core machine sometimes misses a beat (a hover that has not filled
    in yet, a click before the view settled): a session that looks incomplete is run once more,
    and the tests judge the second one.
    """
    if not CODE_SERVER.exists() or not CHROMIUM.exists() or shutil.which("node") is None:
        unavailable("code-server, chromium or node is missing", INSTALLER)
    result = _run_session(tmp_path_factory)
    if _looks_incomplete(result):
        retried = _run_session(tmp_path_factory)
        retried["firstAttempt"] = {k: result.get(k) for k in ("errors", "hover", "returncode")}
        result = retried
    assert result["returncode"] == 0, result["nodeOutput"]
    return result


def _looks_incomplete(result: dict) -> bool:
    """Whether a session missed something the tests below check (then it is run again)."""
    if result["returncode"] or result.get("errors"):
        return True
    root_rows = [_row_line(r) for r in _diagnostic_rows(result.get("markers") or [])]
    seen = {
        "language mode": result.get("languageMode") == "vLLM Log",
        "root cause in Problems": LOG_ROOT_CAUSE_LINE in root_rows,
        "server hover": "Root cause" in (result.get("hover") or ""),
        "definition": (result.get("definition") or {}).get("line") == LOG_ROOT_CAUSE_LINE,
        "go to root cause": (result.get("goToRootCause") or {}).get("line") == LOG_ROOT_CAUSE_LINE,
        "code lens": (result.get("codeLensCursor") or {}).get("line") == LOG_ROOT_CAUSE_LINE,
        "quick fix": bool(result.get("quickFixApplied")),
        "quick fix without a match": bool(result.get("noMatchQuickFixes")),
        "log-language file": bool(result.get("plainLogMarkers")) and bool(result.get("plainLogStatus")),
        "analyze from disk": DISK_LOG in (result.get("analyzeFileToast") or ""),
        "missing python": "needs Python" in (result.get("missingPythonToast") or ""),
        "show report": bool((result.get("report") or {}).get("found")),
    }
    missing = [name for name, ok in seen.items() if not ok]
    if missing:
        print(f"VS Code session incomplete ({', '.join(missing)}): running it once more")
    return bool(missing)


def _run_session(
    tmp_path_factory,
    untrusted: Callable[[Path], None] | None = None,
    vsix: Path | None = None,
    screenshots: Path | None = None,
) -> dict:
    """One code-server session. With `untrusted`, which plants hostile files in the workspace, the
    workspace opens in Restricted Mode and only the steps up to the Problems panel run. With
    `screenshots` (a path prefix), only the crash log is opened, once per default theme."""
    vsix = vsix or _vsix()
    name = "vscode-untrusted" if untrusted else "vscode-themes" if screenshots else "vscode-e2e"
    tmp = tmp_path_factory.mktemp(name)
    home, user_data, extensions = tmp / "home", tmp / "user-data", tmp / "extensions"
    workspace = tmp / "workspace"
    for d in (home, user_data / "User", extensions):
        d.mkdir(parents=True)
    shutil.copytree(WORKSPACE_FIXTURE, workspace)
    # A log outside the workspace, never opened: analysed from disk by `vLLM Log: Analyze Log File...`.
    outside = tmp / "elsewhere"
    outside.mkdir()
    shutil.copy(WORKSPACE_FIXTURE / PLAIN_LOG, outside / DISK_LOG)
    for f in workspace.iterdir():
        f.chmod(0o644 if f.suffix != ".sh" else 0o755)
    ARTIFACTS.mkdir(exist_ok=True)
    settings = {
        "vllmLog.interpreter": _interpreter(),
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "workbench.welcomePage.walkthroughs.openOnInstall": False,
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "chat.commandCenter.enabled": False,
        "editor.hover.delay": 300,
        "editor.hover.above": False,
        "editor.stickyScroll.enabled": False,
        "editor.occurrencesHighlight": "off",
        "editor.selectionHighlight": False,
        # The e2e types into settings.json: no auto-closing to double its brackets and quotes.
        "editor.autoClosingBrackets": "never",
        "editor.autoClosingQuotes": "never",
        "editor.minimap.enabled": False,
        "editor.wordWrap": "on",
        "editor.renderWhitespace": "none",
        "files.refactoring.autoSave": True,
        "window.restoreWindows": "none",
    }
    if untrusted:
        # Workspace trust on, no start-up prompt: an unknown folder opens in Restricted Mode.
        settings["security.workspace.trust.enabled"] = True
        settings["security.workspace.trust.startupPrompt"] = "never"
        settings["security.workspace.trust.untrustedFiles"] = "open"
        untrusted(workspace)
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env.pop("VSCODE_IPC_HOOK_CLI", None)
    base = [
        str(CODE_SERVER),
        "--user-data-dir",
        str(user_data),
        "--extensions-dir",
        str(extensions),
    ]
    t0 = time.monotonic()
    installed = subprocess.run(
        [*base, "--install-extension", str(vsix), "--force"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    port = _free_port()
    log_path = tmp / "code-server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                *base,
                "--bind-addr",
                f"127.0.0.1:{port}",
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
                *([] if untrusted else ["--disable-workspace-trust"]),
                "--disable-getting-started-override",
                "--ignore-last-opened",
                str(workspace),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"code-server did not start:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.2)
        log_file = workspace / LOG
        config = {
            "url": f"http://127.0.0.1:{port}/?folder={workspace}",
            "chromium": str(CHROMIUM),
            "artifacts": str(ARTIFACTS),
            "result": str(tmp / "result.json"),
            "userSettings": str(user_data / "User" / "settings.json"),
            "diagnosticsTimeoutMs": 25000,
            "quickFixPattern": r"serve\.sh",  # a fix that edits the launch script
            "script": str(workspace / SCRIPT),  # watched until the fix is saved
            "log": {
                "name": LOG,
                "rootCauseLine": LOG_ROOT_CAUSE_LINE,
                "rootCauseColumn": _column_of(log_file, LOG_ROOT_CAUSE_LINE, r"RuntimeError") + 4,
                "symptomLine": LOG_SYMPTOM_LINE,
                "symptomColumn": _column_of(log_file, LOG_SYMPTOM_LINE, r"EngineDeadError") + 3,
            },
            "plainLog": {"name": PLAIN_LOG, "rootCauseLine": PLAIN_LOG_ROOT_CAUSE_LINE},
            "otherLog": {"name": OTHER_LOG},
            "diskLog": {"name": DISK_LOG, "path": str(outside / DISK_LOG)},
            "reportLog": {"name": REPORT_LOG},
            "noMatchLog": {
                "name": REPORT_LOG,  # Qwen/Qwen3-8B: not the model serve.sh serves
                "rootCauseLine": REPORT_LOG_ROOT_CAUSE_LINE,
                "rootCauseColumn": _column_of(
                    workspace / REPORT_LOG, REPORT_LOG_ROOT_CAUSE_LINE, r"OutOfMemoryError"
                )
                + 3,
            },
        }
        if untrusted:
            config["onlySteps"] = ["load workbench", "restricted mode", "open crash log", "problems panel"]
        if screenshots:
            config["onlySteps"] = ["load workbench", "open crash log", "problems panel", "theme screenshots"]
            config["themes"] = [{"name": t, "path": f"{screenshots}-{k}.png"} for k, t in THEMES.items()]
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        run = subprocess.run(
            ["node", str(E2E / "e2e.mjs"), str(tmp / "config.json")],
            cwd=E2E,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,  # a hang guard, not a measure: the session takes ~60-100 s on a loaded 2-core machine
            check=False,
        )
        result = json.loads((tmp / "result.json").read_text()) if run.returncode == 0 else {}
        result["nodeOutput"] = run.stdout[-3000:] + run.stderr[-5000:]
        result["returncode"] = run.returncode
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        # Keep the logs (code-server, extension host, the vLLM Log output channel) with the screenshots.
        # (Best effort: another run may be writing the same artifacts.)
        keep = ARTIFACTS / f"{name}-logs"
        try:
            shutil.rmtree(keep, ignore_errors=True)
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(log_path, keep / "code-server.log")
            if (user_data / "logs").exists():
                shutil.copytree(user_data / "logs", keep / "logs", dirs_exist_ok=True)
        except OSError as e:
            print(f"could not keep the VS Code logs: {e}")
    result["seconds"] = time.monotonic() - t0
    result["workspace"] = str(workspace)
    (ARTIFACTS / f"{name}.json").write_text(json.dumps(result, indent=2))
    return result


def _diagnostic_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["level"] >= 2]


def _row_line(row: dict) -> int | None:
    m = re.search(r"\[Ln (\d+), Col \d+\]", row["text"]) or re.search(r"line (\d+) column \d+", row["label"])
    return int(m.group(1)) if m else None


def _explain(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k != "nodeOutput"}, indent=1)[:6000]


@pytest.mark.editor
def test_vscode_session_ran_cleanly(vscode_run):
    assert vscode_run["errors"] == [], _explain(vscode_run)
    assert (ARTIFACTS / "vscode-e2e.png").stat().st_size > 10_000


@pytest.mark.editor
def test_vscode_language_mode(vscode_run):
    assert vscode_run.get("languageMode") == "vLLM Log", _explain(vscode_run)


@pytest.mark.editor
def test_vscode_problems_panel_shows_root_cause_on_its_line(vscode_run):
    rows = _diagnostic_rows(vscode_run.get("markers") or [])
    assert rows, _explain(vscode_run)
    errors = [r for r in rows if r["label"].lower().startswith("error")]
    assert errors, _explain(vscode_run)
    assert LOG_ROOT_CAUSE_LINE in [_row_line(r) for r in errors], _explain(vscode_run)


@pytest.mark.editor
def test_vscode_hover_explains_root_cause(vscode_run):
    hover = vscode_run.get("hover") or ""
    assert re.search(r"out of memory|\bOOM\b", hover, re.I), _explain(vscode_run)
    # The server's own hover (an explanation that names a remedy), beyond the diagnostic message.
    assert re.search(r"--[a-z][a-z-]+|gpu[_-]memory[_-]utilization|max[_-]num[_-]seqs", hover), _explain(
        vscode_run
    )


@pytest.mark.editor
def test_vscode_hover_first_screen_holds_cause_evidence_and_first_fix(vscode_run):
    """As VS Code renders it: the server's part, up to its first reference heading, is at most 12
    lines and holds the cause, the evidence and the first fix with its flag and script."""
    hover = vscode_run.get("hover") or ""
    assert "searching" not in hover, hover
    server_part = hover[hover.find("Root cause: ") :]
    assert server_part, _explain(vscode_run)
    head = [line for line in server_part.split("Why it happens", 1)[0].split("\n") if line.strip()]
    assert len(head) <= HOVER_FIRST_SCREEN_LINES, head
    assert head[0] == "Root cause: NPU OOM while serving requests", head  # the device that failed
    assert any(line.startswith("Evidence: ") for line in head), head
    first_fix = next((line for line in head if line.startswith("First fix: ")), "")
    assert "--gpu-memory-utilization 0.85" in first_fix and "serve.sh:10" in first_fix, head


@pytest.mark.editor
def test_vscode_definition_jumps_from_symptom_to_root_cause(vscode_run):
    assert vscode_run["symptomCursor"].get("line") == LOG_SYMPTOM_LINE, _explain(vscode_run)
    assert vscode_run["definition"].get("line") == LOG_ROOT_CAUSE_LINE, _explain(vscode_run)
    assert vscode_run["goToRootCause"].get("line") == LOG_ROOT_CAUSE_LINE, _explain(vscode_run)


@pytest.mark.editor
def test_vscode_code_lens_goes_to_root_cause(vscode_run, bundled_initialize):
    assert bundled_initialize["result"]["capabilities"].get("codeLensProvider"), "no codeLensProvider"
    assert vscode_run.get("codeLenses"), _explain(vscode_run)
    assert vscode_run["codeLensCursor"].get("line") == LOG_ROOT_CAUSE_LINE, _explain(vscode_run)


@pytest.mark.editor
def test_vscode_analyze_file_from_disk(vscode_run):
    toast = vscode_run.get("analyzeFileToast") or ""
    assert DISK_LOG in toast, _explain(vscode_run)
    assert f"line {PLAIN_LOG_ROOT_CAUSE_LINE}" in toast, toast
    assert re.search(r"out of memory|\bOOM\b", toast, re.I), toast
    rows = vscode_run.get("analyzeFileMarkers") or []
    assert any(r["level"] == 1 and DISK_LOG in r["label"] + r["text"] for r in rows), _explain(vscode_run)
    errors = [r for r in rows if r["level"] == 2 and r["label"].startswith("Error")]
    assert PLAIN_LOG_ROOT_CAUSE_LINE in [_row_line(r) for r in errors], _explain(vscode_run)


@pytest.mark.editor
def test_vscode_missing_python_says_what_to_do(vscode_run):
    toast = vscode_run.get("missingPythonToast") or ""
    assert "needs Python 3.10 or newer" in toast, _explain(vscode_run)
    assert "/nonexistent/python3" in toast and "vllmLog.interpreter" in toast, toast
    assert "Open Setting" in toast, toast


@pytest.mark.editor
def test_vscode_log_with_vllm_content_becomes_a_vllm_log(vscode_run):
    # VS Code opens server-041.log as Log (its name matches `*.log`, not `*vllm*.log`); the extension
    # reads vLLM's lines at its top and sets vLLM Log, and the status bar says so with the count.
    assert vscode_run.get("plainLogLanguageMode") == "vLLM Log", _explain(vscode_run)
    assert vscode_run.get("plainLogStatus") == "vLLM log: 1 root cause", _explain(vscode_run)


@pytest.mark.editor
def test_vscode_other_log_stays_a_log(vscode_run):
    assert vscode_run.get("otherLogLanguageMode") == "Log", _explain(vscode_run)
    assert vscode_run.get("otherLogStatus") == 0, _explain(vscode_run)


@pytest.mark.editor
def test_vscode_log_language_file_is_diagnosed(vscode_run):
    rows = vscode_run.get("plainLogMarkers") or []
    # Rows are the Problems tree in order: a file row, then that file's diagnostics.
    current, lines = None, []
    for r in rows:
        if r["level"] == 1:
            current = r["label"] + r["text"]
        elif current and PLAIN_LOG in current:
            lines.append(_row_line(r))
    assert PLAIN_LOG_ROOT_CAUSE_LINE in lines, _explain(vscode_run)


@pytest.mark.editor
def test_vscode_quick_fix_edits_launch_script(vscode_run, bundled_initialize):
    assert bundled_initialize["result"]["capabilities"].get("codeActionProvider"), "no codeActionProvider"
    fixes = vscode_run.get("quickFixes") or []
    assert fixes, _explain(vscode_run)
    assert len(fixes) <= MAX_QUICK_FIXES and all(f" — {SCRIPT}:" in f for f in fixes), fixes
    # "Auto Fix..." applied it at once: exactly one action is preferred (the first, on serve.sh).
    assert vscode_run.get("autoFixMenu") == 0, _explain(vscode_run)
    applied = vscode_run.get("quickFixApplied")
    assert applied, _explain(vscode_run)
    before = (WORKSPACE_FIXTURE / SCRIPT).read_text()
    after = (Path(vscode_run["workspace"]) / SCRIPT).read_text()
    assert after != before, _explain(vscode_run)
    assert after.count("vllm serve") == 1, after
    # The layout is kept: the other flags stay on their own continuation lines.
    assert "  --tensor-parallel-size 4 \\" in after.splitlines(), after
    assert any(line.strip().startswith("--port 8000") for line in after.splitlines()), after
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert any(re.search(r"--[a-z-]+|^\s*(export\s+)?[A-Z_]+=", line) for line in added), after
    # A title like "... serve.sh:10: --gpu-memory-utilization 0.95 → 0.9" or "... added --flag 4096":
    # the new value is in the script now.
    m = re.search(r"(--[a-z0-9-]+)(?: \S+)? → (\S+)$", applied) or re.search(
        r"added (--[a-z0-9-]+)[ =](\S+)$", applied
    )
    if m:
        flag, value = m.groups()
        assert re.search(rf"{re.escape(flag)}[ =]{re.escape(value)}(\s|$)", after), (applied, after)


@pytest.mark.editor
def test_vscode_quick_fixes_without_a_matching_script(vscode_run):
    """kv-pressure-vllm.log ran Qwen/Qwen3-8B; serve.sh serves another model: the menu is short,
    the fixed command first, and the script's fix says why it is only plausible."""
    rows = vscode_run.get("noMatchQuickFixes") or []
    assert 1 <= len(rows) <= MAX_QUICK_FIXES, _explain(vscode_run)
    assert rows[0].startswith("Copy the fixed launch command"), rows
    plausible = [row for row in rows[1:] if f" — {SCRIPT}:" in row]
    assert len(plausible) == 1, rows  # the first fix only
    assert "(only plausible: serves another model (/root/.cache/Qwen3-VL-32B-Instruct))" in plausible[0]


# ------------------------------------------------------------------------------------------------------
# An untrusted workspace that tries to run code or to replace the diagnosis (Restricted Mode)

HOSTILE_RULE_TITLE = "Planted by the workspace"


def _hostile_workspace(markers: Path) -> Callable[[Path], None]:
    """Files a hostile repository could hold; each writes a file into `markers` if it ever runs."""

    def payload(name: str) -> str:
        return f"open({str(markers / name)!r}, 'w').write('ran')\n"

    def plant(workspace: Path) -> None:
        # What `python -m vllm_log_lsp` started in the workspace would import, and a standard module.
        package = workspace / "vllm_log_lsp"
        package.mkdir()
        (package / "__init__.py").write_text(payload("vllm_log_lsp.__init__"))
        (package / "__main__.py").write_text(payload("vllm_log_lsp.__main__"))
        (workspace / "uuid.py").write_text(payload("uuid"))
        # Workspace settings that would run a program of the workspace's and load its rules.
        fake_python = workspace / "python3"
        fake_python.write_text(
            f'#!/bin/sh\necho ran > {markers / "interpreter"}\nexec {sys.executable} "$@"\n'
        )
        fake_python.chmod(0o755)
        (workspace / "planted.toml").write_text(
            f'[[rule]]\nid = "planted"\ntitle = "{HOSTILE_RULE_TITLE}"\nfamily = "runtime_faults"\n'
            "match = ['.']\n"
        )
        (workspace / ".vscode").mkdir()
        (workspace / ".vscode" / "settings.json").write_text(
            json.dumps(
                {"vllmLog.interpreter": [str(fake_python)], "vllmLog.rules.extraFiles": ["planted.toml"]}
            )
        )

    return plant


@pytest.fixture(scope="module")
def untrusted_run(tmp_path_factory):
    if not CODE_SERVER.exists() or not CHROMIUM.exists() or shutil.which("node") is None:
        unavailable("code-server, chromium or node is missing", INSTALLER)
    markers = tmp_path_factory.mktemp("ran")
    result = _run_session(tmp_path_factory, _hostile_workspace(markers))
    if result["returncode"] or not _diagnostic_rows(result.get("markers") or []):
        print("untrusted VS Code session incomplete: running it once more")
        result = _run_session(tmp_path_factory, _hostile_workspace(markers))
    assert result["returncode"] == 0, result["nodeOutput"]
    result["ran"] = sorted(p.name for p in markers.iterdir())
    return result


@pytest.mark.editor
def test_vscode_untrusted_workspace_runs_nothing_of_its_own(untrusted_run):
    """A workspace's `vllm_log_lsp/`, `uuid.py` and interpreter setting never run, and its rule file is not
    loaded; the bundled server still diagnoses the log."""
    assert untrusted_run.get("restrictedMode") == "Restricted Mode", _explain(untrusted_run)
    assert untrusted_run["ran"] == [], _explain(untrusted_run)
    rows = _diagnostic_rows(untrusted_run.get("markers") or [])
    errors = [r for r in rows if r["label"].lower().startswith("error")]
    assert LOG_ROOT_CAUSE_LINE in [_row_line(r) for r in errors], _explain(untrusted_run)
    assert not [r for r in rows if HOSTILE_RULE_TITLE in r["label"] + r["text"]], _explain(untrusted_run)


@pytest.mark.editor
def test_vscode_show_report_opens_the_html_report(vscode_run):
    report = vscode_run.get("report") or {}
    assert report.get("found"), _explain(vscode_run)
    assert report["title"] == f"vLLM log report: {REPORT_LOG}"
    assert report["verdict"] == "1 engine death: CUDA OOM while serving requests (line 47)"
    # Three charts (KV usage; running and waiting; generation and prompt throughput), 24 points each.
    assert report["charts"] == 3 and report["polylines"] == [24] * 5, report
    assert report["deathMarkers"] == 3
    tabs = vscode_run.get("reportTabs") or []
    assert any(tab.startswith(f"Report: {REPORT_LOG}") for tab in tabs), tabs
    assert (ARTIFACTS / "vscode-report.png").stat().st_size > 10_000
