-- torch.distributions: sampling and gradients. Large samples (fixed seeds, so nothing can flake)
-- against the formulas' moments, within five standard errors, and their frequencies against the
-- masses and CDFs computed in plain Lua (spec/support/distribution_math.lua); the samplers that
-- are PyTorch's primitive calls against those calls; gradients of rsample, log_prob, entropy, cdf
-- and icdf by finite differences (torch.autograd.gradcheck, float64); the implicit
-- reparameterisation of Gamma against -(dP/dalpha)/p from the incomplete gamma function.
--
-- Checked against PyTorch 1.13 (not in this spec, whose references are all computed here): for
-- the same torch.manual_seed, the samples of Normal (sample and rsample), Uniform, Bernoulli,
-- Categorical (plus one), OneHotCategorical, Multinomial, Exponential, Geometric, Cauchy and
-- MultivariateNormal are PyTorch's exactly, in float32 and float64; Laplace and LogNormal agree to
-- the last bit or two (log1p and exp round differently). Gamma, Beta, Dirichlet, Chi2, StudentT,
-- Poisson and Binomial draw differently (PyTorch's rejection loops run element after element).
local torch = require 'torch'
local H = require 'spec.helpers'
local M = require 'spec.support.distribution_math'
local D = torch.distributions
local f64 = torch.float64
local gradcheck = torch.autograd.gradcheck
local log, exp, sqrt, pi = math.log, math.exp, math.sqrt, math.pi

local function t(v, dtype) return torch.tensor(v, { dtype = dtype or f64 }) end
local function leaf(v) return torch.tensor(v, { dtype = f64, requires_grad = true }) end

local check_moments, check_ks = M.check_moments, M.check_ks

-- the column j of an [n, k] sample as a Lua array
local function column(x, j)
  if x:dim() == 1 then return x:double():totable() end
  return x:select(-1, j):double():totable()
end

-- each value's frequency within 5 standard errors of pmf(k), for k = lo..hi
local function check_frequencies(xs, pmf, lo, hi, label)
  local n = #xs
  local counts = {}
  for _, v in ipairs(xs) do
    assert(v == math.floor(v), label .. ': a sample is not a whole number: ' .. v)
    counts[v] = (counts[v] or 0) + 1
  end
  local total = 0
  for k = lo, hi do
    local p = pmf(k)
    total = total + p
    local f = (counts[k] or 0) / n
    local se = sqrt(math.max(p * (1 - p), 1e-12) / n)
    assert(math.abs(f - p) <= 5 * se + 1 / n,
      string.format('%s: frequency of %d is %.5f, expected %.5f (standard error %.3g)', label, k, f, p, se))
  end
  return total
end

local function lpmf_binomial(k, n, p)
  return M.lgamma(n + 1) - M.lgamma(k + 1) - M.lgamma(n - k + 1) + k * log(p) + (n - k) * log(1 - p)
end

describe('torch.distributions sampling', function()
  local N = 20000

  it('Normal, Uniform, Laplace, Cauchy, Exponential and LogNormal', function()
    torch.manual_seed(11)
    local x = D.Normal(t { 1.5, -2.0 }, t { 2.0, 0.1 }):sample(N)
    check_moments(column(x, 1), 1.5, 4.0, 'Normal 1')
    check_moments(column(x, 2), -2.0, 0.01, 'Normal 2')
    local r = D.Normal(t { 1.5 }, t { 2.0 }):rsample(N)
    check_moments(column(r, 1), 1.5, 4.0, 'Normal rsample')
    local u = D.Uniform(t { -1.0 }, t { 3.0 }):sample(N)
    check_moments(column(u, 1), 1.0, 16 / 12, 'Uniform')
    assert.is_true(u:ge(-1):all():item() and u:lt(3):all():item())
    local l = D.Laplace(t { 1.0 }, t { 0.5 }):sample(N)
    check_moments(column(l, 1), 1.0, 0.5, 'Laplace')
    check_ks(column(l, 1), function(v)
      return v < 1 and 0.5 * exp((v - 1) / 0.5) or 1 - 0.5 * exp(-(v - 1) / 0.5)
    end, 'Laplace')
    local c = column(D.Cauchy(t { 1.0 }, t { 2.0 }):sample(N), 1)
    check_ks(c, function(v) return math.atan((v - 1) / 2) / pi + 0.5 end, 'Cauchy')
    local e = column(D.Exponential(t { 2.0 }):sample(N), 1)
    check_moments(e, 0.5, 0.25, 'Exponential')
    check_ks(e, function(v) return 1 - exp(-2 * v) end, 'Exponential')
    local ln = column(D.LogNormal(t { 0.0 }, t { 0.5 }):sample(N), 1)
    check_moments(ln, exp(0.125), (exp(0.25) - 1) * exp(0.25), 'LogNormal')
  end)

  it('Gamma, Chi2, Beta, Dirichlet and StudentT', function()
    torch.manual_seed(12)
    -- below 1 (boosted), moderate and large shapes
    local a, b = { 0.5, 3.0, 20.0 }, { 2.0, 1.0, 0.5 }
    local g = D.Gamma(t(a), t(b)):sample(N)
    for j = 1, 3 do
      local xs = column(g, j)
      check_moments(xs, a[j] / b[j], a[j] / b[j] ^ 2, 'Gamma ' .. j)
      check_ks(xs, function(v) return M.gamma_p(a[j], b[j] * v) end, 'Gamma ' .. j)
    end
    assert.is_true(g:gt(0):all():item())
    local c = column(D.Chi2(t { 3.0 }):sample(N), 1)
    check_moments(c, 3, 6, 'Chi2')
    local be = D.Beta(t { 2.0, 0.5 }, t { 3.0, 0.5 }):sample(N)
    check_moments(column(be, 1), 0.4, 6 / (25 * 6), 'Beta 1')
    check_moments(column(be, 2), 0.5, 0.25 / 2, 'Beta 2')
    -- the arcsine law: P(X <= v) = 2/pi asin(sqrt v)
    check_ks(column(be, 2), function(v) return 2 / pi * math.asin(sqrt(math.min(math.max(v, 0), 1))) end, 'Beta 2')
    local conc = { 1.0, 2.0, 3.0 }
    local dir = D.Dirichlet(t(conc)):sample(N)
    H.assert_values(dir:sum(-1), torch.ones(N):totable(), 1e-12, 'Dirichlet on the simplex')
    for j = 1, 3 do
      check_moments(column(dir, j), conc[j] / 6, conc[j] * (6 - conc[j]) / (36 * 7), 'Dirichlet ' .. j)
    end
    local st = column(D.StudentT(t { 10.0 }, t { 1.0 }, t { 2.0 }):sample(N), 1)
    check_moments(st, 1.0, 4 * 10 / 8, 'StudentT')
  end)

  it('Bernoulli, Categorical, OneHotCategorical and Multinomial', function()
    torch.manual_seed(13)
    local bern = column(D.Bernoulli(t { 0.3 }):sample(N), 1)
    check_frequencies(bern, function(k) return k == 1 and 0.3 or 0.7 end, 0, 1, 'Bernoulli')
    local p = { 0.2, 0.3, 0.5 }
    local cat = D.Categorical(t(p)):sample(N)
    assert.are.equal(torch.int64, cat.dtype)
    local total = check_frequencies(cat:double():totable(), function(k) return p[k] end, 1, 3, 'Categorical')
    H.close(total, 1, 1e-12)
    -- logits, and a batch: each row its own classes
    local rows = D.Categorical { logits = t { { 0.0, 0.0, 50.0 }, { 50.0, 0.0, 0.0 } } }:sample(100)
    assert.is_true(rows:select(-1, 1):eq(3):all():item() and rows:select(-1, 2):eq(1):all():item())
    local oh = D.OneHotCategorical(t(p)):sample(N)
    H.assert_values(oh:sum(-1), torch.ones(N):totable(), 0, 'one-hot')
    for j = 1, 3 do check_moments(column(oh, j), p[j], p[j] * (1 - p[j]), 'OneHotCategorical ' .. j) end
    local mn = D.Multinomial(10, t(p)):sample(N)
    H.assert_values(mn:sum(-1), torch.full({ N }, 10):totable(), 0, 'Multinomial totals')
    for j = 1, 3 do check_moments(column(mn, j), 10 * p[j], 10 * p[j] * (1 - p[j]), 'Multinomial ' .. j) end
  end)

  it('Binomial in each of its methods', function()
    torch.manual_seed(14)
    -- inversion (n p < 10), BTRS (n p >= 10), and both mirrored for p > 1/2
    local n = { 10, 200, 30, 1000, 7, 0 }
    local p = { 0.3, 0.4, 0.9, 0.8, 1.0, 0.5 }
    local x = D.Binomial(t(n), t(p)):sample(N)
    for j = 1, 4 do
      local xs = column(x, j)
      check_moments(xs, n[j] * p[j], n[j] * p[j] * (1 - p[j]), 'Binomial ' .. j)
      local mean, sd = n[j] * p[j], sqrt(n[j] * p[j] * (1 - p[j]))
      check_frequencies(xs, function(k) return exp(lpmf_binomial(k, n[j], p[j])) end,
        math.max(0, math.floor(mean - 3 * sd)), math.min(n[j], math.ceil(mean + 3 * sd)), 'Binomial ' .. j)
    end
    assert.is_true(x:select(-1, 5):eq(7):all():item())
    assert.is_true(x:select(-1, 6):eq(0):all():item())
  end)

  it('Poisson in each of its methods, and Geometric', function()
    torch.manual_seed(15)
    local r = { 0.1, 2.5, 40.0, 0.0 }
    local x = D.Poisson(t(r)):sample(N)
    for j = 1, 3 do
      local xs = column(x, j)
      check_moments(xs, r[j], r[j], 'Poisson ' .. j)
      local sd = sqrt(r[j])
      check_frequencies(xs, function(k) return exp(k * log(r[j]) - r[j] - M.lgamma(k + 1)) end,
        math.max(0, math.floor(r[j] - 3 * sd)), math.ceil(r[j] + 3 * sd), 'Poisson ' .. j)
    end
    assert.is_true(x:select(-1, 4):eq(0):all():item())
    local g = column(D.Geometric(t { 0.3 }):sample(N), 1)
    check_moments(g, 0.7 / 0.3, 0.7 / 0.09, 'Geometric')
    check_frequencies(g, function(k) return 0.7 ^ k * 0.3 end, 0, 10, 'Geometric')
  end)

  it('MultivariateNormal and MixtureSameFamily', function()
    torch.manual_seed(16)
    local cov = { { 2.0, 0.6 }, { 0.6, 1.0 } }
    local x = D.MultivariateNormal(t { 1.0, -1.0 }, t(cov)):sample(N)
    check_moments(column(x, 1), 1.0, 2.0, 'MultivariateNormal 1')
    check_moments(column(x, 2), -1.0, 1.0, 'MultivariateNormal 2')
    -- the covariance: the variance of the sum
    local s = (x:select(-1, 1) + x:select(-1, 2)):totable()
    check_moments(s, 0.0, 2.0 + 1.0 + 2 * 0.6, 'MultivariateNormal sum')
    local w, m, sd = { 0.3, 0.7 }, { -2.0, 1.0 }, { 0.5, 1.0 }
    local mix = D.MixtureSameFamily(D.Categorical(t(w)), D.Normal(t(m), t(sd)))
    local xs = mix:sample(N):totable()
    local mean = w[1] * m[1] + w[2] * m[2]
    check_moments(xs, mean, w[1] * (sd[1] ^ 2 + m[1] ^ 2) + w[2] * (sd[2] ^ 2 + m[2] ^ 2) - mean ^ 2, 'mixture')
    -- a mixture of multivariate components picks whole vectors
    local mv = D.MixtureSameFamily(D.Categorical(t { 0.5, 0.5 }),
      D.Independent(D.Normal(t { { 0.0, 0.0 }, { 100.0, 100.0 } }, t { { 1e-3, 1e-3 }, { 1e-3, 1e-3 } }), 1))
    local v = mv:sample(200)
    assert.are.same({ 200, 2 }, { table.unpack(v.shape) })
    assert.is_true((v:select(-1, 1) - v:select(-1, 2)):abs():lt(0.1):all():item())
  end)

  it('are repeatable and use the primitives PyTorch uses', function()
    local function same_seed(seed, f, g)
      torch.manual_seed(seed)
      local a = f()
      torch.manual_seed(seed)
      local b = g()
      assert.is_true(a:equal(b))
    end
    local loc, scale = t { 0.5, -1.0 }, t { 2.0, 0.5 }
    same_seed(1, function() return D.Normal(loc, scale):sample(5) end,
      function() return torch.randn({ 5, 2 }, { dtype = f64 }) * scale + loc end)
    same_seed(2, function() return D.Normal(loc, scale):rsample(5) end,
      function() return loc + torch.randn({ 5, 2 }, { dtype = f64 }) * scale end)
    same_seed(3, function() return D.Uniform(loc, loc + scale):sample(5) end,
      function() return loc + torch.rand({ 5, 2 }, { dtype = f64 }) * scale end)
    same_seed(4, function() return D.Bernoulli(t({ 0.3, 0.9 }, torch.float32)):sample(5) end,
      function() return torch.rand(5, 2):lt(t({ 0.3, 0.9 }, torch.float32)):float() end)
    same_seed(5, function() return D.Exponential(scale):sample(5) end,
      function() return -(1 - torch.rand({ 5, 2 }, { dtype = f64 })):log() / scale end)
    same_seed(6, function() return D.Cauchy(loc, scale):sample(5) end,
      function() return loc + ((torch.rand({ 5, 2 }, { dtype = f64 }) - 0.5) * pi):tan() * scale end)
    same_seed(7, function() return D.Laplace(loc, scale):sample(5) end, function()
      local u = torch.empty(5, 2, { dtype = f64 }):uniform_(2 ^ -52 - 1, 1)
      return loc - scale * u:sign() * (-u:abs()):log1p()
    end)
    same_seed(8, function() return D.Geometric(t { 0.3 }):sample(5) end, function()
      local u = torch.empty(5, 1, { dtype = f64 }):uniform_(2 ^ -1022, 1)
      return (u:log() / log(0.7)):floor()
    end)
    same_seed(9, function() return D.Categorical(t { 0.2, 0.8 }):sample(6) end,
      function() return torch.multinomial(t { { 0.2, 0.8 } }, 6, true):t():reshape(6) end)
    -- every sampler repeats under the same seed
    for _, d in ipairs { D.Gamma(t { 0.5, 4.0 }, 1.0), D.Beta(t { 2.0 }, t { 3.0 }), D.Poisson(t { 3.0, 50.0 }),
      D.Binomial(t { 5.0, 500.0 }, t { 0.3, 0.4 }), D.StudentT(t { 3.0 }), D.Dirichlet(t { 1.0, 2.0 }) } do
      same_seed(10, function() return d:sample(4) end, function() return d:sample(4) end)
    end
  end)
end)

describe('torch.distributions gradients', function()
  -- fn's value with the generator reset first, so that rsample draws the same noise each time
  local function seeded(seed, fn)
    return function(...)
      torch.manual_seed(seed)
      return fn(...)
    end
  end

  it('of rsample by reparameterisation', function()
    local cases = {
      { 'Normal', function(a, b) return D.Normal(a, b):rsample(3) end, { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
      { 'Uniform', function(a, b) return D.Uniform(a, b):rsample(3) end, { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
      { 'Exponential', function(r) return D.Exponential(r):rsample(3) end, { leaf { 0.5, 2.0 } } },
      { 'Laplace', function(a, b) return D.Laplace(a, b):rsample(3) end, { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
      { 'Cauchy', function(a, b) return D.Cauchy(a, b):rsample(3) end, { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
      { 'LogNormal', function(a, b) return D.LogNormal(a, b):rsample(3) end, { leaf { 0.3, -1.0 }, leaf { 0.5, 0.7 } } },
      { 'StudentT loc and scale', function(a, b) return D.StudentT(t { 4.0, 6.0 }, a, b):rsample(3) end,
        { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
      { 'Gamma rate', function(r) return D.Gamma(t { 2.0, 3.0 }, r):rsample(3) end, { leaf { 0.5, 2.0 } } },
      { 'MultivariateNormal', function(m, l) return D.MultivariateNormal(m, { scale_tril = l:tril() }):rsample(2) end,
        { leaf { 0.5, -0.5 }, leaf { { 1.5, 0.0 }, { 0.4, 0.8 } } } },
      { 'MultivariateNormal covariance', function(c)
        return D.MultivariateNormal(t { 0.0, 0.0 }, (c + c:t()) / 2):rsample(2)
      end, { leaf { { 2.0, 0.5 }, { 0.5, 1.0 } } } },
      { 'Independent', function(a, b) return D.Independent(D.Normal(a, b), 1):rsample(2) end,
        { leaf { 0.3, -1.0 }, leaf { 1.5, 0.7 } } },
      { 'TransformedDistribution', function(a, b)
        return D.TransformedDistribution(D.Normal(a, b), { D.AffineTransform(0.5, 2.0), D.TanhTransform() }):rsample(2)
      end, { leaf { 0.1, -0.2 }, leaf { 0.3, 0.2 } } },
    }
    for i, c in ipairs(cases) do
      assert(gradcheck(seeded(100 + i, c[2]), c[3]), c[1])
    end
  end)

  it('of log_prob, in the parameters and the value', function()
    local cases = {
      { 'Normal', function(a, b, x) return D.Normal(a, b):log_prob(x) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'Uniform', function(a, b) return D.Uniform(a, b):log_prob(t { 0.5 }) end, { leaf { 0.3 }, leaf { 1.5 } } },
      { 'Bernoulli probs', function(p) return D.Bernoulli(p):log_prob(t { 1.0, 0.0 }) end, { leaf { 0.3, 0.6 } } },
      { 'Bernoulli logits', function(l) return D.Bernoulli { logits = l }:log_prob(t { 1.0, 0.0 }) end,
        { leaf { 0.3, -2.0 } } },
      { 'Categorical probs', function(p) return D.Categorical(p):log_prob(torch.tensor { 1, 3 }) end,
        { leaf { 0.2, 0.3, 0.5 } } },
      { 'Categorical logits', function(l) return D.Categorical { logits = l }:log_prob(torch.tensor { 2, 3 }) end,
        { leaf { 0.2, -1.3, 0.5 } } },
      { 'Binomial', function(p) return D.Binomial(10, p):log_prob(t { 3.0, 7.0 }) end, { leaf { 0.3, 0.6 } } },
      { 'Multinomial', function(l) return D.Multinomial(6, { logits = l }):log_prob(t { 1.0, 2.0, 3.0 }) end,
        { leaf { 0.2, -1.3, 0.5 } } },
      { 'Beta', function(a, b, x) return D.Beta(a, b):log_prob(x) end, { leaf { 2.0 }, leaf { 0.7 }, leaf { 0.3 } } },
      { 'Gamma', function(a, b, x) return D.Gamma(a, b):log_prob(x) end, { leaf { 2.0 }, leaf { 0.7 }, leaf { 1.3 } } },
      { 'Chi2', function(a, x) return D.Chi2(a):log_prob(x) end, { leaf { 3.0 }, leaf { 1.3 } } },
      { 'Dirichlet', function(c, x) return D.Dirichlet(c):log_prob(x / x:sum()) end,
        { leaf { 1.0, 2.0, 0.5 }, leaf { 0.2, 0.3, 0.5 } } },
      { 'Exponential', function(r, x) return D.Exponential(r):log_prob(x) end, { leaf { 2.0 }, leaf { 1.3 } } },
      { 'Laplace', function(a, b, x) return D.Laplace(a, b):log_prob(x) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'Poisson', function(r) return D.Poisson(r):log_prob(t { 0.0, 3.0 }) end, { leaf { 2.0, 0.5 } } },
      { 'Geometric', function(p) return D.Geometric(p):log_prob(t { 0.0, 3.0 }) end, { leaf { 0.2, 0.5 } } },
      { 'Cauchy', function(a, b, x) return D.Cauchy(a, b):log_prob(x) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'LogNormal', function(a, b, x) return D.LogNormal(a, b):log_prob(x) end,
        { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'StudentT', function(n, a, b, x) return D.StudentT(n, a, b):log_prob(x) end,
        { leaf { 3.0 }, leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'MultivariateNormal', function(m, l, x) return D.MultivariateNormal(m, { scale_tril = l:tril() }):log_prob(x) end,
        { leaf { 0.5, -0.5 }, leaf { { 1.5, 0.0 }, { 0.4, 0.8 } }, leaf { { 0.1, 0.2 }, { 1.0, -1.0 } } } },
      { 'MultivariateNormal precision', function(p)
        return D.MultivariateNormal(t { 0.0, 0.0 }, { precision_matrix = (p + p:t()) / 2 }):log_prob(t { 0.3, 0.4 })
      end, { leaf { { 2.0, 0.5 }, { 0.5, 1.0 } } } },
      { 'MixtureSameFamily', function(w, m, x)
        return D.MixtureSameFamily(D.Categorical { logits = w }, D.Normal(m, 1.0)):log_prob(x)
      end, { leaf { 0.2, -0.3 }, leaf { -1.0, 1.0 }, leaf { 0.3, 0.9 } } },
    }
    for _, c in ipairs(cases) do assert(gradcheck(c[2], c[3]), c[1]) end
  end)

  it('of entropy, cdf and icdf', function()
    local cases = {
      { 'Normal', function(b) return D.Normal(t { 0.0 }, b):entropy() end, { leaf { 1.5 } } },
      { 'Bernoulli', function(p) return D.Bernoulli(p):entropy() end, { leaf { 0.3, 0.6 } } },
      { 'Bernoulli logits', function(l) return D.Bernoulli { logits = l }:entropy() end, { leaf { 0.3, -2.0 } } },
      { 'Categorical', function(l) return D.Categorical { logits = l }:entropy() end, { leaf { 0.2, -1.3, 0.5 } } },
      { 'Binomial', function(p) return D.Binomial(6, p):entropy() end, { leaf { 0.3, 0.6 } } },
      { 'Multinomial', function(p) return D.Multinomial(4, p):entropy() end, { leaf { 0.2, 0.3, 0.5 } } },
      { 'Beta', function(a, b) return D.Beta(a, b):entropy() end, { leaf { 2.0 }, leaf { 0.7 } } },
      { 'Gamma', function(a, b) return D.Gamma(a, b):entropy() end, { leaf { 2.0 }, leaf { 0.7 } } },
      { 'Dirichlet', function(c) return D.Dirichlet(c):entropy() end, { leaf { 1.0, 2.0, 0.5 } } },
      { 'Exponential', function(r) return D.Exponential(r):entropy() end, { leaf { 2.0 } } },
      { 'Laplace', function(b) return D.Laplace(t { 0.0 }, b):entropy() end, { leaf { 1.5 } } },
      { 'Geometric', function(p) return D.Geometric(p):entropy() end, { leaf { 0.3 } } },
      { 'Cauchy', function(b) return D.Cauchy(t { 0.0 }, b):entropy() end, { leaf { 1.5 } } },
      { 'LogNormal', function(a, b) return D.LogNormal(a, b):entropy() end, { leaf { 0.3 }, leaf { 1.5 } } },
      { 'StudentT', function(n, b) return D.StudentT(n, t { 0.0 }, b):entropy() end, { leaf { 3.0 }, leaf { 1.5 } } },
      { 'MultivariateNormal', function(l) return D.MultivariateNormal(t { 0.0, 0.0 }, { scale_tril = l:tril() }):entropy() end,
        { leaf { { 1.5, 0.0 }, { 0.4, 0.8 } } } },
      { 'Normal cdf', function(a, b, x) return D.Normal(a, b):cdf(x) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'Normal icdf', function(a, b, p) return D.Normal(a, b):icdf(p) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.8 } } },
      { 'Laplace cdf', function(a, b, x) return D.Laplace(a, b):cdf(x) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.9 } } },
      { 'Cauchy icdf', function(a, b, p) return D.Cauchy(a, b):icdf(p) end, { leaf { 0.3 }, leaf { 1.5 }, leaf { 0.8 } } },
      { 'Exponential cdf', function(r, x) return D.Exponential(r):cdf(x) end, { leaf { 2.0 }, leaf { 0.4 } } },
    }
    for _, c in ipairs(cases) do assert(gradcheck(c[2], c[3]), c[1]) end
  end)

  it('of Gamma rsample: implicit reparameterisation, as PyTorch approximates it', function()
    torch.manual_seed(21)
    -- shapes where each of the three approximations serves (x < 0.8, alpha > 8, the rest)
    for _, a in ipairs { 0.3, 1.0, 2.5, 6.0, 12.0, 60.0 } do
      local n = 200
      local alpha = torch.full({ n }, a, { dtype = f64, requires_grad = true })
      local x = D.Gamma(alpha, 1.0):rsample()
      x:sum():backward()
      local xs, gs = x:detach():totable(), alpha.grad:totable()
      for i = 1, n do
        -- dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha), P by the incomplete gamma function
        local h = 1e-6 * math.max(a, 1)
        local dP = (M.gamma_p(a + h, xs[i]) - M.gamma_p(a - h, xs[i])) / (2 * h)
        local pdf = exp((a - 1) * log(xs[i]) - xs[i] - M.lgamma(a))
        H.close(gs[i], -dP / pdf, 2e-3, string.format('dx/dalpha at alpha %g, x %g', a, xs[i]))
      end
    end
    -- the rate: x = g / rate, so dx/drate = -x / rate
    local rate = leaf { 2.0 }
    local x = D.Gamma(t { 3.0 }, rate):rsample(5)
    x:sum():backward()
    H.close(rate.grad:item(), -x:detach():sum():item() / 2, 1e-12)
  end)

  it('of Beta, Dirichlet, Chi2 and StudentT rsample: unbiased pathwise gradients of the moments', function()
    torch.manual_seed(22)
    local n = 20000
    -- d E[x] / d alpha for Beta(a, b) is b / (a + b)^2; d E[x] / d beta is -a / (a + b)^2
    local a, b = leaf { 2.0 }, leaf { 3.0 }
    local x = D.Beta(a, b):rsample(n)
    x:mean():backward()
    H.close(a.grad:item(), 3 / 25, 0.05, 'Beta d/dalpha')
    H.close(b.grad:item(), -2 / 25, 0.05, 'Beta d/dbeta')
    -- Dirichlet: d E[x1] / d c1 = (c0 - c1) / c0^2 with c0 the total
    local c = leaf { 1.0, 2.0, 3.0 }
    D.Dirichlet(c):rsample(n):select(-1, 1):mean():backward()
    local g = c.grad:totable()
    H.close(g[1], 5 / 36, 0.05, 'Dirichlet d/dc1')
    H.close(g[2], -1 / 36, 0.1, 'Dirichlet d/dc2')
    -- Chi2: E[x^2] = df (df + 2), so d E[x^2] / d df = 2 df + 2
    local df = leaf { 3.0 }
    D.Chi2(df):rsample(n):pow(2):mean():backward()
    H.close(df.grad:item(), 8, 0.05, 'Chi2 d E[x^2] / d df')
    -- Gamma: d E[x] / d alpha = 1 / rate
    local alpha = leaf { 0.7 }
    D.Gamma(alpha, 2.0):rsample(n):mean():backward()
    H.close(alpha.grad:item(), 0.5, 0.03, 'Gamma d E[x] / d alpha')
    -- StudentT: Var = df / (df - 2) (scale 1), so d E[x^2] / d df = -2 / (df - 2)^2
    local nu = leaf { 6.0 }
    D.StudentT(nu):rsample(4 * n):pow(2):mean():backward()
    H.close(nu.grad:item(), -2 / 16, 0.1, 'StudentT d E[x^2] / d df')
  end)

  it('flag which distributions have rsample', function()
    for _, d in ipairs { D.Normal(0, 1), D.Uniform(0, 1), D.Beta(1, 1), D.Gamma(1, 1), D.Chi2(2), D.Dirichlet(t { 1.0, 1.0 }),
      D.Exponential(1), D.Laplace(0, 1), D.Cauchy(0, 1), D.LogNormal(0, 1), D.StudentT(3),
      D.MultivariateNormal(t { 0.0 }, t { { 1.0 } }) } do
      assert.is_true(d.has_rsample, d.class_name(d))
    end
    for _, d in ipairs { D.Bernoulli(0.5), D.Categorical(t { 0.5, 0.5 }), D.OneHotCategorical(t { 0.5, 0.5 }),
      D.Binomial(3, 0.5), D.Multinomial(3, t { 0.5, 0.5 }), D.Poisson(1), D.Geometric(0.5),
      D.MixtureSameFamily(D.Categorical(t { 0.5, 0.5 }), D.Normal(t { 0.0, 1.0 }, 1.0)) } do
      assert.is_false(d.has_rsample, d.class_name(d))
    end
    assert.is_true(D.Independent(D.Normal(t { 0.0 }, 1.0), 1).has_rsample)
    assert.is_false(D.Independent(D.Bernoulli(t { 0.5 }), 1).has_rsample)
    -- sample records no graph
    local loc = leaf { 0.0 }
    assert.is_false(D.Normal(loc, 1.0):sample().requires_grad)
    assert.is_true(D.Normal(loc, 1.0):rsample().requires_grad)
  end)
end)
