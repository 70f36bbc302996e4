--- elelem for Neovim: starts `elelem-lsp serve` through `vim.lsp.config`/`vim.lsp.enable` and
--- bridges its `elelem.*` commands to `:Elelem*` commands (its stored conversations to
--- `vim.ui.select`), its `$/progress` stream to the transcript buffer and the statusline, and its
--- `elelem/input` request to `vim.ui.input`.
---
---   require('elelem').setup({
---     cmd = { 'elelem-lsp', 'serve' },
---     settings = { provider = 'openai', model = 'gpt-4o-mini' },
---   })

local api = vim.api
local ghost = require('elelem.ghost')
local insight = require('elelem.insight')
local next_edit = require('elelem.next_edit')
local selection = require('elelem.selection')
local transcript = require('elelem.transcript')

local M = {}

local NAME = 'elelem'
local CLIENT = 'elelem-nvim' -- announced in initializationOptions

M.defaults = {
  cmd = { 'elelem-lsp', 'serve' },
  --- The `elelem` settings section (provider, model, providers, execute, allowCommands,
  --- confirmEdits, workspacePlugins, maxSteps, temperature, maxTokens), or a function of the
  --- workspace folder returning it.
  settings = {},
  --- Files or folders marking a workspace folder; else the current directory when the file is
  --- under it, else the file's own directory.
  root_markers = { '.agents', '.git' },
  --- Filetypes to attach to; nil attaches to every file.
  filetypes = nil,
  --- Show the transcript when a turn starts.
  show_transcript = true,
  --- Ghost text as you type (ghost.lua: `enabled`, `builtin`, `debounce_ms`, `keys`).
  ghost_text = {},
  --- Next edit after a change (next_edit.lua: `enabled`, `debounce_ms`, `keys`).
  next_edit = {},
}

M.options = vim.deepcopy(M.defaults)

local turns = {} --- @type table<string, true>  the progress tokens of our running turns
local token_count = 0
local last_target --- @type {client_id: integer, bufnr: integer}?
local status_message = {} --- @type table<integer, string>  by client id, while a turn runs
local history_loaded = {} --- @type table<integer, true>  clients whose stored conversation is shown

--- @param message string
--- @param level integer?
local function notify(message, level)
  vim.notify('elelem: ' .. message, level or vim.log.levels.INFO)
end

--- @param bufnr integer
--- @return vim.lsp.Client?
local function attached_client(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = NAME })[1]
end

--- The client and file a command acts on: the current buffer's, else the last one used, else any
--- running elelem client (without a file).
--- @return vim.lsp.Client?, integer?
local function target()
  local bufnr = api.nvim_get_current_buf()
  local client = attached_client(bufnr)
  if client then
    last_target = { client_id = client.id, bufnr = bufnr }
    return client, bufnr
  end
  if last_target and api.nvim_buf_is_valid(last_target.bufnr) then
    client = vim.lsp.get_client_by_id(last_target.client_id)
    if client and not client:is_stopped() then
      return client, last_target.bufnr
    end
  end
  client = vim.lsp.get_clients({ name = NAME })[1]
  if not client then
    notify('no elelem-lsp server is running; open a file of a workspace first', vim.log.levels.ERROR)
  end
  return client, nil
end

--- The `uri` argument for a command about `bufnr`, if it is a file the client knows.
--- @param client vim.lsp.Client
--- @param bufnr integer?
--- @return string?
local function uri_of(client, bufnr)
  if bufnr and vim.lsp.buf_is_attached(bufnr, client.id) then
    return vim.uri_from_bufnr(bufnr)
  end
end

--- Runs `workspace/executeCommand` with one object argument; `on_result(err, result)`.
--- @param client vim.lsp.Client
--- @param command string
--- @param argument table
--- @param bufnr integer?
--- @param on_result fun(err: table?, result: any)?
function M.execute(client, command, argument, bufnr, on_result)
  -- an empty Lua table would go out as [], not as the object the server expects
  local params = { command = command, arguments = { next(argument) and argument or vim.empty_dict() } }
  client:request('workspace/executeCommand', params, function(err, result)
    if on_result then
      on_result(err, result)
    elseif err then
      notify(('%s failed: %s'):format(command, err.message), vim.log.levels.ERROR)
    end
  end, bufnr)
