"""Fix plans (pure): a finding's fixes applied to the launch scripts that may have run the log.

`plan_fixes` is where the list of planned fixes is built: the invocations are ranked against
the log's run (`rank_invocations`); each fix with operations is applied to the scripts that
match it, or, when none does, the fixed command comes first and the most plausible scripts
get their first fix, each saying why it is only plausible. The list stays short
(`MAX_ACTIONS`) and at most one plan is preferred. The LSP layer turns the plans into code
actions and hover previews; nothing here knows LSP.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..core.model import Finding, ResolvedFix
from .apply import apply_fix, fix_file, fix_text, invocations_in_text
from .discover import in_scope
from .formats import file_kind
from .model import Candidate, Discovery, DiscoveryOptions, FixResult, Invocation, SkippedFile
from .rank import rank_invocations
from .rebuild import rebuild_command
from .sites import Malformed

#: Quick fixes offered per finding: a longer list is a wall nobody reads.
MAX_ACTIONS = 5
#: Scripts offered (their first fix each) when none is the logged run.
MAX_PLAUSIBLE = 3
#: Unparseable launch files explained per finding.
MAX_EXPLAINED = 3

#: What a plan is for: a script that is the logged run, one that only may be, the rebuilt
#: command, or a launch file that did not parse (explained, and fixed if it was repaired).
Role = Literal["match", "plausible", "command", "unparsed"]


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
    fix already) and `command` is set. `doubt` says why a `plausible` script may not be the
    logged run ("serves another model (Qwen/Qwen3-8B)").
    """

    fix_index: int
    fix: ResolvedFix
    result: FixResult | None = None
    command: str | None = None
    preferred: bool = False
    role: Role = "match"
    doubt: str = ""


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


def plan_fixes(
    finding: Finding,
    invocations: Sequence[Invocation],
    skipped: Sequence[SkippedFile],
    open_scripts: Mapping[str, OpenScript],
    max_actions: int = MAX_ACTIONS,
) -> list[FixPlan]:
    """The quick fixes worth offering for `finding`, at most `max_actions`, in menu order.

    The invocations are ranked against the log's run (`rank_invocations`). When some match
    it, every fix with operations is applied to each match (fixes in the finding's order, the
    best match first within a fix); exactly one plan is `preferred`: the first that edits the
    best match. When none matches, nothing is preferred: first the fixed launch command, then
    the first fix on the few most plausible scripts (`doubt` says why each is only plausible),
    then the launch files that did not parse, then the other fixes as commands.
    """
    actionable = [i for i, fx in enumerate(finding.fixes) if fx.ops]
    if not actionable:
        return []
    ranking = rank_invocations(invocations, finding.context)
    if ranking.matches:
        plans = _plans_for_matches(finding, ranking.matches, actionable, open_scripts)
    else:
        plans = [_command_plan(finding, actionable[0])]
        plans += _plans_for_plausible(finding, ranking.plausible(MAX_PLAUSIBLE), actionable[0], open_scripts)
        plans += _unparsed_plans(finding, actionable[0], skipped, open_scripts)
        plans += [_command_plan(finding, index) for index in actionable[1:]]
    return plans[:max_actions]


def _plans_for_matches(
    finding: Finding,
    matches: Sequence[Candidate],
    actionable: Sequence[int],
    open_scripts: Mapping[str, OpenScript],
) -> list[FixPlan]:
    """Each fix on each match; a fix already in a script is said once, for the best match."""
    ranked: list[tuple[int, FixPlan]] = []  # (rank of its match, plan)
    for index in actionable:
        for rank, candidate in enumerate(matches):
            result = _apply(finding, index, candidate.invocation, open_scripts)
            if result.status == "unchanged" and rank > 0:
                continue
            ranked.append((rank, FixPlan(index, finding.fixes[index], result=result)))
    edits = [(rank, plan) for rank, plan in ranked if plan.result is not None and plan.result.changed]
    # the best match's first edit; if it has every fix already, the next match's
    preferred = min(edits, key=lambda pair: pair[0], default=(0, None))[1]
    return [replace(plan, preferred=True) if plan is preferred else plan for _, plan in ranked]


def _plans_for_plausible(
    finding: Finding, candidates: Sequence[Candidate], index: int, open_scripts: Mapping[str, OpenScript]
) -> list[FixPlan]:
    plans = []
    for candidate in candidates:
        result = _apply(finding, index, candidate.invocation, open_scripts)
        if result.status != "unchanged":
            doubt = candidate.why_not_a_match
            plans.append(FixPlan(index, finding.fixes[index], result=result, role="plausible", doubt=doubt))
    return plans


def _command_plan(finding: Finding, index: int) -> FixPlan:
    resolved = finding.fixes[index]
    command = rebuild_command(finding.context, resolved.ops, dict(finding.evidence))
    return FixPlan(index, resolved, command=command, role="command")


def _apply(
    finding: Finding, index: int, invocation: Invocation, open_scripts: Mapping[str, OpenScript]
) -> FixResult:
    script = open_scripts.get(invocation.path)
    return apply_fix(
        invocation,
        finding.fixes[index].ops,
        text=script.text if script else None,
        context=finding.context,
        captures=dict(finding.evidence),
    )


def _unparsed_plans(
    finding: Finding, first: int, skipped: Sequence[SkippedFile], open_scripts: Mapping[str, OpenScript]
) -> list[FixPlan]:
    """Files that did not even parse: say why once, under the first actionable fix. They are
    applied, not just reported: the file may have been repaired since it was discovered."""
    resolved = finding.fixes[first]
    captures = dict(finding.evidence)
    plans: list[FixPlan] = []
    for bad in skipped[:MAX_EXPLAINED]:
        script = open_scripts.get(bad.path)
        if script is not None:
            result = fix_text(
                script.text, bad.path, resolved.ops, context=finding.context, captures=captures, docs=True
            )
        else:  # (`docs`: a document is only reported when discovery was allowed to read it)
            result = fix_file(bad.path, resolved.ops, context=finding.context, captures=captures, docs=True)
        if result.status != "unchanged":
            plans.append(FixPlan(first, resolved, result=result, role="unparsed"))
    return plans
