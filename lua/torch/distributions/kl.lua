-- torch.distributions.kl_divergence(p, q) and register_kl(P, Q, fn): KL(p || q) of the batch,
-- by the function registered for the most specific pair of classes (a subclass matches its
-- parents' entries, as in PyTorch's dispatch); an error naming the pair when none applies.
-- The formulas are PyTorch 1.13's, composed from differentiable ops (so gradients reach both
-- distributions' parameters); infinite divergences (supports not contained) are +inf.
local torch = require 'torch'
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local Distribution = require 'torch.distributions.distribution'
local D = {
  Bernoulli = require 'torch.distributions.bernoulli',
  Beta = require 'torch.distributions.beta',
  Binomial = require 'torch.distributions.binomial',
  Categorical = require 'torch.distributions.categorical',
  Cauchy = require 'torch.distributions.cauchy',
  Dirichlet = require 'torch.distributions.dirichlet',
  Exponential = require 'torch.distributions.exponential',
  Gamma = require 'torch.distributions.gamma',
  Geometric = require 'torch.distributions.geometric',
  Independent = require 'torch.distributions.independent',
  Laplace = require 'torch.distributions.laplace',
  MultivariateNormal = require 'torch.distributions.multivariate_normal',
  LowRankMultivariateNormal = require 'torch.distributions.lowrank_multivariate_normal',
  Normal = require 'torch.distributions.normal',
  OneHotCategorical = require 'torch.distributions.one_hot_categorical',
  Poisson = require 'torch.distributions.poisson',
  TransformedDistribution = require 'torch.distributions.transformed_distribution',
  Uniform = require 'torch.distributions.uniform',
  ContinuousBernoulli = require 'torch.distributions.continuous_bernoulli',
  Gumbel = require 'torch.distributions.gumbel',
  HalfNormal = require 'torch.distributions.half_normal',
  Pareto = require 'torch.distributions.pareto',
}

local KL = {}
local registry = {} -- array of {p = class, q = class, fn = function}
local memo = {}      -- p class -> q class -> fn or false

local INF = math.huge
local EULER = U.euler_constant

local function check_class(cls, what)
  if type(cls) ~= 'table' or not class.issubclass(cls, Distribution) then
    U.raise('register_kl: expected %s to be a Distribution class, got %s', what, type(cls))
  end
end

