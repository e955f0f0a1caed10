#!/usr/bin/env python3
"""Generate the vLLM log TextMate grammars from one readable source.

    python3 grammars/build_grammars.py          # (re)write both JSON grammars
    python3 grammars/build_grammars.py --check  # exit 1 if the committed JSON is stale

Outputs (committed, consumed by VS Code / vscode-tmgrammar-test):
  grammars/vllm-log.tmLanguage.json            scope text.log.vllm
  grammars/vllm-log-injection.tmLanguage.json  scope vllm-log.injection, injected into text.log

Design
------
* Every token scope is a pair "<generic>.vllm <specific>.log.vllm": the generic half is a standard
  TextMate scope that every theme colours (invalid.illegal, comment.line, entity.name.function, ...),
  the specific half is what users target in editor.tokenColorCustomizations.
* A line is a chain of prefixes: outer runtime prefix(es) (compose, CRI, journalctl, markdown, ...),
  then process prefix(es) ((EngineCore_DP0 pid=1), nested Ray ones), then one logger header
  (vLLM's "LEVEL MM-DD HH:MM:SS [file.py:N]", uvicorn, glog, ...), then the message. Each prefix
  is a begin/end rule whose begin is anchored at the line start, at \\G (the end of the enclosing
  prefix) or right after a bare CR (a tqdm redraw), and whose end is the end of the line or the next
  bare CR. So only a real prefix chain is ever recognised as one, and each link costs one anchored
  attempt.
* Everything is linear: anchored prefixes, possessive/bounded repeats, no nested quantifiers over
  overlapping classes, so 100k-character lines stay cheap.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAIN_PATH = HERE / "vllm-log.tmLanguage.json"
INJECTION_PATH = HERE / "vllm-log-injection.tmLanguage.json"


def sc(generic: str, specific: str) -> str:
    """A scope pair: a generic theme scope and a specific vLLM one."""
    return f"{generic}.vllm {specific}.log.vllm"


# ----------------------------------------------------------------------------------------------
# Scopes
# ----------------------------------------------------------------------------------------------
S = {
    # levels
    "DEBUG": sc("comment.line.level.debug", "markup.debug"),
    "INFO": sc("comment.line.level.info", "markup.info"),
    "WARNING": sc("markup.changed.level.warning", "markup.warning"),
    "ERROR": sc("invalid.illegal.level.error", "markup.error"),
    "CRITICAL": sc("invalid.illegal.level.critical.vllm markup.bold.level.critical", "markup.critical"),
    # time and place
    "timestamp": sc("comment.line.timestamp", "timestamp"),
    "source-file": sc("comment.line.source.file", "logger.file"),
    "source-line": sc("comment.line.source.line", "logger.line"),
    "source-punct": sc("comment.line.punctuation.source", "logger.punctuation"),
    # outer runtime prefixes
    "runtime-service": sc("comment.line.runtime.service", "runtime.service"),
    "runtime-host": sc("comment.line.runtime.host", "runtime.host"),
    "runtime-unit": sc("comment.line.runtime.unit", "runtime.unit"),
    "runtime-pid": sc("comment.line.runtime.pid", "runtime.pid"),
    "runtime-stream": sc("comment.line.runtime.stream", "runtime.stream"),
    "runtime-line-number": sc("comment.line.runtime.line-number", "runtime.line-number"),
    "runtime-punct": sc("comment.line.punctuation.runtime", "runtime.punctuation"),
    "quote": sc("comment.line.quote.markdown", "markdown.quote"),
    "blob": sc("comment.line.runtime.blob", "runtime.blob"),
    # process prefixes
    "process-name": sc("comment.line.process.name", "process.name"),
    "process-key": sc("comment.line.process.key", "process.key"),
    "process-pid": sc("comment.line.process.pid", "process.pid"),
    "process-ip": sc("comment.line.process.ip", "process.ip"),
    "process-punct": sc("comment.line.punctuation.process", "process.punctuation"),
    "rank": sc("comment.line.process.rank", "process.rank"),
    "tag": sc("comment.line.writer.tag", "writer.tag"),
    # tracebacks
    "traceback-header": sc("markup.heading.traceback", "traceback.header"),
    "traceback-chain": sc("markup.heading.traceback.chain", "traceback.chain"),
    "traceback-process": sc("markup.heading.traceback.process", "traceback.process"),
    "frame-keyword": sc("keyword.other.frame", "traceback.keyword"),
    "frame-path": sc("variable.other.frame.path", "traceback.path"),
    "frame-line": sc("constant.numeric.frame.line", "traceback.line"),
    "frame-function": sc("entity.name.function.frame", "traceback.function"),
    "frame-punct": sc("punctuation.separator.frame", "traceback.punctuation"),
    "caret": sc("comment.line.caret", "traceback.caret"),
    "elided": sc("comment.line.elided", "traceback.elided"),
    "exception-type": sc("entity.name.type.class.exception", "exception.type"),
    "exception-punct": sc("punctuation.separator.exception", "exception.punctuation"),
    "exception-message": sc("markup.bold.exception.message", "exception.message"),
    "warning-category": sc("markup.changed.warning.category", "warning.category"),
    "native-frame": sc("comment.line.native-frame.number", "native.frame"),
    "native-address": sc("constant.numeric.native-frame.address", "native.address"),
    # diagnosis
    "symptom": sc("keyword.control.symptom", "symptom"),
    "fatal": sc("invalid.illegal.fatal", "fatal"),
    "error-code": sc("invalid.illegal.error-code", "error.code"),
    "lifecycle": sc("keyword.other.lifecycle", "lifecycle"),
    "stat-label": sc("variable.other.stat.label", "stats.label"),
    "stat-value": sc("constant.numeric.stat.value", "stats.value"),
    "stat-value-high": sc("invalid.illegal.stat.value.high", "stats.value.high"),
    "stat-unit": sc("keyword.other.unit.stat", "stats.unit"),
    "http-method": sc("keyword.other.http.method", "http.method"),
    "http-path": sc("string.unquoted.http.path", "http.path"),
    "http-ok": sc("markup.inserted.http.status.ok", "http.status.ok"),
    "http-client-error": sc("markup.deleted.http.status.client-error", "http.status.client-error"),
    "http-server-error": sc("invalid.illegal.http.status.server-error", "http.status.server-error"),
    "ray-dedup": sc("comment.line.ray-dedup", "ray.dedup"),
    # generic atoms
    "ansi": sc("comment.other.ansi-escape", "ansi.escape"),
    "cr": sc("comment.other.carriage-return", "carriage-return"),
    "url": sc("markup.underline.link", "url"),
    "number": sc("constant.numeric", "number"),
    "ip": sc("constant.numeric.ip-address", "ip-address"),
    "constant": sc("constant.language", "literal"),
    "string-double": sc("string.quoted.double", "string"),
    "string-single": sc("string.quoted.single", "string"),
}

# ----------------------------------------------------------------------------------------------
# Regex building blocks
# ----------------------------------------------------------------------------------------------
# Start of a prefix-chain link: start of line, end of the enclosing prefix, or after a bare CR.
A = r"(?:^|\G|(?<=\r))"
# End of every prefix rule: end of line, or just before a bare CR (tqdm redraw / CR-joined paste).
END = r"$|(?=\r)"
ANSI_RUN = r"(?:\x1b\[[0-9;]*m)*+"
MAX_OUTER = 3  # e.g. markdown quote > CRI > compose
MAX_PROCESS = 3  # e.g. (EngineCore_DP0 pid=1) (RayWorkerWrapper pid=2, ip=...) [rank0]:
LEVEL_NAMES = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
TIME = r"\d{2}:\d{2}:\d{2}"
# Exception class names: dotted identifier whose last part ends like an exception class.
EXC_TYPE = (
    r"(?:[A-Za-z_]\w*+\.)*+[A-Za-z_]\w*+"
    r"(?<=Error|Exception|Exit|Interrupt|Iteration|Fault|Failure)"
    r"(?:\([\w.]++\))?+"
)


class Rx:
    """Build a regex and its numbered captures together."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.captures: dict[str, dict] = {}
        self.n = 0

    def raw(self, text: str) -> Rx:
        self.parts.append(text)
        return self

    def cap(self, text: str, scope: str | None, patterns: list | None = None) -> Rx:
        self.n += 1
        self.parts.append(f"({text})")
        entry: dict = {}
        if scope:
            entry["name"] = scope
        if patterns:
            entry["patterns"] = patterns
        if entry:
            self.captures[str(self.n)] = entry
        return self

    def ansi(self) -> Rx:
        return self.cap(ANSI_RUN, S["ansi"])

    def alt(self, *choices: tuple[str, str], optional: bool = False) -> Rx:
        """(?:(a)|(b)|...) with one capture (and scope) per alternative."""
        self.parts.append("(?:")
        for i, (text, scope) in enumerate(choices):
            if i:
                self.parts.append("|")
            self.cap(text, scope)
        self.parts.append(")?" if optional else ")")
        return self

    def level(self, optional: bool = False) -> Rx:
        return self.alt(
            ("DEBUG", S["DEBUG"]),
            ("INFO", S["INFO"]),
            ("WARNING|WARN", S["WARNING"]),
            ("ERROR", S["ERROR"]),
            ("CRITICAL|FATAL", S["CRITICAL"]),
            optional=optional,
        )

    @property
    def regex(self) -> str:
        return "".join(self.parts)

    def match(self, comment: str | None = None) -> dict:
        rule: dict = {}
        if comment:
            rule["comment"] = comment
        rule["match"] = self.regex
        if self.captures:
            rule["captures"] = self.captures
        return rule

    def begin(self, patterns: list[dict], comment: str | None = None) -> dict:
        rule: dict = {}
        if comment:
            rule["comment"] = comment
        rule["begin"] = self.regex
        if self.captures:
            rule["beginCaptures"] = self.captures
        rule["end"] = END
        rule["patterns"] = patterns
        return rule


