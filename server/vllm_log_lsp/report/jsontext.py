"""`json.dumps(value, indent=N)`, character for character, at a fraction of its cost.

With an indent, the standard library falls back to its pure-Python encoder: a chain of nested
generators through which every piece of the document is yielded up, level by level (a restart
loop's report, 2.7 MB of 52 k values, took 0.5 s). Here one recursive function appends the
pieces to one list; strings are escaped by the same C function the standard encoder uses
(`encode_basestring_ascii`), numbers written by the same `repr`s, and the layout follows
`json.encoder._make_iterencode` with its defaults for an indent: `ensure_ascii`, `allow_nan`,
separators `,` and `: `, keys in insertion order.

Anything else a document could hold (an object of another type, a circular or too-deep
structure) is handed to `json.dumps` itself, which raises its own error for it.
"""

from __future__ import annotations

try:  # the C escaper json's encoder uses, without importing json (its decoder compiles regexes)
    from _json import encode_basestring_ascii
except ImportError:  # an interpreter without the accelerator: json's own
    from json.encoder import encode_basestring_ascii

__all__ = ["dumps_indented"]


class _Unsupported(Exception):
    """A value `dumps_indented` does not write itself (json.dumps then decides)."""


def _float_text(value: float) -> str:
    # json's `floatstr` with allow_nan: NaN and the infinities as JavaScript names them.
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == float("-inf"):
        return "-Infinity"
    return float.__repr__(value)


def _scalar_text(value: object) -> str:
    """A non-container value as json writes it (its `isinstance` order: str, None, bools, int,
    float); `_Unsupported` for anything else."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float_text(value)
    raise _Unsupported


def _key_text(key: object) -> str:
    """A dict key as json writes it: str as is, the scalars json accepts as their text."""
    if isinstance(key, str):
        return encode_basestring_ascii(key)
    if isinstance(key, float):
        return encode_basestring_ascii(_float_text(key))
    if key is True or key is False or key is None or isinstance(key, int):
        return encode_basestring_ascii(_scalar_text(key))
    raise _Unsupported  # json raises TypeError (keys must be str, int, float, bool or None)


def dumps_indented(value: object, indent: int = 2) -> str:
    """Exactly `json.dumps(value, indent=indent)` (the other arguments at their defaults)."""
    out: list[str] = []
    append = out.append
    breaks = ["\n"]  # "\n" and the indent of each level, made once per level

    def newline(level: int) -> str:
        while len(breaks) <= level:
            breaks.append("\n" + " " * (indent * len(breaks)))
        return breaks[level]

    def write(item: object, level: int) -> None:
        kind = type(item)
        if kind is str:
            append(encode_basestring_ascii(item))  # type: ignore[arg-type]
            return
        members: list[tuple[str | None, object]]
        if kind is dict or (kind is not list and isinstance(item, dict)):
            brackets = "{}"
            members = [
                (encode_basestring_ascii(key) if type(key) is str else _key_text(key), member)
                for key, member in item.items()  # type: ignore[attr-defined]
            ]
        elif kind is list or kind is tuple or isinstance(item, (list, tuple)):
            brackets = "[]"
            members = [(None, member) for member in item]  # type: ignore[attr-defined]
        else:
            append(_scalar_text(item))
            return
        if not members:
            append(brackets)
            return
        inner = newline(level + 1)
        append(brackets[0] + inner)
        separator = "," + inner
        for i, (key, member) in enumerate(members):
            if i:
                append(separator)
            if key is not None:
                append(key + ": ")
            write(member, level + 1)
        append(newline(level) + brackets[1])

    try:
        write(value, 0)
    except (_Unsupported, RecursionError):
        import json

        return json.dumps(value, indent=indent)  # raises json's own error (or writes what it can)
    return "".join(out)