--- register_kl(P, Q, fn): fn(p, q) computes KL(p || q) for instances of P and Q (and their
--- subclasses, unless a more specific pair is registered); returns fn
function KL.register_kl(P, Q, fn)
  check_class(P, 'type_p')
  check_class(Q, 'type_q')
  if type(fn) ~= 'function' then U.raise('register_kl: expected a function, got %s', type(fn)) end
  for _, e in ipairs(registry) do
    if rawequal(e.p, P) and rawequal(e.q, Q) then
      e.fn = fn
      memo = {}
      return fn
    end
  end
  registry[#registry + 1] = { p = P, q = Q, fn = fn }
  memo = {}
  return fn
end

-- the number of classes between cls and its ancestor
local function depth(cls, ancestor)
  local n = 0
  while not rawequal(cls, ancestor) do
    cls = rawget(cls, 'super')
    n = n + 1
  end
  return n
end

-- the most specific match: the one nearest to P, then nearest to Q (PyTorch's left order; it
-- warns where the right order disagrees, which single pairs of classes here never do)
local function dispatch(P, Q)
  local best, bp, bq
  for _, e in ipairs(registry) do
    if class.issubclass(P, e.p) and class.issubclass(Q, e.q) then
      local dp, dq = depth(P, e.p), depth(Q, e.q)
      if best == nil or dp < bp or (dp == bp and dq < bq) then best, bp, bq = e.fn, dp, dq end
    end
  end
  return best
end

--- kl_divergence(p, q): KL(p || q), a tensor of the batch shape
function KL.kl_divergence(p, q)
  if not class.isinstance(p, Distribution) or not class.isinstance(q, Distribution) then
    U.raise('kl_divergence: expected two distributions, got %s and %s', type(p), type(q))
  end
  local P, Q = getmetatable(p), getmetatable(q)
  memo[P] = memo[P] or {}
  local fn = memo[P][Q]
  if fn == nil then
    fn = dispatch(P, Q) or false
    memo[P][Q] = fn
  end
  if not fn then
    U.raise('kl_divergence: no KL(p || q) is implemented for p type %s and q type %s', rawget(P, '__name'),
      rawget(Q, '__name'))
  end
  return fn(p, q)
end

local register_kl = KL.register_kl
local function infinite_like(t) return torch.full_like(t, INF) end
local function x_log_x(t) return t * t:log() end
local function batch_trace_XXT(m)
  local n, k = m:size(-1), m:size(-2)
  return m:reshape(-1, k * n):pow(2):sum(-1):reshape(U.slice(m.shape, 1, m:dim() - 2))
end

-- ---- the same family ----

local function kl_bernoulli_bernoulli(p, q)
  local t1 = p.probs * (torch.softplus(-q.logits) - torch.softplus(-p.logits))
  t1 = torch.where(q.probs:eq(0), INF, t1)
  t1 = torch.where(p.probs:eq(0), 0, t1)
  local t2 = (1 - p.probs) * (torch.softplus(q.logits) - torch.softplus(p.logits))
  t2 = torch.where(q.probs:eq(1), INF, t2)
  t2 = torch.where(p.probs:eq(1), 0, t2)
  return t1 + t2
end
register_kl(D.Bernoulli, D.Bernoulli, kl_bernoulli_bernoulli)

register_kl(D.Beta, D.Beta, function(p, q)
  local sum_p = p.concentration1 + p.concentration0
  local sum_q = q.concentration1 + q.concentration0
  local t1 = q.concentration1:lgamma() + q.concentration0:lgamma() + sum_p:lgamma()
  local t2 = p.concentration1:lgamma() + p.concentration0:lgamma() + sum_q:lgamma()
  local t3 = (p.concentration1 - q.concentration1) * torch.digamma(p.concentration1)
  local t4 = (p.concentration0 - q.concentration0) * torch.digamma(p.concentration0)
  local t5 = (sum_q - sum_p) * torch.digamma(sum_p)
  return t1 - t2 + t3 + t4 + t5
end)

register_kl(D.Binomial, D.Binomial, function(p, q)
  if p.total_count:lt(q.total_count):any():item() then
    U.raise('kl_divergence: KL between Binomials where q.total_count > p.total_count is not implemented')
  end
  local kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
  return torch.where(p.total_count:gt(q.total_count), INF, kl)
end)

local function kl_categorical_categorical(p, q)
  local t = p.probs * (p.logits - q.logits)
  t = torch.where(q.probs:eq(0):expand_as(t), INF, t)
  t = torch.where(p.probs:eq(0):expand_as(t), 0, t)
  return t:sum(-1)
end
register_kl(D.Categorical, D.Categorical, kl_categorical_categorical)

register_kl(D.Cauchy, D.Cauchy, function(p, q)
  local t1 = ((p.scale + q.scale):pow(2) + (p.loc - q.loc):pow(2)):log()
  local t2 = (4 * p.scale * q.scale):log()
  return t1 - t2
end)

register_kl(D.Dirichlet, D.Dirichlet, function(p, q)
  local sum_p = p.concentration:sum(-1)
  local sum_q = q.concentration:sum(-1)
  local t1 = sum_p:lgamma() - sum_q:lgamma()
  local t2 = (p.concentration:lgamma() - q.concentration:lgamma()):sum(-1)
  local t3 = p.concentration - q.concentration
  local t4 = p.concentration:digamma() - sum_p:digamma():unsqueeze(-1)
  return t1 - t2 + (t3 * t4):sum(-1)
end)

register_kl(D.Exponential, D.Exponential, function(p, q)
  local rate_ratio = q.rate / p.rate
  return -rate_ratio:log() + rate_ratio - 1
end)

register_kl(D.Gamma, D.Gamma, function(p, q)
  local t1 = q.concentration * (p.rate / q.rate):log()
  local t2 = torch.lgamma(q.concentration) - torch.lgamma(p.concentration)
  local t3 = (p.concentration - q.concentration) * torch.digamma(p.concentration)
  local t4 = (q.rate - p.rate) * (p.concentration / p.rate)
  return t1 + t2 + t3 + t4
end)

register_kl(D.Geometric, D.Geometric, function(p, q)
  return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
end)

register_kl(D.Laplace, D.Laplace, function(p, q)
  local scale_ratio = p.scale / q.scale
  local loc_abs_diff = (p.loc - q.loc):abs()
  local t1 = -scale_ratio:log()
  local t2 = loc_abs_diff / q.scale
  local t3 = scale_ratio * (-loc_abs_diff / p.scale):exp()
  return t1 + t2 + t3 - 1
end)

register_kl(D.MultivariateNormal, D.MultivariateNormal, function(p, q)
  if p._event_shape ~= q._event_shape then
    U.raise('kl_divergence: KL-divergence between two Multivariate Normals with different event shapes cannot be '
      .. 'computed (%s and %s)', tostring(p._event_shape), tostring(q._event_shape))
  end
  local Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
  local half_term1 = Lq:diagonal(0, -2, -1):log():sum(-1) - Lp:diagonal(0, -2, -1):log():sum(-1)
  local batch = torch.broadcast_shapes(U.slice(Lq.shape, 1, Lq:dim() - 2), U.slice(Lp.shape, 1, Lp:dim() - 2))
  local n = p._event_shape[1]
  local full = U.cat(batch, { n, n })
  local term2 = batch_trace_XXT(torch.linalg.solve_triangular(Lq:expand(full), Lp:expand(full), { upper = false }))
  local term3 = D.MultivariateNormal._batch_mahalanobis(Lq, q.loc - p.loc)
  return half_term1 + 0.5 * (term2 + term3 - n)
end)

-- ---- the low-rank multivariate normals (PyTorch's expansions of tr(Sigma_q^-1 Sigma_p)) ----

local LR = D.LowRankMultivariateNormal
local MVN = D.MultivariateNormal
local function check_event_shapes(p, q)
  if p._event_shape ~= q._event_shape then
    U.raise('kl_divergence: KL-divergence between two (Low Rank) Multivariate Normals with different event shapes '
      .. 'cannot be computed (%s and %s)', tostring(p._event_shape), tostring(q._event_shape))
  end
end
local function lr_logdet(d) return LR._lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag,
    d._capacitance_tril) end
-- the squared Mahalanobis distance of p's mean under q, and A = capL_q^-1 W_q^T D_q^-1
local function lr_q_terms(p, q)
  local W, Dq = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
  local term3 = LR._lowrank_mahalanobis(W, Dq, q.loc - p.loc, q._capacitance_tril)
  local A = torch.linalg.solve_triangular(q._capacitance_tril, LR._Wt_Dinv(W, Dq), { upper = false })
  return term3, A
end

register_kl(LR, LR, function(p, q)
  check_event_shapes(p, q)
  local term1 = lr_logdet(q) - lr_logdet(p)
  local term3, A = lr_q_terms(p, q)
  local pW, pD, qD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
  local term21 = (pD / qD):sum(-1)
  local term22 = batch_trace_XXT(pW * qD:rsqrt():unsqueeze(-1))
  local term23 = batch_trace_XXT(A * pD:sqrt():unsqueeze(-2))
  local term24 = batch_trace_XXT(A:matmul(pW))
  return 0.5 * (term1 + (term21 + term22 - term23 - term24) + term3 - p._event_shape[1])
end)

register_kl(MVN, LR, function(p, q)
  check_event_shapes(p, q)
  local Lp = p._unbroadcasted_scale_tril
  local term1 = lr_logdet(q) - 2 * MVN._half_log_det(Lp)
  local term3, A = lr_q_terms(p, q)
  local term21 = batch_trace_XXT(Lp * q._unbroadcasted_cov_diag:rsqrt():unsqueeze(-1))
  local term22 = batch_trace_XXT(A:matmul(Lp))
  return 0.5 * (term1 + (term21 - term22) + term3 - p._event_shape[1])
end)

register_kl(LR, MVN, function(p, q)
  check_event_shapes(p, q)
  local Lq = q._unbroadcasted_scale_tril
  local term1 = 2 * MVN._half_log_det(Lq) - lr_logdet(p)
  local term3 = MVN._batch_mahalanobis(Lq, q.loc - p.loc)
  local pW = p._unbroadcasted_cov_factor
  local batch = torch.broadcast_shapes(U.slice(Lq.shape, 1, Lq:dim() - 2), U.slice(pW.shape, 1, pW:dim() - 2))
  local n = p._event_shape[1]
  local Lq_b = Lq:expand(U.cat(batch, { n, n }))
  local pW_b = pW:expand(U.cat(batch, { n, pW:size(-1) }))
  local pD_b = torch.diag_embed(p._unbroadcasted_cov_diag:sqrt()):expand(U.cat(batch, { n, n }))
  local term21 = batch_trace_XXT(torch.linalg.solve_triangular(Lq_b, pW_b, { upper = false }))
  local term22 = batch_trace_XXT(torch.linalg.solve_triangular(Lq_b, pD_b, { upper = false }))
  return 0.5 * (term1 + (term21 + term22) + term3 - n)
end)

local function kl_normal_normal(p, q)
  local var_ratio = (p.scale / q.scale):pow(2)
  local t1 = ((p.loc - q.loc) / q.scale):pow(2)
  return 0.5 * (var_ratio + t1 - 1 - var_ratio:log())
end
register_kl(D.Normal, D.Normal, kl_normal_normal)

register_kl(D.OneHotCategorical, D.OneHotCategorical, function(p, q)
  return kl_categorical_categorical(p._categorical, q._categorical)
end)

register_kl(D.Poisson, D.Poisson, function(p, q)
  return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
end)

register_kl(D.TransformedDistribution, D.TransformedDistribution, function(p, q)
  local same = #p.transforms == #q.transforms
  for i = 1, #p.transforms do same = same and p.transforms[i] == q.transforms[i] end
  if not same or p._event_shape ~= q._event_shape then
    U.raise('kl_divergence: KL between %s and %s is implemented only for the same transforms and event shape',
      Distribution.class_name(p), Distribution.class_name(q))
  end
  return KL.kl_divergence(p.base_dist, q.base_dist)
end)

register_kl(D.Uniform, D.Uniform, function(p, q)
  local result = ((q.high - q.low) / (p.high - p.low)):log()
  return torch.where(q.low:gt(p.low):logical_or(q.high:lt(p.high)), INF, result)
end)

register_kl(D.Independent, D.Independent, function(p, q)
  if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
    U.raise('kl_divergence: KL between Independent distributions with different reinterpreted_batch_ndims (%d and %d) '
      .. 'is not implemented', p.reinterpreted_batch_ndims, q.reinterpreted_batch_ndims)
  end
  return U.sum_rightmost(KL.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
end)

-- ---- different families (those of PyTorch's among the families here) ----

register_kl(D.Bernoulli, D.Poisson, function(p, q)
  return -p:entropy() - (p.probs * q.rate:log() - q.rate)
end)

register_kl(D.Beta, D.Exponential, function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))
end)

register_kl(D.Beta, D.Gamma, function(p, q)
  local t1 = -p:entropy()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (q.concentration - 1) * (p.concentration1:digamma() - (p.concentration1 + p.concentration0):digamma())
  local t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
  return t1 + t2 - t3 + t4
end)

register_kl(D.Beta, D.Normal, function(p, q)
  local E_beta = p.concentration1 / (p.concentration1 + p.concentration0)
  local var_normal = q.scale:pow(2)
  local t1 = -p:entropy()
  local t2 = 0.5 * (var_normal * 2 * math.pi):log()
  local t3 = (E_beta * (1 - E_beta) / (p.concentration1 + p.concentration0 + 1) + E_beta:pow(2)) * 0.5
  local t4 = q.loc * E_beta
  local t5 = q.loc:pow(2) * 0.5
  return t1 + t2 + (t3 - t4 + t5) / var_normal
end)

register_kl(D.Beta, D.Uniform, function(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return torch.where(q.low:gt(0):logical_or(q.high:lt(1)), INF, result)
end)

local function inf_of(name) return function(p) return infinite_like(p[name]) end end
local CB, Pareto, Gumbel = D.ContinuousBernoulli, D.Pareto, D.Gumbel
for _, Q in ipairs { D.Beta, CB, Pareto, D.Uniform } do register_kl(D.Exponential, Q, inf_of('rate')) end
for _, Q in ipairs { D.Beta, CB, Pareto, D.Uniform } do register_kl(D.Gamma, Q, inf_of('concentration')) end
for _, Q in ipairs { D.Beta, CB, D.Exponential, D.Gamma, Pareto, D.Uniform } do
  register_kl(D.Laplace, Q, inf_of('loc'))
  register_kl(D.Normal, Q, inf_of('loc'))
end
register_kl(D.Beta, Pareto, inf_of('concentration1'))
register_kl(CB, Pareto, inf_of('probs'))
for _, Q in ipairs { D.Beta, CB, D.Exponential, D.Gamma, Pareto, D.Uniform } do register_kl(Gumbel, Q, inf_of('loc')) end
for _, Q in ipairs { D.Beta, CB, D.Uniform } do register_kl(Pareto, Q, inf_of('scale')) end
for _, Q in ipairs { D.Bernoulli, D.Binomial } do register_kl(D.Poisson, Q, inf_of('rate')) end

register_kl(D.Exponential, D.Gamma, function(p, q)
  local ratio = q.rate / p.rate
  local t1 = -q.concentration * ratio:log()
  return t1 + ratio + q.concentration:lgamma() + q.concentration * EULER - (1 + EULER)
end)

register_kl(D.Exponential, D.Normal, function(p, q)
  local var_normal = q.scale:pow(2)
  local rate_sqr = p.rate:pow(2)
  local t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi):log()
  local t2 = rate_sqr:reciprocal()
  local t3 = q.loc / p.rate
  local t4 = q.loc:pow(2) * 0.5
  return t1 - 1 + (t2 - t3 + t4) / var_normal
end)

register_kl(D.Gamma, D.Exponential, function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * p.concentration / p.rate
end)

register_kl(D.Gamma, D.Normal, function(p, q)
  local var_normal = q.scale:pow(2)
  local beta_sqr = p.rate:pow(2)
  local t1 = 0.5 * (beta_sqr * var_normal * 2 * math.pi):log() - p.concentration - p.concentration:lgamma()
  local t2 = 0.5 * (p.concentration:pow(2) + p.concentration) / beta_sqr
  local t3 = q.loc * p.concentration / p.rate
  local t4 = 0.5 * q.loc:pow(2)
  return t1 + (p.concentration - 1) * p.concentration:digamma() + (t2 - t3 + t4) / var_normal
end)

register_kl(D.Laplace, D.Normal, function(p, q)
  local var_normal = q.scale:pow(2)
  local scale_sqr_var_ratio = p.scale:pow(2) / var_normal
  local t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi):log()
  local t2 = 0.5 * p.loc:pow(2)
  local t3 = p.loc * q.loc
  local t4 = 0.5 * q.loc:pow(2)
  return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1
end)

