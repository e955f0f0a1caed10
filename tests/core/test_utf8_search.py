"""A large file's UTF-8 check told by rg (`early.utf8_command`, `source.first_invalid_utf8_in_rows`):
rg decodes the file as UTF-8 and lists the lines holding U+FFFD, among them every line holding an
invalid byte; only those lines are decoded here. The answer is the whole decode's, whatever the
bytes (invalid sequences of every kind, U+FFFD written by the log itself, a byte-order mark, NUL
bytes, `\r\n`, more listed lines than rg reports, a file grown since it was read), and a search
that fails or lists rows that do not fit leaves the check to the whole decode.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from support import FORMATS, first_bad_utf8_byte, fresh_early_search, unavailable
from vllm_log_lsp.core import datacache, early, prefilter, source

BOM = b"\xef\xbb\xbf"
GOOD = "INFO 10-03 21:00:10 [loggers.py:123] a line … with 模型 ✓\n".encode()
#: Pieces of a log line: valid text of every width, invalid sequences of every kind (a stray
#: continuation, a cut character, an encoded surrogate, past U+10FFFF, an overlong form), the
#: log's own U+FFFD, line breaks, NUL, a byte-order mark inside the text.
PIECES = [
    b"INFO a line\n",
    "… 模型 ✓ 🚀\n".encode(),
    b"\xff",
    b"\xc3",
    b"\xe2\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
    b"\x80",
    "\ufffd".encode(),
    "\ufffd\n".encode(),
    b"\r\n",
    b"\x00",
    b"\xef\xbb\xbf",
    b"\n",
    b"x" * 70,
]


@pytest.fixture(autouse=True)
def _rg(monkeypatch: pytest.MonkeyPatch) -> None:
    if prefilter.search_tool(("rg",)) is None or not hasattr(os, "memfd_create"):
        unavailable("rg and memfd_create (Linux) are needed", "bash scripts/install/05-system.sh")
    monkeypatch.delenv("VLLM_LOG_LSP_NO_GREP", raising=False)


@pytest.fixture
def whole_decodes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int | None]]:
    """The (start, stop) of each decode the check asks for: (0, None) is a whole decode."""
    asked: list[tuple[int, int | None]] = []
    real = source.first_invalid_utf8

    def recorded(data, start=0, stop=None):
        asked.append((start, stop))
        return real(data, start, stop)

    monkeypatch.setattr(source, "first_invalid_utf8", recorded)
    return asked


def told_by_rg(path: Path, data: bytes | None = None) -> int | None:
    waiting = early.start_utf8(str(path))
    assert waiting is not None
    return source.first_invalid_utf8_in_rows(path.read_bytes() if data is None else data, waiting())


@pytest.mark.parametrize("seed", range(6))
def test_the_answer_is_the_whole_decode_for_any_mix(seed: int, tmp_path: Path, whole_decodes) -> None:
    rnd = random.Random(seed)
    path = tmp_path / "log"
    for _ in range(60):
        data = b"".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 60)))
        if rnd.random() < 0.25:
            data = BOM + data  # (rg counts offsets without it)
        path.write_bytes(data)
        whole_decodes.clear()
        assert told_by_rg(path) == first_bad_utf8_byte(data)
        # Told by rg: no whole decode, however the bytes are mixed (only listed lines and the
        # last one, which is the whole of a text of one line).
        assert (0, None) not in whole_decodes or b"\n" not in data


def test_only_the_listed_lines_are_decoded(tmp_path: Path, whole_decodes) -> None:
    lines = [GOOD] * 2000
    lines[700] = b"the log's own \xef\xbf\xbd, valid\n"
    lines[1500] = b"a bad \xff byte\n"
    data = b"".join(lines)
    path = tmp_path / "log"
    path.write_bytes(data)
    own, bad = len(GOOD) * 700, len(b"".join(lines[:1500]))
    assert told_by_rg(path) == bad + len(b"a bad ") == first_bad_utf8_byte(data)
    assert [start for start, _ in whole_decodes] == [own, bad]


@pytest.mark.parametrize("bad_after", [0, 2, 3, 4, 10])
def test_more_listed_lines_than_rg_reports(bad_after: int, tmp_path: Path, monkeypatch) -> None:
    """Past `UTF8_ROWS` listed lines, the rest of the file is decoded here."""
    monkeypatch.setattr(early, "UTF8_ROWS", 3)
    own = "a line with the log's own \ufffd\n".encode()
    data = own * 10
    at = len(own) * bad_after
    data = data[:at] + b"cut \xe2\x80 here\n" + data[at:]
    path = tmp_path / "log"
    path.write_bytes(data)
    assert told_by_rg(path) == first_bad_utf8_byte(data) == at + 4
    path.write_bytes(own * 10)
    assert told_by_rg(path) is None


def test_a_file_grown_since_it_was_read(tmp_path: Path) -> None:
    """rg reads the file as it is now: the bytes read before may end inside a character the
    file now completes (invalid in what was read), or miss an invalid line written since."""
    path = tmp_path / "log"
    whole = GOOD * 100 + "模".encode() + b"\n" + b"late \xff\n"
    path.write_bytes(whole)
    read = whole[: len(GOOD) * 100 + 2]
    assert told_by_rg(path, read) == first_bad_utf8_byte(read) == len(GOOD) * 100
    read = whole[: len(GOOD) * 100]
    assert told_by_rg(path, read) is None


@pytest.mark.parametrize(
    "rows",
    [None, b"garbage\n", b"1:x:y\n", b"1:5:\n", b"2:%d:\n1:0:\n" % len(GOOD)],
    ids=["failed", "garbage", "no-offset", "not-a-line-start", "out-of-order"],
)
def test_rows_that_do_not_fit_leave_the_check_to_the_whole_decode(rows: bytes | None, whole_decodes) -> None:
    data = GOOD * 10 + b"\xff\n" + GOOD
    assert source.first_invalid_utf8_in_rows(data, rows) == len(GOOD) * 10
    assert (0, None) in whole_decodes


def test_rows_past_the_end_are_lines_written_since() -> None:
    """A row past what was read names a line written later: what was read is decoded to its end."""
    data = GOOD * 10 + b"\xe2"
    assert source.first_invalid_utf8_in_rows(data, b"12:99999:\n") == len(GOOD) * 10


def test_the_search_started_early_is_taken_for_the_same_file(tmp_path: Path, monkeypatch) -> None:
    fresh_early_search(monkeypatch, tmp_path / "cache")  # (an empty cache: no literal groups)
    path = tmp_path / "log"
    path.write_bytes(GOOD * 50 + b"\xff\n")
    assert not early.start(["check", str(path)])  # (no cached groups: only the UTF-8 search)
    assert early._utf8_search is not None
    assert early.take_utf8(str(tmp_path / "other")) is None  # another file: stopped
    assert early._utf8_search is None

    early.start(["check", str(path)])
    waiting = early.take_utf8(str(path))
    assert waiting is not None
    assert source.first_invalid_utf8_in_rows(path.read_bytes(), waiting()) == len(GOOD) * 50

    early.start(["check", str(path)])
    os.utime(path, ns=(1, 1))  # (changed since the search started)
    assert early.take_utf8(str(path)) is None

    early.start(["check", str(path)])
    pid = early._utf8_search.processes[0].pid
    early.discard()
    assert early._utf8_search is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # (reaped)
    datacache.forget()


def test_without_rg_nothing_starts(monkeypatch) -> None:
    monkeypatch.setenv("VLLM_LOG_LSP_NO_GREP", "1")
    assert early.start_utf8(str(FORMATS / "tp2-worker-oom.log")) is None


def test_check_of_a_large_file_reports_its_bad_byte_told_by_rg(tmp_path: Path) -> None:
    """End to end, in a fresh process where the search starts before the imports: the same
    warning as the whole decode; with the tools disabled, the same warning again."""
    lines = (early.TOOL_THRESHOLD // len(GOOD)) + 10
    crash = (FORMATS / "tp2-worker-oom.log").read_bytes()
    path = tmp_path / "big.log"
    own = "the log's own \ufffd\n".encode()
    path.write_bytes(
        GOOD * 10 + own + GOOD * (lines // 2) + b"bad \xc3( byte\n" + GOOD * (lines // 2) + crash
    )
    warnings = []
    for disabled in ("", "1"):
        done = subprocess.run(
            [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "VLLM_LOG_LSP_NO_GREP": disabled},
        )
        warnings.append(json.loads(done.stdout)["files"][0]["warnings"])
    line = 10 + 1 + lines // 2 + 1
    assert warnings == [[f"invalid UTF-8 (first seen on line {line}); undecodable bytes shown as U+FFFD"]] * 2


def test_the_bytes_read_from_a_file_are_checked_by_rg_too(tmp_path: Path, monkeypatch) -> None:
    """The server copies a large file's bytes (`analyzeFile`): their file is searched alike."""
    monkeypatch.setattr(early, "TOOL_THRESHOLD", 0)
    started: list[str] = []
    start_utf8 = early.start_utf8
    monkeypatch.setattr(early, "start_utf8", lambda path: started.append(path) or start_utf8(path))
    path = tmp_path / "log"
    data = GOOD * 50 + b"\xff\n"
    path.write_bytes(data)
    assert source.utf8_check_beside(data, str(path))() == len(GOOD) * 50
    assert started == [str(path)]
