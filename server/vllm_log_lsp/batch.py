"""Many logs at once: FILE arguments expanded (directories, globs), each file checked, in parallel
for large batches, the outcomes yielded in argument order whatever finishes first.

A file's outcome is its JSON entry (`report.json_report`), from which every output format is
rendered, plus its text report when text was asked for: small, picklable, the same whether it was
made here or in a worker process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from .core import regexes
from .core.analyze import Analyzer
from .core.catalog import Catalog, builtin_catalog, catalog_with_user_files
from .core.model import Analysis
from .core.records import dataclass, field
from .core.source import LogReadError, LogSource, open_log
from .report.json_report import INTERNAL_ERROR, NO_BARE_CR, error_json, file_json, shown_name

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .core.linebreaks import Numbering

#: What names a log in a directory (after a compression suffix and a rotation number are taken
#: off): other files (labels, configs, core dumps, screenshots) are no logs, and a binary one would
#: be an input error. Name a file explicitly, or by a glob, to check it whatever its name.
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
_ROTATION = regexes.compile(r"[.-]\d+$")  # serve.log.1, serve.log-20250101
#: A batch is checked in parallel when it holds this much data or this many files. Starting a
#: worker (importing the package, loading the catalog) costs about 0.3 s of CPU, a small log about
#: 30 ms (the 60 corpus logs take 1.8 s in one process): below this, workers cost what they save.
PARALLEL_MIN_BYTES = 64 << 20
PARALLEL_MIN_FILES = 32


@dataclass(frozen=True)
class CheckOptions:
    """What each file's check needs to know; picklable, sent to the workers."""

    text: bool = False  # also render the text report
    colour: bool = False
    rule_files: tuple[str, ...] = ()
    debug: bool = False  # an internal error's traceback on stderr


@dataclass
class FileOutcome:
    """One file checked: its JSON entry, its text report (when asked), lines for stderr."""

    entry: dict
    text: str | None = None
    errors: list[str] = field(default_factory=list)
    size: int = 0


@dataclass(frozen=True)
class Inputs:
    """The files to check, in order, and the arguments that named none (with why)."""

    paths: list[str]
    problems: list[tuple[str, str]]


def is_log_name(name: str) -> bool:
    """Whether a file found in a directory is a log by its name (`serve.log`, `rank0.log.2.gz`)."""
    base = name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    base = _ROTATION.sub("", base)
    return base.endswith(LOG_SUFFIXES)


def expand_inputs(arguments: list[str]) -> Inputs:
    """FILE arguments as files: a directory's logs (recursively, sorted, hidden ones skipped), a
    glob's matches (sorted; `**` recurses) when no file has that name, anything else as it is
    (reading it says what is wrong). Each file once, at its first mention."""
    paths: list[str] = []
    problems: list[tuple[str, str]] = []
    for argument in arguments:
        if argument != "-" and os.path.isdir(argument):
            found = _logs_under(argument)
            if not found:
                problems.append(
                    (argument, f"no log files in {argument} (names ending in {', '.join(LOG_SUFFIXES)})")
                )
            paths += found
        elif argument != "-" and _is_glob(argument) and not os.path.lexists(argument):
            import glob  # only for a glob argument: keeps `check FILE`'s start-up light

            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                problems.append((argument, f"no file matches {argument}"))
            for match in matches:
                paths += _logs_under(match) if os.path.isdir(match) else [match]
        else:
            paths.append(argument)
    unique: dict[str, str] = {}
    for path in paths:
        unique.setdefault(os.path.normpath(path), path)  # the first mention of each file
    return Inputs(list(unique.values()), problems)


def _is_glob(argument: str) -> bool:
    return any(ch in argument for ch in "*?[")


def _logs_under(folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):  # symlinked folders are not followed: no loops
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.join(root, f) for f in sorted(files) if not f.startswith(".") and is_log_name(f)]
    return found


def input_size(path: str) -> int:
    """Bytes on disk of a FILE argument (0 for standard input or what cannot be read)."""
    try:
        return 0 if path == "-" else os.stat(path).st_size
    except OSError:
        return 0


