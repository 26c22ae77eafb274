-- torch.special's Bessel and Airy functions, the error-function family (erfcx, ndtr, ndtri,
-- log_ndtr), i0e/i1/i1e, entr, zeta, xlog1py and the orthogonal polynomials: values against
-- PyTorch 1.13 and mpmath (spec/data/special_reference.lua, written by
-- tools/gen_special_reference.py), against series and recurrences computed here in plain Lua,
-- float32 as the float64 result rounded, other dtypes, non-contiguous inputs, gradients, bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local S = torch.special
local REF = dofile('spec/data/special_reference.lua')
local gradcheck = torch.autograd.gradcheck
local f64 = torch.float64

local function num(v)
  if v == 'nan' then return 0 / 0 elseif v == 'inf' then return math.huge elseif v == '-inf' then return -math.huge end
  return v
end
local function nums(t)
  local o = {}
  for i, v in ipairs(t) do o[i] = num(v) end
  return o
end

-- |got - want| <= rtol |want| + atol, NaN matching NaN and infinities themselves
local function check(name, got, want, rtol, atol, args)
  for i = 1, #want do
    local g, w = got[i], want[i]
    local ok
    if w ~= w then ok = g ~= g
    elseif w == math.huge or w == -math.huge then ok = g == w
    else ok = math.abs(g - w) <= rtol * math.abs(w) + atol end
    if not ok then
      error(string.format('%s at %s: got %.17g, expected %.17g', name, args(i), g, w), 2)
    end
  end
end

-- PyTorch 1.13 evaluates the Bessel and Airy functions' Cephes denominators without their leading
-- 1 (polevl where Cephes has p1evl); lutorch has Cephes' (mpmath agrees, below): those are
-- compared with PyTorch at its accuracy. Its ndtr is (1 + erf(x / sqrt 2)) / 2, 4e-11 off at -5.
local PT_TOL = {
  bessel_j0 = { 1e-6, 1e-8 }, bessel_j1 = { 1e-6, 1e-8 }, bessel_y0 = { 1e-6, 1e-8 }, bessel_y1 = { 1e-6, 1e-8 },
  airy_ai = { 1e-5, 1e-8 }, ndtr = { 1e-9, 0 },
}

