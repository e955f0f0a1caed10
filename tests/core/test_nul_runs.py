"""Runs of NUL bytes inside a log: read as nothing, wherever they are.

A log gets them where a write was lost (a machine or container that died before the page cache
reached the disk leaves a hole, read back as NULs: corpus 110 has 445 before its last line) or
where a file was truncated in place while its writer went on (logrotate's copytruncate: the
file starts with as many NULs as it held). The text after a run is what the process printed.
Before, a run before a root-cause line hid it: 50 of 84 corpus logs answered otherwise with 445
NULs there, 60 with 64 KiB (the scan reads a line's first 20,000 characters, and the prefixes
after NULs were not taken apart).
"""

from __future__ import annotations

import pytest

from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.text import LogIndex, clip_line, strip_ansi

CRASH_LOGS = [p for folder in (CRASH, CRASH2, CRASH3) for p in sorted(folder.glob("*.log"))]
HEALTHY_LOGS = sorted(HEALTHY.glob("*.log"))


def _deaths(text: str) -> list[tuple[int, str, int]]:
    return [(f.line, f.rule_id, f.root.start) for f in analyze(text).findings]


def _with_nuls_before(text: str, numbers: set[int], size: int) -> str:
    """`text` with `size` NULs at the start of each of the lines numbered `numbers` (LSP's
    lines: a progress bar's bare `\r` ends one)."""
    index = LogIndex(text)
    for start in sorted((index.line_start(n) for n in numbers), reverse=True):
        text = text[:start] + "\0" * size + text[start:]
    return text


@pytest.mark.parametrize("size", [445, 4096, 65536])
def test_nuls_before_the_root_cause_line_change_no_answer(size: int) -> None:
    differ = []
    for path in CRASH_LOGS:
        text = read_log(path)
        deaths = _deaths(text)
        holed = _deaths(_with_nuls_before(text, {line for line, _, _ in deaths}, size))
        # (the same death on the same line, its columns the line's own: after the NULs)
        if holed != [(line, rule, column + size) for line, rule, column in deaths]:
            differ.append(path.name)
    assert differ == []


def test_a_file_truncated_in_place_reads_after_its_nuls() -> None:
    differ = []
    for path in CRASH_LOGS:
        deaths = _deaths(read_log(path))
        if _deaths("\0" * 65536 + read_log(path)) != [
            (n, rule, c + 65536 * (n == 0)) for n, rule, c in deaths
        ]:
            differ.append(path.name)
    assert differ == []


def test_nuls_in_a_healthy_log_alarm_nothing() -> None:
    for path in HEALTHY_LOGS:
        text = read_log(path)
        middle = text.count("\n") // 2
        assert _deaths(_with_nuls_before(text, {middle, middle + 1}, 4096)) == [], path.name


def test_a_line_after_nuls_is_taken_apart_as_printed() -> None:
    raw = (
        "\0" * 300
        + "(EngineCore pid=7) ERROR 10-03 21:00:01 [core.py:1] EngineCore encountered a fatal error."
    )
    line = parse_line(0, raw)
    assert (line.stream, line.level, line.message) == (
        "EngineCore:7",
        "ERROR",
        "EngineCore encountered a fatal error.",
    )
    assert raw[line.message_span.start :].startswith("EngineCore encountered")
    clean, columns = strip_ansi("a\0\0b\0c")
    assert clean == "abc" and columns is not None and [columns[i] for i in range(4)] == [0, 3, 5, 6]


@pytest.mark.parametrize("as_bytes", [False, True])
def test_the_end_of_a_run_of_nuls(as_bytes: bool) -> None:
    text = "x\n" + "\0" * 200_000 + "line\n"
    index = LogIndex(text.encode() if as_bytes else text)
    assert index.after_nul_run(2, len(text)) == 200_002
    assert index.after_nul_run(2, 1000) == 1000  # (not past the end asked)
    assert index.after_nul_run(0, len(text)) == 0
    assert index.line_at(2, 4) == "\0" * 200_000 + "line"
    assert clip_line("\0\0abcdef", 3) == "\0\0abc" and clip_line("abcdef", 3) == "abc"
