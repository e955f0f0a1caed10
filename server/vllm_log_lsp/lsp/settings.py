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


#: The largest document size limit accepted (MB): beyond any log an editor can hold, and small enough
#: that the limit in characters stays an ordinary integer (1e308 MB overflowed every analysis).
MAX_FILE_SIZE_MB = 100_000.0
MAX_DEBOUNCE_MS = 60_000


def _setting(key: str, description: str, **schema: Any) -> dict[str, Any]:
    """Field metadata: the setting's JSON name, its description for users (markdown), and the
    JSON schema of its value beyond the default (`type`, bounds): all the client declares."""
    return {"key": key, "description": description, "schema": schema}


_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


@dataclass(frozen=True)
class Settings:
    """Effective settings for one document: the one source of the server's settings (the VS Code
    client's `package.json` is generated from it by `scripts/sync_settings.py`)."""

    precursors: bool = field(
        default=True,
        metadata=_setting(
            "diagnostics.precursors",
            "Also report precursors: earlier lines that explain the later death (such as negative "
            "available KV-cache memory), as Information diagnostics linked to the root cause.",
            type="boolean",
        ),
    )
    severity_overrides: Mapping[str, str] = field(
        default_factory=dict,
        metadata=_setting(
            "diagnostics.severityOverrides",
            "Change the severity of diagnostics by rule id, or for all symptoms (`symptom`) or "
            'precursors (`precursor`), e.g. `{ "cuda-oom": "warning", "precursor": "hint" }`.',
            type="object",
            additionalProperties={"type": "string", "enum": list(SEVERITY_NAMES)},
        ),
    )
    extra_rule_files: tuple[str, ...] = field(
        default=(),
        metadata=_setting(
            "rules.extraFiles",
            "Additional cause-rule files (TOML, same format as the built-in catalog). Relative paths "
            "are resolved against the workspace folder; a folder's files apply to the logs in that "
            "folder. Only regular files up to 1 MB are read. In Restricted Mode only the value from "
            "your user settings is used.",
            **_STRINGS,
        ),
    )
    max_file_size_mb: float = field(
        default=200.0,
        metadata=_setting(
            "maxFileSizeMB",
            "Logs larger than this (in MB) are not analysed automatically. Note that VS Code itself "
            "never hands files over 50 MB to extensions: use **vLLM Log: Analyze Log File from "
            "Disk…** for those.",
            type="number",
            exclusiveMinimum=0,
            maximum=MAX_FILE_SIZE_MB,
        ),
    )
    launch_include: tuple[str, ...] = field(
        default=(),
        metadata=_setting(
            "launchScripts.include",
            "Glob patterns (relative to the workspace folder) of launch scripts where quick fixes "
            "may edit vLLM flags: shell scripts, compose files, Kubernetes manifests, Dockerfiles, "
            "Python. Empty: the server's built-in patterns.",
            **_STRINGS,
        ),
    )
    launch_exclude: tuple[str, ...] = field(
        default=(),
        metadata=_setting(
            "launchScripts.exclude",
            "Glob patterns of files never searched for launch scripts (version-control folders, "
            "virtual environments, `node_modules` and build output are never searched anyway).",
            **_STRINGS,
        ),
    )

    launch_docs: bool = field(
        default=False,
        metadata=_setting(
            "launchScripts.includeDocs",
            "Also treat commands in documentation (fenced shell blocks in Markdown, `.rst`, `.adoc`, "
            "`.txt`) as launch scripts that quick fixes may edit. Off: a README's example command "
            "is never edited.",
            type="boolean",
        ),
    )
    debounce_ms: int = field(
        default=300,
        metadata=_setting(
            "debounceMs",
            "Quiet time (milliseconds) after an edit before the log is analysed again.",
            type="number",
            minimum=0,
            maximum=MAX_DEBOUNCE_MS,
        ),
    )

    @property
    def max_file_chars(self) -> int:
        return int(self.max_file_size_mb * 1024 * 1024)


#: Settings only the VS Code client reads (how it starts the server, which files it opens as vLLM
#: logs, protocol tracing): declared by hand in its `package.json`; the server ignores them.
CLIENT_ONLY_KEYS = ("interpreter", "serverArgs", "detectLanguage", "trace.server")


def contributed_properties() -> dict[str, dict[str, Any]]:
    """The server's settings as VS Code's `contributes.configuration.properties` declares them."""
    properties: dict[str, dict[str, Any]] = {}
    for f in fields(Settings):
        meta = f.metadata
        default = getattr(Settings(), f.name)
        properties[f"{SECTION}.{meta['key']}"] = {
            **{name: _json(value) for name, value in meta["schema"].items()},
            "default": _json(default),
            "scope": "resource",  # per workspace folder
            "markdownDescription": meta["description"],
        }
    return properties


def _json(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


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
