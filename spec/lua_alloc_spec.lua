-- The allocator of the Lua states lutorch makes (bindings/lua_alloc.c): small blocks from free
-- lists of the state's own, larger ones from malloc, blocks moving between the two as Lua resizes
-- them. Busted runs inside the lutorch interpreter, whose state uses it: these tests churn blocks of
-- every size through growth, shrinking and collection, and check every value after.
describe('the Lua allocator of lutorch states', function()
  it('keeps values intact through tables that grow and shrink across every block size', function()
    for round = 1, 3 do
      local ts = {}
      for n = 1, 300 do
        local t = {}
        for i = 1, n do t[i] = i * 3 + round end -- the array part grows 1, 2, 4, ... slots
        ts[n] = t
      end
      collectgarbage()
      for n = 1, 300 do
        local t = ts[n]
        assert.are.equal(n, #t)
        for i = 1, n do
          if t[i] ~= i * 3 + round then error(string.format('table %d, slot %d: %s', n, i, tostring(t[i]))) end
        end
        for i = n, 2, -1 do t[i] = nil end -- shrinks at the next rehash
        t.key = n
      end
      collectgarbage()
      for n = 1, 300 do assert.are.equal(n, ts[n].key); assert.are.equal(1 * 3 + round, ts[n][1]) end
    end
  end)

  it('keeps strings of every length, and hash parts, intact across collections', function()
    local strs, maps = {}, {}
    for len = 0, 400 do
      strs[len] = string.rep(string.char(65 + len % 26), len) .. len
      local m = {}
      for k = 1, len % 37 do m['k' .. k .. '_' .. len] = k end
      maps[len] = m
      if len % 50 == 0 then collectgarbage() end
    end
    collectgarbage()
    for len = 0, 400 do
      assert.are.equal(string.rep(string.char(65 + len % 26), len) .. len, strs[len])
      local count = 0
      for k, v in pairs(maps[len]) do
        count = count + 1
        assert.are.equal('k' .. v .. '_' .. len, k)
      end
      assert.are.equal(len % 37, count)
    end
  end)

  it('gives memory back for reuse: a loop of temporaries stays flat', function()
    local function churn()
      for i = 1, 20000 do
        local t = { i, tostring(i), function() return i end }
        local x = torch.ones(4) + i
        assert(t[1] == i and x[1] == 1 + i)
      end
    end
    churn()
    collectgarbage()
    local before = collectgarbage('count')
    churn()
    collectgarbage()
    assert.is_true(collectgarbage('count') < before + 64, collectgarbage('count') - before)
  end)

  it('runs states of their own in threads (DataLoader workers, Lua threads)', function()
    local th = torch._lua_thread { name = 'alloc test' }
    th:start(function(n)
      local t = {}
      for i = 1, n do t[i] = { i, string.rep('x', i % 200) } end
      collectgarbage()
      local s = 0
      for i = 1, n do s = s + t[i][1] + #t[i][2] end
      return s
    end, { 5000 })
    local want = 0
    for i = 1, 5000 do want = want + i + i % 200 end
    assert.are.equal(want, th:wait())
    th:close()
  end)
end)
