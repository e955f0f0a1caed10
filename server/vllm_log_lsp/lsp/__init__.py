"""The language server: a thin pygls 2 adapter over the pure analysis core.

One module per feature, each with a `register(server)` function that `server.py` calls:

- `sync`         document open/change/close into our own text store (LSP-exact lines)
- `pipeline`     debounced analysis in a worker thread; publishes only for the current version
- `diagnostics`  findings → diagnostics (pure rendering)
- `hover`        the diagnosis as markdown on root-cause, symptom and precursor lines
- `navigation`   definition (symptom → cause), references (cause → symptoms), code lenses
- `outline`      document symbols (runs, phases, incidents) and folding ranges
- `commands`     `vllmLog.analyzeFile` (logs too large for the editor to sync)
- `launch_index` the workspace's launch scripts: discovery and fix-plan caches, file watching,
                 the hover's fix previews (`server.launch_index`)
- `code_actions` quick fixes: a finding's fixes applied to the workspace's launch scripts
- `configuration` initializationOptions and didChangeConfiguration → `Settings`

`state.py` holds the per-document state other features (e.g. code actions) read.
"""
