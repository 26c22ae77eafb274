-- DataParallel over the virtual CPU devices: a training step of the Fashion-MNIST MLP
-- (784-512-256-10, SGD momentum, batch 256) on one device with one kernel thread, on one device with
-- every thread, and with DataParallel over cpu:0..cpu:N-1 (N = the cores, at least 2).
-- bench/torch_data_parallel.py times the same step in PyTorch. LUTORCH_BENCH_ROUNDS: the rounds (7).
local torch = require 'torch'
local B = require 'bench.lib'
local nn, F = torch.nn, torch.nn.functional

local cores = torch.get_num_threads()
if torch.cpu.device_count() == 1 then torch.cpu.set_device_count(math.max(2, cores)) end

local function mlp()
  torch.manual_seed(1)
  return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
end

torch.manual_seed(0)
local x = torch.rand(256, 784)
local y = torch.randint(1, 11, { 256 })

local function stepper(model, params)
  local opt = torch.optim.SGD(params, { lr = 0.01, momentum = 0.9 })
  return function(n)
    for _ = 1, n do
      opt:zero_grad()
      F.cross_entropy(model(x), y):backward()
      opt:step()
    end
  end
end

-- The three configurations take turns, `ROUNDS` times, each timed for about 0.3 s a turn: the
-- virtual machine's speed drifts within seconds (a phase where two threads run 30% slower), and
-- the ratios are taken within a round, where all three saw about the same machine. Each figure is
-- the median over the rounds; each ratio the median of the rounds' ratios.
local ROUNDS = tonumber(os.getenv('LUTORCH_BENCH_ROUNDS') or '') or 7

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[(#s + 1) // 2]
end

local m1, m2, dp = mlp(), mlp(), nn.DataParallel(mlp())
local configs = {
  { name = 'one_core', threads = 1, step = stepper(m1, m1:parameters()) },
  { name = 'all_cores', threads = cores, step = stepper(m2, m2:parameters()) },
  { name = 'data_parallel', threads = cores, step = stepper(dp, dp:parameters()) },
}
for _, c in ipairs(configs) do
  torch.set_num_threads(c.threads)
  c.iters = B.calibrate(c.step, 0.3)
  c.times = {}
end
local vs_one, vs_all = {}, {}
for r = 1, ROUNDS do
  for _, c in ipairs(configs) do
    torch.set_num_threads(c.threads)
    c.times[r] = B.time(c.step, c.iters, 1)
  end
  vs_one[r] = configs[1].times[r] / configs[3].times[r]
  vs_all[r] = configs[2].times[r] / configs[3].times[r]
end
for _, c in ipairs(configs) do
  local lo, hi = math.huge, 0
  for _, t in ipairs(c.times) do lo, hi = math.min(lo, t), math.max(hi, t) end
  B.result('lutorch_dp_mlp_step_' .. c.name, median(c.times) * 1e3, 'ms',
    string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
end
local function list(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = string.format('%.2f', v) end
  return table.concat(s, ',')
end
B.result('lutorch_dp_speedup_vs_one_core', median(vs_one), 'x', 'rounds=' .. list(vs_one))
B.result('lutorch_dp_speedup_vs_all_cores', median(vs_all), 'x', 'rounds=' .. list(vs_all))
