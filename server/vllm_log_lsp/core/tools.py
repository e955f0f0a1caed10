"""Finding the external programs the server runs (`rg`, `grep`, `bash`) where a workspace cannot plant one.

`shutil.which` searches every `PATH` entry as given: an empty or relative entry (`PATH=:/usr/bin`, `.`)
means the current directory, which for a language server is often the workspace, and on Windows the
current directory is searched first whatever `PATH` says. A workspace holding `bash` or `rg` would then
be run. Here only absolute `PATH` entries count, never the current directory itself, and none at or
below a folder marked untrusted (the language server marks its workspace folders). No tool found means
the caller does without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

from .paths import resolves_inside

_untrusted: set[str] = set()


def distrust(folders: Iterable[str]) -> None:
    """Never run programs from these folders or below them (the workspace folders)."""
    for folder in folders:
        if folder:
            _untrusted.add(os.path.realpath(folder))


def trusted_path_dirs(path_value: str | None = None) -> Iterator[str]:
    """The `PATH` entries programs may be run from: absolute, not the cwd, outside the untrusted folders."""
    value = os.environ.get("PATH", os.defpath) if path_value is None else path_value
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed
        cwd = None
    for entry in value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real != cwd and not resolves_inside(real, tuple(_untrusted)):
            yield entry


def _names(program: str) -> list[str]:
    if sys.platform != "win32":
        return [program]
    extensions = os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").split(os.pathsep)
    return [program + ext for ext in extensions if ext] + [program]


def find_program(program: str, path_value: str | None = None) -> str | None:
    """The absolute path of `program` in a trusted `PATH` entry, or None."""
    for folder in trusted_path_dirs(path_value):
        for name in _names(program):
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None
