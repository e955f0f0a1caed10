"""The hover's first screen on every labelled crash log: what died, why, the evidence, the fix.

Pure rendering (no server): the first screen (above the first rule) holds at most 12 lines, in
this order: the title, what died and when, why (the rule's summary), the evidence in words, and
the first fix with its exact flags (or the first step, for advice); the reference follows below.
Evidence labels are words, never capture names (`total2`, `fit_len`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.model import Finding
from vllm_log_lsp.lsp.render import FIRST_SCREEN_LINES, FixPreview, finding_markdown, first_screen

LOGS = sorted(p for folder in (CRASH, CRASH2, CRASH3) for p in folder.glob("*.log"))


@cache
def findings(path: Path) -> tuple[Finding, ...]:
    return analyze(read_log(path)).findings


def test_the_corpus_is_here() -> None:
    assert len(LOGS) >= 60


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_first_screen_says_what_died_why_the_evidence_and_the_fix(path: Path) -> None:
    for finding in findings(path):
        text = finding_markdown(finding)
        head, rule, rest = text.partition("\n\n---\n\n")
        assert rule and rest, "the reference follows below a rule"
        lines = head.split("\n")
        assert len(lines) <= FIRST_SCREEN_LINES, head
        assert lines[0] == f"### Root cause: {finding.title}"
        assert "died" in lines[2] and f"(line {finding.line + 1})" in lines[2]
        assert sum(line.startswith("**Evidence**: ") for line in lines) == 1, head
        actionable = [fx for fx in finding.fixes if fx.ops]
        if actionable:
            assert f"**First fix**: {actionable[0].title}: `{actionable[0].command_line}`" in head
        elif finding.fixes or finding.next_steps:
            assert "**First fix**: " in head or "**Next step**: " in head, head
        assert "#### Fixes" not in head and "#### References" not in head


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_evidence_and_values_are_said_in_words(path: Path) -> None:
    for finding in findings(path):
        text = finding_markdown(finding)
        evidence = (
            text.split("#### Evidence from this log\n\n", 1)[1].split("\n\n", 1)[0]
            if finding.evidence
            else ""
        )
        for row in evidence.split("\n") if evidence else []:
            label = row.removeprefix("- ").split(": ", 1)[0]
            assert not re.search(r"_|\d$", label), row  # `fit_len`, `total2`: capture names
        assert "(value from" not in text and "halve of" not in text and "step_down" not in text


def test_a_preview_names_the_script_on_the_first_screen() -> None:
    (finding,) = findings(CRASH / "007.log")[:1]
    preview = {0: FixPreview(where="serve.sh:15", change="--max-num-seqs 1024 → 512")}
    head = first_screen(finding, preview)
    assert head.endswith(
        "**First fix**: Lower the number of concurrent sequences: `--max-num-seqs 512`"
        " in `serve.sh:15` (`--max-num-seqs 1024 → 512`)"
    )
    command = first_screen(finding, {0: FixPreview(command="vllm serve m --max-num-seqs 512")})
    assert "a quick fix copies the fixed command" in command and "vllm serve m" not in command
