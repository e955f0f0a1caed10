"""Choosing a death's root among many candidates costs work proportional to their number.

A log of nothing but tracebacks (a server that fails every request before the engine dies, or
the benchmark's all-ERROR worst case) gives one death thousands of candidates. Ranking them must
not compare candidates by value against each other (that walks their events field by field, for
every pair): candidates are told apart by identity. Counted, not timed.
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.scan import Candidate

_REQUEST_FAILURE = """\
(APIServer pid=100) ERROR 10-03 22:{m:02d}:{s:02d} [serving_chat.py:245] Traceback (most recent call last):
(APIServer pid=100) ERROR 10-03 22:{m:02d}:{s:02d} [serving_chat.py:245]   File "/vllm/entrypoints/openai/serving_chat.py", line 240, in create_chat_completion
(APIServer pid=100) ERROR 10-03 22:{m:02d}:{s:02d} [serving_chat.py:245]     raise ValueError(msg)
(APIServer pid=100) ERROR 10-03 22:{m:02d}:{s:02d} [serving_chat.py:245] ValueError: request {n} is too long
"""
_ENGINE_DEATH = """\
(EngineCore_DP0 pid=200) ERROR 10-03 23:00:00 [core.py:710] EngineCore encountered a fatal error.
(EngineCore_DP0 pid=200) ERROR 10-03 23:00:00 [core.py:710] Traceback (most recent call last):
(EngineCore_DP0 pid=200) ERROR 10-03 23:00:00 [core.py:710]   File "/vllm/v1/engine/core.py", line 701, in run_engine_core
(EngineCore_DP0 pid=200) ERROR 10-03 23:00:00 [core.py:710]     engine_core.run_busy_loop()
(EngineCore_DP0 pid=200) ERROR 10-03 23:00:00 [core.py:710] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.
(APIServer pid=100) ERROR 10-03 23:00:01 [async_llm.py:480] AsyncLLM output_handler failed.
(APIServer pid=100) ERROR 10-03 23:00:01 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
"""


def _log(requests: int) -> str:
    failures = "".join(_REQUEST_FAILURE.format(m=n // 60 % 60, s=n % 60, n=n) for n in range(requests))
    return failures + _ENGINE_DEATH


@pytest.mark.parametrize("requests", [10, 400])
def test_ranking_never_compares_candidates_by_value(requests: int, monkeypatch) -> None:
    compared = 0
    by_value = Candidate.__eq__

    def counting(self: Candidate, other: object) -> bool:
        nonlocal compared
        compared += 1
        return by_value(self, other)

    monkeypatch.setattr(Candidate, "__eq__", counting)
    analysis = analyze(_log(requests))
    root_line = _log(requests).splitlines().index(_ENGINE_DEATH.splitlines()[4])
    assert [f.line for f in analysis.findings] == [root_line]  # the engine's OOM, not a request's
    assert compared == 0
