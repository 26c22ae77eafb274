-- Elementwise ops against plain-Lua references, on every dtype they accept, contiguous or not.
local torch = require 'torch'
local H = require 'spec.helpers'

local function erf(x) -- Abramowitz-Stegun 7.1.26 is too coarse: use a series / continued fraction
  local t = math.abs(x)
  if t < 3 then
    local sum, term, n = t, t, 0
    repeat
      n = n + 1
      term = term * (-t * t) / n
      sum = sum + term / (2 * n + 1)
    until math.abs(term) < 1e-17
    local r = 2 / math.sqrt(math.pi) * sum
    return x < 0 and -r or r
  end
  return x < 0 and -1 or 1
end

local function round_even(v)
  local f = math.floor(v)
  local d = v - f
  if d > 0.5 then return f + 1 elseif d < 0.5 then return f end
  return (f % 2 == 0) and f or f + 1
end

local unary_ref = {
  abs = math.abs, neg = function(v) return -v end, exp = math.exp,
  expm1 = function(v) return math.exp(v) - 1 end, log = math.log,
  log1p = function(v) return math.log(1 + v) end, log2 = function(v) return math.log(v, 2) end,
  log10 = function(v) return math.log(v, 10) end, sqrt = math.sqrt,
  rsqrt = function(v) return 1 / math.sqrt(v) end, sin = math.sin, cos = math.cos, tan = math.tan,
  asin = math.asin, acos = math.acos, atan = math.atan,
  sinh = function(v) return (math.exp(v) - math.exp(-v)) / 2 end,
  cosh = function(v) return (math.exp(v) + math.exp(-v)) / 2 end,
  tanh = function(v) return (math.exp(v) - math.exp(-v)) / (math.exp(v) + math.exp(-v)) end,
  erf = erf, sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
  relu = function(v) return v > 0 and v or 0 end, floor = math.floor, ceil = math.ceil,
  round = round_even, trunc = function(v) return v >= 0 and math.floor(v) or math.ceil(v) end,
  sign = function(v) return v > 0 and 1 or (v < 0 and -1 or 0) end,
  reciprocal = function(v) return 1 / v end, square = function(v) return v * v end,
}
-- inputs inside every op's domain
local domain_values = { 0.1, 0.25, 0.5, 0.75, 0.9, 0.35 }
local general_values = { -2.5, -1.5, -0.3, 0.5, 1.5, 2.5 }
local positive_only = { log = true, log2 = true, log10 = true, sqrt = true, rsqrt = true, log1p = false,
  asin = true, acos = true }

