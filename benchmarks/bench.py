"""What both benchmarks share: timing a command against its anchor, and printing the figures.

Every figure is a ratio to an anchor measured in the same run, interleaved run by run (anchor,
subject, anchor, subject ...), so a busy machine slows both alike; each is reported as the
median with the minimum and maximum over the runs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field


def bytecode_as_installed() -> None:
    """Let the measured Python processes use compiled bytecode, as an installed package does.

    `pip install` writes .pyc files; an environment with PYTHONDONTWRITEBYTECODE (or a read-only
    checkout) would instead compile every module from source on each start (~0.1 s here), which
    no user pays. The bytecode goes to a cache folder of its own (PYTHONPYCACHEPREFIX), written
    once here, not into the checkout.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), "vllm-log-lsp-bench-pyc")
    )
    import vllm_log_lsp

    package = os.path.dirname(vllm_log_lsp.__file__)
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True)


@dataclass
class Run:
    """One run of one command: wall time, peak RSS, output, CPU time (user + system)."""

    seconds: float
    max_rss_mb: float
    stdout: bytes
    returncode: int
    cpu_seconds: float = 0.0


def run_once(command: Sequence[str], env: dict[str, str] | None = None) -> Run:
    """Run `command`, measuring its wall time and peak resident memory (its own, via wait4)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(command), stdout=out, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})}
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime  # less distorted than wall time on a busy machine
        return Run(seconds, usage.ru_maxrss / 1024, out.read(), proc.returncode, cpu)


@dataclass
class Series:
    """Repeated measurements of one quantity."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def spread(self, unit: str = "", scale: float = 1.0, digits: int = 2) -> str:
        """`median [min–max]`."""
        lo, mid, hi = (v * scale for v in (min(self.values), self.median, max(self.values)))
        return f"{mid:.{digits}f}{unit} [{lo:.{digits}f}–{hi:.{digits}f}]"


def ratios(subject: Series, anchor: Series) -> Series:
    """Run-by-run ratios subject/anchor (runs were interleaved)."""
    return Series([s / a for s, a in zip(subject.values, anchor.values, strict=True)])


@dataclass
class Figure:
    """One row of the table: a measured ratio, its aim, and whether the answer was right."""

    name: str
    value: Series
    anchor: str
    aim: float | None  # the ratio to stay at or under (None: reported only)
    answer: str
    answer_ok: bool
    detail: str = ""
    unit: str = "×"

    @property
    def met(self) -> bool | None:
        return None if self.aim is None else self.value.median <= self.aim


def print_table(figures: list[Figure]) -> None:
    """The table of figures, one per line, then the answers."""
    print()
    print(f"{'figure':<58} {'median [min–max]':>24} {'aim':>7}  met")
    for f in figures:
        aim = "" if f.aim is None else f"≤{f.aim:g}"
        met = {None: "", True: "yes", False: "NO"}[f.met]
        print(f"{f.name:<58} {f.value.spread(f.unit):>24} {aim:>7}  {met}")
        if f.detail:
            print(f"    {f.detail}")
    print()
    for f in figures:
        print(f"answer {'ok ' if f.answer_ok else 'BAD'} {f.name}: {f.answer}")