def inc(*names: str) -> list[dict]:
    return [{"include": f"#{n}"} for n in names]


def phrases(words: list[str], scope: str, comment: str) -> dict:
    body = "|".join(words)
    return {"comment": comment, "match": rf"\b(?:{body})(?!\w)", "name": scope}


# ----------------------------------------------------------------------------------------------
# Shared inline patterns (main grammar message part, and the injection grammar)
# ----------------------------------------------------------------------------------------------
SYMPTOMS = [
    r"(?:Async|MQ)?EngineDeadError",
    r"Engine core initialization failed",
    r"EngineCore failed to start",
    r"EngineCore encountered a fatal error",
    r"EngineCore encountered an issue",
    r"EngineCore hit an exception",
    r"\w++ initialization failed(?=\.? (?:due to|See root cause))",
    r"died unexpectedly",
    r"engine core exited unexpectedly",
    r"died with exit code",
    r"WorkerProc hit an exception",
    r"WorkerProc failed(?: to start)?",
    r"WorkerProc was terminated",
    r"AsyncLLM output_handler failed",
    r"Engine background task failed",
    r"Background loop (?:has errored already|is not running|is stopped)",
    r"Engine loop is not running",
    r"(?:MQLLMEngine|AsyncLLMEngine) (?:is already dead|has failed)",
    r"terminating server process",
    r"Got fatal signal from worker processes",
    r"Executor failed",
    r"Worker failed with error",
    r"RPCServer process died before responding to readiness probe",
    r"Engine process \(pid \d+\) died",
    r"Engine iteration timed out",
    r"Timed out waiting for engine core processes to start",
    r"vLLM shutdown signal from EngineCore failed to send",
    r"Main process exited, code=\w+, status=[\w/]+",
    r"Failed with result '[\w-]+'",
    r"exited with code [1-9]\d*",
]

