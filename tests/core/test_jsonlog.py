"""vLLM's JSON log format: read into the same lines as a plain log, positions in the JSON file.

The twins are written by `tests/json_twins.py` the way vLLM's JSON formatter writes each record
of a real plain fixture; their findings must be the plain originals', on the twin's own lines.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from json_twins import json_twin
from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
from vllm_log_lsp.core.analyze import Analyzer, analyze
from vllm_log_lsp.core.jsonlog import Transcriber, looks_like_json_log, parse_record, raw_column
from vllm_log_lsp.core.linebreaks import NewlineLines

CORPUS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])


def twins_with_records():
    for path in CORPUS:
        plain = read_log(path)
        twin = json_twin(plain)
        if looks_like_json_log(twin.text):
            yield path, plain, twin


def findings_of(text: str):
    """(line, rule, phase, symptom lines) of each finding, as the log's own `\\n`-lines."""
    analysis = analyze(text)
    lines = analysis.source_map or NewlineLines(text)
    return analysis, [
        (lines.line(f.line), f.rule_id, f.phase, sorted({lines.line(s.line) for s in f.symptoms}))
        for f in analysis.findings
    ]


def test_most_corpus_logs_have_a_json_twin():
    # Logs without a single vLLM header line (a bare traceback, a fault) have no records.
    assert sum(1 for _ in twins_with_records()) >= 50


@pytest.mark.parametrize("path", [p for p, _, _ in twins_with_records()], ids=lambda p: p.name)
def test_a_json_twin_has_the_findings_of_its_plain_original(path):
    plain = read_log(path)
    twin = json_twin(plain)
    plain_analysis, expected = findings_of(plain)
    json_analysis, found = findings_of(twin.text)
    assert json_analysis.source_map is not None
    assert found == [
        (twin.line_of[line], rule, phase, sorted({twin.line_of[s] for s in symptoms}))
        for line, rule, phase, symptoms in expected
    ]
    assert [f.root_text for f in json_analysis.findings] == [f.root_text for f in plain_analysis.findings]


@pytest.mark.parametrize("path", [p for p, _, _ in twins_with_records()][:12], ids=lambda p: p.name)
def test_the_root_cause_span_covers_its_escaped_text_in_the_json_line(path):
    twin = json_twin(read_log(path))
    analysis = analyze(twin.text)
    physical = twin.text.split("\n")
    for finding in analysis.findings:
        line, start = analysis.source_map.position(finding.root.line, finding.root.start)
        end_line, end = analysis.source_map.position(finding.root.line, finding.root.end)
        assert end_line == line
        raw = physical[line]
        if parse_record(raw) is None:  # a plain line of the JSON log: copied as it is
            assert raw[start:end].startswith(finding.root_text[:20])
            continue
        shown = json.loads('"' + raw[start:end] + '"')  # the span is whole escapes, nothing cut
        assert shown.startswith(finding.root_text.split("\n")[0][:40])


def record(**fields) -> str:
    base = {
        "asctime": "2026-11-01 09:43:12,345",
        "levelname": "INFO",
        "name": "vllm.v1.engine.core",
        "processName": "EngineCore_DP0",
        "process": 4242,
        "message": "",
    }
    return json.dumps({**base, **fields})


def test_a_record_after_a_runtime_prefix_keeps_the_prefix_for_the_line_parser():
    line = "vllm-1  | " + record(levelname="ERROR", message="EngineCore failed to start.")
    assert line[: parse_record(line).lead] == "vllm-1  | "
    lines = Transcriber().transcribe(line + "\n")
    assert lines.text.startswith("vllm-1  | (EngineCore_DP0 pid=4242) ERROR 11-01 09:43:12.345 [core.py:0] ")


def test_vllm_process_name_is_preferred_to_the_multiprocessing_name():
    line = record(processName="VllmWorker-1", vllm_process_name="Worker_TP1", message="hi")
    assert Transcriber().transcribe(line).text.startswith("(Worker_TP1 pid=4242) INFO")


