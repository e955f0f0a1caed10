"""Is this document a vLLM log? Decides whether `log`/`plaintext` documents are served.

Looks at the first lines only (bounded in characters too: a 10 MB single line must not cost).
"""

from __future__ import annotations

import re

#: Language ids served whatever their content.
VLLM_LANGUAGE_IDS = frozenset({"vllm-log", "vllmlog", "vllm_log"})
#: Language ids served when their content looks like a vLLM log.
SNIFFED_LANGUAGE_IDS = frozenset({"log", "plaintext", "text", ""})

SNIFF_LINES = 200
SNIFF_CHARS = 256_000

_LITERALS = ("(EngineCore", "(APIServer", "vllm", "vLLM", "[core.py:", "EngineDeadError")
# vLLM's own header: `INFO 05-21 10:00:01 [api_server.py:123]` (older: `file.py:123]`).
_HEADER = re.compile(
    r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.]+\.py:\d+\]"
)


def head(text: str) -> str:
    """The part of `text` that sniffing looks at."""
    part = text[:SNIFF_CHARS]
    pos = -1
    for _ in range(SNIFF_LINES):
        pos = part.find("\n", pos + 1)
        if pos < 0:
            return part
    return part[:pos]


def looks_like_vllm_log(text: str) -> bool:
    """True when the first lines carry a vLLM marker."""
    sample = head(text)
    return any(lit in sample for lit in _LITERALS) or _HEADER.search(sample) is not None


def should_serve(language_id: str, text: str) -> bool:
    """Whether a document of `language_id` with this content gets our features."""
    if language_id in VLLM_LANGUAGE_IDS:
        return True
    return language_id in SNIFFED_LANGUAGE_IDS and looks_like_vllm_log(text)
