"""The pre-filter's rg search started before the analysis is imported (`core.early`), from the
literal groups the last search used (the data cache): taken only for exactly the groups the
analysis searches, over the same unchanged file; otherwise stopped, and the analysis searches as
always. Whatever the cache holds, or if nothing starts, the answer is the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import CRASH, fresh_early_search, record_tool_searches, unavailable
from vllm_log_lsp import cli
from vllm_log_lsp.core import datacache, early, prefilter

LOG = CRASH / "011.log"  # a death whose diagnosis rests on lines of several literals


@pytest.fixture
def setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A cache of this test's own; any file counts as large; rg required; `early` fresh."""
    if prefilter.search_tool(("rg",)) is None or not hasattr(os, "memfd_create"):
        unavailable("rg and memfd_create (Linux) are needed", "bash scripts/install/05-system.sh")
    fresh_early_search(monkeypatch, tmp_path / "cache")
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 1 << 60)
    searched_here = record_tool_searches(monkeypatch)
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG.read_bytes())
    yield log, searched_here
    early.discard()
    datacache.forget()


def check(path: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    status = cli.main(["check", "--format", "json", str(path)])
    report = json.loads(capsys.readouterr().out)
    return status, report


def reference(path: Path, capsys, monkeypatch) -> tuple[int, dict]:
    """The answer with nothing started early and no cache."""
    with monkeypatch.context() as patch:
        patch.setattr(early, "_attempted", False)
        patch.setattr(early, "_search", None)
        return check(path, capsys)


def the_groups(log: Path, searched_here: list, capsys) -> list[list[str]]:
    """The groups the analysis searches for, learnt (cached) by a first run."""
    early.start(["check", str(log)])
    check(log, capsys)
    groups = searched_here.pop()
    searched_here.clear()
    return groups


def test_a_search_started_early_is_taken_and_answers_alike(setting, capsys, monkeypatch) -> None:
    log, searched_here = setting
    expected = reference(log, capsys, monkeypatch)
    argv = ["check", "--format", "json", str(log)]
    assert not early.start(argv)  # (no cache yet: the run learns the groups)
    assert check(log, capsys) == expected
    groups = searched_here.pop()
    assert early._read_groups() == groups
    datacache.forget()
    assert early.start(argv)
    searched_here.clear()
    assert check(log, capsys) == expected
    assert searched_here == []  # the early processes' output was used: none started here


@pytest.mark.parametrize("change", ["drop", "add", "reorder", "merge"])
def test_a_stale_cache_starts_a_search_that_is_not_taken(setting, capsys, monkeypatch, change: str) -> None:
    log, searched_here = setting
    expected = reference(log, capsys, monkeypatch)
    groups = the_groups(log, searched_here, capsys)
    stale = {
        "drop": [
            [x for x in groups[0] if x not in ("Traceback (most recent call last)", "Error")],
            *groups[1:],
        ],
        "add": [sorted([*groups[0], "zzz never"]), *groups[1:]],
        "reorder": groups[::-1],
        "merge": [sorted({x for group in groups for x in group})],
    }[change]
    datacache.keep_plain_value(early.CACHE_ENTRY, stale)
    datacache.forget()
    monkeypatch.setattr(early, "_attempted", False)
    assert early.start(["check", str(log)])
    searched_here.clear()
    assert check(log, capsys) == expected
    assert searched_here == [groups]  # searched again, here
    datacache.forget()
    assert early._read_groups() == groups  # and learnt for the next run


@pytest.mark.parametrize(
    "content",
    [b"", b"not a cache", b"vllm-log-lsp data cache\n\x00\x00\x00\x00garbage"],
    ids=["empty", "foreign", "bad-crc"],
)
def test_a_corrupt_cache_starts_nothing(setting, capsys, monkeypatch, content: bytes) -> None:
    log, searched_here = setting
    expected = reference(log, capsys, monkeypatch)
    path = datacache.cache_path(early.CACHE_ENTRY)
    assert path is not None
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(content)
    datacache.forget()
    assert not early.start(["check", str(log)])
    assert early._search is None
    assert check(log, capsys) == expected
    datacache.forget()
    assert early._read_groups() == searched_here[-1]  # rewritten


@pytest.mark.parametrize(
    "value", [[["a", 1]], "Error", [["a"], "b"], {"a": ["b"]}, [[["nested"]]], [], None], ids=str
)
def test_cached_values_other_than_lists_of_literals_start_nothing(setting, value) -> None:
    log, _ = setting
    datacache.keep_plain_value(early.CACHE_ENTRY, value)
    datacache.forget()
    assert not early.start(["check", str(log)])
    assert early._search is None


def test_a_file_changed_after_the_start_is_searched_again(setting, capsys, monkeypatch) -> None:
    log, searched_here = setting
    groups = the_groups(log, searched_here, capsys)
    datacache.forget()
    assert early.start(["check", str(log)])
    other = CRASH / "007.log"
    log.write_bytes(other.read_bytes())  # (rotated or rewritten while the search ran)
    expected = reference(log, capsys, monkeypatch)
    searched_here.clear()
    assert check(log, capsys) == expected
    assert searched_here == [groups]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "a.log", "b.log"],
        ["check", "-"],
        ["check", "--rules", "r.toml", "LOG"],
        ["check", "--follow", "LOG"],
        ["check", "--format=json", "LOG"],
        ["check", "--format"],
        ["check"],
        ["serve"],
        ["rules", "LOG"],
        [],
    ],
    ids=" ".join,
)
def test_other_command_lines_start_nothing(setting, capsys, monkeypatch, argv: list[str]) -> None:
    log, searched_here = setting
    the_groups(log, searched_here, capsys)
    datacache.forget()
    monkeypatch.setattr(early, "_attempted", False)
    assert not early.start([str(log) if arg == "LOG" else arg for arg in argv])
    assert early._search is None and not early._attempted


