"""A lexical pass over a shell script: which text is code, which is data.

bashlex parses commands but not all of bash (arrays, `case`, `[[ … ]]`, `$(( … ))`, a quoted
here-document delimiter); when it fails, the script is read one command line at a time. This
pass finds those command lines the way bash splits them — honouring quotes, backslash
continuations, comments and here-documents — so that the text of a here-document (a usage
message) or of a multi-line string is never read as a command. It also reads what bashlex
cannot: array assignments (`ARGS=(--max-num-seqs 256)`) and function bodies.

`code` is the text with here-documents and comments blanked and array values masked, with
every offset unchanged, so bashlex can parse it and positions stay the file's.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_BLANKS = " \t"
_WORD_END = " \t\n;&|()<>"
_ARRAY_HEAD = re.compile(r"(?:^|(?<=[\s;&|(]))([A-Za-z_]\w*)(\+?)=$")
_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|<>()'\"]+))")
_FUNCTION = re.compile(
    r"[ \t]*(?:function[ \t]+([\w.:-]+)[ \t]*(?:\([ \t]*\))?|([\w.:-]+)[ \t]*\([ \t]*\))[ \t\n]*\{"
)


@dataclass
class LexWord:
    """One word: its value as bash reads it (quotes removed) and its offsets."""

    value: str
    start: int
    end: int


@dataclass
class ArrayAssignment:
    """`NAME=(…)` or `NAME+=(…)`: the elements between the parentheses."""

    name: str
    append: bool
    start: int  # offset of NAME
    open_at: int  # offset of `(`
    close_at: int  # offset of `)`
    elements: list[LexWord]


@dataclass
class FunctionBody:
    """`name() { … }` or `function name { … }`: where its body lies."""

    name: str
    start: int  # offset of the definition
    body_start: int  # just after `{`
    body_end: int  # offset of the closing `}`


@dataclass
class Lexed:
    code: str
    lines: list[tuple[int, int]]  # (start, end) of each logical command line
    arrays: list[ArrayAssignment] = field(default_factory=list)
    functions: list[FunctionBody] = field(default_factory=list)

    def function_at(self, offset: int) -> FunctionBody | None:
        """The innermost function whose body holds `offset`."""
        found = None
        for function in self.functions:
            inside = function.body_start <= offset < function.body_end
            if inside and (found is None or function.body_start > found.body_start):
                found = function
        return found


def lex_shell(text: str) -> Lexed:
    """Command lines, arrays and functions of a script (never fails; unknown text is code)."""
    lexer = _Lexer(text)
    lexer.run()
    code = "".join(lexer.code)
    return Lexed(code, lexer.lines, lexer.arrays, _functions(code, lexer.braces))


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.code = list(text)
        self.lines: list[tuple[int, int]] = []
        self.arrays: list[ArrayAssignment] = []
        self.braces: list[tuple[int, str]] = []  # unquoted `{` / `}` words
        self.heredocs: list[tuple[str, bool]] = []  # pending (delimiter, strip tabs)

    def blank(self, start: int, end: int, fill: str = " ") -> None:
        for k in range(start, end):
            if self.code[k] != "\n" or fill != " ":
                self.code[k] = fill

    def run(self) -> None:
        text, n = self.text, len(self.text)
        i = line_start = depth = 0
        word_start = True
        while i < n:
            ch = text[i]
            if ch == "\\":
                i += 2
                word_start = False
                continue
            if ch in "'\"`":
                i = skip_quoted(text, i)
                word_start = False
                continue
            if ch == "#" and word_start:
                end = text.find("\n", i)
                end = n if end < 0 else end
                self.blank(i, end)
                i = end
                continue
            if depth == 0 and text.startswith("<<", i) and not text.startswith("<<<", i):
                match = _HEREDOC.match(text, i)
                if match:
                    delimiter = next(g for g in match.groups()[1:] if g is not None)
                    self.heredocs.append((delimiter, match.group(1) == "-"))
                    self.blank(i, match.end())  # the command then reads no here-document
                    i = match.end()
                    continue
            if ch == "\n":
                i += 1
                if depth == 0:
                    self.lines.append((line_start, i - 1))
                if self.heredocs:
                    i = self.skip_heredocs(i)
                if depth == 0:
                    line_start = i
                word_start = True
                continue
            if ch == "(":
                head = _ARRAY_HEAD.search(text, line_start, i)
                if head and text[i - 1] == "=":
                    i = self.array(head, i)
                    word_start = False
                    continue
                if text[i - 1 : i] == "$":
                    depth += 1
            elif ch == ")" and depth > 0:
                depth -= 1
            elif ch in "{}" and word_start and text[i + 1 : i + 2] in ("", *_WORD_END):
                self.braces.append((i, ch))
            word_start = ch in _WORD_END
            i += 1
        if line_start < n:
            self.lines.append((line_start, n))

    def skip_heredocs(self, i: int) -> int:
        """Blank the bodies of the here-documents opened on the line that just ended."""
        text = self.text
        for delimiter, strip_tabs in self.heredocs:
            start = i
            while i < len(text):
                end = text.find("\n", i)
                end = len(text) if end < 0 else end
                line = text[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
            self.blank(start, min(i, len(text)))
        self.heredocs.clear()
        return min(i, len(text))

    def array(self, head: re.Match[str], open_at: int) -> int:
        close_at = _closing_paren(self.text, open_at + 1)
        elements = words_between(self.text, open_at + 1, close_at)
        name_start = head.start(1)
        self.arrays.append(
            ArrayAssignment(head.group(1), head.group(2) == "+", name_start, open_at, close_at, elements)
        )
        end = min(close_at + 1, len(self.text))
        self.blank(open_at, end, "_")  # one plain word for bashlex: `NAME=_____`
        return end


def skip_quoted(text: str, i: int) -> int:
    """Offset just after the quoted string that starts at `i` (`'…'`, `"…"`, or `` `…` ``)."""
    quote = text[i]
    if quote == "'":
        end = text.find("'", i + 1)
        return len(text) if end < 0 else end + 1
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        j += 1
    return len(text)


def _closing_paren(text: str, i: int) -> int:
    """Offset of the `)` closing an array value (quotes and comments skipped)."""
    word_start = True
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch in "'\"`":
            i = skip_quoted(text, i)
        elif ch == "#" and word_start:
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif ch == ")":
            return i
        else:
            i += 1
        word_start = ch in _WORD_END
    return len(text)


def words_between(text: str, start: int, end: int) -> list[LexWord]:
    """The words of `text[start:end]` (blank- and newline-separated, comments skipped)."""
    words: list[LexWord] = []
    i = start
    while i < end:
        ch = text[i]
        if ch in _BLANKS or ch == "\n":
            i += 1
            continue
        if ch == "#":
            newline = text.find("\n", i, end)
            i = end if newline < 0 else newline
            continue
        word_start = i
        while i < end and text[i] not in " \t\n":
            if text[i] == "\\":
                i += 2
            elif text[i] in "'\"`":
                i = skip_quoted(text, i)
            else:
                i += 1
        i = min(i, end)
        source = text[word_start:i]
        try:
            value = "".join(shlex.split(source, posix=True)) if source.strip() else ""
        except ValueError:
            value = source
        words.append(LexWord(value, word_start, i))
    return words


def _functions(code: str, braces: list[tuple[int, str]]) -> list[FunctionBody]:
    """Function definitions: a header before `{`, the body up to its matching `}`."""
    closing: dict[int, int] = {}
    stack: list[int] = []
    for offset, brace in braces:
        if brace == "{":
            stack.append(offset)
        elif stack:
            closing[stack.pop()] = offset
    found = []
    for match in _FUNCTION.finditer(code):
        if match.start() > 0 and code[match.start() - 1] not in "\n;&|":
            continue
        open_at = match.end() - 1
        if open_at in closing:
            name = match.group(1) or match.group(2)
            found.append(FunctionBody(name, match.start(), open_at + 1, closing[open_at]))
    return found
