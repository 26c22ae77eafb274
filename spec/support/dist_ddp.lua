-- Run by spec/distributed_spec.lua under mpirun (2 ranks): DDP against one process on the whole
-- batch, computed here too (every rank builds the reference model with rank 0's initial values).
-- Writes "RESULT <name> <value>" lines to arg[1]/rank<r>.txt for the spec to check. arg[2] is the
-- backend ('mpi' by default; 'nccl': the models and data on each rank's GPU), arg[3] the device
-- ('cuda' with 'mpi': the gradients staged through the host).
local torch = require 'torch'
local nn, dist = torch.nn, torch.distributed
local BACKEND = arg[2] or 'mpi'
local DEV = arg[3] or (BACKEND == 'nccl' and 'cuda' or 'cpu')
-- two CPU devices, for the module across devices below (before any tensor exists)
if torch.cpu.device_count() < 2 then torch.cpu.set_device_count(2) end

dist.init_process_group { backend = BACKEND, timeout = 20 }
local rank, world = dist.get_rank(), dist.get_world_size()
local out = {}
local function result(name, v) out[#out + 1] = string.format('RESULT %s %s', name, tostring(v)) end

local function make(seed)
  torch.manual_seed(seed)
  return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 6), nn.Tanh(), nn.Linear(6, 3)):to(DEV)
end

local function maxdiff(ma, mb, what)
  local pa, pb = ma:parameters(), mb:parameters()
  local m = 0
  for i = 1, #pa do
    local a, b = pa[i], pb[i]
    if what == 'grad' then a, b = a.grad, b.grad end
    if a == nil or b == nil then return math.huge end
    m = math.max(m, (a:double() - b:double()):abs():max():item())
  end
  return m
end

local function loss_of(model, x, y) return ((model(x) - y) ^ 2):mean() end

torch.manual_seed(100)
local N = 8
local xs, ys = {}, {}
for s = 1, 52 do xs[s], ys[s] = torch.randn(N, 5):to(DEV), torch.randn(N, 3):to(DEV) end
local half = N // world
local function part(t) return t:narrow(1, rank * half + 1, half) end

-- rank 1 starts from other values: the constructor broadcasts rank 0's
local function check_case(tag, opts)
  local ref = make(0)
  local local_model = make(rank == 0 and 0 or 7)
  local ddp = nn.DistributedDataParallel(local_model, opts)
  result(tag .. '_init_maxdiff', maxdiff(ref, local_model, 'param'))
  -- one step: the gradients
  loss_of(ddp, part(xs[1]), part(ys[1])):backward()
  loss_of(ref, xs[1], ys[1]):backward()
  result(tag .. '_grad_maxdiff', maxdiff(ref, local_model, 'grad'))
  -- 50 steps of SGD with momentum
  local o1 = torch.optim.SGD(local_model:parameters(), { lr = 0.05, momentum = 0.9 })
  local o2 = torch.optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 })
  for s = 2, 51 do
    o1:zero_grad(); o2:zero_grad()
    loss_of(ddp, part(xs[s]), part(ys[s])):backward()
    loss_of(ref, xs[s], ys[s]):backward()
    o1:step(); o2:step()
  end
  result(tag .. '_param_maxdiff_50', maxdiff(ref, local_model, 'param'))
  result(tag .. '_buckets', #ddp:comm_stats().buckets)
  result('overlap', ddp:comm_stats().overlap)
  -- no_sync: two local backward passes (the first inside no_sync), averaged once
  o1:zero_grad(); o2:zero_grad()
  do
    local _ <close> = ddp:no_sync()
    loss_of(ddp, part(xs[51]), part(ys[51])):backward()
  end
  result(tag .. '_nosync_local_differs', maxdiff(ref, local_model, 'grad') > 1e-6 or world == 1)
  loss_of(ddp, part(xs[52]), part(ys[52])):backward()
  loss_of(ref, xs[51], ys[51]):backward()
  loss_of(ref, xs[52], ys[52]):backward()
  result(tag .. '_nosync_grad_maxdiff', maxdiff(ref, local_model, 'grad'))
  -- the function form
  o1:zero_grad(); o2:zero_grad()
  ddp:no_sync(function() loss_of(ddp, part(xs[1]), part(ys[1])):backward() end)
  loss_of(ddp, part(xs[2]), part(ys[2])):backward()
  loss_of(ref, xs[1], ys[1]):backward()
  loss_of(ref, xs[2], ys[2]):backward()
  result(tag .. '_nosync_fn_grad_maxdiff', maxdiff(ref, local_model, 'grad'))
end

check_case('one_bucket', {})
check_case('many_buckets', { bucket_cap_mb = 0.00005 }) -- 52 bytes: one parameter a bucket

-- a parameter used twice (weight sharing): its two gradients arrive separately
do
  torch.manual_seed(3)
  local lin = nn.Linear(4, 4):to(DEV)
  local Twice = nn.Module:extend('Twice')
  function Twice:init(l) self.l = l end
  function Twice:forward(x) return self.l(torch.tanh(self.l(x))) end
  local m, ref = Twice(lin), nil
  torch.manual_seed(3)
  ref = Twice(nn.Linear(4, 4):to(DEV))
  local ddp = nn.DistributedDataParallel(m, { bucket_cap_mb = 0.00005 })
  torch.manual_seed(5)
  local x = torch.randn(N, 4):to(DEV)
  for _ = 1, 2 do
    m:zero_grad(); ref:zero_grad()
    ddp(part(x)):pow(2):mean():backward()
    ref(x):pow(2):mean():backward()
  end
  result('shared_grad_maxdiff', maxdiff(ref, m, 'grad'))
end

-- a module across two CPU devices: the engine runs each device's part of backward on its own
-- thread and delivers the gradients from both
if DEV == 'cpu' then
  local Two = nn.Module:extend('Two')
  function Two:init() self.a = nn.Linear(4, 5):to('cpu:0'); self.b = nn.Linear(5, 3):to('cpu:1') end
  function Two:forward(x) return self.b(torch.tanh(self.a(x:to('cpu:0'))):to('cpu:1')) end
  torch.manual_seed(0)
  local m = Two()
  torch.manual_seed(0)
  local ref = Two()
  local ddp = nn.DistributedDataParallel(m, { bucket_cap_mb = 0.00005 })
  torch.manual_seed(1)
  local x = torch.randn(N, 4)
  local worst = 0
  for _ = 1, 3 do
    m:zero_grad(); ref:zero_grad()
    ddp(part(x)):pow(2):mean():backward()
    ref(x):pow(2):mean():backward()
    worst = math.max(worst, maxdiff(ref, m, 'grad'))
  end
  result('two_devices_grad_maxdiff', worst)
end

-- an unused parameter: PyTorch's error at the next forward; with find_unused_parameters its .grad
-- stays nil
do
  local Unused = nn.Module:extend('Unused')
  function Unused:init() self.a = nn.Linear(3, 2); self.b = nn.Linear(3, 2) end
  function Unused:forward(x) return self.a(x) end
  torch.manual_seed(0)
  local ddp = nn.DistributedDataParallel(Unused():to(DEV))
  local x = torch.randn(4, 3):to(DEV)
  ddp(x):sum():backward()
  local ok, err = pcall(function() return ddp(x) end)
  result('unused_error', not ok and tostring(err):find('Expected to have finished reduction in the prior iteration', 1, true) ~= nil)
  result('unused_error_indices', tostring(err):match('rank %d+: ([%d ]+)') or tostring(err))
  local m = Unused():to(DEV)
  local ddp2 = nn.DistributedDataParallel(m, { find_unused_parameters = true })
  for _ = 1, 2 do ddp2(x):sum():backward() end
  result('find_unused_ok', m.b.weight.grad == nil and m.a.weight.grad ~= nil)
  -- b used on rank 0 only: the other ranks average zero gradients in, and every rank gets 1/world of
  -- rank 0's (its input is x + 1 on rank 0, so each rank computes that gradient here too)
  local SomeRanks = nn.Module:extend('SomeRanks')
  function SomeRanks:init() self.a = nn.Linear(3, 2); self.b = nn.Linear(3, 2) end
  function SomeRanks:forward(z) if rank == 0 then return self.a(z) + self.b(z) end return self.a(z) end
  local m3 = SomeRanks():to(DEV)
  local ddp3 = nn.DistributedDataParallel(m3, { find_unused_parameters = true })
  local want = nil
  for _ = 1, 2 do
    m3:zero_grad()
    ddp3(x + rank + 1):pow(2):sum():backward()
    local bw = m3.b.weight:detach():clone():requires_grad_()
    local F = nn.functional
    local z = x + 1
    (F.linear(z, m3.a.weight:detach(), m3.a.bias:detach()) + F.linear(z, bw, m3.b.bias:detach())):pow(2):sum():backward()
    want = bw.grad / world
  end
  result('used_on_one_rank_maxdiff', m3.b.weight.grad and (m3.b.weight.grad - want):abs():max():item() or 'nil')
end

-- PyTorch's example: Linear(3, 1) with x = 1 on rank 0 and x = 2 on rank 1: weight grad 1.5
do
  local lin = nn.Linear(3, 1):to(DEV)
  local ddp = nn.DistributedDataParallel(lin)
  ddp(torch.full({ 1, 3 }, rank + 1.0, { device = DEV })):sum():backward()
  local g = lin.weight.grad:totable()[1]
  result('linear_grad', string.format('%g %g %g', g[1], g[2], g[3]))
end

-- buffers: re-broadcast from rank 0 at every forward, or left per rank
do
  local WithBuf = nn.Module:extend('WithBuf')
  function WithBuf:init() self.l = nn.Linear(2, 2); self:register_buffer('b', torch.zeros(1)) end
  function WithBuf:forward(x) return self.l(x) end
  for _, bb in ipairs { true, false } do
    local m = WithBuf():to(DEV)
    local ddp = nn.DistributedDataParallel(m, { broadcast_buffers = bb })
    m.b:fill_(100 + rank)
    ddp(torch.ones(1, 2, { device = DEV })):sum():backward()
    result('buffer_after_forward_' .. tostring(bb), m.b:item())
  end
end

-- constructor errors
do
  local ok, err = pcall(nn.DistributedDataParallel, nn.Linear(2, 2), { device_ids = { 0 } })
  result('device_ids_cpu_error', not ok and tostring(err):find('DistributedDataParallel device_ids and output_device arguments only work', 1, true) ~= nil)
  local frozen = nn.Linear(2, 2)
  frozen:requires_grad_(false)
  ok, err = pcall(nn.DistributedDataParallel, frozen)
  result('no_grad_params_error', not ok and tostring(err):find("DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.", 1, true) ~= nil)
  ok, err = pcall(nn.DistributedDataParallel, nn.Linear(2, 2), { device_ids = { 0, 1 } })
  result('device_ids_two_error', not ok and tostring(err):find('device_ids can only be None or contain a single element.', 1, true) ~= nil)
  -- the ranks must wrap the same parameters
  ok, err = pcall(nn.DistributedDataParallel, nn.Linear(2, 2 + rank):to(DEV))
  result('mismatch_error', not ok and tostring(err):find('the ranks wrap modules with different parameters', 1, true) ~= nil)
  if BACKEND == 'nccl' then
    ok, err = pcall(nn.DistributedDataParallel, nn.Linear(2, 2))
    result('nccl_cpu_module_error', not ok and tostring(err):find('the NCCL backend needs the module on a CUDA device', 1, true) ~= nil)
    -- device_ids = {0} moves a CUDA module to that device
    local g = nn.Linear(2, 2):to(DEV)
    ok = pcall(nn.DistributedDataParallel, g, { device_ids = { 0 } })
    result('nccl_device_ids_ok', ok and g.weight.device.type == 'cuda')
  end
end

-- errors
result('double_init', select(2, pcall(dist.init_process_group, { backend = BACKEND })))

dist.destroy_process_group()
local f = assert(io.open(string.format('%s/rank%d.txt', arg[1] or '.', rank), 'w'))
f:write(table.concat(out, '\n'), '\n')
f:close()
