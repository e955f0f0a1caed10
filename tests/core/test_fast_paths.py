"""The fast paths read exactly what the plain ones read (speed must never change an answer).

- `LineWindow` with a literal yields the lines of the plain window that hold the literal (or,
  with an ESC, hold it once their colour codes are removed), with the same numbers, over `str`, `bytes` and a memory map, whatever the line breaks
  and however the search blocks fall;
- a traceback read by jumping to its writer's lines equals the one read line by line, on every
  traceback of the corpus and on interleaved variants;
- "still open" means the reading reached the end of the text, not the line cap.
"""

from __future__ import annotations

import mmap
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import CRASH, FORMATS, crash_labels, healthy_logs, read_log, traceback_headers
from vllm_log_lsp.core import text as text_mod
from vllm_log_lsp.core import tracebacks
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.text import LineWindow, LogIndex, strip_ansi
from vllm_log_lsp.core.tracebacks import TRACEBACK_HEADER, read_traceback, writer_literals

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PIECES = ["lit", "li", "t", "x", "\n", "\r\n", "\r", "\x1b[0m", "模", " ", "[1m(", "\x00"]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


def holds(text: str, literals: tuple[str, ...]) -> bool:
    """The window's test of a line: its text holds every literal, or (a colour code may split
    one) its text without colour codes does."""
    return all(lit in text for lit in literals) or (
        "\x1b" in text and all(lit in strip_ansi(text)[0] for lit in literals)
    )


def plain_window(index: LogIndex, start: int, line: int, limit: int) -> tuple[list, bool]:
    window = index.window(start, line, limit)
    return list(window), window.reached_end


def as_indexes(text: str, tmp_path_factory) -> list[LogIndex]:
    data = text.encode("utf-8")
    indexes = [LogIndex(text), LogIndex(data)]
    if data:
        path = tmp_path_factory.mktemp("mm") / "log"
        path.write_bytes(data)
        with open(path, "rb") as handle:
            indexes.append(LogIndex(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)))
    return indexes


@FAST
@given(
    text=texts,
    first_line=st.integers(0, 30),
    limit=st.integers(0, 12),
    block=st.sampled_from([1, 2, 3, 7, 1 << 16]),
    near=st.sampled_from([0, 1, 4, 1 << 16]),
)
def test_literal_window_is_the_plain_window_filtered(
    text: str, first_line: int, limit: int, block: int, near: int, tmp_path_factory
) -> None:
    for index in as_indexes(text, tmp_path_factory):
        first_line = min(first_line, index.line_count - 1)
        start = index.line_start(first_line)
        every, ended = plain_window(index, start, first_line, limit)
        wanted = [(n, t) for n, t in every if holds(t, ("lit",))]
        window = LineWindow(index, start, first_line, limit, ("lit",))
        window._FIRST_BLOCK, window._NEAR = block, near  # (blocks and lookups fall anywhere)
        got = list(window)
        assert got == wanted  # only lines that may hold the literal are read
        assert window.reached_end == ended
        both = LineWindow(index, start, first_line, limit, ("li", "x"))
        assert list(both) == [(n, t) for n, t in every if holds(t, ("li", "x"))]


# Whole lines, most holding the literals (a writer's lines in a row: the window reads them as one
# block while they do, `LineWindow._run`), each ended by one break of a log's kind: all `\n`,
# all `\r\n`, or mixed with a progress bar's bare `\r` (the run hands those back).
LINES = [
    "lit x",
    "lit",
    "li t",
    "x lit 模",
    "other",
    "",
    "lit\x1b[0m",
    "\x1b[1m",
    "litx" * 40,
    "l\x1b[0mit x",
    "\x1b[1mother",
]
BREAKS = st.sampled_from([["\n"], ["\r\n"], ["\n", "\r\n", "\r"], ["\n", "\r"]])
line_texts = BREAKS.flatmap(
    lambda breaks: st.lists(st.tuples(st.sampled_from(LINES), st.sampled_from(breaks)), max_size=40)
).map(lambda lines: "".join(line + brk for line, brk in lines)) | st.builds(
    lambda text, cut: text[:-cut] if cut else text, st.just("lit\r\nlit\r\nlit\r"), st.integers(0, 1)
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=line_texts,
    first_line=st.integers(0, 4),
    limit=st.sampled_from([0, 1, 2, 3, 5, 8, 40]),
    block=st.sampled_from([1, 7, 1 << 16]),
    run_block=st.sampled_from([1, 2, 9, 30, 1 << 10]),
    near=st.sampled_from([0, 4, 1 << 16]),
)
def test_a_window_reading_runs_of_lines_is_the_plain_window_filtered(
    text: str, first_line: int, limit: int, block: int, run_block: int, near: int, tmp_path_factory
) -> None:
    for index in as_indexes(text, tmp_path_factory):
        first_line = min(first_line, index.line_count - 1)
        start = index.line_start(first_line)
        every, ended = plain_window(index, start, first_line, limit)
        for literals in (("lit",), ("lit", "x")):
            window = LineWindow(index, start, first_line, limit, literals)
            window._FIRST_BLOCK, window._NEAR = block, near
            window._RUN_BLOCK = window._MAX_RUN_BLOCK = run_block
            got = []
            for number, line in window:
                got.append((number, line))
                assert window.at_last_line == (number == index.line_count - 1)
            wanted = [(n, t) for n, t in every if holds(t, literals)]
            assert got == wanted
            assert window.reached_end == ended


