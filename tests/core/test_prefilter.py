"""The tool-accelerated pre-filter (rg, grep) finds exactly the lines the pure-Python scan finds."""

from __future__ import annotations

import mmap
import shutil
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, crash_labels, unavailable
from vllm_log_lsp.core import prefilter
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.text import LogIndex

LITERALS = ["Traceback (most recent call last)", "Error", "died unexpectedly", "模型", "█  version"]


def tool(kind: str) -> prefilter.Tool:
    """The tool, or a skip (a failure in CI, which installs both)."""
    found = prefilter.search_tool([kind])
    if found is None:
        unavailable(f"{kind} is not installed", "bash scripts/install/05-system.sh")
    return found


TOOLS = pytest.mark.parametrize("kind", prefilter.TOOLS)


def sample_texts() -> list[str]:
    texts = [
        (CRASH / label["file"]).read_text(encoding="utf-8", errors="replace") for label in crash_labels()
    ]
    texts.append("ascii only\nError here\n\nTraceback (most recent call last):\n")
    texts.append("模型 Error 😀\n€€€\n  died unexpectedly 模型\nno\n")
    texts.append("\ufeffbom first: Error\n")
    return texts


@TOOLS
@pytest.mark.parametrize("text", sample_texts(), ids=lambda t: str(len(t)))
def test_tools_and_python_agree(kind: str, text: str) -> None:
    search = tool(kind)
    python = prefilter._python_scan(LogIndex(text), sorted(LITERALS), 0)
    expected_lines = [LogIndex(text).line_of(o) for o, _ in python]
    as_str = prefilter.candidate_lines(LogIndex(text), LITERALS, tool=search)
    assert [o for o, _ in as_str] == [o for o, _ in python]
    assert [n for _, n in as_str] == expected_lines
    # Over bytes the offsets are byte offsets: compare line numbers.
    as_bytes = prefilter.candidate_lines(LogIndex(text.encode("utf-8")), LITERALS, tool=search)
    assert [n for _, n in as_bytes] == expected_lines


