-- A walk through lutorch's devices on the CPU: run it with `make demo`, or
--   LUTORCH_CPU_DEVICES=2 build/lutorch examples/devices_tour.lua
-- Every step works the same with 'cuda:0' and 'cuda:1' on a machine with GPUs.
local torch = require 'torch'

local function section(title) print(('\n== %s =='):format(title)) end

section 'Devices'
print('CPU devices:', torch.cpu.device_count(), '(set LUTORCH_CPU_DEVICES=N to have more)')
print('CUDA available:', torch.cuda.is_available())
local d0, d1 = torch.device('cpu:0'), torch.device('cpu', torch.cpu.device_count() - 1)
print('d0 =', d0, 'type', d0.type, 'index', d0.index)
print('d1 =', d1)
print("torch.device('cpu') has no index:", torch.device('cpu').index)
local ok, err = pcall(torch.device, 'gpu:0')
print('a malformed device string is an error:', err)

section 'Creating tensors on a device'
local x = torch.arange(1, 7, {dtype = torch.float32}):view(2, 3)
print('x =', x)
local y = torch.ones(2, 3, {device = d1})
print('y =', y)
print('y.device =', y.device)

section 'Moving tensors'
local xs = x:to(d1)
print('x:to(d1) lives on', xs.device)
print("x:to('cpu') returns x itself:", rawequal(x:to('cpu'), x))
print('x:to(torch.float64) =', x:to(torch.float64))
print('x:to(y) takes y\'s device and dtype:', x:to(y).device, x:to(y).dtype)

section 'The same-device rule'
print('xs + y on', (xs + y).device)
if torch.cpu.device_count() > 1 then
  ok, err = pcall(function() return x + y end)
  print('x + y across devices raises:', err)
else
  print('(only one CPU device: run with LUTORCH_CPU_DEVICES=2 to see the error)')
end
print('a 0-dim tensor joins any device, as a number does:', (y + torch.tensor(1.0)).device)

section 'new_* and *_like keep the device and dtype'
local h = torch.zeros(2, 2, {dtype = torch.float16, device = d1})
local n = h:new_ones(3)
print('h:new_ones(3):', n, n.device, n.dtype)
print('torch.zeros_like(h):', torch.zeros_like(h).device, torch.zeros_like(h).dtype)
print('torch.full_like(h, 7, {dtype = torch.int32}):', torch.full_like(h, 7, {dtype = torch.int32}))

section 'Memory statistics (caching allocator)'
torch.memory.reset_peak(d1)
local before = torch.memory.allocated(d1)
local big = torch.empty(1024, 1024, {device = d1})
print(('allocated on %s: %d -> %d bytes'):format(tostring(d1), before, torch.memory.allocated(d1)))
big = nil
collectgarbage()
print(('after freeing: allocated %d, reserved %d (the block is cached for reuse)'):format(
  torch.memory.allocated(d1), torch.memory.reserved(d1)))
torch.memory.empty_cache(d1)
print('after empty_cache: reserved', torch.memory.reserved(d1))
print('peak allocated:', torch.memory.max_allocated(d1))
print(torch.memory.summary(d1))

section 'Streams and events (every device type; CPU streams are synchronous)'
local s = torch.Stream(d1)
local e1, e2 = torch.Event(d1, {enable_timing = true}), torch.Event(d1, {enable_timing = true})
torch.stream(s, function()
  e1:record()
  local z = torch.ones(512, 512, {device = d1}):matmul(torch.ones(512, 512, {device = d1}))
  e2:record()
  print(('a 512x512 product on %s took %.3f ms (events), result %g'):format(tostring(d1), e1:elapsed_time(e2), z[1][1]))
end)
print('s:query() =', s:query(), ' current stream back to', tostring(torch.current_stream(d1)))

section 'GPUs'
if not torch.cuda.is_available() then
  print('(no CUDA device here, so the GPU part is skipped: moving tensors and models to the GPU with')
  print(' the most free memory, streams, timing with events, pinned memory and non_blocking copies)')
  print(' reason: ' .. tostring(select(2, pcall(torch.ones, 1, {device = 'cuda'}))))
  return
end
-- the GPU with the most free memory
local best, best_free = 0, -1
for i = 0, torch.cuda.device_count() - 1 do
  local free, total = torch.cuda.mem_get_info(i)
  print(('cuda:%d %s: %.1f of %.1f GiB free'):format(i, torch.cuda.get_device_name(i), free / 2^30, total / 2^30))
  if free > best_free then best, best_free = i, free end
end
local gpu = torch.device('cuda:' .. best)
print('using', gpu)
-- tensors and models
local a = torch.randn(1024, 1024):to(gpu)
local model = torch.nn.Sequential(torch.nn.Linear(1024, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)):to(gpu)
print('model output on', model(a).device, ' a parameter on', model[1].weight.device)
-- timing with events on a side stream
local side = torch.cuda.Stream(best)
local t0, t1 = torch.cuda.Event {enable_timing = true}, torch.cuda.Event {enable_timing = true}
torch.cuda.stream(side, function()
  t0:record()
  for _ = 1, 10 do a = a:matmul(a):div_(1024) end
  t1:record()
end)
torch.cuda.current_stream(best):wait_stream(side)
t1:synchronize()
print(('10 products of 1024x1024 on a side stream: %.3f ms'):format(t0:elapsed_time(t1)))
-- pinned memory and a copy that overlaps with compute
local host = torch.randn(4096, 4096):pin_memory()
print('pinned:', host:is_pinned())
local t2, t3 = torch.cuda.Event {enable_timing = true}, torch.cuda.Event {enable_timing = true}
t2:record()
local dev_copy = host:to(gpu, {non_blocking = true})
t3:record()
t3:synchronize()
print(('64 MiB pinned -> %s with non_blocking: %.3f ms (%.1f GB/s)'):format(tostring(gpu), t2:elapsed_time(t3),
  64 * 2^20 / 1e9 / (t2:elapsed_time(t3) / 1e3)))
print('the copy equals the host tensor:', (dev_copy:cpu() - host):abs():max():item() == 0)
torch.cuda.synchronize()
