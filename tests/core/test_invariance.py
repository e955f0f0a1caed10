"""Changes to a log that must not change its answer, over every corpus log.

A log reaches the tool through terminals, collectors and copies that add to its lines without
changing what vLLM printed: colour codes (vLLM colours its process prefixes on a terminal), a
collector's timestamp or host before every line, lines of other programs in between. Each
transformation here is applied to every crash and healthy log of the corpus, and the deaths
must be the same: the same rule on the same line (the same root text where lines move).
`test_root_choice` does the same for Kubernetes pod columns.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable

import pytest

from support import CRASH, CRASH2, CRASH3, HEALTHY, read_log
from vllm_log_lsp.core.analyze import analyze

LOGS = [p for folder in (CRASH, CRASH2, CRASH3, HEALTHY) for p in sorted(folder.glob("*.log"))]
TEXTS = {f"{p.parent.name}/{p.name}": read_log(p) for p in LOGS}
_PROCESS = re.compile(r"(?m)^\(([A-Za-z_][\w.\-]* pid=\d+)\)")


def _coloured(text: str) -> str:
    """vLLM's process prefixes coloured as it prints them to a terminal."""
    return _PROCESS.sub(lambda m: f"\x1b[1;36m({m.group(1)})\x1b[0;0m", text)


def _each_line(prefix: Callable[[int], str]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        lines = text.split("\n")
        return "\n".join(
            prefix(n) + line if line or n < len(lines) - 1 else line for n, line in enumerate(lines)
        )

    return apply


# A collector's column before every line: docker's and kubectl's timestamps, journald's, a
# launcher's.
COLUMNS: dict[str, Callable[[str], str]] = {
    "docker -t": _each_line(lambda n: f"2025-10-31T16:32:{n % 60:02d}.{n:09d}Z "),
    "kubectl --timestamps": _each_line(lambda n: f"2025-10-31T16:32:{n % 60:02d}.{n % 999_999:06d}+00:00 "),
    "journalctl": _each_line(lambda n: f"Oct 31 16:32:{n % 60:02d} gpu-node-1 vllm[4242]: "),
    # A launcher's tag for the rank that printed the line: torchrun --tee, mpirun --tag-output.
    "torchrun": _each_line(lambda n: "[default0]:"),
    "mpirun": _each_line(lambda n: "[1,0]<stderr>:"),
    # A viewer's line-number gutter, copied with the text: `less -N`, a `N | ` table, `bat`.
    "less -N": _each_line(lambda n: f"{n + 1:>7} "),
    "numbered | ": _each_line(lambda n: f"{n + 1:>5} | "),
    "bat": _each_line(lambda n: f"{n + 1:>4} \u2502 "),
    # ... with no space after its bar: the gutter ends where the line's text begins (`[rank0]:`).
    "numbered|": _each_line(lambda n: f"{n + 1:>4}|"),
    "numbered\u2502": _each_line(lambda n: f"{n + 1}\u2502"),
    # pm2's process column (an id and a name, each before a bar): a compose-like column.
    "pm2": _each_line(lambda n: "0|vllm     | "),
    # A Kubernetes node's container log (CRI): a timestamp, the stream, a full line's `F`.
    "CRI": _each_line(lambda n: f"2025-10-31T16:32:{n % 60:02d}.{n:09d}Z stderr F "),
    # A log quoted in an issue or a mail.
    "quoted": _each_line(lambda n: "> "),
}


def _deaths(text: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule_id) for f in analyze(text).findings]


@functools.cache
def _plain_deaths(log: str) -> list[tuple[int, str]]:
    """The deaths of corpus log `log` as it is (read once for every transformation)."""
    return _deaths(TEXTS[log])


def _answering_otherwise(changed: dict[str, str]) -> list[str]:
    """The logs of `changed` (each a corpus log transformed) whose deaths are not the log's own."""
    return [log for log, text in changed.items() if _deaths(text) != _plain_deaths(log)]


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_a_collectors_column_changes_no_answer(name: str) -> None:
    transform = COLUMNS[name]
    assert not _answering_otherwise({log: transform(text) for log, text in TEXTS.items()})


