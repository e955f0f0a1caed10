"""`cli.plain_check_args` reads a plain `check` command line exactly as argparse does (the same
values, defaults and handler), and leaves every other command line to argparse: help, errors,
other commands, abbreviations, `--opt=value`, standard input, options after the files."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.cli import CHECK_MERGING, CHECK_OPTIONS, build_parser, plain_check_args


def _argparse(argv: list[str]) -> dict | None:
    """argparse's namespace of `argv` as a dict; None when argparse exits (an error, help)."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(build_parser().parse_args(argv))
        except SystemExit:
            return None


def _plain(argv: list[str]) -> dict | None:
    found = plain_check_args(argv)
    return None if found is None else vars(found)


PLAIN = [
    ["check", "a.log"],
    ["check", "a.log", "b.log", "dir"],
    ["check", "--format", "json", "a.log"],
    ["check", "--format", "text", "--format", "sarif", "a.log"],
    ["check", "--color", "never", "--jobs", "3", "a.log", "b.log"],
    ["check", "--jobs", "0", "a.log"],
    ["check", "--jobs", "007", "a.log"],
    ["check", "--fix", "serve.sh", "--write", "--fix-index", "2", "a.log"],
    ["check", "--fix", "", "a.log"],
    ["check", "--report", "out.html", "a.log"],
    ["check", "--follow", "a.log"],
    ["check", "--merge", "a.log", "b.log"],
    ["check", "--no-merge", "a.log", "b.log"],
    ["check", "--merge", "--merge", "a.log"],
    ["check", "--rules", "x.toml", "--rules", "y.toml", "a.log"],
    ["check", "--write", "--write", "a.log"],
    ["check", "--fix", "check", "a.log"],
    ["check", ""],
    ["check", " -x.log"],
    ["check", "logs/**/*.log"],
]

# argparse's: an error, help, another command, another spelling, standard input, or an order
# argparse reads in its own way.
NOT_PLAIN = [
    [],
    ["check"],
    ["check", "-h"],
    ["check", "--help"],
    ["--help"],
    ["--version"],
    ["rules"],
    ["explain", "oom"],
    ["--debug", "check", "a.log"],
    ["--rules", "x.toml", "check", "a.log"],
    ["check", "-"],
    ["check", "a.log", "-"],
    ["check", "--", "a.log"],
    ["check", "--format", "xml", "a.log"],
    ["check", "--format", "a.log"],
    ["check", "--format=json", "a.log"],
    ["check", "--form", "json", "a.log"],
    ["check", "--jobs", "x", "a.log"],
    ["check", "--jobs", "-1", "a.log"],
    ["check", "--jobs", "\u0663", "a.log"],
    ["check", "--jobs", " 3", "a.log"],
    ["check", "--merge", "--no-merge", "a.log"],
    ["check", "--fix", "-a b", "a.log"],
    ["check", "--unknown", "a.log"],
    ["check", "a.log", "--format", "json"],
    ["check", "a.log", "--format", "json", "b.log"],
    ["check", "--format", "json"],
    ["check", "--rules"],
]


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_a_plain_check_command_line_reads_as_argparse_reads_it(argv: list[str]) -> None:
    expected = _argparse(argv)
    assert expected is not None
    assert _plain(argv) == expected


@pytest.mark.parametrize("argv", NOT_PLAIN, ids=" ".join)
def test_any_other_command_line_is_left_to_argparse(argv: list[str]) -> None:
    assert plain_check_args(argv) is None


def test_every_option_of_check_is_read_plainly() -> None:
    # Each declared option, with a value argparse takes, alone before a FILE.
    for flag, keywords in (*CHECK_OPTIONS, *CHECK_MERGING):
        value = [] if "action" in keywords else [str(keywords.get("choices", ["2"])[-1])]
        argv = ["check", flag, *value, "a.log"]
        assert _plain(argv) == _argparse(argv), argv
        assert _plain(argv) is not None


TOKENS = st.sampled_from(
    [
        "--format", "json", "text", "xml", "--jobs", "2", "0", "-1", "x", "--color", "never",
        "--fix", "s.sh", "--write", "--report", "r.html", "--fix-index", "1", "--follow", "--merge",
        "--no-merge", "--rules", "u.toml", "a.log", "b.log", "-", "--", "-h", "--form", "--format=json",
        "", "check",
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(TOKENS, max_size=7))
def test_any_command_line_reads_as_argparse_reads_it_or_goes_to_argparse(tokens: list[str]) -> None:
    argv = ["check", *tokens]
    plain = _plain(argv)
    if plain is not None:
        assert plain == _argparse(argv)
