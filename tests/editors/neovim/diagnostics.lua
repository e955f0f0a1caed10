-- Waits for the vllm_log server's diagnostics on the current buffer and writes them, with the
-- buffer's own line count and the text each diagnostic starts at, as JSON to $PROBE_OUT; then quits.
-- Driven by tests/editors/test_neovim.py (bare `\r` redraws: Neovim keeps them inside the line).
local buf = vim.api.nvim_get_current_buf()
local timeout = tonumber(os.getenv('PROBE_TIMEOUT_MS') or '') or 20000
vim.wait(timeout, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
local out = { line_count = vim.api.nvim_buf_line_count(buf), diagnostics = {} }
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1] or ''
  table.insert(out.diagnostics, {
    lnum = d.lnum,
    col = d.col,
    severity = d.severity,
    code = d.code,
    at = line:sub(d.col + 1, d.col + 60),
  })
end
local f = assert(io.open(assert(os.getenv('PROBE_OUT'), 'PROBE_OUT'), 'w'))
f:write(vim.json.encode(out))
f:close()
vim.cmd('qall!')
