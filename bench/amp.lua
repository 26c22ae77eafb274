-- bfloat16 autocast against float32: one training step of the MLP 784-512-256-10 (ReLU,
-- cross-entropy, SGD lr 0.05 momentum 0.9) at batch 64 on random data, plain float32, under CPU
-- autocast (bfloat16), and under autocast with a GradScaler (the full AMP recipe); the ratio
-- float32 / bfloat16 (above 1: AMP is faster). The lutorch side of bench/torch_amp.py (ms).
-- Run: build/lutorch bench/amp.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local nn, F, optim = torch.nn, torch.F, torch.optim

torch.manual_seed(0)
local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
local x = torch.rand(64, 784)
local y = torch.randint(1, 11, { 64 })
local scaler = torch.amp.GradScaler { device = 'cpu' }
local ITERS = tonumber(os.getenv('AMP_BENCH_ITERS')) or 100 -- fewer for a smoke run

local function fp32_step(n)
  for _ = 1, n do
    local loss = F.cross_entropy(model(x), y)
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
end

local function bf16_step(n)
  for _ = 1, n do
    local loss
    do
      local ac <close> = torch.autocast('cpu')
      loss = F.cross_entropy(model(x), y)
    end
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
end

local function amp_step(n)
  for _ = 1, n do
    local loss
    do
      local ac <close> = torch.autocast('cpu')
      loss = F.cross_entropy(model(x), y)
    end
    opt:zero_grad()
    scaler:scale(loss):backward()
    scaler:step(opt)
    scaler:update()
  end
end

local t = {}
for _, case in ipairs { { 'mlp_step_fp32', fp32_step }, { 'mlp_step_bf16_autocast', bf16_step },
  { 'mlp_step_bf16_amp', amp_step } } do
  local med, lo, hi = B.time(case[2], ITERS, 5)
  t[case[1]] = med
  B.result('lutorch_' .. case[1], med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
end
B.result('lutorch_mlp_bf16_autocast_speedup', t.mlp_step_fp32 / t.mlp_step_bf16_autocast, 'x')
B.result('lutorch_mlp_bf16_amp_speedup', t.mlp_step_fp32 / t.mlp_step_bf16_amp, 'x')
