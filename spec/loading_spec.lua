-- require 'torch' from the stock lua5.4, and the lutorch interpreter's own torch global.
local torch = require 'torch'

local function run(cmd)
  local p = io.popen(cmd .. ' 2>&1; echo "rc=$?"')
  local out = p:read('a')
  p:close()
  return out
end

describe('loading', function()
  it('torch is a global in lutorch and require returns the same table', function()
    assert.are.equal(torch, require('torch'))
    if rawget(_G, 'torch') then assert.are.equal(_G.torch, torch) end
    for _, name in ipairs { 'cpu', 'cuda', 'memory' } do assert.is_table(torch[name], name) end
  end)

  it('works from the stock lua5.4 with LUA_CPATH', function()
    local build = os.getenv('LUTORCH_BUILD') or 'build'
    -- a sanitized module needs the sanitizer runtimes loaded first into the stock interpreter
    local pre = build:find('san') and
      "LD_PRELOAD=\"$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)\" ASAN_OPTIONS=detect_leaks=0 " or ''
    local out = run(pre .. "LUA_CPATH='" .. build .. "/?.so;;' lua5.4 -e \"local t = require 'torch'; " ..
      "print(t.ones(2, 2):sum():item(), tostring(t.arange(3)))\"")
    assert.is_truthy(out:find('4.0\ttensor([0, 1, 2])', 1, true), out)
    assert.is_truthy(out:find('rc=0', 1, true), out)
  end)
end)
