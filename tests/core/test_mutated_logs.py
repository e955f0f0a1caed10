"""What holds on any log, asserted on corpus logs mutated as real logs are (`mutations`).

- A log analysed as it grows gives what a fresh analysis of the whole gives (the editor's
  path; `test_incremental` cuts the corpus as it is).
- A file's bytes, read as the CLI reads them, give the deaths of its text, read as the editor
  gives it; and so does the file read by the search tools (rg, the in-process automaton).
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.test_incremental import TEXTS, assert_same, fresh, grow
from mutations import mutate
from vllm_log_lsp.core.analyze import analyze

NAMES = sorted(TEXTS)
OTHERS = [TEXTS[name] for name in NAMES]
# (A mutated log is cut to this many characters from a random start: the properties are about
# structure, and a shorter text keeps an example fast.)
_MOST = 60_000
SOME = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _mutated(name: str, rng: random.Random) -> str:
    text = TEXTS[name]
    start = rng.randrange(max(1, len(text) - _MOST))
    text, _ = mutate(text[start : start + _MOST], rng, OTHERS)
    return text


def _deaths(analysis) -> list[tuple[int, str, tuple[int, ...]]]:
    return [(f.line, f.rule_id, tuple(s.line for s in f.symptoms)) for f in analysis.findings]


@SOME
@given(
    st.sampled_from(NAMES),
    st.randoms(use_true_random=False),
    st.lists(st.floats(0, 1), min_size=1, max_size=3),
)
def test_a_mutated_log_grows_as_a_fresh_analysis(
    name: str, rng: random.Random, fractions: list[float]
) -> None:
    text = _mutated(name, rng)
    grow(text, [int(f * len(text)) for f in fractions], told=True)


@SOME
@given(st.sampled_from(NAMES), st.randoms(use_true_random=False))
def test_a_mutated_log_reads_alike_as_text_and_as_bytes(name: str, rng: random.Random) -> None:
    text = _mutated(name, rng)
    data = text.encode("utf-8", "surrogatepass")
    if any("\ud800" <= char <= "\udfff" for char in text):
        analyze(data)  # (a lone surrogate is not UTF-8: the bytes are read with a warning)
        return
    assert _deaths(analyze(data)) == _deaths(fresh(text))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(NAMES), st.randoms(use_true_random=False))
def test_a_mutated_file_reads_alike_by_the_search_tools(
    tools_always, tmp_path_factory, name: str, rng
) -> None:
    text = _mutated(name, rng)
    if any("\ud800" <= char <= "\udfff" for char in text):
        return
    path = tmp_path_factory.mktemp("log") / "mutated.log"
    data = text.encode("utf-8")
    path.write_bytes(data)
    whole = fresh(text)
    assert _deaths(analyze(data, path=str(path))) == _deaths(whole)
    assert_same(fresh(text), whole, "again")  # (the tools leave nothing behind between analyses)