@TOOLS
@pytest.mark.parametrize("text", sample_texts(), ids=lambda t: str(len(t)))
def test_a_text_with_its_line_table_is_piped_in_pieces(kind: str, text: str, monkeypatch) -> None:
    """An editor's text is piped a few characters at a time; line numbers give the offsets."""
    search = tool(kind)
    monkeypatch.setattr(prefilter, "_PIPE_CHUNK", 7)  # pieces end inside characters' lines
    expected = prefilter._python_scan(LogIndex(text), sorted(LITERALS), 0)
    index = LogIndex.following(text, None)
    assert index.has_line_table
    for begin in (0, index.line_start(index.line_count // 2)):
        found = prefilter.candidate_lines(index, LITERALS, begin, tool=search)
        assert [o for o, _ in found] == [o for o, _ in expected if o >= begin]
        assert [n for _, n in found] == [index.line_of(o) for o, _ in found]


@TOOLS
def test_a_file_is_read_by_the_tool(kind: str, tmp_path, monkeypatch) -> None:
    search = tool(kind)
    monkeypatch.setattr(prefilter, "search_tool", lambda kinds=prefilter.TOOLS: search)
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    path = tmp_path / "crash.log"
    data = (CRASH / "032.log").read_bytes()
    path.write_bytes(data)
    via_file = analyze(data, path=str(path))
    plain = analyze(data.decode("utf-8", "replace"))
    assert [(f.line, f.rule_id, f.root) for f in via_file.findings] == [
        (f.line, f.rule_id, f.root) for f in plain.findings
    ]


@TOOLS
def test_from_an_offset(kind: str) -> None:
    search = tool(kind)
    text = (CRASH / "011.log").read_text(encoding="utf-8")
    begin = len(text) // 2
    expected = prefilter._python_scan(LogIndex(text), sorted(LITERALS), begin)
    found = prefilter.candidate_lines(LogIndex(text), LITERALS, begin, tool=search)
    assert [o for o, _ in found] == [o for o, _ in expected]


@TOOLS
def test_bare_carriage_returns_split_the_tools_lines(kind: str) -> None:
    """The tools end lines at `\n` only: from the text's start their lines are split at each
    bare `\r` into LSP's, numbered; from an offset the in-process search answers (numbers left
    to count). An editor's text with and without its line table, and a file's bytes."""
    text = "a\rError\rb\nx Error\r\n模\rError"
    search = tool(kind)
    with_table = LogIndex(text)
    with_table._build()  # (its line table)
    for index in (LogIndex(text), with_table, LogIndex(text.encode("utf-8"))):
        expected = [(2, 1), (10, 3), (23 if index.is_bytes else 21, 5)]
        assert prefilter.candidate_lines(index, ["Error"], tool=search) == expected
        assert prefilter.candidate_lines(index, ["Error"], 3, tool=search) == [
            (s, None) for s, _ in expected[1:]
        ]


def test_without_tools_the_python_scan_is_used(monkeypatch) -> None:
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    monkeypatch.setenv("VLLM_LOG_LSP_NO_GREP", "1")
    assert prefilter.search_tool() is None
    text = (CRASH / "007.log").read_text(encoding="utf-8")
    assert all(n is None for _, n in prefilter.candidate_lines(LogIndex(text), LITERALS))
    assert [f.line + 1 for f in analyze(text).findings] == [72]


def test_tools_are_preferred_in_order() -> None:
    found = prefilter.search_tool()
    expected = next((k for k in prefilter.TOOLS if shutil.which(k)), None)
    assert (found[0] if found else None) == expected


def automaton_available() -> None:
    """Skip without ahocorasick-rs (a failure in CI, whose test extra installs it)."""
    if prefilter._automaton(("x",)) is None:
        unavailable("ahocorasick-rs is not installed", "bash scripts/install/10-python.sh")


CR_TEXTS = ["a\rError\rb\n", "x\r\nError Exception\r\n模型\rError", "Error"]


@pytest.mark.parametrize("text", sample_texts() + CR_TEXTS, ids=lambda t: str(len(t)))
def test_the_automaton_finds_what_find_finds(text: str, tmp_path, monkeypatch) -> None:
    automaton_available()
    monkeypatch.setattr(prefilter, "_AUTOMATON_PIECE", 5)  # many pieces, ending after a `\n`
    path = tmp_path / "log"
    path.write_bytes(text.encode("utf-8"))
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if text else b""
        for source in (text, text.encode("utf-8"), mapped):
            index = LogIndex(source)
            for begin in (0, index.line_start(index.line_count // 2)):
                expected = prefilter._python_scan(index, sorted(LITERALS), begin)
                assert prefilter.automaton_scan(index, sorted(LITERALS), begin) == expected


def test_without_rg_the_automaton_comes_before_grep(monkeypatch) -> None:
    automaton_available()
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)
    monkeypatch.setattr(
        prefilter, "search_tool", lambda kinds=prefilter.TOOLS: None if "rg" in kinds else ("grep", "grep")
    )
    text = (CRASH / "007.log").read_text(encoding="utf-8")
    # Offsets without line numbers: the automaton answered, not grep (which numbers its lines).
    found = prefilter.candidate_lines(LogIndex(text), LITERALS)
    assert found == prefilter._python_scan(LogIndex(text), sorted(LITERALS), 0)
    monkeypatch.setattr(prefilter, "_automaton", lambda literals: None)
    assert all(n is not None for _, n in prefilter.candidate_lines(LogIndex(text), LITERALS))


# Pieces that make literals overlap, nest and share prefixes (`Error` in `ValueError`, `Err` in
# `Error`), split by line breaks of every kind and non-ASCII text.
_PIECES = ["Error", "Err", "rror", "ValueError", "or: ", "x", " ", "模型", "\n", "\r\n", "\r"]


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=40),
    literals=st.lists(st.sampled_from(["Error", "Err", "rror", "or: ", "ValueError", "r", "模"]), min_size=1),
)
@settings(max_examples=200, deadline=None)
def test_leftmost_first_matching_hits_every_line_holding_a_literal(
    pieces: list[str], literals: list[str]
) -> None:
    """The automaton reports non-overlapping leftmost-first matches (so the crate can use its
    SIMD prefilter): a literal hidden inside another's match is still on a line already taken."""
    automaton_available()
    text = "".join(pieces)
    for source in (text, text.encode("utf-8")):
        index = LogIndex(source)
        expected = prefilter._python_scan(index, sorted(set(literals)), 0)
        assert prefilter.automaton_scan(index, sorted(set(literals)), 0) == expected


@given(
    st.lists(
        st.sampled_from(["Error", "Err", "模型", "\ud800", "\U0001f600", "x", "\n", "\r\n", "\r"]),
        max_size=30,
    ),
    st.sampled_from([3, 7, 1 << 22]),
)
@settings(max_examples=150, deadline=None)
def test_an_editors_text_searched_as_utf8_finds_what_find_finds(pieces: list[str], piece: int) -> None:
    """An editor's text is searched as UTF-8 a piece at a time; the matches' starts are counted
    back in characters (non-ASCII, astral and lone-surrogate characters before them)."""
    automaton_available()
    text = "".join(pieces)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "_AUTOMATON_PIECE", piece)
        for literals in (["Error"], ["Err", "模型"], ["x", "Error"]):
            index = LogIndex(text)
            assert prefilter.automaton_scan(index, literals, 0) == prefilter._python_scan(index, literals, 0)


