--- The transcript buffer: renders the agent events that elelem-lsp streams in its `$/progress`
--- reports (`saying`, `thinking`, `doing`, `result`) as readable, highlighted lines.
---
--- One buffer for the whole editor session; each turn starts with its prompt and ends with a
--- footer naming the provider. Thinking is highlighted `ElelemThinking`, each tool call and each
--- tool outcome gets a line of its own.

local api = vim.api

local M = {}

local NAME = 'elelem://transcript'
local ns = api.nvim_create_namespace('elelem.transcript')

M.namespace = ns

--- Highlight groups, linked to standard ones unless the colour scheme defines them.
local HIGHLIGHTS = {
  ElelemPrompt = 'Title',
  ElelemTool = 'Function',
  ElelemToolOk = 'DiagnosticOk',
  ElelemToolError = 'DiagnosticError',
  ElelemError = 'ErrorMsg',
  ElelemFooter = 'NonText',
}

--- Thinking is dimmed with colours of its own, for true-colour (`fg`) and 256-colour (`ctermfg`)
--- terminals alike: a link to Comment is not dim in every scheme without 'termguicolors'.
local THINKING = { fg = '#8a8a8a', ctermfg = 245, italic = true, default = true }

local function define_highlights()
  for group, link in pairs(HIGHLIGHTS) do
    api.nvim_set_hl(0, group, { link = link, default = true })
  end
  api.nvim_set_hl(0, 'ElelemThinking', THINKING)
end

define_highlights()
api.nvim_create_autocmd('ColorScheme', { group = api.nvim_create_augroup('elelem.highlights', {}), callback = define_highlights })

local buf --- @type integer?
--- Per-turn rendering state, keyed by progress token: which kind of text is open on the last line.
local turns = {} --- @type table<string, {open: string?, said: boolean}>

--- @return integer
function M.bufnr()
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.fn.bufnr(NAME)
  if buf == -1 then
    buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(buf, NAME)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'markdown'
  return buf
end

--- Windows currently showing the transcript.
local function windows()
  return vim.tbl_filter(function(win)
    return api.nvim_win_get_buf(win) == M.bufnr()
  end, api.nvim_list_wins())
end

--- Shows the transcript in a split below (if it is not visible yet) without leaving the
--- current window, or in the current window when `focus` is set.
--- @param focus boolean?
function M.show(focus)
  local shown = windows()[1]
  if focus then
    if shown then
      api.nvim_set_current_win(shown)
    else
      api.nvim_win_set_buf(0, M.bufnr())
    end
    return
  end
  if not shown then
    local height = math.max(5, math.floor(vim.o.lines / 3))
    api.nvim_open_win(M.bufnr(), false, { split = 'below', height = height, win = -1 })
  end
end

--- Keeps every transcript window scrolled to the end, unless the cursor is in it.
local function follow()
  local last = api.nvim_buf_line_count(M.bufnr())
  for _, win in ipairs(windows()) do
    if win ~= api.nvim_get_current_win() then
      api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

--- Writes `text` (may contain newlines) at the end of the buffer: continuing the last line when
--- `continue` is set, else on a new line. Highlights what it wrote with `hl`.
--- @param text string
--- @param hl string?
--- @param continue boolean?
local function write(text, hl, continue)
  local b = M.bufnr()
  local lines = vim.split(text, '\n', { plain = true })
  local last = api.nvim_buf_line_count(b) - 1
  local last_line = api.nvim_buf_get_lines(b, last, last + 1, false)[1]
  local row, col
  vim.bo[b].modifiable = true
  if continue then
    row, col = last, #last_line
    api.nvim_buf_set_text(b, row, col, row, col, lines)
  elseif last == 0 and last_line == '' then
    row, col = 0, 0
    api.nvim_buf_set_lines(b, 0, 1, false, lines)
  else
    row, col = last + 1, 0
    api.nvim_buf_set_lines(b, -1, -1, false, lines)
  end
  vim.bo[b].modifiable = false
  if hl then
    local end_row = row + #lines - 1
    local end_col = #lines == 1 and col + #lines[1] or #lines[#lines]
    api.nvim_buf_set_extmark(b, ns, row, col, { end_row = end_row, end_col = end_col, hl_group = hl })
  end
  follow()
