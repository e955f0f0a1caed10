"""An exception group's traceback (PEP 654, Python 3.11+), as anyio's and starlette's task
groups raise them in the API server: the tree drawn in a margin (`| `), sub-exceptions between
separators (`+-+---- 1 ----`), each group closed by `+------------`.

Before, its lines were not read: a margin hid each frame and exception, so a CUDA OOM raised
inside a task group was no candidate and the ASGI error line above it was named `unrecognized`,
and the traceback never ended (it took a later, separate exception as its own).
"""

from __future__ import annotations

import pytest

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core.analyze import Analyzer, analyze
from vllm_log_lsp.core.tracebacks import TRACEBACK_HEADER

LOGS = [p for folder in (CRASH, CRASH2, CRASH3) for p in sorted(folder.glob("*.log"))]

# Python 3.11's own print of a nested group (two leaves, one a chain), and a line after it.
NESTED = """\
  + Exception Group Traceback (most recent call last):
  |   File "/srv/app.py", line 18, in <module>
  |     outer()
  |   File "/srv/app.py", line 17, in outer
  |     raise ExceptionGroup("outer group", errs)
  | ExceptionGroup: outer group (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Exception Group Traceback (most recent call last):
    |   File "/srv/app.py", line 10, in inner
    |     raise ExceptionGroup("inner group", errs)
    | ExceptionGroup: inner group (2 sub-exceptions)
    +-+---------------- 1 ----------------
      | Traceback (most recent call last):
      |   File "/srv/app.py", line 1, in f
      |     def f(): raise ValueError("leaf one")
      |              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
      | ValueError: leaf one
      +---------------- 2 ----------------
      | Traceback (most recent call last):
      |   File "/srv/app.py", line 3, in g
      |     try: f()
      |          ^^^
      | ValueError: leaf one
      |<space>
      | The above exception was the direct cause of the following exception:
      |
      | Traceback (most recent call last):
      |   File "/srv/app.py", line 4, in g
      |     except ValueError as e: raise RuntimeError("wrapped") from e
      | RuntimeError: wrapped
      +------------------------------------
    +---------------- 2 ----------------
    | TypeError: a leaf with no traceback
    +---------------- ... ----------------
    | and 3 more exceptions
    +------------------------------------
RuntimeError: printed later, not part of it
""".replace("<space>", " ")  # (Python ends a blank line's margin with a space; a copy may trim it)

ASGI_OOM = """\
(APIServer pid=1) INFO 05-02 18:33:28 [api_server.py:1880] vLLM API server version 0.10.1
(APIServer pid=1) INFO:     10.0.0.5:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
(APIServer pid=1) ERROR:    Exception in ASGI application
(APIServer pid=1)   + Exception Group Traceback (most recent call last):
(APIServer pid=1)   |   File "/usr/lib/python3/dist-packages/starlette/_utils.py", line 76, in collapse_excgroups
(APIServer pid=1)   |     yield
(APIServer pid=1)   | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
(APIServer pid=1)   +-+---------------- 1 ----------------
(APIServer pid=1)     | Traceback (most recent call last):
(APIServer pid=1)     |   File "/usr/lib/python3/dist-packages/vllm/v1/engine/async_llm.py", line 380, in generate
(APIServer pid=1)     |     out = q.get_nowait() or await q.get()
(APIServer pid=1)     |   File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1404, in execute_model
(APIServer pid=1)     |     logits = self.model.compute_logits(sample_hidden_states, None)
(APIServer pid=1)     | torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.
(APIServer pid=1)     +------------------------------------
(APIServer pid=1) ERROR 05-02 18:35:01 [async_llm.py:419] AsyncLLM output_handler failed.
(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
"""


