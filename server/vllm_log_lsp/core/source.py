"""Opening a log safely: regular files or standard input, compressed or UTF-16, reads bounded.

Everything that reads a log from disk goes through `open_log` (the CLI's `check`, the server's
`vllmLog.analyzeFile`). It never blocks on a FIFO, never reads a device or a directory, never
decompresses without bound, and says why when it cannot give a log: a tool that cannot read its
input must not answer "healthy".

The result is the UTF-8 bytes the analysis reads (`core.text.LogIndex` takes them as they are):
a large plain file is mapped, not read; gzip, bzip2, xz and zstd (with a zstd library) are
decompressed (rotated logs are normal); UTF-16/UTF-32 with a byte-order mark (PowerShell's `>`),
and UTF-16 without one (`_utf16_without_bom`), are re-encoded as UTF-8.
"""

from __future__ import annotations

import codecs
import io
import mmap
import os
import stat
import sys
import zlib
from collections.abc import Callable

from . import early
from .records import dataclass, field
from .text import Buffer

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Protocol
else:  # `Readable` is a plain base class at run time: nothing checks it
    Protocol = object

#: A plain file at least this big is mapped into memory instead of read: the analysis touches
#: only the lines around what the pre-filter finds, so most of a large log is never paged in.
MMAP_THRESHOLD = 1 << 20
#: The most a stream (standard input, a decompressed file) may yield: a bound on memory for
#: input whose size is not known before it is read (`/dev/zero` on stdin, a gzip bomb).
MAX_STREAM_BYTES = 4 << 30
#: How much of the start of a file decides whether it is text.
SNIFF_BYTES = 65536

_COMPRESSED: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
# Longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# C0 controls a text log never holds (tab, newlines, form feed, backspace and ESC it may).
_BINARY_BYTES = bytes([*range(0x01, 0x08), 0x0E, 0x0F, *range(0x10, 0x1B), *range(0x1C, 0x20), 0x7F])


class Readable(Protocol):
    """A binary stream to read from: a file, standard input, a decompressor."""

    def read(self, size: int = -1, /) -> bytes | None: ...


#: A decompressor: a readable stream (and context manager) over compressed bytes.
if TYPE_CHECKING:
    Opener = Callable[[io.BytesIO], io.BufferedIOBase | BinaryIO]
else:  # a name for annotations only
    Opener = Callable


class LogReadError(Exception):
    """The input cannot be read as a log; the message says why (for the user, one line)."""


@dataclass
class LogSource:
    """A log ready for analysis: its UTF-8 bytes and what was odd about the input."""

    data: Buffer
    warnings: list[str] = field(default_factory=list)
    #: The file holding exactly `data`, when there is one (the pre-filter may grep it directly).
    plain_path: str | None = None


def open_log(path: str, max_stream_bytes: int = MAX_STREAM_BYTES) -> LogSource:
    """Read the log at `path` (`-`: standard input) for analysis, or raise `LogReadError`."""
    if path == "-":
        return _prepare(_read_stream(sys.stdin.buffer, max_stream_bytes, "<stdin>"), "<stdin>")
    with open_regular(path) as handle:
        data = _read_regular(handle, path, max_stream_bytes)
    if isinstance(data, mmap.mmap) or not _needs_decoding(data):
        return _checked(data, path, plain_path=path)
    return _prepare(data, path, max_stream_bytes)


def _read_regular(handle: BinaryIO, path: str, max_stream_bytes: int) -> Buffer:
    """The bytes of an open regular file: mapped when it is large plain text, else read."""
    size = os.fstat(handle.fileno()).st_size
    if size == 0:  # empty, or a file whose size is not known in advance (/proc)
        return _read_stream(handle, max_stream_bytes, path)
    if size >= MMAP_THRESHOLD and not _needs_decoding(handle.read(_UTF16_SNIFF)):
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            pass  # not mappable here: read it
    handle.seek(0)
    return handle.read(size)  # what it held when opened (a live log may be growing)


