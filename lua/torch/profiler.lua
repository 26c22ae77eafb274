-- torch.profiler: where the time of a script goes, as PyTorch's profiler shows it.
--   local prof <close> = torch.profiler.profile{record_shapes = true, profile_memory = true}
--   do local _ <close> = torch.profiler.record_function('step'); ... end
--   prof:stop(); print(prof:key_averages():table{sort_by = 'self_cpu_time_total', row_limit = 10})
--   prof:export_chrome_trace('trace.json')
-- While a profile runs, the torch functions (torch.*, torch.linalg.*, torch.special.*), the tensor
-- methods (found through the tensor metatable's __index, whose method table is torch.Tensor), the
-- tensor operators (the metatable's __add, ...), torch.nn.functional's functions, nn.Module calls
-- (through a hook in Module.__call) and backward are replaced by wrappers that record an event each;
-- stopping puts the original functions back, so that nothing is left behind and nothing costs when
-- no profile runs. A wrapper kept elsewhere (a module loaded during the profile that copied
-- torch.add into a local) calls the original straight through once the profile has stopped.
-- Only this Lua state is profiled: DataLoader workers run in states of their own and are not seen.
local torch = require 'torch'
local options = require 'torch.options'
local as_int = require('torch.composite').as_int

local profiler = {}

-- what the recording itself uses, taken before anything is wrapped
local clock, is_tensor, allocated = torch.utils.clock, torch.is_tensor, torch.memory.allocated
local running, getinfo = coroutine.running, debug.getinfo
local pack, unpack, select, type, pcall, error = table.pack, table.unpack, select, type, pcall, error
local rawget, rawset, pairs, setmetatable = rawget, rawset, pairs, setmetatable

local active = nil -- the profile that records now (one at a time, as in PyTorch)

-- ---- events ----
-- An event: name, t0 and t1 (seconds of torch.utils.clock), thread (1 for the main coroutine, then
-- 2, 3, ... in the order coroutines first record), depth (0 at the top), parent (the enclosing
-- event of the same coroutine), child (the time of its direct children), shapes, m0 / mem (the
-- change of torch.memory.allocated over it) and child_mem, stack ('source:line' of the call).
local function thread_of(p)
  local co = running()
  local th = p.threads[co]
  if th == nil then
    p.nthreads = p.nthreads + 1
    th = { id = p.nthreads, top = nil }
    p.threads[co] = th
  end
  return th
end

local function shape_of(v)
  if is_tensor(v) then return v.shape end
  if type(v) == 'table' and is_tensor(rawget(v, 1)) then -- a list of tensors (torch.cat's)
    local s = {}
    for i = 1, #v do s[i] = is_tensor(v[i]) and v[i].shape or {} end
    return s
  end
  return {}
end

-- opens an event of p in the running coroutine; first is the first argument to record (2 skips
-- a module's self); level is the stack level of the call to name with_stack's source
local function open(p, name, level, first, ...)
  local th = thread_of(p)
  local parent = th.top
  local ev = { name = name, thread = th.id, parent = parent, depth = parent and parent.depth + 1 or 0, child = 0,
    child_mem = 0 }
  if p.record_shapes then
    local shapes = {}
    for i = first, select('#', ...) do shapes[#shapes + 1] = shape_of((select(i, ...))) end
    ev.shapes = shapes
  end
  if p.with_stack and level then
    local info = getinfo(level + 1, 'Sl')
    if info then ev.stack = info.short_src .. ':' .. info.currentline end
  end
  p.list[#p.list + 1] = ev
  th.top = ev
  ev.th = th
  if p.profile_memory then ev.m0 = allocated(p.memory_device) end
  ev.t0 = clock()
  return ev
end

local function close(p, ev)
  local t1 = clock()
  ev.t1 = t1
  local parent = ev.parent
  if ev.m0 ~= nil then
    ev.mem = allocated(p.memory_device) - ev.m0
    if parent then parent.child_mem = parent.child_mem + ev.mem end
  end
  if parent then parent.child = parent.child + (t1 - ev.t0) end
  ev.th.top = parent
end

-- ---- wrappers ----
-- A wrapper calls the original through a trampoline, a Lua function that names the original as
-- the user's call did (an upvalue with the function's name), so that lua_getinfo(L, 0, "n") inside
-- it (luaL_argerror's "bad argument #2 to 'add'") reads the same name. An error's position
-- (luaL_where(L, 1) in C, error(msg, 2) in Lua) then names the trampoline's line: the wrapper puts
-- back its caller's place, as it would have stood without the profile, and undoes the count of
-- self that a method call (x:add(...)) makes and the trampoline's plain call does not.
local KEYWORDS = {}
for w in ('and break do else elseif end false for function goto if in local nil not or repeat return then true until while')
  :gmatch('%a+') do KEYWORDS[w] = true end

-- the name a trampoline gives the function of key k (an operator's without its __)
local function callee_name(k)
  local id = k:gsub('^__', '')
  if not id:match('^[%a_][%w_]*$') or KEYWORDS[id] then id = 'fn' end
  return id
end

local function trampoline(id, fn)
  return load('local ' .. id .. ' = ...\nreturn function(...) return select(1, ' .. id .. '(...)) end',
    '=torch.profiler')(fn)
end

-- the place an error raised by a trampoline's callee names: 'torch.profiler:2: ' (by Lua's own
-- error: the library's looks past the trampoline, a chunk of the library)
local TRAMP_WHERE = select(2, pcall(trampoline('f', _G.error), '', 1))

-- the error e of a trampoline's callee as it reads without the profile; called by the wrapper
-- (level 2 here), whose caller (level 3) made the call
local function relocate(e, id)
  if type(e) ~= 'string' or e:sub(1, #TRAMP_WHERE) ~= TRAMP_WHERE then return e end
  local caller = getinfo(3, 'Sl')
  local place = (caller and caller.currentline > 0) and caller.short_src .. ':' .. caller.currentline .. ': ' or ''
  e = place .. e:sub(#TRAMP_WHERE + 1)
  local how = getinfo(2, 'n')
  local called = how and how.name
  local at, n, rest = e:match("()bad argument #(%d+) to '" .. id:gsub('%p', '%%%0') .. "'()")
  if called and n then
    n = tonumber(n)
    if how.namewhat == 'method' then n = n - 1 end
    local head = e:sub(1, at - 1)
    if n == 0 then
      e = head .. "calling '" .. called .. "' on bad self" .. e:sub(rest)
    else
      e = head .. 'bad argument #' .. n .. " to '" .. called .. "'" .. e:sub(rest)
    end
  end
  return e
end

-- the wrapper of fn, recorded as name; cached, so that starting another profile makes none anew
local wrappers = setmetatable({}, { __mode = 'k' }) -- fn -> name -> wrapper
local is_wrapper = setmetatable({}, { __mode = 'k' })

local function wrapper(name, key, fn)
  local byname = wrappers[fn]
  if byname == nil then
    byname = {}
    wrappers[fn] = byname
  end
  local w = byname[name]
  if w ~= nil then return w end
  local id = callee_name(key)
  local tramp = trampoline(id, fn)
  w = function(...)
    local p = active
    if p == nil or not p.recording then return fn(...) end
    local ev = open(p, name, 2, 1, ...)
    local r = pack(pcall(tramp, ...))
    close(p, ev)
    if r[1] then return unpack(r, 2, r.n) end
    error(relocate(r[2], id), 0)
  end
  byname[name] = w
  is_wrapper[w] = true
  return w
end

-- ---- what is wrapped ----
-- accessors and state, not operations: left out (they would be most of the events and none of the
-- time); so are the context managers, seeds, saving and loading, and names starting with _
local SKIP = {}
for w in ([[Event Stream autocast current_stream default_stream stream device enable_grad no_grad
  manual_seed initial_seed seed isinstance typename load save promote_types result_type can_cast
  broadcast_shapes numel size dim ndimension nelement stride element_size storage_offset type
  requires_grad_ retain_grad record_stream data_ptr gradcheck profiler]]):gmatch('%S+') do SKIP[w] = true end

local function wanted(k, v)
  return type(k) == 'string' and type(v) == 'function' and not SKIP[k] and not k:match('^_')
    and not k:match('^is_') and not k:match('^get_') and not k:match('^set_')
end

-- names of their own: backward is one event, as PyTorch's autograd engine is
local RENAME = { ['Tensor.backward'] = 'autograd::backward', ['torch.autograd.backward'] = 'autograd::backward',
  ['torch.autograd.grad'] = 'autograd::grad' }

local OPERATORS = { '__add', '__sub', '__mul', '__div', '__mod', '__pow', '__unm', '__idiv', '__band', '__bor',
  '__bxor', '__shl', '__shr', '__bnot' }

-- the tables and keys to wrap now: {table, key, event name}
local function targets()
  local F = require 'torch.nn.functional'
  local list = {}
  local function add(t, prefix, k)
    local name = prefix .. k
    list[#list + 1] = { t, k, RENAME[name] or name }
  end
  local function each(t, prefix)
    for k, v in pairs(t) do
      if wanted(k, v) then add(t, prefix, k) end
    end
  end
  each(torch, 'torch.')
  each(torch.linalg, 'torch.linalg.')
  each(torch.special, 'torch.special.')
  each(torch.Tensor, 'Tensor.')
  each(F, 'nn.functional.')
  add(torch.autograd, 'torch.autograd.', 'backward')
  add(torch.autograd, 'torch.autograd.', 'grad')
  local mt = debug.getregistry()['torch.Tensor']
  for _, k in ipairs(OPERATORS) do
    if type(rawget(mt, k)) == 'function' then add(mt, 'Tensor.', k) end
  end
  -- each optimizer's step and zero_grad, named as PyTorch names them (Optimizer.step#SGD.step); an
  -- inherited method gets a wrapper in the class itself (its slot is emptied again on stop)
  local optim = require 'torch.optim'
  for cname, cls in pairs(optim) do
    if type(cls) == 'table' and cname ~= 'Optimizer' and type(cls.step) == 'function' then
      for _, k in ipairs { 'step', 'zero_grad' } do
        if type(cls[k]) == 'function' then
          list[#list + 1] = { cls, k, 'Optimizer.' .. k .. '#' .. cname .. '.' .. k, cls[k] }
        end
      end
    end
  end
  return list
end

-- modules are named by their class: nn.Linear for torch.nn's, 'nn.Module: Net' for others
local module_names = setmetatable({}, { __mode = 'k' })
local function module_name(m)
  local cls = getmetatable(m)
  local name = module_names[cls]
  if name == nil then
    local n = tostring(rawget(cls, '__name') or 'Module')
    name = rawequal(rawget(torch.nn, n), cls) and 'nn.' .. n or 'nn.Module: ' .. n
    module_names[cls] = name
  end
  return name
end

local function module_hook(m, call, ...)
  local p = active
  if p == nil or not p.recording then return call(m, ...) end
  local ev = open(p, module_name(m), 2, 1, ...)
  local r = pack(pcall(call, m, ...))
  close(p, ev)
  if r[1] then return unpack(r, 2, r.n) end
  error(r[2], 0)
end
is_wrapper[module_hook] = true

local function install(p)
  local list = targets()
  local saved = {}
  for i, t in ipairs(list) do
    local tbl, k, name = t[1], t[2], t[3]
    local orig = rawget(tbl, k) -- nil for an inherited method (t[4]), put back as nil
    saved[i] = { tbl, k, orig }
    rawset(tbl, k, wrapper(name, k, orig or t[4]))
  end
  p.saved = saved
  local Module = require 'torch.nn.module'
  p.saved_hook = Module._set_profile_hook(module_hook)
end

local function uninstall(p)
  for _, s in ipairs(p.saved) do
    local tbl, k, orig = s[1], s[2], s[3]
    -- a slot the user set anew meanwhile keeps the user's value
    if is_wrapper[rawget(tbl, k)] then rawset(tbl, k, orig) end
  end
  p.saved = nil
  require('torch.nn.module')._set_profile_hook(p.saved_hook)
  p.saved_hook = nil
end

-- ---- schedule ----
--- torch.profiler.schedule{wait, warmup, active, repeat = 0, skip_first = 0} -> fn(step) -> action:
--- 'none' (not recorded), 'warmup' (not recorded), 'record', or 'record_and_save' (the last step
--- of an active run: on_trace_ready is called when it ends); repeat = 0 repeats for ever
function profiler.schedule(o)
  o = options.check(o, 'profiler.schedule', { 'wait', 'warmup', 'active', 'repeat', 'skip_first' })
  local function count(k, default, min)
    local v = o[k] == nil and default or o[k]
    v = as_int(v)
    if math.type(v) ~= 'integer' or v < min then
      error(string.format('profiler.schedule: %s must be an integer >= %d, got %s', k, min, tostring(v)), 4)
    end
    return v
  end
  local wait, warmup, act = count('wait', 0, 0), count('warmup', 0, 0), count('active', 1, 1)
  local rep, skip = count('repeat', 0, 0), count('skip_first', 0, 0)
  local cycle = wait + warmup + act
  return function(step)
    if step < skip then return 'none' end
    local s = step - skip
    if rep > 0 and s // cycle >= rep then return 'none' end
    local m = s % cycle
    if m < wait then return 'none' end
    if m < wait + warmup then return 'warmup' end
    if m < cycle - 1 then return 'record' end
    return 'record_and_save'
  end
end

profiler.ProfilerActivity = { CPU = 'cpu', CUDA = 'cuda' }

-- ---- the profile ----
local Profile = {}
Profile.__index = Profile
Profile.__name = 'torch.profiler.profile'

local OPTIONS = { 'record_shapes', 'profile_memory', 'with_stack', 'schedule', 'on_trace_ready', 'activities',
  'memory_device' }

local function check_options(o, level)
  o = options.check(o, 'profiler.profile', OPTIONS, level + 1)
  if o.schedule ~= nil and type(o.schedule) ~= 'function' then
    error('profiler.profile: schedule must be a function of the step (torch.profiler.schedule{...}), got '
      .. type(o.schedule), level)
  end
  if o.on_trace_ready ~= nil and type(o.on_trace_ready) ~= 'function' then
    error('profiler.profile: on_trace_ready must be a function, got ' .. type(o.on_trace_ready), level)
  end
  if o.activities ~= nil then
    if type(o.activities) ~= 'table' then
      error('profiler.profile: activities must be a list of torch.profiler.ProfilerActivity values', level)
    end
    for _, a in ipairs(o.activities) do
      if a ~= 'cpu' and a ~= 'cuda' then
        error("profiler.profile: unknown activity '" .. tostring(a) .. "' (cpu or cuda)", level)
      end
    end
  end
  return o
end

local function set_action(p, action)
  p.action = action
  p.recording = action == 'record' or action == 'record_and_save'
end

local function begin(p, level)
  if active ~= nil then
    error('profiler.profile: another profile is already running (one at a time, as in PyTorch); stop it first',
      level + 1)
  end
  active = p
  install(p)
  p.running = true
end

--- prof:start() -> prof: records again after stop (a running profile: nothing to do)
function Profile:start()
  if self.running then return self end
  begin(self, 2)
  return self
end

--- prof:stop() -> prof: puts the original functions back; events still open are dropped
function Profile:stop()
  if not self.running then return self end
  uninstall(self)
  active = nil
  self.running = false
  if self.action == 'record_and_save' and self.on_trace_ready then self.on_trace_ready(self) end
  return self
end
Profile.__close = Profile.stop

--- prof:step(): the next step of the schedule (without one, nothing happens)
function Profile:step()
  if not self.schedule then return end
  local prev = self.action
  self.step_num = self.step_num + 1
  local action = self.schedule(self.step_num)
  if prev == 'record_and_save' then
    if self.on_trace_ready then self.on_trace_ready(self) end
  end
  if not (prev == 'record' or prev == 'warmup') and (action ~= 'none') then
    self.list = {} -- a new run of warmup and active steps: the events of the last one go
  end
  set_action(self, action)
end

local function new_profile(o, level)
  o = check_options(o, level + 1)
  local p = setmetatable({
    record_shapes = o.record_shapes and true or false,
    profile_memory = o.profile_memory and true or false,
    with_stack = o.with_stack and true or false,
    schedule = o.schedule, on_trace_ready = o.on_trace_ready, step_num = 0,
    list = {}, threads = setmetatable({}, { __mode = 'k' }), nthreads = 0, t_start = clock(),
  }, Profile)
  if o.memory_device ~= nil then p.memory_device = torch.device(o.memory_device) end
  set_action(p, p.schedule and p.schedule(0) or 'record')
  return p
end

--- torch.profiler.profile(opts) -> a running profile (a to-be-closed value that stops it);
--- torch.profiler.profile(opts, fn, ...) -> the profile, after running fn(...) inside it.
--- opts: record_shapes, profile_memory (the change of torch.memory.allocated(memory_device) per
--- event; memory_device defaults to the current CPU device), with_stack, schedule, on_trace_ready,
--- activities (accepted for PyTorch's scripts; only the host side is timed)
function profiler.profile(o, fn, ...)
  local p = new_profile(o, 2)
  begin(p, 2)
  if fn == nil then return p end
  local r = pack(pcall(fn, ...))
  p:stop()
  if not r[1] then error(r[2], 0) end
  return p
end

-- ---- record_function ----
local Range = {}
Range.__index = Range
Range.__name = 'torch.profiler.record_function'
function Range:__close()
  local p, ev = self.profile, self.event
  if ev ~= nil and ev.t1 == nil then close(p, ev) end
end

--- torch.profiler.record_function(name) -> a to-be-closed value: the range from here to its close
--- is an event named name; record_function(name, fn, ...) -> fn's results, run as that event.
--- Outside a profile it records nothing.
function profiler.record_function(name, fn, ...)
  if type(name) ~= 'string' then
    error('profiler.record_function: expected a name (a string), got ' .. (is_tensor(name) and 'a tensor' or type(name)), 2)
  end
  local p = active
  local ev = (p ~= nil and p.recording) and open(p, name, 2, 1) or nil
  if fn == nil then return setmetatable({ profile = p, event = ev }, Range) end
  local r = pack(pcall(fn, ...))
  if ev ~= nil then close(p, ev) end
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

-- ---- results ----
local function us(seconds) return seconds * 1e6 end

local function shapes_text(shapes)
  if shapes == nil then return '' end
  local function one(s)
    if type(s) ~= 'table' then return tostring(s) end
    local parts = {}
    for i = 1, #s do parts[i] = one(s[i]) end
    return '[' .. table.concat(parts, ', ') .. ']'
  end
  return one(shapes)
end

--- prof:events() -> array of the finished events, in the order they started: {name, start (us
--- from the profile's start), duration (us), self_time (us: duration less the direct children's),
--- thread, depth, input_shapes (with record_shapes: one shape per argument, {} for non-tensors),
--- memory and self_memory (bytes, with profile_memory), stack (with with_stack)}
function Profile:events()
  local out = {}
  for _, ev in ipairs(self.list) do
    if ev.t1 ~= nil then
      local dur = ev.t1 - ev.t0
      out[#out + 1] = {
        name = ev.name, start = us(ev.t0 - self.t_start), duration = us(dur), self_time = us(dur - ev.child),
        thread = ev.thread, depth = ev.depth, input_shapes = ev.shapes, memory = ev.mem,
        self_memory = ev.mem and ev.mem - ev.child_mem, stack = ev.stack,
      }
    end
  end
  return out
end

local Averages = {}
Averages.__index = Averages
Averages.__name = 'torch.profiler.EventList'

--- prof:key_averages{group_by_input_shape = false} -> rows, one per name (and shapes), in the order
--- first seen: {key, name, count, cpu_time_total, self_cpu_time_total, cpu_time_avg (also
--- cpu_time), self_cpu_time_avg, cpu_memory_usage, self_cpu_memory_usage, input_shapes} (times in
--- microseconds, memory in bytes); rows:table{...} formats them
function Profile:key_averages(o)
  o = options.check(o, 'key_averages', { 'group_by_input_shape' })
  local rows, by = setmetatable({ profile = self }, Averages), {}
  for _, ev in ipairs(self:events()) do
    local shapes = (o.group_by_input_shape and ev.input_shapes) and shapes_text(ev.input_shapes) or ''
    local key = ev.name .. '\0' .. shapes
    local r = by[key]
    if r == nil then
      r = { key = ev.name, name = ev.name, count = 0, cpu_time_total = 0, self_cpu_time_total = 0,
        cpu_memory_usage = 0, self_cpu_memory_usage = 0, input_shapes = shapes }
      by[key] = r
      rows[#rows + 1] = r
    end
    r.count = r.count + 1
    r.cpu_time_total = r.cpu_time_total + ev.duration
    r.self_cpu_time_total = r.self_cpu_time_total + ev.self_time
    r.cpu_memory_usage = r.cpu_memory_usage + (ev.memory or 0)
    r.self_cpu_memory_usage = r.self_cpu_memory_usage + (ev.self_memory or 0)
  end
  for _, r in ipairs(rows) do
    r.cpu_time_avg = r.cpu_time_total / r.count
    r.cpu_time = r.cpu_time_avg
    r.self_cpu_time_avg = r.self_cpu_time_total / r.count
  end
  rows.group_by_input_shape = o.group_by_input_shape and true or false
  return rows
end

-- PyTorch's _format_time and _format_memory
local function fmt_time(t)
  if t >= 1e6 then return string.format('%.3fs', t / 1e6) end
  if t >= 1e3 then return string.format('%.3fms', t / 1e3) end
  return string.format('%.3fus', t)
end
local function fmt_memory(b)
  local KB, MB, GB = 1024, 1024 * 1024, 1024 * 1024 * 1024
  local a = math.abs(b)
  if a >= GB then return string.format('%.2f Gb', b / GB) end
  if a >= MB then return string.format('%.2f Mb', b / MB) end
  if a >= KB then return string.format('%.2f Kb', b / KB) end
  return string.format('%d b', b)
end
local function pct(a, total) return string.format('%.2f%%', total > 0 and a * 100 / total or 0) end

local SORT_KEYS = { 'self_cpu_time_total', 'cpu_time_total', 'count', 'cpu_time_avg', 'cpu_time',
  'self_cpu_time_avg', 'cpu_memory_usage', 'self_cpu_memory_usage' }

--- rows:table{sort_by = 'self_cpu_time_total', row_limit = 100, max_name_column_width = 55,
--- max_shapes_column_width = 80} -> the text table of PyTorch's profiler: Name, Self CPU %, Self CPU,
--- CPU total %, CPU total, CPU time avg, (CPU Mem, Self CPU Mem,) # of Calls, (Input Shapes), and a
--- footer 'Self CPU time total: X'. Rows sort descending by sort_by.
function Averages:table(o)
  o = options.check(o, 'table', { 'sort_by', 'row_limit', 'max_name_column_width', 'max_shapes_column_width' })
  local sort_by = o.sort_by or 'self_cpu_time_total'
  local known = false
  for _, k in ipairs(SORT_KEYS) do known = known or k == sort_by end
  if not known then
    error(string.format("table: unknown sort_by '%s' (one of %s)", tostring(sort_by), table.concat(SORT_KEYS, ', ')), 2)
  end
  local row_limit = o.row_limit or 100
  row_limit = as_int(row_limit)
  if math.type(row_limit) ~= 'integer' then error('table: row_limit must be an integer, got ' .. tostring(row_limit), 2) end
  local order = {}
  for i = 1, #self do order[i] = i end
  table.sort(order, function(a, b)
    local x, y = self[a][sort_by], self[b][sort_by]
    if x ~= y then return x > y end
    return a < b
  end)
  local total = 0
  for i = 1, #self do total = total + self[i].self_cpu_time_total end
  local p = self.profile
  local memory = p and p.profile_memory
  local shapes = self.group_by_input_shape
  local name_w = 4
  local shown = {}
  for i = 1, math.min(#order, row_limit < 0 and #order or row_limit) do
    shown[i] = self[order[i]]
    name_w = math.max(name_w, #shown[i].name + 4)
  end
  name_w = math.min(name_w, o.max_name_column_width or 55)
  local shapes_w = 12
  if shapes then
    for _, r in ipairs(shown) do shapes_w = math.max(shapes_w, #r.input_shapes + 4) end
    shapes_w = math.min(shapes_w, o.max_shapes_column_width or 80)
  end
  local widths = { name_w, 12, 12, 12, 12, 12 }
  local heads = { 'Name', 'Self CPU %', 'Self CPU', 'CPU total %', 'CPU total', 'CPU time avg' }
  if memory then
    widths[#widths + 1], heads[#heads + 1] = 12, 'CPU Mem'
    widths[#widths + 1], heads[#heads + 1] = 12, 'Self CPU Mem'
  end
  widths[#widths + 1], heads[#heads + 1] = 12, '# of Calls'
  if shapes then widths[#widths + 1], heads[#heads + 1] = shapes_w, 'Input Shapes' end
  local function cut(s, w)
    if #s > w then return s:sub(1, w - 3) .. '...' end
    return s
  end
  local function line(cells)
    local parts = {}
    for i, c in ipairs(cells) do parts[i] = string.format('%' .. widths[i] .. 's', cut(c, widths[i])) end
    return table.concat(parts, '  ') .. '  '
  end
  local dashes = {}
  for i, w in ipairs(widths) do dashes[i] = string.rep('-', w) end
  local rule = table.concat(dashes, '  ') .. '  '
  local out = { rule, line(heads), rule }
  for _, r in ipairs(shown) do
    local cells = { r.name, pct(r.self_cpu_time_total, total), fmt_time(r.self_cpu_time_total),
      pct(r.cpu_time_total, total), fmt_time(r.cpu_time_total), fmt_time(r.cpu_time_avg) }
    if memory then
      cells[#cells + 1] = fmt_memory(r.cpu_memory_usage)
      cells[#cells + 1] = fmt_memory(r.self_cpu_memory_usage)
    end
    cells[#cells + 1] = tostring(r.count)
    if shapes then cells[#cells + 1] = r.input_shapes end
    out[#out + 1] = line(cells)
  end
  out[#out + 1] = rule
  out[#out + 1] = 'Self CPU time total: ' .. fmt_time(total)
  return table.concat(out, '\n') .. '\n'
end
Averages.__tostring = Averages.table

-- ---- Chrome trace ----
local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local named = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\t'] = '\\t', ['\r'] = '\\r' }
    return named[c] or string.format('\\u%04x', c:byte())
  end) .. '"'
end

--- prof:export_chrome_trace(path): the events as Chrome's trace format (chrome://tracing,
--- Perfetto): complete events (ph 'X') with ts and dur in microseconds, pid 1, tid the thread,
--- args with the input shapes, memory and stack; written to a temporary file renamed over path
function Profile:export_chrome_trace(path)
  if type(path) ~= 'string' then error('export_chrome_trace: expected a path (a string), got ' .. type(path), 2) end
  local parts = {}
  for _, ev in ipairs(self:events()) do
    local args = {}
    if ev.input_shapes then args[#args + 1] = '"Input Dims": ' .. json_string(shapes_text(ev.input_shapes)) end
    if ev.memory then args[#args + 1] = string.format('"Memory delta": %d', ev.memory) end
    if ev.stack then args[#args + 1] = '"Call stack": ' .. json_string(ev.stack) end
    parts[#parts + 1] = string.format('{"ph": "X", "cat": "cpu_op", "name": %s, "pid": 1, "tid": %d, '
      .. '"ts": %.3f, "dur": %.3f, "args": {%s}}', json_string(ev.name), ev.thread, ev.start, ev.duration,
      table.concat(args, ', '))
  end
  local text = '{"traceEvents": [\n' .. table.concat(parts, ',\n') .. '\n], "displayTimeUnit": "ms"}\n'
  local tmp = path .. '.tmp'
  local f, err = io.open(tmp, 'w')
  if not f then error('export_chrome_trace: cannot write ' .. path .. ': ' .. tostring(err), 2) end
  local ok, werr = f:write(text)
  local closed, cerr = f:close()
  if not ok or not closed then
    os.remove(tmp)
    error('export_chrome_trace: cannot write ' .. path .. ': ' .. tostring(werr or cerr), 2)
  end
  local renamed, rerr = os.rename(tmp, path)
  if not renamed then
    os.remove(tmp)
    error('export_chrome_trace: cannot write ' .. path .. ': ' .. tostring(rerr), 2)
  end
end

-- for the specs: whether f is one of the profiler's wrappers
function profiler._is_wrapper(f) return is_wrapper[f] == true end

return profiler
