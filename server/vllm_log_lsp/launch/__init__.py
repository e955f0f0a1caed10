"""Launch scripts: find where vLLM is started and apply a fix there (pure, no LSP imports).

Typical use::

    found = discover([workspace_folder])
    ranking = rank_invocations(found.invocations, finding.context)
    result = apply_fix(ranking.best, fix.ops, context=finding.context, captures=finding.evidence)
    if result.changed: ...  # result.edits, result.new_text, result.summary, result.diff()
"""

from .apply import apply_fix, fix_file, fix_text, invocations_in_text
from .discover import discover
from .model import (
    Candidate,
    Discovery,
    DiscoveryOptions,
    FixResult,
    Invocation,
    Ranking,
    SkippedFile,
    SourceRange,
)
from .rank import rank_invocations
from .rebuild import rebuild_command
from .text import TextEdit, apply_text_edits, unified_diff

__all__ = [
    "Candidate",
    "Discovery",
    "DiscoveryOptions",
    "FixResult",
    "Invocation",
    "Ranking",
    "SkippedFile",
    "SourceRange",
    "TextEdit",
    "apply_fix",
    "apply_text_edits",
    "discover",
    "fix_file",
    "fix_text",
    "invocations_in_text",
    "rank_invocations",
    "rebuild_command",
    "unified_diff",
]
