"""A log shown newest first (a copy from Grafana, logcli, Kibana, CloudWatch) is read oldest
first (`core.order`).

Every corpus log, reversed line by line, gives the same deaths at the same lines of the log as
the log itself (before: 49 of 84 answered otherwise, 3 with no death); no log printed in order is
taken for a reversed one, whatever its clocks do; positions map back to the copy's lines.
"""

from __future__ import annotations

import random

import pytest

from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
from vllm_log_lsp.core.analyze import Analyzer, analyze
from vllm_log_lsp.core.linebreaks import NewlineLines
from vllm_log_lsp.core.merge import read_part
from vllm_log_lsp.core.order import newest_first, oldest_first

LOGS = {
    f"{p.parent.name}/{p.name}": read_log(p)
    for folder in (CRASH, CRASH2, CRASH3, HEALTHY)
    for p in sorted(folder.glob("*.log"))
}


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def newest_on_top(text: str) -> str:
    """`text` as a log viewer lists it, the latest line first."""
    return "\n".join(reversed(_lines(text))) + "\n"


def deaths(text: str, flip: bool = False) -> list[tuple[int, str]]:
    """(line, rule) of each death of `text`; `flip`: its line in the log `text` reverses."""
    analysis = analyze(text)
    line = (analysis.source_map or NewlineLines(text)).line  # (`\n`-lines: a bare `\r` ends none)
    count = len(_lines(text))
    found = [(line(f.line), f.rule_id) for f in analysis.findings]
    return sorted((count - 1 - n, rule) if flip else (n, rule) for n, rule in found)


# How a viewer's copy may carry each line: as printed, after the collector's timestamp, CRLF.
COPIES = {
    "as printed": lambda line, n: line,
    "docker timestamp": lambda line, n: f"2025-10-31T16:{n // 60 % 60:02d}:{n % 60:02d}.{n:09d}Z {line}",
    "crlf": lambda line, n: line.removesuffix("\r") + "\r",
}


@pytest.mark.parametrize("copy", sorted(COPIES))
def test_every_corpus_log_shown_newest_first_answers_as_itself(copy: str) -> None:
    differ = []
    for name, text in LOGS.items():
        shown = "\n".join(COPIES[copy](line, n) for n, line in enumerate(_lines(text))) + "\n"
        if deaths(newest_on_top(shown), flip=True) != deaths(shown):
            differ.append(name)
    assert not differ


def test_no_log_printed_in_order_is_taken_for_a_reversed_one() -> None:
    assert [name for name, text in LOGS.items() if newest_first(text)] == []
    assert [name for name, text in LOGS.items() if newest_first(text.encode())] == []


STAMP = "(EngineCore_DP0 pid=7) INFO 10-31 16:{:02d}:{:02d} [core.py:1] step {}"


