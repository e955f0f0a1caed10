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

from collections.abc import Sequence
from datetime import datetime

from . import regexes
from .lines import parse_line
from .model import Span
from .outline import run_boundaries
from .prefilter import Numbered, candidate_lines_by_group
from .records import dataclass, field, replace
from .text import LogIndex

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
    if scan.samples:
        clock.last = max((s.time for s in scan.samples if s.time is not None), default=None)
    [found] = [found] if found is not None else candidate_lines_by_group(index, [LITERALS], begin)
    for start, line_no in found:
        raw = index.slice(start, min(index.line_end_at(start), start + _MAX_LINE))
        _read_line(scan, clock, line_no, raw, start)
    return scan


def parse_stats_line(line_no: int, raw: str) -> StatsSample | None:
    """The stats sample on one log line, or None if it holds none."""
    scan = StatsScan()
    _read_line(scan, _Clock(), line_no, raw)
    return scan.samples[0] if scan.samples else None


def _read_line(scan: StatsScan, clock: _Clock, line_no: int, raw: str, offset: int = -1) -> None:
    line = parse_line(line_no, raw)
    message = line.message
    if STATS_LITERAL in message:
        sample = _sample(line_no, line.text, message, line.message_col, clock, offset)
        if sample is not None:
            scan.samples.append(sample)
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


def _sample(
    line_no: int, text: str, message: str, message_col: int, clock: _Clock, offset: int = -1
) -> StatsSample | None:
    head = _HEAD.search(message)
    if head is None:
        return None
    fields = head.groupdict()
    values: dict[str, str] = {}
    for part in message[head.end() :].split(", "):
        found = _PART.match(part.strip().rstrip("."))
        if found:
            name, value = found.groups()
            values.setdefault(name, value)
    kv_device, kv_usage = None, None
    for name, value in values.items():
        if (name.endswith(" KV cache usage") and name != "CPU KV cache usage") or name == "KV cache usage":
            kv_device, kv_usage = name[: -len("KV cache usage")].strip() or None, float(value)
            break
    cpu = values.get("CPU KV cache usage")
    if kv_usage is None and cpu is not None and "CPU KV cache usage" in values:
        kv_device, kv_usage, cpu = "CPU", float(cpu), None  # the CPU backend's only cache
    engine = (
        f"Engine {int(fields['engine']):03d}"
        if fields["engine"]
        else f"{fields['engines']} Engines Aggregated"
        if fields["engines"]
        else "engine"
    )
    start_col = text.find(head.group(0))
    if start_col < 0:  # colour codes inside the stats text
        start_col = message_col
    time, stamp = clock.read(text, start_col)
    return StatsSample(
        line=line_no,
        span=Span(line_no, start_col, len(text.rstrip())),
        time=time,
        stamp=stamp,
        engine=engine,
        prompt_throughput=float(fields["prompt"]),
        generation_throughput=float(fields["generation"]),
        running=int(fields["running"]),
        waiting=int(fields["waiting"]),
        swapped=_int(fields["swapped"]),
        kv_usage=kv_usage,
        kv_device=kv_device,
        cpu_kv_usage=None if cpu is None else float(cpu),
        prefix_hit_rate=_float(values.get("Prefix cache hit rate")),
        preemptions=_int(values.get("Preemptions")),
        deferred=_int(values.get("Deferred")),
        offset=offset,
    )


class _Clock:
    """Turns printed timestamps into seconds; a year-less stamp that goes back months wraps a year."""

    def __init__(self) -> None:
        self.last: float | None = None

    def read(self, text: str, end: int) -> tuple[float | None, str | None]:
        """The last timestamp in `text[:end]` (vLLM's own is nearest the message)."""
        found = None
        for match in _STAMP.finditer(text, 0, max(0, end)):
            found = match
        if found is None:
            return None, None
        try:
            when = datetime(
                int(found.group("year") or _NO_YEAR),
                int(found.group("month")),
                int(found.group("day")),
                int(found.group("hour")),
                int(found.group("minute")),
                int(found.group("second")),
            )
        except ValueError:
            return None, None
        seconds = (when - datetime(_NO_YEAR, 1, 1)).total_seconds()
        if found.group("fraction"):
            seconds += float("0." + found.group("fraction"))
        if found.group("year") is None and self.last is not None and seconds < self.last - 180 * 86400:
            seconds += 366 * 86400  # December to January in a log without years
        self.last = seconds
        return seconds, found.group(0)


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
    return None if text is None else int(text)


def _float(text: str | None) -> float | None:
    return None if text is None else float(text)