FATALS = [
    r"CUDA out of memory",
    r"OutOfMemoryError",
    r"(?:an )?illegal memory access was encountered",
    r"Memory access fault by GPU(?: node-\d+)?",
    r"device-side assert triggered",
    r"Segmentation fault",
    r"Fatal Python error",
    r"core dumped",
    r"Check failed",
    r"NCCL error",
    r"(?:CUDA|HIP) error",
    r"Killed",
]

LIFECYCLE = [
    r"Starting to load model",
    r"Loading model from scratch",
    r"Loading weights took",
    r"Model loading took",
    r"Loading model weights took",
    r"Available KV cache memory",
    r"Memory profiling takes",
    r"Capturing CUDA graphs?(?: shapes)?",
    r"Capturing cudagraphs for decoding",
    r"(?:Encoder )?[Gg]raph capturing finished in",
    r"init engine \(profile, create kv cache, warmup model\) took",
    r"Application startup complete",
    r"Application shutdown complete",
    r"Started server process",
    r"Finished server process",
    r"Uvicorn running on",
    r"non-default args:",
    r"args: Namespace",
    r"Initializing an? (?:V[01] )?LLM engine",
    r"Resolved architecture:",
    r"Using max model len",
    r"(?:\w++ )?KV cache size:",
    r"Maximum concurrency for",
    r"# GPU blocks:",
    r"Starting vLLM (?:API )?server",
    r"vLLM (?:API )?server version",
    r"torch\.compile takes",
    r"Dynamo bytecode transform time:",
    r"Automatically detected platform",
    r"Shutting down",
]


