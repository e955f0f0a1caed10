"""Hunt for logs the analysis answers inconsistently: corpus logs mutated as real logs are.

    python scripts/fuzz.py [--minutes 10 | --cases 5000] [--seed 1] [--out /tmp/fuzz]

Each case applies one to three mutations (`tests/mutations.py`) to a corpus or fixture log and
checks what must hold on any log:
- the analysis does not raise, and takes at most a second plus a second per 2 MB;
- grown from one to three random cuts (an editor following the file), it equals a fresh one;
- the text's UTF-8 bytes (the CLI's input) give the deaths of the text (the editor's).

A failing case is written to `--out` (the text, and a JSON file with the seed, the case number,
the mutations, the cuts and what failed) and printed; the exit status is 1 when any failed. The
cases follow from the seed alone: the same seed gives the same cases. The test suite checks these
properties on 150 cases (`tests/core/test_mutated_logs.py`); this runs thousands, as the hunt that
found a grown analysis naming an exception twice did (35 in 11,000 cases).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "server")]

from mutations import mutate  # noqa: E402
from vllm_log_lsp.core.analyze import Analyzer  # noqa: E402
from vllm_log_lsp.core.model import Analysis  # noqa: E402
from vllm_log_lsp.core.records import fields  # noqa: E402

CORPUS = [ROOT.parent / "shared" / "corpus" / "crash" / "raw", ROOT.parent / "shared" / "corpus" / "healthy"]
FIXTURES = ROOT / "tests" / "fixtures"


def logs() -> list[str]:
    """The texts mutated: the shared corpus where it is beside the checkout, and the fixtures."""
    paths = [p for folder in CORPUS if folder.is_dir() for p in sorted(folder.glob("*.log"))]
    paths += sorted(FIXTURES.glob("**/*.log"))
    return [p.read_bytes().decode("utf-8", "replace") for p in paths]


def differing(a: Analysis, b: Analysis) -> list[str]:
    """The fields in which two analyses differ."""
    return [f.name for f in fields(Analysis) if getattr(a, f.name) != getattr(b, f.name)]


def deaths(analysis: Analysis) -> list[tuple[int, str, tuple[int, ...]]]:
    return [(f.line, f.rule_id, tuple(s.line for s in f.symptoms)) for f in analysis.findings]


def check(text: str, cuts: list[int]) -> str | None:
    """What fails on `text` grown from `cuts` (None: nothing)."""
    started = time.perf_counter()
    whole = Analyzer().analyze(text, line_table=True)
    took = time.perf_counter() - started
    if took > 1 + len(text) / 2e6:
        return f"slow: {took:.2f} s for {len(text)} characters"
    analyzer, previous = Analyzer(), None
    for cut in [*cuts, len(text)]:
        piece = text[:cut]
        grown = analyzer.analyze(piece, line_table=True, grown_from=previous)
        fresh = whole if cut == len(text) else Analyzer().analyze(piece, line_table=True)
        if differ := differing(grown, fresh):
            return f"grown from {previous is not None and len(previous)} to {cut} differs in {differ}"
        previous = piece
    surrogates = any("\ud800" <= char <= "\udfff" for char in text)  # (not UTF-8: no bytes to compare)
    if not surrogates and deaths(Analyzer().analyze(text.encode("utf-8"))) != deaths(whole):
        return "its bytes give other deaths than its text"
    return None


def run(seed: int, cases: int | None, minutes: float | None, out: Path) -> int:
    """Run the cases; the number that failed."""
    texts = logs()
    rng = random.Random(seed)
    end = time.monotonic() + minutes * 60 if minutes is not None else None
    failed = number = 0
    while (cases is None or number < cases) and (end is None or time.monotonic() < end):
        number += 1
        text, mutations = mutate(rng.choice(texts), rng, texts)
        cuts = sorted({rng.randrange(len(text) + 1) for _ in range(rng.randint(1, 3))})
        try:
            problem = check(text, cuts)
        except Exception as err:  # (any exception is a finding)
            problem = f"raised {err!r}"
        if problem is None:
            continue
        failed += 1
        out.mkdir(parents=True, exist_ok=True)
        stem = out / f"fail-{seed}-{number}"
        stem.with_suffix(".log").write_text(text, encoding="utf-8", errors="surrogatepass")
        record = {"seed": seed, "case": number, "mutations": mutations, "cuts": cuts, "problem": problem}
        stem.with_suffix(".json").write_text(json.dumps(record, indent=1), encoding="utf-8")
        print(f"FAIL case {number} ({', '.join(mutations)}): {problem} -> {stem}.log", flush=True)
    print(f"{number} cases, {failed} failed (seed {seed})", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, help="run this long (default 10)")
    budget.add_argument("--cases", type=int, help="run this many cases")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/vllm-log-lsp-fuzz"))
    args = parser.parse_args(argv)
    minutes = args.minutes if args.minutes is not None or args.cases is not None else 10.0
    return 1 if run(args.seed, args.cases, minutes, args.out) else 0


if __name__ == "__main__":
    sys.exit(main())
