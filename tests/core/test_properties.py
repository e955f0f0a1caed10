"""Analysis never raises, and every position it reports lies inside the text (hypothesis)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import CRASH, crash_labels, read_log
from vllm_log_lsp.core.analyze import Analyzer, analyze
from vllm_log_lsp.core.model import Analysis
from vllm_log_lsp.core.text import LogIndex, decode_log

CORPUS = [read_log(CRASH / label["file"]) for label in crash_labels()]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_positions_inside(text: str, analysis: Analysis) -> None:
    """Every span lies inside the text the analysis read (a transcript, when it read one), and
    a transcript's map takes it inside `text`'s `\\n`-lines."""
    source_map = analysis.source_map
    index = LogIndex(source_map.text if source_map is not None else text)
    count = index.line_count
    spans = [f.root for f in analysis.findings]
    spans += [s.span for f in analysis.findings for s in f.symptoms]
    spans += [p.span for p in analysis.precursors]
    own_lines = text.split("\n")
    for span in spans:
        assert 0 <= span.line < count
        assert 0 <= span.start <= span.end <= len(index.line_text(span.line))
        if source_map is not None:
            line, column = source_map.position(span.line, span.start)
            assert 0 <= line < len(own_lines) and 0 <= column <= len(own_lines[line])
    for first, last in analysis.folds:
        assert 0 <= first <= last < count


@FAST
@given(st.binary(max_size=4000))
def test_random_bytes_never_raise(data: bytes) -> None:
    text, _ = decode_log(data)
    assert_positions_inside(text, analyze(text))


@FAST
@given(st.sampled_from(CORPUS), st.floats(0, 1), st.floats(0, 1))
def test_truncated_logs(text: str, start: float, end: float) -> None:
    lo, hi = sorted((int(start * len(text)), int(end * len(text))))
    piece = text[lo:hi]
    assert_positions_inside(piece, analyze(piece))


@FAST
@given(st.sampled_from(CORPUS), st.integers(0, 2**32))
def test_shuffled_logs(text: str, seed: int) -> None:
    lines = text.split("\n")
    random.Random(seed).shuffle(lines)
    shuffled = "\n".join(lines)
    assert_positions_inside(shuffled, analyze(shuffled))


@FAST
@given(st.sampled_from(CORPUS), st.sampled_from(["\r\n", "\r", "\n"]), st.integers(1, 5))
def test_line_endings_and_growth(text: str, ending: str, parts: int) -> None:
    text = text.replace("\n", ending)
    analyzer = Analyzer()
    step = max(1, len(text) // parts)
    for end in range(step, len(text) + step, step):
        grown = analyzer.analyze(text[: min(end, len(text))])
    assert grown.findings == analyze(text).findings
    assert_positions_inside(text, grown)


def test_huge_single_line_is_fine() -> None:
    text = "ERROR " + "x" * 5_000_000 + "\nTraceback (most recent call last):\n" + "  File" * 100_000
    assert_positions_inside(text, analyze(text))
