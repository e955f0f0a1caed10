"""A progress line on stderr while `check` reads a large input, drawn only on a terminal.

Nothing is written when stderr is not a terminal (CI logs, `2>file`, pipes) or when the input is
small (the report comes before a bar would be seen). The line shows the files and bytes done and
the time taken; a clock thread redraws it, so a single large log (whose analysis reports no
fraction) still shows that work goes on. Reports go to stdout: `paused()` clears the line while
one is written, in case both streams are the same terminal.

Hand-written rather than a library (tqdm): one line, no dependency in the bundled VS Code server.
"""

from __future__ import annotations

import os
import time
from _thread import allocate_lock

from .batch import input_size

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from typing import TextIO

#: What makes an input large enough for a progress line: this many bytes, or this many files.
MIN_BYTES = 32 << 20
MIN_FILES = 16
#: How often the clock thread redraws the line (seconds).
TICK_S = 0.25
_CLEAR = "\r\x1b[K"
_SPINNER = "|/-\\"


class _Paused:
    """`Progress.paused()`: the line cleared on entry, drawn again on exit, the lock held
    between (a class: `contextlib` would cost every short check its import)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def __enter__(self) -> None:
        progress = self._progress
        if progress.enabled:
            progress._lock.acquire()
            try:
                progress._write(_CLEAR)
            except BaseException:
                progress._lock.release()
                raise

    def __exit__(self, *exc_info: object) -> None:
        progress = self._progress
        if progress.enabled:
            try:
                progress._draw()
            finally:
                progress._lock.release()


class Progress:
    """The progress of checking `paths`; every method is a no-op when it is not `enabled`."""

    _stop: threading.Event  # (when enabled)

    def __init__(self, paths: list[str], stream: TextIO | None, enabled: bool) -> None:
        self.paths = paths
        self.stream = stream
        self.enabled = enabled and stream is not None
        self.total_bytes = sum(map(input_size, paths)) if self.enabled else 0
        self.done_files = 0
        self.done_bytes = 0
        self.started = time.monotonic()
        self._lock = allocate_lock()
        self._ticks = 0
        self._clock: threading.Thread | None = None
        if self.enabled:  # threading is imported for a line that is drawn only (start-up)
            import threading

            self._stop = threading.Event()
            self._clock = threading.Thread(target=self._run_clock, name="progress-line", daemon=True)
            self._clock.start()

    @classmethod
    def for_batch(cls, paths: list[str], stream: TextIO | None) -> Progress:
        """On for a large input when `stream` is a terminal (standard input's size is unknown:
        it counts as one file)."""
        terminal = stream is not None and hasattr(stream, "isatty") and stream.isatty()
        large = terminal and (len(paths) >= MIN_FILES or sum(map(input_size, paths)) >= MIN_BYTES)
        return cls(paths, stream, bool(large))

    def advance(self, size: int) -> None:
        """One more file done (`size` bytes on disk)."""
        if not self.enabled:
            return
        with self._lock:
            self.done_files += 1
            self.done_bytes += size
            self._draw()

    def paused(self) -> _Paused:
        """The line cleared while the caller writes something else to the terminal
        (`with progress.paused(): ...`)."""
        return _Paused(self)

    def close(self) -> None:
        """Stop the clock and clear the line."""
        if not self.enabled:
            return
        self._stop.set()
        if self._clock is not None:
            self._clock.join()
        with self._lock:
            self._write(_CLEAR)
            self.enabled = False

    # -- drawing ----------------------------------------------------------------------------
    def _run_clock(self) -> None:
        while not self._stop.wait(0 if self._ticks == 0 else TICK_S):
            with self._lock:
                self._ticks += 1
                self._draw()

    def line(self) -> str:
        """The progress line as drawn now (without the escape that clears it)."""
        total = len(self.paths)
        elapsed = time.monotonic() - self.started
        spinner = _SPINNER[self._ticks % len(_SPINNER)]
        mib = f"{self.done_bytes / (1 << 20):.0f}/{self.total_bytes / (1 << 20):.0f} MiB"
        current = os.path.basename(self.paths[self.done_files]) if self.done_files < total else ""
        fraction = self.done_bytes / self.total_bytes if self.total_bytes else self.done_files / max(total, 1)
        width = 20
        filled = min(width, int(fraction * width))
        bar = "#" * filled + "-" * (width - filled)
        text = f"vllm-log-lsp {spinner} [{bar}] {self.done_files}/{total} files · {mib} · {elapsed:.1f} s"
        if current:
            text += f" · {current}"
        import shutil  # only when a line is drawn (on a terminal)

        columns = shutil.get_terminal_size((80, 24)).columns
        return text if len(text) < columns else text[: max(columns - 2, 10)] + "…"

    def _draw(self) -> None:
        if self.enabled and not self._stop.is_set():
            self._write(_CLEAR + self.line())

    def _write(self, text: str) -> None:
        assert self.stream is not None
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal that went away: draw nothing
            pass
