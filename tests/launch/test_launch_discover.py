"""Walking a workspace: what is found, what is skipped, and the bounds."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

from support import within
from vllm_log_lsp.launch import DiscoveryOptions, discover
from vllm_log_lsp.launch.discover import in_scope, iter_files, read_text
from vllm_log_lsp.launch.formats import WATCHED_GLOBS, file_kind


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
    assert models(found) == ["org/a", "org/b", "org/c", "org/d", "org/f"]  # docs: not by default
    formats = {i.model: i.format for i in found.invocations}
    assert formats == {
        "org/a": "shell",
        "org/b": "shell",
        "org/c": "compose",
        "org/d": "python",
        "org/f": "dockerfile",
    }
    assert not found.truncated and not found.skipped
    with_docs = discover([str(tmp_path)], DiscoveryOptions(docs=True))
    assert {i.model: i.format for i in with_docs.invocations} == {**formats, "org/e": "docs"}


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


# -- special files and links ----------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifos_and_devices_are_skipped_without_blocking(tmp_path: Path) -> None:
    write(tmp_path, "real.sh", "#!/bin/bash\nvllm serve org/real\n")
    os.mkfifo(tmp_path / "serve.sh")  # opening it for reading would wait for a writer forever
    os.mkfifo(tmp_path / "start")
    (tmp_path / "zero.sh").symlink_to("/dev/zero")  # getsize() is 0; a read never ends
    (tmp_path / "stdin.sh").symlink_to("/dev/stdin")
    (tmp_path / "random").symlink_to("/dev/urandom")
    found = within(20, discover, [str(tmp_path)])
    assert models(found) == ["org/real"]
    assert not found.skipped
    # A FIFO or device named directly as the root is refused the same way.
    assert models(within(20, discover, [str(tmp_path / "serve.sh")])) == []
    assert models(within(20, discover, [str(tmp_path / "zero.sh")])) == []


def test_read_text_checks_the_open_file_not_the_path(tmp_path: Path) -> None:
    write(tmp_path, "ok.sh", "vllm serve org/ok\n")
    assert read_text(str(tmp_path / "ok.sh"), 100) == "vllm serve org/ok\n"
    assert read_text(str(tmp_path / "ok.sh"), 10) is None  # over the limit
    (tmp_path / "zero.sh").symlink_to("/dev/zero")
    assert within(10, read_text, str(tmp_path / "zero.sh"), 1 << 20) is None
    assert read_text(str(tmp_path), 100) is None  # a folder


def test_symlinks_out_of_the_workspace_are_not_followed(tmp_path: Path) -> None:
    outside, workspace = tmp_path / "outside", tmp_path / "workspace"
    write(outside, "serve.sh", "#!/bin/bash\nvllm serve org/outside\n")
    write(workspace, "scripts/inner.sh", "#!/bin/bash\nvllm serve org/inner\n")
    (workspace / "serve.sh").symlink_to(outside / "serve.sh")  # a quick fix would edit the outside file
    (workspace / "alias.sh").symlink_to(workspace / "scripts" / "inner.sh")  # stays inside: fine
    (workspace / "linked-dir").symlink_to(outside, target_is_directory=True)
    found = discover([str(workspace)])
    assert models(found) == ["org/inner", "org/inner"]
    assert sorted(Path(i.path).name for i in found.invocations) == ["alias.sh", "inner.sh"]


@pytest.mark.parametrize(
    "options",
    [
        DiscoveryOptions(),
        DiscoveryOptions(include=("*.yaml", "start")),
        DiscoveryOptions(include=("scripts/*",)),
        DiscoveryOptions(exclude=("deploy", "*.py")),
        DiscoveryOptions(exclude=("docs/*",), docs=True),
        DiscoveryOptions(skip_dirs=frozenset({"app"})),
    ],
)
def test_in_scope_is_the_walks_filter(tmp_path: Path, options: DiscoveryOptions) -> None:
    """An open (maybe unsaved) script is offered exactly when discovery would have walked to it:
    skipped folders, virtual environments, globs and extension-less names alike."""
    tree(tmp_path)
    write(tmp_path, "notes/run.foo", "#!/bin/bash\nvllm serve org/g\n")  # not a launch name
    write(tmp_path, "deep/er/Makefile", "serve:\n\tvllm serve org/h\n")
    every = sorted(str(Path(folder, name)) for folder, _, names in os.walk(tmp_path) for name in names)
    walked = set(iter_files([str(tmp_path)], options))
    assert walked and walked != set(every)
    assert {p for p in every if in_scope(p, [str(tmp_path)], options)} == walked


def test_in_scope_needs_a_root_that_holds_the_file(tmp_path: Path) -> None:
    outside, workspace = tmp_path / "outside", tmp_path / "workspace"
    write(outside, "serve.sh", "vllm serve org/outside\n")
    write(workspace, "serve.sh", "vllm serve org/inside\n")
    (workspace / "link.sh").symlink_to(outside / "serve.sh")
    roots = [str(workspace)]
    assert in_scope(str(workspace / "serve.sh"), roots, DiscoveryOptions())
    assert not in_scope(str(outside / "serve.sh"), roots, DiscoveryOptions())
    assert not in_scope(str(workspace / "link.sh"), roots, DiscoveryOptions())  # leads outside
    assert in_scope(str(outside / "serve.sh"), [str(workspace), str(outside)], DiscoveryOptions())


def _expand(glob: str) -> list[str]:
    """A watcher glob's `{a,b}` alternatives as plain fnmatch patterns (one group per pattern)."""
    head, brace, rest = glob.partition("{")
    if not brace:
        return [glob]
    options, _, tail = rest.partition("}")
    return [f"{head}{option}{tail}" for option in options.split(",")]


@pytest.mark.parametrize(
    "name",
    [
        "serve.sh",
        "run.bash",
        "x.zsh",
        "x.ksh",
        "app.py",
        "compose.yaml",
        "k8s.yml",
        "README.md",
        "guide.markdown",
        "notes.txt",
        "index.rst",
        "doc.adoc",
        "rules.mk",
        "vllm.service",
        "supervisor.conf",
        "Dockerfile",
        "Containerfile",
        "Dockerfile.gpu",
        "Containerfile.rocm",
        "serve.dockerfile",
        "serve.containerfile",
        "Makefile",
        "makefile",
        "GNUmakefile",
        "Procfile",
        "Justfile",
        "justfile",
    ],
)
def test_watchers_report_every_format_recognised_by_name(name: str) -> None:
    assert file_kind(name) is not None
    patterns = [p.removeprefix("**/") for g in WATCHED_GLOBS for p in _expand(g)]
    assert any(fnmatch.fnmatchcase(name, p) for p in patterns), name
    assert not any(fnmatch.fnmatchcase("server.log", p) for p in patterns)