def test_over_bytes_the_automaton_comes_before_rg(monkeypatch) -> None:
    automaton_available()
    tool("rg")
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)
    data = (CRASH / "007.log").read_bytes()
    found = prefilter.candidate_lines(LogIndex(data), LITERALS)
    # Offsets without line numbers: the automaton answered, not rg (which numbers its lines).
    assert found == prefilter._python_scan(LogIndex(data), sorted(LITERALS), 0)
    assert all(n is None for _, n in found)
    # An editor's str goes to rg first.
    text = data.decode("utf-8")
    assert all(n is not None for _, n in prefilter.candidate_lines(LogIndex(text), LITERALS))


def literal_groups(pool: list[str], min_size: int) -> st.SearchStrategy[list[list[str]]]:
    """Up to three groups of up to three literals each, drawn from `pool`."""
    return st.lists(st.lists(st.sampled_from(pool), max_size=3), min_size=min_size, max_size=3)


# -- one search for several groups of literals (the scan's and the stats') ----------------------
# Groups that share a literal, whose literals overlap across groups (`or: ` ends where `rror`'s
# `r` is; `Error` holds `rror`) or nest, a group no line holds, and an empty one.
_GROUPS = [
    [["Error", "模"], ["rror", "or: "], ["Err", "ValueError"]],
    [["ValueError"], ["Error"]],
    [["or: ", "x"], []],
    [["never here"], ["Err"]],
]
_WAYS = ["file", "automaton", "tool", "python", "union"]


def _search_way(way: str, monkeypatch) -> None:
    """Make `candidate_lines_by_group` search one way (the automaton in a thread, one rg or grep
    process over the union, or `find`)."""
    if way == "file":  # rg reading the file, when the index has its path (else the automaton)
        tool("rg")
        automaton_available()
        monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
        monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)
    if way == "automaton":
        automaton_available()
        monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)
    else:
        monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 1 << 60)
    if way == "tool":
        tool("rg")
        monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    if way == "python":
        monkeypatch.setenv("VLLM_LOG_LSP_NO_GREP", "1")
    if way == "union":  # one search over the union, each line then split (no automaton: the vsix)
        monkeypatch.setattr(prefilter, "_automaton", lambda literals: None)
        monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)


