"""Shell commands: find `vllm serve`, `python -m vllm.entrypoints…` and `docker run … vllm…`.

Words and their positions come from `bashlex` (a bash parser in Python), so quoting,
backslash continuations and `VAR=1 cmd` prefixes are read like bash reads them. When bashlex
cannot parse a whole script (it lacks a few bash constructs), each logical line that mentions
vLLM is parsed on its own. Before and after an edit, a shell file is checked with `bash -n`.

The same code reads shell text embedded in other formats (a compose `command:` string, a
Kubernetes `sh -c` script, a Dockerfile shell-form `CMD`): positions are in the decoded text
and a `SourceMap` carries edits back to the file.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import bashlex
import bashlex.errors

from ..core.tools import find_program
from .argv import docker_env_uses, find_entry
from .model import Format
from .shell_lex import ArrayAssignment, FunctionBody, Lexed, lex_shell
from .sites import Arg, ArgvSite, CannotRender, EnvTarget, OpPlan, Site, join_words, quote_like
from .text import Edit, LineIndex, SourceMap

EnvMode = Literal["file", "inline"]
_PROMPTS = ("$", "%", "#")  # a shell prompt copied into docs: `$ vllm serve …`
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
#: Commands whose arguments are text, never run: `echo "… vllm serve …"` is not an invocation.
_TEXT_COMMANDS = frozenset({"echo", "printf", "cat", "logger", "print", ":"})


@dataclass
class Word:
    value: str
    start: int
    end: int


@dataclass
class ShellCommand:
    """A simple command: `NAME=v … word word …` (redirections left out)."""

    words: list[Word]
    assignments: list[Word]
    start: int
    end: int


def parse_shell(text: str) -> list[ShellCommand]:
    """All simple commands of a script, in order; raises Malformed via bashlex errors."""
    commands: list[ShellCommand] = []
    for part in bashlex.parse(text):
        _collect(part, commands, text)
    return commands


def scan_shell(text: str) -> list[ShellCommand]:
    """The executed simple commands of a script, in order; never fails (see `scan_script`)."""
    return scan_script(text)[0]


def scan_script(text: str) -> tuple[list[ShellCommand], Lexed]:
    """The executed simple commands of a script, in order, and its lexical facts; never fails.

    Here-documents and comments are blanked first (`shell_lex`), so a usage text is never a
    command. When bashlex cannot parse the whole script (it lacks arrays, `case`, `[[ … ]]` …)
    each command line — as bash splits them: quotes and continuations kept together — is
    parsed on its own.
    """
    lexed = lex_shell(text)
    code = lexed.code
    try:
        return parse_shell(code), lexed
    except Exception:  # bashlex lacks some bash and fails variously
        pass
    commands: list[ShellCommand] = []
    functions = {f.name for f in lexed.functions}  # their calls may pass vLLM flags
    for start, end in lexed.lines:
        chunk = code[start:end]
        if not _worth_parsing(chunk, functions):
            continue
        try:
            parsed = parse_shell(chunk)
        except Exception:  # bashlex raises assorted errors on odd input
            continue
        commands.extend(shifted(c, start) for c in parsed)
    return commands, lexed


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each line joined with its backslash continuations."""
    out: list[tuple[int, str]] = []
    pos = 0
    start = 0
    while pos <= len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1 and end < len(text):
            pos = end + 1
            continue
        out.append((start, text[start:end]))
        pos = start = end + 1
    return out


def _worth_parsing(chunk: str, functions: set[str]) -> bool:
    stripped = chunk.lstrip()
    if "vllm" in chunk.lower() or stripped.startswith("export ") or re.match(r"\w+=", stripped):
        return True
    return stripped.split(None, 1)[0] in functions if stripped else False


def shifted(command: ShellCommand, offset: int) -> ShellCommand:
    def move(w: Word) -> Word:
        return Word(w.value, w.start + offset, w.end + offset)

    return ShellCommand(
        [move(w) for w in command.words],
        [move(w) for w in command.assignments],
        command.start + offset,
        command.end + offset,
    )


def without_prompt(command: ShellCommand) -> ShellCommand:
    """`$ NAME=1 vllm serve …` from docs: drop the prompt, read `NAME=1` as an assignment."""
    if not command.words or command.words[0].value not in _PROMPTS:
        return command
    words = command.words[1:]
    assignments = list(command.assignments)
    while words and _ASSIGNMENT.match(words[0].value):
        assignments.append(words.pop(0))
    start = (assignments or words or command.words)[0].start
    return ShellCommand(words, assignments, start, command.end)


