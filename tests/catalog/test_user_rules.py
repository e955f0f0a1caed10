"""User rule files: same schema as the built-in ones, tried first, and never able to break or
stall the analysis."""

from __future__ import annotations

import time
from pathlib import Path

from vllm_log_lsp.core import catalog as catalog_mod
from vllm_log_lsp.core.analyze import analyze, classify
from vllm_log_lsp.core.catalog import CatalogError, catalog_with_user_files

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
    assert catalog_mod.HAS_TIMEOUTS, "the `regex` module provides the time limit"
    text = (
        '[[rule]]\nid = "evil"\ntitle = "evil"\nfamily = "config"\n'
        "match = ['(a+)+$']\nevidence = ['(x+x+)+y']\n"
    )
    catalog = catalog_with_user_files([_write(tmp_path, "evil.toml", text)])
    assert not catalog.errors
    error = "RuntimeError: " + "a" * 5_000 + "!"
    log = LOG.format(error=error)
    start = time.perf_counter()
    analysis = analyze(log, catalog)
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"analysis took {elapsed:.1f}s"
    assert analysis.findings and analysis.findings[0].rule_id != "evil"
