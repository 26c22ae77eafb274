-- Dirichlet(concentration): distributions on the simplex of the last dimension of concentration
-- (the event). rsample normalises standard gamma draws (samplers.lua), whose implicit
-- reparameterisation passes the gradients: an unbiased pathwise gradient, though not the same
-- per-sample value as PyTorch's _dirichlet_grad (which differentiates the Beta marginals).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local S = require 'torch.distributions.samplers'

local Dirichlet = Distribution:extend('Dirichlet')
Dirichlet.arg_constraints = Distribution.params { 'concentration', C.independent(C.positive, 1) }
Dirichlet.support = C.simplex
Dirichlet.has_rsample = true

--- Dirichlet(concentration, {validate_args}): concentration a tensor of at least one dimension
function Dirichlet:init(...)
  local a = U.args('Dirichlet', { 'concentration', 'validate_args' }, ...)
  local c = U.tensor_arg('Dirichlet', 'concentration', a.concentration, 1)
  self.concentration = c
  Distribution.init(self, U.slice(c.shape, 1, c:dim() - 1), { c:size(-1) }, a.validate_args)
end

function Dirichlet:expand(...)
  local shape = U.sample_shape('Dirichlet.expand', ...)
  local new = self:_new_instance()
  new.concentration = self.concentration:expand(U.cat(shape, self._event_shape))
  return self:_init_expanded(new, shape)
end

function Dirichlet:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('Dirichlet.rsample', ...))
  local g = S.standard_gamma(self.concentration:expand(shape))
  return g / g:sum(-1, true)
end

function Dirichlet:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local c = self.concentration
  return (value:log() * (c - 1.0)):sum(-1) + torch.lgamma(c:sum(-1)) - torch.lgamma(c):sum(-1)
end

local props = Dirichlet.properties
function props.mean(d) return d.concentration / d.concentration:sum(-1, true) end
function props.mode(d)
  local c = d.concentration
  local cm1 = (c - 1):clamp(0)
  local mode = cm1 / cm1:sum(-1, true)
  -- every concentration below 1: the density is unbounded at every vertex; PyTorch 1.13 gives
  -- the first (the argmax of its NaN quotients), and so does this
  local all_small = c:lt(1):all(-1):unsqueeze(-1)
  local vertex = torch.zeros_like(mode)
  vertex:select(-1, 1):fill_(1)
  return torch.where(all_small, vertex, mode)
end
function props.variance(d)
  local c = d.concentration
  local c0 = c:sum(-1, true)
  return c * (c0 - c) / (c0:pow(2) * (c0 + 1))
end

function Dirichlet:entropy()
  local c = self.concentration
  local k = c:size(-1)
  local a0 = c:sum(-1)
  return torch.lgamma(c):sum(-1) - torch.lgamma(a0) - (k - a0) * torch.digamma(a0)
    - ((c - 1.0) * torch.digamma(c)):sum(-1)
end

return Dirichlet