end

--- Runs one turn (`elelem.ask` or `elelem.fix`) with a progress token of ours, rendering its
--- stream and outcome in the transcript.
--- @param client vim.lsp.Client
--- @param command 'elelem.ask'|'elelem.fix'
--- @param argument table the command's argument, without progressToken
--- @param bufnr integer?
--- @param heading string what the transcript shows as the prompt
function M.run_turn(client, command, argument, bufnr, heading)
  token_count = token_count + 1
  local token = ('elelem.nvim/%d/%d'):format(vim.fn.getpid(), token_count)
  argument = vim.tbl_extend('force', argument, { progressToken = token })
  turns[token] = true
  local where = argument.range and bufnr and selection.describe(bufnr, argument.range) or nil
  transcript.start_turn(token, heading, where)
  if M.options.show_transcript then
    transcript.show(false)
  end
  M.execute(client, command, argument, bufnr, function(err, result)
    turns[token] = nil
    transcript.finish_turn(token, err, result)
    api.nvim_exec_autocmds('User', { pattern = 'ElelemTurnDone', modeline = false, data = { err = err, result = result } })
  end)
end

--- Asks the agent. `opts.prompt` (asks with vim.ui.input when empty); `opts.range` (LSP range in
--- the current buffer) to ask about a selection.
--- @param opts {prompt: string?, range: lsp.Range?}
function M.ask(opts)
  local client, bufnr = target()
  if not client then
    return
  end
  local function send(prompt)
    if not prompt or vim.trim(prompt) == '' then
      return
    end
    local argument = { prompt = prompt, uri = uri_of(client, bufnr) }
    if opts.range and argument.uri then
      argument.range = opts.range
    end
    M.run_turn(client, 'elelem.ask', argument, bufnr, prompt)
  end
  if opts.prompt and opts.prompt ~= '' then
    send(opts.prompt)
  else
    vim.ui.input({ prompt = opts.range and 'Ask elelem about the selection: ' or 'Ask elelem: ' }, send)
  end
end

--- Switches the provider of the current file's workspace folder; picks from `elelem.providers`
--- with vim.ui.select when `name` is empty.
--- @param name string?
--- @param model string?
function M.select_provider(name, model)
  local client, bufnr = target()
  if not client then
    return
  end
  local uri = uri_of(client, bufnr)
  local function choose(choice)
    if not choice then
      return
    end
    M.execute(client, 'elelem.selectProvider', { name = choice, model = model, uri = uri }, bufnr, function(err)
      if err then
        notify(err.message, vim.log.levels.ERROR)
      else
        notify('provider ' .. choice .. (model and (' (' .. model .. ')') or ''))
      end
    end)
  end
  if name and name ~= '' then
    return choose(name)
  end
  M.execute(client, 'elelem.providers', { uri = uri }, bufnr, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    vim.ui.select(result.available or {}, {
      prompt = ('elelem provider (now %s): '):format(result.provider or 'none'),
      kind = 'elelem.provider',
    }, choose)
  end)
end

--- Provider names for command-line completion (asks the server, waits at most a second).
--- @return string[]
local function provider_names()
  local client, bufnr = target()
  if not client then
    return {}
  end
  local uri = uri_of(client, bufnr)
  local reply = client:request_sync('workspace/executeCommand', {
    command = 'elelem.providers',
    arguments = { uri and { uri = uri } or vim.empty_dict() },
  }, 1000, bufnr)
  return reply and reply.result and reply.result.available or {}
end

--- Stops the running turn of the current folder; the conversation keeps what was complete.
function M.cancel()
  local client, bufnr = target()
  if client then
    M.execute(client, 'elelem.cancel', { uri = uri_of(client, bufnr) }, bufnr)
  end
