"""Per-candidate checks with a literal pre-check give what the plain searches give.

- A wrapper (`incidents._is_wrapper`) is recognised by trying only the wrapper patterns whose
  required text (`Pattern.required`) the exception text holds: it is the same as searching every
  wrapper pattern, on texts each pattern's own regex generates (embedded in other text), on
  texts made of pieces of the patterns' literals, and on every exception the corpus prints.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, read_log
from vllm_log_lsp.core.catalog import Catalog, builtin_catalog
from vllm_log_lsp.core.incidents import _is_wrapper, wrapper_patterns
from vllm_log_lsp.core.scan import scan_lines
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
LOGS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])
WRAPPERS = wrapper_patterns(CATALOG)


def plain_is_wrapper(catalog: Catalog, text: str) -> bool:
    """The specification: any symptom marked `wrapper`, or any wrapper marker, finds the text."""
    markers = [m for m in catalog.markers_of("symptom") if m.wrapper] + catalog.markers_of("wrapper")
    return any(m.pattern.compiled.search(text) for m in markers)


def test_every_wrapper_marker_is_tried() -> None:
    """Not vacuous: the catalog has wrappers of both kinds, some with nothing required."""
    kinds = {m.kind for m in CATALOG.markers_of("wrapper")} | {
        m.kind for m in CATALOG.markers_of("symptom") if m.wrapper
    }
    assert kinds == {"wrapper", "symptom"}
    assert len(WRAPPERS) == len(CATALOG.markers_of("wrapper")) + sum(
        m.wrapper for m in CATALOG.markers_of("symptom")
    )
    assert any(required == "" for required, _ in WRAPPERS)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([pattern.source for _, pattern in WRAPPERS]).flatmap(
        lambda source: st.from_regex(source, fullmatch=True)
    ),
    st.text(max_size=20),
    st.text(max_size=20),
)
def test_text_a_wrapper_pattern_generates_is_recognised(match: str, before: str, after: str) -> None:
    for text in (match, before + match + after, f"RuntimeError: {match}"):
        assert _is_wrapper(WRAPPERS, text) == plain_is_wrapper(CATALOG, text)


_PIECES = sorted({required for required, _ in WRAPPERS if required} | {"Error", "failed", ": ", " ", "\n"})


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=8))
def test_texts_of_the_required_pieces_give_the_plain_answer(pieces: list[str]) -> None:
    """Texts holding required literals (whole, or one beside another) and the words around them."""
    text = "".join(pieces)
    assert _is_wrapper(WRAPPERS, text) == plain_is_wrapper(CATALOG, text)


def test_corpus_exceptions_give_the_plain_answer() -> None:
    texts = {c.event.text for path in LOGS for c in scan_lines(LogIndex(read_log(path)), CATALOG).events}
    found = [text for text in texts if plain_is_wrapper(CATALOG, text)]
    assert found and len(found) < len(texts)  # both answers occur
    for text in texts:
        assert _is_wrapper(WRAPPERS, text) == plain_is_wrapper(CATALOG, text), text
