"""Which found invocation is the run in the log, and why (pure).

Every invocation is compared with what the log says about its run, fact by fact: the model (its
path or name, or the served model name when the script's model cannot be read), the port, the
tensor-parallel size, the vLLM version of a pinned image, and the other launch flags the log
printed (`non-default args: {...}` or `args: Namespace(...)`). Each fact that both sides know
either agrees or disagrees, and says so in words.

An invocation *matches* when the log's model is the one it serves and nothing it sets
contradicts the log (another port, TP size or vLLM version). Only a match can be edited without
asking ("Auto Fix"); the others are *plausible* at best, and `doubts` says why ("serves another
model (Qwen/Qwen3-8B)", "its model could not be read").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.model import RunContext
from ..core.versions import parse_version
from .argv import same_value
from .model import Candidate, Invocation, Ranking

MODEL_EXACT = 10.0
MODEL_NAME = 6.0  # same last path component: `/models/Llama-3-8B` vs `meta-llama/Llama-3-8B`
SERVED_NAME = 6.0  # the script's model is unknown, but it serves under the log's name
MODEL_OTHER = -8.0
PORT_SAME, PORT_OTHER = 3.0, -3.0
TP_SAME, TP_OTHER = 2.0, -3.0
VERSION_SAME, VERSION_OTHER = 2.0, -3.0
SHARED_FLAG, SHARED_FLAG_CAP = 0.5, 3.0
DIFFERENT_FLAG, DIFFERENT_FLAG_CAP = -0.5, -2.0

#: Flags compared as facts of their own, not counted among the shared launch flags.
IDENTITY_FLAGS = frozenset(
    {"--model", "--model-tag", "--served-model-name", "--port", "--tensor-parallel-size"}
)
#: How many differing flags a reason names before it says "…".
NAMED_FLAGS = 3


def rank_invocations(invocations: Sequence[Invocation], context: RunContext | None) -> Ranking:
    """Candidates best first: the matches (by score), then the rest (by score).

    Ties keep a stable order (path, then position in the file), so the same workspace always
    gives the same first candidate.
    """
    candidates = [score_invocation(inv, context or RunContext()) for inv in invocations]
    candidates.sort(key=lambda c: (not c.matches, -c.score, c.invocation.path, c.invocation.index))
    return Ranking(tuple(candidates))


def score_invocation(invocation: Invocation, context: RunContext) -> Candidate:
    """One invocation against the log's run: its score, what agrees, and what does not."""
    tally = _Tally()
    identified = _compare_model(invocation, context, tally)
    _compare_port(invocation, context, tally)
    _compare_tensor_parallel(invocation, context, tally)
    _compare_version(invocation, context, tally)
    _compare_flags(invocation, context, tally)
    return Candidate(
        invocation,
        score=tally.score,
        reasons=tuple(tally.agrees),
        matches=identified and not tally.contradicted,
        doubts=tuple(tally.doubts),
        differences=tuple(tally.differences),
    )


@dataclass
class _Tally:
    score: float = 0.0
    agrees: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    contradicted: bool = False

    def agree(self, weight: float, reason: str) -> None:
        self.score += weight
        self.agrees.append(reason)

    def contradict(self, weight: float, reason: str) -> None:
        self.score += weight
        self.doubts.append(reason)
        self.contradicted = True

    def doubt(self, reason: str, weight: float = 0.0) -> None:
        self.score += weight
        self.doubts.append(reason)


