"""Fix plans are computed once per (finding, discoveries, open scripts): editors ask on every move."""

from __future__ import annotations

from pathlib import Path

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.launch import DiscoveryOptions, discover
from vllm_log_lsp.launch.plan import OpenScript
from vllm_log_lsp.lsp import launch_index
from vllm_log_lsp.lsp.launch_index import PlanCache, Snapshot, cached_plans, plans_for

LOG = Path(__file__).parent.parent / "fixtures" / "crash" / "007.log"


def test_identical_requests_reuse_the_plans(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "serve.sh").write_text("vllm serve m --max-num-seqs 1024\n")
    [finding] = analyze(LOG.read_text(encoding="utf-8")).findings
    options = DiscoveryOptions()
    discoveries = [discover([str(tmp_path)], options)]
    calls = []
    real = launch_index.plan_fixes
    monkeypatch.setattr(launch_index, "plan_fixes", lambda *a, **k: calls.append(1) or real(*a, **k))
    cache = PlanCache()
    roots = [str(tmp_path)]
    args = ([finding], Snapshot(discoveries, {}, roots, options), 5, cache)
    first = plans_for(*args)
    again = plans_for(*args)
    assert again == first and first[0] and len(calls) == 1
    # An edited open script, or a new discovery, is a different question.
    edited = {
        str(tmp_path / "serve.sh"): OpenScript("file:///serve.sh", 2, "vllm serve m --max-num-seqs 8\n")
    }
    plans_for([finding], Snapshot(discoveries, edited, roots, options), 5, cache)
    plans_for([finding], Snapshot([discover(roots, options)], {}, roots, options), 5, cache)
    assert len(calls) == 3


def test_the_cache_is_bounded() -> None:
    cache = PlanCache(size=2)
    for i in range(3):
        cache.put((i,), [], ())
    assert cache.get((0,)) is None and cache.get((2,)) == []


def test_cached_plans_answer_only_what_was_computed(tmp_path: Path) -> None:
    """A hover takes its plans from the cache on the event loop only when every finding's are
    there for this very snapshot; otherwise it goes to the worker (None here)."""
    (tmp_path / "serve.sh").write_text("vllm serve m --max-num-seqs 1024\n")
    [finding] = analyze(LOG.read_text(encoding="utf-8")).findings
    options = DiscoveryOptions()
    roots = [str(tmp_path)]
    snapshot = Snapshot([discover(roots, options)], {}, roots, options)
    cache = PlanCache()
    assert cached_plans([finding], snapshot, 5, cache) is None
    computed = plans_for([finding], snapshot, 5, cache)
    assert cached_plans([finding], snapshot, 5, cache) == computed and computed[0]
    other = Snapshot([discover(roots, options)], {}, roots, options)  # a newer discovery
    assert cached_plans([finding], other, 5, cache) is None
