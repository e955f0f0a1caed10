"""Time `vllm-log-lsp check` on honest logs, each figure as a ratio to an anchor run alongside.

    python benchmarks/bench_check.py [--runs 5] [--mb 100] [--deaths 500] [--workdir DIR]
                                     [--only serving,restarts,all-error,request-errors,real,small,prefilter,bundled]

Figures (benchmarks/make_log.py makes the logs; --workdir keeps them for the next run):
- serving: `check` on a serving log with recovered per-request tracebacks, against
  `grep -cE 'ERROR|Traceback'`, `rg -c` and lnav headless with the same filter (when installed);
- restarts: `check` on a restart loop of N deaths against grep, and against itself at N/2
  deaths (linear: 2×);
- all-error: every line an ERROR traceback line: time against the serving log's, peak RSS
  against the file's size;
- request-errors: the same failing requests, each traceback followed by its access-log line
  (`400 Bad Request`), as a server that answers them logs them: the same aims;
- real: real healthy logs (tests/fixtures/healthy) one after another to --mb MB (progress bars
  with bare `\r`, colour codes: what the generated logs lack), against grep and rg; no aim is
  set for it, the answer is each log's alone (no death);
- small: `check` on a 51-line crash log against `python -c pass` (start-up; both with compiled
  bytecode, as installed: see `bench.bytecode_as_installed`);
- prefilter: the literal pre-filter alone (in process) with rg, grep -F, the in-process
  Aho-Corasick automaton (ahocorasick-rs) and one str.find per literal, against grep -cE: all
  must find the same lines;
- bundled: `check` as the .vsix runs it (stdlib `re`, no ahocorasick-rs) against the installed
  one, on the serving log and on the small log: the same answers.
Each figure also checks the answer (the expected root causes; the same lines). Not a test:
timings depend on the machine; the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Figure, Run, Series, bytecode_as_installed, print_table, ratios, run_once
from make_log import CRASH, Generated, make_log, real_logs, restart_segments

GREP_PATTERN = "ERROR|Traceback"
NEWLINE = b"\n"
FIGURES = ("serving", "restarts", "all-error", "request-errors", "real", "small", "prefilter", "bundled")


def check_command() -> list[str]:
    """The installed `vllm-log-lsp check` of this interpreter's environment."""
    exe = Path(sys.executable).with_name("vllm-log-lsp")
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "vllm_log_lsp"]
    return [*base, "check", "--format", "json"]


def incidents(run: Run) -> list[list[tuple[int, str]]]:
    """Per file, the (root-cause line, cause) of each incident `check --format json` printed."""
    data = json.loads(run.stdout or b"{}")
    return [
        [(i["root_cause"]["line"], i["root_cause"]["cause"]) for i in f["incidents"]] for f in data["files"]
    ]


def interleaved(
    commands: dict[str, list[str]], runs: int
) -> tuple[dict[str, Series], dict[str, Series], dict[str, Run], dict[str, Series]]:
    """Run each command `runs` times, round-robin: wall times, peak RSS, the last run and CPU
    times (user + system) per command."""
    times = {name: Series() for name in commands}
    rss = {name: Series() for name in commands}
    cpu = {name: Series() for name in commands}
    last: dict[str, Run] = {}
    for _ in range(runs):
        for name, command in commands.items():
            result = run_once(command)
            times[name].add(result.seconds)
            rss[name].add(result.max_rss_mb)
            cpu[name].add(result.cpu_seconds)
            last[name] = result
    return times, rss, last, cpu


def generated(workdir: Path, name: str, **options) -> Generated:
    """A generated log, reused from `workdir` when the same options made it before."""
    path = workdir / f"{name}.log"
    meta = workdir / f"{name}.json"
    if path.exists() and meta.exists() and json.loads(meta.read_text())["options"] == options:
        saved = json.loads(meta.read_text())
        info = Generated(path, options["shape"], saved["lines"], saved["tracebacks"], [], saved["crash_line"])
        if options["shape"] == "restarts":
            _restart_layout(info, options["deaths"])
        return info
    info = make_log(path, **options)
    meta.write_text(
        json.dumps(
            {
                "options": options,
                "lines": info.lines,
                "tracebacks": info.tracebacks,
                "crash_line": info.crash_line,
            }
        )
    )
    return info


def _restart_layout(info: Generated, deaths: int) -> None:
    segments = restart_segments()
    line = 0
    for i in range(deaths):
        info.segments.append((line, segments[i % len(segments)]))
        line += segments[i % len(segments)].count("\n")


