"""Applying a fix to a launch file: once, in place, verified.

Operations are applied one at a time; after each the file is parsed again and the same
invocation (by its ordinal in the file) is found again, so later operations see earlier
ones. At the end the file must pass its format's check (`bash -n`, YAML load, `ast.parse`,
Dockerfile parse) and the invocation must read back with every intended value; otherwise
the fix is refused with a reason. The returned edits are a diff of old and new text, so they
always agree with `new_text`.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable, Sequence

from ..core.model import FixOp, ResolvedOp, RunContext
from ..core.values import resolve_value
from ..core.versions import Version, parse_version
from .argv import same_value
from .formats import parse_sites, problem
from .model import FixResult, Invocation
from .rank import rank_invocations
from .sites import Malformed, Site
from .text import LineIndex, apply_edits, diff_edits, to_lf, with_line_endings

OpLike = FixOp | ResolvedOp


def invocations_in_text(path: str, text: str) -> list[Invocation]:
    """The vLLM invocations of one file's text, in order; raises Malformed."""
    text = to_lf(text)  # same lines and columns as the original: only line ends differ
    _, sites = parse_sites(path, text)
    lines = LineIndex(text)
    return [site.invocation(path, i, lines) for i, site in enumerate(sites)]


def apply_fix(
    invocation: Invocation,
    ops: Iterable[OpLike],
    *,
    text: str | None = None,
    context: RunContext | None = None,
    captures: dict[str, str] | None = None,
) -> FixResult:
    """Apply `ops` to `invocation` in `text` (the editor's buffer; default: the file on disk).

    `captures` are the finding's evidence values (for `ValueSpec.capture`), `context` the
    log's run context (its version picks flag spellings; its args are derivation bases).
    """
    if text is None:
        try:
            text = read_script(invocation.path)
        except (OSError, UnicodeDecodeError) as exc:
            name = os.path.basename(invocation.path)
            return FixResult(invocation.path, "skipped", "", "", reason=f"skipped {name}: {exc}")
    return fix_text(text, invocation.path, ops, index=invocation.index, context=context, captures=captures)


def fix_file(
    path: str,
    ops: Iterable[OpLike],
    *,
    context: RunContext | None = None,
    captures: dict[str, str] | None = None,
) -> FixResult:
    """Apply `ops` to the invocation of `path` that best matches `context` (CLI `--fix`)."""
    name = os.path.basename(path)
    try:
        text = read_script(path)
    except (OSError, UnicodeDecodeError) as exc:
        return FixResult(path, "skipped", "", "", reason=f"skipped {name}: {exc}")
    return fix_text(text, path, ops, context=context, captures=captures)


def read_script(path: str) -> str:
    """A launch script's text exactly as stored (CRLF line ends kept, unlike `read_text`)."""
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def fix_text(
    text: str,
    path: str,
    ops: Iterable[OpLike],
    *,
    index: int | None = None,
    context: RunContext | None = None,
    captures: dict[str, str] | None = None,
) -> FixResult:
    """Apply `ops` to invocation number `index` of `text` (None: the best match for context).

    The file's line ends are kept: the work is done on its LF form and the edits are carried
    back onto the original text.
    """
    name = os.path.basename(path)
    original, text = text, to_lf(text)

    def skipped(reason: str, invocation: Invocation | None = None) -> FixResult:
        return FixResult(
            path, "skipped", original, original, reason=f"skipped {name}: {reason}", invocation=invocation
        )

    try:
        fmt, sites = parse_sites(path, text)
    except Malformed as exc:
        return skipped(str(exc))
    bad = problem(fmt, text)
    if bad:
        return skipped(bad)
    if not sites:
        return skipped("no vLLM invocation found")
    lines = LineIndex(text)
    if index is None:
        ranking = rank_invocations([s.invocation(path, i, lines) for i, s in enumerate(sites)], context)
        index = ranking.candidates[0].invocation.index
    if index >= len(sites):
        return skipped(f"invocation #{index + 1} is no longer in the file")
    invocation = sites[index].invocation(path, index, lines)
    version = _version(context, invocation)

    current = text
    changes: list[str] = []
    intended: list[tuple[FixOp, str | None]] = []
    for op_like in ops:
        op, fallback = (op_like.op, op_like.value) if isinstance(op_like, ResolvedOp) else (op_like, None)
        site = sites[index]
        value = value_for(op, site, context, captures, fallback)
        if value is None and op.op != "add_flag":
            return skipped(f"no value can be computed for {op.name}", invocation)
        plan = site.plan(op, value, version)
        if isinstance(plan, str):
            return skipped(plan, invocation)
        intended.append((op, value))
        if not plan.edits:
            continue
        changes.append(plan.summary)
        current = apply_edits(current, plan.edits)
        try:
            _, sites = parse_sites(path, current)
        except Malformed as exc:
            return skipped(f"the edit would break the file ({exc})", invocation)
        if index >= len(sites):
            return skipped("the edit would hide the invocation", invocation)

    failure = _verify(fmt, current, sites[index], intended)
    if failure:
        return skipped(failure, invocation)
    if current == text:
        already = "; ".join(_describe(op, value) for op, value in intended)
        summary = f"{name}:{invocation.line + 1}: already set ({already})"
        return FixResult(path, "unchanged", original, original, summary=summary, invocation=invocation)
    new_text = with_line_endings(original, text, current)
    edits = diff_edits(original, new_text)
    summary = f"{name}:{edits[0].start_line + 1}: " + "; ".join(changes)
    return FixResult(
        path,
        "changed",
        original,
        new_text,
        edits=tuple(edits),
        summary=summary,
        changes=tuple(changes),
        invocation=invocation,
    )


