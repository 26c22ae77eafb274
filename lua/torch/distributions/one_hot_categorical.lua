-- OneHotCategorical(probs) or OneHotCategorical{logits = l}: samples are one-hot vectors of size
-- K (the event), over a Categorical of the same parameters (whose sampler it uses, so the
-- samples match PyTorch's for the same seed).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Categorical = require 'torch.distributions.categorical'

local OneHotCategorical = Distribution:extend('OneHotCategorical')
OneHotCategorical.arg_constraints = Distribution.params { 'probs', C.simplex, 'logits', C.real_vector }
OneHotCategorical.support = C.one_hot
OneHotCategorical.has_enumerate_support = true

--- OneHotCategorical(probs, logits, {validate_args})
function OneHotCategorical:init(...)
  local a = U.args('OneHotCategorical', { 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('OneHotCategorical: either probs or logits must be specified, but not both')
  end
  if a.probs ~= nil then U.tensor_arg('OneHotCategorical', 'probs', a.probs, 1) end
  if a.logits ~= nil then U.tensor_arg('OneHotCategorical', 'logits', a.logits, 1) end
  self._categorical = Categorical(a.probs, a.logits, { validate_args = false })
  local ps = self._categorical.param_shape
  Distribution.init(self, self._categorical._batch_shape, { ps[#ps] }, a.validate_args)
end

OneHotCategorical._validate_params = Categorical.validate_held

function OneHotCategorical:expand(...)
  local shape = U.sample_shape('OneHotCategorical.expand', ...)
  local new = self:_new_instance()
  new._categorical = self._categorical:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = OneHotCategorical.properties
function props._param(d) return d._categorical._param end
function props.probs(d) return d._categorical.probs end
function props.logits(d) return d._categorical.logits end
function props.param_shape(d) return d._categorical.param_shape end
function props.mean(d) return d._categorical.probs end
function props.mode(d)
  local probs = d._categorical.probs
  return torch.F.one_hot(probs:argmax(-1), probs:size(-1)):to(probs)
end
function props.variance(d) return d._categorical.probs * (1 - d._categorical.probs) end

function OneHotCategorical:sample(...)
  local shape = U.sample_shape('OneHotCategorical.sample', ...)
  local probs = self._categorical.probs
  local indices = self._categorical:sample(shape)
  return torch.F.one_hot(indices, self._categorical._num_events):to(probs)
end

function OneHotCategorical:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local _, indices = value:max(-1)
  return self._categorical:log_prob(indices)
end

function OneHotCategorical:entropy() return self._categorical:entropy() end

function OneHotCategorical:enumerate_support(expand)
  local n = self._event_shape[1]
  local values = torch.eye(n, { dtype = self._param.dtype, device = self._param.device })
  local shape = { n }
  for i = 1, #self._batch_shape do shape[i + 1] = 1 end
  shape[#shape + 1] = n
  values = values:view(shape)
  if expand ~= false then values = values:expand(U.cat({ n }, self._batch_shape, { n })) end
  return values
end

function OneHotCategorical:__tostring()
  local parts = {}
  for _, name in ipairs { 'probs', 'logits' } do
    local v = rawget(self._categorical, name)
    if v ~= nil then parts[#parts + 1] = name .. ': ' .. (v:numel() == 1 and tostring(v) or tostring(v.shape)) end
  end
  return 'OneHotCategorical(' .. table.concat(parts, ', ') .. ')'
end

return OneHotCategorical
