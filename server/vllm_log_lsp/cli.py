"""Command line: `check` logs (text or JSON), list and explain rules, and serve LSP.

argparse (stdlib) is the CLI framework: the commands are few and flat, and it keeps the bundled
VS Code server free of extra dependencies.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from . import __version__
from .core.analyze import analyze
from .core.catalog import Catalog, builtin_catalog, catalog_with_user_files
from .core.model import PHASE_TITLES, Analysis, Finding, ResolvedFix
from .core.text import Buffer, inspect_log_bytes

EXIT_HEALTHY, EXIT_DEATH, EXIT_UNREADABLE = 0, 1, 2
JSON_SCHEMA_VERSION = 1


class Style:
    """ANSI styling that is a no-op when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("1;31", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def use_colour(choice: str, stream: TextIO) -> bool:
    """Colour only on a terminal, unless forced; NO_COLOR turns `auto` off."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


# -- check ------------------------------------------------------------------------------------
# Files larger than this are mapped into memory instead of read: the analysis touches only the
# lines around what the pre-filter finds, so most of a large log is never paged in.
MMAP_THRESHOLD = 1 << 20


def read_input(path: str) -> Buffer:
    """The bytes of a log file (mapped when large), or of standard input for `-`."""
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size >= MMAP_THRESHOLD and os.path.isfile(path):
            try:
                return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                pass  # not mappable (a pipe, a special file): read it
        return handle.read()


def _plain_file(path: str) -> str | None:
    """The path when grep may read it directly: a regular file without a byte-order mark."""
    if path == "-" or not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return None if handle.read(3) == b"\xef\xbb\xbf" else path


def finding_to_json(finding: Finding, lines: list[str] | None = None) -> dict:
    """The documented JSON shape of one incident (see README, "check --format json")."""
    ctx = finding.context
    return {
        "root_cause": {
            "line": finding.line + 1,
            "column": finding.root.start + 1,
            "text": finding.root_text,
            "cause": finding.rule_id,
            "title": finding.title,
            "family": finding.family,
            "message": finding.message,
            "recognized": finding.recognized,
        },
        "symptoms": [{"line": s.line + 1, "text": s.text, "kind": s.kind} for s in finding.symptoms],
        "phase": finding.phase,
        "phase_line": None if finding.phase_line is None else finding.phase_line + 1,
        "evidence": finding.evidence,
        "fixes": [
            {
                "title": f.title,
                "kind": f.fix.kind,
                "command_line": f.command_line,
                "detail": f.fix.detail,
                "ops": [
                    {"op": o.op.op, "name": o.op.name, "key": o.op.key, "value": o.value, "source": o.source}
                    for o in f.ops
                ],
            }
            for f in finding.fixes
        ],
        "next_steps": list(finding.next_steps),
        "explanation": finding.explanation,
        "references": list(finding.references),
        "context": {
            "vllm_version": ctx.vllm_version,
            "model": ctx.model,
            "args": ctx.args,
            "gpu": ctx.gpu,
            "tensor_parallel_size": ctx.tensor_parallel_size,
        },
    }


def render_text(path: str, analysis: Analysis, style: Style) -> str:
    """Compiler-style report of one file."""
    out: list[str] = []
    for warning in analysis.warnings:
        out.append(f"{path}: {style.yellow('warning')}: {warning}")
    if not analysis.findings:
        out.append(f"{path}: {style.dim('no engine death found')}")
        return "\n".join(out)
    for finding in analysis.findings:
        out.extend(_finding_lines(path, finding, style))
        out.append("")
    return "\n".join(out).rstrip("\n")


def _finding_lines(path: str, finding: Finding, style: Style) -> list[str]:
    ctx = finding.context
    head = f"{style.bold(f'{path}:{finding.line + 1}:')} {style.red(finding.rule_id)} — {style.bold(finding.title)}"
    lines = [head, f"  {style.dim('|')} {_excerpt(finding.root_text)}"]
    if finding.message != finding.title:
        lines.append(f"  {finding.message}")
    phase = PHASE_TITLES.get(finding.phase, finding.phase)
    where = f" (line {finding.phase_line + 1})" if finding.phase_line is not None else ""
    facts = [f"phase: {phase}{where}"]
    if ctx.vllm_version:
        facts.append(f"vLLM {ctx.vllm_version}")
    if ctx.model:
        facts.append(f"model {ctx.model}")
    lines.append("  " + style.dim(" · ".join(facts)))
    for number, fix in enumerate(finding.fixes, 1):
        command = f": {style.cyan(fix.command_line)}" if fix.command_line else ""
        lines.append(f"  fix {number} ({fix.fix.kind}): {fix.title}{command}")
    for step in finding.next_steps:
        lines.append(f"  next: {step}")
    for symptom in finding.symptoms:
        lines.append(f"  {style.yellow('symptom')} {path}:{symptom.line + 1}: {_excerpt(symptom.text, 100)}")
    return lines


def _excerpt(text: str, width: int = 160) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def cmd_check(args: argparse.Namespace, catalog: Catalog) -> int:
    if args.fix is not None:
        return cmd_fix(args, catalog)
    if args.write or args.fix_index is not None:
        print("vllm-log-lsp: error: --write and --fix-index need --fix SCRIPT", file=sys.stderr)
        return EXIT_UNREADABLE
    stdout = sys.stdout
    style = Style(use_colour(args.color, stdout))
    status = EXIT_HEALTHY
    reports = []
    for path in args.files:
        try:
            data = read_input(path)
        except OSError as err:
            message = f"cannot read {path}: {err.strerror or err}"
            print(f"vllm-log-lsp: error: {message}", file=sys.stderr)
            reports.append({"path": path, "error": message, "warnings": [], "incidents": []})
            status = EXIT_UNREADABLE
            continue
        data, warnings = inspect_log_bytes(data)
        analysis = analyze(data, catalog, tuple(warnings), path=_plain_file(path))
        if analysis.findings and status == EXIT_HEALTHY:
            status = EXIT_DEATH
        if args.format == "json":
            reports.append(
                {
                    "path": path,
                    "error": None,
                    "warnings": list(analysis.warnings),
                    "incidents": [finding_to_json(f) for f in analysis.findings],
                }
            )
        else:
            print(render_text(path if path != "-" else "<stdin>", analysis, style))
    if args.format == "json":
        json.dump({"version": JSON_SCHEMA_VERSION, "files": reports}, stdout, indent=2)
        stdout.write("\n")
    return status


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


def cmd_fix(args: argparse.Namespace, catalog: Catalog) -> int:
    """`check LOG --fix SCRIPT [--write] [--fix-index N]`: the log's fix as a diff of SCRIPT.

    Prints the unified diff of the preferred fix (the first fix of the first finding that
    changes SCRIPT) on stdout, with what it does on stderr; `--write` also saves SCRIPT.
    Exit 0: nothing to change (no fix applies, or SCRIPT has it already); 1: a diff was printed
    (and written); 2: LOG or SCRIPT unreadable, SCRIPT malformed, or the fix cannot be applied
    to SCRIPT (the reason on stderr).
    """

    from .launch import fix_text, unified_diff  # here: YAML/shell parsers cost 0.2 s to import

    def fail(message: str) -> int:
        print(f"vllm-log-lsp: error: {message}", file=sys.stderr)
        return EXIT_UNREADABLE

    if len(args.files) != 1:
        return fail("--fix takes exactly one LOG")
    log, script = args.files[0], args.fix
    try:
        data = read_input(log)
    except OSError as err:
        return fail(f"cannot read {log}: {err.strerror or err}")
    try:
        with open(script, encoding="utf-8", newline="") as handle:  # keep CRLF as it is
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        return fail(f"cannot read {script}: {getattr(err, 'strerror', None) or err}")
    data, warnings = inspect_log_bytes(data)
    analysis = analyze(data, catalog, tuple(warnings), path=_plain_file(log))
    try:
        choices = fix_choices(analysis, args.fix_index)
    except ValueError as err:
        return fail(str(err))
    if not choices:
        found = "no engine death found" if not analysis.findings else "no fix that edits a launch script"
        print(f"vllm-log-lsp: nothing to change: {found} in {log}", file=sys.stderr)
        return EXIT_NOTHING_TO_FIX
    refused = None
    for finding, number, fix in choices:
        result = fix_text(text, script, fix.ops, context=finding.context, captures=dict(finding.evidence))
        if result.changed:
            shown = os.path.relpath(script)  # diff headers `a/PATH`, `b/PATH` as git writes them
            if shown.startswith(".."):
                shown = os.path.abspath(script).lstrip("/")
            sys.stdout.write(unified_diff(result.old_text, result.new_text, shown))
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
    if refused is not None:
        return fail(refused)
    print(f"vllm-log-lsp: nothing to change: {script} already has the fix", file=sys.stderr)
    return EXIT_NOTHING_TO_FIX


# -- rules / explain ------------------------------------------------------------------------------
def cmd_rules(args: argparse.Namespace, catalog: Catalog) -> int:
    rules = [r for r in catalog.rules if not args.family or r.family == args.family]
    if args.format == "json":
        json.dump([{"id": r.id, "title": r.title, "family": r.family} for r in rules], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    width = max((len(r.id) for r in rules), default=10)
    for rule in rules:
        print(f"{rule.id:<{width}}  {rule.family:<18}  {rule.title}")
    return 0


def cmd_explain(args: argparse.Namespace, catalog: Catalog) -> int:
    rule = catalog.rule(args.rule_id)
    if rule is None:
        print(f"vllm-log-lsp: error: no rule {args.rule_id!r} (see `vllm-log-lsp rules`)", file=sys.stderr)
        return EXIT_UNREADABLE
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
    print("\n".join(out))
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
def cmd_serve(args: argparse.Namespace, catalog: Catalog) -> int:
    from .lsp.server import run_server

    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        run_server("tcp", host or "127.0.0.1", int(port))
    else:
        run_server("stdio")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-log-lsp",
        description="Turn a vLLM crash log into a diagnosis: root cause, phase and fix.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--rules", action="append", default=[], metavar="FILE", help="extra rule file (TOML); repeatable"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser(
        "check",
        help="diagnose log files (exit 0: healthy, 1: engine died, 2: unreadable)",
        epilog="With --fix SCRIPT: exit 0: nothing to change, 1: a diff was printed (and written "
        "with --write), 2: LOG or SCRIPT unreadable, or SCRIPT malformed (reason on stderr).",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="log files; - reads standard input")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    check.add_argument(
        "--fix",
        metavar="SCRIPT",
        help="print the log's preferred fix as a unified diff of this launch script "
        "(shell, compose, Kubernetes, Dockerfile, Python) instead of the report",
    )
    check.add_argument("--write", action="store_true", help="with --fix: apply the fix to SCRIPT")
    check.add_argument(
        "--fix-index",
        type=int,
        metavar="N",
        help="with --fix: use fix N of the first finding (as the report numbers them) instead of "
        "the first fix that changes SCRIPT",
    )
    check.set_defaults(handler=cmd_check)

    rules = sub.add_parser("rules", help="list the cause catalog")
    rules.add_argument("--family", help="only this family")
    rules.add_argument("--format", choices=("text", "json"), default="text")
    rules.set_defaults(handler=cmd_rules)

    explain = sub.add_parser("explain", help="explain one cause of the catalog")
    explain.add_argument("rule_id", metavar="ID")
    explain.set_defaults(handler=cmd_explain)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--stdio", action="store_true", help="speak LSP over stdio (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (for debugging)")
    serve.set_defaults(handler=cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    catalog = catalog_with_user_files(args.rules) if args.rules else builtin_catalog()
    for error in catalog.errors:
        print(f"vllm-log-lsp: rule error: {error}", file=sys.stderr)
    try:
        return args.handler(args, catalog)
    except BrokenPipeError:  # `check … | head`
        return EXIT_HEALTHY
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