def _needs_decoding(head: bytes) -> bool:
    """Whether bytes starting with `head` (`_UTF16_SNIFF` of them, or all there are) are
    compressed, or text to re-encode as UTF-8."""
    return (
        _compression(head) is not None
        or head.startswith(tuple(mark for mark, _ in _BOMS))
        or _utf16_without_bom(head) is not None
    )


#: Bytes read to tell UTF-16 without a byte-order mark (`_utf16_without_bom`).
_UTF16_SNIFF = 512


def _utf16_without_bom(head: bytes) -> str | None:
    """`utf-16-le` or `utf-16-be` when `head` is UTF-16 text without a byte-order mark (a
    Windows tool's output, iconv's): a log is mostly ASCII, whose UTF-16 code units have a NUL
    high byte, so nearly every second byte is NUL, on one side only. UTF-8 text has no NUL; a
    NUL-padded or truncated file (logrotate's copytruncate) has them on both sides; binary data
    has them anywhere. None otherwise."""
    sample = head[: _UTF16_SNIFF & ~1]
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    even_nul, odd_nul = even.count(0) / len(even), odd.count(0) / len(odd)
    if odd_nul >= 0.7 and even_nul <= 0.05:
        return "utf-16-le"
    if even_nul >= 0.7 and odd_nul <= 0.05:
        return "utf-16-be"
    return None


