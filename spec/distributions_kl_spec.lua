-- torch.distributions.kl_divergence against KL(p || q) = E_p[log p - log q] computed here in plain
-- Lua: by Simpson's rule over the densities, by sums over the masses, or from the closed forms of
-- the multivariate normal and the Dirichlet (spec/support/distribution_math.lua); register_kl's
-- dispatch and errors; gradients of KL. Also the transforms of TransformedDistribution: inverses,
-- log |det J| against finite differences, composition, equality and caching.
local torch = require 'torch'
local H = require 'spec.helpers'
local M = require 'spec.support.distribution_math'
local D = torch.distributions
local f64 = torch.float64
local log, exp, sqrt, pi, inf = math.log, math.exp, math.sqrt, math.pi, math.huge
local lgamma, digamma = M.lgamma, M.digamma

local function t(v) return torch.tensor(v, { dtype = f64 }) end
local function leaf(v) return torch.tensor(v, { dtype = f64, requires_grad = true }) end
local kl = D.kl_divergence

local L = M.logpdf
local kl_integral = M.kl_integral

-- KL(p || q) of masses over k = lo..hi
local function kl_sum(pp, pq, lo, hi)
  local s = 0
  for k = lo, hi do
    local a = pp(k)
    if a > 0 then s = s + a * (log(a) - log(pq(k))) end
  end
  return s
end

