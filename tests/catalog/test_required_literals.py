"""A built-in pattern is searched only in texts holding its required literal: every match has it."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core.catalog import builtin_catalog, compile_pattern, required_literal

CATALOG = builtin_catalog()
PATTERNS = sorted(
    {p.source for r in CATALOG.rules for p in (*r.match, *r.frames, *r.context, *r.evidence)}
    | {m.pattern.source for markers in CATALOG.markers.values() for m in markers}
)


@pytest.mark.parametrize(
    ("source", "required"),
    [
        ("CUDA out of memory", "CUDA out of memory"),
        ("a|b", ""),
        ("(?i)CUDA", ""),
        ("(?i:cuda) error", " error"),
        ("abc(?:def)?ghi", "abc"),
        ("(foo|bar)bazz", "bazz"),
        (r"x\d+yz", "yz"),
        ("ab*c", "a"),
        ("(?!never)yes", "yes"),
        (r"\p{L}x", ""),  # `regex` syntax: nothing is assumed
    ],
)
def test_required_literal(source: str, required: str) -> None:
    assert required_literal(source) == required


@pytest.mark.parametrize("source", PATTERNS)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_of_a_builtin_pattern_holds_its_literal(source: str, data: st.DataObject) -> None:
    required = required_literal(source)
    try:
        re.compile(source)
    except re.error:  # syntax only `regex` reads (a global flag mid-pattern): never pre-checked
        assert required == ""
        return
    text = data.draw(st.from_regex(source))
    assert required in text
    assert compile_pattern(source, eager=False).search(text) is not None or not _engine_match(source, text)


def _engine_match(source: str, text: str) -> bool:
    return compile_pattern(source).compiled.search(text) is not None


def test_samples_still_classify_alike() -> None:
    """The pre-check never hides a match the engine finds in a rule's own samples."""
    for rule in CATALOG.rules:
        for sample in rule.samples:
            for pattern in rule.match:
                raw = compile_pattern(pattern.source).compiled.search(sample)
                assert (pattern.search(sample) is None) == (raw is None), (rule.id, pattern.source)


def test_user_patterns_are_not_prechecked() -> None:
    fuzzy_looking = compile_pattern("(?:foo){e<=1}", eager=True)  # `regex` fuzzy syntax
    assert fuzzy_looking.required == ""
