"""Where a root cause's message comes from, as `check` (text and JSON), `explain` and the hover show it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.lsp.render import finding_markdown

# A start-up death on a message no catalog rule knows, but vLLM's LoRA config raises (vLLM 0.4.0
# there: a mined release that does not hold this wording, with its final full stop).
LOG = Path(__file__).parent.parent / "lsp" / "fixtures" / "mined-lora-config.log"
LORA_CONFIG = LOG.read_text(encoding="utf-8")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", *args], capture_output=True, text=True, timeout=60
    )


def write_log(tmp_path: Path, version: str = "0.19.0") -> Path:
    path = tmp_path / "lora-config.log"
    path.write_text(LORA_CONFIG.replace("version 0.4.0", f"version {version}"), encoding="utf-8")
    return path


def test_text_report_names_the_cause_from_where_the_message_is_raised(tmp_path: Path) -> None:
    result = run("check", "--color", "never", str(write_log(tmp_path)))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith(":9: mined-config — vLLM rejected a setting of this launch")
    origin = next(line for line in lines if line.startswith("  origin: "))
    assert (
        origin
        == "  origin: raised by vllm/config/lora.py LoRAConfig._validate_lora_config, in vLLM 0.15.1–0.33.0"
    )
    assert "note:" not in result.stdout


def test_json_report_has_the_origin_and_the_captures(tmp_path: Path) -> None:
    result = run("check", "--format", "json", str(write_log(tmp_path)))
    [incident] = json.loads(result.stdout)["files"][0]["incidents"]
    root = incident["root_cause"]
    assert (root["cause"], root["family"], root["recognized"]) == ("mined-config", "config", True)
    origin = root["origin"]
    assert (origin["package"], origin["kind"]) == ("vllm", "ValueError")
    assert (origin["module"], origin["function"]) == (
        "vllm/config/lora.py",
        "LoRAConfig._validate_lora_config",
    )
    assert origin["template"] == "max_cpu_loras ({max_cpu_loras}) must be >= max_loras ({max_loras})."
    assert origin["version_mismatch"] is None
    assert (incident["evidence"]["max_cpu_loras"], incident["evidence"]["max_loras"]) == ("2", "4")
    assert incident["fixes"][0]["title"] == "Change the setting the message names"


def test_a_version_that_cannot_have_raised_it_is_pointed_out(tmp_path: Path) -> None:
    # vLLM 0.4.0, a mined release, does not hold this wording (it came in 0.15).
    result = run("check", "--color", "never", str(write_log(tmp_path, "0.4.0")))
    assert (
        "  note: vLLM 0.4.0 cannot have raised it: the message is in vLLM 0.15.1–0.33.0 only" in result.stdout
    )


def test_explain_and_rules_know_mined_causes() -> None:
    explained = run("explain", "mined-parallelism")
    assert explained.returncode == 0
    assert explained.stdout.startswith("# Setting up the distributed workers failed (mined-parallelism)")
    assert "Named for messages raised in `vllm/distributed/`" in explained.stdout
    assert "NCCL_DEBUG=INFO" in explained.stdout
    listed = run("rules", "--family", "config")
    assert any(line.startswith("mined-config ") for line in listed.stdout.splitlines())


def test_hover_says_where_the_message_comes_from() -> None:
    [finding] = analyze(LORA_CONFIG).findings
    markdown = finding_markdown(finding)
    assert "The message is raised by `vllm/config/lora.py` `LoRAConfig._validate_lora_config`" in markdown
    assert "**Note**: vLLM 0.4.0 cannot have raised it" in markdown
