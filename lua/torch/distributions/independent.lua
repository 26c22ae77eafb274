-- Independent(base, n): reinterprets the n rightmost batch dimensions of base as event
-- dimensions, so log_prob and entropy sum over them (a diagonal Normal as a multivariate one).
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local class = require 'torch.class'
local Distribution = require 'torch.distributions.distribution'
local as_int = require('torch.composite').as_int

local Independent = Distribution:extend('Independent')

--- Independent(base_distribution, reinterpreted_batch_ndims, {validate_args})
function Independent:init(...)
  local a = U.args('Independent', { 'base_distribution', 'reinterpreted_batch_ndims', 'validate_args' }, ...)
  local base, n = a.base_distribution, a.reinterpreted_batch_ndims
  if not class.isinstance(base, Distribution) then
    U.raise('Independent: base_distribution must be a distribution, got %s', type(base))
  end
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 0 then
    U.raise('Independent: reinterpreted_batch_ndims must be a non-negative integer, got %s', tostring(n))
  end
  if n > #base._batch_shape then
    U.raise('Independent: expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual %d vs %d',
      n, #base._batch_shape)
  end
  local shape = U.cat(base._batch_shape, base._event_shape)
  local event_dim = n + #base._event_shape
  self.base_dist = base
  self.reinterpreted_batch_ndims = n
  Distribution.init(self, U.slice(shape, 1, #shape - event_dim), U.slice(shape, #shape - event_dim + 1),
    a.validate_args)
end

function Independent:expand(...)
  local shape = U.sample_shape('Independent.expand', ...)
  local new = self:_new_instance()
  new.base_dist = self.base_dist:expand(U.cat(shape, U.slice(self._event_shape, 1, self.reinterpreted_batch_ndims)))
  new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
  return self:_init_expanded(new, shape)
end

local props = Independent.properties
function props.has_rsample(d) return d.base_dist.has_rsample end
function props.has_enumerate_support(d)
  if d.reinterpreted_batch_ndims > 0 then return false end
  return d.base_dist.has_enumerate_support
end
function props.support(d)
  local s = d.base_dist.support
  if d.reinterpreted_batch_ndims > 0 then s = C.independent(s, d.reinterpreted_batch_ndims) end
  return s
end
function props.mean(d) return d.base_dist.mean end
function props.mode(d) return d.base_dist.mode end
function props.variance(d) return d.base_dist.variance end

function Independent:sample(...) return self.base_dist:sample(...) end
function Independent:rsample(...) return self.base_dist:rsample(...) end
function Independent:log_prob(value)
  return U.sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
end
function Independent:entropy()
  return U.sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims)
end
function Independent:enumerate_support(expand)
  if self.reinterpreted_batch_ndims > 0 then
    U.raise('Independent: enumeration over cartesian product is not implemented')
  end
  return self.base_dist:enumerate_support(expand)
end

function Independent:__tostring()
  return 'Independent(' .. tostring(self.base_dist) .. ', ' .. self.reinterpreted_batch_ndims .. ')'
end

return Independent
