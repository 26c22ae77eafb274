-- nn.DataParallel: one module, several devices of one type, the batch split between them.
--
-- Each forward scatters the tensor arguments along `dim` in chunks of ceil(n / k), replicates the
-- module (its parameters copied to each device through autograd, its buffers copied), runs the
-- replicas at once and gathers their outputs on the output device, as PyTorch's DataParallel does.
-- A Lua state runs one thread at a time, so replica 1 runs here, on the caller's thread, with the
-- wrapped module itself (its buffers' in-place updates persist, as on PyTorch's first device), and
-- every other replica runs in a Lua state of its own on its own thread (torch._lua_thread), into
-- which the module is copied with its parameters replaced by their replicas. The copy is kept there
-- between forwards, which then send only the new replicas of the parameters and buffers, for as long
-- as neither the module nor the copy changes (see "keeping replicas" below). The machine's kernel
-- threads are shared out between the replicas. Backward goes through the copies, so the replicas'
-- gradients are summed into the wrapped module's parameters; the autograd engine runs each
-- device's part of the graph on a thread of its own.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local as_int = require('torch.composite').as_int

local DataParallel = Module:extend('DataParallel')

local function is_tensor(v) return torch.is_tensor(v) end

-- a device id (a CUDA ordinal, a device or a string) as a device with its index
local function parse_device(what, d)
  if type(d) == 'number' then
    d = as_int(d)
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
  dim = as_int(dim)
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

