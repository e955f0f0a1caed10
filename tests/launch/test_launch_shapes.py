"""Exact results for the shapes users write: spellings kept, layout kept, nothing duplicated."""

from __future__ import annotations

import textwrap

import pytest

from vllm_log_lsp.core.model import FixOp, ResolvedOp, RunContext, ValueSpec
from vllm_log_lsp.launch import fix_text, invocations_in_text

EAGER = FixOp("add_flag", "--enforce-eager")
HALVE_SEQS = FixOp("set_flag", "--max-num-seqs", ValueSpec(derive="halve", default="256"))
SEQS_128 = FixOp("set_flag", "--max-num-seqs", ValueSpec(literal="128"))
NO_GRAPHS = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode")
BLOCKING = FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1"))


def fixed(text: str, path: str, *ops: FixOp, version: str | None = None, **kw: object) -> str:
    result = fix_text(textwrap.dedent(text), path, list(ops), context=RunContext(vllm_version=version), **kw)
    assert result.status != "skipped", result.reason
    return result.new_text


# -- shell ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("vllm serve m --max-num-seqs 256\n", "vllm serve m --max-num-seqs 128\n"),
        ("vllm serve m --max-num-seqs=256\n", "vllm serve m --max-num-seqs=128\n"),
        ("vllm serve m --max_num_seqs 256\n", "vllm serve m --max_num_seqs 128\n"),
        ("vllm serve m --max_num_seqs='256'\n", "vllm serve m --max_num_seqs='128'\n"),
        ('vllm serve m --max-num-seqs "256"\n', 'vllm serve m --max-num-seqs "128"\n'),
        ("vllm serve m\n", "vllm serve m --max-num-seqs 128\n"),
        ("vllm serve m --max-num-seqs 128\n", "vllm serve m --max-num-seqs 128\n"),
    ],
)
def test_flag_updated_in_its_own_spelling(before: str, after: str) -> None:
    assert fixed(before, "run.sh", SEQS_128) == after


def test_duplicated_flag_is_updated_everywhere_not_added_again() -> None:
    before = "vllm serve m --max-num-seqs 64 --max-num-seqs 256\n"
    assert fixed(before, "run.sh", SEQS_128) == "vllm serve m --max-num-seqs 128 --max-num-seqs 128\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("vllm serve m --enforce-eager\n", "vllm serve m --enforce-eager\n"),
        ("vllm serve m --no-enforce-eager --port 1\n", "vllm serve m --enforce-eager --port 1\n"),
        ("vllm serve m --enforce_eager\n", "vllm serve m --enforce_eager\n"),
        ("vllm serve m --port 1\n", "vllm serve m --port 1 --enforce-eager\n"),
    ],
)
def test_switch(before: str, after: str) -> None:
    assert fixed(before, "run.sh", EAGER) == after


def test_new_flag_gets_its_own_continuation_line_with_the_same_indent() -> None:
    before = """\
        vllm serve m \\
          --port 8000 \\
          --max-num-seqs 256
        """
    assert fixed(before, "run.sh", EAGER) == textwrap.dedent(
        """\
        vllm serve m \\
          --port 8000 \\
          --max-num-seqs 256 \\
          --enforce-eager
        """
    )


def test_flag_is_inserted_before_redirections_and_pipes() -> None:
    before = "vllm serve m --port 1 > log.txt 2>&1 &\n"
    assert fixed(before, "run.sh", EAGER) == "vllm serve m --port 1 --enforce-eager > log.txt 2>&1 &\n"


