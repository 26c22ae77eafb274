-- nn.DistributedDataParallel: one replica of the module per rank (torch.distributed), each on its
-- share of the batch; gradients averaged across ranks during backward, as PyTorch's DDP.
--
-- The constructor broadcasts rank 0's parameters and buffers. Each forward with grad mode on arms
-- the reducer (bindings/distributed.c): during the backward that follows, the autograd engine tells
-- it when each parameter's .grad is complete, and each bucket of gradients (reverse parameter
-- order, bucket_cap_mb each) is averaged across ranks on the reducer's thread while the rest of
-- backward runs; backward returns once the averages are in .grad. Inside ddp:no_sync() backward
-- only accumulates locally; the next synchronised backward averages the accumulated gradients.
-- buffers (batch norm statistics) are re-broadcast from rank 0 at every forward when
-- broadcast_buffers is on.
local torch = require 'torch'
local Module = require 'torch.nn.module'

local DDP = Module:extend('DistributedDataParallel')

local KNOWN = { device_ids = true, output_device = true, bucket_cap_mb = true, broadcast_buffers = true,
  find_unused_parameters = true, dim = true, gradient_as_bucket_view = true, static_graph = true,
  process_group = true }

-- nn.DistributedDataParallel(module, {device_ids, bucket_cap_mb = 25, broadcast_buffers = true,
-- find_unused_parameters = false, process_group}): process_group (torch.distributed.new_group; the
-- default group when nil) is the ranks the gradients are averaged over, its first rank's parameters
-- and buffers the ones broadcast; every rank of it wraps the module
function DDP:init(module, opts)
  local dist = torch.distributed
  if not Module.is_module(module) then
    error('DistributedDataParallel: expected an nn.Module to wrap, got ' .. type(module), 3)
  end
  opts = opts or {}
  if type(opts) ~= 'table' then error('DistributedDataParallel: expected an options table, got ' .. type(opts), 3) end
  for k in pairs(opts) do
    if not KNOWN[k] then error(string.format("DistributedDataParallel: unknown option '%s'", tostring(k)), 3) end
  end
  if not dist.is_initialized() then error('DistributedDataParallel: ' .. dist._NOT_INIT, 3) end
  local cg, pg = dist._group_of('DistributedDataParallel', opts.process_group, 2)
  if cg == false then
    error('DistributedDataParallel: this rank is not a member of process_group ' .. tostring(pg), 3)
  end
  local params = {}
  for _, p in ipairs(module:parameters()) do
    if p.requires_grad then params[#params + 1] = p end
  end
  if #params == 0 then
    error("DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.", 3)
  end
  local kind = params[1].device.type
  local ids = opts.device_ids
  if ids ~= nil then
    if type(ids) ~= 'table' then error('DistributedDataParallel: device_ids must be a table, got ' .. type(ids), 3) end
    if #ids > 1 then error('device_ids can only be None or contain a single element.', 3) end
    if #ids == 1 and kind == 'cpu' then
      error('DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device '
        .. 'GPU modules or CPU modules, but got device_ids ' .. tostring(ids[1]) .. ', output_device '
        .. tostring(opts.output_device) .. ', and module parameters on cpu.', 3)
    end
    if #ids == 1 then
      local dev = type(ids[1]) == 'number' and torch.device('cuda:' .. ids[1]) or torch.device(ids[1])
      module:to(dev)
    end
  end
  if dist.get_backend() == 'nccl' and params[1].device.type ~= 'cuda' then
    error('DistributedDataParallel: the NCCL backend needs the module on a CUDA device, but its parameters are on '
      .. tostring(params[1].device) .. ' (move it with :cuda() or pass device_ids)', 3)
  end
  local cap = opts.bucket_cap_mb or 25
  if type(cap) ~= 'number' or not (cap > 0) then
    error('DistributedDataParallel: bucket_cap_mb must be a positive number, got ' .. tostring(cap), 3)
  end
  self.module = module
  self.dim = opts.dim or 1
  self.broadcast_buffers = opts.broadcast_buffers ~= false
  self.find_unused_parameters = opts.find_unused_parameters == true
  self.bucket_cap_mb = cap
  self.require_backward_grad_sync = true
  -- every rank must wrap the same parameters: compare shapes, then take rank 0's values
  local shapes = {}
  for i, p in ipairs(params) do shapes[i] = tostring(p.dtype) .. table.concat(p:size(), 'x') end
  local sig = 0
  for _, c in utf8.codes(table.concat(shapes, ';')) do sig = (sig * 31 + c) % 2147483647 end
  local mine = torch.tensor({ sig, #params }, { dtype = torch.int64, device = params[1].device })
  local lo, hi = mine:clone(), mine:clone()
  dist.all_reduce(lo, dist.ReduceOp.MIN, pg)
  dist.all_reduce(hi, dist.ReduceOp.MAX, pg)
  if not torch.equal(lo, hi) then
    error('DistributedDataParallel: the ranks wrap modules with different parameters (count, shapes or dtypes)', 3)
  end
  local root = pg and pg.ranks[1] or 0 -- the group's first rank
  torch.no_grad(function()
    for _, p in ipairs(module:parameters()) do dist.broadcast(p, root, pg) end
    for _, b in ipairs(module:buffers()) do dist.broadcast(b, root, pg) end
  end)
  rawset(self, '_params', params)
  rawset(self, '_group', pg or false)
  rawset(self, '_root', root)
  rawset(self, '_reducer', torch._dist.reducer(params, math.floor(cap * 1024 * 1024), self.find_unused_parameters,
    cg))
end

function DDP:forward(...)
  local dist = torch.distributed
  local reducer = rawget(self, '_reducer')
  if torch.is_grad_enabled() and self.require_backward_grad_sync then
    reducer:prepare()
  else
    reducer:disarm()
  end
  if self.broadcast_buffers then
    local bufs = self.module:buffers()
    if #bufs > 0 then
      torch.no_grad(function()
        for _, b in ipairs(bufs) do dist.broadcast(b, rawget(self, '_root'), rawget(self, '_group') or nil) end
      end)
    end
  end
  return self.module(...)
end

local no_sync_mt = {
  __close = function(self) self.ddp.require_backward_grad_sync = self.prev end,
  __name = 'torch.nn.DistributedDataParallel.no_sync',
}

-- ddp:no_sync(): a to-be-closed value (local _ <close> = ddp:no_sync()) or ddp:no_sync(fn, ...)
-- running fn inside; backward passes inside only accumulate gradients locally
function DDP:no_sync(fn, ...)
  local prev = self.require_backward_grad_sync
  self.require_backward_grad_sync = false
  if fn == nil then return setmetatable({ ddp = self, prev = prev }, no_sync_mt) end
  local r = table.pack(pcall(fn, ...))
  self.require_backward_grad_sync = prev
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

-- {comm_seconds = time in collectives, wait_seconds = time backward waited for them at its end,
--  buckets = {{parameter indices}, ...}}
function DDP:comm_stats() return rawget(self, '_reducer'):stats() end

function DDP:extra_repr() return '' end

return { DistributedDataParallel = DDP }
