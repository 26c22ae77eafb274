-- MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the Gaussian on
-- vectors (the last dimension of loc is the event). Everything is computed from the lower
-- Cholesky factor L of the covariance (torch.linalg.cholesky of it, or of the flipped precision
-- matrix), with triangular solves (torch.linalg.solve_triangular); all differentiable.
-- rsample is loc + L eps with eps standard normal, PyTorch's: the same values for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local MultivariateNormal = Distribution:extend('MultivariateNormal')
MultivariateNormal.arg_constraints = Distribution.params { 'loc', C.real_vector, 'covariance_matrix',
  C.positive_definite, 'precision_matrix', C.positive_definite, 'scale_tril', C.lower_cholesky }
MultivariateNormal.support = C.real_vector
MultivariateNormal.has_rsample = true
MultivariateNormal.lazy = { covariance_matrix = true, precision_matrix = true, scale_tril = true }

local function mT(x) return x:transpose(-2, -1) end

-- the matrix-vector products of a batch of matrices and a batch of vectors (broadcast)
local function batch_mv(bmat, bvec) return torch.matmul(bmat, bvec:unsqueeze(-1)):squeeze(-1) end
MultivariateNormal._batch_mv = batch_mv

--- the squared Mahalanobis distances x^T (L L^T)^-1 x for a batch of factors bL and of vectors
--- bx (bL's batch broadcasts to bx's): PyTorch's _batch_mahalanobis, which folds bx's extra
--- dimensions into the columns of one triangular solve per factor
local function batch_mahalanobis(bL, bx)
  local n = bx:size(-1)
  local bx_batch_shape = U.slice(bx.shape, 1, bx:dim() - 1)
  local bx_batch_dims = #bx_batch_shape
  local bL_batch_dims = bL:dim() - 2
  local outer = bx_batch_dims - bL_batch_dims
  local old_batch_dims = outer + bL_batch_dims
  local new_batch_dims = outer + 2 * bL_batch_dims
  -- bx as (..., 1, i, j, 1, n) with each batch size of bx split into (sx / sL, sL)
  local new_shape = U.slice(bx.shape, 1, outer)
  for k = 1, bL_batch_dims do
    local sL, sx = bL:size(k), bx:size(outer + k)
    new_shape[#new_shape + 1] = sx // sL
    new_shape[#new_shape + 1] = sL
  end
  new_shape[#new_shape + 1] = n
  bx = bx:reshape(new_shape)
  -- permute to (..., 1, j, i, 1, n)
  local perm = {}
  for k = 1, outer do perm[#perm + 1] = k end
  for k = outer + 1, new_batch_dims, 2 do perm[#perm + 1] = k end
  for k = outer + 2, new_batch_dims, 2 do perm[#perm + 1] = k end
  perm[#perm + 1] = new_batch_dims + 1
  bx = bx:permute(perm)
  local flat_L = bL:reshape(-1, n, n)
  local flat_x = bx:reshape(-1, flat_L:size(1), n)
  local flat_x_swap = flat_x:permute(2, 3, 1)
  local M_swap = torch.linalg.solve_triangular(flat_L, flat_x_swap, { upper = false }):pow(2):sum(-2)
  local M = M_swap:t()
  local permuted_M = M:reshape(U.slice(bx.shape, 1, bx:dim() - 1))
  local inv = {}
  for k = 1, outer do inv[#inv + 1] = k end
  for k = 1, bL_batch_dims do
    inv[#inv + 1] = outer + k
    inv[#inv + 1] = old_batch_dims + k
  end
  local reshaped_M = #inv > 0 and permuted_M:permute(inv) or permuted_M
  return reshaped_M:reshape(bx_batch_shape)
end
MultivariateNormal._batch_mahalanobis = batch_mahalanobis

-- the lower Cholesky factor of the inverse of P, from the Cholesky factor of P flipped
function MultivariateNormal._precision_to_scale_tril(P)
  local Lf = torch.linalg.cholesky(torch.flip(P, { -2, -1 }))
  local L_inv = mT(torch.flip(Lf, { -2, -1 }))
  local Id = torch.eye(P:size(-1), { dtype = P.dtype, device = P.device })
  return torch.linalg.solve_triangular(L_inv, Id, { upper = false })
end

--- MultivariateNormal(loc, covariance_matrix, precision_matrix, scale_tril, {validate_args}):
--- exactly one of the three matrices (the others by name: MultivariateNormal(loc, {scale_tril = L}))
function MultivariateNormal:init(...)
  local a = U.args('MultivariateNormal', { 'loc', 'covariance_matrix', 'precision_matrix', 'scale_tril',
    'validate_args' }, ...)
  local loc = U.tensor_arg('MultivariateNormal', 'loc', a.loc, 1)
  local given = (a.covariance_matrix and 1 or 0) + (a.precision_matrix and 1 or 0) + (a.scale_tril and 1 or 0)
  if given ~= 1 then
    U.raise('MultivariateNormal: exactly one of covariance_matrix or precision_matrix or scale_tril may be specified')
  end
  local loc_batch = U.slice(loc.shape, 1, loc:dim() - 1)
  local batch_shape
  for _, name in ipairs { 'scale_tril', 'covariance_matrix', 'precision_matrix' } do
    local m = a[name]
    if m ~= nil then
      U.tensor_arg('MultivariateNormal', name, m, 2)
      local ok, bs = pcall(torch.broadcast_shapes, U.slice(m.shape, 1, m:dim() - 2), loc_batch)
      if not ok then
        U.raise('MultivariateNormal: the batch shapes of %s %s and loc %s do not broadcast', name, tostring(m.shape),
          tostring(loc.shape))
      end
      batch_shape = bs
      if m:size(-1) ~= m:size(-2) or m:size(-1) ~= loc:size(-1) then
        U.raise('MultivariateNormal: %s must be a square matrix of the size of loc (%d), got shape %s', name,
          loc:size(-1), tostring(m.shape))
      end
      self[name] = m:expand(U.cat(batch_shape, { -1, -1 }))
    end
  end
  self.loc = loc:expand(U.cat(batch_shape, { -1 }))
  Distribution.init(self, batch_shape, { loc:size(-1) }, a.validate_args)
  if a.scale_tril ~= nil then
    self._unbroadcasted_scale_tril = a.scale_tril
  elseif a.covariance_matrix ~= nil then
    self._unbroadcasted_scale_tril = torch.linalg.cholesky(a.covariance_matrix)
  else
    self._unbroadcasted_scale_tril = MultivariateNormal._precision_to_scale_tril(a.precision_matrix)
  end
end

function MultivariateNormal:expand(...)
  local shape = U.sample_shape('MultivariateNormal.expand', ...)
  local new = self:_new_instance()
  local cov_shape = U.cat(shape, self._event_shape, self._event_shape)
  new.loc = self.loc:expand(U.cat(shape, self._event_shape))
  new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
  for _, name in ipairs { 'covariance_matrix', 'scale_tril', 'precision_matrix' } do
    local m = rawget(self, name)
    if m ~= nil then new[name] = m:expand(cov_shape) end
  end
  return self:_init_expanded(new, shape)
end

--- MultivariateNormal._scale_tril_properties(cls, matrix_shape): the lazy properties scale_tril,
--- covariance_matrix and precision_matrix of a class holding _unbroadcasted_scale_tril (also
--- Wishart's), expanded to matrix_shape(d)
function MultivariateNormal._scale_tril_properties(cls, matrix_shape)
  Distribution.lazy_property(cls, 'scale_tril', function(d)
    return d._unbroadcasted_scale_tril:expand(matrix_shape(d))
  end)
  Distribution.lazy_property(cls, 'covariance_matrix', function(d)
    local L = d._unbroadcasted_scale_tril
    return torch.matmul(L, mT(L)):expand(matrix_shape(d))
  end)
  Distribution.lazy_property(cls, 'precision_matrix', function(d)
    return torch.cholesky_inverse(d._unbroadcasted_scale_tril):expand(matrix_shape(d))
  end)
end
MultivariateNormal._scale_tril_properties(MultivariateNormal, function(d)
  return U.cat(d._batch_shape, d._event_shape, d._event_shape)
end)

local props = MultivariateNormal.properties
function props.mean(d) return d.loc end
function props.mode(d) return d.loc end
function props.variance(d)
  return d._unbroadcasted_scale_tril:pow(2):sum(-1):expand(U.cat(d._batch_shape, d._event_shape))
end

function MultivariateNormal:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('MultivariateNormal.rsample', ...))
  local eps = torch.randn(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)
end

local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end
MultivariateNormal._half_log_det = half_log_det

function MultivariateNormal:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local diff = value - self.loc
  local M = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
  return -0.5 * (self._event_shape[1] * math.log(2 * math.pi) + M) - half_log_det(self._unbroadcasted_scale_tril)
end

function MultivariateNormal:entropy()
  local H = 0.5 * self._event_shape[1] * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
  if #self._batch_shape == 0 then return H end
  return H:expand(self._batch_shape)
end

return MultivariateNormal
