"""Ranking found invocations against the run in the log: each fact agrees, disagrees, or is unknown."""

from __future__ import annotations

import itertools

import pytest

from vllm_log_lsp.core.model import RunContext
from vllm_log_lsp.launch import Invocation, SourceRange, rank_invocations
from vllm_log_lsp.launch.rank import score_invocation, served_names

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def inv(
    model: str | None,
    port: int | None = None,
    tp: int | None = None,
    version: str | None = None,
    path: str | None = None,
    **flags: str,
) -> Invocation:
    all_flags = {f"--{k.replace('_', '-')}": v for k, v in flags.items()}
    if tp is not None:
        all_flags["--tensor-parallel-size"] = str(tp)
    if port is not None:
        all_flags["--port"] = str(port)
    return Invocation(
        path=path or f"{model}.sh",
        format="shell",
        index=0,
        range=SourceRange(0, 0, 0, 10),
        entry="vllm serve",
        label="line 1",
        model=model,
        port=port,
        tensor_parallel_size=tp,
        flags=all_flags,
        vllm_version=version,
    )


def order(ranking) -> list[str | None]:
    return [c.invocation.model for c in ranking.candidates]


# -- the model ---------------------------------------------------------------------------------
def test_the_script_serving_the_logs_model_matches_and_comes_first() -> None:
    context = RunContext(model=LLAMA)
    ranking = rank_invocations([inv("Qwen/Qwen3-8B"), inv(LLAMA), inv(None)], context)
    assert order(ranking)[0] == LLAMA
    assert ranking.preferred and [c.invocation.model for c in ranking.matches] == [LLAMA]
    assert ranking.candidates[0].reasons[0] == "serves the log's model"


@pytest.mark.parametrize(
    "logged, script",
    [
        ("/models/Llama-3.1-8B-Instruct", LLAMA),  # a local copy of the hub model
        (LLAMA, "/mnt/weights/Llama-3.1-8B-Instruct/"),  # trailing slash
        ("META-LLAMA/llama-3.1-8b-instruct", LLAMA),  # case
    ],
)
def test_the_same_model_by_path_or_name_matches(logged: str, script: str) -> None:
    candidate = score_invocation(inv(script), RunContext(model=logged))
    assert candidate.matches, candidate


def test_another_model_is_never_a_match_whatever_else_agrees() -> None:
    context = RunContext(
        model=LLAMA,
        vllm_version="0.15.1",
        tensor_parallel_size=2,
        args={"--port": "8000", "--max-num-seqs": "8"},
    )
    other = inv("Qwen/Qwen3-8B", port=8000, tp=2, version="v0.15.1", max_num_seqs="8")
    candidate = score_invocation(other, context)
    assert not candidate.matches
    assert candidate.why_not_a_match == "serves another model (Qwen/Qwen3-8B)"
    assert "port 8000" in candidate.reasons  # the agreements are still told


def test_an_unreadable_model_is_plausible_unless_the_served_name_ties_it() -> None:
    context = RunContext(model=LLAMA, args={"--served-model-name": '["chat"]'})
    unknown = score_invocation(inv(None), context)
    assert not unknown.matches and "could not be read" in unknown.why_not_a_match
    named = score_invocation(inv(None, served_model_name="chat"), context)
    assert named.matches and named.reasons == ("serves it under the log's name (chat)",)


def test_same_model_under_another_served_name_is_another_deployment() -> None:
    context = RunContext(model=LLAMA, args={"--served-model-name": "['chat']"})
    candidate = score_invocation(inv(LLAMA, served_model_name="batch"), context)
    assert not candidate.matches and candidate.doubts == ("serves it as batch",)


def test_a_log_without_a_model_matches_nothing() -> None:
    for context in (None, RunContext(), RunContext(args={"--port": "8000"})):
        ranking = rank_invocations([inv(LLAMA, port=8000)], context)
        assert not ranking.preferred and not ranking.matches
        assert ranking.candidates[0].why_not_a_match == "the log does not name its model"


@pytest.mark.parametrize(
    "value, names",
    [
        ('["a", "b"]', {"a", "b"}),  # non-default args (JSON)
        ("['a']", {"a"}),  # Namespace(...) (Python repr)
        ("a b", {"a", "b"}),  # nargs="+" on a command line
        ("Chat", {"chat"}),
        ("", set()),
        (None, set()),
    ],
)
def test_served_names(value: str | None, names: set[str]) -> None:
    assert served_names(value) == names