@FAST
@given(texts, st.integers(0, 12))
def test_plain_window_ends_where_the_text_ends(text: str, limit: int) -> None:
    index = LogIndex(text)
    lines, ended = plain_window(index, 0, 0, limit)
    count = index.line_count
    assert [n for n, _ in lines] == list(range(min(limit, count)))
    assert ended == (limit > 0 and count <= limit)


def read_both_ways(text: str, monkeypatch) -> None:
    index = LogIndex(text)
    for start, number in traceback_headers(text):
        first = parse_line(number, index.line_at(start))
        fast = read_traceback(index, start, first)
        with monkeypatch.context() as patch:
            patch.setattr(tracebacks, "writer_literals", lambda line: ())
            slow = read_traceback(index, start, first)
        assert fast == slow


CORPUS = [read_log(CRASH / label["file"]) for label in crash_labels()]
CORPUS += [read_log(path) for path in healthy_logs()] + [read_log(p) for p in sorted(FORMATS.glob("*.log"))]


@pytest.mark.parametrize("text", CORPUS, ids=lambda t: str(len(t)))
def test_tracebacks_read_by_writer_jumps_equal_line_by_line(text: str, monkeypatch) -> None:
    read_both_ways(text, monkeypatch)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.sampled_from(CORPUS), seed=st.integers(0, 2**32))
