"""A writer's lines that start with its traceback header's prefix are sliced, not parsed
(`lines.writer_prefix`), and the reader reads them so; speed must never change an answer.

- whatever follows a prefix, a line the slicing takes is the line `parse_line` makes: prefixes
  of every format (runtime, process, Ray, user prefixes, vLLM's header in its generations, raw
  lines without one) followed by rests made to provoke another parse (more prefixes, headers,
  brackets, colour codes, `\\r`);
- a traceback read with the slicing equals the one read parsing every line, with the same lines
  handed to the scan, on the corpus and on generated tracebacks: interleaved writers, chains,
  Ray's remote tracebacks, colour codes, CRLF and texts cut anywhere;
- the slicing does take the frames and code of the usual writers (the test above is not empty).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, crash_labels, read_log, traceback_headers
from vllm_log_lsp.core import tracebacks
from vllm_log_lsp.core.lines import learned_prefix, parse_line, writer_prefix
from vllm_log_lsp.core.text import LogIndex
from vllm_log_lsp.core.tracebacks import TRACEBACK_HEADER, read_traceback

FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

OUTER = [
    "",
    "svc-1  | ",
    "svc | ",
    "[svc] | ",
    "2025-01-02T03:04:05.678Z stderr F ",
    "2025-01-02T03:04:05.678901Z ",
    "2025-01-02 03:04:05.678 | ",
    "Dec 01 10:00:00 host vllm[12]: ",
    "> ",
    "5223:",
    "109:Feb 26 17:41:39 host python3.12[409441]: ",
    "Line 12: ",
    "docker : ",
]
PROCESS = [
    "",
    "(APIServer pid=100) ",
    "(APIServer pid=100)",
    "(Worker_TP0 pid=007) ",
    "(VllmWorker rank=1 pid=2) ",
    "(RayWorkerWrapper pid=2, ip=10.0.0.1) ",
    "(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=674640) ",
    "(MapWorker(ReadParquet->MapBatches(f)) pid=12, ip=10.0.0.1) ",
    "(pid=12, ip=10.0.0.1) ",
    "(raylet) ",
    "(autoscaler +2m3s) ",
    "(autoscaler ",
    "[rank0]: ",
    "[rank1]:",
    "(EngineCore_DP0 pid=1) (Worker pid=2) ",
    "[default0]:",
    "[default0]:[rank0]: ",
    "[1,0]<stderr>:",
    "[1,12]<stdout>: ",
]
USER = ["", "[req-1] ", "(x ", "app: ", "[", "(", "(autoscaler "]
HEADER = [
    "",
    "ERROR 10-03 21:00:01 [serving_chat.py:245] ",
    "ERROR 10-03 21:00:01 [serving_chat.py:245]",
    "INFO 10-03 21:00:01.123 [v1/engine/core.py:1] ",
    "WARN 01-02 03:04:05 [a/.../b.py:7] ",
    "CRITICAL 01-02 03:04:05 (x.py:7] ",
    "ERROR 10-03 21:00:01 core.py:842] ",
    "INFO:     ",
    "ERROR:    ",
    "2025-06-20 20:02:20,931 - vllm - ERROR - ",
    "2026-01-31 14:20:59,483\tINFO file.py:12 -- ",
]
FIRST_MESSAGE = [TRACEBACK_HEADER, '  File "x.py", line 1, in f', "ValueError: bad"]
# Pieces of a rest chosen to provoke a different parse of the same prefix.
REST = [
    " ",
    "  ",
    "\t",
    'File "/x/y.py", line 3, in f',
    "raise ValueError(",
    "^^^^",
    ")",
    "(",
    "[",
    "]",
    "(Worker pid=2) ",
    "[rank1]: ",
    "[default1]:",
    "[0,3]<stderr>:",
    "(raylet) ",
    "ERROR 10-03 21:00:01 [x.py:1] ",
    "INFO 10-03 21:00:01 [v1/a.py:2]",
    "INFO:     ",
    "DEBUG",
    "2025-06-20 20:02:20,931 - ",
    "2025-01-02T03:04:05Z ",
    "svc  | ",
    "| ",
    "> ",
    ".py:",
    ":",
    "1",
    "\r",
    "\x1b[0m",
    "\x1b[1;36m",
    "[0;36m(",
    "m(",
    "pid=3",
    "模",
    "\u0663",
    "Traceback",
    "x" * 60,
    # progress bars, as a row they share with the next line starts
    "Loading: 50%|█| 1/2 [00:01<00:01, 1.2s/it]",
    " 50%|█| 1/2 [00:01<00:01, 1.2s/it]",
    "x 50% Completed | 1/2 [00:01<00:01, 1.20s/it]",
    "%",
]
rests = st.lists(st.sampled_from(REST), max_size=8).map("".join)


def check_slices_equal_parses(first_raw: str, rest_list: list[str]) -> int:
    """Assert every line the slicing takes is `parse_line`'s; how many it took."""
    first = parse_line(0, first_raw)
    prefix = writer_prefix(first)
    if prefix is None:
        return 0
    assert first_raw.startswith(prefix.text)
    taken = 0
    for number, rest in enumerate(rest_list, 1):
        raw = prefix.text + rest
        message = prefix.message_of(raw)
        if message is not None:
            taken += 1
            assert prefix.line(number, raw, message) == parse_line(number, raw), repr(raw)
    return taken


