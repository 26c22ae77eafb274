-- torch.distributions.Distribution: the base class of the distributions, as in PyTorch 1.13.
-- Properties are read with `.` (d.mean, d.variance, d.stddev, d.mode, d.batch_shape,
-- d.event_shape, d.support, d.has_rsample); methods with `:` (d:sample(shape), d:rsample(shape),
-- d:log_prob(value), d:entropy(), d:cdf(v), d:icdf(p), d:expand(shape), d:enumerate_support()).
--
-- A class made with Distribution:extend(name) has a `properties` table of getters, looked up
-- (class by class, the derived first, each class's getters before its other fields) when an
-- instance lacks the field; a lazy property (probs from logits, ...) stores its value in the
-- instance on first use. Parameters live in the instance, so `d.loc` is the tensor given.
--
-- Validation is on by default, as in PyTorch: parameters outside their constraints and values
-- outside the support raise a Lua error naming the distribution and the argument. Turn it off for
-- one instance with the option validate_args = false, or for all that do not say with
-- Distribution.set_default_validate_args(false).
local torch = require 'torch'
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'

local Distribution = class('Distribution')
Distribution.properties = {}
Distribution.has_rsample = false
Distribution.has_enumerate_support = false
Distribution._validate_args = true
Distribution.arg_constraints = {}
-- names of the parameters that are lazy properties (computed from the others when not given):
-- not validated unless given
Distribution.lazy = {}

local function class_name(d) return rawget(getmetatable(d), '__name') end
Distribution.class_name = class_name

-- fields of the instance, then the getters and fields of its classes
Distribution.__index = U.property_index

--- Distribution:extend(name): a subclass, with its own table of property getters
function Distribution:extend(name)
  local cls = class.Object.extend(self, name)
  rawset(cls, 'properties', {})
  return cls
end

--- Distribution.params{'loc', C.real, 'scale', C.positive}: an arg_constraints table; its array part lists
--- the names in order (for printing), its fields map them to their constraints
function Distribution.params(list)
  local t = {}
  for i = 1, #list, 2 do
    t[#t + 1] = list[i]
    t[list[i]] = list[i + 1]
  end
  return t
end

--- Distribution.lazy_property(cls, name, fn): a property computed by fn(self) on first use (with
--- gradients recorded, as PyTorch's lazy_property) and kept in the instance
function Distribution.lazy_property(cls, name, fn)
  rawget(cls, 'properties')[name] = function(self)
    local v = torch.enable_grad(fn, self)
    rawset(self, name, v)
    return v
  end
end

--- Distribution.set_default_validate_args(b): validation for the instances that do not choose
function Distribution.set_default_validate_args(value)
  if type(value) ~= 'boolean' then
    U.raise('Distribution.set_default_validate_args: expected true or false, got %s', tostring(value))
  end
  Distribution._validate_args = value
end

--- the base initialiser: subclasses set their parameters, then call
--- Distribution.init(self, batch_shape, event_shape, validate_args), which checks the parameters
--- against arg_constraints when validation is on
function Distribution:init(batch_shape, event_shape, validate_args)
  rawset(self, '_batch_shape', U.size(batch_shape or {}))
  rawset(self, '_event_shape', U.size(event_shape or {}))
  U.check_flag(class_name(self), 'validate_args', validate_args)
  if validate_args ~= nil then rawset(self, '_validate_args', validate_args) end
  if self._validate_args then self:_validate_params() end
end

-- a new instance of self's class, without running its constructor (for expand)
function Distribution:_new_instance() return setmetatable({}, getmetatable(self)) end

--- the end of an expand: the new instance's shapes, and self's validation choice
function Distribution:_init_expanded(new, batch_shape, event_shape)
  Distribution.init(new, batch_shape, event_shape or self._event_shape, false)
  rawset(new, '_validate_args', self._validate_args)
  return new
end

--- d:_expand_params(names, ...): a new instance of d's class with the batch shape given (sizes or a
--- table), whose named tensor parameters (those d holds itself) are d's expanded to it; for the
--- families whose expand is just that
function Distribution:_expand_params(names, ...)
  local shape = U.sample_shape(class_name(self) .. '.expand', ...)
  local new = self:_new_instance()
  U.expand_fields(self, new, names, shape)
  return self:_init_expanded(new, shape)
end

function Distribution:_validate_params()
  local ac = self.arg_constraints
  for _, name in ipairs(ac) do
    local c = ac[name]
    local value = rawget(self, name)
    if value == nil and not self.lazy[name] then value = self[name] end
    if value ~= nil and not C.is_dependent(c) then
      local valid = c:check(value)
      if not valid:all():item() then
        U.raise('%s: expected parameter %s (Tensor of shape %s) of distribution %s to satisfy the constraint %s, '
          .. 'but found invalid values:\n%s', class_name(self), name, U.tuple(value.shape), tostring(self),
          tostring(c), tostring(value))
      end
    end
  end
end

--- d:_validate_sample(value, method): value must be a tensor whose rightmost sizes match the event
--- shape, that broadcasts with batch_shape + event_shape, and that lies in the support
function Distribution:_validate_sample(value, method)
  local name = class_name(self)
  if not torch.is_tensor(value) then
    U.raise('%s: the value argument to %s must be a Tensor, got %s', name, method or 'log_prob', type(value))
  end
  local es = self._event_shape
  local vs = value.shape
  local start = #vs - #es
  if start < 0 or U.slice(vs, start + 1) ~= es then
    U.raise('%s: the right-most size of value must match event_shape: %s vs %s.', name, tostring(vs), tostring(es))
  end
  local expected = U.cat(self._batch_shape, es)
  for i = 0, math.min(#vs, #expected) - 1 do
    local a, b = vs[#vs - i], expected[#expected - i]
    if a ~= 1 and b ~= 1 and a ~= b then
      U.raise('%s: value is not broadcastable with batch_shape+event_shape: %s vs %s.', name, tostring(vs),
        tostring(expected))
    end
  end
  local support = self.support
  if support == nil then return end
  local valid = support:check(value)
  if not valid:all():item() then
    U.raise('%s: expected value argument (Tensor of shape %s) to be within the support (%s) of the distribution %s, '
      .. 'but found invalid values:\n%s', name, U.tuple(vs), tostring(support), tostring(self), tostring(value))
  end
end

--- d:_extended_shape(sample_shape): sample_shape + batch_shape + event_shape
function Distribution:_extended_shape(sample_shape)
  return U.cat(sample_shape or {}, self._batch_shape, self._event_shape)
end

local props = Distribution.properties
function props.batch_shape(d) return U.size(d._batch_shape) end
function props.event_shape(d) return U.size(d._event_shape) end
function props.validate_args(d) return d._validate_args end
function props.mean(d) U.raise('%s does not implement mean', class_name(d)) end
function props.mode(d) U.raise('%s does not implement mode', class_name(d)) end
function props.variance(d) U.raise('%s does not implement variance', class_name(d)) end
function props.stddev(d) return d.variance:sqrt() end

local function not_implemented(what)
  return function(self) U.raise('%s does not implement %s', class_name(self), what) end
end

--- d:rsample(sample_shape): a reparameterised sample (gradients reach the parameters), of shape
--- sample_shape + batch_shape + event_shape; sample_shape is sizes, a table of them or nothing
Distribution.rsample = not_implemented('rsample')
--- d:log_prob(value): the log of the density or mass at value, of the broadcast batch shape
Distribution.log_prob = not_implemented('log_prob')
Distribution.cdf = not_implemented('cdf')
Distribution.icdf = not_implemented('icdf')
Distribution.entropy = not_implemented('entropy')
Distribution.enumerate_support = not_implemented('enumerate_support')
Distribution.expand = not_implemented('expand')

--- d:sample(sample_shape): a sample without gradients
function Distribution:sample(...)
  local shape = U.sample_shape(class_name(self) .. '.sample', ...)
  local _ <close> = torch.no_grad()
  return self:rsample(shape)
end

--- d:perplexity(): exp(entropy)
function Distribution:perplexity() return self:entropy():exp() end

--- tostring(d): PyTorch's repr, Normal(loc: torch.Size([3]), scale: torch.Size([3])) (the value
--- itself for a parameter of one element)
function Distribution:__tostring()
  local parts = {}
  local ac = self.arg_constraints
  for _, name in ipairs(ac) do
    local v = rawget(self, name)
    if torch.is_tensor(v) then
      parts[#parts + 1] = name .. ': ' .. (v:numel() == 1 and tostring(v) or tostring(v.shape))
    end
  end
  return class_name(self) .. '(' .. table.concat(parts, ', ') .. ')'
end

return Distribution
