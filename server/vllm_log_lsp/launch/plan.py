"""Fix plans (pure): a finding's fixes applied to the launch scripts that may have run the log.

`plan_fixes` is where the list of planned fixes is built: the invocations are ranked against
the log's run (`rank_invocations`), the plausible ones kept best first, and each fix with
operations applied to each of them (or rebuilt as a command when there is no script at all).
The LSP layer turns the plans into code actions and hover previews; nothing here knows LSP.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..core.model import Finding, ResolvedFix
from .apply import apply_fix, fix_file, fix_text, invocations_in_text
from .discover import in_scope
from .formats import file_kind
from .model import Candidate, Discovery, DiscoveryOptions, FixResult, Invocation, SkippedFile
from .rank import rank_invocations
from .rebuild import rebuild_command
from .sites import Malformed

#: Invocations offered per fix (best first); more would drown the menu.
MAX_CANDIDATES = 5
#: Unparseable launch files explained per finding.
MAX_EXPLAINED = 3


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
            return f"fixed command: {code_span(self.command)}"
        assert self.result is not None
        if self.result.status == "skipped":
            return f"not applied: {self.result.reason}"
        return code_span(self.result.summary)


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
        plans += _unparsed_plans(finding, first, skipped, open_scripts)
    return plans


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
            plans.append(FixPlan(first, resolved, result=result))
    return plans


def plausible(candidates: Sequence[Candidate], limit: int) -> list[Invocation]:
    """The invocations worth offering: those the log does not contradict, if there are any."""
    fitting = [c for c in candidates if c.score >= 0]
    return [c.invocation for c in (fitting or list(candidates))[:limit]]


def code_span(text: str) -> str:
    """`text` as inline markdown code (a longer fence when it holds a backtick)."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"
