"""pytest-lsp harness: the server over stdio, driven as VS Code and as Neovim 0.11.

The clients are module-scoped (starting a server costs about a second), so each test opens its
documents under its own URIs. Tests that need their own initializationOptions start a server
of their own with `start_client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

FIXTURES = Path(__file__).parent / "fixtures"
SHARED_FIXTURES = Path(__file__).parent.parent / "fixtures"  # the labelled corpus copies
SERVER_COMMAND = [sys.executable, "-m", "vllm_log_lsp.lsp"]
#: pytest-lsp capability profiles: VS Code (UTF-16, documentChanges) and Neovim 0.11 (UTF-8).
CLIENTS = ("visual-studio-code", "neovim@v0.11.0")


@dataclass
class Published:
    uri: str
    version: int | None
    diagnostics: list[types.Diagnostic]


@dataclass
class Recorder:
    """Every publishDiagnostics, in order (pytest-lsp keeps only the latest list per URI)."""

    published: list[Published] = field(default_factory=list)

    def for_uri(self, uri: str) -> list[Published]:
        return [p for p in self.published if p.uri == uri]


def make_client() -> LanguageClient:
    client = LanguageClient()
    recorder = Recorder()

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        recorder.published.append(Published(params.uri, params.version, params.diagnostics))

    register_lsp_features(
        client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish}
    )
    client.recorder = recorder  # type: ignore[attr-defined]
    return client


CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)


def client_info(profile: str) -> types.ClientInfo | None:
    """The `clientInfo` the profiled client sends (pytest-lsp records it beside the capabilities):
    the server reads the client's name, e.g. to number lines as Neovim does."""
    import json

    import pytest_lsp.clients

    name, _, version = profile.replace("-", "_").partition("@")
    folder = Path(pytest_lsp.clients.__file__).parent
    files = sorted(folder.glob(f"{name}_{version or 'v'}*.json"))
    if not files:
        return None
    info = json.loads(files[-1].read_text(encoding="utf-8")).get("clientInfo")
    return types.ClientInfo(name=info["name"], version=info.get("version")) if info else None


def init_params(
    profile: str, options: Any = None, folders: list[str] | None = None
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(profile),
        client_info=client_info(profile),
        initialization_options=options,
        workspace_folders=[types.WorkspaceFolder(uri=f, name=f.rsplit("/", 1)[-1]) for f in folders or []]
        or None,
    )


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS, scope="module")
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    lsp_client.profile = request.param  # type: ignore[attr-defined]
    await lsp_client.initialize_session(init_params(request.param))
    yield lsp_client
    await lsp_client.shutdown_session()


def encoding_of(client: LanguageClient) -> str:
    return "utf-8" if client.profile.startswith("neovim") else "utf-16"  # type: ignore[attr-defined]


def units(text: str, encoding: str) -> int:
    """Length of `text` in the client's position units."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def fixture_path(name: str) -> Path:
    """`crash-NNN.log` / `healthy-NNN.log` are the shared corpus fixtures; the rest are ours."""
    kind, _, corpus_name = name.partition("-")
    if kind in ("crash", "healthy") and corpus_name[:3].isdigit():
        return SHARED_FIXTURES / kind / corpus_name
    return FIXTURES / name


def fixture_text(name: str) -> str:
    return fixture_path(name).read_text(encoding="utf-8", errors="replace")


_counter = 0


def fresh_uri(name: str, scheme: str = "file") -> str:
    """A URI no other test of the module uses."""
    global _counter
    _counter += 1
    if scheme == "untitled":
        return f"untitled:Untitled-{_counter}-{name}"
    return f"file:///logs/{_counter}/{name}"


async def wait_published(
    client: LanguageClient, uri: str, version: int | None = None, count: int = 1, timeout: float = 10.0
) -> list[types.Diagnostic]:
    """Wait until `uri` has had `count` publishes (for `version` if given); return the latest."""
    recorder: Recorder = client.recorder  # type: ignore[attr-defined]
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        matching = [p for p in recorder.for_uri(uri) if version is None or p.version == version]
        if len(matching) >= count:
            return list(matching[-1].diagnostics)
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no diagnostics for {uri} (version {version}); got {recorder.for_uri(uri)}")
        await asyncio.sleep(0.02)


async def open_log(
    client: LanguageClient,
    uri: str,
    text: str,
    language_id: str = "vllm-log",
    version: int = 1,
    wait: bool = True,
) -> list[types.Diagnostic]:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language_id, version=version, text=text)
        )
    )
    return await wait_published(client, uri, version) if wait else []


async def open_with_root(
    client: LanguageClient, text: str
) -> tuple[str, list[types.Diagnostic], types.Diagnostic]:
    """Open `text` (one death) as a fresh log: its URI, its diagnostics and the root cause's."""
    uri = fresh_uri("serve.log")
    diagnostics = await open_log(client, uri, text)
    [root] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    return uri, diagnostics, root


async def definition_targets(client: LanguageClient, uri: str, position: types.Position) -> list:
    """Where go-to-definition at `position` leads (Locations or LocationLinks)."""
    found = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=position)
    )
    return [t for t in (found if isinstance(found, list) else [found]) if t is not None]


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))


def pos(line: int, character: int = 0) -> types.Position:
    return types.Position(line=line, character=character)


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


@contextlib.asynccontextmanager
async def started(
    profile: str, options: Any = None, folders: list[str] | None = None
) -> AsyncIterator[LanguageClient]:
    """A server of its own, for tests that need their own initializationOptions."""
    client = await CONFIG.start()
    client.profile = profile  # type: ignore[attr-defined]
    try:
        await client.initialize_session(init_params(profile, options, folders))
        yield client
    finally:
        await stopped(client)


async def stopped(client: LanguageClient) -> None:
    """Shut a server of a test's own down and wait for it to exit, also when the test failed:
    the client's `stop` only waits for the process, which exits when told to (a failed test
    that skipped the shutdown would wait forever). A server that does not exit fails the test."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.shutdown_session(), 10)
    await asyncio.wait_for(client.stop(), 10)
