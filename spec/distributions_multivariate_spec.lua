-- torch.distributions, the matrix families: LowRankMultivariateNormal, Wishart and LKJCholesky.
-- Every reference is computed here in plain Lua (float64), independently of the code under test:
-- the dense Gaussian density with the covariance W W^T + diag(D) built and solved by Gaussian
-- elimination (spec/support/distribution_math.lua), the Wishart density and entropy written out
-- (log det, trace, multivariate gamma and digamma), the LKJ density with the normaliser of
-- Lewandowski, Kurowicka and Joe (2009); samples (fixed seeds) against the moments within five
-- standard errors and, for LKJ of dim 2, the off-diagonal element against its scaled Beta CDF by
-- Kolmogorov-Smirnov; the KL divergences against the dense closed form; gradients by finite
-- differences (gradcheck). spec/data/multivariate_reference.lua holds PyTorch 1.13's values for
-- fixed inputs (tools/gen_multivariate_reference.py). Also float32, batch shapes, expand and errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local M = require 'spec.support.distribution_math'
local REF = require 'spec.data.multivariate_reference'
local D = torch.distributions
local f64, f32 = torch.float64, torch.float32
local gradcheck = torch.autograd.gradcheck
local log, pi = math.log, math.pi

local function dims(size) return { table.unpack(size) } end
local function t(v, dtype) return torch.tensor(v, { dtype = dtype or f64 }) end
local function leaf(v) return torch.tensor(v, { dtype = f64, requires_grad = true }) end
local seeded = M.seeded

-- ---- dense matrices of Lua numbers ----

local matmul = H.matmul_table
local function transpose(A)
  local T = {}
  for j = 1, #A[1] do
    T[j] = {}
    for i = 1, #A do T[j][i] = A[i][j] end
  end
  return T
end
local function trace(A)
  local s = 0
  for i = 1, #A do s = s + A[i][i] end
  return s
end
-- W W^T + diag(D)
local function lowrank_cov(W, Dg)
  local S = matmul(W, transpose(W))
  for i = 1, #Dg do S[i][i] = S[i][i] + Dg[i] end
  return S
end
-- x^T S^-1 x
local function quad(S, x)
  local y = M.solve(S, x)
  local s = 0
  for i = 1, #x do s = s + x[i] * y[i] end
  return s
end
local function sub(a, b)
  local c = {}
  for i = 1, #a do c[i] = a[i] - b[i] end
  return c
