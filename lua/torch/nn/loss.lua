-- Loss modules: MSELoss, L1Loss, CrossEntropyLoss, NLLLoss, BCEWithLogitsLoss, BCELoss, SmoothL1Loss,
-- HuberLoss, KLDivLoss, MarginRankingLoss, SoftMarginLoss, PoissonNLLLoss, GaussianNLLLoss,
-- CosineEmbeddingLoss, HingeEmbeddingLoss, TripletMarginLoss, TripletMarginWithDistanceLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
-- MultiLabelMarginLoss and CTCLoss over torch.nn.functional. Class weights are buffers, as in PyTorch, so they follow module:to().
local torch = require 'torch'
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local as_int = require('torch.composite').as_int

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

-- BCELoss({weight, reduction = 'mean'}): on probabilities
local BCELoss = Module:extend('BCELoss')
M.BCELoss = BCELoss
function BCELoss:init(o)
  o = o or {}
  self.reduction = reduction_of(o, 'BCELoss')
  self:register_buffer('weight', weight_of(o, 'weight', 'BCELoss'))
end
function BCELoss:forward(x, y) return F.binary_cross_entropy(x, y, { weight = self.weight, reduction = self.reduction }) end

-- SmoothL1Loss({reduction = 'mean', beta = 1}) and HuberLoss({reduction = 'mean', delta = 1})
for _, v in ipairs { { 'SmoothL1Loss', 'smooth_l1_loss', 'beta' }, { 'HuberLoss', 'huber_loss', 'delta' } } do
  local cls = Module:extend(v[1])
  M[v[1]] = cls
  function cls:init(o)
    o = o or {}
    self.reduction = reduction_of(o, v[1])
    self[v[3]] = o[v[3]] or 1.0
  end
  function cls:forward(x, y) return F[v[2]](x, y, { reduction = self.reduction, [v[3]] = self[v[3]] }) end
end

-- KLDivLoss({reduction = 'mean', log_target = false}); reduction may also be 'batchmean'
local KLDivLoss = Module:extend('KLDivLoss')
M.KLDivLoss = KLDivLoss
function KLDivLoss:init(o)
  o = o or {}
  if o.reduction == 'batchmean' then self.reduction = 'batchmean' else self.reduction = reduction_of(o, 'KLDivLoss') end
  self.log_target = o.log_target and true or false
end
function KLDivLoss:forward(x, t) return F.kl_div(x, t, { reduction = self.reduction, log_target = self.log_target }) end

-- MarginRankingLoss({margin = 0, reduction = 'mean'})
local MarginRankingLoss = Module:extend('MarginRankingLoss')
M.MarginRankingLoss = MarginRankingLoss
function MarginRankingLoss:init(o)
  o = o or {}
  self.reduction = reduction_of(o, 'MarginRankingLoss')
  self.margin = o.margin or 0.0
end
function MarginRankingLoss:forward(x1, x2, y)
  return F.margin_ranking_loss(x1, x2, y, { margin = self.margin, reduction = self.reduction })
end

-- SoftMarginLoss({reduction = 'mean'})
local SoftMarginLoss = Module:extend('SoftMarginLoss')
M.SoftMarginLoss = SoftMarginLoss
function SoftMarginLoss:init(o) self.reduction = reduction_of(o or {}, 'SoftMarginLoss') end
function SoftMarginLoss:forward(x, y) return F.soft_margin_loss(x, y, { reduction = self.reduction }) end

-- PoissonNLLLoss({log_input = true, full = false, eps = 1e-8, reduction = 'mean'})
local PoissonNLLLoss = Module:extend('PoissonNLLLoss')
M.PoissonNLLLoss = PoissonNLLLoss
function PoissonNLLLoss:init(o)
  o = F._opts_of(o, 'PoissonNLLLoss', { 'log_input', 'full', 'eps', 'reduction' })
  self.reduction = reduction_of(o, 'PoissonNLLLoss')
  if o.log_input == nil then self.log_input = true else self.log_input = o.log_input end
  self.full = o.full or false
  self.eps = o.eps or 1e-8
