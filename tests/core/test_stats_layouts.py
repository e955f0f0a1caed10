"""Stats lines read through remembered layouts: where a timestamp lies before a message and where
a stats line's parts are is found once per digit-masked layout, then read off each line with other
digits at those places; dates become days without `datetime`. Whatever the sequence of lines, a
clock that remembers reads each exactly as the plain reading (`re` + `datetime`) does."""

from __future__ import annotations

import re
from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core.stats import _PART, _STAMP, _Clock, _part_spans, scan_stats
from vllm_log_lsp.core.text import LogIndex


class PlainClock:
    """The reading the clock must equal: the last `_STAMP` match, `datetime` for its value."""

    def __init__(self) -> None:
        self.last: float | None = None

    def read(self, text: str, end: int) -> tuple[float | None, str | None]:
        found = None
        for found in _STAMP.finditer(text, 0, max(0, end)):  # noqa: B007
            pass
        if found is None:
            return None, None
        try:
            when = datetime(
                int(found.group("year") or 2000),
                *(int(found.group(name)) for name in ("month", "day", "hour", "minute", "second")),
            )
        except ValueError:
            return None, None
        seconds = (when - datetime(2000, 1, 1)).total_seconds()
        if found.group("fraction"):
            seconds += float("0." + found.group("fraction"))
        if found.group("year") is None and self.last is not None and seconds < self.last - 180 * 86400:
            seconds += 366 * 86400
        self.last = seconds
        return seconds, found.group(0)


