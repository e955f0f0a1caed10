"""`lines.parse_line` remembers a line's layout (where its prefixes, header and message lie) by
the line's text with its digits masked, and slices each line's own values from its own text.

Principle: the prefix patterns treat every digit alike, so two lines that differ only in their
digits are taken apart at the same places; a line must get exactly the LogLine it gets when no
line was parsed before it, whatever lines of the same shape were parsed first.
"""

from __future__ import annotations

import random
import re
import re._parser as sre_parse  # (the stdlib's own parser of pattern syntax)
from collections.abc import Iterator

import pytest

from support import CRASH, CRASH2, CRASH3, FORMATS, HEALTHY
from vllm_log_lsp.core import lines
from vllm_log_lsp.core.lines import learn_outer_prefix, learned_prefix, parse_line
from vllm_log_lsp.core.model import LogLine

ASCII_DIGITS = "0123456789"


def _fresh(number: int, raw: str) -> LogLine:
    """The LogLine of `raw` parsed with nothing remembered."""
    lines._LEARNED.parsing.layouts.clear()
    return parse_line(number, raw)


def _with_other_digits(raw: str, rng: random.Random, digits: str = ASCII_DIGITS) -> str:
    """`raw` with every ASCII digit replaced by a random one (of `digits`)."""
    return re.sub("[0-9]", lambda _: rng.choice(digits), raw)


def _corpus_lines() -> Iterator[tuple[str, str]]:
    paths = sorted(p for folder in (CRASH, CRASH2, CRASH3, FORMATS, HEALTHY) for p in folder.glob("*.log"))
    assert len(paths) > 60
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for raw in text.split("\n")[:400]:
            yield path.name, raw


def _variants() -> list[str]:
    """Each prefix format `parse_line` knows, with digits everywhere one may stand."""
    return [
        "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] Traceback (most recent call last):",
        "(VllmWorker rank=1 pid=2301) INFO 01-02 03:04:05.678 [v1/engine/core.py:77] loaded 12 shards",
        "(RayWorkerWrapper pid=2, ip=10.0.0.1) WARNING 11-12 13:14:15 [a/b/c.py:9] retry 3 of 5",
        "(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=674640) ERROR 10-19 12:18:50 [core.py:588] IndexError: x",
        "(raylet) [2025-01-01 00:00:00] a raylet line 42",
        "(pid=123, ip=10.1.2.3) ValueError: 17 is not 18",
        "[rank0]: Traceback (most recent call last):",
        '[rank13]:   File "/x/y2.py", line 1041, in run',
        "2025-06-20T20:02:20.931234567Z stderr F (EngineCore_DP0 pid=1) ERROR 06-20 20:02:20 [core.py:1] boom",
        "2025-06-20T20:02:20.931Z INFO 06-20 20:02:20 [api_server.py:1805] version 0.11.0",
        "2025-06-20 20:02:20.931 | (APIServer pid=7) INFO 06-20 20:02:20 [x.py:3] hi",
        "vllm-1  | (APIServer pid=7) INFO 06-20 20:02:20 [x.py:3] hi",
        "[vllm2] | INFO 06-20 20:02:20 [x.py:3] hi",
        "Jun 20 20:02:20 host3 vllm@1.service[2345]: (APIServer pid=7) INFO 06-20 20:02:20 [x.py:3] hi",
        "docker : (APIServer pid=7) ERROR 06-20 20:02:20 [x.py:3] RuntimeError: CUDA error 700",
        "5223:(APIServer pid=7) ERROR 06-20 20:02:20 [x.py:3] boom",
        "Line 122: ERROR 06-20 20:02:20 [x.py:3] boom",
        "> (APIServer pid=7) INFO 06-20 20:02:20 [x.py:3] hi",
        'INFO:     10.0.3.7:45678 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "2025-06-20 20:02:20,931 - vllm.engine - ERROR - x.py:12 - failed 3 times",
        "2026-01-31 14:20:59,483\tINFO worker.py:1917 -- Started a local Ray instance.",
        "myhost-12 2025-06-20 20:02:20 (APIServer pid=7) WARN 06-20 20:02:20 [x.py:3] slow",
        "\x1b[1;36m(APIServer pid=100)\x1b[0;0m ERROR 10-03 21:00:01 [serving_chat.py:245] ValueError: 8192",
        "[0;36m(EngineCore_DP0 pid=200)[0;0m INFO 10-03 21:00:01 [core.py:77] 5 GiB",
        "12 | 34 | 56",
        "100%|##########| 5/5 [00:03<00:00,  1.40it/s]",
        "",
    ]


