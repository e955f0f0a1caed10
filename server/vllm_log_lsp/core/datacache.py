"""The package's own data files, parsed once per version and kept in the user's cache folder.

Parsing the catalog's TOML (and importing the TOML parser) is most of a short `check`'s work;
its result is plain data, so it is kept as `marshal` data of plain values (dicts, lists,
strings, numbers) in one small file per data file, package and Python version (a run reads
only the files it uses), with what is derived from it
that costs as much again (the literal each built-in regex requires and the program `re`
compiles it to, see `catalog.required_literal` and `catalog.sre_program`).

A cached entry is used only for a file of the same name, length and CRC-32 (the text is read
anyway, for line numbers), by the same package version and the same code that derived it (the
`stamp` of the deriving module: size and mtime, for a source checkout). Anything else — an old,
corrupt, truncated or foreign cache file — is ignored and rewritten; a cache folder that cannot
be written is no error, the data is then parsed each time. Nothing in the cache is ever run:
only plain values are written, and what is read is used as values (unlike pickle, marshal
data calls nothing while it loads).

`VLLM_LOG_LSP_CACHE_DIR` chooses the folder (empty: no cache); else `$XDG_CACHE_HOME/vllm-log-lsp`,
`~/.cache/vllm-log-lsp` (`%LOCALAPPDATA%` on Windows).
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from _thread import allocate_lock, get_ident

from .. import __version__

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Bump when the layout of a cache file changes.
FORMAT = 2
_MAGIC = b"vllm-log-lsp data cache\n"
#: Values a cache may hold (what TOML parses to, minus dates, which are not cached; bytes).
_PLAIN = (str, bytes, int, float, bool, type(None))

_lock = allocate_lock()  # (`_thread`'s: importing threading would cost start-up)
#: Per data file: its cache entry {"key": [length, crc], "toml": ..., "derived": {...}}, read on
#: first use (an empty dict when there was none or it did not hold this text).
_entries: dict[str, dict[str, Any]] = {}
_dirty: set[str] = set()  # data files whose entry changed since it was read


#: The package's folder: its data files live under it (`catalog/`, `mined/`).
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_text(relative: str) -> str:
    """The text of one of the package's data files (`catalog/health/health.toml`)."""
    with open(os.path.join(PACKAGE_DIR, relative), encoding="utf-8") as handle:
        return handle.read()


def cache_dir() -> str | None:
    """The folder of the cache, or None when caching is off (`VLLM_LOG_LSP_CACHE_DIR=`)."""
    chosen = os.environ.get("VLLM_LOG_LSP_CACHE_DIR")
    if chosen is not None:
        return chosen or None
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.environ.get("LOCALAPPDATA") if sys.platform == "win32" else None
    )
    if not base:
        home = os.path.expanduser("~")
        if home == "~":  # no home folder to cache in
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "vllm-log-lsp")


def cache_path(where: str) -> str | None:
    """The cache file of data file `where` (`catalog/markers.toml`) for this installation, package
    and Python version, or None when caching is off."""
    folder = cache_dir()
    if folder is None:
        return None
    python = f"{sys.implementation.name}{sys.version_info[0]}{sys.version_info[1]}"
    # One folder per installation (a checkout, a wheel, the VS Code bundle): each keeps its own.
    installation = zlib.crc32(PACKAGE_DIR.encode("utf-8", "surrogateescape"))
    name = where.replace("/", "-").replace("\\", "-")
    return os.path.join(folder, f"{__version__}-{python}-{installation:08x}", f"{name}.marshal")


def stamp(path: str) -> tuple[int, int]:
    """What identifies a file's version cheaply: its size and modification time (ns)."""
    try:
        info = os.stat(path)
    except OSError:
        return (-1, -1)
    return (info.st_size, info.st_mtime_ns)


def _key(text: str) -> list[int]:
    return [len(text), zlib.crc32(text.encode("utf-8", "surrogatepass"))]


