"""A traceback belongs to one run: when the service restarts, the process that printed it has
exited, so its reader stops before the next run's start marker (of the same runtime prefix)
instead of waiting for the writer's next line. That line may come a run later for a writer with
no identity of its own: raw unprefixed lines, or `(APIServer pid=1)` in every container.

Checked on cut tracebacks that must not take the next run's traceback of the same writer, on
random interleavings (reading with the bound = reading the text cut before the next run), and
on a restart of another service, which does not end the traceback.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core import tracebacks
from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.scan import Scan, scan_lines
from vllm_log_lsp.core.text import LogIndex
from vllm_log_lsp.core.tracebacks import Traceback, read_traceback

CATALOG = builtin_catalog()

# Each kind of run-start marker, as vLLM (or compose, for a restart) prints it.
MARKERS = {
    "banner": "INFO 10-03 21:20:01 [api_server.py:1805] vLLM API server version 0.11.0",
    "logo": "(APIServer pid=1) INFO 01-31 14:20:54 [utils.py:346]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.16.0",
    "args": "(APIServer pid=1) INFO 01-31 14:20:54 [utils.py:282] non-default args: {'model': 'm'}",
    "namespace": "INFO 05-02 18:33:28 api_server.py:712] args: Namespace(model='m')",
}
# Writers whose lines in the next run look the same as in this one.
WRITERS = ["", "(APIServer pid=1) ", "[rank0]: ", "svc-1  | "]

FRAME = '  File "/x/vllm/v1/engine/core.py", line {n}, in run'
NEXT_RUN = [
    "INFO 10-03 21:20:02 [core.py:1] Loading model m",
    "(EngineCore pid=9) INFO 10-03 21:20:03 [core.py:2] Waiting for the engine",
]


def _scan(lines: list[str], newline: str = "\n") -> Scan:
    return scan_lines(LogIndex(newline.join(lines) + newline), CATALOG)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("marker", sorted(MARKERS))
@pytest.mark.parametrize("writer", WRITERS)
def test_a_traceback_cut_at_a_runs_end_does_not_take_the_next_runs_traceback(
    writer: str, marker: str, newline: str
) -> None:
    marker_line = (writer if writer.endswith("| ") else "") + MARKERS[marker]
    cut = [
        f"{writer}Traceback (most recent call last):",
        writer + FRAME.format(n=1),
        writer + FRAME.format(n=2),
    ]
    again = [
        f"{writer}Traceback (most recent call last):",
        writer + FRAME.format(n=3),
        f"{writer}ValueError: bad",
    ]
    lines = [*cut, marker_line, *NEXT_RUN, *again]
    first, second = _scan(lines, newline).tracebacks
    assert max(first.lines) < len(cut)  # the marker's line, where the next run starts
    assert (first.chain, first.open, len(first.cut_frames)) == ([], False, 2)
    assert [e.type_name for e in second.chain] == ["ValueError"]
    assert second.header_line == len(cut) + 1 + len(NEXT_RUN)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_compose_restart_ends_the_services_traceback_from_the_next_line(newline: str) -> None:
    """compose prints `svc-1 exited with code 1 (restarting)`: the run starts after it."""
    writer = "svc-1  | "
    cut = [f"{writer}Traceback (most recent call last):", writer + FRAME.format(n=1)]
    again = [
        f"{writer}Traceback (most recent call last):",
        writer + FRAME.format(n=2),
        f"{writer}KeyError: 'x'",
    ]
    lines = [*cut, "svc-1 exited with code 1 (restarting)", *again]
    first, second = _scan(lines, newline).tracebacks
    assert (first.lines, first.chain) == ([1], [])
    assert [e.type_name for e in second.chain] == ["KeyError"]


def _chained(writer: str) -> list[str]:
    return [
        f"{writer}Traceback (most recent call last):",
        writer + FRAME.format(n=1),
        f"{writer}OSError: disk",
        writer,
        f"{writer}During handling of the above exception, another exception occurred:",
        writer,
        f"{writer}Traceback (most recent call last):",
        writer + FRAME.format(n=2),
        f"{writer}RuntimeError: failed",
    ]


@pytest.mark.parametrize("at", range(1, 9))
def test_another_services_restart_does_not_end_a_traceback(at: int) -> None:
    """One compose service restarting says nothing of another's processes."""
    chained = _chained("b-1  | ")
    lines = [*chained[:at], "a-1  | " + MARKERS["banner"], *chained[at:]]
    [tb] = _scan(lines).tracebacks
    assert [e.type_name for e in tb.chain] == ["OSError", "RuntimeError"]


