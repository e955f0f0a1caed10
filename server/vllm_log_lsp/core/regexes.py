"""Regexes compiled from cached `re` programs: what a short `check` would otherwise spend
running `re`'s pure-Python parser and code generator on the same fixed patterns at every start.

`re.compile(source, flags)` parses the pattern and generates the program that it hands the C
engine (`_sre.compile`); both steps are pure Python, and for the few dozen patterns the modules
define at import they cost a short `check` a tenth of its start-up. The program is plain data
that depends only on the pattern, its flags and this Python's `re`, so it is kept in the user's
cache folder (`datacache`) and a later run hands it to the C engine directly. The C engine
validates every program it is given; one it refuses (or a cache of another Python) is compiled
as usual. `sre_program` is also what the catalog keeps for its built-in patterns.
"""

from __future__ import annotations

import sys
from array import array

from . import datacache

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

#: The cache entry's name and what its programs were derived by: the Python (its `re`), the
#: engine's program format and this module.
_WHERE = "regexes"
_SECTION = "programs"
#: More programs than this in the cache (patterns of many versions of a source checkout):
#: start afresh rather than grow without bound.
_MAX_KEPT = 4096

#: (source, flags) -> its `sre_program`, as the cache holds them (read on first use).
_known: dict[Any, list[Any]] | None = None
_learned = False


def sre_program(source: str | bytes, flags: int = 0) -> list[Any] | None:
    """What `re.compile(source, flags)` hands `_sre.compile` after its pure-Python parser and
    code generator ran: [flags, code (uint32 bytes), groups, groupindex, indexgroup]; plain data,
    kept in the cache (per Python version). None where this Python's `re` is laid out otherwise."""
    try:
        if TYPE_CHECKING or sys.version_info < (3, 11):  # typeshed knows their old public names
            import sre_compile as _compiler
            import sre_parse as _parser
        else:
            from re import _compiler, _parser

        tree = _parser.parse(source, flags)  # type: ignore[arg-type]  # (bytes patterns too)
        code = _compiler._code(tree, flags)  # type: ignore[attr-defined]
        names: list[str | None] = [None] * tree.state.groups
        for name, index in tree.state.groupdict.items():
            names[index] = name
        return [
            flags | tree.state.flags,
            array("I", code).tobytes(),
            tree.state.groups - 1,
            dict(tree.state.groupdict),
            names,
        ]
    except Exception:  # another layout of `re`'s internals: compile as usual
        return None


def from_program(source: str | bytes, program: list[Any]) -> re.Pattern[Any]:
    """The compiled pattern of `source` from its `sre_program`. Raises (RuntimeError "invalid SRE
    code", TypeError, ValueError) when this Python's engine refuses the program."""
    import _sre  # type: ignore[import-not-found]

    flags, code, groups, groupindex, names = program
    return _sre.compile(source, flags, array("I", code).tolist(), groups, groupindex, tuple(names))


def compile(source: str | bytes, flags: int = 0) -> re.Pattern[Any]:
    """`re.compile(source, flags)`, from the cached program when an earlier run kept one (a new
    one is kept when the process exits)."""
    flags = int(flags)  # a RegexFlag is kept as its value
    known = _programs()
    program = known.get((source, flags))
    if program is not None:
        try:
            return from_program(source, program)
        except Exception:  # not this Python's engine: compiled as usual, and the program replaced
            del known[(source, flags)]
    import re

    compiled = re.compile(source, flags)
    program = sre_program(source, flags)
    if program is not None:
        known[(source, flags)] = program
        _learn()
    return compiled


def _code_stamp() -> list[Any]:
    import _sre

    return [sys.hexversion, _sre.MAGIC, *datacache.stamp(__file__)]


def _programs() -> dict[Any, list[Any]]:
    global _known
    if _known is None:
        kept = datacache.derived(_SECTION, _code_stamp(), _WHERE, _WHERE)
        # Only ever looked up by (source, flags); a program the engine refuses is compiled anew.
        _known = kept if kept is not None and len(kept) <= _MAX_KEPT else {}
    return _known


def _learn() -> None:
    """Keep the programs when the process exits (once: one write for every pattern learned)."""
    global _learned
    if not _learned:
        import atexit

        _learned = True
        atexit.register(save)


def save() -> bool:
    """Write the programs known now into the cache (False: nothing written)."""
    datacache.keep_derived(_SECTION, _code_stamp(), _WHERE, _WHERE, dict(_programs()))
    return datacache.save()
