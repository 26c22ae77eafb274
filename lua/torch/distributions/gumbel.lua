-- Gumbel(loc, scale): loc - scale log(-log U) for U ~ Uniform(tiny, 1 - eps), a
-- TransformedDistribution as in PyTorch (ExpTransform().inv, AffineTransform(0, -1),
-- ExpTransform().inv, AffineTransform(loc, -scale)), with PyTorch's closed-form log_prob.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local TransformedDistribution = require 'torch.distributions.transformed_distribution'
local Uniform = require 'torch.distributions.uniform'
local T = require 'torch.distributions.transforms'

local Gumbel = TransformedDistribution:extend('Gumbel')
Gumbel.arg_constraints = Distribution.params { 'loc', C.real, 'scale', C.positive }
Gumbel.support = C.real
Gumbel.has_rsample = true

--- Gumbel(loc, scale, {validate_args})
function Gumbel:init(...)
  local a = U.args('Gumbel', { 'loc', 'scale', 'validate_args' }, ...)
  self.loc, self.scale = U.broadcast_all('Gumbel', { 'loc', 'scale' }, a.loc, a.scale)
  local f = U.finfo(self.loc.dtype)
  local base = Uniform(torch.full_like(self.loc, f.tiny), torch.full_like(self.loc, 1 - f.eps),
    { validate_args = false })
  local transforms = { T.ExpTransform().inv, T.AffineTransform(0, -torch.ones_like(self.scale)),
    T.ExpTransform().inv, T.AffineTransform(self.loc, -self.scale) }
  TransformedDistribution.init(self, base, transforms, { validate_args = a.validate_args })
end

function Gumbel:expand(...) return self:_expand_params({ 'loc', 'scale' }, ...) end

local props = Gumbel.properties
function props.mean(d) return d.loc + d.scale * U.euler_constant end
function props.mode(d) return d.loc end
function props.stddev(d) return (math.pi / math.sqrt(6)) * d.scale end
function props.variance(d) return d.stddev:pow(2) end

function Gumbel:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local y = (self.loc - value) / self.scale
  return (y - y:exp()) - self.scale:log()
end

function Gumbel:entropy() return self.scale:log() + (1 + U.euler_constant) end

return Gumbel
