-- nn.DataParallel: one module, several devices of one type, the batch split between them.
--
-- Each forward scatters the tensor arguments along `dim` in chunks of ceil(n / k), replicates the
-- module (its parameters copied to each device through autograd, its buffers copied), runs the
-- replicas at once and gathers their outputs on the output device, as PyTorch's DataParallel does.
-- A Lua state runs one thread at a time, so replica 1 runs here, on the caller's thread, with the
-- wrapped module itself (its buffers' in-place updates persist, as on PyTorch's first device), and
-- every other replica runs in a Lua state of its own on its own thread (torch._lua_thread), into
-- which the module is copied with its parameters replaced by their replicas. The machine's kernel
-- threads are shared out between the replicas. Backward goes through the copies, so the replicas'
-- gradients are summed into the wrapped module's parameters; the autograd engine runs each
-- device's part of the graph on a thread of its own.
local torch = require 'torch'
local Module = require 'torch.nn.module'

local DataParallel = Module:extend('DataParallel')

local function is_tensor(v) return torch.is_tensor(v) end

-- a device id (a CUDA ordinal, a device or a string) as a device with its index
local function parse_device(what, d)
  if type(d) == 'number' then
    if math.type(d) ~= 'integer' or d < 0 then
      error(string.format('DataParallel: %s: a CUDA ordinal must be a non-negative integer, got %s', what, d), 4)
    end
    d = 'cuda:' .. d
  end
  local ok, dev = pcall(torch.device, d)
  if not ok then error(string.format('DataParallel: %s: %s', what, tostring(dev):gsub('^.-: ', '', 1)), 4) end
  if dev.index == nil then
    dev = torch.device(dev.type .. ':' .. (dev.type == 'cuda' and torch.cuda.current_device() or torch.cpu.current_device()))
  end
  return dev
end

-- a device that does not exist is an error now, not at the first forward
local function check_exists(what, dev)
  local count = dev.type == 'cuda' and torch.cuda.device_count() or torch.cpu.device_count()
  if dev.index >= count then
    error(string.format('DataParallel: %s: device %s does not exist (%d %s device%s)', what, tostring(dev),
      count, dev.type, count == 1 and '' or 's'), 4)
  end
  return dev
end

local function to_device(what, d) return check_exists(what, parse_device(what, d)) end

local function module_device_type(m)
  for _, p in ipairs(m:parameters()) do return p.device.type end
  for _, b in ipairs(m:buffers()) do return b.device.type end
  return 'cpu'
end

