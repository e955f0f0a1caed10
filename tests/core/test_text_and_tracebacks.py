"""The line index against a reference split, prefix parsing, and traceback styles of every Python."""

from __future__ import annotations

import re
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import lsp_lines
from vllm_log_lsp.core import text as text_module
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.text import LogIndex, decode_log, may_hold_colour, strip_ansi

line_text = st.text(alphabet=st.sampled_from(list("ab \t€😀模\r\n")), max_size=60)


@given(line_text)
def test_index_matches_lsp_line_splitting(text: str) -> None:
    index = LogIndex(text)
    reference = lsp_lines(text)
    assert index.line_count == len(reference)
    for number, expected in enumerate(reference):
        assert index.line_text(number) == expected
        start = index.line_start(number)
        assert index.line_of(start) == number


@given(line_text, st.data())
def test_lazy_line_of_agrees_with_full_index(text: str, data: st.DataObject) -> None:
    offsets = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    lazy, full = LogIndex(text), LogIndex(text)
    full.line_count  # noqa: B018 - builds the full index
    for offset in offsets:
        assert lazy.line_of(offset) == full.line_of(offset)


def test_decode_replaces_invalid_utf8_and_warns() -> None:
    text, warnings = decode_log(b"ok\n\xff\xfe bad\n\x00binary")
    assert text.split("\n")[1].startswith("\ufffd\ufffd bad")
    assert any("invalid UTF-8" in w for w in warnings)
    assert any("NUL" in w for w in warnings)


def test_strip_ansi_maps_columns_back() -> None:
    raw = "\x1b[1;36m(Worker pid=1)\x1b[0;0m ERROR x"
    clean, colmap = strip_ansi(raw)
    assert clean == "(Worker pid=1) ERROR x"
    assert colmap is not None and raw[colmap[clean.index("ERROR")] :].startswith("ERROR")


@given(
    st.lists(
        st.sampled_from(["\x1b[0m", "\x1b[1;36m", "[0;36m", "(", ")", "x", "模", "\x1bM", "\x1b"]),
        max_size=20,
    )
)
def test_strip_ansi_maps_every_column_to_the_character_it_kept(pieces: list[str]) -> None:
    """Each clean column maps to the line's column of the character kept there, and the end to
    the end of the line, wherever sequences were removed (adjacent ones, at either end)."""
    raw = "".join(pieces)
    clean, colmap = strip_ansi(raw)
    if colmap is None:
        assert clean == raw
        return
    kept = [match.span() for match in re.finditer(r"(?s).", raw)]
    removed = {i for m in text_module._ANSI.finditer(raw) for i in range(*m.span())}
    columns = [start for start, _ in kept if start not in removed]
    assert [colmap[i] for i in range(len(clean))] == columns
    assert "".join(raw[c] for c in columns) == clean
    assert colmap[len(clean)] == len(raw)


@pytest.mark.parametrize(
    ("raw", "process", "level", "source", "message"),
    [
        (
            "(EngineCore_DP0 pid=132) ERROR 03-09 12:56:44 [core.py:1100] boom",
            "EngineCore_DP0",
            "ERROR",
            "core.py:1100",
            "boom",
        ),
        ("ERROR 01-21 08:27:34 engine.py:366] boom", None, "ERROR", "engine.py:366", "boom"),
        (
            "(VllmWorker rank=1 pid=14283) WARNING 06-16 07:53:45 [a/.../b/c.py:527] boom",
            "VllmWorker rank=1",
            "WARNING",
            "a/.../b/c.py:527",
            "boom",
        ),
        (
            "(EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2, ip=10.0.0.1) ERROR 01-31 14:21:03 [worker_base.py:344] boom",
            "RayWorkerWrapper",
            "ERROR",
            "worker_base.py:344",
            "boom",
        ),
        ("(APIServer pid=1) INFO:     127.0.0.1:1 - x", "APIServer", "INFO", None, "127.0.0.1:1 - x"),
        (
            "2025-06-20 20:02:32,812 - __main__ - ERROR - vLLM process terminated unexpectedly",
            None,
            "ERROR",
            None,
            "vLLM process terminated unexpectedly",
        ),
        (
            "(raylet) [2025-05-19 09:49:02,102 C 594234 594234] (raylet) check failed",
            None,
            None,
            None,
            "[2025-05-19 09:49:02,102 C 594234 594234] (raylet) check failed",
        ),
        (
            "Loading safetensors checkpoint shards: 100% Completed | 1/1",
            None,
            None,
            None,
            "Loading safetensors checkpoint shards: 100% Completed | 1/1",
        ),
    ],
)
def test_parse_line(raw: str, process, level, source, message) -> None:
    line = parse_line(0, raw)
    assert (line.process, line.level, line.source, line.message) == (process, level, source, message)
    assert raw[line.message_col :] == message


