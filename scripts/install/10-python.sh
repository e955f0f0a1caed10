#!/usr/bin/env bash
# Python: a project virtual environment with the package, its test extra and the type checker (pinned).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  -c scripts/install/constraints.txt -e '.[test,dev]'
