--- Ghost text: the server's `textDocument/inlineCompletion` suggestion shown in grey at the cursor
--- as you type. Bridges it to Neovim 0.12's `vim.lsp.inline_completion` where that exists, else (on
--- 0.11, or with `ghost_text.builtin = false`) to this plugin's own extmarks; either way with keys
--- to accept the suggestion, a word or a line of it, ask for the next one and dismiss it. What was
--- kept is recorded with the item's command (`elelem.completionAccepted {id, chars?}`).

local api = vim.api
local suggest = require('elelem.suggest')

local M = {}

M.namespace = api.nvim_create_namespace('elelem.ghost')

M.defaults = {
  enabled = true,
  --- Use Neovim's own `vim.lsp.inline_completion` where it exists (0.12); false: this plugin's.
  builtin = true,
  --- The plugin's own path: how long typing pauses before the server is asked.
  debounce_ms = 75,
  --- Insert-mode keys (each falls back to the key itself when no suggestion is shown); false: none.
  keys = {
    accept = '<Tab>',
    accept_word = '<M-Right>',
    accept_line = '<M-C-Right>',
    next = '<M-]>',
    dismiss = '<C-]>',
  },
}

M.options = vim.deepcopy(M.defaults)

local INVOKED, AUTOMATIC = 1, 2 -- lsp.InlineCompletionTriggerKind
local METHOD = 'textDocument/inlineCompletion'

--- The plugin's own suggestion in a buffer.
--- @class elelem.ghost.Item
--- @field text string what is still to insert
--- @field row integer 0-based, where `text` goes
--- @field col integer byte column
--- @field command lsp.Command? the item's acceptance command
--- @field accepted integer characters of it already inserted by the keys

--- @class elelem.ghost.State
--- @field client_id integer
--- @field asker elelem.suggest.Asker
--- @field items lsp.InlineCompletionItem[]
--- @field index integer
--- @field item elelem.ghost.Item?

local states = {} --- @type table<integer, elelem.ghost.State>

--- Whether Neovim's own inline completion serves the suggestions.
--- @return boolean
function M.builtin()
  return M.options.builtin ~= false and vim.lsp.inline_completion ~= nil
end

--- The part of `text` a key accepts: a word (with the blanks before it), a line, or all of it.
--- @param text string
--- @param unit 'word'|'line'|'all'
--- @return string
function M.piece(text, unit)
  if unit == 'word' then
    return text:match('^\n?[ \t]*[%w_]+') or text:match('^\n?[ \t]*[^%w_%s]+') or text:match('^\n?[ \t]*')
  elseif unit == 'line' then
    return text:match('^\n?[^\n]*')
  end
  return text
end

--- Runs the suggestion's acceptance command, saying how many characters were kept when not all.
--- @param client_id integer
--- @param command lsp.Command?
--- @param chars integer?
--- @param bufnr integer
local function record(client_id, command, chars, bufnr)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client or type(command) ~= 'table' then
    return
  end
  local argument = vim.deepcopy((command.arguments or {})[1] or {})
  argument.chars = chars
  client:exec_cmd({ title = command.title, command = command.command, arguments = { argument } }, { bufnr = bufnr })
end

