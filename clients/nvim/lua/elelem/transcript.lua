--- The transcript buffer: renders the agent events that elelem-lsp streams in its `$/progress`
--- reports (`saying`, `thinking`, `doing`, `result`, `context`, `compacted`, `checked`, `plan`,
--- the host's `usage`) and the stored
--- conversations that `elelem.transcript`/`elelem.resume` return as readable, highlighted lines.
---
--- One buffer for the whole editor session; each turn starts with its prompt and ends with a
--- footer naming the provider. Thinking is highlighted `ElelemThinking`, each tool call and each
--- tool outcome gets a line of its own; what the server left out or compacted is one dim line.
--- A turn's plan is a `[x]`/`[~]`/`[ ]` checklist that each newer `plan` event rewrites where it
--- stands; the host's `usage` is one dim line at the turn's end.
--- The server words what it can: a call's `title` (`Read src/app.py`), a result's (`Ran npm
--- test`), the `text` of a `context`/`compacted` note and of a stored compaction, reset or rewind;
--- these are shown as they are, and only what comes without them (an older server's events and
--- entries) is worded here. Event types and
--- entry kinds it does not know are skipped, tool names it does not know (MCP's `server__tool`)
--- render like built-in ones.

local api = vim.api

local M = {}

local NAME = 'elelem://transcript'
local ns = api.nvim_create_namespace('elelem.transcript')
local cut_ns = api.nvim_create_namespace('elelem.transcript.cut')
local plan_ns = api.nvim_create_namespace('elelem.transcript.plan')

M.namespace = ns

--- Highlight groups, linked to standard ones unless the colour scheme defines them.
local HIGHLIGHTS = {
  ElelemPrompt = 'Title',
  ElelemTool = 'Function',
  ElelemToolOk = 'DiagnosticOk',
  ElelemToolError = 'DiagnosticError',
  ElelemError = 'ErrorMsg',
  ElelemFooter = 'NonText',
  ElelemNote = 'NonText',
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
--- and where its plan is drawn (an extmark on its first line, and how many lines it has).
local turns = {} --- @type table<string, {open: string?, said: boolean, plan: integer?, plan_lines: integer?}>

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

--- A tool call's arguments as `key=value` pairs, values JSON-encoded and shortened; arguments
--- that are not an object (a server's or an MCP tool's odd call) as their JSON.
--- @param arguments any
--- @return string
local function format_arguments(arguments)
  if type(arguments) ~= 'table' then
    local ok, value = pcall(vim.json.encode, arguments)
    return (arguments == nil or arguments == vim.NIL) and '' or (ok and value or tostring(arguments))
  end
  local keys = vim.tbl_keys(arguments)
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  local parts = {}
  for _, key in ipairs(keys) do
    local ok, value = pcall(vim.json.encode, arguments[key])
    value = ok and value or tostring(arguments[key])
    if #value > 120 then
      value = value:sub(1, 117) .. '...'
    end
    parts[#parts + 1] = type(key) == 'number' and value or ('%s=%s'):format(key, value)
  end
  return table.concat(parts, ', ')
end

--- A string field of a decoded JSON object, or nil (absent, null or another type).
local function text_of(value)
  return type(value) == 'string' and value or nil
end

--- `+ Read a.txt`, the server's title of a call; without one `+ name(key=value, ...)`.
--- @param call {name: string?, arguments: any, title: string?}
--- @return string
local function call_line(call)
  if text_of(call.title) and call.title ~= '' then
    return '+ ' .. call.title
  end
  return ('+ %s(%s)'):format(text_of(call.name) or '?', format_arguments(call.arguments))
end

--- `  ok: title — summary` or `  failed: title: error` (the tool's name when there is no
--- title), and its highlight.
--- @param outcome {name: string?, title: string?, ok: boolean?, summary: string?, error: string?}
--- @return string, string
local function outcome_line(outcome)
  local name = (outcome.title ~= '' and text_of(outcome.title)) or text_of(outcome.name) or '?'
  if outcome.ok == true then
    local summary = text_of(outcome.summary)
    return ('  ok: %s%s'):format(name, summary and summary ~= '' and (' — ' .. summary:gsub('\n', ' ')) or ''), 'ElelemToolOk'
  end
  return ('  failed: %s: %s'):format(name, (text_of(outcome.error) or 'error'):gsub('\n', ' ')), 'ElelemToolError'
end

--- 32000 -> "32,000".
--- @param number number
--- @return string
local function thousands(number)
  local digits = tostring(math.floor(number))
  return (digits:reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^(-?),', '%1'))
end

M.thousands = thousands

--- `count` with `noun`, plural when it is not one: "3 earlier turns".
--- @param count integer
--- @param noun string
--- @return string
function M.counted(count, noun)
  return ('%d %s%s'):format(count, noun, count == 1 and '' or 's')
end

local counted = M.counted

--- The one dim line of a `context` event (turns left out, tool results shortened to fit the
--- budget) or a `compacted` event / compaction entry: the server's text, else worded here;
--- nil when it says nothing.
--- @param event table
--- @return string?
function M.note_text(event)
  if text_of(event.text) and event.text ~= '' then
    return '-- ' .. event.text
  end
  if event.type == 'compacted' or event.kind == 'compaction' then
    return type(event.turns) == 'number' and ('-- %s compacted into a summary'):format(counted(event.turns, 'turn')) or nil
  end
  local parts = {}
  if type(event.leftOut) == 'number' and event.leftOut > 0 then
    parts[#parts + 1] = counted(event.leftOut, 'earlier turn') .. ' left out'
  end
  if type(event.shortened) == 'number' and event.shortened > 0 then
    parts[#parts + 1] = counted(event.shortened, 'tool result') .. ' shortened'
  end
  if #parts == 0 then
    return nil
  end
  local budget = type(event.budget) == 'number' and (' to fit %s tokens'):format(thousands(event.budget)) or ''
  return '-- ' .. table.concat(parts, ', ') .. budget
end

--- The lines ending a turn, from its outcome: the reply when `with_reply` (and no error carried
--- it), the error, then the footer in the server's words (`text`: "done — scripted · 2 steps");
--- an older server's outcome without them gets `[cancelled]` and a footer worded here.
--- @param outcome table `{reply, provider, model, steps, cancelled, error, text}`
--- @param with_reply boolean
--- @return {[1]: string, [2]: string?}[]
local function ending_lines(outcome, with_reply)
  local out = {}
  local reply, err = text_of(outcome.reply), text_of(outcome.error)
  if with_reply and reply and reply ~= '' and not err then
    out[#out + 1] = { reply }
  end
  if err and err ~= '' then
    out[#out + 1] = { err:match('^Error:') and err or ('Error: ' .. err), 'ElelemError' }
  end
  local said = text_of(outcome.text)
  if said and said ~= '' then
    out[#out + 1] = { '-- ' .. said:gsub('\n', ' '), 'ElelemFooter' }
    return out
  end
  if outcome.cancelled == true then
    out[#out + 1] = { '[cancelled]', 'ElelemError' }
  end
  local footer = {}
  for _, part in ipairs({ outcome.provider, outcome.model }) do
    if text_of(part) and part ~= '' then
      footer[#footer + 1] = part
    end
  end
  if type(outcome.steps) == 'number' then
    footer[#footer + 1] = counted(outcome.steps, 'step')
  end
  if #footer > 0 then
    out[#out + 1] = { '-- ' .. table.concat(footer, ' · '), 'ElelemFooter' }
  end
  return out
end

--- `> prompt  [where]`, on one line.
local function prompt_line(prompt, where)
  local heading = '> ' .. (text_of(prompt) or ''):gsub('\n', ' ')
  return where and (heading .. '  [' .. where .. ']') or heading
end

--- Whether the buffer holds anything yet.
local function empty()
  local b = M.bufnr()
  return api.nvim_buf_line_count(b) == 1 and api.nvim_buf_get_lines(b, 0, 1, false)[1] == ''
end

--- Starts a turn: a blank line, then the prompt.
--- @param token string the turn's progress token
--- @param prompt string
--- @param where string? what the prompt is about (file and lines), if anything
function M.start_turn(token, prompt, where)
  turns[token] = { open = nil, said = false }
  if not empty() then
    write('', nil, false)
  end
  write(prompt_line(prompt, where), 'ElelemPrompt', false)
end

--- Draws the turn's plan: at the end the first time, over the lines of the last one after that.
--- @param turn table the turn's rendering state
--- @param lines {[1]: string, [2]: string?}[]
local function show_plan(turn, lines)
  local b = M.bufnr()
  local at = turn.plan and api.nvim_buf_get_extmark_by_id(b, plan_ns, turn.plan, {})
  if not at or not at[1] then
    for _, line in ipairs(lines) do
      write(line[1], line[2], false)
    end
    turn.plan = api.nvim_buf_set_extmark(b, plan_ns, api.nvim_buf_line_count(b) - #lines, 0, {})
    turn.plan_lines = #lines
    return
  end
  local first = at[1]
  api.nvim_buf_clear_namespace(b, ns, first, first + turn.plan_lines)
  vim.bo[b].modifiable = true
  api.nvim_buf_set_lines(b, first, first + turn.plan_lines, false, vim.tbl_map(function(line)
    return line[1]
  end, lines))
  vim.bo[b].modifiable = false
  for index, line in ipairs(lines) do
    if line[2] then
      api.nvim_buf_set_extmark(b, ns, first + index - 1, 0, { end_col = #line[1], hl_group = line[2] })
    end
  end
  api.nvim_buf_set_extmark(b, plan_ns, first, 0, { id = turn.plan })
  turn.plan_lines = #lines
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
      write(call_line(event), 'ElelemTool', false)
      turn.open = nil
    elseif kind == 'result' then
      local text, hl = outcome_line(event)
      write(text, hl, false)
      turn.open = nil
    elseif kind == 'checked' then
      for _, line in ipairs(require('elelem.insight').checked_lines(event)) do
        write(line[1], line[2], false)
      end
      turn.open = nil
    elseif kind == 'plan' then
      show_plan(turn, require('elelem.plan').lines(event))
      turn.open = nil
    elseif kind == 'usage' and require('elelem.usage').row(event) then
      write(require('elelem.usage').row(event), 'ElelemNote', false)
      turn.open = nil
    elseif kind == 'context' or kind == 'compacted' then
      local note = M.note_text(event)
      if note then
        write(note, 'ElelemNote', false)
        turn.open = nil
      end
    end -- an event type of a newer server: nothing to show
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
  for _, line in ipairs(ending_lines(result or {}, not turn.said)) do
    write(line[1], line[2], false)
  end
end

--- The lines of one stored entry: a turn (its prompt, tool rows with their checks, plan, reply
--- and footer) or any other entry the server words (a compaction, a reset, a rewind: one dim
--- line of its `text`; an older server's compaction worded here); none for one without words.
--- @param entry table
--- @return {[1]: string, [2]: string?}[]
local function entry_lines(entry)
  if entry.kind ~= 'turn' then
    local note = (entry.kind == 'compaction' or text_of(entry.text)) and M.note_text(entry)
    return note and { { note, 'ElelemNote' } } or {}
  end
  local out = { { prompt_line(entry.prompt), 'ElelemPrompt' } }
  for _, tool in ipairs(type(entry.tools) == 'table' and entry.tools or {}) do
    out[#out + 1] = { call_line(tool), 'ElelemTool' }
    -- the result's own title ("Ran npm test") as its row said it live
    out[#out + 1] = { outcome_line(vim.tbl_extend('force', tool, { title = text_of(tool.outcomeTitle) or tool.title })) }
    if type(tool.checked) == 'table' then -- the check after the step, the event as it came live
      vim.list_extend(out, require('elelem.insight').checked_lines(tool.checked))
    end
  end
  if type(entry.plan) == 'table' then -- the plan as the turn left it
    vim.list_extend(out, require('elelem.plan').lines({ entries = entry.plan }))
  end
  local ending = ending_lines(entry, true)
  local usage = type(entry.usage) == 'table' and require('elelem.usage').row(entry.usage)
  if usage then -- the server's words, where the turn's usage event put them: before the footer
    local footer = #ending > 0 and ending[#ending][2] == 'ElelemFooter'
    table.insert(ending, footer and #ending or #ending + 1, { usage, 'ElelemNote' })
  end
  vim.list_extend(out, ending)
  return out
end

--- The lines of stored entries, a blank line between turns.
--- @param entries any
--- @return {[1]: string, [2]: string?}[]
local function conversation_lines(entries)
  local out = {}
  for _, entry in ipairs(type(entries) == 'table' and entries or {}) do
    local these = entry_lines(entry)
    if #these > 0 and #out > 0 and entry.kind == 'turn' then
      out[#out + 1] = { '' }
    end
    vim.list_extend(out, these)
  end
  return out
end

--- Puts `lines` at the top, a blank line between them and what was there (which moves down with
--- its highlights).
--- @param lines {[1]: string, [2]: string?}[]
local function insert_at_top(lines)
  local b = M.bufnr()
  local texts, marks = {}, {}
  for _, line in ipairs(lines) do
    for _, part in ipairs(vim.split(line[1], '\n', { plain = true })) do
      texts[#texts + 1] = part
      if line[2] then
        marks[#marks + 1] = { #texts - 1, #part, line[2] }
      end
    end
  end
  if #texts == 0 then
    return
  end
  local replace_empty = empty()
  if not replace_empty and api.nvim_buf_get_lines(b, 0, 1, false)[1] ~= '' then
    texts[#texts + 1] = ''
  end
  vim.bo[b].modifiable = true
  api.nvim_buf_set_lines(b, 0, replace_empty and 1 or 0, false, texts)
  vim.bo[b].modifiable = false
  for _, mark in ipairs(marks) do
    api.nvim_buf_set_extmark(b, ns, mark[1], 0, { end_row = mark[1], end_col = mark[2], hl_group = mark[3] })
  end
  follow()
end

--- A mark at the end of what the transcript shows now. A redraw once the server answers
--- (`elelem.resume`, `elelem.reset`) replaces what is above it and keeps the turns started since.
--- @return integer
function M.cut_point()
  local b = M.bufnr()
  return api.nvim_buf_set_extmark(b, cut_ns, api.nvim_buf_line_count(b) - 1, 0, {})
end

--- Removes the lines up to `cut` (from M.cut_point), or all of them.
--- @param cut integer?
local function clear_to(cut)
  local b = M.bufnr()
  local count = api.nvim_buf_line_count(b)
  local through = count
  if cut then
    local at = api.nvim_buf_get_extmark_by_id(b, cut_ns, cut, {})
    api.nvim_buf_del_extmark(b, cut_ns, cut)
    through = at[1] and at[1] + 1 or count
  end
  api.nvim_buf_clear_namespace(b, ns, 0, through)
  vim.bo[b].modifiable = true
  api.nvim_buf_set_lines(b, 0, through, false, {})
  vim.bo[b].modifiable = false
  if through == count then
    for _, turn in pairs(turns) do
      turn.open = nil -- the line a running turn was writing is gone: it goes on on a fresh one
    end
  end
end

--- Redraws the transcript as the stored conversation `conversation` (what `elelem.resume` and
--- `elelem.transcript` return: `{id, title, entries}`), above the cut if one is given.
--- @param conversation table
--- @param cut integer?
function M.show_conversation(conversation, cut)
  clear_to(cut)
  insert_at_top(conversation_lines(conversation.entries))
end

--- Starts the transcript over for a new conversation, above the cut if one is given.
--- @param cut integer?
function M.start_over(cut)
  clear_to(cut)
  insert_at_top({ { '-- new conversation --', 'ElelemFooter' } })
end

--- Puts the stored conversation above what this session wrote: the history a new session on a
--- folder continues.
--- @param conversation table
function M.prepend_conversation(conversation)
  insert_at_top(conversation_lines(conversation.entries))
end

return M
