-- NegativeBinomial(total_count, probs) or NegativeBinomial(total_count, {logits = l}): the number
-- of successes (each with probability probs) before total_count failures, as in PyTorch 1.13;
-- total_count may be any nonnegative real. sample draws a Poisson of a Gamma(total_count,
-- exp(-logits)) rate, PyTorch's method.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Gamma = require 'torch.distributions.gamma'
local S = require 'torch.distributions.samplers'

local NegativeBinomial = Distribution:extend('NegativeBinomial')
NegativeBinomial.arg_constraints = Distribution.params {
  'total_count', C.greater_than_eq(0), 'probs', C.half_open_interval(0.0, 1.0), 'logits', C.real }
NegativeBinomial.support = C.nonnegative_integer
NegativeBinomial.lazy = { probs = true, logits = true }

--- NegativeBinomial(total_count, probs, logits, {validate_args}): exactly one of probs and logits
function NegativeBinomial:init(...)
  local a = U.args('NegativeBinomial', { 'total_count', 'probs', 'logits', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('NegativeBinomial: either probs or logits must be specified, but not both')
  end
  local pname = a.probs ~= nil and 'probs' or 'logits'
  local count, param = U.broadcast_all('NegativeBinomial', { 'total_count', pname }, a.total_count, a[pname])
  self.total_count, self[pname] = count:type_as(param), param
  self._param = param
  Distribution.init(self, param.shape, {}, a.validate_args)
end

function NegativeBinomial:expand(...)
  local new = self:_expand_params({ 'total_count', 'probs', 'logits' }, ...)
  new._param = rawget(new, 'probs') or rawget(new, 'logits')
  return new
end

Distribution.lazy_property(NegativeBinomial, 'logits', function(d) return U.probs_to_logits(d.probs, true) end)
Distribution.lazy_property(NegativeBinomial, 'probs', function(d) return U.logits_to_probs(d.logits, true) end)

local props = NegativeBinomial.properties
function props.param_shape(d) return d._param.shape end
function props.mean(d) return d.total_count * d.logits:exp() end
function props.mode(d) return ((d.total_count - 1) * d.logits:exp()):floor():clamp(0) end
function props.variance(d) return d.mean / torch.sigmoid(-d.logits) end

function NegativeBinomial:sample(...)
  local shape = U.sample_shape('NegativeBinomial.sample', ...)
  local _ <close> = torch.no_grad()
  local rate = Gamma(self.total_count, (-self.logits):exp(), { validate_args = false }):sample(shape)
  return S.poisson(rate)
end

function NegativeBinomial:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local n, logits = self.total_count, self.logits
  local log_unnormalized = -n * torch.softplus(logits) - value * torch.softplus(-logits)
  local log_normalization = -torch.lgamma(n + value) + torch.lgamma(1 + value) + torch.lgamma(n)
  log_normalization = torch.where((n + value):eq(0), 0, log_normalization)
  return log_unnormalized - log_normalization
end

return NegativeBinomial