describe('torch.distributions.kl_divergence', function()
  it('of continuous families, against numerical integration', function()
    local cases = {
      { 'Normal', D.Normal(t { 0.3 }, t { 1.2 }), D.Normal(t { -0.5 }, t { 2.0 }), L.normal(0.3, 1.2), L.normal(-0.5, 2.0),
        -20, 20 },
      { 'Laplace', D.Laplace(t { 0.3 }, t { 1.2 }), D.Laplace(t { -0.5 }, t { 2.0 }), L.laplace(0.3, 1.2),
        L.laplace(-0.5, 2.0), -60, 60, 400000 },
      { 'Exponential', D.Exponential(t { 2.0 }), D.Exponential(t { 0.5 }), L.exponential(2), L.exponential(0.5), 0, 40 },
      { 'Gamma', D.Gamma(t { 3.0 }, t { 2.0 }), D.Gamma(t { 2.0 }, t { 0.5 }), L.gamma(3, 2), L.gamma(2, 0.5), 0, 60 },
      { 'Beta', D.Beta(t { 2.0 }, t { 3.0 }), D.Beta(t { 4.0 }, t { 1.5 }), L.beta(2, 3), L.beta(4, 1.5), 0, 1 },
      { 'Uniform', D.Uniform(t { 0.5 }, t { 1.5 }), D.Uniform(t { 0.0 }, t { 3.0 }), L.uniform(0.5, 1.5),
        L.uniform(0, 3), 0.5, 1.5 },
      { 'Cauchy', D.Cauchy(t { 0.3 }, t { 1.2 }), D.Cauchy(t { -0.5 }, t { 2.0 }), L.cauchy(0.3, 1.2),
        L.cauchy(-0.5, 2.0), -math.pi / 2 + 1e-9, math.pi / 2 - 1e-9, 'tan' },
      { 'LogNormal', D.LogNormal(t { 0.3 }, t { 0.5 }), D.LogNormal(t { -0.5 }, t { 1.0 }),
        function(x) return x > 0 and L.normal(0.3, 0.5)(log(x)) - log(x) or -inf end,
        function(x) return x > 0 and L.normal(-0.5, 1.0)(log(x)) - log(x) or -inf end, 0, 40, 400000 },
      -- pairs of families
      { 'Normal || Laplace', D.Normal(t { 0.3 }, t { 1.2 }), D.Laplace(t { -0.5 }, t { 2.0 }), L.normal(0.3, 1.2),
        L.laplace(-0.5, 2.0), -20, 20, 400000 },
      { 'Laplace || Normal', D.Laplace(t { 0.3 }, t { 1.2 }), D.Normal(t { -0.5 }, t { 2.0 }), L.laplace(0.3, 1.2),
        L.normal(-0.5, 2.0), -40, 40, 400000 },
      { 'Exponential || Gamma', D.Exponential(t { 2.0 }), D.Gamma(t { 2.0 }, t { 0.5 }), L.exponential(2),
        L.gamma(2, 0.5), 0, 40 },
      { 'Exponential || Normal', D.Exponential(t { 2.0 }), D.Normal(t { 0.5 }, t { 1.5 }), L.exponential(2),
        L.normal(0.5, 1.5), 0, 40 },
      { 'Gamma || Exponential', D.Gamma(t { 3.0 }, t { 2.0 }), D.Exponential(t { 0.5 }), L.gamma(3, 2),
        L.exponential(0.5), 0, 60 },
      { 'Gamma || Normal', D.Gamma(t { 3.0 }, t { 2.0 }), D.Normal(t { 0.5 }, t { 1.5 }), L.gamma(3, 2),
        L.normal(0.5, 1.5), 0, 60 },
      { 'Uniform || Normal', D.Uniform(t { 0.5 }, t { 1.5 }), D.Normal(t { 0.0 }, t { 2.0 }), L.uniform(0.5, 1.5),
        L.normal(0, 2), 0.5, 1.5 },
      { 'Uniform || Gamma', D.Uniform(t { 0.5 }, t { 1.5 }), D.Gamma(t { 2.0 }, t { 0.5 }), L.uniform(0.5, 1.5),
        L.gamma(2, 0.5), 0.5, 1.5 },
      { 'Uniform || Exponential', D.Uniform(t { 0.5 }, t { 1.5 }), D.Exponential(t { 2.0 }), L.uniform(0.5, 1.5),
        L.exponential(2), 0.5, 1.5 },
      { 'Uniform || Beta', D.Uniform(t { 0.2 }, t { 0.7 }), D.Beta(t { 2.0 }, t { 3.0 }), L.uniform(0.2, 0.7),
        L.beta(2, 3), 0.2, 0.7 },
      { 'Beta || Normal', D.Beta(t { 2.0 }, t { 3.0 }), D.Normal(t { 0.5 }, t { 1.5 }), L.beta(2, 3), L.normal(0.5, 1.5),
        0, 1 },
      { 'Beta || Gamma', D.Beta(t { 2.0 }, t { 3.0 }), D.Gamma(t { 2.0 }, t { 0.5 }), L.beta(2, 3), L.gamma(2, 0.5), 0, 1 },
      { 'Beta || Exponential', D.Beta(t { 2.0 }, t { 3.0 }), D.Exponential(t { 2.0 }), L.beta(2, 3), L.exponential(2),
        0, 1 },
      { 'Beta || Uniform', D.Beta(t { 2.0 }, t { 3.0 }), D.Uniform(t { -1.0 }, t { 2.0 }), L.beta(2, 3),
        L.uniform(-1, 2), 0, 1 },
    }
    for _, c in ipairs(cases) do
      local name, p, q, lp, lq, a, b, n = table.unpack(c)
      local ref
      if n == 'tan' then -- over x = tan(u): the heavy tails of the Cauchy
        ref = M.integrate(function(u)
          local x = math.tan(u)
          local w = 1 + x * x
          return exp(lp(x)) * (lp(x) - lq(x)) * w
        end, a, b, 200000)
      else
        ref = kl_integral(lp, lq, a, b, n)
      end
      H.close(kl(p, q):item(), ref, 1e-7, name)
    end
  end)

  it('of discrete families, against sums over the masses', function()
    local function bern(p) return function(k) return k == 1 and p or 1 - p end end
    H.close(kl(D.Bernoulli(t { 0.3 }), D.Bernoulli(t { 0.6 })):item(), kl_sum(bern(0.3), bern(0.6), 0, 1), 1e-12)
    H.close(kl(D.Bernoulli { logits = t { -0.4 } }, D.Bernoulli(t { 0.9 })):item(),
      kl_sum(bern(1 / (1 + exp(0.4))), bern(0.9), 0, 1), 1e-12)
    local p, q = { 0.2, 0.3, 0.5 }, { 0.5, 0.25, 0.25 }
    local ref = kl_sum(function(k) return p[k] end, function(k) return q[k] end, 1, 3)
    H.close(kl(D.Categorical(t(p)), D.Categorical(t(q))):item(), ref, 1e-12, 'Categorical')
    H.close(kl(D.OneHotCategorical(t(p)), D.OneHotCategorical(t(q))):item(), ref, 1e-12, 'OneHotCategorical')
    local function pois(r) return function(k) return exp(k * log(r) - r - lgamma(k + 1)) end end
    H.close(kl(D.Poisson(t { 2.5 }), D.Poisson(t { 4.0 })):item(), kl_sum(pois(2.5), pois(4.0), 0, 200), 1e-10, 'Poisson')
    local function geom(pp) return function(k) return (1 - pp) ^ k * pp end end
    H.close(kl(D.Geometric(t { 0.3 }), D.Geometric(t { 0.6 })):item(), kl_sum(geom(0.3), geom(0.6), 0, 2000), 1e-10,
      'Geometric')
    local function binom(n, pp) return function(k) return exp(lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
        + k * log(pp) + (n - k) * log(1 - pp)) end end
    H.close(kl(D.Binomial(10, t { 0.3 }), D.Binomial(10, t { 0.6 })):item(), kl_sum(binom(10, 0.3), binom(10, 0.6), 0, 10),
      1e-10, 'Binomial')
    H.close(kl(D.Bernoulli(t { 0.3 }), D.Poisson(t { 0.5 })):item(), kl_sum(bern(0.3), pois(0.5), 0, 1), 1e-12,
      'Bernoulli || Poisson')
    -- zero masses: 0 log 0 = 0; a mass where q has none: infinite
    H.close(kl(D.Categorical(t { 0.0, 1.0 }), D.Categorical(t { 0.5, 0.5 })):item(), log(2), 1e-12)
    assert.are.equal(inf, kl(D.Categorical(t { 0.5, 0.5 }), D.Categorical(t { 0.0, 1.0 })):item())
    H.assert_values(kl(D.Bernoulli(t { 0.0, 0.5 }), D.Bernoulli(t { 0.5, 1.0 })), { log(2), inf }, 1e-12)
    assert.are.equal(inf, kl(D.Binomial(10, t { 0.3 }), D.Binomial(t { 8.0 }, t { 0.3 })):item())
    H.raises(function() kl(D.Binomial(5, t { 0.3 }), D.Binomial(10, t { 0.3 })) end, 'kl_divergence', 'total_count')
  end)

  it('of multivariate families, against their closed forms', function()
    local mp, mq = { 0.0, 1.0, -1.0 }, { 0.5, 0.0, 0.0 }
    local sp = { { 2.0, 0.5, 0.3 }, { 0.5, 1.0, -0.2 }, { 0.3, -0.2, 1.5 } }
    local sq = { { 1.0, 0.2, 0.0 }, { 0.2, 2.0, 0.4 }, { 0.0, 0.4, 0.8 } }
    local iq = M.inverse(sq)
    local tr = 0
    for i = 1, 3 do
      for j = 1, 3 do tr = tr + iq[i][j] * sp[j][i] end
    end
    local d = { mq[1] - mp[1], mq[2] - mp[2], mq[3] - mp[3] }
    local s = M.solve(sq, d)
    local ref = 0.5 * (tr + d[1] * s[1] + d[2] * s[2] + d[3] * s[3] - 3 + log(M.det(sq) / M.det(sp)))
    local p = D.MultivariateNormal(t(mp), t(sp))
    local q = D.MultivariateNormal(t(mq), { precision_matrix = t(iq) })
    H.close(kl(p, q):item(), ref, 1e-10, 'MultivariateNormal')
    -- batched: a batch of p against one q
    local pb = D.MultivariateNormal(t { mp, mq }, t(sp))
    local r = kl(pb, q):totable()
    H.close(r[1], ref, 1e-10)
    H.close(r[2], 0.5 * (tr - 3 + log(M.det(sq) / M.det(sp))), 1e-10)
    H.raises(function() kl(p, D.MultivariateNormal(t { 0.0, 0.0 }, t { { 1.0, 0.0 }, { 0.0, 1.0 } })) end,
      'kl_divergence', 'different event shapes')
    -- Dirichlet: lnG(a0) - sum lnG(a) - lnG(b0) + sum lnG(b) + sum (a - b)(psi(a) - psi(a0))
    local a, b = { 1.0, 2.0, 3.0 }, { 2.0, 0.5, 1.5 }
    local a0, b0 = 6.0, 4.0
    local dref = lgamma(a0) - lgamma(b0)
    for i = 1, 3 do dref = dref - lgamma(a[i]) + lgamma(b[i]) + (a[i] - b[i]) * (digamma(a[i]) - digamma(a0)) end
    H.close(kl(D.Dirichlet(t(a)), D.Dirichlet(t(b))):item(), dref, 1e-10, 'Dirichlet')
    -- Independent: the sum over the reinterpreted dimension
    local ip = D.Independent(D.Normal(t { 0.0, 1.0 }, t { 1.0, 2.0 }), 1)
    local iq2 = D.Independent(D.Normal(t { 0.5, 0.0 }, t { 1.5, 1.0 }), 1)
    local function knn(m1, s1, m2, s2) return log(s2 / s1) + (s1 * s1 + (m1 - m2) ^ 2) / (2 * s2 * s2) - 0.5 end
    H.close(kl(ip, iq2):item(), knn(0, 1, 0.5, 1.5) + knn(1, 2, 0, 1), 1e-12, 'Independent')
    H.raises(function() kl(ip, D.Independent(D.Normal(t { { 0.0 } }, 1.0), 2)) end, 'kl_divergence',
      'reinterpreted_batch_ndims')
  end)

  it('is infinite where p\'s support is not q\'s', function()
    assert.are.equal(inf, kl(D.Uniform(t { 0.0 }, t { 2.0 }), D.Uniform(t { 0.5 }, t { 3.0 })):item())
    assert.are.equal(inf, kl(D.Normal(t { 0.0 }, t { 1.0 }), D.Exponential(t { 1.0 })):item())
    assert.are.equal(inf, kl(D.Gamma(t { 2.0 }, t { 1.0 }), D.Uniform(t { 0.0 }, t { 1.0 })):item())
    assert.are.equal(inf, kl(D.Exponential(t { 1.0 }), D.Beta(t { 1.0 }, t { 1.0 })):item())
    assert.are.equal(inf, kl(D.Poisson(t { 1.0 }), D.Bernoulli(t { 0.5 })):item())
    assert.are.equal(inf, kl(D.Uniform(t { -0.5 }, t { 0.5 }), D.Exponential(t { 1.0 })):item())
    assert.are.equal(inf, kl(D.Beta(t { 2.0 }, t { 2.0 }), D.Uniform(t { 0.2 }, t { 1.0 })):item())
    H.assert_values(kl(D.Normal(t { 0.0, 1.0 }, t { 1.0, 1.0 }), D.Normal(t { 0.0, 1.0 }, t { 1.0, 1.0 })), { 0, 0 })
  end)

  it('broadcasts over batches, passes gradients, and follows subclasses', function()
    local r = kl(D.Normal(t { { 0.0 }, { 1.0 } }, 1.0), D.Normal(t { 0.0, 2.0, -1.0 }, 1.0))
    H.assert_values(r, { { 0, 2, 0.5 }, { 0.5, 0.5, 2 } }, 1e-12)
    assert(torch.autograd.gradcheck(function(m1, s1, m2, s2) return kl(D.Normal(m1, s1), D.Normal(m2, s2)) end,
      { leaf { 0.3 }, leaf { 1.2 }, leaf { -0.5 }, leaf { 2.0 } }))
    assert(torch.autograd.gradcheck(function(a, b) return kl(D.Gamma(a, b), D.Gamma(t { 2.0 }, t { 0.5 })) end,
      { leaf { 3.0 }, leaf { 2.0 } }))
    assert(torch.autograd.gradcheck(function(l1, l2)
      return kl(D.MultivariateNormal(t { 0.0, 1.0 }, { scale_tril = l1:tril() }),
        D.MultivariateNormal(t { 0.5, 0.0 }, { scale_tril = l2:tril() }))
    end, { leaf { { 1.5, 0.0 }, { 0.4, 0.8 } }, leaf { { 1.0, 0.0 }, { -0.3, 1.2 } } }))
    assert(torch.autograd.gradcheck(function(l) return kl(D.Categorical { logits = l }, D.Categorical(t { 0.2, 0.3, 0.5 })) end,
      { leaf { 0.1, -0.4, 0.7 } }))
    -- Chi2 is a Gamma, LogNormal a TransformedDistribution
    local c = kl(D.Chi2(t { 3.0 }), D.Gamma(t { 2.0 }, t { 0.5 })):item()
    H.close(c, kl(D.Gamma(t { 1.5 }, t { 0.5 }), D.Gamma(t { 2.0 }, t { 0.5 })):item(), 1e-12)
    H.close(kl(D.LogNormal(t { 0.3 }, t { 0.5 }), D.LogNormal(t { -0.5 }, t { 1.0 })):item(),
      kl(D.Normal(t { 0.3 }, t { 0.5 }), D.Normal(t { -0.5 }, t { 1.0 })):item(), 1e-12)
  end)

  it('dispatches registrations to the most specific pair, and names a missing pair', function()
    local err = H.raises(function() kl(D.Cauchy(0, 1), D.Normal(0, 1)) end, 'kl_divergence',
      'no KL(p || q) is implemented for p type Cauchy and q type Normal')
    assert.is_truthy(err:find('distributions_kl_spec.lua', 1, true), err)
    -- a subclass uses its parent's entry until it registers its own
    local Wide = D.Normal:extend('WideNormal')
    local w = Wide(t { 0.0 }, t { 1.0 })
    H.close(kl(w, D.Normal(t { 1.0 }, t { 1.0 })):item(), 0.5, 1e-12)
    D.register_kl(Wide, D.Normal, function() return torch.full({ 1 }, 42.0) end)
    assert.are.equal(42, kl(w, D.Normal(t { 1.0 }, t { 1.0 })):item())
    -- the reverse pair still takes the general entry; registering again replaces
    H.close(kl(D.Normal(t { 1.0 }, t { 1.0 }), w):item(), 0.5, 1e-12)
    D.register_kl(Wide, D.Normal, function() return torch.full({ 1 }, 7.0) end)
    assert.are.equal(7, kl(w, D.Normal(t { 1.0 }, t { 1.0 })):item())
    H.raises(function() D.register_kl(D.Normal, 'Normal', function() end) end, 'register_kl', 'type_q')
    H.raises(function() D.register_kl(D.Normal, D.Normal, 3) end, 'register_kl', 'function')
    H.raises(function() kl(D.Normal(0, 1), 3) end, 'kl_divergence', 'two distributions')
  end)
end)

