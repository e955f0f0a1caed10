"""A logged traceback ends where its process writes its next record.

vLLM's handler writes a record whole (`NewLineFormatter` puts the header on every line of it,
a `logger.exception` traceback and its chain included; the handler's lock keeps other records
out), so after the exception line a line of the same process (`(Name pid=N)` stream) with a
logger header of another source is a later record: the traceback has ended, and the reader need
not search on (thousands of lines in a serving log) for the writer's next line.

Checked: it ends there, even where the writer's next line would have been glued on; it does not
end for lines that may fall inside a record or are another process's (raw lines, other pids,
lines before the exception line, unprefixed or rank streams, raw tracebacks); and on generated
texts the reading equals the reference reading of the text cut before that record.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core import tracebacks
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.text import LineWindow, LogIndex, strip_ansi
from vllm_log_lsp.core.tracebacks import TRACEBACK_HEADER, Traceback, read_traceback

W = "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] "
FRAME = '  File "/x/vllm/serving.py", line 1, in create'
RECORD = [W + TRACEBACK_HEADER, W + FRAME, W + "    raise ValueError(", W + "ValueError: too long"]
NEXT_RECORD = "(APIServer pid=100) INFO 10-03 21:00:02 [async_llm.py:261] Added request 1."
GLUED = W + "  an indented line the writer printed later"


def read(lines: list[str], newline: str = "\n", *, reference: bool = False, ended: bool = True) -> Traceback:
    text = newline.join(lines) + (newline if ended else "")
    index = LogIndex(text)
    with pytest.MonkeyPatch.context() as patch:
        if reference:
            patch.setattr(tracebacks, "_END_AT_THE_NEXT_RECORD", False)
        return read_traceback(index, 0, parse_line(0, index.line_text(0)))


def shape(tb: Traceback) -> tuple[object, ...]:
    return (tb.lines, tb.chain, tb.cut_frames, tb.preamble)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_processs_next_record_ends_the_traceback(newline: str) -> None:
    lines = [*RECORD, NEXT_RECORD, GLUED]
    tb = read(lines, newline)
    assert tb.lines == [1, 2, 3] and tb.chain[0].message == "too long" and not tb.open
    assert read(lines, newline, reference=True).lines == [1, 2, 3, 5]  # (what it read before)
    assert shape(tb) == shape(read(lines[:4], newline, reference=True))


def test_a_coloured_next_record_ends_it_too() -> None:
    coloured = "\x1b[1;36m(APIServer pid=100)\x1b[0;0m INFO 10-03 21:00:02 [async_llm.py:261] Added"
    assert read([*RECORD, coloured, GLUED]).lines == [1, 2, 3]


def test_a_next_record_on_the_last_line_leaves_it_open() -> None:
    """The text's last line may be cut: the traceback stays open, as when the writer ends it."""
    assert read([*RECORD, NEXT_RECORD], ended=False).open
    assert not read([*RECORD, NEXT_RECORD]).open


CHAIN_TAIL = [
    W,
    W + "The above exception was the direct cause of the following exception:",
    W,
    W + TRACEBACK_HEADER,
    W + FRAME,
    W + "RuntimeError: failed",
]


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        ([*RECORD, "(APIServer pid=100)   a raw line", GLUED], "a line without a header may fall anywhere"),
        ([*RECORD[:3], NEXT_RECORD, RECORD[3], *CHAIN_TAIL], "before the exception line"),
        (
            [*RECORD, "(APIServer pid=101) INFO 10-03 21:00:02 [async_llm.py:261] x", GLUED],
            "another process",
        ),
        (
            [*RECORD, "(EngineCore pid=100) INFO 10-03 21:00:02 [core.py:1] x", *CHAIN_TAIL],
            "another process with the same pid",
        ),
        (
            [r.replace("(APIServer pid=100) ", "") for r in RECORD]
            + ["INFO 10-03 21:00:02 [async_llm.py:261] x", GLUED.replace("(APIServer pid=100) ", "")],
            "an unprefixed stream may hold several processes",
        ),
        (
            [r.replace("(APIServer pid=100) ", "[rank0]: ") for r in RECORD]
            + ["[rank0]: INFO 10-03 21:00:02 [a.py:1] x", GLUED.replace("(APIServer pid=100) ", "[rank0]: ")],
            "a rank's stream",
        ),
        (
            [r.replace(W, "(EngineCore pid=1) ") for r in [*RECORD, W, W + CHAIN_TAIL[1][len(W) :]]]
            + ["(EngineCore pid=1) INFO 10-03 21:00:02 [core.py:1] x"]
            + [r.replace(W, "(EngineCore pid=1) ") for r in CHAIN_TAIL[2:]],
            "a raw traceback is written line by line",
        ),
    ],
)
def test_what_does_not_end_it(lines: list[str], why: str) -> None:
    assert read(lines) == read(lines, reference=True), why


