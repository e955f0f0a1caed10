"""When and where documents are analysed, and when results are published.

- The event loop never analyses: a snapshot (text, version, settings) goes to a worker thread.
- Edits are debounced per document (`Settings.debounce_ms`); opening analyses at once.
- One analysis per document at a time (its `Analyzer` is incremental and not thread-safe).
- A result is published only if the document is still open and still at the snapshot's version:
  a newer edit always has its own analysis queued behind this one.
- Large documents get work-done progress when the client supports it, unless only appended to
  since their last analysis (that one is reused: it costs what was appended).
- Every worker job that reads a document or a result goes through `in_worker`: while none runs
  (`idle`), only the event loop reads them, and an append may grow a document in place
  (`GrowingText`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types

from ..core.analyze import Analyzer
from ..core.model import Analysis
from ..core.text import GrowingText, LogIndex
from .diagnostics import build_diagnostics
from .safety import log_to_client
from .settings import Settings
from .state import AnalysisResult, DocumentState

if TYPE_CHECKING:
    from .server import VllmLogServer

_T = TypeVar("_T")

#: Documents at least this big (characters) get work-done progress.
PROGRESS_MIN_CHARS = 2_000_000


def input_warnings(text: str) -> tuple[str, ...]:
    """What is odd about synced text (bytes decoding problems are `decode_log`'s, for files)."""
    if "\x00" in text[:65536]:
        return ("the document contains NUL bytes: it may be binary, not a log",)
    return ()


def compute(
    analyzer: Analyzer,
    document: GrowingText,
    version: int | None,
    settings: Settings,
    newline_only: bool = False,
) -> AnalysisResult:
    """The worker-thread part: analyse, and index lines so features can read them for free.
    An analysis of the same `document` after appends reuses the previous one (see
    `Analyzer.analyze`)."""
    text = document.text
    if len(text) > settings.max_file_chars:
        reason = (
            f"Not analysed: this log is {len(text) / 1048576:.0f} MB, over the "
            f"vllmLog.maxFileSizeMB limit of {settings.max_file_size_mb:g} MB. Raise the limit, or "
            "run `vllm-log-lsp check FILE`."
        )
        return not_analysed(version, settings, reason)
    # The analyzer builds the line table first, off the event loop (a growing log extends the
    # previous one); the analysis then numbers lines by lookup instead of by counting.
    analysis = analyzer.analyze(document, input_warnings(text), line_table=True)
    return result_of(analyzer, version, analysis, settings, newline_only)


def failed_result(version: int | None, settings: Settings, error: Exception) -> AnalysisResult:
    """What a document whose analysis raised shows: no diagnosis, and an error that says so
    (a log with no diagnostics would look healthy)."""
    reason = (
        f"Not diagnosed: the analysis of this log failed ({type(error).__name__}: {error}). This is a "
        "bug or a damaged install, not a healthy log; `vllm-log-lsp --debug check FILE` shows the traceback."
    )
    return not_analysed(version, settings, reason, failed=True)


def not_analysed(
    version: int | None, settings: Settings, reason: str, failed: bool = False
) -> AnalysisResult:
    """A result with no analysis, its diagnostic the `reason` (an error when the analysis
    `failed`, information when it was not run)."""
    empty = Analysis(findings=(), precursors=(), runs=(), line_count=0)
    return AnalysisResult(version, LogIndex(""), empty, settings, skipped_reason=reason, failed=failed)


def result_of(
    analyzer: Analyzer, version: int | None, analysis: Analysis, settings: Settings, newline_only: bool
) -> AnalysisResult:
    """The result of `analyzer`'s last analysis, with its client lines built (in the worker)."""
    index, document = analyzer.index, analyzer.document
    assert index is not None  # (it has analysed something)
    result = AnalysisResult(version, index, analysis, settings, newline_only=newline_only, document=document)
    result.lines  # noqa: B018 -- built here, off the event loop, like the line table
    return result


class Pipeline:
    def __init__(self, server: VllmLogServer) -> None:
        self.server = server
        # Our own pool: pygls's pool also runs the stdin reader, which must never starve.
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="vllm-log-analysis")
        self._published_listeners: list[Callable[[DocumentState], None]] = []
        self._jobs = 0  # worker jobs submitted and not finished
        server.on_settings_changed(self.settings_changed)

    @property
    def idle(self) -> bool:
        """Whether no worker job runs: only the event loop reads documents and results now."""
        return self._jobs == 0

    async def in_worker(self, function: Callable[..., _T], *args: Any) -> _T:
        """`function(*args)` on a worker thread (every job that reads a document or a result
        goes through here, see `idle`). The job counts until its thread is done with it, even
        when the caller stops waiting for it (a cancelled request)."""
        loop = asyncio.get_running_loop()
        self._jobs += 1
        try:
            job = self.executor.submit(function, *args)
        except BaseException:
            self._jobs -= 1
            raise
        job.add_done_callback(lambda _: self._job_done(loop))
        return await asyncio.wrap_future(job)

    def _job_done(self, loop: asyncio.AbstractEventLoop) -> None:
        """(On the worker thread.) Count the job done on the event loop, which owns the count."""
        with contextlib.suppress(RuntimeError):  # the loop closed: the server is exiting
            loop.call_soon_threadsafe(self._count_done)

    def _count_done(self) -> None:
        self._jobs -= 1

    def on_published(self, listener: Callable[[DocumentState], None]) -> None:
        """Call `listener(state)` whenever a new result of `state` is published (a feature's
        cache of the previous one can go)."""
        self._published_listeners.append(listener)

    def settings_changed(self) -> None:
        """Each document gets its new settings; every log is analysed again rather than only
        re-rendered (the size limit or the catalog may have changed); a file analysed from disk
        is re-rendered (its severities may have changed)."""
        for state in self.server.documents:
            state.settings = self.server.settings.for_uri(state.uri)
            if state.from_disk:
                if state.result is not None:
                    self.publish(state)
            elif state.served:
                self.schedule(state, delay=0)

    # -- scheduling ----------------------------------------------------------------------------
    def schedule(self, state: DocumentState, delay: float | None = None) -> None:
        """Analyse `state` after `delay` seconds (default: its debounce), replacing a pending one."""
        if delay is None:
            delay = state.settings.debounce_ms / 1000
        if state.pending is not None and not state.pending.done():
            state.pending.cancel()  # only cancels the wait; a running analysis is shielded
        state.pending = asyncio.get_running_loop().create_task(self._debounced(state, delay))

    def cancel(self, state: DocumentState) -> None:
        if state.pending is not None and not state.pending.done():
            state.pending.cancel()

    async def _debounced(self, state: DocumentState, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        await asyncio.shield(self.run(state))

    # -- running -------------------------------------------------------------------------------
    async def run(self, state: DocumentState) -> AnalysisResult | None:
        """Analyse the document's current text now; publish unless it went stale meanwhile."""
        async with state.lock:
            if not state.served or not self.is_current(state):
                return None
            catalog = await self.server.catalogs.for_uri(state.uri)  # loaded off the event loop
            if not self.is_current(state):
                return None
            version, document, settings = state.version, state.document, state.settings
            if state.analyzer is None or state.analyzer.catalog is not catalog:
                state.analyzer = Analyzer(catalog)  # the rule files of its folder changed
            # Progress is for a full analysis: an append's costs what it appended.
            appending = state.analyzer.continues(document)
            token = None if appending else await self._begin_progress(state, len(document))
            try:
                newline_only = self.server.newline_only_lines
                result = await self.in_worker(
                    compute, state.analyzer, document, version, settings, newline_only
                )
            except Exception as err:
                log_to_client(
                    self.server, f"vllm-log: analysis of {state.uri} failed: {err!r}", types.MessageType.Error
                )
                state.analyzer = None  # (an incremental analyzer stopped midway starts afresh)
                result = failed_result(version, settings, err)
            finally:
                self._end_progress(token)
            if not self.is_current(state) or state.version != version:
                return None  # stale: the newer version's analysis is queued behind this lock
            state.result = result
            if state.last_line is None and state.document is document and result.skipped_reason is None:
                state.last_line = result.last_line  # the next append need not count the lines
            for listener in list(self._published_listeners):
                listener(state)
            self.publish(state)
            return result

    def is_current(self, state: DocumentState) -> bool:
        return self.server.documents.get(state.uri) is state

    def publish(self, state: DocumentState) -> None:
        """Send the diagnostics of `state.result` (re-rendered with current settings)."""
        result = state.result
        if result is None:
            return
        diagnostics = build_diagnostics(state.uri, result, self.server.position_encoding)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=state.uri, diagnostics=diagnostics, version=result.version)
        )

    def clear(self, uri: str) -> None:
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- progress ------------------------------------------------------------------------------
    async def _begin_progress(self, state: DocumentState, length: int) -> str | None:
        if length < PROGRESS_MIN_CHARS or not self.server.supports_work_done_progress:
            return None
        token = f"vllm-log-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), timeout=5)
        except Exception:
            return None  # the client refused or did not answer: analyse without progress
        name = state.uri.rsplit("/", 1)[-1]
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title="Analysing vLLM log", message=f"{name} ({length / 1048576:.0f} MB)"
            ),
        )
        return token

    def _end_progress(self, token: str | None) -> None:
        if token is not None:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
