"""The stdio transport: bounded frames, resynchronisation, and the JSON-RPC and LSP rules for what
may be sent when.

pygls's own loop trusts the client: `Content-Length: 1000000000000` allocates a terabyte
(MemoryError, the server dies); a frame with a short or missing length leaves the stream out of step
so that nothing after it is answered; a request whose params do not fit its type is logged and never
answered; any request is served before `initialize` and none is answered after `shutdown`. Here:

- header lines are at most `MAX_HEADER_LINE` bytes and a body at most `MAX_BODY_BYTES`, read in
  chunks; a larger body ends the server with a log message that says why (a stream cannot be
  resynchronised after a length it will never deliver);
- `Content-Length` is looked for anywhere in a header line, so a body that was cut short or sent
  without a length costs that message only: the next frame's header is found again;
- every request gets an answer: -32700 for a body that is not JSON, -32600 for what is not a
  JSON-RPC 2.0 request, -32002 before `initialize`, -32600 after `shutdown`, -32602 for params that
  do not fit the method;
- `exit` ends the process with 0 after `shutdown` and 1 without it (the LSP specification).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

log = logging.getLogger("vllm_log_lsp.framing")

MAX_HEADER_LINE = 8 * 1024
#: A 200 MB log (the default `maxFileSizeMB`) opened in the editor, JSON-escaped, fits.
MAX_BODY_BYTES = 1 << 30
_CHUNK = 1 << 20
_CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)", re.IGNORECASE)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002


class FrameTooLarge(Exception):
    """A frame the server will not read (the stream cannot be trusted after it)."""


class FrameReader:
    """Bodies of LSP frames from a byte stream (blocking; run it in a thread)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.skipped = 0  # frames lost to a missing or wrong Content-Length (for tests and logs)

    def _header_line(self) -> bytes | None:
        """One header line, at most MAX_HEADER_LINE bytes kept (the rest of a longer one is dropped)."""
        line = self.stream.readline(MAX_HEADER_LINE)
        if not line:
            return None
        if not line.endswith(b"\n"):
            tail = line
            while tail and not tail.endswith(b"\n"):  # discard the rest, bounded memory
                tail = self.stream.readline(MAX_HEADER_LINE)
            # A length at the very end of the over-long line (a body glued to a header) still counts.
            line = line + tail[-MAX_HEADER_LINE:]
        return line

    def next_body(self) -> bytes | None:
        """The next frame's body; None at the end of the stream. Raises FrameTooLarge."""
        length: int | None = None
        junk = False
        while True:
            line = self._header_line()
            if line is None:
                return None
            # The last one: anything before it belongs to a broken frame.
            found = next(reversed(list(_CONTENT_LENGTH.finditer(line))), None)
            if found is not None:
                if junk or found.start() > 0:
                    self._lost("a frame without a usable Content-Length")
                length, junk = int(found.group(1)), False
                continue
            if line.strip():
                if length is None:
                    junk = True  # a body without a header, or the rest of a body cut short
                continue  # another header (Content-Type), kept as is
            if length is None:
                junk = True  # a blank line without a length before it: wait for the next header
                continue
            if length > MAX_BODY_BYTES:
                raise FrameTooLarge(
                    f"a message of {length} bytes (Content-Length) is over the limit of "
                    f"{MAX_BODY_BYTES} bytes; the stream cannot be followed after it"
                )
            return self._body(length)

    def _body(self, length: int) -> bytes | None:
        parts: list[bytes] = []
        remaining = length
        while remaining:
            chunk = self.stream.read(min(remaining, _CHUNK))
            if not chunk:
                return None
            parts.append(chunk)
            remaining -= len(chunk)
        return b"".join(parts)

    def _lost(self, what: str) -> None:
        self.skipped += 1
        log.error("vllm-log-lsp: skipped %s; reading on from the next header", what)


