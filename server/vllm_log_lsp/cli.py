"""Command line: `check` logs (text or JSON), list and explain rules, and serve LSP.

argparse (stdlib) is the CLI framework: the commands are few and flat, and it keeps the bundled
VS Code server free of extra dependencies.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Sequence
from types import SimpleNamespace

from . import __version__
from .batch import (
    AnalysisHook,
    CheckOptions,
    FileOutcome,
    HookError,
    check_files,
    expand_inputs,
    parallel_jobs,
)
from .core.analyze import analyze
from .core.catalog import Catalog, builtin_catalog, catalog_with_user_files
from .core.model import Analysis, Finding, ResolvedFix
from .core.source import LogReadError, LogSource, open_log, open_regular, read_regular_text
from .progress import Progress
from .report.json_report import (
    EXIT_DEATH,
    EXIT_HEALTHY,
    EXIT_INTERNAL,
    EXIT_UNREADABLE,
    JSON_SCHEMA_VERSION,
    STDIN_NAME,
    error_json,
    exit_status,
    finding_to_json,
    report_json,
    shown_name,
)
from .report.jsontext import dumps_indented  # json.dumps(indent=2)'s text, at C speed

# `typing` is imported by type checkers only: at run time it costs start-up (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO

#: Exit codes (also in `--help`): a readable log with no engine death; a death; the input or the
#: command line could not be used (nothing was diagnosed); a bug in this tool. The worst wins.
EXIT_CODES_HELP = (
    f"exit status: {EXIT_HEALTHY} every log was read and shows no engine death; {EXIT_DEATH} an engine "
    f"death was found; {EXIT_UNREADABLE} an input or usage error (a log, rule file or script that cannot be "
    f"read, a directory or glob with no log; nothing is called healthy then); {EXIT_INTERNAL} an internal "
    "error of vllm-log-lsp (one line on stderr; --debug prints the traceback); with several logs the "
    "highest of these"
)
# What `streams` (--follow, --merge) renders with, as `check` renders one file.
__all__ = [
    "JSON_SCHEMA_VERSION",
    "STDIN_NAME",
    "finding_to_json",
    "main",
    "shown_name",
]
#: The largest launch script `check --fix` edits (scripts are small; this bounds the read).
MAX_SCRIPT_BYTES = 8 << 20


def use_colour(choice: str, stream: TextIO) -> bool:
    """Colour only on a terminal, unless forced; NO_COLOR turns `auto` off."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


# -- check ------------------------------------------------------------------------------------
def error(message: str) -> int:
    """Report an input or usage error on stderr; the exit status that goes with it."""
    print(f"vllm-log-lsp: error: {message}", file=sys.stderr)
    return EXIT_UNREADABLE


class OutputError(Exception):
    """The report could not be written (a full disk, an I/O error): an error, not a diagnosis."""