def test_shuffled_and_coloured_variants_read_alike(text: str, seed: int, monkeypatch) -> None:
    """Interleavings the corpus lacks: lines moved around, colour codes inside prefixes."""
    rng = random.Random(seed)
    lines = text.split("\n")
    for _ in range(len(lines) // 4):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    if rng.random() < 0.5:
        lines = [ln.replace(" pid=", " \x1b[1mpid=", 1) if rng.random() < 0.3 else ln for ln in lines]
    if rng.random() < 0.5:  # codes that lost their ESC around the process prefix
        lines = [
            ln.replace(")", ")[0;0m", 1).replace("(", "[0;36m(", 1) if rng.random() < 0.3 else ln
            for ln in lines
        ]
    read_both_ways("\n".join(lines), monkeypatch)


def test_the_writer_literal_is_in_every_line_of_the_writer() -> None:
    cases = [
        "(Worker_TP1 pid=302) ERROR 10-03 21:22:46 [multiproc_executor.py:671] Traceback (most recent call last):",
        "(EngineCore_DP0 pid=200) Traceback (most recent call last):",
        "(VllmWorker rank=1 pid=2) Traceback (most recent call last):",
        "qwen3-vl-32b  | Traceback (most recent call last):",
        "[rank0]: Traceback (most recent call last):",
        "(RayWorkerWrapper pid=007, ip=10.0.0.1) Traceback (most recent call last):",
        "(pid=12, ip=10.0.0.1) Traceback (most recent call last):",
    ]
    for raw in cases:
        line = parse_line(0, raw)
        literals = writer_literals(line)
        assert literals and all(literal in raw for literal in literals)
    assert writer_literals(parse_line(0, "Traceback (most recent call last):")) == ()
    assert writer_literals(parse_line(0, "(EngineCore_DP0 pid=07) Traceback (most recent call last):")) == (
        "EngineCore_DP0 pid=07",
    )


def test_open_only_when_the_reading_reached_the_end(monkeypatch) -> None:
    monkeypatch.setattr(tracebacks, "_MAX_LINES", 5)
    header = "(EngineCore pid=1) Traceback (most recent call last):"
    frame = '(EngineCore pid=1)   File "x.py", line 1, in f'
    other = "(APIServer pid=2) INFO 10-03 21:22:46 [loggers.py:1] stats"
    for body, is_open in (([frame], True), ([other] * 10, False), ([frame, *[other] * 10], False)):
        text = "\n".join([header, *body])
        index = LogIndex(text)
        tb = read_traceback(index, 0, parse_line(0, header))
        assert tb.open is is_open, body


def test_escape_is_looked_up_once() -> None:
    assert LogIndex("a\x1b[0mb").has_escape
    assert not LogIndex(b"plain\n").has_escape
    assert text_mod.ESCAPE == "\x1b"


@FAST
@given(texts, st.sampled_from([1, 2, 5, 1 << 20]))
def test_line_table_built_in_chunks_is_exact(text: str, chunk: int) -> None:
    """The table is built a chunk at a time (bounded memory); chunks end anywhere."""
    for source in (text, text.encode("utf-8")):
        index = LogIndex(source)
        index._BUILD_CHUNK = chunk
        breaks = "\r\n|\r|\n" if isinstance(source, str) else b"\r\n|\r|\n"
        expected = [0] + [m.end() for m in re.finditer(breaks, source)]
        assert list(index._build()) == expected


@FAST
@given(texts, texts)
def test_a_grown_index_knows_what_the_old_text_held(old: str, appended: str) -> None:
    previous = LogIndex.following(old, None)
    assert previous.has_escape == ("\x1b" in old)
    grown = LogIndex.following(old + appended, previous)
    fresh = LogIndex(old + appended)
    assert (grown.has_cr, grown.has_escape) == (fresh.has_cr, fresh.has_escape)
    assert list(grown._build()) == list(fresh._build())


def test_a_traceback_ended_by_the_last_line_stays_open() -> None:
    """The last line of a growing log may be cut: what it ended may continue once it is whole."""
    header = "(EngineCore pid=1) ERROR 10-03 21:22:46 [core.py:7] Traceback (most recent call last):"
    body = [
        '(EngineCore pid=1) ERROR 10-03 21:22:46 [core.py:7]   File "x.py", line 1, in f',
        "(EngineCore pid=1) ERROR 10-03 21:22:46 [core.py:7] ValueError: bad",
    ]
    cut = "(EngineCore pid=1) ERROR 10-03 21:22:46 [core.py:7] The above exc"
    for last, is_open in ((cut, True), (f"{cut}\n(EngineCore pid=1) INFO 10-03 [x.py:1] later", False)):
        text = "\n".join([header, *body, last])
        tb = read_traceback(LogIndex(text), 0, parse_line(0, header))
        assert tb.open is is_open


@pytest.mark.parametrize("name", ["007.log", "011.log", "032.log"])
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_growing_in_parts_equals_the_whole(name: str, ending: str) -> None:
    from vllm_log_lsp.core.analyze import Analyzer, analyze

    text = read_log(CRASH / name).replace("\n", ending)
    analyzer = Analyzer()
    for parts in (3, 5, 8):
        step = max(1, len(text) // parts)
        for end in range(step, len(text) + step, step):
            grown = analyzer.analyze(text[: min(end, len(text))])
        assert grown.findings == analyze(text).findings


@pytest.mark.parametrize("name", ["007.log", "032.log"])
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_the_analyzer_keeps_one_line_table_of_a_growing_log(name: str, ending: str) -> None:
    """With `line_table`, the analyzer's own index (the one the language server publishes) has
    the whole text's line table after every step, extended from the last one, and the analysis
    is the one of the whole text."""
    from vllm_log_lsp.core.analyze import Analyzer, analyze

    text = read_log(CRASH / name).replace("\n", ending)
    analyzer = Analyzer()
    step = max(1, len(text) // 4)
    for end in range(step, len(text) + step, step):
        part = text[: min(end, len(text))]
        analysis = analyzer.analyze(part, line_table=True)
        index = analyzer.index
        assert index is not None and index.text is part and index.has_line_table
        assert list(index._build()) == list(LogIndex.following(part, None)._build())
        assert analyzer.document is None  # a plain log has no transcript
    assert analysis.findings == analyze(text).findings


@FAST
@given(texts, st.lists(st.integers(-2, 40), max_size=6), st.sampled_from([0, 1, 3, 256]))
def test_line_start_near_a_known_line_equals_the_table(text: str, lines: list[int], walk: int) -> None:
    for source in (text, text.encode("utf-8")):
        table = LogIndex(source)
        table._build()
        index = LogIndex(source)
        index._WALK = walk
        for line in lines:
            index.line_of(table.line_start(min(max(line, 0), table.line_count - 1)))  # a known line
            assert index.line_start(line) == table.line_start(line)
            assert index.line_start(line + 2) == table.line_start(line + 2)


# -- an exception's copies among the scan's events (classify) ---------------------------------------
def _event(line: int, message: str):
    from vllm_log_lsp.core.model import ExceptionEvent, Span
    from vllm_log_lsp.core.scan import Candidate

    return Candidate(ExceptionEvent(line, Span(line, 0, 1), "RuntimeError", message, ""), tier=0)


@FAST
@given(
    st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["a", "ab", "", "a\nb", "é"])), max_size=12),
    st.integers(0, 30),
    st.integers(0, 12),
    st.integers(0, 31),
)
def test_copies_are_the_runs_events_of_the_same_message(
    found: list[tuple[int, str]], root: int, run_start: int, run_end: int
) -> None:
    """The copies of a root's exception are exactly the other events of its run (lines
    [start, end)) with its message, in line order (another run's are another death's), and
    follow events added to the scan."""
    from vllm_log_lsp.core.classify import _copies
    from vllm_log_lsp.core.scan import Scan

    scan = Scan(events=[_event(line, m) for line, m in found])
    run = (run_start, run_end)
    for _ in range(2):
        for cand in scan.events:
            event = cand.event
            want = [
                c.event.line
                for c in sorted(scan.events, key=lambda c: c.event.line)
                if run_start <= c.event.line < run_end
                and c.event.message == event.message
                and c.event.line != event.line
            ]
            assert _copies(scan, event, run) == (want[:20] if event.message else [])
        scan.events.append(_event(root, "a"))


