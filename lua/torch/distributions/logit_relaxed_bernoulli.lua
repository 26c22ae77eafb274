-- LogitRelaxedBernoulli(temperature, probs) or LogitRelaxedBernoulli(temperature, {logits = l}):
-- the logit of a RelaxedBernoulli sample (Maddison et al., 2017; Jang et al., 2017), as in
-- PyTorch 1.13: rsample is (logit(u) + logits) / temperature for u ~ Uniform(0, 1), clamped as
-- PyTorch clamps it, so gradients reach probs (or logits).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local LRB = Distribution:extend('LogitRelaxedBernoulli')
LRB.arg_constraints = Distribution.params { 'probs', C.unit_interval, 'logits', C.real }
LRB.support = C.real
LRB.has_rsample = true
LRB.lazy = { probs = true, logits = true }

--- LogitRelaxedBernoulli.temperature_arg(op, t, proto): the temperature as a tensor of proto's dtype and device
local function temperature(op, t, proto)
  if type(t) == 'number' then return torch.tensor(t, { dtype = proto.dtype, device = proto.device }) end
  if not torch.is_tensor(t) then U.raise('%s: temperature must be a number or a tensor, got %s', op, type(t)) end
  return t
end
LRB.temperature_arg = temperature

--- LogitRelaxedBernoulli(temperature, probs, logits, {validate_args}): exactly one of probs and logits
function LRB:init(...)
  local name = Distribution.class_name(self)
  local a = U.args(name, { 'temperature', 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('%s: either probs or logits must be specified, but not both', name)
  end
  local pname = a.probs ~= nil and 'probs' or 'logits'
  self[pname] = U.broadcast_all(name, { pname }, a[pname])
  self._param = self[pname]
  self.temperature = temperature(name, a.temperature, self._param)
  Distribution.init(self, self._param.shape, {}, a.validate_args)
end

function LRB:expand(...)
  local new = self:_expand_params({ 'probs', 'logits' }, ...)
  new._param = rawget(new, 'probs') or rawget(new, 'logits')
  new.temperature = self.temperature
  return new
end

Distribution.lazy_property(LRB, 'logits', function(d) return U.probs_to_logits(d.probs, true) end)
Distribution.lazy_property(LRB, 'probs', function(d) return U.logits_to_probs(d.logits, true) end)

local props = LRB.properties
function props.param_shape(d) return d._param.shape end

function LRB:rsample(...)
  local shape = self:_extended_shape(U.sample_shape(Distribution.class_name(self) .. '.rsample', ...))
  local probs = U.clamp_probs(self.probs:expand(shape))
  local u = U.clamp_probs(torch.rand(shape, { dtype = probs.dtype, device = probs.device }))
  return (u:log() - (-u):log1p() + probs:log() - (-probs):log1p()) / self.temperature
end

function LRB:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local logits, v = U.broadcast_all('LogitRelaxedBernoulli.log_prob', { 'logits', 'value' }, self.logits, value)
  local diff = logits - v * self.temperature
  return self.temperature:log() + diff - 2 * diff:exp():log1p()
end

return LRB
