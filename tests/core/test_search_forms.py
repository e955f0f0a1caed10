"""rg searches for a part of each literal (`search_forms`, chosen by `scripts/search_forms.py`):
it finds every line holding a literal and maybe others, which the readers of the lines pass over
as lines with no marker. The analysis is the same, whichever way the lines were found."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from core.test_incremental import assert_same, fresh
from core.test_prefilter import tool
from support import CRASH, ROOT, crash_labels
from vllm_log_lsp.core import early, prefilter, scan, stats
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.search_forms import FORMS
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
SCAN_LITERALS = sorted(scan.scan_literals(CATALOG))


def test_the_generated_forms_are_up_to_date() -> None:
    """A catalog change that adds or changes a literal regenerates the forms."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "search_forms.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("literal", sorted(FORMS))
def test_each_form_is_an_ending_of_a_scan_literal(literal: str) -> None:
    form = FORMS[literal]
    assert literal in SCAN_LITERALS
    assert literal.endswith(form) and form != literal
    assert len(form.encode("utf-8")) >= 4
    # (Not inside a number: its later digits are as common as any.)
    cut = len(literal) - len(form)
    assert not (literal[cut - 1].isdigit() and form[0].isdigit())


def test_the_stats_literals_are_searched_whole() -> None:
    """The stats reader takes a line of a layout it knows for a stats line: it is given only
    lines that hold a stats literal."""
    assert not set(stats.LITERALS) & set(FORMS)


def test_rgs_command_searches_the_forms_of_the_fewest_literals() -> None:
    """`received signal SIGSEGV` holds `received signal`, and is left out before either becomes
    its form (`gnal SIGSEGV` does not hold `ceived signal`): one literal more than rg's SIMD
    search takes and a search of 100 MB would take twice as long."""
    command = early.rg_command("rg", SCAN_LITERALS, "log")
    searched = [command[at + 1] for at, arg in enumerate(command) if arg == "-e"]
    assert len(searched) <= early.RG_FAST_LITERALS
    assert len(searched) <= len(early.fewest_literals(SCAN_LITERALS))
    for literal in SCAN_LITERALS:  # each literal holds something searched
        assert any(form in literal for form in searched), literal
    assert "Traceback (most recent call last)" not in searched


def _lines(rng: random.Random, count: int) -> list[str]:
    """Lines of literals, their forms, their starts and words around them, in any mix."""
    pieces = [*SCAN_LITERALS, *FORMS.values(), *(literal[:4] for literal in FORMS), "x", " ", "batch ", "9"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 3))) for _ in range(count)]


def test_rg_finds_every_line_that_holds_a_literal() -> None:
    search = tool("rg")
    text = "\n".join(_lines(random.Random(11), 3000)) + "\n"
    index = LogIndex(text.encode("utf-8"))
    found = {start for start, _ in prefilter.candidate_lines(index, SCAN_LITERALS, tool=search)}
    holding = {start for start, _ in prefilter._python_scan(index, SCAN_LITERALS, 0)}
    assert holding <= found
    extra = found - holding
    assert extra, "the sample holds lines with a form but not its literal"
    for start in extra:
        line = index.text[start : index.line_end_at(start)].decode("utf-8")
        assert any(form in line for form in FORMS.values()), line


def _decoys() -> list[str]:
    """vLLM-shaped lines holding a form of a literal but not the literal."""
    return [
        f"INFO 03-02 10:11:{second:02d} [api_server.py:1] {form} was seen, nothing failed"
        for second, form in enumerate(sorted(set(FORMS.values())))
    ]


@pytest.mark.parametrize("label", crash_labels()[:8], ids=lambda label: label["file"])
def test_a_log_with_decoys_reads_alike_found_by_rg(tools_always, tmp_path, label: dict) -> None:
    tool("rg")
    lines = (CRASH / label["file"]).read_text(encoding="utf-8").splitlines(keepends=True)
    decoys = [line + "\n" for line in _decoys()]
    rng = random.Random(label["file"])
    for decoy in decoys:
        lines.insert(rng.randrange(len(lines) + 1), decoy)
    text = "".join(lines)
    path = tmp_path / "decoys.log"
    path.write_bytes(text.encode("utf-8"))
    assert_same(analyze(path.read_bytes(), path=str(path)), fresh(text), "found by rg")
