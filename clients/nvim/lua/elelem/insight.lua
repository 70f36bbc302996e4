--- What the other language servers of a buffer know, for elelem-lsp: answers its
--- `elelem/diagnostics` from `vim.diagnostic.get` (waiting, when asked, for the diagnostics of
--- the files it changed to settle: the `DiagnosticChanged` autocmd counts changes), and its
--- `elelem/definition`, `elelem/references` and `elelem/symbols` by asking the OTHER language
--- servers attached to the buffer (never elelem itself). Also the transcript's lines for a
--- `checked` event. The wire: docs/contract.md, "The editor's language servers".

local api = vim.api

local M = {}

--- What this client announces in `capabilities.experimental.elelem`.
M.capabilities = { experimental = { elelem = { diagnostics = true, definition = true, references = true, symbols = true } } }

local SETTLE_MS = 200 -- diagnostics quiet this long count as settled
local POLL_MS = 25
local ASK_MS = 5000 -- how long another language server may take to answer

local generation = 0 -- diagnostics changes seen, in any buffer
local changed = {} --- @type table<integer, {generation: integer, at: integer}>  by buffer

local function now()
  return vim.uv.now()
end

--- Called by the `DiagnosticChanged` autocmd.
function M.on_diagnostics_changed(bufnr)
  generation = generation + 1
  changed[bufnr] = { generation = generation, at = now() }
end

--- Sleeps `ms` in the request's coroutine (server requests run in one).
local function sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    coroutine.resume(co)
  end, ms)
  coroutine.yield()
end

--- The loaded buffer of a file URI, or nil (none is made for it).
local function buffer_of(uri)
  local ok, name = pcall(vim.uri_to_fname, uri)
  local bufnr = ok and vim.fn.bufnr(name) or -1
  return bufnr ~= -1 and api.nvim_buf_is_loaded(bufnr) and bufnr or nil
end

--- The text of line `lnum` (0-based) of a buffer, else of the file.
local function line_of(bufnr, fname, lnum)
  if bufnr then
    return api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ''
  end
  local ok, lines = pcall(vim.fn.readfile, fname, '', lnum + 1)
  return ok and lines[lnum + 1] or ''
end