end

--- A tool call's arguments as `key=value` pairs, values JSON-encoded and shortened.
--- @param arguments table?
--- @return string
local function format_arguments(arguments)
  local keys = vim.tbl_keys(arguments or {})
  table.sort(keys)
  local parts = {}
  for _, key in ipairs(keys) do
    local ok, value = pcall(vim.json.encode, arguments[key])
    value = ok and value or tostring(arguments[key])
    if #value > 120 then
      value = value:sub(1, 117) .. '...'
    end
    parts[#parts + 1] = ('%s=%s'):format(key, value)
  end
  return table.concat(parts, ', ')
end

--- Starts a turn: a blank line, then the prompt.
--- @param token string the turn's progress token
--- @param prompt string
--- @param where string? what the prompt is about (file and lines), if anything
function M.start_turn(token, prompt, where)
  turns[token] = { open = nil, said = false }
  if api.nvim_buf_line_count(M.bufnr()) > 1 or api.nvim_buf_get_lines(M.bufnr(), 0, 1, false)[1] ~= '' then
    write('', nil, false)
  end
  local heading = '> ' .. prompt:gsub('\n', ' ')
  if where then
    heading = heading .. '  [' .. where .. ']'
  end
  write(heading, 'ElelemPrompt', false)
end

--- Renders the events of one progress report, in order.
--- @param token string
--- @param events table[]
function M.render_events(token, events)
  local turn = turns[token]
  if not turn then
    return
  end
  for _, event in ipairs(events or {}) do
    local kind = event.type
    if kind == 'saying' or kind == 'thinking' then
      local text = event.text or ''
      if text ~= '' then
        write(text, kind == 'thinking' and 'ElelemThinking' or nil, turn.open == kind)
        turn.open = kind
        turn.said = turn.said or kind == 'saying'
      end
    elseif kind == 'doing' then
      write(('+ %s(%s)'):format(event.name or '?', format_arguments(event.arguments)), 'ElelemTool', false)
      turn.open = nil
    elseif kind == 'result' then
      if event.ok then
        write(('  ok: %s'):format(event.name or '?'), 'ElelemToolOk', false)
      else
        write(('  failed: %s: %s'):format(event.name or '?', event.error or 'error'), 'ElelemToolError', false)
      end
      turn.open = nil
    end
  end
end

--- Ends a turn with the command's outcome: the error if any, else a footer with the provider.
--- The reply itself is shown only when no `saying` event carried it (a server without events).
--- @param token string
--- @param err table? the JSON-RPC error of the command
--- @param result table? `{reply, provider, model, steps, cancelled, error}`
function M.finish_turn(token, err, result)
  local turn = turns[token] or { said = false }
  turns[token] = nil
  if err then
    write('Error: ' .. (err.message or vim.inspect(err)), 'ElelemError', false)
    return
  end
  result = result or {}
  if not turn.said and type(result.reply) == 'string' and result.reply ~= '' and not result.error then
    write(result.reply, nil, false)
  end
  if type(result.error) == 'string' and result.error ~= '' then
    local message = result.error:match('^Error:') and result.error or ('Error: ' .. result.error)
    write(message, 'ElelemError', false)
  end
  if result.cancelled == true then
    write('[cancelled]', 'ElelemError', false)
  end
  local footer = {}
  for _, part in ipairs({ result.provider, result.model }) do
    if type(part) == 'string' and part ~= '' then
      footer[#footer + 1] = part
    end
  end
  if type(result.steps) == 'number' then
    footer[#footer + 1] = ('%d step%s'):format(result.steps, result.steps == 1 and '' or 's')
  end
  if #footer > 0 then
    write('-- ' .. table.concat(footer, ' · '), 'ElelemFooter', false)
  end
end

--- A line of its own outside any turn (e.g. "new conversation").
--- @param text string
--- @param hl string?
function M.note(text, hl)
  write(text, hl or 'ElelemFooter', false)
end

return M