def plain_parts(tail: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for part in tail.split(", "):
        found = _PART.match(part.strip().rstrip("."))
        if found:
            values.setdefault(*found.groups())
    return values


def digits(low: int, high: int) -> st.SearchStrategy[str]:
    return st.text("0123456789", min_size=low, max_size=high)


# A stamp's fields with any digits (months 00-19, hours 00-29...: valid and invalid times), with
# and without a year, a fraction of 1-12 digits, `T` or a space: each piece may also be cut short.
stamps = st.builds(
    lambda year, month, day, hour, minute, second, sep, fraction: (
        f"{year}{month}-{day}{sep}{hour}:{minute}:{second}{fraction}"
    ),
    st.sampled_from(["", "2024-", "2000-", "0000-", "1999-", "12-"]),
    st.sampled_from(["01", "02", "10", "12", "00", "13", "19", "1"]),
    st.sampled_from(["01", "28", "29", "30", "31", "00", "32", "39"]),
    st.sampled_from(["00", "09", "23", "24", "29"]),
    st.sampled_from(["00", "59", "60", "7"]),
    st.sampled_from(["00", "30", "59", "60", "69"]),
    st.sampled_from([" ", "T", "  "]),
    st.sampled_from(["", ".5", ",123", ".123456789", ".123456789012", "."]),
)
pieces = st.one_of(
    stamps,
    st.builds(lambda n: f"(APIServer pid={n}) ", digits(1, 6)),
    st.builds(lambda n: f"[loggers.py:{n}] ", digits(1, 4)),
    st.sampled_from(["INFO ", "WARNING ", "Engine 000: ", "9", "-", " ", "é ", "٣", "\x1b[32m", "| "]),
)
befores = st.lists(pieces, max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(befores, min_size=1, max_size=12), st.data())
def test_a_remembering_clock_reads_every_stamp_as_the_plain_reading(
    texts: list[str], data: st.DataObject
) -> None:
    # Repeat the texts with their digits changed, so that layouts recur with other digits.
    changed = [re.sub(r"\d", lambda _: data.draw(st.sampled_from("0123456789")), text) for text in texts]
    sequence = texts + changed + texts
    clock, plain = _Clock(), PlainClock()
    for text in sequence:
        end = data.draw(st.integers(-1, len(text) + 2))
        assert clock.read(text, end) == plain.read(text, end), (text, end)
        assert clock.last == plain.last


def test_the_clock_wraps_a_year_less_log_from_december_to_january() -> None:
    clock, plain = _Clock(), PlainClock()
    for text in [
        "INFO 12-31 23:59:50 ",
        "INFO 01-01 00:00:10 ",
        "INFO 2025-01-01 00:00:10 ",
        "INFO 01-02 00:00:00 ",
    ]:
        assert clock.read(text, len(text)) == plain.read(text, len(text))


names = st.sampled_from(
    [
        "GPU KV cache usage",
        "CPU KV cache usage",
        "Prefix cache hit rate",
        "Preemptions",
        "Deferred",
        "KV cache usage",
    ]
)
parts = st.one_of(
    st.builds(
        lambda name, value, unit, pad: f"{pad}{name}: {value}{unit}",
        names,
        st.one_of(digits(1, 5), st.builds(lambda a, b: f"{a}.{b}", digits(1, 4), digits(1, 3))),
        st.sampled_from(["", "%", " reqs", "%.", " reqs.", "x", " %"]),
        st.sampled_from(["", " ", "  "]),
    ),
    st.sampled_from(["", "KV fetch: 12 reqs", "9: 1", "é: 1", "Name:1"]),
)
tails = st.lists(parts, max_size=7).map(lambda found: "".join(", " + part for part in found))


@settings(max_examples=150, deadline=None)
@given(tails)
def test_parts_equal_the_plain_reading(tail: str) -> None:
    assert {name: tail[a:b] for name, (a, b) in _part_spans(tail).items()} == plain_parts(tail), tail


# Stats lines of every layout: engines, the V0 swapped form, any parts, any digits, prefixes.
PREFIXES = [
    "(APIServer pid=1) INFO 10-03 21:00:{s} [loggers.py:123] ",
    "INFO 10-03 21:00:{s} [metrics.py:455] ",
    "2025-10-03T21:00:{s}.123456Z (APIServer pid=1) INFO 10-03 21:00:{s} [loggers.py:123] ",
    "svc-1  | (APIServer pid=1) INFO 10-03 21:00:{s} [loggers.py:123] ",
    "\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO 10-03 21:00:{s} [loggers.py:123] ",
    "(APIServer pid=1) INFO 10-03 21:00:{s} [loggers.py:123] Avg prompt throughput: 1.0 tokens/s, ",
    "",
]
HEADS = [
    "Engine {e}: ",
    "{e} Engines Aggregated: ",
    "",
]
number = st.one_of(digits(1, 4), st.builds(lambda a, b: f"{a}.{b}", digits(1, 4), digits(1, 2)))


@st.composite
def stats_lines(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(PREFIXES)).format(s=draw(digits(2, 2)))
    head = draw(st.sampled_from(HEADS)).format(e=draw(digits(1, 4)))
    counts = (
        f"Running: {draw(digits(1, 3))} reqs, Swapped: {draw(digits(1, 3))} reqs, Pending: {draw(digits(1, 3))} reqs"
        if draw(st.booleans())
        else f"Running: {draw(digits(1, 3))} reqs, Waiting: {draw(digits(1, 3))} reqs"
    )
    body = (
        f"Avg prompt throughput: {draw(number)} tokens/s, Avg generation throughput: {draw(number)} tokens/s, "
        + counts
        + draw(tails)
    )
    if draw(st.booleans()):  # colour codes inside the stats text, around its values
        body = body.replace("Running: ", "\x1b[33mRunning: \x1b[1m", 1).replace(
            " tokens/s", "\x1b[0m tokens/s", 1
        )
    return prefix + head + body + draw(st.sampled_from(["", " ", "\r"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(stats_lines(), min_size=1, max_size=12), st.data())
def test_stats_lines_read_through_a_remembered_plan_equal_those_read_anew(
    lines: list[str], data: st.DataObject
) -> None:
    """Lines of a few layouts repeated with other digits: what the plans kept per layout read is
    what reading each line anew gives (the same clock, so the same times)."""
    import pytest

    from vllm_log_lsp.core import stats

    again = [re.sub(r"\d+", lambda _: data.draw(digits(1, 4)), line) for line in lines]
    text = "\n".join(lines + again + lines) + "\n"
    planned = scan_stats(LogIndex(text))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stats._Clock, "plan_of", lambda self, raw: None)
        anew = scan_stats(LogIndex(text))
    assert planned == anew


def test_plans_are_kept_and_read_for_repeated_layouts(monkeypatch) -> None:
    """Not vacuous: a log of one layout reads all but its first line through the kept plan."""
    from vllm_log_lsp.core import stats

    line = (
        "(APIServer pid=1) INFO 10-03 21:00:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput: "
        "{p}.0 tokens/s, Avg generation throughput: 9.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 1.5%, Prefix cache hit rate: 0.0%"
    )
    parsed: list[int] = []
    monkeypatch.setattr(stats, "parse_line", lambda *a, parse=stats.parse_line: parsed.append(0) or parse(*a))
    text = "\n".join(line.format(s=s, p=s % 10) for s in range(20)) + "\n"
    samples = scan_stats(LogIndex(text)).samples
    assert len(samples) == 20 and len(parsed) == 1  # (the others read through its plan)
    assert [s.prompt_throughput for s in samples] == [float(s % 10) for s in range(20)]


def test_a_stats_log_reads_as_its_lines_read_one_at_a_time() -> None:
    """The samples of a log whose lines repeat a layout with other digits equal those of each line
    scanned alone (each with a clock of its own)."""
    lines = [
        f"(APIServer pid={pid}) INFO 10-0{day} {hour:02d}:{minute:02d}:{second:02d} [loggers.py:123] "
        f"Engine 000: Avg prompt throughput: {prompt} tokens/s, Avg generation throughput: {gen} tokens/s, "
        f"Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv}%, Prefix cache hit rate: {hit}%"
        for pid, day, hour, minute, second, prompt, gen, running, waiting, kv, hit in [
            (100, 3, 21, 0, 10, 4201.2, 62.1, 33, 0, 26.4, 4.4),
            (100, 3, 21, 0, 20, 5.3, 75.7, 5, 12, 100.0, 50.0),
            (7, 4, 9, 59, 59, 0.0, 0.0, 0, 0, 0.0, 0.0),
            (100, 3, 24, 0, 0, 1.0, 2.0, 3, 4, 5.0, 6.0),  # no such hour: no time
            (12345, 9, 1, 2, 3, 10.0, 20.0, 300, 4000, 55.5, 66.6),
        ]
    ]
    text = "\n".join(lines) + "\n"
    together = scan_stats(LogIndex(text)).samples
    alone = []
    offset = 0
    for number, line in enumerate(lines):
        [sample] = scan_stats(LogIndex("\n" * number + line + "\n")).samples
        alone.append((sample, offset))
        offset += len(line) + 1
    assert [s.time for s in together][3] is None
    for sample, (expected, start) in zip(together, alone, strict=True):
        assert sample == type(expected)(**{**vars_of(expected), "offset": start})


def vars_of(record: object) -> dict:
    return {name: getattr(record, name) for name in record.__match_args__}  # type: ignore[attr-defined]


def test_a_count_printed_with_a_fraction_is_no_count() -> None:
    """`Preemptions: 0.5` (no count has a fraction; the part's pattern takes one): the sample is
    read, its count unknown, and the check goes on (it raised before)."""
    line = (
        "(APIServer pid=1) INFO 10-03 21:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 "
        "tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 5.0%, Preemptions: 0.5, Deferred: 2"
    )
    [sample] = scan_stats(LogIndex(line + "\n")).samples
    assert (sample.preemptions, sample.deferred, sample.kv_usage) == (None, 2, 5.0)
