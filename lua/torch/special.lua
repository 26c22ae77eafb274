-- torch.special: the special functions under PyTorch's names. polygamma is the kernels' zeta
-- scaled; i0 is composed here from the elementwise primitives (in float64, whatever the input; so
-- it works on every device and passes gradients, those of the series), xlog1py likewise; the
-- Bessel and Airy functions, the error-function family, zeta, the incomplete gamma functions and
-- the orthogonal polynomials are the kernels' (kernels/special.h); the rest are the unary kernels'
-- functions under torch.special's names.
-- Also torch.polygamma, torch.i0 and the methods x:polygamma(n), x:i0(), x:i0_().
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local as_int = require('torch.composite').as_int
local check_tensor, in_place = U.check_tensor, U.in_place

local special = {}
torch.special = special

-- the floating dtype of a result: x's, float32 for integers
local function result_dtype(x)
  return x.dtype.is_floating_point and x.dtype or torch.get_default_dtype()
end

-- ---- polygamma ----

-- the kernels' Hurwitz zeta function (kernels/special.h), differentiable in q to any order
local zeta = torch.special_zeta
-- below it zeta sums about -x terms an element: refused (PyTorch's loop would run on)
local LOWEST = -1e5

--- the n-th derivative of digamma: digamma for n = 0, else (-1)^(n + 1) n! zeta(n + 1, x) (as
--- PyTorch computes it for n >= 2; the same formula serves n = 1), whose derivative in x is
--- polygamma(n + 1, x): differentiable any number of times
function special.polygamma(n, x)
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 0 then
    error('polygamma: n must be a non-negative integer, got ' .. tostring(n), 2)
  end
  check_tensor(x, 'polygamma')
  if n == 0 then return x:digamma() end
  if x:lt(LOWEST):logical_and(x:ne(x:floor())):any():item() then
    error(string.format('polygamma: x below %g (not an integer) is not supported', LOWEST), 2)
  end
  -- n! overflows to inf past n = 170: the loop stops there (n may be as large as 2^63 - 1, where
  -- n + 1 is a float)
  local f = 1.0
  for k = 2, n do
    f = f * k
    if f == math.huge then break end
  end
  return zeta(n < math.maxinteger and n + 1 or n + 1.0, x:to(result_dtype(x))) * (n % 2 == 1 and f or -f)
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
  p = as_int(p)
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

-- the op table's igamma and igammac (kernels/special.h: Cephes' series and continued fraction, in
-- double), behind PyTorch's checks: tensor operands that broadcast, not both integers
local function igamma_op(name)
  local f = torch[name]
  return function(a, x)
    check_tensor(a, name)
    check_tensor(x, name, 'other')
    local dtype = torch.result_type(a, x)
    if not dtype.is_floating_point then
      error(string.format('%s: not implemented for %s (expected floating point tensors)', name, dtype.name), 2)
    end
    U.broadcast_shape({ a.shape, x.shape }, name)
    return f(a, x)
  end
end

--- the regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), elementwise
--- with broadcasting; the gradient flows to x only (x^(a-1) e^-x / Gamma(a), differentiable again;
--- for a it is an error at backward, as in PyTorch)
special.gammainc = igamma_op('igamma')
--- the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
special.gammaincc = igamma_op('igammac')
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
