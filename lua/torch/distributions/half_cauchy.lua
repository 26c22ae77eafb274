-- HalfCauchy(scale): |X| for X ~ Cauchy(0, scale), a TransformedDistribution by AbsTransform as in
-- PyTorch; log_prob, cdf, icdf and entropy are the Cauchy's folded onto the nonnegative reals. Its
-- mean and variance are infinite.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Cauchy = require 'torch.distributions.cauchy'
local T = require 'torch.distributions.transforms'

local HalfCauchy = TransformedDistribution:extend('HalfCauchy')
HalfCauchy.arg_constraints = Distribution.params { 'scale', C.positive }
HalfCauchy.support = C.nonnegative
HalfCauchy.has_rsample = true

--- HalfCauchy(scale, {validate_args})
function HalfCauchy:init(...)
  local a = U.args('HalfCauchy', { 'scale', 'validate_args' }, ...)
  local base = Cauchy(0, a.scale, { validate_args = false })
  TransformedDistribution.init(self, base, T.AbsTransform(), { validate_args = a.validate_args })
end

function HalfCauchy:expand(...) return self:_expand_params({}, ...) end

local props = HalfCauchy.properties
function props.scale(d) return d.base_dist.scale end
function props.mean(d)
  return torch.full(d:_extended_shape(), math.huge, { dtype = d.scale.dtype, device = d.scale.device })
end
function props.mode(d) return torch.zeros_like(d.scale) end
function props.variance(d) return d.base_dist.variance end

HalfCauchy.log_prob = U.folded_log_prob
HalfCauchy.cdf = U.folded_cdf
HalfCauchy.icdf = U.folded_icdf
function HalfCauchy:entropy() return self.base_dist:entropy() - math.log(2) end

return HalfCauchy