end

--- Starts a new conversation in the current folder (the old one stays stored); the transcript
--- starts over.
function M.new_conversation()
  local client, bufnr = target()
  if not client then
    return
  end
  local cut = transcript.cut_point()
  M.execute(client, 'elelem.reset', { uri = uri_of(client, bufnr) }, bufnr, function(err)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    transcript.start_over(cut)
  end)
end

--- Prints the folder's conversation's tokens in and out, context and cost (`elelem.context`).
function M.usage()
  local client, bufnr = target()
  if not client then
    return
  end
  M.execute(client, 'elelem.context', { uri = uri_of(client, bufnr) }, bufnr, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    notify(require('elelem.usage').describe_context(result))
  end)
end

--- "2026-12-01T21:45:03.120Z" -> "2026-12-01 21:45" (UTC, as the server stores it).
--- @param iso any
--- @return string
local function short_time(iso)
  if type(iso) ~= 'string' then
    return '?'
  end
  local date, time = iso:match('^(%d+%-%d+%-%d+)T(%d+:%d+)')
  return date and (date .. ' ' .. time) or iso
end

--- One conversation of `elelem.conversations` as the picker shows it:
--- `title · 2026-12-01 21:45 · 3 turns · provider/model`.
--- @param conversation table
--- @return string
function M.describe_conversation(conversation)
  local title = type(conversation.title) == 'string' and conversation.title ~= '' and conversation.title or '(untitled)'
  local turns_count = type(conversation.turns) == 'number' and conversation.turns or 0
  local by = type(conversation.provider) == 'string' and conversation.provider or '?'
  if type(conversation.model) == 'string' and conversation.model ~= '' then
    by = by .. '/' .. conversation.model
  end
  return table.concat({
    title:gsub('\n', ' '),
    short_time(conversation.updated),
    transcript.counted(turns_count, 'turn'),
    by,
  }, ' · ')
end

--- Picks one item of the list the folder's `command` answers with vim.ui.select (`options`) and
--- hands it to `on_choice(client, bufnr, uri, item)`; says `empty` when the list is empty.
--- @param command string
--- @param empty string
--- @param options table
--- @param on_choice fun(client: vim.lsp.Client, bufnr: integer?, uri: string?, item: table)
local function pick(command, empty, options, on_choice)
  local client, bufnr = target()
  if not client then
    return
  end
  local uri = uri_of(client, bufnr)
  M.execute(client, command, { uri = uri }, bufnr, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    if type(result) ~= 'table' or #result == 0 then
      return notify(empty)
    end
    vim.ui.select(result, options, function(choice)
      if choice then
        on_choice(client, bufnr, uri, choice)
      end
    end)
  end)
end

--- Picks one of the folder's stored conversations (newest first) and hands it to
--- `on_choice(client, bufnr, uri, conversation)`.
--- @param prompt string
--- @param on_choice fun(client: vim.lsp.Client, bufnr: integer?, uri: string?, conversation: table)
local function pick_conversation(prompt, on_choice)
  local options = { prompt = prompt, kind = 'elelem.conversation', format_item = M.describe_conversation }
  pick('elelem.conversations', 'no stored conversations in this folder', options, on_choice)
end

--- Lists the folder's stored conversations; the chosen one is resumed (the next ask continues
--- it) and the transcript redrawn from it.
function M.conversations()
  pick_conversation('elelem conversation: ', function(client, bufnr, uri, conversation)
    local cut = transcript.cut_point()
    M.execute(client, 'elelem.resume', { id = conversation.id, uri = uri }, bufnr, function(err, result)
      if err then
        return notify(err.message, vim.log.levels.ERROR)
      end
      transcript.show_conversation(type(result) == 'table' and result or {}, cut)
      if M.options.show_transcript then
        transcript.show(false)
      end
      api.nvim_exec_autocmds('User', { pattern = 'ElelemResumed', modeline = false, data = result })
    end)
  end)
end

