-- Beta(concentration1, concentration0): on [0, 1], over a Dirichlet of the pair (as PyTorch does).
-- rsample is the first coordinate of the Dirichlet's, with its gradients (see dirichlet.lua).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Dirichlet = require 'torch.distributions.dirichlet'

local Beta = Distribution:extend('Beta')
Beta.arg_constraints = Distribution.params { 'concentration1', C.positive, 'concentration0', C.positive }
Beta.support = C.unit_interval
Beta.has_rsample = true

--- Beta(concentration1, concentration0, {validate_args}): alpha and beta, numbers or tensors
function Beta:init(...)
  local a = U.args('Beta', { 'concentration1', 'concentration0', 'validate_args' }, ...)
  local c1, c0 = a.concentration1, a.concentration0
  local pair
  if type(c1) == 'number' and type(c0) == 'number' then
    pair = torch.tensor({ c1 + 0.0, c0 + 0.0 })
  else
    c1, c0 = U.broadcast_all('Beta', { 'concentration1', 'concentration0' }, c1, c0)
    pair = torch.stack({ c1, c0 }, -1)
  end
  self._dirichlet = Dirichlet(pair, { validate_args = false })
  Distribution.init(self, self._dirichlet._batch_shape, {}, a.validate_args)
end

function Beta:expand(...)
  local shape = U.sample_shape('Beta.expand', ...)
  local new = self:_new_instance()
  new._dirichlet = self._dirichlet:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Beta.properties
function props.concentration1(d) return d._dirichlet.concentration:select(-1, 1) end
function props.concentration0(d) return d._dirichlet.concentration:select(-1, 2) end
function props.mean(d) return d.concentration1 / (d.concentration1 + d.concentration0) end
function props.mode(d) return d._dirichlet.mode:select(-1, 1) end
function props.variance(d)
  local a, b = d.concentration1, d.concentration0
  local total = a + b
  return a * b / (total:pow(2) * (total + 1))
end

function Beta:rsample(...)
  local shape = U.sample_shape('Beta.rsample', ...)
  return self._dirichlet:rsample(shape):select(-1, 1)
end

function Beta:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  return self._dirichlet:log_prob(torch.stack({ value, 1.0 - value }, -1))
end

function Beta:entropy() return self._dirichlet:entropy() end

function Beta:__tostring()
  local parts = {}
  for _, name in ipairs { 'concentration1', 'concentration0' } do
    local v = self[name]
    parts[#parts + 1] = name .. ': ' .. (v:numel() == 1 and tostring(v) or tostring(v.shape))
  end
  return 'Beta(' .. table.concat(parts, ', ') .. ')'
end

return Beta
