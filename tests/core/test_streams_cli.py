"""`check --follow`, a live standard input and `check --merge`, run as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from json_twins import json_twin
from support import CRASH, CRASH2, read_log
from vllm_log_lsp.core.analyze import analyze
from vllm_log_lsp.core.linebreaks import NewlineLines
from vllm_log_lsp.core.lines import parse_line

CHECK = [sys.executable, "-m", "vllm_log_lsp", "check"]
pytestmark = pytest.mark.skipif(os.name != "posix", reason="follow needs POSIX signals and select")


class Output:
    """What a running command prints, gathered by a thread (reading never blocks the test)."""

    def __init__(self, stream) -> None:
        self.text = ""
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in iter(stream.readline, ""):
            self.text += line

    def wait_for(self, needle: str, seconds: float) -> bool:
        """Whether `needle` is printed within `seconds` (a bounded polling loop)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if needle in self.text:
                return True
            time.sleep(0.05)
        return needle in self.text


FOLLOWING = "as it grows; Ctrl-C ends"


def start(*args: str, stdin=None) -> tuple[subprocess.Popen, Output, Output]:
    """The command running, with what it prints on stdout and on stderr."""
    proc = subprocess.Popen(
        [*CHECK, "--color", "never", *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, Output(proc.stdout), Output(proc.stderr)


def root_place(path: Path, text: str) -> str:
    """`path:line` of the first root cause `check` reports for `text`."""
    analysis = analyze(text)
    return f"{path}:{NewlineLines(text).line(analysis.findings[0].line) + 1}:"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_follow_reports_a_death_appended_to_a_growing_file(tmp_path):
    first, second = read_log(CRASH / "011.log"), read_log(CRASH / "038.log")
    first = first if first.endswith("\n") else first + "\n"
    log = tmp_path / "serve.log"
    log.write_text(first, encoding="utf-8")
    proc, out, _ = start("--follow", str(log))
    try:
        # Ready: the death already in the file is reported once the file is quiet.
        assert out.wait_for(root_place(log, first), 60), out.text
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(second)
        expected = (
            f"{log}:{first.count(chr(10)) + NewlineLines(second).line(analyze(second).findings[0].line) + 1}:"
        )
        assert out.wait_for(expected, 2.0), out.text
        assert out.text.count(f"{log}:") >= 2
    finally:
        stop(proc)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_a_follow_with_the_usual_exit_status(tmp_path, signum):
    text = read_log(CRASH / "007.log")
    log = tmp_path / "serve.log"
    log.write_text(text, encoding="utf-8")
    proc, out, err = start("--follow", str(log))
    try:
        assert out.wait_for(root_place(log, text), 60), out.text
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 1  # a death was reported
        assert FOLLOWING in err.text and "Traceback" not in err.text
    finally:
        stop(proc)


def test_a_healthy_follow_ends_with_status_0_on_ctrl_c(tmp_path):
    log = tmp_path / "serve.log"
    log.write_text("(APIServer pid=1) INFO 11-01 09:43:12 [api_server.py:1] vLLM API server version 0.31.0\n")
    proc, _, err = start("--follow", str(log))
    try:
        assert err.wait_for(FOLLOWING, 60), err.text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in err.text
    finally:
        stop(proc)


def test_a_standard_input_that_pauses_is_followed(tmp_path):
    text = read_log(CRASH / "007.log")
    proc, out, _ = start("-", stdin=subprocess.PIPE)
    try:
        proc.stdin.write(text)
        proc.stdin.flush()  # and the pipe stays open, as `tail -f` keeps it
        assert out.wait_for("<stdin>:" + root_place(Path(""), text).split(":", 1)[1], 60), out.text
        proc.stdin.close()
        assert proc.wait(timeout=30) == 1
    finally:
        stop(proc)


def test_a_standard_input_that_ends_at_once_is_checked_as_before(tmp_path):
    log = CRASH / "007.log"
    piped = subprocess.run([*CHECK, "--color", "never", "-"], input=log.read_bytes(), capture_output=True)
    named = subprocess.run([*CHECK, "--color", "never", str(log)], capture_output=True)
    assert piped.returncode == named.returncode == 1
    assert piped.stdout.decode().replace("<stdin>", str(log)) == named.stdout.decode()


def test_follow_refuses_what_it_cannot_follow(tmp_path):
    done = subprocess.run([*CHECK, "--follow", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "directory" in done.stderr
    two = subprocess.run(
        [*CHECK, "--follow", str(CRASH / "007.log"), str(CRASH / "002.log")], capture_output=True, text=True
    )
    assert two.returncode == 2 and "one FILE" in two.stderr


# -- merge --------------------------------------------------------------------------------------
def split_per_process(text: str, workers: bool = True) -> tuple[dict[str, list[str]], list[tuple[str, int]]]:
    """One file per worker process and one for the rest (EngineCore, API server), as per-rank
    logging writes them: a line without a process prefix belongs to the writer before it.
    Returns the files' lines and, per original line, (file, 0-based line in it)."""
    files: dict[str, list[str]] = {}
    where = []
    current = "main"
    for number, raw in enumerate(text.split("\n")):
        process = parse_line(number, raw).process
        if process:
            current = process if workers and "Worker" in process else "main"
        files.setdefault(current, []).append(raw)
        where.append((current, len(files[current]) - 1))
    return files, where


def write_parts(tmp_path: Path, files: dict[str, list[str]], order: list[str], twin: str = "") -> list[Path]:
    paths = []
    for name in order:
        path = tmp_path / f"{name}.log"
        text = "\n".join(files[name]) + "\n"
        path.write_text(json_twin(text).text if name == twin else text, encoding="utf-8")
        paths.append(path)
    return paths


def check_json(*args: str) -> tuple[int, dict]:
    done = subprocess.run([*CHECK, "--format", "json", *args], capture_output=True, text=True)
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("reverse", [False, True], ids=["main-first", "worker-first"])
def test_two_per_rank_files_of_one_death_are_one_incident_rooted_in_the_worker(tmp_path, reverse):
    text = read_log(CRASH / "002.log")  # TP worker raises; EngineCore re-raises; the API server dies
    files, where = split_per_process(text)
    assert set(files) == {"main", "Worker_TP0"}
    plain_root = NewlineLines(text).line(analyze(text).findings[0].line)
    worker_file, worker_line = where[plain_root]
    assert worker_file == "Worker_TP0"
    order = ["Worker_TP0", "main"] if reverse else ["main", "Worker_TP0"]
    paths = write_parts(tmp_path, files, order)
    # Alone, the main file's root is EngineCore's side of the death, not the worker's exception.
    _, alone = check_json("--no-merge", *map(str, paths))
    assert sum(len(f["incidents"]) for f in alone["files"]) == 2
    status, merged = check_json("--merge", *map(str, paths))
    assert status == 1
    [entry] = merged["files"]
    [incident] = entry["incidents"]
    root = incident["root_cause"]
    assert (root["path"], root["line"]) == (str(tmp_path / "Worker_TP0.log"), worker_line + 1)
    # The merged run is summed up as one file of the JSON report (version 2) is.
    assert entry["summary"]["status"] == "death" and entry["summary"]["causes"] == {root["cause"]: 1}
    assert merged["summary"]["incidents"] == 1 and merged["summary"]["exit_status"] == 1
    assert {s["path"] for s in incident["symptoms"]} >= {str(tmp_path / "main.log")}
    for symptom in incident["symptoms"]:  # every link is a real line of its own file
        lines = Path(symptom["path"]).read_text(encoding="utf-8").split("\n")
        assert symptom["text"].split("\n")[0][:30] in lines[symptom["line"] - 1]


def test_per_rank_files_of_one_run_are_merged_without_asking(tmp_path):
    files, _ = split_per_process(read_log(CRASH / "002.log"))
    paths = write_parts(tmp_path, files, ["main", "Worker_TP0"])
    done = subprocess.run([*CHECK, "--color", "never", *map(str, paths)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "checked as one run" in done.stderr
    heads = [line for line in done.stdout.splitlines() if line.startswith(str(tmp_path)) and " — " in line]
    assert len(heads) == 1 and heads[0].startswith(f"{tmp_path / 'Worker_TP0.log'}:")
    assert f"symptom {tmp_path / 'main.log'}:" in done.stdout


def test_logs_of_different_runs_are_not_merged_without_asking(tmp_path):
    status, report = check_json(str(CRASH / "007.log"), str(CRASH / "002.log"))
    assert status == 1 and len(report["files"]) == 2


def test_a_json_rank_file_merges_with_a_plain_one(tmp_path):
    text = read_log(CRASH / "002.log")
    files, where = split_per_process(text)
    plain_root = NewlineLines(text).line(analyze(text).findings[0].line)
    paths = write_parts(tmp_path, files, ["main", "Worker_TP0"], twin="Worker_TP0")
    twin_line = json_twin("\n".join(files["Worker_TP0"]) + "\n").line_of[where[plain_root][1]]
    _, merged = check_json("--merge", *map(str, paths))
    [incident] = merged["files"][0]["incidents"]
    assert (incident["root_cause"]["path"], incident["root_cause"]["line"]) == (str(paths[1]), twin_line + 1)


@pytest.mark.parametrize("name", ["035.log", "103.log"])
def test_more_ranks_still_make_one_incident_rooted_in_a_worker(tmp_path, name):
    folder = CRASH if (CRASH / name).exists() else CRASH2
    text = read_log(folder / name)
    files, _ = split_per_process(text)
    plain = analyze(text).findings[0]
    paths = write_parts(tmp_path, files, sorted(files))
    _, merged = check_json("--merge", *map(str, paths))
    [incident] = merged["files"][0]["incidents"]
    assert incident["root_cause"]["cause"] == plain.rule_id
    assert "Worker" in Path(incident["root_cause"]["path"]).name


def test_follow_in_json_prints_one_object_per_death(tmp_path):
    text = read_log(CRASH / "007.log")
    log = tmp_path / "serve.log"
    log.write_text(text, encoding="utf-8")
    proc, out, _ = start("--follow", "--format", "json", str(log))
    try:
        assert out.wait_for("\n", 60), out.text
        [line] = out.text.splitlines()
        entry = json.loads(line)
        assert entry["path"] == str(log)
        root = analyze(text).findings[0]
        assert entry["incident"]["root_cause"]["line"] == NewlineLines(text).line(root.line) + 1
        assert entry["incident"]["root_cause"]["cause"] == root.rule_id
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 1
    finally:
        stop(proc)


def test_a_standard_input_slow_to_start_is_still_read_whole():
    log = CRASH / "007.log"
    proc, out, err = start("-", stdin=subprocess.PIPE)
    try:
        time.sleep(1.5)  # nothing yet (a slow producer): no follow
        proc.stdin.write(read_log(log))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 1
        assert FOLLOWING not in err.text
        named = subprocess.run([*CHECK, "--color", "never", str(log)], capture_output=True, text=True)
        out.wait_for(named.stdout.splitlines()[-1], 10)
        assert out.text.replace("<stdin>", str(log)) == named.stdout
    finally:
        stop(proc)


def test_following_a_file_larger_than_what_is_kept_reports_its_deaths(tmp_path):
    """The catch-up of an existing file trims as it reads (memory bounded from the first read):
    the death comes from a kept text that no longer starts at the file's first line."""
    from vllm_log_lsp.core.catalog import builtin_catalog
    from vllm_log_lsp.streams import follow_file

    death = read_log(CRASH / "007.log")
    filler = "(APIServer pid=1) INFO 11-01 09:43:12 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0\n"
    log = tmp_path / "serve.log"
    death = death if death.endswith("\n") else death + "\n"
    # ~4 MB, four reads; the death is complete as soon as it is read (its late window follows).
    log.write_text(filler * 40000 + death + filler * 500, encoding="utf-8")
    seen = []

    def emit(found) -> None:
        seen.append(found)
        raise KeyboardInterrupt  # the death is out: stop following, as Ctrl-C does

    assert follow_file(str(log), builtin_catalog(), emit, poll=0.05, idle=0.1, max_chars=1 << 20)
    [found] = seen
    assert found.line == 40000 + NewlineLines(death).line(analyze(death).findings[0].line)
    assert found.numbering.pieces[-1][1] > 0  # the text kept starts past the file's start
