-- Kumaraswamy(concentration1, concentration0): (1 - U^(1/concentration0))^(1/concentration1) for
-- U ~ Uniform(0, 1), a TransformedDistribution as in PyTorch; density a b x^(a-1) (1 - x^a)^(b-1)
-- on [0, 1] with a = concentration1, b = concentration0. The mode is ((a - 1) / (a b - 1))^(1/a)
-- (NaN where a < 1 or b < 1): PyTorch 1.13's formula for it is NaN or wrong for every a, b.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Uniform = require 'torch.distributions.uniform'
local T = require 'torch.distributions.transforms'

local Kumaraswamy = TransformedDistribution:extend('Kumaraswamy')
Kumaraswamy.arg_constraints = Distribution.params { 'concentration1', C.positive, 'concentration0', C.positive }
Kumaraswamy.support = C.unit_interval
Kumaraswamy.has_rsample = true

--- Kumaraswamy(concentration1, concentration0, {validate_args})
function Kumaraswamy:init(...)
  local a = U.args('Kumaraswamy', { 'concentration1', 'concentration0', 'validate_args' }, ...)
  self.concentration1, self.concentration0 = U.broadcast_all('Kumaraswamy', { 'concentration1', 'concentration0' },
    a.concentration1, a.concentration0)
  local base = Uniform(torch.zeros_like(self.concentration0), torch.ones_like(self.concentration0),
    { validate_args = false })
  local transforms = { T.PowerTransform(self.concentration0:reciprocal()), T.AffineTransform(1.0, -1.0),
    T.PowerTransform(self.concentration1:reciprocal()) }
  TransformedDistribution.init(self, base, transforms, { validate_args = a.validate_args })
end

function Kumaraswamy:expand(...) return self:_expand_params({ 'concentration1', 'concentration0' }, ...) end

-- E[X^n] = b B(1 + n/a, b)
local function moment(a, b, n)
  local arg1 = 1 + n / a
  return b * (torch.lgamma(arg1) + torch.lgamma(b) - torch.lgamma(arg1 + b)):exp()
end

local props = Kumaraswamy.properties
function props.mean(d) return moment(d.concentration1, d.concentration0, 1) end
function props.mode(d)
  local a, b = d.concentration1, d.concentration0
  local mode = ((a - 1):log() - (a * b - 1):log()):div(a):exp()
  return torch.where(a:lt(1):logical_or(b:lt(1)), 0 / 0, mode)
end
function props.variance(d)
  return moment(d.concentration1, d.concentration0, 2) - d.mean:pow(2)
end

function Kumaraswamy:entropy()
  local a, b = self.concentration1, self.concentration0
  local t1, t0 = 1 - a:reciprocal(), 1 - b:reciprocal()
  local h0 = torch.digamma(b + 1) + U.euler_constant
  return t0 + t1 * h0 - a:log() - b:log()
end

return Kumaraswamy
