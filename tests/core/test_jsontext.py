"""`dumps_indented` writes exactly what `json.dumps(value, indent=N)` writes.

The reports are documented as json.dumps' layout (`check --format json`, SARIF); the encoder
that replaces the standard library's Python one for speed must not move a character, whatever
the document holds: every JSON type, the scalars json accepts as keys, subclasses of the
containers and scalars, text json escapes (controls, quotes, non-ASCII, lone surrogates), and
the values json refuses (it must refuse them the same way).
"""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.report.jsontext import dumps_indented

from ..support import CRASH2

# Text json must escape: quotes, backslashes, controls, non-ASCII (BMP and astral), lone surrogates.
_TEXT = st.text(
    st.one_of(
        st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f é中😀\ud800\udfff'),
        st.characters(codec=None),
    ),
    max_size=12,
)
_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e300, 5e-324])
)
_INTS = st.one_of(st.integers(), st.integers(min_value=2**64, max_value=2**200))


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Level(enum.IntEnum):
    LOW = 1


class _List(list):
    pass


class _Dict(dict):
    pass


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    _INTS,
    _FLOATS,
    _TEXT,
    _TEXT.map(_Str),
    st.integers().map(_Int),
    st.floats(allow_nan=False).map(_Float),
    st.just(_Level.LOW),
)
_KEYS = st.one_of(_TEXT, st.booleans(), st.none(), _INTS, _FLOATS, _TEXT.map(_Str))


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=3).map(_List),
        st.dictionaries(_KEYS, children, max_size=4),
        st.dictionaries(_TEXT, children, max_size=3).map(_Dict),
        st.dictionaries(_TEXT, children, max_size=3).map(OrderedDict),
    )


_VALUES = st.recursive(_SCALARS, _containers, max_leaves=30)


@settings(max_examples=600, deadline=None)
@given(_VALUES, st.integers(min_value=-1, max_value=4))
def test_equals_json_dumps_on_any_document(value: object, indent: int) -> None:
    assert dumps_indented(value, indent) == json.dumps(value, indent=indent)


@pytest.mark.parametrize(
    "value",
    [
        [],
        {},
        [[]],
        {"a": {}},
        [{}, [], ""],
        {"": [1, [2, [3, {"x": None}]]]},
        "top-level text \u2028",
        7,
        -0.0,
        math.nan,
        [math.inf, -math.inf],
        {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
        {True: "bool key", -3: "negative"},
        {math.nan: 1, math.inf: 2},
        (1, (2, (3,))),
    ],
)
def test_equals_json_dumps_on_edges(value: object) -> None:
    """Empty containers at each depth, scalars at the top, keys json turns into text."""
    for indent in (0, 2, 4):
        assert dumps_indented(value, indent) == json.dumps(value, indent=indent)


def test_key_order_is_insertion_order() -> None:
    value = {"b": 1, "a": 2, "c": {"z": 1, "y": 2}}
    assert dumps_indented(value) == json.dumps(value, indent=2)
    assert dumps_indented(value).index('"b"') < dumps_indented(value).index('"a"')


@pytest.mark.parametrize(
    "value",
    [
        {"set": {1, 2}},
        [object()],
        {(1, 2): "tuple key"},
        {"bytes": b"x"},
        [Path("/tmp")],
    ],
)
def test_refuses_what_json_refuses(value: object) -> None:
    with pytest.raises(TypeError) as json_error:
        json.dumps(value, indent=2)
    with pytest.raises(TypeError) as own_error:
        dumps_indented(value)
    assert str(own_error.value) == str(json_error.value)


def test_circular_document_raises_json_error() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps_indented(loop)


def test_check_report_of_corpus_logs_is_json_dumps() -> None:
    """The documents the CLI writes: each corpus log's report, the same text either way."""
    from vllm_log_lsp.batch import CheckOptions, check_files
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.report.json_report import report_json
    from vllm_log_lsp.report.sarif import sarif_log

    logs = sorted(CRASH2.glob("*.log"))[:12]
    assert logs
    catalog = builtin_catalog()
    entries = [outcome.entry for outcome in check_files([str(p) for p in logs], catalog, CheckOptions())]
    for document in (report_json(entries), sarif_log(entries, catalog)):
        assert dumps_indented(document) == json.dumps(document, indent=2)
