"""A log analysed as it grows gives exactly what a fresh analysis of the whole text gives.

The language server analyses a tailed log after every append with one `Analyzer`, which keeps the
scan, the line table and the per-incident work of the text it saw; the editor tells it when the
new text only appends (`grown_from`). Whatever it reuses, every part of the result (findings,
runs, folds, health, warnings) must equal a fresh analysis. The cuts fall anywhere, and on
purpose where reuse is delicate: inside a traceback, just after a death, around a restart, inside
a `\\r\\n`.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from json_twins import json_twin
from mutations import interleave
from support import CRASH, CRASH2, CRASH3, HEALTHY, crash_labels, read_log
from vllm_log_lsp.core.analyze import Analyzer
from vllm_log_lsp.core.jsonlog import SNIFF_CHARS, TranscriptLines
from vllm_log_lsp.core.model import Analysis
from vllm_log_lsp.core.records import fields
from vllm_log_lsp.core.text import GrowingText, LogIndex
from vllm_log_lsp.core.wraps import WrappedLines

LOGS = [
    *(CRASH / label["file"] for label in crash_labels()),
    *(CRASH2 / label["file"] for label in crash_labels(CRASH2)),
    *(CRASH3 / label["file"] for label in crash_labels(CRASH3)),
    *sorted(HEALTHY.glob("*.log"))[:6],
]
TEXTS = {path.name: read_log(path) for path in LOGS}
SOME = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fresh(text: str) -> Analysis:
    return Analyzer().analyze(text, line_table=True)


def delicate_cuts(text: str) -> list[int]:
    """Offsets where reusing a previous scan is delicate: a few lines into each traceback, just
    after each root cause and symptom, around each restart (the line before it and its start)."""
    analysis = fresh(text)
    index = LogIndex.following(text, None)
    lines: set[int] = set()
    for first, last in analysis.folds:  # a traceback's lines
        lines.update({first + 1, (first + last) // 2, last})
    for finding in analysis.findings:
        lines.update({finding.line + 1, *(s.line + 1 for s in finding.symptoms)})
    for start in analysis.run_starts:
        lines.update({start - 1, start, start + 1})
    cuts: set[int] = set()
    for line in lines:
        if 0 < line < index.line_count:
            start = index.line_start(line)
            cuts.update({start, start + 3})  # at a line start, and inside the line
    return sorted(c for c in cuts if 0 < c < len(text))


DELICATE = {name: delicate_cuts(text) for name, text in TEXTS.items()}


def same(a: object, b: object) -> bool:
    """Equal values; a transcript's map (a JSON log's, a terminal copy's) compared by what it holds."""
    if isinstance(a, (TranscriptLines, WrappedLines)) and type(a) is type(b):
        return vars(a) == vars(b)
    return a == b


def assert_same(grown: Analysis, whole: Analysis, where: str) -> None:
    differing = [f.name for f in fields(Analysis) if not same(getattr(grown, f.name), getattr(whole, f.name))]
    assert not differing, f"{where}: the grown analysis differs from a fresh one in {differing}"


def grow(text: str, cuts: list[int], told: bool) -> None:
    """Analyse `text` cut at each of `cuts` in turn with one analyzer; each must equal a fresh one.
    `told`: the caller says each text grew from the one before (as the server does)."""
    analyzer, previous = Analyzer(), None
    for cut in [*sorted(set(cuts)), len(text)]:
        piece = text[:cut]
        grown = analyzer.analyze(piece, line_table=True, grown_from=previous if told else None)
        assert_same(grown, fresh(piece), f"cut at {cut} of {len(text)}")
        previous = piece


@SOME
@given(st.sampled_from(sorted(TEXTS)), st.lists(st.floats(0, 1), max_size=5), st.data(), st.booleans())
def test_appends_analyse_as_a_fresh_analysis(name: str, fractions: list[float], data, told: bool) -> None:
    text = TEXTS[name]
    delicate = DELICATE[name]
    picked = data.draw(st.lists(st.sampled_from(delicate), max_size=4)) if delicate else []
    grow(text, [int(f * len(text)) for f in fractions] + picked, told)


def grow_document(text: str, cuts: list[int], exclusive: list[bool]) -> None:
    """As `grow`, but as the language server does it: one `GrowingText` appended to (in place
    when `exclusive`) and analysed after each append. The analysis must equal a fresh one, and
    after an append in place the index that followed it is the one analysed."""
    analyzer = Analyzer()
    document = GrowingText("")
    for i, cut in enumerate([*sorted(set(cuts)), len(text)]):
        in_place = exclusive[i % len(exclusive)] if exclusive else False
        before = analyzer.index
        document.append(text[len(document) : cut], exclusive=in_place)
        grown = analyzer.analyze(document, line_table=True)
        assert_same(grown, fresh(document.text), f"cut at {cut} of {len(text)}")
        if in_place and before is not None and before.text is document.text:
            assert analyzer.index is before  # (it followed the append: nothing counted again)


