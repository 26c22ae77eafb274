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

return B