class Reports:
    """Writes reports to stdout. When the reader goes away (`check … | head`) or there is no
    stdout (`>&-`), the rest is dropped silently and the analysis goes on, so the exit status
    still tells the truth; any other write error is an `OutputError`."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.reader_gone = stream is None

    def write(self, text: str) -> None:
        if self.reader_gone or self.stream is None:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError as err:
            if not isinstance(err, BrokenPipeError):
                raise OutputError(f"cannot write the report: {err.strerror or err}") from None
            self.reader_gone = True
            _drop_stdout()


def _drop_stdout() -> None:
    """Send what is still buffered for stdout nowhere, instead of failing again at exit."""
    if sys.stdout is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stream without a file descriptor: leave it
        pass


def cmd_check(args: argparse.Namespace, catalog: Catalog) -> int:
    if args.fix is not None:
        return cmd_fix(args, catalog)
    if args.write or args.fix_index is not None:
        return error("--write and --fix-index need --fix SCRIPT")
    if args.files.count("-") > 1:
        return error("standard input (-) can be read only once")
    inputs = expand_inputs(args.files)
    if args.report and (len(args.files) != 1 or len(inputs.paths) + len(inputs.problems) != 1):
        return error("--report writes the report of one FILE")
    live = check_streams(args, catalog)
    if live is not None:
        return live
    if args.jobs is not None and args.jobs < 1:
        return error("--jobs takes a number of processes, 1 or more")
    options = CheckOptions(
        text=args.format == "text",
        colour=use_colour(args.color, sys.stdout),
        rule_files=tuple(args.rules + args.command_rules),
        debug=args.debug,
    )
    entries = [error_json(argument, problem) for argument, problem in inputs.problems]
    for _, problem in inputs.problems:
        error(problem)
    out = Reports(sys.stdout)
    progress = Progress.for_batch(inputs.paths, sys.stderr)
    outcomes = check_files(
        inputs.paths, catalog, options, parallel_jobs(inputs.paths, args.jobs), _html_hook(args, catalog)
    )
    try:
        for outcome in outcomes:
            with progress.paused():
                for line in outcome.errors:
                    print(line, file=sys.stderr)
                out.write(_file_output(args.format, outcome))
            entries.append(outcome.entry)
            progress.advance(outcome.size)
    except HookError as err:
        return error(str(err))
    finally:
        progress.close()
    out.write(_batch_output(args.format, entries, catalog, options.colour))
    return exit_status(entries)


def _file_output(form: str, outcome: FileOutcome) -> str:
    """What is printed as soon as one file is checked (text and GitHub commands stream)."""
    if form == "text" and outcome.text is not None:
        return outcome.text + "\n"
    if form == "github":
        from .report.github import file_commands  # each format's module only when asked

        return "".join(line + "\n" for line in file_commands(outcome.entry))
    return ""


def _batch_output(form: str, entries: list[dict], catalog: Catalog, colour: bool) -> str:
    """What ends the output: the whole JSON or SARIF document, or a batch's summary table."""
    if form == "json":
        return dumps_indented(report_json(entries)) + "\n"
    if form == "sarif":
        from .report.sarif import sarif_log

        return dumps_indented(sarif_log(entries, catalog)) + "\n"
    if len(entries) < 2:
        return ""
    from .report.text import Style, summary_table  # the text format's module only when asked

    return "\n" + summary_table(entries, Style(colour)) + "\n"


def _html_hook(args: argparse.Namespace, catalog: Catalog) -> AnalysisHook | None:
    """`--report HTML`: write the page of the (one) file once it is analysed."""
    if not args.report:
        return None

    def write_html(path: str, source: LogSource, analysis: Analysis) -> None:
        from .report.html import write_report  # only when asked: keeps start-up light

        try:
            write_report(args.report, path, source.data, analysis, catalog)
        except OSError as err:
            raise HookError(f"cannot write the report {args.report}: {err.strerror or err}") from None

    return write_html


def check_streams(args: argparse.Namespace, catalog: Catalog) -> int | None:
    """`--follow`, a live standard input, or files of one run (`--merge`, or evidently one run):
    the exit status (see `streams`); None: the usual check of each file."""
    if not args.follow and "-" not in args.files and (len(args.files) < 2 or args.merge is False):
        return None  # one file, or files asked to be checked alone: nothing to follow or merge
    from . import streams

    try:
        if args.follow or (args.files == ["-"] and args.format == "text" and streams.stdin_is_live()):
            if len(args.files) != 1 or args.report:
                return error("--follow follows one FILE (or -), without --report")
            return streams.follow(args.files[0], catalog, streams.death_printer(args), asked=args.follow)
        parts = streams.merge_wanted(args.files, args.merge, catalog)
    except LogReadError as err:
        return error(str(err))
    if parts is None:
        return None
    if args.report:
        return error("--report writes the report of one FILE, not of merged files")
    return streams.merged_report(args, parts, catalog)


def analyze_source(source: LogSource, catalog: Catalog) -> Analysis:
    return analyze(source.data, catalog, tuple(source.warnings), path=source.plain_path)


# -- check --fix --------------------------------------------------------------------------------
#: `check LOG --fix SCRIPT` exit codes (EXIT_UNREADABLE also covers a script the fix cannot edit).
EXIT_NOTHING_TO_FIX, EXIT_FIXED = 0, 1


def fix_choices(analysis: Analysis, fix_index: int | None) -> list[tuple[Finding, int, ResolvedFix]]:
    """(finding, fix number as the report numbers it, fix) for the fixes that edit a script.

    Without `fix_index`: every such fix, in report order (the first that changes the script is
    the preferred one). With it: fix number `fix_index` of the first finding that has such fixes.
    """
    choices = [
        (finding, number, fix)
        for finding in analysis.findings
        for number, fix in enumerate(finding.fixes, 1)
        if fix.ops
    ]
    if fix_index is None or not choices:
        return choices
    finding = choices[0][0]
    if not 1 <= fix_index <= len(finding.fixes):
        raise ValueError(f"--fix-index {fix_index}: {finding.rule_id} has fixes 1 to {len(finding.fixes)}")
    fix = finding.fixes[fix_index - 1]
    if not fix.ops:
        raise ValueError(f"--fix-index {fix_index}: {fix.title!r} is advice, it changes no launch script")
    return [(finding, fix_index, fix)]


