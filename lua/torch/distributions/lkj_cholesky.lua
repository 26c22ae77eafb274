-- LKJCholesky(dim, concentration): the LKJ distribution on the lower Cholesky factors L of
-- dim x dim correlation matrices, with density proportional to det(L L^T)^(concentration - 1)
-- times the Jacobian of L -> L L^T, i.e. prod_{i=2}^{dim} L_ii^(dim - i + 2 concentration - 2).
-- sample is PyTorch's vectorised onion method (Lewandowski, Kurowicka and Joe, 2009, sec.
-- 3.2): row i of L is sqrt(y_i) u_i with y_i ~ Beta and u_i uniform on the sphere of its first
-- i - 1 coordinates, and the diagonal completes each row to unit norm. No rsample, as in PyTorch.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Beta = require 'torch.distributions.beta'
local as_int = require('torch.composite').as_int

local LKJCholesky = Distribution:extend('LKJCholesky')
LKJCholesky.arg_constraints = Distribution.params { 'concentration', C.positive }
LKJCholesky.support = C.corr_cholesky

--- LKJCholesky(dim, concentration = 1, {validate_args}): dim an integer >= 2; concentration a
--- number or a tensor (its shape is the batch shape)
function LKJCholesky:init(...)
  local a = U.args('LKJCholesky', { 'dim', 'concentration', 'validate_args' }, ...)
  local dim = a.dim
  dim = as_int(dim)
  if math.type(dim) ~= 'integer' or dim < 2 then
    U.raise('LKJCholesky: expected dim to be an integer greater than or equal to 2, found dim=%s', tostring(dim))
  end
  self.dim = dim
  local conc = U.broadcast_all('LKJCholesky', { 'concentration' }, a.concentration or 1.0)
  if not conc.dtype.is_floating_point then conc = conc:to(torch.get_default_dtype()) end
  self.concentration = conc
  Distribution.init(self, conc.shape, { dim, dim }, a.validate_args)
  -- the squared norm y_i of the first i - 1 entries of row i (i >= 2) is Beta((i - 1) / 2,
  -- concentration + (dim - i) / 2) (the first row's is unused). PyTorch 1.13 gives the first
  -- parameter as i - 3/2, which biases its samples for dim >= 3 (the correlations' marginals are not
  -- the Beta(concentration - 1 + dim / 2) of the LKJ distribution); this is the onion method's
  local marginal_conc = conc + 0.5 * (dim - 2)
  local offset = torch.arange(0, dim - 1, { dtype = conc.dtype, device = conc.device })
  offset = torch.cat { torch.zeros(1, { dtype = conc.dtype, device = conc.device }), offset }
  self._beta = Beta(0.5 * offset + 0.5, marginal_conc:unsqueeze(-1) - 0.5 * offset, { validate_args = false })
end

function LKJCholesky:expand(...)
  local shape = U.sample_shape('LKJCholesky.expand', ...)
  local new = self:_new_instance()
  new.dim = self.dim
  new.concentration = self.concentration:expand(shape)
  new._beta = self._beta:expand(U.cat(shape, { self.dim }))
  return self:_init_expanded(new, shape)
end

--- d:sample(sample_shape): L of shape sample_shape + batch_shape + (dim, dim), without gradients
function LKJCholesky:sample(...)
  local shape = U.sample_shape('LKJCholesky.sample', ...)
  local _ <close> = torch.no_grad()
  local y = self._beta:sample(shape):unsqueeze(-1)
  local u_normal = torch.randn(self:_extended_shape(shape), { dtype = y.dtype, device = y.device }):tril(-1)
  local u_hypersphere = u_normal / u_normal:norm(2, -1, true)
  -- the first row is 0 / 0: zero
  u_hypersphere:select(-2, 1):fill_(0)
  local w = y:sqrt() * u_hypersphere
  local tiny = U.finfo(w.dtype).tiny
  local diag = (1 - w:pow(2):sum(-1)):clamp(tiny):sqrt()
  return w + torch.diag_embed(diag)
end

function LKJCholesky:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local dim, conc = self.dim, self.concentration
  local diag = value:diagonal(0, -2, -1):narrow(-1, 2, dim - 1)
  local order = torch.arange(2, dim + 1, { dtype = conc.dtype, device = conc.device })
  order = 2 * (conc - 1):unsqueeze(-1) + dim - order
  local unnormalized = (order * diag:log()):sum(-1)
  -- the normaliser (Lewandowski et al. 2009, p. 1999)
  local dm1 = dim - 1
  local alpha = conc + 0.5 * dm1
  local denominator = alpha:lgamma() * dm1
  local numerator = U.mvlgamma('LKJCholesky.log_prob', alpha - 0.5, dm1)
  local pi_constant = 0.5 * dm1 * math.log(math.pi)
  return unnormalized - (pi_constant + numerator - denominator)
end

return LKJCholesky
