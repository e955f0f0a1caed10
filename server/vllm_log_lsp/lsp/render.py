"""Markdown for findings, symptoms and precursors (used by hover; pure functions)."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.model import PHASE_TITLES, Finding, Precursor, Symptom


def _code(text: str) -> str:
    """Inline code that survives backticks in the text."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if text else ""


def finding_markdown(finding: Finding, previews: Mapping[int, str] | None = None) -> str:
    """The whole diagnosis: cause, why, evidence, when, how the run got there, fixes, references.

    `previews` (fix index → one markdown line) show what each fix would change in the launch
    script (see `launch_index.LaunchIndex.previews`)."""
    parts: list[str] = [f"### Root cause: {finding.title}"]
    if finding.summary:
        parts.append(finding.summary)
    status = "recognised cause" if finding.recognized else "unrecognised cause: no catalog rule matched"
    parts.append(f"Rule {_code(finding.rule_id)} · {finding.family} · {status}")
    if finding.origin is not None:
        origin = finding.origin
        parts.append(f"The message is {origin.summary}.")
        if origin.version_mismatch:
            parts.append(f"**Note**: {origin.version_mismatch}.")
    if finding.explanation:
        parts += ["#### Why it happens", finding.explanation.strip()]
    if finding.evidence:
        rows = [f"- **{key}**: {_code(str(value))}" for key, value in finding.evidence.items()]
        parts += ["#### Evidence from this log", "\n".join(rows)]
    parts += ["#### When it died", _phase_and_context(finding)]
    if finding.fixes:
        parts += ["#### Fixes, in order", _fixes(finding, previews or {})]
    if finding.why:
        parts += ["#### Why this line", _why_this_line(finding)]
    if finding.next_steps:
        parts += ["#### Next steps", "\n".join(f"- {step}" for step in finding.next_steps)]
    if finding.references:
        parts += ["#### References", "\n".join(f"- {ref}" for ref in finding.references)]
    return "\n\n".join(parts)


# How many of the other candidates the hover lists (the JSON has them all).
_HOVER_CONSIDERED = 3


def _why_this_line(finding: Finding) -> str:
    lines = [f"Chosen as the root cause ({finding.confidence} confidence): {finding.why}."]
    for other in finding.considered[:_HOVER_CONSIDERED]:
        lines.append(f"- not line {other.line + 1} ({_code(other.text[:80])}): {other.why_not}")
    if len(finding.considered) > _HOVER_CONSIDERED:
        lines.append(f"- and {len(finding.considered) - _HOVER_CONSIDERED} more (`check --format json`)")
    return "\n".join(lines)


def _phase_and_context(finding: Finding) -> str:
    phase = PHASE_TITLES.get(finding.phase, finding.phase)
    lines = [
        f"- **Phase**: {phase}"
        + (f" (entered on line {finding.phase_line + 1})" if finding.phase_line is not None else "")
    ]
    ctx = finding.context
    if ctx.vllm_version:
        lines.append(f"- **vLLM**: {ctx.vllm_version}")
    if ctx.model:
        lines.append(f"- **Model**: {_code(ctx.model)}")
    if ctx.gpu:
        lines.append(f"- **GPU**: {ctx.gpu}")
    if ctx.platform:
        lines.append(f"- **Platform**: {ctx.platform}")
    if ctx.tensor_parallel_size:
        lines.append(f"- **Tensor parallel size**: {ctx.tensor_parallel_size}")
    if ctx.pipeline_parallel_size:
        lines.append(f"- **Pipeline parallel size**: {ctx.pipeline_parallel_size}")
    if ctx.args:
        where = f" (line {ctx.args_line + 1})" if ctx.args_line is not None else ""
        args = " ".join(f"{k} {v}".strip() for k, v in ctx.args.items())
        if len(args) > 600:
            args = args[:600] + " …"
        lines.append(f"- **Launch args**{where}: {_code(args)}")
    return "\n".join(lines)


def _fixes(finding: Finding, previews: Mapping[int, str]) -> str:
    items = []
    for number, resolved in enumerate(finding.fixes, 1):
        fix = resolved.fix
        head = f"{number}. **{fix.title}** ({fix.kind})"
        if resolved.command_line:
            head += f": {_code(resolved.command_line)}"
        sources = sorted({op.source for op in resolved.ops if op.source})
        if sources:
            head += f" (value from {', '.join(sources)})"
        body = [head]
        if fix.detail:
            body.append("   " + fix.detail.strip().replace("\n", "\n   "))
        if number - 1 in previews:
            body.append(f"   ↳ {previews[number - 1]}")
        items.append("\n".join(body))
    return "\n".join(items)


def symptom_markdown(symptom: Symptom, finding: Finding, root_line: int | None = None) -> str:
    """The hover of a symptom line; `root_line` is the root cause's line as the client numbers it."""
    root_line = finding.root.line if root_line is None else root_line
    first_fix = finding.fixes[0] if finding.fixes else None
    text = [
        f"### Symptom: {symptom.title}",
        f"The engine died here because of the root cause on **line {root_line + 1}**: **{finding.title}**.",
        finding.message,
    ]
    if first_fix is not None and first_fix.command_line:
        text.append(f"First fix: **{first_fix.title}**: {_code(first_fix.command_line)}")
    text.append("Go to definition jumps to the root cause; hover there for the full diagnosis.")
    return "\n\n".join(text)


def precursor_markdown(precursor: Precursor) -> str:
    parts = [f"### Precursor: {precursor.title}"]
    if precursor.explanation:
        parts.append(precursor.explanation.strip())
    return "\n\n".join(parts)
