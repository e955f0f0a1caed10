"""The shell's report of a process it lost, in the translations a vLLM host most often runs
(glibc's and bash's: zh_CN, and ja_JP's SIGKILL), read as the English one: before, a log ending
with `段错误 (核心已转储)` or `… 已杀死  python -m vllm …` had no death and `check` exited 0.

Other languages (`Getötet`, `Speicherzugriffsfehler`, `Убито`, …) are not read: each takes a
literal of the pre-filter, which has room for few more (`test_prefilter_literals`)."""

from __future__ import annotations

import pytest

from vllm_log_lsp.core.analyze import analyze

START = [
    "INFO 05-02 13:30:01 [api_server.py:1] vLLM API server version 0.8.5",
    "INFO 05-02 13:30:15 [model_runner.py:1108] Starting to load model Qwen/Qwen2.5-7B-Instruct...",
]
COMMAND = "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize(
    ("report", "rule"),
    [
        (f"./serve.sh: line 3: 41234 Killed                  {COMMAND}", "host-ram-oom-killed"),
        (f"./serve.sh: 行 3: 41234 已杀死               {COMMAND}", "host-ram-oom-killed"),
        (f"./serve.sh: 行 3: 41234 強制終了             {COMMAND}", "host-ram-oom-killed"),
        ("已杀死", "host-ram-oom-killed"),
        ("Segmentation fault (core dumped)", "segmentation-fault"),
        ("段错误 (核心已转储)", "segmentation-fault"),
        ("段错误（核心已转储）", "segmentation-fault"),
        ("段错误", "segmentation-fault"),
        ("Segmentation fault (コアダンプ)", "segmentation-fault"),
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_the_shells_report_in_its_language_is_the_death(report: str, rule: str, ending: str) -> None:
    text = ending.join([*START, report]) + ending
    [finding] = analyze(text).findings
    assert (finding.line, finding.rule_id) == (2, rule)
    assert finding.root_text == report


@pytest.mark.parametrize("words", ["段错误的原因是什么", "已杀死的进程会重启吗？", "强制終了"])
def test_the_words_inside_a_sentence_are_no_death(words: str) -> None:
    assert (
        analyze("\n".join([*START, f"INFO 05-02 13:31:00 [chat.py:1] user asked: {words}"]) + "\n").findings
        == ()
    )
