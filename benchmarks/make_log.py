"""Generate the benchmark's logs: what real vLLM deployments print, at realistic rates.

Three shapes, each deterministic for a seed, each with the answer the analysis must give:

- `serving`: a busy V1 API server (access-log lines, per-request INFO lines with sampling
  parameters, stats every few seconds, the odd warning) with *recovered per-request tracebacks*
  every ~1,500 lines, as production logs have them: a bad prompt rejected in pre-processing
  (`logger.exception`, the header on every line) and a client-side ASGI error (uvicorn's raw
  chained traceback). It ends in a TP=2 worker OOM (tests/fixtures/formats/tp2-worker-oom.log).
- `restarts`: a restart loop: the crash logs of tests/fixtures/crash one after another, each
  started by the API server's version banner as a restarting service prints it, cycled until the
  requested number of deaths.
- `all-error`: the worst case for a literal pre-filter: every line is an ERROR line of a logged
  traceback (an engine that keeps failing requests), then the same TP=2 death.
- `request-errors`: the same failing requests as a server answers them: each traceback followed
  by the request's access-log line (`400 Bad Request`), then the same TP=2 death.
- `real`: real logs, not generated ones: the healthy logs of tests/fixtures/healthy (byte for
  byte: progress bars ending in a bare `\r`, colour codes, EngineCore and worker lines, the
  odd recovered traceback) one after another, again and again; no death.

    python benchmarks/make_log.py OUT.log --shape serving --mb 100
    python benchmarks/make_log.py OUT.log --shape restarts --deaths 500
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRASH = ROOT / "tests" / "fixtures" / "formats" / "tp2-worker-oom.log"
CRASH_LOGS = ROOT / "tests" / "fixtures" / "crash"
HEALTHY_LOGS = ROOT / "tests" / "fixtures" / "healthy"
SHAPES = ("serving", "restarts", "all-error", "request-errors", "real")
#: One recovered per-request traceback every this many lines (real logs: every few thousand).
TRACEBACK_EVERY = 1500
BANNER = "INFO 10-03 21:20:01 [api_server.py:1805] vLLM API server version 0.11.0"


@dataclass
class Generated:
    """A generated log and what is known about it."""

    path: Path
    shape: str
    lines: int = 0
    tracebacks: int = 0  # recovered tracebacks in the body (serving, all-error)
    #: Per death, in order: (first line of its segment, the segment's text); `restarts` only.
    segments: list[tuple[int, str]] = field(default_factory=list)
    crash_line: int = 0  # line where the final death transcript starts (serving, all-error)

    @property
    def megabytes(self) -> float:
        return self.path.stat().st_size / 1e6


def _stamp(second: int) -> str:
    return f"10-03 {(21 + second // 3600) % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def serving_lines(rng: random.Random) -> Iterator[str]:
    """Endless healthy serving traffic from one API server."""
    second = 0
    while True:
        second += 1
        stamp = _stamp(second)
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
            yield access_line(rng, "200 OK")
        if second % 10 == 0:
            yield (
                f"(APIServer pid=100) INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: "
                f"{rng.uniform(100, 5000):.1f} tokens/s, Avg generation throughput: {rng.uniform(50, 900):.1f} tokens/s, "
                f"Running: {rng.randint(1, 64)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(1, 60):.1f}%, "
                f"Prefix cache hit rate: {rng.uniform(0, 80):.1f}%"
            )
        if second % 600 == 0:
            yield f"(APIServer pid=100) WARNING {stamp} [protocol.py:58] The following fields were present in the request but ignored: {{'stream_options'}}"


def access_line(rng: random.Random, status: str) -> str:
    """uvicorn's access-log line of a chat completion answered with `status`."""
    client = f"10.0.{rng.randint(0, 9)}.{rng.randint(1, 250)}:{rng.randint(30000, 60000)}"
    return f'(APIServer pid=100) INFO:     {client} - "POST /v1/chat/completions HTTP/1.1" {status}'


def preprocessing_error(rng: random.Random, stamp: str = "10-03 21:30:00") -> list[str]:
    """A bad prompt rejected by the API server: `logger.exception`, the header on every line."""
    head = f"(APIServer pid=100) ERROR {stamp} [serving_chat.py:245]"
    limit = rng.choice([8192, 16384, 32768])
    asked = limit + rng.randint(1, 5000)
    return [
        f"{head} Error in preprocessing prompt inputs",
        f"{head} Traceback (most recent call last):",
        f'{head}   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 228, in create_chat_completion',
        f"{head}     ) = await self._preprocess_chat(",
        f"{head}         ^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'{head}   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_engine.py", line 1041, in _preprocess_chat',
        f"{head}     prompt_inputs = await self._tokenize_prompt_input_async(",
        f'{head}   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_engine.py", line 575, in _validate_input',
        f"{head}     raise ValueError(",
        f"{head} ValueError: This model's maximum context length is {limit} tokens. However, you requested "
        f"{asked} tokens ({asked - 100} in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
    ]


