-- Loss modules: MSELoss, L1Loss, CrossEntropyLoss, NLLLoss and BCEWithLogitsLoss over
-- torch.nn.functional. Class weights are buffers, as in PyTorch, so they follow module:to().
local torch = require 'torch'
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'

local M = {}

local REDUCTIONS = { mean = true, sum = true, none = true }

local function reduction_of(o, op)
  local r = o.reduction or 'mean'
  if not REDUCTIONS[r] then
    error(string.format("%s: reduction must be 'mean', 'sum' or 'none', got %s", op, tostring(r)), 4)
  end
  return r
end

local function weight_of(o, key, op)
  local w = o[key]
  if w ~= nil and not torch.is_tensor(w) then
    error(string.format('%s: %s must be a tensor, got %s', op, key, type(w)), 4)
  end
  return w
end

-- MSELoss({reduction = 'mean'})
local MSELoss = Module:extend('MSELoss')
M.MSELoss = MSELoss
function MSELoss:init(o) self.reduction = reduction_of(o or {}, 'MSELoss') end
function MSELoss:forward(x, y) return F.mse_loss(x, y, { reduction = self.reduction }) end

-- L1Loss({reduction = 'mean'})
local L1Loss = Module:extend('L1Loss')
M.L1Loss = L1Loss
function L1Loss:init(o) self.reduction = reduction_of(o or {}, 'L1Loss') end
function L1Loss:forward(x, y) return F.l1_loss(x, y, { reduction = self.reduction }) end

-- NLLLoss({weight, ignore_index, reduction = 'mean'}); targets and ignore_index are 1-based classes
local NLLLoss = Module:extend('NLLLoss')
M.NLLLoss = NLLLoss
function NLLLoss:init(o)
  o = o or {}
  self.reduction = reduction_of(o, 'NLLLoss')
  self:register_buffer('weight', weight_of(o, 'weight', 'NLLLoss'))
  self.ignore_index = o.ignore_index
end
function NLLLoss:forward(x, target)
  return F.nll_loss(x, target, { weight = self.weight, ignore_index = self.ignore_index, reduction = self.reduction })
end

-- CrossEntropyLoss({weight, ignore_index, reduction = 'mean', label_smoothing = 0})
local CrossEntropyLoss = Module:extend('CrossEntropyLoss')
M.CrossEntropyLoss = CrossEntropyLoss
function CrossEntropyLoss:init(o)
  o = o or {}
  self.reduction = reduction_of(o, 'CrossEntropyLoss')
  self:register_buffer('weight', weight_of(o, 'weight', 'CrossEntropyLoss'))
  self.ignore_index = o.ignore_index
  local ls = o.label_smoothing or 0.0
  if type(ls) ~= 'number' or ls < 0 or ls > 1 then
    error('CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0, got ' .. tostring(ls), 3)
  end
  self.label_smoothing = ls
end
function CrossEntropyLoss:forward(x, target)
  return F.cross_entropy(x, target, { weight = self.weight, ignore_index = self.ignore_index,
    reduction = self.reduction, label_smoothing = self.label_smoothing })
end

-- BCEWithLogitsLoss({weight, reduction = 'mean', pos_weight})
local BCEWithLogitsLoss = Module:extend('BCEWithLogitsLoss')
M.BCEWithLogitsLoss = BCEWithLogitsLoss
function BCEWithLogitsLoss:init(o)
  o = o or {}
  self.reduction = reduction_of(o, 'BCEWithLogitsLoss')
  self:register_buffer('weight', weight_of(o, 'weight', 'BCEWithLogitsLoss'))
  self:register_buffer('pos_weight', weight_of(o, 'pos_weight', 'BCEWithLogitsLoss'))
end
function BCEWithLogitsLoss:forward(x, y)
  return F.binary_cross_entropy_with_logits(x, y, { weight = self.weight, pos_weight = self.pos_weight,
    reduction = self.reduction })
end

return M
