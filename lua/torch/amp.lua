-- Mixed precision, as PyTorch's torch.amp: torch.autocast (a to-be-closed region or a function
-- form) over the per-thread autocast state of core/autocast.c, and torch.amp.GradScaler (dynamic
-- loss scaling) over the fused passes of core/amp.c. The op lists live in the C ops (each op's
-- dispatch line); see core/autocast.h.
local torch = require 'torch'
local class = require 'torch.class'
local as_int = require('torch.composite').as_int

local amp = {}
torch.amp = amp

-- Warnings go to stderr as Python's do; tests replace amp._warn to see them.
function amp._warn(msg) io.stderr:write('UserWarning: ', msg, '\n') end

local function cuda_available()
  local C = rawget(torch, '_cuda')
  return C ~= nil and C.device_count() > 0
end

local default_dtype = { cpu = torch.bfloat16, cuda = torch.float16 }

-- the region's settings after PyTorch's checks (which warn and disable rather than fail)
local function settings(device_type, opts)
  if type(device_type) ~= 'string' then
    error("autocast: expected device_type to be a string ('cuda' or 'cpu'), got " .. type(device_type), 3)
  end
  if device_type ~= 'cpu' and device_type ~= 'cuda' then
    error("User specified autocast device_type must be 'cuda' or 'cpu', got '" .. device_type .. "'", 3)
  end
  if opts ~= nil and type(opts) ~= 'table' then
    error('autocast: expected an options table {dtype, enabled, cache_enabled}, got ' .. type(opts), 3)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= 'dtype' and k ~= 'enabled' and k ~= 'cache_enabled' then
      error("autocast: unknown option '" .. tostring(k) .. "' (expected dtype, enabled, cache_enabled)", 3)
    end
  end
  local dtype = opts.dtype
  if dtype == nil then dtype = default_dtype[device_type] end
  if getmetatable(dtype) ~= debug.getregistry()['torch.dtype'] then error('autocast: dtype must be a torch.dtype, got ' .. tostring(dtype), 3) end
  local enabled = opts.enabled
  if enabled == nil then enabled = true end
  if type(enabled) ~= 'boolean' then error('autocast: enabled must be a boolean, got ' .. type(enabled), 3) end
  local cache = opts.cache_enabled
  if cache == nil then cache = true end
  if type(cache) ~= 'boolean' then error('autocast: cache_enabled must be a boolean, got ' .. type(cache), 3) end
  if enabled and device_type == 'cuda' and not cuda_available() then
    amp._warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
    enabled = false
  end
  if enabled and dtype ~= torch.bfloat16 and dtype ~= torch.float16 then
    if device_type == 'cpu' then
      amp._warn('In CPU autocast, but the target dtype is not supported. Disabling autocast.\n'
        .. 'CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.')
    else
      amp._warn('In CUDA autocast, but the target dtype is not supported. Disabling autocast.\n'
        .. 'CUDA Autocast only supports dtype of torch.float16 and torch.bfloat16 currently.')
    end
    enabled = false
  end
  if not enabled and dtype ~= torch.bfloat16 and dtype ~= torch.float16 then dtype = default_dtype[device_type] end
  return dtype, enabled, cache
end

local Region = { __name = 'torch.autocast' }
Region.__index = Region
-- leaving the region restores the state it found (closing twice does nothing)
function Region.__close(r)
  if r._prev then
    local prev = r._prev
    r._prev = nil
    torch._set_autocast_state(prev)
  end
end
Region.close = Region.__close
function Region.__tostring(r)
  return string.format('torch.autocast(%s, dtype=%s, enabled=%s)', r.device_type, tostring(r.dtype), tostring(r.enabled))
end

-- torch.autocast(device_type, opts): enters a region and returns it as a to-be-closed value
--   local ac <close> = torch.autocast('cpu')
-- torch.autocast(device_type, opts, fn) (or (device_type, fn)): runs fn in a region and returns its
-- results; the state is restored even when fn raises.
function torch.autocast(device_type, opts, fn)
  if type(opts) == 'function' and fn == nil then opts, fn = nil, opts end
  if fn ~= nil and type(fn) ~= 'function' then
    error('autocast: expected a function as the third argument, got ' .. type(fn), 2)
  end
  local dtype, enabled, cache = settings(device_type, opts)
  local prev = torch._autocast_enter(device_type, dtype, enabled, cache)
  if fn == nil then
    return setmetatable({ _prev = prev, device_type = device_type, dtype = dtype, enabled = enabled }, Region)
  end
  local res = table.pack(pcall(fn))
  torch._set_autocast_state(prev)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end
amp.autocast = torch.autocast

local function check_device_type(device_type, name)
  device_type = device_type or 'cuda'
  if device_type ~= 'cpu' and device_type ~= 'cuda' then
    error(name .. ": expected device_type 'cpu' or 'cuda', got '" .. tostring(device_type) .. "'", 3)
  end
  return device_type
