"""vLLM's periodic stats lines and preemption warnings, as time series per run and engine.

Every `VLLM_LOG_STATS_INTERVAL` (10 s) the stat logger prints one line per engine (or one for all
of them); the spellings, all read here (from vLLM's own `vllm/engine/metrics.py` and
`vllm/v1/metrics/loggers.py`):

- V0, 0.4.0–0.10.2: `Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f
  tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV
  cache usage: %.1f%%.` (no final `.` in the 0.4.0 f-string), and 0.5+ a separate
  `Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%` line when prefix caching is on;
- V1, 0.7.3–0.8.4: `Avg prompt throughput: …, Running: %d reqs, Waiting: %d reqs, GPU KV cache
  usage: %.1f%%, Prefix cache hit rate: %.1f%%`; 0.8.5–0.11.0 the same after `Engine %03d: `;
- V1, 0.11.2+: `Engine 000: ` or `N Engines Aggregated: ` then `", ".join(parts)` with optional
  parts `Deferred: %d reqs`, `KV fetch: …`, `Preemptions: %d` (preempted in this interval),
  `%s KV cache usage` (the device: `GPU`, `XPU`…), `Prefix cache hit rate`, `Corrupted: %d reqs`,
  `External prefix cache hit rate`, `MM cache hit rate`.
- V0 preemptions: `Sequence group %s is preempted by %s mode because there is not enough KV cache
  space. … total_num_cumulative_preemption=%d` (WARNING, every 50th preemption from 0.5).

Only lines holding one of `LITERALS` are read (the literal pre-filter: one rg/grep pass, or
`str.find`), so a log of hundreds of MB is never parsed line by line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from . import regexes
from .lines import parse_line
from .model import Span
from .outline import run_boundaries
from .prefilter import Numbered, candidate_lines_by_group
from .records import dataclass, field, replace
from .text import MASK_DIGITS, LogIndex, may_hold_colour

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")

STATS_LITERAL = "Avg prompt throughput: "
PREEMPTION_LITERAL = "is preempted by "
V0_PREFIX_HIT_LITERAL = "Prefix cache hit rate: GPU: "
LITERALS = (STATS_LITERAL, PREEMPTION_LITERAL, V0_PREFIX_HIT_LITERAL)

# Stats lines are short; a longer one is read only this far.
_MAX_LINE = 4000

_HEAD = regexes.compile(
    r"(?:Engine (?P<engine>\d{1,4}): |(?P<engines>\d+) Engines Aggregated: )?"
    r"Avg prompt throughput: (?P<prompt>\d+(?:\.\d+)?) tokens/s, "
    r"Avg generation throughput: (?P<generation>\d+(?:\.\d+)?) tokens/s, "
    r"Running: (?P<running>\d+) reqs, "
    r"(?:Swapped: (?P<swapped>\d+) reqs, Pending|Waiting): (?P<waiting>\d+) reqs"
)
# One `, `-separated part after the head: `Name: value[unit]`.
_PART = regexes.compile(r"(?P<name>[A-Za-z][A-Za-z ]{0,40}): (?P<value>\d+(?:\.\d+)?)(?:%| reqs)?\.?$")
_PREEMPTED = regexes.compile(
    r"is preempted by (?P<mode>PreemptionMode\.\w+) mode.{0,400}?total_num_cumulative_preemption=(?P<count>\d+)"
)
_V0_PREFIX_HIT = regexes.compile(r"Prefix cache hit rate: GPU: (?P<gpu>\d+(?:\.\d+)?)%")
# A timestamp before the message: vLLM's `MM-DD HH:MM:SS`, or a runtime's `YYYY-MM-DD[ T]HH:MM:SS`.
_STAMP = regexes.compile(
    r"(?<!\d)(?:(?P<year>\d{4})-)?(?P<month>\d\d)-(?P<day>\d\d)[ T]"
    r"(?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)(?:[.,](?P<fraction>\d{1,9}))?"
)
# vLLM's own stamp has no year; any leap year makes `02-29` valid.
_NO_YEAR = 2000


@dataclass(frozen=True)
class StatsSample:
    """One stats line: what one engine (or all, aggregated) reported for the last interval."""

    line: int
    span: Span  # the stats text (from `Engine …`/`Avg prompt throughput` to the end)
    time: float | None  # seconds (a monotonic scale within one log), from the line's timestamp
    stamp: str | None  # the timestamp as printed
    engine: str  # `Engine 000`, `2 Engines Aggregated`, or `engine` (V0 / V1 before 0.8.5)
    prompt_throughput: float
    generation_throughput: float
    running: int
    waiting: int
    swapped: int | None = None
    kv_usage: float | None = None  # percent of the device's KV cache
    kv_device: str | None = None
    cpu_kv_usage: float | None = None
    prefix_hit_rate: float | None = None  # percent
    preemptions: int | None = None  # V1: requests preempted during this interval
    deferred: int | None = None
    offset: int = -1  # where the line starts in the text (-1: not known)


@dataclass(frozen=True)
class PreemptionWarning:
    """A V0 `… is preempted by PreemptionMode.X mode …` warning."""

    line: int
    span: Span
    time: float | None
    stamp: str | None
    mode: str
    cumulative: int  # vLLM's `total_num_cumulative_preemption`


@dataclass(frozen=True)
class Series:
    """The stats of one engine in one run, in log order."""

    run: int  # 0-based run index (see `outline.run_boundaries`)
    engine: str
    samples: tuple[StatsSample, ...]
    preemption_warnings: tuple[PreemptionWarning, ...] = ()

    def peak(self, attribute: str) -> StatsSample | None:
        """The sample with the highest value of `attribute` (the first of equals), or None."""
        best = None
        for sample in self.samples:
            value = getattr(sample, attribute)
            if value is not None and (best is None or value > getattr(best, attribute)):
                best = sample
        return best


@dataclass
class StatsScan:
    """Every stats sample and preemption warning of a log (kept by `Analyzer` for growing logs)."""

    samples: list[StatsSample] = field(default_factory=list)
    preemptions: list[PreemptionWarning] = field(default_factory=list)

    def before(self, line: int) -> StatsScan:
        """The part of the scan that lies before `line`."""
        return StatsScan(
            [s for s in self.samples if s.line < line], [p for p in self.preemptions if p.line < line]
        )


def scan_stats(
    index: LogIndex, scan: StatsScan | None = None, begin: int = 0, found: Numbered | None = None
) -> StatsScan:
    """Find and parse the stats and preemption lines from offset `begin` on, adding to `scan`
    (`found`: the lines holding `LITERALS` from there, when the caller searched with the scan's)."""
    scan = scan or StatsScan()
    clock = _Clock()
    # The clock goes on from the last time it read (a year-less stamp that goes back wraps a
    # year from it): that of the last line read, not the latest time (a log's times go back).
    timed = [_last_timed(scan.samples), _last_timed(scan.preemptions)]
    clock.last = max((found for found in timed if found is not None), default=(0, None))[1]
    [found] = [found] if found is not None else candidate_lines_by_group(index, [LITERALS], begin)
    for start, line_no in found:
        raw = index.slice_within(start, index.line_end_at(start), _MAX_LINE)
        _read_line(scan, clock, line_no, raw, start)
    return scan


def _last_timed(records: Sequence[StatsSample | PreemptionWarning]) -> tuple[int, float] | None:
    """(line, time) of the last of `records` (in line order) that has a time, found from the end."""
    for record in reversed(records):
        if record.time is not None:
            return record.line, record.time
    return None


def parse_stats_line(line_no: int, raw: str) -> StatsSample | None:
    """The stats sample on one log line, or None if it holds none."""
    scan = StatsScan()
    _read_line(scan, _Clock(), line_no, raw)
    return scan.samples[0] if scan.samples else None


def _read_line(scan: StatsScan, clock: _Clock, line_no: int, raw: str, offset: int = -1) -> None:
    plan = clock.plan_of(raw)
    if plan is not None:  # a stats line of a layout read before (its text is the raw line's)
        scan.samples.append(_sample_from(plan, line_no, raw, raw[plan.message_col :], clock, offset))
        return
    line = parse_line(line_no, raw)
    message = line.message
    if STATS_LITERAL in message:
        plan = _stats_plan(line.text, message, line.message_col)
        if plan is not None:
            clock.keep_plan(raw, plan)
            scan.samples.append(_sample_from(plan, line_no, line.text, message, clock, offset))
    elif PREEMPTION_LITERAL in message and (found := _PREEMPTED.search(message)):
        time, stamp = clock.read(line.text, line.text.find(PREEMPTION_LITERAL))
        scan.preemptions.append(
            PreemptionWarning(
                line_no, line.message_span, time, stamp, found.group("mode"), int(found.group("count"))
            )
        )
    elif V0_PREFIX_HIT_LITERAL in message and (found := _V0_PREFIX_HIT.search(message)):
        # V0 prints the hit rate on its own line right after the stats line of the same interval.
        previous = scan.samples[-1] if scan.samples else None
        if previous is not None and 0 < line_no - previous.line <= 3:
            scan.samples[-1] = replace(previous, prefix_hit_rate=float(found.group("gpu")))


_NO_SPAN = (-1, -1)


@dataclass(frozen=True, slots=True)
class _StatsPlan:
    """Where a stats line holds what its sample reads: spans in its message (`_NO_SPAN`:
    absent), and what its layout alone says. Every pattern it comes from treats all digits
    alike, so a line of the same digit-masked text has its values at the same places."""

    message_col: int  # where the message starts in the line
    engine: tuple[int, int]  # `Engine N: `'s number
    engines: tuple[int, int]  # `N Engines Aggregated: `'s number
    prompt: tuple[int, int]
    generation: tuple[int, int]
    running: tuple[int, int]
    swapped: tuple[int, int]
    waiting: tuple[int, int]
    kv_usage: tuple[int, int]
    kv_device: str | None
    cpu_kv_usage: tuple[int, int]
    prefix_hit_rate: tuple[int, int]
    preemptions: tuple[int, int]
    deferred: tuple[int, int]
    start_col: int  # where the stats text starts in the line (its timestamp is read before it)
    end_col: int
    digit_blind: bool  # (whether `start_col` holds for every text of this layout)
    # `_stamp_spans` of the text before `start_col` (where `_Clock.read` finds the time): for
    # every text of this layout when `digit_blind` (its pattern treats all digits alike).
    stamp: tuple[tuple[int, int], ...] | None


def _stats_plan(text: str, message: str, message_col: int) -> _StatsPlan | None:
    """The plan of a stats line whose text `text` has `message` from `message_col` (None: its
    message is no stats line)."""
    head = _HEAD.search(message)
    if head is None:
        return None
    spans = {
        name: head.span(name)
        for name in ("engine", "engines", "prompt", "generation", "running", "swapped", "waiting")
    }
    at = head.end()
    parts = {name: (at + a, at + b) for name, (a, b) in _part_spans(message[at:]).items()}
    kv_device, kv_usage = None, _NO_SPAN
    for name, span in parts.items():
        if (name.endswith(" KV cache usage") and name != "CPU KV cache usage") or name == "KV cache usage":
            kv_device, kv_usage = name[: -len("KV cache usage")].strip() or None, span
            break
    cpu = parts.get("CPU KV cache usage", _NO_SPAN)
    if kv_usage == _NO_SPAN and "CPU KV cache usage" in parts:
        kv_device, kv_usage, cpu = "CPU", cpu, _NO_SPAN  # the CPU backend's only cache
    head_text = head.group(0)
    start_col = text.find(head_text)
    if start_col < 0:  # colour codes inside the stats text
        start_col = message_col
    # The head's first place in the text (`find`) is the same in every text of this layout when
    # its masked text is first found there in the masked line (a place of the real text would
    # be one of the masked text).
    digit_blind = text.isascii() and _masked(text).find(_masked(head_text)) == start_col
    return _StatsPlan(
        message_col,
        spans["engine"],
        spans["engines"],
        spans["prompt"],
        spans["generation"],
        spans["running"],
        spans["swapped"],
        spans["waiting"],
        kv_usage,
        kv_device,
        cpu,
        parts.get("Prefix cache hit rate", _NO_SPAN),
        parts.get("Preemptions", _NO_SPAN),
        parts.get("Deferred", _NO_SPAN),
        start_col,
        len(text.rstrip()),
        digit_blind,
        _stamp_spans(text[: max(0, start_col)]),
    )


def _sample_from(
    plan: _StatsPlan, line_no: int, text: str, message: str, clock: _Clock, offset: int = -1
) -> StatsSample:
    """The sample of line `line_no`, whose text `text` (with `message`) has `plan`."""
    time, stamp = clock.time_of(text, plan.stamp)
    # (positional, in field order: a per-line record, built faster so than by keyword)
    return StatsSample(
        line_no,
        Span(line_no, plan.start_col, plan.end_col),
        time,
        stamp,
        _engine(message, plan),
        float(message[plan.prompt[0] : plan.prompt[1]]),
        float(message[plan.generation[0] : plan.generation[1]]),
        int(message[plan.running[0] : plan.running[1]]),
        int(message[plan.waiting[0] : plan.waiting[1]]),
        _int_at(message, plan.swapped),
        _float_at(message, plan.kv_usage),
        plan.kv_device,
        _float_at(message, plan.cpu_kv_usage),
        _float_at(message, plan.prefix_hit_rate),
        _int_at(message, plan.preemptions),
        _int_at(message, plan.deferred),
        offset,
    )


def _engine(message: str, plan: _StatsPlan) -> str:
    """The sample's engine: `Engine NNN` of `Engine N: `, else `N Engines Aggregated`, else
    `engine` (a V0 line names none)."""
    if plan.engine[0] >= 0:
        return _engine_name(message[plan.engine[0] : plan.engine[1]])
    if plan.engines[0] >= 0:
        return f"{message[plan.engines[0] : plan.engines[1]]} Engines Aggregated"
    return "engine"


@functools.lru_cache(maxsize=256)
def _engine_name(number: str) -> str:
    """`Engine NNN` (a log has a few engines and prints them on every stats line)."""
    return f"Engine {int(number):03d}"


def _int_at(message: str, span: tuple[int, int]) -> int | None:
    """The count at `span` in `message` (`_NO_SPAN`: absent); see `_int`."""
    return _int(message[span[0] : span[1]]) if span[0] >= 0 else None


def _float_at(message: str, span: tuple[int, int]) -> float | None:
    """The number at `span` in `message` (`_NO_SPAN`: absent)."""
    return float(message[span[0] : span[1]]) if span[0] >= 0 else None


def _masked(text: str) -> bytes:
    """An ASCII text with every digit masked as `0` (`MASK_DIGITS`)."""
    return text.encode("ascii").translate(MASK_DIGITS)


def _plannable(raw: str) -> bool:
    """Whether a line parses as its own text (no colour code: `strip_ansi`'s test) and is ASCII:
    only such a line's layout is its masked text."""
    return raw.isascii() and not may_hold_colour(raw)


def _part_spans(tail: str) -> dict[str, tuple[int, int]]:
    """Each `Name: value` part of the text after a stats line's head: the first value of each
    name, as its span in `tail`."""
    spans: dict[str, tuple[int, int]] = {}
    at = 0
    for part in tail.split(", "):
        start, at = at, at + len(part) + 2
        found = _PART.match(part.strip().rstrip("."))
        if found:
            lead = start + len(part) - len(part.lstrip())
            value_start, value_end = found.span("value")
            spans.setdefault(found.group("name"), (lead + value_start, lead + value_end))
    return spans


# Texts are remembered with their digits masked (`MASK_DIGITS`): `_STAMP` and `_PART` treat all
# digits alike (`\\d` only; no pattern names a digit), so texts that differ only in their digits
# have their matches at the same places, and what is found in one is found where it stands in
# the others.
# Texts whose matches a clock remembers (a log has few line layouts) before starting over.
_MEMO_MAX = 4096
# The fields of a `_STAMP` match, in the order `_Clock.read` reads them.
_STAMP_FIELDS = ("year", "month", "day", "hour", "minute", "second", "fraction")
#: Days in each month of a common year (index 1–12), and before each month's first day.
_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DAYS_BEFORE_MONTH = (0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def gregorian_day(year: int, month: int, day: int) -> int | None:
    """`date(year, month, day).toordinal()` (proleptic Gregorian, 0001-01-01 is day 1), or None
    where `date` refuses the date. Counted here because importing `datetime` (its pure-Python
    module is loaded before its C one) costs a short check more than all its dates."""
    if not (1 <= year <= 9999 and 1 <= month <= 12):
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= _MONTH_DAYS[month] + (month == 2 and leap):
        return None
    before = year - 1
    leap_day = 1 if month > 2 and leap else 0
    return (
        before * 365
        + before // 4
        - before // 100
        + before // 400
        + _DAYS_BEFORE_MONTH[month]
        + leap_day
        + day
    )


#: The day number of 1 January of `_NO_YEAR`: the clock counts days from it.
_BASE_DAY = 730120


class _Clock:
    """Turns printed timestamps into seconds; a year-less stamp that goes back months wraps a year.

    The lines of a log repeat a few layouts with other digits: where a stamp lies in the text
    before a message, and where a stats line holds its values (`_StatsPlan`), is found once per
    layout (the digit-masked ASCII text) and read off each line at those places; a date is
    turned into a day once."""

    def __init__(self) -> None:
        self.last: float | None = None
        self._stamps: dict[bytes, tuple[tuple[int, int], ...] | None] = {}
        self._days: dict[tuple[int, int, int], int | None] = {}
        self._plans: dict[bytes, _StatsPlan] = {}  # stats lines' plans, by masked line

    def plan_of(self, raw: str) -> _StatsPlan | None:
        """The plan kept for a line of `raw`'s layout (`keep_plan`), if any. Only a line that
        parses as its text (no colour code, `strip_ansi`'s test) and is ASCII has one."""
        return self._plans.get(_masked(raw)) if self._plans and _plannable(raw) else None

    def keep_plan(self, raw: str, plan: _StatsPlan) -> None:
        """Keep the plan of a stats line for the lines of its layout (its parse depends on the
        layout alone: `lines.parse_line`'s layouts treat all digits alike, as the plan's do)."""
        if plan.digit_blind and _plannable(raw):
            if len(self._plans) >= _MEMO_MAX:
                self._plans.clear()
            self._plans[_masked(raw)] = plan

    def read(self, text: str, end: int) -> tuple[float | None, str | None]:
        """The last timestamp in `text[:end]` (vLLM's own is nearest the message)."""
        before = text[: max(0, end)]
        return self.time_of(before, _memo(self._stamps, before, _stamp_spans))

    def time_of(
        self, text: str, spans: tuple[tuple[int, int], ...] | None
    ) -> tuple[float | None, str | None]:
        """The time of the timestamp at `spans` in `text` (`_stamp_spans`' answer for a prefix
        of it: None, no timestamp)."""
        if spans is None:
            return None, None
        whole, year_at, month_at, day_at, hour_at, minute_at, second_at, fraction_at = spans
        # (Each field is what `\\d` matched: a number.)
        month, day = int(text[month_at[0] : month_at[1]]), int(text[day_at[0] : day_at[1]])
        hour_no, minute_no = int(text[hour_at[0] : hour_at[1]]), int(text[minute_at[0] : minute_at[1]])
        second_no = int(text[second_at[0] : second_at[1]])
        year = text[year_at[0] : year_at[1]] if year_at[0] >= 0 else None
        fraction = text[fraction_at[0] : fraction_at[1]] if fraction_at[0] >= 0 else None
        days = self._day(int(year or _NO_YEAR), month, day)
        if days is None or hour_no > 23 or minute_no > 59 or second_no > 59:
            return None, None  # not a time (`datetime` would refuse it)
        seconds = float(days * 86400 + hour_no * 3600 + minute_no * 60 + second_no)
        if fraction:
            seconds += float("0." + fraction)
        if year is None and self.last is not None and seconds < self.last - 180 * 86400:
            seconds += 366 * 86400  # December to January in a log without years
        self.last = seconds
        return seconds, text[whole[0] : whole[1]]

    def _day(self, year: int, month: int, day: int) -> int | None:
        """Days from 2000-01-01 to this date, or None when there is no such date."""
        key = (year, month, day)
        if key not in self._days:
            ordinal = gregorian_day(year, month, day)
            self._days[key] = None if ordinal is None else ordinal - _BASE_DAY
        return self._days[key]


def _memo(found: dict[bytes, _T], text: str, find: Callable[[str], _T]) -> _T:
    """`find(text)`, remembered in `found` by the layout of an ASCII `text` (its digits masked;
    `find` must treat every digit alike and give positions). Other text is looked at anew."""
    if not text.isascii():
        return find(text)
    key = _masked(text)
    if key in found:
        return found[key]
    if len(found) >= _MEMO_MAX:
        found.clear()
    found[key] = result = find(text)
    return result


def _stamp_spans(before: str) -> tuple[tuple[int, int], ...] | None:
    """The spans of the last `_STAMP` match in `before` and of its fields ((-1, -1): absent)."""
    last = None
    for last in _STAMP.finditer(before):  # noqa: B007 (the last one is kept)
        pass
    if last is None:
        return None
    return (last.span(), *(last.span(name) for name in _STAMP_FIELDS))


def read_time(text: str, end: int) -> tuple[float | None, str | None]:
    """The last timestamp in `text[:end]` as seconds (on the scale of `StatsSample.time`)."""
    return _Clock().read(text, end)


def series_of(scan: StatsScan, run_starts: Sequence[int], line_count: int) -> tuple[Series, ...]:
    """The samples grouped per run and engine, runs in order and engines by name."""
    bounds = run_boundaries(run_starts, line_count)
    grouped: dict[tuple[int, str], list[StatsSample]] = {}
    run = 0
    for sample in scan.samples:
        run = _run_of(bounds, sample.line, run)
        grouped.setdefault((run, sample.engine), []).append(sample)
    warnings: dict[int, list[PreemptionWarning]] = {}
    run = 0
    for warning in scan.preemptions:
        run = _run_of(bounds, warning.line, run)
        warnings.setdefault(run, []).append(warning)
    for run_index in warnings:  # V0 warnings have no engine: they go with the run's (only) engine
        if not any(key[0] == run_index for key in grouped):
            grouped[(run_index, "engine")] = []
    series = []
    for (run_index, engine), samples in sorted(grouped.items()):
        first_engine = min(e for r, e in grouped if r == run_index)
        own = tuple(warnings.get(run_index, ())) if engine == first_engine else ()
        series.append(Series(run_index, engine, tuple(samples), own))
    return tuple(series)


def _run_of(bounds: list[tuple[int, int]], line: int, hint: int) -> int:
    run = min(hint, len(bounds) - 1)
    while run + 1 < len(bounds) and line > bounds[run][1]:
        run += 1
    while run > 0 and line < bounds[run][0]:
        run -= 1
    return run


def _int(text: str | None) -> int | None:
    """A count as printed (`_PART` also takes a fraction, which no count has: None)."""
    return int(text) if text is not None and text.isdigit() else None
