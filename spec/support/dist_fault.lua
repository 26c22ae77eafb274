-- Run by spec/distributed_spec.lua under mpirun (2 ranks): DDP training where rank 1 stops at step 5,
-- killed (arg[2] = 'kill') or hanging (arg[2] = 'hang'). Rank 0 must fail with an error within the
-- group's timeout (5 s) instead of hanging; it prints "STEP <n>" as it goes.
local torch = require 'torch'
local nn, dist = torch.nn, torch.distributed
local mode = arg[2] or 'hang' -- arg[1]: the spec's result folder (unused)

dist.init_process_group { backend = 'mpi', timeout = 5 }
local rank = dist.get_rank()
torch.manual_seed(0)
local model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 2))
local ddp = nn.DistributedDataParallel(model)
local opt = torch.optim.SGD(model:parameters(), { lr = 0.1 })
for step = 1, 1000 do
  if rank == 1 and step == 5 then
    io.stdout:flush()
    if mode == 'kill' then os.execute('kill -9 $PPID') end
    os.execute('sleep 30')
  end
  opt:zero_grad()
  ddp(torch.randn(4, 10)):pow(2):mean():backward()
  opt:step()
  if rank == 0 then
    print('STEP ' .. step)
    io.stdout:flush()
  end
end
