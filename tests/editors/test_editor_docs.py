"""docs/editors.md cannot drift from the set-up files the editor tests run.

Every lua/elisp/toml snippet in docs/editors.md sits under a `<!-- file: editors/... -->` marker and equals
that file byte for byte; every set-up file under editors/ is in the docs. README.md may embed the same
files: a marked snippet there must be equal too. The settings the docs list are the server's settings.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "editors.md"
README = ROOT / "README.md"
EDITORS = ROOT / "editors"
SNIPPET_LANGUAGES = {"lua": ".lua", "elisp": ".el", "emacs-lisp": ".el", "toml": ".toml"}
SETUP_SUFFIXES = {".lua", ".el", ".toml"}

_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*file:\s*(\S+)\s*-->\s*$")


def snippets(path: Path) -> list[tuple[str, str, str | None, int]]:
    """(language, body, marked file or None, line) for each fenced block of `path`."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        line = text.count("\n", 0, match.start()) + 1
        found.append((match[1], match[2], marker[1] if marker else None, line))
    return found


def setup_files() -> list[Path]:
    return sorted(p for p in EDITORS.rglob("*") if p.is_file() and p.suffix in SETUP_SUFFIXES)


def test_there_are_setup_files():
    names = {p.relative_to(ROOT).as_posix() for p in setup_files()}
    assert {
        "editors/neovim/vllm-log.lua",
        "editors/neovim/vllm-log-legacy.lua",
        "editors/emacs/vllm-log.el",
        "editors/helix/languages.toml",
    } <= names


def test_every_docs_snippet_is_a_setup_file_verbatim():
    checked = 0
    for language, body, marked, line in snippets(DOCS):
        if language not in SNIPPET_LANGUAGES:
            continue
        assert marked, (
            f"docs/editors.md:{line}: a {language} snippet needs a <!-- file: editors/... --> marker"
        )
        source = ROOT / marked
        assert source.suffix == SNIPPET_LANGUAGES[language], f"docs/editors.md:{line}: {language} vs {marked}"
        assert source.is_file(), f"docs/editors.md:{line}: {marked} does not exist"
        assert body == source.read_text(encoding="utf-8"), (
            f"docs/editors.md:{line} differs from {marked}: copy the file into the docs"
        )
        checked += 1
    assert checked >= 4


def test_every_setup_file_is_in_the_docs():
    documented = {marked for _, _, marked, _ in snippets(DOCS) if marked}
    for path in setup_files():
        assert path.relative_to(ROOT).as_posix() in documented, f"{path} is not shown in docs/editors.md"


def test_readme_embeds_setup_files_verbatim():
    if not README.exists():
        pytest.skip("no README.md")
    for language, body, marked, line in snippets(README):
        if marked is None or not marked.startswith("editors/"):
            continue
        assert language in SNIPPET_LANGUAGES, f"README.md:{line}: {marked} fenced as {language!r}"
        assert body == (ROOT / marked).read_text(encoding="utf-8"), f"README.md:{line} differs from {marked}"


def test_helix_languages_toml():
    config = tomllib.loads((EDITORS / "helix" / "languages.toml").read_text(encoding="utf-8"))
    (language,) = config["language"]
    assert language["name"] == "vllm-log"
    assert language["language-id"] == "vllm-log"
    assert language["language-servers"] == ["vllm-log-lsp"]
    assert {"glob": "*vllm*.log"} in language["file-types"]
    assert language["scope"]  # required by Helix
    assert config["language-server"]["vllm-log-lsp"] == {"command": "vllm-log-lsp", "args": ["serve"]}


def test_setups_start_the_same_server():
    nvim = (EDITORS / "neovim" / "vllm-log.lua").read_text(encoding="utf-8")
    legacy = (EDITORS / "neovim" / "vllm-log-legacy.lua").read_text(encoding="utf-8")
    emacs = (EDITORS / "emacs" / "vllm-log.el").read_text(encoding="utf-8")
    for text in (nvim, legacy):
        assert "cmd = { 'vllm-log-lsp', 'serve' }" in text
        assert "'vllm-log'" in text
    assert '("vllm-log-lsp" "serve")' in emacs


def _settings_keys() -> set[str]:
    from vllm_log_lsp.lsp.settings import Settings

    return {f.metadata["key"] for f in fields(Settings)}


def test_docs_list_the_server_settings():
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("### Settings", 1)[1]
    listed = set(re.findall(r"^\| `([\w.]+)` \|", section, re.M))
    assert listed == _settings_keys()


def test_docs_settings_example_uses_known_keys():
    (example,) = [body for language, body, _, _ in snippets(DOCS) if language == "json"]
    known = _settings_keys()

    def flatten(value, prefix=""):
        for key, item in value.items():
            name = prefix + key
            if isinstance(item, dict) and name not in known:
                yield from flatten(item, name + ".")
            else:
                yield name

    assert set(flatten(json.loads(example))) <= known