# vLLM's logger header, `LEVEL MM-DD HH:MM:SS [file.py:N] `, and a format of the user's own in
# its place (`VLLM_LOGGING_CONFIG_PATH`, or `VLLM_CONFIGURE_LOGGING=0` and a handler of theirs).
_VLLM_HEADER = re.compile(
    r"\b(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d:\d\d:\d\d)(?:\.\d+)? \[([\w./]+?)(?:\.py)?:\d+\] "
)


def _header_as(template: str) -> Callable[[str], str]:
    def apply(text: str) -> str:
        def header(m: re.Match[str]) -> str:
            level, month, day, time, path = m.groups()
            name = "vllm." + path.replace("/", ".").replace("...", "x")
            return template.format(level=level, month=month, day=day, time=time, name=name)

        return _VLLM_HEADER.sub(header, text)

    return apply


HEADERS: dict[str, Callable[[str], str]] = {
    "asctime - name - level": _header_as("2025-{month}-{day} {time},123 - {name} - {level} - "),
    "[asctime] [level] [name]": _header_as("[2025-{month}-{day} {time}] [{level}] [{name}] "),
    "asctime level name:": _header_as("2025-{month}-{day} {time},123 {level} {name}: "),
    "gunicorn's": _header_as("[2025-{month}-{day} {time} +0000] [1234] [{level}] "),
    "basicConfig's": _header_as("{level}:{name}:"),
    "ISO time [level]": _header_as("2025-{month}-{day}T{time}.123Z [{level}] "),
    "message only": _header_as(""),
}


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_a_logging_format_of_the_users_own_changes_no_answer(name: str) -> None:
    """Before, `[asctime] [level] [name]` changed 30 of 84 corpus logs' answers, and the time
    with a bracketed level 12: a traceback logged under a header no format knew was not read."""
    changed = {log: HEADERS[name](text) for log, text in TEXTS.items()}
    assert sum(text != TEXTS[log] for log, text in changed.items()) > 40
    assert _answering_otherwise(changed) == []


# A progress bar that never ended its row: the next line printed (often another process's) goes
# on in the bar's row. (vLLM's, tqdm's; a real log has `…5.98it/s](Worker_TP1 pid=515) INFO …`.)
BARS = [
    "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.20s/it]",
    "Capturing CUDA graphs (decode, FULL):  65%|██████▌   | 17/26 [00:02<00:01,  5.98it/s]",
    "model-00001-of-00004.safetensors:  99%|█████████▉| 9.93G/10.0G [01:40<00:00, 110MB/s]",
    "100%|██████████| 4/4 [00:02<00:00,  1.60it/s]",
]


@pytest.mark.parametrize("bar", BARS)
def test_a_bar_sharing_a_row_with_the_next_line_changes_no_answer(bar: str) -> None:
    """A bar before every 7th line (before, 19 of 84 corpus logs answered otherwise under
    vLLM's bar: a glued traceback header or error read as no one's text)."""
    glued = {
        log: "\n".join(bar + line if n % 7 == 3 and line else line for n, line in enumerate(text.split("\n")))
        for log, text in TEXTS.items()
    }
    assert _answering_otherwise(glued) == []


def _typographic(line: str) -> str:
    return re.sub(r'"([^"]*)"', "\u201c\\1\u201d", line).replace("'", "\u2019")


# A copy through a word processor, a chat or a document (typographic quotes), or from a web
# page's source (HTML's character references).
PUNCTUATION = {"typographic quotes": _typographic, "html references": html.escape}


@pytest.mark.parametrize("copy", sorted(PUNCTUATION))
def test_punctuation_a_copy_changed_changes_no_answer(copy: str) -> None:
    """Before, 15 (typographic) and 16 (HTML) of 84 corpus logs answered otherwise: rules,
    markers and frame paths no longer matched (`got an unexpected keyword argument ’num_tokens’`),
    and two healthy logs died where an answered request (`“POST /v1/… HTTP/1.1” 200 OK`) no longer
    showed the server carried on."""
    changed = {log: "\n".join(map(PUNCTUATION[copy], text.split("\n"))) for log, text in TEXTS.items()}
    assert _answering_otherwise(changed) == []


