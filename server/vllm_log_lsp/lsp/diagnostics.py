"""Findings → LSP diagnostics (pure rendering; `pipeline` publishes them).

Per finding: one Error on the root cause (the exception text, not the line's prefixes) whose
related information lists every symptom; one Warning per symptom pointing back at the cause.
Precursors are Information. Health findings (from the stats lines, on any log) are Information or
Warning at the stats line where the condition began, never Error. Severities can be overridden per
rule or condition id, or for all symptoms (`symptom`), precursors (`precursor`) or health
findings (`health`).
"""

from __future__ import annotations

from lsprotocol import types

from ..core.health import HealthFinding
from ..core.model import Finding
from ..core.phase import phase_words
from ..core.precursors import RepeatedPrecursor, collapse_precursors
from .positions import line_range
from .state import AnalysisResult

SOURCE = "vllm-log"
#: The code of the note on a log with no death that ends in start-up.
ENDED_IN_STARTUP = "ended-in-startup"
#: Where a finding without references of its own links to.
TROUBLESHOOTING_URL = "https://docs.vllm.ai/en/latest/usage/troubleshooting.html"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def rule_href(finding: Finding) -> str:
    """The page that explains a finding's rule: its first reference, else vLLM's troubleshooting."""
    for ref in finding.references:
        if ref.startswith(("http://", "https://")):
            return ref
    return TROUBLESHOOTING_URL


def _severity(result: AnalysisResult, keys: tuple[str, ...], default: str) -> types.DiagnosticSeverity:
    overrides = result.settings.severity_overrides
    for key in keys:
        if key in overrides:
            return _SEVERITY[overrides[key]]
    return _SEVERITY[default]


def build_diagnostics(uri: str, result: AnalysisResult, encoding: str) -> list[types.Diagnostic]:
    """Every diagnostic for one analysed document."""
    if result.skipped_reason:
        # (A log not diagnosed must never look healthy: a failed analysis is an error.)
        return [
            types.Diagnostic(
                range=line_range(0, "", encoding),
                message=result.skipped_reason,
                severity=types.DiagnosticSeverity.Error
                if result.failed
                else types.DiagnosticSeverity.Information,
                source=SOURCE,
                code="analysis-failed" if result.failed else "file-too-large",
            )
        ]
    diagnostics: list[types.Diagnostic] = []
    for warning in result.analysis.warnings:
        diagnostics.append(
            types.Diagnostic(
                range=line_range(0, "", encoding),
                message=f"Input: {warning}",
                severity=types.DiagnosticSeverity.Information,
                source=SOURCE,
                code="input",
            )
        )
    for finding in result.analysis.findings:
        diagnostics.extend(_finding_diagnostics(uri, result, finding, encoding))
    if result.settings.precursors:
        for group in collapse_precursors(result.analysis.precursors, result.analysis.findings):
            diagnostics.append(_precursor_diagnostic(uri, result, group, encoding))
    health = result.analysis.health
    for item in health.findings if health is not None else ():
        diagnostics.append(_health_diagnostic(uri, result, item, encoding))
    ended = result.analysis.ended_in_startup
    if ended is not None:
        diagnostics.append(
            types.Diagnostic(
                range=result.lines.line_range(ended.line, encoding),
                message=(
                    f"The log ends during start-up ({ended.title}) with no death in it: if the server "
                    "never came up, it was stopped or killed here without a report"
                ),
                severity=_severity(result, (ENDED_IN_STARTUP,), "information"),
                source=SOURCE,
                code=ENDED_IN_STARTUP,
            )
        )
    return diagnostics


def _precursor_diagnostic(
    uri: str, result: AnalysisResult, group: RepeatedPrecursor, encoding: str
) -> types.Diagnostic:
    """One diagnostic for a precursor however often it repeats: on its first line, with its count
    and line span in the message and every other occurrence as related information."""
    pre = group.first
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=result.lines.range(other.span, encoding)),
            message=f"repeated on line {result.lines.line(other.line) + 1}",
        )
        for other in group.occurrences[1:]
    ]
    return types.Diagnostic(
        range=result.lines.range(pre.span, encoding),
        message=group.title(result.lines.line),
        severity=_severity(result, (pre.id, "precursor"), "information"),
        source=SOURCE,
        code=pre.id,
        related_information=related or None,
    )


