"""Shared test helpers: fixture paths and the labelled corpus (copied from ../shared/corpus)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NoReturn

FIXTURES = Path(__file__).parent / "fixtures"
CRASH = FIXTURES / "crash"
# Batch 2 of the shared corpus (101–118; its hold-out 119–135 is not copied).
CRASH2 = FIXTURES / "crash2"
# Batch 2's hold-out part (119-135): scored before anyone read it, then added (see issue 9's note).
CRASH3 = FIXTURES / "crash3"
HEALTHY = FIXTURES / "healthy"
FORMATS = FIXTURES / "formats"


def crash_labels(folder: Path = CRASH) -> list[dict]:
    """The labelled crash logs of a corpus folder: file, root_cause_line (1-based), symptom_lines,
    category, phase."""
    with open(folder / "labels.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# Where our root-cause line differs from a label, the line (grep numbering) we report and why
# we believe it.
ROOT_DISAGREEMENTS = {
    # The engine was killed without a word (no traceback, no `Killed`); the label points at the
    # KV-cache sizing line because its CPU swap blocks hint at host memory, but nothing in the log
    # says which work was running when the process vanished. We report the first consequence
    # (the API server's engine client finding the socket closed), whose rule says what a silent
    # kill means; the sizing line is the last engine line the hover's explanation points to.
    # The labels of the other silent kills (123: the leaked-semaphore warning, 134: `Failed core
    # proc(s): {}`) also name the consequence, not the engine's last line: we follow those.
    "107.log": 31,
}


def healthy_logs() -> list[Path]:
    return sorted(HEALTHY.glob("*.log"))


def read_log(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def traceback_headers(text) -> list[tuple[int, int]]:
    """(offset, line) of every traceback header line of `text` (a text or a `LogIndex` of one)."""
    from vllm_log_lsp.core.text import LogIndex
    from vllm_log_lsp.core.tracebacks import TRACEBACK_HEADER

    index = text if isinstance(text, LogIndex) else LogIndex(text)
    found = []
    pos = index.find(TRACEBACK_HEADER)
    while pos >= 0:
        start = index.line_start_at(pos)
        found.append((start, index.line_of(start)))
        pos = index.find(TRACEBACK_HEADER, index.line_end_at(pos))
    return found


def lsp_lines(text: str) -> list[str]:
    """Split like LSP: on \\r\\n, \\r and \\n (a reference for the index under test)."""
    import re

    return re.split(r"\r\n|\r|\n", text)


def grep_numbering(text: str):
    """A function from a 0-based LSP line (\\r\\n, \\r and \\n end a line) to the 1-based line
    number `grep -n` prints (only \\n ends a line): the labels count lines the grep way."""
    import bisect
    import re

    lsp_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r(?!\n)|\n", text)]
    newline_ends = [m.end() for m in re.finditer(r"\n", text)]

    def to_grep(lsp_line: int) -> int:
        offset = lsp_starts[min(lsp_line, len(lsp_starts) - 1)]
        return bisect.bisect_right(newline_ends, offset) + 1

    return to_grep


def within(seconds: float, fn, *args):
    """`fn(*args)` in a daemon thread; fails (instead of hanging the suite) if it does not return."""
    import threading

    box: list = []
    worker = threading.Thread(target=lambda: box.append(fn(*args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"{fn.__name__} did not return within {seconds} s"
    return box[0]


# -- real-editor tests ---------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent


def in_ci() -> bool:
    """Whether this run is CI, where a missing editor or browser is a failure, not a skip."""
    import os

    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def unavailable(reason: str, installer: str) -> NoReturn:
    """Skip a test whose tool is missing, or fail it in CI; `installer` says what installs it."""
    import pytest

    if in_ci():
        pytest.fail(f"{reason} (CI is set: run {installer})")
    pytest.skip(f"{reason}: run {installer}")


def crash_label(name: str) -> dict:
    """The label of one crash log of the corpus."""
    for entry in crash_labels():
        if entry["file"] == name:
            return entry
    raise AssertionError(f"{name} missing from {CRASH / 'labels.jsonl'}")


# The Neovim and Emacs tests share one scenario: a workspace with a crash log and a launch script.
EDITOR_WORKSPACE = ROOT / "tests" / "editors" / "fixtures" / "editor-workspace"
EDITOR_CORPUS_FILE = "007.log"  # crash.log is this corpus log with a prefix on each line
EDITOR_LOG = "crash.log"
EDITOR_SCRIPT = "serve.sh"
EDITOR_RULE = "oom-sampler-warmup"
EDITOR_FIX_FLAG = "--max-num-seqs"
EDITOR_FIX_VALUE = "512"  # halve the 1024 dummy requests of the failed warm-up
EDITOR_TIMEOUT_S = 60


def editor_finding_title() -> str:
    """The title the server gives the editor scenario's root cause (titles name the device)."""
    from vllm_log_lsp.core.analyze import analyze

    findings = analyze((EDITOR_WORKSPACE / EDITOR_LOG).read_bytes()).findings
    return next(f.title for f in findings if f.rule_id == EDITOR_RULE)


