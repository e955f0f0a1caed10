"""vLLM version strings and version ranges, without a dependency on `packaging`.

vLLM versions look like `0.11.2.dev7+ge10703fe8`, `0.19.2rc1.dev8+g4b7f5ea1a`, `0.10.1.1`.
Only the numeric release part matters for flag spellings and fix ranges.
"""

from __future__ import annotations

from . import regexes

Version = tuple[int, ...]

_RELEASE = regexes.compile(r"v?(\d+(?:\.\d+)*)")
_CLAUSE = regexes.compile(r"(>=|<=|==|!=|>|<)\s*(\S+)")


def parse_version(text: str | None) -> Version | None:
    """The numeric release tuple of a version string, padded to three parts; None if absent."""
    if not text:
        return None
    match = _RELEASE.match(text.strip())
    if not match:
        return None
    parts = tuple(int(p) for p in match.group(1).split("."))
    return parts + (0,) * (3 - len(parts)) if len(parts) < 3 else parts


def in_range(version: Version | None, spec: str) -> bool:
    """Whether `version` satisfies a comma-separated spec like `>=0.10.2,<0.31`.

    An empty spec, or an unknown version, matches: we would rather show a fix than hide it.
    """
    if not spec or version is None:
        return True
    for clause in spec.split(","):
        clause = clause.strip()
        match = _CLAUSE.fullmatch(clause)
        if not match:
            raise ValueError(f"bad version clause {clause!r}")
        bound = parse_version(match.group(2))
        if bound is None:
            raise ValueError(f"bad version in {clause!r}")
        op = match.group(1)
        ok = {
            ">=": version >= bound,
            "<=": version <= bound,
            ">": version > bound,
            "<": version < bound,
            "==": version == bound,
            "!=": version != bound,
        }[op]
        if not ok:
            return False
    return True
