"""Diagnostics on real crash logs: one Error per root cause, Warnings on symptoms, clean healthy logs."""

from __future__ import annotations

import pytest
from lsprotocol import types

from .conftest import close, encoding_of, fixture_text, fresh_uri, open_log, units, wait_published

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Fixture → (1-based root-cause line from the corpus labels, label's symptom lines a diagnostic must cover).
CRASHES = {
    "crash-002.log": (16, [33, 55, 139]),  # vLLM-Ascend 0.11.2, TP=2
    "crash-035.log": (24, [4, 25, 46]),  # TP=4 workers
    "crash-039.log": (146, [31]),  # Ray
    "crash-006.log": (35, [10, 38, 44]),  # Ray
    "crash-011.log": (52, [35, 133, 134]),  # journalctl, restarts
    "crash-031.log": (25, [2, 5, 12]),  # no traceback
    "crash-033.log": (2, [42]),  # no traceback
    "crash-032.log": (160, [137, 256, 257]),  # docker compose
    "crash-038.log": (134, [40, 275]),  # CUDA-graph capture OOM, 0.19.1
    "crash-041.log": (109, [2, 280]),  # profiling OOM
}


def errors(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]


@pytest.mark.parametrize("name", sorted(CRASHES))
async def test_root_cause_error_and_symptom_warnings(client, name):
    root_line, symptom_lines = CRASHES[name]
    text = fixture_text(name)
    uri = fresh_uri(name)
    diagnostics = await open_log(client, uri, text)

    roots = errors(diagnostics)
    assert [d.range.start.line for d in roots] == [root_line - 1]
    root = roots[0]
    assert root.source == "vllm-log"
    assert root.code and root.code_description and root.code_description.href.startswith("https://")
    # The range is the exception text, not the line's prefix.
    line_text = text.splitlines()[root_line - 1]
    covered = line_text[: len(line_text)]
    assert root.range.start.character > 0 or not covered.startswith("(")
    assert root.range.end.character > root.range.start.character

    warnings = {d.range.start.line for d in diagnostics if d.severity == types.DiagnosticSeverity.Warning}
    related = {r.location.range.start.line for r in root.related_information or []}
    for line in symptom_lines:
        if line != root_line:
            assert line - 1 in warnings, f"no symptom warning on line {line}"
            assert line - 1 in related
    for d in diagnostics:
        if d.severity == types.DiagnosticSeverity.Warning:
            assert [r.location.range.start.line for r in d.related_information] == [root_line - 1]
    close(client, uri)


async def test_root_range_is_the_exception_text(client):
    text = fixture_text("crash-038.log")
    uri = fresh_uri("038.log")
    diagnostics = await open_log(client, uri, text)
    root = errors(diagnostics)[0]
    line = text.splitlines()[133]
    start = line.index("torch.AcceleratorError")
    assert root.range.start.character == start  # ASCII line: same in UTF-8 and UTF-16
    assert line[start : root.range.end.character].startswith(
        "torch.AcceleratorError: CUDA error: out of memory"
    )
    assert "CUDA" in root.message or "graph" in root.message.lower()
    close(client, uri)


@pytest.mark.parametrize("scheme", ["file", "untitled"])
@pytest.mark.parametrize("name", ["healthy-001.log", "healthy-012.log", "healthy-017.log"])
async def test_healthy_logs_get_no_diagnostics(client, name, scheme):
    uri = fresh_uri(name, scheme)
    assert await open_log(client, uri, fixture_text(name)) == []
    close(client, uri)


@pytest.mark.parametrize("scheme", ["file", "untitled"])
async def test_untitled_and_file_uris(client, scheme):
    uri = fresh_uri("crash.log", scheme)
    diagnostics = await open_log(client, uri, fixture_text("crash-041.log"))
    assert [d.range.start.line for d in errors(diagnostics)] == [108]
    close(client, uri)


async def test_log_language_is_sniffed(client):
    uri = fresh_uri("sniffed.log")
    diagnostics = await open_log(client, uri, fixture_text("crash-041.log"), language_id="log")
    assert errors(diagnostics)
    other = fresh_uri("other.log")
    plain = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: nope\n'
    # Not a vLLM log: nothing is published at all.
    await open_log(client, other, plain, language_id="plaintext", wait=False)
    python = fresh_uri("script.py")
    await open_log(client, python, fixture_text("crash-041.log"), language_id="python", wait=False)
    await open_log(client, fresh_uri("sync.log"), fixture_text("healthy-017.log"))  # a barrier
    assert other not in client.diagnostics and python not in client.diagnostics
    for u in (uri, other, python):
        close(client, u)


async def test_close_clears_diagnostics(client):
    uri = fresh_uri("closing.log")
    assert await open_log(client, uri, fixture_text("crash-031.log"))
    close(client, uri)
    assert await wait_published(client, uri, count=2) == []


async def test_exact_columns_with_cjk_and_emoji(client):
    """The root-cause line has `模型`, `🚀` before and inside the span: columns per encoding."""
    encoding = encoding_of(client)
    text = fixture_text("crash-unicode-compose.log")
    uri = fresh_uri("unicode.log")
    diagnostics = await open_log(client, uri, text)
    root = errors(diagnostics)[0]
    line = text.splitlines()[10]
    # Prefix `模型🚀-vllm  | ` + 60 ASCII characters: 73 UTF-16 units, 79 UTF-8 bytes (72 code points).
    assert root.range.start == types.Position(10, 73 if encoding == "utf-16" else 79)
    start = line.index("ValueError")
    assert start == 72
    assert root.range.end.character == units(line, encoding)
    close(client, uri)


async def test_exact_columns_on_a_log_with_unicode_messages(client):
    encoding = encoding_of(client)
    text = fixture_text("crash-unicode.log")
    uri = fresh_uri("unicode2.log")
    diagnostics = await open_log(client, uri, text)
    root = errors(diagnostics)[0]
    line = text.splitlines()[10]
    assert (root.range.start.line, root.range.start.character) == (10, 60)
    assert root.range.end.character == units(line, encoding)
    assert root.range.end.character == (len(line) + 1 if encoding == "utf-16" else len(line.encode()))
    close(client, uri)


async def test_precursors_are_information(client):
    uri = fresh_uri("032.log")
    diagnostics = await open_log(client, uri, fixture_text("crash-032.log"))
    info = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Information]
    assert [d.range.start.line for d in info] == [135]
    close(client, uri)


