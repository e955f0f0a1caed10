"""Settings from `initializationOptions` and `workspace/didChangeConfiguration`.

On every change the effective settings of each document are recomputed; if the user rule files
changed, the catalog is rebuilt (its errors are shown, naming file:line) and every log is
analysed again with it; otherwise diagnostics are re-rendered from the cached analyses.
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
from .settings import SECTION, SettingsSet, parse_settings

if TYPE_CHECKING:
    from .server import VllmLogServer


def rule_files(settings: SettingsSet, root_path: str | None) -> tuple[str, ...]:
    """All user rule files of all folders, relative paths resolved against their folder."""
    files: list[str] = []
    pairs = [(root_path, settings.default)] + [
        (uris.to_fs_path(folder), s) for folder, s in settings.folders.items()
    ]
    for base, s in pairs:
        for name in s.extra_rule_files:
            path = Path(name).expanduser()
            if not path.is_absolute() and base:
                path = Path(base) / path
            if str(path) not in files:
                files.append(str(path))
    return tuple(files)


def load_catalog(files: tuple[str, ...]) -> Catalog:
    return catalog_with_user_files(files) if files else builtin_catalog()


def show_errors(server: VllmLogServer, errors: list[str], kind=types.MessageType.Error) -> None:
    for message in errors:
        server.window_show_message(types.ShowMessageParams(type=kind, message=message))
        log_to_client(server, message, kind)


async def apply_settings(server: VllmLogServer, raw: Any, *, reanalyse: bool = True) -> None:
    """Parse and apply a settings payload; report bad keys and bad rule files."""
    settings, errors = parse_settings(raw)
    show_errors(server, errors)
    server.settings = settings
    files = rule_files(settings, server.root_path)
    catalog_changed = files != server.rule_files
    if catalog_changed:
        loop = asyncio.get_running_loop()
        catalog = await loop.run_in_executor(server.pipeline.executor, load_catalog, files)
        show_errors(server, [f"vllm-log rule file {err}" for err in catalog.errors])
        server.catalog, server.rule_files = catalog, files
    for state in server.documents:
        state.settings = settings.for_uri(state.uri)
        if catalog_changed:
            state.analyzer = None  # the next analysis starts over with the new catalog
        if not (reanalyse and state.served) or state.from_disk:
            if state.from_disk and state.result is not None:
                server.pipeline.publish(state)
            continue
        # Re-analysed rather than re-rendered: the size limit or the catalog may have changed.
        server.pipeline.schedule(state, delay=0)


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
        # Parsed now so that documents opened right after `initialized` get the right settings;
        # messages wait for `initialized` (the client may not show them before).
        # Programs (rg, grep, bash) are never looked up in a workspace folder.
        distrust(p for folder in server.workspace_folders if (p := uris.to_fs_path(folder)))
        settings, errors = parse_settings(params.initialization_options)
        server.settings = settings
        server.pending_messages.extend(errors)
        files = rule_files(settings, server.root_path)
        if files:
            server.catalog = load_catalog(files)
            server.rule_files = files
            server.pending_messages.extend(f"vllm-log rule file {err}" for err in server.catalog.errors)

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        show_errors(server, server.pending_messages)
        server.pending_messages.clear()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        try:
            if not raw and server.supports_configuration_pull:
                raw = await pull_settings(server)
            await apply_settings(server, raw)
        except Exception as err:
            log_to_client(server, f"vllm-log: applying settings failed: {err!r}", types.MessageType.Error)
