"""A growing log analysed as it arrives (`core/follow.py`): each death once, when complete, with
the log's own line numbers, in bounded memory."""

from __future__ import annotations

import random

import pytest

from support import CRASH, CRASH2, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.follow import Follower
from vllm_log_lsp.core.linebreaks import NewlineLines

LOGS = [CRASH / "007.log", CRASH / "002.log", CRASH2 / "103.log", CRASH / "024.log"]
FILLER = (
    "(APIServer pid=1) INFO 11-01 09:43:12 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s\n"
)


def expected(text: str) -> list[tuple[int, str]]:
    analysis = analyze(text)
    lines = NewlineLines(text)
    return [(lines.line(f.line), f.rule_id) for f in analysis.findings]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_log_fed_in_pieces_reports_what_the_whole_log_shows(path):
    text = read_log(path)
    follower = Follower()
    rng = random.Random(path.name)
    deaths, pos = [], 0
    while pos < len(text):
        step = rng.randint(1, 4000)
        follower.feed(text[pos : pos + step])
        pos += step
        deaths += follower.complete()
    deaths += follower.complete(idle=True)
    assert [(d.line, d.finding.rule_id) for d in deaths] == expected(text)
    assert follower.complete(idle=True) == []  # each death once


def test_a_death_is_reported_when_the_log_has_gone_on_past_its_late_window():
    text = read_log(CRASH / "007.log")
    follower = Follower(settle_lines=50)
    follower.feed(text)
    assert follower.complete() == []  # the log ends at the death: a late fault may still come
    follower.feed(FILLER * 20)
    assert follower.complete() == []
    follower.feed(FILLER * 40)
    [death] = follower.complete()
    assert (death.line, death.finding.rule_id) == expected(text)[0]
    follower.feed(FILLER * 100)
    assert follower.complete() == [] and follower.complete(idle=True) == []


def test_a_quiet_log_completes_its_deaths():
    text = read_log(CRASH / "007.log")
    follower = Follower()
    follower.feed(text)
    assert follower.complete() == []
    assert [(d.line, d.finding.rule_id) for d in follower.complete(idle=True)] == expected(text)


def test_memory_stays_bounded_and_lines_and_context_stay_the_logs_own():
    death = read_log(CRASH / "007.log")
    whole = analyze(death)
    lines = death.split("\n")
    # A run: its start-up (version, model, args), a long healthy stretch, then the death.
    split = next(i for i, line in enumerate(lines) if "Traceback" in line or "ERROR" in line)
    head, rest = "\n".join(lines[:split]) + "\n", "\n".join(lines[split:])
    limit = 200_000
    follower = Follower(max_chars=limit)
    follower.feed(head)
    follower.complete()
    filler_lines = 0
    for _ in range(60):
        follower.feed(FILLER * 200)
        filler_lines += 200
        assert follower.complete() == []
        assert len(follower._kept) <= limit + len(FILLER) * 200
    follower.feed(rest)
    [found] = follower.complete(idle=True)
    assert found.finding.rule_id == whole.findings[0].rule_id
    assert found.line == NewlineLines(death).line(whole.findings[0].line) + filler_lines
    assert found.finding.context.vllm_version == whole.findings[0].context.vllm_version
    assert found.finding.context.model == whole.findings[0].context.model
    assert follower.total_lines == death.count("\n") + filler_lines


def test_two_runs_in_a_row_are_two_deaths_in_order():
    # Each of these logs starts with vLLM's start-up lines: one after the other, two runs.
    first, second = read_log(CRASH / "011.log"), read_log(CRASH / "038.log")
    first = first if first.endswith("\n") else first + "\n"
    follower = Follower()
    follower.feed(first)
    deaths = follower.complete(idle=True)
    follower.feed(second)
    deaths += follower.complete(idle=True)
    found = [(d.line, d.finding.rule_id) for d in deaths]
    assert found == expected(first + second)
    assert len(found) == 2 and found[0] == expected(first)[0]


def test_a_json_log_fed_in_pieces_reports_its_deaths_on_its_own_lines():
    from json_twins import json_twin

    text = json_twin(read_log(CRASH / "007.log")).text
    whole = analyze(text)
    follower = Follower()
    deaths = []
    for start in range(0, len(text), 3000):
        follower.feed(text[start : start + 3000])
        deaths += follower.complete()
    deaths += follower.complete(idle=True)
    assert [(d.line, d.finding.rule_id) for d in deaths] == [
        (whole.source_map.line(f.line), f.rule_id) for f in whole.findings
    ]
