"""Every labelled real crash log: the right root-cause line, its symptoms, and its phase.

The labels are a careful human reading (../shared/corpus/crash/labels.jsonl, copied into
tests/fixtures/crash). Healthy real logs must produce no incident at all.
"""

from __future__ import annotations

import pytest

from support import CRASH, crash_labels, healthy_logs, read_log
from vllm_log_lsp.core.analyze import analyze

LABELS = crash_labels()

# Label phase names -> ours. The labels say `startup_config` for our `startup`.
PHASE_OF_LABEL = {"startup_config": "startup"}

# Where our phase differs from the label, and why we believe ours (see the closing notes).
PHASE_DISAGREEMENTS = {
    # A 40-line tail that begins mid-traceback; the labeller knew from the issue text that the
    # trainer was shutting down. Nothing in the excerpt says so.
    "030.log": "startup",
    # HIP memory faults with no lifecycle marker and no frames in the excerpt.
    "033.log": "startup",
    # Lines cut at a fixed width lose the frames' function names; the phase markers before the
    # fault are start-up ones.
    "035.log": "startup",
    # The OSError comes from the processor/tokenizer load in EngineCore's init, which vLLM runs
    # before its `Starting to load model` marker: the log never entered model loading.
    "036.log": "startup",
}


@pytest.mark.parametrize("label", LABELS, ids=[entry["file"] for entry in LABELS])
def test_root_cause_line(label: dict) -> None:
    analysis = analyze(read_log(CRASH / label["file"]))
    roots = [finding.line + 1 for finding in analysis.findings]
    assert label["root_cause_line"] in roots, f"expected root at {label['root_cause_line']}, got {roots}"


@pytest.mark.parametrize("label", LABELS, ids=[entry["file"] for entry in LABELS])
def test_symptoms_are_linked(label: dict) -> None:
    analysis = analyze(read_log(CRASH / label["file"]))
    linked = {s.line + 1 for f in analysis.findings for s in f.symptoms}
    linked |= {f.line + 1 for f in analysis.findings}
    missing = [line for line in label["symptom_lines"] if line not in linked]
    assert not missing, f"symptom lines not linked to any root cause: {missing}"


@pytest.mark.parametrize("label", LABELS, ids=[entry["file"] for entry in LABELS])
def test_crash_phase(label: dict) -> None:
    analysis = analyze(read_log(CRASH / label["file"]))
    finding = next(f for f in analysis.findings if f.line + 1 == label["root_cause_line"])
    expected = PHASE_DISAGREEMENTS.get(label["file"]) or PHASE_OF_LABEL.get(label["phase"], label["phase"])
    assert finding.phase == expected


@pytest.mark.parametrize("path", healthy_logs(), ids=lambda p: p.name)
def test_healthy_log_has_no_incident(path) -> None:
    analysis = analyze(read_log(path))
    assert analysis.findings == (), [(f.line + 1, f.root_text) for f in analysis.findings]
    assert analysis.precursors == ()


def test_each_restart_is_its_own_incident() -> None:
    # 019: the wrapper script starts vLLM twice; both attempts die differently.
    analysis = analyze(read_log(CRASH / "019.log"))
    assert [f.line + 1 for f in analysis.findings] == [144, 178]
    first, second = analysis.findings
    assert "unrecognized arguments" in first.root_text
    assert "Address already in use" in second.root_text
