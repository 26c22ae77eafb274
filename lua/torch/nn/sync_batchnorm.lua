-- nn.SyncBatchNorm: batch normalisation whose training statistics are those of the global batch
-- across the ranks of torch.distributed's group (PyTorch's torch.nn.SyncBatchNorm and its
-- sync_batch_norm Function, over the 'mpi' backend here and on CPU tensors too).
--
-- Forward: each rank computes its per-channel count, mean and biased variance, all-gathers them
-- (counts may differ between ranks, a rank's batch may even be empty), and combines them into the
-- global mean and variance, which normalise its rows and update the running statistics (the
-- unbiased variance over the global count), the same on every rank. Backward: sum(dy) and
-- sum(dy * (x - mean)) are all-reduced, so that grad_input is what one process gets on the whole
-- batch; grad of weight and bias stay the rank's own contribution (DDP averages them, as PyTorch).
-- In eval mode, or without an initialised process group of more than one rank, it is BatchNorm.
local torch = require 'torch'
local F = require 'torch.nn.functional'
local class = require 'torch.class'
local norm = require 'torch.nn.normalization'

local M = {}
local BatchNorm = norm._BatchNorm

-- x (N, C, ...) as (C, N * ...), and the shape that broadcasts a per-channel vector over x
local function by_channel(x) return x:transpose(1, 2):reshape(x.shape[2], -1) end
local function channel_view(v, x)
  local s = { 1, x.shape[2] }
  for d = 3, x:dim() do s[d] = 1 end
  return v:view(s)
end

local function shape_str(t) return '[' .. table.concat(t.shape, ', ') .. ']' end

-- weight, bias and the running statistics hold one value per channel (batch_norm's message)
local function check_channels(x, params)
  local C = x.shape[2]
  for _, p in ipairs(params) do
    local t = p[2]
    if t ~= nil and (t:dim() ~= 1 or t.shape[1] ~= C) then
      error(string.format('batch_norm: expected %s of shape [%d] (one value per channel), got %s', p[1], C,
        shape_str(t)), 4)
    end
  end
end

-- ---- the primitives of the synchronised statistics ----
-- PyTorch's torch.batch_norm_stats, batch_norm_elemt, batch_norm_gather_stats(_with_counts),
-- batch_norm_backward_reduce, batch_norm_backward_elemt and batch_norm_update_stats (CUDA kernels
-- there, composed ops on every device here): SyncFn below is made of them. x is N x C x ...; the
-- per-channel statistics are vectors of C; invstd is 1 / sqrt(biased variance + eps).

-- x's per-channel mean and invstd
local function stats(x, eps)
  local xc = by_channel(x)
  local mean = xc:mean(2)
  return mean, (xc:var(2, false, { unbiased = false }) + eps):rsqrt()
end

-- (x - mean) invstd weight + bias, per channel
local function elemt(x, weight, bias, mean, invstd)
  local y = (x - channel_view(mean, x)) * channel_view(invstd, x)
  if weight ~= nil then y = y * channel_view(weight, x) end
  if bias ~= nil then y = y + channel_view(bias, x) end
  return y
end

-- the global mean and invstd from the ranks' (W x C) means and invstds and their W counts (a rank
-- with invstd 0 holds no rows); the running statistics take the global mean and unbiased variance
local function gather_stats(means, invstds, running_mean, running_var, momentum, eps, counts)
  local cnt = counts:to(means.dtype):view(-1, 1)
  local n = cnt:sum()
  local vars = (invstds ^ -2 - eps):masked_fill(invstds:eq(0), 0)
  local mean = (means * cnt):sum(1) / n
  local m2 = ((vars + (means - mean) ^ 2) * cnt):sum(1) -- n times the global biased variance
  torch.no_grad(function()
    if running_mean ~= nil then running_mean:mul_(1 - momentum):add_(mean * momentum) end
    if running_var ~= nil then running_var:mul_(1 - momentum):add_(m2 / (n - 1) * momentum) end
  end)
  return mean, (m2 / n + eps):rsqrt()
end

-- sum(dy) and sum(dy (x - mean)) per channel (when input_g), weight's gradient sum(dy (x - mean))
-- invstd (when weight_g) and bias's sum(dy) (when bias_g)
local function backward_reduce(dy, x, mean, invstd, input_g, weight_g, bias_g)
  local C = x.shape[2]
  local dyc = by_channel(dy)
  local sum_dy, sum_dy_xmu = dyc:sum(2), (dyc * (by_channel(x) - mean:view(C, 1))):sum(2)
  return input_g and sum_dy or nil, input_g and sum_dy_xmu or nil, weight_g and sum_dy_xmu * invstd or nil,
    bias_g and sum_dy:clone() or nil
end

-- the input's gradient from the sums over all n = sum(count) rows
local function backward_elemt(dy, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count)
  local n = torch.is_tensor(count) and count:sum():item() or count
  local scale = weight ~= nil and invstd * weight or invstd
  return (dy - channel_view(sum_dy / n, x) - (x - channel_view(mean, x)) * channel_view(invstd ^ 2 * (sum_dy_xmu / n), x))
    * channel_view(scale, x)
end

-- PyTorch's torch.nn.modules._functions.SyncBatchNorm
local SyncFn = torch.autograd.Function:extend('SyncBatchNormBackward')
SyncFn.once_differentiable = true -- its backward is not made of recorded ops

-- forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, world_size, process_group)
function SyncFn.forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, world, group)
  local dist = torch.distributed
  local C = x.shape[2]
  local f = { dtype = x.dtype, device = x.device }
  -- this rank's (mean, invstd, count) per channel: 2C + 1 values; an empty batch sends zeros, which
  -- weigh nothing in gather_stats but take part in the collective
  local mine
  if x:numel() > 0 then
    local mean, invstd = stats(x, eps)
    mine = torch.cat({ mean, invstd, torch.full({ 1 }, x:numel() // C, f) })
  else
    mine = torch.zeros(2 * C + 1, f)
  end
  local list = {}
  for r = 1, world do list[r] = torch.empty_like(mine) end
  dist.all_gather(list, mine, group)
  local all = torch.stack(list) -- (world, 2C + 1)
  local counts = all:narrow(2, 2 * C + 1, 1):reshape(-1)
  local mean, invstd = gather_stats(all:narrow(2, 1, C), all:narrow(2, C + 1, C), running_mean, running_var, momentum,
    eps, counts)
  ctx:save_for_backward(x, weight, mean, invstd, counts)
  ctx.group = group
  if x:numel() == 0 then return torch.empty_like(x) end
  return elemt(x, weight, bias, mean, invstd)
end

function SyncFn.backward(ctx, dy)
  local dist = torch.distributed
  local x, weight, mean, invstd, counts = table.unpack(ctx.saved_tensors)
  local need_x, need_w, need_b = table.unpack(ctx.needs_input_grad, 1, 3)
  local C = x.shape[2]
  if x:numel() == 0 then
    -- an empty batch still takes part in the all-reduce the other ranks make
    if need_x then
      dist.all_reduce(torch.zeros(2 * C, { dtype = x.dtype, device = x.device }), dist.ReduceOp.SUM, ctx.group)
    end
    local z = torch.zeros(C, { dtype = x.dtype, device = x.device })
    return need_x and torch.zeros_like(x) or nil, need_w and z or nil, need_b and z:clone() or nil
  end
  -- this rank's part of weight's and bias's gradients
  local sum_dy, sum_dy_xmu, gw, gb = backward_reduce(dy, x, mean, invstd, need_x, need_w and weight ~= nil, need_b)
  local gx
  if need_x then
    local both = torch.cat({ sum_dy, sum_dy_xmu })
    dist.all_reduce(both, dist.ReduceOp.SUM, ctx.group)
    gx = backward_elemt(dy, x, mean, invstd, weight, both:narrow(1, 1, C), both:narrow(1, C + 1, C), counts)
  end
  return gx, gw, gb
end

-- ---- the primitives as PyTorch's torch.* ops, with their arguments checked (M._ops: torch.nn
-- copies this file's other names) ----
local ops = {}
M._ops = ops

local function check_input(op, x)
  if not torch.is_tensor(x) then error(op .. ': expected input to be a tensor, got ' .. type(x), 3) end
  if not x.dtype.is_floating_point then
    error(string.format('%s: expected a floating point input, got %s', op, tostring(x.dtype)), 3)
  end
  if x:dim() < 2 then error(string.format('%s: expected an input of at least 2 dimensions (N, C, ...), got %d-D', op, x:dim()), 3) end
  return x.shape[2]
end

-- each of `vs` ({name, tensor, optional}) a tensor of `shape` (nil: any shape)
local function check_vectors(op, vs, shape)
  for _, v in ipairs(vs) do
    local name, t, optional = v[1], v[2], v[3]
    if t ~= nil or not optional then
      if not torch.is_tensor(t) then
        error(string.format('%s: expected %s to be a tensor%s, got %s', op, name, optional and ' or nil' or '', type(t)), 3)
      end
      if shape and table.concat(t.shape, ',') ~= table.concat(shape, ',') then
        error(string.format('%s: expected %s of shape [%s], got %s', op, name, table.concat(shape, ', '), shape_str(t)), 3)
      end
    end
  end
end

local function check_number(op, name, v)
  if type(v) ~= 'number' then error(string.format('%s: expected %s to be a number, got %s', op, name, type(v)), 3) end
end

--- torch.batch_norm_stats(input, eps) -> mean, invstd (per channel)
function ops.batch_norm_stats(x, eps)
  check_input('batch_norm_stats', x)
  check_number('batch_norm_stats', 'eps', eps)
  return stats(x, eps)
end

--- torch.batch_norm_elemt(input, weight, bias, mean, invstd, eps) -> (input - mean) invstd weight + bias
function ops.batch_norm_elemt(x, weight, bias, mean, invstd, eps)
  local op = 'batch_norm_elemt'
  local C = check_input(op, x)
  check_vectors(op, { { 'weight', weight, true }, { 'bias', bias, true }, { 'mean', mean }, { 'invstd', invstd } }, { C })
  check_number(op, 'eps', eps)
  return elemt(x, weight, bias, mean, invstd)
end

--- torch.batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum,
-- eps, counts) -> the global mean and invstd of W ranks' statistics (mean and invstd W x C, counts
-- W rows each), the running statistics (when given) updated with them; input gives C
function ops.batch_norm_gather_stats_with_counts(x, means, invstds, running_mean, running_var, momentum, eps, counts)
  local op = 'batch_norm_gather_stats_with_counts'
  local C = check_input(op, x)
  check_vectors(op, { { 'mean', means }, { 'invstd', invstds } })
  check_vectors(op, { { 'counts', counts } })
  local W = counts:numel()
  check_vectors(op, { { 'mean', means }, { 'invstd', invstds } }, { W, C })
  check_vectors(op, { { 'running_mean', running_mean, true }, { 'running_var', running_var, true } }, { C })
  check_number(op, 'momentum', momentum)
  check_number(op, 'eps', eps)
  return gather_stats(means, invstds, running_mean, running_var, momentum, eps, counts)
end

--- torch.batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
-- batch_norm_gather_stats_with_counts with every rank's count the integer count
function ops.batch_norm_gather_stats(x, means, invstds, running_mean, running_var, momentum, eps, count)
  local op = 'batch_norm_gather_stats'
  check_input(op, x)
  check_vectors(op, { { 'mean', means } })
  local n = require('torch.composite').as_int(count)
  if math.type(n) ~= 'integer' then error(op .. ': expected count to be an integer, got ' .. tostring(count), 2) end
  local counts = torch.full({ means:size(1) }, n, { dtype = means.dtype, device = means.device })
  return ops.batch_norm_gather_stats_with_counts(x, means, invstds, running_mean, running_var, momentum, eps, counts)
end

--- torch.batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g)
-- -> sum_dy, sum_dy_xmu (when input_g), grad_weight (when weight_g), grad_bias (when bias_g); nil
-- for those not asked for
function ops.batch_norm_backward_reduce(dy, x, mean, invstd, weight, input_g, weight_g, bias_g)
  local op = 'batch_norm_backward_reduce'
  local C = check_input(op, x)
  check_vectors(op, { { 'grad_out', dy } }, x.shape)
  check_vectors(op, { { 'mean', mean }, { 'invstd', invstd }, { 'weight', weight, true } }, { C })
  for _, f in ipairs { { 'input_g', input_g }, { 'weight_g', weight_g }, { 'bias_g', bias_g } } do
    if type(f[2]) ~= 'boolean' then error(string.format('%s: expected %s to be a boolean, got %s', op, f[1], type(f[2])), 2) end
  end
  return backward_reduce(dy, x, mean, invstd, input_g, weight_g, bias_g)
