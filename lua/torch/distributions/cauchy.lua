-- Cauchy(loc, scale): rsample is loc + eps * scale with eps PyTorch's cauchy_() (tan(pi (u - 1/2))
-- for a float64 uniform u), so samples equal PyTorch's for the same seed. No mean or variance
-- (NaN and infinity, as in PyTorch).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local S = require 'torch.distributions.samplers'

local Cauchy = Distribution:extend('Cauchy')
Cauchy.arg_constraints = Distribution.params { 'loc', C.real, 'scale', C.positive }
Cauchy.support = C.real
Cauchy.has_rsample = true

--- Cauchy(loc, scale, {validate_args})
function Cauchy:init(...)
  local a = U.args('Cauchy', { 'loc', 'scale', 'validate_args' }, ...)
  self.loc, self.scale = U.broadcast_all('Cauchy', { 'loc', 'scale' }, a.loc, a.scale)
  Distribution.init(self, self.loc.shape, {}, a.validate_args)
end

function Cauchy:expand(...)
  local shape = U.sample_shape('Cauchy.expand', ...)
  local new = self:_new_instance()
  new.loc, new.scale = self.loc:expand(shape), self.scale:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Cauchy.properties
function props.mean(d)
  return torch.full(d:_extended_shape(), 0 / 0, { dtype = d.loc.dtype, device = d.loc.device })
end
function props.mode(d) return d.loc end
function props.variance(d)
  return torch.full(d:_extended_shape(), math.huge, { dtype = d.loc.dtype, device = d.loc.device })
end

function Cauchy:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('Cauchy.rsample', ...))
  local eps = S.cauchy(shape, self.loc.dtype, self.loc.device)
  return self.loc + eps * self.scale
end

function Cauchy:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  return -math.log(math.pi) - self.scale:log() - (1 + ((value - self.loc) / self.scale) ^ 2):log()
end

function Cauchy:cdf(value)
  if self._validate_args then self:_validate_sample(value, 'cdf') end
  return ((value - self.loc) / self.scale):atan() / math.pi + 0.5
end

function Cauchy:icdf(value) return (math.pi * (value - 0.5)):tan() * self.scale + self.loc end

function Cauchy:entropy() return math.log(4 * math.pi) + self.scale:log() end

return Cauchy