def inline_repo() -> dict:
    """Patterns that may match anywhere in a message."""
    return {
        "ansi": {
            "comment": "ANSI escape sequence (CSI), e.g. ESC[1;36m",
            "match": r"\x1b\[[0-9;?]*+[ -/]*+[@-~]",
            "name": S["ansi"],
        },
        "traceback-header": {
            "patterns": [
                {
                    "match": r"(?:\+ )?(?:Exception Group )?Traceback \(most recent call last\):",
                    "name": S["traceback-header"],
                },
                {
                    "match": (
                        r"The above exception was the direct cause of the following exception:"
                        r"|During handling of the above exception, another exception occurred:"
                    ),
                    "name": S["traceback-chain"],
                },
            ]
        },
        "frame": Rx()
        .raw(r"(?<![\w.])")
        .cap("File", S["frame-keyword"])
        .raw(" ")
        .cap('"', S["frame-punct"])
        .cap(r'[^"]*+', S["frame-path"])
        .cap('"', S["frame-punct"])
        .raw("?+(?:")
        .cap(",", S["frame-punct"])
        .raw(" ")
        .cap("line", S["frame-keyword"])
        .raw(" ")
        .cap(r"\d++", S["frame-line"])
        .raw(")?+(?:")
        .cap(",", S["frame-punct"])
        .raw(" ")
        .cap("in", S["frame-keyword"])
        .raw(" ")
        .cap(r"[^\s\[]++", S["frame-function"])
        .raw(")?+")
        .match('Python frame: File "path", line N, in function (also cut-off frames)'),
        "symptoms": phrases(SYMPTOMS, S["symptom"], "engine-death symptoms"),
        "fatal": phrases(FATALS, S["fatal"], "fatal runtime errors that usually are the root cause"),
        "error-codes": {
            "comment": "Ascend CANN error codes (EZ9903:, EH9999:, ERR99999)",
            "match": r"\b(?:E[A-Z0-9]\d{4}(?=:)|ERR\d{5})\b",
            "name": S["error-code"],
        },
        "lifecycle": phrases(LIFECYCLE, S["lifecycle"], "lifecycle markers"),
        "stats": {
            "patterns": [
                Rx()
                .raw(r"\b")
                .cap(r"(?:Avg prompt|Avg generation|Accepted|Drafted) throughput", S["stat-label"])
                .raw(": ")
                .cap(r"\d+(?:\.\d+)?", S["stat-value"])
                .raw(" ")
                .cap("tokens/s", S["stat-unit"])
                .match("throughput"),
                Rx()
                .raw(r"\b")
                .cap(r"Running|Waiting|Swapped|Pending|Deferred|Corrupted", S["stat-label"])
                .raw(": ")
                .cap(r"\d+", S["stat-value"])
                .raw(" ")
                .cap("reqs", S["stat-unit"])
                .match("request counts"),
                Rx()
                .raw(r"\b")
                .cap("Preemptions", S["stat-label"])
                .raw(": ")
                .cap(r"\d+", S["stat-value"])
                .match(),
                Rx()
                .raw(r"\b")
                .cap(r"(?:[A-Z]PU )?KV cache usage", S["stat-label"])
                .raw(": ")
                .alt(
                    (r"(?:9\d|100)(?:\.\d+)?%", S["stat-value-high"]),
                    (r"\d+(?:\.\d+)?%", S["stat-value"]),
                )
                .match("KV cache usage; 90% and above is marked high"),
                Rx()
                .raw(r"\b")
                .cap(r"(?:External prefix|Prefix|MM) cache hit rate", S["stat-label"])
                .raw(": ")
                .cap(r"\d+(?:\.\d+)?%", S["stat-value"])
                .match(),
            ]
        },
        "ray-dedup": {
            "match": (
                r"\[repeated \d+x across cluster\]"
                r"|\(Ray deduplicates logs by default\.[^)]*+\)"
            ),
            "name": S["ray-dedup"],
        },
        "url": {
            "match": (
                r"\b(?:https?|wss?|tcp|file|ftp|grpc)://"
                r"[^\s\"'<>(){},.;:]*+(?:[.,;:]++[^\s\"'<>(){},.;:]++)*+"
            ),
            "name": S["url"],
        },
        "strings": {
            "patterns": [
                {"match": r'"[^"\n]{0,2000}"', "name": S["string-double"]},
                {"match": r"(?<![\w'])'[^'\n]{0,2000}'(?![\w'])", "name": S["string-single"]},
            ]
        },
        "constants": {"match": r"\b(?:True|False|None)\b", "name": S["constant"]},
        "ip-address": {
            "match": r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.])",
            "name": S["ip"],
        },
        "numbers": {
            "match": r"(?<![\w.])(?:0x[0-9a-fA-F]++|\d++(?:\.\d++)?(?:[eE][+-]?\d++)?)(?![\w])",
            "name": S["number"],
        },
    }


INLINE_ORDER = [
    "ansi",
    "traceback-header",
    "frame",
    "symptoms",
    "fatal",
    "error-codes",
    "lifecycle",
    "stats",
    "ray-dedup",
    "url",
    "strings",
    "constants",
    "ip-address",
    "numbers",
]


