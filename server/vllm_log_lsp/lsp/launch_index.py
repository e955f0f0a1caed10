"""The workspace's launch scripts, as the server knows them: discovery, plans, file watching.

`server.launch_index` (a `LaunchIndex`, created with the server) is what the code actions and
the hover read:

- `discover(roots, options)` / `ready(roots, options)`: the invocations of each workspace folder, found
  in a worker thread and cached per folder and include/exclude globs
  (`launchScripts.include/exclude`);
- `snapshot(options)`, then `plans(findings, snapshot, max_actions)`: the pure
  `launch.plan.plan_fixes` of each finding, run in the same worker thread and cached;
- `previews(uri, finding)`: where each fix lands, for the hover (computed before it answers).

The discovery cache is dropped for a folder on `didSave` of a file in it and on
`workspace/didChangeWatchedFiles` (watchers are registered when the client allows dynamic
registration); without watchers an entry is trusted for `STALE_AFTER_S`. Unsaved edits need
no invalidation: open documents are read from the workspace at every request.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls import uris
from pygls.capabilities import get_capability

from ..core.model import Finding
from ..core.tools import distrust
from ..launch import Discovery, DiscoveryOptions, FixResult, discover
from ..launch.discover import may_be_launch_file
from ..launch.formats import WATCHED_GLOBS
from ..launch.plan import MAX_ACTIONS, FixPlan, OpenScript, collect_invocations, plan_fixes
from .render import FixPreview
from .safety import log_to_client
from .settings import Settings

if TYPE_CHECKING:
    from .server import VllmLogServer

#: Without file watchers, a folder's discovery is redone when older than this.
STALE_AFTER_S = 30.0
#: How long a hover waits for discovery and plans before it answers without previews (a bound
#: for huge workspaces: the work goes on and lands in the caches for the next hover).
PREVIEW_WAIT_S = 5.0

PlanKey = tuple[Any, ...]


def fix_previews(plans: Sequence[FixPlan]) -> dict[int, FixPreview]:
    """Fix index → its preview: the plan on the best match, else its fixed command."""
    previews: dict[int, FixPreview] = {}
    for plan in plans:
        if plan.fix_index in previews or plan.role not in ("match", "command"):
            continue
        if plan.command is not None:
            previews[plan.fix_index] = FixPreview(command=plan.command)
            continue
        outcome = plan.result
        assert outcome is not None
        if outcome.status == "skipped":
            previews[plan.fix_index] = FixPreview(change=f"not applied: {outcome.reason}")
        else:
            where = outcome.summary[: -len("; ".join(outcome.changes)) - 2] if outcome.changes else ""
            change = "; ".join(outcome.changes) if outcome.changes else "already applied"
            previews[plan.fix_index] = FixPreview(where=where or _where(outcome), change=change)
    return previews


def _where(outcome: FixResult) -> str:
    """`serve.sh:15`: the file and line of the invocation a result is about."""
    line = outcome.invocation.line + 1 if outcome.invocation is not None else None
    return f"{os.path.basename(outcome.path)}:{line}" if line else os.path.basename(outcome.path)


def launch_options(settings: Settings) -> DiscoveryOptions:
    """The discovery bounds a document's settings ask for."""
    return DiscoveryOptions(
        include=settings.launch_include, exclude=settings.launch_exclude, docs=settings.launch_docs
    )


