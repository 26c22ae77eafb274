-- nn.AdaptiveLogSoftmaxWithLoss (Grave et al.'s adaptive softmax, as PyTorch 1.13's): a head over
-- the frequent classes (the shortlist) and one token per cluster of rarer classes, each cluster a
-- two-layer tail (in_features -> in_features // div_value^i -> its classes), composed of Linear,
-- log_softmax, gather and index_add (autograd differentiates them). Classes are 1-based: the
-- shortlist is 1 .. cutoffs[1], cluster i the classes cutoffs[i] + 1 .. cutoffs[i + 1] (the last
-- ending at n_classes); the cutoffs are PyTorch's numbers.
--
--   local asm = nn.AdaptiveLogSoftmaxWithLoss(64, 1000, {10, 100})
--   local r = asm(hidden, target)        -- r.output (log-probabilities of the targets), r.loss
--   local lp = asm:log_prob(hidden)      -- N x 1000
--   local cls = asm:predict(hidden)      -- the most likely class of each row
local torch = require 'torch'
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local Linear = require('torch.nn.linear').Linear
local container = require 'torch.nn.container'
local as_int = require('torch.composite').as_int

local M = {}
local NAME = 'AdaptiveLogSoftmaxWithLoss'

-- AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, {div_value = 4.0, head_bias = false,
-- device, dtype})
local ASM = Module:extend(NAME)
M.AdaptiveLogSoftmaxWithLoss = ASM

