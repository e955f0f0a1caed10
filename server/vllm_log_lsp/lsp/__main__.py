"""`python -m vllm_log_lsp.lsp`: run the language server over stdio."""

import sys

from .server import run_server

if __name__ == "__main__":
    sys.exit(run_server())
