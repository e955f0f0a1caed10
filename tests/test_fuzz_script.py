"""`scripts/fuzz.py`, the long hunt for inconsistent answers, runs and records what fails."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "fuzz.py"


def _module():
    spec = importlib.util.spec_from_file_location("fuzz_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_few_cases_pass(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--cases", "12", "--seed", "5", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "12 cases, 0 failed (seed 5)" in result.stdout
    assert not list(tmp_path.iterdir())


def test_a_failing_case_is_written_with_how_to_repeat_it(tmp_path: Path, monkeypatch) -> None:
    fuzz = _module()
    monkeypatch.setattr(
        fuzz, "check", lambda text, cuts: "grown differs in ['findings']" if len(cuts) > 1 else None
    )
    failed = fuzz.run(seed=2, cases=6, minutes=None, out=tmp_path)
    records = sorted(tmp_path.glob("*.json"))
    assert failed == len(records) > 0
    record = json.loads(records[0].read_text(encoding="utf-8"))
    assert record["seed"] == 2 and record["problem"] == "grown differs in ['findings']"
    assert len(record["cuts"]) > 1 and record["mutations"]
    assert records[0].with_suffix(".log").read_text(encoding="utf-8")
    # The same seed gives the same cases.
    again = tmp_path / "again"
    assert fuzz.run(seed=2, cases=6, minutes=None, out=again) == failed
    assert sorted(p.name for p in again.glob("*.json")) == [p.name for p in records]
