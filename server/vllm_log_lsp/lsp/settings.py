"""The server's settings: what they mean, their defaults, and lenient parsing.

Clients send settings in several shapes; all are accepted:
- a plain dict (Neovim `init_options` / `settings`): `{"diagnostics": {"precursors": false}}`;
- VS Code style, under the section name: `{"vllmLog": {...}}`;
- a per-folder list: `[{"workspace": "file:///a", ...}, {...}]` (an entry without a folder is the
  global one), also wrapped as `{"settings": [...], "globalSettings": {...}}`;
- nested or dotted keys: `{"diagnostics": {"precursors": false}}` = `{"diagnostics.precursors": false}`.

A bad value never stops the server: that key keeps its default and the problem is reported (the
caller shows it with `window/showMessage`). Unknown keys are ignored (clients send their own).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

SECTION = "vllmLog"
SEVERITY_NAMES = ("error", "warning", "information", "hint")
_FOLDER_KEYS = ("workspace", "workspaceFolder", "folder", "uri")


@dataclass(frozen=True)
class Settings:
    """Effective settings for one document. Field metadata `key` is the setting's JSON name."""

    #: Show precursors (lines that explain a later death) as Information diagnostics.
    precursors: bool = field(default=True, metadata={"key": "diagnostics.precursors"})
    #: Rule id, or `symptom` / `precursor`, → `error|warning|information|hint`.
    severity_overrides: Mapping[str, str] = field(
        default_factory=dict, metadata={"key": "diagnostics.severityOverrides"}
    )
    #: User rule files (TOML, same schema as the built-in catalog), tried before built-in rules.
    extra_rule_files: tuple[str, ...] = field(default=(), metadata={"key": "rules.extraFiles"})
    #: Documents bigger than this (in MB of text) are not analysed; one diagnostic says so.
    max_file_size_mb: float = field(default=200.0, metadata={"key": "maxFileSizeMB"})
    #: Globs of launch scripts the quick fixes may edit (used by the code-action feature).
    launch_include: tuple[str, ...] = field(default=(), metadata={"key": "launchScripts.include"})
    launch_exclude: tuple[str, ...] = field(default=(), metadata={"key": "launchScripts.exclude"})
    #: Whether commands in documentation (README.md, .rst, .txt …) count as launch scripts.
    launch_docs: bool = field(default=False, metadata={"key": "launchScripts.includeDocs"})
    #: Quiet time after an edit before the document is analysed again.
    debounce_ms: int = field(default=300, metadata={"key": "debounceMs"})

    @property
    def max_file_chars(self) -> int:
        return int(self.max_file_size_mb * 1024 * 1024)


@dataclass(frozen=True)
class SettingsSet:
    """Global settings plus per-workspace-folder ones (the longest matching folder wins)."""

    default: Settings = field(default_factory=Settings)
    folders: Mapping[str, Settings] = field(default_factory=dict)

    def for_uri(self, uri: str) -> Settings:
        best, best_len = self.default, -1
        for folder, settings in self.folders.items():
            prefix = folder.rstrip("/") + "/"
            if uri.startswith(prefix) and len(prefix) > best_len:
                best, best_len = settings, len(prefix)
        return best


# -- validation of single values ---------------------------------------------------------------
class _Bad(ValueError):
    pass


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _Bad(f"expected true or false, got {value!r}")


#: The largest document size limit accepted (MB): beyond any log an editor can hold, and small enough
#: that the limit in characters stays an ordinary integer (1e308 MB overflowed every analysis).
MAX_FILE_SIZE_MB = 100_000.0
MAX_DEBOUNCE_MS = 60_000


def _number_between(value: Any, low: float, high: float, what: str, low_open: bool = False) -> float:
    """A real number in [low, high] (or (low, high]); NaN, infinities, booleans and strings are refused."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if (number > low if low_open else number >= low) and number <= high:  # False for NaN
            return number
    low_bracket = "(" if low_open else "["
    raise _Bad(f"expected {what} in {low_bracket}{low:g}, {high:g}], got {value!r}")


def _file_size_mb(value: Any) -> float:
    return _number_between(value, 0, MAX_FILE_SIZE_MB, "a size in MB", low_open=True)


def _milliseconds(value: Any) -> int:
    return int(_number_between(value, 0, MAX_DEBOUNCE_MS, "milliseconds"))


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _Bad(f"expected a list of strings, got {value!r}")


def _severities(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise _Bad(f"expected an object mapping rule ids to {'|'.join(SEVERITY_NAMES)}, got {value!r}")
    bad = {k: v for k, v in value.items() if not isinstance(v, str) or v.lower() not in SEVERITY_NAMES}
    if bad:
        raise _Bad(f"expected {'|'.join(SEVERITY_NAMES)} for {', '.join(map(str, bad))}, got {bad!r}")
    return {str(k): v.lower() for k, v in value.items()}


_VALIDATORS: dict[str, Callable[[Any], Any]] = {
    "precursors": _bool,
    "severity_overrides": _severities,
    "extra_rule_files": _strings,
    "max_file_size_mb": _file_size_mb,
    "launch_include": _strings,
    "launch_exclude": _strings,
    "launch_docs": _bool,
    "debounce_ms": _milliseconds,
}


# -- parsing whole payloads --------------------------------------------------------------------
def _flatten(raw: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys; a dict-valued setting (severityOverrides) stays whole."""
    known = {f.metadata["key"] for f in fields(Settings)}
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in known:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def parse_one(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """One settings object onto `base` (defaults). Returns the settings and error messages."""
    base = base or Settings()
    if raw is None:
        return base, []
    if not isinstance(raw, Mapping):
        return base, [f"{SECTION}: expected an object of settings, got {raw!r}; using defaults"]
    if isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    flat = _flatten(raw)
    values: dict[str, Any] = {}
    errors: list[str] = []
    for f in fields(Settings):
        key = f.metadata["key"]
        if key not in flat or flat[key] is None:
            continue
        try:
            values[f.name] = _VALIDATORS[f.name](flat[key])
        except _Bad as err:
            errors.append(f"{SECTION}.{key}: {err}; using {getattr(base, f.name)!r}")
    return Settings(**{f.name: values.get(f.name, getattr(base, f.name)) for f in fields(Settings)}), errors


def parse_settings(raw: Any) -> tuple[SettingsSet, list[str]]:
    """Any accepted payload shape → global and per-folder settings, plus error messages."""
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), (Mapping, list)):
        raw = raw[SECTION]
    global_raw: Any = None
    entries: list[Any] = []
    if isinstance(raw, Mapping) and ("settings" in raw or "globalSettings" in raw):
        global_raw = raw.get("globalSettings")
        inner = raw.get("settings")
        entries = list(inner) if isinstance(inner, list) else [inner] if inner is not None else []
    elif isinstance(raw, list):
        entries = raw
    else:
        global_raw = raw
    default, errors = parse_one(global_raw)
    folders: dict[str, Settings] = {}
    for entry in entries:
        folder = next(
            (entry[k] for k in _FOLDER_KEYS if isinstance(entry, Mapping) and isinstance(entry.get(k), str)),
            None,
        )
        if isinstance(entry, Mapping) and folder is not None:
            entry = {k: v for k, v in entry.items() if k not in _FOLDER_KEYS}
        settings, entry_errors = parse_one(entry, default)
        errors.extend(entry_errors)
        if folder is None:
            default = settings
        else:
            folders[folder] = settings
    return SettingsSet(default, folders), errors