def _compare_model(inv: Invocation, context: RunContext, tally: _Tally) -> bool:
    """Whether the log's model is the invocation's (by path, name, or served name)."""
    logged = context.model or context.args.get("--model") or context.args.get("--model-tag")
    logged_names = served_names(context.args.get("--served-model-name"))
    script_names = served_names(inv.flags.get("--served-model-name"))
    same_served = bool(logged_names & script_names)
    if logged and inv.model:
        if _norm(logged) == _norm(inv.model):
            tally.agree(MODEL_EXACT, "serves the log's model")
        elif _basename(logged) == _basename(inv.model):
            tally.agree(MODEL_NAME, f"serves a model of the same name ({inv.model})")
        else:
            tally.contradict(MODEL_OTHER, f"serves another model ({inv.model})")
            return False
        if logged_names and script_names and not same_served:
            tally.contradict(MODEL_OTHER / 2, f"serves it as {_names(script_names)}")
        return True
    if same_served:
        tally.agree(SERVED_NAME, f"serves it under the log's name ({_names(logged_names & script_names)})")
        return True
    if not logged:
        tally.doubt("the log does not name its model")
    else:
        tally.doubt("its model could not be read (set by a variable?)")
    return False


def _compare_port(inv: Invocation, context: RunContext, tally: _Tally) -> None:
    port = _int(context.args.get("--port"))
    if port is None or inv.port is None:
        return
    if port == inv.port:
        tally.agree(PORT_SAME, f"port {port}")
    else:
        tally.contradict(PORT_OTHER, f"listens on port {inv.port}, the log's run on {port}")


def _compare_tensor_parallel(inv: Invocation, context: RunContext, tally: _Tally) -> None:
    logged = context.tensor_parallel_size or _int(context.args.get("--tensor-parallel-size"))
    # an invocation without the flag runs TP 1; one with an unresolved `$TP` is unknown
    script = inv.tensor_parallel_size if "--tensor-parallel-size" in inv.flags else 1
    if logged is None or script is None:
        return
    if logged == script:
        tally.agree(TP_SAME, f"tensor-parallel size {logged}")
    else:
        tally.contradict(TP_OTHER, f"tensor-parallel size {script}, the log's run {logged}")


def _compare_version(inv: Invocation, context: RunContext, tally: _Tally) -> None:
    script, logged = parse_version(inv.vllm_version), parse_version(context.vllm_version)
    if script is None or logged is None:
        return
    if script == logged:
        tally.agree(VERSION_SAME, f"vLLM {inv.vllm_version}")
    else:
        tally.contradict(
            VERSION_OTHER, f"its image is vLLM {inv.vllm_version}, the log ran {context.vllm_version}"
        )


def _compare_flags(inv: Invocation, context: RunContext, tally: _Tally) -> None:
    """Flags both set: the same value counts a little for, another value a little against."""
    both = [flag for flag in context.args if flag not in IDENTITY_FLAGS and flag in inv.flags]
    shared = [flag for flag in both if same_value(inv.flags[flag], context.args[flag])]
    different = [flag for flag in both if flag not in shared]
    if shared:
        tally.agree(
            min(SHARED_FLAG * len(shared), SHARED_FLAG_CAP),
            _count(len(shared), "launch flag") + " as in the log",
        )
    if different:
        named = ", ".join(different[:NAMED_FLAGS]) + (" …" if len(different) > NAMED_FLAGS else "")
        tally.score += max(DIFFERENT_FLAG * len(different), DIFFERENT_FLAG_CAP)
        tally.differences.append(f"sets {named} otherwise")


def served_names(value: str | None) -> frozenset[str]:
    """The names in a `--served-model-name` value: one name, several, or a JSON/Python list."""
    if not value:
        return frozenset()
    text = value.strip()
    if text.startswith("["):
        try:
            items = json.loads(text.replace("'", '"'))
        except ValueError:
            items = text.strip("[]").split(",")
        names = [str(item) for item in items] if isinstance(items, list) else [text]
    else:
        names = text.split()
    return frozenset(n.strip().strip("'\"").lower() for n in names if n.strip().strip("'\""))


def _names(names: frozenset[str]) -> str:
    return ", ".join(sorted(names))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _norm(model: str) -> str:
    return model.strip().rstrip("/").lower()


def _basename(model: str) -> str:
    return _norm(model).rsplit("/", 1)[-1]


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