def _timed(seconds: list[int]) -> str:
    return "\n".join(STAMP.format(s // 60, s % 60, n) for n, s in enumerate(seconds)) + "\n"


def test_clocks_that_go_back_now_and_then_are_not_a_reversed_log() -> None:
    """Two processes with clocks a minute apart, interleaved; a run restarted after a clock
    change; a log concatenated out of order: up at least as often as down."""
    skewed = [s for n in range(40) for s in (n, n + 60)]
    assert not newest_first(_timed(skewed))
    assert not newest_first(_timed([*range(100, 130), *range(0, 30)]))
    assert not newest_first(_timed([*range(60, 70), *range(0, 10), *range(30, 40)]))
    assert newest_first(_timed(list(range(30, 0, -1))))


@pytest.mark.parametrize("seed", range(5))
def test_a_log_in_no_order_is_read_as_it_is(seed: int) -> None:
    """Lines shuffled: up about as often as down, headers either way."""
    lines = _lines(LOGS["crash/007.log"])
    random.Random(seed).shuffle(lines)
    assert not newest_first("\n".join(lines) + "\n")


HEADER = "Traceback (most recent call last):"
TRACEBACK = [
    HEADER,
    '  File "/x/vllm/entrypoints/llm.py", line 1, in <module>',
    "    llm = LLM(model='m')",
    '  File "/x/vllm/engine/arg_utils.py", line 2, in create_engine_config',
    "    raise ValueError(msg)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.",
]


@pytest.mark.parametrize("between", [[], ["Process SpawnProcess-1:"], ["", "[rank0]: x"]])
def test_a_traceback_upside_down_tells_the_order_without_timestamps(between: list[str]) -> None:
    """An offline script's traceback, no timestamp: its header with the frames above it; another
    writer's line may come between the header and its first frame."""
    lines = [TRACEBACK[0], *between, *TRACEBACK[1:]]
    text = "\n".join(lines) + "\n"
    assert not newest_first(text)
    assert newest_first(newest_on_top(text))
    [death] = deaths(newest_on_top(text), flip=True)
    assert death == (len(lines) - 1, deaths(text)[0][1]) and death[1] != "unrecognized"


@pytest.mark.parametrize("start", [1, 2, 3])
@pytest.mark.parametrize("marks", ["", "             ^^^^^^^^^^^^^^^^^", "    ~~~~~~~~~~^^^^^^^^^^"])
@pytest.mark.parametrize("prefix", ["", "app-1  | (EngineCore_DP0 pid=36) "])
def test_a_headless_traceback_upside_down_tells_the_order(start: int, marks: str, prefix: str) -> None:
    """A paste that starts inside a traceback (at a frame, or at a frame's code line), with or
    without the `^^^` marks under each code line (Python 3.11; 3.13 adds `~`), behind a
    collector's and vLLM's prefixes or none: the code lines and the exception line are above
    the frames they belong to."""
    body = [
        prefix + line
        for code in TRACEBACK[start:]
        for line in ([code, marks] if marks and code.startswith("    ") else [code])
    ]
    text = "\n".join(["(APIServer pid=1) INFO:     Shutting down", *body]) + "\n"
    assert not newest_first(text)
    assert newest_first(newest_on_top(text))
    assert deaths(newest_on_top(text), flip=True) == deaths(text)


@pytest.mark.parametrize("prefix", ["", "ocr-paddle-vl-2  | (EngineCore_DP0 pid=36) "])
def test_a_paste_cut_to_a_code_line_and_the_next_frame_says_nothing_of_its_order(prefix: str) -> None:
    """Frames and code lines without their exception line (a paste or the sample cut it off)
    alternate whichever way up they are: where the cut fell, not the order, decides which pairs
    come first. They are no evidence, either way up. (Two lines of corpus 125, a code line
    and the next frame, once read as a paste newest first.)"""
    pair = [
        f"{prefix}    self._process_engine_step()",
        f'{prefix}  File "/x/vllm/v1/engine/core.py", line 919, in step',
    ]
    frames = [prefix + line for line in TRACEBACK[1:5]]
    for lines in (pair, pair[::-1], [TRACEBACK[2], *pair], frames, frames[::-1], frames[1:], frames[:0:-1]):
        assert not newest_first("\n".join(lines) + "\n")
        assert not newest_first("\n".join([*lines, "\0" * 70_000]))


def test_timestamps_going_down_but_tracebacks_the_right_way_up_are_in_order() -> None:
    """Kibana's multi-line events: events newest first, each traceback in order inside. Its
    tracebacks are read as printed, so the lines are not reversed."""
    events = [STAMP.format(0, 59 - n, n) for n in range(10)]
    text = "\n".join([*events[:5], *TRACEBACK, *events[5:]]) + "\n"
    assert not newest_first(text)


def test_positions_map_back_to_the_copys_lines() -> None:
    """Line i of the transcript is line n - 1 - i of the copy at the same column, through
    progress bars redrawn with a bare `\\r` (a core line each) and CRLF."""
    lines = ["a0\r", "bar 1\rbar 2\rbar 3", "c2 x", "d3\r", "e4"]
    copy = "\n".join(lines) + "\n"
    reversed_lines = oldest_first(copy)
    assert reversed_lines.text == "\n".join(reversed(lines)) + "\n"
    # The transcript's core lines: e4, d3, c2 x, bar 1, bar 2, bar 3, a0.
    assert [reversed_lines.line(core) for core in range(7)] == [4, 3, 2, 1, 1, 1, 0]
    assert reversed_lines.position(4, 2) == (1, 8)  # "bar 2" starts at column 6 of its line
    assert reversed_lines.core_position(1, 8) == (4, 2)
    assert reversed_lines.core_line_range(1) == (3, 5)
    for line in range(len(lines)):
        core, column = reversed_lines.core_position(line, 1)
        assert reversed_lines.position(core, column) == (line, 1)


def test_a_files_bytes_and_its_text_give_one_answer() -> None:
    text = newest_on_top(LOGS["crash/007.log"])
    from_text, from_bytes = analyze(text), analyze(text.encode())
    assert from_text.findings == from_bytes.findings
    assert from_text.source_map == from_bytes.source_map
    assert any("newest lines first" in warning for warning in from_text.warnings)


def test_a_reversed_log_in_a_run_of_files_is_read_oldest_first() -> None:
    text = LOGS["crash/007.log"]
    part = read_part("serve.log", newest_on_top(text))
    assert part.lines == _lines(text)
    count = len(part.lines)
    assert all(part.own_line(n) == count - 1 - n for n in range(count))


def test_two_analyses_of_one_reversed_log_are_equal() -> None:
    # (The fuzzer and the incremental tests compare analyses field by field.)
    shown = newest_on_top(LOGS["crash/007.log"])
    assert analyze(shown) == Analyzer().analyze(shown)
    assert analyze(shown) != analyze(newest_on_top(LOGS["crash/011.log"]))


def test_a_short_log_with_wide_characters_gets_one_answer_from_bytes_and_text() -> None:
    """(The sample is whole lines of the same characters: a file's bytes outnumber its text's
    characters, and its last line, here the header that tells the order, is kept all the same.)"""
    shown = "ValueError: 模型 🚀 is not a valid model\n" + '  File "/x/vllm/a.py", line 1, in f\n' + HEADER
    assert newest_first(shown) is True
    assert newest_first(shown.encode()) is True
