#!/usr/bin/env bash
# Copies into the extension folder everything the .vsix must carry besides the JS bundle
# (only files under vscode-client/ can ship):
#   syntaxes/         <- ../grammars/*.tmLanguage.json (placeholders with the same scopes if not there yet)
#   bundled/server/   <- ../server/vllm_log_lsp (the language server itself)
#   bundled/libs/     <- pure-Python runtime dependencies (requirements-bundled.txt), py3-none-any wheels only
# Idempotent; the pip step is skipped when requirements-bundled.txt has not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=..

# --- grammars -------------------------------------------------------------------------------------------
mkdir -p syntaxes
copy_grammar() { # file scope [injection]
  local src="$root/grammars/$1" dst="syntaxes/$1"
  if [ -f "$src" ]; then
    cp "$src" "$dst"
  else
    echo "prepare-bundle: $src is not there yet; writing a placeholder grammar for $2" >&2
    if [ "${3:-}" = injection ]; then
      printf '{\n  "name": "vLLM log (placeholder injection)",\n  "scopeName": "%s",\n  "injectionSelector": "L:text.log -text.log.vllm",\n  "patterns": []\n}\n' "$2" >"$dst"
    else
      printf '{\n  "name": "vLLM log (placeholder)",\n  "scopeName": "%s",\n  "patterns": []\n}\n' "$2" >"$dst"
    fi
  fi
}
copy_grammar vllm-log.tmLanguage.json text.log.vllm
copy_grammar vllm-log-injection.tmLanguage.json vllm-log.injection injection

# --- the server -----------------------------------------------------------------------------------------
rm -rf bundled/server
mkdir -p bundled/server
cp -R "$root/server/vllm_log_lsp" bundled/server/
find bundled/server -name __pycache__ -type d -prune -exec rm -rf {} +

# --- its pure-Python dependencies -----------------------------------------------------------------------
py="${VLLM_LOG_BUILD_PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x "$root/.venv/bin/python" ]; then py="$root/.venv/bin/python"; else py=python3; fi
fi
stamp=bundled/libs/.requirements-bundled.txt
if [ -f "$stamp" ] && cmp -s "$stamp" requirements-bundled.txt; then
  echo "prepare-bundle: bundled/libs up to date"
else
  rm -rf bundled/libs
  # --implementation py + --only-binary: pure wheels only, so one .vsix serves every platform;
  # --python-version 3.10: the oldest Python we support decides (e.g. tomli is needed there).
  "$py" -m pip install --quiet --disable-pip-version-check --no-compile \
    --target bundled/libs --no-deps --implementation py --python-version 3.10 --only-binary=:all: \
    -r requirements-bundled.txt 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  rm -rf bundled/libs/bin
  find bundled/libs -name __pycache__ -type d -prune -exec rm -rf {} +
  cp requirements-bundled.txt "$stamp"
fi

# --- the README's screenshot (docs/screenshot.png in the repository) ----------------------------------------
if [ -f "$root/docs/screenshot.png" ]; then
  mkdir -p images
  cp "$root/docs/screenshot.png" images/screenshot.png
fi
echo "prepare-bundle: syntaxes/, bundled/server/, bundled/libs/ ready"
