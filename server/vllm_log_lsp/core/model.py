"""The analysis core's data model: what the core finds, and what adapters render.

Every position is (0-based line, column) in the original text, with the column counted in Python
code points of that line. Adapters convert columns to the client's encoding (UTF-16 or UTF-8).
The dataclasses (`records`: `dataclasses`' behaviour at a fraction of its start-up cost) are
plain and frozen so that results can be shared across threads and cached.
"""

from __future__ import annotations

from .records import dataclass, field

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    from .health import Health
    from .linebreaks import SourceMap

if TYPE_CHECKING:
    Severity = Literal["error", "warning", "information", "hint"]
    Confidence = Literal["high", "medium", "low"]
else:  # names for annotations only
    Severity = Confidence = str

#: Crash phases, in lifecycle order.
PHASES: tuple[str, ...] = (
    "startup",  # argument parsing, config validation, platform detection, process start
    "model_loading",
    "memory_profiling",  # memory profiling and KV-cache sizing
    "torch_compile",
    "cuda_graph_capture",
    "warmup",
    "serving",
    "shutdown",
)

#: The phase of a death when neither its stack frames nor a lifecycle marker tell; a rule that
#: should still apply then lists it in its `phases` (see `core/phase.py`).
UNKNOWN_PHASE = "unknown"

PHASE_TITLES: dict[str, str] = {
    "startup": "start-up / configuration",
    "model_loading": "model loading",
    "memory_profiling": "memory profiling and KV-cache sizing",
    "torch_compile": "torch.compile",
    "cuda_graph_capture": "CUDA-graph capture",
    "warmup": "warm-up",
    "serving": "serving",
    "shutdown": "shutdown",
    "unknown": "unknown",
}


class LineWords(str):
    """Words for people that name lines of the log (`came after line 16`): as a `str`, the
    lines numbered as the core numbers them (1-based); `numbered` numbers them as a reader does
    (`check` counts only `\n`, a terminal copy's rows, a JSON log's records: see
    `linebreaks.Numbering`).

    `template` holds `{0}`, `{1}`, … for `lines`, 0-based core lines."""

    template: str
    lines: tuple[int, ...]

    def __new__(cls, template: str, *lines: int) -> LineWords:
        words = super().__new__(cls, template.format(*(line + 1 for line in lines)))
        words.template, words.lines = template, lines
        return words

    def __reduce__(self) -> tuple[type[LineWords], tuple[object, ...]]:
        return LineWords, (self.template, *self.lines)

    def numbered(self, line_of: Callable[[int], int]) -> str:
        """The words with each line as `line_of` (core line → the reader's, 0-based) numbers it."""
        return self.template.format(*(line_of(line) + 1 for line in self.lines))


def numbered(text: str, line_of: Callable[[int], int]) -> str:
    """`text` with the lines it names numbered by `line_of` (text naming no line: as it is)."""
    return text.numbered(line_of) if isinstance(text, LineWords) else text


