"""The pre-filter's search of a large log file, started before the analysis is even imported.

`check FILE` on a log of hundreds of MB spends its first tenth of a second importing the
analysis and loading the catalog, and only then starts ripgrep over the file (`prefilter`),
which it then waits for. Started first, rg reads the file while Python imports. The literals
are not known before the catalog is loaded, so this uses the literal groups the last such
search used (kept in the data cache, per package version and installation), and the pre-filter
takes the running searches only when their literals are exactly those it would search for, for
the same unchanged file (`take`); otherwise they are stopped and it searches as it always does.
A missing, stale or corrupt cache, a missing rg, several files, standard input or any other
command line only mean nothing starts early: the answer never depends on it.

The file's UTF-8 check (`source.utf8_check_beside`) needs no cache: its rg search (`utf8_command`)
starts here too, whenever the file is large, and is taken by the check (`take_utf8`) or started
when the check begins (`start_utf8`).

rg's output goes to an anonymous in-memory file (`memfd`, Linux), not a pipe, so it runs at
full speed while nobody reads it yet (and what it wrote so far can be read while it runs: the
scan's group is read that way, `prefilter.StreamedRows`), and it is started with `posix_spawn`: neither
`subprocess` nor `threading` is imported for it. Only rg (found where `tools.find_program`
allows) runs, with the cached literals as fixed strings (`-F -e`): nothing read from a cache, a
log or a workspace is ever executed.
"""

from __future__ import annotations

import os
import stat

