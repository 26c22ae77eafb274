-- Volumetric timings (ms), the lutorch side of bench/torch_conv3d.py: Conv3d(8 -> 16, 3x3x3,
-- padding 1) on a 4x8x16x16x16 batch, forward alone (no grad) and forward + backward (input, weight
-- and bias gradients), and MaxPool3d(2) forward + backward on its 4x16x16x16x16 output.
-- Run: build/lutorch bench/conv3d.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local nn = torch.nn

torch.manual_seed(0)
local conv = nn.Conv3d(8, 16, 3, { padding = 1 })
local x = torch.randn(4, 8, 16, 16, 16, { requires_grad = true })
local pool = nn.MaxPool3d(2)
local xp = torch.randn(4, 16, 16, 16, 16, { requires_grad = true })

local function conv3d_fwd(n)
  local _ <close> = torch.no_grad()
  for _ = 1, n do conv(x) end
end

local function conv3d_fwd_bwd(n)
  for _ = 1, n do
    conv:zero_grad()
    x.grad = nil
    conv(x):sum():backward()
  end
end

local function max_pool3d_fwd_bwd(n)
  for _ = 1, n do
    xp.grad = nil
    pool(xp):sum():backward()
  end
end

local only = arg and arg[1]
for _, case in ipairs { { 'conv3d_fwd', conv3d_fwd, 20 }, { 'conv3d_fwd_bwd', conv3d_fwd_bwd, 10 },
  { 'max_pool3d_fwd_bwd', max_pool3d_fwd_bwd, 10 } } do
  if not only or case[1]:find(only, 1, true) then
    local med, lo, hi = B.time(case[2], case[3], 5)
    B.result('lutorch_' .. case[1], med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
  end
end