@SOME
@given(
    st.sampled_from(sorted(TEXTS)),
    st.lists(st.floats(0, 1), max_size=5),
    st.data(),
    st.lists(st.booleans(), max_size=4),
)
def test_a_growing_document_analyses_as_a_fresh_analysis(
    name: str, fractions: list[float], data, exclusive: list[bool]
) -> None:
    text = TEXTS[name]
    delicate = DELICATE[name]
    picked = data.draw(st.lists(st.sampled_from(delicate), max_size=4)) if delicate else []
    grow_document(text, [int(f * len(text)) for f in fractions] + picked, exclusive)


@pytest.mark.parametrize("name", ["125.log", *sorted(TEXTS)[:: max(len(TEXTS) // 6, 1)]])
def test_a_document_grown_from_its_first_lines_follows_its_appends(name: str) -> None:
    """A log opened while its first lines only are written (too few to tell its order or its
    wrapping), appended to in place: each analysis follows the last one's index. (125 grown
    from its first two lines once read them as a paste newest first.)"""
    text = TEXTS[name]
    ends = [at + 1 for at, char in enumerate(text[:4096]) if char == "\n"][:3]
    for lines in range(1, len(ends) + 1):
        grow_document(text, [0, *ends[:lines]], [True])


def test_a_growing_restart_loop_at_every_delicate_cut() -> None:
    """A death followed by a restart, appended to in place at every delicate point in turn."""
    restarts = [n for n, text in TEXTS.items() if len(fresh(text).run_starts) > 1 and fresh(text).findings]
    for name in restarts[:3]:
        grow_document(TEXTS[name], DELICATE[name], [True])
        grow_document(TEXTS[name].replace("\n", "\r\n"), DELICATE[name], [True, False])


@SOME
@given(st.sampled_from(sorted(TEXTS)), st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_appends_with_crlf_cut_between_its_halves(name: str, fractions: list[float]) -> None:
    text = TEXTS[name].replace("\n", "\r\n")
    # Each cut lands between the `\r` and the `\n` of a line break, the worst place for reuse.
    cuts = [text.find("\n", int(f * len(text))) for f in fractions]
    grow(text, [c for c in cuts if c > 0], told=True)


def test_every_delicate_cut_of_a_restart_loop() -> None:
    """A death followed by a restart, cut at every delicate point in turn (not sampled)."""
    restarts = [n for n, text in TEXTS.items() if len(fresh(text).run_starts) > 1 and fresh(text).findings]
    assert restarts, "the corpus has logs where vLLM restarted after a death"
    for name in restarts[:3]:
        grow(TEXTS[name], DELICATE[name], told=True)


def test_a_wrong_hint_is_not_trusted_blindly() -> None:
    """`grown_from` counts only when it is the very text analysed last: an equal copy, or a text
    the new one does not extend, is compared as any other."""
    text = TEXTS[sorted(TEXTS)[0]]
    analyzer = Analyzer()
    first = text[: len(text) // 2]
    analyzer.analyze(first, line_table=True)
    other = "".join(reversed(first))  # not the text analysed last: it is compared, and differs
    replaced = text[len(text) // 3 :]
    assert_same(analyzer.analyze(replaced, line_table=True, grown_from=other), fresh(replaced), "edited")
    assert analyzer.reused_offset == 0


def test_the_format_of_a_grown_log_is_what_its_head_says() -> None:
    """An append past the part of a log that tells plain from JSON keeps the answer without
    sniffing again, as a fresh analysis of the whole would (it reads only that part): JSON
    records appended to a long plain log are read as plain lines, both ways; and a JSON log
    stays one."""
    plain = TEXTS["041.log"]
    head = plain * (SNIFF_CHARS // len(plain) + 1)
    records = json_twin(plain).text
    grow(head + records, [len(head) - 5, len(head) + len(records) // 2], told=True)
    # Within that part, records appended after a plain line make the log a JSON log.
    first = plain[: plain.index("\n") + 1]
    grow(first + records, [len(first), len(first) + len(records) // 2], told=True)
    twin = json_twin(plain).text
    grow(twin, [len(twin) // 3, len(twin) // 2], told=True)
    assert fresh(twin).source_map is not None


def test_a_prefix_learned_from_a_short_text_is_learned_again_as_it_grows() -> None:
    """The log's own outer prefix is learned from its first lines; an analysis of a text with
    fewer lines than those learns from what there is. When the text grows, the prefix is learned
    again, and a different one reads the text anew (the grown analysis equals a fresh one). A
    prefix is learned only from enough lines: here the first lines have none, the rest torch's
    `[rank0]:` (as a crashed offline run prints its traceback)."""
    plain = [f"INFO 10-03 21:00:0{n} [llm_engine.py:1] starting {n}" for n in range(2)]
    frames = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/app/run.py", line 13, in <module>',
        "[rank0]:     llm = LLM(model='m')",
        '[rank0]:   File "/x/vllm/entrypoints/llm.py", line 22, in __init__',
        "[rank0]:     raise RuntimeError('setup failed!')",
        "[rank0]: RuntimeError: setup failed!",
    ]
    text = "\n".join(plain + frames * 6) + "\n"
    cut = len("\n".join(plain + frames)) + 1  # (too few prefixed lines to learn from)
    grow(text, [cut], told=True)
    assert fresh(text).findings


def _interleaved(raw: bool, after: int) -> str:
    """Two writers' tracebacks interleaved: the API server's (a raw `(Name pid=N) ` prefix, or
    a logged `ERROR` one), ended by its process's next line, ends while the engine's, whose
    header comes `after` of its lines, is still being printed, a dozen lines later."""
    api = "(APIServer pid=1) " if raw else "(APIServer pid=1) ERROR 01-31 14:21:03 [serving.py:88] "
    engine = "(EngineCore_DP0 pid=17822) ERROR 01-31 14:21:03 [core.py:946] "
    first = [
        f"{api}Traceback (most recent call last):",
        f'{api}  File "/workspace/vllm/vllm/renderers/mistral.py", line 40, in safe_apply_chat_template',
        f"{api}    raise ValueError(message)",
        f"{api}ValueError: Unexpected role 'tool' after role 'user'",
        f'{api}INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
    ]
    second = [
        f"{engine}Traceback (most recent call last):",
        f'{engine}  File "/workspace/vllm/vllm/v1/engine/core.py", line 701, in run_engine_core',
        f"{engine}    engine_core.run_busy_loop()",
        f'{engine}  File "/workspace/vllm/vllm/v1/engine/core.py", line 728, in run_busy_loop',
        f"{engine}    raise RuntimeError('boom')",
        f"{engine}RuntimeError: boom",
    ]
    # (Requests served meanwhile: the cut falls far enough after the API server's traceback
    # that it is not read again as a possible first copy of a repeat, see `repeats`.)
    served = [f'{api}INFO:     127.0.0.1:4000{n} - "GET /metrics HTTP/1.1" 200 OK' for n in range(12)]
    lines = first[:after] + second[:2] + first[after:] + served + second[2:]
    return "\n".join(["INFO 01-31 14:20:59 [api_server.py:1] vLLM API server version 0.11.0", *lines]) + "\n"


def test_a_traceback_read_past_the_header_of_one_read_again() -> None:
    """A traceback that ended before the cut but read lines after another writer's header (their
    prints interleave) keeps those lines when the other traceback, still open at the cut, is read
    again: they are not read as events of their own (the grown analysis named the API server's
    exception twice: once from the traceback kept, once read again as a line of its own). Cut at
    every line start and one character into every line."""
    for raw in (True, False):
        for after in (1, 2, 3, 4):
            text = _interleaved(raw, after)
            whole = Analyzer()
            whole.analyze(text, line_table=True)
            events = [c.event.line for c in whole._scan.events]
            starts = [0, *(at + 1 for at, char in enumerate(text) if char == "\n")][:-1]
            for cut in sorted({c for start in starts for c in (start, start + 1)} - {0}):
                analyzer = Analyzer()
                analyzer.analyze(text[:cut], line_table=True)
                grown = analyzer.analyze(text, line_table=True, grown_from=text[:cut])
                assert_same(grown, fresh(text), f"cut at {cut}")
                assert [c.event.line for c in analyzer._scan.events] == events, f"cut at {cut}"


@SOME
@given(
    st.sampled_from(sorted(TEXTS)),
    st.sampled_from(sorted(TEXTS)),
    st.randoms(use_true_random=False),
    st.lists(st.floats(0, 1), min_size=1, max_size=4),
)
def test_interleaved_logs_grow_as_a_fresh_analysis(
    first: str, second: str, rng, fractions: list[float]
) -> None:
    """Two logs' lines interleaved, as processes writing to one file print them (each keeps its
    order), grown at any cut: the analysis equals a fresh one. Their tracebacks interleave, and
    one that ends before a cut may have read past the header of another still open there."""
    text = interleave(TEXTS[first], rng, [TEXTS[second]])
    delicate = delicate_cuts(text)
    picked = [delicate[int(f * len(delicate)) % len(delicate)] for f in fractions] if delicate else []
    grow(text, [int(f * len(text)) for f in fractions] + picked, told=True)


@pytest.mark.parametrize(("pair", "seed", "cuts"), [(("110.log", "124.log"), 8, [16884, 17860])])
def test_interleaved_logs_found_by_hypothesis_grow_as_a_fresh_analysis(
    pair: tuple[str, str], seed: int, cuts: list[int]
) -> None:
    """Cases hypothesis found: a traceback without its header is read from its exception line,
    after the tracebacks whose headers lie between (here in another order when the log grew);
    the folds are in line order all the same."""
    first, second = pair
    text = interleave(TEXTS[first], random.Random(seed), [TEXTS[second]])
    assert any(tb.headless for tb in _scan_of(text).tracebacks)
    grow(text, cuts, told=True)


def _scan_of(text: str):
    analyzer = Analyzer()
    analyzer.analyze(text, line_table=True)
    return analyzer._scan
