"""`check --follow FILE`, a live standard input, and `check --merge`: the command line's side
of `core/follow.py` and `core/merge.py` (reading, waiting, printing; the analysis is the core's).

- `--follow FILE` reads FILE from its start and then as it grows (a rotated or truncated file is
  followed from its new start), printing each death as soon as it is complete.
- `check -` on a pipe or a terminal reads standard input as usual when it ends without a pause
  (`zcat x.gz | check -`); when it pauses (`tail -f x | check -`) it is followed as it grows.
- Ctrl-C (SIGINT) or SIGTERM ends a follow with the usual exit status: 1 when a death was
  printed, else 0.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import select
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from .core.analyze import analyze
from .core.catalog import Catalog
from .core.follow import MAX_KEPT_CHARS, Death, Follower, with_only
from .core.merge import MergedNumbering, Part, merge_logs, one_run, read_part, saw_start, writers
from .core.model import Finding
from .core.records import replace
from .core.source import (
    MAX_STREAM_BYTES,
    LogReadError,
    LogSource,
    open_log,
    open_regular,
    prepare_stream_bytes,
    refused_start,
)

#: How often a followed file is looked at, and how long a quiet log takes to count as idle (its
#: deaths then count as complete).
POLL_SECONDS = 0.2
IDLE_SECONDS = 0.5
_CHUNK = 1 << 20
# A stream that keeps coming is analysed at least this often (bytes), not after every read.
_ANALYSE_EVERY = 8 << 20
_COMPRESSED_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")

Emit = Callable[[Death], None]


class _Stop(Exception):
    """SIGINT or SIGTERM: the follow ends, told apart from a real error."""


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT (Ctrl-C, `kill -INT`) and SIGTERM (a service stopped, `timeout`) end a follow,
    also where the shell that started it in the background made it ignore SIGINT."""

    def raise_stop(signum, frame) -> None:
        raise _Stop

    try:
        previous = {sig: signal.signal(sig, raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def follow_file(
    path: str,
    catalog: Catalog,
    emit: Emit,
    poll: float = POLL_SECONDS,
    idle: float = IDLE_SECONDS,
    max_chars: int = MAX_KEPT_CHARS,
) -> bool:
    """Follow `path` until interrupted; True when a death was emitted. Raises `LogReadError`
    when it is not a regular file or is compressed (a rotated `.gz` no longer grows)."""
    handle = _open_followed(path)
    follower = Follower(catalog, max_chars)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    emitted = _Counted(emit)
    quiet_since, idle_done = time.monotonic(), False
    try:
        with _stop_on_signals():
            _announce(path)
            while True:
                chunk = handle.read(_CHUNK)
                if chunk:
                    follower.feed(decoder.decode(chunk))
                    quiet_since, idle_done = time.monotonic(), False
                    if len(chunk) == _CHUNK and follower.kept_chars < follower.max_chars:
                        continue  # catching up: analyse at the end (or to trim what is kept)
                    emitted.all(follower.complete())
                    continue
                if not idle_done and time.monotonic() - quiet_since >= idle:
                    emitted.all(follower.complete(idle=True))
                    idle_done = True
                if _replaced(path, handle):
                    handle.close()
                    handle = _open_followed(path)
                    follower = Follower(catalog, max_chars)
                    decoder = codecs.getincrementaldecoder("utf-8")("replace")
                    print(
                        f"vllm-log-lsp: {path} was replaced or truncated: following it from its start",
                        file=sys.stderr,
                    )
                    continue
                time.sleep(poll)
    except (KeyboardInterrupt, _Stop):
        return emitted.any
    finally:
        handle.close()


def _announce(name: str) -> None:
    print(
        f"vllm-log-lsp: following {name} as it grows; Ctrl-C ends (exit 1 if a death was reported, else 0)",
        file=sys.stderr,
        flush=True,
    )


def _open_followed(path: str) -> BinaryIO:
    handle = open_regular(path)
    if handle.read(8).startswith(_COMPRESSED_MAGIC):
        handle.close()
        raise LogReadError(f"cannot follow {path}: it is compressed (a rotated log no longer grows)")
    handle.seek(0)
    return handle


def _replaced(path: str, handle: BinaryIO) -> bool:
    """Whether `path` is now another file (rotated) or shorter than what was read (truncated)."""
    try:
        now = os.stat(path)
    except OSError:
        return False  # gone for now (being rotated): keep the old one
    mine = os.fstat(handle.fileno())
    return (now.st_ino, now.st_dev) != (mine.st_ino, mine.st_dev) or now.st_size < handle.tell()


class _Counted:
    """`emit`, remembering whether a death was handed to it (before it prints, so a signal that
    interrupts the printing cannot lose it from the exit status)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.any = False

    def all(self, deaths: list[Death]) -> None:
        for death in deaths:
            self.any = True
            self.emit(death)


# -- standard input --------------------------------------------------------------------------------
def stdin_is_live() -> bool:
    """Whether standard input is a pipe, socket or terminal (a regular file is read whole)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def read_stdin_until_pause(idle: float = IDLE_SECONDS, limit: int = MAX_STREAM_BYTES) -> tuple[bytes, bool]:
    """Standard input until it ends (True) or, after its first bytes, pauses for `idle` seconds
    (False: a live stream)."""
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        # A pause counts once something came: a producer slow to start (ssh) is not a live log.
        ready, _, _ = select.select([fd], [], [], idle if chunks else None)
        if not ready:
            return b"".join(chunks), False
        data = os.read(fd, _CHUNK)
        if not data:
            return b"".join(chunks), True
        chunks.append(data)
        size += len(data)
        if len(chunks) == 1 and refused_start(data):
            return data, True  # `/dev/urandom`: the usual check refuses it at its first block
    return b"".join(chunks), False


def whole_stdin(data: bytes) -> LogSource:
    """What was read of a standard input that ended, ready for the usual check."""
    return prepare_stream_bytes(data, "<stdin>")


def follow_stdin(
    head: bytes, catalog: Catalog, emit: Emit, ended: bool = False, idle: float = IDLE_SECONDS
) -> bool:
    """Follow standard input after its first `head` bytes (all of it when `ended`) until it
    ends or is interrupted; True when a death was emitted."""
    fd = sys.stdin.fileno()
    follower = Follower(catalog)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    follower.feed(decoder.decode(head, final=ended))
    emitted = _Counted(emit)
    idle_done, pending = False, 0
    try:
        with _stop_on_signals():
            emitted.all(follower.complete(idle=ended))
            if ended:
                return emitted.any
            _announce("<stdin>")
            while True:
                ready, _, _ = select.select([fd], [], [], idle)
                if not ready:
                    if not idle_done:
                        emitted.all(follower.complete(idle=True))
                        idle_done = True
                    continue
                data = os.read(fd, _CHUNK)
                if not data:
                    follower.feed(decoder.decode(b"", final=True))
                    emitted.all(follower.complete(idle=True))
                    return emitted.any
                follower.feed(decoder.decode(data))
                idle_done = False
                pending += len(data)
                if pending < _ANALYSE_EVERY and select.select([fd], [], [], 0)[0]:
                    continue  # more is waiting: analyse when the reader has caught up
                pending = 0
                emitted.all(follower.complete())
    except (KeyboardInterrupt, _Stop):
        return emitted.any


# -- several files of one run --------------------------------------------------------------------
#: Automatic merging looks at a few files given by name, never at a large batch.
AUTO_MERGE_MAX_FILES = 16


def read_parts(paths: list[str]) -> list[Part]:
    """The files of a run, read as `check` reads them (`LogReadError` when one cannot be)."""
    parts = []
    for path in paths:
        source = open_log(path)
        data = source.data
        text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
        parts.append(read_part(path, text))
    return parts


def _writers_apart(paths: list[str]) -> bool:
    """A cheap first look, before files are read whole for automatic merging: each is a plain
    regular file whose first lines have process prefixes no other file's first lines have."""
    seen: set[tuple[str, str]] = set()
    for path in paths:
        try:
            with open_regular(path) as handle:
                head = handle.read(_CHUNK)
        except LogReadError:
            return False
        if head.startswith(_COMPRESSED_MAGIC):
            return False
        own = writers(read_part(path, head.decode("utf-8", "replace")))
        if not own or own & seen:
            return False
        seen |= own
    return True


def merge_wanted(paths: list[str], asked: bool | None, catalog: Catalog) -> list[Part] | None:
    """The parts to check as one run: all of them when `--merge` was given (`asked` True), or
    when they are evidently one run split per process and `--no-merge` was not given; else None
    (each file is checked alone, as usual)."""
    if asked is False or len(paths) < 2 or "-" in paths:
        return None
    if asked is None and (len(paths) > AUTO_MERGE_MAX_FILES or not _writers_apart(paths)):
        return None
    try:
        parts = read_parts(paths)
    except LogReadError:
        if asked:
            raise
        return None  # the usual check says what is wrong with it
    if asked or one_run(parts, [saw_start(p, catalog) for p in parts]):
        return parts
    return None


def follow(path: str, catalog: Catalog, emit: Emit, asked: bool) -> int | None:
    """`check --follow PATH`, or `check -` on a live standard input: the exit status; None when
    standard input ended before it paused (or is compressed): the usual check reads it."""
    from .cli import EXIT_DEATH, EXIT_HEALTHY  # the one place that defines them

    if path != "-":
        return EXIT_DEATH if follow_file(path, catalog, emit) else EXIT_HEALTHY
    head, ended = read_stdin_until_pause()
    if ended and not asked:
        _replace_stdin(head)  # it ended without a pause: the usual check reads it
        return None
    if head[:8].startswith(_COMPRESSED_MAGIC) or head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        if not ended:
            head += sys.stdin.buffer.read()
        _replace_stdin(head)
        return None
    return EXIT_DEATH if follow_stdin(head, catalog, emit, ended=ended) else EXIT_HEALTHY


def _replace_stdin(data: bytes) -> None:
    """Standard input as the bytes already read of it, for the usual check to read again."""
    import io

    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")


# -- reports (rendered as `check` renders one file) -----------------------------------------------
def death_printer(args: argparse.Namespace) -> Emit:
    """Prints one death of a followed log as the report prints it (JSON: one object per line)."""
    from .cli import JSON_SCHEMA_VERSION, Reports, finding_to_json, shown_name, use_colour
    from .report.text import Style, render_text

    out, style, name = (
        Reports(sys.stdout),
        Style(use_colour(args.color, sys.stdout)),
        shown_name(args.files[0]),
    )

    def emit(death: Death) -> None:
        if args.format == "json":
            entry = {
                "version": JSON_SCHEMA_VERSION,
                "path": name,
                "incident": finding_to_json(death.finding, death.numbering),
            }
            out.write(json.dumps(entry) + "\n")
        else:
            out.write(
                render_text(name, with_only(death.analysis, [death.finding]), style, death.numbering) + "\n\n"
            )

    return emit


def merged_report(args: argparse.Namespace, parts: list[Part], catalog: Catalog) -> int:
    """Files of one run checked as one timeline, each line named by its own file and line."""
    from .cli import (
        EXIT_DEATH,
        EXIT_HEALTHY,
        Reports,
        finding_to_json,
        use_colour,
    )
    from .report.health_text import health_to_json
    from .report.json_report import file_summary, precursor_to_json, report_json
    from .report.text import Style, render_text

    merged = merge_logs(parts)
    analysis = analyze(merged.text, catalog)
    lines = MergedNumbering(merged)
    names = [p.name for p in parts]
    print(
        f"vllm-log-lsp: {', '.join(names)}: checked as one run (merged by time; --no-merge checks each alone)",
        file=sys.stderr,
    )
    out = Reports(sys.stdout)
    if args.format == "json":
        incidents = [_with_paths(finding_to_json(f, lines), f, lines) for f in analysis.findings]
        entry = {
            "path": " + ".join(names),
            "paths": names,
            "error": None,
            "warnings": list(analysis.warnings),
            "incidents": incidents,
            "precursors": [precursor_to_json(p, lines) for p in analysis.precursors],
            "health": health_to_json(analysis.health, lines.line),
        }
        entry["summary"] = file_summary(entry)  # the one merged run, as `check` sums up a file
        out.write(json.dumps(report_json([entry]), indent=2) + "\n")
    else:

        def where(line: int) -> str:
            return f"{lines.path_of(line)}:{lines.line(line) + 1}"

        report = with_only(analysis, list(analysis.findings))
        out.write(
            render_text(
                " + ".join(names),
                replace(report, health=None),
                Style(use_colour(args.color, sys.stdout)),
                lines,
                where,
            )
            + "\n"
        )
    return EXIT_DEATH if analysis.findings else EXIT_HEALTHY


def _with_paths(entry: dict, finding: Finding, lines: MergedNumbering) -> dict:
    """A merged incident's JSON with the file of its root cause and of each symptom."""
    entry["root_cause"]["path"] = lines.path_of(finding.root.line)
    for symptom, item in zip(finding.symptoms, entry["symptoms"], strict=True):
        item["path"] = lines.path_of(symptom.line)
    return entry
