-- One training step of the MLP 784-512-256-10 at batch 64 and a Conv2d(32 -> 64, 3x3, padding 1)
-- forward + backward on a 64x32x14x14 batch: the lutorch side of bench/torch_train.py (ms).
-- Run: build/lutorch bench/train.lua [--tag SUFFIX] (appended to the result names, as
-- bench/torch_train.py's --tag)
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local nn, F, optim = torch.nn, torch.F, torch.optim
local tag = arg[1] == '--tag' and arg[2] or ''

torch.manual_seed(0)
local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
local x = torch.rand(64, 784)
local y = torch.randint(1, 11, { 64 })

local function mlp_step(n)
  for _ = 1, n do
    local loss = F.cross_entropy(model(x), y)
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
end

local conv = nn.Conv2d(32, 64, 3, { padding = 1 })
local xc = torch.randn(64, 32, 14, 14, { requires_grad = true })
local function conv_step(n)
  for _ = 1, n do
    conv:zero_grad()
    xc.grad = nil
    conv(xc):sum():backward()
  end
end

for _, case in ipairs { { 'mlp_step', mlp_step, 200 }, { 'conv_fwd_bwd', conv_step, 10 } } do
  local med, lo, hi = B.time(case[2], case[3], 5)
  B.result('lutorch_' .. case[1] .. tag, med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
end
