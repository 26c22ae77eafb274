-- LowRankMultivariateNormal(loc, cov_factor, cov_diag): the Gaussian on vectors whose covariance
-- is W W^T + diag(D), with W = cov_factor (n x m) and D = cov_diag (n). As in PyTorch 1.13, log_prob
-- and entropy never form the n x n covariance: they go through the m x m capacitance matrix
-- C = I + W^T D^-1 W (its Cholesky factor), by the Woodbury identity for the Mahalanobis distance
-- and the matrix determinant lemma for log|W W^T + D| = log|C| + log|D|. All differentiable.
-- rsample is loc + W eps_W + sqrt(D) eps_D, PyTorch's.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local MVN = require 'torch.distributions.multivariate_normal'

local LowRankMultivariateNormal = Distribution:extend('LowRankMultivariateNormal')
LowRankMultivariateNormal.arg_constraints = Distribution.params { 'loc', C.real_vector, 'cov_factor',
  C.independent(C.real, 2), 'cov_diag', C.independent(C.positive, 1) }
LowRankMultivariateNormal.support = C.real_vector
LowRankMultivariateNormal.has_rsample = true

local batch_mv, batch_mahalanobis = MVN._batch_mv, MVN._batch_mahalanobis
local function mT(x) return x:transpose(-2, -1) end

-- x + the identity, for a batch of square matrices x
local function add_identity(x)
  return x + torch.eye(x:size(-1), { dtype = x.dtype, device = x.device })
end

-- W^T D^-1 (m x n) for a batch of factors W and of diagonals D
local function Wt_Dinv(W, D) return mT(W) / D:unsqueeze(-2) end

--- the lower Cholesky factor of the capacitance matrix I + W^T D^-1 W
local function capacitance_tril(W, D)
  return torch.linalg.cholesky(add_identity(torch.matmul(Wt_Dinv(W, D), W)))
end

--- log|W W^T + D| = log|C| + log|D| (matrix determinant lemma)
local function lowrank_logdet(W, D, capL)
  return 2 * capL:diagonal(0, -2, -1):log():sum(-1) + D:log():sum(-1)
end

--- x^T (W W^T + D)^-1 x = x^T D^-1 x - |capL^-1 W^T D^-1 x|^2 (Woodbury identity)
local function lowrank_mahalanobis(W, D, x, capL)
  local term1 = (x:pow(2) / D):sum(-1)
  local term2 = batch_mahalanobis(capL, batch_mv(Wt_Dinv(W, D), x))
  return term1 - term2
end

-- the helpers of kl.lua
LowRankMultivariateNormal._capacitance_tril = capacitance_tril
LowRankMultivariateNormal._lowrank_logdet = lowrank_logdet
LowRankMultivariateNormal._lowrank_mahalanobis = lowrank_mahalanobis
LowRankMultivariateNormal._Wt_Dinv = Wt_Dinv

--- LowRankMultivariateNormal(loc, cov_factor, cov_diag, {validate_args})
function LowRankMultivariateNormal:init(...)
  local name = 'LowRankMultivariateNormal'
  local a = U.args(name, { 'loc', 'cov_factor', 'cov_diag', 'validate_args' }, ...)
  local loc = U.tensor_arg(name, 'loc', a.loc, 1)
  local W = U.tensor_arg(name, 'cov_factor', a.cov_factor, 2)
  local D = U.tensor_arg(name, 'cov_diag', a.cov_diag, 1)
  local n = loc:size(-1)
  if W:size(-2) ~= n then
    U.raise('%s: cov_factor must be a batch of matrices with shape %d x m, got shape %s', name, n, tostring(W.shape))
  end
  if D:size(-1) ~= n then
    U.raise('%s: cov_diag must be a batch of vectors with shape (%d), got shape %s', name, n, tostring(D.shape))
  end
  local ok, res = pcall(torch.broadcast_tensors, loc:unsqueeze(-1), W, D:unsqueeze(-1))
  if not ok then
    U.raise('%s: incompatible batch shapes: loc %s, cov_factor %s, cov_diag %s', name, tostring(loc.shape),
      tostring(W.shape), tostring(D.shape))
  end
  self.loc = res[1]:select(-1, 1)
  self.cov_factor = res[2]
  self.cov_diag = res[3]:select(-1, 1)
  self._unbroadcasted_cov_factor = W
  self._unbroadcasted_cov_diag = D
  Distribution.init(self, U.slice(self.loc.shape, 1, self.loc:dim() - 1), { n }, a.validate_args)
  -- after validation: a cov_diag that is not positive is reported as such, not as a failed Cholesky
  self._capacitance_tril = capacitance_tril(W, D)
