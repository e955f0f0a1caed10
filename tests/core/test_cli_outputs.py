"""`check --format sarif|github|json` and the problem matcher, run as a user runs them, on corpus logs.

SARIF is validated against the official 2.1.0 schema (vendored in tests/fixtures/schemas), the
GitHub workflow commands are parsed back the way the Actions runner parses them, and the problem
matcher's regexes are applied (in Python and, where Node is installed, in JavaScript as the
runner does) to real text output.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from support import CRASH, CRASH2, FORMATS, HEALTHY, ROOT, crash_labels, run_cli, unavailable

OOM = FORMATS / "tp2-worker-oom.log"
SCHEMAS = Path(__file__).parent.parent / "fixtures" / "schemas"
SARIF_SCHEMA = SCHEMAS / "sarif-schema-2.1.0.json"
MATCHER = ROOT / ".github" / "vllm-log-lsp-matcher.json"
# A few corpus logs of different causes and phases (and one healthy log).
SAMPLE = ["002.log", "007.log", "011.log", "019.log"]


def sample_logs() -> list[Path]:
    """Relative to the checkout (the commands run there), as a CI job names its files."""
    return [(CRASH / name).relative_to(ROOT) for name in SAMPLE]


def run(*args: str, **kwargs):
    return run_cli(*args, cwd=ROOT, **kwargs)


def label_lines(folder: Path = CRASH) -> dict[str, int]:
    return {entry["file"]: entry["root_cause_line"] for entry in crash_labels(folder)}


def assert_labelled_roots(labels: dict[str, int], found: list[tuple[str, int]]) -> None:
    """Each labelled log's root-cause line is among the lines reported for it."""
    for name in {Path(path).name for path, _ in found} & labels.keys():
        assert labels[name] in [line for path, line in found if Path(path).name == name], name


def json_report(*paths: Path) -> dict:
    result = run("check", "--format", "json", *map(str, paths))
    return json.loads(result.stdout)


# -- SARIF ---------------------------------------------------------------------------------------
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_the_vendored_schema_is_the_official_one() -> None:
    digest = hashlib.sha256(SARIF_SCHEMA.read_bytes()).hexdigest()
    assert digest == "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    assert json.loads(SARIF_SCHEMA.read_text())["id"].endswith(
        "/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    )


def test_the_validator_rejects_what_is_not_sarif() -> None:
    """The schema check can fail: a result without a message, a bad level, a line 0."""
    validator = sarif_validator()
    good = json.loads(run("check", "--format", "sarif", str(OOM)).stdout)
    assert not list(validator.iter_errors(good))
    for path, value in (
        (("results", 0, "message"), None),
        (("results", 0, "level"), "fatal"),
        (("results", 0, "locations", 0, "physicalLocation", "region", "startLine"), 0),
    ):
        broken = json.loads(json.dumps(good))
        target = broken["runs"][0]
        for key in path[:-1]:
            target = target[key]
        if value is None:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        assert list(validator.iter_errors(broken)), path


def test_sarif_is_valid_and_has_one_result_per_incident_at_the_root_cause() -> None:
    logs = [*sample_logs(), HEALTHY / "001.log"]
    result = run("check", "--format", "sarif", *map(str, logs))
    assert result.returncode == 1
    sarif = json.loads(result.stdout)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in sarif_validator().iter_errors(sarif)]
    assert errors == []
    [sarif_run] = sarif["runs"]
    report = json_report(*logs)
    incidents = [(entry["path"], i) for entry in report["files"] for i in entry["incidents"]]
    assert len(sarif_run["results"]) == len(incidents) >= len(SAMPLE)
    labels = label_lines()
    rules = sarif_run["tool"]["driver"]["rules"]
    for sarif_result, (path, incident) in zip(sarif_run["results"], incidents, strict=True):
        location = sarif_result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == Path(path).as_posix()
        region = location["region"]
        assert region["startLine"] == incident["root_cause"]["line"]
        assert region["startColumn"] == incident["root_cause"]["column"]
        assert region["endColumn"] > region["startColumn"]
        rule = rules[sarif_result["ruleIndex"]]
        assert sarif_result["ruleId"] == rule["id"] == incident["root_cause"]["cause"]
        assert sarif_result["level"] == "error"
        related = [r["physicalLocation"]["region"]["startLine"] for r in sarif_result["relatedLocations"]]
        assert related == [s["line"] for s in incident["symptoms"]]
        for number, fix in enumerate(incident["fixes"], 1):
            assert f"Fix {number} ({fix['kind']}): {fix['title']}" in sarif_result["message"]["text"]
    assert_labelled_roots(labels, [(path, i["root_cause"]["line"]) for path, i in incidents])
    assert len({r["id"] for r in rules}) == len(rules)  # each rule once, shared by its results
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    assert sarif_run["invocations"][0]["executionSuccessful"] is True


