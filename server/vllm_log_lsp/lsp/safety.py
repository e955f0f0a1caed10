"""Handlers never take the server down: errors are logged to the client and answered politely."""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from lsprotocol import types

log = logging.getLogger("vllm_log_lsp")
T = TypeVar("T")


def log_to_client(server: Any, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
    """`window/logMessage`, swallowing any failure (the transport may be gone)."""
    try:
        server.window_log_message(types.LogMessageParams(type=kind, message=message))
    except Exception:  # pragma: no cover - nothing left to tell
        log.exception("cannot send logMessage")


def guarded(
    server: Any, empty: Any = None, reraise: bool = False
) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Wrap an async handler: an internal error is logged (`window/logMessage`, with the
    traceback) and the request gets `empty`, the answer the spec allows for "nothing here", or,
    with `reraise` (commands), an error response carrying the message."""

    def decorate(handler: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        @functools.wraps(handler)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await handler(*args, **kwargs)
            except Exception as err:
                log.exception("%s failed", handler.__name__)
                detail = "".join(traceback.format_exception(type(err), err, err.__traceback__))
                log_to_client(
                    server, f"vllm-log: {handler.__name__} failed: {err}\n{detail}", types.MessageType.Error
                )
                if reraise:
                    raise
                return empty

        return wrapper

    return decorate
