"""`check` imports only what it uses: a short log's check is mostly start-up, so the language
server, the launch-script editors, the other report formats, the process pool, the TOML parser
(the catalog's parse is cached), `regex` (user patterns only), `typing`, `ast` and argparse stay
unimported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import CRASH as CRASH_LOGS
from support import FORMATS

CRASH = FORMATS / "tp2-worker-oom.log"
# Runs the CLI as `vllm-log-lsp` does, then names every module it imported (on stderr).
PROBE = (
    "import sys; from vllm_log_lsp.cli import main; status = main(sys.argv[1:]); "
    "print(' '.join(sorted(sys.modules)), file=sys.stderr); sys.exit(status)"
)
NEVER_FOR_CHECK = (
    "pygls",
    "lsprotocol",
    "vllm_log_lsp.lsp",
    "vllm_log_lsp.launch",
    "vllm_log_lsp.streams",
    "vllm_log_lsp.report.html",
    "vllm_log_lsp.report.sarif",
    "vllm_log_lsp.report.github",
    "concurrent.futures",
    "multiprocessing",
    "yaml",
    "tomllib",
    "tomli",
    "regex",
    "pathlib",
    "difflib",
    "typing",  # annotations only (`TYPE_CHECKING` blocks)
    "ast",  # vLLM's args line is read by `context.literal_value`
    "argparse",  # a plain `check` command line is read by `cli.plain_check_args`
    "shutil",  # (argparse's formatter asks it the terminal's width)
    "contextlib",  # (its context managers are small classes here)
    "json",  # the mined index is marshal data; a JSON log brings it
    "_contextvars",  # the learned prefix is a thread-local
    "_struct",  # the mined index's numbers are read by int.from_bytes
    "math",
    "heapq",  # a short log's candidate lines are sorted in one list
    "vllm_log_lsp.report.text",  # the text format's renderer
    "threading",  # locks are `_thread`'s; a progress line (drawn on a terminal) brings it
    "datetime",  # a stats line's date is counted by `stats.gregorian_day`
)
# Brought by what a log holds: a non-ASCII row whose width is measured.
NOT_FOR_A_START_UP_CRASH = ("unicodedata",)


def _imported(*arguments: str, cache: Path) -> tuple[set[str], str]:
    env = dict(os.environ, VLLM_LOG_LSP_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return set(done.stderr.split()), done.stdout


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_check_of_one_log_imports_only_what_it_uses(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _imported("check", "--format", "json", str(CRASH), cache=cache)  # the first run fills the cache
    modules, out = _imported("check", "--format", "json", str(CRASH), cache=cache)
    assert json.loads(out)["files"][0]["incidents"][0]["root_cause"]["cause"] == "oom-serving"
    assert [name for name in NEVER_FOR_CHECK if _loaded(modules, name)] == []
    assert "vllm_log_lsp.core.analyze" in modules  # (the probe saw the check's own modules)


def test_a_start_up_crash_leaves_out_what_only_serving_logs_need(tmp_path: Path) -> None:
    """A crash before serving has no stats lines (an ASCII one no wide characters): their
    modules stay unimported; a serving log's check brings them."""
    startup, serving = CRASH_LOGS / "030.log", CRASH
    assert "throughput" not in startup.read_text() and startup.read_text().isascii()
    _imported("check", "--format", "json", str(startup), cache=tmp_path / "cache")  # (fills the cache)
    modules, out = _imported("check", "--format", "json", str(startup), cache=tmp_path / "cache")
    assert json.loads(out)["files"][0]["incidents"]
    assert [name for name in NOT_FOR_A_START_UP_CRASH if _loaded(modules, name)] == []
    wide = tmp_path / "wide.log"
    wide.write_text(serving.read_text() + "ERROR 10-03 21:20:09 [core.py:1] 模型加载失败\n", encoding="utf-8")
    modules, _ = _imported("check", "--format", "json", str(wide), cache=tmp_path / "cache")
    assert "unicodedata" in modules


@pytest.mark.parametrize(
    ("arguments", "needed"),
    [
        (["--format", "sarif"], "vllm_log_lsp.report.sarif"),
        (["--format", "github"], "vllm_log_lsp.report.github"),
        (["--merge", str(CRASH)], "vllm_log_lsp.streams"),
        (["--format=json"], "argparse"),  # a command line `plain_check_args` leaves to argparse
    ],
)
def test_what_an_option_needs_is_imported_when_asked(
    tmp_path: Path, arguments: list[str], needed: str
) -> None:
    modules, _ = _imported("check", *arguments, str(CRASH), cache=tmp_path / "cache")
    assert needed in modules


def test_a_user_rule_file_brings_the_engine_with_time_limits(tmp_path: Path) -> None:
    pytest.importorskip("regex")
    rules = tmp_path / "mine.toml"
    rules.write_text('[[rule]]\nid = "mine"\ntitle = "Mine"\nfamily = "config"\nmatch = ["never seen"]\n')
    modules, _ = _imported(
        "check", "--rules", str(rules), "--format", "json", str(CRASH), cache=tmp_path / "c"
    )
    assert "regex" in modules and ("tomllib" in modules or "tomli" in modules)


def test_the_console_script_collects_again_after_the_imports(tmp_path: Path) -> None:
    """`__main__.run` pauses the collector for the imports only: the check runs with it on, and
    what the imports made is frozen (never scanned again); so is what the check made, once it
    returns (the collections at exit would only walk it)."""
    probe = (
        "import gc, sys; from vllm_log_lsp.__main__ import run; "
        "sys.argv = ['vllm-log-lsp', 'check', '--format', 'json', sys.argv[1]]; status = run(); "
        "young = sum(len(gc.get_objects(g)) for g in range(3)); "
        "print(gc.isenabled(), gc.get_freeze_count() > 1000, young < 100, status, file=sys.stderr)"
    )
    env = dict(os.environ, VLLM_LOG_LSP_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", probe, str(CRASH)], capture_output=True, text=True, env=env)
    assert done.stderr.split() == ["True", "True", "True", "1"], done.stderr
    assert json.loads(done.stdout)["files"][0]["incidents"]
