"""A log shown newest first (a copy from Grafana, Loki's `logcli`, Kibana, CloudWatch or
Datadog, which list the latest line at the top): found, and read oldest first.

Read as it is, such a copy has every traceback upside down (its exception above its frames, its
`Traceback (most recent call last):` at the bottom), and each death comes before what caused
it. `newest_first` tells it from the start of the text by two kinds of evidence a log printed
in order does not give:
- the timestamps of consecutive lines mostly go down (lines of one second compare equal, and a
  log interleaving processes or restarts still goes up far more often than down);
- a traceback's header has its frames above it and none below (a frame within a few lines:
  another process's line may come between); without a header (a paste that starts inside a
  traceback), its exception line is above its last frame's code instead of below it.
The headers decide where the timestamps say nothing or lean down (a log that is in no order
goes up about as often as down); the timestamps, where the headers do not say the opposite.

`oldest_first` reverses the `\\n`-lines (each line's own text, a `\\r\\n` or a progress bar's
bare `\\r`s included, is unchanged) and `ReversedLines` maps positions in that transcript back to
the log: line `i` of the transcript is line `n - 1 - i` of the log, at the same column.
"""

from __future__ import annotations

from array import array

from . import regexes
from .linebreaks import NewlineLines
from .text import Text, text_start
from .tracebacks import TRACEBACK_HEADER

#: How much of the start of a log is read to tell its order (characters).
SAMPLE_CHARS = 64 * 1024

# A line's first timestamp: vLLM's logger (`INFO 10-31 16:32:01`), a collector's ISO time
# (`2025-10-31T16:32:01.123Z`, `2025-10-31 16:32:01,123`). With a year and without, they are
# compared only with their own kind.
_TIMESTAMP = regexes.compile(
    r"(?<![\d-])(?P<year>\d{4}-)?(?P<date>[01]\d-[0-3]\d)[T ](?P<time>[0-2]\d:[0-5]\d:[0-6]\d(?:[.,]\d+)?)"
)
# How far into a line its timestamp is looked for (past a collector's and vLLM's prefixes).
_TIME_REACH = 160
# The line that ends a traceback: the exception's (dotted) type, then its message.
_EXCEPTION = regexes.compile(r"[A-Za-z_][\w.]*(?::[ ]|:?\r?$)")
_FRAME = 'File "'

# How far from a traceback's header its first frame may be.
_NEAR = 3
# Consecutive timestamps that go down this many times, and this many times as often as up.
_MIN_DOWN = 3
_DOWN_SHARE = 4
# ... or, beside the headers' word, at least this many times as often.
_LEANS_DOWN = 2


def newest_first(text: Text) -> bool:
    """Whether `text` lists its lines newest first (see the module doc). Reads its start only,
    the same characters of a file's bytes as of its text."""
    lines = _sample_lines(text)
    down, up = _time_steps(lines)
    back, forth = _header_sides(lines)
    if back == forth == 0:  # no header to tell (a paste that starts inside a traceback)
        turned = _exceptions_above_frames(lines)
        back, forth = int(turned > 0), int(turned < 0)
    time_says_reversed = down >= _MIN_DOWN and down >= _DOWN_SHARE * up
    if time_says_reversed:
        return back >= forth
    # (a log whose lines are in no order goes up about as often as down)
    return back > forth and down >= _LEANS_DOWN * up


def _sample_lines(text: Text) -> list[str]:
    """The whole lines of the start of `text` (of a file's bytes, the same as of its text)."""
    head, whole = text_start(text, SAMPLE_CHARS)
    lines = head.split("\n")
    if not whole:
        lines.pop()  # (cut by the sample)
    return lines


def _time_steps(lines: list[str]) -> tuple[int, int]:
    """How often a line's timestamp is earlier than the last one of its kind, and how often later."""
    down = up = 0
    last: dict[bool, tuple[str, str, str]] = {}
    for line in lines:
        found = _TIMESTAMP.search(line, 0, _TIME_REACH)
        if found is None:
            continue
        kind = found.group("year") is not None
        stamp = (found.group("year") or "", found.group("date"), found.group("time").replace(",", "."))
        before = last.get(kind)
        if before is not None and stamp != before:
            if stamp < before:
                down += 1
            else:
                up += 1
        last[kind] = stamp
    return down, up


def _header_sides(lines: list[str]) -> tuple[int, int]:
    """How many traceback headers have a frame only above them, and how many one below."""
    back = forth = 0
    for at, line in enumerate(lines):
        if TRACEBACK_HEADER not in line:
            continue
        below = [other for other in lines[at + 1 : at + 1 + _NEAR] if other.strip()]
        above = [other for other in reversed(lines[max(at - _NEAR, 0) : at]) if other.strip()]
        side = _frame_side(below, above)
        forth += side > 0
        back += side < 0
    return back, forth


