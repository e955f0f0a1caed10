"""Helpers for the launch-script tests: fixtures, and the checks every applied fix must pass."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from vllm_log_lsp.core.model import FixOp, RunContext
from vllm_log_lsp.core.values import resolve_value
from vllm_log_lsp.launch import FixResult, apply_text_edits, fix_text, invocations_in_text
from vllm_log_lsp.launch.apply import log_value_for
from vllm_log_lsp.launch.argv import same_value
from vllm_log_lsp.launch.formats import parse_sites, problem
from vllm_log_lsp.launch.python_launch import PythonSite
from vllm_log_lsp.launch.sites import ArgvSite, Site
from vllm_log_lsp.launch.text import LineIndex, diff_edits, to_lf

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if p.name != "NOTES")


def load(name: str) -> tuple[str, str]:
    """(path as the launch layer sees it, text). `offline.py.txt` is read as `offline.py`."""
    path = name[: -len(".txt")] if name.endswith(".py.txt") else name
    return path, (FIXTURES / name).read_text(encoding="utf-8")


def site_at(path: str, text: str, index: int = 0) -> Site:
    text = to_lf(text)  # the launch layer parses every file in its LF form
    fmt, sites = parse_sites(path, text, docs=True)
    assert problem(fmt, text) is None, problem(fmt, text)
    return sites[index]


def occurrences(site: Site, op: FixOp) -> int:
    """How many times the invocation sets the op's flag / JSON key (env: see `env_count`)."""
    if isinstance(site, ArgvSite):
        if op.op != "merge_json":
            return len(site.parsed.find(op.name))
        dotted = len(site.parsed.find(op.name, op.key))
        in_json = 0
        for use in site.parsed.find(op.name):
            try:
                obj = json.loads(use.value or "")
            except ValueError:
                continue
            in_json += isinstance(obj, dict) and op.key in obj
        return dotted + in_json
    assert isinstance(site, PythonSite)
    # the call's own keywords and those of the literal `**` mappings it unpacks
    keywords = [k.value for k in site.call.keywords if k.arg == op.kwarg]
    keywords += [v for m in site.unpacked.mappings if (v := m.value(op.kwarg or "")) is not None]
    if op.op != "merge_json" or not keywords:
        return len(keywords)
    value = keywords[0]
    if isinstance(value, ast.Dict):
        return sum(isinstance(k, ast.Constant) and k.value == op.key for k in value.keys)
    return sum(k.arg == op.key for k in getattr(value, "keywords", []))


def env_count(text: str, name: str) -> int:
    """Occurrences of a variable name in the whole text (fixtures name each at most once)."""
    return len(re.findall(rf"\b{re.escape(name)}\b", text))


def context_for(path: str, text: str, index: int = 0, version: str | None = None) -> RunContext:
    """The run context of a log whose crashed run is this very invocation."""
    inv = invocations_in_text(path, text, docs=True)[index]
    return RunContext(vllm_version=version, model=inv.model, args=dict(inv.flags))


def expected_value(site: Site, op: FixOp, context: RunContext) -> str | None:
    if op.op == "add_flag":
        return "true"
    value, _ = resolve_value(op.value, {}, site.current(op), log_value_for(op, context))
    return value


def check_fix(
    path: str, text: str, ops: list[FixOp], index: int = 0, version: str | None = None
) -> FixResult:
    """Apply `ops` and assert the contract: parses, once, intended value, idempotent, local,
    line ends kept (`text` may use CRLF). Documentation is opted in (`docs=True`)."""
    context = context_for(path, text, index, version)
    before = site_at(path, text, index)
    wanted = [(op, expected_value(before, op, context)) for op in ops]
    env_before = {op.name: env_count(text, op.name) for op in ops if op.op == "set_env"}

    result = fix_text(text, path, ops, index=index, context=context, docs=True)
    assert result.status in ("changed", "unchanged"), result.reason
    assert apply_text_edits(text, result.edits) == result.new_text
    assert_line_ends_kept(text, result.new_text)

    after = site_at(path, result.new_text, index)  # asserts the format's own check passes
    for op, value in wanted:
        found = after.current(op)
        if op.op == "set_env":
            assert found == value, (op.name, found, value)
            assert env_count(result.new_text, op.name) == max(env_before[op.name], 1)
        else:
            assert same_value(found, value), (op.name, op.key, found, value)
            assert occurrences(after, op) == 1, result.new_text

    again = fix_text(result.new_text, path, ops, index=index, context=context, docs=True)
    assert again.status == "unchanged", (again.reason, again.summary, again.diff())
    assert again.new_text == result.new_text

    assert_local(text, result, before, ops)
    return result


def assert_line_ends_kept(old: str, new: str) -> None:
    """A CRLF file stays CRLF, an LF file LF; bare CRs are neither added nor dropped."""
    bare_cr = old.replace("\r\n", "").count("\r")
    assert new.replace("\r\n", "").count("\r") == bare_cr, repr(new)
    if "\n" in old and old.count("\r\n") == old.count("\n"):
        assert new.count("\r\n") == new.count("\n"), repr(new)
    if "\r\n" not in old:
        assert "\r\n" not in new, repr(new)


def assert_local(text: str, result: FixResult, site: Site, ops: list[FixOp]) -> None:
    """Flag edits stay inside the invocation (its last line included, for trailing comments);
    an environment edit may also insert whole lines or change one line naming the variable.
    Checked on the LF forms (lines and columns are the same as the file's)."""
    text = to_lf(text)
    edits = diff_edits(text, to_lf(result.new_text))
    lines = LineIndex(text)
    # `VAR=1 ` prefixes go before the command; a new line after the last one starts at its end.
    # The invocation includes what defines it elsewhere: a `**` mapping, a shell array, a call.
    inside = [
        (lines.line_start(start), lines.line_end(end) + 1)
        for start, end in [(site.start, site.end), *site.extra_regions()]
    ]
    env_names = [op.name for op in ops if op.op == "set_env"]
    for edit in edits:
        start = lines.offset(edit.start_line, edit.start_col)
        end = lines.offset(edit.end_line, edit.end_col)
        if any(a <= start and end <= b for a, b in inside):
            continue
        assert env_names, f"flag edit outside the invocation: {edit}"
        whole_lines = start == end and (edit.start_col == 0 or edit.new_text.startswith("\n"))
        # the value is on the variable's line or, in a Kubernetes `env:` entry, the next one
        nearby = lines.line_text(start) + lines.line_text(max(lines.line_start(start) - 1, 0))
        one_line = edit.start_line == edit.end_line and any(name in nearby for name in env_names)
        assert whole_lines or one_line, f"environment edit in an unexpected place: {edit}"
