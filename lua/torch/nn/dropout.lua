-- nn.Dropout: zeroes elements with probability p while training and scales the rest by 1/(1-p);
-- nn.Dropout1d, nn.Dropout2d and nn.Dropout3d zero whole channels; nn.AlphaDropout and
-- nn.FeatureAlphaDropout keep SELU's zero mean and unit variance.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'

local M = {}
local pyrepr = Module._pyrepr

-- Dropout(p = 0.5, {inplace = false}) (or Dropout({p = ..., inplace = ...}))
local Dropout = Module:extend('Dropout')
M.Dropout = Dropout

function Dropout:init(p, o)
  if type(p) == 'table' then p, o = p.p, p end
  o = o or {}
  if p == nil then p = 0.5 end
  if type(p) ~= 'number' or p < 0 or p > 1 then
    error(self:_get_name() .. ': dropout probability has to be between 0 and 1, but got ' .. tostring(p), 3)
  end
  self.p = p
  self.inplace = o.inplace and true or false
end

function Dropout:forward(x) return F.dropout(x, self.p, self.training, self.inplace) end

function Dropout:extra_repr()
  return string.format('p=%s, inplace=%s', pyrepr(self.p), pyrepr(self.inplace))
end

-- Dropout1d, Dropout2d and Dropout3d (p = 0.5, {inplace = false}): whole channels of N x C x L,
-- N x C x H x W and N x C x D x H x W input, over F.dropout1d, F.dropout2d and F.dropout3d
for name, fn in pairs { Dropout1d = 'dropout1d', Dropout2d = 'dropout2d', Dropout3d = 'dropout3d' } do
  local cls = Dropout:extend(name)
  M[name] = cls
  function cls:forward(x) return F[fn](x, self.p, self.training, self.inplace) end
end

-- AlphaDropout and FeatureAlphaDropout (p = 0.5, {inplace = false}) over F.alpha_dropout and
-- F.feature_alpha_dropout; as PyTorch's, they compute out of place whatever inplace says
for name, fn in pairs { AlphaDropout = 'alpha_dropout', FeatureAlphaDropout = 'feature_alpha_dropout' } do
  local cls = Dropout:extend(name)
  M[name] = cls
  function cls:forward(x) return F[fn](x, self.p, self.training) end
end

return M
