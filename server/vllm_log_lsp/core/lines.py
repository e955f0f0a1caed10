"""Take one log line apart: runtime prefixes, process prefixes, vLLM's logger header, message.

Formats handled (see the project README for examples):
- outer prefixes added by runtimes and collectors, in any nesting: markdown `> `, Kubernetes/CRI
  `<RFC3339> stderr F `, `docker logs -t` timestamps, Docker Desktop `YYYY-MM-DD HH:MM:SS.mmm | `,
  docker compose / podman-compose `svc  | `, journalctl `Mon DD HH:MM:SS host unit[pid]: `,
  PowerShell's `docker : `, and `grep -n` / editor search results (`5223:` / `Line 122: `);
- process prefixes `(EngineCore_DP0 pid=1)`, `(VllmWorker rank=1 pid=2)`, Ray's
  `(RayWorkerWrapper pid=2, ip=10.0.0.1)`, `(raylet)`, nested ones, torch's `[rank0]: `;
- vLLM's logger header in every generation: `LEVEL MM-DD HH:MM:SS file.py:N]`,
  `[file.py:N]`, `[v1/engine/core.py:N]`, `[a/.../b.py:N]` (and OCR's `(file.py:N]`), after an
  optional user prefix;
- uvicorn's `INFO:     `, Python logging `2025-06-20 20:02:20,931 - name - LEVEL - `, Ray's
  `2026-01-31 14:20:59,483\tINFO file.py:N -- `.
A line that matches none of these is kept whole as its own message.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from . import regexes
from .model import LogLine
from .text import strip_ansi

_OUTER = regexes.compile(
    r"""
    (?P<quote>>[ ]?)
  | (?P<cri>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)[ ](?:stdout|stderr)[ ][FP][ ])
  | (?P<dockerts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:?\d\d)[ ])
  | (?P<desktop>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d\.\d{3}[ ]\|[ ])
  | (?P<compose>(?P<service>\[?[A-Za-z0-9][\w.-]*\]?)[ ]+\|[ ]?)
  | (?P<journal>[A-Z][a-z]{2}[ ][ \d]\d[ ]\d\d:\d\d:\d\d[ ]\S+[ ](?P<unit>[\w.@-]+)(?:\[\d+\])?:[ ])
  | (?P<powershell>docker[ ]:[ ])
  | (?P<grepn>Line[ ]\d+:[ ]|\d{1,8}:(?=\(|[A-Z]{4,}|Traceback|[ ]))
    """,
    re.VERBOSE,
)

_PROCESS = regexes.compile(
    r"""
    \((?P<name>[A-Za-z_][\w.\-]*(?:[ ](?:rank=\d+|TP\d+|PP\d+(?:_TP\d+)?))?)
    [ ]pid=(?P<pid>\d+)(?:,[ ]ip=(?P<ip>[0-9A-Fa-f.:]+))?\)[ ]?
  | \((?P<ray>raylet|autoscaler[^)]*|pid=(?P<barepid>\d+)(?:,[ ]ip=[0-9A-Fa-f.:]+)?)\)[ ]?
  | \[rank(?P<rank>\d+)\]:[ ]?
    """,
    re.VERBOSE,
)

# What each pattern's every alternative starts with: a line starting otherwise is not tried
# (most lines start with a process prefix `(`, which no runtime prefix does).
_PROCESS_FIRST = ("(", "[")


def _may_start_outer(char: str) -> bool:
    """Whether `_OUTER` can match at a `char`: `>`, `[`, an ASCII letter, or a digit (`\\d`: any
    Unicode decimal digit, which `str.isdecimal` tells)."""
    return char in _OUTER_FIRST or char.isdecimal()


_OUTER_FIRST = frozenset(">[ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

_VLLM_HEADER = regexes.compile(
    r"""
    (?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ ]
    (?P<date>\d\d-\d\d[ ]\d\d:\d\d:\d\d)(?:\.\d+)?[ ]
    [\[(]?(?P<source>[\w.\-]+(?:/[\w.\-]+)*\.py:\d+)\][ ]?
    """,
    re.VERBOSE,
)

_OTHER_HEADER = regexes.compile(
    r"""
    (?P<uvicorn>(?P<ulevel>DEBUG|INFO|WARNING|ERROR|CRITICAL):[ ]+)
  | (?P<pylog>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d,\d{3}[ ]-[ ](?:[\w.]+[ ]-[ ])?
        (?P<plevel>DEBUG|INFO|WARNING|ERROR|CRITICAL)[ ]-[ ](?:[\w.]+:\d+[ ]-[ ])?)
  | (?P<raylog>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d,\d{3}\t(?P<rlevel>DEBUG|INFO|WARNING|ERROR)[ ][\w.]+:\d+[ ]--[ ])
    """,
    re.VERBOSE,
)

# How far into a line a user's VLLM_LOGGING_PREFIX may push vLLM's header.
_MAX_USER_PREFIX = 80


# The outer prefix learned from the log being analysed (see `learn_outer_prefix`): set for the
# duration of one analysis, in the thread that runs it.
_LEARNED: ContextVar[re.Pattern[str] | None] = ContextVar("learned_outer_prefix", default=None)


def parse_line(number: int, raw: str) -> LogLine:
    """Parse one line (without its line break) into a LogLine. Never raises."""
    clean, colmap = strip_ansi(raw)
    pos = 0
    learned = _LEARNED.get()
    if learned is not None and (found := learned.match(clean)):
        pos = found.end()
    pos, outer_parts, journal_unit = _outer_prefixes(clean, pos)

    process = pid = None
    chain: list[str] = [journal_unit] if journal_unit else []
    while clean.startswith(_PROCESS_FIRST, pos):
        match = _PROCESS.match(clean, pos)
        if not match:
            break
        if match.group("name"):
            process, pid = match.group("name"), int(match.group("pid"))
            chain.append(f"{process}:{pid}")
        elif match.group("ray"):
            chain.append(match.group("ray").split(" ")[0])
        else:
            chain.append(f"rank{match.group('rank')}")
        pos = match.end()

    level = timestamp = source = None
    header = _VLLM_HEADER.search(clean, pos, pos + _MAX_USER_PREFIX + 60)
    if header and header.start() - pos <= _MAX_USER_PREFIX:
        level, timestamp, source = header.group("level"), header.group("date"), header.group("source")
        pos = header.end()
    else:
        other = _OTHER_HEADER.match(clean, pos)
        if other:
            level = other.group("ulevel") or other.group("plevel") or other.group("rlevel")
            pos = other.end()
    if level == "WARN":
        level = "WARNING"

    outer = "/".join(outer_parts) or None
    stream = "|".join(filter(None, [outer or "", *chain]))
    message_col = colmap[pos] if colmap else pos
    # Positional (number, text, message, message_col, stream, process, pid, level, timestamp,
    # source, outer): a third cheaper than by keyword, and this runs for every line read.
    return LogLine(
        number,
        raw,
        clean[pos:].rstrip("\r"),
        message_col,
        stream,
        process,
        pid,
        level,
        timestamp,
        source,
        outer,
    )


def _outer_prefixes(clean: str, pos: int) -> tuple[int, list[str], str | None]:
    """Take the known runtime prefixes off from `pos`: (where they end, services, journal unit)."""
    outer_parts: list[str] = []
    journal_unit = None
    while pos < len(clean) and _may_start_outer(clean[pos]):
        match = _OUTER.match(clean, pos)
        if not match or match.end() == pos:
            break
        if match.group("compose") and not _plausible_compose(clean, match):
            break
        if match.group("service"):
            outer_parts.append(match.group("service").strip("[]"))
        elif match.group("unit"):
            # One journal interleaves a service's processes (env[12], systemd[1]): a writer, not
            # a separate service.
            journal_unit = match.group("unit")
        pos = match.end()
    return pos, outer_parts, journal_unit


def _plausible_compose(clean: str, match: re.Match[str]) -> bool:
    """A compose prefix is `name  | ` at the start; reject tqdm bars and table rows like `a | b`."""
    service = match.group("service")
    if service[0] == "[":
        return True
    # compose pads the service name with spaces to align the bars; tables rarely start with a
    # single word followed by a bar and then a vLLM-looking line.
    rest = clean[match.end() : match.end() + 40]
    return (
        rest.startswith(("(", "INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "Traceback", " ", "["))
        or "  " in match.group(0)
        or not rest
    )


# Where vLLM's own part of a line begins: a process prefix, a logger header, a traceback line.
_VLLM_START = regexes.compile(
    r"\((?:[A-Za-z_][\w.\-]*(?:[ ]\w+=?\w*)?)[ ]pid=\d+[^)]*\)"
    r"|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ ]\d\d-\d\d[ ]\d\d:"
    r"|Traceback[ ]\(most[ ]recent[ ]call[ ]last\):"
)
# A learned prefix must lead this share of the sampled vLLM lines, and at least this many.
_LEARN_SHARE = 0.6
_LEARN_MIN_LINES = 5
_MAX_PREFIX = 120


def learn_outer_prefix(lines: Iterable[str]) -> re.Pattern[str] | None:
    """The log's own outer prefix, when most of its vLLM lines start with one the known formats
    do not take apart (a collector's timestamp and host, a pod column, a job name): its shape,
    with digits generalised, as a pattern anchored at the line start. None: nothing to learn."""
    shapes: Counter[str] = Counter()
    anchored = 0
    for raw in lines:
        clean, _ = strip_ansi(raw[:400])
        start = _VLLM_START.search(clean, 0, _MAX_PREFIX + 80)
        if start is None:
            continue
        anchored += 1
        if start.start() == 0 or start.start() > _MAX_PREFIX or _known_prefix_ends_at(clean, start.start()):
            continue
        shapes[_shape(clean[: start.start()])] += 1
    if not shapes:
        return None
    shape, count = shapes.most_common(1)[0]
    if count < _LEARN_MIN_LINES or count < _LEARN_SHARE * anchored:
        return None
    return re.compile(shape)


def _known_prefix_ends_at(clean: str, end: int) -> bool:
    """Whether the runtime prefixes `parse_line` knows take the line apart up to `end`, or a
    vLLM header follows them within the reach of a user's VLLM_LOGGING_PREFIX."""
    pos = _outer_prefixes(clean, 0)[0]
    if pos >= end:
        return True
    header = (
        _VLLM_HEADER.match(clean, end)
        if clean.startswith(("DEBUG", "INFO", "WARN", "ERROR", "CRIT"), end)
        else None
    )
    return header is not None and end - pos <= _MAX_USER_PREFIX and not clean.startswith("(", pos)


def _shape(prefix: str) -> str:
    """A prefix as a pattern: digit runs and white-space runs generalised, the rest literal."""
    out = []
    for token in re.findall(r"\d+|\s+|[^\d\s]+", prefix):
        if token[0].isdigit():
            out.append(r"\d+")
        elif token[0].isspace():
            out.append(r"\s+")
        else:
            out.append(re.escape(token))
    return "".join(out)


@contextmanager
def learned_prefix(pattern: re.Pattern[str] | None) -> Iterator[None]:
    """Parse lines with `pattern` as the log's outer prefix while the block runs."""
    token = _LEARNED.set(pattern)
    try:
        yield
    finally:
        _LEARNED.reset(token)
