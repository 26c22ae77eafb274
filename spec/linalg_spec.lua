-- Matrix products against plain-Lua loops, on every dtype they accept, contiguous or not.
local torch = require 'torch'
local H = require 'spec.helpers'

-- plain Lua product of nested tables
local function lua_mm(a, b)
  local n, k, m = #a, #b, #b[1]
  local c = {}
  for i = 1, n do
    c[i] = {}
    for j = 1, m do
      local s = 0
      for p = 1, k do s = s + a[i][p] * b[p][j] end
      c[i][j] = s
    end
  end
  return c
end

local function rand_table(r, c, ints)
  local t = {}
  for i = 1, r do
    t[i] = {}
    for j = 1, c do t[i][j] = ints and math.random(-5, 5) or (math.random() - 0.5) end
  end
  return t
end

describe('matrix products', function()
  it('mm matches the reference for every dtype it accepts', function()
    math.randomseed(1)
    for _, dt in ipairs { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
      torch.int16, torch.int8, torch.uint8 } do
      local ints = not dt.is_floating_point
      local at, bt = rand_table(7, 5, ints), rand_table(5, 3, ints)
      if dt == torch.uint8 then
        at, bt = rand_table(7, 5, ints), rand_table(5, 3, ints)
        for _, t in ipairs { at, bt } do for i = 1, #t do for j = 1, #t[1] do t[i][j] = math.abs(t[i][j]) end end end
      end
      local a, b = torch.tensor(at, { dtype = dt }), torch.tensor(bt, { dtype = dt })
      -- the reference uses the values as stored in dt
      local want = lua_mm(a:double():totable(), b:double():totable())
      local c = torch.mm(a, b)
      assert.are.equal(dt, c.dtype)
      assert.are.same({ 7, 3 }, c.shape)
      H.assert_values(c:double(), want, ints and 0 or H.tol(dt) * 10, 'mm ' .. tostring(dt))
    end
  end)

  it('handles transposed and strided operands and large sizes', function()
    math.randomseed(2)
    local at, bt = rand_table(67, 45, false), rand_table(53, 67, false)
    local a = torch.tensor(at, { dtype = torch.float64 })
    local b = torch.tensor(bt, { dtype = torch.float64 })
    local want = lua_mm(a:t():totable(), b:t():totable()) -- [45, 67] @ [67, 53]
    H.assert_values(torch.mm(a:t(), b:t()), want, 1e-12)
    H.assert_values(torch.mm(a:t():float(), b:t():float()):double(), want, 1e-5)
    -- every other column: neither row- nor column-contiguous
    local wide = torch.tensor(rand_table(10, 12, false))
    local sub = wide:narrow(2, 1, 11):view(10, 11)[{ {}, { 1, 11 } }]
    local every_other = torch.tensor(rand_table(10, 12, false)):t():contiguous():t()
    local s = torch.mm(every_other:t(), sub)
    H.assert_values(s, lua_mm(every_other:t():totable(), sub:totable()), 1e-5)
  end)

  it('matmul broadcasts batches and handles 1-D operands as PyTorch', function()
    math.randomseed(3)
    local a = torch.randn(2, 1, 4, 3)
    local b = torch.randn(5, 3, 2)
    local c = torch.matmul(a, b)
    assert.are.same({ 2, 5, 4, 2 }, c.shape)
    for i = 1, 2 do
      for j = 1, 5 do
        H.assert_values(c[i][j], lua_mm(a[i][1]:totable(), b[j]:totable()), 1e-5)
      end
    end
    local v = torch.randn(3)
    local m = torch.randn(4, 3)
    assert.are.same({ 4 }, torch.matmul(m, v).shape)
    assert.are.same({ 4 }, torch.matmul(v, m:t()).shape)
    assert.are.same({}, torch.matmul(v, v).shape)
    assert.are.same({ 2, 5, 4 }, torch.matmul(a:view(2, 4, 3):unsqueeze(2):expand(2, 5, 4, 3), v).shape)
    H.close(torch.matmul(v, v):item(), (v * v):sum():item(), 1e-6)
    H.assert_values(torch.matmul(m, v), lua_mm(m:totable(), v:view(3, 1):totable()), 1e-5)
  end)

  it('bmm, mv, dot and addmm', function()
    local a, b = torch.randn(3, 2, 4), torch.randn(3, 4, 5)
    local c = torch.bmm(a, b)
    for i = 1, 3 do H.assert_values(c[i], lua_mm(a[i]:totable(), b[i]:totable()), 1e-5) end
    local m, v = torch.randn(3, 4), torch.randn(4)
    H.assert_values(torch.mv(m, v), lua_mm(m:totable(), v:view(4, 1):totable()), 1e-5)
    H.close(torch.dot(v, v):item(), (v * v):sum():item(), 1e-6)
    assert.are.equal(14, torch.dot(torch.tensor({ 1, 2, 3 }), torch.tensor({ 1, 2, 3 })):item())
    local x, y, bias = torch.randn(2, 3), torch.randn(3, 4), torch.randn(4)
    local want = lua_mm(x:totable(), y:totable())
    for i = 1, 2 do for j = 1, 4 do want[i][j] = 0.5 * bias[j] + 2 * want[i][j] end end
    H.assert_values(torch.addmm(bias, x, y, { beta = 0.5, alpha = 2 }), want, 1e-5)
    -- beta = 0 ignores NaN in the added matrix
    local nan = torch.full({ 2, 4 }, 0 / 0)
    H.assert_values(torch.addmm(nan, x, y, { beta = 0 }), lua_mm(x:totable(), y:totable()), 1e-5)
  end)

  it('addmm with a bias row (a Linear layer): every split of the product, the same bits as a full added matrix', function()
    -- shapes for the swapped product (x @ W^T with few rows), rows split, columns split, one thread,
    -- a row or column of output (gemv), tiny, dot products (at most 16 rows of x, 4 x 4 blocks and
    -- their remainders); the bias as (n), (1, n), strided (the general path)
    local cases = {
      { 64, 784, 512, true }, { 64, 512, 256, true }, { 64, 256, 10, true }, { 300, 50, 40, false },
      { 37, 200, 301, false }, { 5, 7, 9, false }, { 1, 600, 500, true }, { 600, 500, 1, false },
      { 2, 3, 4, false }, { 8, 784, 512, true }, { 3, 100, 37, true }, { 16, 33, 9, true },
    }
    for _, cs in ipairs(cases) do
      local m, k, n, wt = cs[1], cs[2], cs[3], cs[4]
      local x = torch.randn(m, k)
      local y = wt and torch.randn(n, k):t() or torch.randn(k, n) -- a transposed weight, or row-major
      local bias = torch.randn(n)
      local full = bias:expand(m, n):contiguous()
      local want = torch.addmm(full, x, y) -- the copy-then-product path
      local ref = torch.mm(x:double(), y:double()) + bias:double()
      for _, b in ipairs { bias, bias:view(1, n), torch.randn(n, 2):select(2, 1):copy_(bias) } do
        local got = torch.addmm(b, x, y)
        assert.are.same({ m, n }, got.shape)
        assert.is_true(torch.equal(got, want), ('addmm %dx%dx%d'):format(m, k, n))
        H.assert_values(got:double(), H.flatten(ref:totable()), 1e-4)
      end
      -- alpha scales the product only; a transposed x reads as it lies
      local got = torch.addmm(bias, x:t():contiguous():t(), y, { alpha = 2 })
      H.assert_values(got:double(), H.flatten((2 * torch.mm(x:double(), y:double()) + bias:double()):totable()), 1e-4)
      -- F.linear reads the weight as it lies: the same bits where that is y's layout (a row-major y
      -- read as W^T may sum in another order: dot products for few rows of x)
      local lin = torch.nn.functional.linear(x, wt and y:t() or y:t():contiguous(), bias)
      if wt then assert.is_true(torch.equal(lin, want)) end
      H.assert_values(lin:double(), H.flatten(ref:totable()), 1e-4)
    end
  end)

  it('one row or one column of output (a batch of one through a Linear layer) at every size, against float64', function()
    -- products from 64 multiply-adds up go to gemv: a row x @ W or W^T, a column W @ v; operands
    -- contiguous, transposed and strided (every other element)
    for _, cs in ipairs { { 8, 8 }, { 16, 32 }, { 32, 16 }, { 32, 32 }, { 100, 300 }, { 512, 256 }, { 784, 512 } } do
      local k, n = cs[1], cs[2]
      local xs = torch.randn(1, 2 * k)
      local rows = { torch.randn(1, k), xs[{ {}, { 1, 2 * k, 2 } }] }
      local ws = { torch.randn(k, n), torch.randn(n, k):t(), torch.randn(k, 2 * n)[{ {}, { 1, 2 * n, 2 } }] }
      for _, x in ipairs(rows) do
        for _, w in ipairs(ws) do
          local got = torch.mm(x, w)
          assert.are.same({ 1, n }, got.shape)
          local ref = torch.mm(x:double(), w:double())
          H.assert_values(got:double(), H.flatten(ref:totable()), 1e-4, ('row %dx%d'):format(k, n))
          local col = torch.mm(w:t(), x:t())
          assert.are.same({ n, 1 }, col.shape)
          H.assert_values(col:double(), H.flatten(ref:t():totable()), 1e-4, ('column %dx%d'):format(k, n))
        end
      end
      local lin = torch.nn.Linear(k, n)
      local x = torch.randn(1, k)
      local want = torch.mm(x:double(), lin.weight:double():t()) + lin.bias:double()
      H.assert_values(lin(x):double(), H.flatten(want:totable()), 1e-4, ('Linear(%d, %d)'):format(k, n))
    end
  end)

  it('a weight gradient g^T @ x on every split of the product (rows or columns) against float64', function()
    for _, cs in ipairs { { 512, 784, 64 }, { 256, 512, 64 }, { 264, 200, 30 }, { 40, 1000, 16 }, { 1000, 40, 16 } } do
      local m, n, k = cs[1], cs[2], cs[3]
      local g, x = torch.randn(k, m), torch.randn(k, n)
      local got = torch.mm(g:t(), x)
      local ref = torch.mm(g:double():t():contiguous(), x:double())
      assert.are.same({ m, n }, got.shape)
      H.assert_values(got:double(), H.flatten(ref:totable()), 1e-4, ('g^T @ x %dx%dx%d'):format(m, n, k))
    end
  end)

  it('degenerate sizes', function()
    assert.are.same({ 3, 0 }, torch.mm(torch.ones(3, 2), torch.ones(2, 0)).shape)
    H.assert_values(torch.mm(torch.ones(2, 0), torch.ones(0, 2)), { 0, 0, 0, 0 })
  end)

  it('rejects bad shapes, mixed dtypes, bool and mixed devices', function()
    H.raises(function() return torch.mm(torch.ones(2, 3), torch.ones(4, 5)) end, 'mm', '2x3', '4x5')
    H.raises(function() return torch.mm(torch.ones(2, 3), torch.ones(3, 2, { dtype = torch.float64 })) end, 'mm', 'float32', 'float64')
    H.raises(function() return torch.mm(torch.ones(3), torch.ones(3, 2)) end, 'mm', '2-D')
    H.raises(function() return torch.bmm(torch.ones(2, 2, 3), torch.ones(3, 3, 2)) end, 'bmm')
    H.raises(function() return torch.mv(torch.ones(2, 3), torch.ones(2)) end, 'mv')
    H.raises(function() return torch.dot(torch.ones(2), torch.ones(3)) end, 'dot')
    H.raises(function() return torch.matmul(torch.ones(2, 3), torch.ones(2, 3)) end, 'matmul', '2x3')
    H.raises(function() return torch.matmul(torch.ones(4, 2, 3), torch.ones(2, 3)) end, 'matmul', '[4, 2, 3]')
    H.raises(function() return torch.matmul(torch.tensor(1.0), torch.ones(2)) end, 'matmul', '1 dimension')
    H.raises(function() return torch.mm(torch.ones(2, 2, { dtype = torch.bool }), torch.ones(2, 2, { dtype = torch.bool })) end, 'bool')
    H.raises(function() return torch.mm(torch.ones(2, 2), 3) end, 'tensor expected')
    H.raises(function() return torch.addmm(torch.ones(3), torch.ones(2, 2), torch.ones(2, 2)) end, 'addmm')
  end)
end)
