"""Once the log's advice is in the script, the fix says "already applied" instead of stepping on.

The advice is what the log alone says (the hover's value): derived from the crashed run's value
(the log's args, else vLLM's default), or captured from the error. A script that holds it, or a
value at least as safe (lower where the fix lowers, higher where it raises), is left alone.
"""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.model import FixOp, RunContext, ValueSpec
from vllm_log_lsp.launch import fix_text

HALVE_SEQS = FixOp("set_flag", "--max-num-seqs", ValueSpec(derive="halve", default="256", minimum=1))
LOWER_UTIL = FixOp(
    "set_flag", "--gpu-memory-utilization", ValueSpec(derive="step_down", default="0.9", minimum=0.5)
)
RAISE_UTIL = FixOp(
    "set_flag", "--gpu-memory-utilization", ValueSpec(derive="step_up", default="0.9", maximum=0.95)
)
# "KV cache too small": the context that fits, captured from the error; lower is safer
FIT_LEN = FixOp(
    "set_flag", "--max-model-len", ValueSpec(capture="fit_len", derive="halve", default="8192", minimum=256)
)
CAPTURE_SIZE = FixOp("set_flag", "--max-cudagraph-capture-size", ValueSpec(literal="64"))
LOGGED = RunContext(args={"--model": "m", "--max-num-seqs": "512", "--gpu-memory-utilization": "0.92"})


def apply_until_stable(text: str, op: FixOp, context: RunContext, **kw: object) -> list[str]:
    """The texts each apply gives, until one changes nothing (at most 5 applies)."""
    seen = [text]
    for _ in range(5):
        result = fix_text(seen[-1], "run.sh", [op], context=context, **kw)
        assert result.status != "skipped", result.reason
        if not result.changed:
            return seen
        seen.append(result.new_text)
    raise AssertionError(f"still changing after 5 applies: {seen}")


@pytest.mark.parametrize(
    ("script", "context", "op", "steps"),
    [
        # the log ran 512 sequences: 512 → 256, once
        ("--max-num-seqs 512", LOGGED, HALVE_SEQS, ["--max-num-seqs 256"]),
        # the log ran 0.92: 0.92 → 0.87, never 0.82
        ("--gpu-memory-utilization 0.92", LOGGED, LOWER_UTIL, ["--gpu-memory-utilization 0.87"]),
        # the log does not list the flag (the default ran) and the script says 512: the advice
        # is half the default, reached in one step (not 512 → 256 → 128)
        ("--max-num-seqs 512", RunContext(args={"--model": "m"}), HALVE_SEQS, ["--max-num-seqs 128"]),
        # no log args at all: the same advice
        ("--max-num-seqs 512", RunContext(), HALVE_SEQS, ["--max-num-seqs 128"]),
        # the flag is missing: added once
        ("--port 1", LOGGED, HALVE_SEQS, ["--port 1 --max-num-seqs 256"]),
    ],
)
def test_the_advice_is_applied_once(script: str, context: RunContext, op: FixOp, steps: list[str]) -> None:
    seen = apply_until_stable(f"vllm serve m {script}\n", op, context)
    assert seen[1:] == [f"vllm serve m {s}\n" for s in steps]


@pytest.mark.parametrize(
    ("script", "op", "context", "captures", "summary"),
    [
        ("--max-num-seqs 256", HALVE_SEQS, LOGGED, {}, "--max-num-seqs 256"),
        # lowered further by hand than the log asks
        ("--max-num-seqs 64", HALVE_SEQS, LOGGED, {}, "--max-num-seqs 64 (at least as safe as 256)"),
        ("--gpu-memory-utilization 0.8", LOWER_UTIL, LOGGED, {}, "--gpu-memory-utilization 0.8 (at least"),
        # a fix that raises: a higher value is at least as safe
        ("--gpu-memory-utilization 0.97", RAISE_UTIL, LOGGED, {}, "--gpu-memory-utilization 0.97 (at least"),
        # "KV cache too small": 4096 tokens fit; the script asks 2048 — never raised to 4096
        ("--max-model-len 2048", FIT_LEN, RunContext(), {"fit_len": "4096"}, "--max-model-len 2048 (at"),
        ("--max-model-len 4096", FIT_LEN, RunContext(), {"fit_len": "4,096"}, "--max-model-len 4096"),
        # a literal that lowers what the run used (512): a lower script value is as safe
        (
            "--max-cudagraph-capture-size 32",
            CAPTURE_SIZE,
            RunContext(args={"--max-cudagraph-capture-size": "512"}),
            {},
            "--max-cudagraph-capture-size 32 (at least as safe as 64)",
        ),
    ],
)
def test_already_applied_says_so(
    script: str, op: FixOp, context: RunContext, captures: dict[str, str], summary: str
) -> None:
    text = f"vllm serve m {script}\n"
    result = fix_text(text, "run.sh", [op], context=context, captures=captures)
    assert result.status == "unchanged" and result.new_text == text
    assert result.summary.startswith(f"run.sh:1: already applied: {summary}")


def test_a_script_less_safe_than_the_advice_gets_the_advice() -> None:
    """Lowered by hand, but not as far as the log asks: the log's value, not a new step."""
    result = fix_text("vllm serve m --max-num-seqs 300\n", "run.sh", [HALVE_SEQS], context=LOGGED)
    assert result.new_text == "vllm serve m --max-num-seqs 256\n"
    raised = fix_text(
        "vllm serve m --max-model-len 8192\n", "run.sh", [FIT_LEN], captures={"fit_len": "4096"}
    )
    assert raised.new_text == "vllm serve m --max-model-len 4096\n"


def test_without_a_direction_only_the_same_value_counts() -> None:
    """A literal with no crashed value to compare with: 32 is not "at least as safe" as 64."""
    result = fix_text("vllm serve m --max-cudagraph-capture-size 32\n", "run.sh", [CAPTURE_SIZE])
    assert result.new_text == "vllm serve m --max-cudagraph-capture-size 64\n"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (
            "compose.yaml",
            "services:\n  s:\n    image: vllm/vllm-openai\n    command: [m, --max-num-seqs, '512']\n",
        ),
        ("run.py", "from vllm import LLM\nLLM('m', max_num_seqs=512)\n"),
        ("Dockerfile", 'FROM vllm/vllm-openai\nCMD ["--model", "m", "--max-num-seqs", "512"]\n'),
    ],
)
def test_every_format_stops_at_the_advice(path: str, text: str) -> None:
    once = fix_text(text, path, [HALVE_SEQS], context=LOGGED)
    assert once.changed and "256" in once.new_text and "512" not in once.new_text
    twice = fix_text(once.new_text, path, [HALVE_SEQS], context=LOGGED)
    assert twice.status == "unchanged" and "already applied: --max-num-seqs 256" in twice.summary
