"""Every built-in pattern is linear-time under the stdlib `re` (the VS Code bundle's engine) and `regex`.

For each pattern, lines are built from the pattern itself (`core.linearity.shapes`: runs of characters
it accepts, with or without a character that makes it fail at the end, and its own literal pieces
repeated). The slowest shapes at 5 kB are timed again at 100 kB, in the same test: a linear pattern
takes about 20 times as long, a quadratic one 400 times. A pattern whose time grows more than
SUPERLINEAR_FACTOR times faster than its line fails the test, with the shape that shows it.

Fixes that keep a pattern's matches: a negative lookbehind of a leading class repeat (`(?<!\\S)\\S+`:
a match can then only start where the run starts, which is where the leftmost match starts anyway);
bounded gaps between literals (`.{0,500}` for `.*`); anchors.

KNOWN_SUPERLINEAR lists the built-in patterns not fixed yet; a pattern added or changed elsewhere that
grows faster than its line fails here. `benchmarks/regex_linearity.py` reports the worst patterns.
"""

from __future__ import annotations

import re

import pytest

from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.linearity import worst_growth

try:
    import regex
except ImportError:  # pragma: no cover - the dev environment has it
    regex = None

#: Built-in patterns whose search time still grows faster than the line (to be fixed; see the note of
#: issue 11). Never add to this list: fix the pattern.
KNOWN_SUPERLINEAR: frozenset[str] = frozenset()


def builtin_patterns() -> list[tuple[str, str]]:
    """(where, source) of every built-in marker and rule pattern."""
    catalog = builtin_catalog()
    markers = [(f"marker {kind}:{m.id}", m) for kind, ms in catalog.markers.items() for m in ms]
    found = [(where, m.pattern.source) for where, m in markers]
    found += [(f"{where}.reason", m.reason.source) for where, m in markers if m.reason is not None]
    found += [
        (f"{where}.details_for", m.details_for.source) for where, m in markers if m.details_for is not None
    ]
    for rule in catalog.rules:
        if not rule.source.startswith("catalog/"):
            continue
        for field in ("match", "frames", "context", "evidence"):
            found += [(f"rule {rule.id}.{field}", p.source) for p in getattr(rule, field)]
    return sorted(set(found), key=lambda item: item[1])


ENGINES = [
    pytest.param(re, id="re"),
    pytest.param(regex, id="regex", marks=pytest.mark.skipif(regex is None, reason="no regex")),
]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_every_builtin_pattern_is_linear(engine):
    failures = []
    seen_sources = set()
    for where, source in builtin_patterns():
        seen_sources.add(source)
        if source in KNOWN_SUPERLINEAR:
            continue
        search = engine.compile(source).search
        growth = worst_growth(search, source)
        if growth.superlinear:
            # A busy machine can slow one measurement; a super-linear pattern is slow every time.
            growth = worst_growth(search, source)
        if growth.superlinear:
            failures.append(
                f"{where} {source!r}: {growth.shape} takes {growth.small_seconds * 1000:.2f} ms at "
                f"{growth.small_length} chars and {growth.large_seconds * 1000:.2f} ms at {growth.large_length} "
                f"({growth.ratio:.0f}x for {growth.length_ratio:.0f}x the length)"
            )
    assert not failures, "super-linear built-in patterns:\n" + "\n".join(failures)
    assert seen_sources >= KNOWN_SUPERLINEAR, (
        f"fixed or gone, remove: {sorted(KNOWN_SUPERLINEAR - seen_sources)}"
    )


def test_the_growth_measure_tells_linear_from_quadratic():
    """The measure itself, on patterns whose growth is known."""
    quadratic = r"(?P<path>\S+) does not appear"
    linear = r"(?<!\S)(?P<path>\S+) does not appear"
    slow = worst_growth(re.compile(quadratic).search, quadratic, small=2_000, large=40_000)
    fast = worst_growth(re.compile(linear).search, linear, small=2_000, large=40_000)
    assert slow.superlinear, slow
    assert not fast.superlinear, fast
    # The fix keeps the matches.
    for text in ("/m/x does not appear to have", "a b/c does not appear", "'''x does not appear"):
        assert re.search(quadratic, text).group("path") == re.search(linear, text).group("path")