end

function LowRankMultivariateNormal:expand(...)
  local shape = U.sample_shape('LowRankMultivariateNormal.expand', ...)
  local new = self:_new_instance()
  local loc_shape = U.cat(shape, self._event_shape)
  new.loc = self.loc:expand(loc_shape)
  new.cov_diag = self.cov_diag:expand(loc_shape)
  new.cov_factor = self.cov_factor:expand(U.cat(loc_shape, { self.cov_factor:size(-1) }))
  new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
  new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
  new._capacitance_tril = self._capacitance_tril
  return self:_init_expanded(new, shape)
end

local function full_matrix_shape(d) return U.cat(d._batch_shape, d._event_shape, d._event_shape) end

local props = LowRankMultivariateNormal.properties
function props.mean(d) return d.loc end
function props.mode(d) return d.loc end
Distribution.lazy_property(LowRankMultivariateNormal, 'variance', function(d)
  return (d._unbroadcasted_cov_factor:pow(2):sum(-1) + d._unbroadcasted_cov_diag)
      :expand(U.cat(d._batch_shape, d._event_shape))
end)
-- W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, whose middle factor has eigenvalues >= 1
-- (well conditioned for the Cholesky factorisation), as in PyTorch
Distribution.lazy_property(LowRankMultivariateNormal, 'scale_tril', function(d)
  local sqrt_D = d._unbroadcasted_cov_diag:sqrt():unsqueeze(-1)
  local Dinvsqrt_W = d._unbroadcasted_cov_factor / sqrt_D
  local K = add_identity(torch.matmul(Dinvsqrt_W, mT(Dinvsqrt_W)))
  return (sqrt_D * torch.linalg.cholesky(K)):expand(full_matrix_shape(d))
end)
Distribution.lazy_property(LowRankMultivariateNormal, 'covariance_matrix', function(d)
  local W = d._unbroadcasted_cov_factor
  return (torch.matmul(W, mT(W)) + torch.diag_embed(d._unbroadcasted_cov_diag)):expand(full_matrix_shape(d))
end)
-- (W W^T + D)^-1 = D^-1 - A^T A with A = capL^-1 W^T D^-1 (Woodbury identity)
Distribution.lazy_property(LowRankMultivariateNormal, 'precision_matrix', function(d)
  local A = torch.linalg.solve_triangular(d._capacitance_tril,
    Wt_Dinv(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag), { upper = false })
  return (torch.diag_embed(d._unbroadcasted_cov_diag:reciprocal()) - torch.matmul(mT(A), A))
      :expand(full_matrix_shape(d))
end)

function LowRankMultivariateNormal:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('LowRankMultivariateNormal.rsample', ...))
  local W_shape = U.cat(U.slice(shape, 1, #shape - 1), { self.cov_factor:size(-1) })
  local o = { dtype = self.loc.dtype, device = self.loc.device }
  local eps_W = torch.randn(W_shape, o)
  local eps_D = torch.randn(shape, o)
  return self.loc + batch_mv(self._unbroadcasted_cov_factor, eps_W) + self._unbroadcasted_cov_diag:sqrt() * eps_D
end

local function logdet(d)
  return lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril)
end

function LowRankMultivariateNormal:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local M = lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, value - self.loc,
    self._capacitance_tril)
  return -0.5 * (self._event_shape[1] * math.log(2 * math.pi) + logdet(self) + M)
end

function LowRankMultivariateNormal:entropy()
  local H = 0.5 * (self._event_shape[1] * (1.0 + math.log(2 * math.pi)) + logdet(self))
  if #self._batch_shape == 0 then return H end
  return H:expand(self._batch_shape)
end

return LowRankMultivariateNormal