register_kl(D.Normal, D.Laplace, function(p, q)
  local loc_diff = p.loc - q.loc
  local scale_ratio = p.scale / q.scale
  local loc_diff_scale_ratio = loc_diff / p.scale
  local t1 = scale_ratio:log()
  local t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio:pow(2)):exp()
  local t3 = loc_diff * torch.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
  return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))
end)

register_kl(D.Uniform, D.Beta, function(p, q)
  local common_term = p.high - p.low
  local t1 = common_term:log()
  local t2 = (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
  local t3 = (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + common_term) / common_term
  local t4 = q.concentration1:lgamma() + q.concentration0:lgamma() - (q.concentration1 + q.concentration0):lgamma()
  local result = t3 + t4 - t1 - t2
  return torch.where(p.high:gt(1):logical_or(p.low:lt(0)), INF, result)
end)

register_kl(D.Uniform, D.Exponential, function(p, q)
  local result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate):log()
  return torch.where(p.low:lt(0), INF, result)
end)

register_kl(D.Uniform, D.Gamma, function(p, q)
  local common_term = p.high - p.low
  local t1 = common_term:log()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
  local t4 = q.rate * (p.high + p.low) / 2
  return torch.where(p.low:lt(0), INF, -t1 + t2 + t3 + t4)
end)

