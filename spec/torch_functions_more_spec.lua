-- The torch functions added in lua/torch/composite.lua (copysign ... isin), shapes.lua
-- (tensor_split ... mT), indexing.lua (index_copy ... diagonal_scatter), statistics.lua (std_mean
-- ... renorm), builders.lua (logspace ... randint_like) and special.lua (polygamma, i0): values
-- against references computed here in plain Lua loops, over the dtypes each accepts, on
-- contiguous and non-contiguous inputs; gradients against finite differences (gradcheck,
-- float64); the errors, which name the function.
local torch = require 'torch'
local H = require 'spec.helpers'
local mat, leaf = H.mat, H.leaf
local gradcheck = torch.autograd.gradcheck
local f64 = torch.float64
local nan, inf = 0 / 0, math.huge

local function map2(t, u, f)
  local r = {}
  for i, v in ipairs(t) do
    if type(v) == 'table' then r[i] = map2(v, u[i], f) else r[i] = f(v, u[i]) end
  end
  return r
end

local function sign_negative(b) return b < 0 or (b == 0 and 1 / b < 0) end

-- exactly: m in [0.5, 1), v = m * 2^e
local function frexp_ref(v)
  if v == 0 or v ~= v or v == inf or v == -inf then return v, 0 end
  local m, e = math.abs(v), 0
  while m >= 1 do m, e = m / 2, e + 1 end
  while m < 0.5 do m, e = m * 2, e - 1 end
  return v < 0 and -m or m, e
end

local function gcd_ref(a, b)
  a, b = math.abs(a), math.abs(b)
  while b ~= 0 do a, b = b, a % b end
  return a
end

-- the next float after a toward b, by stepping the bit pattern (fmt '<f' or '<d')
local function nextafter_ref(a, b, fmt)
  local ifmt = fmt == '<f' and '<i4' or '<i8'
  local function bits(x) return string.unpack(ifmt, string.pack(fmt, x)) end
  local function float(i) return string.unpack(fmt, string.pack(ifmt, i)) end
  if a ~= a or b ~= b then return nan end
  if a == b then return b end
  if a == 0 then
    local tiny = float(1)
    return b > 0 and tiny or -tiny
  end
  local i = bits(a)
  if (b > a) == (a > 0) then i = i + 1 else i = i - 1 end
  return float(i)
end

describe('torch elementwise functions (copysign, ldexp, frexp, gcd, lcm, rsub, nextafter, isin)', function()
  local v = function(i, j) return ((i * 7 + j * 3) % 11) / 4 - 1.2 end
  local w = function(i, j) return ((i * 5 + j) % 7) / 3 - 0.9 end

  it('copysign: |a| with the sign (bit) of b, float32/float64, transposed, integers to float32', function()
    for _, dt in ipairs { f64, torch.float32 } do
      local a, at, ta = mat(3, 4, v, dt)
      local b, bt, tb = mat(3, 4, w, dt)
      local want = map2(ta, tb, function(x, y) return sign_negative(y) and -math.abs(x) or math.abs(x) end)
      local tol = dt == f64 and 0 or 1e-6
      H.assert_values(torch.copysign(a, b), want, tol)
      H.assert_values(at:copysign(bt), want, tol)
      assert.are.equal(dt, torch.copysign(a, b).dtype)
    end
    H.assert_values(torch.copysign(torch.tensor({ 1, 2, 3 }), torch.tensor({ -1, 0, 5 })), { -1, 2, 3 })
    assert.are.equal(torch.float32, torch.copysign(torch.tensor({ 1, 2 }, { dtype = torch.int8 }), 2).dtype)
    local z = torch.copysign(torch.tensor({ 1.0, 0.0 }), -0.0):totable()
    assert.are.equal(-1, z[1])
    assert.are.equal(-math.huge, 1 / z[2]) -- -0.0
    assert.are.equal(torch.float64, torch.copysign(torch.tensor({ 1.0 }), torch.tensor({ -1.0 }, { dtype = f64 })).dtype)
    local x = torch.tensor({ 1.0, -2.0 })
    assert.are.equal(x, x:copysign_(torch.tensor({ -1.0, 3.0 })))
    H.assert_values(x, { -1, 2 })
    H.raises(function() return torch.tensor({ 1, 2 }):copysign_(-1) end, 'copysign_', "can't be cast")
    H.raises(function() return torch.copysign(torch.ones(2), 'x') end, 'copysign')
    assert.is_true(gradcheck(function(a) return torch.copysign(a, torch.tensor({ { -1.0, 2, -0.0 } }, { dtype = f64 })) end,
      { leaf({ 2, 3 }, -1.5, -0.5) }))
  end)

  it('ldexp: x * 2^e exactly, integers to float32, float64 kept', function()
    local x = torch.tensor({ { 1.5, -3.0, 0.75 }, { 5.0, 0.0, -1.25 } }, { dtype = f64 })
    local e = torch.tensor({ { 3, -2, 10 }, { 0, 7, -40 } })
    local want = {}
    for i = 1, 2 do
      want[i] = {}
      for j = 1, 3 do want[i][j] = x[i][j] * 2.0 ^ e[i][j] end
    end
    H.assert_values(torch.ldexp(x, e), want)
    H.assert_values(torch.ldexp(x:t(), e:t()):t(), want)
    assert.are.equal(f64, torch.ldexp(x, e).dtype)
    local r = torch.ldexp(torch.tensor({ 1, 2 }), torch.tensor({ 3, -1 }))
    assert.are.equal(torch.float32, r.dtype)
    H.assert_values(r, { 8, 1 })
    local y = torch.tensor({ 1.0, 2.0 })
    y:ldexp_(torch.tensor({ 2, 2 }))
    H.assert_values(y, { 4, 8 })
    H.raises(function() return torch.ldexp(torch.ones(2), 2) end, 'ldexp', 'other')
    assert.is_true(gradcheck(function(a) return torch.ldexp(a, torch.tensor({ { 1, -2, 3 } })) end, { leaf({ 2, 3 }) }))
  end)

  it('frexp: mantissa in [0.5, 1) and an int32 exponent, subnormals and extremes exact', function()
    local cases = {
      [torch.float32] = { 1.0, -3.0, 0.1, 1e-45, 1e-40, 3.4e38, 6.0, -0.0, 0.0, inf, -inf, nan },
      [f64] = { 1.0, -3.0, 0.1, 1e-320, 5e-324, 1.7e308, 2.0 ^ 1023, 123456.789, 0.0, inf, nan },
      [torch.float16] = { 1.0, 6.0, -0.3, 65504.0, 6e-8 },
      [torch.bfloat16] = { 1.0, -6.0, 3e38 },
    }
    for dt, vals in pairs(cases) do
      local x = torch.tensor(vals, { dtype = dt })
      local exact = x:double():totable()
      local m, e = torch.frexp(x)
      assert.are.equal(dt, m.dtype)
      assert.are.equal(torch.int32, e.dtype)
      local gm, ge = m:double():totable(), e:totable()
      for i, val in ipairs(exact) do
        local wm, we = frexp_ref(val)
        H.close(gm[i], wm, 0, tostring(dt) .. ' mantissa of ' .. val)
        assert.are.equal(we, ge[i], tostring(dt) .. ' exponent of ' .. val)
        if val == val and val ~= 0 and math.abs(val) ~= inf then
          assert.are.equal(val, (gm[i] * 2) * 2.0 ^ (ge[i] - 1))
        end
      end
    end
    local m, e = torch.tensor({ { 1.0, 6.0 }, { -0.5, 3.0 } }):t():frexp()
    H.assert_values(m, { { 0.5, -0.5 }, { 0.75, 0.75 } })
    H.assert_values(e, { { 1, 0 }, { 3, 2 } })
    H.raises(function() return torch.frexp(torch.tensor({ 1, 2 })) end, 'frexp', 'floating')
    assert.is_true(gradcheck(function(a) return (torch.frexp(a)) end, { leaf({ 2, 3 }, 0.3, 5) }))
  end)

  it('gcd and lcm: exact for every integer dtype, broadcast, transposed, signs and zeros', function()
    local A = { { 12, -18, 0, 0, 7, 10 }, { 35, 21, -9, 24, 1, 0 } }
    local B = { { 18, 12, 5, 0, -3, 15 }, { 14, 6, 12, 16, 1, 9 } }
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8 } do
      local a, b = torch.tensor(A, { dtype = dt }), torch.tensor(B, { dtype = dt })
      local g, l = {}, {}
      for i = 1, 2 do
        g[i], l[i] = {}, {}
        for j = 1, 6 do
          local x, y = A[i][j], B[i][j]
          g[i][j] = gcd_ref(x, y)
          l[i][j] = g[i][j] == 0 and 0 or math.abs(x // g[i][j] * y)
        end
      end
      local lcm = torch.lcm(a, b)
      assert.are.equal(dt, torch.gcd(a, b).dtype)
      H.assert_values(torch.gcd(a, b), g)
      H.assert_values(a:t():gcd(b:t()):t(), g)
      H.assert_values(lcm, l)
    end
    H.assert_values(torch.gcd(torch.tensor({ 12, 200 }, { dtype = torch.uint8 }), torch.tensor({ 18, 150 }, { dtype = torch.uint8 })), { 6, 50 })
    H.assert_values(torch.gcd(torch.tensor({ { 12 }, { 9 } }), torch.tensor({ 8, 6, 27 })), { { 4, 6, 3 }, { 1, 3, 9 } })
    assert.are.equal(torch.int16, torch.gcd(torch.tensor({ 12 }, { dtype = torch.uint8 }), torch.tensor({ 18 }, { dtype = torch.int8 })).dtype)
    -- int64 beyond float64's 53 bits
    local p = 576460752303423433 -- odd, near 2^59
    H.assert_values(torch.lcm(torch.tensor({ p * 2 }), torch.tensor({ 4 })), { 4 * p })
    H.assert_values(torch.gcd(torch.tensor({ 6 * 1000000007 * 1000003 }), torch.tensor({ 1000000007 * 10 })), { 2 * 1000000007 })
    local x = torch.tensor({ 12, 18 })
    x:gcd_(torch.tensor({ 8, 12 }))
    H.assert_values(x, { 4, 6 })
    x:lcm_(torch.tensor({ 6, 4 }))
    H.assert_values(x, { 12, 12 })
    H.assert_values(torch.gcd(torch.tensor({ 12, 18 }), 8), { 4, 2 })
    assert.are.equal(0, torch.gcd(torch.zeros(0, { dtype = torch.int64 }), torch.zeros(0, { dtype = torch.int64 })):numel())
    H.raises(function() return torch.gcd(torch.tensor({ 1.0 }), torch.tensor({ 2.0 })) end, 'gcd', 'integer')
    H.raises(function() return torch.lcm(torch.tensor({ true }), torch.tensor({ true })) end, 'lcm', 'integer')
  end)

  it('rsub: other - alpha * x, numbers too', function()
    H.assert_values(torch.rsub(torch.tensor({ 1, 2 }), torch.tensor({ 10, 20 }), { alpha = 3 }), { 7, 14 })
    H.assert_values(torch.rsub(torch.tensor({ 1.0, 2.0 }), 5), { 4, 3 })
    local a, at, ta = mat(2, 3, v)
    local b, _, tb = mat(2, 3, w)
    H.assert_values(torch.rsub(at, b, { alpha = 0.5 }), map2(ta, tb, function(x, y) return y - 0.5 * x end), 1e-15)
    H.raises(function() return torch.rsub(torch.ones(2), 1, { beta = 2 }) end, 'rsub', 'unknown option')
    assert.is_true(gradcheck(function(x, y) return torch.rsub(x, y, { alpha = 2 }) end, { leaf({ 2, 2 }), leaf({ 2, 2 }) }))
    assert.is_true(a:equal(a))
  end)

  it('nextafter: float32 and float64 exactly, by the bit patterns; no other dtype', function()
    local pairs_ = { { 1.0, 2.0 }, { 1.0, 0.0 }, { -1.0, 0.0 }, { -1.0, -2.0 }, { 0.0, 1.0 }, { 0.0, -1.0 }, { -0.0, 1.0 },
      { 2.0, 2.0 }, { inf, 0.0 }, { -inf, 0.0 }, { 0.1, inf }, { 3.0, nan }, { nan, 1.0 }, { 1e-45, 0.0 }, { 1e-310, 1.0 },
      { 3.4028234663852886e38, inf }, { 0.5, 0.0 }, { 1024.0, 2048.0 } }
    for dt, fmt in pairs { [torch.float32] = '<f', [f64] = '<d' } do
      local a, b = {}, {}
      for i, p in ipairs(pairs_) do a[i], b[i] = p[1], p[2] end
      local ta, tb = torch.tensor(a, { dtype = dt }), torch.tensor(b, { dtype = dt })
      local ea, eb = ta:double():totable(), tb:double():totable()
      local got = torch.nextafter(ta, tb):double():totable()
      for i = 1, #a do
        local want = nextafter_ref(ea[i], eb[i], fmt)
        if want ~= want then assert(got[i] ~= got[i], 'NaN expected')
        else assert.are.equal(want, got[i], string.format('%s nextafter(%g, %g)', dt, ea[i], eb[i])) end
      end
      local m = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }, { dtype = dt })
      local r = m:t():nextafter(torch.zeros(2, 2, { dtype = dt })):double():totable()
      assert.are.equal(nextafter_ref(3.0, 0.0, fmt), r[1][2])
      local c = m:clone()
      c:nextafter_(torch.full({ 2, 2 }, 10.0, { dtype = dt }))
      assert.are.equal(nextafter_ref(4.0, 10.0, fmt), c:double()[2][2])
    end
    H.raises(function() return torch.nextafter(torch.tensor({ 1 }), torch.tensor({ 2 })) end, 'nextafter', 'float32 or float64')
    H.raises(function() return torch.nextafter(torch.ones(1, { dtype = torch.float16 }), torch.ones(1, { dtype = torch.float16 })) end,
      'nextafter', 'float16')
    H.raises(function() return torch.ones(1):nextafter_(torch.ones(1, { dtype = torch.int64 })) end, 'nextafter_')
  end)

  it('isin: membership against loops, numbers, NaN, invert, empty, every dtype', function()
    local function isin_ref(e, t)
      local r = {}
      for i, x in ipairs(e) do
        r[i] = false
        for _, y in ipairs(t) do if x == y then r[i] = true end end
      end
      return r
    end
    for _, dt in ipairs { f64, torch.float32, torch.int64, torch.int32, torch.int8, torch.uint8 } do
      local e = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8 }
      local t = { 5, 3, 3, 7, 0 }
      local te = torch.tensor(e, { dtype = dt }):reshape(3, 4)
      local want = isin_ref(e, t)
      H.assert_values(torch.isin(te, torch.tensor(t, { dtype = dt })), want)
      local nc = te:t()
      local flat = nc:contiguous():reshape(-1):totable()
      H.assert_values(torch.isin(nc, torch.tensor(t, { dtype = dt })), isin_ref(flat, t))
      local inv = isin_ref(e, t)
      for i = 1, #inv do inv[i] = not inv[i] end
      H.assert_values(torch.isin(te, torch.tensor(t, { dtype = dt }), { invert = true }), inv)
    end
    H.assert_values(torch.isin(torch.tensor({ 1.5, 2.0 }), torch.tensor({ 2 })), { false, true })
    H.assert_values(torch.isin(torch.tensor({ nan, 1.0 }), torch.tensor({ nan, 1.0 })), { false, true })
    H.assert_values(torch.isin(torch.tensor({ 1, 2 }), 2), { false, true })
    local s = torch.isin(3, torch.tensor({ 1, 3 }))
    assert.are.equal(0, s:dim())
    assert.is_true(s:item())
    H.assert_values(torch.isin(torch.tensor({ true, false }), torch.tensor({ false })), { false, true })
    assert.are.equal(0, torch.isin(torch.zeros(0), torch.ones(3)):numel())
    H.assert_values(torch.isin(torch.ones(2), torch.zeros(0)), { false, false })
    H.raises(function() return torch.isin(1, 2) end, 'isin', 'tensor')
    H.raises(function() return torch.isin(torch.ones(2), 'a') end, 'isin', 'test_elements')
    H.raises(function() return torch.isin(torch.ones(2), torch.ones(2), { sorted = true }) end, 'isin', 'unknown option')
  end)

  it('is_floating_point and is_nonzero, with PyTorch\'s errors', function()
    assert.is_true(torch.is_floating_point(torch.zeros(1, { dtype = torch.float16 })))
    assert.is_false(torch.is_floating_point(torch.zeros(1, { dtype = torch.int64 })))
    assert.is_true(torch.is_nonzero(torch.tensor({ 2.5 })))
    assert.is_false(torch.is_nonzero(torch.tensor(0)))
    assert.is_false(torch.tensor({ { false } }):is_nonzero())
    H.raises(function() return torch.is_nonzero(torch.zeros(2)) end, 'is_nonzero', 'more than one value is ambiguous')
    H.raises(function() return torch.is_nonzero(torch.zeros(0)) end, 'is_nonzero', 'no values is ambiguous')
    H.raises(function() return torch.is_floating_point(3) end, 'is_floating_point', 'tensor')
  end)
