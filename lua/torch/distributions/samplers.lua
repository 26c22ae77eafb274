-- The random draws of the distributions that are not one primitive of lutorch's generator,
-- composed from torch.rand and torch.randn (so they run on every device and torch.manual_seed
-- repeats them). Each works elementwise over whole tensors, in float64, and returns the
-- parameter's dtype:
--   exponential, cauchy: the in-place samplers exponential_ and cauchy_ (one float64 uniform per
--     element, in order): the same values as PyTorch for the same seed.
--   standard_gamma: Marsaglia and Tsang's method, as PyTorch's sampler (boosted below 1), with
--     the gradient of implicit reparameterisation, -(dF/dalpha)/f, by PyTorch's approximations
--     (_standard_gamma_grad): a Taylor series for small x, Rice's saddle point expansion for
--     alpha > 8, a bivariate rational fit otherwise.
--   poisson: the product of uniforms below rate 10, Hormann's transformed rejection (PTRS) above,
--     as PyTorch's sampler.
--   binomial: inversion by geometric jumps below n min(p, 1 - p) = 10, BTRS above, as PyTorch's.
-- The rejection methods draw for every element in each round and keep the first accepted
-- value, so their values differ from PyTorch's (which draws element after element).
local torch = require 'torch'
local U = require 'torch.distributions.utils'

local S = {}
local F64 = torch.float64

local function uniform(shape, device, generator)
  return torch.rand(shape, { dtype = F64, device = device, generator = generator })
end
local function normal(shape, device) return torch.randn(shape, { dtype = F64, device = device }) end
local function any(mask) return mask:numel() > 0 and mask:any():item() end

--- S.exponential(shape, dtype, device): Exponential(1) draws, -log(1 - u) for a float64 uniform u
function S.exponential(shape, dtype, device)
  return torch.empty(shape, { dtype = dtype, device = device }):exponential_()
end

--- S.cauchy(shape, dtype, device): standard Cauchy draws, tan(pi (u - 1/2))
function S.cauchy(shape, dtype, device)
  return torch.empty(shape, { dtype = dtype, device = device }):cauchy_()
end

-- ---- gamma ----

-- standard gamma draws for alpha (float64, no gradient)
local function sample_gamma(alpha)
  local shape, device = alpha.shape, alpha.device
  local small = alpha:lt(1)
  -- boost alpha below 1: Gamma(a) = Gamma(a + 1) U^(1/a)
  local scale = torch.ones_like(alpha)
  if any(small) then
    scale = torch.where(small, (1 - uniform(shape, device)):pow(1 / alpha), scale)
  end
  local a = torch.where(small, alpha + 1, alpha)
  local d = a - 1 / 3
  local c = (d * 9):rsqrt()
  local result = torch.zeros_like(alpha)
  local pending = alpha:gt(0)
  while any(pending) do
    local x = normal(shape, device)
    local y = c * x + 1
    local v = y * y * y
    local u = 1 - uniform(shape, device)
    local xx = x * x
    local ok = u:lt(1 - 0.0331 * xx * xx):logical_or(u:log():lt(xx * 0.5 + d * (1 - v + v:log())))
    ok = y:gt(0):logical_and(ok)
    result = torch.where(pending:logical_and(ok), d * v, result)
    pending = pending:logical_and(ok:logical_not())
  end
  -- NaN parameters give NaN
  return torch.where(alpha:isnan(), alpha, result * scale)
end

local COEF_UV = {
  { 0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084 },
  { 0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623 },
  { 0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
    -1.5247877e-07 },
}

