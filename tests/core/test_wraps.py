"""A log copied from a terminal that cut its long lines into rows (`core.wraps`).

Every corpus log, cut as a terminal of 80 or 132 columns shows it, gives the same deaths as the
log itself; a natural log is never taken for a cut one (tables, repeated lines, lines cut by a
collector, a line exactly as wide as the terminal); positions map back to the rows.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
from vllm_log_lsp.core.analyze import Analyzer, analyze
from vllm_log_lsp.core.merge import read_part
from vllm_log_lsp.core.wraps import display_width, unwrap, wrap_width

LOGS = [p for folder in (CRASH, CRASH2, CRASH3, HEALTHY) for p in sorted(folder.glob("*.log"))]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _screen(text: str) -> str:
    """What a terminal shows of a log: no colour codes, a redrawn bar's last state."""
    return "\n".join(_ANSI.sub("", line.rstrip("\r")).split("\r")[-1] for line in text.split("\n"))


SCREENS = {f"{p.parent.name}/{p.name}": _screen(read_log(p)) for p in LOGS}


def cut(text: str, width: int, copy: str = "kept") -> tuple[str, list[int]]:
    """`text` as a terminal `width` columns wide shows it, copied row by row (a wide character
    that does not fit goes to the next row), and each row's line in `text`. `copy`: each row as
    shown ("kept"), without the spaces that end it ("trimmed"), or padded with spaces to the
    width ("padded")."""
    rows: list[str] = []
    line_of: list[int] = []
    for number, line in enumerate(text.split("\n")):
        row, columns = "", 0
        for char in line:
            if columns + display_width(char) > width:
                rows.append(row)
                line_of.append(number)
                row, columns = "", 0
            row += char
            columns += display_width(char)
        rows.append(row)
        line_of.append(number)
    if copy == "trimmed":
        rows = [row.rstrip(" ") for row in rows]
    elif copy == "padded":
        rows = [row + " " * (width - display_width(row)) for row in rows]
    return "\n".join(rows), line_of


def deaths(text: str, line_of: list[int] | None = None) -> list[tuple[int, str]]:
    """(line in the uncut log, rule) of each death of `text`."""
    analysis = analyze(text)
    row = analysis.source_map.line if analysis.source_map is not None else (lambda line: line)
    return [(line_of[row(f.line)] if line_of else row(f.line), f.rule_id) for f in analysis.findings]


BASE = {name: deaths(text) for name, text in SCREENS.items()}


@pytest.mark.parametrize(("width", "copy"), [(80, "kept"), (132, "kept"), (120, "trimmed"), (120, "padded")])
def test_every_corpus_log_cut_by_a_terminal_answers_as_itself(width: int, copy: str) -> None:
    differ = []
    cut_logs = 0
    for name, text in SCREENS.items():
        rows, line_of = cut(text, width, copy)
        cut_logs += rows != text
        if deaths(rows, line_of) != BASE[name]:
            differ.append(name)
    assert not differ
    assert cut_logs > 70  # (nearly every log has a line wider than that)


def test_no_corpus_log_is_taken_for_a_cut_one() -> None:
    found = {p.name: wrap_width(p.read_bytes()) for p in LOGS}
    assert not {name: width for name, width in found.items() if width is not None}


def test_the_width_found_is_the_terminals() -> None:
    text = SCREENS["crash/007.log"]
    for width in (80, 100, 120, 132, 200):
        assert wrap_width(cut(text, width)[0]) == width


# Logs written from the principle: a cut line goes on in the next row, a line of its own starts
# like one.
HEADER = "(EngineCore_DP0 pid=4242) ERROR 11-03 09:12:{:02d} [core.py:710] "


def _long_records(count: int) -> list[str]:
    return [
        HEADER.format(n)
        + f"EngineCore failed to start: request {n} of a batch of many, "
        + "x" * (40 + n * 7)
        for n in range(count)
    ]