def test_a_nested_group_is_read_as_its_tree() -> None:
    analyzer = Analyzer()
    analyzer.analyze(NESTED)
    [tb] = analyzer._scan.tracebacks
    lines = NESTED.split("\n")
    assert [(e.type_name, e.message) for e in tb.chain] == [
        ("ExceptionGroup", "outer group (2 sub-exceptions)"),
        ("ExceptionGroup", "inner group (2 sub-exceptions)"),
        ("ValueError", "leaf one"),
        ("ValueError", "leaf one"),
        ("RuntimeError", "wrapped"),
        ("TypeError", "a leaf with no traceback"),
    ]
    assert lines[tb.last_line] == "    +------------------------------------"  # (not the line after)
    assert [f.lineno for f in tb.chain[2].frames] == [1]
    leaf = tb.chain[2]
    assert lines[leaf.line][leaf.span.start :] == "ValueError: leaf one"  # (after the margin)


@pytest.mark.parametrize(
    "writer",
    ["", "(APIServer pid=1) ", "(APIServer pid=1) ERROR 05-02 18:35:01 [serving_chat.py:1] "],
)
def test_an_oom_inside_a_task_group_is_the_root_cause(writer: str) -> None:
    text = "".join(
        line
        if line.startswith("(APIServer pid=1) INFO")
        else writer + line.removeprefix("(APIServer pid=1) ")
        for line in ASGI_OOM.splitlines(keepends=True)
    )
    [finding] = analyze(text).findings
    line = text.split("\n")[finding.root.line]
    assert finding.rule_id == "oom-serving"
    assert line[finding.root.start :].startswith("torch.OutOfMemoryError: CUDA out of memory")


def test_a_request_error_inside_a_task_group_is_no_death() -> None:
    recovered = ASGI_OOM.split("(APIServer pid=1) ERROR 05-02")[0].replace(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 79.19 GiB of which 1.02 GiB is free.",
        "ValueError: the chat template rejected the messages",
    )
    recovered += '(APIServer pid=1) INFO:     10.0.0.5:51236 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    assert not analyze(recovered).findings


def _as_sub_exception(text: str) -> tuple[str, dict[int, int]]:
    """`text` with each of its tracebacks printed as the one sub-exception of a task group's
    exception group (its writer's prefix kept before the margin); and where each line went."""
    analyzer = Analyzer()
    if analyzer.analyze(text).source_map is not None or "\r" in text.replace("\r\n", ""):
        # (read through a transcript, or numbered with a bare `\r`'s breaks: left as it is)
        return text, {n: n for n in range(text.count("\n") + text.count("\r") + 1)}
    lines = text.split("\n")
    members: dict[int, str] = {}  # a traceback's lines: their writer's prefix
    headers: dict[int, str] = {}
    lasts: set[int] = set()
    for tb in analyzer._scan.tracebacks:
        raw = lines[tb.header_line].rstrip("\r")
        if not raw.endswith(TRACEBACK_HEADER) or not tb.chain:
            continue
        prefix = raw[: -len(TRACEBACK_HEADER)]
        body = [n for n in tb.lines if n > tb.header_line and lines[n].startswith(prefix)]
        headers[tb.header_line] = prefix
        members.update(dict.fromkeys([tb.header_line, *body], prefix))
        lasts.add(max([tb.header_line, *body]))
    out: list[str] = []
    moved: dict[int, int] = {}
    for number, line in enumerate(lines):
        if number in headers:
            prefix = headers[number]
            out += [
                prefix + "  + Exception Group Traceback (most recent call last):",
                prefix
                + '  |   File "/usr/lib/python3/dist-packages/anyio/_backends/_asyncio.py", line 772, in __aexit__',
                prefix + "  |     raise BaseExceptionGroup(",
                prefix + "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
                prefix + "  +-+---------------- 1 ----------------",
            ]
        moved[number] = len(out)
        if number in members:
            prefix = members[number]
            out.append(prefix + "    | " + line[len(prefix) :])
            if number in lasts:
                out.append(prefix + "    +------------------------------------")
        else:
            out.append(line)
    return "\n".join(out), moved


def test_every_corpus_traceback_inside_a_task_group_answers_as_itself() -> None:
    differ, grouped = [], 0
    for path in LOGS:
        text = read_log(path)
        changed, moved = _as_sub_exception(text)
        grouped += changed != text
        want = [(moved[f.root.line], f.rule_id) for f in analyze(text).findings]
        if [(f.root.line, f.rule_id) for f in analyze(changed).findings] != want:
            differ.append(path.name)
    assert grouped > 40
    assert differ == []
