"""`check` answers honestly: it reads what a user really has (compressed, UTF-16, rotated logs),
refuses what is not a log (binary, FIFOs, devices, directories) with exit 2 and a reason, and
its exit status survives pipes, odd terminals and its own bugs."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import FORMATS, HEALTHY, first_bad_utf8_byte, run_cli
from vllm_log_lsp import batch, cli
from vllm_log_lsp.core.source import LogReadError, first_invalid_utf8, open_log

OOM = FORMATS / "tp2-worker-oom.log"
OOM_HEAD = f"{OOM}:27: oom-serving"


run = run_cli


def report_of(path: Path | str) -> str:
    """The text report of one file, its name replaced so reports of different files compare."""
    result = run("check", str(path))
    assert result.returncode == 1, result.stderr
    return result.stdout.replace(str(path), "LOG")


# -- what is read ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "suffix, compress",
    [("gz", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress)],
)
def test_compressed_logs_are_read_as_the_plain_log(tmp_path: Path, suffix, compress) -> None:
    plain = report_of(OOM)
    packed = tmp_path / f"server.log.1.{suffix}"
    packed.write_bytes(compress(OOM.read_bytes()))
    assert report_of(packed) == plain
    # Named anything, and on standard input too: the bytes say what it is.
    renamed = tmp_path / "server.log"
    renamed.write_bytes(packed.read_bytes())
    assert report_of(renamed) == plain
    piped = run("check", "-", stdin=packed.read_bytes())
    assert piped.stdout.replace("<stdin>", "LOG") == plain


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_unicode_with_a_byte_order_mark_is_decoded(tmp_path: Path, encoding: str) -> None:
    text = OOM.read_text(encoding="utf-8")
    data = text.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):  # PowerShell's `>` writes the BOM itself
        data = "\ufeff".encode(encoding) + data
    path = tmp_path / "powershell.log"
    path.write_bytes(data)
    assert report_of(path) == report_of(OOM)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("size", ["small", "mapped"])
def test_utf16_without_a_byte_order_mark_is_decoded(tmp_path: Path, encoding: str, size: str) -> None:
    """A log written as UTF-16 with no byte-order mark (iconv, a Windows tool) was read as text
    with a NUL every second byte: "no engine death", a healthy answer to input it never read.
    Every second byte of mostly-ASCII UTF-16 is NUL, on one side only: it is decoded; as a
    file small or large enough to be mapped (which is read instead), and on standard input."""
    text = OOM.read_text(encoding="utf-8")
    if size == "mapped":  # (the same death, repeated after a healthy log's lines)
        text = (HEALTHY / sorted(p.name for p in HEALTHY.glob("*.log"))[0]).read_text(
            encoding="utf-8"
        ) * 40 + text
    data = text.encode(encoding)
    path = tmp_path / "windows.log"
    path.write_bytes(data)
    plain = tmp_path / "plain.log"
    plain.write_text(text, encoding="utf-8")
    assert report_of(path) == report_of(plain)
    piped = run("check", "-", stdin=data)
    assert piped.stdout.replace("<stdin>", "LOG") == report_of(plain)


def test_nul_bytes_on_both_sides_are_not_utf16(tmp_path: Path) -> None:
    """A NUL hole (a truncated log) or binary data with NULs everywhere is not taken for UTF-16."""
    from vllm_log_lsp.core.source import _utf16_without_bom

    assert _utf16_without_bom(bytes(512)) is None
    assert _utf16_without_bom(OOM.read_bytes()[:512]) is None
    assert _utf16_without_bom(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 2) is None
    assert _utf16_without_bom("INFO 10-03 started".encode("utf-16-le")) == "utf-16-le"
    assert _utf16_without_bom("INFO 10-03 started".encode("utf-16-be")) == "utf-16-be"


def test_a_log_truncated_in_place_is_read_after_its_nul_bytes(tmp_path: Path) -> None:
    """logrotate's copytruncate leaves a hole of NUL bytes, larger than any sniffing window."""
    path = tmp_path / "rotated.log"
    path.write_bytes(bytes(300_000) + OOM.read_bytes())
    result = run("check", str(path))
    assert result.returncode == 1
    assert "warning: the file contains NUL bytes" in result.stdout
    assert ": oom-serving — " in result.stdout


