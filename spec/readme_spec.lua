-- The README's examples run as written. Its ```lua blocks are of two kinds:
-- - REPL sessions (every input line starts with "> "): the input lines are fed to `build/lutorch -i`
--   and what it prints must be the block's other lines, exactly, where a line "..." stands for any
--   number of lines (an abridged help text);
-- - script blocks: all of them, in the README's order, make one script (a later block may use the
--   locals of an earlier one, as a reader going through the tour would), run by build/lutorch with
--   two CPU devices from the repository root; it must finish without an error.
-- A block right after a line `<!-- readme_spec: skip REASON -->` is left out, and reported as
-- pending with its reason (examples that need another launcher or vary from run to run).
-- LUTORCH_BIN overrides the binary under test.
local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'

local SH = require 'spec.support.shell'

-- the ```lua blocks of README.md: { line = first line of code, lines = {...}, skip = reason or nil }
local function readme_blocks()
  local f = assert(io.open('README.md', 'r'))
  local blocks, cur, skip = {}, nil, nil
  local n = 0
  for l in f:lines() do
    n = n + 1
    if cur then
      if l:match('^```%s*$') then
        blocks[#blocks + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = l
      end
    elseif l:match('^```lua%s*$') then
      cur = { line = n + 1, lines = {}, skip = skip }
      skip = nil
    else
      skip = l:match('^<!%-%- readme_spec: skip (.-) %-%->%s*$') -- for the fence on the next line only
    end
  end
  f:close()
  return blocks
end

local function is_session(b)
  for _, l in ipairs(b.lines) do
    if l:match('^> ') then return true end
  end
  return false
end

-- the printed lines against the README's: equal, where a line "..." stands for any number of
-- lines (the rest of an abridged help text); true, or false and the first difference
local function match_lines(expected, got)
  local function from(i, j)
    if i > #expected then
      if j > #got then return true end
      return false, 'an extra line: ' .. got[j]
    end
    if expected[i] == '...' then
      for k = j, #got + 1 do
        if from(i + 1, k) then return true end
      end
      return false, 'nothing after line ' .. (j - 1) .. ' matches what follows "..."'
    end
    if got[j] ~= expected[i] then
      return false, ('line %d: expected %q, got %q'):format(j, expected[i], tostring(got[j]))
    end
    return from(i + 1, j + 1)
  end
  return from(1, 1)
end

local blocks = readme_blocks()

describe('README.md', function()
  it('has Lua examples of both kinds', function()
    local sessions, scripts = 0, 0
    for _, b in ipairs(blocks) do
      if is_session(b) then sessions = sessions + 1 else scripts = scripts + 1 end
    end
    assert.is_true(sessions >= 1 and scripts >= 8, ('%d sessions, %d scripts'):format(sessions, scripts))
  end)

  for _, b in ipairs(blocks) do
    if is_session(b) then
      local name = ('REPL session at line %d prints what the README shows'):format(b.line)
      if b.skip then
        pending(name .. ' (' .. b.skip .. ')')
      else
        it(name, function()
          local input, expected = {}, {}
          for _, l in ipairs(b.lines) do
            local code = l:match('^> (.*)$')
            if code then input[#input + 1] = code else expected[#expected + 1] = l end
          end
          local out, err, rc = SH.run(SH.quote(BIN) .. ' -i', table.concat(input, '\n') .. '\n')
          assert.are.equal(0, rc, err)
          local got = SH.repl_lines(out)
          local ok, why = match_lines(expected, got)
          if not ok then
            error(why .. '\nexpected:\n' .. table.concat(expected, '\n') .. '\ngot:\n' .. table.concat(got, '\n'), 0)
          end
        end)
      end
    end
  end

  it('script examples run in order without an error', function()
    local parts, lines = {}, {}
    for _, b in ipairs(blocks) do
      if not is_session(b) and not b.skip then
        -- each block starts on a line of its own; the map gives an error's README line
        parts[#parts + 1] = table.concat(b.lines, '\n')
        for i = 1, #b.lines do lines[#lines + 1] = b.line + i - 1 end
      end
    end
    local script = SH.write_temp('local torch = require "torch"\n' .. table.concat(parts, '\n') .. '\n')
    local out, err, rc = SH.run('LUTORCH_CPU_DEVICES=2 ' .. SH.quote(BIN) .. ' ' .. SH.quote(script))
    os.remove(script)
    out = out .. err
    if rc ~= 0 then
      -- point at the README's line
      local at = tonumber(out:match(script:gsub('%p', '%%%0') .. ':(%d+):') or '')
      local where = at and lines[at - 1] and (' (README.md line ' .. lines[at - 1] .. ')') or ''
      error('the README examples failed' .. where .. ':\n' .. out, 0)
    end
  end)

  for _, b in ipairs(blocks) do
    if not is_session(b) and b.skip then
      pending(('script at line %d (%s)'):format(b.line, b.skip))
    end
  end
end)
