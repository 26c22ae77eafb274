-- RelaxedBernoulli(temperature, probs) or RelaxedBernoulli(temperature, {logits = l}): the
-- Concrete (Gumbel-softmax) relaxation of Bernoulli on (0, 1), sigmoid of a LogitRelaxedBernoulli
-- sample: a TransformedDistribution by SigmoidTransform, as in PyTorch.
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local LogitRelaxedBernoulli = require 'torch.distributions.logit_relaxed_bernoulli'
local T = require 'torch.distributions.transforms'

local RelaxedBernoulli = TransformedDistribution:extend('RelaxedBernoulli')
RelaxedBernoulli.arg_constraints = Distribution.params { 'probs', C.unit_interval, 'logits', C.real }
RelaxedBernoulli.support = C.unit_interval
RelaxedBernoulli.has_rsample = true
RelaxedBernoulli.lazy = { probs = true, logits = true } -- validated by the base

--- RelaxedBernoulli(temperature, probs, logits, {validate_args}): exactly one of probs and logits
function RelaxedBernoulli:init(...)
  local a = U.args('RelaxedBernoulli', { 'temperature', 'probs', 'logits', 'validate_args' }, ...)
  local base = U.relaxed_base('RelaxedBernoulli', LogitRelaxedBernoulli, a)
  TransformedDistribution.init(self, base, T.SigmoidTransform(), { validate_args = a.validate_args })
end

function RelaxedBernoulli:expand(...) return self:_expand_params({}, ...) end

U.relaxed_properties(RelaxedBernoulli)

return RelaxedBernoulli
