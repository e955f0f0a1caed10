"""Screenshots of a crash log in VS Code's default dark and light themes, for docs/.

    .venv/bin/python tests/editors/vscode/screenshots.py docs/look-after [--vsix PATH]

Runs code-server with the .vsix (default: the one `scripts/install/40-vscode.sh` built), opens the
workspace's crash log at its root cause with the Problems panel closed, and writes PREFIX-dark.png and
PREFIX-light.png ("Dark Modern", "Light Modern"). Needs what the VS Code end-to-end test needs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1])]  # tests/editors (test_vscode), tests (support)

import test_vscode  # noqa: E402


class _Temporary:
    """The part of pytest's tmp_path_factory that the session uses."""

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix", type=Path, help="where to write PREFIX-dark.png and PREFIX-light.png")
    parser.add_argument("--vsix", type=Path, help="the extension to show (default: the built one)")
    args = parser.parse_args(argv)
    result = test_vscode._run_session(_Temporary(), vsix=args.vsix, screenshots=args.prefix.resolve())
    shots = result.get("themeScreenshots") or []
    for path in shots:
        print(path)
    if result.get("errors") or len(shots) != len(test_vscode.THEMES):
        print(result.get("errors"), result.get("nodeOutput", "")[-2000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
