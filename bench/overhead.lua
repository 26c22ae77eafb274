-- Per-op cost from Lua: c = a + b and a:add_(b) on 16-element float32 tensors (ns per op), and a
-- Linear(16, 16) training step on one sample (opt:zero_grad(); model(x):sum():backward();
-- opt:step() with SGD lr 0.05 momentum 0.9), and a classifier's loss: F.cross_entropy of 256 rows
-- of 10 logits, forward and backward, as bench/torch_overhead.py does.
-- Run: build/lutorch bench/overhead.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'

local a, b = torch.rand(16), torch.rand(16)
local iters = 1000000
local function loop(n) for _ = 1, n do end end
local function add_out(n) for _ = 1, n do local c = a + b end end
local function add_inplace(n) for _ = 1, n do a:add_(b) end end
local model = torch.nn.Linear(16, 16)
local opt = torch.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
local inp = torch.rand(1, 16)
local function linear_step(n)
  for _ = 1, n do
    opt:zero_grad()
    model(inp):sum():backward()
    opt:step()
  end
end
local logits = torch.rand(256, 10):requires_grad_()
local labels = torch.randint(1, 11, { 256 })
local function cross_entropy(n)
  for _ = 1, n do torch.nn.functional.cross_entropy(logits, labels):backward() end
end
for _, case in ipairs { { 'lua_loop', loop, iters }, { 'add_out', add_out, iters }, { 'add_inplace', add_inplace, iters },
  { 'linear_step', linear_step, iters // 10 }, { 'cross_entropy', cross_entropy, iters // 50 } } do
  local med, lo, hi = B.time(case[2], case[3], 7)
  B.result('lutorch_overhead_' .. case[1], med * 1e9, 'ns/iter', string.format('min=%.0f max=%.0f', lo * 1e9, hi * 1e9))
end