# -- port, TP size, vLLM version: each contradiction breaks a match ---------------------------
@pytest.mark.parametrize(
    "script, context, doubt",
    [
        (
            inv(LLAMA, port=9000),
            RunContext(model=LLAMA, args={"--port": "8000"}),
            "listens on port 9000, the log's run on 8000",
        ),
        (
            inv(LLAMA, tp=4),
            RunContext(model=LLAMA, tensor_parallel_size=2),
            "tensor-parallel size 4, the log's run 2",
        ),
        (
            inv(LLAMA),
            RunContext(model=LLAMA, tensor_parallel_size=2),
            "tensor-parallel size 1, the log's run 2",
        ),
        (
            inv(LLAMA, version="0.9.1"),
            RunContext(model=LLAMA, vllm_version="0.15.1"),
            "its image is vLLM 0.9.1, the log ran 0.15.1",
        ),
    ],
)
def test_a_contradiction_makes_the_same_model_only_plausible(script, context, doubt) -> None:
    candidate = score_invocation(script, context)
    assert not candidate.matches and candidate.doubts == (doubt,)


def test_agreeing_facts_are_told_and_keep_the_match() -> None:
    context = RunContext(
        model=LLAMA, vllm_version="0.15.1.dev3+gabc", tensor_parallel_size=2, args={"--port": "8001"}
    )
    candidate = score_invocation(inv(LLAMA, port=8001, tp=2, version="v0.15.1"), context)
    assert candidate.matches and not candidate.doubts
    assert candidate.reasons == (
        "serves the log's model",
        "port 8001",
        "tensor-parallel size 2",
        "vLLM v0.15.1",
    )


def test_unknown_facts_neither_help_nor_hurt() -> None:
    """No port in the log, a `$TP` the script does not resolve, an image without a version."""
    context = RunContext(model=LLAMA, tensor_parallel_size=2, vllm_version="0.15.1")
    script = inv(LLAMA, port=8000, version=None)
    script = Invocation(**{**script.__dict__, "flags": {**script.flags, "--tensor-parallel-size": "$TP"}})
    candidate = score_invocation(script, context)
    assert candidate.matches and candidate.reasons == ("serves the log's model",)


# -- the other flags ----------------------------------------------------------------------------
def test_shared_flags_break_ties_and_differing_ones_do_not_break_a_match() -> None:
    context = RunContext(
        model="m", args={"--max-num-seqs": "64", "--enforce-eager": "true", "--max-model-len": "4096"}
    )
    alike = inv("m", path="a.sh", max_num_seqs="64", enforce_eager="true")
    tuned = inv("m", path="b.sh", max_model_len="8192")
    ranking = rank_invocations([tuned, alike, inv("m", path="c.sh")], context)
    assert [c.invocation.path for c in ranking.candidates] == ["a.sh", "c.sh", "b.sh"]
    assert "2 launch flags as in the log" in ranking.candidates[0].reasons
    tuned_candidate = ranking.candidates[2]
    assert tuned_candidate.matches and tuned_candidate.differences == ("sets --max-model-len otherwise",)
    assert not tuned_candidate.doubts


def test_only_the_contradictions_say_why_a_script_is_not_the_run() -> None:
    context = RunContext(model=LLAMA, args={"--max-model-len": "4096"})
    candidate = score_invocation(inv("Qwen/Qwen3-8B", max_model_len="8192"), context)
    assert candidate.why_not_a_match == "serves another model (Qwen/Qwen3-8B)"
    assert candidate.differences == ("sets --max-model-len otherwise",)
    # a doubt (an unknown model) is said before any differing flag
    assert score_invocation(
        inv(None, max_model_len="8192"), RunContext(args={"--max-model-len": "4096"})
    ).why_not_a_match == ("the log does not name its model")


# -- order ---------------------------------------------------------------------------------------
def test_matches_come_before_better_scored_plausible_scripts() -> None:
    """A script whose model cannot be read may agree on more facts; it still follows the match."""
    context = RunContext(
        model="m", tensor_parallel_size=2, args={"--port": "8000", "--max-num-seqs": "4", "--dtype": "half"}
    )
    unknown = inv(None, path="a.sh", port=8000, tp=2, max_num_seqs="4", dtype="half")
    other_port = inv("m", path="b.sh", port=9000, tp=2)
    match = inv("m", path="c.sh", tp=2)
    ranking = rank_invocations([unknown, other_port, match], context)
    assert ranking.best is match and ranking.matches == ranking.candidates[:1]
    assert [c.invocation.path for c in ranking.plausible(5)] == ["b.sh", "a.sh"]  # same model first
    assert [c.invocation.path for c in ranking.plausible(1)] == ["b.sh"]


def test_order_does_not_depend_on_discovery_order() -> None:
    context = RunContext(model="m", args={"--port": "8000"})
    scripts = [
        inv("m", path="x.sh"),
        inv("m", path="y.sh", port=8000),
        inv("n", path="z.sh"),
        inv(None, path="w.sh"),
    ]
    orders = {
        tuple(c.invocation.path for c in rank_invocations(list(p), context).candidates)
        for p in itertools.permutations(scripts)
    }
    assert orders == {("y.sh", "x.sh", "w.sh", "z.sh")}


def test_empty() -> None:
    ranking = rank_invocations([], RunContext(model="m"))
    assert ranking.best is None and not ranking.preferred and ranking.plausible(3) == ()
