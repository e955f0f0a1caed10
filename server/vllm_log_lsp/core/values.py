"""Fix values and flag spellings: turning a catalog FixOp into text for one vLLM version.

Shared by the hover (values from the log alone) and the quick fixes (values from the launch
script as well), so both show the same numbers.
"""

from __future__ import annotations

import shlex

from .model import FixOp, ResolvedOp, ValueSpec
from .versions import Version

# vLLM's short aliases (0.9+; `-cc` 0.12+). `-O` is left alone: its meaning changed in 0.12.
SHORT_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-q": "--quantization",
    "-cc": "--compilation-config",
    "-ac": "--attention-config",
}


def canonical_flag(name: str) -> str:
    """`--max_num_seqs` and `max-num-seqs` both become `--max-num-seqs` (vLLM treats them alike).

    Only the part before the first `.` is normalised, so `-cc.cudagraph_mode` becomes
    `--compilation-config.cudagraph_mode`; short aliases become their long flag.
    """
    head, dot, tail = name.partition(".")
    if head in SHORT_ALIASES:
        return SHORT_ALIASES[head] + dot + tail
    if head.startswith("-") and not head.startswith("--") and len(head) > 2:
        return head + dot + tail  # an unknown short option: keep it as written
    return "--" + head.lstrip("-").replace("_", "-") + dot + tail


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _format_like(value: float, template: str) -> str:
    """Render `value` as an int if the template was an int, else with the template's decimals."""
    if "." not in template:
        return str(int(value))
    decimals = len(template.split(".", 1)[1]) or 2
    return f"{value:.{max(decimals, 2)}f}".rstrip("0").rstrip(".")


def derive_value(spec: ValueSpec, base: str) -> str | None:
    """Apply `spec.derive` to the current value `base`; None when base is not a number."""
    number = _as_number(base)
    if number is None:
        return None
    if spec.derive == "halve":
        result = int(number // 2) if "." not in base else number / 2
    elif spec.derive == "step_down":
        result = round(number - 0.05, 2) if number <= 1 else number * 0.9
    elif spec.derive == "step_up":
        result = round(number + 0.05, 2) if number <= 1 else number * 1.1
    else:
        return base
    if spec.minimum is not None:
        result = max(result, spec.minimum)
    if spec.maximum is not None:
        result = min(result, spec.maximum)
    return _format_like(result, base)


#: How a derivation reads in a sentence: "half of vLLM's default 256".
_DERIVATIONS = {"halve": "half of", "step_down": "a step below", "step_up": "a step above"}


def resolve_value(
    spec: ValueSpec | None,
    captures: dict[str, str],
    current: str | None = None,
    log_value: str | None = None,
) -> tuple[str | None, str]:
    """Compute a fix value. Returns (value, where it came from).

    `current` is the value in the launch script being edited, `log_value` the one in the
    log's launch args; the first that exists is the base for a derivation.
    """
    if spec is None:
        return None, ""
    if spec.capture and captures.get(spec.capture):
        return captures[spec.capture].replace(",", ""), "as this log computed it"
    if spec.derive:
        logged = captures.get(spec.base_capture or "")
        for base, origin in (
            (current, "the launch script's {}"),
            (logged, "the {} in the error"),
            (log_value, "the {} the run was launched with"),
            (spec.default, "vLLM's default {}"),
        ):
            if base:
                derived = derive_value(spec, base)
                if derived is not None:
                    return derived, f"{_DERIVATIONS[spec.derive]} {origin.format(base)}"
    if spec.literal is not None:
        return spec.literal, ""
    return None, ""


# vLLM accepts dotted JSON flags (`-cc.cudagraph_mode=NONE`) from about 0.9; `-cc` exists from 0.12.
_DOTTED_JSON_SINCE: Version = (0, 9, 0)
_CC_ALIAS_SINCE: Version = (0, 12, 0)


def json_flag_spelling(flag: str, key: str, value: str, version: Version | None) -> str:
    """How to set one key of a JSON config flag on a command line for this vLLM version."""
    if flag == "--compilation-config" and (version is None or version >= _CC_ALIAS_SINCE):
        return f"-cc.{key}={value}"
    if version is not None and version >= _DOTTED_JSON_SINCE:
        return f"{flag}.{key}={value}"
    import json  # (here: most fixes spell no JSON, and json's import costs a short check)

    return f"{flag} {shlex.quote(json.dumps({key: json_value(value)}))}"


def json_value(text: str) -> object:
    """A dotted-flag value as vLLM reads it: JSON when it parses, else the plain string."""
    import json

    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return text


def spell_op(op: FixOp, value: str | None, version: Version | None) -> str:
    """The command-line text of one resolved operation."""
    if op.op == "set_env":
        return f"{op.name}={shlex.quote(value or '')}"
    if op.op == "add_flag":
        return op.name
    if op.op == "merge_json":
        return json_flag_spelling(op.name, op.key or "", value or "", version)
    return f"{op.name} {shlex.quote(value or '')}"


def resolve_op(
    op: FixOp,
    captures: dict[str, str],
    version: Version | None,
    log_args: dict[str, str] | None = None,
    current: str | None = None,
) -> ResolvedOp | None:
    """Resolve one op for a log; None when a required value cannot be computed."""
    log_value = (log_args or {}).get(op.name) if op.op != "set_env" else None
    value, origin = resolve_value(op.value, captures, current, log_value)
    if op.op != "add_flag" and value is None:
        return None
    return ResolvedOp(op=op, value=value, spelling=spell_op(op, value, version), source=origin)
