-- Run by spec/nn_sync_batchnorm_spec.lua under mpirun: each rank takes its slice of a fixed global
-- batch (arg[2]: the slices' sizes, "3,4"; one per rank, 0 allowed) and runs nn.SyncBatchNorm on it,
-- in float64, for inputs of 2 to 5 dimensions. Writes "RESULT <tag>_<name> <values>" lines (the
-- tensors flattened, %.17g) to arg[1]/rank<r>.txt: the output and grad_input rows of its slice,
-- weight.grad and bias.grad, the running statistics after the step, the eval-mode output, and the
-- gradients DDP averages.
local torch = require 'torch'
local nn, dist = torch.nn, torch.distributed
local sizes = {}
for n in (arg[2] or ''):gmatch('%d+') do sizes[#sizes + 1] = tonumber(n) end

dist.init_process_group { backend = 'mpi', timeout = 20 }
local rank, world = dist.get_rank(), dist.get_world_size()
assert(#sizes == world, 'dist_sync_bn.lua: ' .. #sizes .. ' slice sizes for ' .. world .. ' ranks')
local first, N = 1, 0
for r = 1, world do
  if r <= rank then first = first + sizes[r] end
  N = N + sizes[r]
end
local mine = sizes[rank + 1]

local out = {}
local function result(name, t)
  local vals = {}
  if torch.is_tensor(t) then
    for i, v in ipairs(t:reshape(-1):totable()) do vals[i] = string.format('%.17g', v) end
  else
    vals[1] = tostring(t)
  end
  out[#out + 1] = string.format('RESULT %s %s', name, table.concat(vals, ' '))
end

-- the global batch and the gradient of the loss wrt the output: the spec draws the same
local C = 3
for _, shape in ipairs { { C }, { C, 4 }, { C, 2, 3 }, { C, 2, 2, 2 } } do
  local tag = (#shape + 1) .. 'd'
  torch.manual_seed(#shape)
  local full = { N, table.unpack(shape) }
  local X = torch.randn(full, { dtype = torch.float64 }) * 2 + 0.5
  local G = torch.randn(full, { dtype = torch.float64 })
  local m = nn.SyncBatchNorm(C, { momentum = 0.3 }):double()
  torch.no_grad(function()
    m.weight:copy_(torch.tensor({ 1.5, -0.5, 0.75 }, { dtype = torch.float64 }))
    m.bias:copy_(torch.tensor({ 0.25, 0, -1 }, { dtype = torch.float64 }))
  end)
  local x = X:narrow(1, first, mine):clone():requires_grad_()
  local y = m(x)
  ;(y * G:narrow(1, first, mine)):sum():backward()
  result(tag .. '_out', y:detach())
  result(tag .. '_grad_input', x.grad)
  result(tag .. '_grad_weight', m.weight.grad)
  result(tag .. '_grad_bias', m.bias.grad)
  result(tag .. '_running_mean', m.running_mean)
  result(tag .. '_running_var', m.running_var)
  result(tag .. '_batches', m.num_batches_tracked:item())
  m:eval()
  result(tag .. '_eval_out', m(X:narrow(1, first, mine)))
end

-- under DDP, a bucket a parameter (the spec forces the buckets' overlap with backward, so that
-- SyncBatchNorm's all-reduces in backward meet buckets in flight): the averaged gradients after 20
-- backward passes from zero
torch.manual_seed(3)
local X = torch.randn({ N, C, 2, 2 }, { dtype = torch.float64 })
local model = nn.Sequential(nn.Conv2d(C, C, 1), nn.BatchNorm2d(C), nn.ReLU(), nn.Conv2d(C, 2, 1), nn.BatchNorm2d(2))
  :double()
local ddp = nn.DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(model), { bucket_cap_mb = 1e-6 })
for _ = 1, 20 do
  model:zero_grad()
  ddp(X:narrow(1, first, mine)):pow(2):sum():backward()
end
for i, p in ipairs(model:parameters()) do result('ddp_grad' .. i, p.grad) end

local f = assert(io.open(string.format('%s/rank%d.txt', arg[1], rank), 'w'))
f:write(table.concat(out, '\n'), '\n')
f:close()
dist.destroy_process_group()