def parallel_jobs(paths: list[str], requested: int | None) -> int:
    """How many processes check `paths`: `requested` (1: this one), else all cores for a large
    batch. Standard input is read here, so a batch that holds it is checked here."""
    if len(paths) < 2 or "-" in paths:
        return 1
    if requested is not None:
        return max(1, min(requested, len(paths)))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    large = len(paths) >= PARALLEL_MIN_FILES or sum(map(input_size, paths)) >= PARALLEL_MIN_BYTES
    return min(cores, len(paths)) if large and cores > 1 else 1


#: Called with each analysed file in this process (`check --report` writes its HTML page).
AnalysisHook = Callable[[str, LogSource, Analysis], None]


class HookError(Exception):
    """What an `AnalysisHook` raises to stop the check (the message says why, for the user)."""


def check_file(
    path: str, catalog: Catalog, options: CheckOptions, hook: AnalysisHook | None = None
) -> FileOutcome:
    """Check one FILE argument (`-`: standard input); never raises for a bad input or a bug in the
    analysis: the outcome says so (an internal error is its own status)."""
    name = shown_name(path)
    size = input_size(path)
    try:
        source = open_log(path)
    except LogReadError as err:
        return FileOutcome(error_json(name, str(err)), errors=[f"vllm-log-lsp: error: {err}"], size=size)
    try:
        analyzer = Analyzer(catalog)
        analysis = analyzer.analyze(source.data, tuple(source.warnings), source.plain_path)
        if hook is not None:
            hook(path, source, analysis)
        has_lines = (
            analysis.findings
            or analysis.ended_in_startup is not None
            or (analysis.health is not None and analysis.health.series)
        )
        # The lines the analysis read (a JSON-format log's are its transcript's).
        lines_read = analyzer.index
        assert lines_read is not None  # (it has analysed the file)
        # (The index's numbering knows whether the text holds a `\r`: no search of a mapped
        # file's every page again, which would hold them all.)
        numbering = analysis.source_map or (lines_read.newline_lines() if has_lines else NO_BARE_CR)
        # The times of the roots and symptoms are read for the formats that print them, not for
        # the text report (its entry gives the summary and the exit status): a restart loop's
        # hundreds of symptoms would each look above for one.
        entry = file_json(name, analysis, numbering, None if options.text else lines_read)
        text = _rendered(name, analysis, options.colour, numbering) if options.text else None
    except HookError:
        raise
    except Exception as err:  # a bug: this file's outcome says so, the others are still checked
        import traceback

        message = f"internal error: {type(err).__name__}: {err}"
        errors = [traceback.format_exc().rstrip("\n")] if options.debug else []
        errors.append(f"vllm-log-lsp: {message} (checking {name}; exit 3; --debug shows the traceback)")
        return FileOutcome(error_json(name, message, INTERNAL_ERROR), errors=errors, size=size)
    return FileOutcome(entry, text, size=size)


def _rendered(name: str, analysis: Analysis, colour: bool, numbering: Numbering) -> str:
    """The text report of one file (its module imported for the text format only)."""
    from .report.text import Style, render_text

    return render_text(name, analysis, Style(colour), numbering)


def check_files(
    paths: list[str], catalog: Catalog, options: CheckOptions, jobs: int = 1, hook: AnalysisHook | None = None
) -> Iterator[FileOutcome]:
    """The outcome of each path, in order; `jobs` > 1 checks them in that many processes (a
    `hook` runs here, so with one the check stays here)."""
    if jobs <= 1 or hook is not None:
        for path in paths:
            yield check_file(path, catalog, options, hook)
        return
    # Imported here: a process pool costs a one-file check's start-up a large share.
    from concurrent.futures import ProcessPoolExecutor
    from itertools import repeat
    from multiprocessing import get_context

    # spawn, not fork: the same on every platform, and no lock held by another thread is copied.
    context = get_context("spawn")
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(options.rule_files,)
    ) as pool:
        yield from pool.map(_check_in_worker, paths, repeat(options), chunksize=1)


_WORKER_CATALOG: Catalog | None = None


def _start_worker(rule_files: tuple[str, ...]) -> None:
    global _WORKER_CATALOG
    _WORKER_CATALOG = catalog_with_user_files(list(rule_files)) if rule_files else builtin_catalog()


def _check_in_worker(path: str, options: CheckOptions) -> FileOutcome:
    assert _WORKER_CATALOG is not None, "the worker's initializer loads the catalog"
    return check_file(path, _WORKER_CATALOG, options)