end
function PoissonNLLLoss:forward(x, t)
  return F.poisson_nll_loss(x, t, { log_input = self.log_input, full = self.full, eps = self.eps,
    reduction = self.reduction })
end

-- GaussianNLLLoss({full = false, eps = 1e-6, reduction = 'mean'}); forward(input, target, var)
local GaussianNLLLoss = Module:extend('GaussianNLLLoss')
M.GaussianNLLLoss = GaussianNLLLoss
function GaussianNLLLoss:init(o)
  o = F._opts_of(o, 'GaussianNLLLoss', { 'full', 'eps', 'reduction' })
  self.reduction = reduction_of(o, 'GaussianNLLLoss')
  self.full = o.full or false
  self.eps = o.eps or 1e-6
end
function GaussianNLLLoss:forward(x, t, var)
  return F.gaussian_nll_loss(x, t, var, { full = self.full, eps = self.eps, reduction = self.reduction })
end

-- CosineEmbeddingLoss({margin = 0, reduction = 'mean'}); forward(x1, x2, y), y = 1 or -1
local CosineEmbeddingLoss = Module:extend('CosineEmbeddingLoss')
M.CosineEmbeddingLoss = CosineEmbeddingLoss
function CosineEmbeddingLoss:init(o)
  o = F._opts_of(o, 'CosineEmbeddingLoss', { 'margin', 'reduction' })
  self.reduction = reduction_of(o, 'CosineEmbeddingLoss')
  self.margin = o.margin or 0.0
end
function CosineEmbeddingLoss:forward(x1, x2, y)
  return F.cosine_embedding_loss(x1, x2, y, { margin = self.margin, reduction = self.reduction })
end

-- HingeEmbeddingLoss({margin = 1, reduction = 'mean'})
local HingeEmbeddingLoss = Module:extend('HingeEmbeddingLoss')
M.HingeEmbeddingLoss = HingeEmbeddingLoss
function HingeEmbeddingLoss:init(o)
  o = F._opts_of(o, 'HingeEmbeddingLoss', { 'margin', 'reduction' })
  self.reduction = reduction_of(o, 'HingeEmbeddingLoss')
  self.margin = o.margin or 1.0
end
function HingeEmbeddingLoss:forward(x, y)
  return F.hinge_embedding_loss(x, y, { margin = self.margin, reduction = self.reduction })
end

-- the margin of a triplet loss: a number > 0, 1 by default
local function triplet_margin_of(o, op)
  local margin = o.margin or 1.0
  if type(margin) ~= 'number' or margin <= 0 then
    error(op .. ': margin must be greater than 0, got ' .. tostring(margin), 4)
  end
  return margin
end

-- TripletMarginLoss({margin = 1, p = 2, eps = 1e-6, swap = false, reduction = 'mean'});
-- forward(anchor, positive, negative)
local TripletMarginLoss = Module:extend('TripletMarginLoss')
M.TripletMarginLoss = TripletMarginLoss
function TripletMarginLoss:init(o)
  o = F._opts_of(o, 'TripletMarginLoss', { 'margin', 'p', 'eps', 'swap', 'reduction' })
  self.reduction = reduction_of(o, 'TripletMarginLoss')
  self.margin = triplet_margin_of(o, 'TripletMarginLoss')
  self.p = o.p or 2.0
  self.eps = o.eps or 1e-6
  self.swap = o.swap or false
end
function TripletMarginLoss:forward(a, pos, neg)
  return F.triplet_margin_loss(a, pos, neg, { margin = self.margin, p = self.p, eps = self.eps, swap = self.swap,
    reduction = self.reduction })
end

-- TripletMarginWithDistanceLoss({distance_function, margin = 1, swap = false, reduction = 'mean'});
-- forward(anchor, positive, negative); distance_function F.pairwise_distance if not given
local TripletMarginWithDistanceLoss = Module:extend('TripletMarginWithDistanceLoss')
M.TripletMarginWithDistanceLoss = TripletMarginWithDistanceLoss
function TripletMarginWithDistanceLoss:init(o)
  local op = 'TripletMarginWithDistanceLoss'
  o = F._opts_of(o, op, { 'distance_function', 'margin', 'swap', 'reduction' })
  self.reduction = reduction_of(o, op)
  self.margin = triplet_margin_of(o, op)
  self.distance_function = o.distance_function
  self.swap = o.swap or false