end

-- torch.is_autocast_enabled(device_type = 'cuda'), torch.get_autocast_dtype(device_type)
function torch.is_autocast_enabled(device_type)
  local on = torch._autocast_query(check_device_type(device_type, 'is_autocast_enabled'))
  return on
end
function torch.get_autocast_dtype(device_type)
  local _, dt = torch._autocast_query(check_device_type(device_type, 'get_autocast_dtype'))
  return dt
end
amp.is_autocast_available = function(device_type) return device_type == 'cpu' or device_type == 'cuda' end
-- PyTorch's per-device spellings of the queries, and torch.clear_autocast_cache()
function torch.is_autocast_cpu_enabled() return torch.is_autocast_enabled('cpu') end
function torch.get_autocast_cpu_dtype() return torch.get_autocast_dtype('cpu') end
function torch.get_autocast_gpu_dtype() return torch.get_autocast_dtype('cuda') end
function torch.clear_autocast_cache() torch._autocast_clear_cache() end

-- PyTorch's setters of the same state (torch.set_autocast_enabled is CUDA's, as in PyTorch 1.13).
-- They change the state now, with no value to close; a torch.autocast region entered before
-- restores on leaving the state it found, so a setter's change made inside it lasts until then.
local function check_bool(v, op)
  if type(v) ~= 'boolean' then error(op .. ': expected a boolean, got ' .. (torch.typename(v) or type(v)), 3) end
end
local function check_dtype(dt, op)
  if getmetatable(dt) ~= debug.getregistry()['torch.dtype'] then
    error(op .. ': expected a torch.dtype, got ' .. (torch.typename(dt) or type(dt)), 3)
  end
end
function torch.set_autocast_enabled(enabled)
  check_bool(enabled, 'set_autocast_enabled')
  torch._autocast_set('cuda', enabled, nil)
end
function torch.set_autocast_cpu_enabled(enabled)
  check_bool(enabled, 'set_autocast_cpu_enabled')
  torch._autocast_set('cpu', enabled, nil)
end
-- the GPU's low type: float16, bfloat16 or float32 (PyTorch takes any dtype, which no op list can
-- use: lutorch refuses the others)
function torch.set_autocast_gpu_dtype(dtype)
  check_dtype(dtype, 'set_autocast_gpu_dtype')
  if dtype ~= torch.float16 and dtype ~= torch.bfloat16 and dtype ~= torch.float32 then
    error('set_autocast_gpu_dtype: autocast on CUDA supports float16, bfloat16 and float32, got ' .. tostring(dtype), 2)
  end
  torch._autocast_set('cuda', nil, dtype)
