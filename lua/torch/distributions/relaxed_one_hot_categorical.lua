-- RelaxedOneHotCategorical(temperature, probs) or RelaxedOneHotCategorical(temperature,
-- {logits = l}): the Concrete (Gumbel-softmax) relaxation of OneHotCategorical on the simplex, exp
-- of an ExpRelaxedCategorical sample: a TransformedDistribution by ExpTransform, as in PyTorch.
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local ExpRelaxedCategorical = require 'torch.distributions.exp_relaxed_categorical'
local T = require 'torch.distributions.transforms'

local ROHC = TransformedDistribution:extend('RelaxedOneHotCategorical')
ROHC.arg_constraints = Distribution.params { 'probs', C.simplex, 'logits', C.real_vector }
ROHC.support = C.simplex
ROHC.has_rsample = true
ROHC.lazy = { probs = true, logits = true } -- validated by the base

--- RelaxedOneHotCategorical(temperature, probs, logits, {validate_args}): exactly one of probs
--- and logits
function ROHC:init(...)
  local a = U.args('RelaxedOneHotCategorical', { 'temperature', 'probs', 'logits', 'validate_args' }, ...)
  local base = U.relaxed_base('RelaxedOneHotCategorical', ExpRelaxedCategorical, a)
  TransformedDistribution.init(self, base, T.ExpTransform(), { validate_args = a.validate_args })
end

function ROHC:expand(...) return self:_expand_params({}, ...) end

U.relaxed_properties(ROHC)

return ROHC
