-- torch.special: the special functions under PyTorch's names. polygamma and i0 are composed here
-- from the elementwise primitives (in float64, whatever the input; so they work on every device
-- and pass gradients, those of the series that compute them), xlog1py likewise; the Bessel and
-- Airy functions, the error-function family, zeta and the orthogonal polynomials are the kernels'
-- (kernels/special.h); the rest are the unary kernels' functions under torch.special's names.
-- Also torch.polygamma, torch.i0 and the methods x:polygamma(n), x:i0(), x:i0_().
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local check_tensor, in_place = U.check_tensor, U.in_place

local special = {}
torch.special = special

-- the floating dtype of a result: x's, float32 for integers
local function result_dtype(x)
  return x.dtype.is_floating_point and x.dtype or torch.get_default_dtype()
end

-- ---- the Hurwitz zeta function and polygamma ----

local MACHEP = 1.11022302462515654042e-16
local LOWEST = -1e5
-- (2j)! / B_2j for j = 1..12 (B the Bernoulli numbers): the Euler-Maclaurin coefficients
local EM = {}
do
  local bernoulli = { 1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
    -174611 / 330, 854513 / 138, -236364091 / 2730 }
  local f = 1.0
  for j = 1, 12 do
    f = f * (2 * j - 1) * (2 * j)
    EM[j] = f / bernoulli[j]
  end
end

