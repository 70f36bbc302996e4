--- The host's `usage` figures: the dim row ending a turn (the server's `text`), and the
--- conversation's totals that `:ElelemUsage` prints from `elelem.context`'s `usage` (with inline
--- completion's and next edit's figures).

local M = {}

--- The row at a turn's end, or nil for a provider's own `usage` event (it has no `text`) and for a
--- turn no provider counted (the stub, a failed request: nothing worth a row).
--- @param event table
--- @return string?
function M.row(event)
  local counted = (tonumber(event.inputTokens) or 0) + (tonumber(event.outputTokens) or 0) > 0
  return counted and type(event.text) == 'string' and event.text ~= '' and ('-- ' .. event.text:gsub('\n', ' ')) or nil
end

local function cost_of(usage)
  if type(usage.cost) ~= 'number' then
    return nil
  end
  local figure = ('%.' .. (usage.cost < 0.01 and 4 or 2) .. 'f'):format(usage.cost)
  local currency = type(usage.currency) == 'string' and usage.currency or 'USD'
  return currency == 'USD' and ('$' .. figure) or (figure .. ' ' .. currency)
end

--- "12,345 in · 2,345 out · context 3,000 of 128,000 · $0.12", as an older server's
--- `elelem.context` (without `conversationText`) is worded.
--- @param usage table the `usage` of `elelem.context`
--- @return string
function M.conversation_words(usage)
  local thousands = require('elelem.transcript').thousands
  local function count(value)
    return thousands(type(value) == 'number' and value >= 0 and value or 0)
  end
  local context = 'context ' .. count(usage.contextTokens)
  if type(usage.contextWindow) == 'number' and usage.contextWindow > 0 then
    context = context .. ' of ' .. count(usage.contextWindow)
  end
  local parts = { count(usage.conversationInputTokens) .. ' in', count(usage.conversationOutputTokens) .. ' out', context }
  parts[#parts + 1] = cost_of(usage)
  return table.concat(parts, ' · ')
end

-- The figures of `elelem.context` besides the conversation's, each under its name when there are any.
local SUGGESTIONS = { { 'completion', 'inline completion' }, { 'nextEdit', 'next edit' } }

--- What `:ElelemUsage` says of an `elelem.context` result: the server's words
--- (`conversationText`), else (an older server) worded here; then inline completion's and next
--- edit's figures in the server's words (their `text`) when they showed or asked for anything.
--- @param result any
--- @return string
function M.describe_context(result)
  if type(result) ~= 'table' or type(result.usage) ~= 'table' then
    return 'this server does not count usage (no usage in elelem.context)'
  end
  local words = result.usage.conversationText
  local lines = { 'conversation: ' .. (type(words) == 'string' and words ~= '' and words or M.conversation_words(result.usage)) }
  for _, suggestion in ipairs(SUGGESTIONS) do
    local figures = result[suggestion[1]]
    local used = type(figures) == 'table' and ((tonumber(figures.shown) or 0) > 0 or (tonumber(figures.requests) or 0) > 0)
    if used and type(figures.text) == 'string' then
      lines[#lines + 1] = suggestion[2] .. ': ' .. figures.text
    end
  end
  return table.concat(lines, '\n')
end

return M
