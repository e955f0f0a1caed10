"""The Python stack `faulthandler` prints after `Fatal Python error: Segmentation fault`: the
crashing thread's frames become the fault's, so rules that tell causes apart by frames read
them as a traceback's (a segfault inside vLLM's custom all-reduce is that kernel's failure, with
its flag as the fix). Before, the stack was not read: every such dump was a bare segfault whose
first fix asked for the stack the log already held.
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import Analyzer, analyze
from vllm_log_lsp.core.tracebacks import faulthandler_stack

SITE = "/usr/local/lib/python3.12/dist-packages"


def _dump(innermost: str, current: str = "Current thread 0x00007f3d5f5fe740") -> list[str]:
    """faulthandler's dump after the fault line: another thread's stack, then the crashing one's."""
    return [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f3c0bfff640 (most recent call first):",
        '  File "/usr/lib/python3.12/threading.py", line 355 in wait',
        '  File "/usr/lib/python3.12/threading.py", line 1012 in _bootstrap',
        "",
        f"{current} (most recent call first):",
        f'  File "{innermost}", line 212 in all_reduce',
        f'  File "{SITE}/vllm/distributed/parallel_state.py", line 480 in all_reduce',
        f'  File "{SITE}/vllm/v1/worker/gpu_model_runner.py", line 2601 in _dummy_run',
        "",
        "Extension modules: numpy._core._multiarray_umath, torch._C, torch._C._fft (total: 98)",
    ]


def _log(dump: list[str], writer: str = "(Worker_TP1 pid=355) ") -> str:
    lines = [
        "(APIServer pid=1) INFO 05-02 18:33:28 [api_server.py:1880] vLLM API server version 0.10.1",
        *(writer + line for line in dump[:5]),
        "(EngineCore_DP0 pid=220) INFO 05-02 18:34:39 [core.py:1] another process's line in between",
        *(writer + line for line in dump[5:]),
        "(EngineCore_DP0 pid=220) ERROR 05-02 18:34:40 [multiproc_executor.py:146] Worker proc VllmWorker-1 died "
        "unexpectedly, shutting down executor.",
    ]
    return "\n".join(lines) + "\n"


def test_the_crashing_threads_stack_is_read_innermost_last() -> None:
    dump = _dump(f"{SITE}/vllm/distributed/device_communicators/custom_all_reduce.py")
    frames = faulthandler_stack(enumerate(dump[1:], 1))
    assert [(f.line, f.function) for f in frames] == [(9, "_dummy_run"), (8, "all_reduce"), (7, "all_reduce")]
    assert faulthandler_stack(enumerate(["", "RuntimeError: not a dump"])) == []
    # With no `Current thread` (one thread dumped: `Stack`), the first stack is the crash's.
    single = ["Stack (most recent call first):", '  File "/a/b.py", line 3 in f']
    assert [f.path for f in faulthandler_stack(enumerate(single))] == ["/a/b.py"]


@pytest.mark.parametrize("writer", ["(Worker_TP1 pid=355) ", "", "[rank1]: "])
def test_a_segfault_inside_custom_all_reduce_is_that_kernels_failure(writer: str) -> None:
    text = _log(_dump(f"{SITE}/vllm/distributed/device_communicators/custom_all_reduce.py"), writer)
    [finding] = analyze(text).findings
    assert finding.rule_id == "custom-allreduce-failure"
    assert finding.root.line == 1
    assert any(op.name == "--disable-custom-all-reduce" for fix in finding.fixes for op in fix.fix.ops)


def test_a_segfault_elsewhere_stays_a_segfault() -> None:
    text = _log(_dump(f"{SITE}/tokenizers/__init__.py"))
    [finding] = analyze(text).findings
    assert finding.rule_id == "segmentation-fault"
    # A thread named in its header (Python 3.13+) is still the crashing one.
    named = _log(
        _dump(
            f"{SITE}/vllm/distributed/device_communicators/custom_all_reduce.py",
            "Current thread 0x7f [python3]",
        )
    )
    assert [f.rule_id for f in analyze(named).findings] == ["custom-allreduce-failure"]


def test_a_stack_is_looked_for_right_after_its_fault_only() -> None:
    """The dump is written at once: past 40 other writers' lines in a row it is not looked for
    (a restart loop of segfaults would otherwise parse hundreds of lines per death)."""
    dump = _dump(f"{SITE}/vllm/distributed/device_communicators/custom_all_reduce.py")
    others = [f"(EngineCore_DP0 pid=220) INFO 05-02 18:34:39 [core.py:1] step {n}" for n in range(41)]
    died = (
        "(EngineCore_DP0 pid=220) ERROR 05-02 18:34:40 [multiproc_executor.py:146] Worker proc VllmWorker-1 "
        "died unexpectedly, shutting down executor."
    )
    writer = "(Worker_TP1 pid=355) "
    late = "\n".join([writer + dump[0], *others, *(writer + line for line in dump[1:]), died])
    assert [f.rule_id for f in analyze(late + "\n").findings] == ["segmentation-fault"]


def test_a_segfault_with_its_stack_says_where_and_asks_for_no_stack() -> None:
    """The stack's innermost frame is the evidence of where it crashed; the fix that would turn
    on `faulthandler` is left out where the log holds its stack, and kept where it does not."""
    [with_stack] = analyze(_log(_dump(f"{SITE}/tokenizers/__init__.py"))).findings
    assert with_stack.evidence["crashed_in"] == f"{SITE}/tokenizers/__init__.py:212 in all_reduce"
    env = [op.name for fix in with_stack.fixes for op in fix.fix.ops if op.op == "set_env"]
    assert "PYTHONFAULTHANDLER" not in env
    bare = _log(["Segmentation fault (core dumped)"], writer="")
    [without] = analyze(bare).findings
    assert without.rule_id == "segmentation-fault" and "crashed_in" not in without.evidence
    assert [op.name for op in without.fixes[0].fix.ops] == ["PYTHONFAULTHANDLER"]


def test_a_growing_log_reads_a_dump_that_was_cut_again() -> None:
    """A dump cut by the end of a growing log may go on: the fault is read again when the log
    grows (as an open traceback is), so the grown analysis is the fresh one at every cut."""
    text = _log(_dump(f"{SITE}/vllm/distributed/device_communicators/custom_all_reduce.py"))
    fresh = Analyzer().analyze(text, line_table=True)
    assert [f.rule_id for f in fresh.findings] == ["custom-allreduce-failure"]
    differ = []
    for cut in range(100, len(text), 23):
        analyzer = Analyzer()
        analyzer.analyze(text[:cut], line_table=True)
        if analyzer.analyze(text, line_table=True, grown_from=text[:cut]) != fresh:
            differ.append(cut)
    assert differ == []
