"""`python -m vllm_log_lsp ...` is the same as the `vllm-log-lsp` command (`run`)."""

import gc
import sys


def run() -> int:
    """The command line. The imports run with the garbage collector paused, then what they made
    (modules, classes: it lives until exit) is frozen out of every later collection: otherwise
    a short check spends a tenth of its time collecting objects that are never garbage. What the
    command made is frozen too when it returns: the collections at exit would only walk it.

    A `check` of one large log file starts its literal search first (`core.early`)."""
    from .core import early  # (os and stat only)

    early.start(sys.argv[1:])  # a large log's search runs while the rest is imported
    try:
        gc.disable()
        try:
            from .cli import main
        finally:
            gc.freeze()
            gc.enable()
        status = main()
        gc.freeze()
        return status
    finally:
        early.discard()


if __name__ == "__main__":
    sys.exit(run())
