"""Loading the built-in catalog: a rule file is read only when a rule of it is reached, and each
entry's line number is the count of newlines before it, in whatever order entries are looked up."""

from __future__ import annotations

from vllm_log_lsp.core import catalog as catalog_mod
from vllm_log_lsp.core.catalog import MARKERS_FILE, _builtin_files, _line_of, build_catalog
from vllm_log_lsp.core.datacache import package_text


def _naive_line(text: str, needle: str) -> int | None:
    pos = text.find(needle)
    return text.count("\n", 0, pos) + 1 if pos >= 0 else None


def test_a_rule_file_is_read_when_it_is_reached() -> None:
    read: list[str] = []

    def counted(where: str, reader):
        def read_it() -> str:
            read.append(where)
            return reader()

        return read_it

    files = [(where, counted(where, reader)) for where, reader in _builtin_files()]
    catalog = build_catalog(files, [])
    assert [w.rsplit("/", 1)[1] for w in read] == [MARKERS_FILE]  # the markers, at once
    first = next(catalog.iter_rules())
    assert len(read) == 2 and first.source.startswith(read[1])
    assert len(catalog.rules) > 100 and sorted(read) == sorted(w for w, _ in files)


def test_every_rule_line_is_the_count_of_newlines_before_its_id() -> None:
    catalog = build_catalog(_builtin_files(), [])
    texts = {where: package_text(where) for where, _ in _builtin_files()}
    for rule in catalog.rules:
        where, _, line = rule.source.rpartition(":")
        assert int(line) == _naive_line(texts[where], f'"{rule.id}"'), rule.source


def test_line_numbers_looked_up_in_any_order_are_the_same() -> None:
    text = "".join(f'[[rule]]\nid = "r{n}"\n\n' for n in range(40))
    needles = [f'"r{n}"' for n in range(40)] + ['"absent"']
    other = "x\n" * 7 + '"r3"'
    for order in (needles, needles[::-1], needles[::3] + needles[1::3] + needles[2::3]):
        for needle in order:
            assert _line_of(text, needle) == _naive_line(text, needle)
            assert _line_of(other, '"r3"') == 8  # another text between two of the same
    assert catalog_mod._line_of(text, '"r0"') == 2