def one_root(text: str) -> str:
    [finding] = analyze(textwrap.dedent(text).lstrip("\n")).findings
    return f"{finding.line + 1}: {finding.root_text.splitlines()[0]}"


def test_python_313_traceback_with_elisions() -> None:
    text = """
    Traceback (most recent call last):
      File "/usr/bin/vllm", line 10, in <module>
        sys.exit(main())
                 ~~~~^^
      File "/vllm/entrypoints/cli/serve.py", line 60, in cmd
        uvloop.run(
        ~~~~~~~~~~^
            run_server(args)
            ^^^^^^^^^^^^^^^^
        ...<3 lines>...
        )
        ^
      File "/vllm/worker.py", line 221, in init_device
        torch.cuda.set_device(self.device)
    torch.AcceleratorError: HIP error: invalid kernel file
    """
    assert one_root(text) == "15: torch.AcceleratorError: HIP error: invalid kernel file"


def test_collapsed_indentation_paste() -> None:
    text = """
    (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] EngineCore encountered a fatal error.
    (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] Traceback (most recent call last):
    (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] File "/vllm/distributed/kv_transfer/connector.py", line 40, in start_load_kv
    (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] assert self.connector_worker is not None
    (EngineCore_DP0 pid=2) ERROR 10-19 13:07:53 [core.py:799] AssertionError
    """
    assert one_root(text) == "5: AssertionError"


def test_message_continues_on_indented_lines() -> None:
    text = """
    Traceback (most recent call last):
      File "<string>", line 1, in <module>
      File "/usr/lib/python3.12/multiprocessing/spawn.py", line 122, in spawn_main
        exitcode = _main(fd, parent_sentinel)
    RuntimeError:
            An attempt has been made to start a new process before the
            current process has finished its bootstrapping phase.
    """
    [finding] = analyze(textwrap.dedent(text).lstrip("\n")).findings
    assert finding.line + 1 == 5
    assert "bootstrapping phase" in finding.exception.message


def test_ray_remote_traceback_gives_the_inner_exception() -> None:
    text = """
    ERROR 05-19 09:49:02 [core.py:398] EngineCore encountered a fatal error.
    ERROR 05-19 09:49:02 [core.py:398] Traceback (most recent call last):
    ERROR 05-19 09:49:02 [core.py:398]   File "/ray/experimental/compiled_dag_ref.py", line 27, in _process_return_vals
    ERROR 05-19 09:49:02 [core.py:398]     raise val.as_instanceof_cause()
    ERROR 05-19 09:49:02 [core.py:398] ray.exceptions.RayTaskError(ValueError): ray::RayWorkerWrapper.__ray_call__() (pid=597873, ip=192.168.1.10)
    ERROR 05-19 09:49:02 [core.py:398]   File "/torch/cuda/_utils.py", line 34, in _get_device_index
    ERROR 05-19 09:49:02 [core.py:398]     raise ValueError(f"Expected a cuda device, but got: {device}")
    ERROR 05-19 09:49:02 [core.py:398] ValueError: Expected a cuda device, but got: npu:0
    """
    assert one_root(text) == "8: ValueError: Expected a cuda device, but got: npu:0"


