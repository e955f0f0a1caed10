"""Malformed frames, bad params and lifecycle abuse over real stdio, with a raw client.

pytest-lsp can only send well-formed messages; these tests write bytes. Every request must get an
answer (the JSON-RPC and LSP error codes), a broken frame must cost only itself, and the process must
end with the code the specification gives, never by a MemoryError.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any

import pytest

from .conftest import SERVER_COMMAND

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"processId": None, "rootUri": None, "capabilities": {}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
SHUTDOWN = {"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}
EXIT = {"jsonrpc": "2.0", "method": "exit"}


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def raw_frame(body: bytes, length: int | None = None) -> bytes:
    """A frame with `body` as is, and `length` (default: the true one) as its Content-Length."""
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def hover(msg_id: Any, params: Any = ...) -> dict:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover"}
    if params is ...:
        params = {"textDocument": {"uri": "file:///nowhere.log"}, "position": {"line": 0, "character": 0}}
    message["params"] = params
    return message


class RawClient:
    """The server as a subprocess; frames read from its stdout by a thread."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.frames: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []
        self.errors = bytearray()  # stderr, drained so that the server never blocks on a full pipe
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):
            self.errors += chunk

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = stdout.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            self.frames.put(json.loads(stdout.read(length or 0)))

    def send(self, *messages: Any) -> None:
        assert self.proc.stdin is not None
        for message in messages:
            self.proc.stdin.write(message if isinstance(message, bytes) else frame(message))
        self.proc.stdin.flush()

    def answer(self, msg_id: Any, timeout: float = 20) -> dict:
        """The response to request `msg_id` (notifications from the server are kept in `seen`)."""
        for seen in self.seen:
            if seen.get("id") == msg_id and "method" not in seen:
                return seen
        while True:
            message = self.frames.get(timeout=timeout)
            self.seen.append(message)
            if message.get("id") == msg_id and "method" not in message:
                return message

    def exit_code(self, timeout: float = 20) -> int:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        return self.errors.decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def raw():
    clients: list[RawClient] = []

    def start() -> RawClient:
        clients.append(RawClient())
        return clients[-1]

    yield start
    for client in clients:
        client.kill()


def error_code(answer: dict) -> int | None:
    return (answer.get("error") or {}).get("code")


def initialized(raw) -> RawClient:
    client = raw()
    client.send(INITIALIZE, INITIALIZED)
    assert "capabilities" in client.answer("init")["result"]
    return client


# -- framing -----------------------------------------------------------------------------------------
def test_a_huge_content_length_ends_the_server_with_a_message_not_a_memory_error(raw):
    client = raw()
    client.send(b"Content-Length: 1000000000000\r\n\r\n{}")
    assert client.exit_code() == 1
    err = client.stderr()
    assert "over the limit" in err and "MemoryError" not in err


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(raw_frame(json.dumps(hover(1)).encode(), 5), id="short-length"),
        pytest.param(
            b"Content-Type: application/json\r\n\r\n" + json.dumps(hover(1)).encode(), id="no-length"
        ),
        pytest.param(json.dumps(hover(1)).encode() + b"\r\n", id="no-header"),
        pytest.param(b"X" * 100_000 + b"\r\n", id="long-garbage-line"),
        pytest.param(raw_frame(b"not json at all"), id="not-json"),
    ],
)
def test_a_broken_frame_costs_only_itself(raw, broken):
    client = raw()
    client.send(broken, INITIALIZE)
    assert "capabilities" in client.answer("init")["result"]
    client.send(INITIALIZED, hover(2))
    assert client.answer(2)["result"] is None
    client.send(SHUTDOWN, EXIT)
    assert client.exit_code() == 0


def test_a_body_that_is_not_json_gets_a_parse_error(raw):
    client = initialized(raw)
    client.send(raw_frame(b"{not json}"))
    assert error_code(client.answer(None)) == -32700


# -- params and envelopes ----------------------------------------------------------------------------
BAD_PARAMS = [
    pytest.param(None, id="null"),
    pytest.param({}, id="empty"),
    pytest.param(
        {"textDocument": {"uri": "file:///a.log"}, "position": {"line": -1, "character": 0}}, id="negative"
    ),
    pytest.param(
        {"textDocument": {"uri": "file:///a.log"}, "position": {"line": 2**40, "character": 0}}, id="huge"
    ),
    pytest.param({"textDocument": "file:///a.log", "position": [0, 0]}, id="wrong-types"),
    pytest.param([1, 2], id="array"),
]


def test_every_request_with_invalid_params_is_answered_with_invalid_params(raw):
    client = initialized(raw)
    for i, param in enumerate(BAD_PARAMS):
        client.send(hover(100 + i, param.values[0]))
    for i, param in enumerate(BAD_PARAMS):
        assert error_code(client.answer(100 + i)) == -32602, param.id
    # Still serving.
    client.send(hover("after"))
    assert client.answer("after")["result"] is None


NOT_REQUESTS = [
    ({"jsonrpc": "1.0", "id": 7, "method": "textDocument/hover", "params": {}}, 7),
    ({"id": 8, "method": "textDocument/hover", "params": {}}, 8),
    ({"jsonrpc": "2.0", "id": 9, "method": 42}, 9),
    ({"jsonrpc": "2.0", "id": 10, "method": "x", "params": "str"}, 10),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}, None),
    ([1, 2, 3], None),
    ({"jsonrpc": "2.0", "id": 11}, 11),
]


def test_what_is_not_a_json_rpc_request_gets_invalid_request(raw):
    client = initialized(raw)
    for message, expected_id in NOT_REQUESTS:
        client.send(message)
        assert error_code(client.answer(expected_id)) == -32600, message
        client.seen.clear()  # two of them are answered with id null


# -- lifecycle ---------------------------------------------------------------------------------------
def test_requests_before_initialize_are_refused_and_initialize_still_works(raw):
    client = raw()
    client.send(hover(1), {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    assert error_code(client.answer(1)) == -32002
    assert error_code(client.answer(2)) == -32002  # shutdown before initialize is refused too
    client.send(INITIALIZE)
    assert "capabilities" in client.answer("init")["result"]
    client.send({**INITIALIZE, "id": "again"})
    assert error_code(client.answer("again")) == -32600  # only once


def test_requests_after_shutdown_are_refused_and_exit_is_0(raw):
    client = initialized(raw)
    client.send(SHUTDOWN)
    assert client.answer("bye")["result"] is None
    client.send(hover(3))
    assert error_code(client.answer(3)) == -32600
    client.send(EXIT)
    assert client.exit_code() == 0


def test_exit_without_shutdown_is_exit_code_1(raw):
    client = initialized(raw)
    client.send(EXIT)
    assert client.exit_code() == 1


def test_many_abuses_on_one_server_then_real_work(raw):
    client = initialized(raw)
    for i in range(30):
        client.send(hover(f"bad{i}", BAD_PARAMS[i % len(BAD_PARAMS)].values[0]))
        client.send(raw_frame(json.dumps(hover(f"cut{i}")).encode(), 3))
    for i in range(30):
        assert error_code(client.answer(f"bad{i}")) == -32602
    text = "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] RuntimeError: CUDA error: out of memory\n"
    client.send(
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {"uri": "file:///a.log", "languageId": "vllm-log", "version": 1, "text": text}
            },
        },
        hover("real", {"textDocument": {"uri": "file:///a.log"}, "position": {"line": 0, "character": 60}}),
    )
    assert "result" in client.answer("real")
    client.send(SHUTDOWN, EXIT)
    assert client.exit_code() == 0
