"""`python -m vllm_log_lsp ...` is the same as the `vllm-log-lsp` command."""

import sys

from .cli import main

sys.exit(main())