--- S.standard_gamma_grad(alpha, x): dx/dalpha for x ~ Gamma(alpha, 1) under implicit
--- reparameterisation, as PyTorch's _standard_gamma_grad computes it (float64 inside)
function S.standard_gamma_grad(alpha, x)
  local dtype = x.dtype
  local a, v = alpha:double(), x:double()
  -- small x: a Taylor series of the incomplete gamma function
  local numer = torch.ones_like(v)
  local denom = a
  local series1 = 1 / denom
  local series2 = 1 / (denom * denom)
  for i = 1, 5 do
    numer = numer * (-v / i)
    denom = denom + 1
    series1 = series1 + numer / denom
    series2 = series2 + numer / (denom * denom)
  end
  local pow_x_alpha = v:pow(a)
  local gamma_pdf = v:pow(a - 1) * (-v):exp()
  local gamma_cdf = pow_x_alpha * series1
  local gamma_cdf_alpha = (v:log() - torch.digamma(a)) * gamma_cdf - pow_x_alpha * series2
  local r_small = -gamma_cdf_alpha / gamma_pdf
  r_small = torch.where(r_small:isnan(), 0, r_small)
  -- large alpha: Rice's saddle point expansion
  local numer_1 = 1 + 24 * a * (1 + 12 * a)
  local numer_2 = 1440 * (a * a) + 6 * v * (53 - 120 * v) - 65 * v * v / a + a * (107 + 3600 * v)
  local r_near = numer_1 * numer_2 / (1244160 * (a * a) * (a * a))
  local den = (8 * a):sqrt()
  local term2 = den / (a - v)
  local term3 = (v - a - a * (v / a):log()):pow(-1.5)
  local term23 = torch.where(v:lt(a), term2 - term3, term2 + term3)
  local term1 = (v / a):log() * term23 - (2 / a):sqrt() * (a + v) / ((a - v) * (a - v))
  local stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
  local r_far = -stirling * (v * term1) / den
  local r_large = torch.where(v:ge(0.9 * a):logical_and(v:le(1.1 * a)), r_near, r_far)
  -- otherwise: a bivariate rational approximation
  local u, w = (v / a):log(), a:log()
  local cv = {}
  for i = 1, 8 do cv[i] = COEF_UV[1][i] + u * (COEF_UV[2][i] + u * COEF_UV[3][i]) end
  local p = cv[1] + w * (cv[2] + w * (cv[3] + w * cv[4]))
  local q = cv[5] + w * (cv[6] + w * (cv[7] + w * cv[8]))
  local r_mid = (p / q):exp()
  -- 0.8f and 8.0f are float constants in PyTorch's kernel
  local result = torch.where(v:lt(0.800000011920929), r_small, torch.where(a:gt(8), r_large, r_mid))
  return result:to(dtype)
end

local StandardGamma = torch.autograd.Function:extend('StandardGammaBackward0')

StandardGamma.once_differentiable = true -- its backward is not made of recorded ops
function StandardGamma.forward(ctx, alpha)
  local x = sample_gamma(alpha:double()):to(alpha.dtype):clamp(U.finfo(alpha.dtype).tiny)
  ctx:save_for_backward(alpha, x)
  return x
end
function StandardGamma.backward(ctx, g)
  local alpha, x = ctx.saved_tensors[1], ctx.saved_tensors[2]
  return g * S.standard_gamma_grad(alpha, x)
end

--- S.standard_gamma(alpha): Gamma(alpha, 1) draws of alpha's shape, dtype and device, at least
--- the dtype's smallest normal number; differentiable in alpha (implicit reparameterisation)
function S.standard_gamma(alpha) return StandardGamma.apply(alpha) end

-- ---- Poisson ----

--- S.poisson(rate, generator): Poisson draws of rate's shape, dtype and device (no gradient;
--- generator nil: the default one); torch.poisson
function S.poisson(rate, generator)
  local lam = rate:detach():double()
  local shape, device = lam.shape, lam.device
  local out = torch.zeros_like(lam)
  -- below 10: count the uniforms whose running product stays above exp(-rate)
  local small = lam:gt(0):logical_and(lam:lt(10))
  if any(small) then
    local enlam = (-lam):exp()
    local prod = torch.ones_like(lam)
    local count = torch.zeros_like(lam)
    local active = small
    while any(active) do
      prod = prod * uniform(shape, device, generator)
      active = active:logical_and(prod:gt(enlam))
      count = count + active:double()
    end
    out = torch.where(small, count, out)
  end
  -- from 10: transformed rejection (Hormann 1993)
  local large = lam:ge(10)
  if any(large) then
    local l = torch.where(large, lam, 10)
    local slam, loglam = l:sqrt(), l:log()
    local b = 0.931 + 2.53 * slam
    local a = -0.059 + 0.02483 * b
    local log_invalpha = (1.1239 + 1.1328 / (b - 3.4)):log()
    local vr = 0.9277 - 3.6224 / (b - 2)
    local result = torch.zeros_like(lam)
    local pending = large
    while any(pending) do
      local u = uniform(shape, device, generator) - 0.5
      local v = uniform(shape, device, generator)
      local us = 0.5 - u:abs()
      local k = ((2 * a / us + b) * u + l + 0.43):floor()
      local quick = us:ge(0.07):logical_and(v:le(vr))
      local reject = k:lt(0):logical_or(us:lt(0.013):logical_and(v:gt(us)))
      local ratio = v:log() + log_invalpha - (a / (us * us) + b):log()
      local accept = ratio:le(-l + k * loglam - torch.lgamma(k + 1))
      local ok = quick:logical_or(reject:logical_not():logical_and(accept))
      result = torch.where(pending:logical_and(ok), k, result)
      pending = pending:logical_and(ok:logical_not())
    end
    out = torch.where(large, result, out)
  end
  out = torch.where(lam:isnan(), lam, out)
  return out:to(rate.dtype)
