"""`vllmLog.analyzeFile` opens files as `check` does (`core.source.open_log`): rotated gzip logs
and UTF-16 are read, a FIFO or binary data is an error response, never a hang or "healthy"."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from lsprotocol import types

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
