"""Health findings and pre-failure records as `check` prints them (text) and emits them (JSON).

Line numbers go through `line_of` (core line → the line `check` numbers, see `core.linebreaks`)
and are printed 1-based. Messages written by `core.health` (an LSP-numbered "lines 20–40") are
printed as they are; they differ only in logs with bare `\r` line breaks.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.health import Health, HealthFinding, MetricChange, PreFailureRecord
from ..core.stats import Series

Paint = Callable[[str], str]
LineOf = Callable[[int], int]


def _same(line: int) -> int:
    return line


def _plain(text: str) -> str:
    return text


def health_lines(
    path: str, health: Health | None, warn: Paint = _plain, dim: Paint = _plain, line_of: LineOf = _same
) -> list[str]:
    """Compiler-style lines, one block per health finding (`path:line: warning: id — title: …`)."""
    out: list[str] = []
    previous: tuple = ()
    for item in health.findings if health is not None else ():
        label = warn("warning") if item.severity == "warning" else dim("note")
        head = f"{path}:{line_of(item.line) + 1}: {label}: {item.id} — {item.title}"
        out.append(f"{head}: {item.message} ({item.lines_text(line_of)})")
        fixes = tuple((fix.title, fix.command_line) for fix in item.fixes)
        if fixes and fixes == previous:
            out.append("  fixes: as above")
            continue
        previous = fixes
        for number, (title, command) in enumerate(fixes, 1):
            out.append(f"  fix {number}: {title}{f': {command}' if command else ''}")
    return out


def record_line(record: PreFailureRecord | None, line_of: LineOf = _same) -> str | None:
    """The `pre-failure record` line under an incident, or None without stats before it."""
    if record is None:
        return None
    lines = f"{line_of(record.first_line) + 1}–{line_of(record.last_line) + 1}"
    return f"  pre-failure record (stats lines {lines}): {record.summary}"


def _change(change: MetricChange | None, line_of: LineOf) -> dict | None:
    if change is None:
        return None
    return {
        "first": change.first,
        "last": change.last,
        "peak": change.peak,
        "peak_line": line_of(change.peak_line) + 1,
        "trend": change.trend,
    }


def record_to_json(record: PreFailureRecord | None, line_of: LineOf = _same) -> dict | None:
    """The `prefailure` object of an incident in `check --format json` (lines are 1-based)."""
    if record is None:
        return None
    metrics = {
        "kv_cache_usage_percent": record.kv_usage,
        "running": record.running,
        "waiting": record.waiting,
        "generation_throughput": record.generation_throughput,
        "prompt_throughput": record.prompt_throughput,
        "prefix_cache_hit_rate_percent": record.prefix_hit_rate,
    }
    success = record.last_success_line
    return {
        "summary": record.summary,
        "engine": record.engine,
        "engines": record.engines,
        "first_line": line_of(record.first_line) + 1,
        "last_line": line_of(record.last_line) + 1,
        "samples": record.samples,
        "seconds": record.seconds,
        **{name: _change(change, line_of) for name, change in metrics.items()},
        "preemptions": record.preemptions,
        "last_successful_request_line": None if success is None else line_of(success) + 1,
        "seconds_since_last_successful_request": record.seconds_since_success,
    }


def finding_to_json(item: HealthFinding, line_of: LineOf = _same) -> dict:
    return {
        "id": item.id,
        "title": item.title,
        "severity": item.severity,
        "line": line_of(item.line) + 1,
        "column": item.span.start + 1,
        "first_line": line_of(item.first_line) + 1,
        "last_line": line_of(item.last_line) + 1,
        "count": item.count,
        "message": item.message,
        "run": item.run + 1,
        "engine": item.engine,
        "fixes": [
            {"title": f.title, "command_line": f.command_line, "detail": f.fix.detail} for f in item.fixes
        ],
    }


def series_to_json(series: Series, line_of: LineOf = _same) -> dict:
    def peak(attribute: str) -> dict | None:
        sample = series.peak(attribute)
        return (
            None
            if sample is None
            else {"value": getattr(sample, attribute), "line": line_of(sample.line) + 1}
        )

    samples = series.samples
    return {
        "run": series.run + 1,
        "engine": series.engine,
        "samples": len(samples),
        "first_line": line_of(samples[0].line) + 1 if samples else None,
        "last_line": line_of(samples[-1].line) + 1 if samples else None,
        "peaks": {
            "kv_cache_usage_percent": peak("kv_usage"),
            "running": peak("running"),
            "waiting": peak("waiting"),
            "generation_throughput": peak("generation_throughput"),
            "prompt_throughput": peak("prompt_throughput"),
        },
        "preemptions": sum(s.preemptions or 0 for s in samples) + len(series.preemption_warnings),
    }


def health_to_json(health: Health | None, line_of: LineOf = _same) -> dict:
    """The file-level `health` object of `check --format json`."""
    if health is None:
        return {"findings": [], "series": []}
    return {
        "findings": [finding_to_json(f, line_of) for f in health.findings],
        "series": [series_to_json(s, line_of) for s in health.series],
    }
