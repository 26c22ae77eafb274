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