def _read(where: str) -> dict[str, Any]:
    """The cache entry of data file `where` (`{}` when there is none or it is unusable)."""
    path = cache_path(where)
    if path is None:
        return {}
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return {}
    if not raw.startswith(_MAGIC) or len(raw) < len(_MAGIC) + 4:
        return {}
    body = raw[len(_MAGIC) + 4 :]
    if int.from_bytes(raw[len(_MAGIC) : len(_MAGIC) + 4], "little") != zlib.crc32(body):
        return {}  # truncated or corrupt
    try:
        data = marshal.loads(body)
    except Exception:  # ValueError, EOFError, TypeError: not marshal data of this Python
        return {}
    # Only values come out of marshal data (a code object would be a value too, never run).
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("where") != where:
        return {}
    return data


def _is_plain(value: Any) -> bool:
    """Only dicts, lists and plain values (never a code object or anything else marshal makes)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind not in _PLAIN:
            return False
    return True


def _entry(where: str, text: str) -> dict[str, Any]:
    """The entry of `where` for this very text (a fresh one when the cache holds another). Under
    `_lock`."""
    entry = _entries.get(where)
    key = _key(text)
    if entry is None or entry.get("key") != key:
        entry = _read(where) if entry is None else {}
        if entry.get("key") != key:
            entry = {"format": FORMAT, "where": where, "key": key, "derived": {}}
        _entries[where] = entry
    return entry


def save() -> bool:
    """Write the entries that changed (atomically: a reader sees the old file or the new one).
    False when nothing was written (nothing new, caching off, or the folder is not writable)."""
    written = False
    with _lock:
        for where in sorted(_dirty):
            path = cache_path(where)
            entry = _entries.get(where)
            if path is None or entry is None:
                continue
            try:
                body = marshal.dumps(entry)
            except ValueError:  # a value marshal cannot hold: keep nothing rather than part
                continue
            temporary = f"{path}.{os.getpid()}.{get_ident()}.tmp"
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(temporary, "wb") as handle:
                    handle.write(_MAGIC + zlib.crc32(body).to_bytes(4, "little") + body)
                os.replace(temporary, path)
            except OSError:
                try:  # noqa: SIM105 (contextlib: an import a short check does without)
                    os.unlink(temporary)
                except OSError:
                    pass
                continue
            written = True
        _dirty.clear()
    return written


def toml_data(where: str, text: str) -> dict[str, Any]:
    """`tomllib.loads(text)` of the package's data file `where`, from the cache when the cache saw
    this very text (a new parse is saved). Raises TOMLDecodeError as tomllib does."""
    with _lock:
        found = _entry(where, text).get("toml")
    if found is not None:
        return found
    data = parse_toml(text)
    if _is_plain(data):  # a date, for instance, is not kept
        with _lock:
            _entry(where, text)["toml"] = data
            _dirty.add(where)
        save()
    return data


def parse_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads` (`tomli` before Python 3.11), the parser imported on first use."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib.loads(text)


def derived(section: str, code_stamp: Any, where: str, text: str) -> dict[str, Any] | None:
    """What `keep_derived` kept for file `where` with this very text, derived by code whose
    version is `code_stamp` (e.g. `stamp(__file__)` of the module that derives it); else None."""
    with _lock:
        kept = _entry(where, text)["derived"].get(section)
    if kept is None or kept[0] != list(code_stamp):
        return None
    return kept[1]


def keep_derived(section: str, code_stamp: Any, where: str, text: str, values: dict[str, Any]) -> None:
    """Keep `values` derived from file `where`'s text (see `derived`); `save()` writes them."""
    if not _is_plain(values):
        return
    with _lock:
        _entry(where, text)["derived"][section] = [list(code_stamp), values]
        _dirty.add(where)


def plain_value(where: str) -> Any:
    """The plain value `keep_plain_value` kept under the name `where` for this installation,
    package and Python version; None when there is none (or the cache is unusable)."""
    with _lock:
        entry = _entries.get(where)
        if entry is None:
            entry = _entries[where] = _read(where)
    value = entry.get("value")
    return value if _is_plain(value) else None


def keep_plain_value(where: str, value: Any) -> None:
    """Keep `value` (dicts, lists and plain values only) under the name `where`, and write it."""
    if not _is_plain(value):
        return
    with _lock:
        _entries[where] = {"format": FORMAT, "where": where, "value": value}
        _dirty.add(where)
    save()


def forget() -> None:
    """Drop what was read, so the next use reads the cache files again (for tests)."""
    with _lock:
        _entries.clear()
        _dirty.clear()
