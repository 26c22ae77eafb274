-- Binomial(total_count, probs) or Binomial(total_count, {logits = l}): the number of successes
-- (0..total_count, counts rather than indices) in total_count trials. Sampling is PyTorch's
-- algorithm (inversion by geometric jumps, BTRS for n p >= 10) over whole tensors, so the
-- values differ from PyTorch's for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local S = require 'torch.distributions.samplers'

local Binomial = Distribution:extend('Binomial')
Binomial.arg_constraints = Distribution.params { 'total_count', C.nonnegative_integer, 'probs', C.unit_interval,
  'logits', C.real }
Binomial.has_enumerate_support = true
Binomial.lazy = { probs = true, logits = true }

--- Binomial(total_count = 1, probs, logits, {validate_args}): total_count a number or tensor
--- broadcast with probs (or logits), in their dtype
function Binomial:init(...)
  local a = U.args('Binomial', { 'total_count', 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('Binomial: either probs or logits must be specified, but not both')
  end
  local total_count = a.total_count == nil and 1 or a.total_count
  if a.probs ~= nil then
    self.total_count, self.probs = U.broadcast_all('Binomial', { 'total_count', 'probs' }, total_count, a.probs)
    self.total_count = self.total_count:type_as(self.probs)
  else
    self.total_count, self.logits = U.broadcast_all('Binomial', { 'total_count', 'logits' }, total_count, a.logits)
    self.total_count = self.total_count:type_as(self.logits)
  end
  self._param = rawget(self, 'probs') or rawget(self, 'logits')
  Distribution.init(self, self._param.shape, {}, a.validate_args)
end

function Binomial:expand(...)
  local shape = U.sample_shape('Binomial.expand', ...)
  local new = self:_new_instance()
  new.total_count = self.total_count:expand(shape)
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape); new._param = new.logits end
  return self:_init_expanded(new, shape)
end

Distribution.lazy_property(Binomial, 'logits', function(d) return U.probs_to_logits(d.probs, true) end)
Distribution.lazy_property(Binomial, 'probs', function(d) return U.logits_to_probs(d.logits, true) end)

local props = Binomial.properties
function props.support(d) return C.integer_interval(0, d.total_count) end
function props.param_shape(d) return d._param.shape end
function props.mean(d) return d.total_count * d.probs end
function props.mode(d) return ((d.total_count + 1) * d.probs):floor():minimum(d.total_count) end
function props.variance(d) return d.total_count * d.probs * (1 - d.probs) end

function Binomial:sample(...)
  local shape = self:_extended_shape(U.sample_shape('Binomial.sample', ...))
  local _ <close> = torch.no_grad()
  return S.binomial(self.total_count:expand(shape), self.probs:expand(shape))
end

function Binomial:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local n, logits = self.total_count, self.logits
  local log_factorial_n = torch.lgamma(n + 1)
  local log_factorial_k = torch.lgamma(value + 1)
  local log_factorial_nmk = torch.lgamma(n - value + 1)
  -- k log(p) + (n - k) log(1 - p) = k logit - n max(logit, 0) - n log1p(exp(-|logit|))
  local normalize_term = n * logits:clamp(0) + n * (-logits:abs()):exp():log1p() - log_factorial_n
  return value * logits - log_factorial_k - log_factorial_nmk - normalize_term
end

-- the one total_count of all the batch, or an error naming op
local function homogeneous_count(d, op)
  local n = d.total_count
  local hi, lo = n:max():item(), n:min():item()
  if hi ~= lo then U.raise('Binomial: inhomogeneous total_count is not supported by %s', op) end
  return math.tointeger(hi) or hi
end

function Binomial:entropy()
  homogeneous_count(self, 'entropy')
  local log_prob = self:log_prob(self:enumerate_support(false))
  return -(log_prob:exp() * log_prob):sum(1)
end

--- d:enumerate_support(expand = true): the counts 0..total_count along a new first dimension
--- (total_count must be the same for the whole batch)
function Binomial:enumerate_support(expand)
  local n = homogeneous_count(self, 'enumerate_support')
  local values = torch.arange(n + 1, { dtype = self._param.dtype, device = self._param.device })
  local shape = { -1 }
  for i = 1, #self._batch_shape do shape[i + 1] = 1 end
  values = values:view(shape)
  if expand ~= false then values = values:expand(U.cat({ -1 }, self._batch_shape)) end
  return values
end

return Binomial