end
local function normal_logpdf(mu, S, x)
  return -0.5 * (#x * log(2 * pi) + log(M.det(S)) + quad(S, sub(x, mu)))
end
local function normal_entropy(S) return 0.5 * (#S * (1 + log(2 * pi)) + log(M.det(S))) end
-- KL(N(mp, Sp) || N(mq, Sq)) in closed form
local function normal_kl(mp, Sp, mq, Sq)
  return 0.5 * (trace(matmul(M.inverse(Sq), Sp)) + quad(Sq, sub(mq, mp)) - #mp + log(M.det(Sq)) - log(M.det(Sp)))
end
local function mvlgamma(x, p)
  local s = p * (p - 1) / 4 * log(pi)
  for i = 0, p - 1 do s = s + M.lgamma(x - i / 2) end
  return s
end
local function mvdigamma(x, p)
  local s = 0
  for i = 0, p - 1 do s = s + M.digamma(x - i / 2) end
  return s
end

describe('LowRankMultivariateNormal', function()
  local R = REF.lowrank
  local cov = lowrank_cov(R.cov_factor, R.cov_diag)

  it('log_prob and entropy equal the dense normal with covariance W W^T + diag(D), in float64 and float32', function()
    for _, dtype in ipairs { f64, f32 } do
      local tol = dtype == f64 and 1e-10 or 1e-5
      local d = D.LowRankMultivariateNormal(t(R.loc, dtype), t(R.cov_factor, dtype), t(R.cov_diag, dtype))
      assert.are.same({ 2 }, dims(d.batch_shape))
      assert.are.same({ 3 }, dims(d.event_shape))
      local lp = d:log_prob(t(R.value, dtype))
      assert.are.equal(dtype, lp.dtype)
      H.assert_values(lp, { normal_logpdf(R.loc[1], cov, R.value[1]), normal_logpdf(R.loc[2], cov, R.value[2]) }, tol,
        'log_prob')
      H.assert_values(lp, R.log_prob, tol, 'log_prob vs PyTorch')
      H.assert_values(d:entropy(), { normal_entropy(cov), normal_entropy(cov) }, tol, 'entropy')
      H.assert_values(d:entropy(), R.entropy, tol, 'entropy vs PyTorch')
      -- the same as MultivariateNormal of the dense covariance
      local mvn = D.MultivariateNormal(t(R.loc, dtype), t(cov, dtype))
      H.assert_values(lp, mvn:log_prob(t(R.value, dtype)):totable(), tol, 'log_prob vs MultivariateNormal')
    end
  end)

  it('has the dense covariance, precision, scale_tril, variance, mean and mode', function()
    local d = D.LowRankMultivariateNormal(t(R.loc), t(R.cov_factor), t(R.cov_diag))
    H.assert_values(d.covariance_matrix[1], cov, 1e-12, 'covariance_matrix')
    H.assert_values(d.precision_matrix[2], M.inverse(cov), 1e-10, 'precision_matrix')
    local L = d.scale_tril[1]
    H.assert_values(L:triu(1), { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }, 0, 'scale_tril is lower')
    H.assert_values(L:matmul(L:t()), cov, 1e-12, 'scale_tril L L^T')
    H.assert_values(d.variance[2], { cov[1][1], cov[2][2], cov[3][3] }, 1e-12, 'variance')
    H.assert_values(d.mean, R.loc, 0, 'mean')
    H.assert_values(d.mode, R.loc, 0, 'mode')
    assert.are.same({ 2, 3, 3 }, dims(d.covariance_matrix.shape))
  end)

  it('samples have the mean and covariance (seeded)', function()
    torch.manual_seed(11)
    local d = D.LowRankMultivariateNormal(t(R.loc[1]), t(R.cov_factor), t(R.cov_diag))
    local n = 20000
    local s = d:sample(n)
    assert.are.same({ n, 3 }, dims(s.shape))
    local rows = s:totable()
    for i = 1, 3 do
      local xs = {}
      for k = 1, n do xs[k] = rows[k][i] end
      M.check_moments(xs, R.loc[1][i], cov[i][i], 'coordinate ' .. i)
    end
    -- the covariance of coordinates 1 and 2: x1 x2 has mean cov12 (centred), variance cov11 cov22 + cov12^2
    local xs = {}
    for k = 1, n do xs[k] = (rows[k][1] - R.loc[1][1]) * (rows[k][2] - R.loc[1][2]) end
    M.check_moments(xs, cov[1][2], cov[1][1] * cov[2][2] + cov[1][2] ^ 2, 'covariance 1, 2')
  end)

  it('passes gradients of rsample and log_prob (finite differences)', function()
    assert(gradcheck(seeded(5, function(m, W, Dg) return D.LowRankMultivariateNormal(m, W, Dg):rsample(4) end),
      { leaf(R.loc[1]), leaf(R.cov_factor), leaf(R.cov_diag) }), 'rsample')
    assert(gradcheck(function(m, W, Dg, x) return D.LowRankMultivariateNormal(m, W, Dg):log_prob(x) end,
      { leaf(R.loc), leaf(R.cov_factor), leaf(R.cov_diag), leaf(R.value) }), 'log_prob')
    assert(gradcheck(function(W, Dg) return D.LowRankMultivariateNormal(t(R.loc), W, Dg):entropy() end,
      { leaf(R.cov_factor), leaf(R.cov_diag) }), 'entropy')
  end)

  it('has the KL divergences with itself and MultivariateNormal, as the dense closed form', function()
    local p = D.LowRankMultivariateNormal(t(R.loc), t(R.cov_factor), t(R.cov_diag))
    local q = D.LowRankMultivariateNormal(t(R.loc2), t(R.cov_factor2), t(R.cov_diag2))
    local mvn = D.MultivariateNormal(t(R.loc2), t(R.cov2))
    local covq = lowrank_cov(R.cov_factor2, R.cov_diag2)
    local want_lr, want_lr_mvn, want_mvn_lr = {}, {}, {}
    for b = 1, 2 do
      want_lr[b] = normal_kl(R.loc[b], cov, R.loc2, covq)
      want_lr_mvn[b] = normal_kl(R.loc[b], cov, R.loc2, R.cov2)
      want_mvn_lr[b] = normal_kl(R.loc2, R.cov2, R.loc[b], cov)
    end
    H.assert_values(D.kl_divergence(p, q), want_lr, 1e-10, 'KL(LowRank || LowRank)')
    H.assert_values(D.kl_divergence(p, mvn), want_lr_mvn, 1e-10, 'KL(LowRank || MVN)')
    H.assert_values(D.kl_divergence(mvn, p), want_mvn_lr, 1e-10, 'KL(MVN || LowRank)')
    H.assert_values(D.kl_divergence(p, q), R.kl_lr_lr, 1e-10, 'KL(LowRank || LowRank) vs PyTorch')
    H.assert_values(D.kl_divergence(p, mvn), R.kl_lr_mvn, 1e-10, 'KL(LowRank || MVN) vs PyTorch')
    H.assert_values(D.kl_divergence(mvn, p), R.kl_mvn_lr, 1e-10, 'KL(MVN || LowRank) vs PyTorch')
    H.assert_values(D.kl_divergence(p, p), { 0, 0 }, 1e-12, 'KL(p || p)')
    assert(gradcheck(function(W, Dg)
      return D.kl_divergence(D.LowRankMultivariateNormal(t(R.loc), W, Dg), q)
    end, { leaf(R.cov_factor), leaf(R.cov_diag) }), 'KL gradient')
    H.raises(function() D.kl_divergence(p, D.MultivariateNormal(torch.zeros(2, { dtype = f64 }),
      torch.eye(2, { dtype = f64 }))) end, 'kl_divergence', 'different event shapes')
  end)

  it('broadcasts batch shapes and expands', function()
    -- a batch of factors (2, 3, 1) with one loc (3) and one diagonal (3)
    local W = t { { { 1.0 }, { 0.5 }, { -0.2 } }, { { 0.3 }, { 0.0 }, { 0.8 } } }
    local d = D.LowRankMultivariateNormal(t { 0.0, 1.0, 2.0 }, W, t { 1.0, 2.0, 0.5 })
    assert.are.same({ 2 }, dims(d.batch_shape))
    assert.are.same({ 2, 3 }, dims(d.loc.shape))
    assert.are.same({ 2, 3, 1 }, dims(d.cov_factor.shape))
    local x = t { 0.5, 0.5, 0.5 }
    local lp = d:log_prob(x):totable()
    for b = 1, 2 do
      local Wb = W[b]:totable()
      H.close(lp[b], normal_logpdf({ 0.0, 1.0, 2.0 }, lowrank_cov(Wb, { 1.0, 2.0, 0.5 }), { 0.5, 0.5, 0.5 }), 1e-10,
        'batch log_prob')
    end
    local e = d:expand { 4, 2 }
    assert.are.same({ 4, 2 }, dims(e.batch_shape))
    assert.are.same({ 4, 2, 3 }, dims(e:sample().shape))
    H.assert_values(e:log_prob(x)[3], lp, 1e-12, 'expanded log_prob')
    assert.are.same({ 5, 4, 2, 3 }, dims(e:rsample(5).shape))
  end)

  it('rejects bad arguments with errors naming the distribution', function()
    local loc, W, Dg = t { 0.0, 0.0 }, t { { 1.0 }, { 0.0 } }, t { 1.0, 1.0 }
    H.raises(function() D.LowRankMultivariateNormal(t(0.0), W, Dg) end, 'LowRankMultivariateNormal', 'loc',
      'one-dimensional')
    H.raises(function() D.LowRankMultivariateNormal(loc, t { 1.0, 0.0 }, Dg) end, 'LowRankMultivariateNormal',
      'cov_factor', 'two-dimensional')
    H.raises(function() D.LowRankMultivariateNormal(loc, t { { 1.0 }, { 0.0 }, { 1.0 } }, Dg) end,
      'LowRankMultivariateNormal', 'cov_factor must be a batch of matrices with shape 2 x m')
    H.raises(function() D.LowRankMultivariateNormal(loc, W, t { 1.0, 1.0, 1.0 }) end, 'LowRankMultivariateNormal',
      'cov_diag must be a batch of vectors')
    H.raises(function() D.LowRankMultivariateNormal(loc, W, t { 1.0, -1.0 }) end, 'LowRankMultivariateNormal',
      'cov_diag', 'constraint')
    H.raises(function() D.LowRankMultivariateNormal(t { { 0.0, 0.0 }, { 1, 1 }, { 2, 2 } }, W:expand(2, 2, 1), Dg) end,
      'LowRankMultivariateNormal', 'incompatible batch shapes')
    local d = D.LowRankMultivariateNormal(loc, W, Dg)
    H.raises(function() d:log_prob(t { 1.0, 2.0, 3.0 }) end, 'LowRankMultivariateNormal', 'event_shape')
  end)
end)

describe('Wishart', function()
  local R = REF.wishart
  local S = R.covariance_matrix
  local p = 3
  -- the Wishart log-density of X for df nu and covariance S, written out
  local function wishart_logpdf(nu, X)
    return -nu * p / 2 * log(2) - nu / 2 * log(M.det(S)) - mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * log(M.det(X))
        - trace(matmul(M.inverse(S), X)) / 2
  end
  local function wishart_entropy(nu)
    return (p + 1) / 2 * log(M.det(S)) + p * (p + 1) / 2 * log(2) + mvlgamma(nu / 2, p)
        - (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2
  end

  it('log_prob and entropy equal the written-out density, from each parametrisation, in float64 and float32', function()
    for _, dtype in ipairs { f64, f32 } do
      local tol = dtype == f64 and 1e-10 or 2e-5
      local Sm = t(S, dtype)
      local L = torch.linalg.cholesky(Sm)
      for _, d in ipairs {
        D.Wishart(t(R.df, dtype), Sm),
        D.Wishart(t(R.df, dtype), { scale_tril = L }),
        D.Wishart(t(R.df, dtype), { precision_matrix = torch.linalg.inv(Sm) }),
      } do
        assert.are.same({ 2 }, dims(d.batch_shape))
        assert.are.same({ 3, 3 }, dims(d.event_shape))
        local lp = d:log_prob(t(R.value, dtype))
        assert.are.equal(dtype, lp.dtype)
        H.assert_values(lp, { wishart_logpdf(R.df[1], R.value), wishart_logpdf(R.df[2], R.value) }, tol, 'log_prob')
        H.assert_values(lp, R.log_prob, tol, 'log_prob vs PyTorch')
        H.assert_values(d:entropy(), { wishart_entropy(R.df[1]), wishart_entropy(R.df[2]) }, tol, 'entropy')
        H.assert_values(d:entropy(), R.entropy, tol, 'entropy vs PyTorch')
      end
    end
  end)

  it('has the mean, mode and variance, and samples match them (Bartlett, seeded)', function()
    local nu = 5.5
    local d = D.Wishart(nu, t(S))
    local mode, var, mean = {}, {}, {}
    for i = 1, p do
      mode[i], var[i], mean[i] = {}, {}, {}
      for j = 1, p do
        mean[i][j] = nu * S[i][j]
        mode[i][j] = (nu - p - 1) * S[i][j]
        var[i][j] = nu * (S[i][j] ^ 2 + S[i][i] * S[j][j])
      end
    end
    H.assert_values(d.mean, mean, 1e-12, 'mean')
    H.assert_values(d.mode, mode, 1e-12, 'mode')
    H.assert_values(d.variance, var, 1e-12, 'variance')
    -- no mode for df <= p + 1
    assert(D.Wishart(3.5, t(S)).mode:isnan():all():item(), 'mode is NaN for df <= p + 1')
    torch.manual_seed(3)
    local n = 8000
    local s = d:sample(n)
    assert.are.same({ n, 3, 3 }, dims(s.shape))
    assert(D.constraints.positive_definite:check(s):all():item(), 'samples are positive definite')
    local rows = s:totable()
    for i = 1, p do
      for j = 1, i do
        local xs = {}
        for k = 1, n do xs[k] = rows[k][i][j] end
        M.check_moments(xs, mean[i][j], var[i][j], ('entry %d, %d'):format(i, j))
      end
    end
  end)

  it('passes gradients of rsample and log_prob (finite differences)', function()
    local L = torch.linalg.cholesky(t(S))
    assert(gradcheck(seeded(7, function(Lt)
      return D.Wishart(5.0, { scale_tril = Lt:tril() }):rsample(2)
    end), { L:clone():requires_grad_() }), 'rsample in scale_tril')
    assert(gradcheck(function(nu, Lt, X)
      return D.Wishart(nu, { scale_tril = Lt:tril(), validate_args = false }):log_prob((X + X:t()) / 2)
    end, { leaf { 4.5, 6.0 }, L:clone():requires_grad_(), t(R.value):requires_grad_() }), 'log_prob')
    assert(gradcheck(function(nu, Lt) return D.Wishart(nu, { scale_tril = Lt:tril() }):entropy() end,
      { leaf { 4.5, 6.0 }, L:clone():requires_grad_() }), 'entropy')
    -- df receives a gradient through the Chi2 draws of the diagonal
    local nu = leaf(5.0)
    D.Wishart(nu, t(S)):rsample(3):sum():backward()
    assert(nu.grad ~= nil and nu.grad:isfinite():item(), 'rsample gradient in df')
  end)

  it('broadcasts df with the batch of matrices, expands, and retries singular samples', function()
    local batchS = torch.stack { t(S), torch.eye(3, { dtype = f64 }) }
    local d = D.Wishart(t { { 4.0 }, { 5.0 }, { 6.0 } }, batchS)
    assert.are.same({ 3, 2 }, dims(d.batch_shape))
    local X = t(R.value)
    local lp = d:log_prob(X)
    assert.are.same({ 3, 2 }, dims(lp.shape))
    H.close(lp[2][1], wishart_logpdf(5.0, R.value), 1e-10, 'broadcast log_prob')
    local e = D.Wishart(4.0, t(S)):expand { 2, 3 }
    assert.are.same({ 2, 3 }, dims(e.batch_shape))
    assert.are.same({ 4, 2, 3, 3, 3 }, dims(e:sample(4).shape))
    H.close(e:log_prob(X)[2][3], wishart_logpdf(4.0, R.value), 1e-10, 'expanded log_prob')
    -- max_try_correction, by position after a table shape or by option
    assert.are.same({ 2, 3, 3 }, dims(D.Wishart(4.0, t(S)):rsample({ 2 }, 0).shape))
    assert.are.same({ 2, 3, 3 }, dims(D.Wishart(4.0, t(S)):rsample(2, { max_try_correction = 3 }).shape))
  end)

  it('rejects bad arguments with errors naming the distribution', function()
    local Sm = t(S)
    H.raises(function() D.Wishart(2.0, Sm) end, 'Wishart', 'df=2', 'greater than ndim - 1 = 2')
    H.raises(function() D.Wishart(4.0) end, 'Wishart', 'exactly one of')
    H.raises(function() D.Wishart(4.0, Sm, { scale_tril = Sm }) end, 'Wishart', 'exactly one of')
    H.raises(function() D.Wishart(4.0, t { 1.0, 2.0 }) end, 'Wishart', 'covariance_matrix', 'two-dimensional')
    H.raises(function() D.Wishart(4.0, torch.ones(2, 3, { dtype = f64 })) end, 'Wishart', 'square')
    H.raises(function() D.Wishart(4.0, t { { 1.0, 2.0 }, { 2.0, 1.0 } }) end, 'Wishart', 'covariance_matrix',
      'constraint')
    H.raises(function() D.Wishart(t { 4.0, 5.0, 6.0 }, torch.stack { Sm, Sm }) end, 'Wishart', 'do not broadcast')
    H.raises(function() D.Wishart(4.0, Sm):log_prob(t { { 1.0, 2.0, 0 }, { 2.0, 1.0, 0 }, { 0, 0, 1 } }) end,
      'Wishart', 'support')
    H.raises(function() D.Wishart(4.0, Sm):rsample(2, { max_try_correction = -1 }) end, 'Wishart',
      'max_try_correction')
  end)
end)

describe('LKJCholesky', function()
  local R = REF.lkj
  -- the log-density of a Cholesky factor L (rows of Lua numbers): sum_{i>=2} (d - i + 2 eta - 2) log L_ii
  -- minus the log of Lewandowski et al.'s normaliser
  -- c = 2^(sum_{k=1}^{d-1} (2 eta - 2 + d - k)(d - k)) prod_{k=1}^{d-1} B(eta + (d - k - 1)/2, same)^(d - k)
  local function lkj_logpdf(eta, L)
    local d = #L
    local s = 0
    for i = 2, d do s = s + (d - i + 2 * eta - 2) * log(L[i][i]) end
    local logc = 0
    for k = 1, d - 1 do
      local b = eta + (d - k - 1) / 2
      logc = logc + (2 * eta - 2 + d - k) * (d - k) * log(2) + (d - k) * M.lbeta(b, b)
    end
    return s - logc
  end

  it('log_prob equals the closed form, in float64 and float32', function()
    for _, dtype in ipairs { f64, f32 } do
      local tol = dtype == f64 and 1e-10 or 1e-5
      local d = D.LKJCholesky(3, t(R.concentration, dtype))
      assert.are.same({ 3 }, dims(d.batch_shape))
      assert.are.same({ 3, 3 }, dims(d.event_shape))
      local lp = d:log_prob(t(R.value, dtype))
      assert.are.equal(dtype, lp.dtype)
      local want = {}
      for i, eta in ipairs(R.concentration) do want[i] = lkj_logpdf(eta, R.value) end
      H.assert_values(lp, want, tol, 'log_prob')
      H.assert_values(lp, R.log_prob, tol, 'log_prob vs PyTorch')
    end
    -- dim 2 integrates to one over the off-diagonal element
    for _, eta in ipairs { 1.0, 2.0, 3.5 } do
      local d = D.LKJCholesky(2, eta)
      local total = M.integrate(function(r)
        local c = math.sqrt(1 - r * r)
        if c <= 0 then return 0 end
        return math.exp(d:log_prob(t { { 1.0, 0.0 }, { r, c } }):item())
      end, -1 + 1e-9, 1 - 1e-9, 2000)
      H.close(total, 1, 1e-3, 'dim 2 density integrates to one, eta ' .. eta)
    end
    assert(gradcheck(function(eta) return D.LKJCholesky(3, eta):log_prob(t(R.value)) end, { leaf(R.concentration) }),
      'log_prob gradient in concentration')
  end)

  it('samples are Cholesky factors of correlation matrices (seeded)', function()
    torch.manual_seed(9)
    for _, dtype in ipairs { f64, f32 } do
      local d = D.LKJCholesky(4, t({ 0.5, 2.0 }, dtype))
      local s = d:sample(200)
      assert.are.same({ 200, 2, 4, 4 }, dims(s.shape))
      assert.are.equal(dtype, s.dtype)
      assert(D.constraints.corr_cholesky:check(s):all():item(), 'in the support')
      H.assert_values(s:triu(1):abs():max(), 0, 0, 'lower triangular')
      assert(s:diagonal(0, -2, -1):gt(0):all():item(), 'positive diagonal')
      local corr_diag = s:matmul(s:transpose(-2, -1)):diagonal(0, -2, -1)
      assert((corr_diag - 1):abs():max():item() < (dtype == f64 and 1e-12 or 1e-5), 'unit diagonal of L L^T')
    end
  end)

  it('for dim 2 the off-diagonal element is 2 Beta(eta, eta) - 1 (Kolmogorov-Smirnov)', function()
    torch.manual_seed(21)
    local cdfs = {
      [1.0] = function(r) return (r + 1) / 2 end,
      [2.0] = function(r) return 0.75 * (r - r ^ 3 / 3) + 0.5 end,
      [0.5] = function(r) return 0.5 + math.asin(r) / pi end,
    }
    for eta, cdf in pairs(cdfs) do
      local s = D.LKJCholesky(2, eta):sample(4000)
      local xs = s:select(-2, 2):select(-1, 1):totable()
      M.check_ks(xs, cdf, 'eta ' .. eta)
    end
    -- and for dim 3 every off-diagonal correlation is 2 Beta(eta + 1/2, eta + 1/2) - 1: with eta = 1/2, uniform
    local s = D.LKJCholesky(3, 0.5):sample(4000)
    local corr = s:matmul(s:transpose(-2, -1))
    for _, ij in ipairs { { 2, 1 }, { 3, 1 }, { 3, 2 } } do
      M.check_ks(corr:select(-2, ij[1]):select(-1, ij[2]):totable(), function(r) return (r + 1) / 2 end,
        ('dim 3 correlation %d, %d'):format(ij[1], ij[2]))
    end
  end)

  it('expands, and rejects bad arguments with errors naming the distribution', function()
    local d = D.LKJCholesky(3, 1.5)
    assert.are.same({}, dims(d.batch_shape))
    local e = d:expand { 2, 2 }
    assert.are.same({ 2, 2 }, dims(e.batch_shape))
    assert.are.same({ 5, 2, 2, 3, 3 }, dims(e:sample(5).shape))
    H.close(e:log_prob(t(R.value, f32))[2][1], lkj_logpdf(1.5, R.value), 1e-6, 'expanded log_prob (float32)')
    H.raises(function() D.LKJCholesky(1, 1.0) end, 'LKJCholesky', 'dim', 'greater than or equal to 2')
    H.raises(function() D.LKJCholesky(2.5, 1.0) end, 'LKJCholesky', 'dim')
    H.raises(function() D.LKJCholesky(3, -1.0) end, 'LKJCholesky', 'concentration', 'constraint')
    H.raises(function() d:log_prob(t { { 1.0, 0, 0 }, { 0.5, 0.5, 0 }, { 0, 0, 1 } }) end, 'LKJCholesky', 'support')
    H.raises(function() d:rsample() end, 'LKJCholesky', 'rsample')
  end)
end)