@pytest.mark.parametrize(
    ("version", "added"),
    [
        ("0.8.5", '--compilation-config \'{"cudagraph_mode": "NONE"}\''),
        ("0.11.0", "--compilation-config.cudagraph_mode=NONE"),
        ("0.12.0", "-cc.cudagraph_mode=NONE"),
        (None, "-cc.cudagraph_mode=NONE"),
    ],
)
def test_json_flag_spelling_follows_the_version(version: str | None, added: str) -> None:
    assert fixed("vllm serve m\n", "run.sh", NO_GRAPHS, version=version) == f"vllm serve m {added}\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "vllm serve m --compilation-config '{\"level\": 3}'\n",
            'vllm serve m --compilation-config \'{"level": 3, "cudagraph_mode": "NONE"}\'\n',
        ),
        (
            "vllm serve m --compilation-config='{\"level\":3}'\n",
            'vllm serve m --compilation-config=\'{"level":3,"cudagraph_mode":"NONE"}\'\n',
        ),
        (
            'vllm serve m -cc \'{"cudagraph_mode": "FULL"}\'\n',
            'vllm serve m -cc \'{"cudagraph_mode": "NONE"}\'\n',
        ),
        ("vllm serve m -cc.cudagraph_mode=FULL\n", "vllm serve m -cc.cudagraph_mode=NONE\n"),
        (
            "vllm serve m --compilation-config.cudagraph_mode FULL\n",
            "vllm serve m --compilation-config.cudagraph_mode NONE\n",
        ),
        ("vllm serve m -cc.cudagraph_mode=NONE\n", "vllm serve m -cc.cudagraph_mode=NONE\n"),
    ],
)
def test_json_key_merged_where_the_flag_already_is(before: str, after: str) -> None:
    assert fixed(before, "run.sh", NO_GRAPHS, version="0.12.0") == after


def test_json_flag_that_is_not_an_object_is_refused() -> None:
    result = fix_text("vllm serve m --compilation-config 3\n", "run.sh", [NO_GRAPHS])
    assert result.status == "skipped" and "not a JSON object" in result.reason


def test_environment_variables_in_a_script() -> None:
    script = "#!/bin/bash\nexport CUDA_LAUNCH_BLOCKING=0\nvllm serve m\n"
    assert fixed(script, "run.sh", BLOCKING) == script.replace("=0", "=1")
    prefixed = "CUDA_LAUNCH_BLOCKING=0 vllm serve m\n"
    assert fixed(prefixed, "run.sh", BLOCKING) == "CUDA_LAUNCH_BLOCKING=1 vllm serve m\n"
    indented = "if true; then\n  vllm serve m\nfi\n"
    assert fixed(indented, "run.sh", BLOCKING) == (
        "if true; then\n  export CUDA_LAUNCH_BLOCKING=1\n  vllm serve m\nfi\n"
    )


def test_docker_run_gets_dash_e_before_the_image() -> None:
    before = "docker run --gpus all vllm/vllm-openai:v0.9.0 --model m\n"
    after = "docker run --gpus all -e CUDA_LAUNCH_BLOCKING=1 vllm/vllm-openai:v0.9.0 --model m\n"
    assert fixed(before, "run.sh", BLOCKING) == after
    assert fixed(after, "run.sh", BLOCKING) == after


def test_docker_image_tag_gives_the_version_when_the_log_does_not() -> None:
    before = "docker run vllm/vllm-openai:v0.8.5 --model m\n"
    after = fix_text(before, "run.sh", [NO_GRAPHS]).new_text
    assert after.endswith('--model m --compilation-config \'{"cudagraph_mode": "NONE"}\'\n')


def test_variables_in_the_script_are_resolved_for_the_summary() -> None:
    script = 'MODEL=org/model\nPORT=9000\nvllm serve "$MODEL" --port ${PORT}\n'
    (inv,) = invocations_in_text("run.sh", script)
    assert (inv.model, inv.port, inv.entry) == ("org/model", 9000, "vllm serve")


def test_index_selects_among_several_invocations() -> None:
    script = "vllm serve a --port 1\nvllm serve b --port 2\n"
    result = fix_text(script, "run.sh", [EAGER], index=1)
    assert result.new_text == "vllm serve a --port 1\nvllm serve b --port 2 --enforce-eager\n"
    assert result.summary == "run.sh:2: added --enforce-eager"


