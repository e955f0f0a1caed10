"""The cause catalog: ordered rules and log markers, loaded from TOML data.

Two kinds of files live in `vllm_log_lsp/catalog/`:
- `markers.toml`: what the scanner looks for (engine-death symptoms, wrapper exceptions, non-Python
  faults, stop signals, after-death decoys, lifecycle phases, run starts, healthy activity and
  precursors), each with a cheap `literal` for the pre-filter and a regex;
- `NN-family.toml`: `[[rule]]` entries in priority order (file order, then entry order), each
  with signature regexes, optional frame/context conditions, evidence captures, an explanation and
  ordered fixes. A file's `[signature.NAME]` tables hold what a family of its rules shares (the
  family's match and evidence patterns, e.g. every wording of "out of memory"); a rule that names
  one in `signatures` gets those patterns after its own.
User rule files use the same `[[rule]]` schema and are tried before the built-in rules. A broken
file or regex is reported with its file and line and skipped; the rest still loads. User regexes
run under the `regex` module's time limit so a catastrophic user pattern cannot stall analysis
(without `regex`, super-linear ones are refused); built-in ones run on the stdlib engine, which
imports in a fraction of the time: the test suite keeps each of them linear under both engines.
The built-in files' TOML is parsed once per version and cached (`datacache`), with each built-in
pattern's required literal and compiled program.
"""

from __future__ import annotations

import os
import re as stdlib_re
import sys
from _thread import allocate_lock
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from types import ModuleType

from . import datacache, regexes
from .linearity import USER_CHECK_LENGTH, refusal
from .model import PHASES, UNKNOWN_PHASE, Fix, FixOp, ValueSpec
from .records import dataclass, field
from .source import LogReadError, read_regular_text
from .versions import in_range

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from _thread import LockType
    from typing import Any


def user_engine() -> tuple[ModuleType, bool]:
    """The engine of user patterns and whether it has time limits: `regex` when it is installed,
    else the stdlib's (as in the VS Code bundle). Imported on the first user pattern only."""
    global _USER_ENGINE
    if _USER_ENGINE is None:
        try:
            import regex

            _USER_ENGINE = (regex, True)
        except ImportError:  # pragma: no cover - depends on the environment
            _USER_ENGINE = (stdlib_re, False)
    return _USER_ENGINE


_USER_ENGINE: tuple[ModuleType, bool] | None = None

#: User rule files: only regular files (never a FIFO, a device or `/dev/stdin`), at most this big.
MAX_RULE_FILE_BYTES = 1 << 20
#: Without `regex` (no time limits) a user pattern searches at most this much of a line: the length
#: `linearity.refusal` checked it at.
USER_TEXT_LIMIT = USER_CHECK_LENGTH

#: Frames whose phases a catalog remembers at most (see `Catalog.frame_phases`).
_MAX_REMEMBERED_FRAMES = 1 << 16

#: Seconds a single regex search may take before it is abandoned.
USER_REGEX_TIMEOUT = 0.05
BUILTIN_REGEX_TIMEOUT = 1.0

FAMILIES = (
    "memory",
    "gpu_platform",
    "build_dependencies",
    "model_loading",
    "parallelism",
    "compile_graphs",
    "runtime_faults",
    "hangs",
    "scheduler",
    "request",
    "config",
    "process",
    "shutdown",
    "unrecognized",
)


class CatalogError(ValueError):
    """A problem in a rule file, with where it is."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.message = path, line, message


class BrokenBuiltinFile(RuntimeError):
    """A built-in rule file that does not load (an edited or damaged install). Raised when the
    file is reached, not kept as a `CatalogError`: its rules are parsed after the command checked
    the catalog's errors, and a diagnosis without them would be a wrong answer given quietly."""

    def __init__(self, errors: list[CatalogError]) -> None:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"built-in rule file {first}{more}; reinstall vllm-log-lsp")
        self.errors = errors


class Pattern:
    """A regex that searches with a time limit; a timeout counts as no match.

    Built-in patterns compile on first use: a `check` run tries only a few of the catalog's
    hundreds of regexes, and compiling them all would dominate its start-up. User patterns
    compile at load time so that errors are reported with their file and line. Before a built-in
    pattern searches, the text must hold its required literal (see `required_literal`): most
    rules are ruled out by one `in`, without compiling them.
    """

    __slots__ = ("_compiled", "_required", "abandoned", "limit", "source", "timeout")

    def __init__(
        self,
        source: str,
        timeout: float | None,
        compiled: Any = None,
        limit: int | None = None,
        required: str | None = None,
    ) -> None:
        self.source = source
        self.timeout = timeout  # seconds a search may take (an engine with time limits), or None
        self._compiled = compiled
        self.limit = limit  # without time limits, only this many characters are searched
        self.abandoned = 0  # searches given up at the time limit (each counted as no match)
        # User patterns (compiled at load) may use syntax only `regex` knows: not pre-checked.
        self._required: str | None = "" if compiled is not None else required

    @property
    def required(self) -> str:
        """Text every match contains ('' when nothing is certain); found on first use."""
        if self._required is None:
            self._required = required_literal(self.source)
        return self._required

    @property
    def compiled(self) -> Any:
        if self._compiled is None:
            self._compiled = compile_builtin(self.source)  # only built-in patterns compile late
        return self._compiled

    def search(self, text: str) -> Any:
        if self.required not in text:
            return None  # no match can lack it
        if self.limit is not None:
            text = text[: self.limit]
        if self.timeout is None:
            return self.compiled.search(text)
        try:
            return self.compiled.search(text, timeout=self.timeout)
        except TimeoutError:
            self.abandoned += 1
            return None

    def __repr__(self) -> str:
        return f"Pattern({self.source!r})"


