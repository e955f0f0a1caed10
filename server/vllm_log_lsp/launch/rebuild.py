"""The fixed launch command, rebuilt from the log when there is no launch script."""

from __future__ import annotations

import ast
import json
import shlex
from collections.abc import Iterable

from ..core.model import FixOp, ResolvedOp, RunContext
from .apply import fix_text

#: Log args that are not flags of `vllm serve MODEL` (the model is positional).
_NOT_FLAGS = frozenset({"--model", "--model-tag", "--subparser", "--dispatch-function"})


def rebuild_command(
    context: RunContext,
    ops: Iterable[FixOp | ResolvedOp],
    captures: dict[str, str] | None = None,
) -> str:
    """`vllm serve MODEL` + the log's non-default args + the fix, as one shell line.

    Flags the fix touches are updated in place (never repeated); environment variables become
    `NAME=value` prefixes. `MODEL` stands in when the log does not name the model.
    """
    words = ["vllm", "serve", context.model or context.args.get("--model") or "MODEL"]
    for flag, value in context.args.items():
        if flag not in _NOT_FLAGS:
            words.extend(flag_words(flag, value))
    base = shlex.join(words)
    result = fix_text(base, "command.txt", ops, index=0, context=context, captures=captures, docs=True)
    return result.new_text if result.status != "skipped" else base


def flag_words(flag: str, value: str | None) -> list[str]:
    """Command-line words for one logged arg: `True` → the switch, `False` → `--no-…`."""
    if value is None or value == "None":
        return []
    if value in ("True", "true"):
        return [flag]
    if value in ("False", "false"):
        return ["--no-" + flag[2:]]
    parsed = _python_literal(value)
    if isinstance(parsed, dict):
        return [flag, json.dumps(parsed)]
    if isinstance(parsed, (list, tuple)):
        return [flag, *(str(v) for v in parsed)]
    return [flag, value]


def _python_literal(text: str) -> object:
    """vLLM logs args as Python reprs (`{'mode': 0}`); JSON is accepted too."""
    for parse in (ast.literal_eval, json.loads):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text
