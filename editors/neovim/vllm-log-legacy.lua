-- vllm-log-lsp for Neovim 0.8 to 0.10 (no vim.lsp.config there). Put this in your init.lua.
-- Needs `vllm-log-lsp` on PATH (`pip install .` in a checkout of vllm-log-lsp).
-- On 0.11+ use vllm-log.lua instead.

-- Filetype `vllm-log`: *vllm*.log files, and any other *.log whose first lines look like vLLM's.
local function looks_like_vllm_log(bufnr)
  if not bufnr or not vim.api.nvim_buf_is_loaded(bufnr) then
    return false
  end
  for _, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, 200, false)) do
    line = line:sub(1, 4096)
    if
      line:find('(EngineCore', 1, true)
      or line:find('(APIServer', 1, true)
      or line:find('[core.py:', 1, true)
      or line:find('EngineDeadError', 1, true)
      or line:find('vllm', 1, true)
      or line:find('vLLM', 1, true)
      -- vLLM's own header: `INFO 05-21 10:00:01 [api_server.py:123]`
      or line:find('%u+ %d%d%-%d%d %d%d:%d%d:%d%d[%.%d]* %[?[%w_.]+%.py:%d+%]')
    then
      return true
    end
  end
  return false
end

vim.filetype.add({
  pattern = {
    ['.*vllm.*%.log'] = { 'vllm-log', { priority = 10 } },
    -- Runs before the `log` extension rule; returning nil leaves other logs alone.
    ['.*%.log'] = function(_, bufnr)
      if looks_like_vllm_log(bufnr) then
        return 'vllm-log'
      end
    end,
  },
})

-- The same as nvim-lspconfig would do: one client per root (the folder holding .git), reused.
vim.api.nvim_create_autocmd('FileType', {
  pattern = 'vllm-log',
  group = vim.api.nvim_create_augroup('vllm_log_lsp', { clear = true }),
  callback = function(args)
    local file = vim.api.nvim_buf_get_name(args.buf)
    local git = vim.fs.find('.git', { upward = true, path = vim.fs.dirname(file) })[1]
    vim.lsp.start({
      name = 'vllm_log',
      cmd = { 'vllm-log-lsp', 'serve' },
      root_dir = git and vim.fs.dirname(git) or vim.fs.dirname(file),
      -- init_options = { diagnostics = { precursors = false } },
    }, { bufnr = args.buf })
  end,
})
