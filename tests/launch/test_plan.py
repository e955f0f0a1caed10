"""Which fix plans a finding gets (pure): the matches' fixes with one preferred, else a short list.

On corpus 011 (KV cache too small; `/opt/models/qwen2_5_14b_instruct_awq` on port 8001, three
fixes with operations) and launch scripts written to a temporary folder.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from support import CRASH, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.model import Finding
from vllm_log_lsp.launch import discover
from vllm_log_lsp.launch.plan import MAX_ACTIONS, MAX_PLAUSIBLE, plan_fixes

MODEL = "/opt/models/qwen2_5_14b_instruct_awq"
RUN = f"vllm serve {MODEL} --port 8001 --max-model-len 16384\n"


@cache
def finding() -> Finding:
    return analyze(read_log(CRASH / "011.log")).findings[0]


def plans_for(folder: Path, scripts: dict[str, str]):
    for name, text in scripts.items():
        (folder / name).write_text(text, encoding="utf-8")
    found = discover([str(folder)])
    return plan_fixes(finding(), found.invocations, found.skipped, {})


@pytest.mark.parametrize("matches", [1, 2, 3])
@pytest.mark.parametrize("others", [0, 4])
def test_exactly_one_plan_is_preferred_when_a_script_matches(tmp_path, matches, others) -> None:
    scripts = {f"run{i}.sh": RUN for i in range(matches)}
    scripts |= {f"other{i}.sh": f"vllm serve org/model-{i} --port 8001\n" for i in range(others)}
    plans = plans_for(tmp_path, scripts)
    assert 1 <= len(plans) <= MAX_ACTIONS
    assert all(p.role == "match" and p.result is not None for p in plans)
    assert {Path(p.result.path).name for p in plans} <= set(scripts) - {f"other{i}.sh" for i in range(others)}
    preferred = [p for p in plans if p.preferred]
    assert preferred == [plans[0]] and preferred[0].fix_index == 0
    assert Path(preferred[0].result.path).name == "run0.sh"  # ties: the first by path


def test_when_the_best_match_has_the_first_fix_its_next_fix_is_preferred(tmp_path) -> None:
    plans = plans_for(tmp_path, {"run.sh": RUN.replace("--max-model-len 16384", "--max-model-len 10224")})
    (preferred,) = [p for p in plans if p.preferred]
    assert preferred.fix_index == 1 and preferred.result is not None and preferred.result.changed
    assert plans[0].result is not None and plans[0].result.status == "unchanged"  # said, not preferred


@pytest.mark.parametrize("count", [1, 3, 6])
def test_without_a_match_the_command_comes_first_and_the_list_stays_short(tmp_path, count) -> None:
    plans = plans_for(
        tmp_path, {f"other{i}.sh": f"vllm serve org/model-{i} --port 8001\n" for i in range(count)}
    )
    assert len(plans) <= MAX_ACTIONS and not any(p.preferred for p in plans)
    assert plans[0].role == "command" and plans[0].fix_index == 0 and plans[0].command
    plausible = [p for p in plans if p.role == "plausible"]
    assert len(plausible) == min(count, MAX_PLAUSIBLE)
    assert all(p.fix_index == 0 and p.doubt.startswith("serves another model (org/model-") for p in plausible)


def test_without_any_script_every_fix_is_a_command(tmp_path) -> None:
    plans = plans_for(tmp_path, {})
    assert [p.role for p in plans] == ["command"] * len(plans) and len(plans) == 3
    assert [p.fix_index for p in plans] == [0, 1, 2]
