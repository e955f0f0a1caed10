"""The lines an explanation names (`came after line 16`, `the fatal error on line 43`) are
numbered as the report around it numbers lines: `check` counts only `\\n` (a progress bar
redrawn with bare `\\r` is one line), a terminal copy's rows, a JSON log's records; an editor
its own lines. Before, they were the core's numbers (bare `\\r` counted), so on 103.log the
root cause on line 203 said another exception "came after line 210".
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.test_wraps import cut
from vllm_log_lsp.core.incidents import braces_kept
from vllm_log_lsp.core.model import LineWords, numbered

ENGINE = "(EngineCore_DP0 pid=7) "
START = [
    "(APIServer pid=1) INFO 09-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0",
    ENGINE + "INFO 09-01 10:00:05 [gpu_model_runner.py:1] Starting to load model m...",
]
# A bar redrawn in place: one line for grep -n and the report, three for the core.
BAR = "Loading safetensors checkpoint shards:   0% 0/2\rLoading: 50% 1/2\rLoading: 100% 2/2"


def _worker_traceback(rank: int, second: int) -> list[str]:
    writer = f"(Worker_TP{rank} pid={10 + rank}) "
    return [
        writer + f"ERROR 09-01 10:00:{second:02d} [multiproc_executor.py:1] WorkerProc hit an exception.",
        writer + "Traceback (most recent call last):",
        writer + '  File "/x/vllm/v1/worker/gpu_worker.py", line 1, in load_model',
        writer + "    self.model_runner.load_model()",
        writer + f"RuntimeError: weights of rank {rank} do not match the checkpoint's shape",
    ]


DEATH = [
    *_worker_traceback(0, 20),
    *_worker_traceback(1, 21),
    ENGINE + "ERROR 09-01 10:00:22 [core.py:1] EngineCore failed to start.",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.",
]

WARNING = (
    ENGINE + "WARNING 09-01 10:00:06 [_custom_ops.py:20] Failed to import from vllm._C with "
    'ImportError("undefined symbol")'
)
FATAL = ENGINE + "ERROR 09-01 10:00:20 [core.py:1] RuntimeError: operator _C::rms_norm does not exist"


def _check(tmp_path: Path, text: str) -> dict:
    log = tmp_path / "run.log"
    log.write_bytes(text.encode())
    out = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    [incident] = json.loads(out.stdout)["files"][0]["incidents"]
    return incident["root_cause"]


def _named(words: str) -> list[int]:
    return [int(n) for n in re.findall(r"\bline (\d+)", words)]


def _rows_of_one_line(layout: str, log: str, named: int, shown: int) -> bool:
    """Whether report lines `named` and `shown` are one line of the log: the same line, or in a
    terminal copy two rows of one cut line (a line is named by its first row, and a root cause
    shown on the row its text starts on)."""
    if layout != "terminal copy":
        return named == shown
    rows = log.split("\n")
    return named <= shown and all(rows[row - 1] and len(rows[row - 1]) == 60 for row in range(named, shown))


def _texts(log: str, number: int) -> str:
    """Line `number` (1-based) of `log` as grep -n numbers lines."""
    return log.split("\n")[number - 1]


LAYOUTS = {
    "plain": lambda lines: "\n".join(lines) + "\n",
    "crlf": lambda lines: "\r\n".join(lines) + "\r\n",
    "bar before": lambda lines: "\n".join([*lines[:2], BAR, BAR, *lines[2:]]) + "\n",
    "bars, crlf": lambda lines: "\r\n".join([*lines[:2], BAR, *lines[2:]]) + "\r\n",
    "terminal copy": lambda lines: cut("\n".join(lines) + "\n", 60)[0],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_later_exception_names_the_root_line_as_the_report_numbers_it(tmp_path: Path, layout: str) -> None:
    log = LAYOUTS[layout]([*START, *DEATH])
    root = _check(tmp_path, log)
    assert "weights of rank 0" in root["text"]
    later = [c for c in root["considered"] if "weights of rank 1" in c["text"]]
    assert later and later[0]["why_not"] == f"came after line {root['line']}"
    assert "weights of rank 1" in _texts(log, later[0]["line"]) or layout == "terminal copy"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_warning_and_the_error_it_explains_name_each_other_by_the_reports_lines(
    tmp_path: Path, layout: str
) -> None:
    log = LAYOUTS[layout]([*START, WARNING, BAR.replace("\r", " "), FATAL])
    root = _check(tmp_path, log)
    assert "Failed to import from vllm._C" in root["text"]
    [fatal] = [c for c in root["considered"] if "rms_norm" in c["text"]]
    assert _named(root["why"]) == [fatal["line"]]
    [warning_line] = _named(fatal["why_not"])
    assert fatal["why_not"].startswith("it follows from the warning on line ")
    assert _rows_of_one_line(layout, log, warning_line, root["line"])


def test_line_words_read_as_the_core_numbers_and_renumber() -> None:
    words = LineWords("came after line {0}, before line {1}", 4, 9)
    assert words == "came after line 5, before line 10"  # a str: the core's numbers, 1-based
    assert words.numbered(lambda line: line - 2) == "came after line 3, before line 8"
    assert numbered(words, lambda line: line * 2) == "came after line 9, before line 19"
    assert numbered("no line named", lambda line: line * 2) == "no line named"
    copied = pickle.loads(pickle.dumps(words))
    assert copied == words and copied.numbered(lambda line: 0) == "came after line 1, before line 1"


@pytest.mark.parametrize("words", ["vllm._C{x}", "{0}", "}{", "a {{b}} c", "{'x': 1}"])
def test_words_from_a_log_or_a_rule_are_kept_as_written(words: str) -> None:
    """A subject or a rule's title with braces goes into a template as literal text."""
    template = "the error on line {0} refers to `" + braces_kept(words) + "`"
    assert LineWords(template, 3).numbered(lambda line: line) == f"the error on line 4 refers to `{words}`"
