"""Every labelled real crash log: its labelled root cause classifies into a family a vLLM
engineer would agree with.

Only the catalog is under test here; choosing the root-cause line is the core's business
(tests/core/test_corpus.py). So when the analysis reports the labelled line (or an identical copy
of it), its finding is checked; when it picks another line, the labelled line is classified as
the analysis would classify it had it chosen that line. A label whose line states no error (the
last words of a process that vanished) is judged by the incident the analysis reports after it.
What each label category may be called lives in data/corpus-families.toml.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support import CRASH, CRASH2, crash_labels, healthy_logs, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.catalog import FAMILIES, builtin_catalog
from vllm_log_lsp.core.classify import build_finding
from vllm_log_lsp.core.context import read_context
from vllm_log_lsp.core.incidents import Incident
from vllm_log_lsp.core.lines import parse_line
from vllm_log_lsp.core.model import ExceptionEvent, Finding
from vllm_log_lsp.core.scan import Candidate, scan_lines
from vllm_log_lsp.core.text import LogIndex
from vllm_log_lsp.core.tracebacks import standalone_exception

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

CATALOG = builtin_catalog()
EXPECTED = tomllib.loads((Path(__file__).parent / "data" / "corpus-families.toml").read_text("utf-8"))
CORPUS = [(folder, label) for folder in (CRASH, CRASH2) for label in crash_labels(folder)]


def _message_of(index: LogIndex, line: int) -> str:
    return parse_line(line, index.line_text(line)).message.strip()


def _labelled_line(text: str, index: LogIndex, label: dict) -> int:
    """The label's line in the index's numbering (labels count only `\\n` as a line end)."""
    offset = sum(len(part) + 1 for part in text.split("\n")[: label["root_cause_line"] - 1])
    return index.line_of(offset)


def _candidate_at(index: LogIndex, line: int) -> tuple[Candidate | None, object]:
    """What the scan read at a line (a wrapper's carried message first), else the line itself."""
    scan = scan_lines(index, CATALOG)
    found = [c for c in scan.events if c.event.line == line]
    found.sort(key=lambda c: c.inner_text is None)
    if found:
        return found[0], scan
    parsed = parse_line(line, index.line_text(line))
    event = standalone_exception(parsed)
    if event is None and parsed.level in ("ERROR", "CRITICAL"):  # an error logged without its type
        message = parsed.message.strip()
        event = ExceptionEvent(line, parsed.message_span, "Error", message, parsed.stream, kind="message")
    return (Candidate(event, tier=0) if event else None), scan


def root_finding(folder: Path, label: dict) -> Finding:
    """The finding for the label's root-cause line (see the module docstring)."""
    text = read_log(folder / label["file"])
    analysis = analyze(text)
    index = LogIndex(text)
    line = _labelled_line(text, index, label)
    wanted = _message_of(index, line)
    for finding in analysis.findings:
        if finding.line == line or _message_of(index, finding.line) == wanted:
            return finding
    cand, scan = _candidate_at(index, line)
    if cand is None:  # no error on the line: the incident that follows it
        later = [f for f in analysis.findings if f.line > line]
        assert later, f"no error on line {line + 1} and no incident after it"
        return later[0]
    offset = index.line_start(line)
    context = read_context(index, 0, offset + 1)
    return build_finding(index, CATALOG, scan, Incident("", 0), cand, context, 0, offset)


def test_every_category_is_mapped_to_families() -> None:
    categories = EXPECTED["category"]
    assert {label["category"] for _, label in CORPUS} <= set(categories)
    for name, entry in categories.items():
        assert set(entry["families"]) <= set(FAMILIES) - {"unrecognized"}, name
        assert len(entry["families"]) < 2 or entry.get("why"), f"{name}: say why several families fit"


@pytest.mark.parametrize(("folder", "label"), CORPUS, ids=[label["file"] for _, label in CORPUS])
def test_labelled_root_classifies_into_its_family(folder: Path, label: dict) -> None:
    finding = root_finding(folder, label)
    assert finding.recognized, f"unrecognized: {finding.root_text[:200]}"
    families = EXPECTED["category"][label["category"]]["families"]
    assert not families or finding.family in families, (
        f"{finding.rule_id} ({finding.family}), want {families}"
    )
    expected_rule = EXPECTED["expected_rule"].get(label["file"])
    assert expected_rule is None or finding.rule_id == expected_rule


def test_expected_rules_name_labelled_logs_and_real_rules() -> None:
    files = {label["file"] for _, label in CORPUS}
    ids = {rule.id for rule in CATALOG.rules}
    for name, rule_id in EXPECTED["expected_rule"].items():
        assert name in files and rule_id in ids, (name, rule_id)


def test_every_log_has_only_recognized_findings() -> None:
    for folder, label in CORPUS:
        analysis = analyze(read_log(folder / label["file"]))
        unnamed = [(f.line + 1, f.root_text[:120]) for f in analysis.findings if not f.recognized]
        assert not unnamed, (label["file"], unnamed)


@pytest.mark.parametrize("path", healthy_logs(), ids=lambda p: p.name)
def test_healthy_logs_have_no_finding(path) -> None:
    assert not analyze(read_log(path)).findings