def test_interleaved_processes_do_not_break_a_traceback() -> None:
    text = """
    (EngineCore_DP0 pid=2) ERROR 01-01 00:00:00 [core.py:1] EngineCore failed to start.
    (EngineCore_DP0 pid=2) ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):
    (Worker_TP0 pid=3) INFO 01-01 00:00:00 [x.py:1] Traceback (most recent call last): in an info message
    (EngineCore_DP0 pid=2) ERROR 01-01 00:00:00 [core.py:1]   File "/vllm/model_executor/model_loader/utils.py", line 40, in load_weights
    (APIServer pid=1) INFO 01-01 00:00:00 [api.py:1] ValueError: not ours
    (EngineCore_DP0 pid=2) ERROR 01-01 00:00:00 [core.py:1]     raise KeyError(name)
    (EngineCore_DP0 pid=2) ERROR 01-01 00:00:00 [core.py:1] KeyError: 'model.layers.0.mlp.experts.w13_weight'
    """
    assert one_root(text) == "7: KeyError: 'model.layers.0.mlp.experts.w13_weight'"


def test_truncated_traceback_still_yields_its_last_exception() -> None:
    text = """
    (TaskRunner pid=4) super().__init__(open(name, mode))
    (TaskRunner pid=4) FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/model.pt'
    (vLLMHttpServer pid=5) ERROR 05-07 21:12:03 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.
    """
    assert one_root(text) == "2: FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/model.pt'"


@given(line_text, line_text)
def test_following_index_equals_a_fresh_one(old: str, appended: str) -> None:
    previous = LogIndex(old)
    previous.line_count  # noqa: B018 - builds the full index
    grown = LogIndex.following(old + appended, previous)
    fresh = LogIndex(old + appended)
    assert grown.line_count == fresh.line_count
    assert [grown.line_start(n) for n in range(fresh.line_count)] == [
        fresh.line_start(n) for n in range(fresh.line_count)
    ]


def test_a_cut_line_does_not_read_as_invalid_utf8() -> None:
    data = ("Capturing CUDA graphs: " + "█" * 50 + "\n").encode("utf-8")
    for limit in range(24, 40):
        index = LogIndex(data)
        assert "\ufffd" not in index.line_at(0, limit)
        assert index.invalid_utf8_line is None
    broken = LogIndex(b"ok\nbad \xff here\n")
    broken.line_at(3)
    assert broken.invalid_utf8_line == 1


@pytest.mark.parametrize("esc", ["\x1b", "^[", "\\u001b", "\\u001B", "\\x1b", "\\033", "\\e", "\u241b"])
def test_a_colour_code_is_taken_out_however_its_esc_is_written(esc: str) -> None:
    """The terminal's ESC, and the ways a viewer writes it out; the columns map back."""
    line = f"{esc}[1;36m(APIServer pid=1){esc}[0;0m ERROR 10-03 21:00:01 [a.py:1] {esc}[31mboom{esc}[m"
    clean, columns = strip_ansi(line)
    assert clean == "(APIServer pid=1) ERROR 10-03 21:00:01 [a.py:1] boom"
    assert columns is not None and line[columns[clean.index("boom")] :].startswith("boom")
    assert may_hold_colour(line)


@pytest.mark.parametrize(
    "line",
    [
        r"C:\models\x1b\weights.bin not found",  # (a path: no `[…m` after the backslash form)
        r"regex \e[a-z] in a message",
        "^[[ not a colour code",
        "plain (APIServer pid=1) line",
    ],
)
def test_text_that_only_looks_like_a_written_esc_is_kept(line: str) -> None:
    assert strip_ansi(line)[0] == line
