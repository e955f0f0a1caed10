"""The `vllm-log-lsp` command as users run it: text and JSON reports, exit codes, rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import CRASH, FORMATS, HEALTHY, USER_OOM_RULE

OOM = FORMATS / "tp2-worker-oom.log"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", *args], input=stdin, capture_output=True, timeout=60
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    )


def test_text_report_is_compiler_style() -> None:
    result = run("check", str(OOM))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{OOM}:27: oom-serving — CUDA OOM while serving requests"
    assert lines[1].startswith("  | torch.OutOfMemoryError: CUDA out of memory.")
    assert "phase: serving · vLLM 0.11.0 · model Qwen/Qwen3-8B" in result.stdout
    assert (
        "  fix 1 (config): Leave more headroom outside the KV cache: --gpu-memory-utilization 0.85" in lines
    )
    assert (
        f"  symptom {OOM}:42: vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above)…"
        in lines
    )
    assert "\x1b[" not in result.stdout  # no colour when not on a terminal


def test_colour_can_be_forced() -> None:
    assert "\x1b[" in run("check", "--color", "always", str(OOM)).stdout


def test_json_report_schema() -> None:
    result = run("check", "--format", "json", str(OOM), str(HEALTHY / "001.log"))
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["version"] == 2
    crash, healthy = report["files"]
    health = healthy.pop("health")  # the stats lines' series and findings (see tests/core/test_health.py)
    summary = healthy.pop("summary")  # (see tests/core/test_cli_outputs.py)
    assert healthy == {
        "path": str(HEALTHY / "001.log"),
        "error": None,
        "warnings": [],
        "incidents": [],
        "precursors": [],
        "ended_in_startup": None,  # (it served: see tests/core/test_ended_in_startup.py)
    }
    assert summary["status"] == "no-death" and summary["incidents"] == 0
    assert health["findings"] == [] and [s["samples"] for s in health["series"]] == [2]
    [incident] = crash["incidents"]
    root = incident["root_cause"]
    assert (root["line"], root["cause"], root["family"]) == (27, "oom-serving", "memory")
    assert root["text"].startswith("torch.OutOfMemoryError")
    assert root["title"] == "CUDA OOM while serving requests"
    assert {s["line"] for s in incident["symptoms"]} >= {28, 34, 42}
    assert incident["phase"] == "serving"
    assert incident["evidence"]["tried"] == "2.00 GiB"
    assert incident["fixes"][0]["ops"][0] == {
        "op": "set_flag",
        "name": "--gpu-memory-utilization",
        "key": None,
        "value": "0.85",
        "source": "a step below vLLM's default 0.9",
    }


def test_exit_codes(tmp_path: Path) -> None:
    assert run("check", str(HEALTHY / "001.log")).returncode == 0
    missing = tmp_path / "missing.log"
    result = run("check", str(missing), str(OOM))
    assert result.returncode == 2
    assert f"cannot read {missing}" in result.stderr
    assert "oom-serving" in result.stdout  # the readable file is still checked


def test_stdin_and_binary_input() -> None:
    result = run("check", "-", stdin=OOM.read_bytes())
    assert result.returncode == 1 and result.stdout.startswith("<stdin>:27:")
    binary = run("check", "-", stdin=bytes(range(256)) * 10)
    assert binary.returncode == 2 and binary.stdout == ""
    assert "cannot read <stdin>: binary data, not a text log" in binary.stderr
    # A log rotated with copytruncate starts with NUL bytes: a warning, and the log is read.
    truncated = run("check", "-", stdin=bytes(4096) + OOM.read_bytes())
    assert truncated.returncode == 1
    assert "warning: the file contains NUL bytes: it may be binary, not a log" in truncated.stdout
    mangled = OOM.read_bytes().replace(b"CUDA out of memory. Tried", b"CUDA \xff\xfe of memory. Tried", 1)
    result = run("check", "-", stdin=mangled)
    assert result.returncode == 1
    assert "warning: invalid UTF-8 (first seen on line 27)" in result.stdout
    assert "<stdin>:27: " in result.stdout  # nothing lost: the root cause is still found
    gz = run("check", "-", stdin=b"\x1f\x8b\x08\x00" + bytes(100))
    assert gz.returncode == 2 and "cannot read <stdin>: not valid gzip data" in gz.stderr


def test_every_corpus_log_reports_a_death() -> None:
    logs = sorted(str(p) for p in CRASH.glob("*.log"))
    result = run("check", "--format", "json", *logs)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert all(entry["incidents"] for entry in report["files"])
    for entry in report["files"]:
        data = Path(entry["path"]).read_bytes()
        if b"\0" not in data and data.decode("utf-8", "replace").count("\ufffd") == data.count(
            b"\xef\xbf\xbd"
        ):
            assert entry["warnings"] == [], entry["path"]  # valid UTF-8 text: nothing to warn about


def test_rules_and_explain() -> None:
    listing = run("rules")
    assert listing.returncode == 0
    assert any(line.startswith("kv-cache-too-small ") for line in listing.stdout.splitlines())
    explained = run("explain", "kv-cache-too-small")
    assert explained.returncode == 0
    assert explained.stdout.startswith(
        "# KV cache too small for the maximum model length (kv-cache-too-small)"
    )
    assert "--max-model-len <fit_len from the log>" in explained.stdout
    unknown = run("explain", "no-such-rule")
    assert unknown.returncode == 2 and "no rule 'no-such-rule'" in unknown.stderr


def test_user_rule_file(tmp_path: Path) -> None:
    rules = tmp_path / "mine.toml"
    rules.write_text(USER_OOM_RULE, encoding="utf-8")
    result = run("--rules", str(rules), "check", str(OOM))
    assert ": my-oom — Our cluster OOM" in result.stdout
    broken = tmp_path / "broken.toml"
    broken.write_text(
        '[[rule]]\nid = "x"\ntitle = "t"\nfamily = "memory"\nmatch = ["(unclosed"]\n', encoding="utf-8"
    )
    result = run("--rules", str(broken), "check", str(OOM))
    assert f"rule error: {broken}:2:" in result.stderr
    # Not a diagnosis without the user's rules: an input error, and no report.
    assert result.returncode == 2 and result.stdout == ""


def test_large_files_are_mapped_not_read(tmp_path: Path) -> None:
    """Files over 1 MB are memory-mapped; the report is the one standard input gives."""
    filler = "(APIServer pid=100) INFO 10-03 21:22:40 [loggers.py:123] Engine 000: Avg prompt throughput: 512.3 tokens/s\n"
    lines = OOM.read_text(encoding="utf-8").split("\n")
    for ending in ("\n", "\r\n"):
        text = ending.join(lines[:14] + [filler.rstrip("\n")] * 15000 + lines[14:])
        big = tmp_path / f"big{len(ending)}.log"
        big.write_bytes(text.encode("utf-8"))
        assert big.stat().st_size > 1 << 20
        from_file = run("check", str(big))
        from_stdin = run("check", "-", stdin=big.read_bytes())
        assert from_file.returncode == from_stdin.returncode == 1
        assert from_file.stdout.replace(str(big), "<stdin>") == from_stdin.stdout
        assert f"{big}:{27 + 15000}: oom-serving" in from_file.stdout
