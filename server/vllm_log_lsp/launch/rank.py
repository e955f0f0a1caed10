"""Which found invocation is the run in the log: same model first, then port and TP size."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.model import RunContext
from .argv import same_value
from .model import Candidate, Invocation, Ranking

MODEL_EXACT = 10.0
MODEL_NAME = 6.0  # same last path component: `/models/Llama-3-8B` vs `meta-llama/Llama-3-8B`
MODEL_OTHER = -8.0
PORT_SAME, PORT_OTHER = 3.0, -2.0
TP_SAME, TP_OTHER = 2.0, -2.0
SHARED_FLAG, SHARED_FLAG_CAP = 0.5, 3.0
CLEAR_MARGIN = 3.0  # how far ahead the best must be to be preferred

_IDENTITY_FLAGS = ("--model", "--model-tag", "--port", "--tensor-parallel-size")


def rank_invocations(invocations: Sequence[Invocation], context: RunContext | None) -> Ranking:
    """Candidates best first, and whether the best one is clearly the logged run.

    Preferred means: nothing about it contradicts the log, and it is either the only
    candidate or at least `CLEAR_MARGIN` ahead of the next with a positive score.
    """
    scored = []
    for inv in invocations:
        score, reasons, contradicted = _score(inv, context)
        scored.append((Candidate(inv, score, tuple(reasons)), contradicted))
    scored.sort(key=lambda pair: (-pair[0].score, pair[0].invocation.path, pair[0].invocation.index))
    candidates = tuple(c for c, _ in scored)
    preferred = False
    if scored and not scored[0][1]:
        best = candidates[0].score
        alone = len(candidates) == 1
        preferred = alone or (best > 0 and best - candidates[1].score >= CLEAR_MARGIN)
    return Ranking(candidates, preferred)


def _score(inv: Invocation, context: RunContext | None) -> tuple[float, list[str], bool]:
    if context is None:
        return 0.0, [], False
    score = 0.0
    reasons: list[str] = []
    contradicted = False
    logged_model = context.model or context.args.get("--model")
    if logged_model and inv.model:
        if _norm(logged_model) == _norm(inv.model):
            score += MODEL_EXACT
            reasons.append("same model")
        elif _basename(logged_model) == _basename(inv.model):
            score += MODEL_NAME
            reasons.append("same model name")
        else:
            score += MODEL_OTHER
            reasons.append(f"different model ({inv.model})")
            contradicted = True
    port = _int(context.args.get("--port"))
    if port is not None and inv.port is not None:
        same = port == inv.port
        score += PORT_SAME if same else PORT_OTHER
        reasons.append("same port" if same else f"different port ({inv.port})")
        contradicted |= not same
    tp = context.tensor_parallel_size or _int(context.args.get("--tensor-parallel-size"))
    # an invocation without the flag runs TP 1; one with an unresolved `$TP` is unknown
    inv_tp = inv.tensor_parallel_size if "--tensor-parallel-size" in inv.flags else 1
    if tp is not None and inv_tp is not None:
        same = tp == inv_tp
        score += TP_SAME if same else TP_OTHER
        reasons.append("same tensor-parallel size" if same else f"different TP size ({inv_tp})")
        contradicted |= not same
    shared = [
        flag
        for flag, value in context.args.items()
        if flag not in _IDENTITY_FLAGS and same_value(inv.flags.get(flag), value)
    ]
    if shared:
        score += min(SHARED_FLAG * len(shared), SHARED_FLAG_CAP)
        reasons.append(f"{len(shared)} launch flag(s) in common")
    return score, reasons, contradicted


def _norm(model: str) -> str:
    return model.strip().rstrip("/").lower()


def _basename(model: str) -> str:
    return _norm(model).rsplit("/", 1)[-1]


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
