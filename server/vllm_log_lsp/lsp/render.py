"""Markdown for findings, symptoms and precursors (used by hover; pure functions)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.evidence import evidence_rows
from ..core.model import Finding, Precursor, ResolvedFix, Symptom, numbered
from ..core.phase import UNKNOWN, phase_title, phase_words

LineOf = Callable[[int], int]


def _same_line(line: int) -> int:
    return line


def _code(text: str) -> str:
    """Inline code that survives backticks in the text."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if text else ""


@dataclass(frozen=True)
class FixPreview:
    """Where a fix lands for this workspace: a script (`where`: `serve.sh:15`, `change`: what
    it edits there), or the rebuilt command when no launch script is the logged run."""

    where: str = ""
    change: str = ""
    command: str = ""

    @property
    def markdown(self) -> str:
        """One line for the fix list."""
        if self.command:
            return f"fixed command: {_code(self.command)}"
        return f"{_code(self.where)}: {_code(self.change)}" if self.where else self.change


#: The first screen of a hover (a root cause's answer) never runs longer than this.
FIRST_SCREEN_LINES = 12
#: How much of the root-cause line the first screen quotes when the rule has no sentence for it.
QUOTE_CHARS = 120


def finding_markdown(
    finding: Finding, previews: Mapping[int, FixPreview] | None = None, line_of: LineOf = _same_line
) -> str:
    """The diagnosis: a first screen (what died, why, the evidence, the first fix), a rule,
    then the reference (how it happens, every value, the fixes, the run, why this line).

    `previews` (fix index → `FixPreview`, from `launch_index.LaunchIndex.previews`) say where each fix lands in the launch
    scripts; without one a fix is shown as its flags only. `line_of` numbers the lines named as
    the client does (core line → client line, 0-based).
    """
    previews = previews or {}
    return (
        first_screen(finding, previews, line_of)
        + "\n\n---\n\n"
        + "\n\n".join(_reference(finding, previews, line_of))
    )


def first_screen(finding: Finding, previews: Mapping[int, FixPreview], line_of: LineOf = _same_line) -> str:
    """At most `FIRST_SCREEN_LINES` lines: title, what died, why, evidence, the first fix."""
    parts = [f"### Root cause: {finding.title}", _what_died(finding, line_of)]
    if finding.summary:
        parts.append(finding.summary.strip().replace("\n", " "))
    parts.append(f"**Evidence**: {_evidence_sentence(finding)}")
    first = next((i for i, fx in enumerate(finding.fixes) if fx.ops), None)
    if first is not None:
        parts.append(_first_fix(finding.fixes[first], previews.get(first)))
    elif finding.fixes:
        parts.append(f"**First fix**: {finding.fixes[0].title}")
    elif finding.next_steps:
        parts.append(f"**Next step**: {finding.next_steps[0].strip()}")
    return "\n\n".join(parts)


def _what_died(finding: Finding, line_of: LineOf) -> str:
    process = finding.exception.process if finding.exception is not None else None
    who = f"**{process}** died" if process else "The engine died"
    when = f" during {phase_title(finding.phase)}" if finding.phase != UNKNOWN else ""
    version = f" · vLLM {finding.context.vllm_version}" if finding.context.vllm_version else ""
    return f"{who}{when} (line {line_of(finding.line) + 1}){version}"


def _evidence_sentence(finding: Finding) -> str:
    """The rule's sentence with this log's values, else the root-cause line itself (an
    unrecognised cause's message only says that no rule knows it)."""
    if finding.recognized and finding.message and finding.message.strip() != finding.title.strip():
        return finding.message.strip().replace("\n", " ")
    text = finding.root_text.strip().replace("\n", " ")
    return _code(text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…")


def _first_fix(resolved: ResolvedFix, preview: FixPreview | None) -> str:
    line = f"**First fix**: {resolved.title}: {_code(resolved.command_line)}"
    if preview is None:
        return line
    if preview.command:
        return line + " (no launch script in the workspace is this run: a quick fix copies the fixed command)"
    if not preview.where:
        return f"{line} ({preview.change})"
    return f"{line} in {_code(preview.where)} ({_code(preview.change)})"


def _reference(finding: Finding, previews: Mapping[int, FixPreview], line_of: LineOf) -> list[str]:
    parts: list[str] = []
    if finding.explanation:
        parts += ["#### Why it happens", finding.explanation.strip()]
    rows = evidence_rows(finding.evidence)
    if rows:
        parts += [
            "#### Evidence from this log",
            "\n".join(f"- {name}: {_code(value)}" for name, value in rows),
        ]
    if finding.fixes:
        parts += ["#### Fixes, in order", _fixes(finding, previews)]
    parts += ["#### When it died", _phase_and_context(finding, line_of)]
    if finding.why:
        parts += ["#### Why this line", _why_this_line(finding, line_of)]
    if finding.next_steps:
        parts += ["#### Next steps", "\n".join(f"- {step}" for step in finding.next_steps)]
    parts.append(_about(finding))
    if finding.references:
        parts += ["#### References", "\n".join(f"- {ref}" for ref in finding.references)]
    return parts


def _about(finding: Finding) -> str:
    status = "recognised cause" if finding.recognized else "unrecognised cause: no catalog rule matched"
    lines = [f"Rule {_code(finding.rule_id)} · {finding.family} · {status}"]
    if finding.origin is not None:
        lines.append(f"The message is {finding.origin.summary}.")
        if finding.origin.version_mismatch:
            lines.append(f"**Note**: {finding.origin.version_mismatch}.")
    return "\n\n".join(lines)


# How many of the other candidates the hover lists (the JSON has them all).
_HOVER_CONSIDERED = 3


def _why_this_line(finding: Finding, line_of: LineOf) -> str:
    lines = [f"Chosen as the root cause ({finding.confidence} confidence): {numbered(finding.why, line_of)}."]
    for other in finding.considered[:_HOVER_CONSIDERED]:
        why_not = numbered(other.why_not, line_of)
        lines.append(f"- not line {line_of(other.line) + 1} ({_code(other.text[:80])}): {why_not}")
    if len(finding.considered) > _HOVER_CONSIDERED:
        lines.append(f"- and {len(finding.considered) - _HOVER_CONSIDERED} more (`check --format json`)")
    return "\n".join(lines)


def _phase_and_context(finding: Finding, line_of: LineOf) -> str:
    lines = [f"- **Phase**: {phase_words(finding, lambda line: line_of(line) + 1)}"]
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
        where = f" (line {line_of(ctx.args_line) + 1})" if ctx.args_line is not None else ""
        args = " ".join(f"{k} {v}".strip() for k, v in ctx.args.items())
        if len(args) > 600:
            args = args[:600] + " …"
        lines.append(f"- **Launch args**{where}: {_code(args)}")
    return "\n".join(lines)


def _fixes(finding: Finding, previews: Mapping[int, FixPreview]) -> str:
    items = []
    for number, resolved in enumerate(finding.fixes, 1):
        fix = resolved.fix
        head = f"{number}. **{fix.title}** ({fix.kind})"
        if resolved.command_line:
            head += f": {_code(resolved.command_line)}"
        sources = sorted({op.source for op in resolved.ops if op.source})
        if sources:
            head += f" ({', '.join(sources)})"
        body = [head]
        if fix.detail:
            body.append("   " + fix.detail.strip().replace("\n", "\n   "))
        if number - 1 in previews:
            body.append(f"   ↳ {previews[number - 1].markdown}")
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
