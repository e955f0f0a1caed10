"""The run's context from its start-up lines: vLLM version, model, launch args, GPU, TP/PP size."""

from __future__ import annotations

import re

from . import regexes
from .lines import parse_line
from .model import RunContext
from .text import LogIndex
from .values import canonical_flag

_VERSION_PATTERNS = (
    regexes.compile(r"vLLM (?:API )?server version (?P<v>\d[\w.+-]*)"),
    regexes.compile(r"█\s+version\s+(?P<v>\d[\w.+-]*)"),
    regexes.compile(r"Initializing an? (?:V[01] )?LLM engine \(v(?P<v>\d[\w.+-]*)\)"),
    regexes.compile(r"Dumping input data for V1 LLM engine \(v(?P<v>\d[\w.+-]*)\)"),
)
_MODEL_PATTERNS = (
    regexes.compile(r"█\s+model\s+(?P<m>\S+)"),
    regexes.compile(r"Starting to load model (?P<m>\S+?)(?:\.\.\.)?$"),
    regexes.compile(r"serving model (?P<m>\S+)"),
    regexes.compile(r"with config: model='(?P<m>[^']+)'"),
)
_GPU_PATTERNS = (
    regexes.compile(r"Your (?P<g>.+?) GPU (?:has compute capability|does not)"),
    regexes.compile(r"device_name[=:] ?'?(?P<g>[^',)]+)"),
    regexes.compile(r"GPU \d+ \((?P<g>NVIDIA [^)]+)\)"),
)
# The platform vLLM runs on, as start-up names it: detected, a plugin's, or the engine config's.
_PLATFORM_PATTERNS = (
    regexes.compile(r"Automatically detected platform (?P<p>\w+)"),
    regexes.compile(r"Platform plugin (?P<p>\w+) is activated"),
    regexes.compile(r"\bdevice_config=(?P<p>\w+)"),
)
_NAMESPACE_ITEM = regexes.compile(
    r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]+)"
)

# Start-up lines worth reading for context are near a run's start.
_CONTEXT_LITERALS = (
    "server version",
    "█  version",
    "█  model",
    "LLM engine (v",
    "non-default args:",
    "args: Namespace(",
    "Starting to load model",
    "Automatically detected platform",
    "Dumping input data for V1 LLM engine",
    "Platform plugin",
)


def parse_args_text(message: str) -> dict[str, str]:
    """Launch args from `non-default args: {...}` or `args: Namespace(...)` as canonical flags
    (a new dict; the reading of each distinct line is remembered: a restart loop prints the
    same args line at every start)."""
    args = _ARGS_READ.get(message)
    if args is None:
        if len(_ARGS_READ) >= _MAX_ARGS_READ:
            _ARGS_READ.clear()
        args = _ARGS_READ[message] = _read_args(message)
    return dict(args)


# The args lines read (their reading is a function of the text alone), and how many are kept.
_ARGS_READ: dict[str, dict[str, str]] = {}
_MAX_ARGS_READ = 256


def _read_args(message: str) -> dict[str, str]:
    args: dict[str, str] = {}
    if message.startswith("non-default args:"):
        body = message.partition(":")[2].strip()
        try:
            parsed = literal_value(body) if len(body) < 200_000 else None
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            for key, value in parsed.items():
                args[canonical_flag(str(key))] = _arg_text(value)
            return args
        items = _NAMESPACE_ITEM.findall(body.strip("{}").replace("': ", "=").replace("'", ""))
    else:
        body = message.partition("Namespace(")[2].rstrip(")")
        items = _NAMESPACE_ITEM.findall(body)
    for key, value in items:
        value = value.strip()
        if value in ("None", "False", "''", '""', "[]"):
            continue
        args[canonical_flag(key)] = value.strip("'\"")
    return args


# What vLLM's `non-default args:` line holds: the repr of a dict of plain values. Its tokens, as
# Python's own tokenizer reads them, for the values whose repr needs no escape: printable ASCII
# strings without a backslash, decimal numbers, True/False/None, brackets and separators.
_LITERAL_TOKEN = regexes.compile(
    r" *(?:(?P<str>'[ -&(-\[\]-~]*'|\"[ !#-\[\]-~]*\")"
    r"|(?P<num>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<name>True|False|None)|(?P<punct>[][{}(),:]))"
)
_NAMES = {"True": True, "False": False, "None": None}
_CLOSING = {"{": "}", "[": "]", "(": ")"}
#: Deeper nesting goes to `ast` (whose parser limits nesting; this one need not know where).
_MAX_DEPTH = 50


