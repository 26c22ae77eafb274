-- Bitwise ops (torch.bitwise_and, or, xor, not, left_shift, right_shift; their methods, in-place
-- forms and Lua 5.4's operators & | ~ << >> on tensors) against plain-Lua references computed
-- element by element with Lua's 64-bit integer operators, wrapped to each dtype's width: every
-- integer dtype and bool, broadcasting, numbers on either side, type promotion, non-contiguous
-- inputs and outputs, shifts by negative amounts and by the width or more (PyTorch's definitions:
-- 0 to the left, the sign to the right), large inputs, and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'

local ipairs, pairs, tostring, assert = ipairs, pairs, tostring, assert
local mininteger, maxinteger = math.mininteger, math.maxinteger

-- width in bits and signedness of each integer dtype
local INFO = {
  [torch.int8] = { bits = 8, signed = true },
  [torch.int16] = { bits = 16, signed = true },
  [torch.int32] = { bits = 32, signed = true },
  [torch.int64] = { bits = 64, signed = true },
  [torch.uint8] = { bits = 8, signed = false },
}
local INTS = { torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8 }

-- v wrapped to dt's width, as a C cast to the type does
local function wrap(v, dt)
  local info = INFO[dt]
  if info.bits == 64 then return v end
  local m = v & ((1 << info.bits) - 1)
  if info.signed and m >= (1 << (info.bits - 1)) then m = m - (1 << info.bits) end
  return m
end

-- values that exercise the sign bit, all-ones and the extremes of each dtype
local VALUES = {
  [torch.int8] = { -128, -127, -100, -1, 0, 1, 5, 100, 127 },
  [torch.uint8] = { 0, 1, 5, 100, 127, 128, 200, 254, 255 },
  [torch.int16] = { -32768, -12345, -1, 0, 1, 255, 1000, 0x5555, 32767 },
  [torch.int32] = { -2147483648, -987654, -1, 0, 1, 65535, 123456789, 0x55555555, 2147483647 },
  [torch.int64] = { mininteger, -0x0fedcba987654321, -1, 0, 1, 1 << 40, 0x123456789abcdef, 0x5555555555555555,
    maxinteger },
}

-- shift amounts: in range, at and beyond the width, at and beyond 64, and negative (signed dtypes)
local SHIFTS = {
  [torch.int8] = { 0, 1, 3, 6, 7, 8, 9, 31, 63, 64, 100, 127, -1, -5, -128 },
  [torch.uint8] = { 0, 1, 3, 6, 7, 8, 9, 31, 63, 64, 100, 128, 200, 255 },
  [torch.int16] = { 0, 1, 3, 7, 8, 15, 16, 17, 31, 63, 64, 65, 1000, -1, -32768 },
  [torch.int32] = { 0, 1, 3, 15, 16, 31, 32, 33, 63, 64, 65, 1 << 20, -1, -64, -2147483648 },
  [torch.int64] = { 0, 1, 3, 31, 32, 33, 62, 63, 64, 65, 100, 1 << 40, -1, -64, mininteger },
}

-- the references, on values already in dt's range
local function ref_and(a, b, dt) return wrap(a & b, dt) end
local function ref_or(a, b, dt) return wrap(a | b, dt) end
local function ref_xor(a, b, dt) return wrap(a ~ b, dt) end
local function ref_not(a, dt) return wrap(~a, dt) end
-- a shift by a negative amount or by the width or more: 0 (PyTorch's rule)
local function ref_shl(a, b, dt)
  if b < 0 or b >= INFO[dt].bits then return 0 end
  return wrap(a << b, dt)
end
-- arithmetic for signed dtypes: by a negative amount or the width or more, the sign
local function ref_shr(a, b, dt)
  local info = INFO[dt]
  if not info.signed then
    if b < 0 or b >= info.bits then return 0 end
    return a >> b
  end
  if b < 0 or b >= info.bits then b = info.bits - 1 end
  if a >= 0 then return a >> b end
  return ~((~a) >> b) -- Lua's >> is logical: shift the complement
end
local BINARY = {
  { 'bitwise_and', ref_and }, { 'bitwise_or', ref_or }, { 'bitwise_xor', ref_xor },
  { 'bitwise_left_shift', ref_shl }, { 'bitwise_right_shift', ref_shr },
}
-- booleans: and, or, xor as the logical ops
local BOOL_REF = {
  bitwise_and = function(a, b) return a and b end,
  bitwise_or = function(a, b) return a or b end,
  bitwise_xor = function(a, b) return a ~= b end,
}
-- Lua's operators on tensors
local OPERATOR = {
  bitwise_and = function(a, b) return a & b end,
  bitwise_or = function(a, b) return a | b end,
  bitwise_xor = function(a, b) return a ~ b end,
  bitwise_left_shift = function(a, b) return a << b end,
  bitwise_right_shift = function(a, b) return a >> b end,
}

-- assert t has dtype dt and shape shape, and t[i][j] == want(i, j) (integers compared exactly)
local function check2(t, dt, rows, cols, want, msg)
  assert.are.equal(dt, t.dtype, msg .. ': dtype')
  assert.are.same({ rows, cols }, t.shape, msg .. ': shape')
  local got = t:totable()
  for i = 1, rows do
    for j = 1, cols do
      local w = want(i, j)
      if got[i][j] ~= w then
        error(('%s: element [%d][%d] is %s, expected %s'):format(msg, i, j, tostring(got[i][j]), tostring(w)), 2)
      end
    end
  end
end

-- a column [n, 1] and a row [1, m] of values: broadcast together they give every pair
local function column(vals, dt)
  local t = {}
  for i, v in ipairs(vals) do t[i] = { v } end
  return torch.tensor(t, { dtype = dt })
end
local function row(vals, dt) return torch.tensor({ vals }, { dtype = dt }) end

-- an [n, m] matrix of vals[(i + j) % #vals + 1], and the same values as a transposed view
local function matrix(vals, dt, n, m)
  local t, tt = {}, {}
  local function v(i, j) return vals[(i * 3 + j) % #vals + 1] end
  for i = 1, n do
    t[i] = {}
    for j = 1, m do t[i][j] = v(i, j) end
  end
  for j = 1, m do
    tt[j] = {}
    for i = 1, n do tt[j][i] = v(i, j) end
  end
  local x = torch.tensor(t, { dtype = dt })
  local xt = torch.tensor(tt, { dtype = dt }):t()
  assert(not xt:is_contiguous())
  return x, xt, v
end

describe('bitwise and, or, xor and the shifts', function()
  for _, op in ipairs(BINARY) do
    local name, ref = op[1], op[2]
    local shift = name:find('shift') ~= nil

    it(name .. ' matches the reference on every integer dtype, every pair of values (broadcast)', function()
      for _, dt in ipairs(INTS) do
        local as = VALUES[dt]
        local bs = shift and SHIFTS[dt] or VALUES[dt]
        local a, b = column(as, dt), row(bs, dt)
        local want = function(i, j) return ref(as[i], bs[j], dt) end
        local msg = name .. ' ' .. tostring(dt)
        check2(torch[name](a, b), dt, #as, #bs, want, msg .. ' torch.' .. name)
        check2(a[name](a, b), dt, #as, #bs, want, msg .. ' method')
        check2(OPERATOR[name](a, b), dt, #as, #bs, want, msg .. ' operator')
        -- the other broadcast: [1, m] op [n, 1]
        local wantT = function(i, j) return ref(as[j], bs[i], dt) end
        check2(torch[name](row(as, dt), column(bs, dt)), dt, #bs, #as, wantT, msg .. ' row op column')
      end
    end)

    it(name .. ' takes numbers on either side (the tensor\'s dtype is kept)', function()
      for _, dt in ipairs(INTS) do
        local as = VALUES[dt]
        local a = column(as, dt)
        local bs = shift and { 0, 1, 3, INFO[dt].bits - 1, INFO[dt].bits, 63, 64, 70 } or { 0, 1, 5, 100, 127 }
        for _, b in ipairs(bs) do
          local msg = ('%s %s with the number %d'):format(name, tostring(dt), b)
          check2(torch[name](a, b), dt, #as, 1, function(i) return ref(as[i], b, dt) end, msg)
          check2(a[name](a, b), dt, #as, 1, function(i) return ref(as[i], b, dt) end, msg .. ' method')
          check2(OPERATOR[name](a, b), dt, #as, 1, function(i) return ref(as[i], b, dt) end, msg .. ' operator')
        end
        -- a number first: each of a few values combined with every element
        local xs = shift and SHIFTS[dt] or as
        local x = column(xs, dt)
        for _, v in ipairs { 1, 3, 100 } do
          local want = function(i) return ref(v, xs[i], dt) end
          local msg = ('%s %d with %s'):format(name, v, tostring(dt))
          check2(torch[name](v, x), dt, #xs, 1, want, msg)
          check2(OPERATOR[name](v, x), dt, #xs, 1, want, msg .. ' operator')
        end
      end
    end)

    it(name .. ' reads non-contiguous inputs (transposed, narrowed, expanded) and writes in place through views',
      function()
        for _, dt in ipairs(INTS) do
          local as = VALUES[dt]
          local bs = shift and SHIFTS[dt] or VALUES[dt]
          local a, at, va = matrix(as, dt, 4, 6)
          local b, bt, vb = matrix(bs, dt, 4, 6)
          local msg = name .. ' ' .. tostring(dt)
          local want = function(i, j) return ref(va(i, j), vb(i, j), dt) end
          check2(torch[name](at, bt), dt, 4, 6, want, msg .. ' both transposed')
          check2(torch[name](a, bt), dt, 4, 6, want, msg .. ' second transposed')
          check2(torch[name](at, b), dt, 4, 6, want, msg .. ' first transposed')
          -- narrowed columns 2..5 of the transposed view
          local an, bn = at:narrow(2, 2, 4), bt:narrow(2, 2, 4)
          check2(torch[name](an, bn), dt, 4, 4, function(i, j) return want(i, j + 1) end, msg .. ' narrowed')
          -- an expanded row (stride 0)
          local r = b:narrow(1, 2, 1):expand(4, 6)
          check2(torch[name](at, r), dt, 4, 6, function(i, j) return ref(va(i, j), vb(2, j), dt) end,
            msg .. ' expanded')
          -- in place on a transposed view: the base sees the results
          local base = torch.tensor(at:t():contiguous():totable(), { dtype = dt })
          local view = base:t()
          local r2 = view[name .. '_'](view, bt)
          assert.are.equal(view, r2, msg .. ': the in-place form returns its tensor')
          check2(view, dt, 4, 6, want, msg .. ' in place through a view')
          check2(base, dt, 6, 4, function(i, j) return want(j, i) end, msg .. ' the base of the view')
        end
      end)

    it(name .. ' in place: x:' .. name .. '_(y) broadcasts y and keeps x\'s dtype', function()
      for _, dt in ipairs(INTS) do
        local as = VALUES[dt]
        local bs = shift and SHIFTS[dt] or VALUES[dt]
        local x = column(as, dt):expand(#as, #bs):contiguous()
        local y = row(bs, dt)
        local r = x[name .. '_'](x, y)
        assert.are.equal(x, r)
        check2(x, dt, #as, #bs, function(i, j) return ref(as[i], bs[j], dt) end, name .. '_ ' .. tostring(dt))
        -- with a number
        local z = column(as, dt)
        z[name .. '_'](z, 3)
        check2(z, dt, #as, 1, function(i) return ref(as[i], 3, dt) end, name .. '_ number ' .. tostring(dt))
      end
    end)
  end

  it('bool tensors: and, or, xor are the logical ops and give bool', function()
    local as, bs = { true, true, false, false }, { true, false, true, false }
    local a, b = torch.tensor(as), torch.tensor(bs)
    for name, ref in pairs(BOOL_REF) do
      local want = {}
      for i = 1, 4 do want[i] = ref(as[i], bs[i]) end
      for _, r in ipairs { torch[name](a, b), a[name](a, b), OPERATOR[name](a, b) } do
        assert.are.equal(torch.bool, r.dtype, name)
        assert.are.same(want, r:totable(), name)
      end
      -- broadcast column by row: every pair
      local c = torch.tensor({ { true }, { false } })
      local rr = torch[name](c, torch.tensor({ true, false }))
      assert.are.same({ { ref(true, true), ref(true, false) }, { ref(false, true), ref(false, false) } }, rr:totable(), name)
      -- with Lua booleans
      assert.are.same({ ref(true, true), ref(true, true), ref(false, true), ref(false, true) },
        torch[name](a, true):totable(), name .. ' with true')
      -- in place
      local x = a:clone()
      x[name .. '_'](x, b)
      assert.are.same(want, x:totable(), name .. '_')
    end
  end)

  it('promotes as PyTorch: mixed integer dtypes, bool with integers, bool with numbers', function()
    local cases = {
      { torch.int8, torch.int16, torch.int16 }, { torch.uint8, torch.int8, torch.int16 },
      { torch.int32, torch.int64, torch.int64 }, { torch.uint8, torch.int32, torch.int32 },
      { torch.bool, torch.int32, torch.int32 }, { torch.bool, torch.uint8, torch.uint8 },
    }
    for _, c in ipairs(cases) do
      local a = torch.tensor({ 1, 0, 1 }, { dtype = c[1] })
      local b = torch.tensor({ 3, 3, 6 }, { dtype = c[2] })
      local r = a | b
      assert.are.equal(c[3], r.dtype, tostring(c[1]) .. ' | ' .. tostring(c[2]))
      assert.are.same({ 3, 3, 7 }, r:totable())
      assert.are.equal(c[3], (b | a).dtype)
    end
    -- uint8 & int8: int16, so -1 is all ones and 200 stays 200
    local u = torch.tensor({ 200, 7 }, { dtype = torch.uint8 })
    local s = torch.tensor({ -1, -8 }, { dtype = torch.int8 })
    assert.are.same({ 200, 0 }, (u & s):totable())
    -- bool tensor with an integer number: int64 (PyTorch's rule for a number of a higher kind)
    local bt = torch.tensor({ true, false })
    local r = bt & 3
    assert.are.equal(torch.int64, r.dtype)
    assert.are.same({ 1, 0 }, r:totable())
    assert.are.same({ 2, 0 }, (bt << 1):totable())
    assert.are.equal(torch.int64, (bt << 1).dtype)
    -- int8 tensor with an int64 tensor in place: computed in int64, stored back wrapped to int8
    local x = torch.tensor({ 100, -1 }, { dtype = torch.int8 })
    x:bitwise_left_shift_(torch.tensor({ 1, 3 }))
    assert.are.equal(torch.int8, x.dtype)
    assert.are.same({ wrap(200, torch.int8), -8 }, x:totable())
  end)
end)

describe('bitwise_not', function()
  it('is ~v wrapped to the dtype on every integer dtype; torch.bitwise_not, the method, ~x and in place', function()
    for _, dt in ipairs(INTS) do
      local as = VALUES[dt]
      local a = column(as, dt)
      local want = function(i) return ref_not(as[i], dt) end
      local msg = 'bitwise_not ' .. tostring(dt)
      check2(torch.bitwise_not(a), dt, #as, 1, want, msg)
      check2(a:bitwise_not(), dt, #as, 1, want, msg .. ' method')
      check2(~a, dt, #as, 1, want, msg .. ' operator')
      check2(~~a, dt, #as, 1, function(i) return as[i] end, msg .. ' twice')
      local x = a:clone()
      assert.are.equal(x, x:bitwise_not_())
      check2(x, dt, #as, 1, want, msg .. ' in place')
      -- non-contiguous
      local _, at, v = matrix(as, dt, 3, 5)
      check2(~at, dt, 3, 5, function(i, j) return ref_not(v(i, j), dt) end, msg .. ' transposed')
      local base = torch.tensor(at:t():contiguous():totable(), { dtype = dt })
      base:t():bitwise_not_()
      check2(base, dt, 5, 3, function(i, j) return ref_not(v(j, i), dt) end, msg .. ' in place through a view')
    end
  end)

  it('is logical not on bool tensors', function()
    local a = torch.tensor({ true, false, false, true })
    for _, r in ipairs { torch.bitwise_not(a), a:bitwise_not(), ~a } do
      assert.are.equal(torch.bool, r.dtype)
      assert.are.same({ false, true, true, false }, r:totable())
    end
    assert.are.same({ true, false, false, true }, (~~a):totable())
    local base = torch.tensor({ { true, false }, { true, false } })
    local x = base:t()
    x:bitwise_not_()
    assert.are.same({ { false, false }, { true, true } }, x:totable())
    assert.are.same({ { false, true }, { false, true } }, base:totable())
  end)
end)

describe('bitwise ops on large tensors (threaded and vectorised loops)', function()
  it('match the reference on 300 x 300 int32 and int64 tensors, contiguous, transposed and with a number', function()
    local n = 300
    for _, dt in ipairs { torch.int32, torch.int64, torch.int16, torch.uint8 } do
      local info = INFO[dt]
      -- deterministic values spread over the dtype's range
      local function va(i, j) return wrap((i * 2654435761 + j * 40503) ~ (j << 7), dt) end
      local function vb(i, j) return wrap(i * 7 + j * 13 + 5, dt) end
      local function amt(i, j) return (i + 2 * j) % (info.bits + 4) - 2 end -- -2 .. width + 1
      local ta, tb, ts = {}, {}, {}
      for i = 1, n do
        ta[i], tb[i], ts[i] = {}, {}, {}
        for j = 1, n do
          ta[i][j], tb[i][j] = va(i, j), vb(i, j)
          ts[i][j] = info.signed and amt(i, j) or amt(i, j) % 256
        end
      end
      local a, b, s = torch.tensor(ta, { dtype = dt }), torch.tensor(tb, { dtype = dt }), torch.tensor(ts, { dtype = dt })
      local msg = 'large ' .. tostring(dt)
      check2(a ~ b, dt, n, n, function(i, j) return ref_xor(va(i, j), vb(i, j), dt) end, msg .. ' xor')
      check2(a & b:t(), dt, n, n, function(i, j) return ref_and(va(i, j), vb(j, i), dt) end, msg .. ' and transposed')
      check2(a | 12345, dt, n, n, function(i, j) return ref_or(va(i, j), wrap(12345, dt), dt) end, msg .. ' or number')
      check2(a << s, dt, n, n, function(i, j) return ref_shl(va(i, j), ts[i][j], dt) end, msg .. ' <<')
      check2(a >> s:t(), dt, n, n, function(i, j) return ref_shr(va(i, j), ts[j][i], dt) end, msg .. ' >> transposed')
      check2(~a, dt, n, n, function(i, j) return ref_not(va(i, j), dt) end, msg .. ' not')
    end
  end)
end)

describe('bitwise ops on CPU devices', function()
  it('run on cpu:1 and keep the device; mixing devices is an error naming both', function()
    if torch.cpu.device_count() < 2 then pending('needs LUTORCH_CPU_DEVICES=2') return end
    local a = torch.tensor({ 12, 10 }, { device = 'cpu:1' })
    local b = torch.tensor({ 10, 6 }, { device = 'cpu:1' })
    local r = a ~ b
    assert.are.equal('cpu:1', tostring(r.device))
    assert.are.same({ 6, 12 }, r:totable())
    assert.are.same({ -13, -11 }, (~a):totable())
    H.raises(function() return a & torch.tensor({ 1, 2 }) end, 'bitwise_and', 'cpu:1', 'cpu:0')
  end)
end)

describe('bitwise errors', function()
  local names = { 'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bitwise_left_shift', 'bitwise_right_shift' }

  it('floating tensors are refused with the op and the dtype named (functions, methods, operators, in place)',
    function()
      for _, dt in ipairs(H.float_dtypes) do
        local x = torch.tensor({ 1, 2 }, { dtype = dt })
        local dn = tostring(dt):gsub('^torch%.', '')
        for _, name in ipairs(names) do
          H.raises(function() return torch[name](x, x) end, name, dn)
          H.raises(function() return x[name](x, 1) end, name, dn)
          H.raises(function() return x[name .. '_'](x, x) end, name, dn)
          H.raises(function() return OPERATOR[name](x, 1) end, name, dn)
          H.raises(function() return OPERATOR[name](2, x) end, name, dn)
        end
        H.raises(function() return torch.bitwise_not(x) end, 'bitwise_not', dn)
        H.raises(function() return ~x end, 'bitwise_not', dn)
        H.raises(function() return x:bitwise_not_() end, 'bitwise_not', dn)
      end
      -- an integer tensor with a float tensor or a float number promotes to floating: refused too
      local i = torch.tensor({ 1, 2 })
      H.raises(function() return i & torch.tensor({ 1.0, 2.0 }) end, 'bitwise_and', 'float32')
      H.raises(function() return i | 1.5 end, 'bitwise_or', 'float32')
      H.raises(function() return i:bitwise_xor(torch.tensor({ 1, 2 }, { dtype = torch.float64 })) end,
        'bitwise_xor', 'float64')
      -- a float tensor that requires grad: the same error (these ops have no gradient)
      local w = torch.tensor({ 1.0 }, { requires_grad = true })
      H.raises(function() return w & 1 end, 'bitwise_and', 'float32')
    end)

  it('the shifts refuse bool tensors; and, or, xor, not take them', function()
    local b = torch.tensor({ true, false })
    H.raises(function() return b << b end, 'bitwise_left_shift', 'bool')
    H.raises(function() return torch.bitwise_right_shift(b, b) end, 'bitwise_right_shift', 'bool')
    H.raises(function() return b:bitwise_left_shift_(true) end, 'bitwise_left_shift', 'bool')
    assert.are.same({ true, false }, (b & b):totable())
  end)

  it('shapes that do not broadcast, results that cannot be stored in place, and bad arguments', function()
    local a, b = torch.tensor({ 1, 2, 3 }), torch.tensor({ 1, 2 })
    for _, name in ipairs(names) do
      H.raises(function() return torch[name](a, b) end, name, '[3]', '[2]')
      H.raises(function() return OPERATOR[name](a, b) end, name)
      -- in place into a smaller shape
      H.raises(function() return b[name .. '_'](b, torch.ones(2, 2, { dtype = torch.int64 })) end, name)
    end
    -- a bool tensor cannot hold an int64 result
    H.raises(function() return torch.tensor({ true }):bitwise_and_(torch.tensor({ 1 })) end, 'bitwise_and', 'bool')
    -- two numbers, or a non-number
    H.raises(function() return torch.bitwise_and(1, 2) end, 'bitwise_and')
    H.raises(function() return torch.bitwise_or(a, 'x') end)
    H.raises(function() return a & {} end)
  end)
end)
