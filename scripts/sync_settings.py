#!/usr/bin/env python3
"""Write the server's settings (`server/vllm_log_lsp/lsp/settings.py`, the source) into the VS Code
client's `package.json` (`contributes.configuration.properties`).

Usage: `.venv/bin/python scripts/sync_settings.py` (rewrites the file), `--check` (exit 1 and say
which keys differ, without writing; `tests/lsp/test_settings_schema.py` runs the same check).
Keys only the client reads (`settings.CLIENT_ONLY_KEYS`) are kept as they are written there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from vllm_log_lsp.lsp.settings import CLIENT_ONLY_KEYS, SECTION, contributed_properties

PACKAGE_JSON = Path(__file__).resolve().parent.parent / "vscode-client" / "package.json"


def synced(manifest: dict[str, Any]) -> dict[str, Any]:
    """`manifest` with the server's settings as `settings.py` declares them (client keys kept,
    in their place; the server's keys in `settings.py`'s order after them)."""
    properties = manifest["contributes"]["configuration"]["properties"]
    client = {k: v for k, v in properties.items() if k.removeprefix(f"{SECTION}.") in CLIENT_ONLY_KEYS}
    server = contributed_properties()
    order = [k for k in properties if k in client or k in server]
    order += [k for k in server if k not in order]
    new = {k: client[k] if k in client else server[k] for k in order}
    manifest["contributes"]["configuration"]["properties"] = new
    return manifest


def main(argv: list[str]) -> int:
    text = PACKAGE_JSON.read_text(encoding="utf-8")
    wanted = json.dumps(synced(json.loads(text)), indent=2, ensure_ascii=False) + "\n"
    if wanted == text:
        return 0
    if "--check" in argv:
        print(
            f"{PACKAGE_JSON} is not in step with settings.py: run scripts/sync_settings.py", file=sys.stderr
        )
        return 1
    PACKAGE_JSON.write_text(wanted, encoding="utf-8")
    print(f"wrote {PACKAGE_JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
