#!/usr/bin/env python3
"""Choose, for each literal of the scan's pre-filter, the part of it that rg searches for.

rg searches many literals at once with Teddy: a SIMD filter over the first three bytes of every
literal, then a check of each place whose three bytes fit one (the filter keeps 16 buckets of
masks over the bytes' nibbles, so places that merely resemble a literal's start are checked too).
A literal that starts with three bytes common in log text (` re` of ` received at time=`, `ter`
of `terminated unexpectedly`, `atc` of `atchdog`, like `batch`) sends the search to a check at
every such place: with the scan's 64 literals, 100 MB of a serving log took 0.15–0.22 s instead
of the 0.04 s that 16 literals take.

A line holding a literal holds every part of it, so searching for a part finds every line the
literal does, and maybe some more: the scan's readers test each line's text for their marker's
own literal anyway (`scan._MarkersByMessage`, `scan._run_start`). For each literal this picks the
ending (a suffix) whose first three bytes are rarest in real vLLM logs (the test fixtures' healthy
and crash logs), among those that
- occur in no more places of those logs than the literal (no line found that it does not find);
- keep at least `MIN_BYTES` bytes, and start neither inside a UTF-8 character nor inside a
  number (a number's later digits are as common as its first);
and writes the forms that differ from their literal to `server/vllm_log_lsp/core/search_forms.py`
(read by `early.rg_command`). The stats literals are left whole: the stats reader takes every
line it is given for a stats line of a layout it knows (`stats._Clock.plan_of`).

    .venv/bin/python scripts/search_forms.py           # write the module
    .venv/bin/python scripts/search_forms.py --check   # exit 1 when it is not up to date

Run it after a catalog change adds or changes a marker's literal (`tests/core/test_search_forms.py`
fails until then).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "server" / "vllm_log_lsp" / "core" / "search_forms.py"
REFERENCE = [ROOT / "tests" / "fixtures" / name for name in ("healthy", "crash", "crash2", "crash3")]
MIN_BYTES = 4
HEADER = '''"""The part of each pre-filter literal that rg searches for (generated: `scripts/search_forms.py`,
which says why and how each is chosen; do not edit by hand)."""

#: literal → the ending of it that rg searches for; a literal not here is searched whole.
FORMS: dict[str, str] = {
'''


def reference_text() -> bytes:
    """The real logs the choice is measured on, one after another."""
    paths = sorted(path for folder in REFERENCE for path in folder.glob("*.log"))
    return b"\n".join(path.read_bytes() for path in paths)


def starts(literal: bytes) -> list[int]:
    """Where an ending of `literal` may start: not inside a UTF-8 character or a number, and
    leaving at least `MIN_BYTES` bytes (the literal's own start always)."""
    found = [0]
    for at in range(1, len(literal) - MIN_BYTES + 1):
        if literal[at] & 0xC0 == 0x80:  # (a UTF-8 continuation byte)
            continue
        if literal[at : at + 1].isdigit() and literal[at - 1 : at].isdigit():
            continue
        found.append(at)
    return found


def search_form(literal: str, reference: bytes) -> str:
    """The ending of `literal` rg should search for (see the module doc)."""
    whole = literal.encode("utf-8")
    places = reference.count(whole)
    best = (reference.count(whole[:3]), 0)
    for at in starts(whole)[1:]:
        ending = whole[at:]
        if reference.count(ending) > places:
            continue
        best = min(best, (reference.count(ending[:3]), at))
    return whole[best[1] :].decode("utf-8")


def forms() -> dict[str, str]:
    """Each scan literal rg searches whose search form differs from it, with its form (sorted)."""
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.early import fewest_literals
    from vllm_log_lsp.core.scan import scan_literals

    reference = reference_text()
    # (Only the literals rg is handed: one holding another is left out before its form is looked up.)
    searched = sorted(fewest_literals(sorted(scan_literals(builtin_catalog()))))
    chosen = {literal: search_form(literal, reference) for literal in searched}
    return {literal: form for literal, form in chosen.items() if form != literal}


def module_text(table: dict[str, str]) -> str:
    """The generated module's text."""
    # (JSON's strings are Python's too, quoted as ruff formats them.)
    rows = "".join(f"    {_quoted(literal)}: {_quoted(form)},\n" for literal, form in table.items())
    return HEADER + rows + "}\n"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the module is not up to date")
    args = parser.parse_args()
    text = module_text(forms())
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(
                f"{OUTPUT.relative_to(ROOT)} is not up to date: run scripts/search_forms.py", file=sys.stderr
            )
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
