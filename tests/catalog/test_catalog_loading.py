"""Loading the built-in catalog: a rule file is read only when a rule of it is reached, and each
entry's line number is the count of newlines before it, in whatever order entries are looked up."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core import catalog as catalog_mod
from vllm_log_lsp.core.catalog import MARKERS_FILE, BrokenBuiltinFile, _builtin_files, _line_of, build_catalog
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


def _with_damaged(name: str, damage) -> list:
    """The built-in files with file `name`'s text passed through `damage`."""
    return [
        (where, (lambda w=where: damage(package_text(w))) if where.endswith(name) else reader)
        for where, reader in _builtin_files()
    ]


@pytest.mark.parametrize(
    "damage, said",
    [
        # a regex written in a basic string: `\[` is no TOML escape, so the file is no TOML
        (lambda text: text.replace("'", '"', 2), "invalid TOML"),
        (lambda text: text.replace("\ntitle = ", "\ntitel = ", 1), "has no title"),  # a misspelt key
        (lambda text: text[: len(text) // 2], ""),  # cut short
    ],
    ids=["basic-string", "misspelt-key", "cut"],
)
def test_a_damaged_builtin_file_is_said_when_reached_not_lost(damage, said: str) -> None:
    """A built-in file is parsed after the command checked the catalog's errors: one that does
    not load must stop the analysis that reaches it, never leave its rules out quietly."""
    damaged = "40-loading.toml"
    catalog = build_catalog(_with_damaged(damaged, damage), [])
    assert not catalog.errors  # (only the markers file is read at once)
    read = []
    with pytest.raises(BrokenBuiltinFile) as raised:
        for rule in catalog.iter_rules():
            read.append(rule.source)
    assert read and all(damaged not in source for source in read)  # the files before it were read
    message = str(raised.value)
    assert f"catalog/{damaged}" in message and said in message and "reinstall" in message
    with pytest.raises(BrokenBuiltinFile):  # (and again: it is never skipped)
        _ = catalog.rules


def test_an_intact_builtin_catalog_loads_every_file() -> None:
    catalog = build_catalog(_builtin_files(), [])
    files = {rule.source.rsplit(":", 1)[0] for rule in catalog.rules}
    rule_files = {where for where, _ in _builtin_files() if not where.endswith(MARKERS_FILE)}
    assert files == rule_files and not catalog.errors
