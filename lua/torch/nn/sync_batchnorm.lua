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

-- PyTorch's torch.nn.modules._functions.SyncBatchNorm
local SyncFn = torch.autograd.Function:extend('SyncBatchNormBackward')
SyncFn.once_differentiable = true -- its backward is not made of recorded ops

-- forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, world_size, process_group)
function SyncFn.forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, world, group)
  local dist = torch.distributed
  local C = x.shape[2]
  local f = { dtype = x.dtype, device = x.device }
  -- this rank's (mean, biased variance, count) per channel: 2C + 1 values; an empty batch sends
  -- zeros, which weigh nothing below but take part in the collective
  local mine
  if x:numel() > 0 then
    local xc = by_channel(x)
    local mean = xc:mean(2)
    local var = ((xc - mean:view(C, 1)) ^ 2):mean(2)
    mine = torch.cat({ mean, var, torch.full({ 1 }, x:numel() // C, f) })
  else
    mine = torch.zeros(2 * C + 1, f)
  end
  local list = {}
  for r = 1, world do list[r] = torch.empty_like(mine) end
  dist.all_gather(list, mine, group)
  local all = torch.stack(list) -- (world, 2C + 1)
  local means, vars, counts = all:narrow(2, 1, C), all:narrow(2, C + 1, C), all:narrow(2, 2 * C + 1, 1)
  -- the global statistics: n = sum n_r, mean = sum n_r m_r / n, var = sum n_r (v_r + (m_r - mean)^2) / n
  local n = counts:sum():item()
  local mean = (means * counts):sum(1) / n
  local var = ((vars + (means - mean) ^ 2) * counts):sum(1) / n
  if running_mean ~= nil then
    running_mean:mul_(1 - momentum):add_(mean * momentum)
  end
  if running_var ~= nil then
    running_var:mul_(1 - momentum):add_(var * (momentum * n / (n - 1)))
  end
  local invstd = (var + eps):rsqrt()
  ctx:save_for_backward(x, weight, mean, invstd)
  ctx.count = n
  ctx.group = group
  if x:numel() == 0 then return torch.empty_like(x) end
  local y = (x - channel_view(mean, x)) * channel_view(invstd, x)
  if weight ~= nil then y = y * channel_view(weight, x) end
  if bias ~= nil then y = y + channel_view(bias, x) end
  return y
end

function SyncFn.backward(ctx, dy)
  local dist = torch.distributed
  local x, weight, mean, invstd = table.unpack(ctx.saved_tensors)
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
  local dyc, xmu = by_channel(dy), by_channel(x) - mean:view(C, 1)
  local sum_dy, sum_dy_xmu = dyc:sum(2), (dyc * xmu):sum(2)
  -- this rank's part of weight's and bias's gradients
  local gw = (need_w and weight ~= nil) and sum_dy_xmu * invstd or nil
  local gb = need_b and sum_dy:clone() or nil
  local gx
  if need_x then
    local both = torch.cat({ sum_dy, sum_dy_xmu })
    dist.all_reduce(both, dist.ReduceOp.SUM, ctx.group)
    local n = ctx.count
    local mean_dy, mean_dy_xmu = both:narrow(1, 1, C) / n, both:narrow(1, C + 1, C) / n
    local scale = weight ~= nil and invstd * weight or invstd
    gx = (dy - channel_view(mean_dy, x) - (x - channel_view(mean, x)) * channel_view(invstd ^ 2 * mean_dy_xmu, x))
      * channel_view(scale, x)
  end
  return gx, gw, gb
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
