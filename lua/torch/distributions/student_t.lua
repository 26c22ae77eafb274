-- StudentT(df, loc = 0, scale = 1): rsample is loc + scale X / sqrt(Z / df) with X standard
-- normal and Z ~ Chi2(df) (whose gamma draws pass gradients to df, see gamma.lua).
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Chi2 = require 'torch.distributions.chi2'

local StudentT = Distribution:extend('StudentT')
StudentT.arg_constraints = Distribution.params { 'df', C.positive, 'loc', C.real, 'scale', C.positive }
StudentT.support = C.real
StudentT.has_rsample = true

--- StudentT(df, loc = 0, scale = 1, {validate_args})
function StudentT:init(...)
  local a = U.args('StudentT', { 'df', 'loc', 'scale', 'validate_args' }, ...)
  local loc = a.loc == nil and 0.0 or a.loc
  local scale = a.scale == nil and 1.0 or a.scale
  self.df, self.loc, self.scale = U.broadcast_all('StudentT', { 'df', 'loc', 'scale' }, a.df, loc, scale)
  self._chi2 = Chi2(self.df, { validate_args = false })
  Distribution.init(self, self.df.shape, {}, a.validate_args)
end

function StudentT:expand(...)
  local shape = U.sample_shape('StudentT.expand', ...)
  local new = self:_new_instance()
  new.df, new.loc, new.scale = self.df:expand(shape), self.loc:expand(shape), self.scale:expand(shape)
  new._chi2 = self._chi2:expand(shape)
  return self:_init_expanded(new, shape)
end

local props = StudentT.properties
function props.mean(d) return torch.where(d.df:le(1), 0 / 0, d.loc) end
function props.mode(d) return d.loc end
function props.variance(d)
  local df = d.df
  local finite = d.scale:pow(2) * df / (df - 2)
  return torch.where(df:gt(2), finite, torch.where(df:gt(1), math.huge, 0 / 0))
end

function StudentT:rsample(...)
  local sample_shape = U.sample_shape('StudentT.rsample', ...)
  local shape = self:_extended_shape(sample_shape)
  local x = torch.randn(shape, { dtype = self.df.dtype, device = self.df.device })
  local z = self._chi2:rsample(sample_shape)
  local y = x * (z / self.df):rsqrt()
  return self.loc + self.scale * y
end

function StudentT:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local y = (value - self.loc) / self.scale
  local z = self.scale:log() + 0.5 * self.df:log() + 0.5 * math.log(math.pi) + torch.lgamma(0.5 * self.df)
    - torch.lgamma(0.5 * (self.df + 1))
  return -0.5 * (self.df + 1) * (y ^ 2 / self.df):log1p() - z
end

function StudentT:entropy()
  local df = self.df
  local lbeta = torch.lgamma(0.5 * df) + 0.5 * math.log(math.pi) - torch.lgamma(0.5 * (df + 1))
  return self.scale:log() + 0.5 * (df + 1) * (torch.digamma(0.5 * (df + 1)) - torch.digamma(0.5 * df))
    + 0.5 * df:log() + lbeta
end

return StudentT
