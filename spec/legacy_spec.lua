-- The forms of scripts ported from Torch7 and older PyTorch (lua/torch/legacy.lua): torch.Tensor(...)
-- and the typed constructors, type names, and apply/map/map2 with Lua functions (checked against
-- plain Lua loops over the same values, on contiguous and non-contiguous tensors, every dtype);
-- and nonzero's tuple form with torch.where(cond) (lua/torch/composite.lua).
local torch = require 'torch'
local H = require 'spec.helpers'

describe('legacy tensor forms', function()
  it('torch.Tensor(...) and the typed constructors take sizes, a torch.Size, values or a tensor', function()
    local x = torch.Tensor(2, 3)
    assert.are.same({ 2, 3 }, x.shape)
    assert.are.equal(torch.float32, x.dtype)
    assert.are.same({ 4, 1 }, torch.Tensor(torch.Size({ 4, 1 })).shape)
    assert.are.same({ 0 }, torch.Tensor().shape)
    -- values: float by default (PyTorch's torch.Tensor({1, 2}) is float; torch.tensor's would be int64)
    local v = torch.Tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.equal(torch.float32, v.dtype)
    H.assert_values(v, { { 1, 2 }, { 3, 4 } })
    local names = { FloatTensor = torch.float32, DoubleTensor = torch.float64, HalfTensor = torch.float16,
      BFloat16Tensor = torch.bfloat16, LongTensor = torch.int64, IntTensor = torch.int32, ShortTensor = torch.int16,
      CharTensor = torch.int8, ByteTensor = torch.uint8, BoolTensor = torch.bool }
    for name, dtype in pairs(names) do
      local t = torch[name](3)
      assert.are.same({ 3 }, t.shape, name)
      assert.are.equal(dtype, t.dtype, name)
      local w = dtype == torch.bool and torch[name]({ true, false }) or torch[name]({ 1, 0 })
      assert.are.equal(dtype, w.dtype, name)
      assert.are.same(dtype == torch.bool and { true, false } or { 1, 0 }, w:totable(), name)
      -- a tensor of the same dtype: the same data, not a copy
      local src = torch.zeros(2, { dtype = dtype })
      local alias = torch[name](src)
      alias:fill_(1)
      assert.are.same(dtype == torch.bool and { true, true } or { 1, 1 }, src:totable(), name)
      assert.are.equal('torch.' .. name, src:type())
    end
    torch.set_default_dtype(torch.float64)
    local ok, dt = pcall(function() return torch.Tensor(2).dtype end)
    torch.set_default_dtype(torch.float32)
    assert.is_true(ok)
    assert.are.equal(torch.float64, dt)
  end)

  it('refuses what is neither sizes, values nor a tensor of its dtype', function()
    H.raises(function() return torch.Tensor(2, 'a') end, 'torch.Tensor', 'argument 2 is string')
    H.raises(function() return torch.LongTensor(-1) end, 'torch.LongTensor', 'argument 1 is integer')
    H.raises(function() return torch.FloatTensor(2.5) end, 'argument 1 is float')
    H.raises(function() return torch.FloatTensor(torch.ones(2, { dtype = torch.int64 })) end,
      'torch.FloatTensor', 'dtype torch.float32, got torch.int64')
    H.raises(function() return torch.Tensor({ 1 }, 2) end, 'one table of values')
    H.raises(function() return torch.Size({ 2, -1 }) end, 'torch.Size', 'size 2 is -1')
  end)

  it('x:type() names the type as PyTorch and Torch7 do, and x:type(name) converts', function()
    local x = torch.tensor({ 1.5, -2.5 })
    assert.are.equal('torch.FloatTensor', x:type())
    local d = x:type('torch.DoubleTensor')
    assert.are.equal(torch.float64, d.dtype)
    H.assert_values(d, { 1.5, -2.5 })
    H.assert_values(x:type('torch.IntTensor'), { 1, -2 })
    assert.are.equal(torch.int32, x:type('torch.IntTensor').dtype)
    assert.are.equal(torch.int16, x:type(torch.int16).dtype)
    assert.is_true(rawequal(x, x:type('torch.FloatTensor')))
    H.raises(function() return x:type('torch.ComplexTensor') end, 'ComplexTensor')
  end)

  it('apply_, map_, map2_ (and Torch7 apply, map, map2) write a Lua function over the elements', function()
    for _, dtype in ipairs(H.all_dtypes) do
      local f = dtype == torch.bool and function(v) return not v end or function(v) return v + 1 end
      local base = dtype == torch.bool and { { true, false, true }, { false, false, true } }
        or { { 1, 2, 3 }, { 4, 5, 6 } }
      local x = torch.tensor(base, { dtype = dtype })
      assert.is_true(rawequal(x, x:apply_(f)))
      assert.are.same(H.map(base, f), x:totable(), tostring(dtype))
      -- through a non-contiguous view: the transposed elements of x change in place
      local y = torch.tensor(base, { dtype = dtype })
      y:t():apply(f)
      assert.are.same(H.map(base, f), y:totable(), tostring(dtype))
    end
    -- map with a broadcast second tensor, map2 with two; nil keeps the element
    local x, y, z = H.mat(2, 3, function(i, j) return 10 * i + j end)
    local col = torch.tensor({ { 100 }, { 200 } }, { dtype = torch.float64 })
    y:map_(col, function(a, b) return a + b end)
    assert.are.same(H.map(z, function(v) return v + (v > 20 and 200 or 100) end), y:totable())
    x:map2(col, torch.tensor({ 1, 2, 3 }, { dtype = torch.float64 }), function(a, b, c) if c ~= 2 then return a * c + b end end)
    assert.are.same({ { 111, 12, 139 }, { 221, 22, 269 } }, x:totable())
    assert.are.same({ 1 }, { torch.tensor(0.0):apply(function(v) return v + 1 end):item() })
  end)

  it('apply and map refuse what they cannot do', function()
    local x = torch.ones(2, 3)
    H.raises(function() x:apply_(5) end, 'apply_', 'expected a function')
    H.raises(function() x:map_(torch.ones(4), function(a) return a end) end, 'map_', 'cannot be broadcast')
    H.raises(function() x:apply(function() return 'a' end) end, 'apply', 'returned a string for element 1')
    H.raises(function() torch.ones(2, { requires_grad = true }):apply_(math.sin) end, 'apply_', 'requires grad')
  end)
end)

