"""The grep-accelerated pre-filter finds exactly the lines the pure-Python scan finds."""

from __future__ import annotations

import shutil

import pytest

from support import CRASH, crash_labels
from vllm_log_lsp.core import prefilter
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.text import LogIndex

LITERALS = ["Traceback (most recent call last)", "Error", "died unexpectedly", "模型", "█  version"]
needs_grep = pytest.mark.skipif(shutil.which("grep") is None, reason="no grep on this system")


@pytest.fixture
def always_grep(monkeypatch):
    monkeypatch.setattr(prefilter, "GREP_THRESHOLD", 0)


def sample_texts() -> list[str]:
    texts = [
        (CRASH / label["file"]).read_text(encoding="utf-8", errors="replace") for label in crash_labels()
    ]
    texts.append("ascii only\nError here\n\nTraceback (most recent call last):\n")
    texts.append("模型 Error 😀\n€€€\n  died unexpectedly 模型\nno\n")
    return texts


@needs_grep
@pytest.mark.parametrize("text", sample_texts(), ids=lambda t: str(len(t)))
def test_grep_and_python_agree(always_grep, text: str) -> None:
    python = prefilter._python_scan(LogIndex(text), sorted(LITERALS), 0)
    for index in (LogIndex(text), LogIndex(text.encode("utf-8"))):
        grep = prefilter.candidate_lines(index, LITERALS)
        if index.is_bytes:  # byte offsets: compare by line numbers instead
            assert [n for _, n in grep] == [LogIndex(text).line_of(o) for o, _ in python]
        else:
            assert [o for o, _ in grep] == [o for o, _ in python]
            assert [n for _, n in grep] == [LogIndex(text).line_of(o) for o, _ in python]


@needs_grep
def test_grep_reads_a_file_directly(always_grep, tmp_path) -> None:
    path = tmp_path / "crash.log"
    data = (CRASH / "032.log").read_bytes()
    path.write_bytes(data)
    via_file = analyze(data, path=str(path))
    plain = analyze(data.decode("utf-8", "replace"))
    assert [(f.line, f.rule_id, f.root) for f in via_file.findings] == [
        (f.line, f.rule_id, f.root) for f in plain.findings
    ]


@needs_grep
def test_grep_from_an_offset(always_grep) -> None:
    text = (CRASH / "011.log").read_text(encoding="utf-8")
    begin = len(text) // 2
    index = LogIndex(text)
    expected = prefilter._python_scan(LogIndex(text), sorted(LITERALS), begin)
    assert [o for o, _ in prefilter.candidate_lines(index, LITERALS, begin)] == [o for o, _ in expected]


def test_without_grep_the_python_scan_is_used(monkeypatch) -> None:
    monkeypatch.setattr(prefilter, "GREP_THRESHOLD", 0)
    monkeypatch.setenv("VLLM_LOG_LSP_NO_GREP", "1")
    text = (CRASH / "007.log").read_text(encoding="utf-8")
    assert all(n is None for _, n in prefilter.candidate_lines(LogIndex(text), LITERALS))
    assert [f.line + 1 for f in analyze(text).findings] == [72]
