"""Text that mentions vLLM but is not run is not an invocation, and no edit lands inside it.

A usage message in a here-document, a comment, an `echo`/`printf` string (one line or several),
documentation: written from what users put in real launch scripts. Documentation (README.md …)
is a launch script only when the user opts in (`docs=True`, the `launchScripts.includeDocs`
setting).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_log_lsp.core.model import FixOp, RunContext, ValueSpec
from vllm_log_lsp.launch import DiscoveryOptions, discover, fix_text, invocations_in_text
from vllm_log_lsp.lsp.settings import Settings, parse_one

LEN_2048 = FixOp("set_flag", "--max-model-len", ValueSpec(literal="2048"))
BLOCKING = FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1"))
ROOT = Path(__file__).resolve().parents[2]

USAGE_HEREDOC = """\
#!/usr/bin/env bash
set -euo pipefail
usage() {
  cat <<EOF
Usage: $0 MODEL [PORT]
  Starts: vllm serve MODEL --max-model-len 4096 --port PORT
EOF
  exit 1
}
[[ $# -ge 1 ]] || usage
vllm serve "$1" --max-model-len 8192 --port "${2:-8000}"
"""

# Each script: text that mentions a launch, then the one real launch (`vllm serve real …`).
NOT_RUN = {
    "quoted heredoc delimiter": "cat <<'EOF'\nit's simple: vllm serve M --max-model-len 4096\nEOF\n",
    "tab-stripped heredoc": "cat <<-END\n\tvllm serve M --max-model-len 4096\n\tEND\n",
    "two heredocs on a line": "cat <<A <<B\nvllm serve M\nA\nvllm serve N\nB\n",
    "heredoc into a variable": "HELP=$(cat <<EOF\nvllm serve M --max-model-len 4096\nEOF\n)\n",
    "comment": "# old: vllm serve M --max-model-len 4096\n",
    "comment after code": "true  # vllm serve M --max-model-len 4096\n",
    "echo": 'echo "then: vllm serve M --max-model-len 4096"\n',
    "unquoted echo": "echo then run vllm serve M --max-model-len 4096\n",
    "multi-line echo": 'echo "Start it with:\nvllm serve M --max-model-len 4096\n"\n',
    "printf": "printf '%s\\n' 'vllm serve M --max-model-len 4096'\n",
    "case statement around": 'case "${1:-}" in\n  -h) echo "vllm serve M";;\nesac\n',
}


def test_usage_heredoc_is_not_an_invocation_and_nothing_goes_inside_it() -> None:
    (inv,) = invocations_in_text("serve.sh", USAGE_HEREDOC)
    assert inv.line == 10 and inv.flags["--max-model-len"] == "8192"
    result = fix_text(USAGE_HEREDOC, "serve.sh", [BLOCKING, LEN_2048], context=RunContext(model="m"))
    assert result.new_text == USAGE_HEREDOC.replace(
        'vllm serve "$1" --max-model-len 8192',
        'export CUDA_LAUNCH_BLOCKING=1\nvllm serve "$1" --max-model-len 2048',
    )


@pytest.mark.parametrize("name", sorted(NOT_RUN))
@pytest.mark.parametrize("bashlex_parses", [True, False], ids=["parsed", "line-by-line"])
def test_text_that_is_not_run_is_not_an_invocation(name: str, bashlex_parses: bool) -> None:
    # `[[ … ]]` is bash that bashlex cannot parse: the script is then read line by line
    tail = "vllm serve real --port 1\n"
    if not bashlex_parses:
        tail = "[[ -n ${X:-} ]] && echo set\n" + tail
    text = NOT_RUN[name] + tail
    assert [i.model for i in invocations_in_text("run.sh", text)] == ["real"]
    result = fix_text(text, "run.sh", [BLOCKING, LEN_2048])
    assert result.changed and result.new_text.startswith(NOT_RUN[name])  # the text is untouched
    assert result.new_text.endswith("--port 1 --max-model-len 2048\n")


def test_a_command_fed_by_a_heredoc_is_still_an_invocation() -> None:
    text = "vllm serve m --port 1 <<EOF\nvllm serve not-this\nEOF\necho done\n"
    (inv,) = invocations_in_text("run.sh", text)
    assert inv.model == "m"
    result = fix_text(text, "run.sh", [LEN_2048])
    assert result.new_text == text.replace("--port 1 <<EOF", "--port 1 --max-model-len 2048 <<EOF")


# -- documentation -------------------------------------------------------------------------------
README = """\
# Serving

Run vllm serve with --max-model-len 4096 for short prompts (a sentence, not a command).

```bash
$ vllm serve org/m --max-model-len 4096
INFO: vllm serve org/m is now listening   # output, not a command
```

```python
# vllm serve in Python: not a shell block
llm = "vllm serve org/python"
```

Or, indented:

    CUDA_VISIBLE_DEVICES=0 vllm serve org/indented --port 9000
"""


def test_documentation_is_not_a_launch_script_by_default(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README)
    (tmp_path / "notes.txt").write_text("vllm serve org/txt --port 1\n")
    assert discover([str(tmp_path)]).invocations == ()
    assert invocations_in_text("README.md", README) == []
    result = fix_text(README, "README.md", [LEN_2048])
    assert result.status == "skipped" and "documentation" in result.reason and "includeDocs" in result.reason
    assert result.new_text == README


def test_opted_in_documentation_gives_its_commands_only(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README)
    found = discover([str(tmp_path)], DiscoveryOptions(docs=True))
    assert [(i.model, i.format, i.line) for i in found.invocations] == [
        ("org/m", "docs", 5),
        ("org/indented", "docs", 16),
    ]
    result = fix_text(README, "README.md", [LEN_2048], index=0, docs=True)
    assert result.new_text == README.replace(
        "$ vllm serve org/m --max-model-len 4096", "$ vllm serve org/m --max-model-len 2048"
    )
    other = fix_text(README, "README.md", [BLOCKING], index=1, docs=True)
    assert other.new_text == README.replace("0 vllm serve", "0 CUDA_LAUNCH_BLOCKING=1 vllm serve")


def test_opt_in_setting_is_declared_for_vscode_and_parsed() -> None:
    assert Settings().launch_docs is False
    settings, problems = parse_one({"launchScripts": {"includeDocs": True}})
    assert settings.launch_docs is True and not problems
    _, problems = parse_one({"launchScripts.includeDocs": "yes"})
    assert problems  # a bad value is reported, not taken
    manifest = json.loads((ROOT / "vscode-client" / "package.json").read_text())
    declared = manifest["contributes"]["configuration"]["properties"]["vllmLog.launchScripts.includeDocs"]
    assert declared["type"] == "boolean" and declared["default"] is False
