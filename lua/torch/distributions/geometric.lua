-- Geometric(probs) or Geometric{logits = l}: the number of failures (0, 1, 2, ...; a count, not
-- an index) before the first success of trials with success probability probs. sample is
-- PyTorch's (u uniform on [tiny, 1) by uniform_, then floor(log u / log1p(-probs))), so samples
-- equal PyTorch's for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local Geometric = Distribution:extend('Geometric')
Geometric.arg_constraints = Distribution.params { 'probs', C.unit_interval, 'logits', C.real }
Geometric.support = C.nonnegative_integer
Geometric.lazy = { probs = true, logits = true }

--- Geometric(probs, logits, {validate_args}): probs in (0, 1]
function Geometric:init(...)
  local a = U.args('Geometric', { 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('Geometric: either probs or logits must be specified, but not both')
  end
  if a.probs ~= nil then
    self.probs = U.broadcast_all('Geometric', { 'probs' }, a.probs)
  else
    self.logits = U.broadcast_all('Geometric', { 'logits' }, a.logits)
  end
  local param = rawget(self, 'probs') or rawget(self, 'logits')
  Distribution.init(self, param.shape, {}, a.validate_args)
  if self._validate_args and a.probs ~= nil and not self.probs:gt(0):all():item() then
    U.raise('Geometric: expected parameter probs (Tensor of shape %s) of distribution %s to be positive but found '
      .. 'invalid values:\n%s', U.tuple(self.probs.shape), tostring(self), tostring(self.probs))
  end
end

function Geometric:expand(...)
  local shape = U.sample_shape('Geometric.expand', ...)
  local new = self:_new_instance()
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape) end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape) end
  return self:_init_expanded(new, shape)
end

Distribution.lazy_property(Geometric, 'logits', function(d) return U.probs_to_logits(d.probs, true) end)
Distribution.lazy_property(Geometric, 'probs', function(d) return U.logits_to_probs(d.logits, true) end)

local props = Geometric.properties
function props.mean(d) return 1.0 / d.probs - 1.0 end
function props.mode(d) return torch.zeros_like(d.probs) end
function props.variance(d) return (1.0 / d.probs - 1.0) / d.probs end

function Geometric:sample(...)
  local shape = self:_extended_shape(U.sample_shape('Geometric.sample', ...))
  local _ <close> = torch.no_grad()
  local tiny = U.finfo(self.probs.dtype).tiny
  local u = self.probs:new_empty(shape):uniform_(tiny, 1)
  return (u:log() / (-self.probs):log1p()):floor()
end

function Geometric:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local v, probs = U.broadcast_all('Geometric.log_prob', { 'value', 'probs' }, value, self.probs)
  probs = probs:masked_fill(probs:eq(1):logical_and(v:eq(0)), 0)
  return v * (-probs):log1p() + self.probs:log()
end

function Geometric:entropy() return U.bce_with_logits(self.logits, self.probs) / self.probs end

return Geometric
