"""How a regex's search time grows with the line it reads: linear, or worse.

Python's `re` (all the VS Code bundle has; `regex` is compiled and not bundled) backtracks. A pattern
like `(?P<path>\\S+) does not appear` searched in a 19 kB line of `'` tries every start and scans to the
end from each: quadratic, seconds per line. Nested repeats (`(\\w+\\s?)+$`) are exponential. Every
built-in pattern is tested with the lines made here (tests/catalog/test_linearity.py,
benchmarks/regex_linearity.py); user patterns are checked at load time when there is no `regex`
time limit to stop them (`refusal`).

The adversarial lines are derived from the pattern itself: a run of one character that some part of
the pattern accepts, with or without a character that makes the match fail at the end, and the
pattern's own literal pieces repeated. Each is a "shape"; the same shape is measured at two lengths.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator

from .records import dataclass

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The parser behind `re` (private, but stable for years; only used for this analysis). Type
# checkers read it under its old public name, which typeshed describes.
if TYPE_CHECKING or sys.version_info < (3, 11):
    import sre_parse as _sre_parse
    from sre_constants import MAXREPEAT
else:
    from re import _parser as _sre_parse
    from re._constants import MAXREPEAT

#: Characters whose runs break typical patterns: words, digits, spaces, quotes, path and punctuation.
RUN_CHARACTERS = "a0 '\"/.:-_=,(\t[x\\"
#: Appended to a run so that a pattern that needs more than the run fails after reading all of it.
FAIL_SUFFIXES = ("", "\x00", "!")

if TYPE_CHECKING:
    Search = Callable[[str], Any]
else:  # a name for annotations only
    Search = Callable


@dataclass(frozen=True)
class Growth:
    """The worst shape of one pattern: its search time at two lengths of that shape."""

    shape: str  # a short description, e.g. "run of 'a' + '!'"
    small_seconds: float
    large_seconds: float
    small_length: int
    large_length: int

    @property
    def ratio(self) -> float:
        return self.large_seconds / max(self.small_seconds, 1e-9)

    @property
    def length_ratio(self) -> float:
        return self.large_length / self.small_length

    @property
    def superlinear(self) -> bool:
        """Time grew much faster than the line, and by enough to be measured, not timer noise (a
        literal search takes microseconds; a quadratic pattern takes milliseconds at these lengths)."""
        return self.ratio > SUPERLINEAR_FACTOR * self.length_ratio and self.large_seconds > NOISE_FLOOR


def _literal_pieces(source: str) -> list[str]:
    """Runs of literal characters of the pattern (`does not appear` of the example above)."""
    try:
        tree = _sre_parse.parse(source)
    except Exception:
        return []
    pieces: list[str] = []

    def walk(items: Any) -> None:
        current: list[str] = []
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                current.append(chr(arg))
                continue
            if current:
                pieces.append("".join(current))
                current = []
            for sub in _children(name, arg):
                walk(sub)
        if current:
            pieces.append("".join(current))

    walk(tree)
    return [p for p in dict.fromkeys(pieces) if p.strip()][:6]


def _children(name: str, arg: Any) -> Iterator[Any]:
    """The sub-sequences of one parsed node."""
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        yield arg[2]
    elif name == "SUBPATTERN":
        yield arg[-1]
    elif name == "BRANCH":
        yield from arg[1]
    elif name in ("ASSERT", "ASSERT_NOT"):
        yield arg[1]
    elif name == "ATOMIC_GROUP":
        yield arg


def shapes(source: str) -> list[tuple[str, Callable[[int], str]]]:
    """(description, length -> line) pairs of adversarial lines for `source`."""
    out: list[tuple[str, Callable[[int], str]]] = []
    for char in RUN_CHARACTERS:
        for suffix in FAIL_SUFFIXES:
            out.append((f"run of {char!r}{f' + {suffix!r}' if suffix else ''}", _run(char, suffix)))
    for piece in _literal_pieces(source):
        out.append((f"repeats of {piece[:20]!r}", _run(piece, "")))
        out.append((f"repeats of {piece[:20]!r} + ' '", _run(piece + " ", "")))
        # The piece without its last character: the pattern almost matches at every repeat.
        if len(piece) > 1:
            out.append((f"repeats of {piece[:-1][:20]!r}", _run(piece[:-1], "")))
    return out


def _run(unit: str, suffix: str) -> Callable[[int], str]:
    def make(length: int) -> str:
        body = unit * (max(1, length - len(suffix)) // len(unit) + 1)
        return body[: max(1, length - len(suffix))] + suffix

    return make


def _seconds(search: Search, line: str, repeat: int) -> float:
    """CPU seconds of this thread (other processes on a busy machine do not count), best of `repeat`."""
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time()
        search(line)
        best = min(best, time.thread_time() - start)
    return best


#: A first step from `small` to this many times `small`: a super-linear shape shows here already.
_PROBE_FACTOR = 4
#: Growth beyond this many times the length growth is super-linear (linear is 1x; quadratic 4x here).
SUPERLINEAR_FACTOR = 2.5
#: Searches faster than this (CPU seconds) are too short to compare.
NOISE_FLOOR = 0.002


def worst_growth(
    search: Search, source: str, small: int = 5_000, large: int = 100_000, repeat: int = 3
) -> Growth:
    """The shape whose search time grows most from `small` to `large` characters.

    Every shape is timed at `small`; the slowest few are timed at 4x `small`, and those that still
    look linear there at `large`. A shape that is super-linear at 4x is reported with that
    measurement: running it at `large` would only take minutes to say the same.
    """
    # Screened once each; the slowest few are timed again, best of `repeat`.
    screened = sorted(
        ((_seconds(search, make(small), 1), description, make) for description, make in shapes(source)),
        key=lambda t: t[0],
        reverse=True,
    )
    worst: Growth | None = None
    for _, description, make in screened[:3]:
        small_seconds = _seconds(search, make(small), repeat)
        probe = small * _PROBE_FACTOR
        probe_seconds = _seconds(search, make(probe), repeat)
        growth = Growth(description, small_seconds, probe_seconds, small, probe)
        if not growth.superlinear and large > probe:
            growth = Growth(description, small_seconds, _seconds(search, make(large), repeat), small, large)
        if worst is None or growth.ratio / growth.length_ratio > worst.ratio / worst.length_ratio:
            worst = growth
    assert worst is not None
    return worst


# -- user patterns without a time limit -----------------------------------------------------------
def _unbounded(name: str, arg: Any) -> bool:
    return name in ("MAX_REPEAT", "MIN_REPEAT") and arg[1] == MAXREPEAT


def _has_mandatory_literal(items: Any) -> bool:
    """Whether every match of the sequence contains a fixed character outside any repeat: it
    separates one iteration of an enclosing repeat from the next."""
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return True
        if name == "SUBPATTERN" and _has_mandatory_literal(arg[-1]):
            return True
        if name == "BRANCH" and all(_has_mandatory_literal(alt) for alt in arg[1]):
            return True
    return False


def _contains_repeat_or_branch(items: Any) -> bool:
    for op, arg in items:
        name = str(op)
        if _unbounded(name, arg) or name == "BRANCH":
            return True
        if any(_contains_repeat_or_branch(sub) for sub in _children(name, arg)):
            return True
    return False


def nested_repeat(source: str) -> bool:
    """An unbounded repeat around another repeat or an alternation with nothing fixed between the
    inner matches (`(a+)+`, `(\\w+\\s?)*`, `(a|ab)*`): exponential backtracking is possible."""
    try:
        tree = _sre_parse.parse(source)
    except Exception:
        return False

    def walk(items: Any) -> bool:
        for op, arg in items:
            name = str(op)
            ambiguous = _unbounded(name, arg) and _contains_repeat_or_branch(arg[2])
            if ambiguous and not _has_mandatory_literal(arg[2]):
                return True
            if any(walk(sub) for sub in _children(name, arg)):
                return True
        return False

    return walk(tree)


#: At load time a user pattern is timed on lines growing by this factor up to USER_CHECK_LENGTH.
_GROWTH_STEP = 1.25
USER_CHECK_LENGTH = 4_096
#: A search that takes longer than this on a line of USER_CHECK_LENGTH or less is too slow.
USER_CHECK_BUDGET = 0.02


def refusal(source: str) -> str | None:
    """Why a user pattern must not run without a time limit (stdlib `re`), or None when it is safe.

    First the structure (nested repeats can be exponential, and no line length makes them safe),
    then the growth: each shape is timed on lines growing by 25 % from 16 characters; a search over
    budget before USER_CHECK_LENGTH characters is super-linear (a linear pattern reads 4 kB in
    microseconds). Small steps keep even an exponential pattern that slipped through from running long.
    """
    if nested_repeat(source):
        return (
            "nested repeats (such as `(a+)+` or `(\\w+\\s?)*`) can take exponential time; "
            "put a fixed character between the inner matches or bound the repeat"
        )
    compiled = re.compile(source)
    for description, make in shapes(source):
        length = 16.0
        while length <= USER_CHECK_LENGTH:
            line = make(int(length))
            # Timed again before refusing: one slow run may be the machine, not the pattern.
            if _seconds(compiled.search, line, 1) > USER_CHECK_BUDGET and (
                _seconds(compiled.search, line, 2) > USER_CHECK_BUDGET
            ):
                return (
                    f"searching a line of {int(length)} characters ({description}) takes over "
                    f"{USER_CHECK_BUDGET * 1000:.0f} ms: the time grows faster than the line; anchor the "
                    "pattern or bound its repeats (e.g. `\\S{1,200}` instead of `\\S+`)"
                )
            length *= _GROWTH_STEP
    return None