#: What every editor must show (issue 14): the hover's first screen, and a short quick-fix menu.
HOVER_FIRST_SCREEN_LINES = 12
MAX_QUICK_FIXES = 5
#: What `serve.sh` serves in the scenario where no launch script is the logged run.
EDITOR_OTHER_MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def serve_another_model(workspace: Path) -> None:
    """Make the workspace one where no launch script is the run in the log."""
    script = workspace / EDITOR_SCRIPT
    text = script.read_text(encoding="utf-8")
    served = re.search(r"vllm serve (\S+)", text)
    assert served is not None, text
    script.write_text(text.replace(served.group(1), EDITOR_OTHER_MODEL), encoding="utf-8")


def hover_first_screen_problems(markdown: str) -> list[str]:
    """What the hover's first 12 lines miss: the cause, the evidence, the first fix with its
    exact flag and the script it edits; and no placeholder anywhere (empty: all there)."""
    head = "\n".join(markdown.split("\n")[:HOVER_FIRST_SCREEN_LINES])
    fix = next((line for line in head.split("\n") if line.startswith("**First fix**")), "")
    wanted = {
        "the cause": editor_finding_title() in head,
        "what died": " died " in head,
        "the evidence": "**Evidence**: " in head,
        "the first fix's flag": f"{EDITOR_FIX_FLAG} {EDITOR_FIX_VALUE}" in fix,
        "the script it edits": f"`{EDITOR_SCRIPT}:" in fix,
        "no placeholder": "searching" not in markdown and "…_" not in markdown,
    }
    return [name for name, ok in wanted.items() if not ok]


def editor_bin_dirs() -> list[str]:
    """Where the editors find `vllm-log-lsp` (and Neovim from PyPI): the venv first."""
    import sys

    return [str(ROOT / ".venv" / "bin"), str(Path(sys.executable).parent)]


# -- the command line ----------------------------------------------------------------------------
#: A user rule that takes the CUDA OOM of the `formats/tp2-worker-oom.log` fixture.
USER_OOM_RULE = (
    '[[rule]]\nid = "my-oom"\ntitle = "Our cluster OOM"\nfamily = "memory"\nmatch = ["OutOfMemoryError"]\n'
)


def run_cli(
    *args: str,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 60,
):
    """`python -m vllm_log_lsp ARGS` as a user runs it; stdout and stderr decoded as UTF-8."""
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    )


def progress_redraws(label: str, steps: int) -> str:
    """A tqdm-style progress bar redrawn with bare `\\r` (as a terminal log records it), no `\\n`."""
    return "\r".join(f"{label}: {100 * i // steps:3d}%|{'#' * i}| {i}/{steps}" for i in range(steps + 1))


def record_tool_searches(monkeypatch) -> list:
    """The literal groups of each search `prefilter._run_tools` runs from now on (a list that
    grows as they run); the searches still run."""
    from vllm_log_lsp.core import prefilter

    searched: list = []
    run_tools = prefilter._run_tools
    monkeypatch.setattr(
        prefilter,
        "_run_tools",
        lambda tool, groups, *rest: searched.append(groups) or run_tools(tool, groups, *rest),
    )
    return searched


def fresh_early_search(monkeypatch, cache_dir: Path) -> None:
    """`core.early` as a new process finds it, with an empty data cache of its own at
    `cache_dir` and any file large enough to search (undone by `monkeypatch`)."""
    from vllm_log_lsp.core import datacache, early

    monkeypatch.setenv("VLLM_LOG_LSP_CACHE_DIR", str(cache_dir))
    monkeypatch.delenv("VLLM_LOG_LSP_NO_GREP", raising=False)
    datacache.forget()
    for name, value in (
        ("_search", None),
        ("_utf8_search", None),
        ("_cached_groups", None),
        ("_attempted", False),
    ):
        monkeypatch.setattr(early, name, value)
    monkeypatch.setattr(early, "TOOL_THRESHOLD", 0)


def first_bad_utf8_byte(data: bytes) -> int | None:
    """The first invalid byte of `data` by decoding all of it at once (the definition)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start
    return None


def skipped_copy_lines(scan) -> set[int]:  # (a `scan.Scan`)
    """The lines of the copies of repeated tracebacks a scan counted, not read (`core.repeats`)."""
    return {
        n for run in scan.repeats for n in range(run.first_line, run.first_line + run.skipped * run.lines)
    }


def scan_values(scan) -> tuple[object, ...]:  # (a `scan.Scan`)
    """What a scan says, for comparing two scans: its candidate lines, events, symptoms, the lines
    its tracebacks consumed and their exception lines, and the tracebacks."""
    return (
        list(scan.lines),
        [(c.event, c.tier, c.inner_text) for c in scan.events],
        [s for s, _, _ in scan.symptoms],
        set(scan.consumed),
        set(scan.exception_lines),
        scan.tracebacks,
    )
