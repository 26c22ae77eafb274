-- Exponential(rate): rsample is PyTorch's exponential_() / rate (-log(1 - u) for a float64
-- uniform u), so samples equal PyTorch's for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local S = require 'torch.distributions.samplers'

local Exponential = Distribution:extend('Exponential')
Exponential.arg_constraints = Distribution.params { 'rate', C.positive }
Exponential.support = C.nonnegative
Exponential.has_rsample = true

--- Exponential(rate, {validate_args})
function Exponential:init(...)
  local a = U.args('Exponential', { 'rate', 'validate_args' }, ...)
  self.rate = U.broadcast_all('Exponential', { 'rate' }, a.rate)
  Distribution.init(self, self.rate.shape, {}, a.validate_args)
end

function Exponential:expand(...)
  local shape = U.sample_shape('Exponential.expand', ...)
  local new = self:_new_instance()
  new.rate = self.rate:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Exponential.properties
function props.mean(d) return d.rate:reciprocal() end
function props.mode(d) return torch.zeros_like(d.rate) end
function props.stddev(d) return d.rate:reciprocal() end
function props.variance(d) return d.rate:pow(-2) end

function Exponential:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('Exponential.rsample', ...))
  return S.exponential(shape, self.rate.dtype, self.rate.device) / self.rate
end

function Exponential:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  return self.rate:log() - self.rate * value
end

function Exponential:cdf(value)
  if self._validate_args then self:_validate_sample(value, 'cdf') end
  return 1 - (-self.rate * value):exp()
end

function Exponential:icdf(value) return -(1 - value):log() / self.rate end

function Exponential:entropy() return 1.0 - self.rate:log() end

return Exponential