@FAST
@given(
    outer=st.sampled_from(OUTER),
    process=st.lists(st.sampled_from(PROCESS), max_size=2).map("".join),
    user=st.sampled_from(USER),
    header=st.sampled_from(HEADER),
    first_message=st.sampled_from(FIRST_MESSAGE),
    rest_list=st.lists(rests, min_size=1, max_size=6),
)
def test_a_sliced_line_is_the_parsed_line(
    outer: str, process: str, user: str, header: str, first_message: str, rest_list: list[str]
) -> None:
    check_slices_equal_parses(outer + process + user + header + first_message, rest_list)


@FAST
@given(st.text(alphabet=" ()[]:|>.-,=+\t\r\x1bmpidyFINOERW0123456789xs", max_size=60), rests)
def test_any_text_before_a_traceback_header(head: str, rest: str) -> None:
    """Arbitrary text in front of the header (whatever it parses as) followed by any rest."""
    check_slices_equal_parses(head + TRACEBACK_HEADER, [rest, " " + rest, "  " + rest])


TYPICAL = [
    "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] ",
    "ERROR 10-03 21:00:01 [core.py:842] ",
    "(EngineCore_DP0 pid=11075) ",
    "[rank0]: ",
    "svc-1  | (Worker_TP1 pid=302) ",
    "",
]
BODY = ['  File "/x/vllm/v1/engine/core.py", line 12, in run', "    self.step()", "    ^^^^^^^^^^^", ""]


@pytest.mark.parametrize("writer", TYPICAL)
def test_the_usual_writers_frames_and_code_are_sliced(writer: str) -> None:
    assert check_slices_equal_parses(writer + TRACEBACK_HEADER, BODY) == len(BODY)


@pytest.mark.parametrize(
    ("first", "why"),
    [
        ("(P pid=1) \x1b[0mTraceback (most recent call last):", "a colour code"),
        ("[0;36m(P pid=1)[0;0m Traceback (most recent call last):", "a colour code without its ESC"),
        ("(P pid=1)Traceback (most recent call last):", "the prefix's optional space not taken"),
        ("INFO:     Traceback (most recent call last):", "uvicorn's padding takes every space"),
        ("(autoscaler ERROR 10-03 21:00:01 [x.py:1] Traceback (most recent call last):", "Ray's `[^)]*`"),
    ],
)
def test_no_prefix_where_the_rest_could_change_the_parse(first: str, why: str) -> None:
    assert writer_prefix(parse_line(0, first)) is None, why


def test_no_prefix_under_a_learned_outer_prefix() -> None:
    import re

    with learned_prefix(re.compile(r"host\d+ ")):
        assert writer_prefix(parse_line(0, "host1 (P pid=1) Traceback (most recent call last):")) is None


# -- the reader: sliced = parsed ------------------------------------------------------------------


def read_both_ways(text: str, monkeypatch, index: LogIndex | None = None) -> int:
    """Every traceback of `text` read with and without the slicing: equal, and the lines handed
    to the scan equal (the sliced reading hands fewer: the scan parses the others). The number
    of tracebacks whose writer was sliced."""
    index = index or LogIndex(text)
    sliced = 0
    for start, number in traceback_headers(index):
        first = parse_line(number, index.line_at(start))
        fast_parsed: dict = {}
        fast = read_traceback(index, start, first, fast_parsed)
        with monkeypatch.context() as patch:
            patch.setattr(tracebacks, "_SLICE_WRITER_LINES", False)
            slow_parsed: dict = {}
            slow = read_traceback(index, start, first, slow_parsed)
        assert fast == slow
        assert all(slow_parsed[n] == line for n, line in fast_parsed.items())
        sliced += writer_prefix(first) is not None
    return sliced


CORPUS = [read_log(folder / label["file"]) for folder in (CRASH, CRASH2) for label in crash_labels(folder)]


def test_corpus_tracebacks_read_alike(monkeypatch) -> None:
    assert sum(read_both_ways(text, monkeypatch) for text in CORPUS) > 100


FRAME = '  File "/x/vllm/{name}.py", line {n}, in {name}'


