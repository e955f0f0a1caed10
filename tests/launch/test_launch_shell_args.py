"""Shell arguments defined away from the command: arrays, functions that pass on `"$@"`.

A flag is edited where its value is written — the array element, the function's call — and
never appended a second time. Where the value may come from outside the file (the script's own
arguments, an array built up piece by piece), a flag the file does not show is not added unless
the log shows the run did not have it: a second one would silently override the first.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from vllm_log_lsp.core.model import FixOp, RunContext, ValueSpec
from vllm_log_lsp.launch import fix_text, invocations_in_text

SEQS_128 = FixOp("set_flag", "--max-num-seqs", ValueSpec(literal="128"))
EAGER = FixOp("add_flag", "--enforce-eager")
# "KV cache too small": set the context to what fits (captured), lower is safer
FIT_LEN = FixOp(
    "set_flag", "--max-model-len", ValueSpec(capture="fit_len", derive="halve", default="8192", minimum=256)
)
NO_ARGS = RunContext()  # a log whose launch args are unknown
WITHOUT_SEQS = RunContext(args={"--model": "m", "--port": "8000"})  # the run had no --max-num-seqs
WITH_SEQS = RunContext(args={"--model": "m", "--max-num-seqs": "256"})


def fixed(text: str, *ops: FixOp, context: RunContext = NO_ARGS, **kw: object) -> str:
    text = textwrap.dedent(text)
    result = fix_text(text, "serve.sh", list(ops), context=context, **kw)
    assert result.status != "skipped", result.reason
    subprocess.run(["bash", "-n"], input=result.new_text, text=True, check=True)
    again = fix_text(result.new_text, "serve.sh", list(ops), context=context, **kw)
    assert again.status == "unchanged", again.diff()
    return result.new_text


def refused(text: str, op: FixOp, context: RunContext = NO_ARGS) -> str:
    result = fix_text(textwrap.dedent(text), "serve.sh", [op], context=context)
    assert result.status == "skipped" and not result.edits, result.diff()
    return result.reason


# -- arrays ---------------------------------------------------------------------------------------
ARRAY = """\
    ARGS=(--max-num-seqs 256 --port 8000)
    vllm serve m "${ARGS[@]}"
    """


def test_array_element_is_edited_where_it_is_written() -> None:
    new = fixed(ARRAY, SEQS_128, EAGER)
    assert new == 'ARGS=(--max-num-seqs 128 --port 8000 --enforce-eager)\nvllm serve m "${ARGS[@]}"\n'
    (inv,) = invocations_in_text("serve.sh", new)
    assert inv.flags == {"--max-num-seqs": "128", "--port": "8000", "--enforce-eager": "true"}


def test_multi_line_array_with_comments_gets_a_new_line() -> None:
    text = """\
        declare -a ARGS=(
          --max-num-seqs 256   # tuned
          "--port" 8000
        )
        exec vllm serve "$MODEL" "${ARGS[@]}" 2>&1 | tee log.txt
        """
    assert fixed(text, SEQS_128, EAGER) == textwrap.dedent(
        """\
        declare -a ARGS=(
          --max-num-seqs 128   # tuned
          "--port" 8000
          --enforce-eager
        )
        exec vllm serve "$MODEL" "${ARGS[@]}" 2>&1 | tee log.txt
        """
    )


def test_array_values_after_the_array_win_and_are_the_ones_edited() -> None:
    text = 'ARGS=(--max-num-seqs 256)\nvllm serve m "${ARGS[@]}" --max-num-seqs 64\n'
    assert (
        fixed(text, SEQS_128) == 'ARGS=(--max-num-seqs 128)\nvllm serve m "${ARGS[@]}" --max-num-seqs 128\n'
    )


ARRAY_BUILT_UP = """\
    ARGS=(--port 8000)
    if [[ -n "${BIG:-}" ]]; then ARGS+=(--max-num-seqs 512); fi
    vllm serve m "${ARGS[@]}"
    """


def test_array_built_up_piece_by_piece_is_not_guessed() -> None:
    reason = refused(ARRAY_BUILT_UP, SEQS_128)
    assert "${ARGS[@]}" in reason and "set it where those arguments are given" in reason
    assert "comes through" in refused(ARRAY_BUILT_UP, SEQS_128, WITH_SEQS)
    # a switch after the array always wins, and the log may show the flag was not set
    assert fixed(ARRAY_BUILT_UP, EAGER).endswith('vllm serve m "${ARGS[@]}" --enforce-eager\n')
    appended = fixed(ARRAY_BUILT_UP, SEQS_128, context=WITHOUT_SEQS)
    assert appended.endswith('vllm serve m "${ARGS[@]}" --max-num-seqs 128\n')


# -- functions ------------------------------------------------------------------------------------
FUNCTION = """\
    serve() {
      vllm serve "$MODEL" "$@"
    }
    serve --max-model-len 2048 --port 8000
    """


def test_function_arguments_are_edited_at_the_call() -> None:
    new = fixed(FUNCTION, FixOp("set_flag", "--port", ValueSpec(literal="9000")), EAGER)
    assert new.endswith("serve --max-model-len 2048 --port 9000 --enforce-eager\n")
    assert 'vllm serve "$MODEL" "$@"\n' in new


def test_kv_cache_fix_never_raises_what_the_caller_passes() -> None:
    """4096 tokens fit; the caller asks 2048: already applied, not raised to 4096."""
    result = fix_text(textwrap.dedent(FUNCTION), "serve.sh", [FIT_LEN], captures={"fit_len": "4096"})
    assert (
        result.status == "unchanged" and "--max-model-len 2048 (at least as safe as 4096)" in result.summary
    )
    lowered = fixed(FUNCTION, FIT_LEN, captures={"fit_len": "1024"})
    assert lowered.endswith("serve --max-model-len 1024 --port 8000\n")


def test_each_call_of_the_function_is_an_invocation() -> None:
    text = 'serve() { vllm serve m "$@"; }\nserve --port 8000 --max-num-seqs 256\nserve --port 8001\n'
    invocations = invocations_in_text("serve.sh", text)
    assert [(i.port, i.label) for i in invocations] == [
        (8000, "line 2 (serve, line 1)"),
        (8001, "line 3 (serve, line 1)"),
    ]
    first = fixed(text, SEQS_128, index=0)
    assert first.splitlines()[1:] == ["serve --port 8000 --max-num-seqs 128", "serve --port 8001"]
    second = fixed(text, SEQS_128, index=1)
    assert second.splitlines()[1:] == [
        "serve --port 8000 --max-num-seqs 256",
        "serve --port 8001 --max-num-seqs 128",
    ]


def test_positional_parameters_are_read_from_the_call() -> None:
    text = 'start() {\n  vllm serve "$1" --port "$2" --max-num-seqs 256\n}\nstart org/model 9000\n'
    (inv,) = invocations_in_text("serve.sh", text)
    assert (inv.model, inv.port) == ("org/model", 9000)
    assert fixed(text, SEQS_128).splitlines()[1] == '  vllm serve "$1" --port "$2" --max-num-seqs 128'


@pytest.mark.parametrize(
    "text",
    [
        # a wrapper script: the arguments come from whoever runs it
        'exec vllm serve "$MODEL" "$@"\n',
        # a function nobody in this file calls
        'serve() { vllm serve m "$@"; }\n',
        # a function that shifts its arguments: the call's words no longer line up
        'serve() {\n  local port=$1\n  shift\n  vllm serve m --port "$port" "$@"\n}\nserve 8000 --max-num-seqs 256\n',
        # the call passes on the script's own arguments
        'serve() { vllm serve m "$@"; }\nserve "$@"\n',
    ],
)
def test_arguments_from_outside_the_file_are_not_guessed(text: str) -> None:
    assert "$@" in refused(text, SEQS_128)
    assert "comes through" in refused(text, SEQS_128, WITH_SEQS)  # the log's value is not here
    assert "--max-num-seqs 128" in fixed(text, SEQS_128, context=WITHOUT_SEQS)
    assert "--enforce-eager" in fixed(text, EAGER)


# -- strings split into words -----------------------------------------------------------------------
STRING = 'VLLM_ARGS="--max-num-seqs 256 --port 8000"\nvllm serve m $VLLM_ARGS\n'


def test_unquoted_string_variable_is_edited_in_its_string() -> None:
    (inv,) = invocations_in_text("serve.sh", STRING)
    assert inv.flags == {"--max-num-seqs": "256", "--port": "8000"}
    assert fixed(STRING, SEQS_128, EAGER) == (
        'VLLM_ARGS="--max-num-seqs 128 --port 8000 --enforce-eager"\nvllm serve m $VLLM_ARGS\n'
    )


def test_values_that_would_split_differently_are_refused() -> None:
    blob = FixOp("merge_json", "--compilation-config", ValueSpec(literal="NONE"), key="cudagraph_mode")
    result = fix_text(STRING, "serve.sh", [blob], context=RunContext(vllm_version="0.8.5"))
    assert result.status == "skipped" and "splits into words" in result.reason


def test_a_string_built_from_other_variables_is_opaque() -> None:
    text = 'EXTRA="$BASE --max-num-seqs 256"\nvllm serve m $EXTRA\n'
    assert "$EXTRA" in refused(text, SEQS_128)
    # quoted, it is one word: vLLM gets one argument, nothing is split
    (inv,) = invocations_in_text("serve.sh", 'X="a b"\nvllm serve m --served-model-name "$X"\n')
    assert inv.flags == {"--served-model-name": "a b"}
