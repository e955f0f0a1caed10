"""vllm-log-lsp: turn a vLLM crash log into a diagnosis (language server and CLI)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("vllm-log-lsp")
except PackageNotFoundError:  # running from a source tree or a bundled copy
    __version__ = "0.1.0"
