-- Laplace(loc, scale): rsample is PyTorch's (u uniform on [eps - 1, 1) by uniform_, then
-- loc - scale sign(u) log1p(-|u|)), so samples equal PyTorch's for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local Laplace = Distribution:extend('Laplace')
Laplace.arg_constraints = Distribution.params { 'loc', C.real, 'scale', C.positive }
Laplace.support = C.real
Laplace.has_rsample = true

--- Laplace(loc, scale, {validate_args})
function Laplace:init(...)
  local a = U.args('Laplace', { 'loc', 'scale', 'validate_args' }, ...)
  self.loc, self.scale = U.broadcast_all('Laplace', { 'loc', 'scale' }, a.loc, a.scale)
  Distribution.init(self, self.loc.shape, {}, a.validate_args)
end

function Laplace:expand(...)
  local shape = U.sample_shape('Laplace.expand', ...)
  local new = self:_new_instance()
  new.loc, new.scale = self.loc:expand(shape), self.scale:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Laplace.properties
function props.mean(d) return d.loc end
function props.mode(d) return d.loc end
function props.variance(d) return 2 * d.scale:pow(2) end
function props.stddev(d) return 2 ^ 0.5 * d.scale end

function Laplace:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('Laplace.rsample', ...))
  local eps = U.finfo(self.loc.dtype).eps
  local u = self.loc:new_empty(shape):uniform_(eps - 1, 1)
  return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
end

function Laplace:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  return -(2 * self.scale):log() - (value - self.loc):abs() / self.scale
end

function Laplace:cdf(value)
  if self._validate_args then self:_validate_sample(value, 'cdf') end
  local z = value - self.loc
  return 0.5 - 0.5 * z:sign() * (-z:abs() / self.scale):expm1()
end

function Laplace:icdf(value)
  local term = value - 0.5
  return self.loc - self.scale * term:sign() * (-2 * term:abs()):log1p()
end

function Laplace:entropy() return 1 + (2 * self.scale):log() end

return Laplace