end)

-- the values of a 1-D slice [first, last] (inclusive, 1-based) of a Lua array
local function slice(t, first, last)
  local r = {}
  for i = first, last do r[#r + 1] = t[i] end
  return r
end

describe('torch shape functions (tensor_split, h/v/dsplit, broadcast_*, sum_to_size, adjoint, mT)', function()
  it('tensor_split into sections and at 1-based indices (PyTorch\'s split points), along any dim', function()
    local vals = {}
    for i = 1, 10 do vals[i] = i * 3 end
    for _, dt in ipairs { torch.float32, f64, torch.int64, torch.int32 } do
      local x = torch.tensor(vals, { dtype = dt })
      -- sections: the first size % n pieces one longer
      for n = 1, 12 do
        local pieces = torch.tensor_split(x, n)
        assert.are.equal(n, #pieces)
        local start = 1
        for k = 1, n do
          local len = 10 // n + (k <= 10 % n and 1 or 0)
          H.assert_values(pieces[k], slice(vals, start, start + len - 1), 0, 'sections ' .. n .. ' piece ' .. k)
          start = start + len
        end
      end
      -- indices: each the last element of a piece; negative from the end; clamped; going back empty
      local cases = {
        { { 2, 5 }, { { 1, 2 }, { 3, 5 }, { 6, 10 } } },
        { { 7, 3 }, { { 1, 7 }, { 8, 7 }, { 4, 10 } } },
        { { -3 }, { { 1, 8 }, { 9, 10 } } },
        { { -1 }, { { 1, 10 }, { 11, 10 } } },
        { { 0, 12 }, { { 1, 0 }, { 1, 10 }, { 11, 10 } } },
        { {}, { { 1, 10 } } },
      }
      for _, c in ipairs(cases) do
        local pieces = x:tensor_split(c[1])
        assert.are.equal(#c[2], #pieces)
        for k, r in ipairs(c[2]) do H.assert_values(pieces[k], slice(vals, r[1], r[2]), 0) end
      end
      local p = torch.tensor_split(x, torch.tensor({ 2, 5 }))
      H.assert_values(p[2], slice(vals, 3, 5))
      assert.are.equal(3, #torch.tensor_split(x, torch.tensor(3)))
    end
    -- along a dim of a transposed matrix: views of it
    local m, mt, tm = mat(4, 5, function(i, j) return i * 10 + j end)
    local pieces = torch.tensor_split(mt, { 1, 3 }, -1) -- columns 1, 2-3, 4-5 of the 4 x 5 view
    assert.are.equal(3, #pieces)
    local want = {}
    for i = 1, 4 do want[i] = { tm[i][2], tm[i][3] } end
    H.assert_values(pieces[2], want)
    pieces[2]:fill_(0)
    assert.are.equal(0, mt[3][2])
    local rows = m:tensor_split(3, 1)
    assert.same({ 2, 1, 1 }, { rows[1]:size(1), rows[2]:size(1), rows[3]:size(1) })
    H.raises(function() return torch.tensor_split(torch.tensor(1), 2) end, 'tensor_split', '0 dims')
    H.raises(function() return torch.tensor_split(torch.ones(4), 0) end, 'tensor_split', 'larger than 0')
    H.raises(function() return torch.tensor_split(torch.ones(4), torch.tensor({ { 1 } })) end, 'tensor_split', '1-D')
    H.raises(function() return torch.tensor_split(torch.ones(4), torch.tensor({ 1.0 })) end, 'tensor_split', 'int64')
    H.raises(function() return torch.tensor_split(torch.ones(4), { 1.5 }) end, 'tensor_split', 'integers')
    H.raises(function() return torch.tensor_split(torch.ones(4), 2, 2) end, 'tensor_split', 'out of range')
    -- gradients flow back through the pieces
    assert.is_true(gradcheck(function(a)
      local p = a:tensor_split({ 1, 2 }, 2)
      return p[1] * 2 + p[3] * p[3]
    end, { leaf({ 3, 3 }) }))
  end)

  it('hsplit, vsplit and dsplit: dims 2 (1 for vectors), 1 and 3; sections must divide', function()
    local x = torch.arange(0, 24):reshape(2, 3, 4)
    local h = torch.hsplit(x, 3)
    assert.are.equal(3, #h)
    assert.are.equal(x[{ {}, { 2, 2 } }]:sum():item(), h[2]:sum():item())
    local v = x:vsplit({ 1 })
    assert.same({ 1, 1 }, { v[1]:size(1), v[2]:size(1) })
    local d = torch.dsplit(x, { 1, 3 })
    assert.same({ 1, 2, 1 }, { d[1]:size(3), d[2]:size(3), d[3]:size(3) })
    H.assert_values(d[3], x:select(3, 4):unsqueeze(3):totable())
    local vec = torch.hsplit(torch.arange(0, 10), 5)
    assert.are.equal(5, #vec)
    H.assert_values(vec[5], { 8, 9 })
    H.raises(function() return torch.hsplit(torch.arange(0, 10), 3) end, 'hsplit', 'not divisible')
    H.raises(function() return torch.hsplit(torch.tensor(1), 1) end, 'hsplit', 'at least 1 dimension')
    H.raises(function() return torch.vsplit(torch.ones(4), 2) end, 'vsplit', 'at least 2 dimensions')
    H.raises(function() return torch.dsplit(torch.ones(2, 2), 2) end, 'dsplit', 'at least 3 dimensions')
  end)

  it('broadcast_shapes and broadcast_tensors', function()
    local s = torch.broadcast_shapes({ 2, 1 }, { 3, 1, 4 })
    assert.are.equal(torch.Size, getmetatable(s))
    assert.same({ 3, 2, 4 }, { s[1], s[2], s[3] })
    assert.are.equal(torch.ones(3, 2).shape, torch.broadcast_shapes(2, { 3, 1 }))
    assert.are.equal(0, #torch.broadcast_shapes())
    assert.are.equal(torch.ones(5, 0).shape, torch.broadcast_shapes(torch.ones(1, 0).shape, { 5, 1 }))
    H.raises(function() return torch.broadcast_shapes({ 2 }, { 3 }) end, 'broadcast_shapes', 'cannot be broadcast')
    H.raises(function() return torch.broadcast_shapes({ 2.5 }) end, 'broadcast_shapes', 'integers')
    local a, b = torch.tensor({ { 1.0 }, { 2.0 } }), torch.tensor({ 10.0, 20.0, 30.0 })
    local t = torch.broadcast_tensors(a, b)
    assert.are.equal(2, #t)
    H.assert_values(t[1], { { 1, 1, 1 }, { 2, 2, 2 } })
    H.assert_values(t[2], { { 10, 20, 30 }, { 10, 20, 30 } })
    local t2 = torch.broadcast_tensors({ a, b, torch.tensor(5.0) })
    H.assert_values(t2[3], { { 5, 5, 5 }, { 5, 5, 5 } })
    H.raises(function() return torch.broadcast_tensors(torch.ones(2), torch.ones(3)) end, 'broadcast_tensors', 'cannot be broadcast')
    H.raises(function() return torch.broadcast_tensors(torch.ones(2), 3) end, 'broadcast_tensors', 'tensors')
    assert.is_true(gradcheck(function(p, q)
      local r = torch.broadcast_tensors(p, q)
      return r[1] * r[2]
    end, { leaf({ 2, 1 }), leaf({ 3 }) }))
  end)

  it('sum_to_size: the sums an expand to the size would need', function()
    local _, xt, tx = mat(3, 4, function(i, j) return i * 1.5 - j end)
    local x = xt:t() -- 4 x 3, non-contiguous
    local function ref(rows, cols)
      local r = {}
      for i = 1, rows do
        r[i] = {}
        for j = 1, cols do
          local s = 0
          for a = 1, 4 do
            for b = 1, 3 do
              if (rows == 1 or a == i) and (cols == 1 or b == j) then s = s + tx[b][a] end
            end
          end
          r[i][j] = s
        end
      end
      return r
    end
    H.assert_values(x:sum_to_size(1, 3), ref(1, 3), 1e-12)
    H.assert_values(x:sum_to_size({ 4, 1 }), ref(4, 1), 1e-12)
    H.assert_values(x:sum_to_size(torch.ones(1, 1).shape), ref(1, 1), 1e-12)
    H.assert_values(x:sum_to_size(4, 3), ref(4, 3), 1e-12)
    local v = x:sum_to_size(3)
    assert.are.equal(1, v:dim())
    H.assert_values(v, ref(1, 3)[1], 1e-12)
    assert.are.equal(0, x:sum_to_size({}):dim())
    H.raises(function() return x:sum_to_size(2) end, 'sum_to_size', 'not expandable')
    H.raises(function() return x:sum_to_size(1, 4, 3) end, 'sum_to_size', 'not expandable')
    assert.is_true(gradcheck(function(a) return a:sum_to_size(1, 3) end, { leaf({ 2, 3 }) }))
  end)

  it('adjoint and the x.mT, x.mH, x.T, x.H properties', function()
    local x = torch.arange(0, 24):reshape(2, 3, 4)
    for _, y in ipairs { x:adjoint(), torch.adjoint(x), x.mT, x.mH } do
      assert.are.equal(torch.ones(2, 4, 3).shape, y.shape)
      assert.are.equal(x[2][3][1], y[2][1][3])
    end
    local t = x.T
    assert.are.equal(torch.ones(4, 3, 2).shape, t.shape)
    assert.are.equal(x[2][1][4], t[4][1][2])
    local m = torch.tensor({ { 1, 2 }, { 3, 4 } })
    H.assert_values(m.T, { { 1, 3 }, { 2, 4 } })
    H.assert_values(m.H, { { 1, 3 }, { 2, 4 } })
    local vec = torch.ones(3)
    assert.are.equal(vec, vec.T)
    H.raises(function() return vec.mT end, 'mT', '1-D')
    H.raises(function() return vec.H end, 'H', '1-D')
    H.raises(function() return vec:adjoint() end, 'adjoint', '1-D')
    assert.is_nil(x.no_such_property)
    assert.is_true(gradcheck(function(a) return a.mT * 2 end, { leaf({ 2, 3 }) }))
  end)
end)

local function deep_copy(t)
  if type(t) ~= 'table' then return t end
  local r = {}
  for i, v in ipairs(t) do r[i] = deep_copy(v) end
  return r
end

-- a [r, c] Lua table of values f(i, j)
local function grid(r, c, f)
  local t = {}
  for i = 1, r do
    t[i] = {}
    for j = 1, c do t[i][j] = f(i, j) end
  end
  return t
end

-- scatter_reduce on Lua tables of 2-D values: x[target] reduced with src[i][j] for each (i, j) of index
local function scatter_reduce_ref(x, dim, index, src, reduce, include_self, integer)
  local contrib = {}
  for i = 1, #index do
    for j = 1, #index[i] do
      local ti, tj = i, j
      if dim == 1 then ti = index[i][j] else tj = index[i][j] end
      local key = ti .. ',' .. tj
      contrib[key] = contrib[key] or {}
      table.insert(contrib[key], src[i][j])
    end
  end
  local out = deep_copy(x)
  for i = 1, #x do
    for j = 1, #x[i] do
      local vals = contrib[i .. ',' .. j]
      if vals then
        if include_self then table.insert(vals, 1, x[i][j]) end
        local r
        if reduce == 'sum' or reduce == 'mean' then
          r = 0
          for _, v in ipairs(vals) do r = r + v end
          if reduce == 'mean' then r = integer and r // #vals or r / #vals end
        elseif reduce == 'prod' then
          r = 1
          for _, v in ipairs(vals) do r = r * v end
        else
          r = vals[1]
          for _, v in ipairs(vals) do
            if v ~= v or r ~= r then r = nan
            elseif reduce == 'amax' then r = math.max(r, v) else r = math.min(r, v) end
          end
        end
        out[i][j] = r
      end
    end
  end
  return out
end

describe('torch indexing functions (index_copy, index_put, masked_scatter, scatter_reduce, *_scatter)', function()
  it('index_copy along dims 1, 2 and -1, every dtype, transposed, in place; errors', function()
    for _, dt in ipairs { torch.float32, f64, torch.int64, torch.int32 } do
      local x, xt, tx = mat(4, 3, function(i, j) return i * 10 + j end, dt)
      local src = grid(2, 3, function(i, j) return -(i * 10 + j) end)
      local want = deep_copy(tx)
      local index = { 4, 2 }
      for k, row in ipairs(index) do want[row] = deep_copy(src[k]) end
      local s = torch.tensor(src, { dtype = dt })
      H.assert_values(x:index_copy(1, torch.tensor(index), s), want)
      H.assert_values(torch.index_copy(xt, 1, torch.tensor(index, { dtype = torch.int32 }), s), want)
      -- columns, by a negative dim
      local csrc = grid(4, 1, function(i) return i * 100 end)
      local cwant = deep_copy(tx)
      for i = 1, 4 do cwant[i][2] = csrc[i][1] end
      H.assert_values(xt:index_copy(-1, torch.tensor({ 2 }), torch.tensor(csrc, { dtype = dt })), cwant)
      local y = x:clone()
      assert.are.equal(y, y:index_copy_(1, torch.tensor(index), s))
      H.assert_values(y, want)
    end
    H.assert_values(torch.zeros(3):index_copy(1, torch.tensor(2), torch.tensor(5.0)), { 0, 5, 0 })
    local s = torch.tensor(1.0):index_copy(1, torch.tensor({ 1 }), torch.tensor(4.0))
    assert.are.equal(0, s:dim())
    assert.are.equal(4, s:item())
    local x = torch.zeros(3, 2)
    H.raises(function() return x:index_copy(1, torch.tensor({ 4 }), torch.ones(1, 2)) end, 'index_copy', 'out of bounds')
    H.raises(function() return x:index_copy(1, torch.tensor({ 0 }), torch.ones(1, 2)) end, 'index_copy', 'out of bounds')
    H.raises(function() return x:index_copy(1, torch.tensor({ 1 }), torch.ones(2, 2)) end, 'index_copy', 'does not fit')
    H.raises(function() return x:index_copy(1, torch.tensor({ 1 }), torch.ones(1, 3)) end, 'index_copy', 'does not fit')
    H.raises(function() return x:index_copy(1, torch.tensor({ 1 }), torch.ones(1, 2, { dtype = f64 })) end, 'index_copy', 'same dtype')
    H.raises(function() return x:index_copy(1, torch.tensor({ 1.0 }), torch.ones(1, 2)) end, 'index_copy', 'int64 or int32')
    H.raises(function() return x:index_copy(1, torch.tensor({ { 1 } }), torch.ones(1, 2)) end, 'index_copy', 'dimension 1 or 0')
    H.raises(function() return x:index_copy(3, torch.tensor({ 1 }), torch.ones(1, 2)) end, 'index_copy', 'out of range')
    assert.is_true(gradcheck(function(a, b) return a:index_copy(2, torch.tensor({ 3, 1 }), b) end, { leaf({ 2, 3 }), leaf({ 2, 2 }) }))
  end)

  it('index_put: index tensors broadcast, negative, bool masks, accumulate; in place; errors', function()
    for _, dt in ipairs { torch.float32, f64, torch.int64 } do
      local base = grid(3, 4, function(i, j) return i * 10 + j end)
      local x = torch.tensor(base, { dtype = dt })
      local function put(rows, cols, vals, acc)
        local want = deep_copy(base)
        for k = 1, #rows do
          local r, c = rows[k], cols[k]
          if r < 0 then r = r + 4 end
          if c < 0 then c = c + 5 end
          want[r][c] = (acc and want[r][c] or 0) + vals[k]
        end
        return want
      end
      H.assert_values(x:index_put({ torch.tensor({ 1, 3 }), torch.tensor({ 2, -1 }) }, torch.tensor({ 5, 6 }, { dtype = dt })),
        put({ 1, 3 }, { 2, -1 }, { 5, 6 }))
      H.assert_values(x:t():index_put({ torch.tensor({ -1, 2 }), torch.tensor({ 1, 3 }) }, torch.tensor({ 5, 6 }, { dtype = dt })):t(),
        put({ 1, 3 }, { 4, 2 }, { 5, 6 }))
      -- accumulate sums repeated positions
      H.assert_values(torch.index_put(x, { torch.tensor({ 2, 2, 1 }), torch.tensor({ 3, 3, 1 }) }, torch.tensor({ 1, 2, 4 }, { dtype = dt }), true),
        put({ 2, 2, 1 }, { 3, 3, 1 }, { 1, 2, 4 }, true))
      -- broadcast index tensors (2 x 1 and 2): four positions, one value
      H.assert_values(x:index_put({ torch.tensor({ { 1 }, { 3 } }), torch.tensor({ 2, 4 }) }, torch.tensor(7, { dtype = dt })),
        put({ 1, 1, 3, 3 }, { 2, 4, 2, 4 }, { 7, 7, 7, 7 }))
      -- one index tensor: whole rows, values broadcast along them
      local rows = deep_copy(base)
      rows[3] = { 1, 2, 3, 4 }
      rows[1] = { 1, 2, 3, 4 }
      H.assert_values(x:index_put({ torch.tensor({ 3, -3 }) }, torch.tensor({ 1, 2, 3, 4 }, { dtype = dt })), rows)
      -- masks: a 2-D one picks elements, a 1-D one rows
      local m = torch.tensor({ { true, false, false, false }, { false, false, false, false }, { false, false, false, true } })
      H.assert_values(x:index_put({ m }, torch.tensor({ 8, 9 }, { dtype = dt })), put({ 1, 3 }, { 1, 4 }, { 8, 9 }))
      local rm = deep_copy(base)
      for j = 1, 4 do rm[1][j], rm[3][j] = 0, 0 end
      H.assert_values(x:index_put({ torch.tensor({ true, false, true }) }, 0), rm)
      H.assert_values(x:index_put({ torch.tensor({ 1, 0, 1 }, { dtype = torch.uint8 }) }, 0), rm)
      local y = x:clone()
      y:index_put_({ torch.tensor({ 2 }), torch.tensor({ 2 }) }, torch.tensor({ 0 }, { dtype = dt }))
      assert.are.equal(0, y[2][2])
    end
    local x = torch.zeros(3, 4)
    H.raises(function() return x:index_put({ torch.tensor({ 4 }) }, 1) end, 'index_put', 'out of bounds')
    H.raises(function() return x:index_put({ torch.tensor({ 0 }) }, 1) end, 'index_put', 'out of bounds')
    H.raises(function() return x:index_put({ torch.tensor({ 1.0 }) }, 1) end, 'index_put', 'int64, int32 or bool')
    H.raises(function() return x:index_put({ torch.tensor({ 1 }) }, torch.tensor({ 1.0, 2.0 })) end, 'index_put', 'cannot be broadcast')
    H.raises(function() return x:index_put({ torch.tensor({ 1 }) }, torch.tensor({ 1.0 }, { dtype = f64 })) end, 'index_put', 'dtype')
    H.raises(function() return x:index_put({ torch.tensor({ 1 }), torch.tensor({ 1 }), torch.tensor({ 1 }) }, 1) end, 'index_put', 'too many indices')
    H.raises(function() return x:index_put({ torch.tensor({ 1, 2 }), torch.tensor({ 1, 2, 3 }) }, 1) end, 'index_put', 'cannot be broadcast')
    H.raises(function() return x:index_put({ torch.tensor({ true, false }) }, 1) end, 'index_put', 'mask')
    H.raises(function() return x:index_put(torch.tensor({ 1 }), 1) end, 'index_put', 'table of tensors')
    local idx = { torch.tensor({ 2, 1 }), torch.tensor({ 3, 3 }) }
    assert.is_true(gradcheck(function(a, b) return a:index_put(idx, b) end, { leaf({ 2, 4 }), leaf({ 2 }) }))
    assert.is_true(gradcheck(function(a, b) return a:index_put({ torch.tensor({ 1, 1 }) }, b, true) end, { leaf({ 2, 4 }), leaf({ 2, 4 }) }))
  end)

  it('masked_scatter: source elements in row-major order where the mask holds, mask broadcast; errors', function()
    for _, dt in ipairs { torch.float32, f64, torch.int32 } do
      local x = torch.tensor(grid(2, 3, function(i, j) return i * 10 + j end), { dtype = dt })
      local mask = { { true, false, true }, { false, true, true } }
      local src = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = dt })
      local want, k = {}, 0
      for i = 1, 2 do
        want[i] = {}
        for j = 1, 3 do
          if mask[i][j] then k = k + 1; want[i][j] = k else want[i][j] = i * 10 + j end
        end
      end
      H.assert_values(x:masked_scatter(torch.tensor(mask), src), want)
      -- transposed x and source: the order is their logical row-major order
      local xt = x:t():contiguous():t()
      H.assert_values(torch.masked_scatter(xt, torch.tensor(mask), src:t():contiguous():t()), want)
      local y = x:clone()
      y:masked_scatter_(torch.tensor(mask), src)
      H.assert_values(y, want)
    end
    -- mask broadcast over rows, x broadcast with the mask
    H.assert_values(torch.zeros(2, 3):masked_scatter(torch.tensor({ true, false, true }), torch.arange(1.0, 7.0)), { { 1, 0, 2 }, { 3, 0, 4 } })
    H.assert_values(torch.zeros(3):masked_scatter(torch.tensor({ { true, false, true }, { false, true, false } }), torch.arange(1.0, 7.0)),
      { { 1, 0, 2 }, { 0, 3, 0 } })
    H.raises(function() return torch.zeros(3):masked_scatter_(torch.tensor({ { true, false, true } }), torch.ones(6)) end, 'masked_scatter_')
    H.raises(function() return torch.zeros(3):masked_scatter(torch.tensor({ true, true, true }), torch.ones(2)) end, 'masked_scatter', 'Number of elements')
    H.raises(function() return torch.zeros(3):masked_scatter(torch.tensor({ 1, 0, 1 }), torch.ones(3)) end, 'masked_scatter', 'bool mask')
    H.raises(function() return torch.zeros(3):masked_scatter(torch.tensor({ true, false, true }), torch.ones(3, { dtype = f64 })) end, 'masked_scatter', 'same dtypes')
    H.raises(function() return torch.zeros(3):masked_scatter(torch.tensor({ true, false }), torch.ones(3)) end, 'masked_scatter', 'cannot be broadcast')
    local m = torch.tensor({ { true, false, true }, { false, true, false } })
    assert.is_true(gradcheck(function(a, b) return a:masked_scatter(m, b) end, { leaf({ 2, 3 }), leaf({ 5 }) }))
  end)

  it('scatter_reduce: sum, prod, mean, amax, amin with and without self, every dtype, against loops', function()
    local index = { { 1, 3, 3, 1 }, { 2, 3, 1, 3 }, { 3, 3, 1, 2 } } -- 3 x 4, into dim 1 of a 3 x 5
    local src = grid(4, 5, function(i, j) return ((i * 7 + j * 5) % 9) - 3 end) -- larger than index
    local x = grid(3, 5, function(i, j) return ((i * 3 + j) % 5) - 1 end)
    local cols = { { 2, 1, 5 }, { 4, 4, 1 }, { 5, 2, 2 } } -- 3 x 3, into dim 2 (as -1)
    for _, dt in ipairs { f64, torch.float32, torch.int64, torch.int32 } do
      local integer = not dt.is_floating_point
      local tx, ts = torch.tensor(x, { dtype = dt }), torch.tensor(src, { dtype = dt })
      for _, reduce in ipairs { 'sum', 'prod', 'mean', 'amax', 'amin' } do
        for _, self in ipairs { true, false } do
          local want = scatter_reduce_ref(x, 1, index, src, reduce, self, integer)
          local got = tx:scatter_reduce(1, torch.tensor(index), ts, reduce, { include_self = self })
          assert.are.equal(dt, got.dtype)
          H.assert_values(got, want, 1e-6, string.format('%s %s self=%s', dt, reduce, self))
          -- transposed self and src
          local xt = torch.tensor(x, { dtype = dt }):t():contiguous():t()
          H.assert_values(torch.scatter_reduce(xt, 1, torch.tensor(index), ts:t():contiguous():t(), reduce, { include_self = self }), want, 1e-6)
          local want2 = scatter_reduce_ref(x, 2, cols, src, reduce, self, integer)
          H.assert_values(tx:scatter_reduce(-1, torch.tensor(cols), ts, reduce, { include_self = self }), want2, 1e-6)
        end
      end
    end
    -- integer mean is floor division (as PyTorch)
    H.assert_values(torch.tensor({ 5, -7, 9 }):scatter_reduce(1, torch.tensor({ 2, 2, 2 }), torch.tensor({ 2, -4, 4 }), 'mean'), { 5, -2, 9 })
    -- amax/amin propagate NaN; positions no index reaches keep self
    H.assert_values(torch.zeros(3):scatter_reduce(1, torch.tensor({ 1, 1 }), torch.tensor({ nan, 1.0 }), 'amax'), { nan, 0, 0 })
    H.assert_values(torch.full({ 3 }, 9.0):scatter_reduce(1, torch.tensor({ 2 }), torch.tensor({ 1.0 }), 'amin', { include_self = false }), { 9, 1, 9 })
    -- 0-D and empty
    H.assert_values(torch.tensor(2.0):scatter_reduce(1, torch.tensor(1), torch.tensor(5.0), 'prod'), { 10 })
    H.assert_values(torch.ones(3):scatter_reduce(1, torch.zeros(0, { dtype = torch.int64 }), torch.zeros(0), 'amax'), { 1, 1, 1 })
    local y = torch.zeros(3)
    y:scatter_reduce_(1, torch.tensor({ 3, 3 }), torch.tensor({ 1.0, 2.0 }), 'sum')
    H.assert_values(y, { 0, 0, 3 })
    local z = torch.zeros(3)
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ 1 }), torch.ones(1), 'max') end, 'scatter_reduce', 'reduce argument')
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ 4 }), torch.ones(1), 'sum') end, 'scatter_reduce', 'out of bounds')
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ 1 }, { dtype = torch.int32 }), torch.ones(1), 'sum') end, 'scatter_reduce', 'int64')
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ 1 }), torch.ones(1, { dtype = f64 }), 'sum') end, 'scatter_reduce', 'dtype')
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ 1, 2 }), torch.ones(1), 'sum') end, 'scatter_reduce', 'smaller')
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ { 1 } }), torch.ones(1, 1), 'sum') end, 'scatter_reduce', 'dimensions')
    H.raises(function() return z:scatter_reduce(2, torch.tensor({ 1 }), torch.ones(1), 'sum') end, 'scatter_reduce', 'out of range')
    H.raises(function() return z:scatter_reduce(1, torch.tensor({ 1 }), torch.ones(1), 'sum', { include = true }) end, 'scatter_reduce', 'unknown option')
  end)

  it('scatter_reduce gradients: finite differences for every reduction, ties shared evenly for amax/amin', function()
    torch.manual_seed(11)
    local idx = torch.tensor({ { 1, 2, 3, 1 }, { 2, 2, 2, 2 }, { 3, 1, 1, 3 }, { 1, 1, 2, 3 } })
    for _, reduce in ipairs { 'sum', 'mean', 'amax', 'amin', 'prod' } do
      for _, self in ipairs { true, false } do
        assert.is_true(gradcheck(function(a, b) return a:scatter_reduce(1, idx, b, reduce, { include_self = self }) end,
          { leaf({ 3, 4 }), leaf({ 5, 4 }) }), reduce .. ' ' .. tostring(self))
      end
    end
    -- the rule: a position's gradient g is split evenly among the values equal to its max (self's
    -- own counted), the rest get 0; without include_self, self's positions that were reduced into get 0
    local function grads(self)
      local a = torch.tensor({ 1.0, 5.0, 3.0 }, { requires_grad = true })
      local s = torch.tensor({ 5.0, 5.0, 2.0, 3.0 }, { requires_grad = true })
      local r = a:scatter_reduce(1, torch.tensor({ 2, 2, 3, 1 }), s, 'amax', { include_self = self })
      r:backward(torch.tensor({ 1.0, 10.0, 100.0 }))
      return r, a.grad, s.grad
    end
    local r, ga, gs = grads(true)
    H.assert_values(r, { 3, 5, 3 })
    H.assert_values(ga, { 0, 10 / 3, 100 }, 1e-6)
    H.assert_values(gs, { 10 / 3, 10 / 3, 0, 1 }, 1e-6)
    r, ga, gs = grads(false)
    H.assert_values(r, { 3, 5, 2 })
    H.assert_values(ga, { 0, 0, 0 })
    H.assert_values(gs, { 10 / 3, 10 / 3, 100, 1 }, 1e-6)
    -- prod with a zero: the other factors' product
    local a = torch.tensor({ 2.0, 3.0 }, { requires_grad = true })
    local s = torch.tensor({ 0.0, 4.0, 5.0 }, { requires_grad = true })
    a:scatter_reduce(1, torch.tensor({ 1, 1, 2 }), s, 'prod'):sum():backward()
    H.assert_values(a.grad, { 0, 5 })
    H.assert_values(s.grad, { 8, 0, 3 })
  end)

  it('select_scatter, slice_scatter and diagonal_scatter against loops, with gradients; errors', function()
    for _, dt in ipairs { torch.float32, f64, torch.int64 } do
      local x, xt, tx = mat(4, 5, function(i, j) return i * 10 + j end, dt)
      -- select_scatter: row 3 (and -1, the last), column 2
      local want = deep_copy(tx)
      for j = 1, 5 do want[3][j] = -j end
      H.assert_values(torch.select_scatter(x, torch.tensor({ -1, -2, -3, -4, -5 }, { dtype = dt }), 1, 3), want)
      H.assert_values(xt:select_scatter(torch.tensor({ -1, -2, -3, -4, -5 }), 1, -2), want)
      local cw = deep_copy(tx)
      for i = 1, 4 do cw[i][2] = 0 end
      H.assert_values(x:select_scatter(torch.zeros(4), 2, 2), cw)
      -- slice_scatter: columns first..last by step (1-based, inclusive)
      local function sl(first, last, step)
        local w, n = deep_copy(tx), 0
        for j = first, last, step do
          n = n + 1
          for i = 1, 4 do w[i][j] = -(i * 100 + n) end
        end
        return w, n
      end
      for _, c in ipairs { { 2, 4, 1 }, { 1, 5, 2 }, { 2, 5, 3 }, { 5, 5, 1 } } do
        local w, n = sl(c[1], c[2], c[3])
        local src = torch.tensor(grid(4, n, function(i, k) return -(i * 100 + k) end), { dtype = dt })
        H.assert_values(torch.slice_scatter(x, src, 2, c[1], c[2], c[3]), w)
        H.assert_values(xt:slice_scatter(src, { dim = -1, start = c[1], ['end'] = c[2], step = c[3] }), w)
      end
      -- defaults: the whole dim; negative and clamped bounds
      local all = torch.tensor(grid(4, 5, function() return 7 end), { dtype = dt })
      H.assert_values(x:slice_scatter(all, 2), grid(4, 5, function() return 7 end))
      local w = sl(4, 5, 1)
      H.assert_values(x:slice_scatter(torch.tensor(grid(4, 2, function(i, k) return -(i * 100 + k) end), { dtype = dt }), 2, -2, 9), w)
      local rw = deep_copy(tx)
      rw[2], rw[3] = { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0 }
      H.assert_values(x:slice_scatter(torch.zeros(2, 5, { dtype = dt }), 1, 2, 3), rw)
      H.assert_values(x:slice_scatter(torch.zeros(4, 0, { dtype = dt }), 2, 7, 9), tx)
      -- diagonal_scatter: offsets either side, dims swapped
      for _, off in ipairs { 0, 1, 3, -1, -3 } do
        local dw, k = deep_copy(tx), 0
        for i = 1, 4 do
          local j = i + off
          if j >= 1 and j <= 5 then k = k + 1; dw[i][j] = -k end
        end
        local src = torch.arange(-1, -k - 1, -1, { dtype = dt })
        H.assert_values(torch.diagonal_scatter(x, src, off), dw)
        H.assert_values(xt:diagonal_scatter(src, { offset = off }), dw)
        -- dims (2, 1): the diagonal of the transpose, offset counted there
        local tw, kk = deep_copy(tx), 0
        for j = 1, 5 do
          local i = j + off
          if i >= 1 and i <= 4 then kk = kk + 1; tw[i][j] = -kk end
        end
        H.assert_values(x:diagonal_scatter(torch.arange(-1, -kk - 1, -1, { dtype = dt }), off, 2, 1), tw)
      end
    end
    -- a batch of matrices, the diagonal of dims 2 and 3
    local b = torch.zeros(2, 3, 3)
    local d = torch.diagonal_scatter(b, torch.tensor({ { 1.0, 2, 3 }, { 4, 5, 6 } }), 0, 2, 3)
    H.assert_values(d:diagonal(0, 2, 3), { { 1, 2, 3 }, { 4, 5, 6 } })
    assert.are.equal(21, d:sum():item())
    -- src cast to x's dtype
    assert.are.equal(torch.float32, torch.select_scatter(torch.zeros(2, 3), torch.ones(3, { dtype = f64 }), 1, 1).dtype)
    local x = torch.zeros(2, 3)
    H.raises(function() return x:select_scatter(torch.ones(2), 1, 1) end, 'select_scatter', 'src size')
    H.raises(function() return x:select_scatter(torch.ones(3), 1, 3) end, 'select_scatter', 'out of range')
    H.raises(function() return x:select_scatter(torch.ones(3), 1, 0) end, 'select_scatter', 'out of range')
    H.raises(function() return x:slice_scatter(torch.ones(2, 2), 2, 1, 3) end, 'slice_scatter', 'src size')
    H.raises(function() return x:slice_scatter(torch.ones(2, 2), 2, 1, 3, 0) end, 'slice_scatter', 'step must be positive')
    H.raises(function() return x:slice_scatter(torch.ones(2, 2), { stride = 2 }) end, 'slice_scatter', 'unknown option')
    H.raises(function() return x:diagonal_scatter(torch.ones(3)) end, 'diagonal_scatter', 'src size')
    H.raises(function() return x:diagonal_scatter(torch.ones(2), 0, 1, 1) end, 'diagonal')
    assert.is_true(gradcheck(function(a, s) return a:select_scatter(s, 2, -1) end, { leaf({ 3, 4 }), leaf({ 3 }) }))
    assert.is_true(gradcheck(function(a, s) return a:slice_scatter(s, 2, 1, 4, 2) end, { leaf({ 3, 4 }), leaf({ 3, 2 }) }))
    assert.is_true(gradcheck(function(a, s) return a:diagonal_scatter(s, -1) end, { leaf({ 3, 4 }), leaf({ 2 }) }))
  end)
