-- Creation, properties, conversion and Torch7-style indexing of tensors.
local torch = require 'torch'
local H = require 'spec.helpers'

describe('torch.tensor', function()
  it('infers dtype and shape from Lua values', function()
    local f = torch.tensor({ { 1.5, 2 }, { 3, 4 } })
    assert.are.equal(torch.float32, f.dtype)
    assert.are.same({ 2, 2 }, f.shape)
    H.assert_values(f, { 1.5, 2, 3, 4 })
    assert.are.equal(torch.int64, torch.tensor({ 1, 2, 3 }).dtype)
    assert.are.equal(torch.bool, torch.tensor({ true, false }).dtype)
    local s = torch.tensor(3.5)
    assert.are.equal(0, s:dim())
    assert.are.equal(3.5, s:item())
    assert.are.same({ 0 }, torch.tensor({}).shape)
    assert.are.equal(math.maxinteger, torch.tensor({ math.maxinteger }):item())
  end)

  it('takes a dtype for every type, and converts values as PyTorch', function()
    for _, dt in ipairs(H.all_dtypes) do
      local t = torch.tensor({ 0, 1, 2 }, { dtype = dt })
      assert.are.equal(dt, t.dtype)
      if dt == torch.bool then H.assert_values(t, { false, true, true })
      else H.assert_values(t, { 0, 1, 2 }) end
    end
    H.assert_values(torch.tensor({ 2.7, -2.7 }, { dtype = torch.int32 }), { 2, -2 })
    H.assert_values(torch.tensor({ 300 }, { dtype = torch.uint8 }), { 44 })
  end)

  it('rejects ragged or non-numeric tables', function()
    H.raises(function() return torch.tensor({ { 1, 2 }, { 3 } }) end, 'tensor', 'length 2')
    H.raises(function() return torch.tensor({ 1, 'a' }) end, 'tensor', 'string')
    H.raises(function() return torch.tensor({ 1, { 2 } }) end, 'tensor')
    H.raises(function() return torch.tensor() end, 'tensor')
  end)
end)

describe('factories', function()
  it('zeros, ones, empty, full take sizes as numbers or a table', function()
    assert.are.same({ 2, 3 }, torch.zeros(2, 3).shape)
    assert.are.same({ 2, 3 }, torch.zeros({ 2, 3 }).shape)
    assert.are.same({}, torch.zeros({}).shape)
    H.assert_values(torch.ones(2, { dtype = torch.int32 }), { 1, 1 })
    local f = torch.full({ 2, 2 }, 7)
    assert.are.equal(torch.int64, f.dtype)
    H.assert_values(f, { 7, 7, 7, 7 })
    assert.are.equal(torch.float32, torch.full({ 2 }, 1.5).dtype)
    assert.are.equal(torch.bool, torch.full({ 2 }, true).dtype)
    assert.are.same({ 4, 0 }, torch.empty(4, 0).shape)
    H.raises(function() return torch.zeros(-1) end, 'zeros', 'negative')
    H.raises(function() return torch.zeros(2, { dtype = 'nope' }) end, 'unknown dtype')
    H.raises(function() return torch.full({ 2 }) end, 'full', 'fill value')
  end)

  it('arange, linspace and eye follow PyTorch', function()
    H.assert_values(torch.arange(5), { 0, 1, 2, 3, 4 })
    assert.are.equal(torch.int64, torch.arange(5).dtype)
    H.assert_values(torch.arange(1, 2.5, 0.5), { 1, 1.5, 2 })
    assert.are.equal(torch.float32, torch.arange(1, 2.5, 0.5).dtype)
    H.assert_values(torch.arange(5, 0, -2), { 5, 3, 1 })
    H.assert_values(torch.linspace(0, 1, 5), { 0, 0.25, 0.5, 0.75, 1 })
    H.assert_values(torch.linspace(-1, 1, 1), { -1 })
    H.assert_values(torch.eye(2, 3), { 1, 0, 0, 0, 1, 0 })
    H.raises(function() return torch.arange(0, 5, 0) end, 'arange', 'step')
    H.raises(function() return torch.arange(5, 0) end, 'arange')
    H.raises(function() return torch.linspace(0, 1, -1) end, 'linspace')
  end)

  it('*_like and new_* keep dtype and device unless told otherwise', function()
    local x = torch.zeros(2, 3, { dtype = torch.float64 })
    local checks = {
      torch.zeros_like(x), torch.ones_like(x), torch.empty_like(x), torch.full_like(x, 2),
      torch.rand_like(x), torch.randn_like(x), x:new_zeros(4), x:new_ones({ 1, 2 }), x:new_empty(3),
      x:new_full({ 2 }, 5), x:new_tensor({ 1, 2 }),
    }
    for i, t in ipairs(checks) do
      assert.are.equal(torch.float64, t.dtype, 'case ' .. i)
      assert.are.equal(tostring(x.device), tostring(t.device), 'case ' .. i)
    end
    assert.are.same({ 2, 3 }, torch.ones_like(x).shape)
    assert.are.equal(torch.int32, torch.zeros_like(x, { dtype = torch.int32 }).dtype)
    H.assert_values(torch.full_like(torch.zeros(2, { dtype = torch.int64 }), 2.7), { 2, 2 })
    H.assert_values(x:new_full({ 2 }, 5), { 5, 5 })
  end)

  it('requires_grad is accepted for floating dtypes only', function()
    assert.is_true(torch.zeros(2, { requires_grad = true }).requires_grad)
    H.raises(function() return torch.zeros(2, { dtype = torch.int64, requires_grad = true }) end, 'floating point')
  end)
end)

