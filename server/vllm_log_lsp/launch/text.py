"""Text positions, edits and diffs for launch-script fixes.

Internally every edit is an absolute code-point offset range into the file text; the public
`TextEdit` is (line, column) in code points, which the LSP layer converts to the client's
encoding. Edits are computed by diffing the original and the fixed text, so they are always
consistent with `new_text` however the fix was assembled.
"""

from __future__ import annotations

import difflib
import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TextEdit:
    """Replace [start, end) with `new_text`; lines 0-based, columns in code points."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    new_text: str


@dataclass(frozen=True)
class Edit:
    """An edit in absolute code-point offsets (internal form)."""

    start: int
    end: int
    text: str


class LineIndex:
    """Converts between absolute offsets and (line, column) for one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.starts.append(i + 1)

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of an absolute offset."""
        line = bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]

    def offset(self, line: int, col: int = 0) -> int:
        """Absolute offset of (line, column); lines past the end clamp to the end of text."""
        if line >= len(self.starts):
            return len(self.text)
        return min(self.starts[line] + col, len(self.text))

    def line_start(self, offset: int) -> int:
        return self.starts[bisect_right(self.starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """Offset of the newline ending the line that holds `offset` (or end of text)."""
        end = self.text.find("\n", offset)
        return len(self.text) if end < 0 else end

    def line_text(self, offset: int) -> str:
        return self.text[self.line_start(offset) : self.line_end(offset)]


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits; inserts at the same offset keep their given order."""
    ordered = sorted(enumerate(edits), key=lambda pair: (pair[1].start, pair[0]))
    out: list[str] = []
    cursor = 0
    for _, edit in ordered:
        if edit.start < cursor:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        out.append(text[cursor : edit.start])
        out.append(edit.text)
        cursor = edit.end
    out.append(text[cursor:])
    return "".join(out)


def diff_edits(old: str, new: str) -> list[TextEdit]:
    """Small TextEdits turning `old` into `new`: a line diff, refined by a token diff.

    Tokens (words, runs of blanks, single punctuation marks) keep an edit like
    `256` → `128` whole instead of splitting it around a shared digit.
    """
    index = LineIndex(old)
    edits: list[TextEdit] = []
    for start, end, text in _diff(old, new):
        (sl, sc), (el, ec) = index.position(start), index.position(end)
        edits.append(TextEdit(sl, sc, el, ec, text))
    return edits


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def _diff(old: str, new: str) -> list[tuple[int, int, str]]:
    """(start, end, new text) in `old` offsets."""
    out: list[tuple[int, int, str]] = []
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_starts, new_starts = _starts(old_lines), _starts(new_lines)
    lines = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag == "equal":
            continue
        for (a1, a2), (b1, b2) in _pair_lines(old_lines[i1:i2], new_lines[j1:j2]):
            a_start, b_start = old_starts[i1 + a1], new_starts[j1 + b1]
            a_text = old[a_start : old_starts[i1 + a2]]
            b_text = new[b_start : new_starts[j1 + b2]]
            out.extend(_token_diff(a_text, b_text, a_start))
    return out


def _pair_lines(a: list[str], b: list[str]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Split a changed hunk into (old range, new range) pieces: similar lines pair up, the
    rest are pure insertions or deletions. Keeps `256 → 128` apart from an added line."""
    pieces = []
    j = 0
    for i, line in enumerate(a):
        match = next((k for k in range(j, len(b)) if _similar(line, b[k])), None)
        if match is None:
            pieces.append(((i, i + 1), (j, j)))
            continue
        if match > j:
            pieces.append(((i, i), (j, match)))
        pieces.append(((i, i + 1), (match, match + 1)))
        j = match + 1
    if j < len(b):
        pieces.append(((len(a), len(a)), (j, len(b))))
    return pieces


def _similar(a: str, b: str) -> bool:
    """Most of the shorter line survives in the other (a line that grew by appended flags)."""
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    return kept >= 0.6 * max(min(len(a.strip()), len(b.strip())), 1)


def _token_diff(a_text: str, b_text: str, a_start: int) -> list[tuple[int, int, str]]:
    a_tokens, b_tokens = _TOKEN.findall(a_text), _TOKEN.findall(b_text)
    a_offsets, b_offsets = _starts(a_tokens), _starts(b_tokens)
    tokens = difflib.SequenceMatcher(a=a_tokens, b=b_tokens, autojunk=False)
    return [
        (a_start + a_offsets[k1], a_start + a_offsets[k2], b_text[b_offsets[m1] : b_offsets[m2]])
        for tag, k1, k2, m1, m2 in tokens.get_opcodes()
        if tag != "equal"
    ]


def _starts(parts: Sequence[str]) -> list[int]:
    starts = [0]
    for part in parts:
        starts.append(starts[-1] + len(part))
    return starts


def apply_text_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """Apply TextEdits (all relative to `text`), as an editor would."""
    index = LineIndex(text)
    return apply_edits(
        text,
        [
            Edit(
                index.offset(e.start_line, e.start_col),
                index.offset(e.end_line, e.end_col),
                e.new_text,
            )
            for e in edits
        ],
    )


def unified_diff(old: str, new: str, path: str = "launch script", context: int = 3) -> str:
    """A `diff -u` style text of the change, for previews and the CLI (`git apply` takes it)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=context,
    )
    # A last line without a line break is marked as diff and git mark it, or the patch is corrupt.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


