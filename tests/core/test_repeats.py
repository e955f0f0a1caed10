"""A traceback repeated back to back is read once, its copies counted (`core.repeats`).

Skipping copies must never change an answer, so each test compares with the scan that reads
every copy (`repeats.SKIP_REPEATS` off):
- the findings (but the candidates they name: a skipped copy is none), folds, runs and health of
  a whole analysis are equal, and the scan's events and candidate lines are the reference's but
  those of the skipped copies, with the same lines consumed: on real tracebacks of the corpus repeated where
  they stand (their messages' numbers drawn anew), on generated
  runs of logged and raw tracebacks (with and without the writer's line above the header,
  chained ones, numbers of other widths in every copy), followed by a death, by nothing, by a
  copy of another pid, of another logger source, with a marker, with a line more; as text and
  as bytes;
- copies with a few lines of others between them (a request's access-log line, another
  logger's record; one to three lines), the same but for their digits, are a run; a line
  between them that the scan would read (a literal) or too many lines between them make none;
- a copy that differs in anything but its digits (another writer, a marker literal, a line
  more, a colour code, another line between) ends the run there: the copies after it are read;
  a traceback a process died of is never skipped;
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

from support import skipped_copy_lines
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


def one_request_error(rng: random.Random, prefix: str, preamble: bool, chained: bool) -> list[str]:
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


# Lines of others between two copies, each drawn with its own numbers ({n}), by name.
ACCESS = (
    '(APIServer pid=100) INFO:     10.0.{n}.{n}:{n} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request'
)
TRUNCATED = "(APIServer pid=100) WARNING 10-03 21:{n}:{n} [hf.py:{n}] The prompt of request cmpl-{n} was cut to {n} tokens"
FINISHED = "(APIServer pid=100) INFO 10-03 21:{n}:{n} [logger.py:{n}] Finished request cmpl-{n}."
GAPS = {
    "none": [],
    "access": [ACCESS],
    "logger": [TRUNCATED],
    "two": [TRUNCATED, ACCESS],
    "three": [TRUNCATED, FINISHED, ACCESS],
    "four": [TRUNCATED, FINISHED, FINISHED, ACCESS],  # (more than a copy may end with)
    "literal": [ACCESS.replace("400 Bad Request", "500 Internal Server Error")],  # ('Error': read)
    "varies": [ACCESS, "varies"],  # (another line each copy: no run)
}


def gap_lines(rng: random.Random, gap: str) -> list[str]:
    lines = []
    for template in GAPS[gap]:
        if template == "varies":
            template = rng.choice([ACCESS, TRUNCATED, FINISHED])
        lines.append(re.sub(r"\{n\}", lambda _: str(rng.randint(0, 10 ** rng.randint(1, 5))), template))
    return lines


def run_log(
    rng: random.Random,
    copies: int,
    ending: str,
    writer: str,
    preamble: bool,
    chained: bool,
    gap: str = "none",
) -> str:
    pid, src = 100, 245
    prefix_of = {"logged": LOGGED, "raw": RAW, "plain": PLAIN_LOGGED}
    prefix = prefix_of[writer].replace("{pid}", str(pid)).replace("{src}", str(src))
    lines = ["(APIServer pid=100) INFO 10-03 21:00:00 [api_server.py:1805] vLLM API server version 0.11.0"]

    def request_error(rng: random.Random, prefix: str, preamble: bool, chained: bool) -> list[str]:
        return [*one_request_error(rng, prefix, preamble, chained), *gap_lines(rng, gap)]

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
        copy = one_request_error(rng, prefix, preamble, chained)
        lines += [*copy[:-1], copy[-2], copy[-1], *gap_lines(rng, gap)]
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
    skipped = skipped_copy_lines(fast_scan)
    for quick, full in zip(fast.findings, slow.findings, strict=True):
        assert set(quick.related_lines) <= set(full.related_lines)
        reasons = {c.line: c.why_not for c in full.considered}
        for considered in quick.considered:
            assert considered.line not in skipped
            assert reasons.get(considered.line, considered.why_not) == considered.why_not
    kept = [(c.event, c.tier) for c in slow_scan.events if c.event.line not in skipped]
    assert [(c.event, c.tier) for c in fast_scan.events] == kept
    assert set(fast_scan.lines) == set(slow_scan.lines) - skipped  # (the first copy's lines all read)
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
    gap=st.sampled_from(list(GAPS)),
)
def test_runs_answer_as_every_copy_read(
    seed, copies, ending, writer, preamble, chained, as_bytes, gap
) -> None:
    text = run_log(random.Random(seed), copies, ending, writer, preamble, chained, gap)
    assert_alike(text.encode() if as_bytes else text)


@pytest.mark.parametrize("gap", ["access", "logger", "two", "three"])
@pytest.mark.parametrize("writer", ["logged", "raw"])
def test_copies_with_lines_of_others_between_them_are_a_run(gap: str, writer: str) -> None:
    """A server that answers each failed request: its traceback, then the access-log line (and
    another logger's record): each copy ends with those lines."""
    text = run_log(random.Random(4), 7, "death", writer, True, chained=False, gap=gap)
    scan = assert_alike(text)
    (run,) = scan.repeats
    own = len(one_request_error(random.Random(0), "", True, False))
    assert (run.skipped, run.lines) == (5, own + len(GAPS[gap]))
    assert scan.tracebacks[1].header_line == 1 + 6 * run.lines + 1


@pytest.mark.parametrize("gap", ["four", "literal", "varies"])
def test_lines_between_copies_that_the_scan_reads_or_that_differ_make_no_run(gap: str) -> None:
    text = run_log(random.Random(4), 7, "death", "logged", True, chained=False, gap=gap)
    scan = assert_alike(text)
    assert not any(run.skipped for run in scan.repeats)
    assert len(scan.tracebacks) >= 7


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
@given(
    seed=st.integers(0, 2**32),
    copies=st.integers(2, 8),
    cuts=st.lists(st.floats(0, 1), max_size=5),
    gap=st.sampled_from(["none", "access", "three", "four"]),
)
def test_a_growing_run_answers_as_a_fresh_analysis(
    seed: int, copies: int, cuts: list[float], gap: str
) -> None:
    rng = random.Random(seed)
    text = run_log(rng, copies, rng.choice(["none", "death"]), "logged", rng.random() < 0.5, False, gap)
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


@pytest.mark.parametrize("gap", ["none", "access", "three"])
def test_a_run_grown_from_a_cut_at_any_line_answers_as_a_fresh_analysis(gap: str) -> None:
    """The old text cut after each line in turn (inside a copy, inside the lines between two),
    then grown to the whole log in one append: the runs and the analysis a fresh one gives."""
    text = run_log(random.Random(8), 6, "death", "logged", True, False, gap)
    whole = Analyzer(CATALOG)
    expected = whole.analyze(text, line_table=True)
    runs = [(r.first_line, r.skipped) for r in whole._scan.repeats]  # type: ignore[union-attr]
    assert runs and runs[0][1] == 4
    cuts = [at + 1 for at, char in enumerate(text) if char == "\n"]
    for cut in cuts[:-1]:
        analyzer = Analyzer(CATALOG)
        analyzer.analyze(text[:cut], line_table=True)
        assert analyzer.analyze(text, line_table=True, grown_from=text[:cut]) == expected, cut
        assert [(r.first_line, r.skipped) for r in analyzer._scan.repeats] == runs, cut  # type: ignore[union-attr]


@pytest.mark.parametrize("gap", ["none", "access", "three"])
def test_a_run_grown_copy_by_copy_stays_one_run(gap: str) -> None:
    """An editor tailing a log that fails every request: each append adds a copy; the run goes
    on from where the last scan left it (not a new run at each append)."""
    rng = random.Random(11)
    copies = [
        one_request_error(rng, LOGGED.format(pid=100, src=245, ts="{ts}"), True, False) + gap_lines(rng, gap)
        for _ in range(12)
    ]
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


@pytest.mark.parametrize("shape", ["all-error", "request-errors"])
def test_the_benchmark_log_of_request_errors_is_one_run(shape: str, tmp_path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from make_log import make_log

    path = tmp_path / f"{shape}.log"
    info = make_log(path, shape=shape, megabytes=0.3)
    scan = assert_alike(path.read_bytes())
    (run,) = scan.repeats
    # (The first and last copies are read; the log may end inside a request, whose part is read.)
    assert info.tracebacks - 3 <= run.skipped <= info.tracebacks - 2
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
    """`text` with one of its tracebacks (and the line above it, sometimes; and the lines after
    it, up to three, sometimes: whatever the log printed there) printed again 2-6 times right
    after it, the numbers in the copies' messages drawn anew (their widths too)."""
    folds = Analyzer(CATALOG).analyze(text).folds
    if not folds:
        return None
    lines = text.split("\n")
    first, last = rng.choice(folds)
    last = min(len(lines) - 2, last + rng.choice([0, 0, 1, 2, 3]))
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