--- Inserts `text` at (row, col) of the current window's buffer and puts the cursor after it.
--- @return integer row, integer col where the cursor now is (0-based row, byte column)
local function insert(bufnr, row, col, text)
  local lines = vim.split(text, '\n', { plain = true })
  api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local last_row = row + #lines - 1
  local last_col = (#lines == 1 and col or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  return last_row, last_col
end

--- What is left of `text` (suggested at row, col) after what was typed up to the cursor; nil when
--- the cursor left the suggestion or the typing differs from it.
--- @return string?, integer?
local function remaining(bufnr, text, row, col)
  local cursor = api.nvim_win_get_cursor(0)
  if api.nvim_get_current_buf() ~= bufnr or cursor[1] - 1 ~= row or cursor[2] < col then
    return nil
  end
  local typed = api.nvim_buf_get_text(bufnr, row, col, row, cursor[2], {})[1]
  if text:sub(1, #typed) ~= typed then
    return nil
  end
  return text:sub(#typed + 1), cursor[2]
end

-- -- the plugin's own ghost text ---------------------------------------------------------

local function show(bufnr, item)
  api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  local lines = vim.split(item.text, '\n', { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { lines[i], 'ElelemGhostText' } }
  end
  api.nvim_buf_set_extmark(bufnr, M.namespace, item.row, item.col, {
    virt_text = lines[1] ~= '' and { { lines[1], 'ElelemGhostText' } } or nil,
    virt_text_pos = 'inline',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = 'combine',
  })
end

--- Forgets the shown suggestion (recording the part the keys accepted, if any) and hides it.
local function drop(bufnr, s)
  local item = s.item
  s.item = nil
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  end
  if item and item.accepted > 0 then
    record(s.client_id, item.command, item.accepted, bufnr)
  end
end

--- Shows `lsp_item` (answered for the cursor at row, col), minus what was typed since.
local function present(bufnr, s, lsp_item, row, col)
  if type(lsp_item) ~= 'table' or type(lsp_item.insertText) ~= 'string' then
    return
  end
  local rest, at = remaining(bufnr, lsp_item.insertText, row, col)
  if rest and rest ~= '' then
    s.item = { text = rest, row = row, col = at, command = lsp_item.command, accepted = 0 }
    show(bufnr, s.item)
  end
end

--- Asks the server for a suggestion at the cursor.
local function request(bufnr, kind)
  local s = states[bufnr]
  local client = s and vim.lsp.get_client_by_id(s.client_id)
  if not client or api.nvim_get_current_buf() ~= bufnr or not api.nvim_get_mode().mode:match('^i') then
    return
  end
  local win = api.nvim_get_current_win()
  local cursor = api.nvim_win_get_cursor(win)
  local params = vim.lsp.util.make_position_params(win, client.offset_encoding)
  params.context = { triggerKind = kind }
  s.asker:request(METHOD, params, bufnr, function(result)
    s.items, s.index = result.items or result, 1
    present(bufnr, s, s.items[1], cursor[1] - 1, cursor[2])
  end)
end

--- After a keystroke: typing along the suggestion keeps what is left of it; anything else drops
--- it and asks again once typing pauses.
local function on_typed(bufnr)
  local s = states[bufnr]
  local item = s.item
  if item then
    local rest, col = remaining(bufnr, item.text, item.row, item.col)
    if rest and rest ~= '' then
      item.text, item.col = rest, col
      return show(bufnr, item)
    end
  end
  drop(bufnr, s)
  s.asker:schedule(M.options.debounce_ms, function()
    request(bufnr, AUTOMATIC)
  end)
end

--- Inserts the `unit` of the shown suggestion; what is left stays shown.
local function take(bufnr, unit)
  local s = states[bufnr]
  local item = s and s.item
  if not item then
    return
  end
  local part = M.piece(item.text, unit)
  item.row, item.col = insert(bufnr, item.row, item.col, part)
  item.text = item.text:sub(#part + 1)
  item.accepted = item.accepted + vim.fn.strchars(part)
  if item.text ~= '' then
    return show(bufnr, item)
  end
  s.item = nil
  api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  -- all of it: the command without `chars`, as for an item accepted whole
  record(s.client_id, item.command, item.accepted > vim.fn.strchars(part) and item.accepted or nil, bufnr)
end

-- -- Neovim's own inline completion ------------------------------------------------------

--- The builtin's shown suggestion accepted in part: the `unit` of it inserted at the cursor.
local function take_builtin(unit)
  return vim.lsp.inline_completion.get({
    on_accept = function(item)
      if type(item.insert_text) ~= 'string' then
        return
      end
      local bufnr = api.nvim_get_current_buf()
      local start = item.range and item.range.start
      local cursor = api.nvim_win_get_cursor(0)
      local row, col = start and start.row or cursor[1] - 1, start and start.col or cursor[2]
      local rest, at = remaining(bufnr, item.insert_text, row, col)
      if not rest or rest == '' then
        return
      end
      local part = M.piece(rest, unit)
      insert(bufnr, row, at, part)
      record(item.client_id, item.command, vim.fn.strchars(part), bufnr)
    end,
  })
end

-- -- the keys ----------------------------------------------------------------------------

--- Whether a suggestion is shown in `bufnr`.
--- @param bufnr integer?
--- @return boolean
function M.visible(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.builtin() then
    local ns = api.nvim_get_namespaces()['nvim.lsp.inline_completion']
    return ns ~= nil and #api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { limit = 1 }) > 0
  end
  return states[bufnr] ~= nil and states[bufnr].item ~= nil
end

--- Accepts the `unit` of the shown suggestion (a word, a line, all); what is left stays shown.
--- Returns false when none is shown.
--- @param unit 'word'|'line'|'all'
--- @return boolean
function M.accept_part(unit)
  if M.builtin() then
    return unit == 'all' and vim.lsp.inline_completion.get() or take_builtin(unit)
  end
  local bufnr = api.nvim_get_current_buf()
  if not M.visible(bufnr) then
    return false
  end
  vim.schedule(function()
    take(bufnr, unit)
  end)
  return true
end

--- Accepts the whole suggestion.
function M.accept()
  return M.accept_part('all')
end

--- Accepts the suggestion's next word.
function M.accept_word()
  return M.accept_part('word')
end

--- Accepts the suggestion up to its line's end.
function M.accept_line()
  return M.accept_part('line')
end

--- The next suggestion: the builtin's next candidate, or the plugin's next item, else asks anew.
function M.next()
  if M.builtin() then
    vim.schedule(function()
      vim.lsp.inline_completion.select({ count = 1 })
    end)
    return M.visible()
  end
  local bufnr = api.nvim_get_current_buf()
  local s = states[bufnr]
  if not s then
    return false
  end
  vim.schedule(function()
    drop(bufnr, s)
    if #s.items > 1 then
      s.index = s.index % #s.items + 1
      local cursor = api.nvim_win_get_cursor(0)
      return present(bufnr, s, s.items[s.index], cursor[1] - 1, cursor[2])
    end
    request(bufnr, INVOKED)
  end)
  return true
end

--- Hides the suggestion. Returns false when none is shown.
function M.dismiss()
  if M.builtin() then
    return vim.lsp.inline_completion.get({ on_accept = function() end })
  end
  local bufnr = api.nvim_get_current_buf()
  local s = states[bufnr]
  if not s or not s.item then
    return false
  end
  vim.schedule(function()
    s.asker:cancel()
    drop(bufnr, s)
  end)
  return true
end

local ACTIONS = { accept = M.accept, accept_word = M.accept_word, accept_line = M.accept_line, next = M.next, dismiss = M.dismiss }

--- Starts ghost text in `bufnr` for the elelem `client` (from its LspAttach).
--- @param client vim.lsp.Client
--- @param bufnr integer
function M.attach(client, bufnr)
  if not M.options.enabled or not client.server_capabilities.inlineCompletionProvider then
    return
  end
  suggest.map_keys(bufnr, 'i', M.options.keys, ACTIONS, 'ghost text')
  if M.builtin() then
    return vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
  end
  if states[bufnr] then
    return
  end
  local s = { client_id = client.id, asker = suggest.asker(client.id), items = {}, index = 1 } --- @type elelem.ghost.State
  states[bufnr] = s
  local group = api.nvim_create_augroup('elelem.ghost.' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'InsertEnter', 'CursorMovedI', 'TextChangedI' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      on_typed(bufnr)
    end,
  })
  api.nvim_create_autocmd('InsertLeave', {
    group = group,
    buffer = bufnr,
    callback = function()
      s.asker:cancel()
      drop(bufnr, s)
    end,
  })
  suggest.until_detached(bufnr, client.id, group, function()
    s.asker:cancel()
    drop(bufnr, s)
    states[bufnr] = nil
  end)
end

--- @param options table? see M.defaults
function M.setup(options)
  M.options = suggest.options(M.defaults, options)
  api.nvim_set_hl(0, 'ElelemGhostText', { link = 'Comment', default = true })
end

return M