# -- the phase a traceback's frames tell (phase._phase_of_frames, remembered per frame) -------------
FRAME_POOL = [
    "vllm/v1/worker/gpu_model_runner.py:_dummy_sampler_run",
    "vllm/v1/worker/gpu_model_runner.py:capture_model",
    "torch/cuda/graphs.py:__exit__",
    "vllm/v1/worker/gpu_worker.py:determine_available_memory",
    "vllm/v1/worker/gpu_model_runner.py:profile_run",
    "vllm/model_executor/model_loader/default_loader.py:load_weights",
    "vllm/v1/worker/gpu_worker.py:init_device",
    "vllm/v1/engine/core.py:step",
    "vllm/v1/engine/core.py:run_busy_loop",
    "vllm/v1/worker/gpu_model_runner.py:execute_model",
    "vllm/v1/worker/gpu_model_runner.py:execute_model_inner",
    "torch/nn/modules/module.py:_call_impl",
    "x.py:",
    "",
]


def _phase_by_every_marker(catalog, frames: list[str]) -> str | None:
    """phase_for's frame rule read plainly: innermost frame first, serving only when no other
    marker matches any frame."""
    markers = sorted(catalog.markers_of("phase_frame"), key=lambda m: m.phase == "serving")
    for serving in (False, True):
        for frame in reversed(frames):
            for marker in markers:
                if (marker.phase == "serving") == serving and marker.pattern.search(frame):
                    return marker.phase
    return None


@FAST
@given(st.lists(st.sampled_from(FRAME_POOL), max_size=12))
def test_remembered_frame_phases_equal_every_marker_tried(frames: list[str]) -> None:
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.phase import _phase_of_frames

    catalog = builtin_catalog()
    expected = _phase_by_every_marker(catalog, frames)
    for _ in range(2):  # the second time from what the catalog remembered
        assert _phase_of_frames(catalog, frames) == expected


