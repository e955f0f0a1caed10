"""Many logs at once, as a user runs `check`: directories, globs, compressed logs, parallel
batches, the summary table, the exit status, and the progress line on a terminal."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import zstandard

from support import CRASH, CRASH2, FORMATS, HEALTHY, crash_labels, run_cli

OOM = FORMATS / "tp2-worker-oom.log"
COMPRESSORS = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".zst": lambda data: zstandard.ZstdCompressor().compress(data),
}


def labelled(name: str) -> int:
    return next(e["root_cause_line"] for e in crash_labels() if e["file"] == name)


def mixed_folder(root: Path, unreadable: bool = True) -> dict[str, tuple[str, int | None]]:
    """A folder as log rotation and a CI artifact leave it: plain and compressed logs (every
    compression), rotated names, a sub-folder, files that are no logs. Returns each log's
    expected (cause line) by its path: the crash's labelled root-cause line, or None."""
    expected: dict[str, tuple[str, int | None]] = {}
    plan = [
        ("serve.log", CRASH / "002.log", None),
        ("serve.log.1.gz", CRASH / "007.log", ".gz"),
        ("rank0/worker.txt.bz2", CRASH / "011.log", ".bz2"),
        ("rank1/worker.out.xz", CRASH / "014.log", ".xz"),
        ("rank1/old/serve.log-20250101.zst", CRASH / "019.log", ".zst"),
        ("healthy.log.gz", HEALTHY / "001.log", ".gz"),
        ("healthy.err", HEALTHY / "003.log", None),
    ]
    for name, source, compression in plan:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes()
        target.write_bytes(COMPRESSORS[compression](data) if compression else data)
        line = labelled(source.name) if source.parent == CRASH else None
        expected[str(target)] = (source.name, line)
    (root / "labels.jsonl").write_text('{"file": "serve.log"}\n', encoding="utf-8")  # not a log
    (root / "screenshot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    (root / ".cache").mkdir()
    (root / ".cache" / "copy.log").write_bytes(OOM.read_bytes())  # hidden: skipped
    if unreadable:
        (root / "broken.log.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(64))  # a cut gzip
    return expected


def test_a_directory_of_mixed_plain_and_compressed_logs(tmp_path: Path) -> None:
    expected = mixed_folder(tmp_path)
    result = run_cli("check", "--format", "json", str(tmp_path))
    assert result.returncode == 2  # a file could not be read: never a pass
    report = json.loads(result.stdout)
    paths = [f["path"] for f in report["files"]]
    broken = str(tmp_path / "broken.log.gz")
    # A folder's files (sorted), then its sub-folders' (sorted), recursively; hidden ones and no-logs skipped.
    order = ["broken.log.gz", "healthy.err", "healthy.log.gz", "serve.log", "serve.log.1.gz"]
    order += ["rank0/worker.txt.bz2", "rank1/worker.out.xz", "rank1/old/serve.log-20250101.zst"]
    assert paths == [str(tmp_path / name) for name in order]
    for entry in report["files"]:
        if entry["path"] == broken:
            assert entry["summary"]["status"] == "unreadable" and "not valid gzip data" in entry["error"]
            continue
        name, line = expected[entry["path"]]
        lines = [i["root_cause"]["line"] for i in entry["incidents"]]
        assert (line in lines) if line else lines == [], (entry["path"], name)
    summary = report["summary"]
    assert (summary["files"], summary["with_death"], summary["without_death"], summary["unreadable"]) == (
        8,
        5,
        2,
        1,
    )
    assert sum(row["incidents"] for row in summary["causes"]) == summary["incidents"]
    assert f"cannot read {broken}: not valid gzip data" in result.stderr


def test_the_summary_table_ends_a_batch(tmp_path: Path) -> None:
    expected = mixed_folder(tmp_path)
    result = run_cli("check", str(tmp_path))
    report = json.loads(run_cli("check", "--format", "json", str(tmp_path)).stdout)
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("summary: "))
    table = lines[start:]
    deaths = report["summary"]["incidents"]
    assert table[0] == f"summary: 8 files checked, {deaths} engine deaths in 5 files, 2 without, 1 unreadable"
    rows = {
        m[1]: (int(m[2]), int(m[3])) for line in table if (m := re.match(r"  (\S+) +(\d+) +(\d+)$", line))
    }
    assert rows == {r["cause"]: (r["incidents"], r["files"]) for r in report["summary"]["causes"]}
    healthy = sorted(p for p, (_, line) in expected.items() if line is None)
    assert f"  no engine death (2): {', '.join(healthy)}" in table
    assert table[-2] == "  unreadable (1):"
    assert table[-1].startswith(f"    cannot read {tmp_path / 'broken.log.gz'}: not valid gzip data")
    # One file: no table (the report is the file's).
    assert "summary:" not in run_cli("check", str(OOM)).stdout


def test_exit_status_of_a_batch(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "deaths", unreadable=False)
    assert run_cli("check", str(tmp_path / "deaths")).returncode == 1
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    for log in sorted(HEALTHY.glob("*.log"))[:3]:
        (healthy / f"{log.name}.gz").write_bytes(gzip.compress(log.read_bytes()))
    assert run_cli("check", str(healthy)).returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("no logs here\n", encoding="utf-8")
    result = run_cli("check", str(empty), str(healthy))
    assert result.returncode == 2 and f"no log files in {empty}" in result.stderr


def test_globs_are_expanded_when_the_shell_did_not(tmp_path: Path) -> None:
    expected = mixed_folder(tmp_path, unreadable=False)
    report = json.loads(run_cli("check", "--format", "json", f"{tmp_path}/**/*.log*").stdout)
    found = [f["path"] for f in report["files"]]
    assert found == sorted(p for p in expected if ".log" in Path(p).name)
    assert len(found) == 4  # healthy.log.gz, old/serve.log-20250101.zst, serve.log, serve.log.1.gz
    nothing = run_cli("check", f"{tmp_path}/*.nothing")
    assert nothing.returncode == 2 and f"no file matches {tmp_path}/*.nothing" in nothing.stderr
    # A file whose name holds glob characters is read as it is.
    odd = tmp_path / "run[1].log"
    odd.write_bytes(OOM.read_bytes())
    assert run_cli("check", str(odd)).stdout.startswith(f"{odd}:27:")


def test_a_log_is_named_by_its_suffix_in_a_directory() -> None:
    from vllm_log_lsp.batch import is_log_name

    logs = [
        "serve.log",
        "serve.LOG",
        "serve.log.1",
        "serve.log.12.gz",
        "serve.log-20250101.zst",
        "rank0.txt.xz",
        "job.out",
        "job.err",
        "a.log.bz2",
    ]
    others = [
        "labels.jsonl",
        "notes.md",
        "core.1234",
        "image.png",
        "serve.log.gz.txt.sh",
        "logs",
        "catalog.toml",
        "x.gz",
    ]
    assert [n for n in logs if not is_log_name(n)] == []
    assert [n for n in others if is_log_name(n)] == []


def test_parallel_batches_give_the_sequential_output() -> None:
    logs = [str(p) for p in sorted(CRASH.glob("*.log"))[:10] + sorted(CRASH2.glob("*.log"))[:6]]
    for form in ("json", "text", "sarif", "github"):
        one = run_cli("check", "--jobs", "1", "--format", form, *logs)
        two = run_cli("check", "--jobs", "2", "--format", form, *logs)
        assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr), form
    assert run_cli("check", "--jobs", "0", str(OOM)).returncode == 2