class _NotPlain(Exception):
    """A text the plain reader does not take: `ast.literal_eval` decides it."""


def literal_value(text: str) -> object:
    """`ast.literal_eval(text)`: read here when the text holds only plain values (as vLLM's args
    line does), else by `ast` itself, whose import would cost a short check a tenth of its time.
    The same value, or the same exception, either way."""
    try:
        return _PlainReader(text).document()
    except Exception:  # _NotPlain, or a dict key that cannot be hashed: ast decides (and raises)
        import ast
        import warnings

        # (A log's text is no program: an invalid escape in it, `'\o'`, is read as Python reads
        # it, without the compiler's warning on the user's terminal.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(text)


class _PlainReader:
    """Recursive descent over `_LITERAL_TOKEN`s; raises `_NotPlain` at anything else."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            found = _LITERAL_TOKEN.match(text, pos)
            if found is None or found.end() == pos:
                if text[pos:].strip(" ") == "":
                    break
                raise _NotPlain
            kind = found.lastgroup or ""
            self.tokens.append((kind, found.group(kind)))
            pos = found.end()
        self.at = 0

    def document(self) -> object:
        value = self.value(0)
        if self.at != len(self.tokens):
            raise _NotPlain  # two values side by side ('a' 'b' is one string to Python), or more
        return value

    def next(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise _NotPlain
        self.at += 1
        return self.tokens[self.at - 1]

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def value(self, depth: int) -> object:
        kind, token = self.next()
        if kind == "str":
            return token[1:-1]
        if kind == "num":
            return float(token) if any(c in token for c in ".eE") else int(token)
        if kind == "name":
            return _NAMES[token]
        if token not in _CLOSING or depth >= _MAX_DEPTH:
            raise _NotPlain
        closing = _CLOSING[token]
        items: list[object] = []
        keys: list[object] = []
        separated = True  # a comma (or the opening) came last
        while self.peek() != closing:
            if not separated:
                raise _NotPlain
            if token == "{":
                keys.append(self.value(depth + 1))
                if self.next()[1] != ":":
                    raise _NotPlain  # a set, or a dict gone wrong
            items.append(self.value(depth + 1))
            separated = self.peek() == ","
            if separated:
                self.next()
        self.next()
        if token == "{":
            return dict(zip(keys, items, strict=True))
        if token == "[":
            return items
        if len(items) == 1 and not separated:
            return items[0]  # (x) is x; (x,) a tuple
        return tuple(items)


def _arg_text(value: object) -> str:
    if value is True:
        return "true"
    if isinstance(value, (dict, list)):
        import json

        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def read_context(index: LogIndex, start: int, end: int, limit: int = 2_000_000) -> RunContext:
    """Read the context of the run whose text is [start, end) (offsets)."""
    stop = min(end, start + limit)
    version = model = gpu = platform = None
    args: dict[str, str] = {}
    args_line = None
    for literal in _CONTEXT_LITERALS:
        pos = index.find(literal, start, stop)
        if pos < 0:
            continue
        line = parse_line(index.line_of(pos), index.line_at(pos, 400_000))
        message = line.message.strip()
        if version is None:
            version = _first_group(_VERSION_PATTERNS, message)
        if model is None:
            model = _first_group(_MODEL_PATTERNS, message)
        if platform is None:
            platform = _first_group(_PLATFORM_PATTERNS, message)
        if not args and (message.startswith(("non-default args:", "args: Namespace("))):
            args = parse_args_text(message)
            args_line = line.number
    if args:
        model = model or args.get("--model") or args.get("--model-tag")
    gpu_pos = index.find("GPU", start, min(stop, start + 200_000))
    if gpu_pos >= 0:
        window = index.slice(gpu_pos, gpu_pos + 400)
        gpu = _first_group(_GPU_PATTERNS, window)
    return RunContext(
        vllm_version=version,
        model=model,
        args=args,
        args_line=args_line,
        gpu=gpu,
        tensor_parallel_size=_int(args.get("--tensor-parallel-size")),
        pipeline_parallel_size=_int(args.get("--pipeline-parallel-size")),
        platform=platform,
    )


def _first_group(patterns: tuple[re.Pattern[str], ...], text: str) -> str | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found.group(1)
    return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
