"""Time `vllm-log-lsp check` against `grep -cE 'ERROR|Traceback'` on the same large log.

    python benchmarks/bench_check.py [--mb 100] [--runs 3]

Generates the log (benchmarks/make_log.py) unless --log is given, then reports the best of N
wall-clock times of each command (the file is read once first so both run from the page cache)
and their ratio. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_log import make_log


def best_time(command: list[str], runs: int) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, check=False)
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def in_process_time(log: Path, runs: int) -> float:
    """The analysis alone (read + decode + analyze), without interpreter start-up."""
    from vllm_log_lsp.core.analyze import analyze
    from vllm_log_lsp.core.text import inspect_log_bytes

    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        data, _ = inspect_log_bytes(log.read_bytes())
        analysis = analyze(data, path=str(log))
        best = min(best, time.perf_counter() - start)
    assert analysis.findings, "the generated log must end in a crash"
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--log", type=Path, help="use this log instead of generating one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or Path(tmp) / "serving.log"
        if not args.log:
            make_log(log, args.mb)
        log.read_bytes()  # warm the page cache for both contenders
        size = log.stat().st_size / 1e6
        grep_s, grep = best_time(["grep", "-cE", "ERROR|Traceback", str(log)], args.runs)
        exe = shutil.which("vllm-log-lsp") or sys.executable
        command = (
            [exe, "check", str(log)]
            if exe != sys.executable
            else [exe, "-m", "vllm_log_lsp", "check", str(log)]
        )
        check_s, check = best_time(command, args.runs)
        core_s = in_process_time(log, args.runs)
    first = check.stdout.decode().splitlines()[0] if check.stdout else "(no output)"
    print(f"log: {size:.1f} MB")
    print(f"grep -cE 'ERROR|Traceback': {grep_s:.3f} s ({grep.stdout.decode().strip()} lines)")
    print(f"vllm-log-lsp check:          {check_s:.3f} s  -> {first}")
    print(f"  analysis in process:       {core_s:.3f} s")
    print(f"ratio check / grep:          {check_s / grep_s:.2f}x")


if __name__ == "__main__":
    main()