describe('properties and conversions', function()
  it('shape, size, stride, dim, numel', function()
    local x = torch.zeros(2, 3, 4)
    assert.are.same({ 2, 3, 4 }, x.shape)
    assert.are.same({ 2, 3, 4 }, x:size())
    assert.are.equal(3, x:size(2))
    assert.are.equal(4, x:size(-1))
    assert.are.same({ 12, 4, 1 }, x:stride())
    assert.are.equal(4, x:stride(2))
    assert.are.equal(3, x:dim())
    assert.are.equal(24, x:numel())
    assert.are.equal(2, #x)
    assert.is_true(x:is_contiguous())
    H.raises(function() return x:size(0) end, 'size', '1-based')
    H.raises(function() return x:size(4) end, 'size', 'out of range')
  end)

  it('item and totable', function()
    assert.are.equal(2.5, torch.tensor({ { 2.5 } }):item())
    assert.are.equal(true, torch.tensor(true):item())
    assert.is_true(math.type(torch.tensor(3):item()) == 'integer')
    H.raises(function() return torch.ones(2):item() end, 'item', '2 elements')
    assert.are.same({ { 1, 2 }, { 3, 4 } }, torch.tensor({ { 1, 2 }, { 3, 4 } }):totable())
  end)

  it('converts dtypes with float(), long(), to() and keeps the object when nothing changes', function()
    local x = torch.tensor({ 1.7, -1.7 })
    assert.is_true(rawequal(x, x:float()))
    assert.is_true(rawequal(x, x:to(torch.float32)))
    assert.is_true(rawequal(x, x:to('cpu')))
    assert.is_false(rawequal(x, x:to('cpu', { copy = true })))
    H.assert_values(x:long(), { 1, -1 })
    H.assert_values(x:to(torch.int32), { 1, -1 })
    assert.are.equal(torch.float64, x:double().dtype)
    assert.are.equal(torch.float16, x:half().dtype)
    assert.are.equal(torch.bfloat16, x:bfloat16().dtype)
    H.assert_values(x:bool(), { true, true })
    assert.are.equal('torch.FloatTensor', x:type())
    local y = torch.zeros(1, { dtype = torch.int16 })
    assert.are.equal(torch.int16, x:to(y).dtype)
    H.raises(function() return x:to(42.5) end, 'to')
  end)

  it('converts expanded and strided sources between every pair of dtypes as contiguous ones', function()
    local dts = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
      torch.int8, torch.uint8, torch.bool }
    for _, sd in ipairs(dts) do
      local vals = sd.is_floating_point and { 2.5, 0, 5.75, 1, 7.25, 3 } or { 2, 0, 5, 1, 7, 3 }
      local base = torch.tensor(vals):to(sd)
      for _, dd in ipairs(dts) do
        local what = tostring(sd) .. ' -> ' .. tostring(dd)
        -- an expanded value (stride 0): every element the value's conversion
        local one = base:narrow(1, 3, 1)
        local want = one:to(dd):item()
        local got = one:expand(7):to(dd)
        assert.are.equal(dd, got.dtype, what)
        for _, v in ipairs(got:totable()) do assert.are.equal(want, v, what) end
        local got2 = one:view(1, 1):expand(3, 5):to(dd)
        assert.are.same({ 3, 5 }, got2:size(), what)
        for _, row in ipairs(got2:totable()) do for _, v in ipairs(row) do assert.are.equal(want, v, what) end end
        -- a strided source (every other element, and a transposed matrix): as the same values
        -- written contiguous from the Lua table (the strided copy is not its own reference)
        local odd = base:view(3, 2):select(2, 1)
        local odd_want = torch.tensor({ vals[1], vals[3], vals[5] }):to(sd):to(dd):totable()
        assert.are.same(odd_want, odd:to(dd):totable(), what)
        local m = base:view(2, 3):t()
        local m_want = torch.tensor({ { vals[1], vals[4] }, { vals[2], vals[5] }, { vals[3], vals[6] } })
        assert.are.same(m_want:to(sd):to(dd):totable(), m:to(dd):totable(), what)
        if dd == sd then assert.are.same(odd_want, odd:contiguous():totable(), what) end
        -- the same dtype: clone and contiguous
        if dd == sd then assert.are.same({ want, want }, one:expand(2):contiguous():totable(), what) end
      end
    end
  end)
end)

