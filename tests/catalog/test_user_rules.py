"""User rule files: same schema as the built-in ones, tried first, and never able to break or
stall the analysis."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support import within
from vllm_log_lsp.core import catalog as catalog_mod
from vllm_log_lsp.core.analyze import analyze, classify
from vllm_log_lsp.core.catalog import CatalogError, builtin_catalog, catalog_with_user_files

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 594.00 MiB. GPU 0 has a total "
    "capacity of 79.33 GiB of which 508.44 MiB is free."
)
USER_RULE = """
[[rule]]
id = "our-cluster-oom"
title = "OOM on our shared cluster"
family = "memory"
match = ['CUDA out of memory\\. Tried to allocate (?P<tried>[\\d.]+ [KMGT]iB)']
message = "Cluster OOM: tried {tried}"
summary = "Our A100s are shared; ask for a dedicated node."
explanation = "See the team wiki."
samples = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB."]

[[rule.fix]]
title = "Use the dedicated queue"
kind = "config"
ops = [{ op = "set_env", name = "CLUSTER_QUEUE", value = "dedicated" }]
"""
LOG = """INFO 03-03 19:38:00 [core.py:100] Initializing a V1 LLM engine (v0.11.0) with config: model='m'
ERROR 03-03 19:38:29 [core.py:708] EngineCore failed to start.
ERROR 03-03 19:38:29 [core.py:708] Traceback (most recent call last):
ERROR 03-03 19:38:29 [core.py:708]   File "/x/vllm/v1/engine/core.py", line 699, in run_engine_core
ERROR 03-03 19:38:29 [core.py:708]     engine_core = EngineCoreProc(*args, **kwargs)
ERROR 03-03 19:38:29 [core.py:708] {error}
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{'EngineCore_DP0': 1}}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_user_rule_loads_and_wins_over_builtin(tmp_path: Path) -> None:
    catalog = catalog_with_user_files([_write(tmp_path, "ours.toml", USER_RULE)])
    assert not catalog.errors
    assert catalog.rules[0].id == "our-cluster-oom"
    assert len(catalog.rules) > 50  # built-in rules still there, after the user's
    rule, captures = classify(catalog, OOM, [], [], [], "serving")
    assert rule is not None and rule.id == "our-cluster-oom"
    assert captures["tried"] == "594.00 MiB"
    analysis = analyze(LOG.format(error=OOM), catalog)
    assert [f.rule_id for f in analysis.findings] == ["our-cluster-oom"]
    assert analysis.findings[0].message == "Cluster OOM: tried 594.00 MiB"
    assert [f.fix.title for f in analysis.findings[0].fixes] == ["Use the dedicated queue"]


def test_without_user_rules_builtin_classifies() -> None:
    analysis = analyze(LOG.format(error=OOM))
    assert analysis.findings[0].family == "memory"
    assert analysis.findings[0].rule_id != "our-cluster-oom"


