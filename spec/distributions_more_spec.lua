-- torch.distributions, the families added after the first 22: HalfNormal, HalfCauchy, Gumbel,
-- Pareto, Weibull, Kumaraswamy, FisherSnedecor, VonMises, NegativeBinomial, ContinuousBernoulli,
-- LogitRelaxedBernoulli, RelaxedBernoulli, ExpRelaxedCategorical and RelaxedOneHotCategorical.
-- Every reference is computed here in plain Lua (float64), independently of the code under test:
-- log_prob against the densities and masses written out below; mean, variance, cdf and entropy
-- against Simpson's rule over those densities (or sums over the masses); samples (fixed seeds)
-- against the moments within five standard errors and against the CDFs by Kolmogorov-Smirnov;
-- gradients of rsample and log_prob by finite differences (gradcheck); KL divergences against
-- E_p[log p - log q] by Simpson's rule. Also float32, batch shapes with broadcasting, expand, and
-- the errors for bad parameters and values.
local torch = require 'torch'
local H = require 'spec.helpers'
local M = require 'spec.support.distribution_math'
local D = torch.distributions
local f64, f32 = torch.float64, torch.float32
local gradcheck = torch.autograd.gradcheck
local log, exp, sqrt, pi, inf = math.log, math.exp, math.sqrt, math.pi, math.huge
local lgamma = M.lgamma
local EULER = 0.57721566490153286060

local function t(v, dtype) return torch.tensor(v, { dtype = dtype or f64 }) end
local function leaf(v) return torch.tensor(v, { dtype = f64, requires_grad = true }) end
local seeded = M.seeded

-- the modified Bessel function I_n(x) by its power series
local function bessel_i(n, x)
  local term = (x / 2) ^ n / exp(lgamma(n + 1))
  local s = term
  for j = 1, 200 do
    term = term * (x / 2) ^ 2 / (j * (j + n))
    s = s + term
    if term < 1e-17 * s then break end
  end
  return s
end

-- densities (log) in plain Lua, one function of x per parameter set
local L = setmetatable({}, { __index = M.logpdf })
function L.half_normal(s) return function(x) return x >= 0 and 0.5 * log(2 / pi) - log(s) - x * x / (2 * s * s) or -inf end end
function L.half_cauchy(s) return function(x) return x >= 0 and log(2 / (pi * s * (1 + (x / s) ^ 2))) or -inf end end
function L.gumbel(m, b)
  return function(x)
    local z = (x - m) / b
    return -(z + exp(-z)) - log(b)
  end
end
function L.pareto(s, a) return function(x) return x >= s and log(a) + a * log(s) - (a + 1) * log(x) or -inf end end
function L.weibull(s, k)
  return function(x) return x > 0 and log(k / s) + (k - 1) * log(x / s) - (x / s) ^ k or -inf end
end
function L.kumaraswamy(a, b)
  return function(x) return (x > 0 and x < 1) and log(a * b) + (a - 1) * log(x) + (b - 1) * log(1 - x ^ a) or -inf end
end
function L.fisher(d1, d2)
  return function(x)
    if x <= 0 then return -inf end
    return 0.5 * (d1 * log(d1 * x) + d2 * log(d2) - (d1 + d2) * log(d1 * x + d2)) - log(x) - M.lbeta(d1 / 2, d2 / 2)
  end
end
function L.von_mises(m, k) return function(x) return k * math.cos(x - m) - log(2 * pi * bessel_i(0, k)) end end
-- the continuous Bernoulli's normaliser C(p) = 2 atanh(1 - 2p) / (1 - 2p), 2 at p = 1/2
local function cb_norm(p)
  if p == 0.5 then return 2 end
  local u = 1 - 2 * p
  return log((1 + u) / (1 - u)) / u
end
function L.cb(p) return function(x) return (x >= 0 and x <= 1) and log(cb_norm(p)) + x * log(p) + (1 - x) * log(1 - p) or -inf end end
-- the logistic density of (logits + logit U) / temperature, and of its sigmoid
function L.logit_relaxed(tau, l)
  return function(y)
    local z = tau * y - l
    return log(tau) - z - 2 * log(1 + exp(-z))
  end
end
function L.relaxed(tau, l)
  local ly = L.logit_relaxed(tau, l)
  return function(x) return ly(log(x / (1 - x))) - log(x * (1 - x)) end
end
-- the Concrete density of Maddison et al. on the simplex (in its first K - 1 coordinates)
local function concrete(tau, probs, x)
  local K = #probs
  local s, lp = 0, lgamma(K) + (K - 1) * log(tau)
  for k = 1, K do
    s = s + probs[k] * x[k] ^ -tau
    lp = lp + log(probs[k]) - (tau + 1) * log(x[k])
  end
  return lp - K * log(s)
end
local function lpmf_negbin(n, p)
  return function(k) return lgamma(k + n) - lgamma(k + 1) - lgamma(n) + k * log(p) + n * log(1 - p) end
end

-- each element of the tensor x against f(i), i the 1-based flat index
local function each(x, f, tol, msg)
  local got = x:reshape(-1):double():totable()
  for i, g in ipairs(got) do H.close(g, f(i), tol or 1e-10, (msg or 'value') .. ' ' .. i) end
  return #got
end

-- the integrals of x^k p(x) for k = 0, 1, 2, and of -p log p, over [a, b]
local function integrals(lp, a, b, n)
  local function f(g) return M.integrate(function(x)
    local u = lp(x)
    return u == -inf and 0 or g(x, u)
  end, a, b, n or 40000) end
  local mass = f(function(_, u) return exp(u) end)
  local mean = f(function(x, u) return x * exp(u) end)
  local second = f(function(x, u) return x * x * exp(u) end)
  local entropy = f(function(_, u) return -u * exp(u) end)
  return mass, mean, second - mean * mean, entropy
end

