"""The literal pre-filter: which lines of a (possibly huge) log contain any marker literal.

Python's `str.find` scans about 1 GB/s per literal, and the catalog has some fifty literals, so a
100 MB log would take seconds. `grep -F` matches all of them in one pass (Aho-Corasick /
Commentz-Walter) at memory speed, so large inputs go through the system `grep` when there is one;
small inputs, systems without grep, and logs with bare `\\r` line breaks (which grep does not
count as lines) use the pure-Python scan. Both return the same lines (tested). A file on disk is
read by grep itself; an editor's text is piped to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterable

from .text import LogIndex

# Below this many characters a subprocess costs more than it saves.
GREP_THRESHOLD = 4_000_000
_GREP_TIMEOUT = 120


def _grep_binary() -> str | None:
    if os.environ.get("VLLM_LOG_LSP_NO_GREP"):
        return None
    return shutil.which("grep")


def candidate_lines(index: LogIndex, literals: Iterable[str], begin: int = 0) -> list[tuple[int, int | None]]:
    """Sorted (line start offset, line number or None) of lines at or after `begin` holding a literal."""
    literals = sorted(set(literals))
    if len(index) - begin >= GREP_THRESHOLD and not index.has_cr and (grep := _grep_binary()):
        found = _grep_scan(grep, index, literals, begin)
        if found is not None:
            return found
    return _python_scan(index, literals, begin)


def _python_scan(index: LogIndex, literals: list[str], begin: int) -> list[tuple[int, int | None]]:
    starts: set[int] = set()
    for literal in literals:
        pos = index.find(literal, begin)
        while pos >= 0:
            starts.add(index.line_start_at(pos))
            pos = index.find(literal, index.line_end_at(pos))
    return [(start, None) for start in sorted(starts)]


def _run_grep(grep: str, literals: list[str], path: str | None, data: bytes | None) -> bytes | None:
    """grep's `LINE:BYTEOFFSET:text` rows for lines holding any literal; None if grep failed."""
    command = [grep, "-a", "-n", "-b", "-F"]
    for literal in literals:
        command += ["-e", literal]
    if path is not None:
        command += ["--", path]
    env = {**os.environ, "LC_ALL": "C"}
    try:
        with subprocess.Popen(
            command,
            stdin=subprocess.PIPE if path is None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        ) as proc:
            if path is None:
                # One big write from a thread: communicate() would write 4 KiB at a time.
                writer = threading.Thread(target=_feed, args=(proc, data), daemon=True)
                writer.start()
            output = proc.stdout.read() if proc.stdout else b""
            code = proc.wait(timeout=_GREP_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return output if code in (0, 1) else None  # 1: no line matched


def _feed(proc: subprocess.Popen, data: bytes | None) -> None:
    try:
        if proc.stdin is not None:
            proc.stdin.write(data or b"")
            proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _grep_scan(
    grep: str, index: LogIndex, literals: list[str], begin: int
) -> list[tuple[int, int | None]] | None:
    text = index.text
    if index.is_bytes:
        direct = index.path is not None and begin == 0
        segment = None if direct else bytes(text[begin:])
        output = _run_grep(grep, literals, index.path if direct else None, segment)
    else:
        segment = text[begin:].encode("utf-8", "surrogatepass")
        output = _run_grep(grep, literals, None, segment)
    if output is None:
        return None
    first_line = index.line_of(begin) if begin else 0
    # In a str index, byte offsets become code-point offsets (free when the text is ASCII).
    convert = not index.is_bytes and not text.isascii()
    found: list[tuple[int, int | None]] = []
    byte_pos, pos = 0, begin
    for row in output.split(b"\n"):
        if not row:
            continue
        number, _, rest = row.partition(b":")
        offset, _, _ = rest.partition(b":")
        try:
            line_no, byte_offset = int(number) - 1, int(offset)
        except ValueError:
            return None
        if convert:
            pos += len(segment[byte_pos:byte_offset].decode("utf-8", "replace"))
        else:
            pos = begin + byte_offset
        byte_pos = byte_offset
        found.append((pos, first_line + line_no))
    return found
