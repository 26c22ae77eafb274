-- DataParallel over the virtual CPU devices: a training step of the Fashion-MNIST MLP
-- (784-512-256-10, SGD momentum, batch 256) on one device with one kernel thread, on one device with
-- every thread, and with DataParallel over cpu:0..cpu:N-1 (N = the cores, at least 2).
-- bench/torch_data_parallel.py times the same step in PyTorch.
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

local function time(name, f)
  local med, lo, hi = B.time(f, B.calibrate(f, 0.5), 7)
  B.result(name, med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
  return med
end

torch.set_num_threads(1)
local m1 = mlp()
local t1 = time('lutorch_dp_mlp_step_one_core', stepper(m1, m1:parameters()))
torch.set_num_threads(cores)
local m2 = mlp()
local t2 = time('lutorch_dp_mlp_step_all_cores', stepper(m2, m2:parameters()))
local dp = nn.DataParallel(mlp())
local t3 = time('lutorch_dp_mlp_step_data_parallel', stepper(dp, dp:parameters()))
B.result('lutorch_dp_speedup_vs_one_core', t1 / t3, 'x')
B.result('lutorch_dp_speedup_vs_all_cores', t2 / t3, 'x')