# -- generated: the reading = the reference reading of the text cut before the next record ---------

OTHERS = [
    "(EngineCore_DP0 pid=200) INFO 10-03 21:00:02 [core.py:1] step",
    '(EngineCore_DP0 pid=200) ERROR 10-03 21:00:02 [core.py:842]   File "c.py", line 2, in f',
    "(APIServer pid=100)   raw line of the process",
    "(APIServer pid=100) ",
    "(APIServer pid=1000) ERROR 10-03 21:00:01 [serving_chat.py:245] other pid",
    "INFO 10-03 21:00:03 [core.py:1] unprefixed",
    "",
]
SAME_PROCESS = [
    NEXT_RECORD,
    "(APIServer pid=100) WARNING 10-03 21:00:02 [protocol.py:9] later warning",
    "\x1b[1;36m(APIServer pid=100)\x1b[0;0m INFO 10-03 21:00:02 [logger.py:39] Received request",
]
LATER_OF_THE_WRITER = [
    GLUED,
    W + TRACEBACK_HEADER,
    W + "Error in preprocessing prompt inputs",
    *CHAIN_TAIL[:2],
]


def _record(rng: random.Random) -> list[str]:
    """A logged traceback record: maybe chained, maybe Ray's remote frames, maybe a message
    that continues; every line with the writer's header."""
    out = [TRACEBACK_HEADER]
    for link in range(rng.randint(1, 3)):
        if link:
            out += ["", CHAIN_TAIL[1][len(W) :], "", TRACEBACK_HEADER]
        for n in range(rng.randint(1, 3)):
            out += [FRAME.replace("line 1", f"line {n}"), "    self.step()"]
        out.append(rng.choice(["ValueError: bad", "KeyError", "ray.exceptions.RayTaskError(ValueError): r"]))
        if out[-1].startswith("ray") and rng.random() < 0.5:
            out += [FRAME, "ValueError: remote"]
        out += rng.sample(["  detail", "max_model_len", "  Value error, x"], rng.randint(0, 2))
    return [W + m for m in out]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), crlf=st.booleans(), records_after=st.booleans())
def test_the_reading_equals_the_reference_cut_before_the_next_record(
    seed: int, crlf: bool, records_after: bool
) -> None:
    rng = random.Random(seed)
    lines = []
    for line in _record(rng):  # other processes' lines and the process's raw lines in between
        lines.append(line)
        lines += rng.sample(OTHERS, rng.randint(0, 2))
    # Then other processes' lines, maybe the process's next record, and the writer's later
    # lines (of later records when the next record came first; else glued on as before).
    lines += rng.sample(OTHERS, rng.randint(0, 3))
    if records_after:
        lines.append(rng.choice(SAME_PROCESS))
    later = rng.sample(OTHERS, rng.randint(0, 3)) + rng.sample(LATER_OF_THE_WRITER, rng.randint(0, 3))
    rng.shuffle(later)
    lines += later
    newline = "\r\n" if crlf else "\n"
    tb = read(lines, newline)
    stops = [i for i, line in enumerate(lines) if line in SAME_PROCESS]
    if not stops:
        assert tb == read(lines, newline, reference=True)
        return
    stop = stops[0]
    assert shape(tb) == shape(read(lines[:stop], newline, reference=True))
    assert not tb.open


# -- the window: widening = the plain window filtered by the new literals from there on -------------

LINES = ["a b", "a b", "a b", "a", "b", "a b c", "c", "", "b\x1b[0m"]


@settings(max_examples=1000, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), max_size=16),
    at=st.integers(0, 4),
    wider=st.sampled_from([("a",), ("b",), ("c",), ("b", "c")]),
    run_block=st.sampled_from([1, 5, 1 << 10]),
    newline=st.sampled_from(["\n", "\r\n"]),
    as_bytes=st.booleans(),
)
def test_a_widened_window_yields_the_lines_of_the_new_literals_from_the_next_line(
    lines: list[str], at: int, wider: tuple[str, ...], run_block: int, newline: str, as_bytes: bool
) -> None:
    text = newline.join(lines)
    index = LogIndex(text.encode("utf-8") if as_bytes else text)
    plain = list(index.window(0, 0, 1000))
    window = LineWindow(index, 0, 0, 1000, ("a", "b"))
    window._RUN_BLOCK = run_block
    got, widened_after = [], None
    for number, line in window:
        got.append((number, line))
        if len(got) == at + 1:
            window.widen(wider)
            widened_after = number

    def wanted(number: int, line: str) -> bool:
        literals = ("a", "b") if widened_after is None or number <= widened_after else wider
        # (a coloured line: its literals may be split by a code, and are looked for without them)
        return all(lit in line for lit in literals) or (
            "\x1b" in line and all(lit in strip_ansi(line)[0] for lit in literals)
        )

    assert got == [(n, t) for n, t in plain if wanted(n, t)]
