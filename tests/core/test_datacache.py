"""The parsed catalog kept in the user's cache (`core.datacache`): the same catalog and the same
compiled patterns as parsing the TOML, invalidated by any change of a file's text or of the
deriving code, and a corrupt, foreign or unwritable cache ignored (parsed again), never an error."""

from __future__ import annotations

import marshal
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from support import FORMATS
from vllm_log_lsp.core import catalog as catalog_mod
from vllm_log_lsp.core import datacache, regexes
from vllm_log_lsp.core.catalog import _builtin_files, build_catalog

CRASH = FORMATS / "tp2-worker-oom.log"
TOML = 'title = "one"\n[[rule]]\nid = "a"\nmatch = ["x+"]\n'


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A cache folder of this test's own, read afresh."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("VLLM_LOG_LSP_CACHE_DIR", str(folder))
    datacache.forget()
    yield folder
    datacache.forget()


def _cache_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _described(catalog) -> list[str]:
    """Everything a catalog holds, patterns with the literal each requires."""
    rules = [repr(r) + repr([(p.source, p.required) for p in (*r.match, *r.evidence)]) for r in catalog.rules]
    markers = [
        repr(m) + repr(m.pattern.required) for kind in sorted(catalog.markers) for m in catalog.markers[kind]
    ]
    return rules + markers + [repr(e) for e in catalog.errors]


def test_the_cached_catalog_is_the_parsed_catalog(cache: Path) -> None:
    parsed = build_catalog(_builtin_files(), [])  # no cache involved
    first = build_catalog(_builtin_files(), [], cached=True)  # parses, writes the cache
    assert [p.name for p in _cache_files(cache)] == ["catalog-markers.toml.marshal"]  # (the others wait)
    assert all(r for r in first.rules)  # every file parsed: each now has its cache file
    assert len(_cache_files(cache)) == len(_builtin_files())
    datacache.forget()
    again = build_catalog(_builtin_files(), [], cached=True)  # from the cache file
    assert _described(parsed) == _described(first) == _described(again)
    assert all(p._required is not None for r in again.rules for p in r.match)  # known, not parsed


def test_a_changed_text_is_parsed_again(cache: Path) -> None:
    assert datacache.toml_data("catalog/t.toml", TOML)["title"] == "one"
    assert _cache_files(cache)  # a new parse is saved at once
    datacache.forget()
    same_length = TOML.replace("one", "two")
    assert datacache.toml_data("catalog/t.toml", same_length)["title"] == "two"
    assert datacache.toml_data("catalog/t.toml", TOML + "\n")["title"] == "one"


def test_derived_values_follow_the_text_and_the_code(cache: Path) -> None:
    datacache.keep_derived("section", (1, 2), "f.toml", TOML, {"x+": "x"})
    assert datacache.save()
    datacache.forget()
    assert datacache.derived("section", (1, 2), "f.toml", TOML) == {"x+": "x"}
    assert datacache.derived("section", (1, 3), "f.toml", TOML) is None  # the code changed
    assert datacache.derived("section", (1, 2), "f.toml", TOML + " ") is None  # the file changed
    assert datacache.derived("other", (1, 2), "f.toml", TOML) is None