-- ---- keeping replicas ----
-- A replica's copy of the module stays in its Lua state between forwards, for as long as neither
-- the module nor the copy changes. Every module instance counts the changes made to its fields
-- (nn.Module's CHANGES), so a description of a module tree (describe below) is: each module with
-- its count and metatable, in the order of its fields, and a walk of every other table a field
-- holds (keys and values in iteration order, metatables, functions and tensors by identity, tables
-- met before by their first visit). The caller describes the module at each forward and copies it
-- afresh when the description differs; the replica describes its copy after each forward and drops
-- it when the forward changed it (a tree of modules alone, with no plain table, is compared by its
-- modules' counts and metatables, without a walk). So every forward starts from what the module
-- is, as PyTorch replicates the module at every forward. Classes (tables with an __index), loaded
-- modules and the globals are named, not walked (a copy refers to them by name too).

local WALK_MAX = 100000 -- values walked at most; a larger module is copied at every forward
local SEEN, TABLE, END, TOKEN, FLOAT, NIL, MODULE = {}, {}, {}, {}, {}, {}, {}
local VALS, CHANGES = Module._VALS, Module._CHANGES
local getmetatable_raw = debug.getmetatable
local libs, nlibs = {}, -1

-- the modules of package.loaded, as a set (rebuilt when a module loads)
local function libset()
  local n = 0
  for _ in pairs(package.loaded) do n = n + 1 end
  if n ~= nlibs then
    libs, nlibs = {}, n
    for _, m in pairs(package.loaded) do libs[m] = true end
  end
  return libs
end

-- appends x to the walk (or compares it with the reference walk)
local function put(w, x)
  if x == nil then x = NIL end
  local n = w.n + 1
  w.n = n
  local ref = w.ref
  if ref then
    if ref[n] ~= x then w.same = false end
  else
    w.out[n] = x
  end
end

-- Walks v into w.out (w.ref: compares with it instead, clearing w.same at the first difference).
-- w.tok maps the tensors of the current replicas to their indices (walked as TOKEN, index), and
-- w.slots, when set, collects where they are: {table, key, j = index}.
-- Modules are walked through their fields (w.modules) or, by default, as any table. The loaded
-- modules are looked up when the walk first meets a table that is not a module (listing them costs
-- more than walking a small module tree).
local walk_module
local function walk(w, v, owner, key)
  local t = type(v)
  local walked = t == 'table' and rawget(v, '__index') == nil and v ~= _G
  local module = walked and w.modules and rawget(v, VALS) ~= nil
  if walked and not module then
    if not w.lib then w.lib = libset() end
    walked = not w.lib[v]
  end
  if walked then
    local id = w.seen[v]
    if id then
      put(w, SEEN); put(w, id)
      return
    end
    if module then return walk_module(w, v) end
    w.nseen = w.nseen + 1
    w.seen[v] = w.nseen
    w.plain = true
    put(w, TABLE); put(w, getmetatable_raw(v))
    for k, x in next, v do
      if w.tok[k] or w.n > WALK_MAX then w.same = false; w.toolong = true; return end
      walk(w, k)
      walk(w, x, v, k)
      if not w.same then return end
    end
    put(w, END)
  elseif t == 'function' then
    -- by identity: the copy of a function is made once and kept (bindings/lua_transfer.h), so a
    -- copy of the module made again would hold the same copy of it
    put(w, v)
  else
    local j = w.tok[v]
    if j then
      put(w, TOKEN); put(w, j)
      if w.slots then w.slots[#w.slots + 1] = { owner, key, j = j } end
    else
      put(w, v)
      if t == 'number' and math.type(v) == 'float' then put(w, FLOAT) end
    end
  end
end

-- a module: itself, its change count and metatable, its submodules, and the fields that are neither
-- modules nor covered by the count (the contents of tables)
function walk_module(w, m)
  w.nseen = w.nseen + 1
  w.seen[m] = w.nseen
  if w.mods then w.mods[#w.mods + 1] = m end
  put(w, MODULE); put(w, m); put(w, rawget(m, CHANGES)); put(w, getmetatable_raw(m))
  local vals = rawget(m, VALS)
  for k, x in next, vals do
    if type(x) == 'table' then -- other fields (tensors included) change only by assignment: counted
      put(w, k)
      walk(w, x, vals, k)
      if not w.same then return end
    end
  end
  put(w, END)
end

-- A description that met no plain table (only modules, and values by identity) is fixed by the
-- modules' counts and metatables alone: every change to a module's fields ticks its count, and
-- the fields decide which modules the walk meets. It keeps them (fast), and is compared through
-- them, without a walk.
local function same_modules(fast, m)
  local mods, counts, mts = fast.mods, fast.counts, fast.mts
  if not rawequal(mods[1], m) then return false end
  for i = 1, #mods do
    local x = mods[i]
    if rawget(x, CHANGES) ~= counts[i] or getmetatable_raw(x) ~= mts[i] then return false end
  end
  return true
end

-- the description of module m (or, given ref, whether m's equals ref), and the tables met; nil when
-- m is too large to keep copies of. Given slots (at a copy, to find where the replicas of the
-- parameters and buffers are), every field of every table is walked, modules' too.
local function describe(m, tok, ref, slots)
  if ref and ref.fast then return same_modules(ref.fast, m), ref.fast.seen end
  local w = { out = {}, ref = ref, tok = tok or {}, slots = slots, n = 0, seen = {}, nseen = 0, same = true,
              lib = false, modules = not slots, mods = not ref and not slots and {} or nil,
              plain = false }
  walk(w, m)
  if w.toolong then return nil end
  if ref then return w.same and w.n == ref.n, w.seen end
  w.out.n = w.n
  if w.mods and not w.plain then
    local counts, mts = {}, {}
    for i, x in ipairs(w.mods) do counts[i], mts[i] = rawget(x, CHANGES), getmetatable_raw(x) end
    w.out.fast = { mods = w.mods, counts = counts, mts = mts, seen = w.seen }
  end
  return w.out, w.seen
end
DataParallel._describe = describe

-- the tensors of arrays a and b as TOKEN indices: a's 1..#a, b's #a + 1..
local function tokens(a, b)
  local tok = {}
  for j, t in ipairs(a) do tok[t] = j end
  for j, t in ipairs(b) do tok[t] = #a + j end
  return tok
end

-- in a replica's state: its kept copy ({module, slots, description}), or nil
local kept

-- Runs in a replica's own Lua state: the module (a fresh copy, or false for the kept copy with the
-- new replicas of the parameters and buffers put in their places) on its chunk, with the caller's
-- autocast state (restored after: the thread's cast cache goes with it) and the caller's own
-- globals, which the module's functions may use. Returns the results, with kept = whether the copy
-- is kept for the next forward.
function DataParallel._run_replica(module, device, packed, autocast_state, globals, params, buffers)
  for k, v in pairs(globals) do _G[k] = v end
  torch.cpu.set_device(device.type == 'cpu' and device or torch.device('cpu'))
  if device.type == 'cuda' then torch.cuda.set_device(device.index) end
  local tok = tokens(params, buffers)
  if module then
    local slots = {}
    local desc = describe(module, tok, nil, slots) and describe(module, tok)
    kept = desc and { module = module, slots = slots, desc = desc } or nil
  elseif kept then
    module = kept.module
    local np = #params
    for _, slot in ipairs(kept.slots) do
      local t = slot.j <= np and params[slot.j] or buffers[slot.j - np]
      rawset(slot[1], slot[2], t)
    end
  else
    error('DataParallel: the replica lost its copy of the module', 0)
  end
  local saved = torch._autocast_state()
  torch._set_autocast_state(autocast_state)
  local res = table.pack(pcall(module, table.unpack(packed, 1, packed.n)))
  torch._set_autocast_state(saved)
  if kept and not describe(kept.module, tok, kept.desc) then kept = nil end
  if not res[1] then kept = nil; error(res[2], 0) end
  local out = table.pack(table.unpack(res, 2, res.n))
  out.kept = kept ~= nil
  return out
end

-- the replicas of the parameters and buffers on dev: parameters through autograd (detached when
-- grad is off), buffers copied
local function replicate(params, buffers, dev, grad)
  local p, b = {}, {}
  for j, t in ipairs(params) do p[j] = move(grad and t or t:detach(), dev) end
  for j, t in ipairs(buffers) do b[j] = t:detach():to(dev, { copy = true }) end
  return p, b
end

-- the module's parameters and buffers (listed once a forward: each list walks the module tree),
-- checked to be on device_ids[1]
function DataParallel:_check_devices(params, buffers)
  local first = self.device_ids[1]
  local function check(t)
    if t.device ~= first then
      error(string.format('module must have its parameters and buffers on device %s (device_ids[1]) but found '
        .. 'one of them on device: %s', tostring(first), tostring(t.device)), 0)
    end
  end
  for _, p in ipairs(params) do check(p) end
  for _, b in ipairs(buffers) do check(b) end
end

function DataParallel:forward(...)
  local args = table.pack(...)
  local devices = self.device_ids
  local k = #devices
  if k == 1 then
    local packed = chunk_of(args, 1, 1, self.dim, devices[1])
    return self.module(table.unpack(packed, 1, args.n))
  end
  -- whether the replicas' kept copies of the module are still good: the module walks as it did at
  -- their copy (and, below, shares nothing with the globals and the arguments sent beside it); the
  -- parameter and buffer lists taken then are good while it does
  local desc = rawget(self, '_desc')
  local same, seen = false, nil
  if desc then same, seen = describe(self.module, nil, desc) end
  local lists = same and rawget(self, '_lists')
  local module_params, module_buffers
  if lists then
    module_params, module_buffers = lists[1], lists[2]
  else
    module_params, module_buffers = self.module:parameters(), self.module:buffers()
  end
  self:_check_devices(module_params, module_buffers)
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
  if not same then
    desc, seen = describe(self.module)
    rawset(self, '_desc', desc)
    rawset(self, '_lists', desc and { module_params, module_buffers } or nil)
    -- every kept copy is out of date, also those of replicas this forward does not use
    for _, th in pairs(threads) do th.kept = false end
  end
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
        if same then
          for _, v in pairs(globals) do
            if seen[v] then same = false end
          end
        end
      end
      local keep = same
      if keep then
        for j = 1, args.n do
          if seen[chunks[i][j]] then keep = false end
        end
      end
      local params, buffers = replicate(module_params, module_buffers, devices[i], grad)
      local send = not (keep and th.kept)
      local replica_args = { send and self.module, devices[i], chunks[i], autocast_state, globals, params, buffers }
      local opts = { grad_enabled = grad, defer = team }
      if send then
        rawset(self, '_copies', (rawget(self, '_copies') or 0) + 1)
        local subst = {}
        for j, t in ipairs(module_params) do subst[t] = params[j] end
        for j, t in ipairs(module_buffers) do if subst[t] == nil then subst[t] = buffers[j] end end
        opts.subst = subst
      end
      th.kept = false
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
      if okw then
        results[i] = res
        threads[i].kept = res.kept
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
