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

from ..core.model import FixOp, ResolvedOp, RunContext, ValueSpec
from ..core.source import LogReadError, read_regular_text
from ..core.values import resolve_value
from ..core.versions import Version, parse_version
from .argv import same_value
from .formats import file_kind, parse_sites, problem
from .model import FixResult, Invocation
from .rank import rank_invocations
from .sites import Malformed, Site
from .text import LineIndex, apply_edits, diff_edits, to_lf, with_line_endings

OpLike = FixOp | ResolvedOp
#: A launch script is read again when a fix is applied: only a regular file, and never more than this.
MAX_SCRIPT_BYTES = 8 << 20


def invocations_in_text(path: str, text: str, docs: bool = False) -> list[Invocation]:
    """The vLLM invocations of one file's text, in order; raises Malformed.

    `docs`: documentation (README.md …) is read for commands too (the user opted in).
    """
    text = to_lf(text)  # same lines and columns as the original: only line ends differ
    _, sites = parse_sites(path, text, docs)
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
        except (OSError, UnicodeDecodeError, LogReadError) as exc:
            name = os.path.basename(invocation.path)
            return FixResult(invocation.path, "skipped", "", "", reason=f"skipped {name}: {exc}")
    docs = invocation.format == "docs"  # found in documentation: the user opted in
    return fix_text(
        text, invocation.path, ops, index=invocation.index, context=context, captures=captures, docs=docs
    )


def fix_file(
    path: str,
    ops: Iterable[OpLike],
    *,
    context: RunContext | None = None,
    captures: dict[str, str] | None = None,
    docs: bool = False,
) -> FixResult:
    """Apply `ops` to the invocation of `path` that best matches `context` (CLI `--fix`)."""
    name = os.path.basename(path)
    try:
        text = read_script(path)
    except (OSError, UnicodeDecodeError, LogReadError) as exc:
        return FixResult(path, "skipped", "", "", reason=f"skipped {name}: {exc}")
    return fix_text(text, path, ops, context=context, captures=captures, docs=docs)


def read_script(path: str) -> str:
    """A launch script's text exactly as stored (CRLF line ends kept, unlike `read_text`); only a
    regular file (a FIFO or device is refused without blocking), at most MAX_SCRIPT_BYTES."""
    return read_regular_text(path, MAX_SCRIPT_BYTES)


def fix_text(
    text: str,
    path: str,
    ops: Iterable[OpLike],
    *,
    index: int | None = None,
    context: RunContext | None = None,
    captures: dict[str, str] | None = None,
    docs: bool = False,
) -> FixResult:
    """Apply `ops` to invocation number `index` of `text` (None: the best match for context).

    Documentation (README.md …) is edited only with `docs` (the user's opt-in).

    The file's line ends are kept: the work is done on its LF form and the edits are carried
    back onto the original text.
    """
    name = os.path.basename(path)
    original, text = text, to_lf(text)

    def skipped(reason: str, invocation: Invocation | None = None) -> FixResult:
        return FixResult(
            path, "skipped", original, original, reason=f"skipped {name}: {reason}", invocation=invocation
        )

    if file_kind(path, text) == "docs" and not docs:
        return skipped(
            f"{name} is documentation, not a launch script (opt in with launchScripts.includeDocs)"
        )
    try:
        fmt, sites = parse_sites(path, text, docs)
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
    safer: dict[int, str] = {}  # op number → the log's advice, where the script is safer already
    for op_like in ops:
        op, fallback = (op_like.op, op_like.value) if isinstance(op_like, ResolvedOp) else (op_like, None)
        site = sites[index]
        value, advice = value_for(op, site, context, captures, fallback)
        if value is None and op.op != "add_flag":
            return skipped(f"no value can be computed for {op.name}", invocation)
        if advice is not None and not same_value(value, advice):
            safer[len(intended)] = advice
        plan = site.plan(op, value, version, _logged(op, context))
        if isinstance(plan, str):
            return skipped(plan, invocation)
        intended.append((op, value))
        if not plan.edits:
            continue
        changes.append(plan.summary)
        current = apply_edits(current, plan.edits)
        try:
            _, sites = parse_sites(path, current, docs)
        except Malformed as exc:
            return skipped(f"the edit would break the file ({exc})", invocation)
        if index >= len(sites):
            return skipped("the edit would hide the invocation", invocation)

    failure = _verify(fmt, current, sites[index], intended)
    if failure:
        return skipped(failure, invocation)
    if current == text:
        already = ", ".join(
            _describe(op, value) + (f" (at least as safe as {safer[i]})" if i in safer else "")
            for i, (op, value) in enumerate(intended)
        )
        summary = f"{name}:{invocation.line + 1}: already applied: {already}"
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
) -> tuple[str | None, str | None]:
    """(the value to set, the log's advice) for one op on this script.

    The advice is computed from the log alone (the hover shows the same value): a capture, or a
    derivation from what the crashed run used (the log's args, else vLLM's default). It is
    never stepped further from the script's value: a script that already holds the advice, or
    a value at least as safe (lower where the fix lowers, higher where it raises), keeps its
    value, so a second apply changes nothing (512 → 256 once, not → 128 → 64).
    """
    if op.op == "add_flag":
        return None, None
    advice, _ = resolve_value(op.value, captures or {}, None, log_value_for(op, context))
    if advice is None:
        advice = fallback
    current = site.current(op)
    if advice is None or current is None or op.op == "set_env":
        return advice, advice
    if at_least_as_safe(op.value, current, advice, log_value_for(op, context)):
        return current, advice
    return advice, advice


def at_least_as_safe(spec: ValueSpec | None, current: str, advice: str, crashed: str | None) -> bool:
    """Whether the script's `current` value already goes as far as the advice, or further.

    The safe direction is the derivation's (halve and step_down lower, step_up raises), else
    the way the advice moves from the crashed run's value; without one, only equal counts.
    """
    if same_value(current, advice):
        return True
    direction = _safe_direction(spec, advice, crashed)
    now, wanted = _number(current), _number(advice)
    if direction == 0 or now is None or wanted is None:
        return False
    return (now - wanted) * direction >= 0


def _safe_direction(spec: ValueSpec | None, advice: str, crashed: str | None) -> int:
    """-1 when lower values are safer for this fix, 1 when higher ones are, 0 when unknown."""
    if spec is not None and spec.derive in ("halve", "step_down"):
        return -1
    if spec is not None and spec.derive == "step_up":
        return 1
    before, after = _number(crashed), _number(advice)
    if before is None or after is None or before == after:
        return 0
    return 1 if after > before else -1


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


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


def _logged(op: FixOp, context: RunContext | None) -> bool | None:
    """Whether the log shows the crashed run set the op's flag (None: the log lists no args)."""
    if context is None or not context.args:
        return None
    return log_value_for(op, context) is not None


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
    """`--max-num-seqs 256`, `--enforce-eager`, `CUDA_LAUNCH_BLOCKING=1`."""
    if op.op == "add_flag":
        return op.name
    if op.op == "set_env":
        return f"{op.name}={value}"
    return f"{_target(op)} {value}"
