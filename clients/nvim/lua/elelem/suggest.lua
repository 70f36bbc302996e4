--- What ghost text (ghost.lua) and next edit (next_edit.lua) share: asking the server per buffer
--- once typing pauses, a newer request superseding the older (its answer dropped and the request
--- cancelled, so the server closes its model request); ending with the client or the buffer;
--- keys that act when a suggestion is there and are the key itself otherwise; their options.

local api = vim.api

local M = {}

--- One buffer's requests of one kind, to one client.
--- @class elelem.suggest.Asker
--- @field client_id integer
--- @field generation integer requests made or cancelled: an older answer is known as such
--- @field timer uv.uv_timer_t?
--- @field request_id integer?
local Asker = {}
Asker.__index = Asker

--- @param client_id integer
--- @return elelem.suggest.Asker
function M.asker(client_id)
  return setmetatable({ client_id = client_id, generation = 0 }, Asker)
end

--- Stops the pending timer and the request in flight.
function Asker:cancel()
  if self.timer then
    self.timer:stop()
    self.timer:close()
    self.timer = nil
  end
  self.generation = self.generation + 1
  local client = vim.lsp.get_client_by_id(self.client_id)
  if self.request_id and client then
    client:cancel_request(self.request_id)
  end
  self.request_id = nil
end

--- Runs `fn` after `delay` ms, unless something is scheduled or asked before.
--- @param delay integer
--- @param fn fun()
function Asker:schedule(delay, fn)
  self:cancel()
  local timer = assert(vim.uv.new_timer())
  self.timer = timer
  timer:start(delay, 0, vim.schedule_wrap(function()
    if self.timer == timer then
      self.timer = nil
      timer:close()
      fn()
    end
  end))
end

--- Sends `method`; `on_result(result)` gets a table answer of the newest request only.
--- @param method string
--- @param params table
--- @param bufnr integer
--- @param on_result fun(result: table)
function Asker:request(method, params, bufnr, on_result)
  local client = vim.lsp.get_client_by_id(self.client_id)
  if not client then
    return
  end
  self:cancel()
  local generation = self.generation
  local ok, id = client:request(method, params, function(err, result)
    if self.generation ~= generation then
      return -- a newer request took its place
    end
    self.request_id = nil
    if not err and type(result) == 'table' then
      on_result(result)
    end
  end, bufnr)
  self.request_id = ok and id or nil
end

--- Calls `on_end()` and deletes `group` when the client detaches from `bufnr` or the buffer goes.
--- @param bufnr integer
--- @param client_id integer
--- @param group integer the feature's augroup for the buffer
--- @param on_end fun()
function M.until_detached(bufnr, client_id, group, on_end)
  api.nvim_create_autocmd({ 'LspDetach', 'BufUnload' }, {
    group = group,
    buffer = bufnr,
    callback = function(ev)
      if ev.event == 'LspDetach' and ev.data.client_id ~= client_id then
        return
      end
      on_end()
      api.nvim_del_augroup_by_id(group)
    end,
  })
end

--- Buffer-local `modes` mappings of `keys` (action name -> lhs) to `actions` (name -> function
--- returning whether it acted); a key that did not act is itself.
--- @param bufnr integer
--- @param modes string|string[]
--- @param keys table<string, string|false>
--- @param actions table<string, fun(): boolean>
--- @param what string for the mappings' descriptions
function M.map_keys(bufnr, modes, keys, actions, what)
  for action, lhs in pairs(keys) do
    if lhs and actions[action] then
      vim.keymap.set(modes, lhs, function()
        return actions[action]() and '' or lhs
      end, { buffer = bufnr, expr = true, desc = ('elelem %s: %s'):format(what, (action:gsub('_', ' '))) })
    end
  end
end

--- A feature's options: `given` over `defaults`; `keys = false` maps none.
--- @param defaults table
--- @param given table?
--- @return table
function M.options(defaults, given)
  local options = vim.tbl_deep_extend('force', vim.deepcopy(defaults), given or {})
  if options.keys == false then
    options.keys = {}
  end
  return options
end

return M
