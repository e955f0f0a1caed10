#!/usr/bin/env bash
# VS Code: the extension's npm deps and .vsix, and a real VS Code for the end-to-end test
# (code-server 4.100.3 = VS Code 1.100.3, driven by playwright-core + Debian's chromium).
# Idempotent and fast when everything is there. Outside CI a failure only warns (the editor test then
# skips); with CI=true any failure is fatal.
set -uo pipefail
cd "$(dirname "$0")/../.."

fail() {
  echo "40-vscode: $*" >&2
  if [ -n "${CI:-}" ] && [ "${CI}" != "false" ] && [ "${CI}" != "0" ]; then
    exit 1
  fi
  echo "40-vscode: continuing without it (the VS Code tests will skip)" >&2
  exit 0
}

# --- Debian packages ------------------------------------------------------------------------------------
# chromium: the browser; build-essential pkg-config libkrb5-dev: code-server's native modules (kerberos
# needs gssapi/gssapi.h); ripgrep: put into @vscode/ripgrep's cache so it downloads nothing.
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
command -v g++ >/dev/null 2>&1 || need+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
[ -f /usr/include/gssapi/gssapi.h ] || need+=(libkrb5-dev)
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || fail "missing ${need[*]} and no apt-get"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "40-vscode: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/tmp/40-vscode-apt.log 2>&1; then
    $sudo apt-get update -q >>/tmp/40-vscode-apt.log 2>&1 || true
    $sudo apt-get install -y -q --no-install-recommends "${need[@]}" >>/tmp/40-vscode-apt.log 2>&1 ||
      fail "apt-get install ${need[*]} failed (see /tmp/40-vscode-apt.log)"
  fi
fi
command -v node >/dev/null 2>&1 || fail "node is not installed (scripts/install/15-node.sh installs Node 20)"

# --- npm deps: the extension ----------------------------------------------------------------------------
# `npm ci` only when the lock changed since the last install (npm writes node_modules/.package-lock.json).
# A node_modules that is a symlink is another checkout's install (a worktree sharing main's): never
# reinstall through it (`npm ci` would empty the original for everyone), whatever the timestamps say.
shared_modules() { # dir
  if [ -L "$1/node_modules" ]; then
    echo "40-vscode: $1/node_modules links to a shared install: not reinstalling through it"
    return 0
  fi
  return 1
}
npm_ci() { # dir [env...]
  local dir=$1
  shift
  if shared_modules "$dir"; then
    return 0
  fi
  if [ -f "$dir/node_modules/.package-lock.json" ] &&
    [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    return 0
  fi
  echo "40-vscode: npm ci in $dir"
  (cd "$dir" && env "$@" npm ci --no-audit --no-fund --loglevel=error) || return 1
}
npm_ci vscode-client || fail "npm ci in vscode-client failed"

# --- npm deps: code-server + playwright-core for the e2e test ---------------------------------------------
e2e=tests/editors/vscode
if ! shared_modules "$e2e" && { [ ! -x "$e2e/node_modules/.bin/code-server" ] || [ ! -f "$e2e/node_modules/.package-lock.json" ] ||
  [ "$e2e/package-lock.json" -nt "$e2e/node_modules/.package-lock.json" ]; }; then
  # @vscode/ripgrep 1.15.11 would download rg from GitHub: seed its cache with Debian's rg.
  rgcache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rgcache"
  tar czf "$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg ||
    fail "could not seed the ripgrep cache"
  # unsafe_perm: code-server's install script refuses root otherwise; yes: node-pty runs `npx node-gyp`;
  # nodedir: build native modules against the headers of the Node that runs them (no header download):
  # /usr for a system Node, the wheel's folder for the one 15-node.sh installs.
  nodedir="$(dirname "$(dirname "$(node -p 'process.execPath')")")"
  npm_ci "$e2e" npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir="$nodedir" ||
    fail "npm ci of code-server in $e2e failed"
  touch "$e2e/node_modules/.package-lock.json"
fi

# --- the .vsix --------------------------------------------------------------------------------------------
# Rebuilt when any input is newer than it: sources, manifest, grammars, the server, bundled requirements.
vsix=vscode-client/vllm-log-0.1.0.vsix
if [ ! -f "$vsix" ] || [ -n "$(find vscode-client/src vscode-client/package.json vscode-client/package-lock.json \
  vscode-client/requirements-bundled.txt vscode-client/scripts vscode-client/launcher vscode-client/README.md \
  vscode-client/.vscodeignore grammars server/vllm_log_lsp docs/screenshot.png \
  -newer "$vsix" -not -path '*/__pycache__*' -not -path 'grammars/node_modules*' -print -quit 2>/dev/null)" ]; then
  echo "40-vscode: building $vsix"
  (cd vscode-client && npm run --silent package >/tmp/40-vscode-package.log 2>&1) ||
    { cat /tmp/40-vscode-package.log >&2; fail "building the .vsix failed"; }
fi
echo "40-vscode: ok ($vsix)"