-- checks a one-element-per-batch-entry continuous family: log_prob at xs (one a batch entry)
-- against lps[i] (within lp_tol, 1e-10 by default), and, where a range [a, b] is given, the mean, variance, entropy and cdf (at
-- xs) by Simpson's rule over that range (what the density leaves outside it is negligible)
local function check_continuous(label, d, lps, xs, ranges, what, tol, lp_tol)
  tol = tol or 1e-7
  what = what or { mean = true, variance = true, entropy = true, cdf = true }
  each(d:log_prob(t(xs)), function(i) return lps[i](xs[i]) end, lp_tol or 1e-10, label .. ' log_prob')
  for i, r in ipairs(ranges) do
    local mass, mean, var, ent = integrals(lps[i], r[1], r[2], r[3])
    H.close(mass, 1, tol, label .. ' mass ' .. i)
    local pick = function(x) return x:reshape(-1):double():totable()[i] end
    if what.mean then H.close(pick(d.mean), mean, tol, label .. ' mean ' .. i) end
    if what.variance then H.close(pick(d.variance), var, tol, label .. ' variance ' .. i) end
    if what.entropy then H.close(pick(d:entropy()), ent, tol, label .. ' entropy ' .. i) end
    if what.cdf then
      local c = M.integrate(function(x)
        local u = lps[i](x)
        return u == -inf and 0 or exp(u)
      end, r[1], xs[i], r[3] or 40000)
      H.close(pick(d:cdf(t(xs))), c, r[4] or tol, label .. ' cdf ' .. i)
    end
  end
end

local check_moments, check_ks = M.check_moments, M.check_ks

local function dims(size) return { table.unpack(size) } end

local function column(x, j)
  if x:dim() == 1 then return x:double():totable() end
  return x:select(-1, j):double():totable()
end

