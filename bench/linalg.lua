-- torch.linalg's factorisations and solves (milliseconds a call), the lutorch side of
-- bench/torch_linalg.py: one matrix of a few hundred rows (blocked routines)
-- and batches of 1000 8 x 8 matrices (split over the threads).
-- Run: build/lutorch bench/linalg.lua
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local L = torch.linalg

torch.manual_seed(0)
local a = torch.randn(256, 256)
local spd = a:matmul(a:t()) + torch.eye(256) * 256
local tall = torch.randn(512, 256)
local rhs = torch.randn(256, 16)
local small = torch.randn(1000, 8, 8)
local small_spd = small:matmul(small:transpose(2, 3)) + torch.eye(8) * 8

local cases = {
  { 'inv_256', function() return L.inv(a) end },
  { 'solve_256x16', function() return L.solve(a, rhs) end },
  { 'det_1000x8x8', function() return L.det(small) end },
  { 'cholesky_256', function() return L.cholesky(spd) end },
  { 'cholesky_1000x8x8', function() return L.cholesky(small_spd) end },
  { 'qr_512x256', function() return L.qr(tall) end },
  { 'eigh_256', function() return L.eigh(spd) end },
  { 'eigh_1000x8x8', function() return L.eigh(small_spd) end },
  { 'svd_256', function() return L.svd(a, false) end },
  { 'svd_1000x8x8', function() return L.svd(small, false) end },
}
local only = arg and arg[1]
for _, c in ipairs(cases) do
  if not only or c[1]:find(only, 1, true) then
    local f = function(n) for _ = 1, n do c[2]() end end
    local med, lo, hi = B.time(f, B.calibrate(f, 0.2), 5)
    B.result('lutorch_linalg_' .. c[1], med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
  end
end