def test_malformed_user_file_is_reported_with_its_line(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.toml", '[[rule]]\nid = "x"\ntitle = "unterminated\n')
    good = _write(tmp_path, "good.toml", USER_RULE)
    catalog = catalog_with_user_files([broken, good])
    assert len(catalog.errors) == 1
    error = catalog.errors[0]
    assert isinstance(error, CatalogError)
    assert error.path == str(broken) and error.line == 3
    assert str(error).startswith(f"{broken}:3:")
    assert catalog.rules[0].id == "our-cluster-oom"  # the other user file still loads
    assert catalog.rule("oom-serving") is not None  # and the built-in rules


def test_uncompilable_regex_is_reported_and_the_rest_of_the_file_loads(tmp_path: Path) -> None:
    text = (
        '[[rule]]\nid = "first-ok"\ntitle = "ok"\nfamily = "config"\nmatch = ["fine"]\n\n'
        '[[rule]]\nid = "bad-regex"\ntitle = "bad"\nfamily = "config"\nmatch = ["(unclosed"]\n\n'
        '[[rule]]\nid = "last-ok"\ntitle = "ok"\nfamily = "config"\nmatch = ["also fine"]\n'
    )
    path = _write(tmp_path, "mixed.toml", text)
    catalog = catalog_with_user_files([path])
    assert [e.line for e in catalog.errors] == [8]
    assert catalog.errors[0].path == str(path)
    assert "does not compile" in catalog.errors[0].message
    assert [r.id for r in catalog.rules[:2]] == ["first-ok", "last-ok"]


def test_unknown_family_or_phase_is_reported(tmp_path: Path) -> None:
    text = (
        '[[rule]]\nid = "fam"\ntitle = "t"\nfamily = "nonsense"\nmatch = ["x"]\n\n'
        '[[rule]]\nid = "ph"\ntitle = "t"\nfamily = "config"\nmatch = ["x"]\nphases = ["nope"]\n'
    )
    catalog = catalog_with_user_files([_write(tmp_path, "f.toml", text)])
    assert sorted(e.line for e in catalog.errors) == [2, 8]


def test_unreadable_user_file_is_reported(tmp_path: Path) -> None:
    catalog = catalog_with_user_files([tmp_path / "missing.toml"])
    assert catalog.errors and catalog.errors[0].path.endswith("missing.toml")
    assert catalog.rule("oom-serving") is not None


def test_catastrophic_user_regex_cannot_stall_analysis(tmp_path: Path) -> None:
    assert catalog_mod.user_engine()[1], "the `regex` module provides the time limit"
    text = (
        '[[rule]]\nid = "evil"\ntitle = "evil"\nfamily = "config"\n'
        "match = ['(a+)+$']\nevidence = ['(x+x+)+y']\n"
    )
    catalog = catalog_with_user_files([_write(tmp_path, "evil.toml", text)])
    assert not catalog.errors
    error = "RuntimeError: " + "a" * 5_000 + "!"
    log = LOG.format(error=error)
    # `(a+)+$` on 5,000 a's backtracks ~2**5000 steps: without the time limit no machine would
    # ever finish, so the analysis returns only because the searches were given up. That count is
    # the assertion (no wall-clock bound); `within` only turns a hang into a failure.
    analysis = within(120, analyze, log, catalog)
    evil = catalog.rule("evil")
    assert evil is not None and evil.match[0].abandoned >= 1
    assert analysis.findings and analysis.findings[0].rule_id != "evil"


# -- files, keys, samples, broad rules, patterns without time limits (issue 11.2, 12.11-12.12) ------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "rules.toml")  # opening it for reading would wait for a writer forever
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    paths = [tmp_path / "rules.toml", tmp_path / "zero.toml", Path("/dev/stdin"), tmp_path]
    catalog = within(20, catalog_with_user_files, paths)
    assert len(catalog.errors) == 4
    assert all("cannot read rule file" in str(e) for e in catalog.errors)
    assert catalog.rule("oom-serving") is not None


def test_a_rule_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    big = USER_RULE + "#" * (catalog_mod.MAX_RULE_FILE_BYTES + 1)
    catalog = catalog_with_user_files([_write(tmp_path, "big.toml", big)])
    [error] = catalog.errors
    assert "cannot read rule file" in str(error) and catalog.rules[0].id != "our-cluster-oom"


def test_unknown_keys_are_rejected_with_their_line(tmp_path: Path) -> None:
    text = (
        '[[rule]]\nid = "typo"\ntitle = "t"\nfamily = "memory"\n'  # lines 1-4
        "match = ['CUDA out of memory']\n"  # 5
        "sampels = ['x']\n"  # 6: misspelt
        '[[rule.fixes]]\ntitle = "f"\n'  # 7: fixes for fix
        '[[rule]]\nid = "fine"\ntitle = "t"\nfamily = "memory"\nmatch = ["NPU out of memory"]\n'  # 9-13
        '[[rule.fix]]\ntitle = "f"\nkind = "config"\n'  # 14-16
        'ops = [{ op = "set_env", name = "X", valeu = "1" }]\n'  # 17: op key misspelt
        '[[rule]]\nid = "ok"\ntitle = "t"\nfamily = "memory"\nmatch = ["HBM out of memory"]\n'
        "colour = 1\n"  # 23, after the rule: still inside its table
    )
    catalog = catalog_with_user_files([_write(tmp_path, "keys.toml", text)])
    found = sorted((e.line, e.message.split(" in ")[0]) for e in catalog.errors)
    assert found == [
        (6, "unknown key 'sampels'"),
        (7, "unknown key 'fixes'"),
        (17, "unknown key 'valeu'"),
        (23, "unknown key 'colour'"),
    ], found
    assert all(str(e).startswith(str(tmp_path / "keys.toml")) for e in catalog.errors)
    assert not [r for r in catalog.rules if r.id in ("typo", "fine", "ok")]  # each rejected


def test_a_rule_whose_samples_its_patterns_miss_is_rejected(tmp_path: Path) -> None:
    text = USER_RULE.replace("Tried to allocate 1.00 GiB.", "Tried to alloc 1.00 GiB.")
    catalog = catalog_with_user_files([_write(tmp_path, "ours.toml", text)])
    [error] = catalog.errors
    assert error.line == 3 and "sample 1 does not match" in error.message
    assert catalog.rules[0].id != "our-cluster-oom"


def test_a_broad_user_rule_is_warned_about(tmp_path: Path) -> None:
    broad = '[[rule]]\nid = "any-error"\ntitle = "Some error"\nfamily = "runtime_faults"\nmatch = ["Error"]\n'
    catalog = catalog_with_user_files([_write(tmp_path, "broad.toml", broad)])
    assert not catalog.errors
    [warning] = catalog.warnings
    assert warning.line == 2 and "'any-error' also matches the samples of" in warning.message
    assert "oom-serving" in warning.message or "more" in warning.message
    assert catalog.rules[0].id == "any-error"  # a warning, not an error: the user may mean it


def test_a_narrow_rule_or_a_rule_replacing_its_namesake_is_not_warned_about(tmp_path: Path) -> None:
    narrow = (
        '[[rule]]\nid = "quota"\ntitle = "Cluster quota"\nfamily = "process"\n'
        "match = ['QuotaExceeded: namespace \\S{1,64} is over its GPU quota']\n"
        'samples = ["QuotaExceeded: namespace ml-team is over its GPU quota"]\n'
    )
    ours = catalog_with_user_files([_write(tmp_path, "ours.toml", narrow)])
    assert not ours.errors and not ours.warnings
    assert ours.rules[0].id == "quota"
    # The same patterns under a built-in id replace that cause: its own samples are not "taken".
    builtin = builtin_catalog().rule("oom-serving")
    assert builtin is not None and builtin.samples
    sources = ", ".join(repr(p.source) for p in builtin.match)
    text = f'[[rule]]\nid = "oom-serving"\ntitle = "Ours"\nfamily = "memory"\nmatch = [{sources}]\n'
    replaced = catalog_with_user_files([_write(tmp_path, "same.toml", text)])
    assert all(
        "oom-serving," not in w.message and "(oom-serving)" not in w.message for w in replaced.warnings
    )


@pytest.fixture
def without_regex(monkeypatch):
    """The engine the VS Code bundle has: stdlib `re`, no time limits."""
    monkeypatch.setattr(catalog_mod, "_USER_ENGINE", (re, False))


@pytest.mark.parametrize(
    "pattern",
    [
        "(a+)+$",  # exponential
        "(\\w+\\s?)*$",  # exponential
        "(?P<path>\\S+) does not appear",  # quadratic: every start scans to the end
    ],
)
def test_without_time_limits_a_super_linear_user_pattern_is_refused(tmp_path, without_regex, pattern):
    text = f'[[rule]]\nid = "slow"\ntitle = "slow"\nfamily = "config"\nmatch = [\'{pattern}\']\n'
    catalog = within(60, catalog_with_user_files, [_write(tmp_path, "slow.toml", text)])
    [error] = catalog.errors
    assert "refused without `regex`" in error.message and error.line == 2
    assert catalog.rule("slow") is None


def test_without_time_limits_a_linear_user_pattern_loads_and_reads_a_bounded_prefix(tmp_path, without_regex):
    """A pattern that passes the check (mildly super-linear ones like `foo.*bar.*baz` can, under the
    budget at 4 kB) reads only the first USER_TEXT_LIMIT characters: its cost per line is bounded."""
    catalog = catalog_with_user_files([_write(tmp_path, "ours.toml", USER_RULE)])
    assert not catalog.errors
    rule = catalog.rules[0]
    assert rule.id == "our-cluster-oom" and rule.match[0].limit == catalog_mod.USER_TEXT_LIMIT
    rule_found, _ = classify(catalog, OOM, [], [], [], "serving")
    assert rule_found is not None and rule_found.id == "our-cluster-oom"
