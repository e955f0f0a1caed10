"""`vllm-log-lsp check LOG --fix SCRIPT [--write] [--fix-index N]` on copies of the fixtures.

In process (`cli.main`) for speed; one test runs the real command for the exit code.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from vllm_log_lsp.cli import main
from vllm_log_lsp.launch import invocations_in_text

CRASH = Path(__file__).resolve().parents[1] / "fixtures" / "crash"
LAUNCH = Path(__file__).parent / "fixtures"


def copy(tmp_path: Path, fixture: str, name: str | None = None) -> Path:
    name = name or (fixture[: -len(".txt")] if fixture.endswith(".py.txt") else fixture)
    return Path(shutil.copy(LAUNCH / fixture, tmp_path / name))


def logged_run_007(tmp_path: Path, fixture: str = "continuations.sh") -> Path:
    """A copy of `fixture` as the script of 007.log's run: 1024 sequences (its sampler warmed up
    1024 dummy requests), so the log's advice is 512."""
    path = copy(tmp_path, fixture, "serve.sh")
    path.write_text(path.read_text().replace("--max_num_seqs=256", "--max_num_seqs=1024"))
    return path


def check_fix(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_the_preferred_fix_as_a_diff(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    serve = logged_run_007(tmp_path)
    before = serve.read_text()
    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", "serve.sh")
    assert code == 1
    assert out.startswith("--- a/serve.sh\n+++ b/serve.sh\n@@ ")
    assert "-    --max_num_seqs=1024 \\\n+    --max_num_seqs=512 \\\n" in out
    assert out.count("\n-") == 1 and out.count("\n+") == 2  # the headers' `+++` and one line
    assert "fix 1 of oom-sampler-warmup" in err and "serve.sh:15: --max-num-seqs 1024 → 512" in err
    assert serve.read_text() == before  # without --write nothing is written


def test_write_applies_once(tmp_path, capsys) -> None:
    serve = logged_run_007(tmp_path)
    code, out, _ = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve), "--write")
    assert code == 1 and "+    --max_num_seqs=512" in out
    fixed = serve.read_text()
    subprocess.run(["bash", "-n", str(serve)], check=True)
    assert invocations_in_text(str(serve), fixed)[0].flags["--max-num-seqs"] == "512"

    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve), "--write")
    assert (
        code == 1 and "+    --gpu-memory-utilization 0.85" in out
    )  # fix 1 is in (no 512 → 256): fix 2 is next
    assert "fix 2 of oom-sampler-warmup" in err and "--gpu-memory-utilization 0.85" in err
    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve))
    assert (code, out) == (0, "")
    assert "nothing to change: serve.sh:13: already applied: --max-num-seqs 512" in err


def test_fix_index_picks_another_fix(tmp_path, capsys) -> None:
    serve = copy(tmp_path, "one_line.sh", "serve.sh")
    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve), "--fix-index", "2")
    assert code == 1
    assert (
        "+vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 256 --port 8000 --gpu-memory-utilization 0.85"
        in out
    )
    assert "fix 2 of oom-sampler-warmup" in err

    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve), "--fix-index", "9")
    assert (code, out) == (2, "") and "has fixes 1 to 2" in err


@pytest.mark.parametrize(
    ("fixture", "log", "check"),
    [
        ("compose_list.yml", "011.log", lambda t: YAML(typ="safe").load(t)["services"]["vllm"]["command"]),
        ("k8s_deployment.yaml", "011.log", lambda t: list(YAML(typ="safe").load_all(t))),
        ("offline.py.txt", "011.log", ast.parse),
        ("Dockerfile.exec", "038.log", None),
        ("engine_args.py.txt", "038.log", ast.parse),
    ],
)
def test_other_formats_are_written_and_still_parse(tmp_path, capsys, fixture, log, check) -> None:
    path = copy(tmp_path, fixture)
    code, out, _ = check_fix(capsys, str(CRASH / log), "--fix", str(path), "--write")
    assert code == 1 and out
    fixed = path.read_text()
    if check is not None:
        check(fixed)
    (invocation,) = invocations_in_text(str(path), fixed)
    flag, value = ("--max-model-len", "10224") if log == "011.log" else ("--enforce-eager", "true")
    assert invocation.flags[flag] == value


def test_nothing_to_change(tmp_path, capsys) -> None:
    serve = copy(tmp_path, "one_line.sh", "serve.sh")
    healthy = next((CRASH.parent / "healthy").glob("*.log"))
    code, out, err = check_fix(capsys, str(healthy), "--fix", str(serve))
    assert (code, out) == (0, "") and "no engine death found" in err
    code, out, err = check_fix(capsys, str(CRASH / "002.log"), "--fix", str(serve))  # advice only
    assert (code, out) == (0, "") and "no fix that edits a launch script" in err


def test_unreadable_or_malformed_is_exit_2(tmp_path, capsys) -> None:
    serve = copy(tmp_path, "one_line.sh", "serve.sh")
    code, out, err = check_fix(capsys, str(tmp_path / "missing.log"), "--fix", str(serve))
    assert (code, out) == (2, "") and "cannot read" in err
    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(tmp_path / "missing.sh"))
    assert (code, out) == (2, "") and "cannot read" in err

    compose = tmp_path / "compose.yml"
    broken = "services:\n  vllm:\n    command: [--model, m, --max-num-seqs, 256\n  bad: [\n"
    compose.write_text(broken)
    code, out, err = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(compose), "--write")
    assert (code, out) == (2, "") and "skipped compose.yml: invalid YAML" in err
    assert compose.read_text() == broken

    code, _, err = check_fix(capsys, str(CRASH / "007.log"), "--write")
    assert code == 2 and "need --fix" in err


def test_exit_code_of_the_real_command(tmp_path) -> None:
    serve = copy(tmp_path, "one_line.sh", "serve.sh")
    done = subprocess.run(
        [sys.executable, "-m", "vllm_log_lsp", "check", str(CRASH / "007.log"), "--fix", str(serve)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "+vllm serve" in done.stdout


def test_write_keeps_crlf_line_ends(tmp_path, capsys) -> None:
    """A script saved by a Windows editor: every line, the continuation ones too, stays CRLF."""
    serve = logged_run_007(tmp_path)
    text = serve.read_text().replace("\n", "\r\n")
    serve.write_bytes(text.encode())
    code, _, _ = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve), "--write")
    assert code == 1
    fixed = serve.read_bytes().decode()
    assert fixed == text.replace("--max_num_seqs=1024", "--max_num_seqs=512")
    # and the next fix adds a continuation line, in CRLF, after the `\`+CR of the last one
    code, _, _ = check_fix(capsys, str(CRASH / "007.log"), "--fix", str(serve), "--write")
    again = serve.read_bytes().decode()
    assert code == 1 and again.count("\r\n") == again.count("\n") == fixed.count("\n") + 1
    assert "--port 8000 \\\r\n    --gpu-memory-utilization 0.85 2>&1 | tee server.log\r\n" in again


def test_naming_a_readme_is_the_opt_in_for_documentation(tmp_path, capsys) -> None:
    """Discovery leaves docs alone by default; `--fix README.md` asks for that very file."""
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Serve\n\nRun vllm serve when ready.\n\n```bash\nvllm serve m --max-model-len 32768\n```\n"
    )
    code, out, _ = check_fix(capsys, str(CRASH / "011.log"), "--fix", str(readme), "--write")
    assert code == 1 and "+vllm serve m --max-model-len 10224" in out
    assert readme.read_text().startswith("# Serve\n\nRun vllm serve when ready.\n")
