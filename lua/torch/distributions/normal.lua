-- Normal(loc, scale): the Gaussian distribution. sample is PyTorch's torch.normal(loc, scale)
-- (standard normal draws times scale plus loc) and rsample loc + eps * scale, so both give
-- PyTorch's values for the same seed.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local Normal = Distribution:extend('Normal')
Normal.arg_constraints = Distribution.params { 'loc', C.real, 'scale', C.positive }
Normal.support = C.real
Normal.has_rsample = true

--- Normal(loc, scale, {validate_args}): loc and scale are numbers or tensors (broadcast together)
function Normal:init(...)
  local a = U.args('Normal', { 'loc', 'scale', 'validate_args' }, ...)
  self.loc, self.scale = U.broadcast_all('Normal', { 'loc', 'scale' }, a.loc, a.scale)
  Distribution.init(self, self.loc.shape, {}, a.validate_args)
end

function Normal:expand(...)
  local shape = U.sample_shape('Normal.expand', ...)
  local new = self:_new_instance()
  new.loc, new.scale = self.loc:expand(shape), self.scale:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = Normal.properties
function props.mean(d) return d.loc end
function props.mode(d) return d.loc end
function props.stddev(d) return d.scale end
function props.variance(d) return d.scale:pow(2) end

function Normal:sample(...)
  local shape = self:_extended_shape(U.sample_shape('Normal.sample', ...))
  local _ <close> = torch.no_grad()
  local eps = torch.randn(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return eps * self.scale:expand(shape) + self.loc:expand(shape)
end

function Normal:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('Normal.rsample', ...))
  local eps = torch.randn(shape, { dtype = self.loc.dtype, device = self.loc.device })
  return self.loc + eps * self.scale
end

function Normal:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local var = self.scale ^ 2
  return -((value - self.loc) ^ 2) / (2 * var) - self.scale:log() - math.log(math.sqrt(2 * math.pi))
end

function Normal:cdf(value)
  if self._validate_args then self:_validate_sample(value, 'cdf') end
  return 0.5 * (1 + torch.erf((value - self.loc) * self.scale:reciprocal() / math.sqrt(2)))
end

function Normal:icdf(value)
  return self.loc + self.scale * torch.erfinv(2 * value - 1) * math.sqrt(2)
end

function Normal:entropy()
  return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale:log()
end

return Normal
