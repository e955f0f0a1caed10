"""A mapped file's pages are let go once a whole-file pass has read them (the UTF-8 check, the
searches for a `\\r` or an ESC, a backward search for a marker, the automaton's search): the
process holds what it still reads, not the whole file, and every answer is what the same pass
over the file's bytes gives."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_log_lsp.core import prefilter, source
from vllm_log_lsp.core.source import find_releasing, first_invalid_utf8, release_pages, rfind_releasing
from vllm_log_lsp.core.text import LogIndex

PAGE = mmap.PAGESIZE
NEEDS_AUTOMATON = pytest.mark.skipif(prefilter._automaton(("x",)) is None, reason="no ahocorasick-rs")
# Resident pages are read from /proc and let go with madvise: Linux (CI runs these).
LINUX_PAGES = pytest.mark.skipif(
    not os.path.exists("/proc/self/status") or not hasattr(mmap, "MADV_DONTNEED"), reason="Linux"
)


def mapped(path: Path) -> mmap.mmap:
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


pieces = st.sampled_from(
    [
        b"INFO ok\n",
        b"\xe2\x80\xa6",
        b"\xc3\xa9",
        b"\xff",
        b"\xe2\x80",
        b"\r\n",
        b"\r",
        b"\x1b[31m",
        b"x" * 700,
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(pieces, max_size=60), st.integers(0, 3))
def test_passes_over_a_mapped_file_answer_as_over_its_bytes(parts: list[bytes], pages: int) -> None:
    """Chunks of a few pages (so that pages are released between them, at any offset in a page)."""
    data = b"".join(parts)
    if not data:
        return
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"mapped-{os.getpid()}.log"
    path.write_bytes(data)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(source, "_UTF8_CHUNK", PAGE * pages + 1000)
            needles = (b"\r", b"\x1b", b"\xe2\x80\xa6", b"\xff", b"INFO ok\n")
            for each in [(needle,) for needle in needles] + [needles, needles[::-1]]:
                view = mapped(path)
                assert find_releasing(view, each) == [data.find(needle) for needle in each]
                assert view[:] == data  # (what was released reads the same)
            view = mapped(path)
            assert first_invalid_utf8(view) == first_invalid_utf8(data)
            assert view[:] == data
            index, plain = LogIndex(mapped(path)), LogIndex(data)
            assert (index.has_cr, index.has_escape) == (plain.has_cr, plain.has_escape)
            view = mapped(path)
            for needle in needles:  # (backwards, from any end down to any start)
                for lo, hi in ((0, len(data)), (len(data) // 3, len(data)), (0, len(data) * 2 // 3)):
                    assert rfind_releasing(view, needle, lo, hi) == data.rfind(needle, lo, hi)
            assert view[:] == data
    finally:
        path.unlink()


def test_a_backward_search_finds_a_needle_across_the_edge_of_its_blocks(tmp_path: Path, monkeypatch) -> None:
    """The blocks are counted from the end of the range: a needle is found wherever it lies
    around the edge between two, the last one in the range (and none past its end)."""
    chunk = PAGE + 1000
    monkeypatch.setattr(source, "_UTF8_CHUNK", chunk)
    needle = b"Avg prompt throughput"
    path = tmp_path / "log"
    for before_edge in range(-2, len(needle) + 2):
        tail = chunk + before_edge  # (bytes from the needle's start to the end: it starts before the edge)
        data = b"a" * (chunk * 2) + needle + b"b" * (tail - len(needle))
        path.write_bytes(data)
        for hi in (len(data), len(data) - 1, chunk * 2 + len(needle) - 1):
            assert rfind_releasing(mapped(path), needle, 0, hi) == data.rfind(needle, 0, hi), (
                before_edge,
                hi,
            )


def test_a_release_covers_the_whole_pages_inside_the_range_only(tmp_path: Path) -> None:
    """Where the next release starts: after the last whole page released, or at the end."""
    path = tmp_path / "log"
    path.write_bytes(b"x" * (PAGE * 4 + 10))
    view = mapped(path)
    if hasattr(mmap, "MADV_DONTNEED"):
        assert release_pages(view, 10, PAGE * 3 + 5) == PAGE * 3
        assert release_pages(view, PAGE * 3, PAGE * 3 + 5) == PAGE * 3  # (no whole page yet)
        assert release_pages(view, PAGE * 3, len(view)) == len(view)  # (the last, short page too)
    assert view[:] == path.read_bytes()
    assert release_pages(b"abc", 0, 3) == 0  # (not a mapping: nothing to let go)


def _file_rss() -> int:
    """Bytes of mapped files this process holds in memory now (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile")


@LINUX_PAGES
@pytest.mark.parametrize(
    "whole_file_pass",
    [
        lambda view: first_invalid_utf8(view),
        lambda view: LogIndex(view).has_cr,
        lambda view: LogIndex(view, has_cr=False).has_escape,
        lambda view: LogIndex(view, has_cr=False).rfind("never"),  # (a healthy marker looked for)
        pytest.param(
            lambda view: prefilter.automaton_scan(LogIndex(view, has_cr=False), ["never", "zzz"]),
            marks=NEEDS_AUTOMATON,
        ),
        pytest.param(
            lambda view: prefilter._automaton_groups(
                LogIndex(view, has_cr=False), [["never"], ["zzz"]], 0, []
            ),
            marks=NEEDS_AUTOMATON,
        ),
    ],
    ids=["utf8", "cr", "escape", "rfind", "automaton", "automaton-groups"],
)
def test_a_whole_file_pass_does_not_keep_the_file_in_memory(whole_file_pass, tmp_path: Path) -> None:
    size = 48 << 20
    path = tmp_path / "big.log"
    line = "INFO 10-03 21:00:10 [loggers.py:123] a line of a log \u2026 with a character\n".encode()
    path.write_bytes(line * (size // len(line)))
    view = mapped(path)
    before = _file_rss()
    whole_file_pass(view)
    assert _file_rss() - before < size // 4
    assert view[-len(line) :] == line


PEAK_SCRIPT = """
import mmap, sys
from vllm_log_lsp.core import prefilter
from vllm_log_lsp.core.text import LogIndex

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

with open(sys.argv[1], "rb") as handle:
    view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
index = LogIndex(view, has_cr=False)
before = peak()
if sys.argv[2] == "scan":
    prefilter.automaton_scan(index, ["never", "zzz"])
else:
    prefilter._automaton_groups(index, [["never"], ["zzz"]], 0, [])
print(peak() - before)
"""


@NEEDS_AUTOMATON
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux")
@pytest.mark.parametrize("way", ["scan", "groups"])
def test_the_automaton_never_holds_the_whole_file(way: str, tmp_path: Path) -> None:
    """The automaton searches a mapped file a piece at a time, releasing each: the process's
    peak memory grows by a few pieces, not by the file (a large log with rare candidates)."""
    import subprocess
    import sys

    size = 64 << 20
    path = tmp_path / "big.log"
    path.write_bytes(b"INFO a healthy line of a log, nothing to find here at all\n" * (size // 60))
    grown = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(path), way], capture_output=True, text=True, check=True
    ).stdout
    assert int(grown) < size // 4


@NEEDS_AUTOMATON
@LINUX_PAGES
def test_finding_and_numbering_lines_spread_over_a_file_leaves_it_released(tmp_path: Path) -> None:
    """Reading around each candidate maps the pages near it (and the kernel maps neighbours
    with them), numbering counts every line break before it: both are released behind."""
    size = 48 << 20
    path = tmp_path / "big.log"
    block = b"INFO a healthy line of a log, nothing to find here at all\n" * 2000 + b"ERROR Error here\n"
    path.write_bytes(block * (size // len(block)))
    view = mapped(path)
    before = _file_rss()
    found = prefilter.candidate_lines_by_group(LogIndex(view, has_cr=False), [["Error"], ["never"]])
    assert len(found[0]) == size // len(block)
    assert found[0][1][1] == 4001
    assert _file_rss() - before < size // 4


@LINUX_PAGES
def test_the_scan_lets_go_of_the_pages_it_has_passed(tmp_path: Path) -> None:
    """A scan whose candidates and tracebacks spread over the whole file reads every part of it:
    the pages behind it are released as it goes, and the scan equals the one over the bytes."""
    from support import scan_values
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.scan import scan_lines

    size = 40 << 20
    block = (
        b"INFO 10-03 21:00:10 [loggers.py:123] a line of a log, nothing to find here at all\n" * 60
        + b"ERROR 10-03 21:00:11 [serving_chat.py:245] Traceback (most recent call last):\n"
        + b'ERROR 10-03 21:00:11 [serving_chat.py:245]   File "/x/vllm/a.py", line 1, in f\n'
        + b"ERROR 10-03 21:00:11 [serving_chat.py:245]     f()\n"
        + b"ERROR 10-03 21:00:11 [serving_chat.py:245] ValueError: bad request\n"
    )
    data = block * (size // len(block))
    path = tmp_path / "big.log"
    path.write_bytes(data)
    view = mapped(path)
    before = _file_rss()
    catalog = builtin_catalog()
    scan = scan_lines(LogIndex(view, has_cr=False), catalog)
    assert _file_rss() - before < size // 4
    assert len(scan.tracebacks) == size // len(block)
    small = data[: len(block) * 50]
    with pytest.MonkeyPatch.context() as patch:
        from vllm_log_lsp.core import scan as scan_module

        patch.setattr(scan_module, "_RELEASE_STEP", len(block) * 3)  # (releases inside this part too)
        patch.setattr(scan_module, "_KEEP_BEHIND", 1)
        path.write_bytes(small)
        assert scan_values(scan_lines(LogIndex(mapped(path), has_cr=False), catalog)) == scan_values(
            scan_lines(LogIndex(small, has_cr=False), catalog)
        )


CHECK_PEAK_SCRIPT = """
import sys
from vllm_log_lsp import batch
from vllm_log_lsp.core.catalog import builtin_catalog

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

catalog = builtin_catalog()
before = peak()
outcome = batch.check_file(sys.argv[1], catalog, batch.CheckOptions())
[incident] = outcome.entry["incidents"]
print(peak() - before, incident["root_cause"]["line"])
"""


@LINUX_PAGES
def test_check_numbers_its_report_without_mapping_the_whole_file_again(tmp_path: Path) -> None:
    """`check` numbers the report's lines as `grep -n` does from the index, which knows the file
    has no `\\r`: it does not search every page for one again (which held them all)."""
    import subprocess
    import sys

    from support import FORMATS

    size = 48 << 20
    healthy = b"INFO 10-03 21:00:10 [loggers.py:123] a line of a log, nothing to find here at all\n"
    crash = (FORMATS / "tp2-worker-oom.log").read_bytes()
    path = tmp_path / "big.log"
    path.write_bytes(healthy * (size // len(healthy)) + crash)
    grown, line = subprocess.run(
        [sys.executable, "-c", CHECK_PEAK_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert int(line) == size // len(healthy) + 27
    assert int(grown) < size // 4


@LINUX_PAGES
@pytest.mark.parametrize("has_cr", [False, True])
def test_counting_far_into_a_mapped_file_lets_go_of_the_pages_counted(has_cr: bool, tmp_path: Path) -> None:
    """Numbering a line far into a file (a file's first candidate near its end) counts every
    line break before it, and lets go of the pages it counted through; short counts are as
    before, and the numbers are the file's."""
    size = 48 << 20
    line = (
        b"INFO 10-03 21:00:10 [loggers.py:123] a line of a log\r\n" if has_cr else b"INFO a line of a log\n"
    )
    path = tmp_path / "big.log"
    path.write_bytes(line * (size // len(line)))
    view = mapped(path)
    index = LogIndex(view, has_cr=has_cr)
    before = _file_rss()
    assert index.line_of(len(view) - 1) == size // len(line) - 1
    assert _file_rss() - before < size // 4
    assert index.line_of(len(line) * 7 + 3) == 7
    assert index.line_of(len(view) - len(line) * 2) == size // len(line) - 2
