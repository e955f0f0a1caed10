"""`text.as_printed`: the text a rule reads of a line a copy changed (typographic quotes, HTML's
character references), and the very same `str` when nothing needs changing."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.text import as_printed


@pytest.mark.parametrize(
    ("copied", "printed"),
    [
        (
            "got an unexpected keyword argument \u2018num_tokens\u2019",
            "got an unexpected keyword argument 'num_tokens'",
        ),
        ("File \u201c/x/vllm/a.py\u201d, line 3, in f", 'File "/x/vllm/a.py", line 3, in f'),
        ("File &quot;/x/a.py&quot;, line 3, in &lt;module&gt;", 'File "/x/a.py", line 3, in <module>'),
        ("can&#x27;t &#39;x&#39; &#34;y&#x22; &apos;z&apos;", "can't 'x' \"y\" 'z'"),
        ("a &amp;quot; b &amp; c", "a &quot; b & c"),  # (one decoding: what was printed)
        ("&unknown; & ; &", "&unknown; & ; &"),
        ("模型 🚀 \u201cx\u201d", '模型 🚀 "x"'),
    ],
)
def test_a_copys_punctuation_reads_as_printed(copied: str, printed: str) -> None:
    assert as_printed(copied) == printed


def test_text_that_needs_nothing_is_the_same_str() -> None:
    line = "(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1] ValueError: x"
    assert as_printed(line) is line
