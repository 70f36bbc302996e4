--- Next edit: after a change, the related changes elsewhere in the file. Bridges the server's
--- `elelem/nextEdit` request (announced in `capabilities.experimental.elelem.nextEdit`) to the
--- buffer: asked a moment after typing stops (a newer request supersedes the older), the edits
--- shown as virtual text at their place, keys to jump to them and to accept them all as one
--- undoable change (then `elelem.completionAccepted {id}` records it and the next one is asked).

local api = vim.api
local suggest = require('elelem.suggest')

local M = {}

M.namespace = api.nvim_create_namespace('elelem.next_edit')

M.defaults = {
  enabled = true,
  --- How long typing pauses before the server is asked.
  debounce_ms = 300,
  --- Normal- and insert-mode keys (each falls back to the key itself when no edit waits); false: none.
  keys = { jump = '<M-n>', accept = '<M-y>', dismiss = '<M-e>' },
}

M.options = vim.deepcopy(M.defaults)

local METHOD = 'elelem/nextEdit'

--- @class elelem.next_edit.Suggestion
--- @field id string
--- @field edits lsp.TextEdit[] in document order
--- @field tick integer the buffer's changedtick they were made for

--- @class elelem.next_edit.State
--- @field client_id integer
--- @field asker elelem.suggest.Asker
--- @field suggestion elelem.next_edit.Suggestion?

local states = {} --- @type table<integer, elelem.next_edit.State>

--- What the client announces in its capabilities.
--- @param options table?
--- @return table
function M.capabilities(options)
  if options and options.enabled == false then
    return {}
  end
  return { experimental = { elelem = { nextEdit = true } } }
end

--- The byte column of an LSP position in `bufnr`.
local function byte_col(bufnr, position, encoding)
  local line = api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1] or ''
  return vim.str_byteindex(line, encoding, math.min(position.character, vim.str_utfindex(line, encoding)), false)
end

