-- LogisticNormal(loc, scale): the distribution on the simplex of StickBreakingTransform(X) for X ~
-- Normal(loc, scale), a TransformedDistribution as in PyTorch 1.13 (so its samples are the stick
-- breaking of the Normal's: PyTorch's values for the same seed). loc and scale of K entries (their
-- batch dimensions broadcast) give points of K + 1 coordinates; scalar ones give 2.
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Normal = require 'torch.distributions.normal'
local T = require 'torch.distributions.transforms'

local LogisticNormal = TransformedDistribution:extend('LogisticNormal')
LogisticNormal.arg_constraints = Distribution.params { 'loc', C.real, 'scale', C.positive }
LogisticNormal.support = C.simplex
LogisticNormal.has_rsample = true

--- LogisticNormal(loc, scale, {validate_args}): loc and scale of the base Normal (numbers or tensors)
function LogisticNormal:init(...)
  local a = U.args('LogisticNormal', { 'loc', 'scale', 'validate_args' }, ...)
  local loc, scale = U.broadcast_all('LogisticNormal', { 'loc', 'scale' }, a.loc, a.scale)
  local base = Normal(loc, scale, { validate_args = false })
  if #base._batch_shape == 0 then base = base:expand(1) end
  TransformedDistribution.init(self, base, T.StickBreakingTransform(), { validate_args = a.validate_args })
end

local props = LogisticNormal.properties
-- (the base distribution is the Normal made Independent over its last dimension)
function props.loc(d) return d.base_dist.base_dist.loc end
function props.scale(d) return d.base_dist.base_dist.scale end

return LogisticNormal