def _health_diagnostic(
    uri: str, result: AnalysisResult, item: HealthFinding, encoding: str
) -> types.Diagnostic:
    related = []
    if item.last_line != item.line:
        last = result.lines.line_range(item.last_line, encoding)
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=last),
                message=f"last seen on line {result.lines.line(item.last_line) + 1}",
            )
        )
    severity = _severity(result, (item.id, "health"), item.severity)
    if severity == types.DiagnosticSeverity.Error:  # health never claims a death
        severity = types.DiagnosticSeverity.Warning
    return types.Diagnostic(
        range=result.lines.range(item.span, encoding),
        message=f"{item.title}: {item.message} ({item.lines_text(result.lines.line)})",
        severity=severity,
        source=SOURCE,
        code=item.id,
        related_information=related or None,
        data={"role": "health", "healthId": item.id},
    )


def _finding_diagnostics(
    uri: str, result: AnalysisResult, finding: Finding, encoding: str
) -> list[types.Diagnostic]:
    root_range = result.lines.range(finding.root, encoding)
    root_location = types.Location(uri=uri, range=root_range)
    symptoms = []
    seen: set[tuple[int, int, int]] = set()
    for symptom in finding.symptoms:
        key = (symptom.span.line, symptom.span.start, symptom.span.end)
        if symptom.line == finding.root.line or key in seen:
            continue
        seen.add(key)
        symptoms.append((symptom, result.lines.range(symptom.span, encoding)))
    root = types.Diagnostic(
        range=root_range,
        message=finding.message,
        severity=_severity(result, (finding.rule_id,), "error"),
        code=finding.rule_id,
        code_description=types.CodeDescription(href=rule_href(finding)),
        source=SOURCE,
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=rng),
                message=f"symptom (line {result.lines.line(s.line) + 1}): {s.title}",
            )
            for s, rng in symptoms
        ]
        + _failing_frame_information(uri, result, finding, encoding)
        + [_phase_information(uri, result, finding, encoding)],
        # For code actions: which finding this is, without re-deriving it from the range.
        data={"ruleId": finding.rule_id, "rootLine": finding.root.line, "role": "root"},
    )
    out = [root]
    for symptom, rng in symptoms:
        out.append(
            types.Diagnostic(
                range=rng,
                message=f"{symptom.title}: caused by line {result.lines.line(finding.root.line) + 1}: {finding.title}",
                severity=_severity(result, ("symptom",), "warning"),
                code=symptom.kind,
                source=SOURCE,
                related_information=[
                    types.DiagnosticRelatedInformation(
                        location=root_location, message=f"root cause: {finding.message}"
                    )
                ],
                data={"ruleId": finding.rule_id, "rootLine": finding.root.line, "role": "symptom"},
            )
        )
    return out


def _phase_information(
    uri: str, result: AnalysisResult, finding: Finding, encoding: str
) -> types.DiagnosticRelatedInformation:
    """The death's phase, as the hover and outline name it, at the line that entered it."""
    line = finding.phase_line if finding.phase_line is not None else finding.root.line
    return types.DiagnosticRelatedInformation(
        location=types.Location(uri=uri, range=result.lines.line_range(line, encoding)),
        message=f"phase: {phase_words(finding, lambda n: result.lines.line(n) + 1)}",
    )


def _failing_frame_information(
    uri: str, result: AnalysisResult, finding: Finding, encoding: str
) -> list[types.DiagnosticRelatedInformation]:
    """A bare `AssertionError` points at the frame whose assert failed."""
    frame = finding.evidence.get("failing_frame")
    if not frame or not finding.related_lines:
        return []
    line = finding.related_lines[0]
    return [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=result.lines.line_range(line, encoding)),
            message=f"failing frame: {frame}",
        )
    ]
