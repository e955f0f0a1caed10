"""`check --format github`: GitHub Actions workflow commands, one annotation per finding.

An engine death is an `::error` at its root cause (file, line, column range, a title naming the
cause) whose message holds the evidence, the phase, the fixes and the symptoms; a health finding
is a `::warning` or `::notice` at its stats line; an unreadable file an `::error` on the file.
Values are escaped as the Actions toolkit escapes them, so no text from a log can end a command
or start another: a log line is untrusted input.
"""

from __future__ import annotations

from .json_report import STDIN_NAME
from .sarif import result_message

TITLE_PREFIX = "vllm-log-lsp"
#: Health severities as Actions annotation levels.
_HEALTH_LEVEL = {"warning": "warning", "information": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    """A command's message: `%`, CR and LF escaped (what the runner unescapes)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value: also `:` and `,`, which would end it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: object) -> str:
    """One workflow command line, `::level key=value,…::message`; None properties left out."""
    shown = ",".join(
        f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None
    )
    return f"::{level}{' ' + shown if shown else ''}::{escape_data(message)}"


def file_commands(entry: dict) -> list[str]:
    """The workflow commands of one file's JSON entry (`report.json_report.file_json`)."""
    path = None if entry["path"] == STDIN_NAME else entry["path"]
    if entry["error"]:
        return [command("error", entry["error"], file=path, title=f"{TITLE_PREFIX}: cannot check this file")]
    out = [
        command("warning", f"input: {w}", file=path, title=f"{TITLE_PREFIX}: input")
        for w in entry["warnings"]
    ]
    for incident in entry["incidents"]:
        root = incident["root_cause"]
        symptoms = [
            f"Symptom line {s['line']}: {s['text'].splitlines()[0] if s['text'] else ''}"
            for s in incident["symptoms"]
        ]
        out.append(
            command(
                "error",
                "\n".join([result_message(incident), *symptoms]),
                file=path,
                line=root["line"],
                col=root["column"],
                endColumn=root["end_column"],
                title=f"{TITLE_PREFIX}: {root['cause']} — {root['title']}",
            )
        )
    for item in entry["health"]["findings"]:
        fixes = [
            f"Fix {n}: {f['title']}{': ' + f['command_line'] if f['command_line'] else ''}"
            for n, f in enumerate(item["fixes"], 1)
        ]
        out.append(
            command(
                _HEALTH_LEVEL.get(item["severity"], "notice"),
                "\n".join([item["message"], *fixes]),
                file=path,
                line=item["line"],
                col=item["column"],
                title=f"{TITLE_PREFIX}: {item['id']} — {item['title']}",
            )
        )
    return out