def expected_crash(check: list[str], info: Generated) -> list[tuple[int, str]]:
    """The TP=2 death analysed alone, moved to where the generator wrote it."""
    alone = incidents(run_once([*check, str(CRASH)]))[0]
    shift = info.crash_line - 12  # the fixture's death starts after its 12 start-up lines
    return [(line + shift, cause) for line, cause in alone]


def grep_anchor(path: Path) -> dict[str, list[str]]:
    return {"grep": ["grep", "-cE", GREP_PATTERN, str(path)]}


def search_anchors(path: Path) -> dict[str, list[str]]:
    """grep, and rg when installed, counting the same lines of `path`."""
    commands = grep_anchor(path)
    if shutil.which("rg"):
        commands["rg"] = ["rg", "--no-config", "-c", GREP_PATTERN, str(path)]
    return commands


def against_searches(
    name: str, short: str, times: dict[str, Series], aim: float | None, answer: str, ok: bool, detail: str
) -> list[Figure]:
    """`check` against grep (`name`), and against rg when it ran (`short`)."""
    figures = [Figure(name, ratios(times["check"], times["grep"]), "grep", aim, answer, ok, detail)]
    if "rg" in times:
        figures.append(
            Figure(f"check {short} / rg -c", ratios(times["check"], times["rg"]), "rg", None, answer, ok)
        )
    return figures


def fig_serving(args, check, workdir) -> list[Figure]:
    info = generated(workdir, f"serving-{args.mb:g}", megabytes=args.mb, shape="serving")
    commands = search_anchors(info.path)
    if shutil.which("lnav"):
        commands["lnav"] = ["lnav", "-n", "-c", f":filter-in {GREP_PATTERN}", str(info.path)]
    commands["check"] = [*check, str(info.path)]
    times, _, last, cpu = interleaved(commands, args.runs)
    expected = expected_crash(check, info)
    got = incidents(last["check"])[0]
    answer = f"{got} (expected {expected}); {info.tracebacks} recovered tracebacks in {info.megabytes:.0f} MB"
    ok = got == expected
    seconds = (
        f"check {times['check'].spread(' s')}, grep {times['grep'].spread(' s', digits=3)}; "
        f"CPU: check {cpu['check'].spread(' s')}, grep {cpu['grep'].spread(' s', digits=3)}"
    )
    name = f"check {info.megabytes:.0f} MB serving log / grep -cE"
    figures = against_searches(name, "serving", times, 3, answer, ok, seconds)
    if "lnav" in times:
        lnav_ok = b"torch.OutOfMemoryError" in last["lnav"].stdout
        figures.append(
            Figure(
                "check serving / lnav -n :filter-in",
                ratios(times["check"], times["lnav"]),
                "lnav",
                1,
                f"lnav printed {last['lnav'].stdout.count(NEWLINE)} lines, with the OOM: {lnav_ok}",
                ok and lnav_ok,
                f"lnav {times['lnav'].spread(' s')}",
            )
        )
    fig_serving.check_times = times["check"]  # type: ignore[attr-defined]
    return figures


def _restart_answer(info: Generated, check: list[str], got: list[tuple[int, str]]) -> tuple[str, bool]:
    """Deaths diagnosed in the loop exactly as their log alone."""
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, segment in enumerate(restart_segments()):
            files.append(Path(tmp) / f"{i:03d}.log")
            files[-1].write_text(segment, encoding="utf-8")
        alone = incidents(run_once([*check, *map(str, files)]))
    names = [p.name for p in sorted(Path(CRASH.parent.parent / "crash").glob("*.log"))]
    bounds = [start for start, _ in info.segments] + [info.lines + 1]
    same, differ = 0, set()
    for i, (start, _) in enumerate(info.segments):
        expect = [(line + start, cause) for line, cause in alone[i % len(alone)]]
        inside = [(line, cause) for line, cause in got if start < line <= bounds[i + 1]]
        if inside == expect:
            same += 1
        else:
            differ.add(names[i % len(names)])
    text = f"{same}/{len(info.segments)} deaths diagnosed as their log alone"
    if differ:
        text += f"; differ: {', '.join(sorted(differ))}"
    return text, same == len(info.segments)


