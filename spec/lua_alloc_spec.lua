-- The allocator of the Lua states lutorch makes (bindings/lua_alloc.c): small blocks from free
-- lists of the state's own, larger ones from malloc, blocks moving between the two as Lua resizes
-- them, and tensor boxes without finalizers, whose tensors the allocator releases when Lua frees
-- them. Busted runs inside the lutorch interpreter, whose state uses it (sanitizer builds use malloc
-- and __gc, and run the same tests): these churn blocks of every size through growth, shrinking and
-- collection and check every value after, and check that tensors go back when their boxes do.
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
    -- a leak would grow the heap by each churn's share of its 4 MB (20000 tables, strings and
    -- closures); the collector's own state may keep a few KB more once (in the sanitizer build, run
    -- after every other spec, one CI run saw it pass 64 KB): the least growth over three churns
    local least = math.huge
    for _ = 1, 3 do
      churn()
      collectgarbage()
      least = math.min(least, collectgarbage('count') - before)
    end
    assert.is_true(least < 64, least)
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

  it("releases a tensor when its box is collected, in loops of temporaries and kept tables", function()
    collectgarbage()
    local base = torch.memory.allocated()
    local a, b = torch.rand(1000), torch.rand(1000)
    for _ = 1, 20000 do local c = a + b end
    collectgarbage()
    collectgarbage()
    assert.are.equal(2 * 4096, torch.memory.allocated() - base) -- a and b only
    local keep = {}
    for i = 1, 300 do keep[i] = torch.ones(100) * i end
    collectgarbage()
    local s = 0
    for i = 1, 300 do s = s + keep[i][100] end
    assert.are.equal(300 * 301 / 2, s)
    assert.are.equal(2 * 4096 + 300 * 512, torch.memory.allocated() - base)
    keep = nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(2 * 4096, torch.memory.allocated() - base)
  end)

  it('keeps a tensor alive for a finalizer that uses it (and after, when the finalizer keeps it)', function()
    -- boxes without __gc live as long as anything refers to them; with __gc (stock lua5.4, sanitizer
    -- builds) a box that a finalizer resurrects has been finalized in the same cycle
    local managed = getmetatable(torch.zeros(1)).__gc == nil
    for round = 1, 3 do
      do
        local _ = setmetatable({ t = torch.ones(3) * round }, {
          __gc = function(o) FINAL_SUM = o.t:sum():item(); FINAL_KEPT = o.t end })
      end
      collectgarbage()
      collectgarbage()
      assert.are.equal(3 * round, FINAL_SUM)
      if managed then assert.are.equal(3 * round, FINAL_KEPT:sum():item()) end
    end
    FINAL_KEPT, FINAL_SUM = nil, nil
  end)

  it('drops collected tensors from weak tables', function()
    local w = setmetatable({}, { __mode = 'k' })
    do w[torch.zeros(3)] = true end
    local kept = torch.zeros(2)
    w[kept] = true
    collectgarbage()
    collectgarbage()
    local n = 0
    for k in pairs(w) do n = n + 1; assert.are.equal(kept, k) end
    assert.are.equal(1, n)
  end)

  it("releases the tensors of a thread's state when it closes", function()
    collectgarbage()
    local base = torch.memory.allocated()
    local th = torch._lua_thread { name = 'alloc close test' }
    th:start(function()
      KEPT = {}
      for i = 1, 50 do KEPT[i] = torch.ones(1000) end
      return #KEPT
    end, {})
    assert.are.equal(50, th:wait())
    assert.are.equal(50 * 4096, torch.memory.allocated() - base)
    th:close()
    assert.are.equal(0, torch.memory.allocated() - base)
  end)

  it('frees Lua autograd functions whose tensors the collector frees, and gives their registry slots back', function()
    local Double = torch.autograd.Function:extend('DoubleForAllocSpec')
    function Double.forward(ctx, x) return x * 2 end
    function Double.backward(ctx, g) return g * 2 end
    local w = torch.ones(3, { requires_grad = true })
    local function registry_size() -- the functions the registry holds (freed slots hold integers)
      local n = 0
      for _, v in pairs(debug.getregistry()) do if type(v) == 'function' then n = n + 1 end end
      return n
    end
    local function churn(k)
      for i = 1, k do
        local y = Double.apply(w) -- the graph dies with y, unused
        if i % 10 == 0 then
          local z = Double.apply(w):sum()
          z:backward()
        end
      end
      collectgarbage()
      collectgarbage()
    end
    churn(500)
    Double.apply(w) -- a safe point: the slots of the functions freed so far go back
    local before = registry_size()
    churn(2000)
    Double.apply(w)
    assert.is_true(registry_size() <= before + 20, registry_size() - before)
    w.grad = nil
    local z = Double.apply(w):sum()
    z:backward()
    assert.are.same({ 2, 2, 2 }, w.grad:totable())
  end)

  it('closes states whose Lua autograd functions are still referenced by live tensors', function()
    local th = torch._lua_thread { name = 'alloc close fn test' }
    th:start(function()
      local F = torch.autograd.Function:extend('KeepForAllocSpec')
      function F.forward(ctx, x) return x + 1 end
      function F.backward(ctx, g) return g end
      local w = torch.ones(2, { requires_grad = true })
      KEEP = {}
      for i = 1, 20 do KEEP[i] = F.apply(w) end
      return #KEEP
    end, {})
    assert.are.equal(20, th:wait())
    th:close() -- frees the boxes, then the graph, while the state closes
    collectgarbage()
  end)
end)