-- zeta(s, q) = sum over k >= 0 of (q + k)^-s, for an integer s >= 2 and a float64 tensor q, by
-- Cephes' method (PyTorch's): the terms up to q + i > 9 (at least 9 of them), then the
-- Euler-Maclaurin tail; each element stops where a term no longer changes its sum. +inf at the
-- non-positive integers (the poles). Negative q take about -q terms: below LOWEST, an error.
local function hurwitz_zeta(s, q)
  local sum = q:pow(-s)
  local a, b = q, torch.zeros_like(q)
  local pole = q:le(0):logical_and(q:eq(q:floor()))
  local done = pole:clone()
  -- below 0 each element takes about -q terms: refused past LOWEST (PyTorch's loop would run on)
  if q:numel() > 0 and torch.where(pole, torch.zeros_like(q), q):min():item() < LOWEST then
    error(string.format('polygamma: x below %g (not an integer) is not supported', LOWEST), 3)
  end
  local i = 0
  while true do
    local more = done:logical_not()
    if i >= 9 then more = more:logical_and(a:le(9)) end
    if not more:any():item() then break end
    i = i + 1
    a = torch.where(more, a + 1, a)
    local term = a:pow(-s)
    b = torch.where(more, term, b)
    sum = torch.where(more, sum + term, sum)
    done = done:logical_or(more:logical_and((term / sum):abs():lt(MACHEP)))
  end
  local w = a
  sum = torch.where(done, sum, sum + b * w / (s - 1) - b * 0.5)
  local c, k = 1.0, 0
  for j = 1, 12 do
    c = c * (s + k)
    b = b / w
    local t = b * (c / EM[j])
    local live = done:logical_not()
    sum = torch.where(live, sum + t, sum)
    done = done:logical_or(live:logical_and((t / sum):abs():lt(MACHEP)))
    k = k + 1
    c = c * (s + k)
    b = b / w
    k = k + 1
  end
  return torch.where(pole, torch.full_like(sum, math.huge), sum)
end

--- the n-th derivative of digamma: digamma for n = 0, else (-1)^(n + 1) n! zeta(n + 1, x) (as
--- PyTorch computes it for n >= 2; the same formula serves n = 1)
function special.polygamma(n, x)
  if math.type(n) ~= 'integer' or n < 0 then
    error('polygamma: n must be a non-negative integer, got ' .. tostring(n), 2)
  end
  check_tensor(x, 'polygamma')
  if n == 0 then return x:digamma() end
  -- n! overflows to inf past n = 170: the loop stops there (n may be as large as 2^63 - 1, where
  -- n + 1 is a float)
  local f = 1.0
  for k = 2, n do
    f = f * k
    if f == math.huge then break end
  end
  local z = hurwitz_zeta(n < math.maxinteger and n + 1 or n + 1.0, x:to(torch.float64))
  return (z * (n % 2 == 1 and f or -f)):to(result_dtype(x))
end
torch.polygamma = special.polygamma
function Tensor.polygamma(x, n) return (special.polygamma(n, x)) end
in_place('polygamma', Tensor.polygamma)

-- ---- the modified Bessel function I0 ----

local SWITCH = 30 -- the power series below, the asymptotic expansion above

--- the modified Bessel function of the first kind of order 0: its power series sum of
--- ((x/2)^2)^k / (k!)^2 up to |x| = 30 (terms added until they stop counting), above it
--- e^|x| / sqrt(2 pi |x|) times 30 terms of its asymptotic series
function special.i0(x)
  check_tensor(x, 'i0')
  local a = x:to(torch.float64):abs()
  local z = a:clamp(nil, SWITCH) ^ 2 / 4
  local term, series, k = torch.ones_like(z), torch.ones_like(z), 0
  repeat
    for _ = 1, 8 do
      k = k + 1
      term = term * z / (k * k)
      series = series + term
    end
  until not term:gt(series * 1e-17):any():item()
  local big = a:clamp(SWITCH, nil)
  local c, p, asym = 1.0, torch.ones_like(big), torch.ones_like(big)
  for j = 1, 30 do
    c = c * (2 * j - 1) ^ 2 / (8 * j)
    p = p / big
    asym = asym + p * c
  end
  asym = big:exp() / (big * (2 * math.pi)):sqrt() * asym
  local r = torch.where(a:le(SWITCH), series, asym)
  r = torch.where(a:eq(math.huge), a, r)
  return r:to(result_dtype(x))
end
torch.i0 = special.i0
Tensor.i0 = special.i0
in_place('i0', Tensor.i0)

-- ---- the multivariate log-gamma function ----

--- special._multigammaln(op, x, p): p (p - 1) / 4 log(pi) + sum_{i=0}^{p-1} lgamma(x - i / 2),
--- with the domain x > (p - 1) / 2 checked (an error naming op); differentiable in x. Integer x
--- gives the default dtype. (PyTorch 1.13 does not check the domain; later versions do.)
function special._multigammaln(op, x, p)
  check_tensor(x, op)
  if math.type(p) ~= 'integer' or p < 1 then
    error(string.format('%s: p has to be greater than or equal to 1, got %s', op, tostring(p)), 3)
  end
  x = x:to(result_dtype(x))
  if not x:gt((p - 1) / 2):all():item() then
    error(string.format('%s: all elements must be greater than (p - 1) / 2 = %s', op, tostring((p - 1) / 2)), 3)
  end
  local steps = x:unsqueeze(-1) - torch.arange(0, p, { dtype = x.dtype, device = x.device }) / 2
  return steps:lgamma():sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
end
function special.multigammaln(x, p) return special._multigammaln('multigammaln', x, p) end
function torch.mvlgamma(x, p) return special._multigammaln('mvlgamma', x, p) end
Tensor.mvlgamma = torch.mvlgamma

-- ---- the regularized incomplete gamma functions ----

local MAXLOG, BIG, MAXITER = 7.09782712893383996843e2, 4.503599627370496e15, 2000

-- the elements where mask is true run `steps` (a function of those elements' state, returning the
-- state and a done mask) until each is done; the 1-D results of `finish` scattered into place
local function on_subset(mask, init, step, finish)
  local out = torch.zeros(mask.shape, { dtype = torch.float64, device = mask.device })
  if not mask:any():item() then return out end
  local st = init()
  local done = torch.zeros(st.a.shape, { dtype = torch.bool, device = mask.device })
  for i = 1, MAXITER do
    st = step(st, done)
    local d = st.done
    done = done:logical_or(d)
    if i % 8 == 0 and done:all():item() then break end
  end
  return out:masked_scatter(mask, finish(st))
end

-- x^a e^-x / Gamma(a), 0 where it underflows (Cephes' prefactor)
local function igam_fac(a, x)
  local ax = a * x:log() - x - a:lgamma()
  return torch.where(ax:lt(-MAXLOG), torch.zeros_like(ax), ax:exp())
end

-- P(a, x) by its power series (Cephes' igam series), on the elements of mask
local function p_series(a, x, mask)
  return on_subset(mask, function()
    local sa, sx = a:masked_select(mask), x:masked_select(mask)
    return { a = sa, x = sx, r = sa, c = torch.ones_like(sa), sum = torch.ones_like(sa) }
  end, function(st, done)
    local live = done:logical_not()
    local r = st.r + 1
    local c = torch.where(live, st.c * st.x / r, st.c)
    local sum = torch.where(live, st.sum + c, st.sum)
    return { a = st.a, x = st.x, r = r, c = c, sum = sum, done = (c / sum):le(MACHEP) }
  end, function(st) return st.sum * igam_fac(st.a, st.x) / st.a end)
end

-- Q(a, x) by its continued fraction (Cephes' igamc), for x > 1.1 and x >= a, on the elements of mask
local function q_fraction(a, x, mask)
  return on_subset(mask, function()
    local sa, sx = a:masked_select(mask), x:masked_select(mask)
    local y = 1 - sa
    local z = sx + y + 1
    local pkm1, qkm1 = sx + 1, z * sx
    return { a = sa, x = sx, y = y, z = z, c = 0, pkm2 = torch.ones_like(sa), qkm2 = sx:clone(), pkm1 = pkm1,
      qkm1 = qkm1, ans = pkm1 / qkm1 }
  end, function(st, done)
    local live = done:logical_not()
    local c = st.c + 1
    local y, z = st.y + 1, st.z + 2
    local yc = y * c
    local pk = st.pkm1 * z - st.pkm2 * yc
    local qk = st.qkm1 * z - st.qkm2 * yc
    local nz = qk:ne(0)
    local r = pk / torch.where(nz, qk, torch.ones_like(qk))
    local t = torch.where(nz, ((st.ans - r) / r):abs(), torch.ones_like(r))
    local ans = torch.where(nz:logical_and(live), r, st.ans)
    local pkm2, pkm1, qkm2, qkm1 = st.pkm1, pk, st.qkm1, qk
    local big = pk:abs():gt(BIG)
    local function scaled(v) return torch.where(big, v / BIG, v) end
    pkm2, pkm1, qkm2, qkm1 = scaled(pkm2), scaled(pkm1), scaled(qkm2), scaled(qkm1)
    local function keep(new, old) return torch.where(live, new, old) end
    return { a = st.a, x = st.x, y = y, z = z, c = c, pkm2 = keep(pkm2, st.pkm2), pkm1 = keep(pkm1, st.pkm1),
      qkm2 = keep(qkm2, st.qkm2), qkm1 = keep(qkm1, st.qkm1), ans = ans, done = t:le(MACHEP) }
  end, function(st) return st.ans * igam_fac(st.a, st.x) end)
end

-- Q(a, x) by the series of Cephes' igamc for small x (DLMF 8.7.3), on the elements of mask
local function q_series(a, x, mask)
  return on_subset(mask, function()
    local sa, sx = a:masked_select(mask), x:masked_select(mask)
    return { a = sa, x = sx, n = 0, fac = torch.ones_like(sa), sum = torch.zeros_like(sa) }
  end, function(st, done)
    local live = done:logical_not()
    local n = st.n + 1
    local fac = torch.where(live, st.fac * -st.x / n, st.fac)
    local term = fac / (st.a + n)
    local sum = torch.where(live, st.sum + term, st.sum)
    return { a = st.a, x = st.x, n = n, fac = fac, sum = sum, done = term:abs():le(sum:abs() * MACHEP) }
  end, function(st)
    local logx = st.x:log()
    return -(st.a * logx - (st.a + 1):lgamma()):expm1() - (st.a * logx - st.a:lgamma()):exp() * st.sum
  end)
end

-- P(a, x) (upper false) or Q(a, x) (upper true) of float64 tensors of one shape, by Cephes'
-- choice of method (PyTorch's, without its asymptotic series for large a near x), and the special
-- values PyTorch gives: NaN for a or x negative or NaN, a = x = 0, or both infinite
local function incomplete_gamma(a, x, upper)
  local nan = a:lt(0):logical_or(x:lt(0)):logical_or(a:ne(a)):logical_or(x:ne(x))
    :logical_or(a:eq(0):logical_and(x:eq(0))):logical_or(a:eq(math.huge):logical_and(x:eq(math.huge)))
  -- the edges: a = 0 (P = 1), x = 0 (P = 0), a infinite (P = 0), x infinite (P = 1)
  local p_one = a:eq(0):logical_or(x:eq(math.huge))
  local edge = nan:logical_or(p_one):logical_or(x:eq(0)):logical_or(a:eq(math.huge))
  local inner = edge:logical_not()
  local s_a, s_x = torch.where(inner, a, torch.ones_like(a)), torch.where(inner, x, torch.ones_like(x))
  -- Q's methods: the fraction above x = 1.1 (x >= a), its series below (x small against a)
  local cut = torch.where(s_x:le(0.5), -0.4 / s_x:log(), s_x * 1.1)
  local by_p
  if upper then
    by_p = torch.where(s_x:gt(1.1), s_x:lt(s_a), cut:lt(s_a))
  else
    by_p = s_x:gt(1):logical_and(s_x:gt(s_a)):logical_not()
  end
  by_p = by_p:logical_and(inner)
  local by_q = inner:logical_and(by_p:logical_not())
  local frac = by_q:logical_and(s_x:gt(1.1))
  local p = p_series(s_a, s_x, by_p)
  local q = q_fraction(s_a, s_x, frac) + q_series(s_a, s_x, by_q:logical_and(frac:logical_not()))
  local r = upper and torch.where(by_p, 1 - p, q) or torch.where(by_p, p, 1 - q)
  local edge_p = p_one:to(torch.float64)
  r = torch.where(edge, upper and 1 - edge_p or edge_p, r)
  return torch.where(nan, torch.full_like(r, 0 / 0), r)
end

-- the derivative of P in x: x^(a-1) e^-x / Gamma(a)
local function igamma_dx(a, x) return ((a - 1) * x:log() - x - a:lgamma()):exp() end

local IncompleteGamma = torch.autograd.Function:extend('IgammaBackward0')
function IncompleteGamma.forward(ctx, a, x, upper, dtype)
  ctx.upper, ctx.name = upper, upper and 'igammac' or 'igamma'
  ctx:save_for_backward(a, x)
  local shape = U.broadcast_shape({ a.shape, x.shape }, ctx.name, 5)
  local a64, x64 = a:to(torch.float64):expand(shape), x:to(torch.float64):expand(shape)
  return incomplete_gamma(a64:contiguous(), x64:contiguous(), upper):to(dtype)
end
function IncompleteGamma.backward(ctx, g)
  local a, x = table.unpack(ctx.saved_tensors)
  if ctx.needs_input_grad[1] then
    error(string.format("the derivative for '%s: input' is not implemented", ctx.name), 0)
  end
  local d = igamma_dx(a:to(g.dtype), x:to(g.dtype))
  local gx = g * (ctx.upper and -d or d)
  -- summed over the dims x was broadcast along
  while gx:dim() > x:dim() do gx = gx:sum(1) end
  for k = 1, x:dim() do
    if x:size(k) == 1 and gx:size(k) ~= 1 then gx = gx:sum(k, true) end
  end
  return nil, gx
end

local function igamma_op(name, upper)
  return function(a, x)
    check_tensor(a, name)
    check_tensor(x, name, 'other')
    local dtype = torch.result_type(a, x)
    if not dtype.is_floating_point then
      error(string.format('%s: not implemented for %s (expected floating point tensors)', name, dtype.name), 2)
    end
    U.broadcast_shape({ a.shape, x.shape }, name)
    return IncompleteGamma.apply(a, x, upper, dtype)
  end
end

--- the regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), elementwise
--- with broadcasting, computed in float64 by Cephes' series and continued fraction; the gradient
--- flows to x only (for a it is an error at backward, as in PyTorch)
special.gammainc = igamma_op('igamma', false)
--- the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
special.gammaincc = igamma_op('igammac', true)
torch.igamma, torch.igammac = special.gammainc, special.gammaincc
Tensor.igamma, Tensor.igammac = special.gammainc, special.gammaincc
in_place('igamma', Tensor.igamma)
in_place('igammac', Tensor.igammac)

-- ---- the kernels' special functions (kernels/special.h) ----

-- The op table registers them as torch.special_NAME and methods; they move here under PyTorch's
-- names. Those PyTorch differentiates record their gradients; the others run without recording a
-- graph (their results never require grad, as PyTorch's).
local function take(name)
  local key = 'special_' .. name
  local f = torch[key]
  torch[key], Tensor[key], Tensor[key .. '_'] = nil, nil, nil
  return f
end

local DIFFERENTIABLE = { erfcx = true, ndtr = true, ndtri = true, log_ndtr = true, i0e = true, i1 = true,
  i1e = true, entr = true }
for _, name in ipairs({ 'erfcx', 'ndtr', 'ndtri', 'log_ndtr', 'i0e', 'i1', 'i1e', 'entr', 'bessel_j0', 'bessel_j1',
  'bessel_y0', 'bessel_y1', 'modified_bessel_i0', 'modified_bessel_i1', 'modified_bessel_k0', 'modified_bessel_k1',
  'scaled_modified_bessel_k0', 'scaled_modified_bessel_k1', 'spherical_bessel_j0', 'airy_ai' }) do
  local f = take(name)
  local op = 'special.' .. name
  if DIFFERENTIABLE[name] then
    special[name] = function(x, ...)
      check_tensor(x, op)
      if select('#', ...) > 0 then error(op .. ': takes one tensor, got ' .. (select('#', ...) + 1) .. ' arguments', 2) end
      return f(x)
    end
  else
    special[name] = function(x, ...)
      check_tensor(x, op)
      if select('#', ...) > 0 then error(op .. ': takes one tensor, got ' .. (select('#', ...) + 1) .. ' arguments', 2) end
      return (torch.no_grad(f, x))
    end
  end
end

-- functions of two operands (tensors or numbers, broadcast; at least one a tensor)
local function two_operands(op, x, y, n)
  if not torch.is_tensor(x) and not torch.is_tensor(y) then
    error(string.format('%s: expected a tensor for x or %s, got %s and %s', op, n, type(x), type(y)), 3)
  end
  if not torch.is_tensor(x) and type(x) ~= 'number' then
    error(string.format('%s: x must be a tensor or a number, got %s', op, type(x)), 3)
  end
  if not torch.is_tensor(y) and type(y) ~= 'number' then
    error(string.format('%s: %s must be a tensor or a number, got %s', op, n, type(y)), 3)
  end
end

--- special.zeta(x, q): the Hurwitz zeta function sum over k >= 0 of (q + k)^-x (Cephes' method);
--- differentiable in q (-x zeta(x + 1, q)), not in x (as PyTorch)
do
  local f = take('zeta')
  function special.zeta(x, q)
    two_operands('special.zeta', x, q, 'q')
    return f(x, q)
  end
end

-- Laguerre's and Legendre's recurrences take n steps whatever x is (their values stay finite), so a
-- degree above MAX_DEGREE (hundredths of a second an element) is refused rather than left to run
-- for years, as PyTorch's loop would; the other polynomials overflow within a few hundred steps
-- or have closed forms
local MAX_DEGREE = 1 << 24
local function check_degree(op, n)
  local top = n
  if torch.is_tensor(n) then
    top = n:numel() > 0 and n:to(torch.float64):nan_to_num({ nan = -1, posinf = math.huge }):max():item() or 0
  end
  if top > MAX_DEGREE then
    error(string.format('%s: degree n = %s is too large: the recurrence takes n steps (at most %d)', op,
      math.type(top) == 'float' and string.format('%.17g', top) or tostring(top), MAX_DEGREE), 3)
  end
end

-- the orthogonal polynomials p(x, n) of degree n (a tensor or number, truncated to an integer;
-- below 0 they are 0), by their recurrences; not differentiable (as PyTorch)
for _, name in ipairs({ 'chebyshev_polynomial_t', 'chebyshev_polynomial_u', 'chebyshev_polynomial_v',
  'chebyshev_polynomial_w', 'shifted_chebyshev_polynomial_t', 'shifted_chebyshev_polynomial_u',
  'shifted_chebyshev_polynomial_v', 'shifted_chebyshev_polynomial_w', 'hermite_polynomial_h',
  'hermite_polynomial_he', 'laguerre_polynomial_l', 'legendre_polynomial_p' }) do
  local f = take(name)
  local op = 'special.' .. name
  special[name] = function(x, n)
    two_operands(op, x, n, 'n')
    if name == 'laguerre_polynomial_l' or name == 'legendre_polynomial_p' then check_degree(op, n) end
    return (torch.no_grad(f, x, n))
  end
end

--- special.xlog1py(x, y): x * log1p(y), 0 where x is 0 (unless y is NaN); differentiable in both
function special.xlog1py(x, y)
  two_operands('special.xlog1py', x, y, 'y')
  -- a number operand becomes a 0-dim tensor of the other's floating dtype
  local t = torch.is_tensor(x) and x or y
  local dt = t.dtype.is_floating_point and t.dtype or torch.get_default_dtype()
  if not torch.is_tensor(x) then x = torch.full({}, x, { dtype = dt, device = t.device }) end
  if not torch.is_tensor(y) then y = torch.full({}, y, { dtype = dt, device = t.device }) end
  local r = x * torch.log1p(y)
  return torch.where(x:eq(0):logical_and(y:eq(y)), torch.zeros_like(r), r)
end

-- ---- PyTorch's torch.special names of the kernels' functions ----

special.digamma, special.psi = torch.digamma, torch.digamma
special.gammaln = torch.lgamma
special.erf, special.erfc, special.erfinv = torch.erf, torch.erfc, torch.erfinv
special.expm1, special.exp2, special.log1p = torch.expm1, torch.exp2, torch.log1p
special.expit, special.logit = torch.sigmoid, torch.logit
special.xlogy, special.sinc, special.round = torch.xlogy, torch.sinc, torch.round
special.logsumexp, special.softmax, special.log_softmax = torch.logsumexp, torch.softmax, torch.log_softmax

return special
