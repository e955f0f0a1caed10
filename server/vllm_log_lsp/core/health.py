"""Health from the stats lines: findings on any log, and a pre-failure record for each death.

The conditions and their thresholds are data (`catalog/health/health.toml`); this module applies
them to the series of `stats`. A health finding is Information or Warning, never an Error: a log
that shows pressure is not, by itself, a death. Each finding sits on the stats line where the
condition began; repeated preemption warnings make one finding with their count and first and
last line.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

from . import datacache
from .catalog import CatalogError, _parse_fix
from .context import read_context
from .lines import parse_line
from .model import Finding, Fix, ResolvedFix, RunContext, Span
from .outline import run_boundaries
from .records import dataclass
from .stats import PreemptionWarning, Series, StatsSample, StatsScan, read_time, series_of
from .text import LogIndex
from .values import resolve_op
from .versions import in_range, parse_version

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HEALTH_FILE = "catalog/health/health.toml"  # in the package
_SEVERITIES = ("information", "warning")  # never "error"


@dataclass(frozen=True)
class Condition:
    """One health condition of the catalog: its thresholds and its fixes in order."""

    id: str
    title: str
    severity: str
    explanation: str
    params: dict[str, float]
    fixes: tuple[Fix, ...]


@dataclass(frozen=True)
class HealthCatalog:
    conditions: dict[str, Condition]
    prefailure_window_s: float = 180
    prefailure_window_samples: int = 18
    sparkline_radius: int = 12


@dataclass(frozen=True)
class HealthFinding:
    """A health condition seen in the stats of one run and engine."""

    id: str
    title: str
    severity: str  # "information" or "warning"
    span: Span  # the stats (or warning) line where the condition began
    message: str
    explanation: str
    run: int
    engine: str
    first_line: int
    last_line: int
    count: int = 1  # stats lines (or warnings) that showed it
    fixes: tuple[ResolvedFix, ...] = ()

    @property
    def line(self) -> int:
        return self.span.line

    def lines_text(self, line_of: Callable[[int], int] = int) -> str:
        """`line 34` or `lines 34–40`, 1-based, numbered by `line_of` (the reader's numbering)."""
        first, last = sorted((line_of(self.first_line) + 1, line_of(self.last_line) + 1))  # (either order)
        return f"line {first}" if first == last else f"lines {first}–{last}"


@dataclass(frozen=True)
class MetricChange:
    """One metric over a window: where it started, where it ended, its peak."""

    first: float
    last: float
    peak: float
    peak_line: int

    @property
    def trend(self) -> str:
        """`rising`, `falling` or `flat` (a change under 1% of the peak is flat)."""
        tolerance = 0.01 * max(abs(self.peak), 1e-9)
        if self.last - self.first > tolerance:
            return "rising"
        if self.first - self.last > tolerance:
            return "falling"
        return "flat"


@dataclass(frozen=True)
class PreFailureRecord:
    """What the stats said in the minutes before one death."""

    death_line: int
    engine: str
    first_line: int
    last_line: int
    samples: int
    seconds: float | None  # the span the samples cover, up to the death
    kv_usage: MetricChange | None
    running: MetricChange
    waiting: MetricChange
    generation_throughput: MetricChange
    prompt_throughput: MetricChange
    prefix_hit_rate: MetricChange | None
    preemptions: int
    last_success_line: int | None
    seconds_since_success: float | None
    engines: int = 1
    death_time: float | None = None  # on the scale of `StatsSample.time`

    @property
    def summary(self) -> str:
        """One sentence: the figures that changed, as the hover and `check` print them."""
        head = f"in the {_duration(self.seconds)} before the death" if self.seconds else "before the death"
        parts = []
        if self.kv_usage is not None:
            parts.append(f"KV cache {_num(self.kv_usage.first)} → {_num(self.kv_usage.last)} %")
        parts.append(f"running {_num(self.running.first)} → {_num(self.running.last)}")
        parts.append(f"waiting {_num(self.waiting.first)} → {_num(self.waiting.last)}")
        gen = self.generation_throughput
        parts.append(f"generation throughput {_num(gen.first)} → {_num(gen.last)} tok/s")
        parts.append(f"{self.preemptions} preemption{'s' if self.preemptions != 1 else ''}")
        if self.prefix_hit_rate is not None:
            parts.append(f"prefix-cache hit rate {_num(self.prefix_hit_rate.last)} %")
        text = f"{head}: " + ", ".join(parts)
        if self.seconds_since_success is not None:
            text += f"; last successful request {_duration(self.seconds_since_success)} before"
        elif self.last_success_line is None:
            text += "; no successful request in the log before it"
        return text


@dataclass(frozen=True)
class Health:
    """The stats series of a log, its health findings and a pre-failure record per death."""

    series: tuple[Series, ...] = ()
    findings: tuple[HealthFinding, ...] = ()
    records: tuple[PreFailureRecord, ...] = ()

    def record_for(self, death_line: int) -> PreFailureRecord | None:
        return next((r for r in self.records if r.death_line == death_line), None)

    def sample_at(self, line: int) -> tuple[Series, int] | None:
        """The series holding a stats sample on `line`, and the sample's position in it."""
        for series in self.series:
            for position, sample in enumerate(series.samples):
                if sample.line == line:
                    return series, position
        return None


# -- the catalog ---------------------------------------------------------------------------------
_CATALOG: HealthCatalog | None = None


def health_catalog() -> HealthCatalog:
    """The shipped health conditions (loaded once)."""
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = parse_health_catalog(datacache.package_text(HEALTH_FILE), HEALTH_FILE, cached=True)
    return _CATALOG


def parse_health_catalog(text: str, where: str, *, cached: bool = False) -> HealthCatalog:
    """Parse a health catalog (`cached`: the shipped one, whose parse the cache may hold); a bad
    entry raises CatalogError naming it."""
    try:
        raw = datacache.toml_data(where, text) if cached else datacache.parse_toml(text)
    except ValueError as err:  # tomllib.TOMLDecodeError
        raise CatalogError(where, None, f"invalid TOML: {err}") from None
    fixes: dict[str, Fix] = {}
    for entry in raw.get("fix", []):
        if not entry.get("id"):
            raise CatalogError(where, None, "a health fix needs an id")
        fixes[entry["id"]] = _parse_fix(entry, where, None)
    conditions = {}
    for entry in raw.get("condition", []):
        condition = _condition(entry, fixes, where)
        conditions[condition.id] = condition
    return HealthCatalog(
        conditions=conditions,
        prefailure_window_s=float(raw.get("prefailure_window_s", 180)),
        prefailure_window_samples=int(raw.get("prefailure_window_samples", 18)),
        sparkline_radius=int(raw.get("sparkline_radius", 12)),
    )


def _condition(entry: dict[str, Any], fixes: dict[str, Fix], where: str) -> Condition:
    ident = entry.get("id")
    if not ident or not entry.get("title"):
        raise CatalogError(where, None, "a health condition needs an id and a title")
    severity = entry.get("severity", "information")
    if severity not in _SEVERITIES:
        raise CatalogError(where, None, f"{ident}: severity must be one of {_SEVERITIES}, not {severity!r}")
    unknown = [name for name in entry.get("fixes", []) if name not in fixes]
    if unknown:
        raise CatalogError(where, None, f"{ident}: unknown fixes {unknown}")
    params = {
        k: float(v) for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    return Condition(
        id=ident,
        title=entry["title"],
        severity=severity,
        explanation=entry.get("explanation", "").strip(),
        params=params,
        fixes=tuple(fixes[name] for name in entry.get("fixes", [])),
    )


# -- building ------------------------------------------------------------------------------------
def build_health(
    index: LogIndex,
    stats: StatsScan,
    run_starts: Sequence[int],
    line_count: int,
    findings: Iterable[Finding] = (),
    catalog: HealthCatalog | None = None,
    known_offsets: Mapping[int, int] | None = None,
) -> Health:
    """The series, health findings and pre-failure records of one analysed log.

    `known_offsets` (line → offset of its start, e.g. the scan's candidate lines) spares building
    the line table of a huge log."""
    catalog = catalog or health_catalog()
    series = series_of(stats, run_starts, line_count)
    if not series:
        return Health()
    bounds = run_boundaries(run_starts, line_count)
    known = dict(known_offsets or {})
    known.update((s.line, s.offset) for s in stats.samples if s.offset >= 0)
    offsets = LineOffsets(index, known)
    contexts = _Contexts(index, bounds, findings, offsets)
    found: list[HealthFinding] = []
    for one in series:
        found.extend(_series_findings(one, catalog, contexts))
    found.sort(key=lambda f: (f.line, f.id))
    records = []
    for finding in findings:
        record = prefailure_record(index, series, bounds, finding, catalog, offsets)
        if record is not None:
            records.append(record)
    return Health(series=series, findings=tuple(found), records=tuple(records))


class LineOffsets:
    """Line → offset from the lines whose offsets are known (stats and candidate lines), walking a few
    lines from the nearest one before: a 500 MB log's whole line table is never built for it."""

    _WALK = 2000

    def __init__(self, index: LogIndex, known: Mapping[int, int]) -> None:
        self.index = index
        self.known = dict(known)
        self.known[0] = 0
        self.lines = sorted(self.known)

    def __call__(self, line: int) -> int:
        if line in self.known:
            return self.known[line]
        position = bisect_right(self.lines, line) - 1
        near = self.lines[position]
        if line - near > self._WALK:
            return self.index.line_start(line)
        offset = self.known[near]
        for _ in range(line - near):
            offset = self.index.next_line_start(offset)
        return offset


class _Contexts:
    """Each run's launch context (for fix values), read once and only for runs that need it."""

    def __init__(
        self,
        index: LogIndex,
        bounds: list[tuple[int, int]],
        findings: Iterable[Finding],
        offsets: LineOffsets,
    ) -> None:
        self.index, self.bounds, self.offsets = index, bounds, offsets
        self.known: dict[int, RunContext] = {}
        # Flag values the run's death already prescribes: a health fix never contradicts them
        # (raising --gpu-memory-utilization for the KV cache of a run that died out of memory).
        self.prescribed: dict[int, dict[str, str | None]] = {}
        firsts = [first for first, _ in bounds]  # the runs follow each other: one holds a line
        for finding in findings:
            run = bisect_right(firsts, finding.line) - 1
            if run >= 0 and finding.line <= bounds[run][1]:
                self.known.setdefault(run, finding.context)
                values = self.prescribed.setdefault(run, {})
                for fix in finding.fixes:
                    for op in fix.ops:
                        values.setdefault(op.op.name, op.value)

    def of(self, run: int) -> RunContext:
        if run not in self.known:
            first, last = self.bounds[run]
            start = self.offsets(first)
            end = len(self.index) if last >= self.bounds[-1][1] else self.offsets(last + 1)
            self.known[run] = read_context(self.index, start, end)
        return self.known[run]


def _series_findings(series: Series, catalog: HealthCatalog, contexts: _Contexts) -> list[HealthFinding]:
    detectors = (
        ("kv-cache-pressure", _kv_pressure),
        ("queue-growing", _queue_growing),
        ("preemptions", _preemptions),
        ("throughput-collapse", _throughput_collapse),
        ("prefix-cache-cold", _prefix_cold),
    )
    out = []
    for ident, detect in detectors:
        condition = catalog.conditions.get(ident)
        if condition is None:
            continue
        for span, first, last, count, message in detect(series, condition.params, contexts):
            context = contexts.of(series.run)
            out.append(
                HealthFinding(
                    id=condition.id,
                    title=condition.title,
                    severity=condition.severity,
                    span=span,
                    message=message,
                    explanation=condition.explanation,
                    run=series.run,
                    engine=series.engine,
                    first_line=first,
                    last_line=last,
                    count=count,
                    fixes=resolve_fixes(condition.fixes, context, contexts.prescribed.get(series.run, {})),
                )
            )
    return out


def resolve_fixes(
    fixes: Iterable[Fix], context: RunContext, prescribed: dict[str, str | None] | None = None
) -> tuple[ResolvedFix, ...]:
    """The fixes that apply to the run's vLLM version, with values from its launch args.

    A fix whose value cannot be computed stays as advice (no command line); one that would set a
    flag the run's death prescribes a different value for is left out."""
    version = parse_version(context.vllm_version)
    prescribed = prescribed or {}
    out = []
    for fix in fixes:
        if not in_range(version, fix.versions):
            continue
        ops = [op for op in (resolve_op(op, {}, version, context.args) for op in fix.ops) if op is not None]
        if any(op.op.name in prescribed and prescribed[op.op.name] != op.value for op in ops):
            continue
        out.append(ResolvedFix(fix, tuple(ops)))
    return tuple(out)


Detected = tuple[Span, int, int, int, str]  # (where, first line, last line, count, message)


def _streaks(samples: Sequence[StatsSample], test) -> Iterable[list[StatsSample]]:
    """Maximal runs of consecutive samples that pass `test`."""
    streak: list[StatsSample] = []
    for sample in samples:
        if test(sample):
            streak.append(sample)
        elif streak:
            yield streak
            streak = []
    if streak:
        yield streak


def _kv_pressure(series: Series, params: dict[str, float], _contexts: _Contexts) -> Iterable[Detected]:
    threshold, needed = params["kv_usage_min"], params["min_samples"]
    for streak in _streaks(series.samples, lambda s: s.kv_usage is not None and s.kv_usage >= threshold):
        if len(streak) < needed:
            continue
        peak = max(s.kv_usage or 0 for s in streak)
        during = _span_text(streak[0], streak[-1], len(streak))
        message = f"KV cache usage ≥ {_num(threshold)}% {during} (peak {_num(peak)}%)"
        yield streak[0].span, streak[0].line, streak[-1].line, len(streak), message


def _queue_growing(series: Series, params: dict[str, float], _contexts: _Contexts) -> Iterable[Detected]:
    samples = series.samples
    start = 0
    while start < len(samples):
        end = start
        while end + 1 < len(samples) and samples[end + 1].waiting >= samples[end].waiting:
            end += 1
        begin = _flat_growth(samples[start : end + 1], params)
        if begin is not None:
            first, last = samples[start + begin], samples[end]
            message = " ".join(
                filter(
                    None,
                    [
                        f"waiting requests {first.waiting} → {last.waiting}",
                        _span_text(first, last, None),
                        f"while running stayed at {last.running}",
                    ],
                )
            )
            yield first.span, first.line, last.line, end - start - begin + 1, message
        start = end + 1


def _flat_growth(run: Sequence[StatsSample], params: dict[str, float]) -> int | None:
    """Where the longest tail of a non-decreasing-waiting run begins whose running count is flat and
    that grew; None when there is none."""
    if len(run) < params["min_samples"] or run[-1].waiting - run[0].waiting < params["min_growth"]:
        return None
    # Walk back from the end while the running count stays within the flat band of its peak.
    low = high = run[-1].running
    begin = len(run) - 1
    while begin > 0:
        candidate = run[begin - 1].running
        new_low, new_high = min(low, candidate), max(high, candidate)
        if new_high - new_low > params["running_flat_ratio"] * new_high:
            break
        low, high, begin = new_low, new_high, begin - 1
    # The growth begins at the last of the leading samples with the same (smallest) queue.
    while begin + 1 < len(run) and run[begin + 1].waiting == run[begin].waiting:
        begin += 1
    tail = run[begin:]
    if (
        high <= 0
        or len(tail) < params["min_samples"]
        or tail[-1].waiting - tail[0].waiting < params["min_growth"]
    ):
        return None
    return begin


def _preemptions(series: Series, params: dict[str, float], _contexts: _Contexts) -> Iterable[Detected]:
    events: list[tuple[int, Span, int]] = [
        (s.line, s.span, s.preemptions) for s in series.samples if s.preemptions
    ]
    warnings = series.preemption_warnings
    events += [(w.line, w.span, 1) for w in warnings]
    if not events:
        return
    events.sort(key=lambda e: e[0])
    total = sum(n for _, _, n in events if n) if not warnings else _preempted_count(series)
    if total < params["min_count"]:
        return
    first, last = events[0], events[-1]
    if warnings:
        detail = f"{len(warnings)} preemption warning{'s' if len(warnings) != 1 else ''}"
        detail += f" (vLLM's cumulative count reached {max(w.cumulative for w in warnings)})"
    else:
        detail = (
            f"{total} requests preempted in {len(events)} stats interval{'s' if len(events) != 1 else ''}"
        )
    yield first[1], first[0], last[0], len(events), detail


def _preempted_count(series: Series) -> int:
    """Preemptions a run shows: V1's per-interval counts plus what V0's counter says at least."""
    v1 = sum(s.preemptions or 0 for s in series.samples)
    warnings = series.preemption_warnings
    v0 = max(w.cumulative for w in warnings) - min(w.cumulative for w in warnings) + 1 if warnings else 0
    return v1 + max(v0, len(warnings))


def _throughput_collapse(
    series: Series, params: dict[str, float], _contexts: _Contexts
) -> Iterable[Detected]:
    samples = series.samples
    lookback, ratio = int(params["lookback_samples"]), params["collapse_ratio"]
    collapsed: list[int] = []  # positions of samples below the collapse line
    peaks: dict[int, float] = {}
    for position, peak in enumerate(_earlier_peaks([s.generation_throughput for s in samples], lookback)):
        sample = samples[position]
        if peak >= params["min_peak"] and sample.running > 0 and sample.generation_throughput <= ratio * peak:
            collapsed.append(position)
            peaks[position] = peak
    for group in _consecutive(collapsed):
        if len(group) < params["min_samples"]:
            continue
        first, last = samples[group[0]], samples[group[-1]]
        message = (
            f"generation throughput fell from {_num(peaks[group[0]])} to "
            f"{_num(first.generation_throughput)} tok/s with {first.running} requests running "
            f"{_span_text(first, last, len(group))}"
        )
        yield first.span, first.line, last.line, len(group), message


def _earlier_peaks(values: Sequence[float], lookback: int) -> list[float]:
    """For each position, the largest of the `lookback` values before it (0 for the first): a
    sliding-window maximum, linear in the number of values whatever the lookback."""
    peaks: list[float] = []
    window: deque[int] = deque()  # positions whose values decrease from the front
    for position, value in enumerate(values):
        while window and window[0] < position - lookback:
            window.popleft()
        peaks.append(values[window[0]] if window else 0.0)
        while window and values[window[-1]] <= value:
            window.pop()
        window.append(position)
    return peaks


def _consecutive(positions: list[int]) -> Iterable[list[int]]:
    group: list[int] = []
    for position in positions:
        if group and position != group[-1] + 1:
            yield group
            group = []
        group.append(position)
    if group:
        yield group


def _prefix_cold(series: Series, params: dict[str, float], contexts: _Contexts) -> Iterable[Detected]:
    active = [s for s in series.samples if s.prompt_throughput > 0 and s.prefix_hit_rate is not None]
    if len(active) < params["min_samples"] or any(
        (s.prefix_hit_rate or 0) > params["max_hit_rate"] for s in active
    ):
        return
    if not _prefix_caching_on(contexts.of(series.run)):
        return
    message = (
        f"prefix-cache hit rate at most {_num(max(s.prefix_hit_rate or 0 for s in active))}% "
        f"over {len(active)} stats lines with prompts"
    )
    yield active[0].span, active[0].line, active[-1].line, len(active), message


def _prefix_caching_on(context: RunContext) -> bool:
    """Unless the launch args turned it off (the stats line shows a rate only when it is on, or,
    in 0.8.5–0.11.0, always: then an explicit `enable_prefix_caching: False` tells)."""
    value = context.args.get("--enable-prefix-caching")
    return "--no-enable-prefix-caching" not in context.args and (value or "").lower() not in ("false", "0")


# -- the pre-failure record ----------------------------------------------------------------------
def prefailure_record(
    index: LogIndex,
    series: Sequence[Series],
    bounds: list[tuple[int, int]],
    finding: Finding,
    catalog: HealthCatalog,
    offsets: LineOffsets | None = None,
) -> PreFailureRecord | None:
    """The stats of the run in the window before `finding`'s death; None without stats there."""
    death = finding.line
    run = next((r for r, (first, last) in enumerate(bounds) if first <= death <= last), None)
    candidates = [s for s in series if s.run == run and any(x.line < death for x in s.samples)]
    if not candidates:
        return None
    offsets = offsets or LineOffsets(index, {})
    death_time = _line_time(index, offsets(death))
    windows = [_window(s, death, death_time, catalog) for s in candidates]
    windows = [w for w in windows if w]
    if not windows:
        return None
    # With several engines (data parallel), the record follows the most loaded one.
    chosen_series, window = max(
        zip(candidates, windows, strict=False),
        key=lambda pair: (max((s.kv_usage or 0) for s in pair[1]), max(s.waiting for s in pair[1])),
    )
    if death_time is None:
        death_time = window[-1].time
    seconds = None
    if death_time is not None and window[0].time is not None:
        seconds = max(0.0, death_time - window[0].time)
    warnings = [w for w in chosen_series.preemption_warnings if window[0].line <= w.line < death]
    preempted = sum(s.preemptions or 0 for s in window) + _warned_count(warnings)
    run_start = offsets(bounds[run][0]) if run is not None else 0
    success_line, success_time = _last_success(index, run_start, offsets(death))
    since = None
    if success_time is not None and death_time is not None and death_time >= success_time:
        since = death_time - success_time
    return PreFailureRecord(
        death_line=death,
        engine=chosen_series.engine,
        first_line=window[0].line,
        last_line=window[-1].line,
        samples=len(window),
        seconds=seconds,
        kv_usage=_change(window, "kv_usage"),
        running=_change(window, "running") or MetricChange(0, 0, 0, window[0].line),
        waiting=_change(window, "waiting") or MetricChange(0, 0, 0, window[0].line),
        generation_throughput=_change(window, "generation_throughput")
        or MetricChange(0, 0, 0, window[0].line),
        prompt_throughput=_change(window, "prompt_throughput") or MetricChange(0, 0, 0, window[0].line),
        prefix_hit_rate=_change(window, "prefix_hit_rate"),
        preemptions=preempted,
        last_success_line=success_line,
        seconds_since_success=since,
        engines=len(candidates),
        death_time=death_time,
    )


def _warned_count(warnings: Sequence[PreemptionWarning]) -> int:
    if not warnings:
        return 0
    return max(len(warnings), max(w.cumulative for w in warnings) - min(w.cumulative for w in warnings) + 1)


def _window(
    series: Series, death: int, death_time: float | None, catalog: HealthCatalog
) -> list[StatsSample]:
    before = [s for s in series.samples if s.line < death]
    if not before:
        return []
    end_time = death_time if death_time is not None else before[-1].time
    if end_time is not None and before[-1].time is not None:
        timed = [
            s
            for s in before
            if s.time is not None and end_time - catalog.prefailure_window_s <= s.time <= end_time
        ]
        if timed:
            return timed
    return before[-catalog.prefailure_window_samples :]


def _change(window: Sequence[StatsSample], attribute: str) -> MetricChange | None:
    values = [(getattr(s, attribute), s.line) for s in window if getattr(s, attribute) is not None]
    if not values:
        return None
    peak_value, peak_line = max(values, key=lambda v: v[0])
    return MetricChange(float(values[0][0]), float(values[-1][0]), float(peak_value), peak_line)


# Lines that show a request finished well: uvicorn's access log, vLLM's request logger.
_SUCCESS_LITERALS = ('" 200 OK', '" 200 ', "Finished request")
_STAMP_LOOKBACK = 50


def _last_success(index: LogIndex, lo: int, hi: int) -> tuple[int | None, float | None]:
    """The last successful request in [lo, hi) (offsets): its line and time (seconds)."""
    best = last_of(index, _SUCCESS_LITERALS, lo, hi)
    if best < 0:
        return None, None
    start = index.line_start_at(best)
    return index.line_of(start), _line_time(index, start, lookback=_STAMP_LOOKBACK)


#: The first block `last_of` searches back from its end; each next one is twice as long.
_BACK_BLOCK = 1 << 16


def last_of(index: LogIndex, literals: Sequence[str], lo: int, hi: int, block: int = _BACK_BLOCK) -> int:
    """The last offset in [lo, hi) where one of `literals` occurs whole (-1 if none), as the
    largest `rfind` of each would say, but searched back from `hi` a block at a time: a success
    line shortly before a death costs its distance from it, not the whole run before it (which
    every analysis of a growing log would read again)."""
    longest = max(map(len, literals), default=1)
    end = hi
    while end > lo:
        start = max(lo, end - block)
        # An occurrence starting in [start, end) may reach `longest - 1` past `end`.
        reach = min(hi, end + longest - 1)
        found = max(index.rfind(literal, start, reach) for literal in literals)
        if found >= 0:
            return found
        end, block = start, block * 2
    return -1


def _line_time(index: LogIndex, start: int, lookback: int = 5) -> float | None:
    """The time printed on the line starting at offset `start`, else on the nearest one before it."""
    for _, text in [(0, index.line_at(start, 2000)), *index.iter_lines_back(start, 0, lookback)]:
        parsed = parse_line(0, text)
        time, _ = read_time(text, parsed.message_col or len(text))
        if time is not None:
            return time
    return None


# -- text helpers --------------------------------------------------------------------------------
def _num(value: float) -> str:
    """`97`, `99.9`, `1520`: at most one decimal, none when whole."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if value % 1 else str(int(value))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _span_text(first: StatsSample, last: StatsSample, count: int | None) -> str:
    if first.time is not None and last.time is not None and last.time > first.time:
        return f"for {_duration(last.time - first.time)}"
    return f"for {count} stats lines" if count else ""


def sparkline(values: Sequence[float | None], top: float | None = None) -> str:
    """Unicode block sparkline; `top` fixes the scale (100 for percentages), else the maximum."""
    blocks = "▁▂▃▄▅▆▇█"
    known = [v for v in values if v is not None]
    scale = top if top is not None else max(known, default=0.0)
    out = []
    for value in values:
        if value is None:
            out.append(" ")
        elif scale <= 0:
            out.append(blocks[0])
        else:
            out.append(blocks[min(len(blocks) - 1, int(value / scale * (len(blocks) - 1) + 0.5))])
    return "".join(out)
