"""A traceback body that repeats one read before is replayed, not read again
(`tracebacks.BodyMemo`); speed must never change an answer.

- every traceback of a text read in order with one memo (later ones replay earlier bodies)
  equals the one read without it, with the same lines handed to the scan: on the corpus, on the
  benchmark's shapes, and on generated logs that repeat a few tracebacks under new timestamps
  and numbers, from logged and raw writers, with bodies that differ from a remembered one in a
  single character, other writers' lines falling inside them, colour codes, CRLF, texts cut
  anywhere, as text and as bytes, and a traceback limit (`until`) that falls inside a body;
- whole scans with and without the replay are equal (events, symptoms, the lines consumed);
- the replay does happen where it should (the tests above are not comparing two readings).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, crash_labels, read_log, scan_values, traceback_headers
from vllm_log_lsp.core import tracebacks
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.scan import scan_lines
from vllm_log_lsp.core.text import LogIndex
from vllm_log_lsp.core.tracebacks import TRACEBACK_HEADER, BodyMemo, read_traceback

CATALOG = builtin_catalog()
CORPUS = [
    read_log(folder / label["file"]) for folder in (CRASH, CRASH2, CRASH3) for label in crash_labels(folder)
]


class CountingMemo(BodyMemo):
    """A memo that counts the bodies it replayed."""

    def __init__(self) -> None:
        super().__init__()
        self.replayed = 0

    def replay(self, index, start, number, limit, prefix, reader):  # type: ignore[no-untyped-def]
        found = super().replay(index, start, number, limit, prefix, reader)
        self.replayed += found[1] != number
        return found


def read_with_and_without(index: LogIndex, until: int | None = None, seed: int = 0) -> int:
    """Every traceback of `index`, read in order with one memo and without any: equal, and the
    lines handed to the scan equal. `until`: some tracebacks (chosen by `seed`) end that many
    lines after their header at the latest, so a body remembered whole may be longer than what
    a later traceback may read. The number of bodies replayed."""
    memo = CountingMemo()
    rng = random.Random(seed)
    for start, number in traceback_headers(index):
        first = parse_line(number, index.line_at(start))
        stop = None if until is None or rng.random() < 0.5 else number + until
        fast_parsed: dict = {}
        fast = read_traceback(index, start, first, fast_parsed, until=stop, bodies=memo)
        slow_parsed: dict = {}
        slow = read_traceback(index, start, first, slow_parsed, until=stop)
        assert fast == slow, (number, index.line_at(start))
        assert fast_parsed == slow_parsed
    return memo.replayed


def test_corpus_tracebacks_read_alike() -> None:
    assert sum(read_with_and_without(LogIndex(text)) for text in CORPUS) > 0


# -- generated: a few tracebacks, printed again and again ------------------------------------------

WRITERS = [
    "(APIServer pid=100) ERROR 10-03 21:{mm}:{ss} [serving_chat.py:245] ",
    "(Worker_TP0 pid=301) ERROR 10-03 21:{mm}:{ss} [multiproc_executor.py:815] ",
    "ERROR 10-03 21:{mm}:{ss}.{ms} [core.py:842] ",
    "(EngineCore_DP0 pid=200) ",
    "[rank0]: ",
    "",
]
FRAMES = [
    '  File "/x/vllm/entrypoints/openai/serving_chat.py", line 228, in create_chat_completion',
    "    ) = await self._preprocess_chat(",
    "        ^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/x/vllm/v1/engine/core.py", line {n}, in step',
    "    outputs = self.model_executor.execute_model(scheduler_output)",
    "    ...<3 lines>...",
    "",
    "return x",
    "  stray text",
    '  File "/x/torch/nn/modules/module.py", line 1773, in _wrapped_call_impl',
    "    return self._call_impl(*args, **kwargs)",
    "           ~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^",
]
ENDINGS = [
    ["ValueError: This model's maximum context length is {n} tokens."],
    ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {n}.00 MiB.", "  detail"],
    [
        "KeyError: 'x'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        TRACEBACK_HEADER,
        '  File "/x/vllm/v1/engine/core.py", line 9, in run',
        "RuntimeError: wrapped {n}",
    ],
    [],  # cut before its exception line
]
OTHER_LINES = [
    "(APIServer pid=100) INFO 10-03 21:00:02 [async_llm.py:261] Added request 1.",
    "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] Error in preprocessing prompt inputs",
    '(Worker_TP1 pid=302) ERROR 10-03 21:00:01 [multiproc_executor.py:815]   File "y.py", line 2, in g',
    "(EngineCore_DP0 pid=200)     stray code",
    "INFO 10-03 21:00:03 [core.py:1] plain",
    "    unprefixed indented",
    "",
    '\x1b[1;36m(EngineCore_DP0 pid=200)\x1b[0;0m   File "c.py", line 4, in k',
]


def _body(rng: random.Random) -> list[str]:
    return [rng.choice(FRAMES) for _ in range(rng.randint(0, 7))]


def _print(rng: random.Random, writer: str, body: list[str], ending: list[str], tweak: bool) -> list[str]:
    """One printing of a traceback: the writer's prefix with a new time, the body with new
    numbers where it has a `{n}`, maybe one character changed."""
    prefix = writer.format(
        mm=f"{rng.randint(0, 59):02}", ss=f"{rng.randint(0, 59):02}", ms=rng.randint(0, 999)
    )
    n = rng.choice([9, 17, 128, 4096, 16384])
    lines = [TRACEBACK_HEADER, *(m.format(n=n) for m in body), *(m.format(n=n) for m in ending)]
    if tweak and len(lines) > 1:
        at = rng.randrange(1, len(lines))
        lines[at] = lines[at][:-1] + "!" if lines[at] else "!"
    return [prefix + line for line in lines]


def repeated_log(rng: random.Random, interleave: float) -> list[str]:
    shapes = [(rng.choice(WRITERS), _body(rng), rng.choice(ENDINGS)) for _ in range(rng.randint(1, 3))]
    lines: list[str] = []
    for _ in range(rng.randint(2, 12)):
        writer, body, ending = rng.choice(shapes)
        for line in _print(rng, writer, body, ending, tweak=rng.random() < 0.2):
            lines.append(line)
            if rng.random() < interleave:
                lines.append(rng.choice(OTHER_LINES))
        if rng.random() < 0.5:
            lines.append(rng.choice(OTHER_LINES))
    return lines


SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(
    seed=st.integers(0, 2**32),
    interleave=st.sampled_from([0.0, 0.0, 0.1, 0.4]),
    crlf=st.booleans(),
    cut=st.one_of(st.none(), st.floats(0, 1)),
    as_bytes=st.booleans(),
    until=st.one_of(st.none(), st.integers(1, 12)),
    progress=st.sampled_from([None, 0, 3]),
)
def test_generated_repeats_read_alike(
    seed: int,
    interleave: float,
    crlf: bool,
    cut: float | None,
    as_bytes: bool,
    until: int | None,
    progress: int | None,
) -> None:
    """`progress`: a progress bar redrawn with bare `\r` put before that line (the text holds a
    `\r`, the tracebacks' own lines do not)."""
    lines = repeated_log(random.Random(seed), interleave)
    if progress is not None and len(lines) > progress:
        lines.insert(
            progress, "Loading: " + "".join(f"{p:3d}%|{'█' * (p // 10)}|\r" for p in range(0, 100, 25))
        )
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    if cut is not None:
        text = text[: int(len(text) * cut)]
    read_with_and_without(LogIndex(text.encode("utf-8") if as_bytes else text), until, seed)


def test_repeated_bodies_are_replayed() -> None:
    """Where the text repeats a body under another time, it is replayed, as text and as bytes,
    with lines ended by `\\n` or by `\\r\\n`, also where a progress bar elsewhere ends lines
    with a bare `\\r`; not where one character differs, nor where a body's lines end with
    breaks of both kinds."""
    writer = "(APIServer pid=100) ERROR 10-03 21:00:{ss} [serving_chat.py:245] "
    body = [FRAMES[0], FRAMES[1], FRAMES[2], FRAMES[9], FRAMES[10], "ValueError: too long {n}"]
    printed = [
        writer.format(ss=f"{second:02}") + line.format(n=second)
        for second in range(10)
        for line in (TRACEBACK_HEADER, *body)
    ]
    text = "\n".join(printed) + "\n"
    assert read_with_and_without(LogIndex(text)) == 9
    assert read_with_and_without(LogIndex(text.encode())) == 9
    assert read_with_and_without(LogIndex(text.replace("\n", "\r\n"))) == 9
    assert read_with_and_without(LogIndex(text.replace("\n", "\r\n").encode())) == 9
    mixed = text.replace("in create_chat_completion\n", "in create_chat_completion\r\n")
    assert mixed.count("\r\n") == 10
    assert read_with_and_without(LogIndex(mixed)) == 0  # (the first line's `\r\n` is not the others')
    progress_bar = "Loading safetensors:  50%|█████     | 1/2\rLoading safetensors: 100%|██████████| 2/2\n"
    assert read_with_and_without(LogIndex(progress_bar + text)) == 9
    assert read_with_and_without(LogIndex((progress_bar + text).encode())) == 9
    # The 6th printing differs in one character: it is read (and remembered beside the first
    # one's body, under the same first line); the others replay the first one's.
    at = text.index("21:00:05 [serving_chat.py:245]     ) = await self._preprocess_chat(")
    changed = text[:at] + text[at:].replace("_preprocess_chat(", "_preprocess_chat (", 1)
    assert read_with_and_without(LogIndex(changed)) == 8
    # Raw tracebacks under a process prefix (the prefix ends in a space) replay too.
    raw = "\n".join(
        f"(EngineCore_DP0 pid=200) {line.format(n=i)}" for i in range(5) for line in (TRACEBACK_HEADER, *body)
    )
    assert read_with_and_without(LogIndex(raw + "\n")) == 4


def test_bodies_that_start_alike_are_remembered_side_by_side(monkeypatch) -> None:
    """Tracebacks often start with the same frame and go on differently: a few bodies are kept
    under one first line, the most recent first; past that number the oldest goes."""
    writer = "(EngineCore_DP0 pid=200) "
    first = '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap'
    bodies = [[first, "    self.run()", f'  File "/x/vllm/v{n}.py", line {n}, in run{n}'] for n in range(4)]
    printed = [
        writer + line
        for _ in range(2)
        for n, body in enumerate(bodies)
        for line in (TRACEBACK_HEADER, *body, f"ValueError: {n}")
    ]
    text = "\n".join(printed) + "\n"
    assert read_with_and_without(LogIndex(text)) == 4  # the second round, each from its own
    monkeypatch.setattr(tracebacks, "_BODIES_PER_FIRST_LINE", 3)
    assert read_with_and_without(LogIndex(text)) == 0  # the oldest gone each time: none is left
    monkeypatch.setattr(tracebacks, "_BODIES_PER_FIRST_LINE", 1)
    assert read_with_and_without(LogIndex(text)) == 0


def test_a_replayed_body_counts_its_stray_lines() -> None:
    """The reader gives up after too many lines that fit nowhere: those of a replayed body count
    (a later traceback that adds a few more ends where reading it line by line ends)."""
    writer = "(EngineCore_DP0 pid=200) ERROR 10-03 21:00:0{i} [core.py:1] "
    strays = ["return x"] * (tracebacks._MAX_STRAY - 5)
    first = [TRACEBACK_HEADER, FRAMES[0], FRAMES[1], *strays, "ValueError: first"]
    second = [TRACEBACK_HEADER, FRAMES[0], FRAMES[1], *strays, *["return y"] * 10, "ValueError: second"]
    text = "\n".join(
        [writer.format(i=1) + line for line in first] + [writer.format(i=2) + line for line in second]
    )
    assert read_with_and_without(LogIndex(text + "\n")) == 1


def test_a_body_read_under_a_logger_header_is_not_replayed_for_a_raw_writer() -> None:
    """A raw writer's prefix (no header: `bare`) takes fewer lines by slicing than a header's
    (`return x` is parsed): its lines are read as usual, and handed to the scan so."""
    body = ["return x", FRAMES[0], FRAMES[1], "ValueError: x"]
    logged = "(EngineCore_DP0 pid=200) ERROR 10-03 21:00:01 [core.py:1] "
    raw = "(EngineCore_DP0 pid=200) "
    text = "\n".join([logged + TRACEBACK_HEADER, *(logged + m for m in body)]) + "\n"
    text += "\n".join([raw + TRACEBACK_HEADER, *(raw + m for m in body)]) + "\n"
    assert read_with_and_without(LogIndex(text)) == 0


def test_a_body_longer_than_the_traceback_may_read_is_not_replayed() -> None:
    writer = "(APIServer pid=100) ERROR 10-03 21:00:0{i} [serving_chat.py:245] "
    body = [TRACEBACK_HEADER, FRAMES[0], FRAMES[1], FRAMES[9], FRAMES[10], "ValueError: x"]
    text = "\n".join(writer.format(i=i) + line for i in range(2) for line in body) + "\n"
    index = LogIndex(text)
    memo = CountingMemo()
    (one, n1), (two, n2) = traceback_headers(index)
    read_traceback(index, one, parse_line(n1, index.line_at(one)), bodies=memo)
    short = read_traceback(index, two, parse_line(n2, index.line_at(two)), until=n2 + 3, bodies=memo)
    assert memo.replayed == 0
    assert short == read_traceback(index, two, parse_line(n2, index.line_at(two)), until=n2 + 3)
    assert short.lines == [n2 + 1, n2 + 2]


# -- whole scans ----------------------------------------------------------------------------------


def scans_alike(text: str | bytes) -> None:
    replayed = scan_lines(LogIndex(text), CATALOG)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tracebacks, "_REPLAY_BODIES", False)
        read = scan_lines(LogIndex(text), CATALOG)
    assert scan_values(replayed) == scan_values(read)


@pytest.mark.parametrize("at", range(0, len(CORPUS), 7))
def test_corpus_scans_alike(at: int) -> None:
    for text in CORPUS[at : at + 7]:
        scans_alike(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), as_bytes=st.booleans())
def test_generated_scans_alike(seed: int, as_bytes: bool) -> None:
    text = "\n".join(repeated_log(random.Random(seed), 0.1)) + "\n"
    scans_alike(text.encode() if as_bytes else text)


def test_benchmark_shapes_scan_alike(tmp_path) -> None:
    """The benchmark's logs (a serving log with recovered per-request tracebacks, a restart
    loop, every line an ERROR traceback line), small."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from make_log import make_log

    for shape, options in (
        ("serving", {"megabytes": 0.5}),
        ("restarts", {"deaths": 40}),
        ("all-error", {"megabytes": 0.3}),
    ):
        path = tmp_path / f"{shape}.log"
        make_log(path, shape=shape, **options)
        scans_alike(path.read_bytes())
