-- Multinomial(total_count, probs) or Multinomial(total_count, {logits = l}): counts of K classes
-- (the event) in total_count draws of a Categorical. Samples count the Categorical's samples
-- (PyTorch's method, so they match PyTorch's for the same seed).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Categorical = require 'torch.distributions.categorical'
local Binomial = require 'torch.distributions.binomial'
local as_int = require('torch.composite').as_int

local Multinomial = Distribution:extend('Multinomial')
Multinomial.arg_constraints = Distribution.params { 'probs', C.simplex, 'logits', C.real_vector }

--- Multinomial(total_count = 1, probs, logits, {validate_args}): total_count one integer (only
--- log_prob would allow it to vary, as in PyTorch, which does not either)
function Multinomial:init(...)
  local a = U.args('Multinomial', { 'total_count', 'probs', 'logits', 'validate_args' }, ...)
  local n = a.total_count == nil and 1 or a.total_count
  n = as_int(n)
  if math.type(n) ~= 'integer' then
    U.raise('Multinomial: total_count must be an integer (inhomogeneous total_count is not supported), got %s',
      tostring(n))
  end
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('Multinomial: either probs or logits must be specified, but not both')
  end
  if a.probs ~= nil then U.tensor_arg('Multinomial', 'probs', a.probs, 1) end
  if a.logits ~= nil then U.tensor_arg('Multinomial', 'logits', a.logits, 1) end
  self.total_count = n
  self._categorical = Categorical(a.probs, a.logits, { validate_args = false })
  local ps = self._categorical.param_shape
  Distribution.init(self, self._categorical._batch_shape, { ps[#ps] }, a.validate_args)
end

Multinomial._validate_params = Categorical.validate_held

function Multinomial:expand(...)
  local shape = U.sample_shape('Multinomial.expand', ...)
  local new = self:_new_instance()
  new.total_count = self.total_count
  new._categorical = self._categorical:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Multinomial.properties
function props.support(d) return C.multinomial(d.total_count) end
function props.logits(d) return d._categorical.logits end
function props.probs(d) return d._categorical.probs end
function props.param_shape(d) return d._categorical.param_shape end
function props.mean(d) return d.probs * d.total_count end
function props.variance(d) return d.total_count * d.probs * (1 - d.probs) end

function Multinomial:sample(...)
  local sample_shape = U.sample_shape('Multinomial.sample', ...)
  local _ <close> = torch.no_grad()
  local samples = self._categorical:sample(U.cat({ self.total_count }, sample_shape))
  -- (total_count, sample, batch) -> (sample, batch, total_count)
  local perm = {}
  for i = 2, samples:dim() do perm[#perm + 1] = i end
  perm[#perm + 1] = 1
  samples = samples:permute(perm)
  local counts = torch.zeros(self:_extended_shape(sample_shape), { dtype = samples.dtype, device = samples.device })
  counts:scatter_add_(-1, samples, torch.ones_like(samples))
  return counts:type_as(self.probs)
end

function Multinomial:entropy()
  local n = self.total_count
  local probs = self.probs
  local cat_entropy = self._categorical:entropy()
  local nt = torch.full({}, n, { dtype = probs.dtype, device = probs.device })
  local term1 = n * cat_entropy - torch.lgamma(nt + 1)
  if n == 0 then return term1 end
  local binomial = Binomial(n, probs, { validate_args = false })
  local support = binomial:enumerate_support(false):narrow(1, 2, n)
  local binomial_probs = binomial:log_prob(support):exp()
  local weights = torch.lgamma(support + 1)
  local term2 = (binomial_probs * weights):sum(1):sum(-1)
  return term1 + term2
end

function Multinomial:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local logits, v = U.broadcast_all('Multinomial.log_prob', { 'logits', 'value' }, self.logits, value)
  local log_factorial_n = torch.lgamma(v:sum(-1) + 1)
  local log_factorial_xs = torch.lgamma(v + 1):sum(-1)
  logits = logits:masked_fill(v:eq(0):logical_and(logits:eq(-math.huge)), 0)
  local log_powers = (logits * v):sum(-1)
  return log_factorial_n - log_factorial_xs + log_powers
end

function Multinomial:__tostring()
  local parts = {}
  for _, name in ipairs { 'probs', 'logits' } do
    local v = rawget(self._categorical, name)
    if v ~= nil then parts[#parts + 1] = name .. ': ' .. (v:numel() == 1 and tostring(v) or tostring(v.shape)) end
  end
  return 'Multinomial(' .. table.concat(parts, ', ') .. ')'
end

return Multinomial