# -- what is refused, with exit 2 ------------------------------------------------------------------
def test_binary_and_broken_input_is_an_error_never_healthy(tmp_path: Path) -> None:
    cases = {
        "random.bin": os.urandom(50_000),
        "nuls.bin": bytes(10_000),
        "elf.bin": b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40,
        "cut.log.gz": gzip.compress(OOM.read_bytes())[:500],
        "not-really.gz": b"\x1f\x8b" + b"plain text after a gzip magic\n" * 10,
        "bomb.gz": gzip.compress(bytes(20 << 20)),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name in cases]
    result = run("check", *paths, str(OOM))
    assert result.returncode == 2
    for path in paths:
        assert f"vllm-log-lsp: error: cannot read {path}" in result.stderr
    assert OOM_HEAD in result.stdout  # the other file is still checked
    assert "no engine death" not in result.stdout
    report = json.loads(run("check", "--format", "json", *paths).stdout)
    assert all(entry["error"] and not entry["incidents"] for entry in report["files"])


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "serve.log"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading the usual way blocks forever
    empty = tmp_path / "empty"
    empty.mkdir()
    specials = [str(fifo), "/dev/zero", "/dev/urandom", str(empty)]
    result = run("check", *specials, str(OOM), timeout=30)
    assert result.returncode == 2
    assert f"cannot read {fifo}: a FIFO (named pipe), not a regular file" in result.stderr
    assert "cannot read /dev/zero: a device, not a regular file" in result.stderr
    assert "cannot read /dev/urandom: a device, not a regular file" in result.stderr
    assert f"no log files in {empty}" in result.stderr  # a directory is searched for logs
    assert OOM_HEAD in result.stdout
    assert "Traceback" not in result.stderr
    # The rule file and the launch script are opened the same way.
    rules = run("--rules", str(fifo), "check", str(OOM), timeout=30)
    assert rules.returncode == 2 and f"rule file: cannot read {fifo}: a FIFO" in rules.stderr
    fix = run("check", str(OOM), "--fix", str(fifo), timeout=30)
    assert fix.returncode == 2 and f"cannot read {fifo}: a FIFO" in fix.stderr
    devices = run("check", str(OOM), "--fix", "/dev/zero", timeout=30)
    assert devices.returncode == 2 and "cannot read /dev/zero: a device" in devices.stderr


def test_endless_standard_input_is_refused_at_its_first_block() -> None:
    for device in ("/dev/zero", "/dev/urandom"):
        with open(device, "rb") as endless:
            result = subprocess.run(
                [sys.executable, "-m", "vllm_log_lsp", "check", "-"],
                stdin=endless,
                capture_output=True,
                timeout=30,
            )
        assert result.returncode == 2
        assert b"cannot read <stdin>: " in result.stderr


def test_reads_are_bounded(tmp_path: Path) -> None:
    """A stream or a decompressed file longer than the bound is an error, not a MemoryError."""
    path = tmp_path / "big.log.gz"
    path.write_bytes(gzip.compress(OOM.read_bytes() * 20))
    assert open_log(str(path), max_stream_bytes=len(OOM.read_bytes()) * 21).data.count(b"\n") > 100
    with pytest.raises(LogReadError, match="more than"):
        open_log(str(path), max_stream_bytes=len(OOM.read_bytes()) * 2)


def test_a_broken_rule_file_is_an_input_error(tmp_path: Path) -> None:
    broken = tmp_path / "mine.toml"
    broken.write_text("[[rule]\nid = 'x'\n", encoding="utf-8")  # not TOML
    result = run("check", "--rules", str(broken), str(HEALTHY / "001.log"))
    assert result.returncode == 2 and result.stdout == ""
    assert f"{broken}" in result.stderr


