"""One phase for a death in every view: the diagnostic, the hover, the breadcrumb (document symbols)
and `check --format json` name the same phase, also where the markers and the frames disagree."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from lsprotocol import types

from vllm_log_lsp.core.model import PHASE_TITLES

from .conftest import close, doc, fixture_text, fresh_uri, open_log, pos

pytestmark = pytest.mark.asyncio(loop_scope="module")

ONE_LINE_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity"
    " of 79.33 GiB of which 312.00 MiB is free.\n"
)


def breadcrumb(symbols: list[types.DocumentSymbol], line: int) -> list[str]:
    """The names VS Code's breadcrumb shows at `line`: the chain of innermost enclosing symbols."""
    chain: list[str] = []
    level = symbols
    while True:
        inside = [s for s in level if s.range.start.line <= line <= s.range.end.line]
        if not inside:
            return chain
        innermost = max(inside, key=lambda s: s.range.start.line)
        chain.append(innermost.name)
        level = innermost.children or []


def json_phase(text: str) -> tuple[str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", "-"],
        input=text.encode("utf-8"),
        capture_output=True,
        timeout=60,
    )
    [incident] = json.loads(result.stdout)["files"][0]["incidents"]
    return incident["phase"], incident["phase_source"]


async def views(client, name: str, text: str) -> dict:
    uri = fresh_uri(name)
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    line = root.range.start.line
    hover = await client.text_document_hover_async(
        types.HoverParams(doc(uri), pos(line, root.range.start.character))
    )
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(uri)))
    close(client, uri)
    phase_notes = [r.message for r in root.related_information or [] if r.message.startswith("phase: ")]
    hover_phase = next(row for row in hover.contents.value.splitlines() if row.startswith("- **Phase**: "))
    return {
        "diagnostic": phase_notes,
        "hover": hover_phase.removeprefix("- **Phase**: "),
        "breadcrumb": breadcrumb(symbols, line),
        "root_name": root.message,
    }


async def test_markers_say_torch_compile_frames_say_profiling_every_view_says_profiling(client):
    # 011: the last marker before the death is torch.compile's; the root's frames are the
    # KV-cache sizing inside the profiling run.
    text = fixture_text("crash-011.log")
    seen = await views(client, "011.log", text)
    title = PHASE_TITLES["memory_profiling"]
    [note] = seen["diagnostic"]
    assert note.startswith(f"phase: {title}")
    assert seen["hover"].startswith(title)
    assert seen["breadcrumb"][1] == title, seen["breadcrumb"]  # Run › phase › death
    assert json_phase(text) == ("memory_profiling", "frames")


async def test_marker_phase_is_named_with_its_line_everywhere(client):
    text = "".join(
        [
            "(EngineCore_DP0 pid=7) INFO 03-03 19:38:20 [utils.py:1] non-default args: {'model': 'm'}\n",
            "(EngineCore_DP0 pid=7) INFO 03-03 19:38:21 [gpu_model_runner.py:1] Capturing CUDA graphs (decode, FULL): 50%\n",
            "(EngineCore_DP0 pid=7) ERROR 03-03 19:38:29 [core.py:708] " + ONE_LINE_OOM,
        ]
    )
    seen = await views(client, "capture.log", text)
    title = PHASE_TITLES["cuda_graph_capture"]
    assert seen["diagnostic"] == [f"phase: {title} (entered on line 2)"]
    assert seen["hover"] == f"{title} (entered on line 2)"
    assert seen["breadcrumb"][1] == title
    assert json_phase(text) == ("cuda_graph_capture", "marker")


async def test_unknown_phase_is_said_not_guessed(client):
    seen = await views(client, "paste.log", ONE_LINE_OOM)
    [note] = seen["diagnostic"]
    assert note.startswith("phase: unknown") and "start-up" not in note
    assert seen["hover"].startswith("unknown")
    assert len(seen["breadcrumb"]) == 2  # Run › death: no phase segment claims it
    assert json_phase(ONE_LINE_OOM) == ("unknown", "unknown")
