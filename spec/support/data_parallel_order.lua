-- Run by spec/data_parallel_spec.lua as `LUTORCH_CPU_DEVICES=3 lutorch data_parallel_order.lua`:
-- DataParallel sums the replicas' gradients of a parameter in a fixed order, the first device's
-- first (the parameter's own), then the others by device. Prints `exact N` when every gradient of
-- several backward passes equals, bit for bit, ((g1 + g2) + g3) of the chunks' gradients computed
-- one by one by the plain module, and `diff D` otherwise (the largest difference).
local torch = require 'torch'
local nn = torch.nn

torch.set_num_threads(1) -- each replica runs on one kernel thread; so do the references
torch.manual_seed(3)
local model = nn.Sequential(nn.Linear(40, 64), nn.Tanh(), nn.Linear(64, 8))
local dp = nn.DataParallel(model)
local x = torch.randn(12, 40)
local w = torch.randn(12, 8)

local function grads()
  local g = {}
  for i, p in ipairs(model:parameters()) do g[i] = p.grad:clone() end
  return g
end

local parts = {}
for r = 1, 3 do
  model:zero_grad()
  ;(model(x:narrow(1, 4 * r - 3, 4)) * w:narrow(1, 4 * r - 3, 4)):sum():backward()
  parts[r] = grads()
end
local worst, exact = 0, 0
for _ = 1, 5 do
  model:zero_grad()
  ;(dp(x) * w):sum():backward()
  local g = grads()
  for i = 1, #g do
    local want = (parts[1][i] + parts[2][i]) + parts[3][i]
    local d = (g[i] - want):abs():max():item()
    worst = math.max(worst, d)
    if d == 0 then exact = exact + 1 end
  end
end
if worst == 0 then print('exact ' .. exact) else print('diff ' .. worst) end