def _windows_paths(text: str) -> str:
    return re.sub(
        r'File "(/[^"]+)"', lambda m: 'File "C:\\Users\\me' + m.group(1).replace("/", "\\") + '"', text
    )


def test_frames_printed_with_windows_paths_change_no_answer() -> None:
    """Python on Windows prints `File "C:\\…\\vllm\\config.py"`; rules read frames with `/`
    (before, 2 of 84 corpus logs answered otherwise: 002 and 107 became `unrecognized`)."""
    changed = {log: _windows_paths(text) for log, text in TEXTS.items()}
    assert sum(text != TEXTS[log] for log, text in changed.items()) > 40
    assert _answering_otherwise(changed) == []


def test_colour_codes_change_no_answer() -> None:
    coloured = {log: _coloured(text) for log, text in TEXTS.items()}
    differ = [
        log for log, text in coloured.items() if text != TEXTS[log] and _deaths(text) != _plain_deaths(log)
    ]
    assert not differ
    assert sum(text != TEXTS[log] for log, text in coloured.items()) > 40  # (most logs have process prefixes)


# How the tool that showed a log writes a colour code's ESC: `cat -v`, a JSON string, a Python
# string, a shell's escape, the symbol; and a copy that lost it.
WRITTEN_ESC = {
    "cat -v": "^[",
    "json": "\\u001b",
    "python": "\\x1b",
    "shell": "\\033",
    "symbol": "\u241b",
    "lost": "",
}


@pytest.mark.parametrize("form", sorted(WRITTEN_ESC))
def test_colour_codes_written_out_change_no_answer(form: str) -> None:
    """A log copied from a viewer that shows the colour codes instead of colouring: the codes
    are taken out as the terminal's are (before, `^[[1;36m(EngineCore pid=1)` hid the process
    and two corpus logs lost their death)."""
    shown = {log: _coloured(text).replace("\x1b", WRITTEN_ESC[form]) for log, text in TEXTS.items()}
    differ = [
        log for log, text in shown.items() if text != TEXTS[log] and _deaths(text) != _plain_deaths(log)
    ]
    assert not differ


def test_lines_of_other_programs_in_between_change_no_cause() -> None:
    """A line of another program (a monitoring agent sharing the terminal) after every 20th
    line, not inside an indented block: the same causes with the same root text."""

    def noisy(text: str) -> str:
        out = []
        for n, line in enumerate(text.split("\n")):
            out.append(line)
            if n % 20 == 19 and not line.startswith((" ", "\t")):
                out.append(f"[2025-01-01 00:00:{n % 60:02d}] node-exporter: disk usage {n % 90}%")
        return "\n".join(out)

    def causes(text: str) -> list[tuple[str, str]]:
        return [(f.rule_id, f.root_text) for f in analyze(text).findings]

    differ = [log for log, text in TEXTS.items() if causes(noisy(text)) != causes(text)]
    assert not differ


def test_a_root_traceback_without_its_header_answers_as_with_it() -> None:
    """A paste that starts at a traceback's first frame (its `Traceback (most recent call
    last):` left behind): for every corpus log whose root cause is a traceback's exception,
    that header line alone taken out changes no cause. Its frames are read from the first one,
    as the header's reader reads them (before, 13 of 38 changed: rules that read the frames
    fell back to generic ones, and two logs got another root cause)."""
    checked = differ = 0
    failing = []
    for log, text in TEXTS.items():
        findings = analyze(text).findings
        exception = findings[0].exception if findings else None
        if exception is None or exception.traceback_start is None:
            continue
        pieces = re.split(r"(\r\n|\r|\n)", text)  # (line k is piece 2k: LSP's line breaks)
        header = exception.traceback_start
        if "Traceback (most recent call last)" not in pieces[2 * header]:
            continue
        headless = "".join(pieces[: 2 * header] + pieces[2 * header + 2 :])
        checked += 1
        want = (findings[0].rule_id, findings[0].root_text)
        got = [(f.rule_id, f.root_text) for f in analyze(headless).findings][:1]
        if got != [want]:
            differ += 1
            failing.append(log)
    assert checked > 30
    assert not failing, f"{differ} of {checked}"