@dataclass(frozen=True, slots=True)
class Span:
    """A range on one line: columns are code-point offsets into that line's text."""

    line: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of the log with its prefixes taken apart.

    `message_col` is where vLLM's message (or the raw text, for lines without a vLLM header)
    begins in `text`; everything before it is prefix. `stream` identifies the writer (outer
    runtime prefix plus process chain) so that interleaved processes can be told apart.
    """

    number: int
    text: str
    message: str
    message_col: int
    stream: str = ""
    process: str | None = None
    pid: int | None = None
    level: str | None = None
    timestamp: str | None = None
    source: str | None = None
    outer: str | None = None

    @property
    def message_span(self) -> Span:
        """The message part of the line (without trailing white space)."""
        end = len(self.text.rstrip())
        return Span(self.number, min(self.message_col, end), end)


@dataclass(frozen=True, slots=True)
class Frame:
    """One `File "...", line N, in func` entry of a traceback (IPython's `File ...:N, in func(...)`,
    a notebook cell's `Cell In[3], line N`)."""

    line: int
    path: str
    lineno: int | None
    function: str | None


@dataclass(frozen=True, slots=True)
class ExceptionEvent:
    """An exception or a fault: a Python traceback's final line, or a runtime's fatal message.

    `kind` tells where it came from: `python` (a traceback), `fault` (a C/C++ runtime or signal
    message with no traceback: NCCL watchdog, HIP memory fault, segfault), `message` (an
    ERROR line that states a failure without a traceback), `signal` (the process was told to
    stop).
    """

    line: int
    span: Span
    type_name: str
    message: str
    stream: str
    kind: Literal["python", "fault", "message", "signal"] = "python"
    process: str | None = None
    frames: tuple[Frame, ...] = ()
    traceback_start: int | None = None
    chain_index: int = 0  # 0 = first exception of its chain (the original one)
    context_lines: tuple[str, ...] = ()  # source lines shown under frames (for bare asserts)
    message_lines: tuple[int, ...] = ()  # lines of a message that continues below its first line

    @property
    def text(self) -> str:
        """`Type: message` as Python prints it."""
        return f"{self.type_name}: {self.message}" if self.message else self.type_name


@dataclass(frozen=True)
class Symptom:
    """A line that says the engine died (EngineDeadError, init failed, died unexpectedly ...)."""

    line: int
    span: Span
    kind: str  # the symptom pattern's id
    title: str
    text: str


@dataclass(frozen=True)
class ValueSpec:
    """How a fix computes a value: a literal, an evidence capture, or a derivation.

    Resolution order: `capture` when the log captured it; else `derive` applied to the current
    value (launch script, else the `base_capture` evidence, else the log's launch args, else
    `default`); else `literal`.
    """

    literal: str | None = None
    capture: str | None = None
    base_capture: str | None = None
    derive: Literal["halve", "step_down", "step_up"] | None = None
    default: str | None = None
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class FixOp:
    """One edit a fix makes to a launch: a flag, a JSON-flag key, or an environment variable.

    - `add_flag`: a boolean flag (`--enforce-eager`); `value` is None.
    - `set_flag`: a flag with a value (`--max-num-seqs 128`).
    - `merge_json`: a key inside a JSON config flag (`--compilation-config '{"cudagraph_mode": "NONE"}'`).
    - `set_env`: an environment variable (`CUDA_LAUNCH_BLOCKING=1`).
    Flag names are canonical: leading `--`, dashes not underscores.
    """

    op: Literal["add_flag", "set_flag", "merge_json", "set_env"]
    name: str
    value: ValueSpec | None = None
    key: str | None = None  # merge_json: the key inside the JSON object

    @property
    def kwarg(self) -> str | None:
        """The Python `LLM(...)`/`EngineArgs(...)` keyword for a flag op."""
        if self.op == "set_env":
            return None
        return self.name.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Fix:
    """A way out, in order of preference within its rule."""

    title: str
    kind: Literal["workaround", "fix", "upgrade", "diagnose", "config"] = "workaround"
    ops: tuple[FixOp, ...] = ()
    detail: str = ""  # markdown: why this helps, when not to use it
    versions: str = ""  # version spec like ">=0.10.2,<0.31"; empty = all
    references: tuple[str, ...] = ()
    # Left out where the root cause has a Python stack (a traceback's frames, or the stack
    # `faulthandler` printed after a fault): a way to get one, which the log holds already.
    unless_stack: bool = False


@dataclass(frozen=True)
class ResolvedOp:
    """A FixOp with its value computed for one log (and, later, one launch script)."""

    op: FixOp
    value: str | None
    spelling: str  # how it reads on a command line for this vLLM version, e.g. `--max-num-seqs 128`
    source: str = ""  # where the value came from: "log evidence", "log args", "vLLM default" ...


@dataclass(frozen=True)
class ResolvedFix:
    fix: Fix
    ops: tuple[ResolvedOp, ...]

    @property
    def title(self) -> str:
        return self.fix.title

    @property
    def command_line(self) -> str:
        """The fix as it reads on a command line: env vars first, then flags."""
        env = [o.spelling for o in self.ops if o.op.op == "set_env"]
        flags = [o.spelling for o in self.ops if o.op.op != "set_env"]
        return " ".join(env + flags)


@dataclass(frozen=True)
class RunContext:
    """What the log says about the run: version, model, launch args, hardware."""

    vllm_version: str | None = None
    model: str | None = None
    args: dict[str, str] = field(default_factory=dict)  # canonical `--flag` -> value text
    args_line: int | None = None
    gpu: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    platform: str | None = None


@dataclass(frozen=True)
class PhaseMark:
    """A lifecycle marker: the run entered `phase` at `line`."""

    line: int
    phase: str
    title: str


@dataclass(frozen=True)
class Precursor:
    """A line that explains a later death without being its cause (information diagnostic)."""

    line: int
    span: Span
    id: str
    title: str
    explanation: str
    text: str


@dataclass(frozen=True)
class Considered:
    """Another line that could have been an incident's root cause, and why it was not chosen."""

    line: int
    text: str
    why_not: str


@dataclass(frozen=True)
class MessageOrigin:
    """Where a root cause's message comes from, by the mined index (see `core/mined.py`)."""

    package: str  # vllm, transformers, huggingface_hub, torch ...
    kind: str  # the exception type it is raised as, or `log.error` / `log.warning` ...
    module: str  # `vllm/config/model.py`
    function: str  # `ModelConfig._verify_quantization`
    versions: str  # the mined releases of `package` that hold it there: `0.6.0–0.9.2`
    template: str  # the message with its placeholders: `max_model_len ({max_model_len}) …`
    summary: str  # "raised by `vllm/config/model.py` `ModelConfig…`, in vLLM 0.6.0–0.9.2"
    version_mismatch: str | None = None  # why the log's vLLM version cannot have raised it


@dataclass(frozen=True)
class Finding:
    """One engine death: its root cause, how it was classified, its symptoms and what to do."""

    root: Span
    root_text: str  # the root-cause line's message
    rule_id: str
    title: str
    family: str
    message: str  # title plus the key evidence, for a diagnostic
    summary: str
    explanation: str
    evidence: dict[str, str]
    fixes: tuple[ResolvedFix, ...]
    symptoms: tuple[Symptom, ...]
    phase: str
    phase_line: int | None
    context: RunContext
    references: tuple[str, ...] = ()
    exception: ExceptionEvent | None = None
    related_lines: tuple[int, ...] = ()  # other copies of the root cause, frames worth a look
    next_steps: tuple[str, ...] = ()
    recognized: bool = True
    why: str = ""  # why this line was chosen as the root cause, in words
    considered: tuple[Considered, ...] = ()  # other candidates and why each was not the cause
    confidence: Confidence = "medium"
    origin: MessageOrigin | None = None  # where the root cause's message is raised, when mined
    phase_source: Literal["frames", "marker", "carrier", "unknown"] = "marker"  # what `phase` was read from

    @property
    def line(self) -> int:
        return self.root.line


@dataclass(frozen=True)
class Analysis:
    """Everything the core knows about one log."""

    findings: tuple[Finding, ...]
    precursors: tuple[Precursor, ...]
    runs: tuple[RunSegment, ...]
    line_count: int
    warnings: tuple[str, ...] = ()  # problems with the input itself (binary data, huge lines)
    folds: tuple[tuple[int, int], ...] = ()  # (first, last) line of each traceback
    run_starts: tuple[int, ...] = ()  # lines where vLLM (re)started
    health: Health | None = None  # stats series, health findings, pre-failure records
    # With no death: the start-up phase the log ends in (`phase.ended_in_startup`), if it does.
    ended_in_startup: PhaseMark | None = None
    # For a log analysed through a transcript (vLLM's JSON format, a terminal copy's rows joined):
    # its positions as (`\n`-line, column) of the log itself, and back. None: positions are the
    # log's own.
    source_map: SourceMap | None = None

    @property
    def healthy(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class RunSegment:
    """One start of vLLM that died, with what its start-up lines say (see `outline` for phases)."""

    start_line: int
    end_line: int
    stream: str
    context: RunContext
