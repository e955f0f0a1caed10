"""A root cause's origin: which mined message it is, where that is raised, and the cause named
from there when no catalog rule knows the message.

The families (`mined/families.toml`, data like the catalog) map the raising module, or the
exception type, to a cause with an explanation and the generic fix of that family: a message
raised in `vllm/config/…` is a configuration error, one in `vllm/distributed/…` a parallelism
error. Catalog rules always win: this is consulted only for what they do not recognise.
"""

from __future__ import annotations

import functools
import re
from _thread import allocate_lock

from . import datacache, regexes
from .catalog import BUILTIN_REGEX_TIMEOUT, CatalogError, Rule, _parse_rule
from .mined import MessageMatch, Template, message_index
from .model import ExceptionEvent, MessageOrigin
from .records import dataclass
from .versions import Version

FAMILIES_FILE = "mined/families.toml"  # in the package

# A family rule is reached through the mined index, never by its own pattern.
_NEVER = "(?!)"
# Placeholder values longer than this are cut in the evidence (a repr of a whole config).
_MAX_CAPTURE = 300
# Event kinds whose text is a message some code raised or logged (not a runtime's fault line).
_MESSAGE_KINDS = ("python", "message")


@dataclass(frozen=True)
class Family:
    """Where messages of one cause are raised, and the cause itself (a catalog-like rule)."""

    rule: Rule
    kinds: tuple[str, ...]
    modules: tuple[str, ...]

    def covers(self, template: Template) -> bool:
        module = template.sites[0].module
        return template.kind in self.kinds or module.startswith(self.modules)


def load_families(text: str, where: str, *, cached: bool = False) -> tuple[list[Family], list[CatalogError]]:
    """Families from TOML text (the rule schema plus `kinds` and `modules`; `cached`: the shipped
    file, whose parse the cache may hold)."""
    errors: list[CatalogError] = []
    families = []
    data = datacache.toml_data(where, text) if cached else datacache.parse_toml(text)
    for raw in data.get("family", []):
        modules = tuple(raw.get("modules", ()))
        shown = ", ".join(f"`{m}`" for m in modules)
        table = dict(raw, match=[_NEVER], fix=raw.get("fix", []))
        if shown:
            table["explanation"] = (
                raw.get("explanation", "").strip() + f"\n\nNamed for messages raised in {shown}."
            )
        rule = _parse_rule(table, where, text, BUILTIN_REGEX_TIMEOUT, errors)
        if rule is not None:
            families.append(Family(rule, tuple(raw.get("kinds", ())), modules))
    return families, errors


_FAMILIES: list[Family] | None = None
_LOCK = allocate_lock()


def families() -> list[Family]:
    """The shipped families, in priority order (read once)."""
    global _FAMILIES
    if _FAMILIES is None:
        with _LOCK:
            if _FAMILIES is None:
                loaded, errors = load_families(
                    datacache.package_text(FAMILIES_FILE), FAMILIES_FILE, cached=True
                )
                if errors:  # the test suite keeps the shipped file valid
                    raise errors[0]
                _FAMILIES = loaded
    return _FAMILIES


def family_rule(rule_id: str) -> Rule | None:
    """The cause of a family by its id (for `explain`)."""
    return next((f.rule for f in families() if f.rule.id == rule_id), None)


def family_of(template: Template) -> Family | None:
    return next((f for f in families() if f.covers(template)), None)


def match_event(
    event: ExceptionEvent, inner_text: str | None = None, version: Version | None = None
) -> MessageMatch | None:
    """The mined message an exception or ERROR line is, if any (of those that match, one raised
    where the traceback's frames are, and one the log's vLLM `version` can have raised).

    A wrapper's carried message (`inner_text`, e.g. EngineCore's `Worker failed with error
    'X'`) is the original error: only it is looked up. Where the wrapper itself is raised
    (`multiproc_executor.py`) says nothing of the cause."""
    if event.kind not in _MESSAGE_KINDS:
        return None
    paths = tuple(frame.path for frame in event.frames)
    return _match_message(event.type_name, event.message, paths, inner_text, version)


@functools.lru_cache(maxsize=1024)
def _match_message(
    type_name: str, message: str, paths: tuple[str, ...], inner_text: str | None, version: Version | None
) -> MessageMatch | None:
    """`match_event` of an exception by its parts, remembered: a restart loop's deaths and the
    copies of one exception ask for the same message again. (A match is never changed.)"""
    index = message_index()
    if inner_text:
        inner_type, _, inner_message = inner_text.partition(": ")
        if inner_message and re.fullmatch(r"[\w.]+", inner_type):
            return index.match(inner_type, inner_message, version, paths)
        return None
    return index.match(type_name, message, version, paths) if message else None


def origin_of(found: MessageMatch, version: Version | None, version_text: str | None) -> MessageOrigin:
    """What to tell about where a matched message comes from."""
    template = found.template
    site = template.sites[0]
    mismatch = None
    if template.cannot_be_from(version):
        ranges = template.held_ranges
        mismatch = (
            f"vLLM {version_text} cannot have raised it: the message is in vLLM {ranges} only "
            "(the log mixes vLLM versions, or a plugin or a modified vLLM raised it)"
        )
    return MessageOrigin(
        package=template.package,
        kind=template.kind,
        module=site.module,
        function=site.function,
        versions=site.versions,
        template=template.text,
        summary=template.origin,
        version_mismatch=mismatch,
    )


def evidence_of(found: MessageMatch) -> dict[str, str]:
    """The placeholders' values, as evidence (empty and overlong values left out)."""
    return {
        name: value if len(value) <= _MAX_CAPTURE else value[:_MAX_CAPTURE] + "…"
        for name, value in found.captures.items()
        if value.strip() and name != "rest"
    }


_VLLM_PATH = regexes.compile(r"(?:^|[/\\])(vllm[/\\](?:[^/\\]+[/\\])*[^/\\]+\.py)$")


def vllm_component(paths: list[str]) -> str | None:
    """The innermost vLLM module of a traceback's frame paths (`vllm/v1/worker/gpu_worker.py`)."""
    for path in reversed(paths):
        found = _VLLM_PATH.search(path)
        if found:
            module = found.group(1).replace("\\", "/")
            # `/src/vllm/vllm/…`: the package is the last `vllm/` of the path
            cut = module.rfind("/vllm/")
            return module[cut + 1 :] if cut >= 0 else module
    return None
