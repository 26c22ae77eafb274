-- Run by spec/data_parallel_spec.lua as `LUTORCH_CPU_DEVICES=3 lutorch data_parallel_keep.lua`: a
-- replica that a forward leaves out (a batch of fewer chunks than devices) does not run on its kept
-- copy of the module after the module changed. Prints the output of each forward, row by row.
local torch = require 'torch'
local nn = torch.nn

local Scale = nn.Module:extend('Scale')
function Scale:init() nn.Module.init(self); self.w = nn.Parameter(torch.ones(1)); self.factor = 2 end
function Scale:forward(x) return x * self.w * self.factor end
local m = Scale()
local dp = nn.DataParallel(m)
local function show(n)
  local y = dp(torch.ones(n, 1))
  local t = {}
  for i = 1, n do t[i] = string.format('%g', y[i][1]) end
  print(table.concat(t, ' '))
end
show(6)  -- replicas 1, 2, 3
m.factor = 3
show(4)  -- two chunks of 2: replicas 1 and 2
show(6)  -- replica 3 again
