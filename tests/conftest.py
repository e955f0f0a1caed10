"""pytest configuration shared by every test folder (helpers live in support.py)."""

import atexit
import os
import shutil
import tempfile

# The tests (and the CLI runs they start) keep the parsed catalog in a cache of their own, never
# in the user's (`core.datacache`); removed when the session ends.
if "VLLM_LOG_LSP_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="vllm-log-lsp-test-cache-")
    os.environ["VLLM_LOG_LSP_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)
