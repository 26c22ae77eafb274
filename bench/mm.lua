-- float32 matrix product GFLOP/s at n = 256, 1024, 2048.
-- Run: build/lutorch bench/mm.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'

local core = torch._blas_info()
print('# OpenBLAS core: ' .. core .. ' (OPENBLAS_CORETYPE=' .. tostring(os.getenv('OPENBLAS_CORETYPE')) .. ')')
torch.manual_seed(0)
for _, n in ipairs { 256, 1024, 2048 } do
  local a, b = torch.rand(n, n) - 0.5, torch.rand(n, n) - 0.5
  local function f(k) for _ = 1, k do local c = torch.mm(a, b) end end
  local iters = B.calibrate(f, 0.25)
  local med, lo, hi = B.time(f, iters, 7)
  local flop = 2 * n ^ 3
  B.result('lutorch_mm_n' .. n, flop / med / 1e9, 'GFLOP/s', string.format('min=%.1f max=%.1f core=%s', flop / hi / 1e9, flop / lo / 1e9, core))
end
