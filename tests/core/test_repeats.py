"""A traceback repeated back to back is read once, its copies counted (`core.repeats`).

Skipping copies must never change an answer, so each test compares with the scan that reads
every copy (`repeats.SKIP_REPEATS` off):
- the findings (but the candidates they name: a skipped copy is none), folds, runs and health of
  a whole analysis are equal, and the scan's events are the reference's but those of the
  skipped copies, with the same lines consumed: on real tracebacks of the corpus repeated where
  they stand (their messages' numbers drawn anew), on generated
  runs of logged and raw tracebacks (with and without the writer's line above the header,
  chained ones, numbers of other widths in every copy), followed by a death, by nothing, by a
  copy of another pid, of another logger source, with a marker, with a line more; as text and
  as bytes;
- a copy that differs in anything but its digits (another writer, a marker literal, a line
  more, a colour code) ends the run there: the copies after it are read; a traceback a process
  died of is never skipped;
- a log that grows (the editor's appends, cut anywhere, inside a copy too) gives what a fresh
  analysis gives, and keeps one run;
- the runs do happen where they should (the comparisons above are not of two full readings).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core import repeats
from vllm_log_lsp.core.analyze import Analyzer
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.model import Analysis, Finding
from vllm_log_lsp.core.records import fields, replace
from vllm_log_lsp.core.repeats import collapse_digits
from vllm_log_lsp.core.scan import Scan, scan_lines
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
DEATH = (Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "tp2-worker-oom.log").read_text()
DEATH_LINES = DEATH.split("\n")[12:]
SOME = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Writers: (prefix with {ts} for the time, logged: whether a logger's line sits above the header).
LOGGED = "(APIServer pid={pid}) ERROR 10-03 {ts} [serving_chat.py:{src}] "
RAW = "(APIServer pid={pid}) "
PLAIN_LOGGED = "ERROR 10-03 {ts} [serving_engine.py:{src}] "


def request_error(rng: random.Random, prefix: str, preamble: bool, chained: bool) -> list[str]:
    """One request's traceback, its numbers (timestamps, line numbers, token counts) drawn anew."""
    limit = rng.choice([512, 4096, 16384, 131072])
    asked = limit + rng.randint(1, 10 ** rng.randint(1, 5))
    lines = ["Error in preprocessing prompt inputs"] if preamble else []
    lines += [
        "Traceback (most recent call last):",
        f'  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py", line {rng.randint(1, 3000)}, in create_chat_completion',
        "    ) = await self._preprocess_chat(",
        f'  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_engine.py", line {rng.randint(1, 3000)}, in _validate_input',
        "    raise ValueError(",
        f"ValueError: This model's maximum context length is {limit} tokens. However, you requested {asked} tokens.",
    ]
    if chained:
        lines += [
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            f'  File "/usr/lib/python3.12/site-packages/starlette/routing.py", line {rng.randint(1, 900)}, in handle',
            "    await self.app(scope, receive, send)",
            f"starlette.HTTPException: request {rng.randint(0, 10**9)} failed",
        ]
    second = rng.randint(0, 59)
    ts = f"21:{rng.randint(0, 59):02d}:{second:02d}"
    return [prefix.format(ts=ts) + line for line in lines]


def run_log(rng: random.Random, copies: int, ending: str, writer: str, preamble: bool, chained: bool) -> str:
    pid, src = 100, 245
    prefix_of = {"logged": LOGGED, "raw": RAW, "plain": PLAIN_LOGGED}
    prefix = prefix_of[writer].replace("{pid}", str(pid)).replace("{src}", str(src))
    lines = ["(APIServer pid=100) INFO 10-03 21:00:00 [api_server.py:1805] vLLM API server version 0.11.0"]
    for _ in range(copies):
        lines += request_error(rng, prefix, preamble, chained)
    other = {
        "pid": prefix_of[writer].replace("{pid}", "101").replace("{src}", str(src)),
        "source": prefix_of[writer].replace("{pid}", str(pid)).replace("{src}", "246"),
    }
    if ending in other:
        lines += request_error(rng, other[ending], preamble, chained)
        lines += request_error(rng, prefix, preamble, chained) * 2
    elif ending == "marker":
        lines += [
            line.replace("ValueError:", "torch.OutOfMemoryError: CUDA out of memory.")
            for line in request_error(rng, prefix, preamble, chained)
        ]
        lines += request_error(rng, prefix, preamble, chained) * 2
    elif ending == "line-more":
        copy = request_error(rng, prefix, preamble, chained)
        lines += [*copy[:-1], copy[-2], copy[-1]]
        lines += request_error(rng, prefix, preamble, chained) * 2
    elif ending == "colour":
        lines += ["\x1b[0;31m" + line for line in request_error(rng, prefix, preamble, chained)]
        lines += request_error(rng, prefix, preamble, chained) * 2
    if ending == "death" or rng.random() < 0.3:
        lines += DEATH_LINES
    return "\n".join(lines) + "\n"


