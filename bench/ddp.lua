-- DistributedDataParallel throughput: the Fashion-MNIST MLP (784-512-256-10, SGD momentum) at batch
-- 128 per rank, 2 ranks with one core each under mpirun against 1 process on one core without DDP,
-- and the time spent in communication (in the collectives, and what backward waited for them).
-- Run: build/lutorch bench/ddp.lua [--steps 200] [--rounds 3]   (it starts the mpirun jobs itself; the worker
-- mode, `bench/ddp.lua --worker`, is what they run)
local torch = require 'torch'
local nn, F = torch.nn, torch.nn.functional
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local B = require 'lib'

local opts = { steps = 200, worker = false, ddp = 1, rounds = 3 }
local i = 1
while i <= #arg do
  if arg[i] == '--worker' then
    opts.worker = true
    i = i + 1
  elseif arg[i] == '--steps' or arg[i] == '--ddp' or arg[i] == '--rounds' then
    opts[arg[i]:sub(3)] = math.tointeger(tonumber(arg[i + 1]))
    i = i + 2
  else
    io.stderr:write('usage: ddp.lua [--steps N] [--rounds N]\n')
    os.exit(2)
  end
end

local BATCH = 128

if opts.worker then
  local dist = torch.distributed
  dist.init_process_group { backend = 'mpi', timeout = 120 }
  local rank, world = dist.get_rank(), dist.get_world_size()
  torch.set_num_threads(1)
  torch.manual_seed(rank)
  local X, Y = torch.randn(BATCH * 8, 784), torch.randint(1, 11, { BATCH * 8 })
  torch.manual_seed(0)
  local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
  local run = opts.ddp == 1 and nn.DistributedDataParallel(model) or model
  local opt = torch.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
  local function steps(n, from)
    for s = from, from + n - 1 do
      local k = (s % 8) * BATCH + 1
      opt:zero_grad()
      F.cross_entropy(run(X:narrow(1, k, BATCH)), Y:narrow(1, k, BATCH)):backward()
      opt:step()
    end
  end
  steps(10, 0) -- warm-up
  local c0 = opts.ddp == 1 and run:comm_stats() or { comm_seconds = 0, wait_seconds = 0 }
  dist.barrier()
  local t0 = torch.utils.clock()
  steps(opts.steps, 10)
  local dt = torch.utils.clock() - t0
  local c1 = opts.ddp == 1 and run:comm_stats() or { comm_seconds = 0, wait_seconds = 0 }
  local t = torch.tensor({ dt, c1.comm_seconds - c0.comm_seconds, c1.wait_seconds - c0.wait_seconds },
    { dtype = torch.float64 })
  dist.all_reduce(t, dist.ReduceOp.MAX)
  local v = t:totable()
  if rank == 0 then
    print(string.format('WORKER samples_per_s=%.6g comm_ms_per_step=%.6g wait_ms_per_step=%.6g step_ms=%.6g',
      world * BATCH * opts.steps / v[1], v[2] * 1e3 / opts.steps, v[3] * 1e3 / opts.steps, v[1] * 1e3 / opts.steps))
  end
  dist.destroy_process_group()
  return
end

local BIN = os.getenv('LUTORCH_BIN') or (os.getenv('LUTORCH_BUILD') or 'build') .. '/lutorch'
local function job(np, ddp)
  local cmd = string.format('OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to core -np %d %s %s '
    .. '--worker --steps %d --ddp %d 2>&1', np, BIN, arg[0], opts.steps, ddp)
  local p = io.popen(cmd)
  local out = p:read('a')
  p:close()
  local r = {}
  for k, v in out:gmatch('(%w[%w_]*)=([%d%.e+-]+)') do r[k] = tonumber(v) end
  if not r.samples_per_s then error('bench/ddp.lua: the mpirun job failed:\n' .. out) end
  return r
end

-- the two jobs alternate, `rounds` times: the virtual machine's speed drifts by tens of percent
-- within minutes, and a pair run back to back sees about the same machine; the median pair's figures
local pairs_ = {}
for _ = 1, opts.rounds do
  local one = job(1, 0)
  local two = job(2, 1)
  pairs_[#pairs_ + 1] = { one = one, two = two, ratio = two.samples_per_s / one.samples_per_s }
end
table.sort(pairs_, function(a, b) return a.ratio < b.ratio end)
local mid = pairs_[(#pairs_ + 1) // 2]
local ratios = {}
for k, p in ipairs(pairs_) do ratios[k] = string.format('%.2f', p.ratio) end
B.result('ddp_mlp_b128_1rank_1core', mid.one.samples_per_s, 'samples/s', 'threads=1')
B.result('ddp_mlp_b128_2ranks_1core_each', mid.two.samples_per_s, 'samples/s', 'threads=1')
B.result('ddp_mlp_b128_speedup_2ranks', mid.ratio, 'x', 'rounds=' .. table.concat(ratios, ','))
B.result('ddp_mlp_b128_comm_per_step', mid.two.comm_ms_per_step, 'ms', string.format('step_ms=%.3f', mid.two.step_ms))
B.result('ddp_mlp_b128_comm_exposed_per_step', mid.two.wait_ms_per_step, 'ms')
