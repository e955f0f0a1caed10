"""Which built-in pattern's search time grows fastest with the line it reads, under `re` and `regex`.

    python benchmarks/regex_linearity.py [--top 10] [--small 5000] [--large 100000] [--engine re|regex|both]

For every marker and rule pattern of the built-in catalog, the adversarial lines of
`vllm_log_lsp.core.linearity.shapes` are timed at `--small` characters and the slowest shapes again at
`--large` (super-linear shapes only at 4x `--small`: the long run would take minutes to say the same).
Prints the worst patterns by growth relative to the line's growth (1.0 is linear) and the slowest one at
`--large`. Not a test (tests/catalog/test_linearity.py is): timings depend on the machine.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from vllm_log_lsp.core.catalog import builtin_catalog
from vllm_log_lsp.core.linearity import worst_growth


def patterns() -> list[tuple[str, str]]:
    catalog = builtin_catalog()
    found = [(f"marker {kind}:{m.id}", m.pattern.source) for kind, ms in catalog.markers.items() for m in ms]
    for rule in catalog.rules:
        for field in ("match", "frames", "context", "evidence"):
            found += [(f"rule {rule.id}.{field}", p.source) for p in getattr(rule, field)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--small", type=int, default=5_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--engine", choices=("re", "regex", "both"), default="both")
    args = parser.parse_args()
    engines = {"re": re}
    try:
        import regex

        engines["regex"] = regex
    except ImportError:
        print("regex is not installed: re only")
    if args.engine != "both":
        engines = {k: v for k, v in engines.items() if k == args.engine}
    for name, engine in engines.items():
        start = time.perf_counter()
        rows = []
        for where, source in patterns():
            growth = worst_growth(engine.compile(source).search, source, args.small, args.large, repeat=1)
            rows.append((growth.ratio / growth.length_ratio, growth, where, source))
        rows.sort(key=lambda row: row[0], reverse=True)
        print(f"\n== {name}: {len(rows)} patterns in {time.perf_counter() - start:.1f} s")
        for relative, growth, where, source in rows[: args.top]:
            print(
                f"{relative:6.2f}x  {growth.large_seconds * 1000:9.2f} ms at {growth.large_length:>6}  "
                f"{where}  [{growth.shape}]  {source[:90]!r}"
            )
        worst = rows[0]
        print(f"worst under {name}: {worst[2]} ({worst[0]:.2f}x linear growth)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
