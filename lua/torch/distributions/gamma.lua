-- Gamma(concentration, rate): shape alpha, rate beta (1 / scale). rsample draws standard gammas by
-- Marsaglia and Tsang's method and passes gradients to concentration by implicit
-- reparameterisation, with PyTorch's approximation of -(dF/dalpha)/f (samplers.lua), and to rate
-- through the division. The values differ from PyTorch's for the same seed (PyTorch's rejection
-- loop draws element after element).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local S = require 'torch.distributions.samplers'

local Gamma = Distribution:extend('Gamma')
Gamma.arg_constraints = Distribution.params { 'concentration', C.positive, 'rate', C.positive }
Gamma.support = C.nonnegative
Gamma.has_rsample = true

--- Gamma(concentration, rate, {validate_args})
function Gamma:init(...)
  local a = U.args('Gamma', { 'concentration', 'rate', 'validate_args' }, ...)
  self.concentration, self.rate = U.broadcast_all('Gamma', { 'concentration', 'rate' }, a.concentration, a.rate)
  Distribution.init(self, self.concentration.shape, {}, a.validate_args)
end

function Gamma:expand(...)
  local shape = U.sample_shape(Distribution.class_name(self) .. '.expand', ...)
  local new = self:_new_instance()
  new.concentration, new.rate = self.concentration:expand(shape), self.rate:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Gamma.properties
function props.mean(d) return d.concentration / d.rate end
function props.mode(d) return ((d.concentration - 1) / d.rate):clamp(0) end
function props.variance(d) return d.concentration / d.rate:pow(2) end

function Gamma:rsample(...)
  local shape = self:_extended_shape(U.sample_shape(Distribution.class_name(self) .. '.rsample', ...))
  local value = S.standard_gamma(self.concentration:expand(shape)) / self.rate:expand(shape)
  value:detach():clamp_(U.finfo(value.dtype).tiny) -- in place, not recorded by autograd
  return value
end

function Gamma:log_prob(value)
  if type(value) == 'number' then
    value = torch.tensor(value, { dtype = self.rate.dtype, device = self.rate.device })
  end
  if self._validate_args then self:_validate_sample(value) end
  return torch.xlogy(self.concentration, self.rate) + torch.xlogy(self.concentration - 1, value)
    - self.rate * value - torch.lgamma(self.concentration)
end

function Gamma:entropy()
  local a = self.concentration
  return a - self.rate:log() + torch.lgamma(a) + (1.0 - a) * torch.digamma(a)
end

return Gamma
