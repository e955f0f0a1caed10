"""`check --format sarif`: the JSON report as a SARIF 2.1.0 log (GitHub code scanning, IDEs).

One result per engine death, at its root cause, with the catalog rule that names the cause as
`ruleId`; its symptoms are related locations, its fixes text in the message (a fix edits a launch
script, not the log, so it is no SARIF `fix`, which replaces bytes of the analysed file). Files
that could not be read and input warnings are tool notifications. Columns are code points
(`columnKind`), as in the JSON report; `endColumn` is the column after the range.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from urllib.parse import quote

from .. import __version__
from ..core.catalog import Catalog, Rule
from .json_report import STDIN_NAME, overall_summary

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "vllm-log-lsp"
#: Where a rule without a reference of its own points (vLLM's troubleshooting guide).
TROUBLESHOOTING_URL = "https://docs.vllm.ai/en/latest/usage/troubleshooting.html"
#: A result's fingerprint: the cause and the root-cause text, not the line (a log that grows or
#: is rotated keeps its fingerprints).
FINGERPRINT = "vllmLogRootCause/v1"


def sarif_log(files: list[dict], catalog: Catalog) -> dict:
    """The SARIF log of a `check` run from its JSON file entries (`report.json_report`)."""
    rules: dict[str, int] = {}
    descriptors: list[dict] = []
    results: list[dict] = []
    artifacts: list[dict] = []
    notifications: list[dict] = []
    for entry in files:
        location = artifact_location(entry["path"], len(artifacts))
        artifacts.append(
            {
                "location": location,
                **({"description": {"text": "standard input"}} if entry["path"] == STDIN_NAME else {}),
            }
        )
        if entry["error"]:
            notifications.append(_notification("error", entry["error"], location))
        notifications += [_notification("warning", w, location) for w in entry["warnings"]]
        for incident in entry["incidents"]:
            cause = incident["root_cause"]["cause"]
            if cause not in rules:
                rules[cause] = len(descriptors)
                descriptors.append(rule_descriptor(_rule(catalog, cause), incident))
            results.append(_result(incident, location, rules[cause]))
    summary = overall_summary(files)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": TROUBLESHOOTING_URL,
                        "rules": descriptors,
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": summary["unreadable"] + summary["internal_errors"] == 0,
                        "exitCode": summary["exit_status"],
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "artifacts": artifacts,
                "columnKind": "unicodeCodePoints",
                "results": results,
                "properties": {"summary": summary},
            }
        ],
    }


def artifact_location(path: str, index: int) -> dict:
    """A file as SARIF names it: a relative URI reference for a relative path (what code
    scanning resolves against the checkout), a `file:` URI for an absolute one."""
    if path == STDIN_NAME:
        uri = "stdin"
    elif os.path.isabs(path):
        uri = pathlib.Path(path).as_uri()
    else:
        uri = quote(pathlib.PurePath(path).as_posix(), safe="/")
    return {"uri": uri, "index": index}


def _rule(catalog: Catalog, rule_id: str) -> Rule | None:
    from ..core.origins import family_rule  # the mined families: only for their rare ids

    return catalog.rule(rule_id) or family_rule(rule_id)


def rule_descriptor(rule: Rule | None, incident: dict) -> dict:
    """The SARIF rule of a cause, from the catalog (else from what the incident says of it)."""
    root = incident["root_cause"]
    title = rule.title if rule is not None else root["title"]
    family = rule.family if rule is not None else root["family"]
    summary = (rule.summary if rule is not None else "") or title
    explanation = (rule.explanation if rule is not None else "") or root["message"]
    references = list(rule.references) if rule is not None else list(incident["references"])
    fixes = (
        [f"{n}. {fix.title} ({fix.kind})" for n, fix in enumerate(rule.fixes, 1)] if rule is not None else []
    )
    help_text = explanation + ("\n\nFixes, in order of preference:\n" + "\n".join(fixes) if fixes else "")
    descriptor = {
        "id": root["cause"],
        "name": _pascal(root["cause"]),
        "shortDescription": {"text": title},
        "fullDescription": {"text": summary},
        "help": {"text": help_text, "markdown": help_text},
        "helpUri": next(
            (r for r in references if r.startswith(("http://", "https://"))), TROUBLESHOOTING_URL
        ),
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["vllm", family], "family": family},
    }
    return descriptor


def _pascal(rule_id: str) -> str:
    return "".join(part.capitalize() for part in rule_id.replace("_", "-").split("-") if part)


def _result(incident: dict, location: dict, rule_index: int) -> dict:
    root = incident["root_cause"]
    result = {
        "ruleId": root["cause"],
        "ruleIndex": rule_index,
        "level": "error",
        "kind": "fail",
        "message": {"text": result_message(incident)},
        "locations": [_location(location, root, root["text"])],
        "relatedLocations": [
            {
                **_location(location, s, s["text"]),
                "id": n,
                "message": {"text": f"symptom ({s['kind']}): {s['text']}"},
            }
            for n, s in enumerate(incident["symptoms"], 1)
        ],
        "partialFingerprints": {FINGERPRINT: _fingerprint(root["cause"], root["text"])},
        "properties": {
            "phase": incident["phase"],
            "confidence": root["confidence"],
            "recognized": root["recognized"],
            "rootCauseTimestamp": root["timestamp"],
            "deathTimestamp": (incident["death"] or {}).get("timestamp"),
            "fixes": [
                {"title": f["title"], "kind": f["kind"], "commandLine": f["command_line"]}
                for f in incident["fixes"]
            ],
        },
    }
    return result


def result_message(incident: dict) -> str:
    """The result's text: the cause with its evidence, the phase, then the fixes in order."""
    root = incident["root_cause"]
    lines = [
        f"{root['message']} (line {root['line']}: {_first_line(root['text'])})",
        f"Phase: {incident['phase']}.",
    ]
    for number, fix in enumerate(incident["fixes"], 1):
        command = f": {fix['command_line']}" if fix["command_line"] else ""
        lines.append(f"Fix {number} ({fix['kind']}): {fix['title']}{command}")
    lines += [f"Next: {step}" for step in incident["next_steps"]]
    return "\n".join(lines)


def _location(artifact: dict, where: dict, text: str) -> dict:
    region = {
        "startLine": where["line"],
        "startColumn": where["column"],
        "snippet": {"text": _first_line(text)},
    }
    if where.get("end_column") and where["end_column"] > where["column"]:
        region["endColumn"] = where["end_column"]
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def _notification(level: str, text: str, artifact: dict) -> dict:
    return {
        "level": level,
        "message": {"text": text},
        "locations": [{"physicalLocation": {"artifactLocation": artifact}}],
    }


def _fingerprint(cause: str, text: str) -> str:
    return hashlib.sha256(f"{cause}\n{_first_line(text)}".encode()).hexdigest()[:32]


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""
