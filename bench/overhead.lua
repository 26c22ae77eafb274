-- Per-op cost from Lua: c = a + b and a:add_(b) on 16-element float32 tensors (ns per op).
-- Run: build/lutorch bench/overhead.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'

local a, b = torch.rand(16), torch.rand(16)
local iters = 1000000
local function loop(n) for _ = 1, n do end end
local function add_out(n) for _ = 1, n do local c = a + b end end
local function add_inplace(n) for _ = 1, n do a:add_(b) end end
for _, case in ipairs { { 'lua_loop', loop }, { 'add_out', add_out }, { 'add_inplace', add_inplace } } do
  local med, lo, hi = B.time(case[2], iters, 7)
  B.result('lutorch_overhead_' .. case[1], med * 1e9, 'ns/iter', string.format('min=%.0f max=%.0f', lo * 1e9, hi * 1e9))
end