from .search_forms import FORMS

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: Below this many bytes a subprocess costs more than it saves (the pre-filter's threshold too).
TOOL_THRESHOLD = 4_000_000
#: The data-cache entry holding the literal groups of the last search of a file.
CACHE_ENTRY = "prefilter/literal-groups"
#: `check` options that change nothing the search depends on (each takes a value).
_NEUTRAL_OPTIONS = frozenset({"--format", "--color"})


class _Process:
    """One rg process writing to an in-memory file; `result` waits for it."""

    def __init__(self, command: list[str]) -> None:
        self.output = os.memfd_create("vllm-log-lsp-rg", os.MFD_CLOEXEC)
        try:
            self.pid: int | None = _spawn(command, self.output)
        except OSError:
            os.close(self.output)
            raise

    def result(self) -> bytes | None:
        """What the process wrote, once it ended; None when it failed (or was stopped)."""
        try:
            if self.pid is None:
                return None
            code, self.pid = _exit_code(self.pid), None
            return _read_all(self.output) if code in (0, 1) else None  # (1: no line matched)
        except OSError:
            return None
        finally:
            self.stop()

    def written(self, offset: int) -> bytes:
        """What the process has written from `offset` on, so far (while it runs, whole blocks:
        rg writes its output a buffer at a time)."""
        size = os.fstat(self.output).st_size
        return os.pread(self.output, size - offset, offset) if size > offset else b""

    def ended(self) -> int | None:
        """The process's exit code once it ended (reaped here), else None, without waiting."""
        if self.pid is None:
            return -1
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return None
        self.pid = None
        return os.waitstatus_to_exitcode(status)

    def stop(self) -> None:
        """End the process if it still runs (and reap it); close its output."""
        import contextlib
        import signal

        if self.pid is not None:
            with contextlib.suppress(OSError):  # (ended and reaped already)
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = None
        with contextlib.suppress(OSError):
            os.close(self.output)


class _Search:
    """rg processes started over one file (one per literal group, or the UTF-8 search)."""

    def __init__(self, path: str, identity: tuple[int, ...], groups: list[list[str]]) -> None:
        self.path = path
        self.identity = identity
        self.groups = groups
        self.processes: list[_Process] = []

    def fits(self, path: str) -> bool:
        """Whether the search reads the file at `path`, unchanged since it started."""
        return self.path == path and _identity(path) == self.identity

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


_search: _Search | None = None
_utf8_search: _Search | None = None
_cached_groups: list[list[str]] | None = None
_attempted = False  # (whether this process looked at the cache: only then is it written)


def rg_command(binary: str, literals: Sequence[str], path: str | None) -> list[str]:
    """An rg command printing `LINE:BYTEOFFSET:text` for each line holding any literal (the text
    of a line longer than a byte left out: only the numbers are read), and maybe a few more: rg
    searches for each literal's `search_forms.FORMS` part, which its SIMD search checks far less
    often (the readers of the lines test each for their own literal)."""
    # No config file, no BOM sniffing or transcoding, binary data searched as text; the file read
    # in blocks, not mapped: mapped, each page read stays in rg's memory (the whole file, by its
    # end), read, rg holds a buffer (100 MB: 8 MB peak instead of 105, as fast).
    command = [binary, "--no-config", "--no-heading", "--no-mmap", "--encoding", "none"]
    command += ["-a", "-n", "-b", "-F", "-M", "1"]
    # (The fewest literals first: a literal holding another may not hold the other's form.)
    for literal in fewest_literals([FORMS.get(literal, literal) for literal in fewest_literals(literals)]):
        command += ["-e", literal]
    return [*command, "--", path if path is not None else "-"]


#: The most literals rg 13–14 searches with its SIMD search (Teddy): one more, and a search of
#: 100 MB takes 2.4x as long (0.08 s → 0.195 s here); ahocorasick-rs's leftmost-first search has
#: the same limit (0.058 s → 0.176 s). `tests/core/test_prefilter_literals.py` keeps the scan's
#: literals within it.
RG_FAST_LITERALS = 64


def fewest_literals(literals: Sequence[str]) -> list[str]:
    """`literals` less each one that holds another (`EngineDeadError` holds `Error`): a line
    holding it holds the other, so a search finds the same lines with fewer literals."""
    kept: list[str] = []
    for literal in sorted(set(literals), key=lambda text: (len(text), text)):
        if not any(shorter in literal for shorter in kept):
            kept.append(literal)
    return kept


#: The most lines the UTF-8 search reports: past them the check reads the rest itself.
UTF8_ROWS = 1024


def utf8_command(binary: str, path: str) -> list[str]:
    """An rg command printing `LINE:BYTEOFFSET:` for the first `UTF8_ROWS` lines that hold U+FFFD
    once rg has decoded the file as UTF-8 (`--encoding utf-8`: every sequence that is not valid
    UTF-8 becomes one U+FFFD; offsets are those of the decoded text, so those of the file up to
    its first invalid byte, but for a byte-order mark rg leaves out). Among these lines are all
    those holding invalid bytes, with any holding a U+FFFD of their own (valid UTF-8)."""
    command = [binary, "--no-config", "--no-heading", "--no-mmap", "--encoding", "utf-8"]
    command += ["-a", "-n", "-b", "-F", "-M", "1", "-m", str(UTF8_ROWS), "-e", "\ufffd"]
    return [*command, "--", path]


def start_utf8(path: str) -> Callable[[], bytes | None] | None:
    """Start the UTF-8 search of the file at `path` (`utf8_command`) now, when rg and in-memory
    files are there; a function waiting for its output (None when it failed), or None."""
    binary = _rg() if _may_search() else None
    if binary is None:
        return None
    try:
        return _Process(utf8_command(binary, path)).result
    except OSError:
        return None


def take_utf8(path: str) -> Callable[[], bytes | None] | None:
    """The early UTF-8 search's waiting function, when one runs over the file at `path`,
    unchanged since; None otherwise (a search that does not fit is stopped)."""
    global _utf8_search
    search, _utf8_search = _utf8_search, None
    if search is None:
        return None
    if not search.fits(path):
        search.stop()
        return None
    return search.processes[0].result


def start(argv: Sequence[str]) -> bool:
    """Start the search of the one log file of a plain `check FILE` command line (options only
    `--format`/`--color`), when the file is large enough and the cache holds literal groups;
    True when processes were started."""
    global _search, _cached_groups, _attempted
    path = _the_file(argv)
    if path is None or not _may_search():
        return False
    identity = _identity(path)
    if identity is None or identity[2] < TOOL_THRESHOLD:
        return False
    _attempted = True
    _cached_groups = _read_groups()
    binary = _rg()
    if binary is None:
        return False
    _start_utf8_search(binary, path, identity)
    if not _cached_groups:
        return False
    search = _Search(path, identity, _cached_groups)
    try:
        for literals in _cached_groups:
            search.processes.append(_Process(rg_command(binary, literals, path)))
    except OSError:
        search.stop()
        return False
    _search = search
    return True


def take(
    path: str, groups: list[list[str]], pending: list[Callable[[], object]], running: int | None = None
) -> list[bytes | _Process] | None:
    """The output of the early search for each of `groups` (sorted literals, none empty), when
    one runs over the file at `path`, unchanged since, for exactly these groups: the `pending`
    work runs first (taken off the list), while it finishes. None otherwise (a search that does
    not fit is stopped, and `pending` is left to the caller). Learns the groups for the next run
    when they differ from the cached ones. The search of group `running`, when given, is handed
    over still running (its output read as it is written: the caller stops it)."""
    global _search
    search, _search = _search, None
    if _attempted and groups != _cached_groups:
        _write_groups(groups)
    if search is None:
        return None
    if search.groups != groups or not search.fits(path):
        search.stop()
        return None
    handed = search.processes[running] if running is not None else None
    outputs: list[bytes | _Process | None] | None = None
    try:
        while pending:
            pending.pop()()
        outputs = [process if process is handed else process.result() for process in search.processes]
    finally:
        failed = outputs is None or None in outputs  # (an exception, or a search that failed)
        for process in search.processes:
            if process is not handed or failed:
                process.stop()
    return None if failed else outputs  # type: ignore[return-value]


def discard() -> None:
    """Stop a search nobody took (the analysis went another way: a compressed or JSON log...)."""
    global _search, _utf8_search
    for search in (_search, _utf8_search):
        if search is not None:
            search.stop()
    _search = _utf8_search = None


def _start_utf8_search(binary: str, path: str, identity: tuple[int, ...]) -> None:
    global _utf8_search
    search = _Search(path, identity, [])
    try:
        search.processes.append(_Process(utf8_command(binary, path)))
    except OSError:
        return
    _utf8_search = search


def _may_search() -> bool:
    """Whether searches may run here: tools not turned off, in-memory files (Linux)."""
    return not os.environ.get("VLLM_LOG_LSP_NO_GREP") and hasattr(os, "memfd_create")


def _rg() -> str | None:
    from .tools import find_program  # (where a workspace cannot plant one)

    return find_program("rg")


def _the_file(argv: Sequence[str]) -> str | None:
    if not argv or argv[0] != "check":
        return None
    at = 1
    while at + 1 < len(argv) and argv[at] in _NEUTRAL_OPTIONS:
        at += 2
    rest = argv[at:]
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    return rest[0]


def _identity(path: str) -> tuple[int, ...] | None:
    """What tells the same unchanged regular file: device, inode, size, modification time."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _spawn(command: list[str], output: int) -> int:
    """Start `command` with stdin and stderr on the null device and stdout to `output`."""
    env = {**os.environ, "LC_ALL": "C"}
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, output, 1),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    return os.posix_spawn(command[0], command, env, file_actions=actions)


def _exit_code(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _read_all(output: int) -> bytes:
    size = os.fstat(output).st_size
    pieces = []
    offset = 0
    while offset < size:
        piece = os.pread(output, size - offset, offset)
        if not piece:
            break
        pieces.append(piece)
        offset += len(piece)
    return b"".join(pieces)


def _read_groups() -> list[list[str]] | None:
    """The cached literal groups, when the cache holds a list of lists of strings."""
    from . import datacache

    groups = datacache.plain_value(CACHE_ENTRY)
    if not isinstance(groups, list) or not all(
        isinstance(group, list) and all(isinstance(literal, str) for literal in group) for group in groups
    ):
        return None
    return groups


def _write_groups(groups: list[list[str]]) -> None:
    global _cached_groups
    from . import datacache

    _cached_groups = [list(group) for group in groups]
    datacache.keep_plain_value(CACHE_ENTRY, _cached_groups)