# `re`'s parser; type checkers read it under its old public name, which typeshed describes.
if TYPE_CHECKING:
    from pathlib import Path

if TYPE_CHECKING or sys.version_info < (3, 11):
    import sre_constants as _sre
    import sre_parse as _sre_parse
else:
    from re import _constants as _sre
    from re import _parser as _sre_parse

#: What `re.compile` hands the C engine for a built-in pattern (`regexes.sre_program`), from the cache.
_PROGRAMS: dict[str, list[Any]] = {}


def compile_builtin(source: str) -> Any:
    """`re.compile(source)` of a built-in pattern, from its cached `regexes.sre_program` when there
    is one (the C engine checks the program; one it refuses is compiled as usual)."""
    program = _PROGRAMS.get(source)
    if program is not None:
        try:
            return regexes.from_program(source, program)
        except Exception:  # RuntimeError("invalid SRE code"), TypeError: not this Python's
            _PROGRAMS.pop(source, None)
    return stdlib_re.compile(source)


def required_literal(source: str) -> str:
    """The longest run of literal characters that every match of regex `source` contains, or ''.

    Read from the stdlib parser's tree: only literals on the pattern's mandatory path count (not
    in alternatives, optional or zero-repeat parts, lookarounds or case-insensitive scopes), so
    a text without the run cannot match. A pattern the stdlib parser cannot read gets ''.
    """
    try:
        tree = _sre_parse.parse(source)
    except Exception:  # re.error, or syntax only the `regex` module knows
        return ""
    if tree.state.flags & _sre.SRE_FLAG_IGNORECASE:
        return ""
    runs = _mandatory_runs(list(tree.data))
    return max(runs, key=len, default="")


def required_alternatives(source: str) -> tuple[str, ...]:
    """For a regex of alternatives at its top level (`A|B|C`) each of which holds a literal run
    every match of it contains (see `required_literal`), those runs: every match of `source`
    holds one of them. () when that is not so (a text cannot be ruled out this way).

    Read with the stdlib parser, so it is exact for patterns the stdlib engine runs.
    """
    try:
        tree = _sre_parse.parse(source)
    except Exception:  # re.error, or syntax only the `regex` module knows
        return ()
    items: list[Any] = list(tree.data)
    if tree.state.flags & _sre.SRE_FLAG_IGNORECASE or len(items) != 1 or items[0][0] is not _sre.BRANCH:
        return ()
    branches = items[0][1][1]  # (BRANCH, (None, [each alternative's items]))
    runs = tuple(max(_mandatory_runs(list(branch)), key=len, default="") for branch in branches)
    return runs if all(runs) else ()


def _mandatory_runs(items: list) -> list[str]:
    runs: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    for op, av in items:
        if op is _sre.LITERAL:
            current.append(chr(av))
            continue
        flush()
        if op is _sre.SUBPATTERN:
            _group, add_flags, _del_flags, sub = av
            if not add_flags & _sre.SRE_FLAG_IGNORECASE:
                runs.extend(_mandatory_runs(list(sub)))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)):
            low, _high, sub = av
            if low >= 1:
                runs.extend(_mandatory_runs(list(sub)))
        elif op is getattr(_sre, "ATOMIC_GROUP", None):
            runs.extend(_mandatory_runs(list(av)))
    flush()
    return runs


def compile_pattern(source: str, eager: bool = True, required: str | None = None) -> Pattern:
    """A built-in Pattern (the stdlib engine, linear by the test suite's check); `eager` compiles
    now (raising on a bad regex), else on first use. `required`: its `required_literal`, if known."""
    return Pattern(source, None, regexes.compile(source) if eager else None, required=required)


class RefusedPattern(ValueError):
    """A user pattern that no time limit could stop (no `regex` installed) is super-linear."""


def compile_user_pattern(source: str) -> Pattern:
    """A user's Pattern, compiled now (raising on a bad regex or, without time limits, on a
    super-linear one: RefusedPattern). With `regex` it searches under a time limit;
    without, only the first USER_TEXT_LIMIT characters of a text."""
    engine, timed = user_engine()
    compiled = engine.compile(source)
    if timed:
        return Pattern(source, USER_REGEX_TIMEOUT, compiled)
    if (why := refusal(source)) is not None:
        raise RefusedPattern(why)
    return Pattern(source, None, compiled, limit=USER_TEXT_LIMIT)


@dataclass(frozen=True)
class Marker:
    """A line the scanner recognises: a symptom, fault, signal, phase, precursor ..."""

    kind: str
    id: str
    literal: str
    pattern: Pattern
    title: str = ""
    phase: str = ""
    wrapper: bool = False  # symptom: an exception of this text never is the cause
    explanation: str = ""
    after_death_only: bool = False
    last_resort: bool = False  # survived: still the root when nothing else explains the death
    promote: str = ""  # precursor: the capture naming what failed; a fatal error naming it follows from it
    # precursor with `promote`: a fatal error this matches does not follow from it, though it names
    # what failed (it shows that thing is there)
    promote_unless: Pattern | None = None
    reason: Pattern | None = None  # headline: the message line that states the cause
    above: int = 0  # headline: the reason may also stand this many lines above (words over a code)
    # precursor: a fatal error this matches only reports a failure whose details this line states
    # (`NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)` → `NCCL WARN …`)
    details_for: Pattern | None = None
    offset: int = 0  # run_start: the run starts this many lines after the marker
    # precursor: a report that processes made no progress for its `seconds`; a run whose last lines
    # repeat it for minutes, with nothing progressing, ended hung (`incidents.hangs_at_end`)
    hang: bool = False
    # hang precursor: its `seconds` are the whole wait so far (each report's count grows), not the
    # time since the report before
    elapsed: bool = False
    # precursor: a report that start-up waits for what it cannot get (a placement group Ray cannot
    # place); a stop after it, with no progress between, came during that wait, which is the cause
    # (`incidents._promote_wait`)
    stalls: bool = False