@pytest.mark.parametrize(
    "message",
    [
        "plain ascii",
        "non-ASCII é ü and 中文",
        "an emoji 🙂 (a surrogate pair)",
        'quotes " and \\ back\tslash',
    ],
)
def test_columns_map_through_every_kind_of_escape(message):
    line = record(message=f"head\n{message} tail")
    lines = Transcriber().transcribe(line + "\n")
    second = lines.text.split("\n")[1]
    column = second.index(" tail")
    original_line, raw = lines.position(1, column)
    assert original_line == 0
    assert line[raw:].startswith(" tail")
    assert lines.core_position(0, raw) == (1, column)
    assert raw_column(line, line.index('"message": "') + 12, 0) == line.index('"message": "') + 12


def test_non_records_are_copied_as_they_are():
    text = (
        record(message="a") + "\nProcess EngineCore_DP0:\r\nTraceback (most recent call last):\n{not json}\n"
    )
    lines = Transcriber().transcribe(text)
    assert lines.text.split("\n")[1:] == [
        "Process EngineCore_DP0:\r",
        "Traceback (most recent call last):",
        "{not json}",
        "",
    ]
    assert [lines.line(n) for n in range(1, 4)] == [1, 2, 3]


def test_a_growing_json_log_gives_what_the_whole_log_gives():
    path = next(p for p, _, _ in twins_with_records())
    text = json_twin(read_log(path)).text
    analyzer = Analyzer()
    for cut in (len(text) // 3, len(text) // 3 + 7, 2 * len(text) // 3, len(text)):
        grown = analyzer.analyze(text[:cut])
    assert grown.source_map.text == analyze(text).source_map.text
    assert [(f.line, f.rule_id) for f in grown.findings] == [
        (f.line, f.rule_id) for f in analyze(text).findings
    ]


def test_half_a_record_at_the_end_waits_for_the_rest():
    whole = record(message="one") + "\n"
    half = record(levelname="ERROR", message="two")[:30]
    lines = Transcriber().transcribe(whole + half)
    assert lines.text.count("\n") == 1 and "{" not in lines.text


def test_healthy_plain_logs_are_not_taken_for_json():
    assert not any(looks_like_json_log(read_log(p)) for p in sorted(HEALTHY.glob("*.log")))


def test_check_numbers_a_json_log_by_its_own_lines(tmp_path):
    path = next(p for p, _, _ in twins_with_records())
    twin = json_twin(read_log(path))
    log = tmp_path / "serve.jsonl"
    log.write_text(twin.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    [report] = json.loads(done.stdout)["files"]
    _, expected = findings_of(twin.text)
    assert [i["root_cause"]["line"] - 1 for i in report["incidents"]] == [line for line, *_ in expected]
    assert all(i["root_cause"]["line"] <= twin.text.count("\n") + 1 for i in report["incidents"])


@pytest.mark.parametrize(
    "layout",
    [
        {"separators": (",", ":")},  # a compact dumps
        {"indent": None, "separators": (", ", ":  ")},
    ],
    ids=["compact", "wide"],
)
def test_any_json_layout_maps_columns_exactly(layout):
    values = json.loads(record(message="head\nValueError: bad é tail"))
    line = json.dumps(values, **layout)
    lines = Transcriber().transcribe(line + "\n")
    second = lines.text.split("\n")[1]
    _, raw = lines.position(1, second.index("ValueError"))
    assert line[raw:].startswith("ValueError: bad \\u00e9 tail")


def test_a_nested_message_key_before_the_records_own_is_not_taken_for_it():
    values = {"extra": {"message": "not this one"}, **json.loads(record(message="the record's own"))}
    line = json.dumps(values)
    lines = Transcriber().transcribe(line + "\n")
    _, raw = lines.position(0, lines.text.index("the record"))
    assert line[raw:].startswith("the record's own")
