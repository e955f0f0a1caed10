"""Per-candidate checks with a literal pre-check give what the plain searches give.

- A wrapper (`incidents._is_wrapper`) is recognised by trying only the wrapper patterns whose
  required text (`Pattern.required`, or one of its alternatives' runs) the exception text holds:
  it is the same as searching every wrapper pattern, on texts each pattern's own regex
  generates (embedded in other text), on texts made of pieces of the patterns' literals, and on
  every exception the corpus prints.
- `catalog.required_alternatives`: every match of a pattern of top-level alternatives holds one
  of the runs it names (matches generated from the regex), for the catalog's patterns and for
  patterns written to its principle: none for a case-insensitive pattern, an alternative without
  a literal, or alternatives under a common prefix or inside a group.
- Run starts are found once, by the pre-filter's group of the markers' literals searched with the
  candidates (`scan._RunStartsAhead`), and then looked up per candidate line: the scan's run
  starts are those of asking every candidate line, on the corpus and on texts of markers in and
  out of place, in tracebacks, past a long line's cut, with both line breaks, as text and as
  bytes, searched by the scan itself or by the analysis (with the stats' group; a file read by
  rg; a log that grew).
- A death's last line (`incidents._death_end`) takes the tracebacks under its symptoms from a
  list sorted by header line: the same as looking at every traceback, on the corpus and with
  tracebacks out of order or sharing a header line.
- A growing log's candidates keep their recognised wrappers for the part its scan kept
  (`Analyzer._unwrap`): equal to recognising the whole scan afresh, cut anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import CRASH, CRASH2, CRASH3, read_log, record_tool_searches
from vllm_log_lsp.core.analyze import Analyzer
from vllm_log_lsp.core.catalog import Catalog, Pattern, builtin_catalog, required_alternatives
from vllm_log_lsp.core.incidents import (
    Incident,
    _death_end,
    _is_wrapper,
    _required_texts,
    group_incidents,
    unwrap_candidates,
    wrapper_patterns,
)
from vllm_log_lsp.core.records import replace
from vllm_log_lsp.core.scan import Candidate, Scan, _run_start, scan_lines
from vllm_log_lsp.core.text import LogIndex

CATALOG = builtin_catalog()
LOGS = sorted([*CRASH.glob("*.log"), *CRASH2.glob("*.log"), *CRASH3.glob("*.log")])
WRAPPERS = wrapper_patterns(CATALOG)


def plain_is_wrapper(catalog: Catalog, text: str) -> bool:
    """The specification: any symptom marked `wrapper`, or any wrapper marker, finds the text."""
    markers = [m for m in catalog.markers_of("symptom") if m.wrapper] + catalog.markers_of("wrapper")
    return any(m.pattern.compiled.search(text) for m in markers)


def test_every_wrapper_marker_is_tried() -> None:
    """Not vacuous: the catalog has wrappers of both kinds, some with nothing required."""
    kinds = {m.kind for m in CATALOG.markers_of("wrapper")} | {
        m.kind for m in CATALOG.markers_of("symptom") if m.wrapper
    }
    assert kinds == {"wrapper", "symptom"}
    assert len(WRAPPERS) == len(CATALOG.markers_of("wrapper")) + sum(
        m.wrapper for m in CATALOG.markers_of("symptom")
    )
    assert any(len(required) > 1 for required, _ in WRAPPERS)  # alternatives, each required


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([pattern.source for _, pattern in WRAPPERS]).flatmap(
        lambda source: st.from_regex(source, fullmatch=True)
    ),
    st.text(max_size=20),
    st.text(max_size=20),
)
def test_text_a_wrapper_pattern_generates_is_recognised(match: str, before: str, after: str) -> None:
    for text in (match, before + match + after, f"RuntimeError: {match}"):
        assert _is_wrapper(WRAPPERS, text) == plain_is_wrapper(CATALOG, text)


_PIECES = sorted(
    {piece for required, _ in WRAPPERS for piece in required} | {"Error", "failed", ": ", " ", "\n"}
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=8))
def test_texts_of_the_required_pieces_give_the_plain_answer(pieces: list[str]) -> None:
    """Texts holding required literals (whole, or one beside another) and the words around them."""
    text = "".join(pieces)
    assert _is_wrapper(WRAPPERS, text) == plain_is_wrapper(CATALOG, text)


def test_corpus_exceptions_give_the_plain_answer() -> None:
    texts = {c.event.text for path in LOGS for c in scan_lines(LogIndex(read_log(path)), CATALOG).events}
    found = [text for text in texts if plain_is_wrapper(CATALOG, text)]
    assert found and len(found) < len(texts)  # both answers occur
    for text in texts:
        assert _is_wrapper(WRAPPERS, text) == plain_is_wrapper(CATALOG, text), text


_SOURCES = {
    "ab|cd": ("ab", "cd"),
    "(?:x|y)ab|cd(?:e|f)gh": ("ab", "cd"),  # (the longest run, the first of equals)
    "a+b?cde|f{2}g": ("cde", "f"),  # (a repeat holds its body's run once)
    "\\bdied\\.?$|RuntimeError: died": ("died", "RuntimeError: died"),
    "a.{0,9}?bcd|efg(?:hi)?": ("bcd", "efg"),
    "(?i)abc|def": (),
    "abc|(?i:def)": (),
    "abc|\\d+": (),
    "abc|d?ef*": ("abc", "e"),
    "abc|d?e*": (),
    "abc": (),  # no alternatives: `required_literal`'s case
    "(?:abc|def)": ("abc", "def"),  # (the parser drops a group around the whole)
    "(abc|def)": (),  # alternatives inside a group
    "xabc|xdef": (),  # a common prefix the parser takes out (then `required_literal` has it)
}


@pytest.mark.parametrize("source", sorted(_SOURCES))
def test_required_alternatives_of_patterns_of_each_shape(source: str) -> None:
    runs = required_alternatives(source)
    assert runs == _SOURCES[source]


_CATALOG_SOURCES = sorted(
    {
        m.pattern.source
        for kind in CATALOG.markers
        for m in CATALOG.markers_of(kind)
        if required_alternatives(m.pattern.source)
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(_SOURCES) + _CATALOG_SOURCES).flatmap(
        lambda source: st.tuples(st.just(source), st.from_regex(source))
    )
)
def test_every_match_holds_one_required_alternative(case: tuple[str, str]) -> None:
    source, text = case
    runs = required_alternatives(source)
    assert not runs or any(run in text for run in runs)


def test_catalog_has_patterns_of_required_alternatives() -> None:
    assert len(_CATALOG_SOURCES) >= 4


def test_a_pattern_of_another_engine_requires_nothing() -> None:
    """A user's pattern run by `regex` (with a time limit) is searched whatever the text holds:
    the stdlib parser may read its syntax otherwise."""
    assert _required_texts(Pattern("ab|cd", None, None)) == ("ab", "cd")
    assert _required_texts(Pattern("ab|cd", 0.5, re.compile("ab|cd"))) == ()


# -- run starts: found once up front, looked up per candidate -----------------------------------
def plain_run_starts(scan: Scan) -> list[tuple[int, str]]:
    """The specification: every line the scan classified, asked in order whether it starts a run."""
    return [found for line in scan.lines.values() if (found := _run_start(CATALOG, line)) is not None]


_RUN_LINES = [
    "INFO 10-03 21:20:01 [api_server.py:1805] vLLM API server version 0.11.0",
    "(APIServer pid=1) INFO 10-03 21:20:01 [utils.py:233] non-default args: {'model': 'm'}",
    "INFO 10-03 21:20:01 [api_server.py:1] args: Namespace(model='m')",
    "svc-1  | (APIServer pid=1) INFO 10-03 21:20:01 [api.py:1] vLLM API server version 0.10.1",
    "svc-1 exited with code 1 (restarting)",
    "█     █     █▄   ▄█  version 0.11.0",
    "ERROR 10-03 21:20:02 [core.py:1] says vLLM API server version in the middle",  # literal only
    "RuntimeError: bad args: Namespace(x=1)",  # literal, not the marker's place
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in f',
    "    print('vLLM API server version')",  # inside a traceback: consumed
    "ValueError: non-default args: in an exception line",
    "ERROR 10-03 21:20:03 [x.py:1] Error: plain",
    "x" * 20_100 + " vLLM API server version past the cut",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_RUN_LINES), max_size=30), st.sampled_from(["\n", "\r\n"]))
def test_run_starts_found_up_front_are_every_candidates_own(lines: list[str], newline: str) -> None:
    text = newline.join(lines) + newline
    for source in (text, text.encode("utf-8")):
        scan = scan_lines(LogIndex(source), CATALOG)
        assert scan.run_starts == plain_run_starts(scan)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(_RUN_LINES), max_size=30),
    st.lists(st.sampled_from(_RUN_LINES), max_size=10),
    st.sampled_from(["\n", "\r\n"]),
)
def test_run_starts_of_the_analysis_search_are_every_candidates_own(
    lines: list[str], more: list[str], newline: str
) -> None:
    # The analysis searches the markers' literals in its own search (three groups), and a grown
    # log only from where it reads again.
    text = newline.join(lines) + newline
    grown = text + newline.join(more) + newline
    for first, second in ((text, grown), (text.encode(), grown.encode())):
        analyzer = Analyzer(CATALOG)
        analyzer.analyze(first)
        analysis = analyzer.analyze(second, grown_from=first)
        scan = analyzer._scan
        assert scan is not None
        assert scan.run_starts == plain_run_starts(scan)
        read = analysis.source_map.text if analysis.source_map is not None else second  # (a transcript)
        assert scan.run_starts == scan_lines(LogIndex(read), CATALOG).run_starts
        assert analysis.run_starts == Analyzer(CATALOG).analyze(second).run_starts


def test_a_grown_log_keeps_the_run_start_of_a_restart_marker_it_does_not_read_again() -> None:
    """A restart marker's run starts on the line after it: when a re-scan starts at that line
    (an editor appended to a tailed log), the run start is kept with its marker, not dropped
    with the lines read again."""
    text = (
        "INFO 10-03 21:20:01 [api_server.py:1805] vLLM API server version 0.11.0\n"
        "svc-1 exited with code 1 (restarting)\n"
        "INFO 10-03 21:20:02 [x.py:1] hello\n"
    )
    grown = text + "INFO 10-03 21:20:03 [x.py:1] more\n"
    analyzer = Analyzer(CATALOG)
    assert analyzer.analyze(text).run_starts == (0, 2)
    assert analyzer.analyze(grown, grown_from=text).run_starts == (0, 2)
    assert analyzer.reused_offset > 0  # (the scan was reused, not redone)


def test_run_starts_of_a_file_read_by_rg_are_every_candidates_own(tmp_path, monkeypatch) -> None:
    from vllm_log_lsp.core import prefilter

    if prefilter.search_tool(("rg",)) is None:
        pytest.fail("rg is not installed (scripts/install/05-system.sh installs it)")
    monkeypatch.setattr(prefilter, "TOOL_THRESHOLD", 0)
    searched = record_tool_searches(monkeypatch)
    text = "\n".join(_RUN_LINES * 3) + "\n"
    path = tmp_path / "restarts.log"
    path.write_text(text)
    analyzer = Analyzer(CATALOG)
    analyzer.analyze(path.read_bytes(), path=str(path))
    scan = analyzer._scan
    assert [len(groups) for groups in searched] == [3]  # (the scan's, the stats', the markers')
    assert scan is not None and len(scan.run_starts) >= 6
    assert scan.run_starts == plain_run_starts(scan)


def test_the_scan_takes_candidates_and_marker_lines_together() -> None:
    index = LogIndex("\n".join(_RUN_LINES) + "\n")
    with pytest.raises(ValueError):
        scan_lines(index, CATALOG, candidates=[(0, 0)])


def test_corpus_run_starts_are_every_candidates_own() -> None:
    found = 0
    for path in LOGS:
        scan = scan_lines(LogIndex(read_log(path)), CATALOG)
        assert scan.run_starts == plain_run_starts(scan), path.name
        found += len(scan.run_starts)
    assert found > 20


# -- a death's last line: the tracebacks under its symptoms, found by bisection ------------------
def plain_death_end(scan: Scan, incident: Incident) -> int:
    """The specification: every traceback headed on a symptom's line or 1-3 lines under it, of its
    writer."""
    end = max(s.line for s, _, _ in incident.symptoms)
    for symptom, _, line in incident.symptoms:
        for tb in scan.tracebacks:
            if symptom.line <= tb.header_line <= symptom.line + 3 and tb.lines and tb.stream == line.stream:
                end = max(end, tb.lines[-1])
    return end


def test_death_ends_equal_looking_at_every_traceback() -> None:
    ends = 0
    for path in LOGS:
        index = LogIndex(read_log(path))
        scan = scan_lines(index, CATALOG)
        pools = sorted(unwrap_candidates(CATALOG, scan), key=lambda c: c.event.line)
        for incident in group_incidents(index, CATALOG, scan, pools):
            end = _death_end(scan, incident)
            assert end == plain_death_end(scan, incident), path.name
            ends += end > max(s.line for s, _, _ in incident.symptoms)
    assert ends >= 5  # not vacuous: tracebacks under symptoms end deaths


def test_death_end_with_tracebacks_found_in_any_order() -> None:
    """Tracebacks listed out of line order (a scan read again after an append) and several
    headed on one line: the bisection sees each as the plain look does."""
    extended = 0
    for path in LOGS:
        index = LogIndex(read_log(path))
        scan = scan_lines(index, CATALOG)
        pools = sorted(unwrap_candidates(CATALOG, scan), key=lambda c: c.event.line)
        incidents = group_incidents(index, CATALOG, scan, pools)
        scan.tracebacks.reverse()
        scan.tracebacks.extend(
            replace(tb, lines=[*tb.lines, tb.last_line + 50]) for tb in list(scan.tracebacks)
        )
        for incident in incidents:
            end = _death_end(scan, incident)
            assert end == plain_death_end(scan, incident), path.name
            extended += end > max(s.line for s, _, _ in incident.symptoms)
    assert extended >= 5


# -- wrappers recognised once for the candidates a re-scan keeps ---------------------------------
def _values(candidates: list[Candidate]) -> list[tuple[object, ...]]:
    """Candidates by what they hold (a candidate compares by identity)."""
    return [(c.event, c.tier, c.traceback, c.inner_text) for c in candidates]


def test_a_grown_log_reuses_the_candidates_its_scan_kept() -> None:
    """A log read again as it grows (a restart loop: a second run appended, cut anywhere, even
    inside a line or a traceback): the candidates with wrappers recognised are those of
    recognising the whole scan afresh, and those of the kept part are the very ones recognised
    before."""
    logs = [p for p in LOGS if any(c.tier != 0 for c in unwrap_candidates(CATALOG, _scan(p)))][:8]
    assert logs
    reused = 0
    for path in logs:
        log = read_log(path).rstrip("\n") + "\n"
        text = log * 2
        analyzer = Analyzer(CATALOG)
        previous: list[Candidate] = []
        for end in (len(log), len(log) + len(log) // 2 + 7, len(text)):
            analyzer.analyze(text[:end])
            scan = analyzer._scan
            assert scan is not None
            unwrapped = analyzer._unwrapped[1]
            assert _values(unwrapped) == _values(unwrap_candidates(CATALOG, scan)), path.name
            # A recognised wrapper is a new candidate: the same one again was not recognised again.
            rebuilt = [u for u, c in zip(unwrapped, scan.events, strict=True) if u is not c]
            reused += sum(any(u is p for p in previous) for u in rebuilt)
            previous = unwrapped
    assert reused >= 3


def _scan(path: Path) -> Scan:
    return scan_lines(LogIndex(read_log(path)), CATALOG)