def test_an_internal_error_has_its_own_status_and_one_line(monkeypatch, capsys) -> None:
    def broken_analysis(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(batch.Analyzer, "analyze", broken_analysis)
    assert cli.main(["check", str(OOM)]) == cli.EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ZeroDivisionError: a bug" in err
    assert cli.main(["--debug", "check", str(OOM)]) == 3
    assert "Traceback" in capsys.readouterr().err


# -- invalid UTF-8 (item 9) ------------------------------------------------------------------------
def test_invalid_utf8_is_reported_wherever_it_is(tmp_path: Path) -> None:
    """Also on a line the analysis never reads (a routine INFO line), in small and mapped files."""
    lines = OOM.read_bytes().split(b"\n")
    assert b"INFO" in lines[3]
    lines[3] = lines[3].replace(b"INFO", b"INFO \xe9t\xe9", 1)  # Latin-1 bytes
    filler = b"(APIServer pid=100) INFO 10-03 21:22:40 [loggers.py:123] Engine 000: Avg prompt throughput\n"
    for name, data in (("small.log", b"\n".join(lines)), ("big.log", filler * 15000 + b"\n".join(lines))):
        path = tmp_path / name
        path.write_bytes(data)
        result = run("check", str(path))
        assert result.returncode == 1
        line = 4 if name == "small.log" else 15004
        assert f"warning: invalid UTF-8 (first seen on line {line})" in result.stdout


def test_first_invalid_utf8_finds_the_first_bad_byte() -> None:
    good = "ascii and ünïcödé — ok\n".encode() * 1000
    assert first_invalid_utf8(good) is None
    assert first_invalid_utf8(good + b"\xff") == len(good)
    assert first_invalid_utf8(b"x" * ((1 << 23) - 1) + "é".encode() + b"\xc3") == (1 << 23) + 1
    assert first_invalid_utf8(b"") is None


@pytest.mark.parametrize("where", ["before", "across", "after"])
@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80"])
def test_first_invalid_utf8_equals_a_whole_decode_wherever_chunks_end(tmp_path: Path, where, bad) -> None:
    """ASCII chunks are skipped, others decoded: a character or a bad byte next to, or across,
    a chunk boundary reads as decoding the whole file does (bytes and a mapped file alike)."""
    import mmap

    from vllm_log_lsp.core import source

    boundary = source._UTF8_CHUNK
    shift = {"before": -3, "across": -1, "after": 2}[where]
    for head in (b"x" * (boundary + shift), b"x" * (boundary + shift - 10) + "é—".encode() + b"y" * 5):
        for data in (head + "€".encode() + b"z" * 10, head + bad + b"z" * 10, head + "€".encode() + bad):
            path = tmp_path / "log"
            path.write_bytes(data)
            with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                assert first_invalid_utf8(mapped) == first_invalid_utf8(data) == first_bad_utf8_byte(data)


# -- the output side (item 8) ----------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["cp1252", "ascii", "latin-1"])
def test_a_terminal_that_cannot_show_unicode_gets_a_report(encoding: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", str(OOM)],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": encoding},
    )
    assert result.returncode == 1, result.stderr
    text = result.stdout.decode(encoding)
    assert f"{OOM}:27: oom-serving " in text
    assert b"Traceback" not in result.stderr
    if encoding == "ascii":
        assert f"{OOM}:27: oom-serving - CUDA OOM" in text  # an em dash spelled in ASCII


def test_a_closed_pipe_keeps_the_exit_status() -> None:
    """`check … | head -1`: the death found after the reader left still makes the status 1."""
    healthy = [str(HEALTHY / "001.log")] * 400  # enough output to fill the pipe
    process = subprocess.Popen(
        [sys.executable, "-m", "vllm_log_lsp", "check", *healthy, str(OOM)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 1
    assert first.endswith(b": no engine death found\n")
    assert stderr == b""  # no BrokenPipeError, no traceback


def test_serve_rejects_a_bad_address_as_a_usage_error() -> None:
    for bad in ("nonsense", "localhost:", "localhost:99999", "host:-1"):
        result = run("serve", "--tcp", bad)
        assert result.returncode == 2
        assert "is not HOST:PORT" in result.stderr and "Traceback" not in result.stderr


def connect_when_listening(port: int) -> socket.socket:
    """The server binds just after printing its address: retry until it accepts."""
    for _ in range(300):
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=30)
        except ConnectionRefusedError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def test_serve_on_port_zero_picks_a_free_port_and_prints_it() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "vllm_log_lsp", "serve", "--tcp", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("listening on 127.0.0.1:")
        port = int(line.rsplit(":", 1)[1])
        assert port > 0
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
        ).encode()
        with connect_when_listening(port) as conn:
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            reply = b""
            while b'"capabilities"' not in reply:
                chunk = conn.recv(65536)
                assert chunk, reply
                reply += chunk
        assert b'"id": 1' in reply or b'"id":1' in reply
    finally:
        process.kill()
        process.wait(30)