end

--- torch.batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count)
-- -> grad_input, the sums being over all ranks' rows, sum(count) of them (count: each rank's)
function ops.batch_norm_backward_elemt(dy, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count)
  local op = 'batch_norm_backward_elemt'
  local C = check_input(op, x)
  check_vectors(op, { { 'grad_out', dy } }, x.shape)
  check_vectors(op, { { 'mean', mean }, { 'invstd', invstd }, { 'weight', weight, true }, { 'sum_dy', sum_dy },
    { 'sum_dy_xmu', sum_dy_xmu } }, { C })
  check_vectors(op, { { 'count', count } })
  return backward_elemt(dy, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count)
end

--- torch.batch_norm_update_stats(input, running_mean, running_var, momentum) -> the batch's mean and
-- biased variance per channel, the running statistics (when given) updated with the mean and the
-- unbiased variance
function ops.batch_norm_update_stats(x, running_mean, running_var, momentum)
  local op = 'batch_norm_update_stats'
  local C = check_input(op, x)
  check_vectors(op, { { 'running_mean', running_mean, true }, { 'running_var', running_var, true } }, { C })
  check_number(op, 'momentum', momentum)
  local xc = by_channel(x)
  local n = xc:size(2)
  local mean, var = xc:mean(2), xc:var(2, false, { unbiased = false })
  torch.no_grad(function()
    if running_mean ~= nil then running_mean:mul_(1 - momentum):add_(mean * momentum) end
    if running_var ~= nil then running_var:mul_(1 - momentum):add_(var * (momentum * n / (n - 1))) end
  end)
  return mean, var
