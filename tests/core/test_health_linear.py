"""Health costs what a growing log adds, and answers as the plain definitions do.

Every analysis of a tailed log builds its health again, so what health reads must not grow with
the whole log: the last successful request before a death is searched back from the death, and a
sample's earlier peak is a sliding-window maximum. Both equal their plain definitions (hypothesis),
over texts much longer than the first block searched.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core.health import _earlier_peaks, last_of
from vllm_log_lsp.core.text import LogIndex

LITERALS = ('" 200 OK', '" 200 ', "Finished request")
pieces = st.sampled_from(['" 200 OK', '" 200 ', "Finished request", '" 20', "0 OK", "x", "\n", "é", "Fin"])
texts = st.lists(pieces, max_size=80).map("".join)


def plain_last(index: LogIndex, lo: int, hi: int) -> int:
    return max(index.rfind(literal, lo, hi) for literal in LITERALS)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(1, 12), st.floats(0, 1), st.floats(0, 1), st.booleans())
def test_searching_back_by_blocks_finds_what_rfind_finds(
    text: str, block: int, a: float, b: float, as_bytes: bool
) -> None:
    lo, hi = sorted((int(a * len(text)), int(b * len(text))))
    index = LogIndex(text.encode("utf-8") if as_bytes else text)
    if as_bytes:
        lo, hi = len(text[:lo].encode("utf-8")), len(text[:hi].encode("utf-8"))
    # Tiny blocks: occurrences straddle block boundaries everywhere.
    assert last_of(index, LITERALS, lo, hi, block) == plain_last(index, lo, hi)
    assert last_of(index, LITERALS, lo, hi) == plain_last(index, lo, hi)


def test_a_success_far_before_the_death_is_still_found() -> None:
    text = 'GET / HTTP/1.1" 200 OK\n' + "INFO nothing\n" * 200_000 + "ERROR death\n"
    index = LogIndex(text)
    success = text.index('" 200 OK')
    assert last_of(index, LITERALS, 0, len(text)) == success
    assert last_of(index, LITERALS, success + 1, len(text)) == -1  # it starts before `lo`
    assert last_of(index, LITERALS, 0, success + 5) == -1  # it ends after `hi`


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 5000, allow_nan=False), max_size=60), st.integers(0, 40))
def test_earlier_peaks_are_the_maximum_of_the_lookback(values: list[float], lookback: int) -> None:
    expected = [max(values[max(0, i - lookback) : i], default=0.0) for i in range(len(values))]
    assert _earlier_peaks(values, lookback) == expected