def test_a_line_is_parsed_alike_after_a_line_of_its_shape_with_other_digits() -> None:
    rng = random.Random(17)
    checked = 0
    for name, raw in [("variants", v) for v in _variants()] + list(_corpus_lines()):
        if not any(c in ASCII_DIGITS for c in raw):
            continue
        other = _with_other_digits(raw, rng)
        alone, other_alone = _fresh(3, raw), _fresh(9, other)
        for _ in range(2):  # each parsed after the other (which remembered the shape's layout)
            assert parse_line(3, raw) == alone, (name, raw)
            assert parse_line(9, other) == other_alone, (name, other)
        checked += 1
    assert checked > 5000


def test_lines_of_one_shape_keep_their_own_values() -> None:
    first = parse_line(1, "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245] limit 8192")
    second = parse_line(2, "(APIServer pid=207) ERROR 11-04 22:13:59 [serving_chat.py:931] limit 4096")
    assert (second.pid, second.stream, second.timestamp, second.source, second.message) == (
        207,
        "APIServer:207",
        "11-04 22:13:59",
        "serving_chat.py:931",
        "limit 4096",
    )
    assert (first.pid, first.stream, first.message) == (100, "APIServer:100", "limit 8192")
    # A pid printed with a leading zero is a number: the same writer as without it.
    assert parse_line(3, "(APIServer pid=0100) ERROR 10-03 21:00:01 [a.py:1] x").stream == "APIServer:100"


@pytest.mark.parametrize(
    "raw",
    [
        "(APIServer pid=١٢) ERROR 10-03 21:00:01 [a.py:1] Arabic-Indic digits",
        "(APIServer pid=12) ERROR 10-03 21:00:01 [a.py:1] ASCII digits",
        "(APIServer pid=１２) ERROR 10-03 21:00:01 [a.py:1] full-width digits",
    ],
)
def test_other_decimal_digits_are_their_own_shape(raw: str) -> None:
    """`\\d` matches any decimal digit and `int` reads it; only ASCII digits are masked, so a line
    with others is remembered under its own text."""
    alone = _fresh(0, raw)
    for other in ("(APIServer pid=12) ERROR 10-03 21:00:01 [a.py:1] x", "(APIServer pid=١٢) x"):
        parse_line(0, other)
        assert parse_line(0, raw) == alone
    assert alone.pid == 12


def test_a_colour_code_of_another_length_moves_the_message_column() -> None:
    """The layout is remembered by the text without colour codes; columns come from the line's own."""
    short = "\x1b[36m(APIServer pid=1)\x1b[0m ERROR 10-03 21:00:01 [a.py:1] boom"
    long = "\x1b[1;36m(APIServer pid=1)\x1b[0;0m ERROR 10-03 21:00:01 [a.py:1] boom"
    assert parse_line(0, short).message_col == _fresh(0, short).message_col
    assert parse_line(0, long).message_col == _fresh(0, long).message_col == long.index("boom")


def test_a_learned_prefix_has_layouts_of_its_own() -> None:
    raw = "node-7 pod/vllm-0 (APIServer pid=1) ERROR 10-03 21:00:01 [a.py:1] boom"
    plain = _fresh(0, raw)
    pattern = learn_outer_prefix([raw] * 10)
    assert pattern is not None
    with learned_prefix(pattern):
        taught = parse_line(0, raw)
        with learned_prefix(None):
            assert parse_line(0, raw) == plain
        assert parse_line(0, raw) == taught
    assert parse_line(0, raw) == plain and taught != plain and taught.message == "boom"


def test_a_learned_prefix_holds_in_its_own_thread_and_block_only() -> None:
    """The language server analyses several documents at once, each in a thread: one
    document's learned prefix never changes how another thread parses, and it is let go when
    its block ends, by an exception too."""
    import threading

    raw = "node-7 pod/vllm-0 (APIServer pid=1) ERROR 10-03 21:00:01 [a.py:1] boom"
    plain = _fresh(0, raw)
    pattern = learn_outer_prefix([raw] * 10)
    assert pattern is not None
    seen: list = []
    with learned_prefix(pattern):
        other = threading.Thread(target=lambda: seen.append(parse_line(0, raw)))
        other.start()
        other.join()
        assert parse_line(0, raw).message == "boom"
    assert seen == [plain]
    with pytest.raises(RuntimeError), learned_prefix(pattern):
        raise RuntimeError("analysis failed")
    assert parse_line(0, raw) == plain


