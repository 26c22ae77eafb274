-- Pareto(scale, alpha): scale exp(X) for X ~ Exponential(alpha), a TransformedDistribution as in
-- PyTorch; its support, [scale, inf), depends on the parameter. The mean is infinite for alpha <= 1
-- and the variance for alpha <= 2 (PyTorch's clamped formulas give inf there).
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Exponential = require 'torch.distributions.exponential'
local T = require 'torch.distributions.transforms'

local Pareto = TransformedDistribution:extend('Pareto')
Pareto.arg_constraints = Distribution.params { 'alpha', C.positive, 'scale', C.positive }
Pareto.has_rsample = true

--- Pareto(scale, alpha, {validate_args})
function Pareto:init(...)
  local a = U.args('Pareto', { 'scale', 'alpha', 'validate_args' }, ...)
  self.scale, self.alpha = U.broadcast_all('Pareto', { 'scale', 'alpha' }, a.scale, a.alpha)
  local base = Exponential(self.alpha, { validate_args = false })
  local transforms = { T.ExpTransform(), T.AffineTransform(0, self.scale) }
  TransformedDistribution.init(self, base, transforms, { validate_args = a.validate_args })
end

function Pareto:expand(...) return self:_expand_params({ 'scale', 'alpha' }, ...) end

local props = Pareto.properties
function props.support(d) return C.greater_than_eq(d.scale) end
function props.mean(d)
  local a = d.alpha:clamp(1)
  return a * d.scale / (a - 1)
end
function props.mode(d) return d.scale end
function props.variance(d)
  local a = d.alpha:clamp(2)
  return d.scale:pow(2) * a / ((a - 1):pow(2) * (a - 2))
end

function Pareto:entropy() return (self.scale / self.alpha):log() + (1 + self.alpha:reciprocal()) end

return Pareto
