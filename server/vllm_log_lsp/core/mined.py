"""Where a message comes from: the index of messages vLLM and its stack raise or log.

`scripts/mine_messages.py` reads released wheels (vLLM 0.4 → newest, transformers,
huggingface_hub, safetensors, pydantic, ray, torch) and writes `mined/messages.idx`: every
`raise X(...)`, logger error/warning and `assert ..., msg` as a template (literal text with
named placeholders), its exception type, module, function and the mined releases that hold it.

Matching is linear in the message: the message's whole words are looked up in the index (each
template is filed under its rarest whole word), and a candidate matches when its literal chunks
occur in order, the first at the start and the last at the end (the same as a regex of the
chunks joined by lazy `(?P<name>.*?)` groups, anchored at both ends, but with no backtracking).
The file is read on first need only: a log whose root cause a catalog rule names never loads it
unless an adapter asks where the message comes from.
"""

from __future__ import annotations

import bisect
import functools
import marshal
import mmap
import os
import re
import zlib
from _thread import allocate_lock
from collections.abc import Iterator, Sequence

from . import regexes
from .records import dataclass
from .versions import Version, parse_version

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATA_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mined", "messages.idx")

_WORD = regexes.compile(r"[A-Za-z0-9_]+")
# Messages are looked at only this far: the exception line, not a pasted tensor dump.
_MAX_MESSAGE = 4000


@dataclass(frozen=True)
class Site:
    """Where a template is raised, and the first and last mined release that hold it there."""

    module: str
    function: str
    first: str
    last: str

    @property
    def where(self) -> str:
        """`vllm/config/model.py` `ModelConfig._verify_quantization`."""
        return f"`{self.module}` `{self.function}`" if self.function else f"`{self.module}`"

    @property
    def versions(self) -> str:
        return self.first if self.first == self.last else f"{self.first}–{self.last}"


@functools.lru_cache(maxsize=256)
def _version(text: str) -> Version:
    parsed = parse_version(text)
    assert parsed is not None  # mined releases are plain version numbers
    return parsed


@dataclass(frozen=True)
class Template:
    """One mined message: `parts` alternate literal text and placeholder names."""

    package: str
    kind: str  # exception type name, or `log.error` / `log.warning` / `log.critical`
    parts: tuple[str, ...]
    sites: tuple[Site, ...]
    # Each mined release of the package, and whether it holds the message (in any place).
    releases: tuple[tuple[str, bool], ...] = ()

    @property
    def literals(self) -> tuple[str, ...]:
        return self.parts[0::2]

    @property
    def names(self) -> tuple[str, ...]:
        return self.parts[1::2]

    @property
    def text(self) -> str:
        """The template as it reads: `max_model_len ({max_model_len}) is too large`."""
        out = []
        for i, part in enumerate(self.parts):
            out.append(part.replace("{", "{{").replace("}", "}}") if i % 2 == 0 else f"{{{part}}}")
        return "".join(out)

    @property
    def literal_length(self) -> int:
        return sum(len(p) for p in self.literals)

    def regex(self) -> str:
        """The equivalent regex source (for tests and users' rule files); `match` is faster."""
        out = []
        for i, part in enumerate(self.parts):
            out.append(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.*?)")
        return "^" + "".join(out) + "$"

    def match(self, message: str) -> dict[str, str] | None:
        """The placeholders' values when `message` is an instance of this template, else None."""
        return match_parts(self.parts, message)

    def cannot_be_from(self, version: Version | None) -> bool:
        """Whether a vLLM release of `version` cannot have raised it: the mined releases on both
        sides of it (or that release itself) lack the message. False when that is not known."""
        if self.package != "vllm" or version is None:
            return False
        below = [held for release, held in self.releases if _version(release) <= version]
        above = [held for release, held in self.releases if _version(release) >= version]
        return bool(below and above) and not below[-1] and not above[0]

    @property
    def held_ranges(self) -> str:
        """The mined releases that hold it, as ranges: `0.4.0–0.5.5, 0.9.2–0.33.0`."""
        runs: list[list[str]] = []
        previous = False
        for release, held in self.releases:
            if held and previous:
                runs[-1][1] = release
            elif held:
                runs.append([release, release])
            previous = held
        return ", ".join(a if a == b else f"{a}–{b}" for a, b in runs)

    @property
    def origin(self) -> str:
        """`raised by `vllm/config.py` `ModelConfig.__init__`, in vLLM 0.6.0–0.9.2`."""
        site = self.sites[0]
        verb = "logged" if self.kind.startswith("log.") else "raised"
        package = "vLLM" if self.package == "vllm" else self.package
        more = f" (and {len(self.sites) - 1} more places)" if len(self.sites) > 1 else ""
        return f"{verb} by {site.where}{more}, in {package} {site.versions}"


