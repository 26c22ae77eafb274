-- Wishart(df, covariance_matrix | precision_matrix | scale_tril): the distribution of
-- sum_{k=1}^{df} x_k x_k^T for x_k ~ N(0, Sigma), on positive definite p x p matrices (df > p - 1,
-- a real number). As in PyTorch 1.13 everything goes through the lower Cholesky factor L of Sigma.
-- rsample is the Bartlett decomposition: (L A)(L A)^T with A lower triangular, A_ii =
-- sqrt(Chi2(df - i + 1)) (clamped above eps) and A_ij ~ N(0, 1) below the diagonal, so gradients
-- reach df and L. Samples that are not positive definite (likely when df < p) are drawn again, up
-- to max_try_correction times (10 by default), as PyTorch's rsample intends (its 1.13 code tests
-- the samples with the sense of the check inverted; this one redraws the singular ones).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Chi2 = require 'torch.distributions.chi2'
local MVN = require 'torch.distributions.multivariate_normal'
local as_int = require('torch.composite').as_int

local Wishart = Distribution:extend('Wishart')
Wishart.arg_constraints = Distribution.params { 'covariance_matrix', C.positive_definite, 'precision_matrix',
  C.positive_definite, 'scale_tril', C.lower_cholesky, 'df', C.greater_than(0) }
Wishart.support = C.positive_definite
Wishart.has_rsample = true
Wishart.lazy = { covariance_matrix = true, precision_matrix = true, scale_tril = true }

local LOG2 = math.log(2)
local function mT(x) return x:transpose(-2, -1) end

-- the Chi2 of the diagonal of Bartlett's A: df - (0, 1, ..., p - 1) for each batch element
local function bartlett_chi2(df, p, L)
  return Chi2(df:unsqueeze(-1) - torch.arange(0, p, { dtype = L.dtype, device = L.device }), { validate_args = false })
end

--- Wishart(df, covariance_matrix, precision_matrix, scale_tril, {validate_args}): df a number
--- or a tensor (its shape broadcasts with the matrices' batch shape); exactly one matrix
function Wishart:init(...)
  local a = U.args('Wishart', { 'df', 'covariance_matrix', 'precision_matrix', 'scale_tril', 'validate_args' }, ...)
  local given = (a.covariance_matrix and 1 or 0) + (a.precision_matrix and 1 or 0) + (a.scale_tril and 1 or 0)
  if given ~= 1 then
    U.raise('Wishart: exactly one of covariance_matrix or precision_matrix or scale_tril may be specified')
  end
  local pname = a.scale_tril and 'scale_tril' or a.covariance_matrix and 'covariance_matrix' or 'precision_matrix'
  local param = U.tensor_arg('Wishart', pname, a[pname], 2)
  if param:size(-1) ~= param:size(-2) then
    U.raise('Wishart: %s must be a batch of square matrices, got shape %s', pname, tostring(param.shape))
  end
  local p = param:size(-1)
  local param_batch = U.slice(param.shape, 1, param:dim() - 2)
  local df, batch_shape = a.df, nil
  if type(df) == 'number' then
    batch_shape = param_batch
    df = torch.tensor(df, { dtype = param.dtype, device = param.device })
  elseif torch.is_tensor(df) then
    local ok, bs = pcall(torch.broadcast_shapes, param_batch, df.shape)
    if not ok then
      U.raise('Wishart: the batch shapes of %s %s and df %s do not broadcast', pname, tostring(param.shape),
        tostring(df.shape))
    end
    batch_shape = bs
    df = df:expand(batch_shape)
  else
    U.raise('Wishart: df must be a number or a tensor, got %s', type(df))
  end
  if df:le(p - 1):any():item() then
    U.raise('Wishart: value of df=%s expected to be greater than ndim - 1 = %d', tostring(a.df), p - 1)
  end
  self.df = df
  self[pname] = param:expand(U.cat(batch_shape, { -1, -1 }))
  -- the bound of df depends on p: this instance's own constraints (PyTorch changes its class's)
  local ac = {}
  for i, name in ipairs(Wishart.arg_constraints) do
    ac[i], ac[name] = name, Wishart.arg_constraints[name]
  end
  ac.df = C.greater_than(p - 1)
  self.arg_constraints = ac
  if df:lt(p):any():item() then
    io.stderr:write('Wishart: low df values detected; singular samples are highly likely to occur for '
      .. 'ndim - 1 < df < ndim\n')
  end
  Distribution.init(self, batch_shape, { p, p }, a.validate_args)
  if a.scale_tril ~= nil then
    self._unbroadcasted_scale_tril = param
  elseif a.covariance_matrix ~= nil then
    self._unbroadcasted_scale_tril = torch.linalg.cholesky(param)
  else
    self._unbroadcasted_scale_tril = MVN._precision_to_scale_tril(param)
  end
  self._dist_chi2 = bartlett_chi2(self.df, p, self._unbroadcasted_scale_tril)
end

