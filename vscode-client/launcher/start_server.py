"""Starts the language server bundled with the extension, and nothing else.

The extension runs `python -I -X utf8 launcher/start_server.py serve ...` with the extension's folder
as the working directory. `-I` (isolated mode) keeps the working directory, the script's folder,
`PYTHONPATH` and every other `PYTHON*` variable and the user site-packages out of `sys.path`, so a
workspace holding `vllm_log_lsp/` or a module named like a standard one (`uuid.py`) is never
imported. This script then puts the bundled server and its libraries first on the path.
"""

import os
import sys

_BUNDLED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bundled")


def _isolated_path() -> list[str]:
    """The bundled folders, then the interpreter's own path without the working directory."""
    unsafe = {"", ".", os.getcwd()}
    own = [p for p in sys.path if p not in unsafe]
    return [os.path.join(_BUNDLED, "server"), os.path.join(_BUNDLED, "libs"), *own]


if __name__ == "__main__":
    sys.path[:] = _isolated_path()
    from vllm_log_lsp.__main__ import run  # the console script's start (the collector paused)

    sys.exit(run())
