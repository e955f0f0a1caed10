"""The cheap checks in front of a line's patterns change no answer.

`parse_line` tries the runtime-prefix and process-prefix patterns only at a character one of
their alternatives can start with, and `clean_message` tries Ray's dedup suffix only when its
literal is there: each must equal trying the pattern everywhere, on corpus lines and on lines
built to start with every kind of prefix (Unicode digits included: `\\d` matches them).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, crash_labels
from vllm_log_lsp.core import lines, tracebacks
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.tracebacks import clean_message

_PREFIXES = [
    "> ",
    "2025-01-02T03:04:05.123Z stderr F ",
    "2025-01-02T03:04:05.123456789Z ",
    "2025-01-02 03:04:05.123 | ",
    "vllm-1  | ",
    "[svc] | ",
    "Jan  2 03:04:05 host vllm[12]: ",
    "docker : ",
    "5223:",
    "٥٢٢٣:",  # Arabic-Indic digits: `\d` matches them
    "Line 12: ",
    "(EngineCore_DP0 pid=1) ",
    "(VllmWorker rank=1 pid=2) ",
    "(raylet) ",
    "[rank0]: ",
    "(pid=7, ip=10.0.0.1) ",
    "\x1b[36m",
    "模型 ",
    "_x ",
    "",
]
_REST = [
    "INFO 01-02 03:04:05 [core.py:1] started",
    "ERROR 01-02 03:04:05 [v1/engine/core.py:12] Traceback (most recent call last):",
    "INFO:     10.0.0.1:5 - GET /",
    "2025-06-20 20:02:20,931 - vllm - ERROR - boom",
    "ValueError: bad",
    '  File "x.py", line 3, in f',
    "[repeated 3x across cluster]",
]


def _reference_parse(number: int, raw: str) -> object:
    """`parse_line` with the patterns tried at every character."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "_may_start_outer", lambda char: True)
        patch.setattr(lines, "_PROCESS_FIRST", ("",))
        return parse_line(number, raw)


@given(
    prefixes=st.lists(st.sampled_from(_PREFIXES), max_size=4),
    rest=st.sampled_from(_REST),
    extra=st.text(max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_prefix_prechecks_parse_as_the_patterns_alone(prefixes: list[str], rest: str, extra: str) -> None:
    raw = "".join(prefixes) + extra + rest
    assert parse_line(3, raw) == _reference_parse(3, raw)


def test_corpus_lines_parse_as_the_patterns_alone() -> None:
    for label in crash_labels()[::3]:
        text = (CRASH / label["file"]).read_text(encoding="utf-8", errors="replace")
        for number, raw in enumerate(text.split("\n")[:400]):
            assert parse_line(number, raw) == _reference_parse(number, raw)


def test_a_unicode_digit_still_starts_a_grep_prefix() -> None:
    """(Not only ASCII: the precheck must let every `\\d` through.)"""
    line = parse_line(0, "٥٢٢٣:(EngineCore_DP0 pid=1) INFO 01-02 03:04:05 [core.py:1] started")
    assert (line.process, line.level, line.message) == ("EngineCore_DP0", "INFO", "started")


@given(
    message=st.lists(
        st.sampled_from(
            ["x", " ", "\t", "[repeated ", "3x across cluster]", " (Ray deduplicates logs)", "\n"]
        ),
        max_size=8,
    ).map("".join)
)
@settings(max_examples=300, deadline=None)
def test_clean_message_equals_the_suffix_pattern_tried_everywhere(message: str) -> None:
    assert clean_message(message) == tracebacks._RAY_DEDUP.sub("", message).rstrip()