describe('torch.distributions, the families added later', function()
  describe('log_prob, moments, cdf and entropy against the densities', function()
    it('HalfNormal and HalfCauchy', function()
      local s = { 0.7, 2.0 }
      local xs = { 0.5, 3.0 }
      local hn = D.HalfNormal(t(s))
      check_continuous('HalfNormal', hn, { L.half_normal(0.7), L.half_normal(2.0) }, xs, { { 0, 12 }, { 0, 30 } })
      H.assert_values(hn:icdf(hn:cdf(t(xs))), xs, 1e-10, 'HalfNormal icdf(cdf)')
      H.assert_values(hn.mode, { 0, 0 })
      assert.is_true(hn.has_rsample)
      assert.are.equal(-inf, D.HalfNormal(t { 1.0 }, { validate_args = false }):log_prob(t { -0.5 }):item())
      local hc = D.HalfCauchy(t(s))
      -- the tails of the Cauchy have no mean: the entropy is log(2 pi s), the cdf by integration
      check_continuous('HalfCauchy', hc, { L.half_cauchy(0.7), L.half_cauchy(2.0) }, xs, {})
      each(hc:entropy(), function(i) return log(2 * pi * s[i]) end, 1e-12, 'HalfCauchy entropy')
      each(hc:cdf(t(xs)), function(i)
        return M.integrate(function(x) return exp(L.half_cauchy(s[i])(x)) end, 0, xs[i])
      end, 1e-9, 'HalfCauchy cdf')
      H.assert_values(hc:icdf(hc:cdf(t(xs))), xs, 1e-10, 'HalfCauchy icdf(cdf)')
      H.assert_values(hc.mean, { inf, inf }); H.assert_values(hc.variance, { inf, inf })
      H.assert_values(hc.mode, { 0, 0 })
    end)

    it('Gumbel', function()
      local m, b = { 0.5, -1.0 }, { 1.5, 0.4 }
      local d = D.Gumbel(t(m), t(b))
      local xs = { 1.0, -1.2 }
      check_continuous('Gumbel', d, { L.gumbel(0.5, 1.5), L.gumbel(-1.0, 0.4) }, xs,
        { { 0.5 - 8 * 1.5, 0.5 + 60 * 1.5, 200000 }, { -1 - 8 * 0.4, -1 + 60 * 0.4, 200000 } })
      H.assert_values(d.mode, m)
      H.assert_values(d:icdf(d:cdf(t(xs))), xs, 1e-9, 'Gumbel icdf(cdf)')
      each(d:cdf(t(xs)), function(i) return exp(-exp(-(xs[i] - m[i]) / b[i])) end, 1e-12, 'Gumbel closed-form cdf')
    end)

    it('Pareto', function()
      local s, a = { 1.0, 2.0 }, { 3.5, 5.0 }
      local d = D.Pareto(t(s), t(a))
      local xs = { 1.7, 2.5 }
      check_continuous('Pareto', d, { L.pareto(1.0, 3.5), L.pareto(2.0, 5.0) }, xs, {},
        { mean = true, variance = true })
      each(d.mean, function(i) return a[i] * s[i] / (a[i] - 1) end, 1e-12, 'Pareto mean')
      each(d.variance, function(i) return s[i] ^ 2 * a[i] / ((a[i] - 1) ^ 2 * (a[i] - 2)) end, 1e-12, 'Pareto variance')
      -- the entropy and cdf, with the substitution x = s u^(-2/alpha) that makes the tail finite
      for i = 1, 2 do
        local lp = L.pareto(s[i], a[i])
        local c = 2 / a[i]
        local ent = M.integrate(function(u)
          if u == 0 then return 0 end
          local x = s[i] * u ^ -c
          local dx = c * s[i] * u ^ (-c - 1)
          return -lp(x) * exp(lp(x)) * dx
        end, 0, 1, 200000)
        H.close(d:entropy():totable()[i], ent, 1e-7, 'Pareto entropy ' .. i)
        H.close(d:cdf(t(xs)):totable()[i], M.integrate(function(x) return exp(lp(x)) end, s[i], xs[i]), 1e-9,
          'Pareto cdf ' .. i)
      end
      H.assert_values(d.mode, s)
      assert.are.equal('GreaterThanEq', getmetatable(d.support).__name)
      H.raises(function() d:log_prob(t { 0.5, 3.0 }) end, 'Pareto', 'support')
      -- no mean below alpha = 1, no variance below 2 (PyTorch's clamped formulas: inf)
      local heavy = D.Pareto(t { 1.0 }, t { 0.5 })
      H.assert_values(heavy.mean, { inf }); H.assert_values(heavy.variance, { inf })
    end)

    it('Weibull and Kumaraswamy', function()
      local d = D.Weibull(t { 1.5, 0.5 }, t { 2.5, 2.0 })
      local xs = { 1.0, 0.3 }
      check_continuous('Weibull', d, { L.weibull(1.5, 2.5), L.weibull(0.5, 2.0) }, xs, { { 0, 15 }, { 0, 10 } },
        nil, 1e-6)
      H.assert_values(d.mode, { 1.5 * (1.5 / 2.5) ^ (1 / 2.5), 0.5 * 0.5 ^ 0.5 }, 1e-12)
      H.assert_values(d:icdf(d:cdf(t(xs))), xs, 1e-9, 'Weibull icdf(cdf)')
      local a, b = { 2.0, 3.5 }, { 3.0, 1.5 }
      local k = D.Kumaraswamy(t(a), t(b))
      xs = { 0.3, 0.8 }
      check_continuous('Kumaraswamy', k, { L.kumaraswamy(2.0, 3.0), L.kumaraswamy(3.5, 1.5) }, xs, { { 0, 1 }, { 0, 1 } },
        nil, 1e-6)
      -- the mode maximises the density
      each(k.mode, function(i) return ((a[i] - 1) / (a[i] * b[i] - 1)) ^ (1 / a[i]) end, 1e-12, 'Kumaraswamy mode')
      local mode = k.mode:totable()
      for i = 1, 2 do
        local lp = L.kumaraswamy(a[i], b[i])
        assert.is_true(lp(mode[i]) > lp(mode[i] + 1e-3) and lp(mode[i]) > lp(mode[i] - 1e-3))
      end
      assert.is_true(D.Kumaraswamy(t { 0.5 }, t { 2.0 }).mode:isnan():all():item())
      H.assert_values(k:icdf(k:cdf(t(xs))), xs, 1e-9, 'Kumaraswamy icdf(cdf)')
      each(k:cdf(t(xs)), function(i) return 1 - (1 - xs[i] ^ a[i]) ^ b[i] end, 1e-12, 'Kumaraswamy closed-form cdf')
    end)

    it('FisherSnedecor', function()
      local d1, d2 = { 5.0, 3.0 }, { 12.0, 9.0 }
      local d = D.FisherSnedecor(t(d1), t(d2))
      local xs = { 0.8, 2.0 }
      check_continuous('FisherSnedecor', d, { L.fisher(5, 12), L.fisher(3, 9) }, xs, {})
      -- the moments with x = u / (1 - u), which maps [0, 1) onto the positive reals
      for i = 1, 2 do
        local lp = L.fisher(d1[i], d2[i])
        local function moment(k)
          return M.integrate(function(u)
            if u == 0 or u == 1 then return 0 end
            local x = u / (1 - u)
            return x ^ k * exp(lp(x)) / (1 - u) ^ 2
          end, 0, 1, 200000)
        end
        local mean = moment(1)
        H.close(moment(0), 1, 1e-7, 'FisherSnedecor mass')
        H.close(d.mean:totable()[i], mean, 1e-6, 'FisherSnedecor mean ' .. i)
        H.close(d.variance:totable()[i], moment(2) - mean * mean, 1e-5, 'FisherSnedecor variance ' .. i)
      end
      each(d.mode, function(i) return (d1[i] - 2) / d1[i] * d2[i] / (d2[i] + 2) end, 1e-12, 'FisherSnedecor mode')
      local none = D.FisherSnedecor(t { 2.0 }, t { 4.0 })
      assert.is_true(none.mode:isnan():item() and none.variance:isnan():item())
      assert.is_false(none.mean:isnan():item())
      assert.is_true(D.FisherSnedecor(t { 3.0 }, t { 2.0 }).mean:isnan():item())
    end)

    it('VonMises', function()
      local m, k = { 0.5, -2.0, 1.0 }, { 0.8, 3.0, 9.0 }
      local d = D.VonMises(t(m), t(k))
      local xs = { 1.0, -2.5, 3.0 }
      -- PyTorch's polynomial approximations of log I0 are good to about 2e-7
      each(d:log_prob(t(xs)), function(i) return L.von_mises(m[i], k[i])(xs[i]) end, 3e-7, 'VonMises log_prob')
      each(d.variance, function(i) return 1 - bessel_i(1, k[i]) / bessel_i(0, k[i]) end, 3e-7, 'VonMises variance')
      H.assert_values(d.mean, m); H.assert_values(d.mode, m)
      for i = 1, 3 do
        H.close(M.integrate(function(x) return exp(L.von_mises(m[i], k[i])(x)) end, -pi, pi), 1, 1e-9, 'mass ' .. i)
      end
      assert.is_false(d.has_rsample)
      H.raises(function() d:rsample() end, 'VonMises', 'rsample')
    end)

    it('NegativeBinomial', function()
      local n, p = { 3.0, 0.5 }, { 0.4, 0.7 }
      local d = D.NegativeBinomial(t(n), t(p))
      local ks = { 0.0, 1.0, 4.0, 9.0 }
      local vals = d:log_prob(t(ks):unsqueeze(-1)):totable()
      for j, kk in ipairs(ks) do
        for i = 1, 2 do H.close(vals[j][i], lpmf_negbin(n[i], p[i])(kk), 1e-11, 'NegativeBinomial ' .. kk) end
      end
      for i = 1, 2 do
        local lp = lpmf_negbin(n[i], p[i])
        local mass, mean, second = 0, 0, 0
        for kk = 0, 2000 do
          local q = exp(lp(kk))
          mass, mean, second = mass + q, mean + kk * q, second + kk * kk * q
        end
        H.close(mass, 1, 1e-12, 'mass')
        H.close(d.mean:totable()[i], mean, 1e-10, 'NegativeBinomial mean ' .. i)
        H.close(d.variance:totable()[i], second - mean * mean, 1e-9, 'NegativeBinomial variance ' .. i)
      end
      -- the logits give the same law; the mode is the largest mass
      local dl = D.NegativeBinomial(t(n), { logits = t { log(0.4 / 0.6), log(0.7 / 0.3) } })
      H.assert_values(dl:log_prob(t { 2.0, 5.0 }), d:log_prob(t { 2.0, 5.0 }):totable(), 1e-12)
      H.assert_values(d.mode, { 1, 0 })
      -- total_count 0 puts all its mass on 0
      H.assert_values(D.NegativeBinomial(t { 0.0 }, t { 0.5 }):log_prob(t { 0.0 }), { 0 })
      H.raises(function() d:log_prob(t { 1.5, 1.0 }) end, 'NegativeBinomial', 'support')
    end)

    it('ContinuousBernoulli, inside and outside the Taylor region about 1/2', function()
      local p = { 0.2, 0.5, 0.5004, 0.9 }
      local d = D.ContinuousBernoulli(t(p))
      local xs = { 0.3, 0.6, 0.1, 0.95 }
      local lps = {}
      for i = 1, 4 do lps[i] = L.cb(p[i]) end
      -- within lims of 1/2 PyTorch's cdf is the uniform's (its error is about |p - 1/2| here)
      check_continuous('ContinuousBernoulli', d, lps, xs, { { 0, 1 }, { 0, 1 }, { 0, 1, 40000, 1e-3 }, { 0, 1 } }, nil,
        1e-7)
      local back = d:icdf(d:cdf(t(xs)))
      H.assert_values(back, xs, 1e-9, 'ContinuousBernoulli icdf(cdf)')
      local dl = D.ContinuousBernoulli { logits = t { log(0.2 / 0.8), log(0.9 / 0.1) } }
      H.assert_values(dl:log_prob(t { 0.3, 0.95 }), { lps[1](0.3), lps[4](0.95) }, 1e-10)
      -- wider lims, so that the Taylor expansions' higher terms count
      local wide = D.ContinuousBernoulli(t { 0.42, 0.55 }, nil, { 0.4, 0.6 })
      check_continuous('ContinuousBernoulli lims', wide, { L.cb(0.42), L.cb(0.55) }, { 0.2, 0.7 },
        { { 0, 1, 40000, 0.03 }, { 0, 1, 40000, 0.03 } }, { mean = true, variance = true, cdf = true }, 2e-6, 2e-6)
      each(wide:entropy(), function(i) return select(4, integrals(({ L.cb(0.42), L.cb(0.55) })[i], 0, 1)) end, 1e-5,
        'ContinuousBernoulli lims entropy')
      local free = D.ContinuousBernoulli(t(p), { validate_args = false })
      H.assert_values(free:cdf(t { -0.5, 0.0, 1.0, 2.0 }), { 0, 0, 1, 1 })
    end)

    it('LogitRelaxedBernoulli and RelaxedBernoulli', function()
      local tau, probs = 0.7, { 0.3, 0.8 }
      local l = { log(0.3 / 0.7), log(0.8 / 0.2) }
      local lrb = D.LogitRelaxedBernoulli(t { tau }, t(probs))
      local ys = { -1.0, 2.5 }
      each(lrb:log_prob(t(ys)), function(i) return L.logit_relaxed(tau, l[i])(ys[i]) end, 1e-10, 'LogitRelaxedBernoulli')
      local rb = D.RelaxedBernoulli(t { tau }, { logits = t(l) })
      local xs = { 0.2, 0.9 }
      each(rb:log_prob(t(xs)), function(i) return L.relaxed(tau, l[i])(xs[i]) end, 1e-10, 'RelaxedBernoulli')
      -- the mass over (0, 1), with x = sigmoid(y)
      for i = 1, 2 do
        H.close(M.integrate(function(y)
          local x = 1 / (1 + exp(-y))
          return exp(L.relaxed(tau, l[i])(x)) * x * (1 - x)
        end, -30, 30, 200000), 1, 1e-7, 'RelaxedBernoulli mass')
      end
      H.assert_values(rb.temperature, { tau }); H.assert_values(rb.probs, probs, 1e-12)
      H.assert_values(lrb.logits, l, 1e-12)
      -- a plain number temperature becomes a tensor of the parameters' dtype
      assert.are.equal(f32, D.RelaxedBernoulli(0.5, t({ 0.3 }, f32)).temperature.dtype)
    end)

    it('ExpRelaxedCategorical and RelaxedOneHotCategorical against the Concrete density', function()
      local tau, probs = 0.6, { 0.2, 0.5, 0.3 }
      local d = D.RelaxedOneHotCategorical(t { tau }, t(probs))
      local xs = { { 0.1, 0.7, 0.2 }, { 0.5, 0.25, 0.25 } }
      local got = d:log_prob(t(xs)):totable()
      for j = 1, 2 do H.close(got[j], concrete(tau, probs, xs[j]), 1e-10, 'RelaxedOneHotCategorical ' .. j) end
      assert.are.same({ 3 }, dims(d.event_shape)); assert.are.same({}, dims(d.batch_shape))
      local e = D.ExpRelaxedCategorical(t { tau }, { logits = t(probs):log() + 1.5 })
      local ys = t(xs):log()
      got = e:log_prob(ys):totable()
      for j = 1, 2 do
        local sum = 0
        for k = 1, 3 do sum = sum + log(xs[j][k]) end
        H.close(got[j], concrete(tau, probs, xs[j]) + sum, 1e-10, 'ExpRelaxedCategorical ' .. j)
      end
      H.assert_values(e.probs, probs, 1e-12)
      -- with two classes the Concrete's first coordinate is a RelaxedBernoulli
      local two = D.RelaxedOneHotCategorical(t { tau }, t { 0.3, 0.7 })
      local rb = D.RelaxedBernoulli(t { tau }, t { 0.3 })
      local x1 = 0.35
      local v = two:log_prob(t { x1, 1 - x1 }):item()
      H.close(v, rb:log_prob(t { x1 }):item(), 1e-10, 'two classes')
    end)
  end)

  describe('batch shapes, broadcasting, expand and dtypes', function()
    local cases = {
      { 'HalfNormal', function(a) return D.HalfNormal(a) end, 1 },
      { 'HalfCauchy', function(a) return D.HalfCauchy(a) end, 1 },
      { 'Gumbel', function(a, b) return D.Gumbel(a - 1, b) end, 2 },
      { 'Pareto', function(a, b) return D.Pareto(a * 0.1, b + 1) end, 2 },
      { 'Weibull', function(a, b) return D.Weibull(a, b) end, 2 },
      { 'Kumaraswamy', function(a, b) return D.Kumaraswamy(a + 1, b + 1) end, 2 },
      { 'FisherSnedecor', function(a, b) return D.FisherSnedecor(a + 2, b + 4) end, 2 },
      { 'VonMises', function(a, b) return D.VonMises(a, b) end, 2 },
      { 'NegativeBinomial', function(a, b) return D.NegativeBinomial(a, b / 4) end, 2 },
      { 'ContinuousBernoulli', function(_, b) return D.ContinuousBernoulli(b / 4) end, 1 },
      { 'LogitRelaxedBernoulli', function(a, b) return D.LogitRelaxedBernoulli(a:mean(), b / 4) end, 1 },
      { 'RelaxedBernoulli', function(a, b) return D.RelaxedBernoulli(a:mean(), b / 4) end, 1 },
    }

    it('broadcast the parameters, and sample and log_prob in their dtype', function()
      for _, dtype in ipairs { f32, f64 } do
        local a = torch.tensor({ { 0.5 }, { 1.5 } }, { dtype = dtype })  -- [2, 1]
        local b = torch.tensor({ 0.5, 1.0, 2.0 }, { dtype = dtype })      -- [3]
        for i, c in ipairs(cases) do
          local d = c[2](a, b)
          local batch = c[3] == 2 and { 2, 3 } or { 3 }
          if c[1] == 'HalfNormal' or c[1] == 'HalfCauchy' then batch = { 2, 1 } end
          assert.are.same(batch, dims(d.batch_shape), c[1])
          torch.manual_seed(i)
          local x = d:sample(4)
          assert.are.same(H.flatten({ 4, batch }), dims(x.shape), c[1] .. ' sample shape')
          assert.are.equal(dtype, x.dtype, c[1] .. ' sample dtype')
          local lp = d:log_prob(x)
          assert.are.equal(dtype, lp.dtype, c[1] .. ' log_prob dtype')
          assert.is_true(lp:isfinite():all():item(), c[1] .. ' log_prob finite')
          local e = d:expand(5, table.unpack(batch))
          assert.are.same(H.flatten({ 5, batch }), dims(e.batch_shape), c[1] .. ' expand')
          local x5 = x[1]:expand(H.flatten({ 5, batch }))
          H.assert_values(e:log_prob(x5)[3], d:log_prob(x[1]):double():totable(), 0, c[1] .. ' expanded log_prob')
        end
      end
    end)

    it('give float32 log_prob, mean and entropy close to float64', function()
      local mk = {
        { 'Gumbel', function(dt) return D.Gumbel(t({ 0.5, -1.0 }, dt), t({ 1.5, 0.4 }, dt)) end, { 1.0, -1.2 } },
        { 'Weibull', function(dt) return D.Weibull(t({ 1.5, 0.5 }, dt), t({ 2.5, 1.2 }, dt)) end, { 1.0, 0.3 } },
        { 'Kumaraswamy', function(dt) return D.Kumaraswamy(t({ 2.0, 3.5 }, dt), t({ 3.0, 1.5 }, dt)) end, { 0.3, 0.8 } },
        { 'Pareto', function(dt) return D.Pareto(t({ 1.0, 2.0 }, dt), t({ 3.5, 5.0 }, dt)) end, { 1.7, 2.5 } },
        { 'ContinuousBernoulli', function(dt) return D.ContinuousBernoulli(t({ 0.2, 0.5 }, dt)) end, { 0.3, 0.6 } },
        { 'HalfNormal', function(dt) return D.HalfNormal(t({ 0.7, 2.0 }, dt)) end, { 0.5, 3.0 } },
        { 'FisherSnedecor', function(dt) return D.FisherSnedecor(t({ 5.0, 3.0 }, dt), t({ 12.0, 9.0 }, dt)) end,
          { 0.8, 2.0 } },
        { 'VonMises', function(dt) return D.VonMises(t({ 0.5, -2.0 }, dt), t({ 0.8, 9.0 }, dt)) end, { 1.0, -2.5 } },
      }
      for _, c in ipairs(mk) do
        local d32, d64 = c[2](f32), c[2](f64)
        local lp = d32:log_prob(t(c[3], f32))
        assert.are.equal(f32, lp.dtype)
        H.assert_values(lp, d64:log_prob(t(c[3])):totable(), 1e-5, c[1] .. ' float32 log_prob')
        H.assert_values(d32.mean, d64.mean:totable(), 1e-5, c[1] .. ' float32 mean')
        if c[1] ~= 'VonMises' and c[1] ~= 'FisherSnedecor' then -- neither has an entropy in PyTorch
          H.assert_values(d32:entropy(), d64:entropy():totable(), 1e-5, c[1] .. ' float32 entropy')
        end
      end
    end)
  end)

  describe('sampling', function()
    local N = 20000

    it('HalfNormal, HalfCauchy, Gumbel, Pareto, Weibull and Kumaraswamy', function()
      torch.manual_seed(31)
      local hn = column(D.HalfNormal(t { 2.0 }):rsample(N), 1)
      check_moments(hn, 2 * sqrt(2 / pi), 4 * (1 - 2 / pi), 'HalfNormal')
      local hc = column(D.HalfCauchy(t { 1.5 }):sample(N), 1)
      check_ks(hc, function(x) return 2 / pi * math.atan(x / 1.5) end, 'HalfCauchy')
      local g = column(D.Gumbel(t { 1.0 }, t { 2.0 }):rsample(N), 1)
      check_moments(g, 1 + 2 * EULER, pi ^ 2 / 6 * 4, 'Gumbel')
      check_ks(g, function(x) return exp(-exp(-(x - 1) / 2)) end, 'Gumbel')
      local pa = column(D.Pareto(t { 2.0 }, t { 6.0 }):rsample(N), 1)
      check_moments(pa, 6 * 2 / 5, 4 * 6 / (25 * 4), 'Pareto')
      check_ks(pa, function(x) return x < 2 and 0 or 1 - (2 / x) ^ 6 end, 'Pareto')
      local w = column(D.Weibull(t { 1.5 }, t { 2.5 }):rsample(N), 1)
      local m1, m2 = exp(lgamma(1 + 1 / 2.5)), exp(lgamma(1 + 2 / 2.5))
      check_moments(w, 1.5 * m1, 1.5 ^ 2 * (m2 - m1 * m1), 'Weibull')
      check_ks(w, function(x) return x <= 0 and 0 or 1 - exp(-(x / 1.5) ^ 2.5) end, 'Weibull')
      local k = column(D.Kumaraswamy(t { 2.0 }, t { 3.0 }):rsample(N), 1)
      check_ks(k, function(x) return 1 - (1 - math.min(math.max(x, 0), 1) ^ 2) ^ 3 end, 'Kumaraswamy')
    end)

    it('FisherSnedecor, NegativeBinomial, ContinuousBernoulli and VonMises', function()
      torch.manual_seed(32)
      local d1, d2 = 6.0, 14.0
      local f = column(D.FisherSnedecor(t { d1 }, t { d2 }):rsample(N), 1)
      check_moments(f, d2 / (d2 - 2), 2 * d2 ^ 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ^ 2 * (d2 - 4)), 'FisherSnedecor')
      local nb = column(D.NegativeBinomial(t { 3.5 }, t { 0.4 }):sample(N), 1)
      local counts = {}
      for _, v in ipairs(nb) do
        assert(v == math.floor(v) and v >= 0, 'NegativeBinomial sample ' .. v)
        counts[v] = (counts[v] or 0) + 1
      end
      for kk = 0, 8 do
        local p = exp(lpmf_negbin(3.5, 0.4)(kk))
        local se = sqrt(p * (1 - p) / N)
        assert(math.abs((counts[kk] or 0) / N - p) <= 5 * se + 1 / N, 'NegativeBinomial frequency of ' .. kk)
      end
      for _, p in ipairs { 0.15, 0.5, 0.8 } do
        local cb = column(D.ContinuousBernoulli(t { p }):rsample(N), 1)
        check_ks(cb, function(x)
          x = math.min(math.max(x, 0), 1)
          if p == 0.5 then return x end
          return (p ^ x * (1 - p) ^ (1 - x) + p - 1) / (2 * p - 1)
        end, 'ContinuousBernoulli ' .. p)
      end
      -- VonMises: the CDF by cumulative Simpson's rule over a grid of [-pi, pi], small and large k
      for _, c in ipairs { { 0.5, 0.3 }, { 2.5, 4.0 }, { -1.0, 50.0 } } do
        local m, kap = c[1], c[2]
        local v = column(D.VonMises(t { m }, t { kap }):sample(N), 1)
        local lp = L.von_mises(m, kap)
        local grid, cum, n = {}, { 0 }, 4000
        local h = 2 * pi / n
        for i = 0, n do grid[i + 1] = -pi + i * h end
        for i = 1, n do
          local a, b = grid[i], grid[i + 1]
          cum[i + 1] = cum[i] + h / 6 * (exp(lp(a)) + 4 * exp(lp((a + b) / 2)) + exp(lp(b)))
        end
        for _, x in ipairs(v) do assert(x >= -pi and x < pi, 'VonMises sample in [-pi, pi)') end
        check_ks(v, function(x)
          local i = math.min(math.max(math.floor((x + pi) / h) + 1, 1), n)
          return cum[i] + (cum[i + 1] - cum[i]) * (x - grid[i]) / h
        end, 'VonMises k=' .. kap)
      end
    end)

    it('LogitRelaxedBernoulli, RelaxedBernoulli, ExpRelaxedCategorical and RelaxedOneHotCategorical', function()
      torch.manual_seed(33)
      local tau, p = 0.5, 0.3
      local l = log(p / (1 - p))
      local function relaxed_cdf(x)
        x = math.min(math.max(x, 1e-300), 1 - 1e-16)
        return 1 / (1 + exp(-(tau * log(x / (1 - x)) - l)))
      end
      check_ks(column(D.RelaxedBernoulli(t { tau }, t { p }):rsample(N), 1), relaxed_cdf, 'RelaxedBernoulli')
      local y = column(D.LogitRelaxedBernoulli(t { tau }, t { p }):rsample(N), 1)
      check_ks(y, function(v) return 1 / (1 + exp(-(tau * v - l))) end, 'LogitRelaxedBernoulli')
      -- two classes: the first coordinate is a RelaxedBernoulli of probability 0.3
      local oh = D.RelaxedOneHotCategorical(t { tau }, t { 0.3, 0.7 }):rsample(N)
      H.assert_values(oh:sum(-1), torch.ones(N):totable(), 1e-12, 'on the simplex')
      check_ks(column(oh, 1), relaxed_cdf, 'RelaxedOneHotCategorical')
      local e = D.ExpRelaxedCategorical(t { tau }, t { 0.3, 0.7 }):rsample(N)
      H.assert_values(e:logsumexp(-1), torch.zeros(N):totable(), 1e-12, 'log of the simplex')
      check_ks(column(e:exp(), 1), relaxed_cdf, 'ExpRelaxedCategorical')
    end)
  end)

  describe('gradients by finite differences', function()
    it('of rsample', function()
      local cases = {
        { 'HalfNormal', function(s) return D.HalfNormal(s):rsample(3) end, { leaf { 0.7, 2.0 } } },
        { 'HalfCauchy', function(s) return D.HalfCauchy(s):rsample(3) end, { leaf { 0.7, 2.0 } } },
        { 'Gumbel', function(m, b) return D.Gumbel(m, b):rsample(3) end, { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
        { 'Pareto', function(s, a) return D.Pareto(s, a):rsample(3) end, { leaf { 1.0, 2.0 }, leaf { 3.0, 4.5 } } },
        { 'Weibull', function(s, k) return D.Weibull(s, k):rsample(3) end, { leaf { 1.0, 2.0 }, leaf { 1.5, 3.0 } } },
        { 'Kumaraswamy', function(a, b) return D.Kumaraswamy(a, b):rsample(3) end, { leaf { 2.0, 1.5 }, leaf { 3.0, 2.5 } } },
        { 'ContinuousBernoulli', function(p) return D.ContinuousBernoulli(p):rsample(3) end, { leaf { 0.2, 0.7 } } },
        { 'LogitRelaxedBernoulli', function(tau, p) return D.LogitRelaxedBernoulli(tau, p):rsample(3) end,
          { leaf { 0.6 }, leaf { 0.2, 0.7 } } },
        { 'RelaxedBernoulli', function(tau, l) return D.RelaxedBernoulli(tau, { logits = l }):rsample(3) end,
          { leaf { 0.9 }, leaf { -0.5, 1.0 } } },
        { 'RelaxedOneHotCategorical', function(tau, l)
          return D.RelaxedOneHotCategorical(tau, { logits = l }):rsample(3)
        end, { leaf { 0.9 }, leaf { -0.5, 1.0, 0.2 } } },
      }
      for i, c in ipairs(cases) do assert(gradcheck(seeded(200 + i, c[2]), c[3]), c[1]) end
    end)

    it('of log_prob, cdf and entropy', function()
      local cases = {
        { 'HalfNormal', function(s, x) return D.HalfNormal(s):log_prob(x) end, { leaf { 0.7 }, leaf { 0.9 } } },
        { 'Gumbel cdf', function(m, b, x) return D.Gumbel(m, b):cdf(x) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
        { 'Pareto', function(s, a, x) return D.Pareto(s, a):log_prob(x) end, { leaf { 1.0 }, leaf { 3.0 }, leaf { 1.9 } } },
        { 'Weibull', function(s, k, x) return D.Weibull(s, k):log_prob(x) end, { leaf { 1.0 }, leaf { 1.5 }, leaf { 0.9 } } },
        { 'Kumaraswamy', function(a, b, x) return D.Kumaraswamy(a, b):log_prob(x) end,
          { leaf { 2.0 }, leaf { 3.0 }, leaf { 0.4 } } },
        { 'Kumaraswamy entropy', function(a, b) return D.Kumaraswamy(a, b):entropy() end, { leaf { 2.0 }, leaf { 3.0 } } },
        { 'FisherSnedecor', function(a, b, x) return D.FisherSnedecor(a, b):log_prob(x) end,
          { leaf { 5.0 }, leaf { 7.0 }, leaf { 1.3 } } },
        { 'VonMises', function(m, k, x) return D.VonMises(m, k):log_prob(x) end, { leaf { 0.3 }, leaf { 2.0 }, leaf { 1.0 } } },
        { 'NegativeBinomial', function(n, p) return D.NegativeBinomial(n, p):log_prob(t { 3.0 }) end,
          { leaf { 2.5 }, leaf { 0.4 } } },
        { 'ContinuousBernoulli', function(p, x) return D.ContinuousBernoulli(p):log_prob(x) end,
          { leaf { 0.2 }, leaf { 0.7 } } },
        { 'ContinuousBernoulli entropy', function(p) return D.ContinuousBernoulli(p):entropy() end, { leaf { 0.3 } } },
        { 'RelaxedBernoulli', function(tau, p, x) return D.RelaxedBernoulli(tau, p):log_prob(x) end,
          { leaf { 0.6 }, leaf { 0.3 }, leaf { 0.4 } } },
        { 'ExpRelaxedCategorical', function(tau, l, x)
          return D.ExpRelaxedCategorical(tau, { logits = l }):log_prob(x)
        end, { leaf { 0.6 }, leaf { 0.3, -0.2, 0.5 }, leaf { -1.0, -0.7, -2.0 } } },
      }
      for _, c in ipairs(cases) do assert(gradcheck(c[2], c[3]), c[1]) end
    end)
  end)

  describe('kl_divergence', function()
    local kl = D.kl_divergence
    local kl_integral = M.kl_integral

    it('against numerical integration', function()
      local cases = {
        { 'Gumbel Gumbel', D.Gumbel(t { 0.3 }, t { 1.2 }), D.Gumbel(t { -0.5 }, t { 2.0 }), L.gumbel(0.3, 1.2),
          L.gumbel(-0.5, 2.0), -10, 60, 200000 },
        { 'HalfNormal HalfNormal', D.HalfNormal(t { 0.8 }), D.HalfNormal(t { 1.7 }), L.half_normal(0.8),
          L.half_normal(1.7), 0, 15 },
        { 'ContinuousBernoulli ContinuousBernoulli', D.ContinuousBernoulli(t { 0.2 }), D.ContinuousBernoulli(t { 0.7 }),
          L.cb(0.2), L.cb(0.7), 0, 1 },
        { 'Beta ContinuousBernoulli', D.Beta(t { 2.0 }, t { 3.0 }), D.ContinuousBernoulli(t { 0.7 }), L.beta(2, 3),
          L.cb(0.7), 0, 1 },
        { 'ContinuousBernoulli Exponential', D.ContinuousBernoulli(t { 0.3 }), D.Exponential(t { 2.0 }), L.cb(0.3),
          L.exponential(2), 0, 1 },
        { 'ContinuousBernoulli Normal', D.ContinuousBernoulli(t { 0.3 }), D.Normal(t { 0.2 }, t { 1.5 }), L.cb(0.3),
          L.normal(0.2, 1.5), 0, 1 },
        { 'ContinuousBernoulli Uniform', D.ContinuousBernoulli(t { 0.3 }), D.Uniform(t { -0.5 }, t { 2.0 }), L.cb(0.3),
          L.uniform(-0.5, 2.0), 0, 1 },
        { 'Exponential Gumbel', D.Exponential(t { 1.5 }), D.Gumbel(t { 0.5 }, t { 2.0 }), L.exponential(1.5),
          L.gumbel(0.5, 2.0), 0, 40 },
        { 'Gamma Gumbel', D.Gamma(t { 2.5 }, t { 1.5 }), D.Gumbel(t { 0.5 }, t { 2.0 }), L.gamma(2.5, 1.5),
          L.gumbel(0.5, 2.0), 0, 40 },
        { 'Gumbel Normal', D.Gumbel(t { 0.3 }, t { 1.2 }), D.Normal(t { 0.5 }, t { 2.0 }), L.gumbel(0.3, 1.2),
          L.normal(0.5, 2.0), -10, 60, 200000 },
        { 'Normal Gumbel', D.Normal(t { 0.3 }, t { 1.2 }), D.Gumbel(t { 0.5 }, t { 2.0 }), L.normal(0.3, 1.2),
          L.gumbel(0.5, 2.0), -15, 15 },
        { 'Pareto Pareto', D.Pareto(t { 1.5 }, t { 3.0 }), D.Pareto(t { 1.0 }, t { 2.0 }), L.pareto(1.5, 3.0),
          L.pareto(1.0, 2.0), 1.5, 1e4, 2000000 },
        { 'Pareto Exponential', D.Pareto(t { 1.5 }, t { 4.0 }), D.Exponential(t { 0.7 }), L.pareto(1.5, 4.0),
          L.exponential(0.7), 1.5, 1e4, 2000000 },
        { 'Pareto Gamma', D.Pareto(t { 1.5 }, t { 4.0 }), D.Gamma(t { 2.0 }, t { 0.7 }), L.pareto(1.5, 4.0),
          L.gamma(2.0, 0.7), 1.5, 1e4, 2000000 },
        { 'Pareto Normal', D.Pareto(t { 1.5 }, t { 5.0 }), D.Normal(t { 1.0 }, t { 2.0 }), L.pareto(1.5, 5.0),
          L.normal(1.0, 2.0), 1.5, 1e3, 2000000 },
        { 'Uniform ContinuousBernoulli', D.Uniform(t { 0.2 }, t { 0.7 }), D.ContinuousBernoulli(t { 0.3 }),
          L.uniform(0.2, 0.7), L.cb(0.3), 0.2, 0.7 },
        { 'Uniform Gumbel', D.Uniform(t { -1.0 }, t { 2.0 }), D.Gumbel(t { 0.5 }, t { 2.0 }), L.uniform(-1, 2),
          L.gumbel(0.5, 2.0), -1, 2 },
        { 'Uniform Pareto', D.Uniform(t { 2.0 }, t { 3.5 }), D.Pareto(t { 1.5 }, t { 2.5 }), L.uniform(2, 3.5),
          L.pareto(1.5, 2.5), 2, 3.5 },
      }
      for _, c in ipairs(cases) do
        local want = kl_integral(c[4], c[5], c[6], c[7], c[8])
        H.close(kl(c[2], c[3]):item(), want, 2e-6, c[1])
      end
    end)

    it('infinite where the supports are not contained, and with gradients', function()
      local g = D.Gumbel(t { 0.0, 1.0 }, t { 1.0, 2.0 })
      for _, q in ipairs { D.Beta(t { 2.0 }, t { 2.0 }), D.Exponential(t { 1.0 }), D.Gamma(t { 2.0 }, t { 1.0 }),
        D.Pareto(t { 1.0 }, t { 2.0 }), D.Uniform(t { 0.0 }, t { 1.0 }), D.ContinuousBernoulli(t { 0.3 }) } do
        H.assert_values(kl(g, q), { inf, inf })
      end
      for _, p in ipairs { D.Normal(t { 0.0 }, t { 1.0 }), D.Laplace(t { 0.0 }, t { 1.0 }), D.Exponential(t { 1.0 }),
        D.Gamma(t { 2.0 }, t { 1.0 }) } do
        H.assert_values(kl(p, D.Pareto(t { 1.0 }, t { 2.0 })), { inf })
        H.assert_values(kl(p, D.ContinuousBernoulli(t { 0.3 })), { inf })
      end
      H.assert_values(kl(D.Pareto(t { 1.0 }, t { 2.0 }), D.Uniform(t { 0.0 }, t { 5.0 })), { inf })
      -- the support of p starts below q's, alpha <= 1 (no mean), <= 2 (no variance)
      H.assert_values(kl(D.Pareto(t { 1.0 }, t { 2.0 }), D.Pareto(t { 1.5 }, t { 2.0 })), { inf })
      H.assert_values(kl(D.Pareto(t { 1.0 }, t { 0.8 }), D.Exponential(t { 1.0 })), { inf })
      H.assert_values(kl(D.Pareto(t { 1.0 }, t { 1.5 }), D.Normal(t { 0.0 }, t { 1.0 })), { inf })
      H.assert_values(kl(D.Uniform(t { 0.5 }, t { 2.0 }), D.Pareto(t { 1.0 }, t { 2.0 })), { inf })
      assert(gradcheck(function(a, b, c, d)
        return kl(D.Gumbel(a, b), D.Gumbel(c, d))
      end, { leaf { 0.3 }, leaf { 1.2 }, leaf { -0.5 }, leaf { 2.0 } }), 'Gumbel KL gradient')
      assert(gradcheck(function(p, q)
        return kl(D.ContinuousBernoulli(p), D.ContinuousBernoulli(q))
      end, { leaf { 0.2 }, leaf { 0.7 } }), 'ContinuousBernoulli KL gradient')
    end)
  end)

  describe('errors', function()
    it('name the distribution and the parameter or value', function()
      H.raises(function() D.HalfNormal(t { -1.0 }) end, 'HalfNormal', 'scale', 'GreaterThan')
      H.raises(function() D.HalfCauchy(t { 0.0 }) end, 'HalfCauchy', 'scale')
      H.raises(function() D.HalfNormal(t { 1.0 }):log_prob(t { -0.5 }) end, 'HalfNormal', 'support')
      H.raises(function() D.Gumbel(t { 0.0 }, t { -1.0 }) end, 'Gumbel', 'scale')
      H.raises(function() D.Pareto(t { 1.0 }, t { 0.0 }) end, 'Pareto', 'alpha')
      H.raises(function() D.Weibull(t { -1.0 }, t { 1.0 }) end, 'Weibull', 'scale')
      H.raises(function() D.Weibull(t { 1.0 }, t { 1.0 }):log_prob(t { -1.0 }) end, 'Weibull', 'support')
      H.raises(function() D.Kumaraswamy(t { 1.0 }, t { -2.0 }) end, 'Kumaraswamy', 'concentration0')
      H.raises(function() D.Kumaraswamy(t { 1.0 }, t { 2.0 }):log_prob(t { 1.5 }) end, 'Kumaraswamy', 'support')
      H.raises(function() D.FisherSnedecor(t { 0.0 }, t { 1.0 }) end, 'FisherSnedecor', 'df1')
      H.raises(function() D.VonMises(t { 0.0 }, t { -1.0 }) end, 'VonMises', 'concentration')
      H.raises(function() D.NegativeBinomial(t { -1.0 }, t { 0.5 }) end, 'NegativeBinomial', 'total_count')
      H.raises(function() D.NegativeBinomial(t { 2.0 }, t { 1.0 }) end, 'NegativeBinomial', 'probs', 'HalfOpenInterval')
      H.raises(function() D.NegativeBinomial(t { 2.0 }) end, 'NegativeBinomial', 'either probs or logits')
      H.raises(function() D.ContinuousBernoulli(t { 1.5 }) end, 'ContinuousBernoulli', 'probs')
      H.raises(function() D.ContinuousBernoulli(t { 0.5 }, { logits = t { 0.0 } }) end, 'ContinuousBernoulli', 'not both')
      H.raises(function() D.ContinuousBernoulli(t { 0.5 }):log_prob(t { 1.5 }) end, 'ContinuousBernoulli', 'support')
      H.raises(function() D.RelaxedBernoulli(t { 0.5 }, t { 1.5 }) end, 'probs')
      H.raises(function() D.RelaxedBernoulli(t { 0.5 }) end, 'RelaxedBernoulli', 'either probs or logits')
      H.raises(function() D.RelaxedBernoulli('hot', t { 0.5 }) end, 'temperature')
      H.raises(function() D.RelaxedOneHotCategorical(t { 0.5 }, t { 0.5, -0.5 }) end, 'probs')
      H.raises(function() D.RelaxedOneHotCategorical(t { 0.5 }, t { 0.5, 0.5 }):log_prob(t { 0.5, 0.4 }) end,
        'RelaxedOneHotCategorical', 'support')
      H.raises(function() D.Gumbel(t { 0.0, 1.0 }, t { 1.0, 2.0, 3.0 }) end, 'Gumbel', 'broadcast')
      H.raises(function() D.Gumbel(0.0, 1.0, { bogus = 1 }) end, 'Gumbel', "unknown option 'bogus'")
      -- without validation the bad values pass
      assert.is_true(D.HalfNormal(t { -1.0 }, { validate_args = false }) ~= nil)
    end)
  end)
end)
