"""A large mapped file's UTF-8 check runs beside the analysis, in a forked child
(`source.utf8_check_beside`): the answer is the in-process check's, whatever the bytes, and
anything that goes wrong with the child leaves the check to the process itself.

The forking cases run in a fresh interpreter: the test process may run threads (then nothing
forks, by design), and a child of it would copy them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import FORMATS
from vllm_log_lsp.core import source

pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="POSIX fork")

SCRIPT = """
import json, mmap, os, sys
from vllm_log_lsp.core import source

path, child = sys.argv[1], sys.argv[2]
source.FORK_THRESHOLD = 0
parent = os.getpid()
forks = []
fork = os.fork
os.fork = lambda: forks.append(1) or fork()
real = source.first_invalid_utf8

def check(data):
    if os.getpid() != parent:  # the child
        if child == "dies":
            os._exit(3)
        if child == "babbles":
            return -5  # (told as `-5`: no offset)
        if child == "killed":
            os.kill(os.getpid(), 9)
    return real(data)

source.first_invalid_utf8 = check
with open(path, "rb") as handle:
    view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
if child == "thread":
    import threading
    threading.Thread(target=lambda: __import__("time").sleep(0.5), daemon=True).start()
answer = source.utf8_check_beside(view)()
print(json.dumps({"answer": answer, "forks": len(forks), "plain": real(view[:])}))
"""


def beside(path: Path, child: str = "checks") -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), child], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


GOOD = "INFO 10-03 21:00:10 [loggers.py:123] a line … with 模型 ✓\n".encode()


@pytest.mark.parametrize(
    "data",
    [
        GOOD * 1000,
        GOOD * 500 + b"\xff" + GOOD * 500,
        GOOD * 999 + GOOD[:10] + b"\xe2\x80",  # a character cut at the end
        GOOD * 300 + b"\xc3" + "…".encode() + b"\xa9" + GOOD,
        b"\xed\xa0\x80" + GOOD,  # an encoded surrogate
        b"x" * ((1 << 20) - 1) + "é".encode() + b"\xc3",  # around a chunk's end
    ],
    ids=["valid", "bad-byte", "cut-at-end", "joined", "surrogate", "chunk-edge"],
)
def test_the_forked_check_answers_as_the_check_here(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(data)
    told = beside(path)
    assert told["forks"] == 1
    assert told["answer"] == told["plain"] == source.first_invalid_utf8(data)


@pytest.mark.parametrize("child", ["dies", "babbles", "killed"])
def test_a_child_that_fails_leaves_the_check_here(child: str, tmp_path: Path) -> None:
    path = tmp_path / "log"
    data = GOOD * 500 + b"\xff" + GOOD
    path.write_bytes(data)
    told = beside(path, child)
    assert told["forks"] == 1
    assert told["answer"] == len(GOOD) * 500


def test_no_fork_while_another_thread_runs(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(GOOD * 100 + b"\xff")
    told = beside(path, "thread")
    assert told["forks"] == 0
    assert told["answer"] == len(GOOD) * 100


def test_small_or_unmapped_data_is_checked_here(monkeypatch) -> None:
    forks: list[int] = []
    monkeypatch.setattr("os.fork", lambda: forks.append(1) or 0)
    assert source.utf8_check_beside(GOOD * 10 + b"\xff")() == len(GOOD) * 10
    assert forks == []


def test_check_of_a_large_file_reports_its_bad_byte_as_before(tmp_path: Path) -> None:
    """End to end: a file over the threshold, checked beside (`check` runs no other thread)."""
    lines = (source.FORK_THRESHOLD // len(GOOD)) + 10
    bad_line = lines // 2
    crash = (FORMATS / "tp2-worker-oom.log").read_bytes()
    path = tmp_path / "big.log"
    path.write_bytes(GOOD * bad_line + b"bad \xff byte\n" + GOOD * (lines - bad_line) + crash)
    done = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(path)],
        capture_output=True,
        text=True,
    )
    report = json.loads(done.stdout)["files"][0]
    assert report["warnings"] == [
        f"invalid UTF-8 (first seen on line {bad_line + 1}); undecodable bytes shown as U+FFFD"
    ]
    [incident] = report["incidents"]
    assert incident["root_cause"]["line"] == lines + 1 + 27