-- nn.DataParallel(module, {device_ids, output_device, dim = 1})
function DataParallel:init(module, opts)
  if not Module.is_module(module) then
    error('DataParallel: expected an nn.Module to wrap, got ' .. type(module), 3)
  end
  opts = opts or {}
  local ids = opts.device_ids
  local devices = {}
  if ids == nil then
    local kind = module_device_type(module)
    local count = kind == 'cuda' and torch.cuda.device_count() or torch.cpu.device_count()
    for i = 0, count - 1 do devices[#devices + 1] = torch.device(kind .. ':' .. i) end
  else
    if type(ids) ~= 'table' then error('DataParallel: device_ids must be a table of devices, got ' .. type(ids), 3) end
    if #ids == 0 then error('DataParallel: device_ids is empty', 3) end
    for i, d in ipairs(ids) do devices[i] = parse_device(string.format('device_ids[%d]', i), d) end
    for i = 1, #devices do
      if devices[i].type ~= devices[1].type then
        error(string.format('DataParallel: device_ids mixes device types (%s and %s)', tostring(devices[1]),
          tostring(devices[i])), 3)
      end
      for j = 1, i - 1 do
        if devices[j] == devices[i] then
          error(string.format('DataParallel: device_ids lists %s twice', tostring(devices[i])), 3)
        end
      end
    end
    for i = 1, #devices do check_exists(string.format('device_ids[%d]', i), devices[i]) end
  end
  if #devices == 0 then error('DataParallel: no devices to run on', 3) end
  self.module = module
  self.device_ids = devices
  self.output_device = opts.output_device ~= nil and to_device('output_device', opts.output_device) or devices[1]
  local dim = opts.dim or 1
  if math.type(dim) ~= 'integer' or dim == 0 then
    error('DataParallel: dim must be a non-zero integer (1-based, negative from the end), got ' .. tostring(dim), 3)
  end
  self.dim = dim
  if #devices == 1 then module:to(devices[1]) end
  -- the threads of replicas 2..n, made at the first forward that needs them
  rawset(self, '_threads', {})
end

-- t on device dev for a replica: on the CPU devices, which share host memory, the same memory
-- under the other device's name (as PyTorch's first replica shares the original's storage);
-- elsewhere a copy. Both are recorded for autograd, so gradients flow back to t.
local function move(t, dev)
  if dev.type == 'cpu' and t.device.type == 'cpu' then return torch._device_alias(t, dev) end
  return t:to(dev, { copy = true })
end
DataParallel._move = move

-- ---- scatter ----

-- the dimension `dim` (1-based, negative from the end) of x, checked
local function scatter_dim(x, dim)
  local d = dim < 0 and x:dim() + dim + 1 or dim
  if d < 1 or d > x:dim() then
    error(string.format('DataParallel: cannot scatter a tensor of %d dimension%s along dimension %d', x:dim(),
      x:dim() == 1 and '' or 's', dim), 0)
  end
  if x:size(d) == 0 then
    error(string.format('DataParallel: cannot scatter a batch of size 0 along dimension %d', dim), 0)
  end
  return d
end

-- the number of chunks every tensor in v splits into (the replicas: the smallest count), or nil
local function count_chunks(v, k, dim, seen)
  if is_tensor(v) then
    local d = scatter_dim(v, dim)
    local c = math.ceil(v:size(d) / math.ceil(v:size(d) / k))
    return c
  elseif type(v) == 'table' and getmetatable(v) == nil and not seen[v] then
    seen[v] = true
    local best
    for _, x in pairs(v) do
      local c = count_chunks(x, k, dim, seen)
      if c and (not best or c < best) then best = c end
    end
    return best
  end
end

-- chunk r of v on device dev: tensors split, plain tables rebuilt, other values repeated
local function chunk_of(v, r, k, dim, dev)
  if is_tensor(v) then
    local d = scatter_dim(v, dim)
    local n = v:size(d)
    local size = math.ceil(n / k)
    local start = (r - 1) * size + 1
    return move(v:narrow(d, start, math.min(size, n - start + 1)), dev)
  elseif type(v) == 'table' and getmetatable(v) == nil then
    local out = {}
    for key, x in pairs(v) do out[key] = chunk_of(x, r, k, dim, dev) end
    return out
  end
  return v
end

-- ---- gather ----

local function gather(outs, dev, dim, path)
  local first = outs[1]
  if is_tensor(first) then
    local parts = {}
    local all_scalar = true
    for i, o in ipairs(outs) do
      if not is_tensor(o) then
        error(string.format('DataParallel: replica %d returned %s at %s where replica 1 returned a tensor', i,
          type(o), path), 0)
      end
      parts[i] = move(o, dev)
      if o:dim() > 0 then all_scalar = false end
    end
    if all_scalar then
      -- PyTorch: scalars gathered along the first dimension become a vector
      return torch.stack(parts)
    end
    return torch.cat(parts, dim)
  elseif type(first) == 'table' and getmetatable(first) == nil then
    local out, count = {}, 0
    for key in pairs(first) do count = count + 1 end
    for i, o in ipairs(outs) do
      local n = 0
      if type(o) == 'table' then for _ in pairs(o) do n = n + 1 end end
      if type(o) ~= 'table' or n ~= count then
        error(string.format('DataParallel: replica %d returned a different structure at %s than replica 1', i, path), 0)
      end
    end
    for key in pairs(first) do
      local col = {}
      for i, o in ipairs(outs) do
        if o[key] == nil then
          error(string.format('DataParallel: replica %d has no key %s at %s', i, tostring(key), path), 0)
        end
        col[i] = o[key]
      end
      out[key] = gather(col, dev, dim, path .. '.' .. tostring(key))
    end
    return out
  elseif first == nil then
    return nil
  end
  for i = 2, #outs do
    if outs[i] ~= first then
      error(string.format('DataParallel: replicas returned different values at %s (%s and %s)', path,
        tostring(first), tostring(outs[i])), 0)
    end
  end
  return first
end

-- ---- replicas ----

-- runs in a replica's own Lua state: the module (copied, with replicated parameters) on its chunk
-- (with the caller's autocast state, restored after: the thread's cast cache goes with it; and the
-- caller's own globals, which the module's functions may use)
function DataParallel._run_replica(module, device, packed, autocast_state, globals)
  for k, v in pairs(globals) do _G[k] = v end
  torch.cpu.set_device(device.type == 'cpu' and device or torch.device('cpu'))
  if device.type == 'cuda' then torch.cuda.set_device(device.index) end
  local saved = torch._autocast_state()
  torch._set_autocast_state(autocast_state)
  local res = table.pack(pcall(module, table.unpack(packed, 1, packed.n)))
  torch._set_autocast_state(saved)
  if not res[1] then error(res[2], 0) end
  return table.pack(table.unpack(res, 2, res.n))
end


local function replica_subst(module, dev, grad)
  local subst = {}
  for _, p in ipairs(module:parameters()) do
    if subst[p] == nil then subst[p] = move(grad and p or p:detach(), dev) end
  end
  for _, b in ipairs(module:buffers()) do
    if subst[b] == nil then subst[b] = b:detach():to(dev, { copy = true }) end
  end
  return subst
end

function DataParallel:_check_devices()
  local first = self.device_ids[1]
  local function check(t)
    if t.device ~= first then
      error(string.format('module must have its parameters and buffers on device %s (device_ids[1]) but found '
        .. 'one of them on device: %s', tostring(first), tostring(t.device)), 0)
    end
  end
  for _, p in ipairs(self.module:parameters()) do check(p) end
  for _, b in ipairs(self.module:buffers()) do check(b) end
end

function DataParallel:forward(...)
  local args = table.pack(...)
  local devices = self.device_ids
  local k = #devices
  if k == 1 then
    local packed = chunk_of(args, 1, 1, self.dim, devices[1])
    return self.module(table.unpack(packed, 1, args.n))
  end
  self:_check_devices()
  local ok, r = pcall(count_chunks, args, k, self.dim, {})
  if not ok then error(r, 2) end
  r = r or k
  local chunks = {}
  for i = 1, r do
    local ok2, c = pcall(chunk_of, args, i, k, self.dim, devices[i])
    if not ok2 then error(c, 2) end
    c.n = args.n
    chunks[i] = c
  end
  if r == 1 then
    return gather({ self.module(table.unpack(chunks[1], 1, args.n)) }, self.output_device, self.dim, 'output')
  end
  local grad = torch.is_grad_enabled()
  local autocast_state = torch._autocast_state()
  local globals = {}
  local threads = rawget(self, '_threads')
  local per = math.max(1, torch.get_num_threads() // r)
  -- With a core or less per replica, the replicas run on this thread's OpenMP team (replica 1 here,
  -- the others' calls on its workers: torch._lua_threads_run), whose workers are spinning, ready,
  -- after the kernels before; waking the Lua threads' own sleeping pthreads costs up to a
  -- millisecond on some virtual machines. Otherwise the Lua threads run them, and from here to the
  -- last wait this thread runs on its share of the cores: lowering its limit also releases its idle
  -- OpenMP workers, which would otherwise spin on the cores the replicas use.
  local team = per == 1
  local prev_threads = not team and torch._set_thread_num_threads(per)
  local results, err = {}, nil
  local started = {}
  local okall, e = pcall(function()
    for i = 2, r do
      local th = threads[i]
      if not th or th.threads ~= per then
        if th then th.handle:close() end
        -- the thread's errors start with its name
        th = { handle = torch._lua_thread { name = string.format('DataParallel: in replica %d on device %s', i,
          tostring(devices[i])), threads = per, device = devices[i] }, threads = per }
        threads[i] = th
      end
      if not rawget(self, '_fresh') then
        -- the names a fresh state has (libraries): every other global of the caller is the user's
        th.handle:start(function()
          local t = {}
          for k in pairs(_G) do t[k] = true end
          return t
        end, {})
        rawset(self, '_fresh', th.handle:wait())
      end
      if i == 2 then
        local fresh = rawget(self, '_fresh')
        for k, v in pairs(_G) do
          if type(k) == 'string' and not fresh[k] and type(v) ~= 'thread' then globals[k] = v end
        end
      end
      local replica_args = { self.module, devices[i], chunks[i], autocast_state, globals }
      local opts = { subst = replica_subst(self.module, devices[i], grad), grad_enabled = grad, defer = team }
      for _ = 1, 1000 do
        local ok, e = pcall(th.handle.start, th.handle, DataParallel._run_replica, replica_args, opts)
        if ok then break end
        -- a global of the caller that cannot move to another state (an open file, a coroutine):
        -- the replica goes without it
        local key = tostring(e):match('argument 5%.([%a_][%w_]*)')
        if not key or globals[key] == nil then error(e, 0) end
        globals[key] = nil
      end
      started[i] = true
    end
    -- replica 1, here, with the wrapped module itself
    local function replica1()
      local ok1, res1 = pcall(function() return table.pack(self.module(table.unpack(chunks[1], 1, args.n))) end)
      results[1] = res1
      if not ok1 then err = string.format('DataParallel: in replica 1 on device %s: %s', tostring(devices[1]), tostring(res1)) end
    end
    if team then
      local handles = {}
      for i = 2, r do handles[i - 1] = threads[i].handle end
      torch._lua_threads_run(handles, replica1, 1)
    else
      replica1()
    end
  end)
  if not okall then err = err or tostring(e) end
  for i = 2, r do
    if started[i] then
      local okw, res = pcall(threads[i].handle.wait, threads[i].handle)
      if okw then results[i] = res
      elseif not err then err = tostring(res)
      end
    end
  end
  if not team then torch._set_thread_num_threads(prev_threads) end
  if err then error(err, 2) end
  local n = results[1].n
  local out = {}
  for j = 1, n do
    local col = {}
    for i = 1, r do col[i] = results[i][j] end
    out[j] = gather(col, self.output_device, self.dim, n == 1 and 'output' or 'output ' .. j)
  end
  return table.unpack(out, 1, n)
end

function DataParallel:extra_repr() return '' end

return { DataParallel = DataParallel }