--- Deletes a stored conversation picked from the list.
function M.delete_conversation()
  pick_conversation('delete elelem conversation: ', function(client, bufnr, uri, conversation)
    local cut = transcript.cut_point()
    M.execute(client, 'elelem.deleteConversation', { id = conversation.id, uri = uri }, bufnr, function(err, result)
      if err then
        return notify(err.message, vim.log.levels.ERROR)
      end
      if type(result) == 'table' and result.started then -- it was the current one: a new one began
        transcript.start_over(cut)
      end
      notify('deleted ' .. M.describe_conversation(conversation))
    end)
  end)
end

--- A kept turn as one line: its number, when, its prompt, how many files it changed.
--- @param checkpoint table an entry of `elelem.checkpoints`
--- @return string
function M.describe_checkpoint(checkpoint)
  local files = type(checkpoint.files) == 'table' and #checkpoint.files or 0
  local prompt = type(checkpoint.prompt) == 'string' and checkpoint.prompt:gsub('\n', ' ') or ''
  return table.concat({ 'turn ' .. tostring(checkpoint.turn), short_time(checkpoint.at), prompt, transcript.counted(files, 'file') }, ' · ')
end

--- Picks one of the folder's turns that changed files and puts the folder back to before it: its
--- files (an open buffer changes with them; `:wa` writes them), and the conversation too when the
--- turn is the current conversation's. Files changed since are listed, and overwritten only if
--- you choose to.
function M.rewind()
  local options = { prompt = 'rewind to before: ', kind = 'elelem.checkpoint', format_item = M.describe_checkpoint }
  pick('elelem.checkpoints', 'no turn has changed files in this folder yet', options, function(client, bufnr, uri, choice)
    M.execute(client, 'elelem.transcript', { uri = uri }, bufnr, function(_, current)
      local ours = type(current) == 'table' and current.id == choice.conversation
      local function rewind(force)
        local argument = { uri = uri, turn = choice.turn, conversation = ours, force = force }
        M.execute(client, 'elelem.rewind', argument, bufnr, function(rewind_err, answer)
          if rewind_err then
            return notify(rewind_err.message, vim.log.levels.ERROR)
          end
          if answer.rewound and type(answer.text) == 'string' and answer.text ~= '' then
            return notify(answer.text) -- the server's words on what it did
          elseif answer.rewound then -- an older server's answer, worded here
            local what = transcript.counted(#answer.files, 'file') .. (answer.conversation and ' and the conversation' or '')
            return notify(('rewound to before turn %d: %s'):format(choice.turn, what))
          end
          local lines = {}
          for _, conflict in ipairs(answer.conflicts) do
            lines[#lines + 1] = conflict.path .. ': ' .. conflict.reason
          end
          local prompt = ('changed since turn %d:\n%s\n'):format(choice.turn, table.concat(lines, '\n'))
          vim.ui.select({ 'Overwrite them', 'Cancel' }, { prompt = prompt, kind = 'elelem.rewind' }, function(picked)
            if picked == 'Overwrite them' then
              rewind(true)
            end
          end)
        end)
      end
      rewind(false)
    end)
  end)
end

--- Once per client: its folder's current conversation goes above what the transcript shows, so
--- a new session on a folder continues its history. A server without stored conversations
--- answers with an error, which leaves the transcript as it was.
--- @param client vim.lsp.Client
--- @param bufnr integer
local function load_history(client, bufnr)
  if history_loaded[client.id] then
    return
  end
  history_loaded[client.id] = true
  M.execute(client, 'elelem.transcript', { uri = uri_of(client, bufnr) }, bufnr, function(err, result)
    if not err and type(result) == 'table' then
      transcript.prepend_conversation(result)
    end
  end)
end

--- For the statusline: `elelem: <tail of the reply>` while a turn runs, else ''.
---   vim.o.statusline = "%f %= %{v:lua.require'elelem'.status()}"
--- @return string
function M.status()
  for _, message in pairs(status_message) do
    return 'elelem: ' .. message
  end
  return ''
end

--- `$/progress` of elelem clients: the statusline for every turn, the transcript for ours.
--- @param data {client_id: integer, params: {token: string|integer, value: table}}
local function on_progress(data)
  local client = vim.lsp.get_client_by_id(data.client_id)
  if not client or client.name ~= NAME then
    return
  end
  local value = data.params.value or {}
  if value.kind == 'end' then
    status_message[data.client_id] = nil
  else
    status_message[data.client_id] = (value.message or ''):gsub('%s+', ' ')
  end
  if turns[data.params.token] and value.kind == 'report' then
    transcript.render_events(data.params.token, value.events)
    vim.cmd.redraw() -- the transcript grows as the turn runs, not when the user next moves
  else
    vim.cmd.redrawstatus({ bang = true })
  end
end

--- Whether any change annotation of `edit` asks for the user's confirmation (`confirmEdits`).
--- @param edit table a WorkspaceEdit
--- @return boolean
local function needs_confirmation(edit)
  for _, annotation in pairs(edit.changeAnnotations or {}) do
    if annotation.needsConfirmation then
      return true
    end
  end
  return false
end

--- `edit` without its change annotations: Neovim's applier would print an "Applied changes:"
--- message for them, which stops the editor at a hit-enter prompt on every agent edit.
--- @param edit table a WorkspaceEdit
--- @return table
local function without_annotations(edit)
  edit = vim.deepcopy(edit)
  edit.changeAnnotations = nil
  for _, change in ipairs(edit.documentChanges or {}) do
    change.annotationId = nil
    for _, text_edit in ipairs(change.edits or {}) do
      text_edit.annotationId = nil
    end
  end
  return edit
end

--- `workspace/applyEdit` from elelem: applied quietly (no label printed, no hit-enter prompt), the
--- screen redrawn so the change shows as the turn runs; with `confirmEdits` Neovim's own confirm.
local function on_apply_edit(_, params, ctx)
  local client = assert(vim.lsp.get_client_by_id(ctx.client_id))
  local edit = needs_confirmation(params.edit) and params.edit or without_annotations(params.edit)
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, edit, client.offset_encoding)
  vim.cmd.redraw()
  return { applied = ok, failureReason = not ok and tostring(err) or nil }
end

--- `elelem/input` (the human provider): a line typed by the user, or null when dismissed.
local function on_input_request(_, params)
  local co, is_main = coroutine.running()
  if not co or is_main then
    return vim.NIL
  end
  vim.ui.input({ prompt = (params and params.prompt or 'elelem') .. ' ' }, function(text)
    vim.schedule(function()
      coroutine.resume(co, text)
    end)
  end)
  local text = coroutine.yield()
  return text and { text = text } or vim.NIL
end

--- Code actions run `elelem.fix`/`elelem.ask` through here, so they stream into the transcript.
local function client_command(command, ctx)
  local client = assert(vim.lsp.get_client_by_id(ctx.client_id))
  local argument = vim.deepcopy((command.arguments or {})[1] or {})
  local heading = argument.prompt or command.title or command.command
  M.run_turn(client, command.command, argument, ctx.bufnr, heading)
end

--- The workspace folder of a buffer.
local function root_dir(bufnr, on_dir)
  local root = vim.fs.root(bufnr, M.options.root_markers)
  if root then
    return on_dir(root)
  end
  local file = api.nvim_buf_get_name(bufnr)
  local cwd = vim.fn.getcwd()
  if file == '' or vim.startswith(vim.fs.normalize(file), vim.fs.normalize(cwd) .. '/') then
    return on_dir(cwd)
  end
  on_dir(vim.fs.dirname(file))
end

--- @param opts table? see M.defaults
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  ghost.setup(M.options.ghost_text)
  next_edit.setup(M.options.next_edit)
  local settings = M.options.settings
  vim.lsp.config(NAME, {
    cmd = M.options.cmd,
    filetypes = M.options.filetypes,
    root_dir = root_dir,
    settings = type(settings) == 'table' and { elelem = settings } or {},
    -- `client` tells the server this plugin renders the turn itself (no plain-client popups)
    init_options = vim.tbl_extend('force', type(settings) == 'table' and settings or {}, { client = CLIENT }),
    before_init = function(params, config)
      if type(settings) == 'function' then
        local folder = settings(config.root_dir)
        -- the client answers workspace/configuration from this very table
        config.settings.elelem = folder
        params.initializationOptions = vim.tbl_extend('force', folder or {}, { client = CLIENT })
      end
    end,
    on_init = function(client)
      local request = client.request
      client.request = function(self, method, params, handler, bufnr)
        if method == 'textDocument/codeAction' and type(params) == 'table' and params.range then
          params = selection.lend_diagnostics(params, (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr)
        end
        return request(self, method, params, handler, bufnr)
      end
    end,
    -- announces that it answers elelem/diagnostics, definition, references, symbols (insight.lua)
    -- and that it asks for next edits (next_edit.lua)
    capabilities = vim.tbl_deep_extend('force', insight.capabilities, next_edit.capabilities(M.options.next_edit)),
    handlers = vim.tbl_extend('force', insight.handlers, { ['elelem/input'] = on_input_request, ['workspace/applyEdit'] = on_apply_edit }),
    commands = { ['elelem.ask'] = client_command, ['elelem.fix'] = client_command },
  })
  vim.lsp.enable(NAME)

  local group = api.nvim_create_augroup('elelem', { clear = true })
  api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      on_progress(ev.data)
    end,
  })
  api.nvim_create_autocmd('DiagnosticChanged', {
    group = group,
    callback = function(ev)
      insight.on_diagnostics_changed(ev.buf)
    end,
  })
  api.nvim_create_autocmd('LspAttach', {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == NAME then
        load_history(client, ev.buf)
        ghost.attach(client, ev.buf)
        next_edit.attach(client, ev.buf)
      end
    end,
  })

  api.nvim_create_user_command('ElelemAsk', function(cmd)
    local range
    if cmd.range > 0 then
      local client = attached_client(0)
      if not client then
        return notify('this buffer is not a file of an elelem workspace', vim.log.levels.ERROR)
      end
      range = selection.range(0, cmd.line1, cmd.line2, client.offset_encoding)
    end
    M.ask({ prompt = cmd.args, range = range })
  end, { nargs = '*', range = true, desc = 'Ask elelem (about the range, if given)' })

  api.nvim_create_user_command('ElelemProvider', function(cmd)
    M.select_provider(cmd.fargs[1], cmd.fargs[2])
  end, {
    nargs = '*',
    desc = 'Choose the elelem provider [name] [model] of this workspace folder',
    complete = function(lead, line)
      if #vim.split(line, '%s+', { trimempty = false }) > 2 then
        return {}
      end
      return vim.tbl_filter(function(name)
        return vim.startswith(name, lead)
      end, provider_names())
    end,
  })
  api.nvim_create_user_command('ElelemCancel', M.cancel, { desc = 'Cancel the running elelem turn' })
  api.nvim_create_user_command('ElelemReset', M.new_conversation, { desc = 'Start a new elelem conversation' })
  api.nvim_create_user_command('ElelemNewConversation', M.new_conversation, { desc = 'Start a new elelem conversation' })
  api.nvim_create_user_command('ElelemConversations', M.conversations, { desc = 'Resume a stored elelem conversation' })
  api.nvim_create_user_command('ElelemDeleteConversation', M.delete_conversation, { desc = 'Delete a stored elelem conversation' })
  api.nvim_create_user_command('ElelemRewind', M.rewind, { desc = 'Put the files (and conversation) back to before an elelem turn' })
  api.nvim_create_user_command('ElelemUsage', M.usage, { desc = "Show the elelem conversation's tokens and cost" })
  api.nvim_create_user_command('ElelemTranscript', function()
    transcript.show(true)
  end, { desc = 'Open the elelem transcript' })
end

return M