end)

-- the values of row i (dim 2) or column i (dim 1) of a Lua matrix
local function line(t, dim, i)
  local r = {}
  if dim == 2 then
    for j = 1, #t[i] do r[j] = t[i][j] end
  else
    for k = 1, #t do r[k] = t[k][i] end
  end
  return r
end

local function moments(vals, correction)
  local n, s = #vals, 0
  for _, v in ipairs(vals) do s = s + v end
  local mean, ss = s / n, 0
  for _, v in ipairs(vals) do ss = ss + (v - mean) ^ 2 end
  return ss / (n - correction), mean
end

-- q-quantile of a Lua array (NaN: the result for quantile; left out by nanquantile)
local function quantile_ref(vals, q, mode, ignore_nan)
  local s, has_nan = {}, false
  for _, v in ipairs(vals) do
    if v ~= v then has_nan = true else s[#s + 1] = v end
  end
  if (has_nan and not ignore_nan) or #s == 0 then return nan end
  table.sort(s)
  local rank = q * (#s - 1)
  local lo, hi = math.floor(rank), math.ceil(rank)
  if mode == 'lower' then return s[lo + 1] end
  if mode == 'higher' then return s[hi + 1] end
  if mode == 'nearest' then
    local r = math.floor(rank + 0.5)
    if rank + 0.5 == r and r % 2 == 1 then r = r - 1 end -- half to even
    return s[r + 1]
  end
  local w = mode == 'midpoint' and 0.5 or rank - lo
  return s[lo + 1] + (s[hi + 1] - s[lo + 1]) * w
end

describe('torch statistics (std_mean, var_mean, cov, corrcoef, bincount, mode, nanmedian, quantile, renorm)', function()
  local v = function(i, j) return ((i * 7 + j * 3) % 11) / 4 - 1.2 + i * 0.1 end

  it('std_mean and var_mean: over a dim, all, with keepdim and correction, against loops', function()
    for _, dt in ipairs { f64, torch.float32 } do
      local x, xt, tx = mat(3, 4, v, dt)
      local tol = dt == f64 and 1e-12 or 1e-5
      for _, dim in ipairs { 1, 2, -1 } do
        local d = dim < 0 and 2 or dim
        for _, corr in ipairs { 0, 1, 2 } do
          local n = d == 1 and 4 or 3
          local vs, ms = {}, {}
          for i = 1, n do vs[i], ms[i] = moments(line(tx, d == 1 and 1 or 2, i), corr) end
          local sd = {}
          for i = 1, n do sd[i] = math.sqrt(vs[i]) end
          local s, m = torch.std_mean(xt, dim, false, { correction = corr })
          H.assert_values(s, sd, tol)
          H.assert_values(m, ms, tol)
          local var, mean = torch.var_mean(x, dim, true, { correction = corr })
          assert.are.equal(d == 1 and 1 or 3, var:size(1))
          H.assert_values(var, vs, tol)
          H.assert_values(mean, ms, tol)
        end
      end
      local all = {}
      for i = 1, 3 do for j = 1, 4 do all[#all + 1] = tx[i][j] end end
      local va, ma = moments(all, 1)
      local s, m = torch.std_mean(xt)
      H.close(s:item(), math.sqrt(va), tol)
      H.close(m:item(), ma, tol)
      local vb = moments(all, 0)
      H.close(torch.var_mean(x, { unbiased = false }):item(), vb, tol)
      H.close(torch.var_mean(x, false):item(), vb, tol)
      local vk, mk = torch.var_mean(x, nil, true)
      assert.are.equal(torch.ones(1, 1).shape, vk.shape)
      assert.are.equal(torch.ones(1, 1).shape, mk.shape)
    end
    H.raises(function() return torch.std_mean(torch.tensor({ 1, 2 })) end, 'std_mean', 'floating point')
    H.raises(function() return torch.var_mean(3) end, 'var_mean', 'tensor')
    assert.is_true(gradcheck(function(a)
      local s, m = torch.std_mean(a, 2)
      return s + m * 2
    end, { leaf({ 3, 4 }) }))
    assert.is_true(gradcheck(function(a) return (torch.var_mean(a, 1, true, { correction = 0 })) end, { leaf({ 3, 4 }) }))
  end)

  it('cov with correction, fweights and aweights; corrcoef; against loops', function()
    local function cov_ref(X, corr, fw, aw)
      local nv, no = #X, #X[1]
      local w = {}
      for k = 1, no do w[k] = (fw and fw[k] or 1) * (aw and aw[k] or 1) end
      local wsum = 0
      for k = 1, no do wsum = wsum + w[k] end
      local avg = {}
      for i = 1, nv do
        local s = 0
        for k = 1, no do s = s + X[i][k] * w[k] end
        avg[i] = s / wsum
      end
      local norm = wsum - corr
      if aw and corr ~= 0 then
        local s = 0
        for k = 1, no do s = s + w[k] * aw[k] end
        norm = wsum - corr * s / wsum
      end
      local c = {}
      for i = 1, nv do
        c[i] = {}
        for j = 1, nv do
          local s = 0
          for k = 1, no do s = s + (X[i][k] - avg[i]) * (X[j][k] - avg[j]) * w[k] end
          c[i][j] = s / norm
        end
      end
      return c
    end
    local x, xt, tx = mat(3, 5, v)
    H.assert_values(torch.cov(x), cov_ref(tx, 1), 1e-12)
    H.assert_values(xt:cov({ correction = 0 }), cov_ref(tx, 0), 1e-12)
    local fw, aw = { 1, 2, 3, 1, 2 }, { 0.5, 1.0, 2.0, 0.25, 1.5 }
    local tfw, taw = torch.tensor(fw), torch.tensor(aw, { dtype = f64 })
    H.assert_values(torch.cov(x, { fweights = tfw }), cov_ref(tx, 1, fw), 1e-12)
    H.assert_values(torch.cov(x, { aweights = taw }), cov_ref(tx, 1, nil, aw), 1e-12)
    H.assert_values(torch.cov(xt, { correction = 2, fweights = tfw, aweights = taw }), cov_ref(tx, 2, fw, aw), 1e-12)
    H.assert_values(torch.cov(x, { correction = 0, fweights = tfw, aweights = taw }), cov_ref(tx, 0, fw, aw), 1e-12)
    -- float32, integers (computed as float32), a vector (one variable: a 0-D result)
    local c32 = torch.cov(x:float())
    assert.are.equal(torch.float32, c32.dtype)
    H.assert_values(c32, cov_ref(tx, 1), 1e-5)
    local ci = torch.cov(torch.tensor({ { 0, 1, 2 }, { 2, 1, 0 } }))
    assert.are.equal(torch.float32, ci.dtype)
    H.assert_values(ci, { { 1, -1 }, { -1, 1 } })
    local cv = torch.cov(torch.tensor({ 1.0, 2.0, 4.0 }))
    assert.are.equal(0, cv:dim())
    H.close(cv:item(), 7 / 3, 1e-6)
    H.assert_values(torch.cov(torch.tensor({ { 1.0 } })), { nan }) -- no degrees of freedom
    -- corrcoef: cov / (sd_i sd_j), clamped
    local cc = torch.corrcoef(xt)
    local cr = cov_ref(tx, 1)
    for i = 1, 3 do
      for j = 1, 3 do H.close(cc[i][j], cr[i][j] / math.sqrt(cr[i][i] * cr[j][j]), 1e-12) end
    end
    H.assert_values(torch.corrcoef(torch.tensor({ { 1.0, 1, 1 }, { 1, 2, 3 } })), { { nan, nan }, { nan, 1 } })
    H.assert_values(torch.corrcoef(torch.tensor({ 1.0, 2, 3 })), { 1 })
    local two = torch.zeros(2, 3)
    H.raises(function() return torch.cov(torch.zeros(2, 2, 2)) end, 'cov', 'two or fewer dimensions')
    H.raises(function() return torch.cov(two, { fweights = torch.tensor({ 1.0, 2, 3 }) }) end, 'cov', 'integral')
    H.raises(function() return torch.cov(two, { fweights = torch.tensor({ 1, -2, 3 }) }) end, 'cov', 'cannot be negative')
    H.raises(function() return torch.cov(two, { aweights = torch.tensor({ 1, 2, 3 }) }) end, 'cov', 'floating point')
    H.raises(function() return torch.cov(two, { aweights = torch.tensor({ 1.0, -2, 3 }) }) end, 'cov', 'cannot be negative')
    H.raises(function() return torch.cov(two, { aweights = torch.tensor({ 1.0, 2 }) }) end, 'cov', '2 != 3')
    H.raises(function() return torch.cov(two, { aweights = torch.tensor({ { 1.0, 2, 3 } }) }) end, 'cov', 'one or fewer')
    H.raises(function() return torch.cov(two, { fweights = torch.tensor({ 0, 0, 0 }) }) end, 'cov', 'sum to zero')
    H.raises(function() return torch.cov(two, { ddof = 1 }) end, 'cov', 'unknown option')
    H.raises(function() return torch.cov(torch.tensor({ true })) end, 'cov', 'bool')
    assert.is_true(gradcheck(function(a) return torch.cov(a, { aweights = taw }) end, { leaf({ 2, 5 }) }))
    assert.is_true(gradcheck(function(a, w) return torch.cov(a, { aweights = w }) end, { leaf({ 2, 5 }), leaf({ 5 }) }))
    assert.is_true(gradcheck(function(a) return torch.corrcoef(a) end, { leaf({ 3, 5 }) }))
  end)

  it('bincount: counts of each value 0..max at value + 1, weights, minlength; errors', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8 } do
      local vals = { 0, 2, 2, 5, 7, 2, 0 }
      local want = { 0, 0, 0, 0, 0, 0, 0, 0 }
      for _, x in ipairs(vals) do want[x + 1] = want[x + 1] + 1 end
      local x = torch.tensor(vals, { dtype = dt })
      local c = torch.bincount(x)
      assert.are.equal(torch.int64, c.dtype)
      H.assert_values(c, want)
      local long = x:bincount({ minlength = 10 })
      H.assert_values(long, { want[1], want[2], want[3], want[4], want[5], want[6], want[7], want[8], 0, 0 })
      local strided = torch.tensor({ 0, 9, 2, 9, 2, 9, 5, 9, 7, 9, 2, 9, 0, 9 }, { dtype = dt }):reshape(7, 2):select(2, 1)
      assert.is_false(strided:is_contiguous())
      H.assert_values(torch.bincount(strided), want)
    end
    local w = torch.tensor({ 0.5, 1, 2, 3 })
    local cw = torch.bincount(torch.tensor({ 0, 2, 2, 5 }), { weights = w })
    assert.are.equal(torch.float32, cw.dtype)
    H.assert_values(cw, { 0.5, 0, 3, 0, 0, 3 })
    assert.are.equal(f64, torch.bincount(torch.tensor({ 1 }), { weights = torch.tensor({ 2 }) }).dtype)
    assert.are.equal(f64, torch.bincount(torch.tensor({ 1 }), { weights = torch.tensor({ 2.0 }, { dtype = torch.float16 }) }).dtype)
    assert.are.equal(0, torch.bincount(torch.zeros(0, { dtype = torch.int64 })):numel())
    H.assert_values(torch.bincount(torch.zeros(0, { dtype = torch.int64 }), { minlength = 3 }), { 0, 0, 0 })
    H.raises(function() return torch.bincount(torch.tensor({ -1, 2 })) end, 'bincount', 'non-negative')
    H.raises(function() return torch.bincount(torch.tensor({ 1.0, 2 })) end, 'bincount', 'integral')
    H.raises(function() return torch.bincount(torch.tensor({ true })) end, 'bincount', 'integral')
    H.raises(function() return torch.bincount(torch.tensor({ { 1, 2 } })) end, 'bincount', '1-d')
    H.raises(function() return torch.bincount(torch.tensor({ 1, 2 }), { weights = torch.ones(3) }) end, 'bincount', 'same length')
    H.raises(function() return torch.bincount(torch.tensor({ 1, 2 }), { minlength = -1 }) end, 'bincount', 'minlength')
    assert.is_true(gradcheck(function(ww) return torch.bincount(torch.tensor({ 0, 2, 2, 1 }), { weights = ww }) end, { leaf({ 4 }) }))
  end)

  it('mode: the smallest most frequent value and the 1-based index of its last occurrence', function()
    local function mode_ref(vals)
      local count, best = {}, nil
      for _, x in ipairs(vals) do count[x] = (count[x] or 0) + 1 end
      for x, c in pairs(count) do
        if best == nil or c > count[best] or (c == count[best] and x < best) then best = x end
      end
      local last
      for i, x in ipairs(vals) do if x == best then last = i end end
      return best, last
    end
    local rows = { { 3, 1, 3, 1, 2, 5 }, { 1, 1, 1, 1, 1, 1 }, { 2, 1, 1, 2, 3, 1 }, { 4, 6, 5, 9, 8, 7 }, { -2, 7, -2, 7, 7, -2 } }
    for _, dt in ipairs { f64, torch.float32, torch.int64, torch.int32, torch.int8 } do
      local x = torch.tensor(rows, { dtype = dt })
      local vals, idx = torch.mode(x, 2)
      local vt, it_ = x:t():mode(1, true)
      assert.are.equal(torch.ones(1, 5).shape, vt.shape)
      for i, r in ipairs(rows) do
        local bv, bi = mode_ref(r)
        assert.are.equal(bv, vals[i])
        assert.are.equal(bi, idx[i])
        assert.are.equal(bv, vt[1][i])
        assert.are.equal(bi, it_[1][i])
      end
      -- the default dim is the last; a vector
      local v1, i1 = x[3]:mode()
      assert.are.equal(1, v1:item())
      assert.are.equal(6, i1:item())
      local v2, i2 = x:mode(-1)
      assert.are.equal(vals[5], v2[5])
      assert.are.equal(idx[5], i2[5])
    end
    local s, si = torch.mode(torch.tensor(5.0))
    assert.are.equal(5, s:item())
    assert.are.equal(1, si:item())
    local e, ei = torch.mode(torch.zeros(0, 3), 2)
    assert.are.equal(0, e:numel())
    assert.are.equal(torch.int64, ei.dtype)
    H.raises(function() return torch.mode(torch.zeros(0)) end, 'mode', 'non-zero size')
    H.raises(function() return torch.mode(torch.zeros(2, 2), 3) end, 'mode', 'out of range')
    -- the gradient reaches the element whose index is returned
    local a = torch.tensor({ 1.0, 2.0, 1.0, 3.0 }, { requires_grad = true })
    local mv, mi = a:mode()
    mv:backward()
    assert.are.equal(3, mi:item())
    H.assert_values(a.grad, { 0, 0, 1, 0 })
  end)

  it('nanmedian: the lower median of the values that are not NaN, NaN where all are', function()
    local rows = { { 1.0, nan, 3, 2 }, { nan, nan, nan, nan }, { 4, 1, nan, 0 }, { 5, 3, 8, 1 } }
    local function ref(r)
      local s, pos = {}, {}
      for i, x in ipairs(r) do if x == x then s[#s + 1] = x; pos[x] = i end end
      if #s == 0 then return nan end
      table.sort(s)
      local m = s[(#s - 1) // 2 + 1]
      return m, pos[m]
    end
    for _, dt in ipairs { f64, torch.float32 } do
      local x = torch.tensor(rows, { dtype = dt })
      local vals, idx = torch.nanmedian(x, 2)
      local tv, ti = x:t():nanmedian(1, true)
      for i, r in ipairs(rows) do
        local m, p = ref(r)
        H.close(vals[i], m, 0)
        H.close(tv[1][i], m, 0)
        if p then
          assert.are.equal(p, idx[i])
          assert.are.equal(p, ti[1][i])
        end
      end
      local flat = {}
      for _, r in ipairs(rows) do for _, y in ipairs(r) do flat[#flat + 1] = y end end
      local whole = x:nanmedian()
      assert.are.equal(0, whole:dim())
      H.close(whole:item(), (ref(flat)), 0)
    end
    -- integers: the median
    local iv, ii = torch.tensor({ { 3, 1, 2 } }):nanmedian(2)
    H.assert_values(iv, { 2 })
    H.assert_values(ii, { 3 })
    H.raises(function() return torch.nanmedian(torch.zeros(2, 0), 2) end, 'nanmedian', 'empty')
    assert.is_true(gradcheck(function(a) return (a:nanmedian(2)) end, { leaf({ 3, 5 }) }))
  end)

  it('quantile and nanquantile: every interpolation, q a number or a vector, dims and keepdim', function()
    local rows = { { 0.0, 1, 2, 3, 5 }, { 4.5, -1, 2, 2, 8 }, { 1, nan, 3, 2, nan }, { nan, nan, nan, nan, nan } }
    local qs = { 0, 0.1, 0.25, 0.375, 0.5, 0.625, 0.9, 1 }
    for _, dt in ipairs { f64, torch.float32 } do
      local x = torch.tensor(rows, { dtype = dt })
      local tol = dt == f64 and 1e-12 or 1e-5
      for _, mode in ipairs { 'linear', 'lower', 'higher', 'midpoint', 'nearest' } do
        for _, ignore in ipairs { false, true } do
          local f = ignore and torch.nanquantile or torch.quantile
          local got = f(x, torch.tensor(qs, { dtype = dt }), 2, false, { interpolation = mode })
          assert.are.equal(torch.ones(#qs, 4).shape, got.shape)
          local gt = f(x:t(), torch.tensor(qs, { dtype = dt }), { dim = 1, keepdim = true, interpolation = mode })
          assert.are.equal(torch.ones(#qs, 1, 4).shape, gt.shape)
          for k, q in ipairs(qs) do
            for i, r in ipairs(rows) do
              local want = quantile_ref(r, q, mode, ignore)
              H.close(got[k][i], want, tol, string.format('%s q=%g row %d', mode, q, i))
              H.close(gt[k][1][i], want, tol)
            end
            local one = f(x, q, -1, true, { interpolation = mode })
            assert.are.equal(torch.ones(4, 1).shape, one.shape)
            H.close(one[2][1], quantile_ref(rows[2], q, mode, ignore), tol)
          end
        end
      end
      -- no dim: the flattened tensor; keepdim keeps every dim as 1
      local flat = {}
      for i = 1, 2 do for _, y in ipairs(rows[i]) do flat[#flat + 1] = y end end
      local two = x:narrow(1, 1, 2)
      H.close(torch.quantile(two, 0.3):item(), quantile_ref(flat, 0.3, 'linear'), tol)
      assert.are.equal(torch.ones(2, 1, 1).shape, torch.quantile(two, torch.tensor({ 0.2, 0.3 }, { dtype = dt }), nil, true).shape)
      assert.are.equal(torch.ones(1, 1).shape, torch.quantile(two, 0.2, nil, true).shape)
      assert.are.equal(0, torch.quantile(two, 0.2):dim())
    end
    H.assert_values(torch.quantile(torch.tensor(3.0), 0.3), { 3 })
    assert.are.equal(torch.ones(1).shape, torch.quantile(torch.tensor(3.0), torch.tensor({ 0.3 })).shape)
    assert.are.equal(0, torch.quantile(torch.ones(3), torch.tensor(0.5)):dim())
    local x = torch.tensor({ 1.0, 2.0 })
    H.raises(function() return torch.quantile(torch.tensor({ 1, 2 }), 0.5) end, 'quantile', 'float or double')
    H.raises(function() return torch.quantile(x, 1.5) end, 'quantile', 'range [0, 1]')
    H.raises(function() return torch.nanquantile(x, torch.tensor({ -0.5 })) end, 'nanquantile', 'range [0, 1]')
    H.raises(function() return torch.quantile(x, torch.tensor({ { 0.5 } })) end, 'quantile', 'scalar or 1D')
    H.raises(function() return torch.quantile(x, torch.tensor({ 0.5 }, { dtype = f64 })) end, 'quantile', 'same dtype')
    H.raises(function() return torch.quantile(torch.zeros(0), 0.5) end, 'quantile', 'non-empty')
    H.raises(function() return torch.quantile(x, 0.5, 1, false, { interpolation = 'foo' }) end, 'quantile', 'interpolation')
    H.raises(function() return torch.quantile(x, 0.5, 2) end, 'quantile', 'out of range')
    H.raises(function() return torch.quantile(x, 0.5, { method = 'linear' }) end, 'quantile', 'unknown option')
    local q = torch.tensor({ 0.2, 0.5, 0.9 }, { dtype = f64 })
    assert.is_true(gradcheck(function(a) return torch.quantile(a, q, 2) end, { leaf({ 3, 5 }) }))
    assert.is_true(gradcheck(function(a) return torch.nanquantile(a, 0.3, 1, false, { interpolation = 'midpoint' }) end, { leaf({ 4, 2 }) }))
  end)

  it('renorm: slices along dim whose p-norm exceeds maxnorm scaled to it; in place; errors', function()
    local x, xt, tx = mat(3, 4, function(i, j) return (i * 3 + j) % 5 - 1.5 + i end)
    for _, p in ipairs { 1, 2, 3, inf } do
      for _, dim in ipairs { 1, 2 } do
        local maxnorm = 2.5
        local want = deep_copy(tx)
        local n = dim == 1 and 3 or 4
        for k = 1, n do
          local vals = line(tx, dim == 1 and 2 or 1, k)
          local norm = 0
          for _, y in ipairs(vals) do
            if p == inf then norm = math.max(norm, math.abs(y)) else norm = norm + math.abs(y) ^ p end
          end
          if p ~= inf then norm = norm ^ (1 / p) end
          local scale = norm > maxnorm and maxnorm / (norm + 1e-7) or 1
          for m = 1, #vals do
            if dim == 1 then want[k][m] = tx[k][m] * scale else want[m][k] = tx[m][k] * scale end
          end
        end
        H.assert_values(torch.renorm(x, p, dim, maxnorm), want, 1e-12)
        H.assert_values(xt:renorm(p, dim - 3, maxnorm), want, 1e-12)
        H.assert_values(x:float():renorm(p, dim, maxnorm), want, 1e-5)
      end
    end
    local y = x:clone()
    y:renorm_(2, 1, 1)
    H.assert_values(y:norm(2, 2), { 1, 1, 1 }, 1e-6)
    H.raises(function() return torch.renorm(torch.ones(3), 2, 1, 1) end, 'renorm', 'at least 2 dimensions')
    H.raises(function() return torch.renorm(torch.ones(2, 2, { dtype = torch.int64 }), 2, 1, 1) end, 'renorm', 'floating point')
    H.raises(function() return x:renorm(-1, 1, 1) end, 'renorm', 'non-positive-norm')
    H.raises(function() return x:renorm(2, 1, -1) end, 'renorm', 'maxnorm')
    H.raises(function() return x:renorm(2, 3, 1) end, 'renorm', 'out of range')
    assert.is_true(gradcheck(function(a) return a:renorm(2, 1, 1.2) end, { leaf({ 3, 4 }) }))
    assert.is_true(gradcheck(function(a) return a:renorm(1, 2, 1.5) end, { leaf({ 3, 4 }) }))
  end)
end)

describe('torch builders (logspace, tril_indices, triu_indices, diag_embed, diagflat, vander, randint_like)', function()
  it('logspace: base^(start + k (end - start) / (steps - 1)), dtypes and bases', function()
    for _, c in ipairs { { 0, 2, 3, 10 }, { -1, 1, 5, 10 }, { 0, 3, 4, 2 }, { 1, -2, 7, 0.5 }, { 0, 1, 1, 10 }, { 2, 5, 0, 10 } } do
      local start, stop, steps, base = c[1], c[2], c[3], c[4]
      local want = {}
      for k = 0, steps - 1 do
        local e = steps == 1 and start or start + k * (stop - start) / (steps - 1)
        want[k + 1] = base ^ e
      end
      local d = torch.logspace(start, stop, steps, { base = base, dtype = f64 })
      assert.are.equal(f64, d.dtype)
      H.assert_values(d, want, 1e-14)
      local s = torch.logspace(start, stop, steps, { base = base })
      assert.are.equal(torch.float32, s.dtype)
      H.assert_values(s, want, 1e-6)
      local i = torch.logspace(start, stop, steps, { base = base, dtype = torch.int64 })
      local iw = {}
      for k, x in ipairs(want) do iw[k] = math.floor(x + 1e-9) end
      H.assert_values(i, iw)
    end
    assert.is_true(torch.logspace(0, 1, 3, { requires_grad = true }).requires_grad)
    H.raises(function() return torch.logspace(0, 1, -1) end, 'logspace', 'steps')
    H.raises(function() return torch.logspace(0, 1, 3, { bass = 2 }) end, 'logspace', 'unknown option')
  end)

  it('tril_indices and triu_indices: 1-based coordinates, row by row', function()
    for _, c in ipairs { { 3, 3, 0 }, { 3, 4, 1 }, { 4, 3, -1 }, { 4, 3, 1 }, { 0, 3, 0 }, { 3, 3, -5 }, { 2, 5, 7 } } do
      local r, col, off = c[1], c[2], c[3]
      local lo, up = { {}, {} }, { {}, {} }
      for i = 1, r do
        for j = 1, col do
          if j - i <= off then table.insert(lo[1], i); table.insert(lo[2], j) end
          if j - i >= off then table.insert(up[1], i); table.insert(up[2], j) end
        end
      end
      local tl, tu = torch.tril_indices(r, col, off), torch.triu_indices(r, col, off)
      assert.are.equal(torch.int64, tl.dtype)
      assert.same({ 2, #lo[1] }, { tl:size(1), tl:size(2) })
      assert.same({ 2, #up[1] }, { tu:size(1), tu:size(2) })
      if #lo[1] > 0 then H.assert_values(tl, lo) end
      if #up[1] > 0 then H.assert_values(tu, up) end
    end
    -- they index a matrix's triangle
    local m = torch.arange(1, 10):reshape(3, 3)
    local t = torch.tril_indices(3, 3)
    local picked = m:reshape(-1):index_select(1, (t[1] - 1) * 3 + t[2])
    H.assert_values(picked, { 1, 4, 5, 7, 8, 9 })
    assert.are.equal(torch.int32, torch.triu_indices(3, 3, { dtype = torch.int32 }).dtype)
    H.raises(function() return torch.tril_indices(-1, 3) end, 'tril_indices', 'non-negative')
    H.raises(function() return torch.triu_indices(3, 3, 0.5) end, 'triu_indices', 'integers')
  end)

  it('diag_embed and diagflat against loops, offsets and dims; gradients', function()
    local x = torch.tensor({ { 1.0, 2, 3 }, { 4, 5, 6 } })
    for _, off in ipairs { 0, 1, -2 } do
      local m = 3 + math.abs(off)
      local want = {}
      for b = 1, 2 do
        want[b] = {}
        for i = 1, m do
          want[b][i] = {}
          for j = 1, m do
            local k = off >= 0 and i or j
            want[b][i][j] = (j - i == off and k <= 3) and x[b][k] or 0
          end
        end
      end
      H.assert_values(torch.diag_embed(x, off), want)
      H.assert_values(x:t():contiguous():t():diag_embed(off), want)
      -- the new dims first and last: out[i][b][j]
      local moved = torch.diag_embed(x, off, 1, 3)
      assert.are.equal(torch.ones(m, 2, m).shape, moved.shape)
      for b = 1, 2 do
        for i = 1, m do
          for j = 1, m do assert.are.equal(want[b][i][j], moved[i][b][j]) end
        end
      end
    end
    H.assert_values(torch.diag_embed(torch.tensor({ 7, 8 })), { { 7, 0 }, { 0, 8 } })
    local flat = torch.diagflat(torch.tensor({ { 1, 2 }, { 3, 4 } }), -1)
    local want = {}
    for i = 1, 5 do
      want[i] = {}
      for j = 1, 5 do want[i][j] = (i - j == 1) and (j) or 0 end
    end
    H.assert_values(flat, want)
    H.assert_values(torch.tensor({ 5.0, 6.0 }):diagflat(), { { 5, 0 }, { 0, 6 } })
    H.raises(function() return torch.diag_embed(x, 0, 1, 1) end, 'diag_embed', 'identical')
    H.raises(function() return torch.diag_embed(x, 0, 4, 1) end, 'diag_embed', 'out of range')
    assert.is_true(gradcheck(function(a) return torch.diag_embed(a, 1, -1, 1) end, { leaf({ 2, 3 }) }))
    assert.is_true(gradcheck(function(a) return torch.diagflat(a, -1) end, { leaf({ 2, 2 }) }))
  end)

  it('vander: decreasing (or increasing) powers, N columns, integers as int64', function()
    for _, dt in ipairs { f64, torch.float32, torch.int64, torch.int8 } do
      local vals = { 2, -1, 3, 0 }
      local x = torch.tensor({ 2, 9, -1, 9, 3, 9, 0, 9 }, { dtype = dt }):reshape(4, 2):select(2, 1) -- strided
      for _, N in ipairs { 0, 1, 3, 4, 6 } do
        for _, inc in ipairs { false, true } do
          local want = {}
          for i, v in ipairs(vals) do
            want[i] = {}
            for j = 1, N do want[i][j] = v ^ (inc and j - 1 or N - j) end
          end
          local got = torch.vander(x, N, inc)
          assert.are.equal(dt.is_floating_point and dt or torch.int64, got.dtype)
          assert.same({ 4, N }, { got:size(1), got:size(2) })
          if N > 0 then H.assert_values(got, want) end
        end
      end
      assert.are.equal(4, torch.vander(x):size(2))
    end
    assert.are.equal(torch.int64, torch.vander(torch.tensor({ true, false })).dtype)
    H.raises(function() return torch.vander(torch.ones(2, 2)) end, 'vander', 'one-dimensional')
    H.raises(function() return torch.vander(torch.ones(2), -1) end, 'vander', 'non-negative')
    assert.is_true(gradcheck(function(a) return torch.vander(a, 4) end, { leaf({ 3 }) }))
  end)

  it('randint_like: integers in [low, high) in x\'s shape, dtype and device', function()
    torch.manual_seed(3)
    local x = torch.zeros(50, 4, { dtype = torch.int32 })
    local r = torch.randint_like(x, 3, 7)
    assert.are.equal(torch.int32, r.dtype)
    assert.are.equal(x.shape, r.shape)
    assert.is_true(r:ge(3):all():item() and r:lt(7):all():item())
    for v = 3, 6 do assert.is_true(r:eq(v):any():item(), 'value ' .. v) end
    local f = torch.randint_like(torch.zeros(100), 5)
    assert.are.equal(torch.float32, f.dtype)
    assert.is_true(f:ge(0):all():item() and f:lt(5):all():item())
    H.assert_values(f, f:floor():totable())
    assert.are.equal(torch.int64, torch.randint_like(torch.zeros(3), 2, { dtype = torch.int64 }).dtype)
    H.raises(function() return torch.randint_like(x, 5, 5) end, 'randint_like', 'low < high')
    H.raises(function() return torch.randint_like(x, 1.5) end, 'randint_like', 'integers')
  end)
end)

describe('torch.special: polygamma and i0', function()
  -- polygamma(n, x) = (-1)^(n+1) n! sum over k of (x + k)^-(n+1): 2000 terms, then the
  -- Euler-Maclaurin remainder's first terms
  local function polygamma_ref(n, x)
    local s, N = n + 1, 2000
    local sum = 0
    for k = 0, N - 1 do sum = sum + (x + k) ^ -s end
    local a = x + N
    sum = sum + a ^ (1 - s) / (s - 1) + 0.5 * a ^ -s + s / 12 * a ^ (-s - 1)
    local f = 1
    for k = 2, n do f = f * k end
    return (n % 2 == 1 and 1 or -1) * f * sum
  end
  -- I0(x) = (1/pi) * integral over [0, pi] of exp(x cos t): the trapezoid rule, exact to rounding
  -- for this periodic integrand
  local function i0_ref(x)
    local M, s = 400, 0
    for k = 0, M do
      local t = math.pi * k / M
      local w = (k == 0 or k == M) and 0.5 or 1
      s = s + w * math.exp(x * math.cos(t))
    end
    return s / M
  end

  it('polygamma against the series, n = 1..4, negative x, poles, float32; digamma for n = 0', function()
    local xs = { 0.3, 1, 2.5, 9.5, 17, 40, -0.5, -2.25 }
    for n = 1, 4 do
      local got = torch.polygamma(n, torch.tensor(xs, { dtype = f64 })):totable()
      for i, x in ipairs(xs) do H.close(got[i], polygamma_ref(n, x), 1e-11, string.format('polygamma(%d, %g)', n, x)) end
      local g32 = torch.tensor(xs):polygamma(n)
      assert.are.equal(torch.float32, g32.dtype)
      H.close(g32[3], polygamma_ref(n, 2.5), 1e-6)
    end
    H.assert_values(torch.polygamma(0, torch.tensor({ 1.0, 2.5 })), torch.tensor({ 1.0, 2.5 }):digamma():totable())
    H.assert_values(torch.special.polygamma(1, torch.tensor({ 0.0, -1.0 })), { inf, inf })
    H.assert_values(torch.polygamma(2, torch.tensor({ 0.0 })), { -inf })
    assert.are.equal(torch.float32, torch.polygamma(1, torch.tensor({ 1, 2 })).dtype)
    local y = torch.tensor({ 1.0, 2.0 }, { dtype = f64 })
    y:polygamma_(1)
    H.close(y[1], math.pi ^ 2 / 6, 1e-12)
    H.raises(function() return torch.polygamma(-1, torch.ones(2)) end, 'polygamma', 'non-negative')
    H.raises(function() return torch.polygamma(1.5, torch.ones(2)) end, 'polygamma', 'non-negative')
    H.raises(function() return torch.polygamma(1, 2) end, 'polygamma', 'tensor')
    -- d/dx polygamma(n, x) = polygamma(n + 1, x)
    local x = torch.tensor({ 0.7, 1.5, 4.0, 12.0 }, { dtype = f64, requires_grad = true })
    torch.polygamma(1, x):sum():backward()
    local g = x.grad:totable()
    for i, v in ipairs { 0.7, 1.5, 4.0, 12.0 } do H.close(g[i], polygamma_ref(2, v), 1e-9) end
    assert.is_true(gradcheck(function(a) return torch.polygamma(2, a) end, { leaf({ 2, 3 }, 0.5, 12) }))
  end)

  it('i0 against the integral, both branches, every sign; float32, integers; gradients', function()
    local xs = { 0, 0.5, -1, 3.75, 8, -8.5, 15, 29.9, 30, 30.5, -45, 60, 100 }
    local got = torch.i0(torch.tensor(xs, { dtype = f64 })):totable()
    for i, x in ipairs(xs) do H.close(got[i], i0_ref(x), 1e-13, 'i0(' .. x .. ')') end
    local g32 = torch.tensor(xs):i0()
    assert.are.equal(torch.float32, g32.dtype)
    for i, x in ipairs(xs) do
      local want = i0_ref(x)
      H.close(g32[i], want > 3.4028234663852886e38 and inf or want, 1e-6) -- I0(100) overflows float32
    end
    H.assert_values(torch.special.i0(torch.tensor({ inf, -inf, nan })), { inf, inf, nan })
    H.assert_values(torch.i0(torch.tensor({ 0, 1 })), { 1, i0_ref(1) }, 1e-6)
    local m = torch.tensor({ { 1.0, 2.0 }, { 3.0, 40.0 } }, { dtype = f64 })
    H.assert_values(m:t():i0(), { { i0_ref(1), i0_ref(3) }, { i0_ref(2), i0_ref(40) } }, 1e-13)
    local y = torch.tensor({ 2.0 }, { dtype = f64 })
    y:i0_()
    H.close(y[1], i0_ref(2), 1e-13)
    H.raises(function() return torch.i0(5) end, 'i0', 'tensor')
    -- d/dx I0 = I1, I1(x) = (1/pi) * integral of exp(x cos t) cos t
    local function i1_ref(x)
      local M, s = 400, 0
      for k = 0, M do
        local t = math.pi * k / M
        s = s + ((k == 0 or k == M) and 0.5 or 1) * math.exp(x * math.cos(t)) * math.cos(t)
      end
      return s / M
    end
    local a = torch.tensor({ -2.0, 0.5, 12.0, 35.0 }, { dtype = f64, requires_grad = true })
    torch.i0(a):sum():backward()
    for i, v in ipairs { -2.0, 0.5, 12.0, 35.0 } do H.close(a.grad[i], i1_ref(v), 1e-10) end
    assert.is_true(gradcheck(function(b) return torch.i0(b) end, { leaf({ 2, 3 }, -5, 5) }))
  end)

  it('torch.special names the kernels\' functions', function()
    assert.are.equal(torch.digamma, torch.special.digamma)
    assert.are.equal(torch.digamma, torch.special.psi)
    assert.are.equal(torch.lgamma, torch.special.gammaln)
    assert.are.equal(torch.sigmoid, torch.special.expit)
    assert.are.equal(torch.erfinv, torch.special.erfinv)
  end)
end)

describe('the added functions on another device', function()
  local it2 = torch.cpu.device_count() >= 2 and it or pending
  it2('make their index and scratch tensors on the input\'s device (cpu:1 here, as for CUDA)', function()
    local d = 'cpu:1'
    local x = torch.tensor({ { 1.0, 2, 3 }, { 4, 5, 6 } }):to(d)
    local i = torch.tensor({ 1, 2 }):to(d)
    local results = {
      torch.copysign(x, -1), torch.ldexp(x, torch.tensor({ 1, 2, 3 }):to(d)), (torch.frexp(x)), torch.gcd(i, i),
      torch.lcm(i, 3), torch.nextafter(x, x + 1), torch.isin(x, torch.tensor({ 2.0 }):to(d)), torch.isin(x, 2),
      torch.rsub(x, 1), torch.tensor_split(x, 2, 2)[1], torch.broadcast_tensors(x, torch.ones(3):to(d))[2],
      x:sum_to_size(1, 3), x.mT, x:index_copy(1, i, x), x:index_put({ i }, 0), x:masked_scatter(x:gt(2), x),
      x:scatter_reduce(2, torch.tensor({ { 1, 1, 2 } }):to(d), x, 'amax'),
      x:scatter_reduce(2, torch.tensor({ { 1, 1, 2 } }):to(d), x, 'mean', { include_self = false }),
      torch.select_scatter(x, torch.zeros(3):to(d), 1, 2), torch.slice_scatter(x, torch.zeros(2, 2):to(d), 2, 2),
      torch.diagonal_scatter(x, torch.zeros(2):to(d)), (torch.std_mean(x, 1)),
      torch.cov(x, { fweights = torch.tensor({ 1, 2, 1 }):to(d), aweights = torch.tensor({ 1.0, 2, 1 }):to(d) }),
      torch.corrcoef(x), torch.bincount(i, { minlength = 4 }), (torch.mode(x)), (torch.nanmedian(x, 1)),
      torch.quantile(x, 0.3, 2), torch.nanquantile(x, torch.tensor({ 0.3, 0.6 }):to(d), 1), x:renorm(2, 1, 3),
      torch.logspace(0, 1, 3, { device = d }), torch.tril_indices(3, 3, 0, { device = d }), torch.diag_embed(x),
      torch.diagflat(x), torch.vander(i), torch.randint_like(x, 4), torch.polygamma(2, x), torch.i0(x),
    }
    for k, r in ipairs(results) do assert.are.equal(d, tostring(r.device), 'result ' .. k) end
  end)
end)
