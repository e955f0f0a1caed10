"""The crash phase of a death: computed once, shown the same by every view.

`death_phase` reads it from the root cause's own stack frames when they tell (the innermost
telling frame is the most precise: torch.compile and CUDA-graph capture run inside memory
profiling), else from the last lifecycle marker of the run before the root, else from the stack
of a later exception that carried the root's message (a worker's error logged without a stack,
then quoted by EngineCore's `Worker failed with error '…'`: the RPC that engine stack was in
names the step the worker failed in). When none tells, the phase is `unknown` rather than a
guess. The diagnostic, the hover, `check` (text and JSON),
the HTML report and the outline all take the finding's phase; the outline's timeline is made to
agree with it by `timeline_with_deaths`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .catalog import Catalog, Marker
from .lines import parse_line
from .model import PHASE_TITLES, UNKNOWN_PHASE, Finding, PhaseMark
from .scan import MAX_LINE
from .text import LogIndex

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

UNKNOWN = UNKNOWN_PHASE

#: Where a death's phase was read from.
if TYPE_CHECKING:
    PhaseSource = Literal["frames", "marker", "carrier", "unknown"]
else:  # a name for annotations only
    PhaseSource = str

# How many non-matching occurrences of a marker's literal to skip before giving up on it.
_MARKER_TRIES = 10


def death_phase(
    index: LogIndex,
    catalog: Catalog,
    frames: list[str],
    lo: int,
    hi: int,
    carrier_frames: Callable[[], list[str]] | None = None,
) -> tuple[str, int | None, PhaseSource]:
    """The phase a root cause died in, the line that entered it (markers only), and the source.

    `frames` are the root exception's own frames as `path:function`, outermost first; `lo`/`hi`
    bound the run's text up to the root's line end; `carrier_frames` gives, when asked, the
    frames of a later exception that carried the root's message (none: [])."""
    phase = _phase_of_frames(catalog, frames)
    if phase is not None:
        return phase, None, "frames"
    pos, marker = _last_marker(index, catalog, lo, hi)
    if marker is not None:
        return marker.phase, index.line_of(pos), "marker"
    carried = _phase_of_frames(catalog, carrier_frames()) if carrier_frames is not None else None
    if carried is not None:
        return carried, None, "carrier"
    return UNKNOWN, None, "unknown"


def _phase_of_frames(catalog: Catalog, frames: list[str]) -> str | None:
    # Innermost call first: it tells the most. The serving step also runs inside the memory
    # profiling, warm-up and graph-capture calls, so it speaks only when none of them does.
    told = [catalog.frame_phases(frame) for frame in reversed(frames)]
    for serving in (False, True):
        for other_phase, serving_phase in told:
            phase = serving_phase if serving else other_phase
            if phase is not None:
                return phase
    return None


def _last_marker(index: LogIndex, catalog: Catalog, lo: int, hi: int) -> tuple[int, Marker | None]:
    """(offset, marker) of the last lifecycle marker in [lo, hi), or (-1, None)."""
    best_pos, best = -1, None
    for marker in catalog.markers_of("phase"):
        pos = index.rfind(marker.literal, max(lo, best_pos + 1), hi)
        tries = 0
        while pos >= 0 and tries < _MARKER_TRIES:
            start = index.line_start_at(pos)
            line = parse_line(0, index.line_at(pos, MAX_LINE))
            if marker.pattern.search(line.message.strip()):
                if pos > best_pos:
                    best_pos, best = pos, marker
                break
            pos = index.rfind(marker.literal, max(lo, best_pos + 1), start)
            tries += 1
    return best_pos, best


#: How much of a log's end `ended_in_startup` reads (bytes or characters): a log that ends in
#: start-up ends a few lifecycle lines after its last one, and a long log is not read whole.
_END_SPAN = 1 << 18
#: The phases of a start-up that has not completed, and the markers that say it has.
_STARTUP_PHASES = (
    "startup",
    "model_loading",
    "memory_profiling",
    "torch_compile",
    "cuda_graph_capture",
    "warmup",
)
READY_MARKERS = ("engine-ready", "graph-done")


def ended_in_startup(index: LogIndex, catalog: Catalog) -> PhaseMark | None:
    """The start-up phase the log ends in, entered at its last lifecycle marker, when that marker
    (in the log's last `_END_SPAN`) is a start-up step's and not one that says the engine is
    ready; else None (the log ends serving, shutting down, or says nothing of its phase there).
    For a log with no death: a server that never came up was stopped or killed there unseen."""
    best_pos, best = _last_marker(index, catalog, max(0, len(index) - _END_SPAN), len(index))
    if best is None or best.phase not in _STARTUP_PHASES or best.id in READY_MARKERS:
        return None
    return PhaseMark(index.line_of(best_pos), best.phase, PHASE_TITLES[best.phase])


def phase_title(phase: str) -> str:
    """The phase in words ("memory profiling and KV-cache sizing")."""
    return PHASE_TITLES.get(phase, phase)


def phase_words(finding: Finding, line_number: Callable[[int], int] = lambda line: line + 1) -> str:
    """The finding's phase with where it was read from, for people; `line_number` turns a 0-based
    line into the number the reader sees."""
    if finding.phase == UNKNOWN:
        return "unknown (no lifecycle marker before the root cause, and its stack frames do not tell)"
    title = phase_title(finding.phase)
    if finding.phase_line is not None:
        return f"{title} (entered on line {line_number(finding.phase_line)})"
    if finding.phase_source == "frames":
        return f"{title} (from the root cause's stack frames)"
    if finding.phase_source == "carrier":
        return f"{title} (from the stack of the exception that carried the error on)"
    return title


def timeline_with_deaths(marks: Iterable[PhaseMark], findings: Iterable[Finding]) -> tuple[PhaseMark, ...]:
    """The run's phase marks, with each death inside a segment of its own phase.

    A segment runs from its mark to the next one. When the segment holding a root cause names
    another phase than the finding (the root's frames are more precise than the markers, or the
    markers are of an earlier start), the death's phase is entered at the root's traceback (or its
    line), so the outline and breadcrumb say what the hover says. An unknown phase gets a mark
    only where it must end a marker's segment."""
    timeline = sorted(marks, key=lambda mark: mark.line)
    for finding in sorted(findings, key=lambda f: f.line):
        holding = [mark for mark in timeline if mark.line <= finding.line]
        if finding.phase == UNKNOWN:
            if holding:  # the marker before it is not the death's phase: end its segment there
                start = max(_death_start(finding), holding[-1].line + 1)
                timeline.append(PhaseMark(start, UNKNOWN, "unknown phase"))
                timeline.sort(key=lambda mark: mark.line)
            continue
        if holding and holding[-1].phase == finding.phase:
            continue
        start = max(_death_start(finding), holding[-1].line + 1 if holding else 0)
        timeline.append(PhaseMark(start, finding.phase, phase_title(finding.phase)))
        timeline.sort(key=lambda mark: mark.line)
    return tuple(sorted(timeline, key=lambda mark: mark.line))


def _death_start(finding: Finding) -> int:
    """The first line of the death's report: its traceback header, else the root line."""
    event = finding.exception
    if event is not None and event.traceback_start is not None:
        return min(finding.line, event.traceback_start)
    return finding.line