def test_scanned_lines_taken_from_a_traceback_reading_equal_a_fresh_parse() -> None:
    """The scan reuses the lines a traceback's reading parsed: each equals parsing its text."""
    from support import CRASH2, CRASH3
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.scan import MAX_LINE, scan_lines

    catalog = builtin_catalog()
    logs = [folder / label["file"] for folder in (CRASH, CRASH2, CRASH3) for label in crash_labels(folder)]
    for path in logs:
        data = path.read_bytes()
        for index in (LogIndex(data), LogIndex(data.decode("utf-8", "replace"))):
            scan = scan_lines(index, catalog)
            for number, line in scan.lines.items():
                start = scan.offsets[number]
                raw = index.slice(start, min(index.line_end_at(start), start + MAX_LINE))
                assert line == parse_line(number, raw), (path.name, number)


@pytest.mark.parametrize("text", CORPUS, ids=lambda t: str(len(t)))
def test_a_traceback_read_with_the_scans_lines_equals_one_read_alone(text: str) -> None:
    """The lines before a header are taken from the scan's when their text is the same."""
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.scan import scan_lines

    index = LogIndex(text)
    scan = scan_lines(index, builtin_catalog())
    for start, number in traceback_headers(text):
        first = parse_line(number, index.line_at(start))
        assert read_traceback(index, start, first, known=scan.lines) == read_traceback(index, start, first)


def test_a_known_line_cut_short_is_parsed_again_whole() -> None:
    """The scan keeps only the first MAX_LINE characters of a long line: the reading before a
    header must see it whole (its text differs, so it is parsed again)."""
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.scan import MAX_LINE, scan_lines

    long = "(P pid=1) ERROR 01-02 03:04:05 [x.py:1] Error " + "y" * MAX_LINE + " tail"
    text = f"{long}\n(P pid=1) ERROR 01-02 03:04:05 [x.py:1] {TRACEBACK_HEADER}\n"
    text += '(P pid=1) ERROR 01-02 03:04:05 [x.py:1]   File "a.py", line 1, in f\n'
    text += "(P pid=1) ERROR 01-02 03:04:05 [x.py:1] ValueError: bad\n"
    index = LogIndex(text)
    scan = scan_lines(index, builtin_catalog())
    assert scan.lines[0].text != long  # cut by the scan
    tb = read_traceback(index, index.line_start(1), scan.lines[1], known=scan.lines)
    assert tb.preamble_record is not None and tb.preamble_record.text == long
    assert scan.tracebacks[0].preamble == tb.preamble
    assert tb.preamble.endswith(" tail")


@FAST
@given(texts)
def test_the_start_of_the_line_holding_each_offset(text: str) -> None:
    """After the last `\\n` or `\\r` before it (a `\\r` of a `\\r\\n` is a break before its `\\n`):
    found by searching back for a `\\r` only to that `\\n` (a log's last `\\r` may be far)."""
    for data in (text, text.encode("utf-8")):
        index = LogIndex(data)
        for offset in range(len(data) + 1):
            breaks = [at for at in range(offset) if data[at : at + 1] in ("\n", "\r", b"\n", b"\r")]
            assert index.line_start_at(offset) == (breaks[-1] + 1 if breaks else 0), (data, offset)


# Colour codes of every kind `strip_ansi` removes, and text around them.
COLOUR_PIECES = [
    "\x1b[1;36m", "\x1b[0;0m", "\x1b[K", "\x1b(B", "\x1b[?25l", "\x1b", "\x1b[", "[0;36m", "[1;31m", "[",
    "(EngineCore pid=1)", "(", ")", ")[", "m(", "m", " INFO ", "x", "\x00", "\x00\x00",
    "^[[0m", "^[", "\\u001b[31m", "\\x1B[0m", "\\033[1m", "\\e[0m", "\u241b[2m", "\\",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(COLOUR_PIECES), max_size=16).map("".join))
def test_colour_codes_are_removed_as_the_whole_pattern_removes_them(line: str) -> None:
    clean, columns = strip_ansi(line)
    if not text_mod.may_hold_colour(line):
        assert (clean, columns) == (line, None)
        return
    removed = list(text_mod._ANSI.finditer(line))
    assert clean == text_mod._ANSI.sub("", line)
    # Each clean column maps past every code removed before it (or at it) in the line.
    gone, at = [], 0
    for match in removed:
        at += match.end() - match.start()
        gone.append((match.start() - (at - (match.end() - match.start())), at))
    for column in range(len(clean) + 1):
        before = [total for where, total in gone if where <= column]
        expected = column + (before[-1] if before else 0)
        assert (columns[column] if columns is not None else column) == expected