def build_exception_line(anchor: str, message_patterns: list[dict]) -> dict:
    rx = Rx().raw(anchor).cap(EXC_TYPE, S["exception-type"]).raw("(?:")
    rx.cap(":", S["exception-punct"]).raw("(?: ")
    rx.cap(r".*+", S["exception-message"], message_patterns).raw(")?+|[ \t]*+(?=$|\r))")
    return rx.match("exception line: qualified.Type: message")


# ----------------------------------------------------------------------------------------------
# Main grammar
# ----------------------------------------------------------------------------------------------
def outer_prefix_rules(after: list[dict]) -> list[dict]:
    """Runtime/collector prefixes: markdown, journalctl, CRI, Docker Desktop, compose, grep."""
    rp = S["runtime-punct"]
    return [
        Rx().raw(A).cap(">", S["quote"]).raw(" ?").begin(after, "markdown blockquote: > "),
        Rx()
        .raw(A)
        .cap(r"\d{4}-\d{2}-\d{2}T" + TIME + r"(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})", S["timestamp"])
        .raw(" ")
        .cap(r"[\w.-]+", S["runtime-host"])
        .raw(" ")
        .cap(r"[\w.@/-]+", S["runtime-unit"])
        .cap(r"\[", rp)
        .cap(r"\d+", S["runtime-pid"])
        .cap(r"\]", rp)
        .cap(":", rp)
        .raw(" ?")
        .begin(after, "journalctl -o short-iso: 2026-02-22T06:34:50+0000 host unit[pid]: "),
        Rx()
        .raw(A)
        .cap(r"\d{4}-\d{2}-\d{2}T" + TIME + r"(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})", S["timestamp"])
        .raw(" (?:")
        .cap("stdout|stderr", S["runtime-stream"])
        .raw(" ")
        .cap("[FP]", S["runtime-stream"])
        .raw(" ?)?+")
        .begin(after, "Kubernetes CRI (2026-08-31T17:43:36.65Z stderr F ) / docker -t"),
        Rx()
        .raw(A)
        .cap(r"\d{4}-\d{2}-\d{2} " + TIME + r"(?:[.,]\d+)?", S["timestamp"])
        .raw(" +")
        .cap(r"\|", rp)
        .raw(" ?")
        .begin(after, "Docker Desktop log viewer: 2026-04-19 12:58:51.656 | "),
        Rx()
        .raw(A)
        .cap(r"[A-Z][a-z]{2} [ \d]\d " + TIME, S["timestamp"])
        .raw(" ")
        .cap(r"[\w.-]+", S["runtime-host"])
        .raw(" ")
        .cap(r"[\w.@/-]+?", S["runtime-unit"])
        .raw("(?:")
        .cap(r"\[", rp)
        .cap(r"\d+", S["runtime-pid"])
        .cap(r"\]", rp)
        .raw(")?")
        .cap(":", rp)
        .raw(" ?")
        .begin(after, "journalctl / syslog: Feb 22 06:34:50 host unit[pid]: "),
        Rx()
        .raw(A)
        .cap(r"\[", rp)
        .cap(r"[\w.-]+", S["runtime-service"])
        .cap(r"\]", rp)
        .raw(" +")
        .cap(r"\|", rp)
        .raw(" ?")
        .begin(after, "podman-compose: [svc]     | "),
        Rx()
        .raw(A)
        .cap(r"\w[\w.-]*+", S["runtime-service"])
        .raw(" +")
        .cap(r"\|", rp)
        .raw(" ?")
        .begin(after, "docker compose: svc  | "),
        Rx()
        .raw(A)
        .cap(r"\w[\w.-]*+", S["runtime-service"])
        .raw(" ")
        .cap(r"exited with code \d+", S["symptom"])
        .raw("(?: ")
        .cap(r"\(restarting\)", S["runtime-stream"])
        .raw(")?")
        .match("docker compose restart marker: svc exited with code 1 (restarting)"),
        Rx()
        .raw(A)
        .cap("docker", S["runtime-service"])
        .raw(" ")
        .cap(":", rp)
        .raw(" ")
        .begin(after, "PowerShell docker: docker : "),
        Rx()
        .raw(A)
        .raw("(?:")
        .cap("Line", S["runtime-line-number"])
        .raw(" )?")
        .cap(r"\d+", S["runtime-line-number"])
        .cap(":", rp)
        .raw(" ")
        .begin(after, "grep -n / search output: Line 122: , 5223: "),
    ]


def process_prefix(rx: Rx) -> Rx:
    """`(Name pid=N)` / `(Actor pid=N, ip=A)` with its parts scoped: shared by both grammars."""
    pp = S["process-punct"]
    return (
        rx.cap(r"\(", pp)
        .cap(r"[A-Za-z_][\w.-]*+(?: (?!pid=)[\w.=-]++)*+", S["process-name"])
        .raw(" ")
        .cap("pid", S["process-key"])
        .cap("=", pp)
        .cap(r"\d+", S["process-pid"])
        .raw("(?:")
        .cap(",", pp)
        .raw(" ")
        .cap("ip", S["process-key"])
        .cap("=", pp)
        .cap(r"[\w.:-]+", S["process-ip"])
        .raw(")?")
        .cap(r"\)", pp)
    )


