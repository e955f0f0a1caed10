"""Broken files get no edit and no exception: a result that says why."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.model import FixOp, ValueSpec
from vllm_log_lsp.launch import discover, fix_file, fix_text

EAGER = FixOp("add_flag", "--enforce-eager")
SEQS = FixOp("set_flag", "--max-num-seqs", ValueSpec(literal="128"))


@pytest.mark.parametrize(
    ("path", "text", "reason"),
    [
        ("run.sh", "echo 'unterminated\nvllm serve m --port 1\n", "skipped run.sh:"),
        ("run.sh", "if true; then\nvllm serve m\n", "skipped run.sh:"),
        ("run.sh", "vllm serve m --chat-template 'unterminated --port 1\n", "skipped run.sh:"),
        (
            "deploy.yaml",
            "services:\n  s:\n    image: vllm/vllm-openai\n    command: [m\n    x: 1\n",
            "skipped deploy.yaml: invalid YAML at line",
        ),
        (
            "chart.yaml",
            "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - image: vllm/vllm-openai\n"
            "      args:\n        {{- range .Values.args }}\n        - {{ . }}\n        {{- end }}\n",
            "skipped chart.yaml: invalid YAML",
        ),
        ("run.py", "from vllm import LLM\nLLM(model='m'\n", "skipped run.py: Python syntax error at line"),
        (
            "Dockerfile",
            'FROM vllm/vllm-openai\nCMD ["--model", "m",]\n',
            "skipped Dockerfile: CMD at line 2 is not a valid JSON array",
        ),
        ("Makefile", "nothing to see here\n", "skipped Makefile: no vLLM invocation found"),
    ],
)
def test_malformed_file_is_skipped_with_a_reason(path: str, text: str, reason: str) -> None:
    result = fix_text(text, path, [EAGER, SEQS])
    assert result.status == "skipped"
    assert result.reason.startswith(reason), result.reason
    assert result.new_text == text and result.edits == ()


def test_edit_that_would_break_an_unquoted_yaml_string_is_refused() -> None:
    text = "services:\n  s:\n    image: vllm/vllm-openai:v0.8.5\n    command: --model m\n"
    op = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode")
    result = fix_text(text, "c.yml", [op])
    assert result.status == "skipped" and "unquoted YAML string" in result.reason


def test_missing_file_is_a_reason_not_an_exception(tmp_path) -> None:
    result = fix_file(str(tmp_path / "gone.sh"), [EAGER])
    assert result.status == "skipped" and "gone.sh" in result.reason


def test_discovery_reports_unparsable_launch_files(tmp_path) -> None:
    (tmp_path / "deploy.yaml").write_text("services:\n  vllm: [unclosed\n", encoding="utf-8")
    # The quote breaks the vLLM line itself: no command can be read, but the file is reported.
    (tmp_path / "run.sh").write_text("vllm serve 'oops\n", encoding="utf-8")
    (tmp_path / "other.sh").write_text("echo 'not vllm\n", encoding="utf-8")
    found = discover([str(tmp_path)])
    assert found.invocations == ()
    reasons = {s.path.rsplit("/", 1)[-1]: s.reason for s in found.skipped}
    assert sorted(reasons) == ["deploy.yaml", "run.sh"]
    assert "invalid YAML" in reasons["deploy.yaml"]
    assert reasons["run.sh"]