@dataclass(frozen=True)
class Rule:
    """A cause: how to recognise it, what it means, and what to do.

    `title` may name captures (`{device} OOM while loading the weights`): `title_for` fills them
    from a finding's evidence; `title` itself reads with their defaults (`TITLE_DEFAULTS`).
    """

    id: str
    title: str
    family: str
    match: tuple[Pattern, ...]
    summary: str = ""
    explanation: str = ""
    message: str = ""
    frames: tuple[Pattern, ...] = ()
    context: tuple[Pattern, ...] = ()
    phases: tuple[str, ...] = ()
    # Phases that stand in for `frames` when none matches (a one-line paste keeps no frames).
    frames_or_phases: tuple[str, ...] = ()
    evidence: tuple[Pattern, ...] = ()
    fixes: tuple[Fix, ...] = ()
    samples: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    vllm_messages: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    # What the samples need besides their text (tests feed them to `classify`): frames of the
    # traceback, lines near the root, the crash phase.
    sample_frames: tuple[str, ...] = ()
    sample_context: tuple[str, ...] = ()
    sample_phase: str = ""
    source: str = ""  # file:line where the rule is defined
    title_template: str = ""  # the title with its capture placeholders, when it has any

    def title_for(self, evidence: dict[str, str], platform: str | None = None) -> str:
        """The title with its placeholders filled from evidence, else from the run's `platform`
        (the device it ran on: `cuda`, `rocm`, `npu` …), else their defaults.

        An error that says "CUDA" on a platform whose torch backend answers to the CUDA API
        (`CUDA_API_PLATFORMS`) names the API, not the device: the platform names the device."""
        if not self.title_template:
            return self.title
        values = dict(TITLE_DEFAULTS)
        ran_on = display_value("device", platform) if platform else None
        if ran_on:
            values["device"] = ran_on
        values.update({k: display_value(k, v) for k, v in evidence.items()})
        if ran_on in CUDA_API_PLATFORMS and values.get("device") == "CUDA":
            values["device"] = ran_on
        return fill_placeholders(self.title_template, values) or self.title

    def fixes_for(self, version: tuple[int, ...] | None) -> tuple[Fix, ...]:
        return tuple(f for f in self.fixes if in_range(version, f.versions))


