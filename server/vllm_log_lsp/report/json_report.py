"""`check --format json`: the documented report (see docs/json-report.md), and the summaries.

Every other machine-readable output (SARIF, GitHub workflow commands, the batch summary table) is
rendered from these dictionaries, so the formats cannot disagree about a line or a cause. Line
numbers are the ones `grep -n` prints (`NewlineLines`), columns 1-based code points; an
`end_column` is the column just after the range, as SARIF counts it.
"""

from __future__ import annotations

from collections import Counter

from ..core.linebreaks import NewlineLines, Numbering
from ..core.model import Analysis, Finding, Precursor, Span, Symptom, numbered
from ..core.precursors import collapse_precursors
from ..core.text import LogIndex
from ..core.timestamps import Timestamps
from .health_text import health_to_json, record_to_json

#: Bumped when a field changes meaning or goes away; new fields do not bump it. 2: severities,
#: end columns, timestamps, precursors, per-file and overall summaries.
JSON_SCHEMA_VERSION = 2
NO_BARE_CR = NewlineLines("")
#: How standard input is named in reports, text and JSON alike.
STDIN_NAME = "<stdin>"

#: Per-file status, in the order the exit status ranks them (see `exit_status`).
DEATH, NO_DEATH, UNREADABLE, INTERNAL_ERROR = "death", "no-death", "unreadable", "internal-error"


def file_json(name: str, analysis: Analysis, numbering: Numbering, index: LogIndex | None) -> dict:
    """The JSON of one analysed file; `index` (of the analysed text) gives the timestamps."""
    times = Timestamps(index, analysis.run_starts) if index is not None else None
    entry = {
        "path": name,
        "error": None,
        "warnings": list(analysis.warnings),
        "incidents": [
            {
                **finding_to_json(finding, numbering, times),
                "prefailure": record_to_json(
                    analysis.health.record_for(finding.line) if analysis.health else None, numbering.line
                ),
            }
            for finding in analysis.findings
        ],
        "precursors": [
            {
                **precursor_to_json(group.first, numbering),
                "count": group.count,
                "lines": [numbering.line(p.line) + 1 for p in group.occurrences],
            }
            for group in collapse_precursors(analysis.precursors, analysis.findings)
        ],
        "health": health_to_json(analysis.health, numbering.line),
        "ended_in_startup": (
            {"phase": ended.phase, "line": numbering.line(ended.line) + 1}
            if (ended := analysis.ended_in_startup) is not None
            else None
        ),
    }
    entry["summary"] = file_summary(entry)
    return entry


def error_json(name: str, message: str, status: str = UNREADABLE) -> dict:
    """The JSON of a file that could not be checked (`message` says why)."""
    entry: dict[str, object] = {
        "path": name,
        "error": message,
        "warnings": [],
        "incidents": [],
        "precursors": [],
    }
    entry["health"] = {"findings": [], "series": []}
    entry["summary"] = {**file_summary(entry), "status": status}
    return entry


def _range(numbering: Numbering, span: Span) -> dict:
    line, column = numbering.position(span.line, span.start)
    end_line, end_column = numbering.position(span.line, max(span.end, span.start))
    # A span never crosses a `\n`; a bare `\r` inside it only moves both columns.
    return {
        "line": line + 1,
        "column": column + 1,
        "end_column": end_column + 1 if end_line == line else None,
    }


def finding_to_json(finding: Finding, lines: Numbering = NO_BARE_CR, times: Timestamps | None = None) -> dict:
    """The documented JSON shape of one incident; line numbers as `grep -n` counts them in the
    text `lines` was built from; timestamps read by `times`, of the analysed text (None without)."""
    ctx = finding.context
    first_symptom = min(finding.symptoms, key=lambda s: s.line, default=None)
    return {
        "severity": "error",
        "root_cause": {
            **_range(lines, finding.root),
            "timestamp": _timestamp(times, finding.line),
            "text": finding.root_text,
            "cause": finding.rule_id,
            "title": finding.title,
            "family": finding.family,
            "message": finding.message,
            "recognized": finding.recognized,
            "why": numbered(finding.why, lines.line),
            "confidence": finding.confidence,
            "considered": [
                {"line": lines.line(c.line) + 1, "text": c.text, "why_not": numbered(c.why_not, lines.line)}
                for c in finding.considered
            ],
            "origin": _origin_json(finding),
        },
        "death": None
        if first_symptom is None
        else {"line": lines.line(first_symptom.line) + 1, "timestamp": _timestamp(times, first_symptom.line)},
        "symptoms": [_symptom_json(s, lines, times) for s in finding.symptoms],
        "phase": finding.phase,
        "phase_line": None if finding.phase_line is None else lines.line(finding.phase_line) + 1,
        "phase_source": finding.phase_source,
        "evidence": finding.evidence,
        "fixes": [
            {
                "title": f.title,
                "kind": f.fix.kind,
                "command_line": f.command_line,
                "detail": f.fix.detail,
                "ops": [
                    {"op": o.op.op, "name": o.op.name, "key": o.op.key, "value": o.value, "source": o.source}
                    for o in f.ops
                ],
            }
            for f in finding.fixes
        ],
        "next_steps": list(finding.next_steps),
        "explanation": finding.explanation,
        "references": list(finding.references),
        "context": {
            "vllm_version": ctx.vllm_version,
            "model": ctx.model,
            "args": ctx.args,
            "gpu": ctx.gpu,
            "tensor_parallel_size": ctx.tensor_parallel_size,
        },
    }


