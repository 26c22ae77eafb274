-- TransformedDistribution(base, transforms): the distribution of f(X) for X ~ base and f the
-- composition of the transforms (one, or a list applied first to last):
-- log p(y) = log p_base(x) - log |det dy/dx| at x = f^-1(y).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local class = require 'torch.class'
local Distribution = require 'torch.distributions.distribution'
local Independent = require 'torch.distributions.independent'
local T = require 'torch.distributions.transforms'

local TransformedDistribution = Distribution:extend('TransformedDistribution')

--- TransformedDistribution(base_distribution, transforms, {validate_args}): transforms a
--- Transform or a list of them
function TransformedDistribution:init(...)
  local name = Distribution.class_name(self)
  local a = U.args(name, { 'base_distribution', 'transforms', 'validate_args' }, ...)
  local base, transforms = a.base_distribution, a.transforms
  if not class.isinstance(base, Distribution) then
    U.raise('%s: base_distribution must be a distribution, got %s', name, type(base))
  end
  if class.isinstance(transforms, T.Transform) then
    transforms = { transforms }
  elseif type(transforms) == 'table' and getmetatable(transforms) == nil then
    for i, t in ipairs(transforms) do
      if not class.isinstance(t, T.Transform) then
        U.raise('%s: transforms must be a Transform or a list of Transforms (element %d is not)', name, i)
      end
    end
  else
    U.raise('%s: transforms must be a Transform or a list of Transforms, got %s', name, type(transforms))
  end
  self.transforms = transforms
  -- reshape the base distribution to the transforms' shapes
  local base_shape = U.cat(base._batch_shape, base._event_shape)
  local base_event_dim = #base._event_shape
  local transform = T.ComposeTransform(transforms)
  local domain_event_dim = transform.domain.event_dim
  if #base_shape < domain_event_dim then
    U.raise('%s: base_distribution needs to have shape with size at least %d, but got %s.', name, domain_event_dim,
      tostring(base_shape))
  end
  local shape = transform:forward_shape(base_shape)
  local expanded_base_shape = transform:inverse_shape(shape)
  if base_shape ~= expanded_base_shape then
    base = base:expand(U.slice(expanded_base_shape, 1, #expanded_base_shape - base_event_dim))
  end
  local reinterpreted = domain_event_dim - base_event_dim
  if reinterpreted > 0 then base = Independent(base, reinterpreted) end
  self.base_dist = base
  local event_dim = transform.codomain.event_dim + math.max(base_event_dim - domain_event_dim, 0)
  local cut = #shape - event_dim
  Distribution.init(self, U.slice(shape, 1, cut), U.slice(shape, cut + 1), a.validate_args)
end

function TransformedDistribution:expand(...)
  local shape = U.sample_shape(Distribution.class_name(self) .. '.expand', ...)
  local new = self:_new_instance()
  local s = U.cat(shape, self._event_shape)
  for i = #self.transforms, 1, -1 do s = self.transforms[i]:inverse_shape(s) end
  new.base_dist = self.base_dist:expand(U.slice(s, 1, #s - #self.base_dist._event_shape))
  new.transforms = self.transforms
  return self:_init_expanded(new, shape)
end

--- d:_expand_params(names, ...): expand, with the named parameters that d holds itself (beside
--- its base distribution's) expanded too
function TransformedDistribution:_expand_params(names, ...)
  local shape = U.sample_shape(Distribution.class_name(self) .. '.expand', ...)
  local new = TransformedDistribution.expand(self, shape)
  U.expand_fields(self, new, names, shape)
  return new
end

local props = TransformedDistribution.properties
function props.support(d)
  if #d.transforms == 0 then return d.base_dist.support end
  local s = d.transforms[#d.transforms].codomain
  if #d._event_shape > s.event_dim then s = C.independent(s, #d._event_shape - s.event_dim) end
  return s
end
function props.has_rsample(d) return d.base_dist.has_rsample end

function TransformedDistribution:sample(...)
  local _ <close> = torch.no_grad()
  local x = self.base_dist:sample(...)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end

function TransformedDistribution:rsample(...)
  local x = self.base_dist:rsample(...)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end

function TransformedDistribution:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local event_dim = #self._event_shape
  local log_prob = 0.0
  local y = value
  for i = #self.transforms, 1, -1 do
    local t = self.transforms[i]
    local x = t.inv(y)
    event_dim = event_dim + t.domain.event_dim - t.codomain.event_dim
    log_prob = log_prob - U.sum_rightmost(t:log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
    y = x
  end
  return log_prob + U.sum_rightmost(self.base_dist:log_prob(y), event_dim - #self.base_dist._event_shape)
end

-- value -> 1 - value where the composed map decreases, so that cdf increases
function TransformedDistribution:_monotonize_cdf(value)
  local sign = 1
  for _, t in ipairs(self.transforms) do sign = sign * t.sign end
  if type(sign) == 'number' and sign == 1 then return value end
  return sign * (value - 0.5) + 0.5
end

function TransformedDistribution:cdf(value)
  for i = #self.transforms, 1, -1 do value = self.transforms[i].inv(value) end
  if self._validate_args then self.base_dist:_validate_sample(value, 'cdf') end
  return self:_monotonize_cdf(self.base_dist:cdf(value))
end

function TransformedDistribution:icdf(value)
  value = self.base_dist:icdf(self:_monotonize_cdf(value))
  for _, t in ipairs(self.transforms) do value = t(value) end
  return value
end

function TransformedDistribution:__tostring()
  if Distribution.class_name(self) == 'TransformedDistribution' then return 'TransformedDistribution()' end
  return Distribution.__tostring(self)
end

return TransformedDistribution