@pytest.mark.parametrize("bar", ["|", "\u2502"])
def test_a_gutter_with_no_space_after_its_bar_is_learned_alone(bar: str) -> None:
    """`  12|[rank0]: Traceback …`: the gutter ends at its bar, and torch's rank prefix after it
    is read as in any log (learned with the gutter, each rank would be its own column)."""
    body = ["[rank0]: Traceback (most recent call last):", '[rank0]:   File "a.py", line 1, in f']
    body += ["[rank1]: RuntimeError: boom", "INFO 10-03 21:00:01 [a.py:1] step"] * 3
    numbered = [f"{n + 1:>4}{bar}{line}" for n, line in enumerate(body)]
    pattern = learn_outer_prefix(numbered)
    assert pattern is not None
    assert all(pattern.match(raw) and pattern.match(raw).end() == raw.index(bar) + 1 for raw in numbered)
    with learned_prefix(pattern):
        assert parse_line(2, numbered[2]).stream == parse_line(2, body[2]).stream == "rank1"
    # pm2's `0|vllm     | ` stays one column: the space after its last bar ends it.
    pm2 = learn_outer_prefix([f"0|vllm     | {line}" for line in body])
    assert pm2 is not None and pm2.match("0|vllm     | x").end() == len("0|vllm     | ")


@pytest.mark.parametrize(
    ("header", "level"),
    [
        ("[2025-04-23 21:09:12] [ERROR] [vllm.v1.engine.core] ", "ERROR"),
        ("[2025-04-23 21:09:12 +0000] [1234] [WARNING] ", "WARNING"),
        ("[2025-04-23 21:09:12,123] [vllm] [FATAL] ", "CRITICAL"),
        ("2025-04-23 21:09:12,123 ERROR vllm.core: ", "ERROR"),
        ("2025-04-23T21:09:12.123Z [WARN] ", "WARNING"),
        ("2025-04-23 21:09:12 [1234] INFO [vllm.core] ", "INFO"),
        ("(EngineCore pid=176) 2025-04-23T21:09:12.123Z [ERROR] ", "ERROR"),
        ("ERROR:vllm.engine.core:", "ERROR"),
        ("WARNING:torch.distributed.run:", "WARNING"),
    ],
)
@pytest.mark.parametrize(
    "message",
    [
        "EngineCore encountered a fatal error.",
        '  File "/x/core.py", line 1, in run',
        "torch.AcceleratorError: boom",
    ],
)
def test_a_logging_format_of_the_users_own_is_a_header(header: str, level: str, message: str) -> None:
    """A header of the user's own format: its level read, the message after it as printed (a
    frame keeps its indentation; an exception's dotted class is no logger's name)."""
    line = _fresh(0, header + message)
    assert (line.level, line.message) == (level, message)


@pytest.mark.parametrize(
    "raw",
    [
        "[rank0]: RuntimeError: boom",  # (a process prefix, then the message)
        "2025-04-23 21:09:12,123 Engine died: ERROR in step",  # (no level after the time)
        "[2025-04-23 21:09:12] ERRORS were found",
        "ERROR: nothing to do",  # (uvicorn's, its own alternative)
    ],
)
def test_text_like_a_header_of_the_users_own_is_not_one(raw: str) -> None:
    line = _fresh(0, raw)
    assert line.level is None or raw.startswith("ERROR: ")
    assert line.message.endswith(raw.split(": ", 1)[-1] if raw.startswith("[rank0]") else raw[-10:])


def test_long_lines_and_many_shapes_parse_alike() -> None:
    long = "(APIServer pid=1) ERROR 10-03 21:00:01 [a.py:1] " + "x9" * lines._MEMO_MAX_LINE
    assert parse_line(0, long) == _fresh(0, long)
    shapes = [f"(Worker{'_' * n} pid={n}) INFO 10-03 21:00:01 [a.py:{n}] step" for n in range(5000)]
    parsed = [parse_line(n, raw) for n, raw in enumerate(shapes)]
    assert len(lines._LEARNED.parsing.layouts) <= lines._MEMO_MAX_LAYOUTS
    assert parsed == [_fresh(n, raw) for n, raw in enumerate(shapes)]
    writers = [f"(Worker pid={n}) INFO 10-03 21:00:01 [a.py:1] step" for n in range(1000)]
    assert [parse_line(0, raw).stream for raw in writers] == [f"Worker:{n}" for n in range(1000)]