--- A byte column of a line as `encoding` units, and back.
local function to_units(line, col, encoding)
  local ok, units = pcall(vim.str_utfindex, line, encoding, math.min(col, #line), false)
  return ok and units or col
end
local function to_bytes(line, units, encoding)
  local ok, col = pcall(vim.str_byteindex, line, encoding, units, false)
  return ok and col or units
end

--- A position in another encoding: `from` units on the line, as `to` units.
local function convert(uri, position, from, to)
  if from == to then
    return position
  end
  local ok, fname = pcall(vim.uri_to_fname, uri)
  local line = line_of(buffer_of(uri), ok and fname or '', position.line)
  return { line = position.line, character = to_units(line, to_bytes(line, position.character, from), to) }
end

local function elelem_client(ctx)
  return assert(vim.lsp.get_client_by_id(ctx.client_id))
end

--- Whether a language server other than elelem is attached to the buffer.
local function checked_by_others(bufnr)
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if client.name ~= 'elelem' then
      return true
    end
  end
  return false
end

--- Whether anything reports problems for the buffer: another language server, or diagnostics seen.
local function is_checked(bufnr)
  return bufnr ~= nil and (changed[bufnr] ~= nil or checked_by_others(bufnr))
end

--- `elelem/diagnostics {uris?, waitMs?, since?}` -> `{items: [{uri, diagnostics, checked}], generation}`.
function M.on_diagnostics(_, params, ctx)
  params = params or {}
  local encoding = elelem_client(ctx).offset_encoding
  local uris = params.uris
  if type(params.waitMs) == 'number' and params.waitMs > 0 and coroutine.running() then
    local deadline = now() + params.waitMs
    local since = type(params.since) == 'number' and params.since or generation
    while now() < deadline do
      local all, last = true, 0
      for _, uri in ipairs(uris or {}) do
        local bufnr = buffer_of(uri)
        local seen = changed[bufnr or -1]
        if not is_checked(bufnr) then
          -- nothing reports problems for it: no change to wait for
        elseif not seen or seen.generation <= since then
          all = false
        else
          last = math.max(last, seen.at)
        end
      end
      if all and now() - last >= SETTLE_MS then
        break
      end
      sleep(POLL_MS)
    end
  end
  local buffers = {}
  if uris then
    for _, uri in ipairs(uris) do
      buffers[#buffers + 1] = { uri = uri, bufnr = buffer_of(uri) }
    end
  else
    local seen = {}
    for _, diagnostic in ipairs(vim.diagnostic.get(nil)) do
      if not seen[diagnostic.bufnr] and api.nvim_buf_get_name(diagnostic.bufnr) ~= '' then
        seen[diagnostic.bufnr] = true
        buffers[#buffers + 1] = { uri = vim.uri_from_bufnr(diagnostic.bufnr), bufnr = diagnostic.bufnr }
      end
    end
  end
  local items = {}
  for _, buffer in ipairs(buffers) do
    local diagnostics = {}
    for _, d in ipairs(buffer.bufnr and vim.diagnostic.get(buffer.bufnr) or {}) do
      local first = line_of(buffer.bufnr, nil, d.lnum)
      local last = line_of(buffer.bufnr, nil, d.end_lnum or d.lnum)
      diagnostics[#diagnostics + 1] = {
        range = {
          start = { line = d.lnum, character = to_units(first, d.col, encoding) },
          ['end'] = { line = d.end_lnum or d.lnum, character = to_units(last, d.end_col or d.col, encoding) },
        },
        severity = d.severity,
        message = d.message,
        source = d.source,
        code = d.code,
      }
    end
    items[#items + 1] = { uri = buffer.uri, diagnostics = diagnostics, checked = is_checked(buffer.bufnr) }
  end
  return { items = items, generation = generation }
end

--- The language servers other than elelem attached to `bufnr` that answer `method`.
local function others(bufnr, method)
  return vim.tbl_filter(function(client)
    return client.name ~= 'elelem' and client:supports_method(method, bufnr)
  end, vim.lsp.get_clients(bufnr and { bufnr = bufnr } or nil))
end

--- Asks the other servers `method`, each with `params_for(client)`; their answers, each turned
--- into elelem's encoding by `adapt(result, client)`, as one list.
local function ask_others(bufnr, method, params_for, adapt)
  local co = coroutine.running()
  local clients = others(bufnr, method)
  local pending, found = #clients, {}
  if pending == 0 or not co then
    return found
  end
  local done = false
  local function finish()
    if not done then
      done = true
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  for _, client in ipairs(clients) do
    client:request(method, params_for(client), function(err, result)
      if not err and result then
        vim.list_extend(found, adapt(vim.islist(result) and result or { result }, client))
      end
      pending = pending - 1
      if pending == 0 then
        finish()
      end
    end, bufnr)
  end
  vim.defer_fn(finish, ASK_MS)
  coroutine.yield()
  return found
end

--- Locations (or LocationLinks) from `client`, in elelem's encoding.
local function locations(result, client, encoding)
  local out = {}
  for _, item in ipairs(result) do
    local uri, range = item.uri or item.targetUri, item.range or item.targetSelectionRange
    if uri and range then
      out[#out + 1] = {
        uri = uri,
        range = {
          start = convert(uri, range.start, client.offset_encoding, encoding),
          ['end'] = convert(uri, range['end'], client.offset_encoding, encoding),
        },
      }
    end
  end
  return out
end

--- The buffer of a position request, loaded (so the other servers attach) when it was not.
local function place_buffer(uri)
  local bufnr = buffer_of(uri)
  if not bufnr then
    bufnr = vim.uri_to_bufnr(uri)
    vim.fn.bufload(bufnr)
  end
  return bufnr
end

local function on_place(method, extra)
  return function(_, params, ctx)
    local encoding = elelem_client(ctx).offset_encoding
    local bufnr = place_buffer(params.uri)
    return ask_others(bufnr, method, function(client)
      local request = {
        textDocument = { uri = params.uri },
        position = convert(params.uri, params.position, encoding, client.offset_encoding),
      }
      return extra and extra(request, params) or request
    end, function(result, client)
      return locations(result, client, encoding)
    end)
  end
end

M.on_definition = on_place('textDocument/definition')
M.on_references = on_place('textDocument/references', function(request, params)
  request.context = { includeDeclaration = params.includeDeclaration ~= false }
  return request
end)

--- `elelem/symbols {uri}` (a document's) or `{query}` (the workspace's).
function M.on_symbols(_, params, ctx)
  local encoding = elelem_client(ctx).offset_encoding
  local function adapt(result, client)
    local function walk(items)
      for _, item in ipairs(items) do
        if item.location and item.location.range then
          local where = item.location
          where.range.start = convert(where.uri, where.range.start, client.offset_encoding, encoding)
        elseif item.selectionRange then
          item.selectionRange.start = convert(params.uri, item.selectionRange.start, client.offset_encoding, encoding)
          item.range = nil
        end
        walk(item.children or {})
      end
      return items
    end
    return walk(result)
  end
  if params.uri then
    local bufnr = place_buffer(params.uri)
    return ask_others(bufnr, 'textDocument/documentSymbol', function()
      return { textDocument = { uri = params.uri } }
    end, adapt)
  end
  return ask_others(nil, 'workspace/symbol', function()
    return { query = params.query or '' }
  end, adapt)
end

M.handlers = {
  ['elelem/diagnostics'] = M.on_diagnostics,
  ['elelem/definition'] = M.on_definition,
  ['elelem/references'] = M.on_references,
  ['elelem/symbols'] = M.on_symbols,
}

local SHOWN = 10 -- problems listed under a `checked` row

--- The transcript lines of a `checked` event: its row, then each new problem (at most 10), or
--- the end of the command's output.
--- @param event table
--- @return {[1]: string, [2]: string}[]
function M.checked_lines(event)
  local problems = type(event.newProblems) == 'table' and event.newProblems or {}
  local bad = #problems > 0 or (type(event.exitCode) == 'number' and event.exitCode ~= 0)
  local out = { { '✓ ' .. tostring(event.text or 'checked'), bad and 'ElelemToolError' or 'ElelemToolOk' } }
  for i, p in ipairs(problems) do
    if i > SHOWN then
      out[#out + 1] = { ('    … and %d more'):format(#problems - SHOWN), 'ElelemNote' }
      break
    end
    out[#out + 1] = {
      ('    %s:%s:%s %s: %s'):format(p.path, p.line, p.column, p.severity, (tostring(p.message):gsub('%s+', ' '))),
      'ElelemNote',
    }
  end
  if type(event.output) == 'string' and event.output ~= '' then
    local lines = vim.split(vim.trim(event.output), '\n', { plain = true })
    for i = math.max(1, #lines - SHOWN + 1), #lines do
      out[#out + 1] = { '    ' .. lines[i], 'ElelemNote' }
    end
  end
  return out
end

return M