def _each_alone(source, groups: list[list[str]], begin: int) -> list[list[tuple[int, int]]]:
    """What one `candidate_lines` pass per group gives, numbered by a fresh index."""
    alone = []
    for group in groups:
        index = LogIndex(source)
        found = prefilter._python_scan(index, sorted(set(group)), begin) if group else []
        alone.append([(start, LogIndex(source).line_of(start)) for start, _ in found])
    return alone


@pytest.mark.parametrize("way", _WAYS)
@pytest.mark.parametrize("groups", _GROUPS, ids=str)
@pytest.mark.parametrize("text", sample_texts()[-3:] + CR_TEXTS + [""], ids=lambda t: str(len(t)))
def test_one_search_gives_each_group_what_its_own_search_gives(
    way: str, groups: list[list[str]], text: str, tmp_path, monkeypatch
) -> None:
    """Each group gets exactly the lines of a search for it alone, numbered as counting numbers
    them: over a str, bytes and a mapped file, from the start and from a later line."""
    _search_way(way, monkeypatch)
    path = tmp_path / "log"
    path.write_bytes(text.encode("utf-8"))
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if text else b""
        for source in (text, text.encode("utf-8"), mapped):
            for begin in (0, LogIndex(source).line_start(LogIndex(source).line_count // 2)):
                file = str(path) if way == "file" and not isinstance(source, str) else None
                found = prefilter.candidate_lines_by_group(LogIndex(source, file), groups, begin)
                assert found == _each_alone(source, groups, begin)


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=40),
    groups=literal_groups(["Error", "Err", "rror", "or: ", "ValueError", "r", "模", " "], min_size=1),
)
@settings(max_examples=150, deadline=None)
def test_one_search_splits_lines_by_group_for_any_literals(
    pieces: list[str], groups: list[list[str]]
) -> None:
    """A line goes to every group with a literal in it and to no other, however the groups'
    literals overlap (the tools' lines are split by `find`; the automaton searches per group)."""
    text = "".join(pieces)
    with pytest.MonkeyPatch.context() as patch:
        for way in ("automaton", "python", "union"):
            _search_way(way, patch)
            for source in (text, text.encode("utf-8")):
                assert prefilter.candidate_lines_by_group(LogIndex(source), groups) == _each_alone(
                    source, groups, 0
                )


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=40),
    groups=literal_groups(["Error", "rror", "or: ", "模", "x"], min_size=1),
)
@settings(max_examples=100, deadline=None)
def test_rg_over_a_file_with_bare_crs_gives_lsp_lines(
    pieces: list[str], groups: list[list[str]], tmp_path_factory
) -> None:
    """rg numbers `\n` lines; over a file whose lines also end at a bare `\r` (progress bars),
    its rows become the LSP lines (each piece of a `\n` line that holds a literal) that a
    search counting LSP's line breaks finds, numbered the same."""
    text = "".join(pieces)
    path = tmp_path_factory.mktemp("cr") / "log"
    path.write_bytes(text.encode("utf-8"))
    rg = tool("rg")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "TOOL_THRESHOLD", 0)
        patch.setattr(prefilter, "search_tool", lambda kinds=None: rg)
        index = LogIndex(path.read_bytes(), str(path))
        found = prefilter._file_tool_groups(index, [sorted(set(g)) for g in groups], 0, [])
    assert found == _each_alone(text.encode("utf-8"), groups, 0)
    # An editor's text piped to rg, with and without its line table, the same lines numbered.
    for group, alone in zip(groups, _each_alone(text, groups, 0), strict=True):
        for table in (False, True):
            index = LogIndex(text)
            if table:
                index._build()
            found_lines = prefilter.candidate_lines(index, group, tool=rg) if group else []
            assert [(start, LogIndex(text).line_of(start)) for start, _ in found_lines] == alone
            assert all(number in (None, LogIndex(text).line_of(start)) for start, number in found_lines)