register_kl(D.Uniform, D.Normal, function(p, q)
  local common_term = p.high - p.low
  local t1 = (math.sqrt(math.pi * 2) * q.scale / common_term):log()
  local t2 = common_term:pow(2) / 12
  local t3 = ((p.high + p.low - 2 * q.loc) / 2):pow(2)
  return t1 + 0.5 * (t2 + t3) / q.scale:pow(2)
end)

-- ---- the families of PyTorch 1.13 added later (same-family pairs first) ----

register_kl(CB, CB, function(p, q)
  local t1 = p.mean * (p.logits - q.logits)
  local t2 = p:_cont_bern_log_norm() + torch.log1p(-p.probs)
  local t3 = -q:_cont_bern_log_norm() - torch.log1p(-q.probs)
  return t1 + t2 + t3
end)

register_kl(Gumbel, Gumbel, function(p, q)
  local ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
  local t1 = -ct1:log() - ct2 + ct3
  local t2 = ct1 * EULER
  local t3 = (ct2 + (1 + ct1):lgamma() - ct3):exp()
  return t1 + t2 + t3 - (1 + EULER)
end)

register_kl(D.HalfNormal, D.HalfNormal, function(p, q) return kl_normal_normal(p.base_dist, q.base_dist) end)

register_kl(Pareto, Pareto, function(p, q)
  local scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
  local result = q.alpha * scale_ratio:log() - alpha_ratio:log() + alpha_ratio - 1
  return torch.where(p.scale:lt(q.scale), INF, result)
end)

