-- torch.distributions (lua/torch/distributions): densities, masses, CDFs, entropies and moments
-- against references written here in plain Lua (spec/support/distribution_math.lua: a Lanczos
-- log-gamma, digamma, the incomplete gamma function, Simpson's rule); batch and event shapes with
-- broadcasting, expand, the 1-based values of Categorical, the parameters' device (cpu:1) and
-- dtype, tostring, and the argument errors. Sampling, gradients and KL divergences are in
-- distributions_sampling_spec.lua and distributions_kl_spec.lua.
local torch = require 'torch'
local H = require 'spec.helpers'
local M = require 'spec.support.distribution_math'
local D = torch.distributions
local f64 = torch.float64
local log, exp, sqrt, pi = math.log, math.exp, math.sqrt, math.pi
local lgamma, digamma = M.lgamma, M.digamma

local function t(v, dtype) return torch.tensor(v, { dtype = dtype or f64 }) end

-- each element of tensor x against f(i) (i the 1-based flat index)
local function each(x, f, tol, msg)
  local got = x:reshape(-1):double():totable()
  for i, g in ipairs(got) do H.close(g, f(i), tol or 1e-10, (msg or 'value') .. ' ' .. i) end
  return #got
end

describe('torch.distributions', function()
  it('loads lazily, and not at start-up', function()
    local bin = os.getenv('LUTORCH_BIN') or 'build/lutorch'
    local p = assert(io.popen(bin .. [[ -e "io.write(tostring(package.loaded['torch.distributions'] == nil))"]]))
    local out = p:read('a')
    p:close()
    assert.are.equal('true', out)
    assert.is_table(D)
    assert.are.equal(D, require('torch.distributions'))
  end)

  describe('log_prob, cdf, icdf, entropy and moments against formulas', function()
    it('Normal', function()
      local loc, scale = { 0.0, 1.5, -2.0 }, { 1.0, 0.5, 3.0 }
      local x = { 0.3, 2.0, 4.0 }
      local d = D.Normal(t(loc), t(scale))
      each(d:log_prob(t(x)), function(i)
        return -((x[i] - loc[i]) ^ 2) / (2 * scale[i] ^ 2) - log(scale[i]) - 0.5 * log(2 * pi)
      end)
      -- the CDF by integrating the density from 12 standard deviations below
      each(d:cdf(t(x)), function(i)
        return M.integrate(function(u) return exp(-((u - loc[i]) ^ 2) / (2 * scale[i] ^ 2)) / (scale[i] * sqrt(2 * pi)) end,
          loc[i] - 12 * scale[i], x[i])
      end, 1e-9, 'cdf')
      H.assert_values(d:icdf(d:cdf(t(x))), x, 1e-9, 'icdf(cdf)')
      each(d:entropy(), function(i) return 0.5 + 0.5 * log(2 * pi) + log(scale[i]) end)
      H.assert_values(d.mean, loc); H.assert_values(d.mode, loc); H.assert_values(d.stddev, scale)
      H.assert_values(d.variance, { 1.0, 0.25, 9.0 })
      assert.is_true(d.has_rsample)
    end)

    it('Uniform', function()
      local d = D.Uniform(t { 0.0, -1.0 }, t { 2.0, 3.0 })
      H.assert_values(d:log_prob(t { 0.5, 2.5 }), { -log(2), -log(4) }, 1e-12)
      H.assert_values(d:cdf(t { 0.5, 2.0 }), { 0.25, 0.75 }, 1e-12)
      H.assert_values(D.Uniform(t { 0.0 }, t { 2.0 }, { validate_args = false }):cdf(t { { -1.0 }, { 3.0 } }), { 0, 1 })
      H.assert_values(d:icdf(t { 0.25, 0.5 }), { 0.5, 1.0 }, 1e-12)
      H.assert_values(d:entropy(), { log(2), log(4) }, 1e-12)
      H.assert_values(d.mean, { 1.0, 1.0 }); H.assert_values(d.variance, { 4 / 12, 16 / 12 }, 1e-12)
      H.assert_values(d.stddev, { 2 / sqrt(12), 4 / sqrt(12) }, 1e-12)
      assert.is_true(d.mode:isnan():all():item())
      -- outside [low, high): -inf without validation (the support check refuses it otherwise)
      local free = D.Uniform(t { 0.0 }, t { 1.0 }, { validate_args = false })
      assert.are.equal(-math.huge, free:log_prob(t { 1.0 }):item())
      H.raises(function() d:log_prob(t { 2.5, 0.0 }) end, 'Uniform', 'support')
    end)

    it('Bernoulli with probs or logits', function()
      local p = { 0.3, 0.8, 0.5 }
      local d = D.Bernoulli(t(p))
      H.assert_values(d:log_prob(t { 1.0, 0.0, 1.0 }), { log(0.3), log(0.2), log(0.5) }, 1e-12)
      each(d:entropy(), function(i) return -(M.plogp(p[i]) + M.plogp(1 - p[i])) end, 1e-12)
      H.assert_values(d.logits, { log(0.3 / 0.7), log(0.8 / 0.2), 0.0 }, 1e-12)
      H.assert_values(d.variance, { 0.21, 0.16, 0.25 }, 1e-12)
      local mode = d.mode:totable()
      assert.are.same({ 0.0, 1.0 }, { mode[1], mode[2] })
      assert.is_true(mode[3] ~= mode[3])
      local l = D.Bernoulli { logits = t { -0.4, 2.0 } }
      local q = { 1 / (1 + exp(0.4)), 1 / (1 + exp(-2)) }
      H.assert_values(l.probs, q, 1e-12)
      H.assert_values(l:log_prob(t { 1.0, 0.0 }), { log(q[1]), log(1 - q[2]) }, 1e-12)
      H.assert_values(d:enumerate_support(), { { 0, 0, 0 }, { 1, 1, 1 } })
      assert.are.same({ 2, 1 }, { table.unpack(d:enumerate_support(false).shape) })
      H.raises(function() d:log_prob(t { 0.5, 0.0, 1.0 }) end, 'Bernoulli', 'support', 'Boolean()')
    end)

    it('Binomial', function()
      local n, p = { 10, 10, 4 }, { 0.3, 0.9, 0.5 }
      local k = { 3, 9, 0 }
      local d = D.Binomial(t(n), t(p))
      local function lpmf(kk, nn, pp)
        return lgamma(nn + 1) - lgamma(kk + 1) - lgamma(nn - kk + 1) + kk * log(pp) + (nn - kk) * log(1 - pp)
      end
      each(d:log_prob(t(k)), function(i) return lpmf(k[i], n[i], p[i]) end, 1e-10)
      H.assert_values(d.mean, { 3, 9, 2 }, 1e-12)
      H.assert_values(d.variance, { 2.1, 0.9, 1.0 }, 1e-12)
      H.assert_values(d.mode, { 3, 9, 2 })
      local e = D.Binomial(10, t { 0.3, 0.9 })
      each(e:entropy(), function(i)
        local s = 0
        for kk = 0, 10 do s = s - M.plogp(exp(lpmf(kk, 10, ({ 0.3, 0.9 })[i]))) end
        return s
      end, 1e-10, 'entropy')
      H.raises(function() d:entropy() end, 'Binomial', 'inhomogeneous total_count')
      local l = D.Binomial(5, { logits = t { 0.0 } })
      H.assert_values(l:log_prob(t { 2.0 }), { lpmf(2, 5, 0.5) }, 1e-12)
      H.raises(function() d:log_prob(t { 11.0, 1.0, 1.0 }) end, 'Binomial', 'support')
    end)

    it('Categorical: 1-based classes', function()
      local p = { 0.2, 0.3, 0.5 }
      local d = D.Categorical(t { 2.0, 3.0, 5.0 }) -- normalised
      H.assert_values(d.probs, p, 1e-12)
      H.assert_values(d:log_prob(torch.tensor { 1, 2, 3 }), { log(0.2), log(0.3), log(0.5) }, 1e-12)
      -- float values of integers are accepted too
      H.assert_values(d:log_prob(t { 3.0 }), { log(0.5) }, 1e-12)
      each(d:entropy(), function() return -(M.plogp(0.2) + M.plogp(0.3) + M.plogp(0.5)) end, 1e-12)
      assert.are.equal(3, d.mode:item())
      H.assert_values(d:enumerate_support(), { 1, 2, 3 })
      assert.are.equal('IntegerInterval(lower_bound=1, upper_bound=3)', tostring(d.support))
      H.raises(function() d:log_prob(torch.tensor(0)) end, 'Categorical', 'support', 'lower_bound=1')
      H.raises(function() d:log_prob(torch.tensor(4)) end, 'Categorical', 'support')
      -- a batch from logits: normalised to log-probabilities
      local l = D.Categorical { logits = t { { 0.0, 1.0 }, { 2.0, 0.0 } } }
      assert.are.same({ 2 }, { table.unpack(l.batch_shape) })
      local z1, z2 = log(1 + exp(1)), log(exp(2) + 1)
      H.assert_values(l.logits, { { -z1, 1 - z1 }, { 2 - z2, -z2 } }, 1e-12)
      H.assert_values(l:log_prob(torch.tensor { 2, 1 }), { 1 - z1, 2 - z2 }, 1e-12)
      -- value broadcasting with the batch: one value for every row, or a sample of them
      H.assert_values(l:log_prob(torch.tensor(1)), { -z1, 2 - z2 }, 1e-12)
      assert.are.same({ 4, 2 }, { table.unpack(l:log_prob(torch.ones(4, 2, { dtype = torch.int64 })).shape) })
      H.assert_values(l.mode, { 2, 1 })
      H.assert_values(l:enumerate_support(), { { 1, 1 }, { 2, 2 } })
      assert.is_true(d.mean:isnan():item() and d.variance:isnan():item())
    end)

    it('OneHotCategorical', function()
      local d = D.OneHotCategorical(t { 0.2, 0.3, 0.5 })
      assert.are.same({ 3 }, { table.unpack(d.event_shape) })
      H.assert_values(d:log_prob(t { 0, 1, 0 }), { log(0.3) }, 1e-12)
      H.assert_values(d.mode, { 0, 0, 1 })
      H.assert_values(d.variance, { 0.16, 0.21, 0.25 }, 1e-12)
      H.assert_values(d:enumerate_support(), { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } })
      H.raises(function() d:log_prob(t { 0, 1, 1 }) end, 'OneHotCategorical', 'support')
    end)

    it('Multinomial', function()
      local p = { 0.2, 0.3, 0.5 }
      local d = D.Multinomial(10, t(p))
      local x = { 2, 3, 5 }
      local ref = lgamma(11)
      for i = 1, 3 do ref = ref - lgamma(x[i] + 1) + x[i] * log(p[i]) end
      H.assert_values(d:log_prob(t(x)), { ref }, 1e-10)
      H.assert_values(d.mean, { 2, 3, 5 }, 1e-12)
      H.assert_values(d.variance, { 1.6, 2.1, 2.5 }, 1e-12)
      -- the entropy by summing over every count vector of 4 draws of 3 classes
      local e = D.Multinomial(4, t(p))
      local h = 0
      for a = 0, 4 do
        for b = 0, 4 - a do
          local c = 4 - a - b
          h = h - M.plogp(exp(lgamma(5) - lgamma(a + 1) - lgamma(b + 1) - lgamma(c + 1) + a * log(p[1]) + b * log(p[2])
            + c * log(p[3])))
        end
      end
      H.assert_values(e:entropy(), { h }, 1e-10)
      H.raises(function() D.Multinomial(2.5, t(p)) end, 'Multinomial', 'total_count')
      H.raises(function() d:log_prob(t { 2, 3, 6 }) end, 'Multinomial', 'support')
    end)

    it('Gamma, Chi2 and Exponential', function()
      local a, b = { 2.0, 0.5, 7.5 }, { 1.0, 2.0, 0.3 }
      local x = { 1.0, 0.3, 20.0 }
      local d = D.Gamma(t(a), t(b))
      local function lpdf(xx, aa, bb) return aa * log(bb) + (aa - 1) * log(xx) - bb * xx - lgamma(aa) end
      each(d:log_prob(t(x)), function(i) return lpdf(x[i], a[i], b[i]) end, 1e-10)
      each(d:entropy(), function(i) return a[i] - log(b[i]) + lgamma(a[i]) + (1 - a[i]) * digamma(a[i]) end, 1e-10)
      -- the entropy of the first by integration
      -- (over v = sqrt(u), smooth at 0)
      H.close(d:entropy():totable()[1], -M.integrate(function(v)
        local u = v * v
        return u > 0 and 2 * v * exp(lpdf(u, 2, 1)) * lpdf(u, 2, 1) or 0
      end, 0, 8, 40000), 1e-9, 'Gamma entropy by integration')
      H.assert_values(d.mean, { 2, 0.25, 25 }, 1e-12)
      H.assert_values(d.variance, { 2, 0.125, 7.5 / 0.09 }, 1e-12)
      H.assert_values(d.mode, { 1, 0, 6.5 / 0.3 }, 1e-12)
      -- a number value is accepted, as PyTorch's as_tensor
      H.assert_values(D.Gamma(t { 2.0 }, t { 1.0 }):log_prob(1.0), { lpdf(1, 2, 1) }, 1e-12)
      local c = D.Chi2(t { 3.0, 1.5 })
      H.assert_values(c.df, { 3, 1.5 })
      H.assert_values(c:log_prob(t { 1.0, 2.5 }), { lpdf(1, 1.5, 0.5), lpdf(2.5, 0.75, 0.5) }, 1e-10)
      H.assert_values(c.mean, { 3, 1.5 }, 1e-12)
      local e = D.Exponential(t { 2.0, 0.5 })
      H.assert_values(e:log_prob(t { 1.0, 0.3 }), { log(2) - 2, log(0.5) - 0.15 }, 1e-12)
      H.assert_values(e:cdf(t { 1.0, 0.3 }), { 1 - exp(-2), 1 - exp(-0.15) }, 1e-12)
      H.assert_values(e:icdf(t { 0.5, 0.9 }), { log(2) / 2, -log(0.1) / 0.5 }, 1e-12)
      H.assert_values(e:entropy(), { 1 - log(2), 1 - log(0.5) }, 1e-12)
      H.assert_values(e.mean, { 0.5, 2 }); H.assert_values(e.stddev, { 0.5, 2 }); H.assert_values(e.variance, { 0.25, 4 })
      H.assert_values(e.mode, { 0, 0 })
      H.raises(function() e:log_prob(t { -1.0, 0.3 }) end, 'Exponential', 'support', 'GreaterThanEq(lower_bound=0.0)')
    end)

    it('Beta and Dirichlet', function()
      local a, b = { 2.0, 0.5, 3.0 }, { 3.0, 0.7, 1.5 }
      local x = { 0.3, 0.6, 0.9 }
      local d = D.Beta(t(a), t(b))
      local function lpdf(xx, aa, bb) return (aa - 1) * log(xx) + (bb - 1) * log(1 - xx) - M.lbeta(aa, bb) end
      each(d:log_prob(t(x)), function(i) return lpdf(x[i], a[i], b[i]) end, 1e-10)
      each(d:entropy(), function(i)
        local aa, bb = a[i], b[i]
        return M.lbeta(aa, bb) - (aa - 1) * digamma(aa) - (bb - 1) * digamma(bb) + (aa + bb - 2) * digamma(aa + bb)
      end, 1e-10)
      H.close(d:entropy():totable()[1], -M.integrate(function(u)
        return (u > 0 and u < 1) and exp(lpdf(u, 2, 3)) * lpdf(u, 2, 3) or 0
      end, 0, 1), 1e-8, 'Beta entropy by integration')
      each(d.mean, function(i) return a[i] / (a[i] + b[i]) end, 1e-12)
      each(d.variance, function(i) return a[i] * b[i] / ((a[i] + b[i]) ^ 2 * (a[i] + b[i] + 1)) end, 1e-12)
      H.close(d.mode:totable()[1], 1 / 3, 1e-12)
      H.assert_values(d.concentration1, a); H.assert_values(d.concentration0, b)
      local c = { 1.0, 2.0, 3.0 }
      local dir = D.Dirichlet(t(c))
      local v = { 0.2, 0.3, 0.5 }
      local ref = lgamma(6)
      for i = 1, 3 do ref = ref - lgamma(c[i]) + (c[i] - 1) * log(v[i]) end
      H.assert_values(dir:log_prob(t(v)), { ref }, 1e-10)
      -- log B(c) + (c0 - K) psi(c0) - sum (c - 1) psi(c)
      local h = lgamma(1) + lgamma(2) + lgamma(3) - lgamma(6) + (6 - 3) * digamma(6)
      for i = 1, 3 do h = h - (c[i] - 1) * digamma(c[i]) end
      H.assert_values(dir:entropy(), { h }, 1e-10)
      H.assert_values(dir.mean, { 1 / 6, 2 / 6, 3 / 6 }, 1e-12)
      H.assert_values(dir.mode, { 0, 1 / 3, 2 / 3 }, 1e-12)
      H.assert_values(dir.variance, { 5 / 252, 8 / 252, 9 / 252 }, 1e-12)
      -- every concentration below 1: unbounded at every vertex; the first, as PyTorch 1.13 gives
      H.assert_values(D.Dirichlet(t { { 0.5, 0.9, 0.7 }, { 2.0, 3.0, 4.0 } }).mode, { { 1, 0, 0 }, { 1 / 6, 2 / 6, 3 / 6 } },
        1e-12)
      H.raises(function() dir:log_prob(t { 0.2, 0.3, 0.6 }) end, 'Dirichlet', 'support', 'Simplex()')
    end)

    it('Laplace, Cauchy and StudentT', function()
      local d = D.Laplace(t { 0.0, 1.0 }, t { 2.0, 0.5 })
      H.assert_values(d:log_prob(t { 1.0, 0.3 }), { -log(4) - 0.5, -log(1) - 1.4 }, 1e-12)
      H.assert_values(d:cdf(t { 1.0, 0.3 }), { 1 - 0.5 * exp(-0.5), 0.5 * exp(-1.4) }, 1e-12)
      H.assert_values(d:icdf(d:cdf(t { 1.0, 0.3 })), { 1.0, 0.3 }, 1e-12)
      H.assert_values(d:entropy(), { 1 + log(4), 1 + log(1) }, 1e-12)
      H.assert_values(d.variance, { 8, 0.5 }, 1e-12); H.assert_values(d.stddev, { sqrt(8), sqrt(0.5) }, 1e-12)
      local c = D.Cauchy(t { 0.0, 1.0 }, t { 1.0, 3.0 })
      H.assert_values(c:log_prob(t { 1.0, -2.0 }), { -log(pi) - log(2), -log(pi) - log(3) - log(2) }, 1e-12)
      H.assert_values(c:cdf(t { 1.0, -2.0 }), { 0.75, 0.25 }, 1e-12)
      H.assert_values(c:icdf(t { 0.75, 0.25 }), { 1.0, -2.0 }, 1e-12)
      H.assert_values(c:entropy(), { log(4 * pi), log(12 * pi) }, 1e-12)
      assert.is_true(c.mean:isnan():all():item())
      H.assert_values(c.variance, { math.huge, math.huge })
      local df, loc, scale = { 3.0, 1.5, 0.8 }, { 0.5, 0.0, 0.0 }, { 2.0, 1.0, 1.0 }
      local s = D.StudentT(t(df), t(loc), t(scale))
      local function lpdf(xx, n, m, sc)
        local y = (xx - m) / sc
        return lgamma((n + 1) / 2) - lgamma(n / 2) - 0.5 * log(n * pi) - log(sc) - (n + 1) / 2 * log(1 + y * y / n)
      end
      each(s:log_prob(t { 1.0, -2.0, 0.4 }), function(i) return lpdf(({ 1.0, -2.0, 0.4 })[i], df[i], loc[i], scale[i]) end,
        1e-10)
      each(s:entropy(), function(i)
        local n = df[i]
        return log(scale[i]) + (n + 1) / 2 * (digamma((n + 1) / 2) - digamma(n / 2)) + 0.5 * log(n) + M.lbeta(n / 2, 0.5)
      end, 1e-10)
      local m = s.mean:totable()
      H.close(m[1], 0.5); H.close(m[2], 0.0)
      assert.is_true(m[3] ~= m[3])
      local v = s.variance:totable()
      H.close(v[1], 4 * 3); assert.are.equal(math.huge, v[2])
      assert.is_true(v[3] ~= v[3])
      -- loc and scale default to 0 and 1
      H.assert_values(D.StudentT(t { 4.0 }):log_prob(t { 0.7 }), { lpdf(0.7, 4, 0, 1) }, 1e-10)
    end)

    it('Poisson and Geometric', function()
      local r = { 2.0, 30.0, 0.5 }
      local d = D.Poisson(t(r))
      each(d:log_prob(t { 1.0, 28.0, 0.0 }), function(i)
        local k = ({ 1, 28, 0 })[i]
        return k * log(r[i]) - r[i] - lgamma(k + 1)
      end, 1e-10)
      H.assert_values(d.mean, r); H.assert_values(d.variance, r); H.assert_values(d.mode, { 2, 30, 0 })
      -- rate 0: all the mass at 0
      H.assert_values(D.Poisson(t { 0.0 }):log_prob(t { 0.0 }), { 0 })
      local g = D.Geometric(t { 0.3, 0.9, 1.0 })
      H.assert_values(g:log_prob(t { 2.0, 0.0, 0.0 }), { 2 * log(0.7) + log(0.3), log(0.9), 0 }, 1e-12)
      local ent = g:entropy():totable()
      local href = 0
      for k = 0, 400 do href = href - M.plogp(0.7 ^ k * 0.3) end
      H.close(ent[1], href, 1e-10, 'Geometric entropy')
      H.assert_values(g.mean:narrow(1, 1, 2), { 0.7 / 0.3, 0.1 / 0.9 }, 1e-12)
      H.assert_values(g.variance:narrow(1, 1, 2), { 0.7 / 0.09, 0.1 / 0.81 }, 1e-12)
      H.raises(function() D.Geometric(t { 0.0, 0.5 }) end, 'Geometric', 'probs', 'positive')
      local l = D.Geometric { logits = t { 0.0 } }
      H.assert_values(l:log_prob(t { 3.0 }), { 4 * log(0.5) }, 1e-12)
    end)

    it('LogNormal and TransformedDistribution', function()
      local d = D.LogNormal(t { 0.0, 1.0 }, t { 1.0, 0.5 })
      local x = { 1.0, 2.5 }
      each(d:log_prob(t(x)), function(i)
        local m, s = ({ 0.0, 1.0 })[i], ({ 1.0, 0.5 })[i]
        return -((log(x[i]) - m) ^ 2) / (2 * s * s) - log(s) - 0.5 * log(2 * pi) - log(x[i])
      end, 1e-12)
      local n = D.Normal(t { 0.0, 1.0 }, t { 1.0, 0.5 })
      H.assert_values(d:cdf(t(x)), n:cdf(t(x):log()):totable(), 1e-12)
      H.assert_values(d:icdf(t { 0.3, 0.8 }), n:icdf(t { 0.3, 0.8 }):exp():totable(), 1e-12)
      H.assert_values(d.mean, { exp(0.5), exp(1 + 0.125) }, 1e-12)
      H.assert_values(d.variance, { (exp(1) - 1) * exp(1), (exp(0.25) - 1) * exp(2.25) }, 1e-12)
      H.assert_values(d.mode, { exp(-1), exp(0.75) }, 1e-12)
      H.assert_values(d:entropy(), { 0.5 + 0.5 * log(2 * pi), 0.5 + 0.5 * log(2 * pi) + log(0.5) + 1 }, 1e-12)
      assert.are.equal('GreaterThan(lower_bound=0.0)', tostring(d.support))
      assert.is_true(d.has_rsample)
      -- logistic = sigmoid^-1 of a uniform, shifted and scaled: log p(y) = -z - log s - 2 log(1 + e^-z)
      local T = D.transforms
      local logistic = D.TransformedDistribution(D.Uniform(t { 0.0 }, t { 1.0 }),
        { T.SigmoidTransform().inv, T.AffineTransform(0.5, 2.0) })
      for _, y in ipairs { -3.0, 0.5, 4.0 } do
        local z = (y - 0.5) / 2
        H.close(logistic:log_prob(t { y }):item(), -z - log(2) - 2 * log(1 + exp(-z)), 1e-10, 'logistic ' .. y)
        H.close(logistic:cdf(t { y }):item(), 1 / (1 + exp(-z)), 1e-10, 'logistic cdf ' .. y)
      end
      -- a decreasing map: the CDF is mirrored
      local neg = D.TransformedDistribution(D.Exponential(t { 1.0 }), T.AffineTransform(0.0, -1.0))
      H.close(neg:cdf(t { -2.0 }):item(), exp(-2), 1e-12)
      -- tanh of a normal: log p(y) = log N(atanh y) - log(1 - y^2)
      local th = D.TransformedDistribution(D.Normal(t { 0.0 }, t { 1.0 }), T.TanhTransform())
      local y = 0.5
      local at = 0.5 * log((1 + y) / (1 - y))
      H.close(th:log_prob(t { y }):item(), -at * at / 2 - 0.5 * log(2 * pi) - log(1 - y * y), 1e-12)
      assert.are.equal('Interval(lower_bound=-1.0, upper_bound=1.0)', tostring(th.support))
    end)

    it('MultivariateNormal from a covariance, a precision or a Cholesky factor', function()
      local cov = { { 2.0, 0.5, 0.3 }, { 0.5, 1.0, -0.2 }, { 0.3, -0.2, 1.5 } }
      local mu = { 0.0, 1.0, -1.0 }
      local x = { 0.5, 0.5, 0.2 }
      local diff = { x[1] - mu[1], x[2] - mu[2], x[3] - mu[3] }
      local sol, det = M.solve(cov, diff)
      local maha = diff[1] * sol[1] + diff[2] * sol[2] + diff[3] * sol[3]
      local ref = -0.5 * (3 * log(2 * pi) + log(det) + maha)
      local ent = 0.5 * 3 * (1 + log(2 * pi)) + 0.5 * log(det)
      local from_cov = D.MultivariateNormal(t(mu), t(cov))
      local from_prec = D.MultivariateNormal(t(mu), { precision_matrix = t(M.inverse(cov)) })
      local from_tril = D.MultivariateNormal(t(mu), { scale_tril = torch.linalg.cholesky(t(cov)) })
      for name, d in pairs { covariance = from_cov, precision = from_prec, scale_tril = from_tril } do
        H.assert_values(d:log_prob(t(x)), { ref }, 1e-10, name .. ' log_prob')
        H.assert_values(d:entropy(), { ent }, 1e-10, name .. ' entropy')
        H.assert_values(d.covariance_matrix, cov, 1e-10, name .. ' covariance')
        H.assert_values(d.precision_matrix, M.inverse(cov), 1e-10, name .. ' precision')
        H.assert_values(d.variance, { 2.0, 1.0, 1.5 }, 1e-10, name .. ' variance')
        H.assert_values(d.mean, mu); H.assert_values(d.mode, mu)
        assert.are.same({ 3 }, { table.unpack(d.event_shape) })
        assert.are.same({}, { table.unpack(d.batch_shape) })
      end
      H.assert_values(from_cov.scale_tril:matmul(from_cov.scale_tril:t()), cov, 1e-12)
      -- values batched over samples and a batch of locations share one factor
      local batch = D.MultivariateNormal(t { mu, { 0.0, 0.0, 0.0 } }, t(cov))
      assert.are.same({ 2 }, { table.unpack(batch.batch_shape) })
      local vals = t { { x, x }, { mu, x }, { x, { 0.0, 0.0, 0.0 } } }
      local lp = batch:log_prob(vals)
      assert.are.same({ 3, 2 }, { table.unpack(lp.shape) })
      for i = 1, 3 do
        for j = 1, 2 do
          local xv = vals[i][j]:totable()
          local m = batch.loc[j]:totable()
          local dd = { xv[1] - m[1], xv[2] - m[2], xv[3] - m[3] }
          local s = M.solve(cov, dd)
          H.close(lp[i][j], -0.5 * (3 * log(2 * pi) + log(det) + dd[1] * s[1] + dd[2] * s[2] + dd[3] * s[3]), 1e-10)
        end
      end
    end)

    it('Independent sums the reinterpreted dimensions', function()
      local base = D.Normal(t { { 0.0, 1.0, 2.0 }, { 1.0, 1.0, 1.0 } }, t { { 1.0, 2.0, 0.5 }, { 1.0, 1.0, 1.0 } })
      local d = D.Independent(base, 1)
      assert.are.same({ 2 }, { table.unpack(d.batch_shape) })
      assert.are.same({ 3 }, { table.unpack(d.event_shape) })
      local x = t { 0.1, 0.2, 0.3 }
      H.assert_values(d:log_prob(x), base:log_prob(x):sum(-1):totable(), 1e-12)
      H.assert_values(d:entropy(), base:entropy():sum(-1):totable(), 1e-12)
      assert.is_true(d.has_rsample)
      assert.are.equal('IndependentConstraint(Real(), 1)', tostring(d.support))
      local both = D.Independent(base, 2)
      assert.are.same({}, { table.unpack(both.batch_shape) })
      H.raises(function() D.Independent(base, 3) end, 'Independent', 'reinterpreted_batch_ndims')
    end)

    it('MixtureSameFamily', function()
      local w, m, s = { 0.3, 0.7 }, { -1.0, 1.0 }, { 1.0, 0.5 }
      local d = D.MixtureSameFamily(D.Categorical(t(w)), D.Normal(t(m), t(s)))
      local function pdf(x)
        local r = 0
        for k = 1, 2 do r = r + w[k] * exp(-((x - m[k]) ^ 2) / (2 * s[k] ^ 2)) / (s[k] * sqrt(2 * pi)) end
        return r
      end
      H.assert_values(d:log_prob(t { 0.0, 1.2 }), { log(pdf(0.0)), log(pdf(1.2)) }, 1e-12)
      H.close(d:cdf(t { 0.3 }):item(), M.integrate(pdf, -15, 0.3), 1e-9)
      local mean = w[1] * m[1] + w[2] * m[2]
      H.close(d.mean:item(), mean, 1e-12)
      H.close(d.variance:item(), w[1] * (s[1] ^ 2 + m[1] ^ 2) + w[2] * (s[2] ^ 2 + m[2] ^ 2) - mean ^ 2, 1e-12)
      H.raises(function() D.MixtureSameFamily(D.Categorical(t { 0.5, 0.5 }), D.Normal(t { 0.0, 1.0, 2.0 }, 1.0)) end,
        'MixtureSameFamily', 'does not equal')
      H.raises(function() D.MixtureSameFamily(D.Normal(0, 1), D.Normal(t { 0.0 }, 1.0)) end, 'MixtureSameFamily',
        'Categorical')
    end)
  end)

  describe('shapes', function()
    it('broadcast the parameters, numbers taking the tensors\' dtype and device', function()
      local d = D.Normal(t { { 0.0 }, { 1.0 } }, t { 1.0, 2.0, 3.0 })
      assert.are.same({ 2, 3 }, { table.unpack(d.batch_shape) })
      assert.are.same({}, { table.unpack(d.event_shape) })
      assert.are.equal('torch.Size([2, 3])', tostring(d.batch_shape))
      assert.are.same({ 5, 4, 2, 3 }, { table.unpack(d:sample({ 5, 4 }).shape) })
      assert.are.same({ 5, 2, 3 }, { table.unpack(d:rsample(5).shape) })
      assert.are.same({ 2, 3 }, { table.unpack(d:sample().shape) })
      assert.are.same({ 2, 3 }, { table.unpack(d:log_prob(t { 0.5, 0.5, 0.5 }).shape) })
      assert.are.same({ 7, 2, 3 }, { table.unpack(d:log_prob(torch.zeros(7, 1, 1, { dtype = f64 })).shape) })
      -- numbers: scalar distributions of the default dtype
      local s = D.Normal(0, 1)
      assert.are.same({}, { table.unpack(s.batch_shape) })
      assert.are.equal(torch.float32, s:sample().dtype)
      local m = D.Normal(t { 1.0, 2.0 }, 3)
      assert.are.equal(f64, m.scale.dtype)
      H.assert_values(m.scale, { 3, 3 })
      H.raises(function() D.Normal(t { 0.0, 1.0 }, t { 1.0, 1.0, 1.0 }) end, 'Normal', 'broadcast')
    end)

    it('expand to a larger batch without copying', function()
      local d = D.Gamma(t { 2.0, 3.0 }, t { 1.0, 0.5 })
      local e = d:expand({ 4, 2 })
      assert.are.same({ 4, 2 }, { table.unpack(e.batch_shape) })
      local row = d:log_prob(t { 1.0, 1.0 }):totable()
      H.assert_values(e:log_prob(t { 1.0, 1.0 }), { row, row, row, row }, 1e-12)
      assert.are.same({ 3, 4, 2 }, { table.unpack(e:sample(3).shape) })
      assert.are.equal(d._validate_args, e._validate_args)
      for _, c in ipairs {
        { D.Normal(t { 0.0 }, t { 1.0 }), {} }, { D.Uniform(t { 0.0 }, t { 1.0 }), {} },
        { D.Bernoulli(t { 0.3 }), {} }, { D.Categorical(t { { 0.2, 0.8 } }), {} },
        { D.OneHotCategorical(t { { 0.2, 0.8 } }), { 2 } }, { D.Binomial(5, t { 0.3 }), {} },
        { D.Multinomial(5, t { { 0.2, 0.8 } }), { 2 } }, { D.Beta(t { 2.0 }, t { 3.0 }), {} },
        { D.Dirichlet(t { { 1.0, 2.0 } }), { 2 } }, { D.Exponential(t { 1.0 }), {} },
        { D.Laplace(t { 0.0 }, t { 1.0 }), {} }, { D.Poisson(t { 1.0 }), {} }, { D.Geometric(t { 0.5 }), {} },
        { D.Cauchy(t { 0.0 }, t { 1.0 }), {} }, { D.LogNormal(t { 0.0 }, t { 1.0 }), {} },
        { D.StudentT(t { 3.0 }), {} }, { D.Chi2(t { 3.0 }), {} },
        { D.MultivariateNormal(t { { 0.0, 0.0 } }, t { { 1.0, 0.0 }, { 0.0, 1.0 } }), { 2 } },
        { D.Independent(D.Normal(t { { 0.0, 1.0 } }, 1.0), 1), { 2 } },
        { D.MixtureSameFamily(D.Categorical(t { { 0.5, 0.5 } }), D.Normal(t { { 0.0, 1.0 } }, 1.0)), {} },
      } do
        local dist, es = c[1], c[2]
        local name = dist.class_name(dist)
        local x = dist:expand({ 3, 1 })
        assert.are.same({ 3, 1 }, { table.unpack(x.batch_shape) }, name)
        assert.are.same(es, { table.unpack(x.event_shape) }, name)
        local smp = x:sample(2)
        local want = { 2, 3, 1 }
        for _, v in ipairs(es) do want[#want + 1] = v end
        assert.are.same(want, { table.unpack(smp.shape) }, name)
        assert.are.same({ 2, 3, 1 }, { table.unpack(x:log_prob(smp).shape) }, name)
        assert.are.equal(getmetatable(dist), getmetatable(x), name)
      end
    end)

    it('give event shapes to the multivariate families', function()
      local d = D.Dirichlet(t { { 1.0, 2.0, 3.0 }, { 1.0, 1.0, 1.0 } })
      assert.are.same({ 2 }, { table.unpack(d.batch_shape) })
      assert.are.same({ 3 }, { table.unpack(d.event_shape) })
      assert.are.same({ 4, 2, 3 }, { table.unpack(d:sample(4).shape) })
      H.raises(function() d:log_prob(t { 0.5, 0.5 }) end, 'Dirichlet', 'event_shape')
      H.raises(function() d:log_prob(t { { 0.2, 0.3, 0.5 }, { 0.2, 0.3, 0.5 }, { 0.2, 0.3, 0.5 } }) end, 'Dirichlet',
        'broadcastable')
      local m = D.Multinomial(3, t { { 0.5, 0.5 } })
      assert.are.same({ 1 }, { table.unpack(m.batch_shape) })
      assert.are.same({ 2 }, { table.unpack(m.event_shape) })
    end)
  end)

  describe('devices and dtypes', function()
    it('sample, score and differentiate on cpu:1', function()
      if torch.cpu.device_count() < 2 then
        pending('needs LUTORCH_CPU_DEVICES=2')
        return
      end
      local dev = 'cpu:1'
      local function p(v) return torch.tensor(v, { dtype = f64, device = dev }) end
      local cases = {
        D.Normal(p { 0.0, 1.0 }, p { 1.0, 2.0 }), D.Uniform(p { 0.0 }, 2), D.Bernoulli(p { 0.3 }),
        D.Categorical(p { 0.2, 0.8 }), D.OneHotCategorical(p { 0.2, 0.8 }), D.Binomial(20, p { 0.3, 0.9 }),
        D.Multinomial(4, p { 0.2, 0.8 }), D.Beta(p { 2.0 }, p { 0.5 }), D.Gamma(p { 0.5, 3.0 }, 1.0),
        D.Chi2(p { 2.0 }), D.Dirichlet(p { 1.0, 2.0 }), D.Exponential(p { 2.0 }), D.Laplace(p { 0.0 }, 1.0),
        D.Poisson(p { 3.0, 40.0 }), D.Geometric(p { 0.4 }), D.Cauchy(p { 0.0 }, 1.0), D.LogNormal(p { 0.0 }, 1.0),
        D.StudentT(p { 3.0 }), D.MultivariateNormal(p { 0.0, 0.0 }, p { { 2.0, 0.3 }, { 0.3, 1.0 } }),
        D.Independent(D.Normal(p { 0.0, 1.0 }, 1.0), 1),
        D.MixtureSameFamily(D.Categorical(p { 0.5, 0.5 }), D.Normal(p { 0.0, 1.0 }, 1.0)),
      }
      for _, d in ipairs(cases) do
        local name = d.class_name(d)
        local s = d:sample(3)
        assert.are.equal(dev, tostring(s.device), name)
        if name == 'Categorical' then
          assert.are.equal(torch.int64, s.dtype)
        else
          assert.are.equal(f64, s.dtype, name)
        end
        local lp = d:log_prob(s)
        assert.are.equal(dev, tostring(lp.device), name)
        assert.is_true(lp:isfinite():all():item(), name)
        if d.has_rsample then assert.are.equal(dev, tostring(d:rsample(2).device), name) end
      end
      -- gradients reach parameters on cpu:1
      local loc = p { 0.5 }:requires_grad_()
      local scale = p { 2.0 }:requires_grad_()
      local d = D.Normal(loc, scale)
      local loss = d:rsample(10):sum() + d:entropy():sum() + d:log_prob(p { 1.0 }):sum()
      loss:backward()
      assert.are.equal(dev, tostring(loc.grad.device))
      assert.is_true(scale.grad:isfinite():all():item())
      local conc = p { 1.5, 2.5 }:requires_grad_()
      D.Dirichlet(conc):rsample(4):select(-1, 1):sum():backward()
      assert.are.equal(dev, tostring(conc.grad.device))
    end)

    it('follow the parameters\' dtype', function()
      for _, dt in ipairs { torch.float32, f64 } do
        local d = D.Gamma(torch.tensor({ 2.0 }, { dtype = dt }), 1.0)
        assert.are.equal(dt, d:sample(2).dtype)
        assert.are.equal(dt, D.Poisson(torch.tensor({ 3.0 }, { dtype = dt })):sample().dtype)
        assert.are.equal(dt, D.Binomial(5, torch.tensor({ 0.5 }, { dtype = dt })):sample().dtype)
        assert.are.equal(dt, D.Cauchy(torch.tensor({ 0.0 }, { dtype = dt }), 1):sample().dtype)
        assert.are.equal(dt, D.Exponential(torch.tensor({ 1.0 }, { dtype = dt })):sample().dtype)
        assert.are.equal(dt, D.Dirichlet(torch.tensor({ 1.0, 1.0 }, { dtype = dt })):sample().dtype)
      end
    end)
  end)

  describe('printing', function()
    it('as PyTorch\'s repr', function()
      assert.are.equal('Normal(loc: torch.Size([3]), scale: torch.Size([3]))',
        tostring(D.Normal(torch.zeros(3), torch.ones(3))))
      assert.are.equal('Normal(loc: ' .. tostring(torch.tensor(0.0)) .. ', scale: ' .. tostring(torch.tensor(1.0)) .. ')',
        tostring(D.Normal(0, 1)))
      assert.are.equal('Bernoulli(probs: torch.Size([2]))', tostring(D.Bernoulli(torch.tensor { 0.2, 0.4 })))
      assert.are.equal('Categorical(logits: torch.Size([3]))', tostring(D.Categorical { logits = torch.zeros(3) }))
      assert.are.equal('Independent(Normal(loc: torch.Size([3]), scale: torch.Size([3])), 1)',
        tostring(D.Independent(D.Normal(torch.zeros(3), torch.ones(3)), 1)))
      assert.are.equal('MultivariateNormal(loc: torch.Size([2]), scale_tril: torch.Size([2, 2]))',
        tostring(D.MultivariateNormal(torch.zeros(2), { scale_tril = torch.eye(2) })))
      assert.are.equal('GreaterThan(lower_bound=0.0)', tostring(D.constraints.positive))
      assert.are.equal('_InverseTransform(ExpTransform())', tostring(D.ExpTransform().inv))
    end)
  end)

  describe('arguments', function()
    it('are validated by default, with errors naming the distribution and the argument', function()
      H.raises(function() D.Normal(t { 0.0, 1.0 }, t { 1.0, -1.0 }) end, 'Normal', 'parameter scale', 'GreaterThan')
      H.raises(function() D.Normal(t { 0 / 0 }, t { 1.0 }) end, 'Normal', 'parameter loc', 'Real()')
      H.raises(function() D.Bernoulli(t { 1.5 }) end, 'Bernoulli', 'parameter probs', 'Interval')
      H.raises(function() D.Categorical(t { -0.5, 1.5 }) end, 'Categorical', 'parameter probs', 'Simplex')
      H.raises(function() D.OneHotCategorical(t { -0.5, 1.5 }) end, 'OneHotCategorical', 'parameter probs')
      H.raises(function() D.Multinomial(3, t { -0.5, 1.5 }) end, 'Multinomial', 'parameter probs')
      H.raises(function() D.Binomial(t { 2.5 }, t { 0.5 }) end, 'Binomial', 'parameter total_count')
      H.raises(function() D.Beta(t { 1.0 }, t { -1.0 }) end, 'Beta', 'parameter concentration0')
      H.raises(function() D.Gamma(t { 0.0 }, t { 1.0 }) end, 'Gamma', 'parameter concentration')
      H.raises(function() D.Chi2(t { -1.0 }) end, 'Chi2', 'parameter df')
      H.raises(function() D.Dirichlet(t { 1.0, 0.0 }) end, 'Dirichlet', 'parameter concentration')
      H.raises(function() D.Exponential(t { 0.0 }) end, 'Exponential', 'parameter rate')
      H.raises(function() D.Laplace(t { 0.0 }, t { 0.0 }) end, 'Laplace', 'parameter scale')
      H.raises(function() D.Poisson(t { -1.0 }) end, 'Poisson', 'parameter rate')
      H.raises(function() D.Cauchy(t { 0.0 }, t { -2.0 }) end, 'Cauchy', 'parameter scale')
      H.raises(function() D.LogNormal(t { 0.0 }, t { -2.0 }) end, 'LogNormal', 'parameter scale')
      H.raises(function() D.StudentT(t { -3.0 }) end, 'StudentT', 'parameter df')
      H.raises(function() D.Uniform(t { 1.0 }, t { 0.0 }) end, 'Uniform', 'low >= high')
      H.raises(function() D.MultivariateNormal(t { 0.0, 0.0 }, t { { 1.0, 2.0 }, { 2.0, 1.0 } }) end,
        'MultivariateNormal', 'parameter covariance_matrix', 'PositiveDefinite')
      H.raises(function() D.MultivariateNormal(t { 0.0, 0.0 }, { scale_tril = t { { 1.0, 1.0 }, { 0.0, 1.0 } } }) end,
        'MultivariateNormal', 'parameter scale_tril', 'LowerCholesky')
      -- the message reports the user's line, not the library's
      local err = H.raises(function() D.Normal(t { 0.0 }, t { -1.0 }) end)
      assert.is_truthy(err:find('distributions_spec.lua', 1, true), err)
    end)

    it('can go unvalidated, per instance or by default', function()
      local d = D.Normal(t { 0.0 }, t { -1.0 }, { validate_args = false })
      assert.is_false(d.validate_args)
      assert.is_true(d:log_prob(t { 0.0 }):isnan():all():item())
      D.Distribution.set_default_validate_args(false)
      local ok, err = pcall(function()
        local e = D.Exponential(t { -1.0 })
        assert.is_false(e.validate_args)
        D.Normal(t { 0.0 }, t { 1.0 }):log_prob(t { 0 / 0 })
      end)
      D.Distribution.set_default_validate_args(true)
      assert(ok, err)
      assert.is_true(D.Exponential(t { 1.0 }).validate_args)
      H.raises(function() D.Distribution.set_default_validate_args(1) end, 'set_default_validate_args')
      H.raises(function() D.Normal(0, 1, { validate_args = 'yes' }) end, 'Normal', 'validate_args')
    end)

    it('are checked for kind and number', function()
      H.raises(function() D.Normal('a', 1) end, 'Normal', 'loc must be a number or a tensor')
      H.raises(function() D.Normal(0, 1, { scael = 2 }) end, 'Normal', "unknown option 'scael'")
      H.raises(function() D.Normal(0, { loc = 1, scale = 1 }) end, 'Normal', "'loc' is given twice")
      H.raises(function() D.Bernoulli(t { 0.5 }, t { 0.0 }) end, 'Bernoulli', 'not both')
      H.raises(function() D.Bernoulli() end, 'Bernoulli', 'either probs or logits')
      H.raises(function() D.Categorical(t(0.5)) end, 'Categorical', 'at least one-dimensional')
      H.raises(function() D.Dirichlet(2.0) end, 'Dirichlet', 'concentration must be a tensor')
      H.raises(function() D.MultivariateNormal(t { 0.0 }) end, 'MultivariateNormal', 'exactly one')
      H.raises(function() D.MultivariateNormal(t { 0.0, 0.0 }, t { { 1.0 } }) end, 'MultivariateNormal', 'square')
      H.raises(function() D.Independent(D.Normal(0, 1), -1) end, 'Independent', 'non-negative')
      H.raises(function() D.TransformedDistribution(D.Normal(0, 1), { 3 }) end, 'TransformedDistribution', 'Transform')
      H.raises(function() D.Normal(0, 1):sample(-1) end, 'sample_shape')
      H.raises(function() D.Normal(0, 1):log_prob(0.5) end, 'Normal', 'must be a Tensor')
      H.raises(function() D.Poisson(t { 1.0 }):rsample() end, 'Poisson does not implement rsample')
      H.raises(function() D.Poisson(t { 1.0 }):cdf(t { 1.0 }) end, 'Poisson does not implement cdf')
      H.raises(function() return D.Multinomial(3, t { 0.5, 0.5 }).mode end, 'Multinomial does not implement mode')
    end)
  end)
end)
