"""Ranking found invocations against the run in the log."""

from __future__ import annotations

from vllm_log_lsp.core.model import RunContext
from vllm_log_lsp.launch import Invocation, SourceRange, rank_invocations


def inv(model: str | None, port: int | None = None, tp: int | None = None, **flags: str) -> Invocation:
    all_flags = {f"--{k.replace('_', '-')}": v for k, v in flags.items()}
    if tp is not None:
        all_flags["--tensor-parallel-size"] = str(tp)
    return Invocation(
        path=f"{model}.sh",
        format="shell",
        index=0,
        range=SourceRange(0, 0, 0, 10),
        entry="vllm serve",
        label="line 1",
        model=model,
        port=port,
        tensor_parallel_size=tp,
        flags=all_flags,
    )


def order(ranking) -> list[str | None]:
    return [c.invocation.model for c in ranking.candidates]


def test_same_model_wins_and_is_preferred() -> None:
    context = RunContext(model="meta-llama/Llama-3.1-8B-Instruct")
    ranking = rank_invocations(
        [inv("Qwen/Qwen3-8B"), inv("meta-llama/Llama-3.1-8B-Instruct"), inv(None)], context
    )
    assert order(ranking)[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert ranking.preferred and "same model" in ranking.candidates[0].reasons


def test_local_path_with_the_same_model_name_matches() -> None:
    context = RunContext(model="/models/Llama-3.1-8B-Instruct")
    ranking = rank_invocations([inv("other/x"), inv("meta-llama/Llama-3.1-8B-Instruct")], context)
    assert order(ranking)[0] == "meta-llama/Llama-3.1-8B-Instruct" and ranking.preferred


def test_port_and_tp_break_ties_between_scripts_for_the_same_model() -> None:
    context = RunContext(model="m", tensor_parallel_size=2, args={"--port": "8001"})
    a = inv("m", port=8000, tp=2)
    b = inv("m", port=8001, tp=2)
    ranking = rank_invocations([a, b], context)
    assert ranking.candidates[0].invocation is b
    assert ranking.preferred  # b is right on everything, a contradicts the port


def test_two_equally_good_candidates_are_not_preferred() -> None:
    ranking = rank_invocations([inv("m"), inv("m")], RunContext(model="m"))
    assert not ranking.preferred


def test_a_lone_candidate_is_preferred_unless_it_contradicts_the_log() -> None:
    assert rank_invocations([inv("m")], None).preferred
    assert rank_invocations([inv("m")], RunContext()).preferred
    assert not rank_invocations([inv("other")], RunContext(model="m")).preferred


def test_an_invocation_without_tp_runs_tp_1() -> None:
    ranking = rank_invocations([inv("m"), inv("m", tp=4)], RunContext(model="m", tensor_parallel_size=4))
    assert ranking.candidates[0].invocation.tensor_parallel_size == 4


def test_shared_launch_flags_count_a_little() -> None:
    context = RunContext(model="m", args={"--max-num-seqs": "64", "--enforce-eager": "true"})
    ranking = rank_invocations([inv("m"), inv("m", max_num_seqs="64", enforce_eager="true")], context)
    assert ranking.candidates[0].invocation.flags.get("--max-num-seqs") == "64"


def test_empty() -> None:
    ranking = rank_invocations([], RunContext(model="m"))
    assert ranking.best is None and not ranking.preferred