-- KL(p || q) for q a ContinuousBernoulli and p on [0, 1] with the given entropy and mean
local function kl_to_continuous_bernoulli(p, q)
  return -p:entropy() - p.mean * q.logits - torch.log1p(-q.probs) - q:_cont_bern_log_norm()
end
register_kl(D.Beta, CB, kl_to_continuous_bernoulli)

register_kl(CB, D.Exponential, function(p, q) return -p:entropy() - q.rate:log() + q.rate * p.mean end)

register_kl(CB, D.Normal, function(p, q)
  local t1 = -p:entropy()
  local t2 = 0.5 * (math.log(2 * math.pi) + (q.loc / q.scale):pow(2)) + q.scale:log()
  local t3 = (p.variance + p.mean:pow(2) - 2 * q.loc * p.mean) / (2 * q.scale:pow(2))
  return t1 + t2 + t3
end)

register_kl(CB, D.Uniform, function(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return torch.where(q.low:ge(0):logical_or(q.high:le(1)), INF, result)
end)

register_kl(D.Exponential, Gumbel, function(p, q)
  local scale_rate_prod, loc_scale_ratio = p.rate * q.scale, q.loc / q.scale
  local t1 = scale_rate_prod:log() - 1
  local t2 = loc_scale_ratio:exp() * scale_rate_prod / (scale_rate_prod + 1)
  return t1 - loc_scale_ratio + t2 + scale_rate_prod:reciprocal()
end)

register_kl(D.Gamma, Gumbel, function(p, q)
  local a = p.concentration
  local beta_scale_prod, loc_scale_ratio = p.rate * q.scale, q.loc / q.scale
  local t1 = (a - 1) * a:digamma() - a:lgamma() - a
  local t2 = beta_scale_prod:log() + a / beta_scale_prod
  local t3 = loc_scale_ratio:exp() * (1 + beta_scale_prod:reciprocal()):pow(-a) - loc_scale_ratio
  return t1 + t2 + t3
end)

register_kl(Gumbel, D.Normal, function(p, q)
  local param_ratio = p.scale / q.scale
  local t1 = (param_ratio / math.sqrt(2 * math.pi)):log()
  local t2 = (math.pi * param_ratio * 0.5):pow(2) / 3
  local t3 = ((p.loc + p.scale * EULER - q.loc) / q.scale):pow(2) * 0.5
  return -t1 + t2 + t3 - (EULER + 1)
end)

register_kl(D.Normal, Gumbel, function(p, q)
  local mean_scale_ratio = p.loc / q.scale
  local var_scale_sqr_ratio = (p.scale / q.scale):pow(2)
  local loc_scale_ratio = q.loc / q.scale
  local t1 = var_scale_sqr_ratio:log() * 0.5
  local t2 = mean_scale_ratio - loc_scale_ratio
  local t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio):exp()
  return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))