def test_sarif_rules_come_from_the_catalog() -> None:
    from vllm_log_lsp.core.catalog import builtin_catalog

    sarif = json.loads(run("check", "--format", "sarif", *map(str, sample_logs())).stdout)
    catalog = builtin_catalog()
    for rule in sarif["runs"][0]["tool"]["driver"]["rules"]:
        source = catalog.rule(rule["id"])
        assert source is not None, rule["id"]
        assert rule["shortDescription"]["text"] == source.title
        assert rule["properties"]["family"] == source.family
        for number, fix in enumerate(source.fixes, 1):
            assert f"{number}. {fix.title} ({fix.kind})" in rule["help"]["text"]


def test_sarif_reports_unreadable_files_as_notifications(tmp_path: Path) -> None:
    binary = tmp_path / "core.log"
    binary.write_bytes(bytes(range(256)) * 20)
    spaced = tmp_path / "my run.log"
    spaced.write_bytes(OOM.read_bytes())
    result = run("check", "--format", "sarif", str(binary), str(spaced))
    assert result.returncode == 2
    sarif = json.loads(result.stdout)
    assert not list(sarif_validator().iter_errors(sarif))
    [sarif_run] = sarif["runs"]
    [note] = sarif_run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error" and "binary data" in note["message"]["text"]
    assert sarif_run["invocations"][0]["executionSuccessful"] is False
    [found] = sarif_run["results"]
    uri = found["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == spaced.as_uri() and "%20" in uri  # an absolute path: a file URI, escaped


def test_sarif_of_standard_input() -> None:
    result = run("check", "--format", "sarif", "-", stdin=OOM.read_bytes())
    sarif = json.loads(result.stdout)
    assert not list(sarif_validator().iter_errors(sarif))
    assert sarif["runs"][0]["artifacts"][0]["location"]["uri"] == "stdin"


# -- GitHub workflow commands ----------------------------------------------------------------------
COMMAND = re.compile(r"^::(error|warning|notice)(?: (.*?))?::(.*)$")


def unescape(text: str) -> str:
    """What the Actions runner does to a command's values."""
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def parse_commands(stdout: str) -> list[tuple[str, dict, str]]:
    commands = []
    for line in stdout.splitlines():
        match = COMMAND.match(line)
        if match is None:
            continue
        level, props, message = match.groups()
        # The runner splits properties on `,` and each at its first `=`: escaped values hold neither.
        fields = dict(part.split("=", 1) for part in props.split(",")) if props else {}
        commands.append((level, {k: unescape(v) for k, v in fields.items()}, unescape(message)))
    return commands


def test_github_commands_annotate_each_root_cause() -> None:
    result = run("check", "--format", "github", *map(str, sample_logs()))
    assert result.returncode == 1
    commands = parse_commands(result.stdout)
    errors = [(props, message) for level, props, message in commands if level == "error"]
    report = json_report(*sample_logs())
    incidents = [(entry["path"], i) for entry in report["files"] for i in entry["incidents"]]
    assert len(errors) == len(incidents)
    labels = label_lines()
    for (props, message), (path, incident) in zip(errors, incidents, strict=True):
        root = incident["root_cause"]
        assert props["file"] == path
        assert int(props["line"]) == root["line"]
        assert (int(props["col"]), int(props["endColumn"])) == (root["column"], root["end_column"])
        assert props["title"] == f"vllm-log-lsp: {root['cause']} — {root['title']}"
        assert message.startswith(root["message"])
        assert f"Fix 1 ({incident['fixes'][0]['kind']}): {incident['fixes'][0]['title']}" in message
        assert all(f"Symptom line {s['line']}: " in message for s in incident["symptoms"])
    assert_labelled_roots(labels, [(props["file"], int(props["line"])) for props, _ in errors])
    # Every line is a command or the summary table: nothing else reaches the runner.
    other = [line for line in result.stdout.splitlines() if line and not line.startswith("::")]
    assert other and other[0].startswith("summary: 4 files checked")


def test_github_commands_cannot_be_injected_by_the_log(tmp_path: Path) -> None:
    """A log's text is untrusted: `%`, `:`, `,`, CR and LF in it never end or start a command."""
    text = OOM.read_text(encoding="utf-8")
    hostile = text.replace(
        "Tried to allocate 2.00 GiB.",
        "Tried to allocate 2.00 GiB, 100%0A::error file=x::pwned ::warning::x.",
        1,
    )
    log = tmp_path / "a,b:c%d.log"
    log.write_text(hostile, encoding="utf-8")
    result = run("check", "--format", "github", str(log))
    lines = result.stdout.splitlines()
    assert all(line.startswith("::") for line in lines)
    errors = [c for c in parse_commands(result.stdout) if c[0] == "error"]
    assert len(errors) == 1 and "pwned" not in "".join(c[1].get("file", "") for c in errors)
    _level, props, message = errors[0]
    assert props["file"] == str(log)  # `,` `:` `%` escaped in the property, read back intact
    assert "100%0A::error file=x::pwned ::warning::x." in message  # the log's text, as it was
    assert "::error file=x" not in "\n".join(lines[1:]) and len(lines) == len(parse_commands(result.stdout))


def test_github_escaping_round_trips_line_breaks() -> None:
    from vllm_log_lsp.report.github import command

    line = command("error", "a\r\nb%0A::x", file="d,e:f.log", title="t: 100%")
    assert "\n" not in line and "\r" not in line
    [(level, props, message)] = parse_commands(line)
    assert (level, props, message) == ("error", {"file": "d,e:f.log", "title": "t: 100%"}, "a\r\nb%0A::x")


def test_github_marks_unreadable_files_and_health_warnings(tmp_path: Path) -> None:
    binary = tmp_path / "x.log"
    binary.write_bytes(bytes(range(256)) * 20)
    result = run("check", "--format", "github", str(binary), str(FORMATS / "kv-pressure-oom.log"))
    assert result.returncode == 2
    commands = parse_commands(result.stdout)
    assert commands[0][0] == "error" and commands[0][1]["file"] == str(binary)
    assert "binary data" in commands[0][2] and "line" not in commands[0][1]
    health = json_report(FORMATS / "kv-pressure-oom.log")["files"][0]["health"]["findings"]
    warnings = [c for c in commands if c[0] == "warning"]
    assert [int(c[1]["line"]) for c in warnings] == [h["line"] for h in health if h["severity"] == "warning"]


# -- the problem matcher --------------------------------------------------------------------------
def matcher_patterns() -> list[dict]:
    matchers = json.loads(MATCHER.read_text(encoding="utf-8"))["problemMatcher"]
    return [{**m["pattern"][0], "owner": m["owner"], "severity": m.get("severity")} for m in matchers]


def apply_matchers(output: str) -> list[tuple[str, str, int, str]]:
    """(owner, file, line, code) for each output line a matcher takes, as the runner applies them."""
    found = []
    for line in output.splitlines():
        for pattern in matcher_patterns():
            match = re.match(pattern["regexp"], line)
            if match:
                found.append(
                    (
                        pattern["owner"],
                        match[pattern["file"]],
                        int(match[pattern["line"]]),
                        match[pattern["code"]],
                    )
                )
                break
    return found


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_the_problem_matcher_reads_the_text_report(encoding: str) -> None:
    """Every root cause and health warning of real output, nothing else (symptoms, fixes, notes,
    the summary); also when a terminal cannot show `—` and the report spells it `-`."""
    logs = [*sample_logs(), FORMATS / "kv-pressure-oom.log", CRASH2 / "101.log"]
    result = run("check", *map(str, logs), env={"PYTHONIOENCODING": encoding})
    assert ("—" in result.stdout) == (encoding == "utf-8")
    found = apply_matchers(result.stdout)
    report = json_report(*logs)
    expected = [
        ("vllm-log-lsp", e["path"], i["root_cause"]["line"], i["root_cause"]["cause"])
        for e in report["files"]
        for i in e["incidents"]
    ]
    health = [
        ("vllm-log-lsp-health", e["path"], h["line"], h["id"])
        for e in report["files"]
        for h in e["health"]["findings"]
        if h["severity"] == "warning"
    ]
    assert sorted(found) == sorted(expected + health)
    assert health  # the health matcher is exercised too


def test_the_problem_matcher_regexes_in_javascript() -> None:
    """The runner applies the regexes with JavaScript's RegExp: the same matches as Python's."""
    node = shutil.which("node")
    if node is None:
        unavailable("node is not installed", "scripts/install/15-node.sh")
    output = run("check", *map(str, sample_logs()), str(FORMATS / "kv-pressure-oom.log")).stdout
    script = (
        "const fs=require('fs');const m=JSON.parse(fs.readFileSync(process.argv[1],'utf8')).problemMatcher;"
        "const out=[];for(const line of fs.readFileSync(0,'utf8').split('\\n')){for(const x of m){"
        "const p=x.pattern[0];const r=new RegExp(p.regexp).exec(line);"
        "if(r){out.push([x.owner,r[p.file],Number(r[p.line]),r[p.code]]);break;}}}"
        "console.log(JSON.stringify(out));"
    )
    result = subprocess.run(
        [node, "-e", script, str(MATCHER)], input=output, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert [tuple(x) for x in json.loads(result.stdout)] == apply_matchers(output)


# -- JSON additions --------------------------------------------------------------------------------
def test_json_has_severities_ranges_timestamps_and_summaries() -> None:
    report = json_report(OOM, HEALTHY / "001.log")
    assert report["version"] == 2
    crash, healthy = report["files"]
    [incident] = crash["incidents"]
    root = incident["root_cause"]
    assert incident["severity"] == "error"
    line = OOM.read_text(encoding="utf-8").splitlines()[root["line"] - 1]
    assert line[root["column"] - 1 : root["end_column"] - 1] == root["text"].splitlines()[0]
    assert root["timestamp"] == "10-03 21:22:46"  # from its writer's logger header
    assert incident["death"] == {"line": 15, "timestamp": "10-03 21:22:46"}
    for symptom in incident["symptoms"]:
        text = OOM.read_text(encoding="utf-8").splitlines()[symptom["line"] - 1]
        assert symptom["severity"] == "warning"
        assert (
            text[symptom["column"] - 1 : symptom["end_column"] - 1].rstrip()
            == symptom["text"].splitlines()[0]
        )
    assert crash["summary"] == {
        "status": "death",
        "incidents": 1,
        "causes": {"oom-serving": 1},
        "precursors": 0,
        "health_findings": 0,
        "warnings": 0,
    }
    assert healthy["summary"]["status"] == "no-death"
    assert report["summary"] == {
        "files": 2,
        "with_death": 1,
        "without_death": 1,
        "unreadable": 0,
        "internal_errors": 0,
        "incidents": 1,
        "causes": [{"cause": "oom-serving", "incidents": 1, "files": 1}],
        "exit_status": 1,
    }


def test_json_precursors_are_listed_per_file() -> None:
    """Every corpus log's precursors, each on the line and columns of its text."""
    logs = sorted(CRASH.glob("*.log")) + sorted(CRASH2.glob("*.log"))
    report = json_report(*logs)
    precursors = [(e["path"], p) for e in report["files"] for p in e["precursors"]]
    assert precursors, "the corpus has precursors (the editors show them as Information)"
    for path, pre in precursors:
        assert pre["severity"] == "information" and pre["id"] and pre["title"]
        line = (ROOT / path).read_bytes().decode("utf-8", "replace").split("\n")[pre["line"] - 1]
        assert pre["text"].splitlines()[0].strip() in re.sub(r"\x1b\[[0-9;]*m", "", line)
    for entry in report["files"]:
        assert entry["summary"]["precursors"] == len(entry["precursors"])


def test_timestamps_of_runtime_prefixes_win_and_tracebacks_take_their_writers(tmp_path: Path) -> None:
    """A `docker logs -t` time is fuller than vLLM's header; a traceback line takes the time of
    its writer's line above it, not another process's."""
    lines = OOM.read_text(encoding="utf-8").splitlines()
    stamped = [f"2025-10-03T21:22:{i % 60:02d}.{i:06d}Z {line}" for i, line in enumerate(lines)]
    log = tmp_path / "docker.log"
    log.write_text("\n".join(stamped) + "\n", encoding="utf-8")
    [incident] = json_report(log)["files"][0]["incidents"]
    root_line = incident["root_cause"]["line"]
    assert (
        incident["root_cause"]["timestamp"]
        == f"2025-10-03T21:22:{(root_line - 1) % 60:02d}.{root_line - 1:06d}Z"
    )
    bare = tmp_path / "bare.log"
    bare.write_text(
        "(EngineCore_DP0 pid=7) ERROR 10-03 21:22:40 [core.py:1] EngineCore failed to start.\n"
        "(APIServer pid=1) INFO 10-03 21:22:59 [api.py:1] Waiting\n"
        "(EngineCore_DP0 pid=7) Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=7)   File "x.py", line 1, in f\n'
        "(EngineCore_DP0 pid=7) ValueError: No available memory for the cache blocks.\n"
        "(APIServer pid=1) ERROR 10-03 21:23:05 [core_client.py:1] Engine core initialization failed. See root cause above.\n",
        encoding="utf-8",
    )
    [incident] = json_report(bare)["files"][0]["incidents"]
    assert incident["root_cause"]["line"] == 5
    assert incident["root_cause"]["timestamp"] == "10-03 21:22:40"


def test_a_log_without_timestamps_has_none() -> None:
    data = b"".join(
        line.split(b"] ", 1)[1] if b"] " in line else line
        for line in OOM.read_bytes().splitlines(keepends=True)
    )
    report = json.loads(run("check", "--format", "json", "-", stdin=data).stdout)
    [incident] = report["files"][0]["incidents"]
    assert incident["root_cause"]["timestamp"] is None
