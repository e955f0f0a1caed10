"""The language server on a big log, measured with a real LSP client over stdio, against a null
pygls server (benchmarks/null_server.py) run alongside.

    python benchmarks/lsp_latency.py [--mb 50] [--runs 3] [--debounce-ms 0]
                                     [--shape real|all-error|request-errors]
                                     [--bundled]

The log is make_log.py's serving log (recovered per-request tracebacks, a TP=2 death at the
end), with `--shape all-error` its log of every line an ERROR traceback line (the same death at
the end), with `--shape request-errors` those failing requests each followed by its access-log
line, or with `--shape real` its real healthy logs one after another (bare-`\r` progress
bars, colour codes; no death: the answer is no root cause, and there is none to hover). The server is
started as a Neovim 0.11 client would (UTF-8 positions, only `\n` ends a line: Neovim syncs
documents of any size, VS Code stops at 50 MB); with `--bundled`, as the VS Code extension's
bundled server runs (no `regex`, no `ahocorasick-rs`). Figures, median [min–max] over the runs:
- didOpen → publishDiagnostics, against the null server's (the text crossing the pipe);
- appending 1,000 lines → publishDiagnostics, against the same server's didOpen (a full
  analysis); the debounce is part of it, so it is --debounce-ms (0 by default);
- the server's peak RSS, against the null server's plus the log's size;
- hover on the root cause: the 99th percentile of 100, in ms.
The answers: the root-cause diagnostic is where the death was written, before and after the
append.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pytest_lsp import client_capabilities

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Figure, Series, bytecode_as_installed, print_table, ratios
from bench_check import check_command, expected_crash
from make_log import make_log, serving_lines

HERE = Path(__file__).resolve().parent

URI = "file:///bench/serving.log"
HOVERS = 100


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


async def wait_version(client: Client, version: int, timeout: float = 1800) -> float:
    deadline = time.perf_counter() + timeout
    while version not in client.published:
        client.event.clear()
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"no diagnostics for version {version}")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(client.event.wait(), remaining)
    return client.published[version]


def peak_rss_mb(client: Client) -> float:
    """The server process's peak resident memory so far (VmHWM)."""
    assert client._server is not None
    for line in Path(f"/proc/{client._server.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def root_lines(client: Client, version: int) -> list[int]:
    return [
        d.range.start.line + 1
        for d in client.diagnostics[version]
        if d.severity == types.DiagnosticSeverity.Error
    ]


async def session(command: list[str], text: str, debounce_ms: int, full: bool) -> dict:
    """One server's run: open, (hover, append,) peak RSS."""
    client = make_client()
    await client.start_io(*command)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=client_capabilities("neovim@v0.11.0"),
            client_info=types.ClientInfo(name="Neovim", version="0.11.0"),
            initialization_options={"debounceMs": debounce_ms},
        )
    )
    client.initialized(types.InitializedParams())
    result: dict = {}
    start = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=URI, language_id="vllm-log", version=1, text=text)
        )
    )
    result["open"] = await wait_version(client, 1) - start
    result["roots"] = root_lines(client, 1)
    if full and result["roots"]:
        line = result["roots"][0] - 1
        hovers = []
        for _ in range(HOVERS):
            t0 = time.perf_counter()
            hover = await client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(URI), types.Position(line, 0))
            )
            hovers.append(time.perf_counter() - t0)
        hovers.sort()
        result["hover_p99"] = hovers[int(len(hovers) * 0.99) - 1]
        result["hovered"] = hover is not None
    if full:
        lines = text.count("\n")  # (Neovim's lines: only `\n` ends one)
        rng = serving_lines(random.Random(1))
        appended = "\n" + "\n".join(next(rng) for _ in range(1000))
        end = types.Position(lines, len(text) - (text.rfind("\n") + 1))  # ASCII tail: UTF-8 = chars
        start = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=URI, version=2),
                [types.TextDocumentContentChangePartial(range=types.Range(end, end), text=appended)],
            )
        )
        result["append"] = await wait_version(client, 2) - start
        result["roots_after"] = root_lines(client, 2)
    result["rss"] = peak_rss_mb(client)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return result


