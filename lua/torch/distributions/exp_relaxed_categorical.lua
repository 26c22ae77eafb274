-- ExpRelaxedCategorical(temperature, probs) or ExpRelaxedCategorical(temperature, {logits = l}):
-- the log of a RelaxedOneHotCategorical sample (the Concrete distribution of Maddison et al.,
-- 2017), as in PyTorch 1.13: rsample is log_softmax((logits + Gumbel noise) / temperature) over
-- the last dimension, so gradients reach probs (or logits). The event is that last dimension.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Categorical = require 'torch.distributions.categorical'
local LogitRelaxedBernoulli = require 'torch.distributions.logit_relaxed_bernoulli'

local ERC = Distribution:extend('ExpRelaxedCategorical')
ERC.arg_constraints = Distribution.params { 'probs', C.simplex, 'logits', C.real_vector }
ERC.support = C.real_vector
ERC.has_rsample = true
ERC.lazy = { probs = true, logits = true } -- validated by the Categorical held

--- ExpRelaxedCategorical(temperature, probs, logits, {validate_args}): exactly one of probs and
--- logits, of at least one dimension
function ERC:init(...)
  local name = Distribution.class_name(self)
  local a = U.args(name, { 'temperature', 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('%s: either probs or logits must be specified, but not both', name)
  end
  self._categorical = Categorical(a.probs, a.logits, { validate_args = a.validate_args })
  self.temperature = LogitRelaxedBernoulli.temperature_arg(name, a.temperature, self._categorical._param)
  local cat = self._categorical
  Distribution.init(self, cat._batch_shape, { cat._num_events }, a.validate_args)
end

function ERC:expand(...)
  local shape = U.sample_shape('ExpRelaxedCategorical.expand', ...)
  local new = self:_new_instance()
  new.temperature = self.temperature
  new._categorical = self._categorical:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = ERC.properties
function props.logits(d) return d._categorical.logits end
function props.probs(d) return d._categorical.probs end
function props.param_shape(d) return d._categorical._param.shape end

function ERC:rsample(...)
  local shape = self:_extended_shape(U.sample_shape(Distribution.class_name(self) .. '.rsample', ...))
  local logits = self.logits
  local u = U.clamp_probs(torch.rand(shape, { dtype = logits.dtype, device = logits.device }))
  local gumbels = -((-u:log()):log())
  local scores = (logits + gumbels) / self.temperature
  return scores - scores:logsumexp(-1, true)
end

function ERC:log_prob(value)
  local K = self._categorical._num_events
  if self._validate_args then self:_validate_sample(value) end
  local logits, v = U.broadcast_all('ExpRelaxedCategorical.log_prob', { 'logits', 'value' }, self.logits, value)
  local t = self.temperature
  local log_scale = torch.lgamma(torch.full_like(t, K)) + (K - 1) * t:log()
  local score = logits - v * t
  score = (score - score:logsumexp(-1, true)):sum(-1)
  return score + log_scale
end

return ERC
