"""Mutations of a real log that real logs undergo: other writers' lines in between, a traceback
repeated with other numbers, progress bars, CRLF, colour codes, stray characters, cut lines,
reordered blocks, another log appended, a collector's column. Property tests apply a few at random
(`mutate`) and assert what must hold on any log (a grown analysis equals a fresh one...).

They found a defect the corpus did not show (an incremental analysis naming an exception twice
where two writers' tracebacks interleave): each is a way a log can differ from the ones the
analysis was written against.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

# Characters a log may hold anywhere (a lone surrogate: a JSON escape an editor passes on).
JUNK = [
    "\x00",
    "\ufffd",
    "\x1b[",
    "\x1b",
    "\u2028",
    "\x0b",
    "\x0c",
    "\x85",
    "\ud800",
    '"',
    "\\",
    "(",
    ")",
    "[",
    "|",
]
# What collectors put before every line (pod columns, a timestamp, an indented paste).
COLUMNS = [
    "[pod/vllm-7d9f8b-x2x/vllm] ",
    "vllm-7d9f8b-x2x vllm ",
    "\x1b[32mvllm-7d9f8b-x2x\x1b[0m \x1b[33mvllm\x1b[0m ",
    "    ",
    "2025-10-31T16:32:14.123456789Z ",
]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def interleave(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """Another log's lines (its first 400) between this one's, each keeping its order (as
    processes writing to one file print them)."""
    theirs = _lines(rng.choice(others))[:400]
    out = []
    for line in _lines(text):
        out.append(line)
        while theirs and rng.random() < 0.3:
            out.append(theirs.pop(0))
    return "".join(out + theirs)


def repeat(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """A traceback's first lines printed again 2-30 times right after it, with some digits
    changed and up to four access-log lines between the copies."""
    lines = _lines(text)
    headers = [n for n, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    if not headers:
        return text
    first = rng.choice(headers)
    end = min(len(lines), first + rng.randint(3, 40))
    gap = [f'INFO 01-01 00:00:0{k} "POST /v1/x HTTP/1.1" 400 Bad Request\n' for k in range(rng.randint(0, 4))]
    copies: list[str] = []
    for _ in range(rng.randint(2, 30)):
        for line in lines[first:end]:
            copies.append(
                re.sub(r"\d", lambda m: str(rng.randint(0, 9)) if rng.random() < 0.3 else m[0], line)
            )
        copies += gap
    return "".join(lines[:end] + copies + lines[end:])


def progress(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """Bare `\\r` redraws (a progress bar) at the end of a few lines."""
    lines = _lines(text)
    for _ in range(rng.randint(1, 20)):
        if lines:
            at = rng.randrange(len(lines))
            bars = "".join(f"\r{p}%|" for p in range(rng.randint(1, 5)))
            lines[at] = lines[at].rstrip("\n") + bars + "\n"
    return "".join(lines)


def crlf(text: str, rng: random.Random, others: Sequence[str]) -> str:
    return text.replace("\n", "\r\n")


def colour(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """A colour code at the start of some lines."""
    return "".join("\x1b[0;36m" + line if rng.random() < 0.3 else line for line in _lines(text))


def junk(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """Stray characters (`JUNK`) inside a few lines."""
    lines = _lines(text)
    for _ in range(rng.randint(1, 10)):
        if lines:
            at = rng.randrange(len(lines))
            cut = rng.randrange(len(lines[at]) + 1)
            lines[at] = lines[at][:cut] + rng.choice(JUNK) * rng.randint(1, 3) + lines[at][cut:]
    return "".join(lines)


def cut(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """A few lines cut short (their line break too)."""
    lines = _lines(text)
    for _ in range(rng.randint(1, 10)):
        if lines:
            at = rng.randrange(len(lines))
            lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
    return "".join(lines)


def reorder(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """A block of lines moved to the end."""
    lines = _lines(text)
    if len(lines) < 10:
        return text
    a, b = sorted(rng.randrange(len(lines)) for _ in range(2))
    return "".join(lines[:a] + lines[b:] + lines[a:b])


def append(text: str, rng: random.Random, others: Sequence[str]) -> str:
    return text + rng.choice(others)


def column(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """A collector's column (`COLUMNS`) before every line."""
    prefix = rng.choice(COLUMNS)
    return "".join(prefix + line for line in _lines(text))


def terminal(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """Every line cut into rows of 60-220 characters, as a terminal copy keeps them."""
    width = rng.randint(60, 220)
    rows = []
    for line in text.split("\n"):
        rows.extend(line[at : at + width] for at in range(0, max(len(line), 1), width))
    return "\n".join(rows)


def newest_first(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """The lines in reverse order, as a log viewer lists them (the newest on top)."""
    lines = text.split("\n")
    ending = lines.pop() if len(lines) > 1 and lines[-1] == "" else None
    return "\n".join(reversed(lines)) + ("\n" if ending is not None else "")


def nul_run(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """A run of NULs at the start of a line or two: a hole a lost write left."""
    lines = _lines(text)
    for _ in range(rng.randint(1, 2)):
        if lines:
            at = rng.randrange(len(lines))
            lines[at] = "\0" * rng.choice((1, 445, 4096, 30_000)) + lines[at]
    return "".join(lines)


# vLLM's logger header, and formats of the user's own that may print in its place.
_VLLM_HEADER = re.compile(
    r"\b(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.\d+)? \[[^\]]+\] "
)
HEADERS = [
    "[2025-{date} {time}] [{level}] [vllm.core] ",
    "2025-{date} {time},123 {level} vllm.engine: ",
    "2025-{date}T{time}.123Z [{level}] ",
    "{level}:vllm.core:",
    "",
]


def header(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """vLLM's logger header replaced by a format of the user's own (`HEADERS`)."""
    template = rng.choice(HEADERS)

    def own(found: re.Match[str]) -> str:
        level, date, time = found.groups()
        return template.format(level=level, date=date, time=time)

    return _VLLM_HEADER.sub(own, text)


MUTATIONS: list[Callable[[str, random.Random, Sequence[str]], str]] = [
    interleave,
    repeat,
    progress,
    crlf,
    colour,
    junk,
    cut,
    reorder,
    append,
    column,
    terminal,
    newest_first,
    nul_run,
    header,
]


def mutate(text: str, rng: random.Random, others: Sequence[str]) -> tuple[str, list[str]]:
    """`text` after one to three mutations picked at random; and their names."""
    names = []
    for _ in range(rng.randint(1, 3)):
        mutation = rng.choice(MUTATIONS)
        text = mutation(text, rng, others)
        names.append(mutation.__name__)
    return text, names
