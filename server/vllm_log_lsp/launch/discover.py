"""Walking workspace folders for files that start vLLM, within bounds."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence

from ..core.paths import resolves_inside
from ..core.source import LogReadError, read_regular_text
from .apply import invocations_in_text
from .formats import file_kind
from .model import Discovery, DiscoveryOptions, Invocation, SkippedFile
from .sites import Malformed

_SNIFF_BYTES = 8192


def discover(roots: Sequence[str], options: DiscoveryOptions | None = None) -> Discovery:
    """Every vLLM invocation under `roots` (files in sorted order, invocations in file order).

    Skips VCS folders, virtual environments, `node_modules`, caches, files larger than
    `options.max_file_bytes`, binary files and files that do not mention vLLM, anything but
    regular files (FIFOs, devices), and symlinks that lead out of their root (a quick fix would
    edit the file outside through the link). Files that look like launch files but do not
    parse are reported in `skipped`.
    """
    options = options or DiscoveryOptions()
    invocations: list[Invocation] = []
    skipped: list[SkippedFile] = []
    scanned = 0
    truncated = False
    for path in iter_files(roots, options):
        if scanned >= options.max_files:
            truncated = True
            break
        scanned += 1
        text = read_text(path, options.max_file_bytes)
        if text is None or "vllm" not in text.lower() or file_kind(path, text) is None:
            continue
        try:
            invocations.extend(invocations_in_text(path, text, docs=options.docs))
        except Malformed as exc:
            skipped.append(SkippedFile(path, str(exc)))
    return Discovery(tuple(invocations), tuple(skipped), scanned, truncated)


def iter_files(roots: Sequence[str], options: DiscoveryOptions) -> Iterator[str]:
    """Candidate files under `roots`, pruned by folder names and the include/exclude globs."""
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for folder, dirs, files in os.walk(root):  # symlinked folders are not entered
            rel_folder = os.path.relpath(folder, root)
            dirs[:] = sorted(
                d for d in dirs if _folder_allowed(os.path.join(folder, d), _join(rel_folder, d), options)
            )
            for name in sorted(files):
                if not _file_allowed(_join(rel_folder, name), options):
                    continue
                path = os.path.join(folder, name)
                if os.path.islink(path) and not resolves_inside(path, [root]):
                    continue
                yield path


def in_scope(path: str, roots: Sequence[str], options: DiscoveryOptions) -> bool:
    """Whether discovery would look at `path` (a file open in the editor, perhaps not saved).

    The same filter as the walk: under a root (also once symlinks are resolved: an edit through
    a link must not land outside the workspace), no skipped or excluded folder on the way (a
    virtual environment included), and the file's own name allowed by the globs.
    """
    if not resolves_inside(path, roots):
        return False
    for root in roots:
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if rel == ".." or rel.startswith("../"):
            continue
        parts = rel.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        if all(_folder_allowed(os.path.join(root, f), f, options) for f in folders):
            return _file_allowed(rel, options)
        return False
    return False


def may_be_launch_file(name: str) -> bool:
    """Whether a file called `name` can be a launch file: a format recognised by its name, or
    no extension at all (a script known by its shebang). A growing `server.log` is not."""
    return file_kind(name) is not None or "." not in name


def _folder_allowed(path: str, rel: str, options: DiscoveryOptions) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return (
        name not in options.skip_dirs
        and not os.path.exists(os.path.join(path, "pyvenv.cfg"))  # any virtual environment
        and not _excluded(rel, options)
    )


def _file_allowed(rel: str, options: DiscoveryOptions) -> bool:
    if _excluded(rel, options):
        return False
    if options.include:
        return any(_match(rel, g) for g in options.include)
    return may_be_launch_file(rel.rsplit("/", 1)[-1])


def read_text(path: str, max_bytes: int) -> str | None:
    """The file's text, or None when it is too big, binary, unreadable, not UTF-8 or not a
    regular file (checked on the open file: a FIFO never blocks, a link to `/dev/zero` is refused)."""
    try:
        text = read_regular_text(path, max_bytes)
    except (OSError, LogReadError):
        return None
    return None if "\0" in text[:_SNIFF_BYTES] else text


def _join(folder: str, name: str) -> str:
    return name if folder in (".", "") else f"{folder}/{name}".replace(os.sep, "/")


def _excluded(rel: str, options: DiscoveryOptions) -> bool:
    return any(_match(rel, g) for g in options.exclude)


def _match(rel: str, glob: str) -> bool:
    """fnmatch on the relative path, or on the name alone for globs without a slash."""
    if "/" not in glob:
        return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], glob) or fnmatch.fnmatch(rel, glob)
    return fnmatch.fnmatch(rel, glob)