end
-- the CPU's low type: bfloat16 (PyTorch 1.13's only one) or float16 (as lutorch's torch.autocast('cpu'))
function torch.set_autocast_cpu_dtype(dtype)
  check_dtype(dtype, 'set_autocast_cpu_dtype')
  if dtype ~= torch.bfloat16 and dtype ~= torch.float16 then
    error('set_autocast_cpu_dtype: CPU autocast supports bfloat16 and float16 as the autocast_cpu_dtype, got '
      .. tostring(dtype), 2)
  end
  torch._autocast_set('cpu', nil, dtype)
end
-- whether the casts of float32 leaves are cached inside a region (true unless turned off here or by
-- torch.autocast's cache_enabled option)
function torch.set_autocast_cache_enabled(enabled)
  check_bool(enabled, 'set_autocast_cache_enabled')
  torch._autocast_cache(enabled)
end
function torch.is_autocast_cache_enabled() return (torch._autocast_cache(nil)) end

-- ---------------------------------------------------------------- GradScaler
local READY, UNSCALED, STEPPED = 0, 1, 2

local GradScaler = class('GradScaler')
amp.GradScaler = GradScaler

-- GradScaler{device, init_scale, growth_factor, backoff_factor, growth_interval, enabled}, or
-- GradScaler(device, {...}) as torch.amp.GradScaler('cuda', ...)
function GradScaler:init(device, opts)
  if type(device) == 'table' and opts == nil then device, opts = device.device, device end
  opts = opts or {}
  if type(opts) ~= 'table' then error('GradScaler: expected an options table, got ' .. type(opts), 3) end
  for k in pairs(opts) do
    if k ~= 'device' and k ~= 'init_scale' and k ~= 'growth_factor' and k ~= 'backoff_factor'
      and k ~= 'growth_interval' and k ~= 'enabled' then
      error("GradScaler: unknown option '" .. tostring(k) .. "'", 3)
    end
  end
  if device == nil then device = cuda_available() and 'cuda' or 'cpu' end
  if device ~= 'cpu' and device ~= 'cuda' then
    error("GradScaler: device must be 'cuda' or 'cpu', got '" .. tostring(device) .. "'", 3)
  end
  local enabled = opts.enabled
  if enabled == nil then enabled = true end
  if type(enabled) ~= 'boolean' then error('GradScaler: enabled must be a boolean, got ' .. type(enabled), 3) end
  if enabled and device == 'cuda' and not cuda_available() then
    amp._warn('torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.')
    enabled = false
  end
  local function num(k, default)
    local v = opts[k]
    if v == nil then return default end
    if type(v) ~= 'number' then error('GradScaler: ' .. k .. ' must be a number, got ' .. type(v), 4) end
    return v
  end
  self._device = device
  self._enabled = enabled
  self._init_scale = num('init_scale', 65536.0)
  self._growth_factor = num('growth_factor', 2.0)
  self._backoff_factor = num('backoff_factor', 0.5)
  self._growth_interval = num('growth_interval', 2000)
  self._growth_interval = as_int(self._growth_interval)
  if math.type(self._growth_interval) ~= 'integer' then
    error('GradScaler: growth_interval must be an integer, got ' .. self._growth_interval, 3)
  end
  if enabled then
    if self._growth_factor <= 1 then error('The growth factor must be > 1.0.', 3) end
    if self._backoff_factor >= 1 then error('The backoff factor must be < 1.0.', 3) end
    if self._growth_interval < 1 then error('GradScaler: growth_interval must be a positive integer', 3) end
  end
  self._init_growth_tracker = 0
  self._scale = nil
  self._growth_tracker = nil
  self._per_optimizer_states = setmetatable({}, { __mode = 'k' })
end

function GradScaler:is_enabled() return self._enabled end

local function opt_state(self, opt)
  local s = self._per_optimizer_states[opt]
  if not s then
    s = { stage = READY, found_inf_per_device = {} }
    self._per_optimizer_states[opt] = s
  end
  return s
end

local function check_scale(self, funcname)
  if self._scale == nil then
    error('Attempted ' .. funcname .. ' but _scale is None.  This may indicate your script did not use '
      .. 'scaler.scale(loss or outputs) earlier in the iteration.', 3)
  end
end

-- The scale and the growth tracker live on the device (scale() multiplies by it there) with their
-- values mirrored on the host (_scale_host, _tracker_host), where update() computes them: so that
-- unscale_, update and get_scale read no device memory (each read would wait for the device's
-- queue; the one wait a step is the unscaling's inf check, as PyTorch's)
local function set_state(self, scale, tracker)
  local s = torch.full({ 1 }, scale, { dtype = torch.float32 })
  self._scale_host, self._tracker_host = s:item(), tracker
  self._scale:fill_(self._scale_host)
  self._growth_tracker:fill_(tracker)
end

local function lazy_init(self, device)
  self._scale = torch.empty({ 1 }, { dtype = torch.float32, device = device })
  self._growth_tracker = torch.empty({ 1 }, { dtype = torch.int32, device = device })
  set_state(self, self._init_scale, self._init_growth_tracker)
end

-- scale(outputs): outputs * scale for a tensor, or the same nesting of tables of tensors
function GradScaler:scale(outputs)
  if not self._enabled then return outputs end
  local function apply(v)
    if torch.is_tensor(v) then
      if self._scale == nil then lazy_init(self, v.device) end
      local s = self._scale
      if s.device ~= v.device then s = s:to(v.device) end
      return v * s
    end
    if type(v) == 'table' and getmetatable(v) == nil then
      local out = {}
      for k, x in pairs(v) do out[k] = apply(x) end
      return out
    end
    error('outputs must be a Tensor or an iterable of Tensors', 3)
  end
  return apply(outputs)
end

-- the gradients of opt grouped by device (device string -> array of tensors)
local function grads_by_device(opt, allow_fp16)
  local by = {}
  for _, group in ipairs(opt.param_groups) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then
        if not allow_fp16 and g.dtype == torch.float16 then error('Attempting to unscale FP16 gradients.', 4) end
        local d = tostring(g.device)
        by[d] = by[d] or {}
        table.insert(by[d], g)
      end
    end
  end
  return by
end

local function unscale_grads(self, opt, inv_scale, allow_fp16)
  local found = {}
  for dev, grads in pairs(grads_by_device(opt, allow_fp16)) do
    local f = torch.zeros(1, { dtype = torch.float32 })
    torch._amp_unscale_(grads, inv_scale, f)
    found[dev] = f
  end
  return found
end

function GradScaler:unscale_(optimizer)
  if not self._enabled then return end
  check_scale(self, 'unscale_')
  local s = opt_state(self, optimizer)
  if s.stage == UNSCALED then
    error('unscale_() has already been called on this optimizer since the last update().', 2)
  elseif s.stage == STEPPED then
    error('unscale_() is being called after step().', 2)
  end
  -- the reciprocal in float64, then float32, as PyTorch computes it
  local inv = torch.full({ 1 }, 1.0 / self._scale_host, { dtype = torch.float32 })
  s.found_inf_per_device = unscale_grads(self, optimizer, inv, false)
  s.stage = UNSCALED
end

local function found_inf_sum(s)
  local total = 0
  for _, f in pairs(s.found_inf_per_device) do total = total + f:item() end
  return total
end

-- step(optimizer, ...): unscales (when unscale_ was not called), then runs optimizer:step(...)
-- unless a gradient was inf or NaN; returns what the step returned (nil when skipped)
function GradScaler:step(optimizer, ...)
  if not self._enabled then return optimizer:step(...) end
  if select('#', ...) > 0 and type((...)) == 'function' then
    error('Closure use is not currently supported if GradScaler is enabled.', 2)
  end
  check_scale(self, 'step')
  local s = opt_state(self, optimizer)
  if s.stage == STEPPED then error('step() has already been called since the last update().', 2) end
  if s.stage == READY then self:unscale_(optimizer) end
  if next(s.found_inf_per_device) == nil then error('No inf checks were recorded for this optimizer.', 2) end
  local ret
  if found_inf_sum(s) == 0 then ret = optimizer:step(...) end
  s.stage = STEPPED
  return ret
end

-- update(new_scale): backoff after inf/NaN, growth after growth_interval clean steps, or the scale
-- given (a number or a one-element float32 tensor)
function GradScaler:update(new_scale)
  if not self._enabled then return end
  check_scale(self, 'update')
  if new_scale ~= nil then
    if type(new_scale) == 'number' then
      set_state(self, new_scale, self._tracker_host)
    elseif torch.is_tensor(new_scale) and new_scale:numel() == 1 and new_scale.dtype == torch.float32
      and not new_scale.requires_grad then
      set_state(self, new_scale:item(), self._tracker_host)
    else
      error('new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with requires_grad=False.', 2)
    end
  else
    local any, total = false, 0
    for _, s in pairs(self._per_optimizer_states) do
      for _, f in pairs(s.found_inf_per_device) do
        any = true
        total = total + f:item()
      end
    end
    if not any then error('No inf checks were recorded prior to update.', 2) end
    local found = torch.full({ 1 }, total, { dtype = torch.float32 })
    local scale = torch.full({ 1 }, self._scale_host, { dtype = torch.float32 })
    local tracker = torch.full({ 1 }, self._tracker_host, { dtype = torch.int32 })
    torch._amp_update_scale_(scale, tracker, found, self._growth_factor, self._backoff_factor, self._growth_interval)
    set_state(self, scale:item(), math.tointeger(tracker:item()))
  end
  self._per_optimizer_states = setmetatable({}, { __mode = 'k' })
end

function GradScaler:get_scale()
  if not self._enabled then return 1.0 end
  if self._scale == nil then return self._init_scale + 0.0 end
  return self._scale_host
end
function GradScaler:get_growth_factor() return self._growth_factor end
function GradScaler:set_growth_factor(v) self._growth_factor = v end
function GradScaler:get_backoff_factor() return self._backoff_factor end
function GradScaler:set_backoff_factor(v) self._backoff_factor = v end
function GradScaler:get_growth_interval() return self._growth_interval end
function GradScaler:set_growth_interval(v) self._growth_interval = v end
function GradScaler:_get_growth_tracker()
  if self._growth_tracker == nil then return self._init_growth_tracker end
  return self._tracker_host
end

function GradScaler:state_dict()
  if not self._enabled then return {} end
  return {
    scale = self:get_scale(),
    growth_factor = self._growth_factor,
    backoff_factor = self._backoff_factor,
    growth_interval = self._growth_interval,
    _growth_tracker = self:_get_growth_tracker(),
  }
end

function GradScaler:load_state_dict(sd)
  if not self._enabled then return end
  if type(sd) ~= 'table' then error('load_state_dict: expected a table, got ' .. type(sd), 2) end
  if next(sd) == nil then
    error('The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.', 2)
  end
  local function get(k)
    local v = sd[k]
    if torch.is_tensor(v) then v = v:item() end
    if type(v) ~= 'number' then error("load_state_dict: '" .. k .. "' must be a number, got " .. type(v), 3) end
    return v
  end
  self._init_scale = get('scale')
  self._growth_factor = get('growth_factor')
  self._backoff_factor = get('backoff_factor')
  self._growth_interval = math.tointeger(get('growth_interval')) or error("load_state_dict: 'growth_interval' must be an integer", 2)
  self._init_growth_tracker = math.tointeger(get('_growth_tracker')) or error("load_state_dict: '_growth_tracker' must be an integer", 2)
  if self._scale ~= nil then set_state(self, self._init_scale, self._init_growth_tracker) end
end

return amp
