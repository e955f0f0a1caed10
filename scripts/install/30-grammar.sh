#!/usr/bin/env bash
# Grammar tests: vscode-tmgrammar-test (pinned in grammars/package-lock.json), installed with `npm ci`
# from the npm registry. Idempotent: reinstalls only when grammars/node_modules is missing or older
# than the lock file. Without node/npm it warns and skips (the grammar tests then skip), except in CI
# (CI=true), where it fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v node >/dev/null 2>&1 || missing+=(node)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "${CI:-}" = "true" ] || [ "${CI:-}" = "1" ]; then
    echo "30-grammar.sh: ERROR: ${missing[*]} not found; CI needs Node.js >= 18 and npm for the grammar tests" >&2
    exit 1
  fi
  echo "30-grammar.sh: warning: ${missing[*]} not found; grammar tests will be skipped" >&2
  exit 0
fi

stamp=grammars/node_modules/.package-lock.json  # written by npm on every install
bin=grammars/node_modules/.bin/vscode-tmgrammar-test
if [ -x "$bin" ] && [ -f "$stamp" ] && [ "$stamp" -nt grammars/package-lock.json ] \
  && [ "$stamp" -nt grammars/package.json ]; then
  echo "30-grammar.sh: grammars/node_modules is up to date"
  exit 0
fi
if [ -L grammars/node_modules ]; then
  # Another checkout's install (a worktree sharing main's): `npm ci` through the link would empty it.
  echo "30-grammar.sh: grammars/node_modules links to a shared install: not reinstalling through it"
  exit 0
fi
echo "30-grammar.sh: npm ci --prefix grammars"
npm ci --prefix grammars --no-audit --no-fund --loglevel=error
test -x "$bin"
