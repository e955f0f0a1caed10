"""Generate a realistic vLLM serving log of a given size that ends in a crash.

The body is what a busy V1 API server prints: access-log lines, per-request INFO lines with
sampling parameters, stats every few seconds, the odd warning. The end is a TP=2 worker OOM
(the same transcript as tests/fixtures/formats/tp2-worker-oom.log).

    python benchmarks/make_log.py OUT.log --mb 100
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRASH = ROOT / "tests" / "fixtures" / "formats" / "tp2-worker-oom.log"


def serving_lines(rng: random.Random):
    second = 0
    while True:
        second += 1
        stamp = f"10-03 {(21 + second // 3600) % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        for _ in range(rng.randint(5, 12)):
            rid = f"chatcmpl-{rng.getrandbits(64):016x}"
            tokens = rng.randint(20, 4000)
            yield (
                f"(APIServer pid=100) INFO {stamp} [logger.py:39] Received request {rid}: prompt: "
                f"'<|im_start|>user\\nSummarise the quarterly report section {rng.randint(1, 999)}…', "
                f"params: SamplingParams(n=1, temperature=0.7, top_p=0.8, max_tokens={tokens}), "
                f"prompt_token_ids: None, lora_request: None."
            )
            yield f"(APIServer pid=100) INFO {stamp} [async_llm.py:261] Added request {rid}."
            yield f'(APIServer pid=100) INFO:     10.0.{rng.randint(0, 9)}.{rng.randint(1, 250)}:{rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        if second % 10 == 0:
            yield (
                f"(APIServer pid=100) INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: "
                f"{rng.uniform(100, 5000):.1f} tokens/s, Avg generation throughput: {rng.uniform(50, 900):.1f} tokens/s, "
                f"Running: {rng.randint(1, 64)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(1, 60):.1f}%, "
                f"Prefix cache hit rate: {rng.uniform(0, 80):.1f}%"
            )
        if second % 600 == 0:
            yield f"(APIServer pid=100) WARNING {stamp} [protocol.py:58] The following fields were present in the request but ignored: {{'stream_options'}}"


def make_log(path: Path, megabytes: float, seed: int = 7) -> None:
    crash = CRASH.read_text(encoding="utf-8").split("\n")
    startup, death = crash[:12], crash[12:]
    target = int(megabytes * 1024 * 1024)
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        written = 0
        for line in startup:
            written += out.write(line + "\n")
        batch: list[str] = []
        for line in serving_lines(rng):
            batch.append(line)
            if len(batch) == 2000:
                written += out.write("\n".join(batch) + "\n")
                batch.clear()
                if written >= target:
                    break
        out.write("\n".join(death))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=100)
    args = parser.parse_args()
    make_log(args.out, args.mb)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
