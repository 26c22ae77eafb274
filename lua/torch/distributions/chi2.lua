-- Chi2(df): the chi-squared distribution, Gamma(df / 2, 1 / 2).
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'
local Gamma = require 'torch.distributions.gamma'

local Chi2 = Gamma:extend('Chi2')
Chi2.arg_constraints = Distribution.params { 'df', C.positive }

--- Chi2(df, {validate_args})
function Chi2:init(...)
  local a = U.args('Chi2', { 'df', 'validate_args' }, ...)
  local df = U.broadcast_all('Chi2', { 'df' }, a.df)
  Gamma.init(self, 0.5 * df, 0.5, { validate_args = a.validate_args })
end

function Chi2.properties.df(d) return d.concentration * 2 end

function Chi2:__tostring()
  local df = self.df
  return 'Chi2(df: ' .. (df:numel() == 1 and tostring(df) or tostring(df.shape)) .. ')'
end

return Chi2
