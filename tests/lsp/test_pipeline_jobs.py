"""The pipeline knows when no worker thread reads a document: only then may an append grow a
document's text in place (`GrowingText`), rebinding what reads it. A job counts until its thread
is done with it, also when whoever awaited it gave up (a cancelled request)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from vllm_log_lsp.lsp.server import create_server


def test_a_job_counts_until_its_thread_is_done() -> None:
    async def scenario() -> None:
        pipeline = create_server().pipeline
        assert pipeline.idle
        release, started = threading.Event(), threading.Event()

        def job() -> str:
            started.set()
            release.wait(10)
            return "done"

        waiting = asyncio.ensure_future(pipeline.in_worker(job))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        assert not pipeline.idle
        waiting.cancel()  # the request is cancelled: its thread still reads
        await asyncio.sleep(0.05)
        assert waiting.cancelled() and not pipeline.idle
        release.set()
        for _ in range(200):  # the thread finishes; the count drops on the event loop
            if pipeline.idle:
                break
            await asyncio.sleep(0.01)
        assert pipeline.idle
        assert await pipeline.in_worker(len, "abc") == 3 and pipeline.idle

    asyncio.run(scenario())


def test_a_failing_job_is_counted_done() -> None:
    async def scenario() -> None:
        pipeline = create_server().pipeline

        def job() -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            await pipeline.in_worker(job)
        assert pipeline.idle  # (counted done before the awaiting caller resumes)

    asyncio.run(scenario())