def _overlap_by_placement(a: str, b: str) -> bool:
    """Whether `b` can be placed over `a` (at any shift) so that they share a position and agree
    on every character they share: the definition `_may_overlap` decides faster."""
    for shift in range(-len(b) + 1, len(a)):
        shared = range(max(0, shift), min(len(a), shift + len(b)))
        if shared and all(a[i] == b[i - shift] for i in shared):
            return True
    return False


@given(st.text("ab模", min_size=1, max_size=5), st.text("ab模", min_size=1, max_size=5))
def test_literals_overlap_when_some_placement_shares_a_character(a: str, b: str) -> None:
    assert prefilter._may_overlap(a, b) == _overlap_by_placement(a, b)


@given(
    pieces=st.lists(st.sampled_from([*_PIECES, "Avg ", "x y", "(restarting)"]), max_size=40),
    groups=literal_groups(["Error", "Avg ", "模型", "x y", "(restarting)", "Err", "rror"], min_size=2),
)
@settings(max_examples=150, deadline=None)
def test_one_automaton_pass_gives_each_group_its_lines_by_the_literals_matched(
    pieces: list[str], groups: list[list[str]]
) -> None:
    """Over an editor's text with a bare `\r` (the automaton searches the union), each group gets
    the lines of a search for it alone, from the literals the automaton matched and those of
    other groups a match may have hidden (`Err` starts `Error`, `rror` ends it, `(restarting)`
    and `x y` share no character with the others)."""
    automaton_available()
    text = "".join(pieces) + "\r"  # (a bare `\r`: the automaton, not rg, searches an editor's text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)
        by_literal = []
        real = prefilter._automaton_by_group
        patch.setattr(
            prefilter, "_automaton_by_group", lambda *a: by_literal.append(real(*a)) or by_literal[-1]
        )
        found = prefilter.candidate_lines_by_group(LogIndex(text), groups)
    assert found == _each_alone(text, groups, 0)
    assert (by_literal not in ([], [None])) == any(groups)  # (the automaton's pass answered)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_rg_reads_no_line_past_the_end_of_a_file_mapped_before_it_grew(ending: str, tmp_path) -> None:
    """A log still being written: rg reads the file as it is when it runs, longer than the text
    mapped before; the lines past the mapped end are not the text's."""
    rg = tool("rg")
    path = tmp_path / "log"
    text = "".join(f"INFO line {n}{ending}ERROR x: Error {n}{ending}" for n in range(200))
    path.write_bytes(text.encode())
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        with open(path, "ab") as more:
            more.write(text.encode())  # (after the mapping)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(prefilter, "TOOL_THRESHOLD", 0)
            patch.setattr(prefilter, "search_tool", lambda kinds=None: rg)
            found = prefilter._file_tool_groups(LogIndex(mapped, str(path)), [["Error"], ["INFO"]], 0, [])
            alone = prefilter.candidate_lines(LogIndex(mapped, str(path)), ["Error"], tool=rg)
        assert found == _each_alone(text.encode(), [["Error"], ["INFO"]], 0)
        assert [start for start, _ in alone] == [start for start, _ in found[0]]


@given(
    pieces=st.lists(
        st.sampled_from(["ERR9999", "ERR1234", "Error", "x 12: ", "9999: ", "模", "\n", "\r\n"]), max_size=40
    ),
    groups=literal_groups(["ERR9999", "9999: ", "Error", "ERR", "2: ", "模"], min_size=2),
)
@settings(max_examples=150, deadline=None)
def test_lines_of_one_layout_split_by_the_literals_they_hold(
    pieces: list[str], groups: list[list[str]]
) -> None:
    """Without the automaton, one search over the union is split line by line, per layout (the
    line with its digits masked) for literals without a digit: lines of one layout differing
    only in their digits (`ERR9999`, `ERR1234`) still go to the groups of the literals with a
    digit that each holds."""
    text = "".join(pieces)
    with pytest.MonkeyPatch.context() as patch:
        _search_way("union", patch)
        for source in (text, text.encode("utf-8")):
            assert prefilter.candidate_lines_by_group(LogIndex(source), groups) == _each_alone(
                source, groups, 0
            )