#: The server as the VS Code extension bundles it: the pure-Python fallbacks only.
BUNDLED = (
    "import runpy, sys; sys.modules['regex'] = sys.modules['ahocorasick_rs'] = None; "
    "runpy.run_module('vllm_log_lsp.lsp', run_name='__main__')"
)


async def measure(text: str, size_mb: float, expected: list[int], args) -> list[Figure]:
    subject = [sys.executable, "-c", BUNDLED] if args.bundled else [sys.executable, "-m", "vllm_log_lsp.lsp"]
    null = [sys.executable, str(HERE / "null_server.py")]
    series = {k: Series() for k in ("null_open", "open", "append", "null_rss", "rss", "hover")}
    answers: list[tuple[list[int], list[int], bool]] = []
    for _ in range(args.runs):
        base = await session(null, text, args.debounce_ms, full=False)
        ours = await session(subject, text, args.debounce_ms, full=True)
        series["null_open"].add(base["open"])
        series["null_rss"].add(base["rss"] + size_mb)
        for key in ("open", "append", "rss"):
            series[key].add(ours[key])
        if "hover_p99" in ours:
            series["hover"].add(ours["hover_p99"] * 1000)
        answers.append((ours["roots"], ours["roots_after"], ours.get("hovered", not expected)))
    ok = all(before == expected and after == expected and hovered for before, after, hovered in answers)
    answer = f"root-cause diagnostics on lines {answers[-1][0]}, after the append {answers[-1][1]} (expected {expected})"
    figures = [
        Figure(
            f"LSP{' (bundled)' if args.bundled else ''} didOpen → diagnostics, {size_mb:.0f} MB / null pygls server",
            ratios(series["open"], series["null_open"]),
            "null server",
            2,
            answer,
            ok,
            f"ours {series['open'].spread(' s')}, null {series['null_open'].spread(' s')}",
        ),
        Figure(
            "LSP append 1,000 lines → diagnostics / didOpen",
            ratios(series["append"], series["open"]),
            "didOpen",
            0.05,
            answer,
            ok,
            f"append {series['append'].spread(' s', digits=3)} (debounce {args.debounce_ms} ms)",
        ),
        Figure(
            "LSP server peak RSS / (null server + log size)",
            ratios(series["rss"], series["null_rss"]),
            "null + log",
            1,
            answer,
            ok,
            f"ours {series['rss'].spread(' MB', digits=0)}, null + log {series['null_rss'].spread(' MB', digits=0)}",
        ),
    ]
    if series["hover"].values:  # (a log with a root cause to hover)
        figures.append(
            Figure(
                f"LSP hover on the root cause, p99 of {HOVERS}",
                series["hover"],
                "ms",
                10,
                answer,
                ok,
                unit=" ms",
            )
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--debounce-ms", type=int, default=0)
    parser.add_argument(
        "--shape", choices=("serving", "all-error", "request-errors", "real"), default="serving"
    )
    parser.add_argument("--bundled", action="store_true", help="measure the bundled server (pure Python)")
    args = parser.parse_args()
    bytecode_as_installed()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{args.shape}.log"
        info = make_log(path, args.mb, args.shape)
        # (as an editor holds it: undecodable bytes replaced)
        text = path.read_bytes().decode("utf-8", "replace")
        expected = [line for line, _ in expected_crash(check_command(), info)] if args.shape != "real" else []
        megabytes = info.megabytes
    figures = asyncio.run(measure(text, len(text.encode()) / 1048576, expected, args))
    print(
        f"log ({args.shape}): {megabytes:.1f} MB, {info.lines:,} lines, {info.tracebacks} recovered tracebacks"
    )
    print_table(figures)


if __name__ == "__main__":
    main()
