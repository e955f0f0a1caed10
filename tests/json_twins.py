"""JSON-format twins of plain vLLM logs, written the way vLLM 0.31+ writes its JSON format.

vLLM's JSON handler is python-json-logger's `JsonFormatter` with `JSON_FORMAT = "%(asctime)s
%(levelname)s %(name)s %(processName)s %(process)d %(message)s"`; the record factory adds
`vllm_process_name`, which the formatter writes as an extra key; `logger.exception`'s traceback
goes to `exc_info`; `json.dumps` escapes line breaks and (ensure_ascii) non-ASCII text. A plain
record is the run of lines that repeat one header (`NewLineFormatter` repeats it on each line of
the message and of its traceback); lines without vLLM's header (Python's own tracebacks, uvicorn,
tqdm) are written by no handler and stay as they are. A runtime's prefix (`svc  | `, a CRI
timestamp) stays before the record, as the runtime writes it before any line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from vllm_log_lsp.core.lines import parse_line

_TRACEBACK = "Traceback (most recent call last):"


@dataclass
class Twin:
    text: str
    # 0-based plain line -> 0-based line of the twin that holds it
    line_of: list[int] = field(default_factory=list)


def _lead(line) -> str | None:
    """The runtime's prefix before vLLM's part of a line (`svc  | `, a CRI timestamp), which a
    runtime also writes before a JSON record; None when it cannot be told apart."""
    if not line.outer:
        return ""
    marks = [f"({line.process} pid=" if line.process else None, f"{line.level} {line.timestamp}"]
    found = [line.text.find(mark) for mark in marks if mark]
    found = [at for at in found if at > 0]
    return line.text[: min(found)] if found else None


def _record(lines: list) -> dict:
    first = lines[0]
    messages = [line.message for line in lines]
    exc_at = next((i for i, m in enumerate(messages) if i and m.startswith(_TRACEBACK)), None)
    month_day, clock = first.timestamp.split(" ")
    source = (first.source or "x.py:0").rsplit(":", 1)[0]
    module = source.rsplit("/", 1)[-1].removesuffix(".py")
    record = {
        "asctime": f"2026-{month_day} {clock},000",
        "levelname": first.level,
        "name": f"vllm.{module}",
        "processName": first.process or "MainProcess",
        "process": first.pid if first.pid is not None else 1,
        "message": "\n".join(messages[:exc_at]),
    }
    if exc_at is not None:
        record["exc_info"] = "\n".join(messages[exc_at:])
    if first.process:
        record["vllm_process_name"] = first.process
    return record


def json_twin(plain: str) -> Twin:
    """The JSON-format log vLLM would have written for the plain log `plain` (`\\n` lines)."""
    out: list[str] = []
    twin = Twin("")
    pending: list = []

    def flush() -> None:
        if pending:
            out.append(_lead(pending[0]) + json.dumps(_record(pending)))
            pending.clear()

    for number, raw in enumerate(plain.split("\n")):
        line = parse_line(number, raw.rstrip("\r"))
        logged = line.level is not None and line.timestamp is not None and line.source is not None
        key = (line.stream, line.level, line.timestamp, line.source)
        if pending and (not logged or key != _key(pending[0])):
            flush()
        if logged and _lead(line) is not None:
            pending.append(line)
            twin.line_of.append(len(out))
        else:
            twin.line_of.append(len(out))
            out.append(raw)
    flush()
    twin.text = "\n".join(out)
    return twin


def _key(line) -> tuple:
    return (line.stream, line.level, line.timestamp, line.source)