@pytest.mark.parametrize("at", range(1, 9))
def test_the_services_own_restart_ends_its_traceback(at: int) -> None:
    writer = "b-1  | "
    chained = _chained(writer)
    lines = [*chained[:at], writer + MARKERS["banner"], *chained[at:]]
    tracebacks = _scan(lines).tracebacks
    assert all(n < at for n in tracebacks[0].lines)
    assert not tracebacks[0].open  # (a later one runs to the end of the text: open)


def test_a_traceback_at_the_end_stays_open_unless_a_run_starts_after_it() -> None:
    """Open: appended text may continue it. A later run's start closes it for good."""
    tb = ["Traceback (most recent call last):", FRAME.format(n=1), "ValueError: bad"]
    assert [t.open for t in _scan(tb).tracebacks] == [True]
    assert [t.open for t in _scan([*tb, MARKERS["banner"]]).tracebacks] == [False]


# -- the bound = the text cut before the next run ---------------------------------------------

OTHERS = [
    "(EngineCore pid=7) INFO 10-03 21:20:02 [core.py:1] step",
    "(Worker_TP1 pid=8) Traceback (most recent call last):",
    '(Worker_TP1 pid=8)   File "/x/w.py", line 1, in f',
    "(Worker_TP1 pid=8) ValueError: other rank",
    "INFO 10-03 21:20:02 [core.py:1] logged",
    "",
]


def _read(text: str, until: int | None) -> tuple[Traceback, dict[int, object]]:
    index = LogIndex(text)
    parsed: dict[int, object] = {}
    first = parse_line(0, index.line_text(0))
    return read_traceback(index, 0, first, parsed, until=until), parsed  # type: ignore[arg-type]


def _shape(tb: Traceback) -> tuple[object, ...]:
    return (tb.lines, [(e.line, e.type_name, e.message, e.frames) for e in tb.chain], tb.cut_frames)


@settings(max_examples=200, deadline=None)
@given(
    writer=st.sampled_from(["", "(Worker_TP0 pid=5) ", "[rank0]: "]),
    others=st.lists(st.sampled_from(OTHERS), max_size=30),
    seed=st.randoms(use_true_random=False),
    until_at=st.integers(min_value=1, max_value=60),
    newline=st.sampled_from(["\n", "\r\n"]),
)
def test_reading_up_to_the_next_run_equals_reading_the_text_cut_there(
    writer: str, others: list[str], seed, until_at: int, newline: str
) -> None:
    own = _chained(writer)
    # The writer's own lines in order, other writers' lines anywhere between (interleaved ranks).
    lines = [own[0]]
    rest = own[1:] + others
    order = sorted(range(len(rest)), key=lambda i: (seed.random(), i))
    mine = iter(own[1:])
    for i in order:
        lines.append(next(mine) if i < len(own) - 1 else rest[i])
    lines.append(writer + "after the traceback")
    until = min(until_at, len(lines))
    bounded, parsed = _read(newline.join(lines) + newline, until)
    cut, _ = _read(newline.join(lines[:until]) + newline, None)
    assert _shape(bounded) == _shape(cut)
    assert not bounded.open
    assert all(n < until for n in parsed)  # nothing of the later run is even parsed


# -- the reader's pre-tests = its patterns ----------------------------------------------------

PIECES = [
    "...",
    "<12 lines>",
    "[Previous line repeated 3 more times]",
    "",
    " ",
    "\t",
    "\u3000",
    "\x1c",
    "~",
    "^",
    ".",
    "[",
    "]",
    "<",
    ">",
    "1",
    "x",
    " lines",
    "Previous line repeated ",
    " more times",
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8))
def test_the_readers_pre_tests_are_its_patterns(parts: list[str]) -> None:
    message = "".join(parts)
    stripped = message.strip()
    if not stripped:
        return
    carets = bool(tracebacks._CARETS.match(message) or tracebacks._ELISION.match(message))
    assert tracebacks.is_caret_or_elision(message, stripped) == carets
    assert tracebacks.is_chain_line(message, stripped) == bool(tracebacks._CHAIN.match(message))