def _corruptions(good: bytes, other_file: bytes) -> list[bytes]:
    magic = good[: good.index(b"\n") + 1]
    foreign = marshal.dumps({"format": datacache.FORMAT + 1, "toml": {}})
    not_a_dict = marshal.dumps(["toml"])
    return [
        other_file,  # a valid entry of another data file
        b"",
        b"garbage",
        good[: len(good) // 2],  # truncated
        good[:-1] + bytes([good[-1] ^ 1]),  # one bit flipped
        magic + zlib.crc32(foreign).to_bytes(4, "little") + foreign,  # another layout
        magic + zlib.crc32(not_a_dict).to_bytes(4, "little") + not_a_dict,
        magic + zlib.crc32(b"\xff\xff").to_bytes(4, "little") + b"\xff\xff",  # not marshal data
    ]


def test_a_corrupt_or_foreign_cache_is_ignored_and_rewritten(cache: Path) -> None:
    _described(build_catalog(_builtin_files(), [], cached=True))  # every file parsed and cached
    [path] = [p for p in _cache_files(cache) if p.name == "catalog-markers.toml.marshal"]
    [other] = [p for p in _cache_files(cache) if p.name == "catalog-10-memory.toml.marshal"]
    good = path.read_bytes()
    expected = _described(build_catalog(_builtin_files(), []))
    for bad in _corruptions(good, other.read_bytes()):
        path.write_bytes(bad)
        datacache.forget()
        assert _described(build_catalog(_builtin_files(), [], cached=True)) == expected
        entry = datacache._read("catalog/markers.toml")  # parsed again and written whole
        assert entry["toml"] and entry["derived"]["patterns"]


def test_a_cache_entry_for_another_text_is_not_used(cache: Path) -> None:
    """A cache whose entry says it holds this file, but was made from other text, is not trusted."""
    datacache.toml_data("catalog/t.toml", TOML)
    datacache.forget()
    assert datacache.toml_data("catalog/t.toml", 'title = "mine"\n') == {"title": "mine"}


@pytest.mark.parametrize("where", ["file", "off"])
def test_an_unwritable_or_disabled_cache_changes_nothing(tmp_path: Path, where: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = str(blocker / "cache") if where == "file" else ""  # "": caching off
    env = dict(os.environ, VLLM_LOG_LSP_CACHE_DIR=folder)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(CRASH)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 1, done.stderr
        assert '"oom-serving"' in done.stdout and not done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_the_literals_read_from_the_cache_are_those_the_code_finds(cache: Path) -> None:
    build_catalog(_builtin_files(), [], cached=True)
    datacache.forget()
    catalog_mod._REQUIRED.clear()
    catalog = build_catalog(_builtin_files(), [], cached=True)
    patterns = [p for r in catalog.rules for p in (*r.match, *r.frames, *r.context, *r.evidence)]
    assert len(catalog_mod._REQUIRED) > 500 and all(p._required is not None for p in patterns)
    for source, literal in catalog_mod._REQUIRED.items():
        assert catalog_mod.required_literal(source) == literal, source


def test_a_pattern_compiled_from_its_cached_program_is_the_compiled_pattern(cache: Path) -> None:
    build_catalog(_builtin_files(), [], cached=True)
    datacache.forget()
    catalog_mod._PROGRAMS.clear()
    catalog = build_catalog(_builtin_files(), [], cached=True)  # the programs read from the cache
    samples = [s for r in catalog.rules for s in (*r.samples, *r.sample_context, *r.sample_frames)]
    assert len(catalog_mod._PROGRAMS) > 500
    for source in catalog_mod._PROGRAMS:
        ours, theirs = catalog_mod.compile_builtin(source), re.compile(source)
        assert ours is not theirs  # (not re's own cache: made from the program)
        assert (ours.pattern, ours.flags, ours.groups, ours.groupindex) == (
            theirs.pattern,
            theirs.flags,
            theirs.groups,
            theirs.groupindex,
        )
        for sample in samples:
            found, expected = ours.search(sample), theirs.search(sample)
            assert (found and (found.span(), found.groupdict())) == (
                expected and (expected.span(), expected.groupdict())
            )


def test_a_program_the_engine_refuses_is_compiled_as_usual(cache: Path) -> None:
    source = r"CUDA out of memory\. Tried to allocate (?P<size>[\d.]+ [GM]iB)"
    program = regexes.sre_program(source)
    assert program is not None
    broken = [program[0], b"\xff\xff\xff\x7f" * 4, *program[2:]]
    catalog_mod._PROGRAMS[source] = broken
    try:
        assert catalog_mod.compile_builtin(source).search("CUDA out of memory. Tried to allocate 2.00 GiB")
        assert source not in catalog_mod._PROGRAMS  # never tried again
    finally:
        catalog_mod._PROGRAMS.pop(source, None)
