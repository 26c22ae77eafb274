-- Poisson(rate): counts 0, 1, 2, ... Sampling is PyTorch's algorithm over whole tensors (the
-- product of uniforms below rate 10, transformed rejection above), so the values differ from
-- PyTorch's for the same seed. No rsample (the samples are discrete).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local S = require 'torch.distributions.samplers'

local Poisson = Distribution:extend('Poisson')
Poisson.arg_constraints = Distribution.params { 'rate', C.nonnegative }
Poisson.support = C.nonnegative_integer

--- Poisson(rate, {validate_args})
function Poisson:init(...)
  local a = U.args('Poisson', { 'rate', 'validate_args' }, ...)
  self.rate = U.broadcast_all('Poisson', { 'rate' }, a.rate)
  Distribution.init(self, self.rate.shape, {}, a.validate_args)
end

function Poisson:expand(...)
  local shape = U.sample_shape('Poisson.expand', ...)
  local new = self:_new_instance()
  new.rate = self.rate:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Poisson.properties
function props.mean(d) return d.rate end
function props.mode(d) return d.rate:floor() end
function props.variance(d) return d.rate end

function Poisson:sample(...)
  local shape = self:_extended_shape(U.sample_shape('Poisson.sample', ...))
  local _ <close> = torch.no_grad()
  return S.poisson(self.rate:expand(shape))
end

function Poisson:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local rate, v = U.broadcast_all('Poisson.log_prob', { 'rate', 'value' }, self.rate, value)
  return v:xlogy(rate) - rate - (v + 1):lgamma()
end

return Poisson