class PlanCache:
    """Fix plans already computed, keyed by everything they depend on.

    Editors ask for code actions on every cursor move and each plan applies every fix to every
    candidate script (and re-parses the result), so identical requests must not recompute them:
    a queue of them would also delay the hover, which shares the worker thread.
    """

    def __init__(self, size: int = 64) -> None:
        self._items: OrderedDict[PlanKey, tuple[list[FixPlan], tuple[Any, ...]]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    @staticmethod
    def key(
        finding: Finding,
        discoveries: Sequence[Discovery],
        open_scripts: Mapping[str, OpenScript],
        options: DiscoveryOptions,
        max_actions: int,
    ) -> PlanKey:
        # Discoveries are immutable results replaced on invalidation: their identity is their
        # version (the cache entry keeps them alive, so an id cannot be reused meanwhile).
        scripts = tuple(sorted((path, s.version, hash(s.text)) for path, s in open_scripts.items()))
        return (id(finding), tuple(id(d) for d in discoveries), scripts, options, max_actions)

    def get(self, key: PlanKey) -> list[FixPlan] | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def put(self, key: PlanKey, plans: list[FixPlan], keep_alive: tuple[Any, ...]) -> None:
        with self._lock:
            self._items[key] = (plans, keep_alive)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


@dataclass(frozen=True)
class Snapshot:
    """What one request's plans are computed against: the discoveries of its folders and the
    launch scripts open in the editor at the time (their text wins over the disk)."""

    discoveries: Sequence[Discovery]
    open_scripts: Mapping[str, OpenScript]
    roots: Sequence[str]
    options: DiscoveryOptions


def _plan_keys(findings: Sequence[Finding], snapshot: Snapshot, max_actions: int) -> list[PlanKey]:
    discoveries, open_scripts = snapshot.discoveries, snapshot.open_scripts
    return [PlanCache.key(f, discoveries, open_scripts, snapshot.options, max_actions) for f in findings]


def cached_plans(
    findings: Sequence[Finding], snapshot: Snapshot, max_actions: int, cache: PlanCache
) -> list[list[FixPlan]] | None:
    """Every finding's plans when the cache holds them all (nothing changed since), else None:
    a repeated hover is answered without a trip through the worker thread."""
    plans = [cache.get(k) for k in _plan_keys(findings, snapshot, max_actions)]
    return None if any(p is None for p in plans) else [p or [] for p in plans]


def plans_for(
    findings: Sequence[Finding], snapshot: Snapshot, max_actions: int, cache: PlanCache | None = None
) -> list[list[FixPlan]]:
    """Worker-thread part: one plan list per finding (from the cache when nothing changed)."""
    discoveries, open_scripts = snapshot.discoveries, snapshot.open_scripts
    keys = _plan_keys(findings, snapshot, max_actions)
    plans: list[list[FixPlan] | None] = [cache.get(k) if cache else None for k in keys]
    if any(p is None for p in plans):
        invocations, skipped = collect_invocations(
            discoveries, open_scripts, snapshot.roots, snapshot.options
        )
        for i, finding in enumerate(findings):
            if plans[i] is None:
                planned = plan_fixes(finding, invocations, skipped, open_scripts, max_actions)
                plans[i] = planned
                if cache is not None:
                    cache.put(keys[i], planned, (finding, tuple(discoveries)))
    return [p or [] for p in plans]


@dataclass
class _Entry:
    started: float
    future: asyncio.Future[Discovery]


class LaunchIndex:
    """Discovered invocations per (folder, options) and fix plans, computed in a worker thread."""

    def __init__(self, server: VllmLogServer) -> None:
        self.server = server
        # Not the analysis pool: a big workspace walk must not hold up diagnostics.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-log-launch")
        self._entries: dict[tuple[str, DiscoveryOptions], _Entry] = {}
        self.watching = False
        self.plan_cache = PlanCache()

    # -- the request's context -----------------------------------------------------------------
    def roots(self) -> list[str]:
        """The workspace folders as normalised paths."""
        folders = self.server.workspace_folders
        roots = [os.path.normpath(p) for f in folders if (p := uris.to_fs_path(f))]
        distrust(roots)  # folders added since initialize: `bash -n` is never looked up in them
        return roots

    def open_scripts(self) -> dict[str, OpenScript]:
        """Documents the editor syncs that are not logs (those live in `server.documents`)."""
        server = self.server
        scripts: dict[str, OpenScript] = {}
        for uri, document in list(server.workspace.text_documents.items()):
            path = uris.to_fs_path(uri) if uri.startswith("file:") else None
            if path is None or server.documents.get(uri) is not None:
                continue
            scripts[os.path.normpath(path)] = OpenScript(uri, document.version, document.source)
        return scripts

    # -- discovery -----------------------------------------------------------------------------
    async def discover(self, roots: Sequence[str], options: DiscoveryOptions) -> list[Discovery]:
        """Each root's discovery, waiting for the ones not found yet."""
        return list(await asyncio.gather(*(self._entry(root, options).future for root in roots)))

    def ready(self, roots: Sequence[str], options: DiscoveryOptions) -> list[Discovery] | None:
        """Each root's discovery if all are known (possibly stale), else None; never waits."""
        futures = [self._entry(root, options).future for root in roots]
        if not all(f.done() and not f.cancelled() and f.exception() is None for f in futures):
            return None
        return [f.result() for f in futures]

    def invalidate(self, path: str) -> None:
        """Forget every folder holding `path` (a file saved, created, changed or deleted)."""
        for key in list(self._entries):
            root = key[0]
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                del self._entries[key]

    def changed(self, uri: str) -> None:
        """A file was saved or changed on disk: forget its folder's discovery if it may matter."""
        path = uris.to_fs_path(uri) if uri.startswith("file:") else None
        # Only files discovery could parse: a growing `server.log` must not empty the cache.
        if path is not None and may_be_launch_file(os.path.basename(path)):
            self.invalidate(os.path.normpath(path))

    def _entry(self, root: str, options: DiscoveryOptions) -> _Entry:
        key = (root, options)
        entry = self._entries.get(key)
        stale = entry is not None and not self.watching and time.monotonic() - entry.started > STALE_AFTER_S
        if entry is None or stale:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.executor, discover, [root], options)
            entry = self._entries[key] = _Entry(time.monotonic(), future)
            future.add_done_callback(partial(self._forget_failure, key, entry))
            self._watch()
        return entry

    def _forget_failure(
        self, key: tuple[str, DiscoveryOptions], entry: _Entry, future: asyncio.Future[Discovery]
    ) -> None:
        if future.cancelled() or future.exception() is not None:
            if self._entries.get(key) is entry:
                del self._entries[key]
            if not future.cancelled():
                log_to_client(
                    self.server, f"vllm-log: launch script discovery failed: {future.exception()!r}"
                )

    # -- plans ---------------------------------------------------------------------------------
    async def snapshot(self, options: DiscoveryOptions) -> Snapshot:
        """The workspace as a request sees it, waiting for discoveries not found yet."""
        roots = self.roots()
        return Snapshot(await self.discover(roots, options), self.open_scripts(), roots, options)

    async def plans(
        self, findings: Sequence[Finding], snapshot: Snapshot, max_actions: int
    ) -> list[list[FixPlan]]:
        """One plan list per finding, computed in the worker thread (cached: then at once)."""
        if (cached := cached_plans(findings, snapshot, max_actions, self.plan_cache)) is not None:
            return cached
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, plans_for, findings, snapshot, max_actions, self.plan_cache
        )

    async def previews(self, uri: str, finding: Finding) -> dict[int, FixPreview]:
        """Fix index → where it lands (for the hover): the best match's edit, or the fixed command.

        Computed before the hover answers, with the code actions' discovery and plans (and
        caches): a hover never shows a placeholder. Past `PREVIEW_WAIT_S` it goes without.
        """
        result = self.server.documents.result(uri)
        if result is None or not any(fx.ops for fx in finding.fixes):
            return {}
        options = launch_options(result.settings)
        try:
            # Shielded: a slow hover must not cancel the discovery or plans it started.
            snapshot = await asyncio.wait_for(asyncio.shield(self.snapshot(options)), PREVIEW_WAIT_S)
            job = self.plans([finding], snapshot, MAX_ACTIONS)
            (plans,) = await asyncio.wait_for(asyncio.shield(job), PREVIEW_WAIT_S)
        except asyncio.TimeoutError:
            return {}
        return fix_previews(plans)

    # -- file watching -------------------------------------------------------------------------
    def _watch(self) -> None:
        """Ask the client to report launch-file changes (once, when it allows registration)."""
        capabilities = self.server.capabilities
        if self.watching or not get_capability(
            capabilities, "workspace.did_change_watched_files.dynamic_registration", False
        ):
            return
        self.watching = True
        watchers = [types.FileSystemWatcher(glob_pattern=g) for g in WATCHED_GLOBS]
        params = types.RegistrationParams(
            registrations=[
                types.Registration(
                    id="vllm-log-launch-scripts",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
                )
            ]
        )
        future = self.server.client_register_capability(params)
        future.add_done_callback(self._registered)

    def _registered(self, future: Future[None]) -> None:
        if future.exception() is not None:  # the client refused: fall back to STALE_AFTER_S
            self.watching = False


def register(server: VllmLogServer) -> None:
    """The save and watched-file notifications that keep `server.launch_index` current."""
    index = server.launch_index

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            index.changed(change.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        index.changed(params.text_document.uri)