describe('torch.distributions transforms', function()
  local T = D.transforms

  it('invert, and give log |dy/dx| as finite differences do', function()
    local xs = t { -2.0, -0.3, 0.4, 1.7 }
    local cases = {
      { T.ExpTransform(), xs }, { T.SigmoidTransform(), xs }, { T.TanhTransform(), xs },
      { T.AffineTransform(0.5, -2.0), xs }, { T.AffineTransform(t { 1.0, 2.0, 3.0, 4.0 }, t { 0.5, 1.5, -1.0, 2.0 }), xs },
      { T.PowerTransform(2.5), xs:abs() + 0.1 },
      { T.ComposeTransform { T.AffineTransform(0.0, 0.5), T.SigmoidTransform() }, xs },
      { T.ExpTransform().inv, xs:abs() + 0.1 },
    }
    for _, c in ipairs(cases) do
      local tr, x = c[1], c[2]
      local name = tostring(tr):gsub('\n', ' ')
      local y = tr(x)
      H.assert_values(tr.inv(y), x:totable(), 1e-9, name .. ' inverse')
      local h = 1e-6
      local num = ((tr(x + h) - tr(x - h)) / (2 * h)):abs():log()
      H.assert_values(tr:log_abs_det_jacobian(x, y), num:totable(), 1e-6, name .. ' log |det J|')
      assert.is_true(rawequal(tr.inv.inv, tr) or tr.inv.inv == tr, name .. ' inv.inv')
    end
  end)

  it('compare, compose shapes and cache', function()
    assert.is_true(T.ExpTransform() == T.ExpTransform())
    assert.is_false(T.ExpTransform() == T.SigmoidTransform())
    assert.is_true(T.AffineTransform(1, 2) == T.AffineTransform(1, 2))
    assert.is_false(T.AffineTransform(1, 2) == T.AffineTransform(1, 3))
    assert.is_true(T.ExpTransform().inv == T.ExpTransform().inv)
    assert.are.equal(1, T.ExpTransform().sign)
    assert.are.equal(-1, T.AffineTransform(0, -2).sign)
    assert.are.equal(-1, T.ComposeTransform { T.ExpTransform(), T.AffineTransform(0, -2) }.sign)
    local a = T.AffineTransform(t { 0.0, 1.0, 2.0 }, 1.0)
    assert.are.same({ 4, 3 }, { table.unpack(a:forward_shape({ 4, 1 })) })
    -- an affine map over a vector event: log |det| sums over it
    local v = T.AffineTransform(0.0, t { 2.0, 3.0 }, { event_dim = 1 })
    assert.are.equal(1, v.event_dim)
    H.assert_values(v:log_abs_det_jacobian(t { { 1.0, 1.0 } }, t { { 2.0, 3.0 } }), { log(6) }, 1e-12)
    local d = D.TransformedDistribution(D.Normal(t { 0.0, 0.0 }, 1.0), v)
    assert.are.same({ 2 }, { table.unpack(d.event_shape) })
    H.close(d:log_prob(t { 2.0, 3.0 }):item(), -log(6) - 1 - log(2 * pi), 1e-12)
    -- with cache_size = 1 the inverse of the last output is the input itself
    local c = T.ExpTransform { cache_size = 1 }
    local x = t { 0.5 }
    assert.is_true(rawequal(c.inv(c(x)), x))
    H.raises(function() T.ExpTransform { cache_size = 2 } end, 'cache_size')
    H.raises(function() T.AffineTransform('a', 1) end, 'AffineTransform', 'loc')
  end)
end)
