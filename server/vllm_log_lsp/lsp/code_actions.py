"""Quick fixes: a finding's fixes applied to the launch scripts of the workspace.

For each root-cause diagnostic in a `textDocument/codeAction` request, every fix that has
operations becomes one `quickfix` per plausible vLLM invocation in the workspace folders, best
candidate first, e.g. `Fix: Lower the number of concurrent sequences — serve.sh:3:
--max-num-seqs 256 → 128`. Without any launch script the fix is offered as "Copy the fixed
launch command" (the `vllmLog.copyFixedCommand` command shows the rebuilt command and returns
it). A script that cannot be edited safely gets a disabled action that says why. Advice-only
fixes (no operations) give no action; the hover explains them.

One request, step by step:

1. on the event loop: the findings of the request's root-cause diagnostics, and a snapshot of
   the launch scripts open in the editor (their unsaved text wins over the disk);
2. `LaunchScripts.discover`: the invocations of each workspace folder, found in a worker thread
   and cached per folder and include/exclude globs (`launchScripts.include/exclude`);
3. in the worker thread, `plan_fixes` (pure): rank the invocations against the log's run and
   apply each fix to each candidate with `launch.apply_fix`;
4. on the event loop: plans → `CodeAction`s, with columns in the negotiated position encoding
   and `documentChanges` or `changes` as the client supports.

The cache is dropped for a folder on `didSave` of a file in it and on
`workspace/didChangeWatchedFiles` (watchers are registered when the client allows dynamic
registration); without watchers an entry is trusted for `STALE_AFTER_S`. Unsaved edits need no
invalidation: open documents are read from the workspace at every request.

The hover shows one preview line per fix through `fix_previews`, from the cache only.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls import uris

from ..core.model import Finding, ResolvedFix
from ..core.paths import resolves_inside
from ..core.tools import distrust
from ..launch import (
    Candidate,
    Discovery,
    DiscoveryOptions,
    FixResult,
    Invocation,
    SkippedFile,
    apply_fix,
    discover,
    fix_file,
    fix_text,
    invocations_in_text,
    rank_invocations,
    rebuild_command,
)
from ..launch.discover import _excluded, _match  # the same glob rules as discovery
from ..launch.formats import file_kind
from ..launch.sites import Malformed
from .diagnostics import SOURCE, build_diagnostics
from .positions import to_client_column
from .safety import guarded, log_to_client
from .settings import Settings
from .state import AnalysisResult

if TYPE_CHECKING:
    from .server import VllmLogServer

COPY_FIXED_COMMAND = "vllmLog.copyFixedCommand"
#: Invocations offered per fix (best first); more would drown the menu.
MAX_CANDIDATES = 5
#: Unparseable launch files explained per finding.
MAX_EXPLAINED = 3
#: Without file watchers, a folder's discovery is redone when older than this.
STALE_AFTER_S = 30.0
SEARCHING = "_searching launch scripts…_"
#: How long a hover waits for its fix previews before answering without them.
PREVIEW_WAIT_S = 0.5
#: What the file watchers report (the formats `launch.formats.file_kind` recognises by name).
WATCHED_GLOBS = (
    "**/*.{sh,bash,zsh,ksh,py,yaml,yml,md,markdown,txt,rst,adoc,mk,service,conf}",
    "**/{Dockerfile,Containerfile,Dockerfile.*,Containerfile.*,*.dockerfile,*.containerfile}",
    "**/{Makefile,makefile,GNUmakefile,Procfile,Justfile,justfile}",
)


# -- planning (pure; runs in a worker thread) --------------------------------------------------
@dataclass(frozen=True)
class OpenScript:
    """A launch script open in the editor: its text may differ from the disk."""

    uri: str
    version: int | None
    text: str


@dataclass(frozen=True)
class FixPlan:
    """One fix of a finding, applied to one invocation, or rebuilt as a command.

    Exactly one of `result` (status `changed`, `skipped`, or `unchanged`: the script has the
    fix already) and `command` is set.
    """

    fix_index: int
    fix: ResolvedFix
    result: FixResult | None = None
    command: str | None = None
    preferred: bool = False

    @property
    def preview(self) -> str:
        """One line of markdown for the hover."""
        if self.command is not None:
            return f"fixed command: {_code(self.command)}"
        assert self.result is not None
        if self.result.status == "skipped":
            return f"not applied: {self.result.reason}"
        return _code(self.result.summary)


def launch_options(settings: Settings) -> DiscoveryOptions:
    return DiscoveryOptions(
        include=settings.launch_include, exclude=settings.launch_exclude, docs=settings.launch_docs
    )


def collect_invocations(
    discoveries: Iterable[Discovery],
    open_scripts: Mapping[str, OpenScript],
    roots: Sequence[str],
    options: DiscoveryOptions,
) -> tuple[list[Invocation], list[SkippedFile]]:
    """The discovered invocations, with open scripts read from their editor text instead."""
    invocations: list[Invocation] = []
    skipped: list[SkippedFile] = []
    for found in discoveries:
        invocations.extend(inv for inv in found.invocations if inv.path not in open_scripts)
        skipped.extend(s for s in found.skipped if s.path not in open_scripts)
    for path, script in sorted(open_scripts.items()):
        if not in_scope(path, roots, options) or "vllm" not in script.text.lower():
            continue
        if file_kind(path, script.text) is None:
            continue
        try:
            invocations.extend(invocations_in_text(path, script.text, docs=options.docs))
        except Malformed as exc:
            skipped.append(SkippedFile(path, str(exc)))
    return invocations, skipped


def in_scope(path: str, roots: Sequence[str], options: DiscoveryOptions) -> bool:
    """Whether discovery would look at `path`: under a root (also once symlinks are resolved: an
    edit through a link must not land outside the workspace), and allowed by the globs."""
    if not resolves_inside(path, roots):
        return False
    for root in roots:
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if rel.startswith("../") or rel == "..":
            continue
        parts = rel.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        if any(p in options.skip_dirs for p in parts[:-1]):
            return False
        if any(_excluded(p, options) for p in [*folders, rel]):
            return False
        return not options.include or any(_match(rel, g) for g in options.include)
    return False


def plan_fixes(
    finding: Finding,
    invocations: Sequence[Invocation],
    skipped: Sequence[SkippedFile],
    open_scripts: Mapping[str, OpenScript],
    max_candidates: int = MAX_CANDIDATES,
) -> list[FixPlan]:
    """Every fix of `finding` that has operations, applied to its plausible invocations.

    Fixes in the finding's order; within a fix, candidates best first. An invocation that
    already has the fix gives no plan, except the best candidate: its plan says "already
    applied" (rather than nothing, or a step further). `preferred` marks the first actionable
    fix on the best candidate, when the ranking says that candidate is clearly the logged run.
    """
    ranking = rank_invocations(invocations, finding.context)
    candidates = plausible(ranking.candidates, max_candidates)
    captures = dict(finding.evidence)
    plans: list[FixPlan] = []
    first = next((i for i, fx in enumerate(finding.fixes) if fx.ops), None)
    for index, resolved in enumerate(finding.fixes):
        if not resolved.ops:
            continue
        if not candidates:
            command = rebuild_command(finding.context, resolved.ops, captures)
            plans.append(FixPlan(index, resolved, command=command))
        for rank, invocation in enumerate(candidates):
            script = open_scripts.get(invocation.path)
            result = apply_fix(
                invocation,
                resolved.ops,
                text=script.text if script else None,
                context=finding.context,
                captures=captures,
            )
            if result.status == "unchanged" and rank > 0:
                continue
            preferred = ranking.preferred and rank == 0 and index == first and result.changed
            plans.append(FixPlan(index, resolved, result=result, preferred=preferred))
    if first is not None:
        # Files that did not even parse: say why once, under the first actionable fix. They are
        # applied, not just reported: the file may have been repaired since it was discovered.
        resolved = finding.fixes[first]
        for bad in skipped[:MAX_EXPLAINED]:
            script = open_scripts.get(bad.path)
            if script is not None:
                result = fix_text(
                    script.text, bad.path, resolved.ops, context=finding.context, captures=captures, docs=True
                )
            else:  # (`docs`: a document is only reported when discovery was allowed to read it)
                result = fix_file(
                    bad.path, resolved.ops, context=finding.context, captures=captures, docs=True
                )
            if result.status != "unchanged":
                plans.append(FixPlan(first, resolved, result=result))
    return plans


def plausible(candidates: Sequence[Candidate], limit: int) -> list[Invocation]:
    """The invocations worth offering: those the log does not contradict, if there are any."""
    fitting = [c for c in candidates if c.score >= 0]
    return [c.invocation for c in (fitting or list(candidates))[:limit]]


# -- rendering (event loop) ----------------------------------------------------------------------
@dataclass(frozen=True)
class ClientSupport:
    """What the client can take, read once per request."""

    encoding: str
    document_changes: bool
    disabled: bool


def lsp_edits(result: FixResult, encoding: str) -> list[types.TextEdit]:
    """The result's code-point edits in the client's units, computed on the edited text."""
    lines = result.old_text.split("\n")

    def position(line: int, col: int) -> types.Position:
        text = lines[line] if line < len(lines) else ""
        return types.Position(line=line, character=to_client_column(text, col, encoding))

    return [
        types.TextEdit(
            range=types.Range(start=position(e.start_line, e.start_col), end=position(e.end_line, e.end_col)),
            new_text=e.new_text,
        )
        for e in result.edits
    ]


def workspace_edit(
    result: FixResult, open_scripts: Mapping[str, OpenScript], support: ClientSupport
) -> types.WorkspaceEdit:
    script = open_scripts.get(result.path)
    uri = script.uri if script else uris.from_fs_path(result.path) or f"file://{result.path}"
    edits = lsp_edits(result, support.encoding)
    if not support.document_changes:
        return types.WorkspaceEdit(changes={uri: edits})
    identifier = types.OptionalVersionedTextDocumentIdentifier(
        uri=uri, version=script.version if script else None
    )
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)]
    )


def code_action(
    plan: FixPlan,
    diagnostic: types.Diagnostic,
    open_scripts: Mapping[str, OpenScript],
    support: ClientSupport,
) -> types.CodeAction:
    title = f"Fix: {plan.fix.title}"
    common: dict[str, Any] = {"kind": types.CodeActionKind.QuickFix, "diagnostics": [diagnostic]}
    if plan.command is not None:
        args = [{"command": plan.command, "title": plan.fix.title}]
        return types.CodeAction(
            title=f"Copy the fixed launch command: {plan.fix.title}",
            command=types.Command(
                title="Copy the fixed launch command", command=COPY_FIXED_COMMAND, arguments=args
            ),
            **common,
        )
    result = plan.result
    assert result is not None
    if result.status == "unchanged":  # only offered to clients that show disabled actions
        name = os.path.basename(result.path)
        return types.CodeAction(
            title=f"{title} — {name}: already applied",
            disabled=types.CodeActionDisabled(reason=result.summary),
            **common,
        )
    if result.changed:
        return types.CodeAction(
            title=f"{title} — {result.summary}",
            edit=workspace_edit(result, open_scripts, support),
            is_preferred=plan.preferred or None,
            **common,
        )
    if support.disabled:
        name = os.path.basename(result.path)
        return types.CodeAction(
            title=f"{title} — {name} (cannot be edited)",
            disabled=types.CodeActionDisabled(reason=result.reason),
            **common,
        )
    return types.CodeAction(title=f"{title} — {result.reason}", **common)


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


# -- the discovery cache ---------------------------------------------------------------------------
@dataclass
class _Entry:
    started: float
    future: asyncio.Future[Discovery]


class LaunchScripts:
    """Discovered invocations per (folder, include, exclude), computed in a worker thread."""

    def __init__(self, server: VllmLogServer) -> None:
        self.server = server
        # Not the analysis pool: a big workspace walk must not hold up diagnostics.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-log-launch")
        self._entries: dict[tuple[str, DiscoveryOptions], _Entry] = {}
        self.watching = False
        self.plans = PlanCache()

    def _entry(self, root: str, options: DiscoveryOptions) -> _Entry:
        key = (root, options)
        entry = self._entries.get(key)
        stale = entry is not None and not self.watching and time.monotonic() - entry.started > STALE_AFTER_S
        if entry is None or stale:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.executor, discover, [root], options)
            entry = self._entries[key] = _Entry(time.monotonic(), future)
            future.add_done_callback(lambda f, k=key, e=entry: self._forget_failure(k, e, f))
            self._watch()
        return entry

    def _forget_failure(
        self, key: tuple[str, DiscoveryOptions], entry: _Entry, future: asyncio.Future
    ) -> None:
        if future.cancelled() or future.exception() is not None:
            if self._entries.get(key) is entry:
                del self._entries[key]
            if not future.cancelled():
                log_to_client(
                    self.server, f"vllm-log: launch script discovery failed: {future.exception()!r}"
                )

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

    def _watch(self) -> None:
        """Ask the client to report launch-file changes (once, when it allows registration)."""
        if self.watching or not self.server._capability(
            "workspace", "did_change_watched_files", "dynamic_registration"
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

    def _registered(self, future: Any) -> None:
        if future.exception() is not None:  # the client refused: fall back to STALE_AFTER_S
            self.watching = False


# -- request context ------------------------------------------------------------------------------
def _support(server: VllmLogServer) -> ClientSupport:
    return ClientSupport(
        encoding=server.position_encoding,
        document_changes=bool(server._capability("workspace", "workspace_edit", "document_changes")),
        disabled=bool(server._capability("text_document", "code_action", "disabled_support")),
    )


def _roots(server: VllmLogServer) -> list[str]:
    roots = [os.path.normpath(p) for f in server.workspace_folders if (p := uris.to_fs_path(f))]
    distrust(roots)  # folders added since initialize: `bash -n` is never looked up in them
    return roots


def _open_scripts(server: VllmLogServer) -> dict[str, OpenScript]:
    """Documents the editor syncs that are not logs (those live in `server.documents`)."""
    scripts: dict[str, OpenScript] = {}
    for uri, document in list(server.workspace.text_documents.items()):
        path = uris.to_fs_path(uri) if uri.startswith("file:") else None
        if path is None or server.documents.get(uri) is not None:
            continue
        scripts[os.path.normpath(path)] = OpenScript(uri, document.version, document.source)
    return scripts


def _findings_in_request(
    server: VllmLogServer, uri: str, result: AnalysisResult, params: types.CodeActionParams
) -> list[tuple[Finding, types.Diagnostic]]:
    """(finding, its root-cause diagnostic) for the root causes in the requested range."""
    first, last = params.range.start.line, params.range.end.line  # the client's lines
    encoding = server.position_encoding
    diagnostics = [d for d in params.context.diagnostics if d.source == SOURCE]
    if not params.context.diagnostics:  # a client that does not send them: use ours
        diagnostics = build_diagnostics(uri, result, server.position_encoding)
    by_root = {(f.rule_id, f.root.line): f for f in result.analysis.findings}
    out = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        line = diagnostic.range.start.line
        if data.get("role", "root") != "root" or not first <= line <= last:
            continue
        finding = by_root.get(
            (str(diagnostic.code), result.lines.core_line(diagnostic.range.start, encoding))
        )
        if finding is not None and any(fx.ops for fx in finding.fixes):
            out.append((finding, diagnostic))
    return out


class PlanCache:
    """Fix plans already computed, keyed by everything they depend on.

    Editors ask for code actions on every cursor move and each plan applies every fix to every
    candidate script (and re-parses the result), so identical requests must not recompute them:
    a queue of them would also delay the hover, which shares the worker thread.
    """

    def __init__(self, size: int = 64) -> None:
        self._items: OrderedDict[tuple, tuple[list[FixPlan], tuple]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    @staticmethod
    def key(
        finding: Finding,
        discoveries: Sequence[Discovery],
        open_scripts: Mapping[str, OpenScript],
        options: DiscoveryOptions,
        max_candidates: int,
    ) -> tuple:
        # Discoveries are immutable results replaced on invalidation: their identity is their
        # version (the cache entry keeps them alive, so an id cannot be reused meanwhile).
        scripts = tuple(sorted((path, s.version, hash(s.text)) for path, s in open_scripts.items()))
        return (id(finding), tuple(id(d) for d in discoveries), scripts, options, max_candidates)

    def get(self, key: tuple) -> list[FixPlan] | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, plans: list[FixPlan], keep_alive: tuple) -> None:
        with self._lock:
            self._items[key] = (plans, keep_alive)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


def _plans_for(
    findings: Sequence[Finding],
    discoveries: Sequence[Discovery],
    open_scripts: Mapping[str, OpenScript],
    roots: Sequence[str],
    options: DiscoveryOptions,
    max_candidates: int,
    cache: PlanCache | None = None,
) -> list[list[FixPlan]]:
    """Worker-thread part: one plan list per finding (from the cache when nothing changed)."""
    keys = [PlanCache.key(f, discoveries, open_scripts, options, max_candidates) for f in findings]
    plans: list[list[FixPlan] | None] = [cache.get(k) if cache else None for k in keys]
    if any(p is None for p in plans):
        invocations, skipped = collect_invocations(discoveries, open_scripts, roots, options)
        for i, finding in enumerate(findings):
            if plans[i] is None:
                plans[i] = plan_fixes(finding, invocations, skipped, open_scripts, max_candidates)
                if cache is not None:
                    cache.put(keys[i], plans[i], (finding, tuple(discoveries)))
    return [p or [] for p in plans]


async def fix_previews(server: VllmLogServer, uri: str, finding: Finding) -> dict[int, str]:
    """Fix index → one markdown line previewing it on the best invocation (for the hover).

    Uses the cached discovery only: while it is being computed, each fix reads "searching
    launch scripts…". Empty when the code-action feature is not registered.
    """
    scripts: LaunchScripts | None = getattr(server, "launch_scripts", None)
    result = server.documents.result(uri)
    if scripts is None or result is None or not any(fx.ops for fx in finding.fixes):
        return {}
    roots, options = _roots(server), launch_options(result.settings)
    discoveries = scripts.ready(roots, options)
    if discoveries is None:
        return {i: SEARCHING for i, fx in enumerate(finding.fixes) if fx.ops}
    open_scripts = _open_scripts(server)
    loop = asyncio.get_running_loop()
    job = loop.run_in_executor(
        scripts.executor, _plans_for, [finding], discoveries, open_scripts, roots, options, 1, scripts.plans
    )
    try:
        # A hover must answer promptly: if the worker is busy, say so (the plans land in the cache).
        (plans,) = await asyncio.wait_for(job, PREVIEW_WAIT_S)
    except asyncio.TimeoutError:
        return {i: SEARCHING for i, fx in enumerate(finding.fixes) if fx.ops}
    previews: dict[int, str] = {}
    for plan in plans:
        previews.setdefault(plan.fix_index, plan.preview)
    return previews


# -- registration -----------------------------------------------------------------------------------
def register(server: VllmLogServer) -> None:
    scripts = LaunchScripts(server)
    server.launch_scripts = scripts  # type: ignore[attr-defined]  # read by `fix_previews`

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    @guarded(server)
    async def code_actions(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        only = params.context.only
        if only and not any(types.CodeActionKind.QuickFix.value.startswith(k) for k in only):
            return None
        uri = params.text_document.uri
        result = server.documents.result(uri)
        if result is None:
            return None
        requested = _findings_in_request(server, uri, result, params)
        if not requested:
            return None
        roots, options = _roots(server), launch_options(result.settings)
        discoveries = await scripts.discover(roots, options)
        open_scripts = _open_scripts(server)
        findings = [finding for finding, _ in requested]
        loop = asyncio.get_running_loop()
        all_plans = await loop.run_in_executor(
            scripts.executor,
            _plans_for,
            findings,
            discoveries,
            open_scripts,
            roots,
            options,
            MAX_CANDIDATES,
            scripts.plans,
        )
        support = _support(server)
        return [
            code_action(plan, diagnostic, open_scripts, support)
            for (_, diagnostic), plans in zip(requested, all_plans, strict=True)
            for plan in plans
            if support.disabled or plan.result is None or plan.result.status != "unchanged"
        ] or None

    @server.command(COPY_FIXED_COMMAND)
    @guarded(server, reraise=True)
    async def copy_fixed_command(*args: Any) -> str:
        """Show the rebuilt command and return it (a client may put it on the clipboard)."""
        arg = args[0] if args else None
        command = arg.get("command") if isinstance(arg, dict) else arg
        if not isinstance(command, str) or not command:
            raise ValueError(f"{COPY_FIXED_COMMAND} expects {{'command': '...'}}, got {arg!r}")
        title = arg.get("title") if isinstance(arg, dict) else None
        message = (
            f"Fixed launch command ({title}):\n{command}" if title else f"Fixed launch command:\n{command}"
        )
        # Not awaited: the answer would wait for the user to dismiss the message.
        shown = server.window_show_message_request(
            types.ShowMessageRequestParams(type=types.MessageType.Info, message=message)
        )
        shown.add_done_callback(lambda f: f.exception())  # a client that refuses is fine
        return command

    def changed(uri: str) -> None:
        path = uris.to_fs_path(uri) if uri.startswith("file:") else None
        name = os.path.basename(path or "")
        # Only files discovery could parse: a growing `server.log` must not empty the cache.
        if path is not None and (file_kind(name) is not None or "." not in name):
            scripts.invalidate(os.path.normpath(path))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            changed(change.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        changed(params.text_document.uri)
