"""The server object and its entry point. Features live in their own modules (see `FEATURES`)."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, BinaryIO

from lsprotocol import types
from pygls import uris
from pygls.capabilities import get_capability
from pygls.exceptions import FeatureRequestError
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..core.catalog import Catalog, builtin_catalog
from . import code_actions, commands, configuration, hover, launch_index, navigation, outline, sync
from .framing import FrameReader, serve_frames
from .launch_index import LaunchIndex
from .pipeline import Pipeline
from .positions import NEWLINE_ONLY_CLIENTS, UTF16
from .safety import log_to_client
from .settings import SettingsSet
from .state import DocumentStore

#: Feature modules, each with `register(server)`. Adding a feature is one entry here.
FEATURES: tuple[ModuleType, ...] = (
    sync,
    configuration,
    launch_index,
    hover,
    navigation,
    outline,
    commands,
    code_actions,
)


class VllmLogServer(LanguageServer):
    """pygls server plus the state every feature shares.

    - `documents`: `DocumentStore` of `DocumentState` (see `state.py`), logs only;
    - `settings`: `SettingsSet` (global + per-folder `Settings`);
    - `catalog`: the built-in cause catalog (markers, the outline);
    - `catalogs`: the catalog of each document's rule files (`configuration.Catalogs`);
    - `pipeline`: schedules analyses and publishes diagnostics;
    - `launch_index`: the workspace's launch scripts and fix plans (`launch_index.LaunchIndex`).
    """

    def __init__(self) -> None:
        super().__init__("vllm-log-lsp", __version__, protocol_cls=sync.VllmLogProtocol)
        self.documents = DocumentStore()
        self.settings = SettingsSet()
        self._settings_listeners: list[Callable[[], None]] = []
        self.catalog: Catalog = builtin_catalog()
        self.catalogs = configuration.Catalogs(self)
        self.pending_messages: list[str] = []
        self.client_name: str | None = None  # InitializeParams.clientInfo.name
        self.pipeline = Pipeline(self)
        self.launch_index = LaunchIndex(self)
        self.exit_code = 0

    # -- settings ------------------------------------------------------------------------------
    def on_settings_changed(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every change of `settings` (in registration order): what
        depends on settings is kept up to date by its owner (the pipeline re-analyses, the
        outline drops its cache), not by the module that parsed them."""
        self._settings_listeners.append(listener)

    def settings_changed(self) -> None:
        """Tell the listeners that `settings` changed (`configuration.apply_settings` does)."""
        for listener in list(self._settings_listeners):
            listener()

    # -- what the client negotiated ------------------------------------------------------------
    @property
    def position_encoding(self) -> str:
        """`utf-16` (VS Code, the default) or `utf-8` (Neovim 0.11) ..."""
        try:
            return str(self.workspace.position_encoding or UTF16)
        except RuntimeError:  # not initialised yet
            return UTF16

    @property
    def newline_only_lines(self) -> bool:
        """Whether the client ends lines only at `\\n` (Neovim, Emacs): see `ClientLines`."""
        return self.client_name in NEWLINE_ONLY_CLIENTS

    @property
    def capabilities(self) -> types.ClientCapabilities:
        """What the client said it can do in `initialize` (nothing, before it): read a capability
        with pygls's typed `get_capability(server.capabilities, "a.b.c", default)`."""
        sent = getattr(self.protocol, "client_capabilities", None)
        return sent if isinstance(sent, types.ClientCapabilities) else types.ClientCapabilities()

    @property
    def supports_work_done_progress(self) -> bool:
        return get_capability(self.capabilities, "window.work_done_progress", False)

    @property
    def supports_configuration_pull(self) -> bool:
        return get_capability(self.capabilities, "workspace.configuration", False)

    # -- workspace -----------------------------------------------------------------------------
    @property
    def workspace_folders(self) -> list[str]:
        """URIs of the workspace folders (the root URI when the client sent no folders)."""
        try:
            workspace = self.workspace
        except RuntimeError:
            return []
        folders = [folder.uri for folder in workspace.folders.values()]
        if not folders and workspace.root_uri:
            folders = [workspace.root_uri]
        return folders

    @property
    def root_path(self) -> str | None:
        folders = self.workspace_folders
        return uris.to_fs_path(folders[0]) if folders else None

    def folder_of(self, uri: str) -> str | None:
        """The innermost workspace folder holding `uri`."""
        matches = [f for f in self.workspace_folders if uri.startswith(f.rstrip("/") + "/")]
        return max(matches, key=len) if matches else None

    # -- transport -----------------------------------------------------------------------------
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio with bounded frames and an answer to every request (see `framing`);
        `exit_code` is what the client's `exit` asked for (0 after `shutdown`, else 1)."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        reader = FrameReader(stdin or sys.stdin.buffer)
        self.exit_code = 1  # the stream ending without `shutdown` and `exit` is not a clean stop
        try:
            self.exit_code = asyncio.run(
                serve_frames(self.protocol, reader, self._stop_event, self.thread_pool, self.send_error)
            )
        except BrokenPipeError:
            logging.getLogger("vllm_log_lsp").error("the client closed the connection; stopping")
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """A JSON-RPC error response (`msg_id` None when the request's id could not be read)."""
        error = {"code": code, "message": f"vllm-log-lsp: {message}"}
        self.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def report_server_error(self, error: Exception, source: object) -> None:
        """Out-of-band errors go to the log, not to pop-ups (pygls would show a message).
        Request errors already reach the client in their error response."""
        if source is FeatureRequestError:
            return
        logging.getLogger("vllm_log_lsp").error("server error (%s): %r", source, error)
        log_to_client(self, f"vllm-log: internal error: {error!r}", types.MessageType.Error)


def create_server() -> VllmLogServer:
    server = VllmLogServer()
    for feature in FEATURES:
        feature.register(server)
    return server


def run_server(transport: str = "stdio", host: str | None = None, port: int | None = None) -> int:
    """Serve over `stdio` (default), `tcp` (HOST:PORT) or `ws` (websockets); the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    server = create_server()
    if transport == "stdio":
        server.start_io()
        return server.exit_code
    elif transport == "tcp":
        server.start_tcp(host or "127.0.0.1", port or 2087)
    elif transport in ("ws", "websocket"):
        server.start_ws(host or "127.0.0.1", port or 2087)
    else:
        raise ValueError(f"unknown transport {transport!r}: use stdio, tcp or ws")
    return 0