function ASM:init(in_features, n_classes, cutoffs, o)
  o = F._opts_of(o, NAME, { 'div_value', 'head_bias', 'device', 'dtype' }, 4)
  in_features = as_int(in_features)
  n_classes = as_int(n_classes)
  if math.type(in_features) ~= 'integer' or in_features <= 0 or math.type(n_classes) ~= 'integer' then
    error(string.format('%s: in_features must be a positive integer and n_classes an integer, got %s and %s', NAME,
      tostring(in_features), tostring(n_classes)), 3)
  end
  local ok = type(cutoffs) == 'table' and not torch.is_tensor(cutoffs) and #cutoffs > 0
  if ok then
    local given = cutoffs
    cutoffs = {}
    for i, c in ipairs(given) do
      c = as_int(c)
      cutoffs[i] = c
      if math.type(c) ~= 'integer' or c <= 0 or c > n_classes - 1 or (i > 1 and c <= cutoffs[i - 1]) then ok = false end
    end
  end
  if not ok then
    error(NAME .. ': cutoffs should be a sequence of unique, positive integers sorted in an increasing order, '
      .. 'where each value is between 1 and n_classes-1', 3)
  end
  local div = o.div_value or 4.0
  if type(div) ~= 'number' or div <= 0 then error(NAME .. ': div_value must be a positive number, got ' .. tostring(div), 3) end
  self.in_features, self.n_classes = in_features, n_classes
  local cuts = {}
  for i, c in ipairs(cutoffs) do cuts[i] = c end
  cuts[#cuts + 1] = n_classes
  self.cutoffs, self.div_value, self.head_bias = cuts, div, o.head_bias and true or false
  self.shortlist_size, self.n_clusters = cuts[1], #cuts - 1
  self.head_size = self.shortlist_size + self.n_clusters
  local f = { dtype = o.dtype, device = o.device }
  self.head = Linear(in_features, self.head_size, { bias = self.head_bias, dtype = f.dtype, device = f.device })
  self.tail = container.ModuleList()
  for i = 1, self.n_clusters do
    local hsz = math.tointeger(in_features // div ^ i)
    local osz = cuts[i + 1] - cuts[i]
    self.tail:append(container.Sequential(Linear(in_features, hsz, { bias = false, dtype = f.dtype, device = f.device }),
      Linear(hsz, osz, { bias = false, dtype = f.dtype, device = f.device })))
  end
end

function ASM:reset_parameters()
  self.head:reset_parameters()
  for i = 1, self.n_clusters do
    self.tail[i][1]:reset_parameters()
    self.tail[i][2]:reset_parameters()
  end
end

local function check_input(self, x, what, level)
  if not torch.is_tensor(x) then error(string.format('%s: expected %s to be a tensor, got %s', NAME, what, type(x)), level + 1) end
  if x:dim() < 1 or x:size(-1) ~= self.in_features then
    error(string.format('%s: expected %s with %d features (its last size), got shape %s', NAME, what, self.in_features,
      tostring(x.shape)), level + 1)
  end
end

--- forward(input, target) -> {output = , loss = } (also [1] and [2], PyTorch's _ASMoutput fields):
-- input N x in_features with target N classes (1-based), or in_features with a 0-D target; output
-- the log-probability of each target (N, or 0-D), loss the mean of its negatives
function ASM:forward(input, target)
  check_input(self, input, 'input', 2)
  if not torch.is_tensor(target) then error(NAME .. ': expected target to be a tensor, got ' .. type(target), 2) end
  if target.dtype.is_floating_point or target.dtype == torch.bool then
    error(NAME .. ': expected target of an integer dtype (1-based classes), got ' .. tostring(target.dtype), 2)
  end
  if target:dim() == 1 then
    if input:dim() ~= 2 then error(NAME .. ': 1D target tensor expects 2D input tensors, but found inputs with size ' .. tostring(input.shape), 2) end
    if input:size(1) ~= target:size(1) then error(NAME .. ': Input and target should have the same size in the batch dimension.', 2) end
  elseif target:dim() == 0 then
    if input:dim() ~= 1 then error(NAME .. ': 0D target tensor expects 1D input tensors, but found inputs with size ' .. tostring(input.shape), 2) end
  else
    error(NAME .. ': 0D or 1D target tensor expected, multi-target not supported', 2)
  end
  local batched = target:dim() > 0
  local x = batched and input or input:unsqueeze(1)
  local t = (batched and target or target:unsqueeze(1)):to(torch.int64)
  local n = t:size(1)
  if n > 0 then
    local lo, hi = t:min():item(), t:max():item()
    if lo < 1 or hi > self.n_classes then
      error(string.format('%s: Target values should be in [1, %d], but values in range [%d, %d] were found.', NAME,
        self.n_classes, lo, hi), 2)
    end
  end
  local short = self.shortlist_size
  -- the head's column of each target: its own in the shortlist, else its cluster's
  local column = t:clone()
  local output = torch.zeros(n, { dtype = x.dtype, device = x.device })
  for i = 1, self.n_clusters do
    local low, high = self.cutoffs[i], self.cutoffs[i + 1]
    local in_cluster = t:gt(low):logical_and(t:le(high))
    local rows = in_cluster:nonzero():reshape(-1)
    if rows:numel() > 0 then
      column = column:masked_fill(in_cluster, short + i)
      local lp = F.log_softmax(self.tail[i](x:index_select(1, rows)), 2)
      local picked = lp:gather(2, (t:index_select(1, rows) - low):unsqueeze(2)):squeeze(2)
      output = output:index_add(1, rows, picked)
    end
  end
  local head = F.log_softmax(self.head(x), 2)
  output = output + head:gather(2, column:unsqueeze(2)):squeeze(2)
  local loss = (-output):mean()
  if not batched then output = output:squeeze(1) end
  return { output = output, loss = loss, output, loss }
end

-- the log-probabilities of every class for rows x (N x in_features), given the head's output
local function full_log_prob(self, x, head_out)
  local head = F.log_softmax(head_out, 2)
  local parts = { head:narrow(2, 1, self.shortlist_size) }
  for i = 1, self.n_clusters do
    parts[#parts + 1] = F.log_softmax(self.tail[i](x), 2) + head:narrow(2, self.shortlist_size + i, 1)
  end
  return torch.cat(parts, 2)
end

local function check_rows(self, x, op)
  check_input(self, x, 'input', 3)
  if x:dim() ~= 2 then error(string.format('%s.%s: expected a 2-D input (N x %d), got %d-D', NAME, op, self.in_features, x:dim()), 3) end
end

--- log_prob(input) -> N x n_classes: the log-probability of every class for each row of input
function ASM:log_prob(x)
  check_rows(self, x, 'log_prob')
  return full_log_prob(self, x, self.head(x))
end

--- predict(input) -> N int64: the most likely class (1-based) of each row, computing the clusters'
-- probabilities only for the rows whose head prefers a cluster (as PyTorch's)
function ASM:predict(x)
  check_rows(self, x, 'predict')
  local head_out = self.head(x)
  local out = torch.argmax(head_out, 2)
  local far = out:gt(self.shortlist_size)
  local rows = far:nonzero():reshape(-1)
  if rows:numel() == 0 then return out end
  local best = torch.argmax(full_log_prob(self, x:index_select(1, rows), head_out:index_select(1, rows)), 2)
  return out:index_copy(1, rows, best)
end

function ASM:extra_repr() return '' end

return M
