"""Walking a workspace: what is found, what is skipped, and the bounds."""

from __future__ import annotations

from pathlib import Path

from vllm_log_lsp.launch import DiscoveryOptions, discover


def write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def tree(root: Path) -> None:
    write(root, "scripts/serve.sh", "#!/bin/bash\nvllm serve org/a --port 8000\n")
    write(root, "start", "#!/usr/bin/env bash\nvllm serve org/b\n")  # no extension, shebang
    write(root, "deploy/compose.yaml", "services:\n  v:\n    image: vllm/vllm-openai\n    command: [org/c]\n")
    write(root, "app/run.py", "from vllm import LLM\nLLM(model='org/d')\n")
    write(root, "docs/README.md", "Run `vllm` like so:\n\n    vllm serve org/e\n")
    write(root, "Dockerfile", 'FROM vllm/vllm-openai\nCMD ["org/f"]\n')
    # never looked at
    write(root, ".git/hooks/post-commit.sh", "vllm serve org/git\n")
    write(root, ".venv/bin/serve.sh", "vllm serve org/venv\n")
    write(root, "env2/pyvenv.cfg", "home = /usr\n")
    write(root, "env2/lib/serve.sh", "vllm serve org/venv2\n")
    write(root, "node_modules/x/serve.sh", "vllm serve org/node\n")
    write(root, "big.sh", "vllm serve org/big\n" + "#" * 2_000_000 + "\n")
    write(root, "binary.sh", b"vllm serve org/bin\n\x00\x01")
    write(root, "server.log", "INFO vllm serve org/log\n")


def models(found) -> list[str]:
    return sorted(i.model or "?" for i in found.invocations)


def test_finds_every_format_and_skips_the_rest(tmp_path: Path) -> None:
    tree(tmp_path)
    found = discover([str(tmp_path)])
    assert models(found) == ["org/a", "org/b", "org/c", "org/d", "org/e", "org/f"]
    formats = {i.model: i.format for i in found.invocations}
    assert formats == {
        "org/a": "shell",
        "org/b": "shell",
        "org/c": "compose",
        "org/d": "python",
        "org/e": "text",
        "org/f": "dockerfile",
    }
    assert not found.truncated and not found.skipped


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    tree(tmp_path)
    only_yaml = discover([str(tmp_path)], DiscoveryOptions(include=("*.yaml",)))
    assert models(only_yaml) == ["org/c"]
    no_deploy = discover([str(tmp_path)], DiscoveryOptions(exclude=("deploy", "*.py")))
    assert "org/c" not in models(no_deploy) and "org/d" not in models(no_deploy)


def test_file_limit_truncates(tmp_path: Path) -> None:
    for i in range(10):
        write(tmp_path, f"s{i}.sh", f"vllm serve org/m{i}\n")
    found = discover([str(tmp_path)], DiscoveryOptions(max_files=4))
    assert found.truncated and found.files_scanned == 4 and len(found.invocations) == 4


def test_invocation_records_what_it_sets(tmp_path: Path) -> None:
    write(
        tmp_path,
        "serve.sh",
        "export VLLM_LOGGING_LEVEL=DEBUG\nvllm serve org/a \\\n  -tp 2 --port=9000 -cc.mode=0\n",
    )
    (inv,) = discover([str(tmp_path)]).invocations
    assert (inv.model, inv.port, inv.tensor_parallel_size) == ("org/a", 9000, 2)
    assert inv.flags == {
        "--tensor-parallel-size": "2",
        "--port": "9000",
        "--compilation-config.mode": "0",
    }
    assert inv.env == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    assert (inv.range.start_line, inv.range.end_line) == (1, 2)
    assert inv.label == "line 2" and inv.entry == "vllm serve"


def test_single_file_root(tmp_path: Path) -> None:
    write(tmp_path, "a.sh", "vllm serve org/a\n")
    assert models(discover([str(tmp_path / "a.sh")])) == ["org/a"]