def test_a_table_of_one_width_is_not_a_cut_log() -> None:
    border = "+" + "-" * 89 + "+"
    rows = [
        f"| GPU {n}  NVIDIA H100 80GB HBM3   On | 00000000:{n:02d}:00.0 Off | 0 {' ' * 27}|" for n in range(8)
    ]
    table = [border, *(row[:90].ljust(90) + "|" for row in rows), border]
    text = "\n".join(
        ["INFO 11-03 09:12:00 [api_server.py:1] vLLM API server version 0.11.0", *table, *table, ""]
    )
    assert wrap_width(text) is None


def test_the_same_long_line_repeated_is_not_a_cut_log() -> None:
    line = HEADER.format(1) + "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.5 tokens/s"
    text = "\n".join([*(line for _ in range(30)), "INFO 11-03 09:13:00 [launcher.py:1] Shutting down", ""])
    assert wrap_width(text) is None
    column = "\n".join(f"[pod/vllm-0/vllm] {row}" for row in text.split("\n"))
    assert wrap_width(column) is None


def test_lines_cut_by_a_collector_are_not_joined() -> None:
    # (A collector that cuts each record at a length: the next row is the next record.)
    text = "\n".join(record[:120] for record in _long_records(12)) + "\n"
    assert wrap_width(text) is None


def test_a_line_exactly_as_wide_as_the_terminal_is_not_joined_with_the_next() -> None:
    records = _long_records(6)
    width = 100
    exact = HEADER.format(59) + "y" * (width - len(HEADER.format(59)))
    text = "\n".join([*records[:3], exact, *records[3:]]) + "\n"
    rows, _ = cut(text, width)
    assert wrap_width(rows) == width
    joined = unwrap(rows, width).text.split("\n")
    assert joined == text.split("\n")


def test_a_whole_frame_keeps_its_code_line() -> None:
    # A bare traceback: a frame line exactly as wide as the terminal, its code line below.
    frame = '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 413, in run_busy_loop'
    width = len(frame)
    lines = [
        "Traceback (most recent call last):",
        frame,
        "    self._process_engine_step()",
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 438, in _process_engine_step',
        "    outputs = self.step_fn()",
        "RuntimeError: " + "CUDA error: an illegal memory access was encountered, " * 4,
        "",
    ]
    text = "\n".join(lines)
    rows, _ = cut(text, width)
    assert wrap_width(rows) == width
    assert unwrap(rows, width).text == text


def test_wide_characters_are_two_columns() -> None:
    message = "模型路径不存在：/data/模型/Qwen3-8B（请检查挂载）" * 3
    records = [HEADER.format(n) + f"FileNotFoundError: {message} {n}" for n in range(4)]
    text = "\n".join(records) + "\n"
    for width in (61, 80, 99):
        rows, _ = cut(text, width)
        assert max(display_width(row) for row in rows.split("\n")) <= width
        assert wrap_width(rows) == width
        assert unwrap(rows, width).text == text


def test_a_files_bytes_and_its_text_get_the_same_width() -> None:
    # Wide text first (three bytes a character), the cut rows after it: the part read must be
    # the same characters of either.
    start = "".join(
        f"INFO 11-03 09:12:00 [loader.py:1] 加载模型分片 {n} " + "模" * 20 + "\n" for n in range(700)
    )
    message = "模型路径不存在：/data/模型/Qwen3-8B（请检查挂载）" * 3
    records = "".join(HEADER.format(n % 60) + f"FileNotFoundError: {message} {n}\n" for n in range(40))
    rows, _ = cut(start + records, 80)
    assert wrap_width(rows) == 80
    assert wrap_width(rows.encode()) == 80