def analyses(text: str | bytes) -> tuple[Analysis, Scan, Analysis, Scan]:
    """(analysis, scan) with copies skipped, then reading every copy."""
    skipping = Analyzer(CATALOG)
    fast = skipping.analyze(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(repeats, "SKIP_REPEATS", False)
        reading = Analyzer(CATALOG)
        slow = reading.analyze(text)
    return fast, skipping._scan, slow, reading._scan  # type: ignore[return-value]


def skipped_lines(scan: Scan) -> set[int]:
    return {
        line
        for run in scan.repeats
        for line in range(run.first_line, run.first_line + run.skipped * run.lines)
    }


def without_copies(finding: Finding) -> Finding:
    """A finding but for what names other candidates: a skipped copy is none, so the candidates
    a finding says it considered, and the other copies of its root cause, leave them out."""
    return replace(finding, considered=(), related_lines=())


def assert_alike(text: str | bytes) -> Scan:
    fast, fast_scan, slow, slow_scan = analyses(text)
    differing = [
        f.name
        for f in fields(Analysis)
        if f.name != "findings" and getattr(fast, f.name) != getattr(slow, f.name)
    ]
    assert not differing, differing
    assert [without_copies(f) for f in fast.findings] == [without_copies(f) for f in slow.findings]
    skipped = skipped_lines(fast_scan)
    for quick, full in zip(fast.findings, slow.findings, strict=True):
        assert set(quick.related_lines) <= set(full.related_lines)
        reasons = {c.line: c.why_not for c in full.considered}
        for considered in quick.considered:
            assert considered.line not in skipped
            assert reasons.get(considered.line, considered.why_not) == considered.why_not
    kept = [(c.event, c.tier) for c in slow_scan.events if c.event.line not in skipped]
    assert [(c.event, c.tier) for c in fast_scan.events] == kept
    assert set(fast_scan.consumed) == set(slow_scan.consumed)
    assert set(fast_scan.exception_lines) == set(slow_scan.exception_lines)
    assert [tb.header_line for tb in fast_scan.tracebacks] == [
        tb.header_line for tb in slow_scan.tracebacks if tb.header_line not in skipped
    ]
    return fast_scan


ENDINGS = ["none", "death", "pid", "source", "marker", "line-more", "colour"]


@SOME
@given(
    seed=st.integers(0, 2**32),
    copies=st.integers(1, 9),
    ending=st.sampled_from(ENDINGS),
    writer=st.sampled_from(["logged", "raw", "plain"]),
    preamble=st.booleans(),
    chained=st.booleans(),
    as_bytes=st.booleans(),
)
def test_runs_answer_as_every_copy_read(seed, copies, ending, writer, preamble, chained, as_bytes) -> None:
    text = run_log(random.Random(seed), copies, ending, writer, preamble, chained)
    assert_alike(text.encode() if as_bytes else text)


@pytest.mark.parametrize("writer", ["logged", "raw", "plain"])
@pytest.mark.parametrize("preamble", [False, True])
def test_copies_between_the_first_and_the_last_are_skipped(writer: str, preamble: bool) -> None:
    text = run_log(random.Random(3), 7, "death", writer, preamble, chained=False)
    scan = assert_alike(text)
    (run,) = scan.repeats
    assert run.skipped == 5  # (copies 1..5: copy 0 and copy 6 are read)
    assert run.first_line == 1 + run.lines
    assert scan.tracebacks[0].header_line == 1 + preamble
    assert scan.tracebacks[1].header_line == 1 + 6 * run.lines + preamble


@pytest.mark.parametrize("ending", ["pid", "source", "marker", "line-more", "colour"])
def test_a_copy_that_differs_in_more_than_digits_ends_the_run(ending: str) -> None:
    text = run_log(random.Random(5), 6, ending, "logged", True, False)
    scan = assert_alike(text)
    first, *later = scan.repeats
    assert first.skipped == 4  # (copies 1..4; copy 5 read, then the differing one)
    headers = [tb.header_line for tb in scan.tracebacks]
    differing = 1 + 6 * first.lines + 1  # (its header, under its preamble)
    assert differing in headers
    # The two copies after it make a run of two, with no copy between them to skip.
    assert [run.skipped for run in later] in ([], [0])


def test_a_copy_with_a_digit_marker_literal_is_never_skipped() -> None:
    """A marker literal with a digit (`ERR9999`-like) may appear where another copy has other
    digits: a first copy whose digits could spell one is not a run's."""
    literals = repeats.MarkerLiterals(["EZ9", "CUDA error"])
    assert literals.held_by("ValueError: EZ1234 happened")
    assert literals.held_by("ValueError: EZ7 happened")  # (another copy may read EZ9)
    assert not literals.held_by("ValueError: EZ happened")
    assert not literals.held_by("ValueError: E9 happened")


def test_digits_collapse_to_one_per_run() -> None:
    assert collapse_digits("line 1234, in f; 7 of 99") == "line 0, in f; 0 of 0"
    assert collapse_digits(b"pid=1 x=00000000000000000001") == b"pid=0 x=0"
    assert collapse_digits("no digits") == "no digits"


@SOME
@given(seed=st.integers(0, 2**32), copies=st.integers(2, 8), cuts=st.lists(st.floats(0, 1), max_size=5))
def test_a_growing_run_answers_as_a_fresh_analysis(seed: int, copies: int, cuts: list[float]) -> None:
    rng = random.Random(seed)
    text = run_log(rng, copies, rng.choice(["none", "death"]), "logged", rng.random() < 0.5, False)
    analyzer, previous = Analyzer(CATALOG), None
    for cut in [*sorted(int(c * len(text)) for c in cuts), len(text)]:
        piece = text[:cut]
        grown = analyzer.analyze(piece, line_table=True, grown_from=previous)
        whole = Analyzer(CATALOG)
        assert grown == whole.analyze(piece, line_table=True), f"cut at {cut}"
        assert [(r.first_line, r.skipped) for r in analyzer._scan.repeats] == [  # type: ignore[union-attr]
            (r.first_line, r.skipped)
            for r in whole._scan.repeats  # type: ignore[union-attr]
        ]
        previous = piece


def test_a_run_grown_copy_by_copy_stays_one_run() -> None:
    """An editor tailing a log that fails every request: each append adds a copy; the run goes
    on from where the last scan left it (not a new run at each append)."""
    rng = random.Random(11)
    copies = [request_error(rng, LOGGED.format(pid=100, src=245, ts="{ts}"), True, False) for _ in range(12)]
    head = "(APIServer pid=100) INFO 10-03 21:00:00 [api_server.py:1805] vLLM API server version 0.11.0\n"
    analyzer, previous = Analyzer(CATALOG), None
    text = head
    for copy in copies:
        text += "\n".join(copy) + "\n"
        analyzer.analyze(text, line_table=True, grown_from=previous)
        previous = text
    scan = analyzer._scan
    assert scan is not None and len(scan.repeats) == 1 and scan.repeats[0].skipped == 10
    assert Analyzer(CATALOG).analyze(text, line_table=True) == analyzer.analyze(text, line_table=True)


def test_the_benchmark_log_of_request_errors_is_one_run(tmp_path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from make_log import make_log

    path = tmp_path / "all-error.log"
    info = make_log(path, shape="all-error", megabytes=0.3)
    scan = assert_alike(path.read_bytes())
    assert sum(run.skipped for run in scan.repeats) == info.tracebacks - 2
    assert len(scan_lines(LogIndex(path.read_bytes()), CATALOG).tracebacks) < 10


@SOME
@given(
    lines=st.lists(st.text(alphabet="ab\r", max_size=3000), max_size=12),
    start=st.integers(0, 40),
    count=st.integers(0, 14),
    as_bytes=st.booleans(),
)
def test_the_end_of_lines_is_where_finding_each_break_ends(lines, start, count, as_bytes) -> None:
    """`_end_of_lines` splits blocks of text in C: where a `find` per line would end, blocks of
    any size (lines longer than the first block too), texts ending without a break."""
    text = "\n".join(lines)
    start = min(start, len(text))
    expected = start
    for _ in range(count):
        found = text.find("\n", expected)
        expected = found + 1 if found >= 0 else -1
        if expected < 0:
            break
    data = text.encode() if as_bytes else text
    newline = b"\n" if as_bytes else "\n"
    at = len(text[:start].encode()) if as_bytes else start
    got = repeats._end_of_lines(data, newline, at, count)
    assert got == (len(text[:expected].encode()) if as_bytes and expected >= 0 else expected)


# -- real tracebacks, repeated where they stand -----------------------------------------------------


def _corpus_logs() -> list[Path]:
    from support import CRASH, CRASH2, CRASH3, HEALTHY, crash_labels

    folders = (CRASH, CRASH2, CRASH3)
    return [f / label["file"] for f in folders for label in crash_labels(f)] + sorted(HEALTHY.glob("*.log"))


def _message_part(line: str) -> int:
    """Where a line's message starts, about (after a logger header, else after 60 characters):
    the digits after it are a request's own; those before, the writer's and its time."""
    at = line.find("] ", 0, 120)
    return at + 2 if at >= 0 else min(len(line), 60)


def repeated_in_place(text: str, rng: random.Random) -> str | None:
    """`text` with one of its tracebacks (and the line above it, sometimes) printed again 2-6
    times right after it, the numbers in the copies' messages drawn anew (their widths too)."""
    folds = Analyzer(CATALOG).analyze(text).folds
    if not folds:
        return None
    lines = text.split("\n")
    first, last = rng.choice(folds)
    block = lines[max(0, first - rng.choice([0, 0, 1])) : last + 1]

    def renumbered(line: str) -> str:
        if rng.random() < 0.5:
            return line
        at = _message_part(line)
        return line[:at] + re.sub(
            r"[0-9]+", lambda _: str(rng.randint(0, 10 ** rng.randint(1, 4))), line[at:]
        )

    copies = [renumbered(line) for _ in range(rng.randint(2, 6)) for line in block]
    return "\n".join(lines[: last + 1] + copies + lines[last + 1 :])


@pytest.mark.parametrize("seed", range(3))
def test_corpus_tracebacks_repeated_in_place_answer_as_every_copy_read(seed: int) -> None:
    """Every labelled and healthy corpus log, one of its real tracebacks repeated where it stands
    (before a death, inside a restart, in a healthy run): the same analysis whether the copies
    are skipped or read; and copies were skipped in some of them (the test compares something)."""
    skipped = 0
    for path in _corpus_logs():
        text = repeated_in_place(read_log_text(path), random.Random(f"{seed}:{path.name}"))
        if text is not None:
            skipped += sum(run.skipped for run in assert_alike(text).repeats)
    assert skipped > 0


def read_log_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def test_tracebacks_a_process_died_of_are_never_skipped() -> None:
    """A raw traceback from an entry-point frame is a process's death (an incident's symptom of
    its own): copies of it are each read, never counted."""
    rows = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/runpy.py", line {n}, in _run_module_as_main',
        '  File "/app/serve.py", line {n}, in <module>',
        "    main()",
        "RuntimeError: worker {n} lost its device",
    ]
    text = "".join(
        "\n".join(f"(EngineCore pid=7) {row}".format(n=10 + i) for row in rows) + "\n" for i in range(5)
    )
    scan = assert_alike(text)
    assert not any(run.skipped for run in scan.repeats)
    assert len(scan.tracebacks) == 5


@pytest.mark.parametrize("seed", range(2))
def test_corpus_tracebacks_repeated_in_place_grow_as_fresh_analyses(seed: int) -> None:
    """The same texts, read as an editor tailing them reads them (cut anywhere, each piece an
    append to the one before): every grown analysis equals a fresh one."""
    grown_runs = 0
    for path in _corpus_logs():
        rng = random.Random(f"grow{seed}:{path.name}")
        text = repeated_in_place(read_log_text(path), rng)
        if text is None:
            continue
        analyzer, previous = Analyzer(CATALOG), None
        for cut in [*sorted(rng.randrange(len(text)) for _ in range(3)), len(text)]:
            piece = text[:cut]
            grown = analyzer.analyze(piece, line_table=True, grown_from=previous)
            assert grown == Analyzer(CATALOG).analyze(piece, line_table=True), (path.name, cut)
            previous = piece
        grown_runs += any(run.skipped for run in analyzer._scan.repeats)  # type: ignore[union-attr]
    assert grown_runs > 0
