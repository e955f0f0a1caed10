-- End-to-end run in a real Neovim (headless), driven by tests/editors/test_neovim.py.
--
-- Started as `nvim --headless --clean -u editors/neovim/vllm-log.lua -c "luafile e2e.lua" LOG` in the
-- workspace folder. Does what a user does (waits for the server, reads the diagnostics, hovers the
-- root-cause line, jumps to the definition from a symptom line, applies the quick fix) and writes what it
-- saw as JSON to $E2E_OUT; the Python test makes the assertions. Exits 0 when the script itself ran to
-- the end, 1 on a Lua error (the JSON then holds `error`).
--
-- Environment: E2E_OUT (JSON path), E2E_ROOT_LINE and E2E_SYMPTOM_LINE (0-based), E2E_SCRIPT (launch
-- script path), E2E_FIX_TITLE (plain text the preferred quick fix's title contains), E2E_CODE_ACTIONS
-- (`require`: run the quick-fix step even if the server does not advertise codeActionProvider; `auto`:
-- only if it does; `list`: record the actions offered, apply none; `skip`: never), E2E_TIMEOUT_MS.

local out = { steps = {} }
local timeout = tonumber(os.getenv('E2E_TIMEOUT_MS') or '') or 15000
local root_line = assert(tonumber(os.getenv('E2E_ROOT_LINE') or ''), 'E2E_ROOT_LINE')
local symptom_line = assert(tonumber(os.getenv('E2E_SYMPTOM_LINE') or ''), 'E2E_SYMPTOM_LINE')
local started = vim.uv.hrtime()

local function elapsed_ms()
  return math.floor((vim.uv.hrtime() - started) / 1e6)
end

local function step(name)
  out.steps[#out.steps + 1] = { name = name, at_ms = elapsed_ms() }
end

local function write_out()
  local f = assert(io.open(assert(os.getenv('E2E_OUT'), 'E2E_OUT'), 'w'))
  f:write(vim.json.encode(out))
  f:close()
end

-- A request through the attached client, as the editor would send it; returns (result, error).
local function request(client, buf, method, params)
  local responses = vim.lsp.buf_request_sync(buf, method, params, 5000)
  local response = responses and responses[client.id]
  if not response then
    return nil, 'no response'
  end
  return response.result, response.err
end

local function text_document_position(buf, client, line, col)
  vim.api.nvim_win_set_cursor(0, { line + 1, col })
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.textDocument = { uri = vim.uri_from_bufnr(buf) }
  return params
end

local function main()
  local buf = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[buf].filetype
  out.line_count = vim.api.nvim_buf_line_count(buf)

  step('attach')
  vim.wait(timeout, function()
    return #vim.lsp.get_clients({ bufnr = buf, name = 'vllm_log' }) > 0
  end, 20)
  local client = vim.lsp.get_clients({ bufnr = buf, name = 'vllm_log' })[1]
  if not client then
    out.error = 'the vllm_log client did not attach to the buffer'
    return
  end
  vim.wait(timeout, function()
    return client.initialized
  end, 20)
  out.offset_encoding = client.offset_encoding
  out.root_dir = client.root_dir
  out.server_info = client.server_info
  local caps = client.server_capabilities or {}
  out.capabilities = {
    hover = caps.hoverProvider and true or false,
    definition = caps.definitionProvider and true or false,
    references = caps.referencesProvider and true or false,
    documentSymbol = caps.documentSymbolProvider and true or false,
    foldingRange = caps.foldingRangeProvider and true or false,
    codeLens = caps.codeLensProvider and true or false,
    codeAction = caps.codeActionProvider and true or false,
    positionEncoding = caps.positionEncoding,
  }

  step('diagnostics')
  vim.wait(timeout, function()
    return #vim.diagnostic.get(buf) > 0
  end, 20)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    out.diagnostics[#out.diagnostics + 1] = {
      lnum = d.lnum,
      col = d.col,
      end_lnum = d.end_lnum,
      end_col = d.end_col,
      severity = vim.diagnostic.severity[d.severity],
      code = d.code,
      source = d.source,
      message = d.message,
    }
  end
  out.root_line_text = vim.api.nvim_buf_get_lines(buf, root_line, root_line + 1, false)[1]

  -- Hover in the middle of the exception text (past the non-ASCII prefix).
  step('hover')
  local root_text = out.root_line_text or ''
  local hover_col = math.max((root_text:find('OutOfMemoryError', 1, true) or 1) - 1, 0)
  local hover, hover_err = request(client, buf, 'textDocument/hover', text_document_position(buf, client, root_line, hover_col))
  out.hover_error = hover_err
  if type(hover) == 'table' and type(hover.contents) == 'table' then
    out.hover_kind = hover.contents.kind
    out.hover = hover.contents.value
    out.hover_range = hover.range
  end

  -- Go to definition from the symptom line, the way a user does it (`vim.lsp.buf.definition()` jumps).
  step('definition')
  local symptom_params = text_document_position(buf, client, symptom_line, 0)
  out.definition_raw = request(client, buf, 'textDocument/definition', symptom_params)
  vim.api.nvim_win_set_cursor(0, { symptom_line + 1, 0 })
  vim.lsp.buf.definition()
  vim.wait(5000, function()
    return vim.api.nvim_win_get_cursor(0)[1] ~= symptom_line + 1
  end, 20)
  local cursor = vim.api.nvim_win_get_cursor(0)
  out.definition_cursor = { line = cursor[1] - 1, col = cursor[2], buf_is_log = vim.api.nvim_get_current_buf() == buf }
  vim.api.nvim_set_current_buf(buf)

  step('references')
  local ref_params = text_document_position(buf, client, root_line, hover_col)
  ref_params.context = { includeDeclaration = true }
  local refs = request(client, buf, 'textDocument/references', ref_params)
  out.reference_lines = {}
  for _, loc in ipairs(type(refs) == 'table' and refs or {}) do
    out.reference_lines[#out.reference_lines + 1] = loc.range.start.line
  end

  step('outline')
  local doc = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  local symbols = request(client, buf, 'textDocument/documentSymbol', doc)
  out.symbols = {}
  local function walk(list)
    for _, s in ipairs(type(list) == 'table' and list or {}) do
      local range = s.range or (s.location and s.location.range)
      out.symbols[#out.symbols + 1] = { name = s.name, line = range and range.start.line }
      walk(s.children)
    end
  end
  walk(symbols)
  local folds = request(client, buf, 'textDocument/foldingRange', doc)
  out.folds = {}
  for _, f in ipairs(type(folds) == 'table' and folds or {}) do
    out.folds[#out.folds + 1] = { f.startLine, f.endLine }
  end
  local lenses = request(client, buf, 'textDocument/codeLens', doc)
  out.code_lenses = {}
  for _, l in ipairs(type(lenses) == 'table' and lenses or {}) do
    out.code_lenses[#out.code_lenses + 1] = {
      line = l.range.start.line,
      title = l.command and l.command.title,
    }
  end

  -- The quick fix: offered on the root-cause line, applied through `vim.lsp.buf.code_action`, saved.
  local mode = os.getenv('E2E_CODE_ACTIONS') or 'auto'
  if mode == 'require' or mode == 'list' or (mode == 'auto' and out.capabilities.codeAction) then
    step('code action')
    local fix_title = os.getenv('E2E_FIX_TITLE') or ''
    local line_diags = vim.diagnostic.get(buf, { lnum = root_line })
    vim.api.nvim_win_set_cursor(0, { root_line + 1, hover_col })
    local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
    params.context = { diagnostics = vim.lsp.diagnostic.from(line_diags), triggerKind = 1 }
    local actions, action_err = request(client, buf, 'textDocument/codeAction', params)
    out.code_action_error = action_err
    out.code_action_titles = {}
    out.code_actions = {}
    for _, a in ipairs(type(actions) == 'table' and actions or {}) do
      out.code_action_titles[#out.code_action_titles + 1] = a.title
      -- the files each action edits (Neovim gets `changes`; `documentChanges` from other servers)
      local files = {}
      local edit = a.edit or {}
      for uri, _ in pairs(edit.changes or {}) do
        files[#files + 1] = vim.uri_to_fname(uri)
      end
      for _, change in ipairs(edit.documentChanges or {}) do
        if change.textDocument then
          files[#files + 1] = vim.uri_to_fname(change.textDocument.uri)
        end
      end
      out.code_actions[#out.code_actions + 1] = {
        title = a.title,
        preferred = a.isPreferred == true,
        files = files,
        command = type(a.command) == 'table' and a.command.command or a.command,
      }
    end
    if mode == 'list' then
      step('done')
      return
    end

    -- What a user's "apply the preferred fix" mapping does: only the preferred action, applied.
    local script = assert(os.getenv('E2E_SCRIPT'), 'E2E_SCRIPT')
    local applied = nil
    vim.lsp.buf.code_action({
      apply = true,
      filter = function(a)
        local ok = a.isPreferred == true and (a.title or ''):find(fix_title, 1, true) ~= nil
        if ok then
          applied = a.title
        end
        return ok
      end,
    })
    vim.wait(5000, function()
      local sbuf = vim.fn.bufnr(script)
      return sbuf ~= -1 and vim.bo[sbuf].modified
    end, 20)
    out.code_action_applied = applied
    local sbuf = vim.fn.bufnr(script)
    out.script_buffer_modified = sbuf ~= -1 and vim.bo[sbuf].modified
    vim.cmd('silent! wall')
  end
  step('done')
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  out.error = tostring(err)
end
out.elapsed_ms = elapsed_ms()
write_out()
vim.cmd(ok and 'qall!' or 'cquit 1')