describe('torch.special functions of one variable', function()
  it('match PyTorch 1.13 in float64, edge cases included', function()
    for name, c in pairs(REF.unary) do
      local xs = nums(c.x)
      local tol = PT_TOL[name] or { 1e-12, 1e-300 }
      local y = S[name](torch.tensor(xs, { dtype = f64 }))
      assert.equal(f64, y.dtype)
      check(name, y:totable(), nums(c.y), tol[1], tol[2], function(i) return tostring(xs[i]) end)
    end
  end)

  it('match mpmath at 30 digits', function()
    for name, c in pairs(REF.mpmath) do
      local x = torch.tensor(c.x, { dtype = f64 })
      local y = c.n and S[name](x, torch.tensor(c.n, { dtype = f64 })) or S[name](x)
      -- relative, except near the Bessel functions' zeros (2.404, 3.8317), where the absolute error counts
      check('mpmath ' .. name, y:totable(), c.y, 1e-13, 1e-16, function(i) return tostring(c.x[i]) end)
    end
  end)

  it('agree with their power series, summed here', function()
    local function series(x, sign)
      local z, term, sum = x * x / 4, 1, 1
      for k = 1, 60 do
        term = term * sign * z / (k * k)
        sum = sum + term
      end
      return sum
    end
    local xs = { -3.5, -1, 0.25, 2, 4.5 }
    local x = torch.tensor(xs, { dtype = f64 })
    local j0, i0, i0e, i1 = S.bessel_j0(x):totable(), S.modified_bessel_i0(x):totable(), S.i0e(x):totable(), S.i1(x):totable()
    for k, v in ipairs(xs) do
      H.close(j0[k], series(v, -1), 1e-13, 'J0 ' .. v)
      H.close(i0[k], series(v, 1), 1e-13, 'I0 ' .. v)
      H.close(i0e[k], series(v, 1) * math.exp(-math.abs(v)), 1e-13, 'i0e ' .. v)
      -- I1(x) = sum (x/2)^(2k+1) / (k! (k+1)!)
      local t, s = v / 2, v / 2
      for m = 1, 60 do
        t = t * (v * v / 4) / (m * (m + 1))
        s = s + t
      end
      H.close(i1[k], s, 1e-13, 'I1 ' .. v)
    end
    -- sin(x) / x, Ai(0) = 3^(-2/3) / Gamma(2/3), zeta(2, 1) = pi^2 / 6, zeta(4, 2) = pi^4 / 90 - 1
    H.assert_values(S.spherical_bessel_j0(torch.tensor({ 0.1, 3 }, { dtype = f64 })), { math.sin(0.1) / 0.1, math.sin(3) / 3 }, 1e-15)
    H.close(S.airy_ai(torch.zeros(1, { dtype = f64 })):item(), 0.355028053887817239260, 1e-15)
    H.assert_values(S.zeta(torch.tensor({ 2, 4 }, { dtype = f64 }), torch.tensor({ 1, 2 }, { dtype = f64 })),
      { math.pi ^ 2 / 6, math.pi ^ 4 / 90 - 1 }, 1e-15)
    -- ndtri inverts ndtr; log_ndtr is its log; exp(x^2) erfc(x) = erfcx(x) gives ndtr(-x sqrt 2) = erfcx(x) exp(-x^2) / 2
    local p = torch.tensor({ 1e-10, 0.02, 0.3, 0.5, 0.77, 0.999 }, { dtype = f64 })
    H.assert_values(S.ndtr(S.ndtri(p)), p:totable(), 1e-14)
    local v = torch.tensor({ -4, -0.5, 0.5, 3 }, { dtype = f64 })
    H.assert_values(S.log_ndtr(v), S.ndtr(v):log():totable(), 1e-14)
    H.assert_values(S.ndtr(v * -math.sqrt(2)), (S.erfcx(v) * (-v * v):exp() / 2):totable(), 1e-14)
  end)

  it('round the float64 result for float32, and compute other dtypes in it too', function()
    for name, c in pairs(REF.unary) do
      local x32 = torch.tensor(nums(c.x), { dtype = torch.float32 })
      local y32 = S[name](x32)
      assert.equal(torch.float32, y32.dtype)
      local want = S[name](x32:to(f64)):to(torch.float32)
      check(name .. ' float32', y32:totable(), want:totable(), 0, 0, function(i) return tostring(c.x[i]) end)
      local x16 = torch.tensor({ 0.25, 0.5, 0.75 }, { dtype = torch.float16 })
      local y16 = S[name](x16)
      assert.equal(torch.float16, y16.dtype)
      H.assert_values(y16:to(f64), S[name](x16:to(f64)):totable(), 2e-3, name .. ' float16')
      assert.equal(torch.bfloat16, S[name](x16:to(torch.bfloat16)).dtype)
    end
  end)

  it('take integer tensors as the default float dtype', function()
    for _, name in ipairs({ 'erfcx', 'i1', 'bessel_y0', 'modified_bessel_k1', 'airy_ai', 'entr', 'ndtri' }) do
      local y = S[name](torch.tensor({ 0, 1, 2 }))
      assert.equal(torch.float32, y.dtype)
      H.assert_values(y, S[name](torch.tensor({ 0, 1, 2 }, { dtype = f64 })):to(torch.float32):totable(), 0, name)
    end
    local was = torch.get_default_dtype()
    torch.set_default_dtype(f64)
    assert.equal(f64, S.i1e(torch.tensor({ 1, 2 }, { dtype = torch.int16 })).dtype)
    torch.set_default_dtype(was)
  end)

  it('read non-contiguous inputs', function()
    local base = torch.linspace(-6, 9, 48, { dtype = f64 }):reshape(6, 8)
    for name in pairs(REF.unary) do
      local x = base:t()
      assert.is_false(x:is_contiguous())
      H.assert_values(S[name](x), S[name](x:contiguous()):totable(), 0, name)
      local every_other = base:reshape(-1):as_strided({ 12 }, { 4 }, 1)
      H.assert_values(S[name](every_other), S[name](every_other:contiguous()):totable(), 0, name)
    end
  end)

  it('have PyTorch\'s gradients where PyTorch has them', function()
    local x = torch.tensor({ -2.5, -0.7, 0.3, 1.2, 4 }, { dtype = f64, requires_grad = true })
    for _, name in ipairs({ 'erfcx', 'ndtr', 'log_ndtr', 'i0e', 'i1', 'i1e' }) do
      assert.is_true(gradcheck(S[name], { x }), name)
    end
    local p = torch.tensor({ 0.01, 0.3, 0.5, 0.9 }, { dtype = f64, requires_grad = true })
    assert.is_true(gradcheck(S.ndtri, { p }))
    assert.is_true(gradcheck(S.entr, { p }))
    -- at 0, i1 and i1e have slope 1/2 (PyTorch's special case); i0e's is 0 there (sgn(0) = 0)
    local z = torch.zeros(1, { dtype = f64, requires_grad = true })
    S.i1(z):sum():backward()
    H.assert_values(z.grad, { 0.5 })
    z.grad = nil
    S.i1e(z):sum():backward()
    H.assert_values(z.grad, { 0.5 })
    z.grad = nil
    S.i0e(z):sum():backward()
    H.assert_values(z.grad, { 0 })
    -- through a non-contiguous input
    local m = torch.tensor({ { 0.1, 0.2 }, { 0.3, 0.4 } }, { dtype = f64, requires_grad = true })
    assert.is_true(gradcheck(function(a) return S.erfcx(a:t()) end, { m }))
  end)

  it('are not differentiable where PyTorch is not: no graph is recorded', function()
    local x = torch.tensor({ 0.5, 1.5 }, { dtype = f64, requires_grad = true })
    for _, name in ipairs({ 'bessel_j0', 'bessel_j1', 'bessel_y0', 'bessel_y1', 'modified_bessel_i0',
      'modified_bessel_i1', 'modified_bessel_k0', 'modified_bessel_k1', 'scaled_modified_bessel_k0',
      'scaled_modified_bessel_k1', 'spherical_bessel_j0', 'airy_ai' }) do
      local y = S[name](x)
      assert.is_false(y.requires_grad, name)
      assert.is_nil(y.grad_fn, name)
      assert.has_error(function() y:sum():backward() end)
    end
  end)

  it('refuse bad arguments', function()
    H.raises(function() S.erfcx(1.5) end, 'special.erfcx: the input must be a tensor, got number')
    H.raises(function() S.bessel_j0('x') end, 'special.bessel_j0: the input must be a tensor')
    H.raises(function() S.i1e(torch.ones(2), 2) end, 'special.i1e: takes one tensor, got 2 arguments')
    H.raises(function() S.airy_ai(torch.ones(2), torch.ones(2)) end, 'special.airy_ai: takes one tensor')
    H.assert_values(S.ndtri(torch.tensor({ true, false })), { math.huge, -math.huge }) -- bool as PyTorch: a float
    assert.is_nil(torch.special_erfcx)      -- the kernels' names stay inside torch.special
    assert.is_nil(torch.ones(1).special_i1)
  end)
end)

describe('torch.special functions of two operands', function()
  it('match PyTorch 1.13 in float64 (zeta, xlog1py, the polynomials)', function()
    for name, c in pairs(REF.binary) do
      local xs, ns = nums(c.x), nums(c.n)
      local y = S[name](torch.tensor(xs, { dtype = f64 }), torch.tensor(ns, { dtype = f64 }))
      -- rtol for the large values, atol for those that cancel to about 0
      check(name, y:totable(), nums(c.y), 1e-12, 1e-12, function(i) return xs[i] .. ', ' .. ns[i] end)
    end
  end)

  it('agree with the three-term recurrences, computed here', function()
    local function rec(n, p0, p1, step)
      if n < 0 then return 0 end
      if n == 0 then return p0 end
      local p, q = p0, p1
      for k = 1, n - 1 do p, q = q, step(k, p, q) end
      return q
    end
    local function cheb(first) -- T, U, V, W: P_{k+1} = 2x P_k - P_{k-1}
      return function(x, n) return rec(n, 1, first(x), function(_, p, q) return 2 * x * q - p end) end
    end
    local T, U = cheb(function(x) return x end), cheb(function(x) return 2 * x end)
    local V, W = cheb(function(x) return 2 * x - 1 end), cheb(function(x) return 2 * x + 1 end)
    local plain = {
      chebyshev_polynomial_t = T, chebyshev_polynomial_u = U, chebyshev_polynomial_v = V, chebyshev_polynomial_w = W,
      shifted_chebyshev_polynomial_t = function(x, n) return T(2 * x - 1, n) end,
      shifted_chebyshev_polynomial_u = function(x, n) return U(2 * x - 1, n) end,
      shifted_chebyshev_polynomial_v = function(x, n) return V(2 * x - 1, n) end,
      shifted_chebyshev_polynomial_w = function(x, n) return W(2 * x - 1, n) end,
      hermite_polynomial_h = function(x, n) return rec(n, 1, 2 * x, function(k, p, q) return 2 * x * q - 2 * k * p end) end,
      hermite_polynomial_he = function(x, n) return rec(n, 1, x, function(k, p, q) return x * q - k * p end) end,
      laguerre_polynomial_l = function(x, n)
        return rec(n, 1, 1 - x, function(k, p, q) return ((2 * k + 1 - x) * q - k * p) / (k + 1) end)
      end,
      legendre_polynomial_p = function(x, n)
        return rec(n, 1, x, function(k, p, q) return ((2 * k + 1) * x * q - k * p) / (k + 1) end)
      end,
    }
    local xs, ns = {}, {}
    for _, x in ipairs({ -1.3, -0.8, -0.45, 0.1, 0.33, 0.6, 0.95, 2.2 }) do
      for n = -2, 14 do xs[#xs + 1], ns[#ns + 1] = x, n end
    end
    local x, n = torch.tensor(xs, { dtype = f64 }), torch.tensor(ns, { dtype = f64 })
    for name, f in pairs(plain) do
      local want = {}
      for i = 1, #xs do want[i] = f(xs[i], ns[i]) end
      check(name, S[name](x, n):totable(), want, 1e-11, 1e-11, function(i) return xs[i] .. ', ' .. ns[i] end)
    end
  end)

  it('broadcast, take numbers for either operand and truncate n', function()
    local x = torch.tensor({ 0.3, 2 }, { dtype = f64 })
    local y = S.chebyshev_polynomial_t(x, torch.tensor({ { 1 }, { 5 } }, { dtype = f64 }))
    assert.same({ 2, 2 }, { y.shape[1], y.shape[2] })
    H.assert_values(y, { { 0.3, 2 }, { 16 * 0.3 ^ 5 - 20 * 0.3 ^ 3 + 5 * 0.3, 362 } }, 1e-14)
    H.assert_values(S.chebyshev_polynomial_t(0.5, torch.tensor({ 3.0, 3.9 })), { -1, -1 })
    H.assert_values(S.hermite_polynomial_h(torch.tensor({ 1, 2 }), 3), { -4, 40 })
    assert.equal(torch.float32, S.hermite_polynomial_h(torch.tensor({ 1, 2 }), 3).dtype)
    H.assert_values(S.legendre_polynomial_p(x, -1), { 0, 0 })
    -- zeta(x, q) with a number x or q
    H.assert_values(S.zeta(2, torch.tensor({ 1.0, 2.0 }, { dtype = f64 })), { math.pi ^ 2 / 6, math.pi ^ 2 / 6 - 1 }, 1e-15)
    H.assert_values(S.zeta(torch.tensor({ 2, 4 }), 1), { math.pi ^ 2 / 6, math.pi ^ 4 / 90 }, 1e-6)
    assert.equal(torch.float32, S.zeta(torch.tensor({ 2, 4 }), 1).dtype)
    -- xlog1py(x, y) with numbers, 0 where x is 0 unless y is NaN
    H.assert_values(S.xlog1py(2, torch.tensor({ 1.0 })), { 2 * math.log(2) }, 1e-6)
    H.assert_values(S.xlog1py(torch.tensor({ 0.0, 0.0, 1.0 }), torch.tensor({ -1.0, 0 / 0, 0.5 })),
      { 0, 0 / 0, math.log(1.5) }, 1e-6)
    H.assert_values(S.xlog1py(torch.tensor({ 1, 2 }), 3), { math.log(4), 2 * math.log(4) }, 1e-6)
  end)

  it('round float64 to float32 and read non-contiguous operands', function()
    local x = torch.linspace(-1.5, 1.5, 24, { dtype = f64 }):reshape(4, 6)
    local n = torch.arange(0, 6, { dtype = f64 }):reshape(6, 1):expand(6, 4)
    for name in pairs(REF.binary) do
      local a, b = x:t(), n
      if name == 'zeta' then a, b = (x:abs() + 1):t(), n + 0.5 end
      assert.is_false(a:is_contiguous())
      local y = S[name](a, b)
      H.assert_values(y, S[name](a:contiguous(), b:contiguous()):totable(), 0, name)
      local y32 = S[name](a:to(torch.float32), b:to(torch.float32))
      assert.equal(torch.float32, y32.dtype)
      -- (xlog1py is composed of float32 ops for float32, as PyTorch's)
      H.assert_values(y32, S[name](a:to(torch.float32):to(f64), b:to(torch.float32):to(f64)):to(torch.float32):totable(),
        name == 'xlog1py' and 1e-6 or 0, name)
    end
  end)

  it('differentiate zeta in q and xlog1py in both, as PyTorch; the polynomials not at all', function()
    local q = torch.tensor({ 0.7, 1.5, 4 }, { dtype = f64, requires_grad = true })
    assert.is_true(gradcheck(function(t) return S.zeta(3, t) end, { q }))
    local s = torch.tensor({ 2.5, 3, 5 }, { dtype = f64 })
    assert.is_true(gradcheck(function(t) return S.zeta(s, t) end, { q }))
    local xs = torch.tensor({ 2.5, 3 }, { dtype = f64, requires_grad = true })
    H.raises(function() S.zeta(xs, 2.0):sum():backward() end, "the derivative for 'zeta' is not implemented")
    local a = torch.tensor({ -1.5, 0.5, 2 }, { dtype = f64, requires_grad = true })
    local b = torch.tensor({ 0.2, 1, 3 }, { dtype = f64, requires_grad = true })
    assert.is_true(gradcheck(S.xlog1py, { a, b }))
    local p = S.legendre_polynomial_p(a, 3)
    assert.is_false(p.requires_grad)
  end)

  it('refuse bad operands', function()
    H.raises(function() S.zeta(2, 3) end, 'special.zeta: expected a tensor for x or q, got number and number')
    H.raises(function() S.zeta(torch.ones(2), 'q') end, 'special.zeta: q must be a tensor or a number, got string')
    H.raises(function() S.chebyshev_polynomial_t({}, torch.ones(2)) end, 'special.chebyshev_polynomial_t: x must be a tensor or a number')
    H.raises(function() S.hermite_polynomial_h(torch.ones(2)) end, 'special.hermite_polynomial_h: n must be a tensor or a number, got nil')
    H.raises(function() S.laguerre_polynomial_l(torch.ones(2), torch.ones(3)) end, 'special_laguerre_polynomial_l')
    H.raises(function() S.xlog1py(1, 2) end, 'special.xlog1py: expected a tensor')
  end)
end)