def value_for(
    op: FixOp,
    site: Site,
    context: RunContext | None,
    captures: dict[str, str] | None,
    fallback: str | None = None,
) -> str | None:
    """The op's value for this script: derivations start from the script's current value.

    Idempotence for derivations: the crashed run used the log's value (or, when the log
    does not list the flag, the default). When the script no longer holds that value but
    holds what the fix derives from it, the fix is already in: halving 256 → 128 happens
    once, not 128 → 64 on a second apply.
    """
    if op.op == "add_flag":
        return None
    current = site.current(op)
    log_value = log_value_for(op, context)
    value, _ = resolve_value(op.value, captures or {}, current, log_value)
    spec = op.value
    crashed = log_value if log_value is not None else (spec.default if spec else None)
    if spec is not None and spec.derive and current is not None and crashed is not None:
        expected, _ = resolve_value(spec, captures or {}, crashed, crashed)
        if not same_value(current, crashed) and same_value(current, expected):
            value = current
    return value if value is not None else fallback


def log_value_for(op: FixOp, context: RunContext | None) -> str | None:
    """The value the logged run used for the op's flag (a JSON key for merge_json)."""
    if context is None or op.op == "set_env":
        return None
    if op.op != "merge_json":
        return context.args.get(op.name)
    dotted = context.args.get(f"{op.name}.{op.key}")
    if dotted is not None:
        return dotted
    obj = _parse_mapping(context.args.get(op.name))
    found = obj.get(op.key or "") if obj is not None else None
    if found is None:
        return None
    return found if isinstance(found, str) else json.dumps(found)


def _parse_mapping(text: str | None) -> dict | None:
    """A JSON object, or the Python dict repr vLLM prints in `non-default args`."""
    if not text:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            obj = parse(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _version(context: RunContext | None, invocation: Invocation) -> Version | None:
    """The vLLM version for spellings: the log's, else the image tag's."""
    if context is not None and context.vllm_version:
        return parse_version(context.vllm_version)
    return parse_version(invocation.vllm_version)


def _verify(
    fmt: str | None, text: str, site: Site, intended: Sequence[tuple[FixOp, str | None]]
) -> str | None:
    bad = problem(fmt, text)  # type: ignore[arg-type]
    if bad:
        return f"the edited file would not parse ({bad})"
    for op, value in intended:
        wanted = "true" if op.op == "add_flag" else value
        found = site.current(op)
        ok = found == wanted if op.op == "set_env" else same_value(found, wanted)
        if not ok:
            return f"after the edit {_target(op)} reads {found!r}, not {wanted!r}; not applied"
    return None


def _target(op: FixOp) -> str:
    return f"{op.name}.{op.key}" if op.op == "merge_json" else op.name


def _describe(op: FixOp, value: str | None) -> str:
    if op.op == "add_flag":
        return op.name
    if op.op == "set_env":
        return f"{op.name}={value}"
    return f"{_target(op)}={value}"