def diff_path(script: str) -> tuple[str, str | None]:
    """The path for the diff headers (`a/PATH`, `b/PATH`, as git writes them) and, when it is not
    the current directory, the directory they are relative to: `git apply` refuses `..`."""
    relative = os.path.relpath(script)
    if not relative.startswith(".."):
        return relative.replace(os.sep, "/"), None
    folder, name = os.path.split(os.path.abspath(script))
    return name, folder


def cmd_fix(args: argparse.Namespace, catalog: Catalog) -> int:
    """`check LOG --fix SCRIPT [--write] [--fix-index N]`: the log's fix as a diff of SCRIPT.

    Prints the unified diff of the preferred fix (the first fix of the first finding that
    changes SCRIPT) on stdout, with what it does on stderr; `--write` also saves SCRIPT.
    Exit 0: nothing to change (no fix applies, or SCRIPT has it already); 1: a diff was printed
    (and written); 2: LOG or SCRIPT unreadable, SCRIPT malformed, or the fix cannot be applied
    to SCRIPT (the reason on stderr).
    """

    from .launch import fix_text, unified_diff  # here: YAML/shell parsers cost 0.2 s to import

    fail = error
    if len(args.files) != 1:
        return fail("--fix takes exactly one LOG")
    log, script = args.files[0], args.fix
    try:
        source = open_log(log)
        text = read_regular_text(script, MAX_SCRIPT_BYTES)  # line endings kept as they are
    except LogReadError as err:
        return fail(str(err))
    analysis = analyze_source(source, catalog)
    try:
        choices = fix_choices(analysis, args.fix_index)
    except ValueError as err:
        return fail(str(err))
    if not choices:
        found = "no engine death found" if not analysis.findings else "no fix that edits a launch script"
        print(f"vllm-log-lsp: nothing to change: {found} in {shown_name(log)}", file=sys.stderr)
        return EXIT_NOTHING_TO_FIX
    refused = already = None
    for finding, number, fix in choices:
        # docs=True: the user named this file, a README included
        result = fix_text(
            text, script, fix.ops, context=finding.context, captures=dict(finding.evidence), docs=True
        )
        if result.changed:
            shown, base = diff_path(script)
            Reports(sys.stdout).write(unified_diff(result.old_text, result.new_text, shown))
            if base is not None:
                print(
                    f"vllm-log-lsp: the diff's paths are relative to {base} (git apply there)",
                    file=sys.stderr,
                )
            if args.write:
                with open(script, "w", encoding="utf-8", newline="") as handle:
                    handle.write(result.new_text)
            done = "applied" if args.write else "would apply"
            print(
                f"vllm-log-lsp: {done} fix {number} of {finding.rule_id} ({fix.title}): {result.summary}",
                file=sys.stderr,
            )
            return EXIT_FIXED
        if result.status == "skipped" and refused is None:
            refused = result.reason
        already = already or (result.summary if result.status == "unchanged" else None)
    if refused is not None:
        return fail(refused)
    print(f"vllm-log-lsp: nothing to change: {already or script + ' already has the fix'}", file=sys.stderr)
    return EXIT_NOTHING_TO_FIX


# -- rules / explain ------------------------------------------------------------------------------
def cmd_rules(args: argparse.Namespace, catalog: Catalog) -> int:
    from .core.origins import families as mined_families

    everything = [*catalog.rules, *(f.rule for f in mined_families())]
    families = sorted({r.family for r in everything})
    if args.family and args.family not in families:
        return error(f"no family {args.family!r}; the families are: {', '.join(families)}")
    rules = [r for r in everything if not args.family or r.family == args.family]
    if args.format == "json":
        listing = [{"id": r.id, "title": r.title, "family": r.family} for r in rules]
        Reports(sys.stdout).write(dumps_indented(listing) + "\n")
        return 0
    width = max((len(r.id) for r in rules), default=10)
    Reports(sys.stdout).write("".join(f"{r.id:<{width}}  {r.family:<18}  {r.title}\n" for r in rules))
    return 0