@dataclass
class Catalog:
    """Rules in priority order (user files first) and the scanner's markers.

    Built-in rule files are parsed when a rule is first needed, one file at a time in priority
    order: classifying a crash usually stops in the first files, and a healthy log needs none.
    One that does not load raises `BrokenBuiltinFile` when it is reached.
    """

    markers: dict[str, list[Marker]] = field(default_factory=dict)
    errors: list[CatalogError] = field(default_factory=list)
    warnings: list[CatalogError] = field(default_factory=list)  # rules that load but may mislead
    _rules: list[Rule] = field(default_factory=list)
    # Built-in rule files not parsed yet: (name, text, whether the cache may hold its parse).
    _pending: list[tuple[str, FileText, bool]] = field(default_factory=list)
    # The language server classifies in several threads; files must be added in priority order.
    _lock: LockType = field(default_factory=allocate_lock, repr=False, compare=False)
    # Frame text -> the phases its `phase_frame` markers tell (see `frame_phases`).
    _frame_phases: dict[str, tuple[str | None, str | None]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def rules(self) -> list[Rule]:
        """Every rule (parses the remaining built-in files)."""
        while self._pending:
            self._parse_next()
        return self._rules

    def iter_rules(self) -> Iterator[Rule]:
        """Rules in priority order, parsing built-in files only as far as the caller reads."""
        index = 0
        while True:
            while index < len(self._rules):
                yield self._rules[index]
                index += 1
            if not self._pending:
                return
            self._parse_next()

    def _parse_next(self) -> None:
        with self._lock:
            if not self._pending:
                return  # another thread parsed the last file meanwhile
            where, text, cached = self._pending[0]
            rules, _, errors = load_rule_text(_text(text), where, cached=cached)
            if errors:  # (left pending: every later analysis says so too)
                raise BrokenBuiltinFile(errors)
            self._rules.extend(rules)
            del self._pending[0]

    def markers_of(self, kind: str) -> list[Marker]:
        return self.markers.get(kind, [])

    def frame_phases(self, frame: str) -> tuple[str | None, str | None]:
        """The phase of the first `phase_frame` marker other than serving's that matches `frame`
        (`path:function`), and the serving marker's, or None each.

        Remembered per frame text: every death of a restart loop, every copy of a traceback
        shows the same frames, and each would otherwise be searched by every marker again.
        """
        found = self._frame_phases.get(frame)
        if found is None:
            markers = self.markers_of("phase_frame")
            other = next((m.phase for m in markers if m.phase != "serving" and m.pattern.search(frame)), None)
            serving = next(
                (m.phase for m in markers if m.phase == "serving" and m.pattern.search(frame)), None
            )
            if len(self._frame_phases) >= _MAX_REMEMBERED_FRAMES:
                self._frame_phases.clear()  # a bound for a long-running server; cheap to refill
            found = self._frame_phases[frame] = (other, serving)
        return found

    def rule(self, rule_id: str) -> Rule | None:
        return next((r for r in self.iter_rules() if r.id == rule_id), None)


class RuleMatches:
    """The rules whose `match` patterns find a text, in priority order, each with its first match;
    remembered per text for one analysis (not shared between threads).

    A restart loop's deaths repeat the same root causes, and the rules of a family share its
    signature's patterns: each distinct pattern is searched once per text, and the rules are
    tried only as far as a caller reads (built-in files are parsed as they are reached)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._texts: dict[str, _TextMatches] = {}
        # `classify.classify`'s results by its inputs: a restart loop's deaths repeat them all.
        self.classified: dict[tuple[object, ...], tuple[Rule | None, dict[str, str]]] = {}

    def matching(self, text: str) -> Iterator[tuple[Rule, Any]]:
        """(rule, first match of its `match` patterns) for every rule that finds `text`, in order."""
        state = self._texts.get(text)
        if state is None:
            state = self._texts[text] = _TextMatches(self.catalog.iter_rules())
        taken = 0
        while True:
            if taken < len(state.found):
                yield state.found[taken]
                taken += 1
            elif not state.extend(text):
                return


class _TextMatches:
    """The rules found so far for one text, the rules not tried yet, and each pattern's result."""

    def __init__(self, untried: Iterator[Rule]) -> None:
        self.found: list[tuple[Rule, Any]] = []
        self.untried: Iterator[Rule] | None = untried
        self.searched: dict[tuple[str, float | None, int | None], Any] = {}

    def extend(self, text: str) -> bool:
        """Try rules until one more finds `text`; False when none is left."""
        for rule in self.untried or ():
            found = self._first_match(rule, text)
            if found:
                self.found.append((rule, found))
                return True
        self.untried = None
        return False

    def _first_match(self, rule: Rule, text: str) -> Any:
        for pattern in rule.match:
            if pattern.required not in text:
                continue  # (no match can lack it: as `Pattern.search` decides, without remembering)
            key = (pattern.source, pattern.timeout, pattern.limit)  # the same regex, searched alike
            if key not in self.searched:
                self.searched[key] = pattern.search(text)
            if self.searched[key]:
                return self.searched[key]
        return None


#: Platforms whose PyTorch backend is reached through `torch.cuda` (ROCm's HIP build; torch_npu's
#: `transfer_to_npu`), so their errors may say "CUDA" for the API while the device is theirs.
CUDA_API_PLATFORMS = frozenset({"ROCm", "NPU"})

#: What a title placeholder reads as when the log did not say (and in `rules` listings).
TITLE_DEFAULTS = {"device": "GPU"}

# A device as its runtime or allocator names it -> the platform's name, for titles.
_DEVICE_NAMES = {
    "cuda": "CUDA",
    "nvml": "CUDA",
    "cublas": "CUDA",
    "cudnn": "CUDA",
    "hip": "ROCm",
    "hsa": "ROCm",
    "rocm": "ROCm",
    "npu": "NPU",
    "acl": "NPU",
    "ascend": "NPU",  # vllm-ascend's platform plugin
    "xpu": "XPU",
    "ur": "XPU",  # Intel's Unified Runtime (UR_RESULT_ERROR_...)
    "cpu": "CPU",
    "tpu": "TPU",
    "xla": "TPU",
    "hpu": "HPU",
    "neuron": "Neuron",
    "mps": "MPS",
}


def display_value(name: str, value: str) -> str:
    """A capture as a title shows it: devices by their platform's name."""
    if name == "device":
        return _DEVICE_NAMES.get(value.lower(), value)
    return value


# Adjacent placeholders (`{url}{repo}`) name alternative captures of one value: the rule's
# patterns capture it under either name, so the ones present are used and the others read empty.
_ALTERNATIVES = regexes.compile(r"(?:\{\w+\}){2,}")


def fill_placeholders(template: str, values: dict[str, str]) -> str | None:
    """`template` with `{name}` placeholders filled; None when one (or every one of a run of
    alternatives) has no value."""

    def alternatives(run: stdlib_re.Match[str]) -> str:
        present = "".join(values.get(name) or "" for name in stdlib_re.findall(r"\{(\w+)\}", run.group(0)))
        if not present:
            raise KeyError(run.group(0))
        return present.replace("{", "{{").replace("}", "}}")

    try:
        return _ALTERNATIVES.sub(alternatives, template).format_map(values)
    except (KeyError, IndexError, ValueError):
        return None


MARKER_KINDS = (
    "symptom",
    "wrapper",
    "fault",
    "signal",
    "decoy",
    "survived",
    "headline",
    "phase",
    "phase_frame",
    "run_start",
    "healthy",
    "precursor",
    "context",
)


# -- loading ------------------------------------------------------------------------------------
def _line_of(text: str, needle: str) -> int | None:
    """Best-effort line number of a TOML entry (tomllib keeps no positions)."""
    pos = text.find(needle)
    if pos < 0:
        return None
    global _LINE_CURSOR
    known, at, line = _LINE_CURSOR
    if known is not text or pos < at:  # another text, or behind: count from its start
        at, line = 0, 1
    line += text.count("\n", at, pos)
    _LINE_CURSOR = (text, pos, line)
    return line


# Where `_line_of` last counted to in which text: a file's entries are looked up in file order, so
# each is counted on from the one before (one pass over the file, not one per entry).
_LINE_CURSOR: tuple[str | None, int, int] = (None, 0, 1)


def _compile_all(
    sources: Any, where: str, line: int | None, timeout: float, errors: list[CatalogError]
) -> tuple[Pattern, ...]:
    if sources is None:
        return ()
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        errors.append(CatalogError(where, line, "patterns must be a string or a list of strings"))
        return ()
    patterns = []
    user = timeout == USER_REGEX_TIMEOUT
    for source in sources:
        if not user:  # checked by the test suite; compiled on first use
            patterns.append(compile_pattern(source, eager=False, required=_REQUIRED.get(source)))
            continue
        try:
            patterns.append(compile_user_pattern(source))
        except RefusedPattern as err:  # no time limit would stop it (no `regex` installed)
            errors.append(CatalogError(where, line, f"regex {source!r} refused without `regex`: {err}"))
        except Exception as err:  # regex.error / re.error
            errors.append(CatalogError(where, line, f"regex {source!r} does not compile: {err}"))
    return tuple(patterns)


def _value_spec(raw: dict[str, Any]) -> ValueSpec | None:
    keys = ("value", "capture", "base_capture", "derive", "default", "minimum", "maximum")
    if not any(k in raw for k in keys):
        return None
    literal = raw.get("value")
    return ValueSpec(
        literal=None if literal is None else str(literal),
        capture=raw.get("capture"),
        base_capture=raw.get("base_capture"),
        derive=raw.get("derive"),
        default=None if raw.get("default") is None else str(raw.get("default")),
        minimum=raw.get("minimum"),
        maximum=raw.get("maximum"),
    )


_OPS = {"add_flag", "set_flag", "merge_json", "set_env"}
_FIX_KINDS = {"workaround", "fix", "upgrade", "diagnose", "config"}
_DERIVES = {None, "halve", "step_down", "step_up"}


def _parse_fix(raw: dict[str, Any], where: str, line: int | None) -> Fix:
    ops = []
    for op in raw.get("ops", []):
        kind = op.get("op")
        if kind not in _OPS:
            raise CatalogError(where, line, f"fix op must be one of {sorted(_OPS)}, not {kind!r}")
        if op.get("derive") not in _DERIVES:
            raise CatalogError(where, line, f"unknown derive {op.get('derive')!r}")
        name = str(op.get("name", ""))
        if not name:
            raise CatalogError(where, line, "fix op needs a name")
        if kind != "set_env" and not name.startswith("-"):
            raise CatalogError(where, line, f"flag {name!r} must start with '-'")
        ops.append(FixOp(op=kind, name=name, value=_value_spec(op), key=op.get("key")))
    kind = raw.get("kind", "workaround")
    if kind not in _FIX_KINDS:
        raise CatalogError(where, line, f"fix kind must be one of {sorted(_FIX_KINDS)}")
    versions = str(raw.get("versions", ""))
    try:  # check the spec's syntax now rather than when a log is analysed
        in_range((0, 0, 0), versions)
    except ValueError as err:
        raise CatalogError(where, line, str(err)) from None
    if not raw.get("title"):
        raise CatalogError(where, line, "fix needs a title")
    return Fix(
        title=raw["title"],
        kind=kind,
        ops=tuple(ops),
        detail=raw.get("detail", ""),
        versions=versions,
        references=tuple(raw.get("references", ())),
        unless_stack=bool(raw.get("unless_stack", False)),
    )


def _with_signatures(
    raw: dict[str, Any], signatures: dict[str, Any], where: str, line: int | None, errors: list[CatalogError]
) -> dict[str, Any] | None:
    """The rule with the match and evidence patterns of the signatures it names appended."""
    names = raw.get("signatures", [])
    if not names:
        return raw
    raw = dict(raw)
    for name in [names] if isinstance(names, str) else names:
        shared = signatures.get(name)
        if not isinstance(shared, dict):
            errors.append(
                CatalogError(where, line, f"rule {raw.get('id')!r}: no signature {name!r} in this file")
            )
            return None
        for key in ("match", "evidence"):
            own = raw.get(key, [])
            raw[key] = ([own] if isinstance(own, str) else list(own)) + list(shared.get(key, []))
    return raw


def _parse_rule(
    raw: dict[str, Any],
    where: str,
    text: str,
    timeout: float,
    errors: list[CatalogError],
    signatures: dict[str, Any] | None = None,
) -> Rule | None:
    rule_id = raw.get("id")
    line = _line_of(text, f'"{rule_id}"') if rule_id else None
    if not rule_id or not isinstance(rule_id, str):
        errors.append(CatalogError(where, line, "rule without an id"))
        return None
    with_shared = _with_signatures(raw, signatures or {}, where, line, errors)
    if with_shared is None:
        return None
    raw = with_shared
    for key in ("title", "family", "match"):
        if not raw.get(key):
            errors.append(CatalogError(where, line, f"rule {rule_id!r} has no {key}"))
            return None
    if raw["family"] not in FAMILIES:
        errors.append(CatalogError(where, line, f"rule {rule_id!r}: unknown family {raw['family']!r}"))
        return None
    phases = raw.get("phases", ())
    for key in ("phases", "frames_or_phases", "sample_phase"):
        value = raw.get(key, ())
        for phase in [value] if isinstance(value, str) else value:
            if phase not in PHASES and phase != UNKNOWN_PHASE:
                errors.append(CatalogError(where, line, f"rule {rule_id!r}: unknown phase {phase!r}"))
                return None
    before = len(errors)
    match = _compile_all(raw.get("match"), where, line, timeout, errors)
    frames = _compile_all(raw.get("frames"), where, line, timeout, errors)
    context = _compile_all(raw.get("context"), where, line, timeout, errors)
    evidence = _compile_all(raw.get("evidence"), where, line, timeout, errors)
    if len(errors) > before or not match:
        return None
    try:
        fixes = tuple(_parse_fix(f, where, line) for f in raw.get("fix", []))
    except CatalogError as err:
        errors.append(CatalogError(where, line, f"rule {rule_id!r}: {err.message}"))
        return None
    template = raw["title"] if "{" in raw["title"] else ""
    title = fill_placeholders(template, TITLE_DEFAULTS) if template else raw["title"]
    if title is None:
        errors.append(
            CatalogError(
                where, line, f"rule {rule_id!r}: title placeholders must be {sorted(TITLE_DEFAULTS)}"
            )
        )
        return None
    return Rule(
        id=rule_id,
        title=title,
        title_template=template,
        family=raw["family"],
        match=match,
        summary=raw.get("summary", ""),
        explanation=raw.get("explanation", "").strip(),
        message=raw.get("message", ""),
        frames=frames,
        context=context,
        phases=tuple(phases),
        frames_or_phases=tuple(raw.get("frames_or_phases", ())),
        evidence=evidence,
        fixes=fixes,
        samples=tuple(raw.get("samples", ())),
        references=tuple(raw.get("references", ())),
        vllm_messages=tuple(raw.get("vllm_messages", ())),
        next_steps=tuple(raw.get("next_steps", ())),
        sample_frames=tuple(raw.get("sample_frames", ())),
        sample_context=tuple(raw.get("sample_context", ())),
        sample_phase=str(raw.get("sample_phase", "")),
        source=f"{where}:{line}" if line else where,
    )


def _parse_markers(
    data: dict[str, Any], where: str, text: str, errors: list[CatalogError]
) -> dict[str, list[Marker]]:
    markers: dict[str, list[Marker]] = {}
    for kind in MARKER_KINDS:
        for raw in data.get(kind, []):
            marker_id = raw.get("id", "")
            line = _line_of(text, f'"{marker_id}"') if marker_id else None
            literal, source = raw.get("literal"), raw.get("pattern")
            if not literal or not source:
                errors.append(CatalogError(where, line, f"{kind} {marker_id!r} needs literal and pattern"))
                continue
            patterns = _compile_all(source, where, line, BUILTIN_REGEX_TIMEOUT, errors)
            if not patterns:
                continue
            reason = raw.get("reason")
            reasons = _compile_all(reason, where, line, BUILTIN_REGEX_TIMEOUT, errors) if reason else []
            details = raw.get("details_for")
            defers = _compile_all(details, where, line, BUILTIN_REGEX_TIMEOUT, errors) if details else []
            unless = raw.get("promote_unless")
            exceptions = _compile_all(unless, where, line, BUILTIN_REGEX_TIMEOUT, errors) if unless else []
            markers.setdefault(kind, []).append(
                Marker(
                    kind=kind,
                    id=marker_id,
                    literal=literal,
                    pattern=patterns[0],
                    title=raw.get("title", ""),
                    phase=raw.get("phase", ""),
                    wrapper=bool(raw.get("wrapper", False)),
                    explanation=raw.get("explanation", "").strip(),
                    after_death_only=bool(raw.get("after_death_only", False)),
                    last_resort=bool(raw.get("last_resort", False)),
                    promote=str(raw.get("promote", "")),
                    reason=reasons[0] if reasons else None,
                    details_for=defers[0] if defers else None,
                    promote_unless=exceptions[0] if exceptions else None,
                    above=int(raw.get("above", 0)),
                    offset=int(raw.get("offset", 0)),
                    hang=bool(raw.get("hang", False)),
                    elapsed=bool(raw.get("elapsed", False)),
                    stalls=bool(raw.get("stalls", False)),
                )
            )
    return markers


# -- what a user rule file may hold (unknown keys are mistakes: `sampels`, `[[rule.fixes]]`) -----
USER_FILE_KEYS = frozenset({"rule", "signature"})
RULE_KEYS = frozenset(
    {
        "id", "title", "family", "match", "summary", "explanation", "message", "frames", "context",
        "phases", "frames_or_phases", "evidence", "fix", "samples", "references", "vllm_messages",
        "next_steps", "sample_frames", "sample_context", "sample_phase", "signatures",
    }
)  # fmt: skip
FIX_KEYS = frozenset({"title", "kind", "ops", "detail", "versions", "references", "unless_stack"})
OP_KEYS = frozenset(
    {"op", "name", "key", "value", "capture", "base_capture", "derive", "default", "minimum", "maximum"}
)
SIGNATURE_KEYS = frozenset({"match", "evidence"})


def _key_line(text: str, key: str, after: int | None) -> int | None:
    """Line of `key = ...` (also inside an inline table) or `[[rule.key]]`, first at or after line
    `after`; else the first anywhere; else `after`."""
    pattern = stdlib_re.compile(rf"(?:^|[\s{{,.\[])\"?{stdlib_re.escape(key)}\"?[ \t]*(?:=|\]\]?)")
    lines = text.split("\n")
    start = max((after or 1) - 1, 0)
    for number in [*range(start, len(lines)), *range(start)]:
        if pattern.search(lines[number]):
            return number + 1
    return after


def _unknown(
    table: Any, allowed: frozenset[str], what: str, text: str, where: str, line: int | None
) -> list[CatalogError]:
    if not isinstance(table, dict):
        return []
    expected = ", ".join(sorted(allowed))
    return [
        CatalogError(
            where, _key_line(text, key, line), f"unknown key {key!r} in {what} (expected one of: {expected})"
        )
        for key in table
        if key not in allowed
    ]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def file_unknown_keys(data: dict[str, Any], text: str, where: str) -> list[CatalogError]:
    """Unknown top-level and signature keys of a user rule file, each with its file:line."""
    errors = _unknown(data, USER_FILE_KEYS, "the file", text, where, None)
    signatures = data.get("signature")
    for name, signature in signatures.items() if isinstance(signatures, dict) else ():
        line = _line_of(text, f"[signature.{name}]")
        errors += _unknown(signature, SIGNATURE_KEYS, f"signature {name!r}", text, where, line)
    return errors


def rule_unknown_keys(raw: dict[str, Any], text: str, where: str) -> list[CatalogError]:
    """Unknown keys of one [[rule]], its [[rule.fix]] tables and their ops."""
    rule_id = raw.get("id")
    line = _line_of(text, f'"{rule_id}"') if rule_id else None
    errors = _unknown(raw, RULE_KEYS, f"rule {rule_id!r}", text, where, line)
    for fix in _as_list(raw.get("fix")):
        errors += _unknown(fix, FIX_KEYS, f"a fix of rule {rule_id!r}", text, where, line)
        for op in _as_list(fix.get("ops")) if isinstance(fix, dict) else []:
            errors += _unknown(op, OP_KEYS, f"a fix op of rule {rule_id!r}", text, where, line)
    return errors


def _own_samples_fail(rule: Rule, where: str) -> CatalogError | None:
    """A user rule whose own samples its `match` patterns do not find is wrong: say which."""
    _, _, line = rule.source.rpartition(":")
    for number, sample in enumerate(rule.samples, 1):
        if not any(p.search(sample) for p in rule.match):
            message = (
                f"rule {rule.id!r}: sample {number} does not match its `match` patterns: {sample[:120]!r}"
            )
            return CatalogError(where, int(line) if line.isdigit() else None, message)
    return None


def load_rule_text(
    text: str, where: str, *, user: bool = False, cached: bool = False
) -> tuple[list[Rule], dict[str, list[Marker]], list[CatalogError]]:
    """Parse one rule file's text (`cached`: a built-in file, whose parse, patterns' literals and
    programs the cache may hold). Never raises: problems come back as CatalogErrors."""
    if cached:
        _learn_patterns(where, text)
    return _load_rule_text(text, where, user, cached)


def _load_rule_text(
    text: str, where: str, user: bool, cached: bool
) -> tuple[list[Rule], dict[str, list[Marker]], list[CatalogError]]:
    errors: list[CatalogError] = []
    try:
        data = datacache.toml_data(where, text) if cached else datacache.parse_toml(text)
    except ValueError as err:  # tomllib.TOMLDecodeError
        line = getattr(err, "lineno", None)
        if line is None:
            found = stdlib_re.search(r"at line (\d+)", str(err))
            line = int(found.group(1)) if found else None
        return [], {}, [CatalogError(where, line, f"invalid TOML: {err}")]
    timeout = USER_REGEX_TIMEOUT if user else BUILTIN_REGEX_TIMEOUT
    rules = []
    if user:
        errors.extend(file_unknown_keys(data, text, where))
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        return [], {}, [CatalogError(where, None, "`rule` must be an array of tables ([[rule]])")]
    signatures = data.get("signature", {})
    if not isinstance(signatures, dict):
        return [], {}, [CatalogError(where, None, "`signature` must be a table of tables ([signature.NAME])")]
    for raw in raw_rules:
        if not isinstance(raw, dict):
            errors.append(CatalogError(where, None, "each [[rule]] must be a table"))
            continue
        # A user rule with a misspelt key, or with a sample its own patterns miss, would silently do
        # something else than its author meant: it is rejected (as lnav does for its formats).
        if user and (misspelt := rule_unknown_keys(raw, text, where)):
            errors.extend(misspelt)
            continue
        rule = _parse_rule(raw, where, text, timeout, errors, signatures)
        if rule and user and (failed := _own_samples_fail(rule, where)) is not None:
            errors.append(failed)
            continue
        if rule:
            rules.append(rule)
    markers = {} if user else _parse_markers(data, where, text, errors)
    return rules, markers, errors


#: The built-in file that holds the scanner's markers (the others hold only rules).
MARKERS_FILE = "markers.toml"

# The catalog ships as files next to the package (also in the VS Code bundle); a plain path is
# enough, and importlib.resources (or pathlib) would cost the CLI's start-up a noticeable share.
CATALOG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "catalog")


