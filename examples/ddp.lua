-- DistributedDataParallel: the Fashion-MNIST MLP (784-512-256-10) trained by several processes, one
-- per rank, each on its share of every epoch (DistributedSampler), gradients averaged across ranks
-- during backward. Rank 0 logs and saves the checkpoint; the test accuracy is computed by every rank
-- on its share of the test set and summed with all_reduce.
-- Run: mpirun -np 2 build/lutorch examples/ddp.lua [--epochs 2] [--batch 64] [--limit N] [--out build/ddp]
-- (--limit N: only the first N batches of each epoch)
-- (as root add --allow-run-as-root; more ranks than cores: --oversubscribe). On several machines:
--   mpirun -np 8 --hostfile hosts build/lutorch examples/ddp.lua    (hosts: "node1 slots=4" lines)
local torch = require 'torch'
local nn, F, dist = torch.nn, torch.nn.functional, torch.distributed

local opts = { epochs = 2, batch = 64, limit = 0, out = 'build/ddp' }
for i = 1, #arg, 2 do
  local k = arg[i]:match('^%-%-(%w+)$')
  if not k or opts[k] == nil or arg[i + 1] == nil then
    io.stderr:write('usage: ddp.lua [--epochs N] [--batch N] [--limit N] [--out DIR]\n')
    os.exit(2)
  end
  opts[k] = k == 'out' and arg[i + 1] or math.tointeger(tonumber(arg[i + 1]))
end

dist.init_process_group { backend = 'mpi', timeout = 300 }
local rank, world = dist.get_rank(), dist.get_world_size()
local function log(fmt, ...) if rank == 0 then print(string.format(fmt, ...)); io.stdout:flush() end end
-- the ranks share the machine's cores
torch.set_num_threads(math.max(1, torch.get_num_threads() // world))
log('%d ranks, %d kernel threads each', world, torch.get_num_threads())

local datasets = torch.data.datasets
local train_ds, test_ds = datasets.FashionMNIST { train = true }, datasets.FashionMNIST { train = false }
local function flat(ds) return torch.data.TensorDataset(ds.data:float():div_(255):view(-1, 784), ds.targets) end
local train, test = flat(train_ds), flat(test_ds)

torch.manual_seed(rank) -- the ranks start differently: DDP broadcasts rank 0's parameters
local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local ddp = nn.DistributedDataParallel(model)
local opt = torch.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })

local sampler = torch.data.DistributedSampler(train, { seed = 0 })
local loader = torch.data.DataLoader(train, { batch_size = opts.batch, sampler = sampler })
local test_loader = torch.data.DataLoader(test, { batch_size = 1000,
  sampler = torch.data.DistributedSampler(test, { shuffle = false }) })

for epoch = 1, opts.epochs do
  sampler:set_epoch(epoch)
  local t0, seen, loss_sum, steps = torch.utils.clock(), 0, 0, 0
  ddp:train()
  for x, y in loader:iter() do
    opt:zero_grad()
    local loss = F.cross_entropy(ddp(x), y)
    loss:backward()
    opt:step()
    seen, steps, loss_sum = seen + x:size(1), steps + 1, loss_sum + loss:item()
    if steps == opts.limit then break end
  end
  local dt = torch.utils.clock() - t0
  -- every rank's mean loss and sample count, summed
  local stats = torch.tensor({ loss_sum / steps, seen }, { dtype = torch.float64 })
  dist.all_reduce(stats)
  -- accuracy over the whole test set: each rank counts its share (the padding repeats a few samples)
  ddp:eval()
  local correct, total = 0, 0
  torch.no_grad(function()
    for x, y in test_loader:iter() do
      correct = correct + ddp(x):argmax(2):eq(y):sum():item()
      total = total + y:size(1)
    end
  end)
  local counts = torch.tensor({ correct, total }, { dtype = torch.int64 })
  dist.all_reduce(counts)
  local st, ct = stats:totable(), counts:totable()
  log('epoch %d  loss %.4f  test accuracy %.4f  %.0f samples/s over %d ranks', epoch, st[1] / world, ct[1] / ct[2],
    st[2] / dt, world)
end

local cs = ddp:comm_stats()
log('communication: %.2f s in collectives, backward waited %.2f s for them (%d gradient buckets)', cs.comm_seconds,
  cs.wait_seconds, #cs.buckets)
if rank == 0 then
  os.execute('mkdir -p ' .. opts.out)
  local path = opts.out .. '/ddp_mlp.safetensors'
  torch.save(path, { model = model:state_dict(), epochs = opts.epochs, world_size = world })
  log('checkpoint: %s', path)
end
dist.barrier()
dist.destroy_process_group()