function Wishart:expand(...)
  local shape = U.sample_shape('Wishart.expand', ...)
  local new = self:_new_instance()
  local cov_shape = U.cat(shape, self._event_shape)
  new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril:expand(cov_shape)
  new.df = self.df:expand(shape)
  new.arg_constraints = self.arg_constraints
  for _, name in ipairs { 'covariance_matrix', 'scale_tril', 'precision_matrix' } do
    local m = rawget(self, name)
    if m ~= nil then new[name] = m:expand(cov_shape) end
  end
  new._dist_chi2 = bartlett_chi2(new.df, self._event_shape[1], new._unbroadcasted_scale_tril)
  return self:_init_expanded(new, shape)
end

MVN._scale_tril_properties(Wishart, function(d) return U.cat(d._batch_shape, d._event_shape) end)

-- df as (batch..., 1, 1)
local function df_matrix(d, df) return (df or d.df):reshape(U.cat(d._batch_shape, { 1, 1 })) end

local props = Wishart.properties
function props.mean(d) return df_matrix(d) * d.covariance_matrix end
function props.mode(d)
  local factor = d.df - d._event_shape[1] - 1
  factor = torch.where(factor:le(0), 0 / 0, factor)
  return df_matrix(d, factor) * d.covariance_matrix
end
function props.variance(d)
  local V = d.covariance_matrix
  local diag = V:diagonal(0, -2, -1)
  return df_matrix(d) * (V:pow(2) + diag:unsqueeze(-1) * diag:unsqueeze(-2))
end

-- one Bartlett draw of shape sample_shape + batch_shape + (p, p)
local function bartlett_sampling(d, sample_shape)
  local p = d._event_shape[1]
  local eps = U.finfo(d._unbroadcasted_scale_tril.dtype).eps
  local diag = d._dist_chi2:rsample(sample_shape):sqrt():clamp(eps)
  local noise = torch.diag_embed(diag)
  local m = p * (p - 1) // 2
  if m > 0 then
    local o = { dtype = noise.dtype, device = noise.device }
    local off = torch.randn(U.cat(sample_shape, d._batch_shape, { m }), o)
    -- the strictly lower triangle in row-major order, as PyTorch's noise[..., i, j] = randn(...)
    local rows = torch.tril_indices(p, p, -1, { device = noise.device })
    local flat = (rows[1] - 1) * p + rows[2]
    local lower = torch.zeros(U.cat(sample_shape, d._batch_shape, { p * p }), o):index_copy(-1, flat, off)
    noise = noise + lower:reshape(noise.shape)
  end
  local chol = torch.matmul(d._unbroadcasted_scale_tril, noise)
  return torch.matmul(chol, mT(chol))
end

--- d:rsample(sample_shape, max_try_correction = 10): max_try_correction is given after a
--- sample_shape table (d:rsample({}, 3)) or as the option {max_try_correction = n} last
function Wishart:rsample(...)
  local n = select('#', ...)
  local last = n > 0 and select(n, ...) or nil
  local max_try = 10
  local args = { ... }
  if type(last) == 'table' and getmetatable(last) == nil and rawlen(last) == 0 then
    max_try = last.max_try_correction or max_try
    n = n - 1
  elseif n == 2 and type(args[1]) == 'table' and type(last) == 'number' then
    max_try, n = last, 1
  end
  max_try = as_int(max_try)
  if math.type(max_try) ~= 'integer' or max_try < 0 then
    U.raise('Wishart.rsample: max_try_correction must be a non-negative integer, got %s', tostring(max_try))
  end
  local shape = U.sample_shape('Wishart.rsample', table.unpack(args, 1, n))
  local sample = bartlett_sampling(self, shape)
  local singular = self.support:check(sample):logical_not()
  for _ = 1, max_try do
    if not singular:any():item() then break end
    local redraw = bartlett_sampling(self, shape)
    sample = torch.where(singular:unsqueeze(-1):unsqueeze(-1), redraw, sample)
    singular = self.support:check(sample):logical_not()
  end
  return sample
end

local function half_log_det_term(d, p)
  return p * LOG2 / 2 + MVN._half_log_det(d._unbroadcasted_scale_tril)
end

function Wishart:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local nu, p = self.df, self._event_shape[1]
  local _, logabsdet = torch.linalg.slogdet(value)
  local trace = torch.cholesky_solve(value, self._unbroadcasted_scale_tril):diagonal(0, -2, -1):sum(-1)
  return -nu * half_log_det_term(self, p) - U.mvlgamma('Wishart.log_prob', nu / 2, p)
      + (nu - p - 1) / 2 * logabsdet - trace / 2
end

function Wishart:entropy()
  local nu, p = self.df, self._event_shape[1]
  return (p + 1) * half_log_det_term(self, p) + U.mvlgamma('Wishart.entropy', nu / 2, p)
      - (nu - p - 1) / 2 * U.mvdigamma(nu / 2, p) + nu * p / 2
end

return Wishart