#: A built-in file's text, or what reads it.
FileText = str | Callable[[], str]


def _builtin_files() -> list[tuple[str, FileText]]:
    """The built-in files, each with what reads its text: a rule file is read when it is reached
    (a short log's check reaches one or two of them)."""
    names = sorted(name for name in os.listdir(CATALOG_DIR) if name.endswith(".toml"))
    return [(f"catalog/{name}", partial(datacache.package_text, f"catalog/{name}")) for name in names]


def _text(text: FileText) -> str:
    return text if isinstance(text, str) else text()


_BUILTIN: Catalog | None = None


def builtin_catalog() -> Catalog:
    """The shipped catalog (loaded once; its parse cached per version, see `datacache`)."""
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = build_catalog(_builtin_files(), [], cached=True)
    return _BUILTIN


#: The literal each built-in pattern requires (`required_literal`), kept in the cache: finding it
#: parses the regex, which costs about as much as compiling it. Filled by `_learn_patterns`.
_REQUIRED: dict[str, str] = {}


def build_catalog(
    builtin: Iterable[tuple[str, FileText]], user: Iterable[tuple[str, str]], *, cached: bool = False
) -> Catalog:
    """A catalog from (name, text) pairs: user rules first, then built-in rules in file order (a
    built-in file's text may come as what reads it, called when the file is reached).

    `cached`: the built-in pairs are the package's own files, whose parse (and their patterns'
    required literals and programs) `datacache` keeps, file by file as they are parsed."""
    catalog = Catalog()
    user_rules: list[Rule] = []
    for where, text in user:
        rules, _, errors = load_rule_text(text, where, user=True)
        user_rules.extend(rules)
        catalog.errors.extend(errors)
    catalog._rules = user_rules
    for where, builtin_text in builtin:
        if not where.endswith(MARKERS_FILE):
            catalog._pending.append((where, builtin_text, cached))  # parsed when a rule is needed
            continue
        rules, markers, errors = load_rule_text(_text(builtin_text), where, cached=cached)
        catalog._rules.extend(rules)
        catalog.errors.extend(errors)
        for kind, items in markers.items():
            catalog.markers.setdefault(kind, []).extend(items)
    return catalog


