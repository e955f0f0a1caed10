"""Bare `\\r` (progress-bar redraws): `check` numbers lines as `grep -n`, less and vim do, and the
mapping between the two numberings is exact both ways."""

from __future__ import annotations

import json
import re
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, lsp_lines, progress_redraws, run_cli
from vllm_log_lsp.core.linebreaks import NewlineLines

LOG = CRASH / "007.log"  # sampler warm-up OOM; root cause on line 73 of the corpus labels


def redraws(label: str, steps: int = 4) -> bytes:
    return progress_redraws(label, steps).encode()


def with_progress_bars(data: bytes, before: int) -> bytes:
    """`data` with a multi-redraw progress bar inserted as line `before` and another at the start."""
    lines = data.split(b"\n")
    lines.insert(before, redraws("Loading safetensors checkpoint shards"))
    lines.insert(1, redraws("Capturing CUDA graphs", 7))
    return b"\n".join(lines)


def grep_n(path, pattern: str) -> list[int]:
    out = subprocess.run(["grep", "-n", "-a", "-F", pattern, str(path)], capture_output=True, check=True)
    return [int(line.split(b":", 1)[0]) for line in out.stdout.splitlines()]


def test_check_prints_the_line_numbers_grep_prints(tmp_path) -> None:
    plain = run_cli("check", "--format", "json", str(LOG))
    [incident] = json.loads(plain.stdout)["files"][0]["incidents"]
    root_text = incident["root_cause"]["text"]
    log = tmp_path / "redraws.log"
    log.write_bytes(with_progress_bars(LOG.read_bytes(), before=incident["root_cause"]["line"] - 10))
    report = json.loads(run_cli("check", "--format", "json", str(log)).stdout)
    [moved] = report["files"][0]["incidents"]
    root = moved["root_cause"]
    assert root["line"] in grep_n(log, root_text)  # grep -n, less +N and vim +N open this line
    assert root["line"] == incident["root_cause"]["line"] + 2  # two bars, each one more line
    line_text = log.read_bytes().split(b"\n")[root["line"] - 1].decode()
    assert line_text[root["column"] - 1 :].startswith(root_text)
    for before, after in zip(incident["symptoms"], moved["symptoms"], strict=True):
        assert after["line"] in grep_n(log, after["text"][:60])
        assert after["line"] >= before["line"]
    text = run_cli("check", str(log)).stdout
    assert text.startswith(f"{log}:{root['line']}: ")
    for symptom in moved["symptoms"]:
        assert f"symptom {log}:{symptom['line']}: " in text


def test_a_root_cause_after_a_bare_cr_on_its_line(tmp_path) -> None:
    """The error printed right after a redraw, on the same `\\n` line: its column moves right."""
    lines = LOG.read_bytes().split(b"\n")
    root = next(i for i, line in enumerate(lines) if b"torch.OutOfMemoryError" in line)
    lines[root] = redraws("Capturing CUDA graphs", 3) + b"\r" + lines[root]
    log = tmp_path / "same-line.log"
    log.write_bytes(b"\n".join(lines))
    report = json.loads(run_cli("check", "--format", "json", str(log)).stdout)
    found = report["files"][0]["incidents"][0]["root_cause"]
    assert found["line"] == root + 1
    line_text = lines[root].decode()
    assert line_text[found["column"] - 1 :].startswith("torch.OutOfMemoryError")


def test_invalid_utf8_warning_counts_newlines_only(tmp_path) -> None:
    data = with_progress_bars(LOG.read_bytes(), before=3).split(b"\n")
    data[5] += b" \xff"
    log = tmp_path / "bad.log"
    log.write_bytes(b"\n".join(data))
    assert "invalid UTF-8 (first seen on line 6)" in run_cli("check", str(log)).stdout


# -- the mapping itself ----------------------------------------------------------------------------
_pieces = st.lists(
    st.sampled_from(["a", "é", "😀", "\r", "\n", "\r\n", "xyz", " "]), min_size=0, max_size=40
).map("".join)


def _reference(text: str) -> list[tuple[int, int, int]]:
    """For each core line: (core line, `\\n` line, code-point column where it starts there)."""
    out = []
    core = 0
    nl_lines = text.split("\n")
    for nl_line, nl_text in enumerate(nl_lines):
        if nl_line < len(nl_lines) - 1:
            nl_text = nl_text.removesuffix("\r")  # the \r of a \r\n
        column = 0
        for piece in re.split(r"(?<=\r)", nl_text):  # pieces end with their bare \r
            out.append((core, nl_line, column))
            core += 1
            column += len(piece)
    return out


@settings(max_examples=300, deadline=None)
@given(_pieces)
def test_mapping_matches_a_reference_both_ways(text: str) -> None:
    assert len(_reference(text)) == len(lsp_lines(text))
    for as_bytes in (False, True):
        lines = NewlineLines(text.encode() if as_bytes else text)
        assert lines.identity == (re.search(r"\r(?!\n)", text) is None)
        for core, nl_line, column in _reference(text):
            assert lines.line(core) == nl_line
            assert lines.position(core, 2) == (nl_line, column + 2)
            assert lines.core_position(nl_line, column + 0) == (core, 0)
            first, last = lines.core_line_range(nl_line)
            assert first <= core <= last
