-- Bernoulli(probs) or Bernoulli{logits = l}: samples are 0 or 1 (values, not indices), 1 with
-- probability probs. sample is torch.bernoulli(probs), PyTorch's call: the same values as
-- PyTorch for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local Bernoulli = Distribution:extend('Bernoulli')
Bernoulli.arg_constraints = Distribution.params { 'probs', C.unit_interval, 'logits', C.real }
Bernoulli.support = C.boolean
Bernoulli.has_enumerate_support = true
Bernoulli.lazy = { probs = true, logits = true }

--- Bernoulli(probs, logits, {validate_args}): exactly one of probs and logits (numbers or
--- tensors); Bernoulli{logits = l} names it
function Bernoulli:init(...)
  local a = U.args('Bernoulli', { 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('Bernoulli: either probs or logits must be specified, but not both')
  end
  if a.probs ~= nil then
    self.probs = U.broadcast_all('Bernoulli', { 'probs' }, a.probs)
  else
    self.logits = U.broadcast_all('Bernoulli', { 'logits' }, a.logits)
  end
  self._param = rawget(self, 'probs') or rawget(self, 'logits')
  Distribution.init(self, self._param.shape, {}, a.validate_args)
end

function Bernoulli:expand(...)
  local shape = U.sample_shape('Bernoulli.expand', ...)
  local new = self:_new_instance()
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape); new._param = new.logits end
  return self:_init_expanded(new, shape)
end

Distribution.lazy_property(Bernoulli, 'logits', function(d) return U.probs_to_logits(d.probs, true) end)
Distribution.lazy_property(Bernoulli, 'probs', function(d) return U.logits_to_probs(d.logits, true) end)

local props = Bernoulli.properties
function props.param_shape(d) return d._param.shape end
function props.mean(d) return d.probs end
function props.mode(d)
  local p = d.probs
  return torch.where(p:eq(0.5), 0 / 0, p:ge(0.5):type_as(p))
end
function props.variance(d) return d.probs * (1 - d.probs) end

function Bernoulli:sample(...)
  local shape = self:_extended_shape(U.sample_shape('Bernoulli.sample', ...))
  local _ <close> = torch.no_grad()
  return torch.bernoulli(self.probs:expand(shape))
end

function Bernoulli:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local logits, v = U.broadcast_all('Bernoulli.log_prob', { 'logits', 'value' }, self.logits, value)
  return -U.bce_with_logits(logits, v)
end

function Bernoulli:entropy() return U.bce_with_logits(self.logits, self.probs) end

--- d:enumerate_support(expand = true): the values 0 and 1 along a new first dimension
function Bernoulli:enumerate_support(expand)
  local values = torch.arange(2, { dtype = self._param.dtype, device = self._param.device })
  local shape = { -1 }
  for i = 1, #self._batch_shape do shape[i + 1] = 1 end
  values = values:view(shape)
  if expand ~= false then values = values:expand(U.cat({ -1 }, self._batch_shape)) end
  return values
end

return Bernoulli
