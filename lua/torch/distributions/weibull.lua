-- Weibull(scale, concentration): scale X^(1/concentration) for X ~ Exponential(1), a
-- TransformedDistribution by PowerTransform and AffineTransform as in PyTorch.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Exponential = require 'torch.distributions.exponential'
local T = require 'torch.distributions.transforms'

local Weibull = TransformedDistribution:extend('Weibull')
Weibull.arg_constraints = Distribution.params { 'scale', C.positive, 'concentration', C.positive }
Weibull.support = C.positive
Weibull.has_rsample = true

--- Weibull(scale, concentration, {validate_args})
function Weibull:init(...)
  local a = U.args('Weibull', { 'scale', 'concentration', 'validate_args' }, ...)
  self.scale, self.concentration = U.broadcast_all('Weibull', { 'scale', 'concentration' }, a.scale,
    a.concentration)
  self.concentration_reciprocal = self.concentration:reciprocal()
  local base = Exponential(torch.ones_like(self.scale), { validate_args = false })
  local transforms = { T.PowerTransform(self.concentration_reciprocal), T.AffineTransform(0, self.scale) }
  TransformedDistribution.init(self, base, transforms, { validate_args = a.validate_args })
end

function Weibull:expand(...)
  return self:_expand_params({ 'scale', 'concentration', 'concentration_reciprocal' }, ...)
end

local props = Weibull.properties
function props.mean(d) return d.scale * torch.lgamma(1 + d.concentration_reciprocal):exp() end
function props.mode(d)
  return d.scale * ((d.concentration - 1) / d.concentration):pow(d.concentration_reciprocal)
end
function props.variance(d)
  local r = d.concentration_reciprocal
  return d.scale:pow(2) * (torch.lgamma(1 + 2 * r):exp() - (2 * torch.lgamma(1 + r)):exp())
end

function Weibull:entropy()
  local r = self.concentration_reciprocal
  return U.euler_constant * (1 - r) + (self.scale * r):log() + 1
end

return Weibull