def test_user_rules_reach_the_workers(tmp_path: Path) -> None:
    """A user rule file is loaded in every worker process."""
    rule = tmp_path / "mine.toml"
    rule.write_text(
        '[[rule]]\nid = "my-oom"\ntitle = "Our cluster OOM"\nfamily = "memory"\nmatch = ["OutOfMemoryError"]\n',
        encoding="utf-8",
    )
    logs = [str(OOM), str(CRASH / "002.log")]
    result = run_cli("check", "--jobs", "2", "--rules", str(rule), "--format", "json", *logs)
    causes = [i["root_cause"]["cause"] for f in json.loads(result.stdout)["files"] for i in f["incidents"]]
    assert causes[0] == "my-oom"


def test_zstd_without_a_library_is_a_clear_error(tmp_path: Path) -> None:
    log = tmp_path / "serve.log.zst"
    log.write_bytes(COMPRESSORS[".zst"](OOM.read_bytes()))
    assert run_cli("check", str(log)).stdout.startswith(f"{log}:27: oom-serving")
    # Neither Python 3.14's compression.zstd nor the zstandard package importable:
    hide = "import sys; sys.modules['zstandard'] = None; sys.modules['compression.zstd'] = None; "
    code = hide + "from vllm_log_lsp.cli import main; sys.exit(main())"
    result = subprocess.run(
        [sys.executable, "-c", code, "check", str(log)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and result.stdout == ""
    assert (
        "zstd-compressed, and no zstd library is installed (pip install 'vllm-log-lsp[zstd]'" in result.stderr
    )


# -- the progress line -----------------------------------------------------------------------------
def run_with_terminal_stderr(*args: str) -> tuple[int, str, bytes]:
    """`check ARGS` with stderr on a pseudo-terminal (stdout a pipe): (status, stdout, terminal)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "vllm_log_lsp", *args],
        stdout=subprocess.PIPE,
        stderr=terminal,
        stdin=subprocess.DEVNULL,
    )
    os.close(terminal)
    seen = bytearray()

    def drain() -> None:  # read as the child writes: a full terminal buffer would stop it
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout, _ = process.communicate(timeout=300)
    reader.join(30)
    os.close(controller)
    return process.returncode, stdout.decode("utf-8"), bytes(seen)


def test_a_large_batch_shows_progress_on_a_terminal_only() -> None:
    logs = sorted(CRASH.glob("*.log"))  # more files than a progress line needs
    status, stdout, terminal = run_with_terminal_stderr("check", "--jobs", "1", *map(str, logs))
    assert status == 1
    text = terminal.decode("utf-8", "replace")
    drawn = re.findall(r"\[[#-]{20}\] (\d+)/(\d+) files", text)
    assert drawn and {int(total) for _, total in drawn} == {len(logs)}
    assert [int(done) for done, _ in drawn] == sorted(int(done) for done, _ in drawn)  # it only moves on
    assert (str(len(logs)), str(len(logs))) in drawn  # the last file counted
    assert text.endswith("\r\x1b[K")  # and the line cleared at the end
    assert "\x1b[K" not in stdout and "files ·" not in stdout  # the report is untouched
    piped = run_cli("check", "--jobs", "1", *map(str, logs))
    assert piped.stdout == stdout and piped.stderr == ""  # not a terminal: nothing at all


def test_a_small_input_shows_no_progress_even_on_a_terminal() -> None:
    status, stdout, terminal = run_with_terminal_stderr("check", str(OOM))
    assert status == 1 and stdout.startswith(f"{OOM}:27:")
    assert terminal == b""


def test_a_large_single_log_shows_its_clock(tmp_path: Path) -> None:
    """One log over the size threshold: no fraction is known while it is analysed, the clock and
    the bytes are."""
    from vllm_log_lsp.progress import MIN_BYTES

    filler = b"(APIServer pid=100) INFO 10-03 21:22:40 [api_server.py:1] GET /health HTTP/1.1 200 OK\n"
    big = tmp_path / "big.log"
    with big.open("wb") as handle:
        handle.write(filler * (MIN_BYTES // len(filler) + 1))
        handle.write(OOM.read_bytes())
    status, _stdout, terminal = run_with_terminal_stderr("check", str(big))
    assert status == 1
    text = terminal.decode("utf-8", "replace")
    assert re.search(r"0/1 files · 0/\d+ MiB · \d+\.\d s · big\.log", text)
    assert text.endswith("\r\x1b[K")
