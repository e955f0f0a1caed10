"""A log collector's JSON lines (one line of the log as printed per object): docker's json-file
driver (`{"log": "…\\n", "stream": "stderr", "time": …}`), Loki (`line`), Google Cloud Logging
(`textPayload`), journald (`MESSAGE`), an export with `message`. Each object's line is read as the
line it holds, and positions land on its escaped text in the object.

Before, such a file was read as plain text: its tracebacks' frames were escaped inside strings,
so 25 of 84 corpus logs named another cause (002 `plugin-version-mismatch` → `unrecognized`,
007 `oom-sampler-warmup` → `device-oom`, …); now every one answers as its log.
"""

from __future__ import annotations

import json

import pytest

from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.jsonlog import looks_like_json_log, parse_record
from vllm_log_lsp.core.linebreaks import NewlineLines

LOGS = {
    f"{p.parent.name}/{p.name}": read_log(p)
    for folder in (CRASH, CRASH2, CRASH3, HEALTHY)
    for p in sorted(folder.glob("*.log"))
}


def _stamp(n: int) -> str:
    return f"2025-10-31T16:{n // 60 % 60:02d}:{n % 60:02d}.{n:09d}Z"


COLLECTORS = {
    "docker json-file": lambda line, n: {"log": line + "\n", "stream": "stderr", "time": _stamp(n)},
    "loki": lambda line, n: {"line": line, "timestamp": _stamp(n), "labels": {"app": "vllm"}},
    "gcp": lambda line, n: {"textPayload": line, "timestamp": _stamp(n), "severity": "DEFAULT"},
    "journald": lambda line, n: {"__REALTIME_TIMESTAMP": str(n), "_PID": "7", "MESSAGE": line},
    "cloudwatch": lambda line, n: {"@timestamp": _stamp(n), "message": line},
}


def collected(text: str, collector: str, **dumps: object) -> str:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    make = COLLECTORS[collector]
    return "\n".join(json.dumps(make(line, n), **dumps) for n, line in enumerate(lines)) + "\n"  # type: ignore[arg-type]


def deaths(text: str) -> list[tuple[int, str]]:
    analysis = analyze(text)
    line = analysis.source_map.line if analysis.source_map is not None else (lambda n: n)
    return [(line(f.line), f.rule_id) for f in analysis.findings]


def plain_deaths(text: str) -> list[tuple[int, str]]:
    """(`\\n`-line, rule): the lines a collector's objects are (a bare `\\r` is inside one)."""
    analysis = analyze(text)
    lines = NewlineLines(text)
    return [(lines.line(f.line), f.rule_id) for f in analysis.findings]


@pytest.mark.parametrize("collector", sorted(COLLECTORS))
def test_every_corpus_log_from_a_collector_answers_as_itself(collector: str) -> None:
    differ = [name for name, text in LOGS.items() if deaths(collected(text, collector)) != plain_deaths(text)]
    assert differ == []


@pytest.mark.parametrize("ascii_only", [True, False])
def test_the_root_cause_lands_on_its_escaped_text(ascii_only: bool) -> None:
    text = LOGS["crash/007.log"].replace("CUDA out of memory", "CUDA out of memory 模型 🚀")
    as_json = collected(text, "docker json-file", ensure_ascii=ascii_only)
    analysis = analyze(as_json)
    [finding] = analysis.findings
    assert analysis.source_map is not None
    line, column = analysis.source_map.position(finding.root.line, finding.root.start)
    raw = as_json.split("\n")[line]
    end_line, end = analysis.source_map.position(finding.root.line, finding.root.end)
    assert end_line == line
    assert json.loads('"' + raw[column:end] + '"') == finding.root_text
    assert finding.root_text.startswith("torch.OutOfMemoryError: CUDA out of memory 模型 🚀")


def test_a_plain_log_with_a_few_json_bodies_is_read_as_plain() -> None:
    """HTTP error bodies printed among the lines (`{"object": "error", "message": …}`) are not a
    collector's file: it must be nearly every line."""
    body = json.dumps(
        {"object": "error", "message": "This model's maximum context length is 4096", "code": 400}
    )
    text = LOGS["crash/007.log"]
    lines = text.split("\n")
    mixed = "\n".join([*lines[:3], body, body, *lines[3:]])
    assert not looks_like_json_log(mixed)
    assert analyze(mixed).source_map is None


def test_a_collector_object_is_told_from_a_vllm_record() -> None:
    vllm = parse_record(json.dumps({"levelname": "ERROR", "message": "x", "asctime": "2025-01-01 00:00:00"}))
    docker = parse_record(json.dumps({"log": "ERROR x\n", "stream": "stdout"}))
    other = parse_record(json.dumps({"msg": "x", "level": "info"}))
    assert vllm is not None and not vllm.collected
    assert docker is not None and docker.collected and docker.keys == ("log",)
    assert other is None


def test_empty_lines_and_bars_keep_their_lines() -> None:
    """An empty line and a bar redrawn with bare `\\r`s inside one object: one line each."""
    text = LOGS["crash2/102.log"]
    as_json = collected(text, "loki")
    assert deaths(as_json) == plain_deaths(text)
    assert len(as_json.split("\n")) == len(text.rstrip("\n").split("\n")) + 1
