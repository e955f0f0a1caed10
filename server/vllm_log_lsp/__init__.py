"""vllm-log-lsp: turn a vLLM crash log into a diagnosis (language server and CLI)."""

# The single source of the version (pyproject.toml reads it): importlib.metadata would cost a
# noticeable part of the CLI's start-up time.
__version__ = "0.1.0"
