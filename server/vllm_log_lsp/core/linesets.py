"""Compact records of line numbers that a scan keeps for every traceback of a log.

A log of many tracebacks (every request's error logged) makes the scan remember, per traceback,
the lines it consumed and each candidate line's offset. As a `set` and a `dict` that costs an
entry and an int object per line (about 100 bytes a line, 0.5 KB a traceback); a traceback's
lines are a run of consecutive numbers or a few, and the scan meets its lines in order, so:

- `LineRuns`: a set of line numbers as sorted runs [start, end) in two arrays (16 bytes a run);
- `LineMap`: line → offset as two sorted arrays (16 bytes a line), appended in line order.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping


class LineRuns:
    """A set of line numbers (>= 0) held as runs of consecutive numbers."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, numbers: Iterable[int] = ()) -> None:
        self._starts = array("q")  # each run's first number, ascending
        self._ends = array("q")  # ... and the number after its last; runs neither touch nor overlap
        self.update(numbers)

    def update(self, numbers: Iterable[int]) -> None:
        """Add `numbers` (in any order; a traceback gives them ascending, one pass then)."""
        start = end = None
        for number in sorted(numbers):
            if number == end:
                end += 1
                continue
            if start is not None and number < end:  # type: ignore[operator]
                continue  # a repeat
            if start is not None:
                self._add_run(start, end)  # type: ignore[arg-type]
            start, end = number, number + 1
        if start is not None:
            self._add_run(start, end)  # type: ignore[arg-type]

    def runs(self) -> tuple[tuple[int, int], ...]:
        """The runs held, [start, end) each, ascending."""
        return tuple(zip(self._starts, self._ends, strict=True))

    def add_periodic(self, first: int, period: int, count: int, runs: tuple[tuple[int, int], ...]) -> None:
        """Add `runs` ([a, b) from `first`) and their `count - 1` copies `period` apart after
        them: the lines of copies of one traceback (see `repeats`)."""
        if count <= 0 or not runs:
            return
        last = first + (count - 1) * period
        apart = runs[-1][1] < runs[0][0] + period  # (the copies' runs neither touch nor overlap)
        if len(runs) == 1 and apart and (not self._ends or first + runs[0][0] > self._ends[-1]):
            a, b = runs[0]
            self._starts.extend(range(first + a, last + a + 1, period))
            self._ends.extend(range(first + b, last + b + 1, period))
            return
        for base in range(first, last + 1, period):
            for a, b in runs:
                self._add_run(base + a, base + b)

    def _add_run(self, start: int, end: int) -> None:
        starts, ends = self._starts, self._ends
        if not ends or start > ends[-1]:  # after every run (the scan's case): appended
            starts.append(start)
            ends.append(end)
            return
        first = bisect_left(ends, start)  # the first run that ends at or after `start`
        after = bisect_right(starts, end)  # the runs from `first` on that start at or before `end`
        if first < after:  # they touch or overlap it: one run
            start, end = min(start, starts[first]), max(end, ends[after - 1])
        starts[first:after] = array("q", [start])
        ends[first:after] = array("q", [end])

    def __contains__(self, number: object) -> bool:
        at = bisect_right(self._starts, number) - 1  # type: ignore[call-overload]
        return at >= 0 and number < self._ends[at]

    @property
    def end(self) -> int:
        """The number after the greatest held (0 when empty)."""
        return self._ends[-1] if self._ends else 0

    def __iter__(self) -> Iterator[int]:
        for start, end in zip(self._starts, self._ends, strict=True):
            yield from range(start, end)

    def __len__(self) -> int:
        return sum(self._ends) - sum(self._starts)

    def below(self, limit: int) -> LineRuns:
        """The numbers less than `limit`."""
        kept = LineRuns()
        count = bisect_left(self._starts, limit)  # the runs that start below it
        kept._starts = self._starts[:count]
        kept._ends = self._ends[:count]
        if count and kept._ends[-1] > limit:
            kept._ends[-1] = limit
        return kept

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineRuns):
            return self._starts == other._starts and self._ends == other._ends
        return NotImplemented

    def __repr__(self) -> str:
        return f"LineRuns({list(zip(self._starts, self._ends, strict=True))})"


class LineMap(Mapping[int, int]):
    """Line number → a number of it (its offset), as two sorted arrays; cheapest when lines are
    added in ascending order, as a scan meets them."""

    __slots__ = ("_lines", "_values")

    def __init__(self, items: Iterable[tuple[int, int]] = ()) -> None:
        self._lines = array("q")
        self._values = array("q")
        for line, value in items:
            self[line] = value

    def __setitem__(self, line: int, value: int) -> None:
        lines = self._lines
        if not lines or line > lines[-1]:
            lines.append(line)
            self._values.append(value)
            return
        at = bisect_left(lines, line)
        if lines[at] == line:
            self._values[at] = value
        else:
            lines.insert(at, line)
            self._values.insert(at, value)

    def __getitem__(self, line: int) -> int:
        lines = self._lines
        at = bisect_left(lines, line)
        if at < len(lines) and lines[at] == line:
            return self._values[at]
        raise KeyError(line)

    def __contains__(self, line: object) -> bool:
        lines = self._lines
        at = bisect_left(lines, line)  # type: ignore[call-overload]
        return at < len(lines) and lines[at] == line

    def __iter__(self) -> Iterator[int]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)

    def below(self, limit: int) -> LineMap:
        """The lines less than `limit`, with their numbers."""
        kept = LineMap()
        count = bisect_left(self._lines, limit)
        kept._lines = self._lines[:count]
        kept._values = self._values[:count]
        return kept

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineMap):
            return self._lines == other._lines and self._values == other._values
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"LineMap({dict(self.items())})"