@dataclass
class SourceMap:
    """A decoded string (a YAML scalar's value, a JSON string) and where its characters lie.

    `offsets[i]` is the file offset of decoded character i; `offsets[len(decoded)]` is the file
    offset just after the last one. `encode` turns new decoded text into source text that
    decodes back to it in the same container (escaping quotes, re-indenting new lines).
    """

    decoded: str
    offsets: list[int]
    encode_kind: str = "identity"  # identity | json | yaml_single | yaml_block | yaml_plain
    indent: str = ""  # yaml_block: the indentation of the block's lines

    @classmethod
    def identity(cls, text: str, base: int = 0) -> SourceMap:
        return cls(text, list(range(base, base + len(text) + 1)))

    def to_file(self, edit: Edit) -> Edit:
        """Map an edit in decoded coordinates to file coordinates, encoding its text."""
        return Edit(self.offsets[edit.start], self.offsets[edit.end], self.encode(edit.text))

    def encode(self, text: str) -> str:
        """Source text for `text`; raises ValueError when the container cannot hold it."""
        if self.encode_kind == "yaml_plain":
            if ": " in text or " #" in text or "\n" in text or text.endswith(":"):
                raise ValueError(
                    f"{text.strip()!r} cannot go into an unquoted YAML string; "
                    "quote the command or write it as a list"
                )
            return text
        if self.encode_kind == "json":
            return json.dumps(text, ensure_ascii=False)[1:-1]
        if self.encode_kind == "yaml_single":
            return text.replace("'", "''")
        if self.encode_kind == "yaml_block":
            return text.replace("\n", "\n" + self.indent)
        return text


# ---------------------------------------------------------------------------------------------
# Line endings: every format is parsed and edited with `\n` line ends; a file's own line ends
# (CRLF, or a mix) are put back on the result, so no `\r` is dropped and no bare `\n` lands in a
# CRLF file. Parsers then never see a `\r` (a shell word `256\r`, a `\`+CR continuation).


def to_lf(text: str) -> str:
    """`text` with every CRLF line end as LF (bare CRs are kept: they are not line ends)."""
    return text.replace("\r\n", "\n")


def with_line_endings(original: str, lf_old: str, lf_new: str) -> str:
    """`lf_new` (an edit of `lf_old == to_lf(original)`) with `original`'s line ends.

    Unchanged lines keep their own ending; new lines end like the line they follow.
    """
    if original == lf_old:
        return lf_new
    where = _lf_offsets(original)
    out: list[str] = []
    cursor = 0
    for start, end, text in _diff(lf_old, lf_new):
        out.append(original[cursor : where[start]])
        out.append(text.replace("\n", _line_end_at(original, lf_old, where, start)))
        cursor = where[end]
    out.append(original[cursor:])
    return "".join(out)


def _lf_offsets(original: str) -> list[int]:
    """For each character of `to_lf(original)` (and its end), its offset in `original`."""
    where: list[int] = []
    i = 0
    while i < len(original):
        where.append(i)
        i += 2 if original.startswith("\r\n", i) else 1
    where.append(len(original))
    return where


def _line_end_at(original: str, lf_old: str, where: list[int], offset: int) -> str:
    """The line end of the line holding `offset`, or of the previous line when `offset` starts
    a line (text inserted there follows that line); the file's usual one for a last line."""
    if offset > 0 and lf_old[offset - 1] == "\n":
        offset -= 1
    newline = lf_old.find("\n", offset)
    if newline < 0:
        return "\r\n" if original.count("\r\n") * 2 >= original.count("\n") else "\n"
    return "\r\n" if original.startswith("\r\n", where[newline]) else "\n"
