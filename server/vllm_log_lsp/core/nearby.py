"""The lines near a line, read a block at a time: the window around a root cause, the lines
above a symptom that carry its writer's time.

Each yields exactly what `LogIndex.iter_lines_back` / `iter_lines_from` yield, but decodes and
splits a block of text in one C call where those take a Python step (a search, a slice, a decode)
per line: a restart loop's hundreds of deaths each read a hundred lines around their root. A
text with a bare `\\r` (which breaks lines too, as LSP counts them) is read line by line.
"""

from __future__ import annotations

from collections.abc import Iterator

from .text import LogIndex

#: How much text is decoded at a time (doubled while a block holds no whole line).
BLOCK = 1 << 13


def lines_before(index: LogIndex, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
    """(number, text) of up to `limit` lines before the one starting at `start` (numbered
    `line`), nearest first."""
    if index.has_cr:
        yield from index.iter_lines_back(start, line, limit)
        return
    end, block = start - 1, BLOCK  # `end`: the line break that ends the line above
    while limit > 0 and end >= 0:
        lo = max(0, end - block)
        if lo > 0:  # the block starts at a line start
            first_break = index.find("\n", lo, end)
            if first_break < 0:
                block *= 2
                continue
            lo = first_break + 1
        texts = index.slice(lo, end).split("\n")[-limit:]
        for text in reversed(texts):
            line -= 1
            yield line, text
        limit -= len(texts)
        end = lo - 1


def lines_from(index: LogIndex, start: int, line: int, limit: int) -> Iterator[tuple[int, str]]:
    """(number, text) of up to `limit` lines from the one starting at `start` (numbered `line`)."""
    if index.has_cr:
        yield from index.iter_lines_from(start, line, limit)
        return
    n, block = len(index), BLOCK
    while limit > 0 and start <= n:
        hi = min(n, start + block)
        if hi < n:  # the block ends at a line end
            last_break = index.rfind("\n", start, hi)
            if last_break < 0:
                block *= 2
                continue
            hi = last_break
        texts = index.slice(start, hi).split("\n")[:limit]
        for text in texts:
            yield line, text
            line += 1
        limit -= len(texts)
        if hi >= n:
            return
        start = hi + 1
