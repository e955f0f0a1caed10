"""The run's context from its start-up lines: vLLM version, model, launch args, GPU, TP/PP size."""

from __future__ import annotations

import re

from .lines import parse_line
from .model import RunContext
from .text import LogIndex
from .values import canonical_flag

_VERSION_PATTERNS = (
    re.compile(r"vLLM (?:API )?server version (?P<v>\d[\w.+-]*)"),
    re.compile(r"█\s+version\s+(?P<v>\d[\w.+-]*)"),
    re.compile(r"Initializing an? (?:V[01] )?LLM engine \(v(?P<v>\d[\w.+-]*)\)"),
    re.compile(r"Dumping input data for V1 LLM engine \(v(?P<v>\d[\w.+-]*)\)"),
)
_MODEL_PATTERNS = (
    re.compile(r"█\s+model\s+(?P<m>\S+)"),
    re.compile(r"Starting to load model (?P<m>\S+?)(?:\.\.\.)?$"),
    re.compile(r"serving model (?P<m>\S+)"),
    re.compile(r"with config: model='(?P<m>[^']+)'"),
)
_GPU_PATTERNS = (
    re.compile(r"Your (?P<g>.+?) GPU (?:has compute capability|does not)"),
    re.compile(r"device_name[=:] ?'?(?P<g>[^',)]+)"),
    re.compile(r"GPU \d+ \((?P<g>NVIDIA [^)]+)\)"),
)
# The platform vLLM runs on, as start-up names it: detected, a plugin's, or the engine config's.
_PLATFORM_PATTERNS = (
    re.compile(r"Automatically detected platform (?P<p>\w+)"),
    re.compile(r"Platform plugin (?P<p>\w+) is activated"),
    re.compile(r"\bdevice_config=(?P<p>\w+)"),
)
_NAMESPACE_ITEM = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]+)")

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
    """Launch args from `non-default args: {...}` or `args: Namespace(...)` as canonical flags."""
    args: dict[str, str] = {}
    if message.startswith("non-default args:"):
        body = message.partition(":")[2].strip()
        import ast  # only for this line: importing it costs the CLI start-up time

        try:
            parsed = ast.literal_eval(body) if len(body) < 200_000 else None
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