def test_best_match_is_chosen_without_an_index() -> None:
    script = "vllm serve a --port 1\nvllm serve b --port 2\n"
    result = fix_text(script, "run.sh", [EAGER], context=RunContext(model="b"))
    assert result.invocation is not None and result.invocation.model == "b"


# -- values ---------------------------------------------------------------------------------


def test_derivation_starts_from_the_script_and_is_not_repeated() -> None:
    context = RunContext(args={"--max-num-seqs": "512"})
    once = fix_text("vllm serve m --max-num-seqs 512\n", "run.sh", [HALVE_SEQS], context=context)
    assert once.summary == "run.sh:1: --max-num-seqs 512 → 256"
    twice = fix_text(once.new_text, "run.sh", [HALVE_SEQS], context=context)
    assert twice.status == "unchanged"
    assert twice.summary == "run.sh:1: already applied: --max-num-seqs 256"
    # the script was changed by hand since the crash, not far enough: the log's advice
    edited = fix_text("vllm serve m --max-num-seqs 300\n", "run.sh", [HALVE_SEQS], context=context)
    assert edited.new_text == "vllm serve m --max-num-seqs 256\n"


def test_derivation_from_the_default_when_neither_script_nor_log_sets_it() -> None:
    once = fix_text("vllm serve m\n", "run.sh", [HALVE_SEQS])
    assert once.new_text == "vllm serve m --max-num-seqs 128\n"
    assert fix_text(once.new_text, "run.sh", [HALVE_SEQS]).status == "unchanged"


def test_captured_value_wins() -> None:
    op = FixOp("set_flag", "--max-model-len", ValueSpec(capture="max_len", literal="4096"))
    result = fix_text("vllm serve m\n", "run.sh", [op], captures={"max_len": "12,288"})
    assert result.new_text == "vllm serve m --max-model-len 12288\n"


def test_resolved_ops_from_the_core_are_accepted() -> None:
    resolved = ResolvedOp(op=SEQS_128, value="128", spelling="--max-num-seqs 128")
    result = fix_text("vllm serve m --max-num-seqs 256\n", "run.sh", [resolved])
    assert result.new_text == "vllm serve m --max-num-seqs 128\n"


# -- YAML -----------------------------------------------------------------------------------


def test_yaml_comments_quotes_and_flow_style_survive() -> None:
    before = """\
        services:
          vllm:  # the engine
            image: "vllm/vllm-openai:v0.10.0"
            command: ['--model', 'm', '--max-num-seqs', '256']  # keep this comment
        """
    after = fixed(before, "compose.yaml", SEQS_128, EAGER)
    assert after == textwrap.dedent(
        """\
        services:
          vllm:  # the engine
            image: "vllm/vllm-openai:v0.10.0"
            command: ['--model', 'm', '--max-num-seqs', '128', '--enforce-eager']  # keep this comment
        """
    )


def test_kubernetes_numbers_in_args_are_quoted() -> None:
    before = """\
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
            - name: c
              image: vllm/vllm-openai
              args:
                - m
        """
    after = fixed(before, "pod.yaml", SEQS_128)
    assert after.endswith('        - m\n        - --max-num-seqs\n        - "128"\n')


def test_compose_environment_map_and_list() -> None:
    mapping = "services:\n  s:\n    image: vllm/vllm-openai\n    command: [m]\n    environment:\n      A: x\n"
    assert fixed(mapping, "c.yml", BLOCKING).endswith('      A: x\n      CUDA_LAUNCH_BLOCKING: "1"\n')
    listed = "services:\n  s:\n    image: vllm/vllm-openai\n    command: [m]\n    environment: [A=x]\n"
    assert fixed(listed, "c.yml", BLOCKING).endswith("environment: [A=x, CUDA_LAUNCH_BLOCKING=1]\n")


