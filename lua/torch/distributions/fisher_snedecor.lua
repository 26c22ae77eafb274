-- FisherSnedecor(df1, df2): the F distribution, (X1 / df1) / (X2 / df2) for X1 ~ Chi2(df1) and
-- X2 ~ Chi2(df2); rsample is the ratio of two Gamma(df / 2, df) draws (PyTorch's), so gradients
-- reach df1 and df2 through Gamma's implicit reparameterisation. mean, mode and variance are NaN
-- where they do not exist (df2 <= 2, df1 <= 2, df2 <= 4), as in PyTorch.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Gamma = require 'torch.distributions.gamma'

local FisherSnedecor = Distribution:extend('FisherSnedecor')
FisherSnedecor.arg_constraints = Distribution.params { 'df1', C.positive, 'df2', C.positive }
FisherSnedecor.support = C.positive
FisherSnedecor.has_rsample = true

--- FisherSnedecor(df1, df2, {validate_args})
function FisherSnedecor:init(...)
  local a = U.args('FisherSnedecor', { 'df1', 'df2', 'validate_args' }, ...)
  self.df1, self.df2 = U.broadcast_all('FisherSnedecor', { 'df1', 'df2' }, a.df1, a.df2)
  Distribution.init(self, self.df1.shape, {}, a.validate_args)
end

function FisherSnedecor:expand(...) return self:_expand_params({ 'df1', 'df2' }, ...) end

local props = FisherSnedecor.properties
function props.mean(d)
  local df2 = d.df2
  return torch.where(df2:gt(2), df2 / (df2 - 2), 0 / 0)
end
function props.mode(d)
  local df1, df2 = d.df1, d.df2
  return torch.where(df1:gt(2), (df1 - 2) / df1 * df2 / (df2 + 2), 0 / 0)
end
function props.variance(d)
  local df1, df2 = d.df1, d.df2
  local v = 2 * df2:pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2):pow(2) * (df2 - 4))
  return torch.where(df2:gt(4), v, 0 / 0)
end

function FisherSnedecor:rsample(...)
  local shape = U.sample_shape('FisherSnedecor.rsample', ...)
  local tiny = U.finfo(self.df1.dtype).tiny
  local x1 = Gamma(self.df1 * 0.5, self.df1, { validate_args = false }):rsample(shape)
  local x2 = Gamma(self.df2 * 0.5, self.df2, { validate_args = false }):rsample(shape)
  x2:detach():clamp_(tiny) -- in place, not recorded by autograd, as PyTorch's clamp_
  local y = x1 / x2
  y:detach():clamp_(tiny)
  return y
end

function FisherSnedecor:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
  local t1 = torch.lgamma(ct1 + ct2) - torch.lgamma(ct1) - torch.lgamma(ct2)
  local t2 = ct1 * ct3:log() + (ct1 - 1) * torch.log(value)
  local t3 = (ct1 + ct2) * torch.log1p(ct3 * value)
  return t1 + t2 - t3
end

return FisherSnedecor