@pytest.mark.parametrize("first", ["ERR1234", "ERR9999"])
def test_lines_that_differ_in_digits_only_hold_their_own_literals(first: str) -> None:
    """`ERR1234 Error` and `ERR9999 Error` are one layout; only the second holds `ERR9999`,
    whichever comes first."""
    other = "ERR9999" if first == "ERR1234" else "ERR1234"
    text = f"{first} Error\n{other} Error\n{first} x\n"
    groups = [["ERR9999"], ["Error"]]
    with pytest.MonkeyPatch.context() as patch:
        _search_way("union", patch)
        for source in (text, text.encode("utf-8")):
            found = prefilter.candidate_lines_by_group(LogIndex(source), groups)
            assert found == _each_alone(source, groups, 0)
            assert len(found[0]) == (2 if first == "ERR9999" else 1)


@pytest.mark.parametrize("way", _WAYS)
def test_the_work_meanwhile_runs_once_whichever_way_searches(way: str, monkeypatch) -> None:
    _search_way(way, monkeypatch)
    path = CRASH / "007.log"
    data = path.read_bytes()
    calls = []
    index = LogIndex(data, str(path))
    groups = [LITERALS, ["INFO"], []]
    found = prefilter.candidate_lines_by_group(index, groups, meanwhile=lambda: calls.append(1))
    assert calls == [1]
    assert found == _each_alone(data, groups, 0)


def test_a_file_on_disk_is_read_and_numbered_by_rg_beside_the_work(tmp_path, monkeypatch) -> None:
    """rg numbers the lines (the numbers come with them: the index counted none), and its
    processes run while the work meanwhile does (the work sees them started)."""
    tool("rg")
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    path = tmp_path / "log"
    data = (CRASH / "011.log").read_bytes()
    path.write_bytes(data)
    index = LogIndex(data, str(path))
    started = []
    real_popen = __import__("subprocess").Popen

    def popen(*args, **kwargs):
        started.append(args[0][0])
        return real_popen(*args, **kwargs)

    monkeypatch.setattr("subprocess.Popen", popen)
    counted = []
    breaks = LogIndex._breaks
    monkeypatch.setattr(LogIndex, "_breaks", lambda self, *span: counted.append(span) or breaks(self, *span))
    seen_meanwhile = []
    found = prefilter.candidate_lines_by_group(
        index, [LITERALS, ["INFO"]], meanwhile=lambda: seen_meanwhile.append(len(started))
    )
    assert seen_meanwhile == [2]  # both processes started before the work ran
    assert counted == []
    assert found == _each_alone(data, [LITERALS, ["INFO"]], 0)


def test_a_failed_search_fails_the_caller(monkeypatch) -> None:
    """An error in the search thread is raised in the caller's, after the work meanwhile."""
    automaton_available()
    monkeypatch.setattr(prefilter, "AUTOMATON_THRESHOLD", 0)

    class BrokenAutomaton:
        def find_matches_as_indexes(self, haystack):
            raise RuntimeError("search failed")

    monkeypatch.setattr(prefilter, "_automaton", lambda literals: BrokenAutomaton())
    done = []
    with pytest.raises(RuntimeError, match="search failed"):
        prefilter.candidate_lines_by_group(
            LogIndex(b"Error\n"), [["Error"]], meanwhile=lambda: done.append(1)
        )
    assert done == [1]


