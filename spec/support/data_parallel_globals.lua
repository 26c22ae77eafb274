-- Run by spec/data_parallel_spec.lua as a script (so that its globals are the interpreter's): a
-- module whose forward uses the script's global function and number runs in every replica, and a
-- global that cannot move to another Lua state (an open file, a coroutine) does not stop it.
-- Prints `ok <max difference from the plain module>`.
local torch = require 'torch'
local nn = torch.nn
SCALE = 3
function twice(x) return x * 2 end
LOG = io.open('/dev/null', 'w')
CO = coroutine.create(function() end)
local Net = nn.Module:extend('Net')
function Net:init() nn.Module.init(self); self.fc = nn.Linear(4, 2) end
function Net:forward(x) return twice(self.fc(x)) * SCALE end
torch.manual_seed(1)
local net = Net()
local x = torch.randn(6, 4)
local dp = nn.DataParallel(net)
local d1 = (dp(x) - net(x)):abs():max():item()
SCALE = 5 -- a changed global is seen at the next forward
local d2 = (dp(x) - net(x)):abs():max():item()
print(string.format('ok %g', math.max(d1, d2)))
