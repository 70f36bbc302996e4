--- The `plan` event (the agent's plan for the turn, the whole of it each time) as transcript
--- lines: `Plan:` then one `[x]` done, `[~]` in progress or `[ ]` to do line per entry.

local M = {}

local MARKS = {
  completed = { '[x]', 'ElelemToolOk' },
  in_progress = { '[~]', 'ElelemTool' },
}
local PENDING = { '[ ]', nil }

--- @param event table `{entries = {{content, status, priority?}...}}`
--- @return {[1]: string, [2]: string?}[] lines as (text, highlight)
function M.lines(event)
  local out = { { 'Plan:', 'ElelemTool' } }
  for _, entry in ipairs(type(event.entries) == 'table' and event.entries or {}) do
    if type(entry) == 'table' and type(entry.content) == 'string' then
      local mark = MARKS[entry.status] or PENDING
      out[#out + 1] = { ('  %s %s'):format(mark[1], (entry.content:gsub('%s*\n%s*', ' '))), mark[2] }
    end
  end
  return out
end

return M