def process_prefix_rules(after: list[dict]) -> list[dict]:
    """Process prefixes: vLLM's (name pid=N), Ray's (Actor pid=N, ip=A), (raylet), [rank0]:."""
    pp = S["process-punct"]
    return [
        process_prefix(Rx().raw(A).ansi())
        .ansi()
        .raw(" ?")
        .begin(
            after,
            "process prefix: (EngineCore_DP0 pid=1), (VllmWorker rank=1 pid=2), "
            "(RayWorkerWrapper pid=3, ip=10.0.0.1); nests",
        ),
        Rx()
        .raw(A)
        .ansi()
        .cap(r"\(", pp)
        .cap(r"raylet|gcs_server|dashboard(?:_agent)?|autoscaler(?: \+[\w.]+)?", S["process-name"])
        .cap(r"\)", pp)
        .ansi()
        .raw(" ?")
        .begin(after, "Ray daemons: (raylet) , (autoscaler +2m3s) "),
        Rx()
        .raw(A)
        .cap(r"\[", pp)
        .cap(r"rank\d+", S["rank"])
        .cap(r"\]", pp)
        .cap(":", pp)
        .raw(" ?")
        .begin(after, "torch elastic rank prefix: [rank0]: "),
    ]


def main_grammar() -> dict:
    repo: dict = {}
    after_header = inc("message")

    # Prefix chains are depth-limited (a rule per level) so that a pathological line made of
    # thousands of prefixes cannot nest thousands of rules.
    for depth in range(1, MAX_OUTER + 1):
        deeper = [f"outer-prefixes-{depth + 1}"] if depth < MAX_OUTER else []
        after = inc(*deeper, "process-prefixes-1", "headers", "message")
        repo[f"outer-prefixes-{depth}"] = {"patterns": outer_prefix_rules(after)}
    for depth in range(1, MAX_PROCESS + 1):
        deeper = [f"process-prefixes-{depth + 1}"] if depth < MAX_PROCESS else []
        after = inc(*deeper, "headers", "message")
        repo[f"process-prefixes-{depth}"] = {"patterns": process_prefix_rules(after)}

    # -- logger headers -----------------------------------------------------------------------
    sp = S["source-punct"]
    vllm_header = (
        Rx()
        .raw(A)
        .ansi()
        .level()
        .ansi()
        .raw(" ")
        .ansi()
        .cap(r"(?:\d{4}-)?\d{2}-\d{2} " + TIME + r"(?:[.,]\d+)?", S["timestamp"])
        .ansi()
        .raw(r"\s")
        .ansi()
        .cap(r"[\[(]", sp)
        .raw("?")
        .cap(r"(?:[\w.-]++/)*+[\w.-]+?\.py", S["source-file"])
        .cap(":", sp)
        .cap(r"\d+", S["source-line"])
        .cap(r"\]", sp)
        .ansi()
        .raw(" ?")
    )
    uvicorn = Rx().raw(A).ansi().level().ansi().cap(":", sp).raw("(?: +|$)")
    glog = (
        Rx()
        .raw(A)
        .cap(r"\[", sp)
        .raw("?")
        .alt(("I", S["INFO"]), ("W", S["WARNING"]), ("[EF]", S["ERROR"]))
        .cap(r"\d{3,4} [\d:.]+", S["timestamp"])
        .raw("(?: +")
        .cap(r"\d+", S["process-pid"])
        .raw(")? ")
        .cap(r"[\w.-]+", S["source-file"])
        .cap(":", sp)
        .cap(r"\d+", S["source-line"])
        .cap(r"\]", sp)
        .raw(" ?")
    )
    ray_logger = (
        Rx()
        .raw(A)
        .cap(r"\d{4}-\d{2}-\d{2} " + TIME + r",\d{3}", S["timestamp"])
        .raw(r"[\t ]")
        .level()
        .raw(" ")
        .cap(r"[\w.-]+\.py", S["source-file"])
        .cap(":", sp)
        .cap(r"\d+", S["source-line"])
        .raw(" ")
        .cap("--", sp)
        .raw(" ?")
    )
    py_logging = (
        Rx()
        .raw(A)
        .cap(r"\d{4}-\d{2}-\d{2} " + TIME + r"(?:,\d{3})?", S["timestamp"])
        .raw(" ")
        .cap("-", sp)
        .raw(" (?:")
        .cap(rf"(?!{LEVEL_NAMES} - )[\w.<>-]+", S["source-file"])
        .raw(" ")
        .cap("-", sp)
        .raw(" )?")
        .level()
        .raw(" ")
        .cap("-", sp)
        .raw(" ?(?:")
        .cap(r"[\w.-]+\.py", S["source-file"])
        .cap(":", sp)
        .cap(r"\d+", S["source-line"])
        .raw(" ")
        .cap("-", sp)
        .raw(" ?)?")
    )
    ascend = (
        Rx()
        .raw(A)
        .cap(r"\[", sp)
        .level()
        .cap(r"\]", sp)
        .raw("(?: ")
        .cap(r"\d{4}-\d{2}-\d{2}-" + TIME + r"(?:\.\d+)?", S["timestamp"])
        .raw(")? ?")
    )
    ray_cpp = (
        Rx()
        .raw(A)
        .cap(r"\[", sp)
        .cap(r"\d{4}-\d{2}-\d{2} " + TIME + r",\d{3}", S["timestamp"])
        .raw(" ")
        .alt(("[ID]", S["INFO"]), ("W", S["WARNING"]), ("E", S["ERROR"]), ("[CF]", S["CRITICAL"]))
        .raw(" ")
        .cap(r"\d+", S["process-pid"])
        .raw(" ")
        .cap(r"\d+", S["process-pid"])
        .cap(r"\]", sp)
        .raw(" ?")
    )
    gloo = Rx().raw(A).cap(r"\[", sp).cap("Gloo", S["tag"]).cap(r"\]", sp).raw(" ?")
    repo["headers"] = {
        "patterns": [
            vllm_header.begin(after_header, "vLLM logger: LEVEL MM-DD HH:MM:SS [file.py:N] (V0: file.py:N])"),
            uvicorn.begin(inc("http-access", "message"), "uvicorn: INFO:     "),
            glog.begin(after_header, "torch c10 / glog / absl: [W303 19:38:29.33 file.cpp:1538]"),
            ray_logger.begin(after_header, "Ray logger: 2026-01-31 14:20:59,483<TAB>INFO w.py:1 -- "),
            py_logging.begin(after_header, "Python logging: 2025-06-20 20:02:20,931 - name - INFO - "),
            ascend.begin(after_header, "bracketed level (Ascend CANN, TBE): [ERROR] 2025-09-18-10:34:30 "),
            ray_cpp.begin(after_header, "Ray C++: [2025-05-19 09:49:02,102 C 1 1] "),
            gloo.begin(after_header, "[Gloo] "),
        ]
    }

    repo["http-access"] = (
        Rx()
        .raw(r"\G")
        .cap(r"[\w.:\[\]-]+:\d+", S["runtime-host"])
        .raw(" - ")
        .cap('"', S["frame-punct"])
        .cap(r"[A-Z]+", S["http-method"])
        .raw(" ")
        .cap(r"\S+", S["http-path"])
        .raw(" ")
        .cap(r"HTTP/[\d.]+", S["http-method"])
        .cap('"', S["frame-punct"])
        .raw(" ")
        .alt(
            (r"[123]\d\d", S["http-ok"]),
            (r"4\d\d", S["http-client-error"]),
            (r"5\d\d", S["http-server-error"]),
        )
        .match('uvicorn access log: 127.0.0.1:5555 - "POST /v1/x HTTP/1.1" 500')
    )

    # -- message ------------------------------------------------------------------------------
    inline = inc(*INLINE_ORDER)
    repo["message"] = {"patterns": [*inc("message-start"), *inline]}
    repo["message-start"] = {
        "comment": "constructs that only count at the start of a message",
        "patterns": [
            build_exception_line(A + r"[ \t]*+", inline),
            Rx()
            .raw(A)
            .raw(r"[ \t]*+")
            .cap(r"[~^]++", S["caret"])
            .raw(r"[ \t]*+(?=$|\r)")
            .match("traceback caret line (3.11+ ^^^^, 3.13 ~~~~^^^^)"),
            Rx()
            .raw(A)
            .raw(r"[ \t]*+")
            .cap(r"\.\.\.<\d+ lines?>\.\.\.", S["elided"])
            .match("Python 3.13 elided source: ...<3 lines>..."),
            Rx()
            .raw(A)
            .cap("Process", S["traceback-process"])
            .raw(" ")
            .cap(r"[\w-]+", S["process-name"])
            .cap(":", S["traceback-process"])
            .raw(r"[ \t]*+(?=$|\r)")
            .match("multiprocessing: Process EngineCore_DP0:"),
            Rx()
            .raw(A)
            .cap(r'[^\s:"]+\.py|<frozen [^>\s]+>', S["frame-path"])
            .cap(":", S["frame-punct"])
            .cap(r"\d+", S["frame-line"])
            .cap(":", S["frame-punct"])
            .raw(" ")
            .cap(r"(?:\w+\.)*+\w*Warning", S["warning-category"])
            .cap(":", S["frame-punct"])
            .match("Python warning: /path/x.py:346: SyntaxWarning: ..."),
            Rx()
            .raw(A)
            .cap(r"#\d+", S["native-frame"])
            .raw(" +(?:")
            .cap(r"0x[0-9a-fA-F]+", S["native-address"])
            .raw(" ")
            .cap("in", S["frame-keyword"])
            .raw(" )?")
            .cap(r"[^\s(]++", S["frame-function"])
            .raw(r"(?= \()")
            .match("gdb native frame: #1  0x0000ffffb61895c4 in copy_single"),
            Rx()
            .raw(A)
            .cap(r"\(", S["process-punct"])
            .cap(r"raylet|gcs_server|dashboard(?:_agent)?", S["process-name"])
            .cap(r"\)", S["process-punct"])
            .match("Ray daemon name repeated after a Ray C++ header"),
            {
                "comment": "journald placeholder: [103B blob data]",
                "match": A + r"\[\d+(?:\.\d+)?[KMG]?B blob data\]",
                "name": S["blob"],
            },
        ],
    }
    repo.update(inline_repo())

    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "vLLM log",
        "scopeName": "text.log.vllm",
        "fileTypes": ["vllm.log"],
        "comment": "GENERATED by grammars/build_grammars.py; edit that file, then run it.",
        "patterns": [
            *inc("outer-prefixes-1", "process-prefixes-1", "headers", "message"),
            {"match": r"\r", "name": S["cr"]},
        ],
        "repository": repo,
    }


