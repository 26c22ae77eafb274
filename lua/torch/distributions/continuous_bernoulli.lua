-- ContinuousBernoulli(probs) or ContinuousBernoulli{logits = l}: the density
-- C(p) p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham, 2019), as in PyTorch 1.13:
-- within lims (0.499, 0.501 by default) of p = 1/2, where the closed forms cancel, the log
-- normaliser, mean, variance and cdf are Taylor expansions about 1/2. rsample is icdf of a
-- uniform, so gradients reach probs (or logits). probs are clamped to [eps, 1 - eps] of the dtype
-- after validation. The variance's Taylor expansion is 1/12 - x/15 - 128 x^2/945 (x = (p - 1/2)^2):
-- PyTorch 1.13 adds the x^2 term, a difference below 1e-12 within the default lims.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local CB = Distribution:extend('ContinuousBernoulli')
CB.arg_constraints = Distribution.params { 'probs', C.unit_interval, 'logits', C.real }
CB.support = C.unit_interval
CB.has_rsample = true
CB.lazy = { probs = true, logits = true }

--- ContinuousBernoulli(probs, logits, lims = {0.499, 0.501}, {validate_args}): exactly one of
--- probs and logits
function CB:init(...)
  local a = U.args('ContinuousBernoulli', { 'probs', 'logits', 'lims', 'validate_args' }, ...)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('ContinuousBernoulli: either probs or logits must be specified, but not both')
  end
  local lims = a.lims or { 0.499, 0.501 }
  if type(lims) ~= 'table' or type(lims[1]) ~= 'number' or type(lims[2]) ~= 'number' or not (lims[1] < lims[2]) then
    U.raise('ContinuousBernoulli: lims must be a table of two increasing numbers')
  end
  self._lims = { lims[1], lims[2] }
  if a.probs ~= nil then
    local probs = U.broadcast_all('ContinuousBernoulli', { 'probs' }, a.probs)
    U.check_flag('ContinuousBernoulli', 'validate_args', a.validate_args)
    -- validated before the clamp, which would otherwise hide values outside [0, 1]
    local validate = a.validate_args
    if validate == nil then validate = Distribution._validate_args end
    if validate and not C.unit_interval:check(probs):all():item() then
      U.raise('ContinuousBernoulli: expected parameter probs (Tensor of shape %s) to satisfy the constraint %s, '
        .. 'but found invalid values:\n%s', U.tuple(probs.shape), tostring(C.unit_interval), tostring(probs))
    end
    self.probs = U.clamp_probs(probs)
  else
    self.logits = U.broadcast_all('ContinuousBernoulli', { 'logits' }, a.logits)
  end
  self._param = rawget(self, 'probs') or rawget(self, 'logits')
  Distribution.init(self, self._param.shape, {}, a.validate_args)
end

function CB:expand(...)
  local new = self:_expand_params({ 'probs', 'logits' }, ...)
  new._param = rawget(new, 'probs') or rawget(new, 'logits')
  new._lims = self._lims
  return new
end

Distribution.lazy_property(CB, 'logits', function(d) return U.probs_to_logits(d.probs, true) end)
Distribution.lazy_property(CB, 'probs', function(d) return U.clamp_probs(U.logits_to_probs(d.logits, true)) end)

-- probs outside the unstable region (lims) about 1/2
function CB:_outside_unstable_region()
  return self.probs:le(self._lims[1]):logical_or(self.probs:gt(self._lims[2]))
end

-- probs, with lims[1] in the unstable region (so that the closed forms stay finite there)
function CB:_cut_probs()
  return torch.where(self:_outside_unstable_region(), self.probs, self._lims[1])
end

--- d:_cont_bern_log_norm(): log C(p)
function CB:_cont_bern_log_norm()
  local cut = self:_cut_probs()
  local below = torch.where(cut:le(0.5), cut, 0)
  local above = torch.where(cut:ge(0.5), cut, 1)
  local log_norm = (torch.log1p(-cut) - cut:log()):abs():log()
    - torch.where(cut:le(0.5), torch.log1p(-2 * below), (2 * above - 1):log())
  local x = (self.probs - 0.5):pow(2)
  local taylor = math.log(2) + (4 / 3 + 104 / 45 * x) * x
  return torch.where(self:_outside_unstable_region(), log_norm, taylor)
end

local props = CB.properties
function props.param_shape(d) return d._param.shape end
function props.mean(d)
  local cut = d:_cut_probs()
  local mus = cut / (2 * cut - 1) + 1 / (torch.log1p(-cut) - cut:log())
  local x = d.probs - 0.5
  local taylor = 0.5 + (1 / 3 + 16 / 45 * x:pow(2)) * x
  return torch.where(d:_outside_unstable_region(), mus, taylor)
end
function props.variance(d)
  local cut = d:_cut_probs()
  local vars = cut * (cut - 1) / (1 - 2 * cut):pow(2) + 1 / (torch.log1p(-cut) - cut:log()):pow(2)
  local x = (d.probs - 0.5):pow(2)
  local taylor = 1 / 12 - (1 / 15 + 128 / 945 * x) * x -- PyTorch 1.13 adds the x^2 term (wrong sign)
  return torch.where(d:_outside_unstable_region(), vars, taylor)
end

function CB:rsample(...)
  local shape = self:_extended_shape(U.sample_shape('ContinuousBernoulli.rsample', ...))
  local u = torch.rand(shape, { dtype = self.probs.dtype, device = self.probs.device })
  return self:icdf(u)
end

function CB:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local logits, v = U.broadcast_all('ContinuousBernoulli.log_prob', { 'logits', 'value' }, self.logits, value)
  return -U.bce_with_logits(logits, v) + self:_cont_bern_log_norm()
end

function CB:cdf(value)
  if self._validate_args then self:_validate_sample(value, 'cdf') end
  local cut = self:_cut_probs()
  local cdfs = (cut:pow(value) * (1 - cut):pow(1 - value) + cut - 1) / (2 * cut - 1)
  local unbounded = torch.where(self:_outside_unstable_region(), cdfs, value)
  return torch.where(value:le(0), 0, torch.where(value:ge(1), 1, unbounded))
end

function CB:icdf(value)
  local cut = self:_cut_probs()
  return torch.where(self:_outside_unstable_region(),
    (torch.log1p(-cut + value * (2 * cut - 1)) - torch.log1p(-cut)) / (cut:log() - torch.log1p(-cut)), value)
end

function CB:entropy()
  local log_p0, log_p1 = torch.log1p(-self.probs), self.probs:log()
  return self.mean * (log_p0 - log_p1) - self:_cont_bern_log_norm() - log_p0
end

return CB
