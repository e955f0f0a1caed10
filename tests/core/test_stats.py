"""Stats lines of every vLLM generation parsed into samples; series per run and engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from pressure import V0_LOG, V1_LOG, v0_preemption_log, v1_pressure_log
from support import CRASH, HEALTHY, read_log
from vllm_log_lsp.core.analyze import Analyzer
from vllm_log_lsp.core.stats import parse_stats_line, scan_stats, series_of
from vllm_log_lsp.core.text import LogIndex

# Real lines from the corpus (file and vLLM version noted), then spellings from vLLM's source for
# the versions the corpus has no line of. Each: (line, engine, prompt, generation, running,
# waiting, swapped, kv, device, cpu kv, prefix hit rate, preemptions, stamp).
REAL = [
    (  # healthy/015, 0.5.x V0, timestamp with a year
        "INFO 2025-09-10 16:32:05.957 metrics.py:386] Avg prompt throughput: 0.2 tokens/s, Avg generation "
        "throughput: 1.1 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
        "0.0%, CPU KV cache usage: 0.0%.",
        ("engine", 0.2, 1.1, 0, 0, 0, 0.0, "GPU", 0.0, None, None, "2025-09-10 16:32:05.957"),
    ),
    (  # healthy/108, 0.7.2 V0
        "INFO 04-14 08:40:16 metrics.py:455] Avg prompt throughput: 19.3 tokens/s, Avg generation throughput: "
        "0.2 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.1%, CPU KV "
        "cache usage: 0.0%.",
        ("engine", 19.3, 0.2, 1, 0, 0, 0.1, "GPU", 0.0, None, None, "04-14 08:40:16"),
    ),
    (  # healthy/014, 0.8.3 V0 fallback, bracketed source
        "INFO 04-20 17:17:49 [metrics.py:488] Avg prompt throughput: 2.2 tokens/s, Avg generation throughput: "
        "0.2 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV "
        "cache usage: 0.0%.",
        ("engine", 2.2, 0.2, 1, 0, 0, 0.0, "GPU", 0.0, None, None, "04-20 17:17:49"),
    ),
    (  # healthy/105, 0.8.5.post1 V1, `Engine %03d: `
        "INFO 05-19 20:03:15 [loggers.py:111] Engine 000: Avg prompt throughput: 27.2 tokens/s, Avg generation "
        "throughput: 0.1 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.8%, Prefix cache "
        "hit rate: 3.2%",
        ("Engine 000", 27.2, 0.1, 1, 0, None, 0.8, "GPU", None, 3.2, None, "05-19 20:03:15"),
    ),
    (  # crash/014, 0.10.x V1 with the APIServer prefix
        "(APIServer pid=23283) INFO 08-01 21:33:49 [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 "
        "tokens/s, Avg generation throughput: 17.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 0.0%, Prefix cache hit rate: 97.3%",
        ("Engine 000", 0.0, 17.0, 0, 0, None, 0.0, "GPU", None, 97.3, None, "08-01 21:33:49"),
    ),
    (  # healthy/107, 0.16.1 under docker compose
        "qwen3.5-122    | (APIServer pid=1) INFO 03-01 14:29:31 [loggers.py:259] Engine 000: Avg prompt "
        "throughput: 2.6 tokens/s, Avg generation throughput: 67.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 5.6%, Prefix cache hit rate: 0.0%",
        ("Engine 000", 2.6, 67.4, 1, 0, None, 5.6, "GPU", None, 0.0, None, "03-01 14:29:31"),
    ),
    (  # healthy/004, 0.20.0 under Docker Desktop (two stamps: vLLM's own is used)
        "2026-05-01 19:17:56.399 | (APIServer pid=1) INFO 05-01 17:17:56 [loggers.py:271] Engine 000: Avg "
        "prompt throughput: 2.4 tokens/s, Avg generation throughput: 0.1 tokens/s, Running: 0 reqs, Waiting: "
        "0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
        ("Engine 000", 2.4, 0.1, 0, 0, None, 0.0, "GPU", None, 0.0, None, "05-01 17:17:56"),
    ),
]
FROM_SOURCE = [
    (  # 0.4.0: the f-string, no final `.`
        "INFO 03-30 10:00:05 metrics.py:218] Avg prompt throughput: 1024.5 tokens/s, Avg generation throughput: "
        "88.0 tokens/s, Running: 12 reqs, Swapped: 3 reqs, Pending: 7 reqs, GPU KV cache usage: 96.4%, CPU KV "
        "cache usage: 12.5%",
        ("engine", 1024.5, 88.0, 12, 7, 3, 96.4, "GPU", 12.5, None, None, "03-30 10:00:05"),
    ),
    (  # 0.7.3 V1: no engine prefix yet
        "INFO 02-20 08:00:10 [loggers.py:78] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: "
        "250.5 tokens/s, Running: 9 reqs, Waiting: 2 reqs, GPU KV cache usage: 40.2%, Prefix cache hit rate: "
        "12.0%",
        ("engine", 10.0, 250.5, 9, 2, None, 40.2, "GPU", None, 12.0, None, "02-20 08:00:10"),
    ),
    (  # 0.11.2+: optional parts Deferred, KV fetch, Preemptions, Corrupted, external and MM hit rates
        "(APIServer pid=7) INFO 11-20 12:00:00 [loggers.py:236] Engine 003: Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 1520.3 tokens/s, Running: 64 reqs, Waiting: 80 reqs, Deferred: 5 reqs, KV "
        "fetch: 1 waiting to start, 2 in progress, 0 completed waiting, Preemptions: 6, GPU KV cache usage: "
        "99.9%, Prefix cache hit rate: 0.4%, Corrupted: 0 reqs, External prefix cache hit rate: 3.0%, MM cache "
        "hit rate: 50.0%",
        ("Engine 003", 0.0, 1520.3, 64, 80, None, 99.9, "GPU", None, 0.4, 6, "11-20 12:00:00"),
    ),
    (  # 0.30+: the device in `%s KV cache usage`, aggregated over data-parallel engines
        "(APIServer pid=7) INFO 11-20 12:00:00 [loggers.py:314] 4 Engines Aggregated: Avg prompt throughput: "
        "3.5 tokens/s, Avg generation throughput: 7.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, XPU KV cache "
        "usage: 1.5%",
        ("4 Engines Aggregated", 3.5, 7.0, 2, 0, None, 1.5, "XPU", None, None, None, "11-20 12:00:00"),
    ),
]
FIELDS = (
    "engine",
    "prompt_throughput",
    "generation_throughput",
    "running",
    "waiting",
    "swapped",
    "kv_usage",
    "kv_device",
    "cpu_kv_usage",
    "prefix_hit_rate",
    "preemptions",
    "stamp",
)


@pytest.mark.parametrize(("line", "expected"), REAL + FROM_SOURCE)
def test_every_spelling_is_parsed_with_its_values(line: str, expected: tuple) -> None:
    sample = parse_stats_line(7, line)
    assert sample is not None
    assert tuple(getattr(sample, name) for name in FIELDS) == expected
    # The span starts at the stats text (`Engine …` or `Avg prompt throughput`), after the prefixes.
    engine = expected[0]
    start = line.index(engine) if engine != "engine" else line.index("Avg prompt")
    assert (sample.span.line, sample.span.start, sample.span.end) == (7, start, len(line))


@pytest.mark.parametrize(
    "line",
    [
        "Avg prompt throughput: 1.0 tokens/s",  # cut short
        "INFO 10-16 16:27:51 [loggers.py:127] Engine 000: Avg prompt throughput: 393.0 tokens/s, Avg generation "
        "throughput: 16.0 tokens/s, Running: 0 reqs, Waiting: 0he usage: 0.0%",  # corpus crash/031, garbled
        "INFO 10-16 16:27:51 [api.py:1] the docs say: Avg prompt throughput: is a metric",
    ],
)
def test_broken_lines_are_not_samples(line: str) -> None:
    assert parse_stats_line(0, line) is None


def test_real_logs_give_one_sample_per_stats_line() -> None:
    for path in [HEALTHY / "004.log", HEALTHY / "009.log", HEALTHY / "014.log", CRASH / "014.log"]:
        text = read_log(path)
        scan = scan_stats(LogIndex(text))
        expected = [n for n, line in enumerate(text.splitlines()) if "Avg prompt throughput: " in line]
        assert [s.line for s in scan.samples] == expected, path.name
        times = [s.time for s in scan.samples]
        assert None not in times and times == sorted(times), path.name


def test_v0_prefix_hit_rate_line_joins_its_stats_line() -> None:
    text = "\n".join(
        [
            "INFO 04-20 17:17:49 [metrics.py:488] Avg prompt throughput: 2.2 tokens/s, Avg generation throughput: "
            "0.2 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV "
            "cache usage: 0.0%.",
            "INFO 04-20 17:17:49 [metrics.py:504] Prefix cache hit rate: GPU: 42.50%, CPU: 0.00%",
        ]
    )
    [sample] = scan_stats(LogIndex(text)).samples
    assert sample.prefix_hit_rate == 42.5


def test_preemption_warnings_are_read_with_their_counter() -> None:
    scan = scan_stats(LogIndex(v0_preemption_log()))
    assert [w.cumulative for w in scan.preemptions] == [1, 51, 101, 151, 201, 251]
    assert {w.mode for w in scan.preemptions} == {"PreemptionMode.RECOMPUTE"}


def test_series_split_per_run_and_engine() -> None:
    lines = []
    for engine in (0, 1):
        lines.append(
            f"(APIServer pid=1) INFO 01-01 00:00:1{engine} [loggers.py:1] Engine {engine:03d}: Avg prompt "
            "throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 "
            "reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%"
        )
    text = "\n".join(lines * 3)
    scan = scan_stats(LogIndex(text))
    series = series_of(scan, run_starts=(3,), line_count=6)
    # run_boundaries merges starts closer than 200 lines: one run, two engines.
    assert [(s.run, s.engine, [x.line for x in s.samples]) for s in series] == [
        (0, "Engine 000", [0, 2, 4]),
        (0, "Engine 001", [1, 3, 5]),
    ]
    far = "\n".join(lines + ["x"] * 300 + lines)
    series = series_of(scan_stats(LogIndex(far)), run_starts=(250,), line_count=304)
    assert [(s.run, s.engine) for s in series] == [
        (0, "Engine 000"),
        (0, "Engine 001"),
        (1, "Engine 000"),
        (1, "Engine 001"),
    ]


def test_search_tools_and_python_find_the_same_samples(monkeypatch) -> None:
    # Big enough for the pre-filter to use rg/grep; the stats lines are rare among other lines.
    filler = '(APIServer pid=1) INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK\n' * 60_000
    text = filler + v1_pressure_log() + filler
    with_tool = scan_stats(LogIndex(text)).samples
    monkeypatch.setenv("VLLM_LOG_LSP_NO_GREP", "1")
    without = scan_stats(LogIndex(text)).samples
    assert len(with_tool) == 24 and with_tool == without


def test_growing_log_keeps_earlier_samples_and_reads_the_new_ones() -> None:
    full = v1_pressure_log()
    cut = full.index("Engine 000", len(full) // 2)
    analyzer = Analyzer()
    analyzer.analyze(full[:cut])
    grown = analyzer.analyze(full)
    fresh = Analyzer().analyze(full)
    assert analyzer.reused_offset > 0
    assert grown.health == fresh.health


def test_a_grown_log_reads_its_times_on_from_the_last_line_read() -> None:
    """A year-less stamp that goes back months wraps a year from the time read last; a log's
    times may go back (a block printed again), so a grown scan goes on from the last line's
    time, not the latest: 01-05 after 09-10 then 06-10 is the same year (fresh), where from
    09-10 it would wrap (found by scripts/fuzz.py, seed 67)."""

    def stats(stamp: str) -> str:
        return (
            f"INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
            "throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%\n"
        )

    other = "INFO 06-10 10:00:01 [api_server.py:1] GET /health 200\n" * 3  # (lines read again)
    head = stats("09-10 10:00:00") + stats("06-10 10:00:00") + other
    full = head + stats("01-05 10:00:00")
    analyzer = Analyzer()
    analyzer.analyze(head)
    grown = analyzer.analyze(full)
    fresh = Analyzer().analyze(full)
    assert analyzer.reused_offset > 0
    [series] = fresh.health.series
    assert series.samples[2].time is not None and series.samples[2].time < series.samples[1].time
    assert grown.health == fresh.health


def test_committed_pressure_fixtures_match_their_generator() -> None:
    assert V1_LOG.read_text(encoding="utf-8") == v1_pressure_log()
    assert V0_LOG.read_text(encoding="utf-8") == v0_preemption_log()
    workspace = (
        Path(__file__).parents[1] / "editors" / "fixtures" / "vscode-workspace" / "kv-pressure-vllm.log"
    )
    assert workspace.read_text(encoding="utf-8") == v1_pressure_log()  # the VS Code e2e's copy


def test_days_are_counted_from_the_first_day_of_the_year_without_one() -> None:
    """The clock's day numbers start at 1 January of the year a stamp without one is given."""
    from datetime import date

    from vllm_log_lsp.core import stats

    assert date(stats._NO_YEAR, 1, 1).toordinal() == stats._BASE_DAY
    clock = stats._Clock()
    assert clock._day(stats._NO_YEAR, 1, 1) == 0
    assert clock._day(stats._NO_YEAR, 3, 1) == 31 + 29  # (2000 is a leap year)
    assert clock._day(stats._NO_YEAR, 2, 30) is None


def _ordinal_or_none(year: int, month: int, day: int) -> int | None:
    from datetime import date

    try:
        return date(year, month, day).toordinal()
    except ValueError:
        return None


@pytest.mark.parametrize(
    "year", [1, 4, 99, 100, 1600, 1700, 1899, 1900, 1970, 1999, 2000, 2001, 2023, 2024, 2100, 2400, 9999]
)
def test_day_numbers_are_the_calendar_s_own(year: int) -> None:
    """Every day of years around each leap rule (4, 100, 400), and the days no month has (the
    30th of February, the 31st of a 30-day month, day 0, month 13), counted as `datetime` does."""
    from vllm_log_lsp.core.stats import gregorian_day

    for month in range(0, 14):
        for day in range(0, 33):
            assert gregorian_day(year, month, day) == _ordinal_or_none(year, month, day), (year, month, day)


def test_a_year_outside_the_calendar_has_no_day() -> None:
    from vllm_log_lsp.core.stats import gregorian_day

    assert gregorian_day(0, 1, 1) is None
    assert gregorian_day(10000, 1, 1) is None
    assert gregorian_day(-4, 2, 29) is None
