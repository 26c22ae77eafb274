-- torch.cuda: PyTorch's torch.cuda over the C side (torch._cuda, bindings/cuda.c) and the
-- per-device memory functions of torch.memory. Device arguments are CUDA ordinals (0-based, as
-- in PyTorch), 'cuda:i' strings or torch.device objects; nil is the current device. Without a GPU
-- (or in a build without CUDA) the queries answer and every request raises an error saying why.
local torch = require 'torch'
local as_int = require('torch.composite').as_int
local C = torch._cuda

local cuda = {}

function cuda.is_built() return C.compiled() end
function cuda.is_available() return C.device_count() > 0 end
function cuda.device_count() return C.device_count() end

local function unavailable(name)
  return 'torch.cuda.' .. name .. ': CUDA is not available: ' .. (C.unavailable_reason() or '')
end

local function check_available(name)
  if C.device_count() == 0 then error(unavailable(name), 3) end
end

-- 'cuda:i' for a device argument (nil: the current device)
local function device_string(name, device)
  check_available(name)
  if device == nil then return 'cuda:' .. C.current_device() end
  device = as_int(device)
  if math.type(device) == 'integer' then return 'cuda:' .. device end
  local d = torch.device(device)
  if d.type ~= 'cuda' then error('torch.cuda.' .. name .. ": expected a cuda device, got '" .. tostring(d) .. "'", 3) end
  return d.index and tostring(d) or 'cuda:' .. C.current_device()
end

function cuda.current_device() return C.current_device() end
function cuda.set_device(device)
  check_available('set_device')
  device = as_int(device)
  if device ~= nil and math.type(device) ~= 'integer' then device = torch.device(device).index end
  C.set_device(device)
end

function cuda.get_device_properties(device)
  check_available('get_device_properties')
  local p = C.get_device_properties(device)
  return setmetatable(p, {
    __tostring = function(t)
      return string.format("_CudaDeviceProperties(name='%s', major=%d, minor=%d, total_memory=%dMB, multi_processor_count=%d)",
        t.name, t.major, t.minor, t.total_memory // (1024 * 1024), t.multi_processor_count)
    end,
  })
end
function cuda.get_device_name(device)
  check_available('get_device_name')
  return C.get_device_properties(device).name
end
function cuda.get_device_capability(device)
  check_available('get_device_capability')
  local p = C.get_device_properties(device)
  return p.major, p.minor
end
-- free and total bytes of the device, as cudaMemGetInfo reports them
function cuda.mem_get_info(device)
  check_available('mem_get_info')
  return C.mem_get_info(device)
end
function cuda.synchronize(device)
  check_available('synchronize')
  C.synchronize(device)
end

-- seeds are kept even without a GPU (PyTorch queues them until CUDA starts)
function cuda.manual_seed(seed) C.manual_seed(seed) end
function cuda.manual_seed_all(seed) C.manual_seed(seed, nil, true) end
function cuda.initial_seed() return C.initial_seed() end

-- torch.cuda.device(i): makes device i current until the value is closed
--   do local _ <close> = torch.cuda.device(1); ... end
-- or, as a function form, for the duration of fn: torch.cuda.device(1, function() ... end)
local device_ctx = {}
device_ctx.__index = device_ctx
device_ctx.__close = function(self)
  if self.prev ~= nil then C.set_device(self.prev) end
  self.prev = nil
end
device_ctx.__name = 'torch.cuda.device'

function cuda.device(device, fn)
  local idx
  device = as_int(device)
  if device == nil or (math.type(device) == 'integer' and device < 0) then
    idx = nil -- PyTorch: device(None) and device(-1) change nothing
  else
    check_available('device')
    idx = math.type(device) == 'integer' and device or torch.device(device).index
  end
  local ctx = setmetatable({ index = idx }, device_ctx)
  if idx ~= nil then
    ctx.prev = C.current_device()
    C.set_device(idx)
  end
  if fn == nil then return ctx end
  local res = table.pack(pcall(fn))
  device_ctx.__close(ctx)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- ---- memory: thin wrappers over torch.memory for 'cuda:i' ----
function cuda.memory_allocated(device)
  if not cuda.is_available() then return 0 end
  return torch.memory.allocated(device_string('memory_allocated', device))
end
function cuda.max_memory_allocated(device)
  if not cuda.is_available() then return 0 end
  return torch.memory.max_allocated(device_string('max_memory_allocated', device))
end
function cuda.memory_reserved(device)
  if not cuda.is_available() then return 0 end
  return torch.memory.reserved(device_string('memory_reserved', device))
end
function cuda.max_memory_reserved(device)
  if not cuda.is_available() then return 0 end
  return torch.memory.max_reserved(device_string('max_memory_reserved', device))
end
function cuda.reset_peak_memory_stats(device)
  torch.memory.reset_peak(device_string('reset_peak_memory_stats', device))
end
function cuda.empty_cache()
  if not cuda.is_available() then return end -- as PyTorch: nothing to free
  torch.memory.empty_cache(device_string('empty_cache'))
end
function cuda.memory_stats(device)
  if not cuda.is_available() then return {} end
  return torch.memory.stats(device_string('memory_stats', device))
end
function cuda.memory_summary(device)
  return torch.memory.summary(device_string('memory_summary', device))
end

-- ---- streams and events: torch.Stream / torch.Event (bindings/stream.c) on 'cuda:i' ----
-- torch.cuda.Stream(i?): a stream of device i (nil: the current device)
function cuda.Stream(device)
  return torch.Stream(device_string('Stream', device))
end
function cuda.current_stream(device)
  return torch.current_stream(device_string('current_stream', device))
end
function cuda.default_stream(device)
  return torch.default_stream(device_string('default_stream', device))
end
-- torch.cuda.stream(s): s current (and its device) until the value is closed, or for fn's call;
-- nil changes nothing, as in PyTorch
function cuda.stream(s, fn)
  if s ~= nil and (getmetatable(s) or {}).__name ~= 'torch.Stream' then
    error('torch.cuda.stream: expected a stream or nil, got ' .. type(s), 2)
  end
  if s ~= nil and s.device.type ~= 'cuda' then
    error("torch.cuda.stream: expected a cuda stream, got a stream on '" .. tostring(s.device) .. "'", 2)
  end
  return torch.stream(s, fn)
end
-- torch.cuda.Event{enable_timing = true}: its device is the one of the stream it is first
-- recorded on
function cuda.Event(opts)
  check_available('Event')
  if opts ~= nil and type(opts) ~= 'table' then
    error('torch.cuda.Event: expected an options table, got ' .. type(opts), 2)
  end
  return torch.Event('cuda', opts)
end

-- PyTorch's torch.cuda.amp names
cuda.amp = {
  autocast = function(opts, fn) return torch.autocast('cuda', opts, fn) end,
  GradScaler = function(o)
    local c = {}
    for k, v in pairs(o or {}) do c[k] = v end
    c.device = 'cuda'
    return torch.amp.GradScaler(c)
  end,
}

return cuda
