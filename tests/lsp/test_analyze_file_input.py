"""`vllmLog.analyzeFile` opens files as `check` does (`core.source.open_log`): rotated gzip logs
and UTF-16 are read, a FIFO or binary data is an error response, never a hang or "healthy"; and it
analyses them as `check` does (the bytes, the pre-filter reading the file, lazy decoding)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from lsprotocol import types

from support import run_cli

from .conftest import fixture_path

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def analyze_file(client, path: Path):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="vllmLog.analyzeFile", arguments=[str(path)])
    )


async def test_compressed_and_utf16_logs_are_analysed(client, tmp_path: Path):
    data = fixture_path("crash-038.log").read_bytes()
    plain = tmp_path / "plain.log"
    plain.write_bytes(data)
    expected = [f["line"] for f in (await analyze_file(client, plain))["findings"]]
    assert expected
    rotated = tmp_path / "server.log.1.gz"
    rotated.write_bytes(gzip.compress(data))
    powershell = tmp_path / "powershell.log"
    powershell.write_bytes(data.decode("utf-8").encode("utf-16"))
    for path in (rotated, powershell):
        summary = await analyze_file(client, path)
        assert summary["healthy"] is False
        assert [f["line"] for f in summary["findings"]] == expected


async def test_special_and_binary_files_are_error_responses(client, tmp_path: Path):
    fifo = tmp_path / "serve.log"
    os.mkfifo(fifo)
    binary = tmp_path / "core.bin"
    binary.write_bytes(os.urandom(20_000))
    for path, reason in ((fifo, "a FIFO"), (binary, "binary data")):
        with pytest.raises(Exception, match=reason):
            await analyze_file(client, path)


async def test_analyze_file_reads_and_analyses_as_check_does(client, tmp_path: Path):
    """The same file gives the same deaths and the same input warnings (invalid UTF-8 is found in
    the file's bytes, as `check` finds it), also past the size from which `open_log` maps files."""
    base = fixture_path("crash-038.log").read_bytes()
    variants = {
        "invalid-utf8.log": base.replace(b"INFO", b"INFO \xff\xfe", 1),
        "crlf.log": base.replace(b"\n", b"\r\n"),
        "bom.log": b"\xef\xbb\xbf" + base,
        "mapped.log": base + b"INFO 05-02 13:40:00 [loggers.py:1] Engine 000: idle\n" * 40_000,
    }
    for name, data in variants.items():
        path = tmp_path / name
        path.write_bytes(data)
        summary = await analyze_file(client, path)
        [checked] = json.loads(run_cli("check", "--format", "json", str(path)).stdout)["files"]
        assert summary["warnings"] == checked["warnings"], name
        deaths = [(i["root_cause"]["line"], i["root_cause"]["cause"]) for i in checked["incidents"]]
        assert [(f["line"], f["ruleId"]) for f in summary["findings"]] == deaths, name
        assert deaths, name
    assert any("UTF-8" in w for w in (await analyze_file(client, tmp_path / "invalid-utf8.log"))["warnings"])