end

-- nn.SyncBatchNorm(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true,
-- process_group, device, dtype}); process_group: the ranks whose statistics are combined (a group of
-- torch.distributed.new_group; nil or group.WORLD: every rank)
local SyncBatchNorm = BatchNorm:extend('SyncBatchNorm')
M.SyncBatchNorm = SyncBatchNorm

local function check_group(pg, level)
  if pg ~= nil and getmetatable(pg) ~= torch.distributed.ProcessGroup then
    error('SyncBatchNorm: process_group must be nil or a torch.distributed ProcessGroup (group.WORLD or one of '
      .. 'new_group), got ' .. tostring(pg), level + 1)
  end
end

function SyncBatchNorm:init(num_features, o)
  o = o or {}
  check_group(o.process_group, 3)
  BatchNorm.init(self, num_features, o)
  self.process_group = o.process_group
end

function SyncBatchNorm:_check_input_dim(x)
  if not torch.is_tensor(x) then error('SyncBatchNorm: expected a tensor, got ' .. type(x), 3) end
  if x:dim() < 2 then
    error(string.format('SyncBatchNorm: expected at least 2D input (got %dD input)', x:dim()), 3)
  end
end

function SyncBatchNorm:forward(x)
  self:_check_input_dim(x)
  if x.shape[2] == 0 then error('SyncBatchNorm number of input channels should be non-zero', 2) end
  local running_mean, running_var, bn_training, factor = self:_prepare_stats()
  -- statistics are synchronised while training only, and over a group of more than one rank
  local dist = torch.distributed
  local world = 1
  -- (a rank not in the group: -1, as PyTorch's, which then normalises by its own batch)
  if bn_training and self.training and dist.is_initialized() then world = dist.get_world_size(self.process_group) end
  if world <= 1 then
    return F.batch_norm(x, running_mean, running_var, self.weight, self.bias,
      { training = bn_training, momentum = factor, eps = self.eps })
  end
  check_channels(x, { { 'weight', self.weight }, { 'bias', self.bias }, { 'running_mean', running_mean },
    { 'running_var', running_var } })
  return SyncFn.apply(x, self.weight, self.bias, running_mean, running_var, self.eps, factor, world, self.process_group)
end

-- the modules convert_sync_batchnorm replaces: BatchNorm1d/2d/3d and SyncBatchNorm (PyTorch's
-- _BatchNorm), not InstanceNorm (which extends BatchNorm here, but not in PyTorch)
local function is_batchnorm(m)
  return class.isinstance(m, BatchNorm) and not class.isinstance(m, norm._InstanceNorm)
end

-- SyncBatchNorm.convert_sync_batchnorm(module, {process_group}) -> module: every BatchNorm in the tree
-- becomes a SyncBatchNorm that shares its parameters and buffers and keeps its training flag; a
-- BatchNorm given as the module itself is returned replaced
function SyncBatchNorm.convert_sync_batchnorm(module, o)
  o = o or {}
  if type(o) ~= 'table' then error('convert_sync_batchnorm: expected an options table, got ' .. type(o), 2) end
  check_group(o.process_group, 2)
  local out = module
  if is_batchnorm(module) then
    local momentum = module.momentum
    if momentum == nil then momentum = false end -- PyTorch's None
    out = SyncBatchNorm(module.num_features, { eps = module.eps, momentum = momentum, affine = module.affine,
      track_running_stats = module.track_running_stats, process_group = o.process_group })
    if module.affine then
      out.weight = module.weight
      out.bias = module.bias
    end
    out.running_mean = module.running_mean
    out.running_var = module.running_var
    out.num_batches_tracked = module.num_batches_tracked
    out.training = module.training
  end
  for name, child in module:named_children() do
    out:add_module(name, SyncBatchNorm.convert_sync_batchnorm(child, o))
  end
  return out
end

return M
