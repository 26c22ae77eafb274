-- Run by spec/data_parallel_spec.lua as `LUTORCH_CPU_DEVICES=k lutorch data_parallel_check.lua B...`:
-- for each batch size B, the output and the parameter gradients of DataParallel over every CPU
-- device against the same module run on cpu:0 alone, for a model with BatchNorm in eval mode and
-- Dropout (disabled by eval). Prints one line per batch: `batch B device out_err grad_err`. With a
-- first argument `cuda`, the same over every visible GPU.
local torch = require 'torch'
local nn = torch.nn

torch.manual_seed(7)
local model = nn.Sequential(nn.Linear(10, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 4))
-- running statistics that are not the identity, so eval-mode BatchNorm does something
model[2].running_mean:copy_(torch.randn(16) * 0.3)
model[2].running_var:copy_(torch.rand(16) + 0.5)
model:eval()
local dev = torch.device('cpu:0')
if arg[1] == 'cuda' then
  table.remove(arg, 1)
  dev = torch.device('cuda:0')
  model:to(dev)
end
local dp = nn.DataParallel(model)

local function grads()
  local g = {}
  for i, p in ipairs(model:parameters()) do g[i] = p.grad:clone() end
  return g
end

for _, a in ipairs(arg) do
  local b = tonumber(a)
  local x = torch.randn(b, 10):to(dev)
  local w = torch.randn(b, 4):to(dev)
  model:zero_grad()
  local ref = model(x)
  ;(ref * w):sum():backward()
  local gref = grads()
  model:zero_grad()
  local out = dp(x)
  ;(out * w):sum():backward()
  local g = grads()
  local gerr = 0
  for i = 1, #g do gerr = math.max(gerr, (g[i] - gref[i]):abs():max():item()) end
  print(string.format('batch %d %s %.3g %.3g', b, tostring(out.device), (out - ref):abs():max():item(), gerr))
end