STALL = (
    "(EngineCore_DP0 pid=7) WARNING 03-03 19:{minute:02d}:00 [shm_broadcast.py:466] No available shared"
    " memory broadcast block found in 60 seconds. This typically happens when some processes are hanging."
)
TIMEOUT_DEATH = """\
(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708] EngineCore encountered a fatal error.
(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708]   File "/vllm/v1/engine/core.py", line 1, in run_busy_loop
(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708]     step()
(EngineCore_DP0 pid=7) ERROR 03-03 19:59:00 [core.py:708] TimeoutError: RPC call to sample_tokens timed out.
"""


@pytest.mark.parametrize("count", [2, 6])
async def test_repeated_precursor_is_one_diagnostic_with_a_count(client, count):
    stalls = [STALL.format(minute=m) for m in range(1, count + 1)]
    text = "\n".join(["(APIServer pid=1) INFO 03-03 19:00:00 [utils.py:1] non-default args: {}", *stalls])
    uri = fresh_uri("stalls.log")
    diagnostics = await open_log(client, uri, text + "\n" + TIMEOUT_DEATH)
    [info] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Information]
    assert info.range.start.line == 1 and info.code == "shm-broadcast-stall"
    assert info.message == f"Processes stopped making progress ({count} times, lines 2–{count + 1})"
    others = [r.location.range.start.line for r in info.related_information or []]
    assert others == list(range(2, count + 1))
    assert all(r.message.startswith("repeated on line ") for r in info.related_information)
    close(client, uri)


ASSERTION_LOG = """\
(EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] EngineCore encountered a fatal error.
(EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] Traceback (most recent call last):
(EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799]   File "/vllm/v1/core/sched/scheduler.py", line 512, in schedule
(EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799]     assert num_new_tokens > 0
(EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] AssertionError
(APIServer pid=1) ERROR 10-19 13:07:53 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
"""


async def test_bare_assertion_points_at_its_failing_frame(client):
    diagnostics = await open_log(client, fresh_uri("assertion.log"), ASSERTION_LOG)
    [root] = errors(diagnostics)
    assert root.range.start.line == 4
    frames = [r for r in root.related_information or [] if r.message.startswith("failing frame:")]
    assert [r.location.range.start.line for r in frames] == [2]
    assert frames[0].message == "failing frame: /vllm/v1/core/sched/scheduler.py:512 in schedule"
