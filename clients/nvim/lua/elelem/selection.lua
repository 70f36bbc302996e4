--- Turns a command range (`:'<,'>ElelemAsk`, `:3,5ElelemAsk`) into an LSP range in the
--- client's position encoding, and lends every diagnostic source's diagnostics to elelem's
--- code-action requests so "Fix with elelem" is offered for any linter's or server's diagnostic.

local api = vim.api

local M = {}

--- @param bufnr integer
--- @param row integer 0-based
--- @return string
local function line_text(bufnr, row)
  return api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

--- Byte column -> character offset in `encoding`.
local function to_units(bufnr, row, byte_col, encoding)
  local text = line_text(bufnr, row)
  byte_col = math.min(byte_col, #text)
  if byte_col == 0 then
    return 0
  end
  return vim.str_utfindex(text, encoding, byte_col, false)
end

--- The LSP range of lines `line1`..`line2` (1-based, inclusive) of `bufnr`; when the command was
--- given the last characterwise visual selection on those lines, exactly that selection.
--- @param bufnr integer
--- @param line1 integer
--- @param line2 integer
--- @param encoding 'utf-8'|'utf-16'|'utf-32'
--- @return lsp.Range
function M.range(bufnr, line1, line2, encoding)
  local start_mark = api.nvim_buf_get_mark(bufnr, '<')
  local end_mark = api.nvim_buf_get_mark(bufnr, '>')
  local srow, scol, erow, ecol = line1 - 1, 0, line2 - 1, #line_text(bufnr, line2 - 1)
  if vim.fn.visualmode() == 'v' and start_mark[1] == line1 and end_mark[1] == line2 then
    scol = start_mark[2]
    local last = line_text(bufnr, erow)
    local last_char = math.min(end_mark[2], math.max(#last - 1, 0))
    -- the mark is on the first byte of the last selected character; LSP ends are exclusive
    ecol = #last == 0 and 0 or last_char + 1 + vim.str_utf_end(last, last_char + 1)
  end
  return {
    start = { line = srow, character = to_units(bufnr, srow, scol, encoding) },
    ['end'] = { line = erow, character = to_units(bufnr, erow, ecol, encoding) },
  }
end

--- "file.py:3-5" for the transcript heading.
--- @param bufnr integer
--- @param range lsp.Range
--- @return string
function M.describe(bufnr, range)
  local name = vim.fn.fnamemodify(api.nvim_buf_get_name(bufnr), ':t')
  local first, last = range.start.line + 1, range['end'].line + 1
  return first == last and ('%s:%d'):format(name, first) or ('%s:%d-%d'):format(name, first, last)
end

--- Neovim sends a client's code-action request only that client's own diagnostics; elelem
--- publishes none, so its request gets every source's diagnostics on the requested lines.
--- @param params table textDocument/codeAction params
--- @param bufnr integer
--- @return table
function M.lend_diagnostics(params, bufnr)
  local context = params.context or {}
  if context.diagnostics and #context.diagnostics > 0 then
    return params
  end
  local first, last = params.range.start.line, params.range['end'].line
  local found = vim.tbl_filter(function(d)
    return d.lnum <= last and (d.end_lnum or d.lnum) >= first
  end, vim.diagnostic.get(bufnr))
  context.diagnostics = vim.lsp.diagnostic.from(found)
  params.context = context
  return params
end

return M
