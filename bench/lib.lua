-- Timing helpers shared by the benchmarks: median of samples, printed as RESULT lines.
local torch = require 'torch'
local B = {}

-- run f(iters) `samples` times after a warm-up; returns median, min, max of seconds per iteration
function B.time(f, iters, samples)
  samples = samples or 5
  f(math.max(1, iters // 10))
  local t = {}
  for i = 1, samples do
    local t0 = torch.utils.clock()
    f(iters)
    t[i] = (torch.utils.clock() - t0) / iters
  end
  table.sort(t)
  return t[(samples + 1) // 2], t[1], t[samples]
end

-- iterations so that one sample takes about `seconds`
function B.calibrate(f, seconds)
  local n = 1
  while true do
    local t0 = torch.utils.clock()
    f(n)
    local el = torch.utils.clock() - t0
    if el > 0.05 then return math.max(1, math.floor(n * seconds / el)) end
    n = n * 4
  end
end

function B.result(name, value, unit, extra)
  print(string.format('RESULT name=%s value=%.6g unit=%s%s', name, value, unit, extra and (' ' .. extra) or ''))
  io.stdout:flush()
end

-- the mean milliseconds of f() on the current CUDA stream over iters calls (after one warm-up),
-- timed with CUDA events
function B.gpu_ms(f, iters)
  f()
  local e0, e1 = torch.cuda.Event { enable_timing = true }, torch.cuda.Event { enable_timing = true }
  e0:record()
  for _ = 1, iters do f() end
  e1:record()
  e1:synchronize()
  return e0:elapsed_time(e1) / iters
end

-- the Fashion-MNIST CNN of bench/reference (seed 0) on dev, its SGD and a random batch of 256:
-- model, opt, x, y
function B.cnn_step_setup(dev)
  local nn = torch.nn
  torch.manual_seed(0)
  local model = nn.Sequential(
    nn.Conv2d(1, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10)):to(dev)
  local opt = torch.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
  return model, opt, torch.rand(256, 1, 28, 28, { device = dev }), torch.randint(1, 11, { 256 }, { device = dev })
end

return B
