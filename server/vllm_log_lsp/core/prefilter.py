"""The literal pre-filter: which lines of a (possibly huge) log contain any marker literal.

Python's `str.find` scans about 1 GB/s per literal, and the catalog has some fifty literals, so a
100 MB log would take seconds. A multi-literal search tool matches all of them in one pass:
ripgrep (`rg`, SIMD literal search) when installed, else `grep -F` (about four times slower than
rg with this many literals, still far faster than Python). Small inputs, systems with neither
tool, and logs with bare `\\r` line breaks (which the tools do not count as lines) use the
pure-Python scan. All paths return the same lines (tested). A file on disk is read by the tool
itself; an editor's text is piped to it.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable, Iterator

from .text import LogIndex
from .tools import find_program

# Below this many characters a subprocess costs more than it saves.
TOOL_THRESHOLD = 4_000_000
_TOOL_TIMEOUT = 120
#: Search tools in order of preference; `VLLM_LOG_LSP_NO_GREP=1` disables them all.
TOOLS = ("rg", "grep")

Tool = tuple[str, str]  # (kind, executable path)


def search_tool(kinds: Iterable[str] = TOOLS) -> Tool | None:
    """The fastest literal-search tool on PATH (trusted entries only, see `tools`), or None."""
    if os.environ.get("VLLM_LOG_LSP_NO_GREP"):
        return None
    for kind in kinds:
        path = find_program(kind)
        if path:
            return kind, path
    return None


def candidate_lines(
    index: LogIndex, literals: Iterable[str], begin: int = 0, tool: Tool | None = None
) -> list[tuple[int, int | None]]:
    """Sorted (line start offset, line number or None) of lines at or after `begin` holding a literal.

    `tool` forces a search tool (tests); by default the best one is used for large inputs.
    """
    literals = sorted(set(literals))
    if tool is None and len(index) - begin >= TOOL_THRESHOLD and not index.has_cr:
        tool = search_tool()
    if tool is not None and not index.has_cr:
        found = _tool_scan(tool, index, literals, begin)
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


def _command(tool: Tool, literals: list[str], path: str | None) -> list[str]:
    """A command printing `LINE:BYTEOFFSET:text` for each line holding any literal."""
    kind, binary = tool
    if kind == "rg":
        # No config file, no BOM sniffing or transcoding, binary data searched as text.
        command = [binary, "--no-config", "--no-heading", "--encoding", "none", "-a", "-n", "-b", "-F"]
    else:
        command = [binary, "-a", "-n", "-b", "-F"]
    for literal in literals:
        command += ["-e", literal]
    return [*command, "--", path if path is not None else "-"]


def _run_tool(
    tool: Tool, literals: list[str], path: str | None, data: bytes | Iterable[bytes] | None
) -> bytes | None:
    """The tool's output rows for `path` (or `data` piped in); None if the tool failed."""
    try:
        with subprocess.Popen(
            _command(tool, literals, path),
            stdin=subprocess.PIPE if path is None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "LC_ALL": "C"},
        ) as proc:
            if path is None:
                # One big write from a thread: communicate() would write 4 KiB at a time.
                threading.Thread(target=_feed, args=(proc, data), daemon=True).start()
            output = proc.stdout.read() if proc.stdout else b""
            code = proc.wait(timeout=_TOOL_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return output if code in (0, 1) else None  # 1: no line matched


def _feed(proc: subprocess.Popen, data: bytes | Iterable[bytes] | None) -> None:
    try:
        if proc.stdin is not None:
            for piece in [data] if isinstance(data, bytes) else data or ():
                proc.stdin.write(piece)
            proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


#: Characters encoded at a time when an editor's text is piped to a tool.
_PIPE_CHUNK = 1 << 22


def _utf8_pieces(text: str, begin: int) -> Iterator[bytes]:
    """text[begin:] as UTF-8, a piece at a time (never the whole text encoded at once)."""
    for start in range(begin, len(text), _PIPE_CHUNK):
        yield text[start : start + _PIPE_CHUNK].encode("utf-8", "surrogatepass")


def _tool_scan(
    tool: Tool, index: LogIndex, literals: list[str], begin: int
) -> list[tuple[int, int | None]] | None:
    text = index.text
    if not index.is_bytes and index.has_line_table:
        # An editor's text with its line table: the tool's line numbers give the offsets, so
        # the text is piped a piece at a time and no byte offset needs converting.
        output = _run_tool(tool, literals, None, _utf8_pieces(text, begin))
        return None if output is None else _rows_by_line(index, output, begin)
    if index.is_bytes:
        direct = index.path is not None and begin == 0
        segment = None if direct else bytes(text[begin:])
        output = _run_tool(tool, literals, index.path if direct else None, segment)
    else:
        segment = text[begin:].encode("utf-8", "surrogatepass")
        output = _run_tool(tool, literals, None, segment)
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


def _rows_by_line(index: LogIndex, output: bytes, begin: int) -> list[tuple[int, int | None]] | None:
    """(line start, line number) of each `LINE:...` row, the numbers counted from `begin`'s line."""
    first_line = index.line_of(begin)
    found: list[tuple[int, int | None]] = []
    for row in output.split(b"\n"):
        if not row:
            continue
        number, _, _ = row.partition(b":")
        try:
            line = first_line + int(number) - 1
        except ValueError:
            return None
        found.append((index.line_start(line), line))
    return found