def match_parts(parts: Sequence[str], message: str) -> dict[str, str] | None:
    """`Template.match` of a template's `parts` (literal text and placeholder names alternating)."""
    literals, names = parts[0::2], parts[1::2]
    first, last = literals[0], literals[-1]
    if not message.startswith(first):
        return None
    if len(literals) == 1:
        return {} if message == first else None
    end = len(message) - len(last)
    if end < len(first) or not message.endswith(last):
        return None
    captures: dict[str, str] = {}
    pos = len(first)
    for name, literal in zip(names[:-1], literals[1:-1], strict=True):
        found = message.find(literal, pos, end)
        if found < 0:
            return None
        captures[name] = message[pos:found]
        pos = found + len(literal)
    captures[names[-1]] = message[pos:end]
    return captures


@dataclass(frozen=True)
class MessageMatch:
    """A message recognised as a mined template, with the values of its placeholders."""

    template: Template
    captures: dict[str, str]


def message_of(type_name: str, message: str) -> str:
    """The part of an exception's text that its `raise` wrote: first line; a KeyError's
    message without the quotes `str(KeyError(...))` adds."""
    text = message[:_MAX_MESSAGE].split("\n", 1)[0].strip()
    if (
        type_name.rsplit(".", 1)[-1] == "KeyError"
        and len(text) >= 2
        and text[0] == text[-1]
        and text[0] in "'\""
    ):
        text = text[1:-1]
    return text


# -- the data file ---------------------------------------------------------------------------------
# Reading the whole index would cost more than a small log's analysis, so the file is laid out to
# be looked up in place: a sorted list of anchor words (split and bisected), and the templates in
# zlib blocks of `_BLOCK` anchors, each inflated only when a message holds one of its words.
#
#   b"VLLMMSG2"
#   u32 n, header (marshal: packages with their mined releases and templates per release)
#   u32 n, anchor words joined by "\n", sorted
#   u32 n, zlib of the module paths joined by "\n"
#   u32 blocks, u32 offsets[blocks + 1] into the payload
#   payload: zlib blocks; a block inflates to the marshal of a list with one item per anchor:
#   that anchor's templates, each [package index, kind, parts, [[module index, function, first,
#   last release index]...], bit mask of the release indices that hold it]
#
# marshal (format 4, plain lists, dicts, strings and numbers), not JSON: importing `json` (its
# decoder compiles regexes) cost a short check more than the rest of the index. Loading plain
# marshal data runs nothing, and the file is the package's own.
MAGIC = b"VLLMMSG2"
_MARSHAL_VERSION = 4
_BLOCK = 32


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "little")


def _read_u32(data: bytes | mmap.mmap, pos: int) -> int:
    """The little-endian u32 at `pos` (`int.from_bytes`: `struct` is one more extension module
    to load for a short check); ValueError past the end of a file cut short."""
    if pos + 4 > len(data):
        raise ValueError("not a mined message index: cut short")
    return int.from_bytes(data[pos : pos + 4], "little")


def encode_index(header: dict, anchors: dict[str, list], modules: list[str]) -> bytes:
    """The data file's bytes (used by scripts/mine_messages.py)."""
    words = sorted(anchors)
    blocks: list[bytes] = []
    for start in range(0, len(words), _BLOCK):
        templates = _plain([anchors[w] for w in words[start : start + _BLOCK]])
        blocks.append(zlib.compress(marshal.dumps(templates, _MARSHAL_VERSION), 9))
    offsets = [0]
    for block in blocks:
        offsets.append(offsets[-1] + len(block))

    def section(data: bytes) -> bytes:
        return _u32(len(data)) + data

    return b"".join(
        [
            MAGIC,
            section(marshal.dumps(_plain(header), _MARSHAL_VERSION)),
            section("\n".join(words).encode("utf-8")),
            section(zlib.compress("\n".join(modules).encode("utf-8"), 9)),
            _u32(len(blocks)),
            *map(_u32, offsets),
            *blocks,
        ]
    )


def _plain(value: Any) -> Any:
    """`value` as JSON would give it back: tuples as lists, keys as strings; TypeError for
    anything marshal would write that a data file must not hold (code, sets, bytes)."""
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"not plain data: {type(value).__name__}")


