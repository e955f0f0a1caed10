"""Quick fixes: a finding's fixes applied to the launch scripts of the workspace.

For each root-cause diagnostic in a `textDocument/codeAction` request, every fix that has
operations becomes one `quickfix` per launch script that is the log's run (`launch.plan`),
e.g. `Fix: Lower the number of concurrent sequences — serve.sh:3: --max-num-seqs 256 → 128`;
the first edit of the best one is `isPreferred` (what "Auto Fix" applies). When no script is
the run, "Copy the fixed launch command" comes first (the `vllmLog.copyFixedCommand` command
shows the rebuilt command and returns it), then the first fix on a few plausible scripts, each
titled with why it is only plausible. At most `MAX_ACTIONS` per finding. A script that cannot
be edited safely gets a disabled action that says why. Advice-only fixes (no operations) give
no action; the hover explains them.

One request, step by step:

1. on the event loop: the findings of the request's root-cause diagnostics, and a snapshot of
   the launch scripts open in the editor (their unsaved text wins over the disk);
2. `server.launch_index` (`launch_index.LaunchIndex`): the invocations of each workspace
   folder (cached), then, in its worker thread, the pure `launch.plan.plan_fixes` of each
   finding: the invocations ranked against the log's run and each fix applied to each candidate;
3. on the event loop, `code_actions_for`: plans → `CodeAction`s, with columns in the negotiated
   position encoding and `documentChanges` or `changes` as the client supports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls import uris
from pygls.capabilities import get_capability

from ..core.model import Finding
from ..launch import FixResult
from ..launch.plan import MAX_ACTIONS, FixPlan, OpenScript
from .diagnostics import SOURCE, build_diagnostics
from .launch_index import launch_options
from .positions import to_client_column
from .safety import guarded
from .state import AnalysisResult

if TYPE_CHECKING:
    from .server import VllmLogServer

COPY_FIXED_COMMAND = "vllmLog.copyFixedCommand"


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
        # A script that may not be the logged run says why, after what the edit does.
        doubt = f" (only plausible: {plan.doubt})" if plan.doubt else ""
        return types.CodeAction(
            title=f"{title} — {result.summary}{doubt}",
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


def code_actions_for(
    requested: Sequence[tuple[Finding, types.Diagnostic]],
    all_plans: Sequence[Sequence[FixPlan]],
    open_scripts: Mapping[str, OpenScript],
    support: ClientSupport,
) -> list[types.CodeAction]:
    """The actions of each requested finding's plans, in plan order (best candidate first).

    Plans that say "already applied" are shown only to clients that display disabled actions.
    """
    return [
        code_action(plan, diagnostic, open_scripts, support)
        for (_, diagnostic), plans in zip(requested, all_plans, strict=True)
        for plan in plans
        if support.disabled or plan.result is None or plan.result.status != "unchanged"
    ]


# -- request context ------------------------------------------------------------------------------
def _support(server: VllmLogServer) -> ClientSupport:
    return ClientSupport(
        encoding=server.position_encoding,
        document_changes=get_capability(
            server.capabilities, "workspace.workspace_edit.document_changes", False
        ),
        disabled=get_capability(server.capabilities, "text_document.code_action.disabled_support", False),
    )


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


# -- registration -----------------------------------------------------------------------------------
def register(server: VllmLogServer) -> None:
    index = server.launch_index

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
        snapshot = await index.snapshot(launch_options(result.settings))
        findings = [finding for finding, _ in requested]
        all_plans = await index.plans(findings, snapshot, MAX_ACTIONS)
        return code_actions_for(requested, all_plans, snapshot.open_scripts, _support(server)) or None

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
