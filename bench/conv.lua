-- Convolution timings (ms), the lutorch side of bench/torch_conv.py: Conv2d(32 -> 64, 3x3,
-- padding 1) on a 64x32x14x14 batch (the second convolution of the Fashion-MNIST demo CNN, and
-- bench/train.lua's conv_fwd_bwd), Conv2d(1 -> 32, 3x3, padding 1) on 64x1x28x28 (the first; its
-- input needs no gradient, as the data's does not), each forward alone (no grad) and forward +
-- backward, and one SGD step of the whole demo CNN at batch 64.
-- Run: build/lutorch bench/conv.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local nn, F, optim = torch.nn, torch.F, torch.optim

torch.manual_seed(0)

local function fwd_case(conv, x)
  return function(n)
    local _ <close> = torch.no_grad()
    for _ = 1, n do conv(x) end
  end
end

local function fwd_bwd_case(conv, x)
  return function(n)
    for _ = 1, n do
      conv:zero_grad()
      x.grad = nil
      conv(x):sum():backward()
    end
  end
end

local conv2 = nn.Conv2d(32, 64, 3, { padding = 1 })
local x2 = torch.randn(64, 32, 14, 14, { requires_grad = true })
local conv1 = nn.Conv2d(1, 32, 3, { padding = 1 })
local x1 = torch.randn(64, 1, 28, 28)

local model = nn.Sequential(nn.Conv2d(1, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
  nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
local opt = optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
local xb = torch.rand(64, 1, 28, 28)
local yb = torch.randint(1, 11, { 64 })
local function cnn_step(n)
  for _ = 1, n do
    local loss = F.cross_entropy(model(xb), yb)
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
end

local only = arg and arg[1]
for _, case in ipairs {
  { 'conv2_fwd', fwd_case(conv2, x2), 20 }, { 'conv2_fwd_bwd', fwd_bwd_case(conv2, x2), 10 },
  { 'conv1_fwd', fwd_case(conv1, x1), 20 }, { 'conv1_fwd_bwd', fwd_bwd_case(conv1, x1), 10 },
  { 'cnn_step', cnn_step, 10 },
} do
  if not only or case[1]:find(only, 1, true) then
    local med, lo, hi = B.time(case[2], case[3], 5)
    B.result('lutorch_' .. case[1], med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
  end
end