def _frame_side(below: list[str], above: list[str]) -> int:
    """Where a header's first frame is: next to it below (1) or above (-1); else within a few
    lines on one side only (another writer's line may come between); 0: no telling."""
    if below and _FRAME in below[0]:  # the lines next to it first
        return 1
    if above and _FRAME in above[0]:
        return -1
    near_below, near_above = (any(_FRAME in line for line in side) for side in (below, above))
    return 1 if near_below and not near_above else -1 if near_above and not near_below else 0


def _exceptions_above_frames(lines: list[str]) -> int:
    """How many more tracebacks have their exception line just above their last frame's code
    (and its `^^^` marks) than just below it: read downwards, a traceback ends with its
    exception, so in order this is below 0 and upside down above.

    The frames and code lines alone say nothing: a run of them alternates, so its pairs of a
    frame above its code and of a code above the next frame differ by one at most, and which
    way only tells where the paste or the sample cut the run (in order, a paste that starts at
    a code line has its frame cut off above, so that code and the next frame look upside down)."""
    turned = 0
    for at in range(len(lines) - 1):
        upper, lower = lines[at], lines[at + 1]
        if _FRAME in upper and _under(lower, upper):
            turned -= _ends_traceback(lines[at + 2 : at + 4], upper)
        elif _FRAME in lower and _under(upper, lower):
            turned += _ends_traceback(lines[max(at - 2, 0) : at][::-1], lower)
    return turned


def _ends_traceback(after_code: list[str], frame: str) -> bool:
    """Whether the exception line comes after a frame's code (and its `^^^` marks): the line
    that ends a traceback, at the frame's indentation less two."""
    base = frame.index(_FRAME) - 2
    for line in after_code:
        if _marks(line, frame):
            continue
        return base >= 0 and _EXCEPTION.match(line, base) is not None
    return False


def _under(code: str, frame: str) -> bool:
    """Whether `code` is indented under `frame` as a frame's code line is, and is not a frame
    itself nor the `^^^` marks under a code line (which pair with no frame: in order they are
    below their code, so a frame follows them, and upside down above it)."""
    column = frame.index(_FRAME)
    return (
        _FRAME not in code
        and code[column : column + 2] == "  "
        and len(code) > column + 2
        and not code[column + 2].isspace()
        and not _marks(code, frame)
    )


def _marks(line: str, frame: str) -> bool:
    """Whether `line` is the `^^^` marks (`~~~^^^~~~` since Python 3.13) under a code line of
    `frame`'s traceback: past the prefix the frame has, nothing but marks."""
    column = frame.index(_FRAME)
    marks = line[column:].strip()
    return line[column : column + 2] == "  " and marks[:1] in ("^", "~") and not marks.strip("^~")


class ReversedLines:
    """Positions in the transcript (the log's lines oldest first) as positions in the log, and
    back: the `source_map` of an analysis of a log shown newest first (the interface of
    `jsonlog.TranscriptLines`). Core lines of the transcript (a bare `\\r` ends one, see
    `linebreaks`) go to its `\\n`-lines, which are the log's in reverse."""

    identity = False

    def __init__(self, original: str, text: str, count: int) -> None:
        self.original = original
        self.text = text  # the transcript
        self._count = count  # `\n`-lines of the log (one it ends with a `\n` does not start one)
        self._lines = NewlineLines(text)

    def __eq__(self, other: object) -> bool:
        """The same map of the same log (two analyses of one log compare equal)."""
        if not isinstance(other, ReversedLines):
            return NotImplemented
        return (self.text, self.original) == (other.text, other.original)

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def origin(self) -> array:
        """Per `\\n`-line of the transcript, the log's line (as `jsonlog.TranscriptLines.origin`)."""
        return array("q", range(self._count - 1, -1, -1))

    def snapshot(self) -> ReversedLines:
        """This map (it never changes)."""
        return self

    def _flip(self, line: int) -> int:
        return max(self._count - 1 - line, 0)

    def line(self, core_line: int) -> int:
        """The log's `\\n`-line of transcript core line `core_line`."""
        return self._flip(self._lines.line(core_line))

    def position(self, core_line: int, column: int) -> tuple[int, int]:
        """(`\\n`-line, code-point column) in the log of a transcript position."""
        line, column = self._lines.position(core_line, column)
        return self._flip(line), column

    def core_position(self, line: int, column: int) -> tuple[int, int]:
        """The transcript position of (`\\n`-line, column) of the log."""
        return self._lines.core_position(self._flip(line), column)

    def core_line_range(self, line: int) -> tuple[int, int]:
        """The transcript core lines written from the log's `\\n`-line `line`."""
        return self._lines.core_line_range(self._flip(line))


def oldest_first(text: str) -> ReversedLines:
    """The transcript of a log shown newest first: its `\\n`-lines in reverse order."""
    lines = text.split("\n")
    ends_with_newline = len(lines) > 1 and lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    lines.reverse()
    transcript = "\n".join(lines) + ("\n" if ends_with_newline else "")
    return ReversedLines(text, transcript, len(lines))