def open_regular(path: str) -> BinaryIO:
    """Open `path` for reading if it is a regular file (following symlinks), else raise
    `LogReadError`. A FIFO is opened without blocking and refused, like a device or a directory."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise LogReadError(f"cannot read {path}: {err.strerror or err}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise LogReadError(f"cannot read {path}: {_kind(mode)}, not a regular file")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular_text(path: str, max_bytes: int) -> str:
    """The text of a small regular UTF-8 file (a launch script, a rule file), line endings kept;
    raises `LogReadError` for anything else, or when it is over `max_bytes`."""
    with open_regular(path) as handle:
        data = _read_bounded(handle, max_bytes, path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LogReadError(f"cannot read {path}: invalid UTF-8 at byte {err.start}") from None


def first_invalid_utf8(data: Buffer, start: int = 0, stop: int | None = None) -> int | None:
    """Offset of the first byte of `data[start:stop]` (from a character's first byte to the end
    of one) that is not valid UTF-8, or None (at C speed, in chunks so a mapped file is never
    copied whole, each chunk's pages released once read).

    Each chunk is decoded by the codec straight from the buffer: a chunk cut inside a character
    leaves its last bytes to the next one (`used`). Measured against proving chunks valid
    without decoding them (`isascii`, replacing or counting their few distinct characters): as
    fast on a serving log, 7x faster on a restart loop's varied characters, and one exact answer.
    """
    view = memoryview(data)
    offset = released = start
    stop = len(view) if stop is None else stop
    try:
        while offset < stop:
            # (At least a character's 4 bytes, so that a piece is never only part of one.)
            end = min(stop, offset + max(_UTF8_CHUNK, 4))
            released = release_pages(data, released, offset)  # (the pieces before this one)
            try:
                _, used = codecs.utf_8_decode(view[offset:end], "strict", end == stop)
            except UnicodeDecodeError as err:
                return offset + err.start
            offset += used
    finally:
        view.release()
        release_pages(data, released, stop)
    return None


def first_invalid_utf8_in_rows(data: Buffer, rows: bytes | None) -> int | None:
    """`first_invalid_utf8(data)`, told by the rows of rg's UTF-8 search of the file holding
    `data` (`early.utf8_command`): the lines holding U+FFFD once rg decoded the file, which
    hold every invalid byte up to the last of them. Those lines are decoded here, in order, up
    to the first invalid one; the rest of `data` only when rg stopped at its most rows. Rows
    that do not fit `data` (None: rg failed; not a line start: rg read other bytes) leave the
    whole check to `first_invalid_utf8`."""
    from .prefilter import parse_rows  # (the pre-filter reads files: it imports this module)

    listed = parse_rows(rows) if rows is not None else None
    if listed is None:
        return first_invalid_utf8(data)
    bom = codecs.BOM_UTF8
    skip = len(bom) if data[: len(bom)] == bom else 0  # (rg counts without it)
    checked = 0  # (every byte before is valid)
    for offset, _ in listed:
        start = offset + skip
        if start >= len(data):  # (a line written after `data` was read)
            break
        if start < checked or (start > skip and data[start - 1 : start] != b"\n"):
            return first_invalid_utf8(data)
        end = data.find(b"\n", start) + 1 or len(data)
        if (bad := first_invalid_utf8(data, start, end)) is not None:
            return bad
        checked = end
    if len(listed) >= early.UTF8_ROWS:
        return first_invalid_utf8(data, checked)
    # The file may have grown since `data` was read, completing a character `data` ends inside.
    return first_invalid_utf8(data, max(checked, data.rfind(b"\n") + 1))


#: Below this many bytes the check costs less than forking a process to run it beside.
FORK_THRESHOLD = 8 << 20


def utf8_check_beside(data: Buffer, path: str | None = None) -> Callable[[], int | None]:
    """`first_invalid_utf8(data)`, run beside this process where it can be; the function
    returned waits for its answer.

    The large file at `path` holding exactly `data` (mapped, or read: the server's copy) is
    searched by rg for the lines it cannot decode (`early.utf8_command`: SIMD-fast, 0.02 s per
    100 MB where the codec takes a tenth of a second, holding the GIL), started before the
    imports for `check` (`early`); only the lines it lists are decoded here
    (`first_invalid_utf8_in_rows`). Without rg, a large mapping's bytes are checked by a forked
    child, which reads the very same mapping while this process analyses the log.

    It forks only on POSIX, for a mapping of at least `FORK_THRESHOLD` bytes, and when no other
    thread runs here (a thread's locks would be copied held); otherwise the check runs here and
    now. The child runs nothing but the check: it writes the answer to a pipe and leaves with
    `os._exit` (no exit handler, no flush of this process's buffers). Any failure of the child
    (killed, an unreadable answer) leaves the check to this process: the answer never depends
    on it.
    """
    if path is not None and len(data) >= early.TOOL_THRESHOLD:
        rows = early.take_utf8(path) or early.start_utf8(path)
        if rows is not None:
            return lambda: first_invalid_utf8_in_rows(data, rows())
    if not _may_fork(data):
        found = first_invalid_utf8(data)
        return lambda: found
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        found = first_invalid_utf8(data)
        return lambda: found
    if pid == 0:  # the child
        status = 1
        try:
            os.close(read_end)
            offset = first_invalid_utf8(data)
            os.write(write_end, b"-" if offset is None else b"%d" % offset)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)

    def answer() -> int | None:
        try:
            told = b"".join(iter(lambda: os.read(read_end, 64), b""))
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(read_end)
        if status == 0 and told == b"-":
            return None
        if status == 0 and told.isdigit():
            return int(told)
        return first_invalid_utf8(data)

    return answer


def _may_fork(data: Buffer) -> bool:
    if not hasattr(os, "fork") or not isinstance(data, mmap.mmap) or len(data) < FORK_THRESHOLD:
        return False
    threading = sys.modules.get("threading")  # (not imported: no thread but this one)
    return threading is None or threading.active_count() == 1


def release_pages(data: Buffer | str, start: int, end: int) -> int:
    """Let the memory of a mapped file's pages from `start` to `end` go, once they have been
    read (the pages wholly inside; other data: nothing): where they are read again they are
    mapped again from the page cache, so what the process holds stays what it still reads (a
    scan of every byte would otherwise hold the whole file). Where the next release starts."""
    if not isinstance(data, mmap.mmap) or _DONT_NEED is None:
        return start
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    last = end if end >= len(data) else end // mmap.PAGESIZE * mmap.PAGESIZE
    if last > first:
        try:
            data.madvise(_DONT_NEED, first, last - first)
        except (OSError, ValueError):  # (closed, or not allowed here: the memory stays held)
            return start
    return max(start, last)


def find_releasing(data: mmap.mmap, needles: tuple[bytes, ...]) -> list[int]:
    """`data.find(needle)` of each needle, in one pass a block at a time, each block's pages
    released once searched (`release_pages`)."""
    found = [-1] * len(needles)
    start = released = 0
    overlap = max(map(len, needles), default=1) - 1  # (a match may begin in one block, end in the next)
    try:
        while start < len(data) and -1 in found:
            end = min(len(data), start + _UTF8_CHUNK)
            for at, needle in enumerate(needles):
                if found[at] < 0:
                    found[at] = data.find(needle, start, end + overlap)
            released = release_pages(data, released, end)
            start = end
    finally:
        release_pages(data, released, len(data))
    return found


def rfind_releasing(data: mmap.mmap, needle: bytes, lo: int, hi: int) -> int:
    """`data.rfind(needle, lo, hi)`, searched backwards a block at a time, each block's pages
    released once searched (`release_pages`): a search that finds nothing reads every byte."""
    end = hi
    while end > lo:
        start = max(lo, end - _UTF8_CHUNK)
        found = data.rfind(needle, start, min(hi, end + len(needle) - 1))  # (across the block's end)
        release_pages(data, start, end)
        if found >= 0:
            return found
        end = start
    return -1


# (A file mapping's pages are read again from the page cache after MADV_DONTNEED; not on Windows.)
_DONT_NEED = getattr(mmap, "MADV_DONTNEED", None)


# Bytes checked at a time: a chunk's decoded copy is all the check holds.
_UTF8_CHUNK = 1 << 20


# -- reading -------------------------------------------------------------------------------------
def _read_stream(stream: Readable, limit: int, name: str) -> bytes:
    """At most `limit` bytes of a stream of unknown size, refused at its first block when that
    is binary (`/dev/zero` or `/dev/urandom` on standard input costs one block, not `limit`)."""
    head = _read_bounded(stream, min(limit, SNIFF_BYTES), name, more_ok=True)
    if not _needs_decoding(head):
        _refuse_binary(head, name)
    if len(head) < min(limit, SNIFF_BYTES):
        return head
    return head + _read_bounded(stream, limit - len(head), name)


def _read_bounded(stream: Readable, limit: int, name: str, more_ok: bool = False) -> bytes:
    """At most `limit` bytes of `stream`; more is an error (the input is not a log we can hold)."""
    data = stream.read(limit if more_ok else limit + 1)
    if data is None:  # a non-blocking stream with nothing ready
        return b""
    if len(data) > limit:
        raise LogReadError(f"cannot read {name}: more than {_size(limit)}")
    return data


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB"


# -- decoding ------------------------------------------------------------------------------------
def _compression(head: bytes) -> str | None:
    for magic, name in _COMPRESSED:
        # bzip2's magic is printable: it must be followed by its block-size digit.
        if head.startswith(magic) and (name != "bzip2" or head[3:4].isdigit()):
            return name
    return None


def _decompress(data: bytes, kind: str, limit: int, name: str) -> bytes:
    import bz2  # here: most logs are plain, and these cost a short check's start-up a share
    import gzip
    import lzma

    openers: dict[str, Opener] = {
        "gzip": lambda f: gzip.GzipFile(fileobj=f),
        "bzip2": bz2.BZ2File,
        "xz": lzma.LZMAFile,
    }
    errors: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError, zlib.error)
    if kind in openers:
        opener = openers[kind]
    else:
        opener, errors = _zstd_opener(name)
    try:
        with opener(io.BytesIO(data)) as stream:
            return _read_stream(stream, limit, f"{name} (decompressed)")
    except errors as err:
        raise LogReadError(f"cannot read {name}: not valid {kind} data ({err})") from None


def refused_start(head: bytes) -> bool:
    """Whether the first block of an input is what `open_log` refuses (binary data, only NULs)."""
    if _needs_decoding(head[:_UTF16_SNIFF]):
        return False
    try:
        _refuse_binary(head[:SNIFF_BYTES], "")
    except LogReadError:
        return True
    return False


def prepare_stream_bytes(data: bytes, name: str) -> LogSource:
    """A log from bytes already read from a stream (`name` for messages), as `open_log` reads
    standard input: decompressed, re-encoded, refused when binary; or raise `LogReadError`."""
    if not _needs_decoding(data[:_UTF16_SNIFF]):
        _refuse_binary(data[:SNIFF_BYTES], name)
    return _prepare(data, name)


def _zstd_opener(name: str) -> tuple[Opener, tuple[type[BaseException], ...]]:
    """A zstd stream reader and its errors: Python 3.14's `compression.zstd`, else the
    `zstandard` package (`pip install 'vllm-log-lsp[zstd]'`); neither is a clear error."""
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        return zstd.ZstdFile, (OSError, EOFError, zstd.ZstdError)
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise LogReadError(
            f"cannot read {name}: zstd-compressed, and no zstd library is installed "
            "(pip install 'vllm-log-lsp[zstd]', or decompress it with unzstd)"
        ) from None

    # Every frame: a rotated log may be several compressed pieces appended.
    def reader(stream: io.BytesIO) -> BinaryIO:
        return zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)

    return reader, (OSError, EOFError, zstandard.ZstdError)


def _prepare(data: bytes, name: str, limit: int = MAX_STREAM_BYTES) -> LogSource:
    """Decompress, re-encode and check bytes read from a stream or a non-plain file."""
    kind = _compression(data[:8])
    if kind is not None:
        data = _decompress(data, kind, limit, name)
        if _compression(data[:8]) is not None:
            raise LogReadError(f"cannot read {name}: compressed twice")
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            if encoding != "utf-8":
                data = data.decode(encoding, "replace").encode("utf-8", "surrogatepass")
            else:
                data = data[len(mark) :]
            break
    else:
        utf16 = _utf16_without_bom(data[:_UTF16_SNIFF])
        if utf16 is not None:
            data = data.decode(utf16, "replace").encode("utf-8", "surrogatepass")
    return _checked(data, name, plain_path=None)


def _checked(data: Buffer, name: str, plain_path: str | None) -> LogSource:
    """Refuse binary data; warn about NUL bytes in what is otherwise text."""
    warnings = []
    # A log truncated in place (logrotate's copytruncate) starts with NULs: sniff after them.
    start = _after_nul_run(data)
    if start and start == len(data):
        raise LogReadError(f"cannot read {name}: only NUL bytes, no text")
    if _refuse_binary(bytes(data[start : start + SNIFF_BYTES]), name) or start:
        warnings.append("the file contains NUL bytes: it may be binary, not a log")
    return LogSource(data, warnings, plain_path)


def _after_nul_run(data: Buffer) -> int:
    """Offset of the first byte that is not NUL (len(data) when there is none)."""
    chunk = 1 << 20
    for start in range(0, len(data), chunk):
        piece = bytes(data[start : start + chunk])
        text_at = len(piece) - len(piece.lstrip(b"\x00"))
        if text_at < len(piece):
            return start + text_at
    return len(data)


def _refuse_binary(head: bytes, name: str) -> bool:
    """Raise `LogReadError` when the first block of the input is not text; else whether it
    holds NUL bytes."""
    text = head.replace(b"\x00", b"")
    if head and not text:
        raise LogReadError(f"cannot read {name}: only NUL bytes, no text")
    if _looks_binary(text):
        raise LogReadError(f"cannot read {name}: binary data, not a text log")
    return len(text) < len(head)


def _looks_binary(sample: bytes) -> bool:
    """Control bytes or undecodable sequences in more than a few percent of the sample."""
    controls = len(sample) - len(sample.translate(None, _BINARY_BYTES))
    if controls * 20 > len(sample):
        return True
    if sample.isascii():
        return False
    undecodable = sample.decode("utf-8", "replace").count("\ufffd")
    return undecodable * 10 > len(sample)