def _collect(node: bashlex.ast.node, out: list[ShellCommand], text: str) -> None:
    kind = getattr(node, "kind", "")
    if kind == "command":
        words: list[Word] = []
        assignments: list[Word] = []
        for part in node.parts:
            if part.kind == "assignment" and not words:
                assignments.append(_word(part, text))
            elif part.kind == "word":
                words.append(_word(part, text))
        out.append(ShellCommand(words, assignments, *node.pos))
        return
    for attr in ("parts", "list"):
        for child in getattr(node, attr, None) or ():
            _collect(child, out, text)
    command = getattr(node, "command", None)
    if isinstance(command, bashlex.ast.node):
        _collect(command, out, text)


def _word(part: bashlex.ast.node, text: str) -> Word:
    """A word with its value unquoted from the source by POSIX rules.

    bashlex's own `word` drops quotes inside assignment-like words (`--c='{"a": 1}'` reads
    `--c={a: 1}`), so its positions are used but the value is read again with shlex.
    """
    start, end = part.pos
    value = part.word
    try:
        tokens = shlex.split(text[start:end])
    except ValueError:
        tokens = []
    if len(tokens) == 1:
        value = tokens[0]
    return Word(value, start, end)


def check_shell(text: str) -> str | None:
    """None when the script parses; else the shell's complaint (`bash -n`, else bashlex)."""
    bash = find_program("bash")  # never a `bash` of the workspace (see core/tools.py)
    if bash:
        try:
            done = subprocess.run(
                [bash, "-n"], input=text, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bash -n failed to run: {exc}"
        if done.returncode == 0:
            return None
        message = done.stderr.strip().splitlines()
        return re.sub(r"^bash: ", "", message[0] if message else "syntax error")
    try:
        bashlex.parse(text)
    except Exception as exc:
        return f"shell syntax error: {exc}"
    return None


# ---------------------------------------------------------------------------------------------
# Rendering edits in shell syntax.


@dataclass
class ShellRenderer:
    """Spells argument edits as shell words inside one command, keeping its layout."""

    text: str  # decoded shell text
    smap: SourceMap
    command: ShellCommand
    lines: LineIndex = field(init=False)

    def __post_init__(self) -> None:
        self.lines = LineIndex(self.text)

    @property
    def multiline(self) -> bool:
        return "\\\n" in self.text[self.command.start : self.command.end]

    def separator(self, arg: Arg) -> str:
        """What goes before a new argument after `arg`: a continuation line or a blank."""
        return " \\\n" + self._continuation_indent(arg.start) if self.multiline else " "

    def replace(self, arg: Arg, value: str) -> Edit:
        source = self.text[arg.start : arg.end]
        head = _shared_head(arg.value, value)
        if head and source.startswith(head):  # `--flag=old`: keep the flag, requote the value
            tail = quote_like(source[len(head) :], value[len(head) :])
            return self.smap.to_file(Edit(arg.start + len(head), arg.end, tail))
        return self.smap.to_file(Edit(arg.start, arg.end, quote_like(source, value)))

    def insert_after(self, arg: Arg, values: Sequence[str]) -> Edit:
        # multi-line commands get a new continuation line, indented like the others
        return self.smap.to_file(Edit(arg.end, arg.end, self.separator(arg) + join_words(values)))

    def insert_before(self, arg: Arg, values: Sequence[str]) -> Edit:
        words = join_words(values)
        line_start = self.lines.line_start(arg.start)
        first_on_line = not self.text[line_start : arg.start].strip()
        if self.multiline and first_on_line:
            words += " \\\n" + self.text[line_start : arg.start]
        else:
            words += " "
        return self.smap.to_file(Edit(arg.start, arg.start, words))

    def _continuation_indent(self, offset: int) -> str:
        line_start = self.lines.line_start(offset)
        line = self.lines.line_text(offset)
        if line_start > self.command.start:
            return line[: len(line) - len(line.lstrip())]
        first = self.lines.line_text(self.command.start)
        return first[: len(first) - len(first.lstrip())] + "    "


@dataclass
class ArrayRenderer(ShellRenderer):
    """Argument edits inside an array assignment `ARGS=(…)`; new elements on their own line
    when the array is written one element group per line."""

    def separator(self, arg: Arg) -> str:
        body = self.text[self.command.start : self.command.end]
        if "\n" not in body.strip("\n"):
            return " "
        line = self.lines.line_text(arg.start)
        return "\n" + line[: len(line) - len(line.lstrip())]


@dataclass
class StringRenderer(ShellRenderer):
    """Argument edits inside a variable's string that the command splits into words
    (`VLLM_ARGS="--max-num-seqs 256"`): only values that split the same way fit in it."""

    def _plain(self, values: Sequence[str]) -> str:
        if any(c.isspace() or c in "\"'$`\\*?[" for c in "".join(values)):
            raise CannotRender(f"{' '.join(values)!r} cannot go into a string the command splits into words")
        return " ".join(values)

    def replace(self, arg: Arg, value: str) -> Edit:
        return self.smap.to_file(Edit(arg.start, arg.end, self._plain([value])))

    def insert_after(self, arg: Arg, values: Sequence[str]) -> Edit:
        return self.smap.to_file(Edit(arg.end, arg.end, " " + self._plain(values)))

    def insert_before(self, arg: Arg, values: Sequence[str]) -> Edit:
        return self.smap.to_file(Edit(arg.start, arg.start, self._plain(values) + " "))


def _shared_head(old: str, new: str) -> str:
    """`--max-num-seqs=` when both values start with it (the part an edit can keep)."""
    head, eq, _ = old.partition("=")
    return head + eq if eq and new.startswith(head + eq) else ""


# ---------------------------------------------------------------------------------------------
# Environment variables of a shell command.


@dataclass
class ShellEnv:
    """`VAR=1 cmd` prefixes and earlier `export VAR=1` lines; new ones per `mode`.

    mode `file`: a new `export VAR=value` line just above the command (scripts).
    mode `inline`: a `VAR=value ` prefix on the command (snippets in docs, one-liners).
    """

    text: str
    smap: SourceMap
    command: ShellCommand
    exports: list[Word]  # `export NAME=value` words before the command
    mode: EnvMode

    def _assignment(self, name: str) -> Word | None:
        for word in self.command.assignments:
            if word.value.partition("=")[0] == name:
                return word
        found = None
        for word in self.exports:
            if word.value.partition("=")[0] == name:
                found = word
        return found

    def values(self) -> dict[str, str]:
        out = {}
        for word in [*self.exports, *self.command.assignments]:
            name, _, value = word.value.partition("=")
            out[name] = value
        return out

    def plan_set(self, name: str, value: str) -> OpPlan | str:
        word = self._assignment(name)
        if word is not None:
            old = word.value.partition("=")[2]
            if old == value:
                return OpPlan((), f"{name} already {value}")
            source = self.text[word.start : word.end]
            head = name + "="
            new = quote_like(source[len(head) :], value)
            edit = Edit(word.start + len(head), word.end, new)
            return OpPlan((self.smap.to_file(edit),), f"{name} {old} → {value}")
        assignment = f"{name}={quote_like('', value)}"
        if self.mode == "file":
            lines = LineIndex(self.text)
            line_start = lines.line_start(self.command.start)
            line = lines.line_text(self.command.start)
            indent = line[: len(line) - len(line.lstrip())]
            edit = Edit(line_start, line_start, f"{indent}export {assignment}\n")
        else:
            # after any existing `NAME=…` prefixes, right before the command word
            first = (self.command.words or self.command.assignments)[0]
            edit = Edit(first.start, first.start, assignment + " ")
        return OpPlan((self.smap.to_file(edit),), f"added {assignment}")


@dataclass
class DockerRunEnv:
    """`docker run -e VAR=value` options (the host's environment does not reach vLLM)."""

    site_args: list[Arg]
    image_index: int
    uses: dict[str, int]

    def values(self) -> dict[str, str]:
        return {name: self.site_args[i].value.partition("=")[2] for name, i in self.uses.items()}

    def plan_set(self, name: str, value: str) -> OpPlan | str:
        index = self.uses.get(name)
        wanted = f"{name}={value}"
        if index is not None:
            arg = self.site_args[index]
            old = arg.value.partition("=")[2]
            if arg.value == wanted:
                return OpPlan((), f"-e {name} already {value}")
            return OpPlan((arg.renderer.replace(arg, wanted),), f"-e {name} {old} → {value}")
        image = self.site_args[self.image_index]
        edit = image.renderer.insert_before(image, ["-e", wanted])
        return OpPlan((edit,), f"added -e {wanted}")


# ---------------------------------------------------------------------------------------------
# Finding invocations.


def shell_sites(
    text: str,
    smap: SourceMap,
    fmt: Format,
    commands: list[ShellCommand],
    env_mode: EnvMode = "file",
    outer_env: EnvTarget | None = None,
    image_entry: bool = False,
    lexed: Lexed | None = None,
) -> list[Site]:
    """Sites for every command in `commands` that starts vLLM.

    `outer_env`: the environment belongs to an enclosing format (a compose service's
    `environment:`), so it is used instead of shell exports. `image_entry`: the words are
    arguments to a vLLM image's entrypoint. `lexed` (a whole script): arguments are read
    where they are defined — `"${ARGS[@]}"` in the array's assignment, a function's `"$@"`
    at each call of the function (one site per call).
    """
    sites: list[Site] = []
    exports: list[Word] = []
    variables: dict[str, str] = {}
    assigned: dict[str, Word] = {}  # the word of each variable's last assignment
    for command in commands:
        values = [w.value for w in command.words]
        _remember_assignments(command, values, exports, variables, assigned)
        if values and values[0] in _TEXT_COMMANDS:
            continue
        if find_entry(values, image_entry=image_entry) is None:
            continue
        for args, extra, label in _launches(text, smap, command, commands, lexed, assigned):
            argv = [a.value for a in args]
            entry = find_entry(argv, image_entry=image_entry)
            if entry is None:
                continue
            env: EnvTarget
            if entry.kind == "docker run" and entry.image_index is not None:
                env = DockerRunEnv(args, entry.image_index, docker_env_uses(argv, entry))
            elif outer_env is not None:
                env = outer_env
            else:
                env = ShellEnv(text, smap, command, list(exports), env_mode)
            site = ArgvSite(
                fmt=fmt,
                label=label,
                start=smap.offsets[command.start],
                end=smap.offsets[command.end],
                args=args,
                entry_info=entry,
                env_target=env,
                variables=dict(variables),
                extra=extra,
            )
            sites.append(site)
    return sites


_ALL_POSITIONAL = frozenset({"$@", "$*", "${@}", "${*}"})
_POSITIONAL = re.compile(r"\$(\d)|\$\{(\d)\}")
_ARRAY_REF = re.compile(r"\$\{(\w+)\[@\]\}")
_SHIFTS = re.compile(r"(?:^|[\s;&|(])(?:shift|set[ \t]+--)(?=[\s;&|)]|$)")

Launch = tuple[list[Arg], list[tuple[int, int]], str]


def _launches(
    text: str,
    smap: SourceMap,
    command: ShellCommand,
    commands: list[ShellCommand],
    lexed: Lexed | None,
    assigned: dict[str, Word],
) -> list[Launch]:
    """The argument vectors this command runs with: (args, where else they are defined, label)."""
    lines = LineIndex(text)
    line = lines.position(command.start)[0] + 1
    renderer = ShellRenderer(text, smap, command)
    own: list[Arg] = []
    strings: list[tuple[int, int]] = []
    for word in command.words:
        own.extend(_split_variable(text, smap, word, renderer, assigned, strings))
    variants: list[Launch] = [(own, strings, f"line {line}")]
    function = lexed.function_at(command.start) if lexed is not None else None
    if function is not None and lexed is not None and _forwards_arguments(own, function, lexed):
        calls = [
            c
            for c in commands
            if c.words
            and c.words[0].value == function.name
            and not function.start <= c.start < function.body_end
        ]
        if calls:
            variants = [
                (
                    _substitute(
                        own,
                        [
                            Arg(w.value, w.start, w.end, ShellRenderer(text, smap, call))
                            for w in call.words[1:]
                        ],
                    ),
                    [*strings, (smap.offsets[call.start], smap.offsets[call.end])],
                    f"line {lines.position(call.start)[0] + 1} ({function.name}, line {line})",
                )
                for call in calls
            ]
    if lexed is None:
        return variants
    return [_with_arrays(args, extra, label, text, smap, lexed) for args, extra, label in variants]


_UNQUOTED_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")
_STRING_VALUE = re.compile(r"""(["'])([^"'$`\\]*)\1""")


def _split_variable(
    text: str,
    smap: SourceMap,
    word: Word,
    renderer: ShellRenderer,
    assigned: dict[str, Word],
    strings: list[tuple[int, int]],
) -> list[Arg]:
    """An unquoted `$VLLM_ARGS` splits into words: those of its assignment's string, read and
    edited there (`VLLM_ARGS="--max-num-seqs 256 --port 8000"`), when it is a plain string;
    otherwise the word is opaque when its value holds blanks."""
    ref = _UNQUOTED_VARIABLE.fullmatch(text[word.start : word.end])
    assignment = assigned.get((ref.group(1) or ref.group(2)) if ref else "")
    value = assignment.value.partition("=")[2] if assignment is not None else ""
    if assignment is None or not value.split(None, 1)[1:]:
        return [Arg(word.value, word.start, word.end, renderer)]
    source = text[assignment.start : assignment.end]
    string = _STRING_VALUE.fullmatch(source, source.index("=") + 1)
    if string is None:
        return [Arg(word.value, word.start, word.end, renderer, opaque=True)]
    inner = assignment.start + string.start(2)
    words = [
        Word(m.group(), inner + m.start(), inner + m.end()) for m in re.finditer(r"\S+", string.group(2))
    ]
    pieces = StringRenderer(text, smap, ShellCommand(words, [], inner, assignment.start + string.end(2)))
    strings.append((smap.offsets[assignment.start], smap.offsets[assignment.end]))
    return [Arg(w.value, w.start, w.end, pieces) for w in words]


def _forwards_arguments(args: list[Arg], function: FunctionBody, lexed: Lexed) -> bool:
    """Whether the command passes on the function's arguments (and the function keeps them)."""
    uses = any(a.value in _ALL_POSITIONAL or _POSITIONAL.fullmatch(a.value) for a in args)
    return uses and not _SHIFTS.search(lexed.code, function.body_start, function.body_end)


def _substitute(own: list[Arg], passed: list[Arg]) -> list[Arg]:
    """The command's arguments with `"$@"` and `"$1"` … replaced by a call's arguments."""
    out: list[Arg] = []
    for arg in own:
        number = _POSITIONAL.fullmatch(arg.value)
        if arg.value in _ALL_POSITIONAL:
            out.extend(passed)
        elif number and (n := int(number.group(1) or number.group(2))) > 0:
            out.extend(passed[n - 1 : n])
        else:
            out.append(arg)
    return out


def _with_arrays(
    args: list[Arg], extra: list[tuple[int, int]], label: str, text: str, smap: SourceMap, lexed: Lexed
) -> Launch:
    """`"${ARGS[@]}"` replaced by the elements of `ARGS=(…)` when the script assigns it once."""
    out: list[Arg] = []
    extra = list(extra)
    for arg in args:
        ref = _ARRAY_REF.fullmatch(arg.value)
        assigned = [a for a in lexed.arrays if ref and a.name == ref.group(1)]
        if len(assigned) != 1 or assigned[0].append:
            out.append(arg)  # unknown or built up piece by piece: it stays opaque
            continue
        array = assigned[0]
        renderer = _array_renderer(text, smap, array)
        out.extend(Arg(w.value, w.start, w.end, renderer) for w in array.elements)
        extra.append((smap.offsets[array.start], smap.offsets[array.close_at + 1]))
    return out, extra, label


def _array_renderer(text: str, smap: SourceMap, array: ArrayAssignment) -> ArrayRenderer:
    words = [Word(w.value, w.start, w.end) for w in array.elements]
    return ArrayRenderer(text, smap, ShellCommand(words, [], array.open_at + 1, array.close_at))


def _remember_assignments(
    command: ShellCommand,
    values: list[str],
    exports: list[Word],
    variables: dict[str, str],
    assigned: dict[str, Word],
) -> None:
    """Track `NAME=value` and `export NAME=value` so later commands can resolve `$NAME`."""
    if not values:
        for word in command.assignments:
            name, _, value = word.value.partition("=")
            variables[name] = value
            assigned[name] = word
    elif values[0] == "export":
        for word in command.words[1:]:
            if "=" in word.value:
                name, _, value = word.value.partition("=")
                variables[name] = value
                assigned[name] = word
                exports.append(word)