--- The key hint shown after the first edit's line.
local function hint()
  local keys = M.options.keys or {}
  local parts = {}
  if keys.jump then
    parts[#parts + 1] = keys.jump .. ' jump'
  end
  if keys.accept then
    parts[#parts + 1] = keys.accept .. ' accept'
  end
  return #parts > 0 and ('  next edit: ' .. table.concat(parts, ' · ')) or '  next edit'
end

--- Shows each edit where it applies: the text it replaces struck through, the new text inline.
local function show(bufnr, s, encoding)
  api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  for i, edit in ipairs(s.suggestion.edits) do
    local first, last = edit.range.start, edit.range['end']
    local start_col, end_col = byte_col(bufnr, first, encoding), byte_col(bufnr, last, encoding)
    if first.line ~= last.line or start_col ~= end_col then
      api.nvim_buf_set_extmark(bufnr, M.namespace, first.line, start_col, {
        end_row = last.line,
        end_col = end_col,
        hl_group = 'ElelemNextEditOld',
      })
    end
    local lines = vim.split(edit.newText, '\n', { plain = true })
    local virt_lines = {}
    for j = 2, #lines do
      virt_lines[#virt_lines + 1] = { { lines[j], 'ElelemNextEditNew' } }
    end
    if lines[1] ~= '' or #virt_lines > 0 then
      api.nvim_buf_set_extmark(bufnr, M.namespace, last.line, end_col, {
        virt_text = lines[1] ~= '' and { { lines[1], 'ElelemNextEditNew' } } or nil,
        virt_text_pos = 'inline',
        virt_lines = #virt_lines > 0 and virt_lines or nil,
      })
    end
    if i == 1 then
      api.nvim_buf_set_extmark(bufnr, M.namespace, first.line, 0, {
        virt_text = { { hint(), 'ElelemNextEditHint' } },
        virt_text_pos = 'eol',
      })
    end
  end
end

local function clear(bufnr, s)
  s.suggestion = nil
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  end
end

--- Asks the server for the next edit at the cursor of the current window.
local function request(bufnr)
  local s = states[bufnr]
  local client = s and vim.lsp.get_client_by_id(s.client_id)
  if not client or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local tick = api.nvim_buf_get_changedtick(bufnr)
  s.asker:request(METHOD, params, bufnr, function(result)
    if type(result.edits) ~= 'table' or #result.edits == 0 or api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return -- nothing, or made for a text that is no longer there
    end
    local edits = vim.deepcopy(result.edits)
    table.sort(edits, function(a, b)
      local x, y = a.range.start, b.range.start
      return x.line < y.line or (x.line == y.line and x.character < y.character)
    end)
    s.suggestion = { id = result.id, edits = edits, tick = tick }
    show(bufnr, s, client.offset_encoding)
  end)
end

local function schedule(bufnr, s)
  s.asker:schedule(M.options.debounce_ms, function()
    request(bufnr)
  end)
end

--- The suggestion waiting in `bufnr`, if it still fits the buffer.
--- @param bufnr integer?
--- @return elelem.next_edit.Suggestion?
function M.waiting(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local s = states[bufnr]
  local suggestion = s and s.suggestion
  if suggestion and suggestion.tick == api.nvim_buf_get_changedtick(bufnr) then
    return suggestion
  end
end

--- Moves the cursor to the next waiting edit after it (else the first). False when none waits.
function M.jump()
  local bufnr = api.nvim_get_current_buf()
  local suggestion = M.waiting(bufnr)
  local client = suggestion and vim.lsp.get_client_by_id(states[bufnr].client_id)
  if not suggestion or not client then
    return false
  end
  local cursor = api.nvim_win_get_cursor(0)
  local target = suggestion.edits[1]
  for _, edit in ipairs(suggestion.edits) do
    if edit.range.start.line > cursor[1] - 1 then
      target = edit
      break
    end
  end
  local col = byte_col(bufnr, target.range.start, client.offset_encoding)
  vim.schedule(function()
    api.nvim_win_set_cursor(0, { target.range.start.line + 1, col })
  end)
  return true
end

--- Applies every waiting edit as one undoable change and records the acceptance; the next
--- suggestion is asked for. False when none waits.
function M.accept()
  local bufnr = api.nvim_get_current_buf()
  local suggestion = M.waiting(bufnr)
  local s = states[bufnr]
  local client = suggestion and vim.lsp.get_client_by_id(s.client_id)
  if not suggestion or not client then
    return false
  end
  vim.schedule(function()
    if M.waiting(bufnr) ~= suggestion then
      return
    end
    clear(bufnr, s)
    -- its own undo step, also in the middle of an insert
    vim.cmd('let &l:undolevels = &l:undolevels')
    vim.lsp.util.apply_text_edits(suggestion.edits, bufnr, client.offset_encoding)
    vim.cmd('let &l:undolevels = &l:undolevels')
    local command = { title = 'elelem: next edit accepted', command = 'elelem.completionAccepted', arguments = { { id = suggestion.id } } }
    client:exec_cmd(command, { bufnr = bufnr })
    schedule(bufnr, s)
  end)
  return true
end

--- Hides the waiting edits. False when none waits.
function M.dismiss()
  local bufnr = api.nvim_get_current_buf()
  local s = states[bufnr]
  if not M.waiting(bufnr) then
    return false
  end
  vim.schedule(function()
    clear(bufnr, s)
  end)
  return true
end

local ACTIONS = { jump = M.jump, accept = M.accept, dismiss = M.dismiss }

--- Starts next edit in `bufnr` for the elelem `client` (from its LspAttach).
--- @param client vim.lsp.Client
--- @param bufnr integer
function M.attach(client, bufnr)
  if not M.options.enabled or states[bufnr] then
    return
  end
  local s = { client_id = client.id, asker = suggest.asker(client.id) } --- @type elelem.next_edit.State
  states[bufnr] = s
  suggest.map_keys(bufnr, { 'n', 'i' }, M.options.keys, ACTIONS, 'next edit')
  local group = api.nvim_create_augroup('elelem.next_edit.' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      if s.suggestion and not M.waiting(bufnr) then
        clear(bufnr, s) -- the buffer changed under it
      end
      schedule(bufnr, s)
    end,
  })
  suggest.until_detached(bufnr, client.id, group, function()
    s.asker:cancel()
    clear(bufnr, s)
    states[bufnr] = nil
  end)
end

--- @param options table? see M.defaults
function M.setup(options)
  M.options = suggest.options(M.defaults, options)
  api.nvim_set_hl(0, 'ElelemNextEditOld', { link = 'DiffDelete', default = true })
  api.nvim_set_hl(0, 'ElelemNextEditNew', { link = 'DiffAdd', default = true })
  api.nvim_set_hl(0, 'ElelemNextEditHint', { link = 'Comment', default = true })
end

return M