def test_no_stdout_keeps_the_status_and_a_full_disk_is_an_error() -> None:
    """`check LOG >&-` answers by its status alone; a report that cannot be written is exit 2."""
    closed = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", str(OOM)],
        stderr=subprocess.PIPE,
        timeout=60,
        preexec_fn=lambda: os.close(1),  # the child starts with no stdout at all
    )
    assert closed.returncode == 1 and closed.stderr == b""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "vllm_log_lsp", "check", str(OOM)],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert result.returncode == 2
    assert b"vllm-log-lsp: error: cannot write the report: No space left on device" in result.stderr


# Bytes a log's chunk is made of: ASCII, whole characters (repeated: what counting proves valid),
# and the broken pieces of characters (cut, stray continuation, overlong, surrogate, too high).
_UTF8_PIECES = [
    b"a",
    b" log line\n",
    "…".encode(),
    "é".encode(),
    "è".encode(),
    "😀".encode(),
    "模型".encode(),
    b"\xe2\x80",
    b"\x80",
    b"\xa6",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xff",
]


@given(pieces=st.lists(st.sampled_from(_UTF8_PIECES), max_size=60), chunk=st.integers(1, 24))
@settings(max_examples=400, deadline=None)
def test_first_invalid_utf8_equals_a_whole_decode_for_any_mix(pieces: list[bytes], chunk: int) -> None:
    """Chunk by chunk, the first bad byte is the whole decode's: whatever the characters, the bad
    bytes and where the chunks end."""
    from vllm_log_lsp.core import source

    data = b"".join(pieces)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(source, "_UTF8_CHUNK", chunk)
        assert first_invalid_utf8(data) == first_bad_utf8_byte(data)


def test_bytes_around_a_valid_character_are_not_read_as_one() -> None:
    # `\xc3` + `…` + `\xa9` is not `é`: the first bad byte is the `\xc3`, whatever the chunks.
    from vllm_log_lsp.core import source

    line = "request: 'Summarise…' é 模型 ✓\n".encode()
    broken = line + b"\xc3" + "…".encode() + b"\xa9" + line
    for chunk in (1, 5, 1024, 1 << 20):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(source, "_UTF8_CHUNK", chunk)
            assert first_invalid_utf8(line * 10 + broken) == len(line) * 11
            assert first_invalid_utf8(line * 1000) is None


def test_an_index_checks_its_bytes_once_and_an_editor_text_never() -> None:
    from vllm_log_lsp.core.text import LogIndex

    good = "ok …\n".encode() * 10
    data = good + b"\xe2\x80 cut\n"
    index = LogIndex(data)
    assert index.first_invalid_utf8() == first_invalid_utf8(data) == len(good)
    assert index.first_invalid_utf8() == len(good)
    assert LogIndex(good).first_invalid_utf8() is None
    assert LogIndex(data.decode("utf-8", "replace")).first_invalid_utf8() is None


def test_a_damaged_builtin_rule_file_is_an_internal_error_not_a_quiet_answer(monkeypatch, capsys) -> None:
    """A damaged install: the check that reaches the file says which and how (exit 3), never
    answers without its rules."""
    from vllm_log_lsp.core import catalog as catalog_mod
    from vllm_log_lsp.core.datacache import package_text

    files = [
        (where, (lambda w=where: package_text(w)[:-40]) if where.startswith("catalog/10-") else reader)
        for where, reader in catalog_mod._builtin_files()
    ]
    monkeypatch.setattr(catalog_mod, "_BUILTIN", catalog_mod.build_catalog(files, []))
    assert cli.main(["check", str(OOM)]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "built-in rule file catalog/10-memory.toml" in err and "reinstall vllm-log-lsp" in err
