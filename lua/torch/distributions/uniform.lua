-- Uniform(low, high): uniform on [low, high). rsample is low + rand * (high - low), PyTorch's
-- computation, so samples equal PyTorch's for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local Uniform = Distribution:extend('Uniform')
Uniform.arg_constraints = Distribution.params { 'low', C.dependent, 'high', C.dependent }
Uniform.has_rsample = true

--- Uniform(low, high, {validate_args}): low < high everywhere (checked when validating)
function Uniform:init(...)
  local a = U.args('Uniform', { 'low', 'high', 'validate_args' }, ...)
  self.low, self.high = U.broadcast_all('Uniform', { 'low', 'high' }, a.low, a.high)
  Distribution.init(self, self.low.shape, {}, a.validate_args)
  if self._validate_args and not self.low:lt(self.high):all():item() then
    U.raise('Uniform: Uniform is not defined when low >= high (low %s, high %s)', tostring(self.low),
      tostring(self.high))
  end
end

function Uniform:expand(...)
  local shape = U.sample_shape('Uniform.expand', ...)
  local new = self:_new_instance()
  new.low, new.high = self.low:expand(shape), self.high:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Uniform.properties
function props.support(d) return C.interval(d.low, d.high) end
function props.mean(d) return (d.high + d.low) / 2 end
function props.mode(d) return d.high * (0 / 0) end
function props.stddev(d) return (d.high - d.low) / 12 ^ 0.5 end
function props.variance(d) return (d.high - d.low):pow(2) / 12 end

function Uniform:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('Uniform.rsample', ...))
  local rand = torch.rand(shape, { dtype = self.low.dtype, device = self.low.device })
  return self.low + rand * (self.high - self.low)
end

function Uniform:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local lb = self.low:le(value):type_as(self.low)
  local ub = self.high:gt(value):type_as(self.low)
  return (lb * ub):log() - (self.high - self.low):log()
end

function Uniform:cdf(value)
  if self._validate_args then self:_validate_sample(value, 'cdf') end
  return ((value - self.low) / (self.high - self.low)):clamp(0, 1)
end

function Uniform:icdf(value) return value * (self.high - self.low) + self.low end

function Uniform:entropy() return (self.high - self.low):log() end

return Uniform
