"""The compiler-style text report of `check`, and the summary table that ends a batch.

One block per engine death (`path:line: cause — title`, the root-cause excerpt, the fixes, the
symptoms), numbered as `grep -n`, less and vim number lines. The problem matcher shipped in
`.github/vllm-log-lsp-matcher.json` reads these lines: keep them in step.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.linebreaks import Numbering
from ..core.model import Analysis, Finding
from ..core.phase import phase_title
from ..core.precursors import collapse_precursors
from .health_text import health_lines, record_line
from .json_report import INTERNAL_ERROR, NO_BARE_CR, NO_DEATH, UNREADABLE, overall_summary


class Style:
    """ANSI styling that is a no-op when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("1;31", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def render_text(
    path: str,
    analysis: Analysis,
    style: Style,
    lines: Numbering = NO_BARE_CR,
    locate: Callable[[int], str] | None = None,
) -> str:
    """Compiler-style report of one file, numbered as `grep -n`, less and vim number its lines;
    `locate(line)` names the `file:line` of a core line when the lines come from several files."""
    out: list[str] = []
    for warning in analysis.warnings:
        out.append(f"{path}: {style.yellow('warning')}: {warning}")
    health = analysis.health
    if not analysis.findings:
        out.append(f"{path}: {style.dim('no engine death found')}")
        out.extend(_ended_in_startup_lines(path, analysis, style, lines))
    for finding in analysis.findings:
        out.extend(_finding_lines(path, finding, style, lines, locate))
        record = record_line(health.record_for(finding.line) if health else None, lines.line)
        out.extend([record] if record else [])
        out.append("")
    out.extend(precursor_lines(path, analysis, style, lines, locate))
    out.extend(health_lines(path, health, style.yellow, style.dim, lines.line))
    return "\n".join(out).rstrip("\n")


def _ended_in_startup_lines(path: str, analysis: Analysis, style: Style, lines: Numbering) -> list[str]:
    """What a log with no death that ends in start-up says: where, and what that may mean."""
    ended = analysis.ended_in_startup
    if ended is None:
        return []
    return [
        f"  {style.yellow('note')}: the log ends during start-up ({ended.title}, from line "
        f"{lines.line(ended.line) + 1}): if the server never came up, it was stopped or killed "
        "there without a report (`dmesg -T | grep -i -E 'killed process|out of memory'` for the "
        "OOM killer; a container's exit code)"
    ]


def precursor_lines(
    path: str,
    analysis: Analysis,
    style: Style,
    numbering: Numbering,
    locate: Callable[[int], str] | None = None,
) -> list[str]:
    """One line per precursor, repeats collapsed (`path:line: note: id — title (6 times, …)`)."""
    place = locate or (lambda line: f"{path}:{numbering.line(line) + 1}")
    return [
        f"{place(group.first.line)}: {style.dim('note')}: precursor {group.first.id} — {group.title(numbering.line)}"
        for group in collapse_precursors(analysis.precursors, analysis.findings)
    ]


def _finding_lines(
    path: str,
    finding: Finding,
    style: Style,
    numbering: Numbering,
    locate: Callable[[int], str] | None = None,
) -> list[str]:
    ctx = finding.context
    place = locate or (lambda line: f"{path}:{numbering.line(line) + 1}")
    head = (
        f"{style.bold(place(finding.line) + ':')} {style.red(finding.rule_id)} — {style.bold(finding.title)}"
    )
    lines = [head, f"  {style.dim('|')} {_excerpt(finding.root_text)}"]
    if finding.message != finding.title:
        lines.append(f"  {finding.message}")
    phase = phase_title(finding.phase)
    marker = f" (line {numbering.line(finding.phase_line) + 1})" if finding.phase_line is not None else ""
    facts = [f"phase: {phase}{marker}"]
    if ctx.vllm_version:
        facts.append(f"vLLM {ctx.vllm_version}")
    if ctx.model:
        facts.append(f"model {ctx.model}")
    lines.append("  " + style.dim(" · ".join(facts)))
    if finding.origin is not None:
        lines.append(f"  {style.dim('origin:')} {finding.origin.summary.replace('`', '')}")
        if finding.origin.version_mismatch:
            lines.append(f"  {style.yellow('note')}: {finding.origin.version_mismatch}")
    for number, fix in enumerate(finding.fixes, 1):
        command = f": {style.cyan(fix.command_line)}" if fix.command_line else ""
        lines.append(f"  fix {number} ({fix.fix.kind}): {fix.title}{command}")
    for step in finding.next_steps:
        lines.append(f"  next: {step}")
    for symptom in finding.symptoms:
        lines.append(f"  {style.yellow('symptom')} {place(symptom.line)}: {_excerpt(symptom.text, 100)}")
    return lines


def _excerpt(text: str, width: int = 160) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= width else first[: width - 1] + "…"


#: How many file names a line of the summary table lists before it counts the rest.
SUMMARY_NAMES = 20


def summary_table(files: list[dict], style: Style) -> str:
    """The table that ends the text report of several files: deaths by cause, the files with no
    death, the files that could not be read (or that vllm-log-lsp failed on)."""
    summary = overall_summary(files)
    deaths = summary["incidents"]
    parts = [
        f"{_count(summary['files'], 'file')} checked",
        f"{_count(deaths, 'engine death')} in {_count(summary['with_death'], 'file')}",
        f"{summary['without_death']} without",
        f"{summary['unreadable'] + summary['internal_errors']} unreadable",
    ]
    out = [style.bold("summary: " + ", ".join(parts))]
    if summary["causes"]:
        width = max(len("cause"), *(len(row["cause"]) for row in summary["causes"]))
        out.append(style.dim(f"  {'cause':<{width}}  deaths  files"))
        out += [
            f"  {row['cause']:<{width}}  {row['incidents']:>6}  {row['files']:>5}"
            for row in summary["causes"]
        ]
    by_status = {
        status: [f for f in files if f["summary"]["status"] == status]
        for status in (NO_DEATH, UNREADABLE, INTERNAL_ERROR)
    }
    if by_status[NO_DEATH]:
        out.append(
            f"  no engine death ({len(by_status[NO_DEATH])}): "
            + _names([f["path"] for f in by_status[NO_DEATH]])
        )
    for status, label in ((UNREADABLE, "unreadable"), (INTERNAL_ERROR, "internal error")):
        failed = by_status[status]
        if failed:
            out.append(f"  {style.yellow(label)} ({len(failed)}):")
            out += [f"    {f['error']}" for f in failed[:SUMMARY_NAMES]]
            out += [f"    … and {len(failed) - SUMMARY_NAMES} more"] if len(failed) > SUMMARY_NAMES else []
    return "\n".join(out)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:SUMMARY_NAMES])
    return shown + (f", … and {len(paths) - SUMMARY_NAMES} more" if len(paths) > SUMMARY_NAMES else "")
