"""The distribution says what it is: the licence text at the root and in the wheel, metadata."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_root_holds_the_apache_licence_text() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text.split("\n", 3)[1]
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_wheel_carries_the_licence_and_its_metadata(tmp_path: Path) -> None:
    # A copy of what the build reads: setuptools writes build/ and *.egg-info next to the sources.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "server", source / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    # Offline: the build backend comes from the test environment, nothing is downloaded.
    offline = ["--no-deps", "--no-index", "--no-build-isolation", "--disable-pip-version-check"]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", *offline, "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("vllm_log_lsp-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [licence] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(licence) == (ROOT / "LICENSE").read_bytes()
        [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode("utf-8"))
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License-File"] == "LICENSE"
    classifiers = metadata.get_all("Classifier")
    assert "Environment :: Console" in classifiers
    assert "Programming Language :: Python :: 3.10" in classifiers