describe('indexing', function()
  it('x[i] is a row view; a number for 1-D', function()
    local x = H.grid(3, 4)
    local r = x[2]
    assert.are.same({ 4 }, r.shape)
    H.assert_values(r, { 21, 22, 23, 24 })
    r[1] = 0 -- a view: writes through
    assert.are.equal(0, x[2][1])
    assert.are.equal(34, x[3][4])
    assert.are.equal(34, x[-1][-1])
    H.raises(function() return x[0] end, '1-based')
    H.raises(function() return x[4] end, 'out of range')
    H.raises(function() return x[1.5] end, 'integer')
  end)

  it('x[i] = v assigns numbers and tensors', function()
    local x = torch.zeros(2, 3)
    x[1] = 5
    x[2] = torch.tensor({ 1.0, 2.0, 3.0 })
    H.assert_values(x, { 5, 5, 5, 1, 2, 3 })
    x[2][3] = -1
    assert.are.equal(-1, x[2][3])
    local v = torch.zeros(3)
    v[2] = 7
    H.assert_values(v, { 0, 7, 0 })
  end)

  it('Torch7 ranges: x[{ {1, 3}, 2 }] and {} for a whole dimension', function()
    local x = H.grid(4, 3)
    local c = x[{ { 1, 3 }, 2 }]
    assert.are.same({ 3 }, c.shape)
    H.assert_values(c, { 12, 22, 32 })
    H.assert_values(x[{ {}, 3 }], { 13, 23, 33, 43 })
    H.assert_values(x[{ { 2 }, {} }], { 21, 22, 23 })
    assert.are.same({ 1, 3 }, x[{ { 2 }, {} }].shape)
    H.assert_values(x[{ { -2, -1 }, { 1, 2 } }], { 31, 32, 41, 42 })
    assert.are.equal(32, x[{ 3, 2 }])
    x[{ { 1, 2 }, 1 }] = 0
    H.assert_values(x[{ {}, 1 }], { 0, 0, 31, 41 })
    H.raises(function() return x[{ { 1, 5 } }] end, 'out of bounds')
    H.raises(function() return x[{ 1, 1, 1 }] end, 'too many indices')
  end)

  it('bool masks and index tensors', function()
    local x = torch.tensor({ 1.0, -2.0, 3.0, -4.0 })
    H.assert_values(x[x:gt(0)], { 1, 3 })
    x[x:lt(0)] = 0
    H.assert_values(x, { 1, 0, 3, 0 })
    H.assert_values(x[torch.tensor({ 3, 1 })], { 3, 1 })
  end)
end)

describe('printing', function()
  it('prints as PyTorch does', function()
    assert.are.equal('tensor([1., 2., 3.])', tostring(torch.tensor({ 1.0, 2.0, 3.0 })))
    assert.are.equal('tensor([[1, 2],\n        [3, 4]])', tostring(torch.tensor({ { 1, 2 }, { 3, 4 } })))
    assert.are.equal('tensor([1., 2.], dtype=torch.float64)', tostring(torch.tensor({ 1, 2 }, { dtype = torch.float64 })))
    assert.are.equal('tensor(True)', tostring(torch.tensor(true)))
    assert.are.equal('torch.float32', tostring(torch.float32))
  end)
end)
