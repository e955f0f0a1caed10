"""The literals the pre-filter hands rg: fewest that find the same lines, and never more than rg's
SIMD search takes (`early.RG_FAST_LITERALS`: one more, and a 100 MB search took 2.4x as long here,
0.08 s → 0.195 s). A catalog marker with a new literal must keep within it."""

from __future__ import annotations

import random

import pytest

from support import CRASH2, read_log
from vllm_log_lsp.core import early, prefilter, scan, stats
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()


@pytest.mark.parametrize(
    "group",
    [scan.scan_literals(CATALOG), scan.run_start_literals(CATALOG), set(stats.LITERALS)],
    ids=["scan", "run starts", "stats"],
)
def test_each_search_keeps_within_rgs_fast_literals(group: set[str]) -> None:
    assert len(early.fewest_literals(sorted(group))) <= early.RG_FAST_LITERALS


def test_the_fewest_literals_find_the_same_lines() -> None:
    literals = sorted(scan.scan_literals(CATALOG))
    fewest = early.fewest_literals(literals)
    assert len(fewest) < len(literals) and set(fewest) <= set(literals)
    rng = random.Random(7)
    pieces = [*literals, "x", " ", "rror", "Err", "段", "已杀"]
    for _ in range(2000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        assert any(lit in line for lit in literals) == any(lit in line for lit in fewest), line


def test_a_literal_holding_another_is_left_out() -> None:
    assert early.fewest_literals(["EngineDeadError", "Error", "Killed", "Error"]) == ["Error", "Killed"]


def test_the_automaton_and_python_find_the_same_lines_with_the_fewest_literals() -> None:
    literals = sorted(scan.scan_literals(CATALOG))
    text = "\n".join(read_log(path) for path in sorted(CRASH2.glob("*.log"))[:10]).encode()
    index = LogIndex(text)
    found = prefilter.automaton_scan(index, literals)
    if found is None:
        pytest.skip("ahocorasick-rs is not installed")
    assert [start for start, _ in found] == [start for start, _ in prefilter._python_scan(index, literals, 0)]