end

-- ---- binomial ----

local TAIL = { 0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
  0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287 }

-- log(k!) - (k + 1/2) log(k + 1) + (k + 1) - log(2 pi)/2: a table to 9, Stirling's series above
local function stirling_tail(k)
  local kp1sq = (k + 1) * (k + 1)
  local series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  local tab = torch.tensor(TAIL, { dtype = F64, device = k.device })
  local idx = k:clamp(0, 9):long():reshape(-1) + 1
  local small = tab:index_select(1, idx):view(k.shape)
  return torch.where(k:le(9), small, series)
end

-- inversion: the number of geometric jumps (of success probability p) that fit in n trials
local function binomial_inversion(n, p, mask, generator)
  local shape, device = n.shape, n.device
  local logq = torch.where(mask, (-p):log1p(), -1)
  local sum = torch.zeros_like(n)
  local num = torch.zeros_like(n)
  local active = mask
  while any(active) do
    local geom = (uniform(shape, device, generator):log() / logq):ceil()
    sum = sum + torch.where(active, geom, 0)
    active = active:logical_and(sum:le(n))
    num = num + active:double()
  end
  return num
end

-- BTRS (Hormann 1993, as TensorFlow and PyTorch write it), for n p >= 10 and p <= 1/2
local function btrs(n, p, mask, generator)
  local shape, device = n.shape, n.device
  n = torch.where(mask, n, 20)
  p = torch.where(mask, p, 0.5)
  local stddev = (n * p * (1 - p)):sqrt()
  local b = 1.15 + 2.53 * stddev
  local a = -0.0873 + 0.0248 * b + 0.01 * p
  local c = n * p + 0.5
  local v_r = 0.92 - 4.2 / b
  local r = p / (1 - p)
  local alpha = (2.83 + 5.1 / b) * stddev
  local m = ((n + 1) * p):floor()
  local fixed = (m + 0.5) * ((m + 1) / (r * (n - m + 1))):log() + stirling_tail(m) + stirling_tail(n - m)
  local result = torch.zeros_like(n)
  local pending = mask
  while any(pending) do
    local u = uniform(shape, device, generator) - 0.5
    local v = uniform(shape, device, generator)
    local us = 0.5 - u:abs()
    local k = ((2 * a / us + b) * u + c):floor()
    local valid = k:ge(0):logical_and(k:le(n))
    local quick = us:ge(0.07):logical_and(v:le(v_r))
    local kk = k:clamp(0):minimum(n)
    local lv = (v * alpha / (a / (us * us) + b)):log()
    local upper = fixed + (n + 1) * ((n - m + 1) / (n - kk + 1)):log() + (kk + 0.5) * (r * (n - kk + 1) / (kk + 1)):log()
      - stirling_tail(kk) - stirling_tail(n - kk)
    local ok = valid:logical_and(quick:logical_or(lv:le(upper)))
    result = torch.where(pending:logical_and(ok), k, result)
    pending = pending:logical_and(ok:logical_not())
  end
  return result
end

--- S.binomial(count, prob, generator): Binomial(count, prob) draws of the broadcast shape, in prob's
--- dtype (no gradient; generator nil: the default one)
function S.binomial(count, prob, generator)
  local n, p = count:detach():double(), prob:detach():double()
  n, p = table.unpack(torch.broadcast_tensors(n, p))
  n, p = n:contiguous(), p:contiguous()
  local flip = p:gt(0.5)
  local q = torch.where(flip, 1 - p, p)
  local live = n:gt(0):logical_and(p:gt(0)):logical_and(p:lt(1))
  local use_btrs = live:logical_and((n * q):ge(10))
  local use_inv = live:logical_and(use_btrs:logical_not())
  local k = torch.zeros_like(n)
  if any(use_inv) then k = torch.where(use_inv, binomial_inversion(n, q, use_inv, generator), k) end
  if any(use_btrs) then k = torch.where(use_btrs, btrs(n, q, use_btrs, generator), k) end
  k = torch.where(flip, n - k, k)
  k = torch.where(live, k, torch.where(p:ge(1):logical_and(n:gt(0)), n, 0))
  k = torch.where(p:isnan(), p, k)
  return k:to(prob.dtype)
end

return S
