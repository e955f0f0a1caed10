"""Repeated precursors as one: vLLM repeats some warnings while it waits or degrades (a stalled
shared-memory broadcast every 60 s, the same failed import on every worker), and six copies of one
explanation say no more than one with a count.

A repeat is the same precursor (the same marker) again before the same death: a root cause
between two occurrences ends the repeat, so each group explains the one death that follows it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable

from .model import Finding, Precursor
from .records import dataclass


@dataclass(frozen=True)
class RepeatedPrecursor:
    """One precursor and every time it was printed before the same death (the first included)."""

    occurrences: tuple[Precursor, ...]

    @property
    def first(self) -> Precursor:
        return self.occurrences[0]

    @property
    def last(self) -> Precursor:
        return self.occurrences[-1]

    @property
    def count(self) -> int:
        return len(self.occurrences)

    def title(self, line_of: Callable[[int], int] = int) -> str:
        """`Title` once; `Title (6 times, lines 34–95)` when repeated, 1-based by `line_of`."""
        if self.count == 1:
            return self.first.title
        first, last = line_of(self.first.line) + 1, line_of(self.last.line) + 1
        return f"{self.first.title} ({self.count} times, lines {first}–{last})"


def collapse_precursors(
    precursors: Iterable[Precursor], findings: Iterable[Finding]
) -> tuple[RepeatedPrecursor, ...]:
    """The precursors grouped by marker and by the death they lead to, in order of first line."""
    roots = sorted(f.line for f in findings)
    groups: dict[tuple[str, int], list[Precursor]] = {}
    for precursor in sorted(precursors, key=lambda p: p.line):
        death = bisect.bisect_left(roots, precursor.line)  # which death comes next
        groups.setdefault((precursor.id, death), []).append(precursor)
    collapsed = (RepeatedPrecursor(tuple(group)) for group in groups.values())
    return tuple(sorted(collapsed, key=lambda group: group.first.line))
