-- HalfNormal(scale): |X| for X ~ Normal(0, scale), a TransformedDistribution by AbsTransform as in
-- PyTorch; log_prob, cdf, icdf and entropy are the Normal's folded onto the nonnegative reals.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Normal = require 'torch.distributions.normal'
local T = require 'torch.distributions.transforms'

local HalfNormal = TransformedDistribution:extend('HalfNormal')
HalfNormal.arg_constraints = Distribution.params { 'scale', C.positive }
HalfNormal.support = C.nonnegative
HalfNormal.has_rsample = true

--- HalfNormal(scale, {validate_args})
function HalfNormal:init(...)
  local a = U.args('HalfNormal', { 'scale', 'validate_args' }, ...)
  local base = Normal(0, a.scale, { validate_args = false })
  TransformedDistribution.init(self, base, T.AbsTransform(), { validate_args = a.validate_args })
end

function HalfNormal:expand(...) return self:_expand_params({}, ...) end

local props = HalfNormal.properties
function props.scale(d) return d.base_dist.scale end
function props.mean(d) return d.scale * math.sqrt(2 / math.pi) end
function props.mode(d) return torch.zeros_like(d.scale) end
function props.variance(d) return d.scale:pow(2) * (1 - 2 / math.pi) end

HalfNormal.log_prob = U.folded_log_prob
HalfNormal.cdf = U.folded_cdf
HalfNormal.icdf = U.folded_icdf
function HalfNormal:entropy() return self.base_dist:entropy() - math.log(2) end

return HalfNormal
