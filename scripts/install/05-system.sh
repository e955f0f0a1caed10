#!/usr/bin/env bash
# System tools the core uses when present: ripgrep (the fast literal pre-filter; grep is the
# fallback). The pre-filter tests compare both with the pure-Python scan, so CI needs both.
set -euo pipefail

ci() { [ -n "${CI:-}" ] && [ "${CI}" != "false" ] && [ "${CI}" != "0" ]; }

if command -v rg >/dev/null 2>&1 && command -v grep >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "05-system: ripgrep is missing and there is no apt-get" >&2
  if ci; then exit 1; fi
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "05-system: apt-get install ripgrep grep"
if ! $sudo apt-get install -y -q --no-install-recommends ripgrep grep >/tmp/05-system-apt.log 2>&1; then
  $sudo apt-get update -q >>/tmp/05-system-apt.log 2>&1 || true
  if ! $sudo apt-get install -y -q --no-install-recommends ripgrep grep >>/tmp/05-system-apt.log 2>&1; then
    echo "05-system: apt-get install failed (see /tmp/05-system-apt.log)" >&2
    if ci; then exit 1; fi
  fi
fi