class MessageIndex:
    """The mined templates, filed under one whole word each, read in place from the data file."""

    def __init__(self, data: bytes | mmap.mmap) -> None:
        if data[: len(MAGIC)] != MAGIC:
            raise ValueError("not a mined message index")
        pos = len(MAGIC)
        sections = []
        for _ in range(3):
            size = _read_u32(data, pos)
            sections.append(data[pos + 4 : pos + 4 + size])
            pos += 4 + size
        header, words, modules = sections
        count = _read_u32(data, pos)
        pos += 4
        self._offsets = [_read_u32(data, pos + 4 * i) for i in range(count + 1)]
        self._payload = memoryview(data)[pos + 4 * (count + 1) :]
        self._words = words.decode("utf-8").split("\n") if words else []
        self._modules_zlib = modules
        self._modules: list[str] | None = None
        self._blocks: dict[int, list[list]] = {}
        self._built: dict[int, tuple[Template, ...]] = {}
        self._raw_of: dict[int, list[list]] = {}
        self._template_of: dict[int, Template] = {}
        try:
            info = marshal.loads(header)
        except (EOFError, TypeError) as err:  # (a file cut short, or not one of ours)
            raise ValueError(f"not a mined message index: {err}") from err
        self._packages = [(p["name"], tuple(p["releases"])) for p in info["packages"]]
        self.packages = dict(self._packages)
        self.templates_per_release = {p["name"]: tuple(p.get("templates", ())) for p in info["packages"]}
        self._lock = allocate_lock()

    @classmethod
    def empty(cls) -> MessageIndex:
        return cls(encode_index({"packages": []}, {}, []))

    def __len__(self) -> int:
        return sum(len(self._templates(i)) for i in range(len(self._words)))

    def __iter__(self) -> Iterator[Template]:
        for i in range(len(self._words)):
            yield from self._templates(i)

    def _anchor(self, word: str) -> int | None:
        i = bisect.bisect_left(self._words, word)
        return i if i < len(self._words) and self._words[i] == word else None

    def _templates(self, anchor: int) -> tuple[Template, ...]:
        built = self._built.get(anchor)
        if built is None:
            built = tuple(self._template(raw) for raw in self._raw(anchor))
            self._built[anchor] = built
        return built

    def _raw(self, anchor: int) -> list[list]:
        """The anchor's templates as the data file holds them (a Template is built for one that
        matches: building all of an anchor's costs a short check more than matching them)."""
        raw = self._raw_of.get(anchor)
        if raw is None:
            with self._lock:  # the language server matches in several threads
                block = self._blocks.get(anchor // _BLOCK)
                if block is None:
                    start, end = self._offsets[anchor // _BLOCK], self._offsets[anchor // _BLOCK + 1]
                    block = marshal.loads(zlib.decompress(self._payload[start:end]))
                    self._blocks[anchor // _BLOCK] = block
            raw = block[anchor % _BLOCK]
            self._raw_of[anchor] = raw
        return raw

    def _template(self, raw: list) -> Template:
        key = id(raw)  # the raw entries live as long as the index (`_raw_of`)
        built = self._template_of.get(key)
        if built is not None:
            return built
        package_index, kind, parts, sites, held = raw
        package, releases = self._packages[package_index]
        if self._modules is None:
            with self._lock:
                if self._modules is None:
                    self._modules = zlib.decompress(self._modules_zlib).decode("utf-8").split("\n")
        modules = self._modules
        built = Template(
            package=package,
            kind=kind,
            parts=tuple(parts),
            sites=tuple(
                Site(
                    module=modules[module],
                    function=function,
                    first=releases[first],
                    last=releases[last],
                )
                for module, function, first, last in sites
            ),
            releases=tuple((release, bool(held >> i & 1)) for i, release in enumerate(releases)),
        )
        self._template_of[key] = built
        return built

    def match(
        self, type_name: str, message: str, version: Version | None = None, paths: tuple[str, ...] = ()
    ) -> MessageMatch | None:
        """The template `message` is an instance of, among those that match: raised in a module of
        the traceback's frame `paths`, then raised as `type_name`; of those, the most specific
        (most literal text), where templates within a tenth of that length (a release that added
        a space) go to one that vLLM `version` can have raised."""
        text = message_of(type_name, message)
        if not text:
            return None
        short_type = type_name.rsplit(".", 1)[-1]
        frames = tuple(p.replace("\\", "/") for p in paths)
        found: list[tuple[tuple[bool, bool], MessageMatch]] = []
        for word in set(_WORD.findall(text)):
            anchor = self._anchor(word)
            if anchor is None:
                continue
            for raw in self._raw(anchor):
                captures = match_parts(raw[2], text)
                if captures is not None:
                    template = self._template(raw)
                    in_frames = any(path.endswith(site.module) for site in template.sites for path in frames)
                    found.append(((in_frames, template.kind == short_type), MessageMatch(template, captures)))
        return best_match(found, version)


def best_match(
    found: list[tuple[tuple[bool, bool], MessageMatch]], version: Version | None = None
) -> MessageMatch | None:
    """Of the matches `found` with their rank (raised in a frame's module, raised as the type),
    the one `MessageIndex.match` gives: the best ranked, then the most literal text, where those
    within a tenth of that length go to one that vLLM `version` can have raised."""
    if not found:
        return None
    top = max(rank for rank, _ in found)
    candidates = [m for rank, m in found if rank == top]
    longest = max(m.template.literal_length for m in candidates)
    close = [m for m in candidates if m.template.literal_length * 10 >= longest * 9]
    return max(
        close,
        key=lambda m: (not m.template.cannot_be_from(version), m.template.literal_length, m.template.text),
    )


_INDEX: MessageIndex | None = None
_LOCK = allocate_lock()


def message_index() -> MessageIndex:
    """The shipped index (opened on first call; an empty index when the file is missing)."""
    global _INDEX
    if _INDEX is None:
        with _LOCK:
            if _INDEX is None:
                try:
                    # Mapped, not read: a check touches the header and one or two blocks of
                    # its 1.3 MB (reading it all cost a short check 1 ms). The mapping lives as
                    # long as the index, which lives as long as the process.
                    with open(DATA_FILE, "rb") as handle:
                        _INDEX = MessageIndex(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
                except (OSError, ValueError):  # a bundle without the file still works
                    _INDEX = MessageIndex.empty()
    return _INDEX