end)

register_kl(Pareto, D.Exponential, function(p, q)
  local scale_rate_prod = p.scale * q.rate
  local result = (p.alpha / scale_rate_prod):log() - p.alpha:reciprocal() + p.alpha * scale_rate_prod / (p.alpha - 1) - 1
  return torch.where(p.alpha:le(1), INF, result)
end)

register_kl(Pareto, D.Gamma, function(p, q)
  local common_term = p.scale:log() + p.alpha:reciprocal()
  local t1 = p.alpha:log() - common_term
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * common_term
  local t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
  return torch.where(p.alpha:le(1), INF, t1 + t2 + t3 + t4 - 1)
end)

register_kl(Pareto, D.Normal, function(p, q)
  local var_normal = 2 * q.scale:pow(2)
  local common_term = p.scale / (p.alpha - 1)
  local t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * common_term:pow(2) / (p.alpha - 2)
  local t4 = (p.alpha * common_term - q.loc):pow(2)
  return torch.where(p.alpha:le(2), INF, t1 - t2 + (t3 + t4) / var_normal - 1)
end)

register_kl(D.Uniform, CB, function(p, q)
  return torch.where(p.high:ge(1):logical_or(p.low:le(0)), INF, kl_to_continuous_bernoulli(p, q))
end)

register_kl(D.Uniform, Gumbel, function(p, q)
  local common_term = q.scale / (p.high - p.low)
  local high_loc_diff, low_loc_diff = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
  local t1 = common_term:log() + 0.5 * (high_loc_diff + low_loc_diff)
  local t2 = common_term * ((-high_loc_diff):exp() - (-low_loc_diff):exp())
  return t1 - t2
end)

register_kl(D.Uniform, Pareto, function(p, q)
  local support_uniform = p.high - p.low
  local t1 = (q.alpha * q.scale:pow(q.alpha) * support_uniform):log()
  local t2 = (x_log_x(p.high) - x_log_x(p.low) - support_uniform) / support_uniform
  return torch.where(p.low:lt(q.scale), INF, t2 * (q.alpha + 1) - t1)
end)

return KL