def test_positions_map_back_to_the_rows() -> None:
    text = "\n".join(_long_records(5)) + "\n"
    width = 80
    rows, line_of = cut(text, width)
    lines = unwrap(rows, width)
    row_texts = rows.split("\n")
    for number, line in enumerate(text.split("\n")):
        assert lines.line(number) == line_of.index(number)
        for column in range(len(line) + 1):
            row, at = lines.position(number, column)
            assert line_of[row] == number
            before = sum(len(row_texts[r]) for r in range(line_of.index(number), row))
            assert before + at == column
            assert lines.core_position(row, at) == (number, column)


@pytest.mark.parametrize("copy", ["trimmed", "padded"])
def test_a_copy_that_trimmed_or_padded_its_rows_reads_as_the_text(copy: str) -> None:
    # (Cut right after a space, a trimmed row ends a column short; a padded one has spaces.)
    words = " ".join(f"word{n:02d}" for n in range(40))
    text = "\n".join(HEADER.format(n) + f"RuntimeError: {words[n:]}" for n in range(6)) + "\n"
    width = 80
    rows, line_of = cut(text, width, copy)
    assert wrap_width(rows) == width
    lines = unwrap(rows, width)
    padding = (
        (lambda line: " " * (-display_width(line) % width if line else width)) if copy == "padded" else None
    )
    assert lines.text.split("\n") == [line + (padding(line) if padding else "") for line in text.split("\n")]
    row_texts = rows.split("\n")
    for number, line in enumerate(text.split("\n")):
        first = line_of.index(number)
        assert lines.line(number) == first
        for column in range(len(line)):  # every character lands on its own row and column
            row, at = lines.position(number, column)
            # (a space the copy trimmed lands just past its row's end)
            assert row_texts[row][at : at + 1] == line[column] or (
                at == len(row_texts[row]) and line[column] == " "
            )


def test_a_cut_crlf_copy_and_its_bytes_answer_as_the_text() -> None:
    text = SCREENS["crash/007.log"]
    rows, line_of = cut(text, 100)
    expected = BASE["crash/007.log"]
    assert deaths(rows.replace("\n", "\r\n"), line_of) == expected
    assert deaths(rows.encode(), line_of) == expected  # type: ignore[arg-type]


def test_a_cut_log_in_a_run_of_files_is_read_joined() -> None:
    text = SCREENS["crash/007.log"]
    rows, line_of = cut(text, 100)
    part = read_part("serve.log", rows)
    assert part.text == text
    assert all(part.own_line(n) == line_of.index(n) for n in range(len(part.lines)))


def test_two_analyses_of_one_copy_are_equal() -> None:
    # (The fuzzer and the incremental tests compare analyses field by field.)
    rows, _ = cut(SCREENS["crash/007.log"], 100)
    assert analyze(rows) == Analyzer().analyze(rows)
    assert analyze(rows) != analyze(cut(SCREENS["crash/007.log"], 101)[0])


def test_the_analyzer_reads_a_log_that_stops_being_cut_afresh() -> None:
    text = SCREENS["crash/007.log"]
    rows, _ = cut(text, 100)
    analyzer = Analyzer()
    first = analyzer.analyze(rows)
    assert first.source_map is not None and any("rows of 100 columns" in w for w in first.warnings)
    again = analyzer.analyze(text)
    assert again.source_map is None and [(f.line, f.rule_id) for f in again.findings] == BASE["crash/007.log"]


def test_check_reports_the_rows_of_a_cut_log(tmp_path) -> None:
    text = SCREENS["crash/007.log"]
    rows, line_of = cut(text, 80)
    path = tmp_path / "serve.log"
    path.write_text(rows)
    done = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    [entry] = json.loads(done.stdout)["files"]
    assert any("rows of 80 columns" in w for w in entry["warnings"])
    [incident] = entry["incidents"]
    root = incident["root_cause"]
    after = "".join(rows.split("\n")[root["line"] - 1 :])  # (the root's text goes on in the rows below)
    assert after[root["column"] - 1 :].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert (line_of[root["line"] - 1], incident["root_cause"]["cause"]) == BASE["crash/007.log"][0]