@pytest.mark.parametrize("sort_at_most", [1 << 20, 0], ids=["sorted", "merged"])
@pytest.mark.parametrize("way", ["automaton", "python"])
def test_the_groups_lines_are_numbered_in_one_ascending_sweep(
    way: str, sort_at_most: int, monkeypatch
) -> None:
    """Lines found without numbers are counted in ascending order over all the groups (however
    their lines interleave or coincide): no line break is counted twice, none after the last
    line found. (A few lines are sorted in one list, many merged group by group: both ways.)"""
    _search_way(way, monkeypatch)
    monkeypatch.setattr(prefilter, "_SORT_AT_MOST", sort_at_most)
    lines = [f"{i} " + ("Error " if i % 3 == 0 else "") + ("INFO " if i % 5 < 2 else "") for i in range(400)]
    data = ("\n".join(lines) + "\nnothing more\n" * 50).encode()
    counted: list[tuple[int, int]] = []
    breaks = LogIndex._breaks
    monkeypatch.setattr(LogIndex, "_breaks", lambda self, *span: counted.append(span) or breaks(self, *span))
    groups = [["INFO"], ["Error"], ["Error", "INFO"]]
    found = prefilter.candidate_lines_by_group(LogIndex(data), groups)
    spans = list(counted)  # (not what the reference below counts)
    assert found == _each_alone(data, groups, 0)
    assert all(end <= start for (_, end), (start, _) in pairwise(spans))
    last = max(start for group in found for start, _ in group)
    assert sum(end - start for start, end in spans) <= last


def test_numbering_holds_no_set_or_dict_of_every_line() -> None:
    """Numbering lines that come numbered (rg's) allocates a few bytes per line (two arrays of
    the distinct lines), not a record per line: the all-ERROR log has hundreds of thousands."""
    import tracemalloc

    count = 100_000
    data = b"Error\n" * count
    found = [[(6 * i, i) for i in range(count)], [(6 * i, i) for i in range(0, count, 2)]]
    index = LogIndex(data)
    tracemalloc.start()
    try:
        prefilter._number_in_order(index, found)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found[1][:3] == [(0, 0), (12, 2), (24, 4)]
    assert peak < 40 * count


@TOOLS
@given(
    lines=st.lists(
        st.lists(
            st.sampled_from(["12:34:", "Error", "r", "x" * 300, ":", "0:", "\x00", "模", " "]), max_size=5
        ).map("".join),
        max_size=30,
    )
)
@settings(max_examples=40, deadline=None)
def test_a_tools_rows_are_read_by_their_numbers_whatever_the_lines_hold(kind: str, lines: list[str]) -> None:
    """rg prints only the numbers of a line longer than a byte; lines that look like rows
    themselves, one-byte lines, long lines, empty lines: every line is found as `find` finds it."""
    text = "\n".join(lines)
    literals = ["Error", "r", "模"]
    expected = [
        (start, LogIndex(text).line_of(start))
        for start, _ in prefilter._python_scan(LogIndex(text), literals, 0)
    ]
    found = prefilter.candidate_lines(LogIndex(text.encode("utf-8")), literals, tool=tool(kind))
    assert [number for _, number in found] == [number for _, number in expected]


@pytest.mark.parametrize(
    ("output", "rows"),
    [
        (b"", []),
        (b"3:10:text\n", [(10, 2)]),
        (b"3:10:[Omitted long line with 2 matches]\n7:99:r\n", [(10, 2), (99, 6)]),
        (b"3:10:no final newline", [(10, 2)]),
        (b"3:10:12:34:a row's text\n5:0:7:8:\n", [(10, 2), (0, 4)]),
        (b"3:10:a\nnot a row\n", None),
        (b"3:10:a\n\n", None),
        (b"3:x:a\n", None),
        (b"3:10\n", None),
    ],
)
def test_a_tools_output_is_read_as_rows_or_refused(output: bytes, rows) -> None:
    assert prefilter.parse_rows(output) == rows
