"""`python -m vllm_log_lsp ...` is the same as the `vllm-log-lsp` command (`run`)."""

import gc
import sys


def run() -> int:
    """The command line. The imports run with the garbage collector paused, then what they made
    (modules, classes: it lives until exit) is frozen out of every later collection: otherwise
    a short check spends a tenth of its time collecting objects that are never garbage."""
    gc.disable()
    try:
        from .cli import main
    finally:
        gc.freeze()
        gc.enable()
    return main()


if __name__ == "__main__":
    sys.exit(run())