def fig_restarts(args, check, workdir) -> list[Figure]:
    info = generated(workdir, f"restarts-{args.deaths}", shape="restarts", deaths=args.deaths)
    half = generated(workdir, f"restarts-{args.deaths // 2}", shape="restarts", deaths=args.deaths // 2)
    commands = {**grep_anchor(info.path), "check": [*check, str(info.path)], "half": [*check, str(half.path)]}
    times, _, last, cpu = interleaved(commands, args.runs)
    answer, ok = _restart_answer(info, check, incidents(last["check"])[0])
    tracebacks = last["grep"].stdout.decode().strip()
    return [
        Figure(
            f"check {args.deaths} deaths ({info.megabytes:.0f} MB) / grep -cE",
            ratios(times["check"], times["grep"]),
            "grep",
            100,
            answer,
            ok,
            f"check {times['check'].spread(' s')} (CPU {cpu['check'].spread(' s')}); "
            f"grep counts {tracebacks} ERROR|Traceback lines",
        ),
        Figure(
            f"check {args.deaths} deaths / check {args.deaths // 2} deaths",
            ratios(times["check"], times["half"]),
            "itself",
            2.5,
            f"{len(incidents(last['half'])[0])} incidents at {args.deaths // 2} deaths",
            True,
            "linear in the number of deaths: 2×",
        ),
    ]


def fig_all_error(args, check, workdir) -> list[Figure]:
    return _error_flood(args, check, workdir, "all-error", "all-ERROR")


def fig_request_errors(args, check, workdir) -> list[Figure]:
    return _error_flood(args, check, workdir, "request-errors", "request errors + access lines")


def _error_flood(args, check, workdir, shape: str, label: str) -> list[Figure]:
    """A log of failing requests (`shape`) against the serving log: time ≤ 2×, peak RSS ≤ the file."""
    info = generated(workdir, f"{shape}-{args.mb:g}", megabytes=args.mb, shape=shape)
    small = generated(workdir, f"{shape}-1", megabytes=1, shape=shape)
    serving = generated(workdir, f"serving-{args.mb:g}", megabytes=args.mb, shape="serving")
    commands = {"serving": [*check, str(serving.path)], "check": [*check, str(info.path)]}
    times, rss, last, cpu = interleaved(commands, args.runs)
    # The same death after 1 MB or 100 MB of failing requests: the same diagnosis, moved.
    got = [(line - info.crash_line, cause) for line, cause in incidents(last["check"])[0]]
    want = [
        (line - small.crash_line, cause) for line, cause in incidents(run_once([*check, str(small.path)]))[0]
    ]
    answer = f"root causes {got} (lines after the death's start; 1 MB version: {want})"
    size = Series([info.path.stat().st_size / 1048576] * args.runs)
    peak = rss["check"]
    return [
        Figure(
            f"check {info.megabytes:.0f} MB {label} / check serving",
            ratios(times["check"], times["serving"]),
            "check serving",
            2,
            answer,
            got == want,
            f"check {label} {times['check'].spread(' s')} (CPU {cpu['check'].spread(' s')})",
        ),
        Figure(
            f"peak RSS {label} / file size",
            ratios(peak, size),
            "file size",
            1,
            answer,
            got == want,
            f"peak RSS {peak.spread(' MB', digits=0)}, file {size.median:.0f} MiB",
        ),
    ]


def fig_small(args, check, workdir) -> list[Figure]:
    commands = {"python": [sys.executable, "-c", "pass"], "check": [*check, str(CRASH)]}
    times, _, last, cpu = interleaved(commands, max(args.runs, 10))
    got = incidents(last["check"])[0]
    return [
        Figure(
            f"check {CRASH.name} ({CRASH.read_text().count(chr(10))} lines) / python -c pass",
            ratios(times["check"], times["python"]),
            "python -c pass",
            4,
            f"{got} (expected [(27, 'oom-serving')])",
            got == [(27, "oom-serving")],
            f"check {times['check'].spread(' s', digits=3)}, python {times['python'].spread(' s', digits=3)}; "
            f"CPU: check {cpu['check'].spread(' s', digits=3)}, python {cpu['python'].spread(' s', digits=3)}",
        )
    ]


def fig_prefilter(args, check, workdir) -> list[Figure]:
    import mmap

    from vllm_log_lsp.core import prefilter, scan
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.core.text import LogIndex

    info = generated(workdir, f"serving-{args.mb:g}", megabytes=args.mb, shape="serving")
    catalog = builtin_catalog()
    literals = sorted(
        {*scan._BASE_LITERALS, *(m.literal for k in scan._SCANNED_KINDS for m in catalog.markers_of(k))}
    )
    ways = {}
    for kind in ("rg", "grep"):
        if (found := prefilter.search_tool([kind])) is not None:
            ways[f"{kind} -F" if kind == "grep" else kind] = partial(prefilter.candidate_lines, tool=found)
    automaton = getattr(prefilter, "automaton_scan", None)
    if automaton is not None and automaton(LogIndex(b"x"), ["x"]) is not None:
        ways["ahocorasick-rs"] = automaton
    ways["str.find per literal"] = prefilter._python_scan
    times = {name: Series() for name in ["grep", *ways]}
    found: dict[str, list[int]] = {}
    with open(info.path, "rb") as handle:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        for _ in range(args.runs):
            times["grep"].add(run_once(grep_anchor(info.path)["grep"]).seconds)
            for name, way in ways.items():
                index = LogIndex(data, str(info.path))
                start = time.perf_counter()
                lines = way(index, literals, 0)
                times[name].add(time.perf_counter() - start)
                found[name] = [index.line_of(offset) for offset, _ in lines]
    same = all(lines == found["str.find per literal"] for lines in found.values())
    answer = f"{len(found['str.find per literal'])} candidate lines, the same every way: {same}"
    return [
        Figure(
            f"pre-filter ({len(literals)} literals), {name} / grep -cE",
            ratios(times[name], times["grep"]),
            "grep",
            None,
            answer,
            same,
            f"{times[name].spread(' s', digits=3)}",
        )
        for name in ways
    ]


#: `check` as the VS Code extension bundles it: its pure-Python dependencies only, so stdlib `re`
#: instead of `regex` and no ahocorasick-rs (modules set to None cannot be imported).
def fig_real(args, check, workdir) -> list[Figure]:
    info = generated(workdir, f"real-{args.mb:g}", megabytes=args.mb, shape="real")
    commands = {**search_anchors(info.path), "check": [*check, str(info.path)]}
    times, rss, last, cpu = interleaved(commands, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, log in enumerate(real_logs()):
            files.append(Path(tmp) / f"{i:03d}.log")
            files[-1].write_bytes(log)
        alone = sum(len(found) for found in incidents(run_once([*check, *map(str, files)])))
    got = len(incidents(last["check"])[0])
    answer = f"{got} deaths in {info.megabytes:.0f} MB of healthy logs (each log alone: {alone})"
    ok = got == alone == 0
    seconds = (
        f"check {times['check'].spread(' s')}, grep {times['grep'].spread(' s', digits=3)}; "
        f"CPU: check {cpu['check'].spread(' s')}; peak RSS {rss['check'].spread(' MB', digits=0)}"
    )
    name = f"check {info.megabytes:.0f} MB of real logs / grep -cE"
    return against_searches(name, "real logs", times, None, answer, ok, seconds)


BUNDLED = (
    "import sys; sys.modules['regex'] = sys.modules['ahocorasick_rs'] = None; "
    "from vllm_log_lsp.__main__ import run; sys.exit(run())"
)


def fig_bundled(args, check, workdir) -> list[Figure]:
    info = generated(workdir, f"serving-{args.mb:g}", megabytes=args.mb, shape="serving")
    bundled = [sys.executable, "-c", BUNDLED, *check[check.index("check") :]]
    commands = {"installed": [*check, str(info.path)], "bundled": [*bundled, str(info.path)]}
    small = {"installed": [*check, str(CRASH)], "bundled": [*bundled, str(CRASH)]}
    times, _, last, _ = interleaved(commands, args.runs)
    small_times, _, small_last, _ = interleaved(small, max(args.runs, 10))
    same = incidents(last["installed"]) == incidents(last["bundled"])
    same_small = incidents(small_last["installed"]) == incidents(small_last["bundled"])
    answer = f"the same incidents as the installed check: {same} (serving), {same_small} (small)"
    return [
        Figure(
            f"bundled check (stdlib re) / installed, {info.megabytes:.0f} MB serving",
            ratios(times["bundled"], times["installed"]),
            "installed check",
            1.2,
            answer,
            same,
            f"bundled {times['bundled'].spread(' s')}",
        ),
        Figure(
            f"bundled check (stdlib re) / installed, {CRASH.name}",
            ratios(small_times["bundled"], small_times["installed"]),
            "installed check",
            1.2,
            answer,
            same_small,
            f"bundled {small_times['bundled'].spread(' s', digits=3)}",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--deaths", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, help="keep the generated logs here (reused)")
    parser.add_argument("--only", default=",".join(FIGURES), help="comma-separated figures to run")
    args = parser.parse_args()
    bytecode_as_installed()
    check = check_command()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        figures: list[Figure] = []
        for name in args.only.split(","):
            if name not in FIGURES:
                parser.error(f"unknown figure {name!r}: choose from {', '.join(FIGURES)}")
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            figures += globals()[f"fig_{name.replace('-', '_')}"](args, check, workdir)
    print(
        f"{subprocess.run([sys.executable, '-V'], capture_output=True, text=True).stdout.strip()}, runs: {args.runs}"
    )
    print_table(figures)


if __name__ == "__main__":
    main()