describe('nonzero as a tuple', function()
  it('x:nonzero({as_tuple = true}) and torch.where(cond) give 1-based indices per dim', function()
    local base = { { 0, 1, 2 }, { 3, 0, 0 }, { 0, 0, 5 } }
    local expect = { {}, {} }
    for i, row in ipairs(base) do
      for j, v in ipairs(row) do
        if v ~= 0 then expect[1][#expect[1] + 1] = i; expect[2][#expect[2] + 1] = j end
      end
    end
    local x, xt = H.mat(3, 3, function(i, j) return base[i][j] end)
    for _, t in ipairs { x, xt, x:int(), x:bool() } do
      for _, r in ipairs { torch.where(t), t:nonzero({ as_tuple = true }), torch.nonzero(t, { as_tuple = true }) } do
        assert.are.equal(2, #r)
        assert.are.same(expect, { r[1]:totable(), r[2]:totable() })
      end
    end
    -- the elements the indices name are the nonzero ones, in order
    local r = torch.where(x)
    local vals = {}
    for k = 1, r[1]:size(1) do vals[k] = x[{ r[1][k], r[2][k] }] end
    assert.are.same({ 1, 2, 3, 5 }, vals)
    assert.are.same({ { 1 } }, { torch.where(torch.tensor(7))[1]:totable() })
    assert.are.same({ {} }, { torch.where(torch.tensor(0))[1]:totable() })
    assert.are.same({ 0 }, torch.where(torch.zeros(0, 2))[2].shape)
    H.assert_values(torch.where(x:gt(1), x, -1), { { -1, -1, 2 }, { 3, -1, -1 }, { -1, -1, 5 } })
    H.raises(function() return torch.nonzero(x, { as_tupel = true }) end, 'nonzero', 'as_tupel')
    H.raises(function() return torch.where('a') end, 'where', 'condition must be a tensor')
  end)
end)