def _learn_patterns(where: str, text: str) -> None:
    """Fill `_REQUIRED` and `_PROGRAMS` for built-in file `where` from the cache; when the cache
    does not know the file (a new version, an edited catalog), parse it, derive both for its
    patterns and save them."""
    # The code that derives them: this module (a source checkout changes it) and the engine's.
    code = [*datacache.stamp(__file__), *datacache.stamp(regexes.__file__), sys.hexversion, _sre.MAGIC]
    known = datacache.derived("patterns", code, where, text)
    if known is None:
        rules, markers, _ = _load_rule_text(text, where, False, True)
        known = {p.source: [p.required, regexes.sre_program(p.source)] for p in _patterns_of(rules, markers)}
        datacache.keep_derived("patterns", code, where, text, known)
        datacache.save()
    for source, (required, program) in known.items():
        _REQUIRED[source] = required
        if program is not None:
            _PROGRAMS[source] = program


def _patterns_of(rules: list[Rule], markers: dict[str, list[Marker]]) -> Iterator[Pattern]:
    for rule in rules:
        yield from (*rule.match, *rule.frames, *rule.context, *rule.evidence)
    for marker in (m for kind in markers.values() for m in kind):
        patterns = (marker.pattern, marker.reason, marker.details_for, marker.promote_unless)
        yield from (p for p in patterns if p is not None)