def asgi_error(rng: random.Random) -> list[str]:
    """A request that failed inside the ASGI app: uvicorn prints the raw chained traceback."""
    p = "(APIServer pid=100)"
    port = rng.randint(30000, 60000)
    return [
        f'{p} INFO:     10.0.3.7:{port} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        f"{p} ERROR:    Exception in ASGI application",
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/usr/local/lib/python3.12/dist-packages/starlette/responses.py", line 259, in wrap',
        f"{p}     await func()",
        f'{p}   File "/usr/local/lib/python3.12/dist-packages/starlette/responses.py", line 246, in stream_response',
        f"{p}     await send({{'type': 'http.response.body', 'body': chunk, 'more_body': True}})",
        f"{p} anyio.ClosedResourceError",
        f"{p} ",
        f"{p} During handling of the above exception, another exception occurred:",
        f"{p} ",
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
        f"{p}     result = await app(  # type: ignore[func-returns-value]",
        f'{p}   File "/usr/local/lib/python3.12/dist-packages/starlette/middleware/errors.py", line 186, in __call__',
        f"{p}     raise exc",
        f"{p} starlette.requests.ClientDisconnect",
    ]


def _write_lines(out, lines: Iterator[str] | list[str], target: int, written: int) -> tuple[int, int]:
    """Write lines in batches until `target` bytes; returns (bytes written, lines written)."""
    count = 0
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == 2000:
            written += out.write("\n".join(batch) + "\n")
            count += len(batch)
            batch.clear()
            if written >= target:
                return written, count
    if batch:
        written += out.write("\n".join(batch) + "\n")
        count += len(batch)
    return written, count


def _with_recovered_tracebacks(rng: random.Random, every: int, info: Generated) -> Iterator[str]:
    body = serving_lines(rng)
    n = 0
    while True:
        for _ in range(every):
            yield next(body)
        n += 1
        info.tracebacks += 1
        yield from preprocessing_error(rng) if n % 2 else asgi_error(rng)


def _failing_requests(rng: random.Random, info: Generated, answered: bool) -> Iterator[str]:
    """Every request fails in pre-processing; `answered`: each then gets its access-log line."""
    second = 0
    while True:
        second += 1
        info.tracebacks += 1
        yield from preprocessing_error(rng, _stamp(second))
        if answered:
            yield access_line(rng, "400 Bad Request")


def make_log(
    path: Path, megabytes: float = 100, shape: str = "serving", seed: int = 7, **options
) -> Generated:
    """Write a log of `shape` of about `megabytes` MB (restarts: `deaths` deaths) to `path`."""
    if shape == "restarts":
        return _make_restarts(path, options.get("deaths", 500))
    if shape == "real":
        return _make_real(path, megabytes)
    crash = CRASH.read_text(encoding="utf-8").split("\n")
    startup, death = crash[:12], crash[12:]
    rng = random.Random(seed)
    info = Generated(path, shape)
    with open(path, "w", encoding="utf-8") as out:
        written = out.write("\n".join(startup) + "\n")
        if shape == "serving":
            body = _with_recovered_tracebacks(rng, options.get("traceback_every", TRACEBACK_EVERY), info)
        else:
            body = _failing_requests(rng, info, answered=shape == "request-errors")
        written, count = _write_lines(out, body, int(megabytes * 1e6), written)
        out.write("\n".join(death))
    info.crash_line = len(startup) + count
    info.lines = info.crash_line + len(death)
    return info


def restart_segments() -> list[str]:
    """The crash logs a restart loop cycles through, each as a restarting service prints it."""
    segments = []
    for log in sorted(CRASH_LOGS.glob("*.log")):
        text = log.read_text(encoding="utf-8", errors="replace").rstrip("\n")
        segments.append(f"{BANNER}\n{text}\n")
    return segments


def _make_restarts(path: Path, deaths: int) -> Generated:
    info = Generated(path, "restarts")
    segments = restart_segments()
    line = 0
    with open(path, "w", encoding="utf-8") as out:
        for i in range(deaths):
            segment = segments[i % len(segments)]
            info.segments.append((line, segment))
            out.write(segment)
            line += segment.count("\n")
    info.lines = line
    return info


def real_logs() -> list[bytes]:
    """The real healthy logs the `real` shape repeats, each ending in a line break."""
    logs = [log.read_bytes() for log in sorted(HEALTHY_LOGS.glob("*.log"))]
    return [log if log.endswith(b"\n") else log + b"\n" for log in logs]


def _make_real(path: Path, megabytes: float) -> Generated:
    info = Generated(path, "real")
    logs = b"".join(real_logs())
    copies = max(1, round(megabytes * 1e6 / len(logs)))
    with open(path, "wb") as out:
        for _ in range(copies):
            out.write(logs)
    info.lines = logs.count(b"\n") * copies
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--shape", choices=SHAPES, default="serving")
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--deaths", type=int, default=500)
    args = parser.parse_args()
    info = make_log(args.out, args.mb, args.shape, deaths=args.deaths)
    print(f"wrote {args.out} ({info.megabytes:.1f} MB, {info.lines:,} lines, {info.tracebacks} tracebacks)")


if __name__ == "__main__":
    main()
