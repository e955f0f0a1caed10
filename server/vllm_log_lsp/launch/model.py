"""Public data of the launch layer: found invocations, rankings, fix results.

Positions are 0-based lines and code-point columns, like the core's model; the LSP layer
converts columns to the client's encoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .text import TextEdit, unified_diff

Format = Literal["shell", "text", "docs", "compose", "kubernetes", "dockerfile", "python"]


@dataclass(frozen=True)
class SourceRange:
    start_line: int
    start_col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Invocation:
    """One place in one file that starts vLLM, with what it sets.

    `flags` maps canonical `--flag` (dotted JSON keys as `--compilation-config.mode`) to value
    text; switches read `true`/`false`. `index` is the invocation's ordinal within its file, so
    a fix can find it again after the file changed. `label` says where it is for humans.
    """

    path: str
    format: Format
    index: int
    range: SourceRange
    entry: str  # "vllm serve", "api_server", "docker run", "image", "LLM", "EngineArgs" …
    label: str
    model: str | None = None
    port: int | None = None
    tensor_parallel_size: int | None = None
    flags: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    vllm_version: str | None = None  # from an image tag like `vllm/vllm-openai:v0.9.1`

    @property
    def line(self) -> int:
        return self.range.start_line


@dataclass(frozen=True)
class SkippedFile:
    """A file that looked relevant but could not be read or parsed."""

    path: str
    reason: str


@dataclass(frozen=True)
class Discovery:
    invocations: tuple[Invocation, ...]
    skipped: tuple[SkippedFile, ...] = ()
    files_scanned: int = 0
    truncated: bool = False  # the file limit was reached


@dataclass(frozen=True)
class DiscoveryOptions:
    """Bounds for walking a workspace. Globs match paths relative to the root (fnmatch)."""

    include: tuple[str, ...] = ()  # empty: every file the format detectors accept
    exclude: tuple[str, ...] = ()
    docs: bool = False  # documentation (README.md …) counts as launch scripts: the user opted in
    max_files: int = 5000  # files looked at (stat'ed), not only parsed
    max_file_bytes: int = 512 * 1024
    skip_dirs: frozenset[str] = frozenset(
        {
            ".git",
            ".hg",
            ".svn",
            ".venv",
            "venv",
            ".tox",
            ".nox",
            "node_modules",
            "__pycache__",
            ".mypy_cache",
            ".pytest_cache",
            ".ruff_cache",
            "site-packages",
            "dist",
            "build",
        }
    )


@dataclass(frozen=True)
class Candidate:
    """An invocation scored against the log's run (see `rank.score_invocation`).

    `reasons` say what agrees with the log ("serves the log's model", "port 8000"), `doubts`
    what contradicts it or cannot be told ("serves another model (Qwen/Qwen3-8B)"),
    `differences` the other flags it sets otherwise (a script tuned since the run still
    matches). `matches`: the log's model is the one it serves and no doubt contradicts the log.
    """

    invocation: Invocation
    score: float
    reasons: tuple[str, ...] = ()
    matches: bool = False
    doubts: tuple[str, ...] = ()
    differences: tuple[str, ...] = ()

    @property
    def why_not_a_match(self) -> str:
        """Why it is only plausible, in words (empty for a match)."""
        if self.matches:
            return ""
        return "; ".join(self.doubts or self.differences) or "nothing ties it to the log's run"


@dataclass(frozen=True)
class Ranking:
    """Candidates best first: the matches, then the others (see `rank.rank_invocations`)."""

    candidates: tuple[Candidate, ...]

    @property
    def best(self) -> Invocation | None:
        return self.candidates[0].invocation if self.candidates else None

    @property
    def matches(self) -> tuple[Candidate, ...]:
        """The candidates that are the log's run (fixes for them can be applied without asking)."""
        return tuple(c for c in self.candidates if c.matches)

    @property
    def preferred(self) -> bool:
        """Whether the best candidate matches the log's run."""
        return bool(self.candidates) and self.candidates[0].matches

    def plausible(self, limit: int) -> tuple[Candidate, ...]:
        """The best `limit` candidates that do not match (to offer when nothing matches)."""
        return tuple(c for c in self.candidates if not c.matches)[:limit]


@dataclass(frozen=True)
class FixResult:
    """The outcome of applying a fix to one file.

    `status`: `changed` (edits non-empty), `unchanged` (the fix is already there), `skipped`
    (`reason` says why: malformed file, unsupported construct, the edit did not verify).
    `summary` is one line for a code action title or a CLI, e.g.
    `launch.sh:12: --max-num-seqs 256 → 128`.
    """

    path: str
    status: Literal["changed", "unchanged", "skipped"]
    old_text: str
    new_text: str
    edits: tuple[TextEdit, ...] = ()
    summary: str = ""
    reason: str = ""
    changes: tuple[str, ...] = ()  # one line per operation
    invocation: Invocation | None = None

    @property
    def changed(self) -> bool:
        return self.status == "changed"

    def diff(self, context: int = 3) -> str:
        """The change as a unified diff (empty when nothing changed)."""
        return unified_diff(self.old_text, self.new_text, self.path, context)
