"""Markdown and outline symbols for the health of a log (pure functions; hover and outline use them)."""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types

from ..core.health import Health, HealthFinding, MetricChange, PreFailureRecord, sparkline
from ..core.stats import Series
from .state import AnalysisResult


def _num(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}".rstrip("0").rstrip(".") if value % 1 else str(int(value))


LineOf = Callable[[int], int]


def _change_row(name: str, change: MetricChange | None, unit: str, line_of: LineOf) -> str:
    if change is None:
        return f"| {name} | – | – | – | |"
    return (
        f"| {name} | {_num(change.first)}{unit} | {_num(change.last)}{unit} | "
        f"{_num(change.peak)}{unit} (line {line_of(change.peak_line) + 1}) | {change.trend} |"
    )


def prefailure_markdown(record: PreFailureRecord, line_of: LineOf = int) -> str:
    """The pre-failure record under a root cause's hover (lines numbered by `line_of`)."""
    rows = [
        "| | first | last | peak | trend |",
        "|---|---|---|---|---|",
        _change_row("KV cache usage", record.kv_usage, " %", line_of),
        _change_row("running", record.running, "", line_of),
        _change_row("waiting", record.waiting, "", line_of),
        _change_row("generation throughput", record.generation_throughput, " tok/s", line_of),
        _change_row("prompt throughput", record.prompt_throughput, " tok/s", line_of),
    ]
    if record.prefix_hit_rate is not None:
        rows.append(_change_row("prefix-cache hit rate", record.prefix_hit_rate, " %", line_of))
    where = f"stats lines {line_of(record.first_line) + 1}–{line_of(record.last_line) + 1}"
    engine = f", {record.engine} (most loaded of {record.engines})" if record.engines > 1 else ""
    parts = [
        "#### Before the death",
        f"{record.summary[0].upper()}{record.summary[1:]}.",
        f"From {where}{engine}:",
    ]
    parts.append("\n".join(rows))
    if record.last_success_line is not None:
        parts.append(f"Last successful request: line {line_of(record.last_success_line) + 1}.")
    return "\n\n".join(parts)


def health_markdown(item: HealthFinding, line_of: LineOf = int) -> str:
    """A health finding: what the stats show, why it matters, the fixes in order."""
    parts = [f"### Health: {item.title}", f"{item.message} ({item.lines_text(line_of)}).", item.explanation]
    if item.fixes:
        rows = []
        for number, fix in enumerate(item.fixes, 1):
            command = f": `{fix.command_line}`" if fix.command_line else ""
            rows.append(
                f"{number}. **{fix.title}**{command}" + (f" — {fix.fix.detail}" if fix.fix.detail else "")
            )
        parts += ["#### Fixes, in order", "\n".join(rows)]
    return "\n\n".join(p for p in parts if p)


def stats_markdown(series: Series, position: int, radius: int, line_of: LineOf = int) -> str:
    """A stats line's hover: its figures, and sparklines of KV usage and throughput around it."""
    sample = series.samples[position]
    lo, hi = max(0, position - radius), min(len(series.samples), position + radius + 1)
    around = series.samples[lo:hi]
    marker = " " * (position - lo) + "▲"
    kv = sparkline([s.kv_usage for s in around], top=100)
    gen = sparkline([s.generation_throughput for s in around])
    top_gen = max(s.generation_throughput for s in around)
    figures = [
        f"running {sample.running}",
        f"waiting {sample.waiting}",
        f"generation {_num(sample.generation_throughput)} tok/s",
        f"prompt {_num(sample.prompt_throughput)} tok/s",
    ]
    if sample.kv_usage is not None:
        figures.insert(0, f"KV cache {_num(sample.kv_usage)} %")
    if sample.preemptions:
        figures.append(f"{sample.preemptions} preempted")
    if sample.prefix_hit_rate is not None:
        figures.append(f"prefix-cache hits {_num(sample.prefix_hit_rate)} %")
    chart = "\n".join(
        [
            "```text",
            f"KV cache   {kv}  0–100 %",
            f"generation {gen}  0–{_num(top_gen)} tok/s",
            f"           {marker}",
            "```",
        ]
    )
    span = f"stats lines {line_of(around[0].line) + 1}–{line_of(around[-1].line) + 1}"
    when = f" at {sample.stamp}" if sample.stamp else ""
    return "\n\n".join(
        [f"### Stats: {series.engine}{when}", " · ".join(figures), chart, f"{len(around)} samples, {span}."]
    )


def series_symbols(
    result: AnalysisResult, health: Health, run: int, encoding: str
) -> list[tuple[int, types.DocumentSymbol]]:
    """Outline children of one run: a symbol per stats series (peaks), its trouble starts inside."""
    out = []
    for series in health.series:
        if series.run != run or not series.samples:
            continue
        first, last = series.samples[0].line, series.samples[-1].line
        peaks = []
        for attribute, label, unit in (
            ("kv_usage", "KV", " %"),
            ("waiting", "waiting", ""),
            ("generation_throughput", "gen", " tok/s"),
        ):
            sample = series.peak(attribute)
            if sample is not None:
                peaks.append(f"{label} {_num(getattr(sample, attribute))}{unit}")
        children = []
        for item in health.findings:
            if item.run == run and item.engine == series.engine:
                children.append(
                    types.DocumentSymbol(
                        name=f"Trouble starts: {item.title}",
                        kind=types.SymbolKind.Event,
                        detail=f"line {result.lines.line(item.line) + 1}",
                        range=result.lines.lines_range(item.first_line, item.last_line, encoding),
                        selection_range=result.lines.range(item.span, encoding),
                    )
                )
        out.append(
            (
                first,
                types.DocumentSymbol(
                    name=f"Stats ({series.engine}): {len(series.samples)} samples",
                    kind=types.SymbolKind.Array,
                    detail="peaks: " + ", ".join(peaks),
                    range=result.lines.lines_range(first, last, encoding),
                    selection_range=result.lines.line_range(first, encoding),
                    children=children or None,
                ),
            )
        )
    return out
