"""Settings from `initializationOptions` and `workspace/didChangeConfiguration`.

On every change the features are told (`server.on_settings_changed`): the pipeline recomputes
each document's effective settings and analyses every log again. Each document gets the catalog of its own rule files (`rules.extraFiles` of its folder,
relative paths resolved against that folder): a folder's rules never apply to another folder's logs.
Catalogs are loaded in a worker thread, never on the event loop (a FIFO, 10,000 rules), once per
set of files; their errors and warnings are shown, naming file:line.
When a client sends an empty `didChangeConfiguration` (the "pull" model), the `vllmLog` section
is requested with `workspace/configuration`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls import uris

from ..core.catalog import Catalog, builtin_catalog, catalog_with_user_files
from ..core.tools import distrust
from .safety import log_to_client
from .settings import SECTION, parse_settings

if TYPE_CHECKING:
    from .server import VllmLogServer


def resolve_rule_files(names: tuple[str, ...], base: str | None) -> tuple[str, ...]:
    """User rule files, relative paths resolved against `base` (the document's workspace folder)."""
    files: list[str] = []
    for name in names:
        path = Path(name).expanduser()
        if not path.is_absolute() and base:
            path = Path(base) / path
        if str(path) not in files:
            files.append(str(path))
    return tuple(files)


def load_catalog(files: tuple[str, ...]) -> Catalog:
    return catalog_with_user_files(files) if files else builtin_catalog()


class Catalogs:
    """The catalog of each set of rule files, loaded once, in a worker thread."""

    def __init__(self, server: VllmLogServer) -> None:
        self.server = server
        self._loading: dict[tuple[str, ...], asyncio.Future[Catalog]] = {}

    def files_for(self, uri: str) -> tuple[str, ...]:
        """The rule files that apply to the document `uri`: its folder's settings, its folder's paths."""
        folder = self.server.folder_of(uri)
        base = uris.to_fs_path(folder) if folder else self.server.root_path
        return resolve_rule_files(self.server.settings.for_uri(uri).extra_rule_files, base)

    def get(self, files: tuple[str, ...]) -> asyncio.Future[Catalog]:
        if files not in self._loading:
            loop = asyncio.get_running_loop()
            if files:
                future = loop.run_in_executor(self.server.pipeline.executor, load_catalog, files)
                future.add_done_callback(self._report)
            else:
                future = loop.create_future()
                future.set_result(builtin_catalog())
            self._loading[files] = future
        return self._loading[files]

    async def for_uri(self, uri: str) -> Catalog:
        return await self.get(self.files_for(uri))

    def loaded_for(self, uri: str) -> Catalog:
        """The document's catalog if it is loaded, else the built-in one (never waits)."""
        future = self._loading.get(self.files_for(uri))
        if future is not None and future.done() and not future.exception():
            return future.result()
        return builtin_catalog()

    def forget_unused(self, keep: set[tuple[str, ...]]) -> None:
        """Drop catalogs no document or folder uses any more (their files may have changed too)."""
        for files in list(self._loading):
            if files not in keep:
                del self._loading[files]

    def _report(self, future: asyncio.Future[Catalog]) -> None:
        if future.cancelled():
            return
        if (err := future.exception()) is not None:
            log_to_client(
                self.server, f"vllm-log: loading rule files failed: {err!r}", types.MessageType.Error
            )
            return
        catalog = future.result()
        show_errors(self.server, [f"vllm-log rule file {err}" for err in catalog.errors])
        show_errors(
            self.server, [f"vllm-log rule file {w}" for w in catalog.warnings], types.MessageType.Warning
        )


def show_errors(server: VllmLogServer, errors: list[str], kind=types.MessageType.Error) -> None:
    for message in errors:
        server.window_show_message(types.ShowMessageParams(type=kind, message=message))
        log_to_client(server, message, kind)


async def apply_settings(server: VllmLogServer, raw: Any) -> None:
    """Parse and apply a settings payload; report bad keys; start loading the rule files; tell
    the features (`server.on_settings_changed`)."""
    settings, errors = parse_settings(raw)
    show_errors(server, errors)
    server.settings = settings
    in_use = {server.catalogs.files_for(state.uri) for state in server.documents}
    in_use |= {server.catalogs.files_for(folder.rstrip("/") + "/") for folder in server.workspace_folders}
    server.catalogs.forget_unused(in_use)  # a file named again is read again: it may have changed
    for files in in_use:
        server.catalogs.get(files)
    server.settings_changed()


async def pull_settings(server: VllmLogServer) -> Any:
    """Ask the client for the `vllmLog` section, globally and per workspace folder."""
    folders = server.workspace_folders
    items = [types.ConfigurationItem(section=SECTION)] + [
        types.ConfigurationItem(section=SECTION, scope_uri=folder) for folder in folders
    ]
    values = await server.workspace_configuration_async(types.ConfigurationParams(items=items))
    if not values:
        return None
    per_folder = [
        {**value, "workspace": folder}
        for folder, value in zip(folders, values[1:], strict=False)
        if isinstance(value, dict)
    ]
    return {"globalSettings": values[0], "settings": per_folder} if per_folder else values[0]


def register(server: VllmLogServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.client_name = params.client_info.name if params.client_info else None
        # Programs (rg, grep, bash) are never looked up in a workspace folder.
        distrust(p for folder in server.workspace_folders if (p := uris.to_fs_path(folder)))
        # Parsed now so that documents opened right after `initialized` get the right settings;
        # messages wait for `initialized` (the client may not show them before). Rule files are
        # not read here: initialize answers at once, whatever they hold.
        settings, errors = parse_settings(params.initialization_options)
        server.settings = settings
        server.pending_messages.extend(errors)

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        show_errors(server, server.pending_messages)
        server.pending_messages.clear()
        for folder in server.workspace_folders or [""]:
            server.catalogs.get(server.catalogs.files_for(folder.rstrip("/") + "/"))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        try:
            if not raw and server.supports_configuration_pull:
                raw = await pull_settings(server)
            await apply_settings(server, raw)
        except Exception as err:
            log_to_client(server, f"vllm-log: applying settings failed: {err!r}", types.MessageType.Error)
