#!/usr/bin/env bash
# Install everything the tests need (idempotent), then run the whole suite.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's tools first: 15-node.sh may put Node 20 there for the steps after it.
export PATH="$PWD/.venv/bin:$PATH"
for step in scripts/install/[0-9]*.sh; do
  echo "==> $step"
  bash "$step"
done
# shellcheck disable=SC1091
. .venv/bin/activate
echo "==> ruff"
ruff check server tests benchmarks grammars scripts
ruff format --check server tests benchmarks grammars scripts
echo "==> mypy"
mypy
echo "==> pytest"
exec python -m pytest "$@"
