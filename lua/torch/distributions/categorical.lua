-- Categorical(probs) or Categorical{logits = l}: K classes along the last dimension of probs
-- (or logits), the rest batch. Samples are the classes' 1-based indices 1..K, as lutorch's
-- indices are everywhere (PyTorch's are 0..K-1): log_prob takes 1-based values, mode and
-- enumerate_support give them, and the support is IntegerInterval(1, K). probs are normalised
-- to sum to 1, logits to log-probabilities. sample is PyTorch's torch.multinomial(probs, n, true)
-- (plus one): the same classes as PyTorch's for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local Categorical = Distribution:extend('Categorical')
Categorical.arg_constraints = Distribution.params { 'probs', C.simplex, 'logits', C.real_vector }
Categorical.has_enumerate_support = true
Categorical.lazy = { probs = true, logits = true }

--- Categorical(probs, logits, {validate_args}): exactly one of probs and logits, tensors of at
--- least one dimension
function Categorical:init(...)
  local name = Distribution.class_name(self)
  local a = U.args(name, { 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('%s: either probs or logits must be specified, but not both', name)
  end
  if a.probs ~= nil then
    U.tensor_arg(name, 'probs', a.probs, 1)
    self.probs = a.probs / a.probs:sum(-1, true)
  else
    U.tensor_arg(name, 'logits', a.logits, 1)
    self.logits = a.logits - a.logits:logsumexp(-1, true)
  end
  self._param = rawget(self, 'probs') or rawget(self, 'logits')
  self._num_events = self._param:size(-1)
  Distribution.init(self, U.slice(self._param.shape, 1, self._param:dim() - 1), {}, a.validate_args)
end

function Categorical:expand(...)
  local shape = U.sample_shape('Categorical.expand', ...)
  local new = self:_new_instance()
  local param_shape = U.cat(shape, { self._num_events })
  if rawget(self, 'probs') then new.probs = self.probs:expand(param_shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(param_shape); new._param = new.logits end
  new._num_events = self._num_events
  return self:_init_expanded(new, shape)
end

Distribution.lazy_property(Categorical, 'logits', function(d) return U.probs_to_logits(d.probs) end)
Distribution.lazy_property(Categorical, 'probs', function(d) return U.logits_to_probs(d.logits) end)

local props = Categorical.properties
function props.support(d) return C.integer_interval(1, d._num_events) end
function props.param_shape(d) return d._param.shape end
function props.mean(d)
  return torch.full(d:_extended_shape(), 0 / 0, { dtype = d.probs.dtype, device = d.probs.device })
end
function props.variance(d)
  return torch.full(d:_extended_shape(), 0 / 0, { dtype = d.probs.dtype, device = d.probs.device })
end
--- d.mode: the 1-based index of the most probable class
function props.mode(d) return d.probs:argmax(-1) end

--- d:sample(sample_shape): 1-based class indices (int64) of shape sample_shape + batch_shape
function Categorical:sample(...)
  local sample_shape = U.sample_shape('Categorical.sample', ...)
  local _ <close> = torch.no_grad()
  local shape = self:_extended_shape(sample_shape)
  local n = sample_shape:numel()
  local probs_2d = self.probs:reshape(-1, self._num_events)
  if n == 0 or probs_2d:size(1) == 0 then
    return torch.zeros(shape, { dtype = torch.int64, device = self.probs.device })
  end
  local samples_2d = torch.multinomial(probs_2d, n, true):t()
  return samples_2d:reshape(shape)
end

--- d:log_prob(value): value holds 1-based class indices
function Categorical:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  value = value:long():unsqueeze(-1)
  local v, log_pmf = table.unpack(torch.broadcast_tensors(value, self.logits))
  v = v:narrow(-1, 1, 1)
  return log_pmf:gather(-1, v):squeeze(-1)
end

function Categorical:entropy()
  local min_real = U.finfo(self.logits.dtype).min
  local logits = self.logits:clamp(min_real)
  return -(logits * self.probs):sum(-1)
end

--- d:enumerate_support(expand = true): the classes 1..K along a new first dimension
function Categorical:enumerate_support(expand)
  local values = torch.arange(1, self._num_events + 1, { dtype = torch.int64, device = self._param.device })
  local shape = { -1 }
  for i = 1, #self._batch_shape do shape[i + 1] = 1 end
  values = values:view(shape)
  if expand ~= false then values = values:expand(U.cat({ -1 }, self._batch_shape)) end
  return values
end

--- the _validate_params of a distribution that holds its parameters in a Categorical (d._categorical:
--- OneHotCategorical, Multinomial): probs or logits checked there, the error under d's name
function Categorical.validate_held(d)
  local cat = d._categorical
  for _, name in ipairs { 'probs', 'logits' } do
    local v = rawget(cat, name)
    if v ~= nil then
      local c = d.arg_constraints[name]
      if not c:check(v):all():item() then
        U.raise('%s: expected parameter %s (Tensor of shape %s) of distribution %s to satisfy the '
          .. 'constraint %s, but found invalid values:\n%s', Distribution.class_name(d), name, U.tuple(v.shape),
          tostring(d), tostring(c), tostring(v))
      end
    end
  end
end

return Categorical
