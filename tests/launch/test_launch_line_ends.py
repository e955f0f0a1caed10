"""Line ends: CRLF and mixed files are read without `\\r` in values and edited in their own style."""

from __future__ import annotations

from pathlib import Path

from vllm_log_lsp.core.model import FixOp, ValueSpec
from vllm_log_lsp.launch import apply_fix, discover, fix_text, invocations_in_text

EAGER = FixOp("add_flag", "--enforce-eager")
SEQS_128 = FixOp("set_flag", "--max-num-seqs", ValueSpec(literal="128"))
BLOCKING = FixOp("set_env", "CUDA_LAUNCH_BLOCKING", ValueSpec(literal="1"))


def test_crlf_continuations_are_one_command_without_carriage_returns_in_values() -> None:
    text = "vllm serve m \\\r\n  --max-num-seqs 256 \\\r\n  --port 8000\r\n"
    (inv,) = invocations_in_text("run.sh", text)
    assert inv.flags == {"--max-num-seqs": "256", "--port": "8000"}
    assert (inv.range.start_line, inv.range.end_line) == (0, 2)


def test_script_read_from_disk_keeps_crlf(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_bytes(b"#!/bin/bash\r\nvllm serve m --max-num-seqs 256\r\n")
    (inv,) = discover([str(tmp_path)]).invocations
    result = apply_fix(inv, [SEQS_128, EAGER, BLOCKING])  # reads the file itself
    assert result.new_text == (
        "#!/bin/bash\r\nexport CUDA_LAUNCH_BLOCKING=1\r\nvllm serve m --max-num-seqs 128 --enforce-eager\r\n"
    )


def test_mixed_line_ends_stay_per_line() -> None:
    """A CRLF script with one LF line pasted in: each line keeps its own end; new lines take
    the end of the line they are inserted at."""
    text = "echo start\n#!/x\r\nvllm serve m \\\r\n  --port 1\r\necho done\n"
    result = fix_text(text, "run.sh", [EAGER, BLOCKING])
    assert result.new_text == (
        "echo start\n#!/x\r\nexport CUDA_LAUNCH_BLOCKING=1\r\nvllm serve m \\\r\n  --port 1 \\\r\n"
        "  --enforce-eager\r\necho done\n"
    )


def test_crlf_file_without_a_final_line_end() -> None:
    result = fix_text("vllm serve m\r\nvllm serve n", "run.sh", [BLOCKING], index=1)
    assert result.new_text == "vllm serve m\r\nexport CUDA_LAUNCH_BLOCKING=1\r\nvllm serve n"