def test_without_rg_or_with_tools_disabled_nothing_starts(
    setting, capsys, monkeypatch, tmp_path: Path
) -> None:
    log, searched_here = setting
    the_groups(log, searched_here, capsys)
    datacache.forget()
    with monkeypatch.context() as patch:
        patch.setenv("VLLM_LOG_LSP_NO_GREP", "1")
        assert not early.start(["check", str(log)])
    empty = tmp_path / "bin"
    empty.mkdir()
    with monkeypatch.context() as patch:
        patch.setenv("PATH", str(empty))
        assert not early.start(["check", str(log)])
    assert early._search is None


def test_a_search_nobody_takes_is_stopped_and_reaped(setting, capsys) -> None:
    log, searched_here = setting
    the_groups(log, searched_here, capsys)
    datacache.forget()
    assert early.start(["check", str(log)])
    processes = [*early._search.processes, *early._utf8_search.processes]
    assert len(processes) == 4  # (three literal groups and the UTF-8 search)
    pids, outputs = [process.pid for process in processes], [process.output for process in processes]
    early.discard()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    for output in outputs:
        with pytest.raises(OSError):
            os.fstat(output)


def test_the_command_answers_alike_with_the_search_started_early(tmp_path: Path) -> None:
    """`python -m vllm_log_lsp check` on a log over the size threshold: no cache (nothing early),
    a first run (learns the groups), a second (starts early): the same output and status."""
    if prefilter.search_tool(("rg",)) is None:
        unavailable("rg is needed", "bash scripts/install/05-system.sh")
    log = tmp_path / "big.log"
    filler = b"(APIServer pid=1) INFO 10-03 21:00:10 [loggers.py:123] a healthy line of the log\n"
    crash = LOG.read_bytes()
    log.write_bytes(filler * (early.TOOL_THRESHOLD // len(filler) + 1) + crash)

    def run(cache: str) -> tuple[int, bytes, bytes]:
        env = {**os.environ, "VLLM_LOG_LSP_CACHE_DIR": cache}
        env.pop("VLLM_LOG_LSP_NO_GREP", None)
        done = subprocess.run(
            [sys.executable, "-m", "vllm_log_lsp", "check", "--format", "json", str(log)],
            capture_output=True,
            env=env,
            timeout=300,
        )
        return done.returncode, done.stdout, done.stderr

    expected = run("")
    cache = str(tmp_path / "cache")
    assert run(cache) == expected
    assert list(Path(cache).rglob("prefilter-literal-groups.marshal"))
    assert run(cache) == expected


def test_a_search_that_fails_while_the_scan_reads_it_is_done_again(setting, capsys, monkeypatch) -> None:
    """The scan reads the scan group's lines while its early rg runs; rg failing mid-way (here a
    process that writes the first rows it was to find, then exits 2) makes the analysis search
    again the usual way: the same answer."""
    log, searched_here = setting
    expected = reference(log, capsys, monkeypatch)
    groups = the_groups(log, searched_here, capsys)
    real = early.rg_command(prefilter.search_tool(("rg",))[1], groups[0], str(log))
    rows = subprocess.run(real, capture_output=True, check=True).stdout.splitlines()[:3]
    written = b"".join(row + b"\n" for row in rows)
    failing = f"import sys; sys.stdout.buffer.write({written!r}); sys.stdout.flush(); sys.exit(2)"
    original = early.rg_command

    def command(binary: str, literals, path):
        if list(literals) == groups[0]:
            return [sys.executable, "-c", failing]
        return original(binary, literals, path)

    monkeypatch.setattr(early, "rg_command", command)
    datacache.forget()
    assert early.start(["check", "--format", "json", str(log)])
    assert check(log, capsys) == expected
    assert searched_here == [groups]  # (searched again, every group, after the early one failed)
