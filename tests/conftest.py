"""pytest configuration shared by every test folder (helpers live in support.py)."""

import atexit
import os
import shutil
import tempfile

import pytest

from vllm_log_lsp.core import prefilter

# The tests (and the CLI runs they start) keep the parsed catalog in a cache of their own, never
# in the user's (`core.datacache`); removed when the session ends.
if "VLLM_LOG_LSP_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="vllm-log-lsp-test-cache-")
    os.environ["VLLM_LOG_LSP_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)


@pytest.fixture
def tools_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search tools used on any file, however small."""
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)