def catalog_with_user_files(paths: Iterable[str | Path]) -> Catalog:
    """The built-in catalog plus user rule files; unreadable files become errors.

    Only regular files of at most MAX_RULE_FILE_BYTES are read (a FIFO would block forever,
    `/dev/zero` never ends, `/dev/stdin` is the language server's own protocol stream).
    """
    user: list[tuple[str, str]] = []
    errors: list[CatalogError] = []
    for path in paths:
        try:
            user.append((str(path), read_regular_text(str(path), MAX_RULE_FILE_BYTES)))
        except (OSError, LogReadError) as err:
            errors.append(CatalogError(str(path), None, f"cannot read rule file: {err}"))
    catalog = build_catalog(_builtin_files(), user, cached=True)
    catalog.errors[:0] = errors
    catalog.warnings.extend(broad_rule_warnings(catalog))
    return catalog


#: User rules checked against the built-in samples (the check costs rules x samples searches).
BROAD_CHECK_RULES = 200


def broad_rule_warnings(catalog: Catalog) -> list[CatalogError]:
    """A user rule that matches the samples of built-in causes other than the one it replaces
    (same id) takes those crashes from them: `match = ['Error']` hides every built-in diagnosis."""
    rules = catalog.rules
    builtin = [r for r in rules if r.source.startswith("catalog/")]
    user = [r for r in rules if not r.source.startswith("catalog/")][:BROAD_CHECK_RULES]
    warnings = []
    for rule in user:
        taken = sorted(
            {
                b.id
                for b in builtin
                if b.id != rule.id and any(p.search(x) for p in rule.match for x in b.samples)
            }
        )
        if taken:
            where, _, line = rule.source.rpartition(":")
            shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
            message = (
                f"rule {rule.id!r} also matches the samples of {len(taken)} built-in cause(s) ({shown}): "
                "it is tried first and takes those crashes; narrow its `match`, or give it the id of "
                "the built-in cause it replaces"
            )
            warnings.append(
                CatalogError(where or rule.source, int(line) if line.isdigit() else None, message)
            )
    return warnings
