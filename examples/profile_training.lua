-- Where the time of a training step goes: a small MLP trains for a few steps under
-- torch.profiler, each step marked with record_function, and the profile prints PyTorch's table
-- (sorted by self time) and writes a Chrome trace (open it in chrome://tracing or Perfetto).
-- Run: build/lutorch examples/profile_training.lua [trace.json]
local torch = require 'torch'
local nn, optim, profiler = torch.nn, torch.optim, torch.profiler

torch.manual_seed(0)
local X = torch.randn(512, 32)
local Y = torch.randint(0, 10, { 512 }) + 1 -- 1-based classes

local model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
local loss_fn = nn.CrossEntropyLoss()

local function train_step(x, y)
  local loss = loss_fn(model(x), y)
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end

train_step(X[{ { 1, 64 } }], Y[{ { 1, 64 } }]) -- a warm-up step outside the profile

local prof
do
  prof = profiler.profile{ record_shapes = true, profile_memory = true }
  local _ <close> = prof
  for i = 1, 64 * 7, 64 do
    local _ <close> = profiler.record_function('train_step')
    local loss = train_step(X[{ { i, i + 63 } }], Y[{ { i, i + 63 } }])
    if i == 1 then print(string.format('first loss %.4f', loss:item())) end
  end
end -- the profile stops here

print(prof:key_averages():table{ sort_by = 'self_cpu_time_total', row_limit = 12 })
print(prof:key_averages{ group_by_input_shape = true }:table{ sort_by = 'cpu_time_total', row_limit = 5 })
local path = arg[1] or os.tmpname()
prof:export_chrome_trace(path)
print(string.format('%d events; Chrome trace written to %s', #prof:events(), path))
if not arg[1] then os.remove(path) end
