"""Latency of the language server on a big log, measured with a real LSP client over stdio.

    python benchmarks/lsp_latency.py [--mb 50] [--debounce-ms 0]

Generates a serving log of the given size that ends in a crash (benchmarks/make_log.py), starts
the server (`python -m vllm_log_lsp.lsp`) as a Neovim 0.11 client would (UTF-8 positions: Neovim
syncs documents of any size, VS Code stops at 50 MB), and prints:
- didOpen → publishDiagnostics (the whole text crosses the pipe, is parsed and analysed);
- hover on the root-cause line (median of 20);
- didChange appending 1,000 lines → publishDiagnostics (incremental re-analysis; the debounce
  delay is part of this number, so it is set to --debounce-ms, 0 by default).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pytest_lsp import client_capabilities

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_log import make_log, serving_lines


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("lsp-latency", "1")
        self.published: dict[int | None, float] = {}
        self.diagnostics: dict[int | None, list[types.Diagnostic]] = {}
        self.event = asyncio.Event()


def make_client() -> Client:
    client = Client()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        client.published[params.version] = time.perf_counter()
        client.diagnostics[params.version] = list(params.diagnostics)
        client.event.set()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def on_progress_create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def on_progress(params: types.ProgressParams) -> None:
        return None

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        print("server:", params.message, file=sys.stderr)

    return client


async def wait_version(client: Client, version: int, timeout: float = 300) -> float:
    deadline = time.perf_counter() + timeout
    while version not in client.published:
        client.event.clear()
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"no diagnostics for version {version}")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(client.event.wait(), remaining)
    return client.published[version]


async def measure(text: str, debounce_ms: int) -> None:
    client = make_client()
    await client.start_io(sys.executable, "-m", "vllm_log_lsp.lsp")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=client_capabilities("neovim@v0.11.0"),
            initialization_options={"debounceMs": debounce_ms},
        )
    )
    client.initialized(types.InitializedParams())
    uri = "file:///bench/serving.log"

    start = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="vllm-log", version=1, text=text)
        )
    )
    opened = await wait_version(client, 1) - start
    roots = [d for d in client.diagnostics[1] if d.severity == types.DiagnosticSeverity.Error]
    root_line = roots[0].range.start.line if roots else 0

    hovers = []
    for _ in range(20):
        t0 = time.perf_counter()
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(root_line, 0))
        )
        hovers.append(time.perf_counter() - t0)
    assert hover is not None, "no hover on the root cause"

    lines = text.count("\n")
    rng_lines = serving_lines(__import__("random").Random(1))
    appended = "\n" + "\n".join(next(rng_lines) for _ in range(1000))
    end = types.Position(lines, len(text) - (text.rfind("\n") + 1))  # ASCII tail: UTF-8 = chars
    start = time.perf_counter()
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(range=types.Range(end, end), text=appended)],
        )
    )
    changed = await wait_version(client, 2) - start
    same = [d.range.start.line for d in client.diagnostics[2] if d.severity == types.DiagnosticSeverity.Error]

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    size = len(text.encode()) / 1e6
    print(f"log: {size:.1f} MB, {lines + 1:,} lines; root cause on line {root_line + 1}")
    print(f"didOpen → publishDiagnostics:              {opened * 1000:8.0f} ms")
    print(f"hover on the root cause (median of 20):   {statistics.median(hovers) * 1000:8.1f} ms")
    print(f"append 1,000 lines → publishDiagnostics:  {changed * 1000:8.0f} ms (debounce {debounce_ms} ms)")
    assert same == [root_line], same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--debounce-ms", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "serving.log"
        make_log(path, args.mb)
        text = path.read_text(encoding="utf-8")
    asyncio.run(measure(text, args.debounce_ms))


if __name__ == "__main__":
    main()