end
function TripletMarginWithDistanceLoss:forward(a, pos, neg)
  return F.triplet_margin_with_distance_loss(a, pos, neg, { distance_function = self.distance_function,
    margin = self.margin, swap = self.swap, reduction = self.reduction })
end

-- MultiLabelSoftMarginLoss({weight, reduction = 'mean'})
local MultiLabelSoftMarginLoss = Module:extend('MultiLabelSoftMarginLoss')
M.MultiLabelSoftMarginLoss = MultiLabelSoftMarginLoss
function MultiLabelSoftMarginLoss:init(o)
  o = F._opts_of(o, 'MultiLabelSoftMarginLoss', { 'weight', 'reduction' })
  self.reduction = reduction_of(o, 'MultiLabelSoftMarginLoss')
  self:register_buffer('weight', weight_of(o, 'weight', 'MultiLabelSoftMarginLoss'))
end
function MultiLabelSoftMarginLoss:forward(x, y)
  return F.multilabel_soft_margin_loss(x, y, { weight = self.weight, reduction = self.reduction })
end

-- MultiMarginLoss({p = 1, margin = 1, weight, reduction = 'mean'}); targets are 1-based classes
local MultiMarginLoss = Module:extend('MultiMarginLoss')
M.MultiMarginLoss = MultiMarginLoss
function MultiMarginLoss:init(o)
  o = F._opts_of(o, 'MultiMarginLoss', { 'p', 'margin', 'weight', 'reduction' }, 4)
  self.reduction = reduction_of(o, 'MultiMarginLoss')
  local p = o.p or 1
  if p ~= 1 and p ~= 2 then error('MultiMarginLoss: only p == 1 and p == 2 supported, got ' .. tostring(p), 3) end
  local w = weight_of(o, 'weight', 'MultiMarginLoss')
  if w ~= nil and w:dim() ~= 1 then error('MultiMarginLoss: weight must be 1-D (a value a class), got ' .. w:dim() .. '-D', 3) end
  self.p, self.margin = p, o.margin or 1.0
  self:register_buffer('weight', w)
end
function MultiMarginLoss:forward(x, target)
  return F.multi_margin_loss(x, target, { p = self.p, margin = self.margin, weight = self.weight,
    reduction = self.reduction })
end

-- MultiLabelMarginLoss({reduction = 'mean'}); targets are 1-based classes ended by 0 or -1
local MultiLabelMarginLoss = Module:extend('MultiLabelMarginLoss')
M.MultiLabelMarginLoss = MultiLabelMarginLoss
function MultiLabelMarginLoss:init(o)
  o = F._opts_of(o, 'MultiLabelMarginLoss', { 'reduction' }, 4)
  self.reduction = reduction_of(o, 'MultiLabelMarginLoss')
end
function MultiLabelMarginLoss:forward(x, target)
  return F.multilabel_margin_loss(x, target, { reduction = self.reduction })
end

-- CTCLoss({blank = 1, reduction = 'mean', zero_infinity = false}): blank is a 1-based class (PyTorch's
-- default 0 is class 1 here); forward(log_probs, targets, input_lengths, target_lengths)
local CTCLoss = Module:extend('CTCLoss')
M.CTCLoss = CTCLoss
function CTCLoss:init(o)
  o = F._opts_of(o, 'CTCLoss', { 'blank', 'reduction', 'zero_infinity' }, 4)
  self.reduction = reduction_of(o, 'CTCLoss')
  local blank = o.blank or 1
  blank = as_int(blank)
  if math.type(blank) ~= 'integer' or blank < 1 then
    error('CTCLoss: blank must be a 1-based class, got ' .. tostring(blank), 3)
  end
  self.blank = blank
  self.zero_infinity = o.zero_infinity and true or false
end
function CTCLoss:forward(log_probs, targets, input_lengths, target_lengths)
  return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, { blank = self.blank,
    reduction = self.reduction, zero_infinity = self.zero_infinity })
end

return M