def _traceback(rng: random.Random, ray: bool) -> list[str]:
    """One traceback's messages: frames and code (carets, elisions), an exception with a
    message that may continue, maybe a chain, maybe Ray's remote frames under `RayTaskError`."""
    out = [TRACEBACK_HEADER]
    for link in range(rng.randint(1, 3)):
        if link:
            out += [
                "",
                rng.choice(
                    [
                        "The above exception was the direct cause of the following exception:",
                        "During handling of the above exception, another exception occurred:",
                    ]
                ),
                "",
                TRACEBACK_HEADER,
            ]
        for n in range(rng.randint(0, 4)):
            out.append(FRAME.format(name=rng.choice(["core", "worker", "gpu"]), n=n))
            out += rng.sample(["    self.step()", "    ~~~~^^^", "    ...<3 lines>...", "return x", "  ^"], 1)
        out.append(rng.choice(["ValueError: bad", "torch.OutOfMemoryError: CUDA out of memory", "KeyError"]))
        out += rng.sample(
            ["  detail line", "max_model_len", "  Value error, too long", "more"], rng.randint(0, 2)
        )
        if ray and rng.random() < 0.5:
            out.append("ray.exceptions.RayTaskError(ValueError): ray::w() (pid=3, ip=10.0.0.2)")
            out.append(FRAME.format(name="remote", n=9))
            out.append("ValueError: remote")
    return out


WRITERS = [
    "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] ",
    "(Worker_TP0 pid=301) ERROR 10-03 21:00:01 [multiproc_executor.py:815] ",
    "ERROR 10-03 21:00:01 [core.py:842] ",
    "(EngineCore_DP0 pid=200) ",
    "(RayWorkerWrapper pid=5, ip=10.0.0.2) ",
    "[rank0]: ",
    "svc-1  | ",
    "",
]
OTHER_LINES = [
    "(APIServer pid=100) INFO 10-03 21:00:02 [async_llm.py:261] Added request 1.",
    '(APIServer pid=100) INFO:     10.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] Error in preprocessing prompt inputs",
    "(APIServer pid=100)   indented raw line",
    '(Worker_TP1 pid=302) ERROR 10-03 21:00:01 [multiproc_executor.py:815]   File "y.py", line 2, in g',
    "(EngineCore_DP0 pid=200) ERROR 10-03 21:00:01 [core.py:842]     code()",
    "(EngineCore_DP0 pid=200)     stray code",
    "INFO 10-03 21:00:03 [core.py:1] plain",
    "    unprefixed indented",
    "",
    '[rank1]:   File "z.py", line 1, in h',
    '\x1b[1;36m(EngineCore_DP0 pid=200)\x1b[0;0m   File "c.py", line 4, in k',
    "(EngineCore_DP0 pid=200) \x1b[31m    coloured code\x1b[0m",
]


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    writers=st.lists(st.sampled_from(WRITERS), min_size=1, max_size=3),
    seed=st.integers(0, 2**32),
    crlf=st.booleans(),
    cut=st.one_of(st.none(), st.floats(0, 1)),
    as_bytes=st.booleans(),
)
def test_generated_tracebacks_read_alike(
    writers: list[str], seed: int, crlf: bool, cut: float | None, as_bytes: bool, monkeypatch
) -> None:
    rng = random.Random(seed)
    own = [[w + m for m in _traceback(rng, ray="Ray" in w)] for w in writers]
    lines: list[str] = []
    while any(own):  # the writers' lines interleaved, other lines in between
        source = rng.choice([o for o in own if o])
        lines.append(source.pop(0))
        if rng.random() < 0.3:
            lines.append(rng.choice(OTHER_LINES))
    if rng.random() < 0.3:  # a writer's line coloured, or its prefix's space lost
        i = rng.randrange(len(lines))
        lines[i] = rng.choice([lines[i].replace(") ", ")\x1b[0m ", 1), lines[i].replace(") ", ")", 1)])
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    if cut is not None:
        text = text[: int(len(text) * cut)]
    index = LogIndex(text.encode("utf-8")) if as_bytes else LogIndex(text)
    read_both_ways(text, monkeypatch, index)


def test_the_reference_reading_parses_every_line(monkeypatch) -> None:
    """The comparison above compares two different readings: with slicing off, no writer
    prefix is asked for (else both sides could take the same shortcut)."""
    calls = []
    monkeypatch.setattr(tracebacks, "writer_prefix", lambda line: calls.append(line))
    monkeypatch.setattr(tracebacks, "_SLICE_WRITER_LINES", False)
    text = "\n".join(
        ["(P pid=1) " + TRACEBACK_HEADER, '(P pid=1)   File "x.py", line 1, in f', "(P pid=1) E: x"]
    )
    read_traceback(LogIndex(text), 0, parse_line(0, "(P pid=1) " + TRACEBACK_HEADER))
    assert calls == []
