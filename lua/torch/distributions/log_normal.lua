-- LogNormal(loc, scale): exp(X) for X ~ Normal(loc, scale), a TransformedDistribution by
-- ExpTransform (so its samples are exp of the Normal's: PyTorch's values for the same seed).
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Normal = require 'torch.distributions.normal'
local T = require 'torch.distributions.transforms'

local LogNormal = TransformedDistribution:extend('LogNormal')
LogNormal.arg_constraints = Distribution.params { 'loc', C.real, 'scale', C.positive }
LogNormal.support = C.positive
LogNormal.has_rsample = true

--- LogNormal(loc, scale, {validate_args}): loc and scale of log X
function LogNormal:init(...)
  local a = U.args('LogNormal', { 'loc', 'scale', 'validate_args' }, ...)
  local base = Normal(a.loc, a.scale, { validate_args = false })
  TransformedDistribution.init(self, base, T.ExpTransform(), { validate_args = a.validate_args })
end

local props = LogNormal.properties
function props.loc(d) return d.base_dist.loc end
function props.scale(d) return d.base_dist.scale end
function props.mean(d) return (d.loc + d.scale:pow(2) / 2):exp() end
function props.mode(d) return (d.loc - d.scale:pow(2)):exp() end
function props.variance(d)
  local s2 = d.scale:pow(2)
  return (s2:exp() - 1) * (2 * d.loc + s2):exp()
end

function LogNormal:entropy() return self.base_dist:entropy() + self.loc end

function LogNormal:__tostring()
  local parts = {}
  for _, name in ipairs { 'loc', 'scale' } do
    local v = self[name]
    parts[#parts + 1] = name .. ': ' .. (v:numel() == 1 and tostring(v) or tostring(v.shape))
  end
  return 'LogNormal(' .. table.concat(parts, ', ') .. ')'
end

return LogNormal