# ----------------------------------------------------------------------------------------------
# Injection grammar (into VS Code's built-in `log` language, scope text.log)
# ----------------------------------------------------------------------------------------------
def injection_grammar() -> dict:
    repo = inline_repo()
    inline_names = [
        "traceback-header",
        "frame",
        "symptoms",
        "fatal",
        "error-codes",
        "lifecycle",
        "stats",
    ]
    sp = S["source-punct"]
    repo["process-prefix"] = process_prefix(Rx()).match(
        "process prefix: (EngineCore_DP0 pid=1), (RayWorkerWrapper pid=3, ip=10.0.0.1)"
    )
    repo["source"] = (
        Rx()
        .raw(r"(?<=\d\d:\d\d:\d\d )")
        .cap(r"\[", sp)
        .raw("?")
        .cap(r"(?:[\w.-]++/)*+[\w.-]+?\.py", S["source-file"])
        .cap(":", sp)
        .cap(r"\d+", S["source-line"])
        .cap(r"\]", sp)
        .match("vLLM logger source after the time: [file.py:N] / file.py:N]")
    )
    repo["traceback-extra"] = {
        "patterns": [
            Rx().raw(r"(?:^|(?<=\s))").cap(r"[~^]++", S["caret"]).raw(r"(?=\s*$)").match("caret line"),
            Rx().cap(r"\.\.\.<\d+ lines?>\.\.\.", S["elided"]).match("elided source"),
            Rx()
            .raw(r"(?:^|(?<=\s))")
            .cap("Process", S["traceback-process"])
            .raw(" ")
            .cap(r"[\w-]+", S["process-name"])
            .cap(":", S["traceback-process"])
            .raw(r"(?=\s*$)")
            .match("multiprocessing: Process EngineCore_DP0:"),
        ]
    }
    exc_message_patterns = inc("symptoms", "fatal", "lifecycle", "strings", "numbers")
    repo["exception-line"] = build_exception_line(r"(?:^|(?<=[\s\]):]))", exc_message_patterns)
    for unused in ("ansi", "ray-dedup", "url", "constants", "ip-address"):
        del repo[unused]
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "vLLM log patterns for the log language",
        "scopeName": "vllm-log.injection",
        "comment": (
            "GENERATED by grammars/build_grammars.py. Injected into VS Code's `log` language "
            "(text.log), but not into text.log.vllm, which has all of these already."
        ),
        "injectionSelector": "L:text.log -text.log.vllm",
        "patterns": inc(
            "process-prefix",
            "source",
            "exception-line",
            "traceback-extra",
            *inline_names,
        ),
        "repository": repo,
    }


def render(grammar: dict) -> str:
    return json.dumps(grammar, indent=2, ensure_ascii=False) + "\n"


def outputs() -> dict[Path, str]:
    return {MAIN_PATH: render(main_grammar()), INJECTION_PATH: render(injection_grammar())}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in outputs().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if check:
            stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(f"stale: {', '.join(stale)}; run python3 grammars/build_grammars.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
