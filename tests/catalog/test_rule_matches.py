"""`RuleMatches` (the rules whose signature finds a text, remembered per text for one analysis,
each distinct pattern searched once per text) yields exactly what trying every rule's patterns in
priority order yields: the same rules, in order, with the same first match.

Checked on every built-in rule's samples and on texts that match none, read whole, in part and
then again, in both orders, through one `RuleMatches` and through fresh ones; and on a catalog
whose user rules share a pattern with the built-in ones and come first."""

from __future__ import annotations

import random

import pytest

from vllm_log_lsp.core.catalog import RuleMatches, build_catalog, builtin_catalog
from vllm_log_lsp.core.catalog import _builtin_files as builtin_files

CATALOG = builtin_catalog()
SAMPLES = [sample for rule in CATALOG.rules for sample in rule.samples]
TEXTS = [*SAMPLES, "", "INFO nothing went wrong", "RuntimeError: something only this log says"]


def plain_matches(catalog, text: str) -> list[tuple[str, tuple[int, int], dict]]:
    """The specification: every rule, in order, its patterns in order, the first that finds."""
    found = []
    for rule in catalog.rules:
        match = next((m for p in rule.match if (m := p.search(text))), None)
        if match:
            found.append((rule.id, match.span(), match.groupdict()))
    return found


def as_rows(pairs) -> list[tuple[str, tuple[int, int], dict]]:
    return [(rule.id, match.span(), match.groupdict()) for rule, match in pairs]


def test_the_samples_match_several_rules_sharing_patterns() -> None:
    """Not vacuous: texts found by more than one rule, and rules sharing a signature's pattern."""
    assert sum(len(plain_matches(CATALOG, t)) > 1 for t in SAMPLES) > 20
    sources = [p.source for rule in CATALOG.rules for p in rule.match]
    assert len(sources) > len(set(sources)) + 20


@pytest.mark.parametrize("order", ["forwards", "backwards", "shuffled"])
def test_remembered_matches_equal_trying_every_rule(order: str) -> None:
    texts = list(TEXTS)
    if order == "backwards":
        texts.reverse()
    elif order == "shuffled":
        random.Random(17).shuffle(texts)
    matches = RuleMatches(CATALOG)
    for text in texts:
        want = plain_matches(CATALOG, text)
        first = next(iter(matches.matching(text)), None)  # read in part first: the rest later
        assert as_rows([first] if first else []) == want[:1]
        assert as_rows(matches.matching(text)) == want
        assert as_rows(matches.matching(text)) == want  # again, all remembered
        assert as_rows(RuleMatches(CATALOG).matching(text)) == want


def test_two_readers_of_one_text_at_once_see_the_same_rules() -> None:
    text = next(t for t in SAMPLES if len(plain_matches(CATALOG, t)) > 2)
    matches = RuleMatches(CATALOG)
    one, two = matches.matching(text), matches.matching(text)
    rows = [next(one), next(two), next(two), next(one)]
    want = plain_matches(CATALOG, text)
    assert as_rows(rows) == [want[0], want[0], want[1], want[1]]


def test_user_rules_sharing_a_builtin_pattern_come_first_and_builtin_files_load_as_reached() -> None:
    oom = next(r for r in CATALOG.rules if r.samples and "out of memory" in r.samples[0].lower())
    shared = oom.match[0].source.replace("'", "\\'")
    user = f"""
[[rule]]
id = "my-oom"
title = "My OOM"
family = "memory"
match = ['{shared}']
samples = ['{oom.samples[0].replace("'", "")}']
"""
    catalog = build_catalog(builtin_files(), [("user.toml", user)])
    text = oom.samples[0]
    rows = as_rows(RuleMatches(catalog).matching(text))
    assert rows[0][0] == "my-oom" and oom.id in [r[0] for r in rows]
    fresh = build_catalog(builtin_files(), [("user.toml", user)])
    first = next(iter(RuleMatches(fresh).matching(text)))
    assert first[0].id == "my-oom" and fresh._pending, "no built-in file is parsed before it is reached"
    assert rows == plain_matches(catalog, text)
