-- Elementwise throughput on 1e7 float32: c = a + b and c = a:exp() (ms per op).
-- Run: build/lutorch bench/elementwise.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'

local n = 10000000
local a, b = torch.rand(n), torch.rand(n)
print('# threads=' .. torch.get_num_threads())
local cases = {
  { 'add', function(k) for _ = 1, k do local c = a + b end end },
  { 'exp', function(k) for _ = 1, k do local c = a:exp() end end },
  { 'sum', function(k) for _ = 1, k do local c = a:sum() end end },
}
for _, case in ipairs(cases) do
  local med, lo, hi = B.time(case[2], 20, 5)
  B.result('lutorch_elementwise_' .. case[1], med * 1e3, 'ms', string.format('min=%.2f max=%.2f', lo * 1e3, hi * 1e3))
end