# -- one message ---------------------------------------------------------------------------------
def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def envelope_error(data: Any) -> tuple[Any, str] | None:
    """(id to answer, message) when `data` is not a JSON-RPC 2.0 message we can take."""
    if not isinstance(data, dict):
        return None, "a JSON-RPC message must be an object"
    msg_id = data.get("id") if _is_id(data.get("id")) else None
    if data.get("jsonrpc") != "2.0":
        return msg_id, f'"jsonrpc" must be "2.0", not {data.get("jsonrpc")!r}'
    if "id" in data and not _is_id(data["id"]) and data["id"] is not None:
        return None, f"an id must be a string or an integer, not {data['id']!r}"
    if "method" in data and not isinstance(data["method"], str):
        return msg_id, f'"method" must be a string, not {data["method"]!r}'
    if "params" in data and data["params"] is not None and not isinstance(data["params"], (dict, list)):
        return msg_id, f'"params" must be an object or an array, not {data["params"]!r}'
    if "method" not in data and "result" not in data and "error" not in data:
        return msg_id, 'a message needs a "method" (or a "result"/"error" for a response)'
    return None


class Lifecycle:
    """What the LSP specification allows between `initialize`, `shutdown` and `exit`."""

    def __init__(self) -> None:
        self.initialize_received = False
        self.shutdown_received = False

    def refusal(self, method: str) -> tuple[int, str] | None:
        """(code, message) when a request `method` must be refused now."""
        if method == types.INITIALIZE:
            if self.initialize_received:
                return INVALID_REQUEST, "initialize was already received"
            return None
        if not self.initialize_received:
            return SERVER_NOT_INITIALIZED, f"{method} before initialize"
        if self.shutdown_received:
            return INVALID_REQUEST, f"{method} after shutdown"
        return None

    def accepts_notification(self, method: str) -> bool:
        if method == types.EXIT:
            return True
        return self.initialize_received and not self.shutdown_received

    def seen(self, method: str) -> None:
        if method == types.INITIALIZE:
            self.initialize_received = True
        elif method == types.SHUTDOWN:
            self.shutdown_received = True

    @property
    def exit_code(self) -> int:
        return 0 if self.shutdown_received else 1


def handle_body(protocol: Any, lifecycle: Lifecycle, body: bytes, reply: Callable[..., None]) -> bool:
    """Check one frame's body and hand it to pygls's protocol. False when it was `exit`.

    `reply(msg_id, code, message)` sends an error response.
    """
    try:
        data = json.loads(body)
    except ValueError as err:  # also invalid UTF-8
        reply(None, PARSE_ERROR, f"not JSON: {err}")
        return True
    problem = envelope_error(data)
    if problem is not None:
        msg_id, message = problem
        reply(msg_id, INVALID_REQUEST, message)
        return True
    method = data.get("method")
    is_request = method is not None and "id" in data
    if method is not None:
        if is_request and (refused := lifecycle.refusal(method)) is not None:
            reply(data["id"], *refused)
            return True
        if not is_request and not lifecycle.accepts_notification(method):
            log.warning("vllm-log-lsp: ignored the notification %s (%s)", method, _state(lifecycle))
            return True
    try:
        message = protocol.structure_message(data)
    except JsonRpcInvalidParams:
        if is_request:
            reply(data["id"], INVALID_PARAMS, f"invalid params for {method}")
        else:
            log.warning("vllm-log-lsp: ignored %s with invalid params", method)
        return True
    except Exception as err:  # pygls raises JsonRpcInternalError for what it cannot structure
        if is_request:
            reply(data["id"], INVALID_PARAMS, f"cannot read the params of {method}: {err}")
        return True
    if method is not None and is_request:
        lifecycle.seen(method)
    if method == types.EXIT:
        return False
    protocol.handle_message(message)
    return True


def _state(lifecycle: Lifecycle) -> str:
    if not lifecycle.initialize_received:
        return "before initialize"
    return "after shutdown" if lifecycle.shutdown_received else "running"


# -- the loop ------------------------------------------------------------------------------------
async def serve_frames(
    protocol: Any,
    reader: FrameReader,
    stop_event: threading.Event,
    executor: Any,
    reply: Callable[..., None],
) -> int:
    """Read and handle frames until `exit` or the end of the stream; the process's exit code."""
    lifecycle = Lifecycle()
    loop = asyncio.get_running_loop()
    while not stop_event.is_set():
        try:
            body = await loop.run_in_executor(executor, reader.next_body)
        except FrameTooLarge as err:
            log.error("vllm-log-lsp: %s; exiting", err)
            return 1
        if body is None:
            break  # the client went away
        try:
            if not handle_body(protocol, lifecycle, body, reply):
                return lifecycle.exit_code
        except Exception:  # a bug in a handler must not end the loop
            log.exception("vllm-log-lsp: handling a message failed")
    return lifecycle.exit_code
