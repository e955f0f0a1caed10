"""`core.regexes`: the modules' fixed patterns compiled from cached `re` programs are the patterns
`re.compile` makes; a program the engine refuses is compiled as usual; a warm `check` runs none
of its own patterns through `re`'s parser."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import FORMATS
from vllm_log_lsp import batch
from vllm_log_lsp.core import (
    context,
    evidence,
    jsonlog,
    linebreaks,
    lines,
    merge,
    mined,
    origins,
    regexes,
    stats,
    text,
    timestamps,
    tracebacks,
    versions,
)

CRASH = FORMATS / "tp2-worker-oom.log"
MODULES = (
    batch, context, evidence, jsonlog, linebreaks, lines, merge, mined, origins, stats, text, timestamps,
    tracebacks, versions,
)  # fmt: skip


def _module_patterns() -> list[re.Pattern]:
    found = []
    for module in MODULES:
        for value in vars(module).values():
            items = value if isinstance(value, tuple) else (value,)
            found += [item for item in items if isinstance(item, re.Pattern)]
    return found


def test_every_fixed_pattern_is_the_pattern_re_compiles() -> None:
    patterns = _module_patterns()
    assert len(patterns) > 40 and any(isinstance(p.pattern, bytes) for p in patterns)
    for ours in patterns:
        program = regexes.sre_program(ours.pattern, ours.flags & ~re.UNICODE)
        assert program is not None
        fresh = regexes.from_program(ours.pattern, program)
        theirs = re.compile(ours.pattern, ours.flags)
        # Pattern equality is the source, the flags and the engine's code.
        assert ours == theirs == fresh and ours.groupindex == theirs.groupindex, ours.pattern


@pytest.mark.parametrize(
    ("source", "flags", "sample"),
    [
        (r"(?P<level>INFO|ERROR) (?P<n>\d+)", 0, "x ERROR 12"),
        (r"  a [ ]b  # spaced", re.VERBOSE, "xa b"),
        (r"(?i)cuda", 0, "CUDA error"),
        (rb"\r(?!\n)", 0, b"a\rb"),
        (r"\w+", re.ASCII, "caf\u00e9"),
    ],
)
def test_a_pattern_from_its_program_finds_what_re_finds(source, flags, sample) -> None:
    program = regexes.sre_program(source, flags)
    assert program is not None
    ours, theirs = regexes.from_program(source, program), re.compile(source, flags)
    assert ours == theirs and ours is not theirs
    assert ours.search(sample).group(0) == theirs.search(sample).group(0)


def test_a_program_the_engine_refuses_is_compiled_as_usual() -> None:
    source = r"never kept (?P<x>\d+) before"
    known = regexes._programs()
    program = regexes.sre_program(source)
    assert program is not None
    known[(source, 0)] = [program[0], b"\xff\xff\xff\x7f" * 4, *program[2:]]
    try:
        assert regexes.compile(source).search("never kept 12 before").group("x") == "12"
        assert known[(source, 0)] == program  # replaced by the right one
    finally:
        known.pop((source, 0), None)


# Runs the CLI with the sources `re`'s parser reads for vllm_log_lsp's own call sites (on stderr).
PROBE = """
import json, sys, traceback
from re import _parser
parse, ours = _parser.parse, []
def counted(source, *rest):
    callers = [f.filename for f in traceback.extract_stack()[:-1] if "/re/" not in f.filename]
    if callers and "vllm_log_lsp" in callers[-1]:
        ours.append(source if isinstance(source, str) else source.decode("latin-1"))
    return parse(source, *rest)
_parser.parse = counted
from vllm_log_lsp.cli import main
status = main(sys.argv[1:])
print(json.dumps(ours), file=sys.stderr)
sys.exit(status)
"""


def _parsed(cache: Path) -> set[str]:
    env = dict(os.environ, VLLM_LOG_LSP_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "check", "--format", "json", str(CRASH)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["files"][0]["incidents"][0]["root_cause"]["cause"] == "oom-serving"
    return set(json.loads(done.stderr.splitlines()[-1]))


def test_a_warm_check_parses_none_of_the_fixed_patterns(tmp_path: Path) -> None:
    fixed = {
        p.pattern if isinstance(p.pattern, str) else p.pattern.decode("latin-1") for p in _module_patterns()
    }
    cache = tmp_path / "cache"
    assert len(_parsed(cache) & fixed) > 40  # a cold cache: each parsed (and its program kept at exit)
    assert list(cache.rglob("regexes.marshal"))
    assert _parsed(cache) & fixed == set()