def _symptom_json(symptom: Symptom, lines: Numbering, times: Timestamps | None) -> dict:
    return {
        **_range(lines, symptom.span),
        "severity": "warning",
        "timestamp": _timestamp(times, symptom.line),
        "text": symptom.text,
        "kind": symptom.kind,
    }


def precursor_to_json(precursor: Precursor, lines: Numbering = NO_BARE_CR) -> dict:
    """A line that explains a later death without being its cause (an editor's Information); in a
    file's report, the first of its repeats, with their `count` and `lines`."""
    return {
        **_range(lines, precursor.span),
        "severity": "information",
        "id": precursor.id,
        "title": precursor.title,
        "text": precursor.text,
    }


def _timestamp(times: Timestamps | None, line: int) -> str | None:
    return None if times is None else times.at(line)


def _origin_json(finding: Finding) -> dict | None:
    origin = finding.origin
    if origin is None:
        return None
    return {
        "package": origin.package,
        "kind": origin.kind,
        "module": origin.module,
        "function": origin.function,
        "versions": origin.versions,
        "template": origin.template,
        "summary": origin.summary,
        "version_mismatch": origin.version_mismatch,
    }


def shown_name(path: str) -> str:
    """How a FILE argument is named in reports (`-` is standard input)."""
    return STDIN_NAME if path == "-" else path


# -- summaries ---------------------------------------------------------------------------------
def file_summary(entry: dict) -> dict:
    """What one file's entry amounts to: its status, its deaths by cause, the rest counted."""
    incidents = entry["incidents"]
    return {
        "status": UNREADABLE if entry["error"] else DEATH if incidents else NO_DEATH,
        "incidents": len(incidents),
        "causes": dict(Counter(i["root_cause"]["cause"] for i in incidents)),
        "precursors": len(entry["precursors"]),
        "health_findings": len(entry["health"]["findings"]),
        "warnings": len(entry["warnings"]),
    }


def overall_summary(files: list[dict]) -> dict:
    """The batch in numbers: files by status, deaths by cause (most first), the exit status."""
    statuses = Counter(f["summary"]["status"] for f in files)
    causes: Counter[str] = Counter()
    files_by_cause: Counter[str] = Counter()
    for entry in files:
        causes.update(entry["summary"]["causes"])
        files_by_cause.update(entry["summary"]["causes"].keys())
    return {
        "files": len(files),
        "with_death": statuses[DEATH],
        "without_death": statuses[NO_DEATH],
        "unreadable": statuses[UNREADABLE],
        "internal_errors": statuses[INTERNAL_ERROR],
        "incidents": sum(causes.values()),
        "causes": [
            {"cause": cause, "incidents": count, "files": files_by_cause[cause]}
            for cause, count in sorted(causes.items(), key=lambda item: (-item[1], item[0]))
        ],
        "exit_status": exit_status(files),
    }


#: Exit statuses (the CLI's, documented in `--help`).
EXIT_HEALTHY, EXIT_DEATH, EXIT_UNREADABLE, EXIT_INTERNAL = 0, 1, 2, 3


def exit_status(files: list[dict]) -> int:
    """3 when vllm-log-lsp failed on a file, else 2 when one could not be read (nothing is called
    healthy then), else 1 when one shows an engine death, else 0."""
    statuses = {f["summary"]["status"] for f in files}
    for status, code in ((INTERNAL_ERROR, EXIT_INTERNAL), (UNREADABLE, EXIT_UNREADABLE), (DEATH, EXIT_DEATH)):
        if status in statuses:
            return code
    return EXIT_HEALTHY


def report_json(files: list[dict]) -> dict:
    """The whole `check --format json` document."""
    return {"version": JSON_SCHEMA_VERSION, "files": files, "summary": overall_summary(files)}