def cmd_explain(args: argparse.Namespace, catalog: Catalog) -> int:
    from .core.origins import family_rule

    rule = catalog.rule(args.rule_id) or family_rule(args.rule_id)
    if rule is None:
        import difflib

        close = difflib.get_close_matches(args.rule_id, [r.id for r in catalog.rules], n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        return error(f"no rule {args.rule_id!r} ({hint}see `vllm-log-lsp rules`)")
    out = [f"# {rule.title} ({rule.id})", "", f"Family: {rule.family}"]
    if rule.summary:
        out += ["", rule.summary]
    if rule.explanation:
        out += ["", rule.explanation]
    if rule.fixes:
        out += ["", "## Fixes, in order of preference", ""]
        for number, fix in enumerate(rule.fixes, 1):
            ops = ", ".join(_op_text(op) for op in fix.ops)
            versions = f" [vLLM {fix.versions}]" if fix.versions else ""
            out.append(f"{number}. {fix.title} ({fix.kind}){versions}{': ' + ops if ops else ''}")
            if fix.detail:
                out.append(f"   {fix.detail}")
    if rule.next_steps:
        out += ["", "## Next steps", ""] + [f"- {step}" for step in rule.next_steps]
    if rule.samples:
        out += ["", "## Recognises lines like", ""] + [f"    {s}" for s in rule.samples]
    if rule.references:
        out += ["", "## References", ""] + [f"- {ref}" for ref in rule.references]
    Reports(sys.stdout).write("\n".join(out) + "\n")
    return 0


def _op_text(op) -> str:
    value = op.value
    shown = ""
    if value is not None:
        shown = (
            value.literal
            or (f"<{value.capture} from the log>" if value.capture else "")
            or (f"<{value.derive.replace('_', ' ')} of the current value>" if value.derive else "")
        )
    if op.op == "add_flag":
        return op.name
    if op.op == "set_env":
        return f"{op.name}={shown}"
    if op.op == "merge_json":
        return f"{op.name} {{{op.key!r}: {shown}}}"
    return f"{op.name} {shown}"


# -- serve --------------------------------------------------------------------------------------
def tcp_address(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` or `[IPv6]:PORT` → (host, port); port 0 picks a free one."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        import argparse

        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT (a port from 0 to 65535)")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host or "127.0.0.1", int(port)


def free_port(host: str) -> int:
    """A port the OS says is free on `host` now (for `--tcp HOST:0`)."""
    import socket

    for family, kind, proto, _, address in socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM):
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
            return probe.getsockname()[1]
    raise OSError(f"cannot bind {host}")


def cmd_serve(args: argparse.Namespace, catalog: Catalog) -> int:
    from .lsp.server import run_server

    if args.tcp is None:
        return run_server("stdio")  # 1 when the client exits without shutdown (LSP)
    host, port = args.tcp
    try:
        port = port or free_port(host)
    except OSError as err:
        return error(f"cannot listen on {host}: {err.strerror or err}")
    # The address on stdout (the protocol goes over the socket): a script can read the port.
    print(f"listening on {host}:{port}", flush=True)
    run_server("tcp", host, port)
    return 0


# -- the command line ---------------------------------------------------------------------------
#: `--rules` after the command (each sub-command's copy goes to its own list).
COMMAND_RULES: tuple[str, dict[str, Any]] = (
    "--rules",
    {
        "dest": "command_rules",
        "action": "append",
        "default": [],
        "metavar": "FILE",
        "help": "extra rule file (TOML, the catalog's schema); repeatable",
    },
)
#: `check`'s options (after `--rules`), as argparse is given them: `build_parser` adds them, and
#: `plain_check_args` reads the common command lines by them without building any parser.
CHECK_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--format",
        {
            "choices": ("text", "json", "sarif", "github"),
            "default": "text",
            "help": "compiler-style text (default), JSON, SARIF 2.1.0 (code scanning) or GitHub Actions "
            "workflow commands (annotations)",
        },
    ),
    (
        "--jobs",
        {
            "type": int,
            "metavar": "N",
            "help": "check the files in N processes (default: every core for a large batch, else 1)",
        },
    ),
    (
        "--color",
        {
            "choices": ("auto", "always", "never"),
            "default": "auto",
            "help": "colour the text report: auto (default) only on a terminal, and not when NO_COLOR is set",
        },
    ),
    (
        "--fix",
        {
            "metavar": "SCRIPT",
            "help": "print the log's preferred fix as a unified diff of this launch script "
            "(shell, compose, Kubernetes, Dockerfile, Python) instead of the report",
        },
    ),
    ("--write", {"action": "store_true", "help": "with --fix: apply the fix to SCRIPT"}),
    (
        "--report",
        {"metavar": "HTML", "help": "also write a self-contained HTML report of the log (one FILE)"},
    ),
    (
        "--fix-index",
        {
            "type": int,
            "metavar": "N",
            "help": "with --fix: use fix N of the first finding (as the report numbers them) instead of "
            "the first fix that changes SCRIPT",
        },
    ),
    (
        "--follow",
        {
            "action": "store_true",
            "help": "follow the one FILE (or -) as it grows: print each engine death as soon as it is complete "
            "(JSON: one object per line); Ctrl-C ends it, exit 1 if a death was printed, else 0. A "
            "standard input that pauses (tail -f x | check -) is followed without it",
        },
    ),
)
#: `check`'s mutually exclusive pair.
CHECK_MERGING: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--merge",
        {
            "dest": "merge",
            "action": "store_const",
            "const": True,
            "default": None,
            "help": "check the FILEs (one per rank, process or pod) as one run, interleaved by time; "
            "automatic when they evidently are one run split per process",
        },
    ),
    (
        "--no-merge",
        {"dest": "merge", "action": "store_const", "const": False, "help": "check each FILE alone, always"},
    ),
)


def plain_check_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """What `build_parser().parse_args(argv)` gives for a plain `check` command line: `check`,
    options each spelt in full with its value as the next argument, then the FILEs, none of them
    starting with `-`. Building argparse's parsers (and importing it) would cost a short check a
    tenth of its time; any other command line (help, an error, another command, an abbreviation,
    `--opt=value`, standard input) is left to argparse: None."""
    if not argv or argv[0] != "check":
        return None
    options = (COMMAND_RULES, *CHECK_OPTIONS, *CHECK_MERGING)
    found: dict[str, Any] = {"rules": [], "debug": False, "command": "check"}
    for flag, declared in options:
        dest = _dest(flag, declared)
        default = declared.get("default", False if declared.get("action") == "store_true" else None)
        found.setdefault(dest, list(default) if isinstance(default, list) else default)
    by_flag = dict(options)
    merging = {flag for flag, _ in CHECK_MERGING}
    exclusive: set[str] = set()
    at = 1
    while at < len(argv) and argv[at].startswith("-"):
        flag = argv[at]
        keywords = by_flag.get(flag)
        if keywords is None or not keywords.keys() <= _PLAIN_KEYWORDS:
            return None
        dest, action = _dest(flag, keywords), keywords.get("action", "store")
        if action == "store_true":
            found[dest] = True
        elif action == "store_const":
            found[dest] = keywords["const"]
            exclusive |= {flag} & merging
        elif action in ("store", "append"):  # the next argument is the value
            value = _plain_value(argv[at + 1] if at + 1 < len(argv) else None, keywords)
            if value is None:
                return None
            if action == "append":
                found[dest].append(value)
            else:
                found[dest] = value
            at += 1
        else:  # an action this reader does not know: argparse's
            return None
        at += 1
    files = list(argv[at:])
    if not files or len(exclusive) > 1 or any(name.startswith("-") for name in files):
        return None
    return SimpleNamespace(**found, files=files, handler=cmd_check)


#: The argparse keywords `plain_check_args` knows the meaning of (an option with others: argparse's).
_PLAIN_KEYWORDS = frozenset({"action", "choices", "const", "default", "dest", "help", "metavar", "type"})


def _dest(flag: str, keywords: dict[str, Any]) -> str:
    return keywords.get("dest") or flag.lstrip("-").replace("-", "_")


def _plain_value(text: str | None, keywords: dict[str, Any]) -> str | int | None:
    """An option's value as argparse converts it; None where argparse should read it (no value, a
    value starting with `-`, one outside the choices, a number that is not plain ASCII digits)."""
    if text is None or text.startswith("-") or text not in keywords.get("choices", (text,)):
        return None
    kind = keywords.get("type")
    if kind is None:
        return text
    return int(text) if kind is int and text.isascii() and text.isdigit() else None


def build_parser() -> argparse.ArgumentParser:
    import argparse

    # `--rules` before or after the command: the sub-commands' copy goes to its own list.
    rules_option = argparse.ArgumentParser(add_help=False)
    rules_option.add_argument(COMMAND_RULES[0], **COMMAND_RULES[1])
    parser = argparse.ArgumentParser(
        prog="vllm-log-lsp",
        description="Turn a vLLM crash log into a diagnosis: root cause, phase and fix.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="extra rule file (TOML, the catalog's schema); repeatable, also after the command",
    )
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser(
        "check",
        parents=[rules_option],
        help="diagnose log files (exit 0: no engine death, 1: engine died, 2: unreadable)",
        description="Diagnose vLLM logs: plain or vLLM's JSON format, gzip/bzip2/xz-compressed, UTF-8 or "
        "UTF-16 (with or without a BOM).",
        epilog=EXIT_CODES_HELP + ". With --fix SCRIPT: exit 0: nothing to change, 1: a diff was printed "
        "(and written with --write), 2: LOG or SCRIPT unreadable, or SCRIPT malformed (reason on stderr).",
    )
    check.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="log files, directories (their logs, recursively) or globs ('logs/**/*.log'); "
        "- reads standard input",
    )
    for flag, keywords in CHECK_OPTIONS:
        check.add_argument(flag, **keywords)
    merging = check.add_mutually_exclusive_group()
    for flag, keywords in CHECK_MERGING:
        merging.add_argument(flag, **keywords)
    check.set_defaults(handler=cmd_check)

    rules = sub.add_parser(
        "rules", parents=[rules_option], help="list the cause catalog", epilog=EXIT_CODES_HELP
    )
    rules.add_argument("--family", help="only the causes of this family (e.g. memory)")
    rules.add_argument("--format", choices=("text", "json"), default="text", help="a table (default) or JSON")
    rules.set_defaults(handler=cmd_rules)

    explain = sub.add_parser(
        "explain", parents=[rules_option], help="explain one cause of the catalog", epilog=EXIT_CODES_HELP
    )
    explain.add_argument("rule_id", metavar="ID", help="a cause id, as `check` and `rules` print it")
    explain.set_defaults(handler=cmd_explain)

    serve = sub.add_parser("serve", parents=[rules_option], help="run the language server (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="speak LSP over stdio (the default)")
    serve.add_argument(
        "--tcp",
        type=tcp_address,
        metavar="HOST:PORT",
        help="listen on TCP instead (for debugging); port 0 picks a free port, printed on stdout",
    )
    serve.set_defaults(handler=cmd_serve)
    return parser


def load_catalog(paths: list[str]) -> Catalog | None:
    """The catalog with the user's rule files; None (after saying why) when one is unusable: a
    diagnosis without the user's rules would be a wrong answer given as a right one."""
    for path in paths:
        try:
            open_regular(path).close()  # never block on a FIFO or read a device
        except LogReadError as err:
            error(f"rule file: {err}")
            return None
    catalog = catalog_with_user_files(paths) if paths else builtin_catalog()
    for problem in catalog.errors:
        print(f"vllm-log-lsp: rule error: {problem}", file=sys.stderr)
    if catalog.errors:
        error("the rule files above have errors; fix them or leave them out")
        return None
    for problem in catalog.warnings:
        print(f"vllm-log-lsp: rule warning: {problem}", file=sys.stderr)
    return catalog


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        _never_fail_to_encode(stream)
    args = plain_check_args(sys.argv[1:] if argv is None else argv) or build_parser().parse_args(argv)
    try:
        catalog = load_catalog(args.rules + args.command_rules)
        if catalog is None:
            return EXIT_UNREADABLE
        return args.handler(args, catalog)
    except OutputError as err:
        _drop_stdout()
        return error(str(err))
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug: one line, and a status no diagnosis uses
        if args.debug:
            import traceback

            traceback.print_exc()
        print(
            f"vllm-log-lsp: internal error: {type(err).__name__}: {err} "
            f"(exit {EXIT_INTERNAL}; --debug shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


# -- output encoding ----------------------------------------------------------------------------
# What the reports use beyond ASCII, spelled in ASCII for a terminal that cannot show it
# (PYTHONIOENCODING=cp1252 or ascii, a C locale): never an UnicodeEncodeError.
_ASCII_SPELLING = {
    "—": "-",
    "–": "-",
    "…": "...",
    "·": "|",
    "→": "->",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
}


def _ascii_fallback(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    text = err.object[err.start : err.end]
    return "".join(_ASCII_SPELLING.get(ch, "?") for ch in text), err.end


codecs.register_error("vllm_log_ascii", _ascii_fallback)


def _never_fail_to_encode(stream: TextIO) -> None:
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:  # noqa: SIM105 (contextlib: an import a short check does without)
            reconfigure(errors="vllm_log_ascii")
        except (ValueError, OSError):  # a stream that cannot change: leave it
            pass


if __name__ == "__main__":
    sys.exit(main())
