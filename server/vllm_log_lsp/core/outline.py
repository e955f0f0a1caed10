"""The run as a timeline: each start of vLLM, the lifecycle phases it went through, its deaths.

Built on demand (document symbols), not by `analyze`: a phase marker is looked up with one
`str.find` per marker per run, bounded to the part of the run where start-up happens.
"""

from __future__ import annotations

from collections.abc import Sequence

from .catalog import Catalog, builtin_catalog
from .lines import parse_line
from .model import PHASE_TITLES, Analysis, Finding, PhaseMark
from .phase import timeline_with_deaths
from .records import dataclass
from .text import LogIndex, Text

# Start-up markers live in the first part of a run; shutdown markers in the last part.
_STARTUP_SPAN = 32_000_000
_SHUTDOWN_SPAN = 4_000_000
# Run-start markers closer than this (a banner, then the args line) start the same run.
_SAME_RUN_LINES = 200


@dataclass(frozen=True)
class RunOutline:
    """One start of vLLM: where it begins and ends, its phases in order, and its deaths.

    Each death lies in a phase segment (a mark up to the next) of the death's own phase, the one
    its finding names (see `phase.timeline_with_deaths`), unless that phase is unknown."""

    start_line: int
    end_line: int
    phases: tuple[PhaseMark, ...]
    findings: tuple[Finding, ...]
    version: str | None = None
    model: str | None = None


def run_boundaries(run_starts: Sequence[int], line_count: int) -> list[tuple[int, int]]:
    """(first, last) line of each run: line 0 starts the first, nearby markers are one start."""
    starts: list[int] = [0]
    for line in sorted(run_starts):
        if line - starts[-1] > _SAME_RUN_LINES:
            starts.append(line)
    ends = [s - 1 for s in starts[1:]] + [max(line_count - 1, 0)]
    return list(zip(starts, ends, strict=True))


def build_outline(text: Text, analysis: Analysis, catalog: Catalog | None = None) -> list[RunOutline]:
    """The timeline of every run in `text` (as analysed by `analysis`)."""
    catalog = catalog or builtin_catalog()
    index = LogIndex(text)
    outline = []
    for first, last in run_boundaries(analysis.run_starts, analysis.line_count):
        start = index.line_start(first)
        end = index.line_start(last + 1) if last + 1 < analysis.line_count else len(index)
        findings = tuple(f for f in analysis.findings if first <= f.line <= last)
        phases = timeline_with_deaths(_phases(index, catalog, start, end), findings)
        context = next((f.context for f in findings), None)
        outline.append(
            RunOutline(
                start_line=first,
                end_line=last,
                phases=phases,
                findings=findings,
                version=context.vllm_version if context else None,
                model=context.model if context else None,
            )
        )
    return outline


def _phases(index: LogIndex, catalog: Catalog, start: int, end: int) -> tuple[PhaseMark, ...]:
    found: dict[str, PhaseMark] = {}
    for marker in catalog.markers_of("phase"):
        if marker.phase == "shutdown":
            lo, hi = max(start, end - _SHUTDOWN_SPAN), end
        else:
            lo, hi = start, min(end, start + _STARTUP_SPAN)
        pos = index.find(marker.literal, lo, hi)
        tries = 0
        while pos >= 0 and tries < 20:
            line = parse_line(0, index.line_at(pos, 4000))
            if marker.pattern.search(line.message.strip()):
                number = index.line_of(pos)
                if marker.phase not in found or number < found[marker.phase].line:
                    found[marker.phase] = PhaseMark(number, marker.phase, PHASE_TITLES[marker.phase])
                break
            pos = index.find(marker.literal, index.line_end_at(pos), hi)
            tries += 1
    return tuple(sorted(found.values(), key=lambda mark: mark.line))