def test_compose_service_not_running_vllm_is_ignored() -> None:
    text = "services:\n  web:\n    image: nginx\n    command: [nginx, -g, 'daemon off;']\n"
    assert invocations_in_text("compose.yaml", text) == []


def test_kubernetes_env_from_secret_is_not_overwritten() -> None:
    before = """\
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
            - name: c
              image: vllm/vllm-openai
              args: [m]
              env:
                - name: CUDA_LAUNCH_BLOCKING
                  valueFrom: {configMapKeyRef: {name: x, key: y}}
        """
    result = fix_text(textwrap.dedent(before), "pod.yaml", [BLOCKING])
    assert result.status == "skipped" and "valueFrom" in result.reason


# -- Dockerfile -----------------------------------------------------------------------------


def test_dockerfile_exec_form_stays_json_and_env_goes_above_cmd() -> None:
    before = 'FROM vllm/vllm-openai:v0.10.0\nCMD ["--model", "m"]\n'
    after = fixed(before, "Dockerfile", EAGER, BLOCKING)
    assert after == (
        'FROM vllm/vllm-openai:v0.10.0\nENV CUDA_LAUNCH_BLOCKING=1\nCMD ["--model", "m", "--enforce-eager"]\n'
    )


def test_dockerfile_only_the_last_stage_cmd_counts_per_stage() -> None:
    text = 'FROM a AS build\nCMD ["vllm", "serve", "x"]\nCMD ["vllm", "serve", "y"]\n'
    (inv,) = invocations_in_text("Dockerfile", text)
    assert inv.model == "y"


# -- Python ---------------------------------------------------------------------------------


def test_python_keyword_added_in_one_per_line_style_with_trailing_comma() -> None:
    before = """\
        from vllm import LLM

        llm = LLM(
            model="m",
            max_num_seqs=256,
        )
        """
    assert fixed(before, "run.py", SEQS_128, EAGER) == textwrap.dedent(
        """\
        from vllm import LLM

        llm = LLM(
            model="m",
            max_num_seqs=128,
            enforce_eager=True,
        )
        """
    )


def test_python_dict_and_config_call_are_merged_into() -> None:
    dict_call = "from vllm import LLM\nLLM('m', compilation_config={'level': 3})\n"
    assert fixed(dict_call, "run.py", NO_GRAPHS) == (
        "from vllm import LLM\nLLM('m', compilation_config={'level': 3, 'cudagraph_mode': 'NONE'})\n"
    )
    config_call = (
        "from vllm import LLM\nfrom vllm.config import CompilationConfig\n"
        "LLM('m', compilation_config=CompilationConfig(level=3))\n"
    )
    assert fixed(config_call, "run.py", NO_GRAPHS).endswith(
        "compilation_config=CompilationConfig(level=3, cudagraph_mode='NONE'))\n"
    )


def test_python_computed_value_is_left_alone_with_a_reason() -> None:
    text = "import sys\nfrom vllm import LLM\nLLM('m', max_num_seqs=int(sys.argv[1]))\n"
    result = fix_text(text, "run.py", [SEQS_128])
    assert result.status == "skipped" and "computed" in result.reason


def test_python_environment_goes_before_the_vllm_import_once() -> None:
    before = '"""Doc."""\nfrom __future__ import annotations\n\nfrom vllm import LLM\n\nLLM("m")\n'
    after = fixed(before, "run.py", BLOCKING)
    assert after == (
        '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n'
        'os.environ["CUDA_LAUNCH_BLOCKING"] = "1"\nfrom vllm import LLM\n\nLLM("m")\n'
    )
    assert fixed(after, "run.py", BLOCKING) == after


def test_python_without_vllm_import_is_not_a_launch() -> None:
    assert invocations_in_text("x.py", "def LLM(**kw): ...\nLLM(model='m')\n") == []