describe('unary ops', function()
  for name, ref in pairs(unary_ref) do
    it(name .. ' matches the reference on floating dtypes, contiguous and transposed', function()
      local vals = positive_only[name] and domain_values or general_values
      for _, dt in ipairs(H.float_dtypes) do
        local x = torch.tensor({ { vals[1], vals[2], vals[3] }, { vals[4], vals[5], vals[6] } }, { dtype = dt })
        local xs = H.flatten(x:double():totable()) -- the values as stored in dt
        local y = torch[name](x)
        assert.are.equal(dt, y.dtype)
        local want = {}
        for i, v in ipairs(xs) do want[i] = ref(v) end
        H.assert_values(y:double(), want, H.tol(dt) * 4, name .. ' ' .. tostring(dt))
        -- the same on a transposed (non-contiguous) view
        local xt = x:t()
        assert.is_false(xt:is_contiguous())
        local yt = xt[name](xt)
        local want_t = {}
        for j = 1, 3 do for i = 1, 2 do want_t[#want_t + 1] = ref(xs[(i - 1) * 3 + j]) end end
        H.assert_values(yt:double(), want_t, H.tol(dt) * 4, name .. ' transposed ' .. tostring(dt))
      end
    end)
  end

  -- the special functions, against references written here from their definitions
  local function lgamma_ref(x) -- Lanczos (g = 7, n = 9), reflected below 1/2
    if x < 0.5 then return math.log(math.pi / math.abs(math.sin(math.pi * x))) - lgamma_ref(1 - x) end
    local c = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
      -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7 }
    x = x - 1
    local a, t = c[1], x + 7.5
    for k = 1, 8 do a = a + c[k + 1] / (x + k) end
    return 0.5 * math.log(2 * math.pi) + (x + 0.5) * math.log(t) - t + math.log(a)
  end
  local function digamma_ref(x) -- reflection, recurrence to x >= 20, Bernoulli-number series
    if x < 0 then return digamma_ref(1 - x) - math.pi / math.tan(math.pi * x) end
    local r = 0
    while x < 20 do r, x = r - 1 / x, x + 1 end
    local b = { 1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66 } -- B2, B4, ..., B10
    local s = 0
    for k = 1, #b do s = s + b[k] / (2 * k * x ^ (2 * k)) end
    return r + math.log(x) - 1 / (2 * x) - s
  end
  local function erfinv_ref(y) -- bisection on erf
    local lo, hi = -6.0, 6.0
    for _ = 1, 200 do
      local mid = (lo + hi) / 2
      if erf(mid) < y then lo = mid else hi = mid end
    end
    return (lo + hi) / 2
  end
  local special = {
    erfc = { function(v) return 1 - erf(v) end, general_values },
    erfinv = { erfinv_ref, { -0.95, -0.5, 0.1, 0.3, 0.75, 0.99 } },
    lgamma = { lgamma_ref, { -2.5, -1.5, -0.3, 0.5, 4.5, 30.25 } },
    digamma = { digamma_ref, { -2.5, -1.5, -0.3, 0.5, 1.5, 30.25 } },
    asinh = { function(v) return math.log(v + math.sqrt(v * v + 1)) end, general_values },
    acosh = { function(v) return math.log(v + math.sqrt(v * v - 1)) end, { 1.01, 1.1, 1.5, 2, 3, 10 } },
    atanh = { function(v) return 0.5 * math.log((1 + v) / (1 - v)) end, { -0.9, -0.5, 0.1, 0.3, 0.75, 0.95 } },
  }
  for name, c in pairs(special) do
    it(name .. ' matches its reference on floating dtypes, contiguous and transposed, and passes gradients', function()
      local ref, vals = c[1], c[2]
      for _, dt in ipairs(H.float_dtypes) do
        local x = torch.tensor({ { vals[1], vals[2], vals[3] }, { vals[4], vals[5], vals[6] } }, { dtype = dt })
        local xs = H.flatten(x:double():totable())
        local want, want_t = {}, {}
        for i, v in ipairs(xs) do want[i] = ref(v) end
        for j = 1, 3 do for i = 1, 2 do want_t[#want_t + 1] = want[(i - 1) * 3 + j] end end
        local tol = dt == torch.float64 and 1e-12 or H.tol(dt) * 4
        H.assert_values(torch[name](x):double(), want, tol, name .. ' ' .. tostring(dt))
        H.assert_values(x:t()[name](x:t()):double(), want_t, tol, name .. ' transposed ' .. tostring(dt))
        assert.are.equal(dt, x[name](x).dtype)
      end
      local x = torch.tensor(vals, { dtype = torch.float64, requires_grad = true })
      assert.is_true(torch.autograd.gradcheck(function(a) return a[name](a) end, { x }), name)
    end)
  end

  it('special values of the special functions as PyTorch gives them', function()
    local inf, nan = math.huge, 0 / 0
    for _, dt in ipairs { torch.float32, torch.float64 } do
      H.assert_values(torch.tensor({ -1, 1, 0, 1.5, -2 }, { dtype = dt }):erfinv(), { -inf, inf, 0, nan, nan })
      H.assert_values(torch.tensor({ 0, -0.0, -1, -2, 1, 2 }, { dtype = dt }):digamma(),
        { -inf, inf, nan, nan, -0.57721566490153286, 0.42278433509846714 }, 1e-6)
      H.assert_values(torch.tensor({ 0, -1, 1, 2, 3 }, { dtype = dt }):lgamma(), { inf, inf, 0, 0, math.log(2) }, 1e-6)
      H.assert_values(torch.tensor({ 1, 0.5 }, { dtype = dt }):acosh(), { 0, nan })
      H.assert_values(torch.tensor({ 1, -1 }, { dtype = dt }):atanh(), { inf, -inf })
    end
    -- erf(erfinv(y)) gives y back across the range, in float64 to the last bits
    local y = torch.linspace(-0.999, 0.999, 101, { dtype = torch.float64 })
    H.assert_values(y:erfinv():erf(), y:totable(), 1e-14)
    -- integer inputs are computed in float32
    assert.are.equal(torch.float32, torch.tensor({ 1, 2 }):lgamma().dtype)
    H.assert_values(torch.arange(1, 6):lgamma(), { 0, 0, math.log(2), math.log(6), math.log(24) }, 1e-6)
  end)

  it('in place versions write into the tensor and return it', function()
    local x = torch.tensor({ 1.0, 4.0, 9.0 })
    local r = x:sqrt_()
    assert.is_true(rawequal(r, x))
    H.assert_values(x, { 1, 2, 3 })
    local v = torch.tensor({ { 1.0, -2.0 }, { -3.0, 4.0 } }):t()
    v:abs_()
    H.assert_values(v, { 1, 3, 2, 4 })
  end)

  it('keeps integer dtypes where PyTorch does and gives float32 where it does not', function()
    for _, dt in ipairs(H.int_dtypes) do
      local x = torch.tensor({ 1, 2, 3 }, { dtype = dt })
      assert.are.equal(dt, x:abs().dtype)
      assert.are.equal(dt, x:floor().dtype)
      assert.are.equal(dt, x:square().dtype)
      assert.are.equal(torch.float32, x:exp().dtype)
      assert.are.equal(torch.float32, x:sqrt().dtype)
      H.assert_values(x:exp(), { math.exp(1), math.exp(2), math.exp(3) }, 1e-6)
    end
    H.assert_values(torch.tensor({ -3, 0, 5 }):neg(), { 3, 0, -5 })
    H.assert_values(torch.tensor({ -3, 0, 5 }, { dtype = torch.int8 }):sign(), { -1, 0, 1 })
    assert.are.equal(torch.float32, torch.tensor({ true, false }):sqrt().dtype)
  end)

  it('wraps integer overflow as PyTorch does', function()
    H.assert_values(torch.tensor({ 100, -100 }, { dtype = torch.int8 }):square(), { 16, 16 })
    H.assert_values(torch.tensor({ 200 }, { dtype = torch.uint8 }):neg(), { 56 })
    H.assert_values(torch.tensor({ math.mininteger }):abs(), { math.mininteger })
  end)

  it('propagates NaN through relu and handles infinities', function()
    local x = torch.tensor({ 0 / 0, -math.huge, math.huge, -1 })
    local r = x:relu():totable()
    assert.is_true(r[1] ~= r[1])
    assert.are.same({ 0, math.huge, 0 }, { r[2], r[3], r[4] })
    H.assert_values(torch.tensor({ 0.5, 1.5, 2.5, -0.5, -2.5 }):round(), { 0, 2, 2, -0, -2 })
  end)

  it('rejects neg on bool and non-tensor arguments', function()
    H.raises(function() return torch.tensor({ true }):neg() end, 'neg', 'bool')
    H.raises(function() return torch.exp(3) end, 'tensor expected')
    H.raises(function() return torch.exp(torch.ones(2), 1) end, 'exp', 'at most 1')
  end)
end)

describe('binary ops', function()
  it('square by pow(2) and ^ 2 exactly, every floating dtype, with the gradient of pow', function()
    local vals = { 0.0, -0.0, 1.5, -2.25, 1e-30, -3e20, 1e200, math.huge, -math.huge, 0 / 0, 0.1, -7.3 }
    for _, dt in ipairs { torch.float64, torch.float32, torch.float16, torch.bfloat16 } do
      local x = torch.tensor(vals, { dtype = torch.float64 }):to(dt)
      local xv = x:totable()
      for _, y in ipairs { x:pow(2), x ^ 2, x:pow(2.0), torch.pow(x, 2) } do
        assert.are.equal(dt, y.dtype)
        -- the exact square (a double holds it for every float type), rounded once to the dtype
        local want = torch.tensor((function()
          local t = {}
          for i, v in ipairs(xv) do t[i] = v * v end
          return t
        end)(), { dtype = torch.float64 }):to(dt):totable()
        local yv = y:totable()
        for i = 1, #vals do
          local ok = (yv[i] ~= yv[i] and want[i] ~= want[i]) or (yv[i] == want[i] and 1 / yv[i] == 1 / want[i])
          assert(ok, ('%s: %s ^ 2 is %s, want %s'):format(tostring(dt), tostring(xv[i]), tostring(yv[i]), tostring(want[i])))
        end
      end
    end
    H.assert_values(torch.tensor({ -3, 4 }):pow(2), { 9, 16 }, 0) -- integers keep their own pow
    assert.are.equal(torch.int64, torch.tensor({ -3, 4 }):pow(2).dtype)
    local g = torch.tensor({ 1.5, -2.0, 0.25 }, { dtype = torch.float64, requires_grad = true })
    g:pow(2):sum():backward()
    H.assert_values(g.grad, { 3.0, -4.0, 0.5 }, 0)
  end)

  it("take PyTorch's forms for the powers 3, 0.5, -0.5, -1 and -2: every floating dtype, specials, in place", function()
    -- PyTorch: x * x * x, sqrt, rsqrt, reciprocal, 1 / (x * x) (3 and -2 for float32 and float64;
    -- float16 and bfloat16 take pow, computed in float32 and rounded once; float16 takes pow for
    -- 0.5 and -0.5 too: C's pow at -0 and -inf)
    local vals = { 0.0, -0.0, 1.5, -2.25, 0.1, -7.3, 3.7, math.huge, -math.huge, 0 / 0 }
    local function sqrt(v) return v < 0 and 0 / 0 or v == 0 and v or math.sqrt(v) end
    local forms = {
      [3] = function(v) return v * v * v end, [0.5] = sqrt,
      [-0.5] = function(v) return 1 / sqrt(v) end, [-1] = function(v) return 1 / v end,
      [-2] = function(v) return 1 / (v * v) end,
    }
    for _, dt in ipairs { torch.float64, torch.float32, torch.float16, torch.bfloat16 } do
      local x = torch.tensor(vals, { dtype = torch.float64 }):to(dt)
      local xv = x:totable()
      local tol = dt == torch.float64 and 0 or dt == torch.float32 and 2.5e-7 or 2 * H.tol(dt)
      for e, f in pairs(forms) do
        if dt == torch.float16 and (e == 0.5 or e == -0.5) then
          local r = f
          f = function(v)
            if v == -math.huge then return e > 0 and math.huge or 0.0 end
            if v == 0 then return e > 0 and 0.0 or math.huge end
            return r(v)
          end
        end
        for _, y in ipairs { x:pow(e), x ^ e, x:clone():pow_(e) } do
          assert.are.equal(dt, y.dtype)
          local yv = y:totable()
          for i, v in ipairs(xv) do
            local w = f(v)
            local ok
            if w ~= w then ok = yv[i] ~= yv[i]
            elseif w == 0 or w == math.huge or w == -math.huge then ok = yv[i] == w and 1 / yv[i] == 1 / w
            else ok = math.abs(yv[i] - w) <= tol * math.abs(w) end
            assert(ok, ('%s: %s ^ %s is %s, want %s'):format(tostring(dt), tostring(v), tostring(e), tostring(yv[i]),
              tostring(w)))
          end
        end
      end
    end
    -- x * x * x, rounded twice, as PyTorch: float32 bits against the same two roundings, on floats
    -- whose cube C's powf rounds once to another float (so that pow's value would fail this)
    local x = torch.tensor({ 0x1.00093ep+0, 0x1.5ec196p+0, 0x1.bd79eap+0, -0x1.0e1924p+1 })
    local sq = x * x
    local want = (sq * x):totable()
    H.assert_values(x:pow(3), want, 0)
    local exact = x:double():pow(3):float():totable() -- the cube rounded once
    for i = 1, 4 do assert.are_not.equal(exact[i], want[i], 'input ' .. i .. ' tells the two apart') end
    local g = torch.tensor({ 1.5, -2.0 }, { dtype = torch.float64, requires_grad = true })
    g:pow(3):sum():backward()
    H.assert_values(g.grad, { 6.75, 12.0 }, 0)
  end)

  it('broadcast as PyTorch does', function()
    local a = torch.tensor({ { 1 }, { 2 }, { 3 } }, { dtype = torch.float32 }) -- [3, 1]
    local b = torch.tensor({ 10, 20, 30, 40 }, { dtype = torch.float32 })     -- [4]
    local c = a + b
    assert.are.same({ 3, 4 }, c.shape)
    local want = {}
    for i = 1, 3 do for j = 1, 4 do want[#want + 1] = i + j * 10 end end
    H.assert_values(c, want)
    H.raises(function() return torch.ones(2, 3) + torch.ones(4) end, 'add', '[2, 3]', '[4]')
  end)

  it('compute add, sub, mul, div, pow, maximum, minimum, atan2, fmod, remainder', function()
    local av = { -3.5, -1.0, 0.5, 2.0, 7.25, 9.0 }
    local bv = { 2.0, -4.0, 3.0, -0.5, 2.5, 4.0 }
    local refs = {
      add = function(x, y) return x + y end, sub = function(x, y) return x - y end,
      mul = function(x, y) return x * y end, div = function(x, y) return x / y end,
      pow = function(x, y) return x ^ y end, maximum = math.max, minimum = math.min,
      atan2 = function(x, y) return math.atan(x, y) end, fmod = math.fmod,
      remainder = function(x, y) return x - math.floor(x / y) * y end,
    }
    for _, dt in ipairs { torch.float32, torch.float64 } do
      local a = torch.tensor(av, { dtype = dt })
      local b = torch.tensor(bv, { dtype = dt })
      for name, ref in pairs(refs) do
        local want = {}
        for i = 1, #av do want[i] = ref(av[i], bv[i]) end
        H.assert_values(torch[name](a, b), want, 1e-6, name)
        H.assert_values(a[name](a, b), want, 1e-6, name .. ' method')
      end
    end
  end)

  it('take numbers on either side', function()
    local x = torch.tensor({ 1.0, 2.0, 4.0 })
    H.assert_values(x + 1, { 2, 3, 5 })
    H.assert_values(1 - x, { 0, -1, -3 })
    H.assert_values(2 / x, { 2, 1, 0.5 })
    H.assert_values(x ^ 2, { 1, 4, 16 })
    H.assert_values(2 ^ x, { 2, 4, 16 })
    H.assert_values(-x, { -1, -2, -4 })
    H.assert_values(x % 3, { 1, 2, 1 })
    H.assert_values(torch.add(x, x, { alpha = 2 }), { 3, 6, 12 })
    H.assert_values(torch.sub(x, 1, { alpha = 3 }), { -2, -1, 1 })
  end)

  it('promote types as PyTorch does', function()
    local cases = {
      { torch.int32, 2.5, torch.float32 }, { torch.int32, 2, torch.int32 },
      { torch.uint8, torch.int8, torch.int16 }, { torch.float16, torch.float32, torch.float32 },
      { torch.bfloat16, torch.float16, torch.float32 }, { torch.int64, torch.float16, torch.float16 },
      { torch.bool, torch.bool, torch.bool }, { torch.bool, 1, torch.int64 }, { torch.bool, 1.5, torch.float32 },
      { torch.float16, 2.5, torch.float16 }, { torch.int8, torch.int64, torch.int64 },
      { torch.uint8, torch.bool, torch.uint8 }, { torch.float64, torch.int64, torch.float64 },
    }
    for _, c in ipairs(cases) do
      local a = torch.ones(2, { dtype = c[1] })
      local b = type(c[2]) == 'number' and c[2] or torch.ones(2, { dtype = c[2] })
      assert.are.equal(c[3], (a + b).dtype, tostring(c[1]) .. ' + ' .. tostring(c[2]))
      assert.are.equal(c[3], torch.result_type(a, b))
    end
    -- a 0-dim tensor does not widen a dimensioned one of the same category
    assert.are.equal(torch.float16, (torch.ones(2, { dtype = torch.float16 }) + torch.tensor(1.0, { dtype = torch.float64 })).dtype)
    assert.are.equal(torch.float32, (torch.ones(2, { dtype = torch.int32 }) + torch.tensor(1.0)).dtype)
    -- true division of integers is floating
    local q = torch.tensor({ 7, -7 }) / torch.tensor({ 2, 2 })
    assert.are.equal(torch.float32, q.dtype)
    H.assert_values(q, { 3.5, -3.5 })
  end)

  it('computes every integer dtype exactly, with Python remainder signs', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8 } do
      local a = torch.tensor({ 7, -7, 7, -7 }, { dtype = dt })
      local b = torch.tensor({ 3, 3, -3, -3 }, { dtype = dt })
      H.assert_values(a % b, { 1, 2, -2, -1 }, 0, 'remainder ' .. tostring(dt))
      H.assert_values(torch.fmod(a, b), { 1, -1, 1, -1 }, 0, 'fmod ' .. tostring(dt))
      H.assert_values(a * b, { 21, -21, -21, 21 }, 0)
      H.assert_values(torch.pow(torch.tensor({ 7, -5, 7, -7 }, { dtype = dt }), torch.tensor({ 2, 3, 0, 1 }, { dtype = dt })),
        { 49, -125, 1, -7 }, 0)
      assert.are.equal(dt, (a + b).dtype)
    end
    H.assert_values(torch.tensor({ 250 }, { dtype = torch.uint8 }) + 10, { 4 })
    H.raises(function() return torch.tensor({ 1, 2 }) % 0 end, 'remainder', 'division by zero')
    H.raises(function() return torch.fmod(torch.tensor({ 1, 2 }), torch.tensor({ 1, 0 })) end, 'fmod', 'division by zero')
  end)

  it('bool arithmetic follows PyTorch', function()
    local t, f = torch.tensor({ true, true, false }), torch.tensor({ true, false, false })
    H.assert_values(t + f, { true, true, false })
    H.assert_values(t * f, { true, false, false })
    H.raises(function() return t - f end, 'sub', 'bool')
  end)

  it('in place ops check that the result fits the tensor', function()
    local a = torch.tensor({ 1, 2, 3 })
    a:add_(torch.tensor({ 1, 1, 1 }))
    H.assert_values(a, { 2, 3, 4 })
    H.raises(function() a:add_(0.5) end, 'add', "can't be cast", 'int64')
    local h = torch.tensor({ 1, 2 }, { dtype = torch.float16 })
    h:mul_(torch.tensor({ 0.5, 0.25 }, { dtype = torch.float64 }))
    assert.are.equal(torch.float16, h.dtype)
    H.assert_values(h, { 0.5, 0.5 })
    H.raises(function() torch.ones(3):add_(torch.ones(2, 3)) end, 'add', "doesn't match the broadcast shape")
    -- into a non-contiguous view
    local m = torch.zeros(3, 2)
    local col = m:t()[2]
    col:add_(torch.tensor({ 1.0, 2.0, 3.0 }))
    H.assert_values(m, { 0, 1, 0, 2, 0, 3 })
  end)

  it('rejects bad operands', function()
    H.raises(function() return torch.add(1, 2) end, 'add', 'at least one tensor')
    H.raises(function() return torch.ones(2) + 'x' end, 'tensor or number')
    H.raises(function() return torch.add(torch.ones(2), torch.ones(2), 1, 2) end, 'add', 'at most 3')
    H.raises(function() return torch.mul(torch.ones(2), torch.ones(2), 3) end, 'mul', 'at most 2')
  end)
end)

describe('comparisons, where, clamp', function()
  it('give bool tensors that match Lua comparisons', function()
    local a = torch.tensor({ 1.0, 2.0, 3.0, 0 / 0 })
    local b = torch.tensor({ 2.0, 2.0, 2.0, 0 / 0 })
    local refs = { eq = { false, true, false, false }, ne = { true, false, true, true },
      lt = { true, false, false, false }, le = { true, true, false, false },
      gt = { false, false, true, false }, ge = { false, true, true, false } }
    for name, want in pairs(refs) do
      local r = a[name](a, b)
      assert.are.equal(torch.bool, r.dtype)
      H.assert_values(r, want, 0, name)
    end
    H.assert_values(torch.tensor({ 1, 5, 3 }):gt(2), { false, true, true })
    H.assert_values(torch.tensor({ 1, 5, 3 }, { dtype = torch.uint8 }):eq(torch.tensor({ 1.0, 5.5, 3.0 })), { true, false, true })
    H.assert_values(torch.tensor({ true, false }):logical_xor(torch.tensor({ true, true })), { false, true })
    H.assert_values(torch.tensor({ 0, 2 }):logical_not(), { true, false })
    H.assert_values(a:isnan(), { false, false, false, true })
  end)

  it('compare a tensor with a number on either side, every dtype, against Lua', function()
    local lua_ops = { eq = function(p, q) return p == q end, ne = function(p, q) return p ~= q end,
      lt = function(p, q) return p < q end, le = function(p, q) return p <= q end,
      gt = function(p, q) return p > q end, ge = function(p, q) return p >= q end }
    for _, dt in ipairs(H.all_dtypes) do
      local x = torch.tensor({ 0, 1, 2, 3, 1, 0, 2, 3, 1, 2, 0, 3, 3, 2, 1, 0, 2, 1, 3 }):to(dt)
      if dt.is_floating_point then x[5] = 0 / 0 end
      local xv = x:totable()
      local num = dt == torch.bool and true or 1
      local nv = 1 -- the number as Lua compares it (true is 1)
      for name, f in pairs(lua_ops) do
        local right, left = x[name](x, num), torch[name](num, x)
        local rv, lv = right:totable(), left:totable()
        for i, v in ipairs(xv) do
          local e = type(v) == 'boolean' and (v and 1 or 0) or v
          assert(rv[i] == f(e, nv), ('%s %s(x, %s) at %d'):format(tostring(dt), name, tostring(num), i))
          assert(lv[i] == f(nv, e), ('%s %s(%s, x) at %d'):format(tostring(dt), name, tostring(num), i))
        end
        -- the number next to every element of a non-contiguous tensor too
        local t = x:view(1, 19):expand(2, 19):t()
        assert.is_true(torch.equal(t[name](t, num):t()[1], right), name .. ' strided')
      end
    end
  end)

  it('where picks elementwise and broadcasts', function()
    local c = torch.tensor({ { true, false }, { false, true } })
    H.assert_values(torch.where(c, torch.ones(2, 2), torch.zeros(2, 2)), { 1, 0, 0, 1 })
    H.assert_values(torch.where(c, 5, torch.tensor({ 1.5, 2.5 })), { 5, 2.5, 1.5, 5 })
    assert.are.equal(torch.int64, torch.where(c, 1, 2).dtype)
    H.raises(function() return torch.where(torch.ones(2), 1, 2) end, 'where', 'bool')
  end)

  it('where over a random mask picks every element right for each element size and broadcast', function()
    torch.manual_seed(31)
    local c = torch.rand(6, 37):gt(0.5)
    local cv = c:totable()
    for _, dt in ipairs { torch.bool, torch.int8, torch.float16, torch.float32, torch.float64, torch.int64 } do
      local a = torch.randint(0, 100, { 6, 37 }):to(dt)
      local b = torch.randint(0, 100, { 6, 37 }):to(dt)
      local row = torch.randint(0, 100, { 37 }):to(dt)
      local one = torch.tensor(true):to(dt)
      local zero = torch.tensor(false):to(dt) -- two different values in every dtype
      -- {a, b, value of a at (i, j), value of b at (i, j)}: both full, a row, a 0-dim, both 0-dim, strided
      local at = function(t) local v = t:totable(); return function(i, j) return v[i][j] end end
      local rv, ov, zv = row:totable(), one:item(), zero:item()
      local cases = {
        { a, b, at(a), at(b) },
        { a, row, at(a), function(_, j) return rv[j] end },
        { row, b, function(_, j) return rv[j] end, at(b) },
        { a, one, at(a), function() return ov end },
        { one, b, function() return ov end, at(b) },
        { one, zero, function() return ov end, function() return zv end },
        { a:t():contiguous():t(), b, at(a), at(b) },
      }
      for k, case in ipairs(cases) do
        local y = torch.where(c, case[1], case[2])
        assert.are.equal(dt, y.dtype)
        local yv = y:totable()
        for i = 1, 6 do
          for j = 1, 37 do
            local want
            if cv[i][j] then want = case[3](i, j) else want = case[4](i, j) end
            assert(yv[i][j] == want, ('%s case %d at %d,%d: %s, want %s'):format(tostring(dt), k, i, j, tostring(yv[i][j]), tostring(want)))
          end
        end
      end
    end
  end)

  it('clamp with either bound, as PyTorch', function()
    local x = torch.tensor({ -2.0, 0.5, 3.0, 0 / 0 })
    local r = x:clamp(-1, 1):totable()
    assert.are.same({ -1, 0.5, 1 }, { r[1], r[2], r[3] })
    assert.is_true(r[4] ~= r[4])
    H.assert_values(torch.tensor({ -2.0, 3.0 }):clamp(nil, 0), { -2, 0 })
    H.assert_values(torch.tensor({ -2.0, 3.0 }):clamp(0), { 0, 3 })
    H.assert_values(torch.tensor({ -2.0, 3.0 }):clamp({ max = 1 }), { -2, 1 })
    H.assert_values(torch.tensor({ 5.0 }):clamp(2, 1), { 1 }) -- min > max gives max
    local y = torch.tensor({ 1, 7, 4 })
    y:clamp_(2, 5)
    H.assert_values(y, { 2, 5, 4 })
    H.raises(function() return x:clamp() end, 'clamp', 'min')
  end)

  it('clamp between two numbers (one pass) gives maximum then minimum exactly, NaN and signed zeros too', function()
    local nan, inf = 0 / 0, math.huge
    -- the reference: the binary ops' formulas, in plain Lua
    local function ref(v, lo, hi)
      v = (v ~= v or v > lo) and v or lo
      return (v ~= v or v < hi) and v or hi
    end
    local function same(a, b) -- equal, both NaN, or zeros of the same sign
      if a ~= a then return b ~= b end
      return a == b and (a ~= 0 or 1 / a == 1 / b)
    end
    local vals = { -2.5, -1, -0.0, 0.0, 0.25, 1, 3.5, nan, inf, -inf, 1e30, -1e-30 }
    for i = 1, 40 do vals[#vals + 1] = (i * 0.37) % 5 - 2.5 end
    local bounds = { { -1, 1 }, { 0.0, 1 }, { -0.0, 0.0 }, { 2, -1 }, { nan, 1 }, { -1, nan }, { -inf, inf }, { 0.25, 0.25 }, { -1.1, 2 } }
    for _, dt in ipairs { torch.float32, torch.float64 } do
      local x = torch.tensor(vals, { dtype = torch.float64 }):to(dt)
      local xv = x:totable()
      for _, b in ipairs(bounds) do
        local lo, hi = b[1], b[2]
        local lof = torch.tensor({ lo }, { dtype = dt })[1] -- the bound as the dtype holds it
        local hif = torch.tensor({ hi }, { dtype = dt })[1]
        for _, case in ipairs { 'new', 'transposed', 'in place' } do
          local y
          if case == 'new' then y = x:clamp(lo, hi)
          elseif case == 'transposed' then y = x:view(4, 13):t():clamp(lo, hi):t():reshape(52)
          else y = x:clone():clamp_(lo, hi) end
          local yv = y:totable()
          for i, v in ipairs(xv) do
            local want = ref(v, lof, hif)
            assert(same(yv[i], want), ('%s clamp(%s, %s) %s of %s: %s, want %s'):format(tostring(dt), lo, hi, case,
              v, yv[i], want))
          end
        end
      end
      local ints = x:clamp(-1, 2)
      H.assert_values(ints:narrow(1, 1, 4), { -1, -1, 0, 0 }, 0)
    end
  end)
end)

describe('float16 and bfloat16', function()
  it('round to nearest even when storing', function()
    local h = torch.tensor({ 1 / 3, 2049, 2051, 70000, 1e-8, 65519, -65520 }, { dtype = torch.float64 }):half()
    local v = h:totable()
    assert.are.equal(0.333251953125, v[1])
    assert.are.equal(2048, v[2])
    assert.are.equal(2052, v[3])
    assert.are.equal(math.huge, v[4])
    assert.are.equal(0, v[5])
    assert.are.equal(65504, v[6])
    assert.are.equal(-math.huge, v[7])
    local b = torch.tensor({ 1 / 3, 257, 259, 1e39 }, { dtype = torch.float64 }):bfloat16():totable()
    assert.are.equal(0.333984375, b[1])
    assert.are.equal(256, b[2])
    assert.are.equal(260, b[3])
    assert.are.equal(math.huge, b[4])
    -- the smallest float16 subnormal
    assert.are.equal(2 ^ -24, torch.tensor({ 2 ^ -24 }):half():item())
    assert.are.equal(0, torch.tensor({ 2 ^ -25 }):half():item()) -- a tie rounds to even (zero)
  end)
end)

describe('the small-op fast path', function()
  it('gives results contiguous strides of their own, whatever the inputs have on size-1 dims', function()
    local x = torch.tensor({ { 1, 2, 3 } }):t() -- 3x1, strides (1, 3): contiguous, not canonical
    local y = torch.ones(3, 1)
    assert.are.same({ 1, 3 }, { x:stride(1), x:stride(2) })
    local z = x + y
    assert.are.same({ 1, 1 }, { z:stride(1), z:stride(2) })
    assert.are.same({ { 2 }, { 3 }, { 4 } }, z:totable())
    z = y * x
    assert.are.same({ 1, 1 }, { z:stride(1), z:stride(2) })
    assert.are.same({ { 1 }, { 2 }, { 3 } }, z:totable())
  end)
end)

describe('hypot, a kernel of the binary op table', function()
  local f64 = { dtype = torch.float64 }
  local inf, nan = math.huge, 0 / 0

  it('computes sqrt(a^2 + b^2) in each floating dtype, without overflow where the result fits', function()
    local av, bv = { 3, -5, 0, 1e-3, 2.5, -0.75 }, { 4, 12, 0, -1e-3, -7, 0.5 }
    for _, dt in ipairs(H.float_dtypes) do
      local a, b = torch.tensor(av, { dtype = dt }), torch.tensor(bv, { dtype = dt })
      local want = {}
      for i = 1, #av do
        local x, y = a[i], b[i] -- the values as dt holds them
        want[i] = math.sqrt(x * x + y * y)
      end
      local r = torch.hypot(a, b)
      assert.are.equal(dt, r.dtype)
      H.assert_values(r, want, H.tol(dt), tostring(dt))
      H.assert_values(a:hypot(b), want, H.tol(dt), tostring(dt) .. ' method')
    end
    -- a^2 + b^2 overflows where the result does not
    H.assert_values(torch.hypot(torch.tensor({ 1e200, -3e300 }, f64), torch.tensor({ 1e200, 4e300 }, f64)),
      { 1e200 * math.sqrt(2), 5e300 }, 1e-15)
    local a32, b32 = torch.tensor({ 2e38 }), torch.tensor({ 1e38 })
    H.assert_values(torch.hypot(a32, b32), { math.sqrt(a32[1] ^ 2 + b32[1] ^ 2) }, 1e-6, 'float32')
  end)

  it('is infinite where an operand is, even beside a NaN; NaN beside a finite value', function()
    local r = torch.hypot(torch.tensor({ inf, nan, -inf, nan, 1 }, f64), torch.tensor({ nan, -inf, 2, 1, nan }, f64))
    H.assert_values(r, { inf, inf, inf, nan, nan }, 0)
  end)

  it('takes floating operands only (PyTorch has no integer kernel), promoting an integer one beside them', function()
    H.raises(function() return torch.hypot(torch.tensor({ 3 }), torch.tensor({ 4 })) end, 'hypot', 'int64')
    H.raises(function() return torch.tensor({ true }):hypot(torch.tensor({ false })) end, 'hypot', 'bool')
    H.raises(function() torch.tensor({ 3 }, { dtype = torch.int32 }):hypot_(torch.tensor({ 4 })) end, 'hypot_', 'int64')
    H.raises(function() torch.tensor({ 3 }):hypot_(2.5) end, "can't be cast")
    local r = torch.hypot(torch.tensor({ 3 }), torch.tensor({ 4.0 }, f64))
    assert.are.equal(torch.float64, r.dtype)
    H.assert_values(r, { 5 }, 0)
    H.assert_values(torch.hypot(torch.tensor({ 3.0, 6.0 }), 4), { 5, math.sqrt(52) }, 1e-6)
    local x = torch.tensor({ 3.0, 5.0 }, f64)
    assert.is_true(rawequal(x, x:hypot_(torch.tensor({ 4.0, 12.0 }, f64))))
    H.assert_values(x, { 5, 13 }, 0)
  end)

  it("differentiates as PyTorch, a / hypot and b / hypot (NaN at 0, 0), twice and in place", function()
    local a, b = H.leaf({ 2, 3 }, 0.5, 2), H.leaf({ 3 }, -2, -0.5)
    assert.are.equal('HypotBackward0', torch.hypot(a, b).grad_fn.name)
    assert.is_true(torch.autograd.gradcheck(torch.hypot, { a, b }))
    assert.is_true(torch.autograd.gradgradcheck(torch.hypot, { a, b }))
    assert.is_true(torch.autograd.gradcheck(function(x) return torch.hypot(x, -2.5) end, { a }))
    assert.is_true(torch.autograd.gradcheck(function(x, y)
      local t = x * 1
      t:hypot_(y)
      return t
    end, { a, b }))
    local z = torch.zeros(2, f64):requires_grad_()
    local w = torch.tensor({ 0.0, -2.0 }, f64):requires_grad_()
    torch.hypot(z, w):sum():backward()
    H.assert_values(z.grad, { nan, 0 }, 0)
    H.assert_values(w.grad, { nan, -1 }, 0)
  end)
end)

describe("div's rounding modes", function()
  it("reach the op table's div_trunc, which torch and tensors do not export (no name of PyTorch's)", function()
    assert.is_nil(rawget(torch, 'div_trunc'))
    assert.is_nil(torch.div_trunc)
    assert.is_nil(torch.Tensor.div_trunc)
    assert.is_nil(torch.Tensor.div_trunc_)
    local x = torch.tensor({ 7, -7 })
    assert.is_nil(x.div_trunc)
    H.assert_values(torch.div(x, 2, { rounding_mode = 'trunc' }), { 3, -3 }, 0)
    H.assert_values(x:div(-2, { rounding_mode = 'trunc' }), { -3, 3 }, 0)
    H.assert_values(torch.div(torch.tensor({ 7.5, -7.5 }), 2, { rounding_mode = 'trunc' }), { 3, -3 }, 0)
    H.assert_values(torch.div(torch.tensor({ 7.5, -7.5 }), 2, { rounding_mode = 'floor' }), { 3, -4 }, 0)
    x:div_(2, { rounding_mode = 'trunc' })
    H.assert_values(x, { 3, -3 }, 0)
  end)
end)

describe('copies of transposed matrices', function()
  -- x:transpose(-1, -2):contiguous() for row strides that are multiples of 1024 bytes (the tiled
  -- copy: rows of dst conflicting in the cache too, or not), with partial tiles, batches and every
  -- element size, against the element-by-element definition
  it('copy every element to its transposed place', function()
    torch.manual_seed(41)
    local cases = {
      { torch.float32, { 37, 256 } }, { torch.float32, { 256, 37 } }, { torch.float32, { 256, 256 } },
      { torch.float32, { 3, 20, 512 } }, { torch.float64, { 19, 128 } }, { torch.float64, { 128, 128 } },
      { torch.int64, { 2, 9, 256 } }, { torch.float16, { 21, 512 } }, { torch.bfloat16, { 512, 33 } },
      { torch.int8, { 17, 1024 } }, { torch.uint8, { 1024, 1024 } }, { torch.bool, { 12, 1024 } },
      { torch.int32, { 31, 300 } }, -- a stride that does not conflict: the iterator's copy
    }
    for _, case in ipairs(cases) do
      local dt, shape = case[1], case[2]
      local x = torch.randint(0, 100, shape):to(dt)
      local y = x:transpose(-1, -2):contiguous()
      local n = #shape
      local want = {}
      for i = 1, n - 2 do want[i] = shape[i] end
      want[n - 1], want[n] = shape[n], shape[n - 1]
      assert.are.same(want, { table.unpack(y.shape) })
      assert.is_true(y:is_contiguous())
      local xf = x:reshape(-1, shape[n - 1], shape[n]):totable()
      local yf = y:reshape(-1, shape[n], shape[n - 1]):totable()
      for b = 1, #xf do
        for r = 1, shape[n] do
          for c = 1, shape[n - 1] do
            if yf[b][r][c] ~= xf[b][c][r] then
              error(('%s %s: element [%d][%d][%d] is %s, want %s'):format(tostring(dt), table.concat(shape, 'x'), b, r, c,
                tostring(yf[b][r][c]), tostring(xf[b][c][r])))
            end
          end
        end
      end
    end
  end)

  it('broadcast a source of one column whose strides are a transposed matrix\'s', function()
    local src = torch.arange(1, 257, 1, { dtype = torch.float32 }):view(1, 256):t() -- 256 x 1, strides (1, 256)
    local dst = torch.empty(256, 512)
    dst:copy_(src)
    for _, rc in ipairs { { 1, 1 }, { 1, 512 }, { 100, 7 }, { 256, 512 } } do
      assert.are.equal(rc[1], dst[rc[1]][rc[2]])
    end
    assert.are.equal(256 * 257 / 2 * 512, dst:sum():item())
  end)
end)

describe('strided copies with short rows', function()
  -- copies of one dtype whose innermost rows are short (the interior of a padded tensor, expanded
  -- and permuted sources) run two dimensions at a time in plain loops, the threads splitting rows
  -- anywhere in a block: every element size, against the element-by-element definition written
  -- here (totable reads contiguous tensors only: every tensor read is contiguous)
  local DTYPES = { torch.bool, torch.uint8, torch.int8, torch.float16, torch.bfloat16, torch.float32, torch.int32,
    torch.float64, torch.int64 }
  local function values(shape, dt) return torch.randint(0, 100, shape):to(dt) end
  -- every element of the contiguous tensor got against want(i, j, ...) (1-based indices)
  local function check(what, got, want)
    assert.is_true(got:is_contiguous(), what)
    local idx = {}
    local function walk(t, d)
      for i, v in ipairs(t) do
        idx[d] = i
        if type(v) == 'table' then
          walk(v, d + 1)
        else
          local w = want(table.unpack(idx, 1, d))
          if v ~= w then
            error(('%s: element [%s] is %s, want %s'):format(what, table.concat(idx, ',', 1, d), tostring(v), tostring(w)))
          end
        end
      end
    end
    walk(got:totable(), 1)
  end

  it('copy into the interior of a larger tensor, from expanded and from permuted sources', function()
    torch.manual_seed(43)
    for _, dt in ipairs(DTYPES) do
      local name = tostring(dt)
      -- the interior of a padded tensor; the border keeps its value
      local base = torch.full({ 3, 5, 9, 10 }, 7):to(dt)
      local seven = base:totable()[1][1][1][1]
      local x = values({ 3, 5, 7, 8 }, dt)
      local xv = x:totable()
      base:narrow(3, 2, 7):narrow(4, 2, 8):copy_(x)
      check(name .. ' interior', base, function(a, b, c, d)
        if c >= 2 and c <= 8 and d >= 2 and d <= 9 then return xv[a][b][c - 1][d - 1] end
        return seven
      end)
      -- expanded sources: a first dimension of 2 or 3 (made the second), rows of one element
      local e = values({ 4, 1, 6, 1 }, dt)
      local ev = e:totable()
      check(name .. ' expanded 2', e:expand(4, 3, 6, 2):contiguous(), function(a, _, c) return ev[a][1][c][1] end)
      local f = values({ 5, 7, 1 }, dt)
      local fv = f:totable()
      check(name .. ' expanded 3', f:expand(5, 7, 3):contiguous(), function(a, b) return fv[a][b][1] end)
      local g = values({ 6, 1, 1 }, dt)
      local gv = g:totable()
      check(name .. ' expanded rows', g:expand(6, 4, 20):contiguous(), function(a) return gv[a][1][1] end)
      -- a permuted source: strided reads along short rows
      local p = values({ 6, 4, 5 }, dt)
      local pv = p:totable()
      check(name .. ' permuted', p:permute(3, 1, 2):contiguous(), function(a, b, c) return pv[b][c][a] end)
      -- large enough for two threads, whose share of the rows starts inside a block
      local big = torch.zeros({ 9, 41, 200 }):to(dt)
      local zero = big:totable()[1][1][1]
      local src = values({ 9, 41, 190 }, dt)
      local sv = src:totable()
      big:narrow(3, 3, 190):copy_(src)
      check(name .. ' threads', big, function(a, b, c)
        if c >= 3 and c <= 192 then return sv[a][b][c - 2] end
        return zero
      end)
    end
  end)
end)