def _named_digits(pattern: str) -> list[str]:
    """The places in `pattern` that tell one ASCII digit from another: a literal digit, or a
    character range that holds some digits but not all."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, (sre_parse.SubPattern, list, tuple)):
            items = node.data if isinstance(node, sre_parse.SubPattern) else node
            for item in items:
                if isinstance(item, tuple) and len(item) == 2 and str(item[0]) in ("LITERAL", "NOT_LITERAL"):
                    if chr(item[1]) in ASCII_DIGITS:
                        found.append(f"{item[0]} {chr(item[1])!r}")
                elif isinstance(item, tuple) and len(item) == 2 and str(item[0]) == "RANGE":
                    low, high = item[1]
                    digits = {d for d in range(48, 58) if low <= d <= high}
                    if digits and len(digits) < 10:
                        found.append(f"RANGE {chr(low)}-{chr(high)}")
                else:
                    walk(item)

    walk(sre_parse.parse(pattern))
    return found


def test_the_prefix_patterns_name_no_digit() -> None:
    """What makes the masked memo exact: no pattern that takes a line apart (nor the literals
    that gate them) tells one digit from another."""
    assert _named_digits(r"a1[2-5]x") == ["LITERAL '1'", "RANGE 2-5"]  # (the check can fail)
    assert _named_digits(r"\d[0-9A-F][^)]\w") == []
    for pattern in (lines._OUTER, lines._PROCESS, lines._VLLM_HEADER, lines._OTHER_HEADER):
        assert _named_digits(pattern.pattern) == [], pattern.pattern[:60]
    literals = "".join([*lines._OUTER_FIRST, *lines._PROCESS_FIRST])
    assert not any(c in ASCII_DIGITS for c in literals)


@pytest.mark.parametrize(
    "prefix",
    ["node-7 pod/vllm-0 ", "2025-06-20 20:02:20.931 host12 ", "[job 42] worker_3: ", "x1y2z3 | "],
)
def test_a_learned_prefix_names_no_digit(prefix: str) -> None:
    pattern = re.compile(lines._shape(prefix))
    assert _named_digits(pattern.pattern) == []
    assert pattern.match(prefix) and pattern.match(_with_other_digits(prefix, random.Random(1)))


def test_records_of_lines_share_the_texts_they_repeat() -> None:
    """A long log repeats its writers, times and sources: the records of its lines hold one
    text of each (a million kept lines otherwise hold a million copies)."""
    head = "(APIServer pid=100) ERROR 10-03 21:00:01 [serving_chat.py:245]"
    first = parse_line(0, f"{head} Traceback (most recent call last):")
    other_shape = parse_line(1, f'{head}   File "/x/y.py", line 3, in run')
    for same in ("stream", "process", "timestamp", "source"):
        assert getattr(first, same) is getattr(other_shape, same), same
    later = parse_line(2, "(APIServer pid=100) ERROR 10-03 21:00:02 [serving_chat.py:245] x")
    assert later.timestamp == "10-03 21:00:02" and later.source is first.source


# A progress bar that never ended its row, then the line printed next (as in corpus 102 and a
# healthy log: `…1.33s/it](EngineCore_DP0 pid=32) INFO 02-09 09:56:47 [shm_broadcast.py:542] …`).
GLUED = [
    (
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  49%|████▉     | 41/83 [00:58<00:55,  1.33s/it]",
        "",
    ),
    ("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.20s/it]", ""),
    ("100%|██████████| 4/4 [00:02<00:00,  1.60it/s]", "vllm-1  | "),
    (
        "a.safetensors:  99%|█████████▉| 9.93G/10.0G [01:40<00:00, 110MB/s]",
        "2025-01-02T03:04:05.678Z stderr F ",
    ),
    ("Loading: 10%|█| 1/10 [00:01<00:09, 1.0it/s]Loading: 20%|██| 2/10 [00:02<00:08, 1.0it/s]", ""),
]


@pytest.mark.parametrize(("bar", "runtime"), GLUED)
@pytest.mark.parametrize(
    "line",
    [
        "(EngineCore_DP0 pid=32) ERROR 02-09 09:56:47 [core.py:1] EngineCore failed to start.",
        "\x1b[1;36m(EngineCore_DP0 pid=32)\x1b[0;0m ERROR 02-09 09:56:47 [core.py:1] EngineCore failed to start.",
        "ERROR 02-09 09:56:47 core.py:1] EngineCore failed to start.",
        "Traceback (most recent call last):",
    ],
)
def test_a_bar_sharing_its_row_leaves_the_line_after_it_as_printed(bar: str, runtime: str, line: str) -> None:
    alone, glued = _fresh(0, runtime + line), _fresh(0, runtime + bar + line)
    assert (glued.message, glued.process, glued.pid, glued.level, glued.stream) == (
        alone.message,
        alone.process,
        alone.pid,
        alone.level,
        alone.stream,
    )
    assert glued.message_col == alone.message_col + len(bar)


@pytest.mark.parametrize("bar", [bar for bar, _ in GLUED])
def test_a_bar_alone_on_its_row_is_its_own_text(bar: str) -> None:
    """(Of bars redrawn in one row without a `\r`, the last.)"""
    last = bar[bar.rfind("Loading") :] if bar.count("Loading:") > 1 else bar
    assert _fresh(0, bar).message == last
    assert _fresh(0, bar + "   ").message == last + "   "  # (padded to a width)
