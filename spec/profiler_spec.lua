-- torch.profiler: the events of known sequences of ops, their nesting and self times, shapes,
-- memory, the table, the Chrome trace, and that stopping leaves the original functions behind.
local torch = require 'torch'
local profiler = torch.profiler
local nn, F = torch.nn, torch.nn.functional
local Tensor = torch.Tensor
local MT = debug.getregistry()['torch.Tensor']

local function names(events)
  local out = {}
  for i, e in ipairs(events) do out[i] = e.name end
  return out
end

local function by_name(events, name)
  for _, e in ipairs(events) do
    if e.name == name then return e end
  end
  error('no event ' .. name)
end

-- the direct children of event i (those after it, one deeper, until its depth comes back)
local function children(events, i)
  local out = {}
  for j = i + 1, #events do
    if events[j].depth <= events[i].depth then break end
    if events[j].depth == events[i].depth + 1 then out[#out + 1] = events[j] end
  end
  return out
end

-- a small JSON reader, enough for the trace: objects, arrays, strings, numbers, literals
local function json_decode(s)
  local pos = 1
  local function ws() pos = s:find('[^ \t\r\n]', pos) or #s + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c == '\\' then
        local e = s:sub(pos + 1, pos + 1)
        local map = { n = '\n', t = '\t', r = '\r', ['"'] = '"', ['\\'] = '\\', ['/'] = '/' }
        if e == 'u' then
          out[#out + 1] = utf8.char(tonumber(s:sub(pos + 2, pos + 5), 16)); pos = pos + 6
        else
          out[#out + 1] = assert(map[e], 'bad escape'); pos = pos + 2
        end
      else
        assert(c ~= '', 'unterminated string')
        out[#out + 1] = c; pos = pos + 1
      end
    end
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == '{' then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == '}' then pos = pos + 1; return t end
      while true do
        ws(); assert(s:sub(pos, pos) == '"', 'key expected at ' .. pos)
        local k = str(); ws()
        assert(s:sub(pos, pos) == ':', ': expected at ' .. pos); pos = pos + 1
        t[k] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == '}' then return t end
        assert(d == ',', ', expected at ' .. pos)
      end
    elseif c == '[' then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == ']' then pos = pos + 1; return t end
      while true do
        t[#t + 1] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == ']' then return t end
        assert(d == ',', ', expected at ' .. pos)
      end
    elseif c == '"' then
      return str()
    else
      local lit = s:match('^%-?%d+%.?%d*[eE]?[-+]?%d*', pos)
      if lit and #lit > 0 then pos = pos + #lit; return tonumber(lit) end
      for word, v in pairs({ ['true'] = true, ['false'] = false }) do
        if s:sub(pos, pos + #word - 1) == word then pos = pos + #word; return v end
      end
      error('unexpected ' .. c .. ' at ' .. pos)
    end
  end
  local v = value(); ws()
  assert(pos == #s + 1, 'trailing text at ' .. pos)
  return v
end

describe('torch.profiler', function()
  it('records each op of a known sequence, in order, with its counts', function()
    local a = torch.ones(2, 3)
    local prof = profiler.profile(nil, function()
      local b = a + a
      local c = torch.matmul(a, b:t())
      local d = c:relu():sum()
      d = torch.add(d, 1)
      return d
    end)
    local ev = prof:events()
    assert.are.same({ 'Tensor.__add', 'Tensor.t', 'torch.matmul', 'Tensor.relu', 'Tensor.sum', 'torch.add' }, names(ev))
    for _, e in ipairs(ev) do
      assert.are.equal(0, e.depth)
      assert.are.equal(1, e.thread)
      assert.is_true(e.duration >= 0 and e.self_time == e.duration)
    end
    local twice = profiler.profile(nil, function()
      for _ = 1, 3 do local _ = a:add(a) end
      local _ = a:mul(2)
    end)
    local rows = twice:key_averages()
    assert.are.equal(2, #rows)
    assert.are.same({ 'Tensor.add', 3 }, { rows[1].name, rows[1].count })
    assert.are.same({ 'Tensor.mul', 1 }, { rows[2].name, rows[2].count })
  end)

  it('nests: a range holds its ops, self time is total less the children, modules by class', function()
    local net = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    local x = torch.randn(5, 4)
    local prof = profiler.profile(nil, function()
      local _ <close> = profiler.record_function('step')
      local y = net(x)
      return torch.relu(y)
    end)
    local ev = prof:events()
    assert.are.same({ 'step', 'nn.Sequential', 'nn.Linear', 'nn.functional.linear', 'nn.ReLU', 'nn.functional.relu',
      'Tensor.relu', 'torch.relu' }, names(ev))
    assert.are.same({ 0, 1, 2, 3, 2, 3, 4, 1 }, (function()
      local d = {}
      for i, e in ipairs(ev) do d[i] = e.depth end
      return d
    end)())
    for i, e in ipairs(ev) do
      local sum = 0
      for _, c in ipairs(children(ev, i)) do sum = sum + c.duration end
      assert.is_true(e.duration >= sum, e.name .. ': total below its children\'s')
      assert.is_true(math.abs(e.self_time - (e.duration - sum)) < 1e-6, e.name .. ': self time')
      assert.is_true(e.start >= 0)
      if i > 1 then assert.is_true(e.start >= ev[i - 1].start) end
    end
    -- the key averages add the events up
    local step = by_name(prof:key_averages(), 'step')
    assert.are.equal(ev[1].duration, step.cpu_time_total)
    assert.are.equal(ev[1].self_time, step.self_cpu_time_total)
    -- a class of the user's
    local Net = nn.Module:extend('Net')
    function Net:init() self.fc = nn.Linear(4, 2) end
    function Net:forward(v) return self.fc(v) end
    local m = Net()
    local p2 = profiler.profile(nil, function() return m(x) end)
    assert.are.same({ 'nn.Module: Net', 'nn.Linear', 'nn.functional.linear' }, names(p2:events()))
  end)

  it('records input shapes, and memory as the change of torch.memory.allocated', function()
    local a, b = torch.randn(2, 3), torch.randn(3, 4)
    local before, after
    local prof = profiler.profile({ record_shapes = true, profile_memory = true }, function()
      local _ = torch.matmul(a, b)
      local _ = torch.cat({ a, a }, 1)
      local _ = a:add(1)
      before = torch.memory.allocated()
      local keep = torch.zeros(256, 4) -- 4096 bytes of float32
      after = torch.memory.allocated()
      return keep
    end)
    local ev = prof:events()
    assert.are.same({ { 2, 3 }, { 3, 4 } }, by_name(ev, 'torch.matmul').input_shapes)
    assert.are.same({ { { 2, 3 }, { 2, 3 } }, {} }, by_name(ev, 'torch.cat').input_shapes)
    assert.are.same({ { 2, 3 }, {} }, by_name(ev, 'Tensor.add').input_shapes)
    local z = by_name(ev, 'torch.zeros')
    assert.are.same({ {}, {} }, z.input_shapes)
    assert.are.equal(after - before, z.memory)
    assert.are.equal(256 * 4 * 4, z.memory)
    assert.are.equal(z.memory, z.self_memory)
    -- grouped by shape: the shapes are part of the key and shown
    local rows = prof:key_averages{ group_by_input_shape = true }
    assert.are.equal('[[2, 3], [3, 4]]', by_name(rows, 'torch.matmul').input_shapes)
    local text = rows:table()
    assert.matches('Input Shapes', text, 1, true)
    assert.matches('CPU Mem', text, 1, true)
    assert.matches('4.00 Kb', text, 1, true)
  end)

  it('a record_function around ops: self memory is its own less the children\'s', function()
    local prof = profiler.profile({ profile_memory = true }, function()
      return profiler.record_function('make', function()
        local a = torch.zeros(128) -- 512 bytes
        local b = torch.zeros(256) -- 1024 bytes
        return a, b
      end)
    end)
    local make = by_name(prof:events(), 'make')
    assert.are.equal(1536, make.memory)
    assert.are.equal(0, make.self_memory)
  end)

  it('formats the table as PyTorch does, sorted as asked, its footer the sum of self times', function()
    local a = torch.randn(64, 64)
    local prof = profiler.profile(nil, function()
      for _ = 1, 5 do local _ = torch.matmul(a, a) end
      for _ = 1, 3 do local _ = a:relu() end
      local _ = a:sum()
    end)
    local rows = prof:key_averages()
    local total = 0
    for _, r in ipairs(rows) do total = total + r.self_cpu_time_total end
    for _, key in ipairs({ 'self_cpu_time_total', 'cpu_time_total', 'count' }) do
      local text = rows:table{ sort_by = key, row_limit = 10 }
      local lines = {}
      for l in text:gmatch('[^\n]+') do lines[#lines + 1] = l end
      assert.matches('^%-+  %-+', lines[1])
      assert.matches('^ *Name +Self CPU %% +Self CPU +CPU total %% +CPU total +CPU time avg +# of Calls  $', lines[2])
      local shown = {}
      for i = 4, #lines - 2 do shown[#shown + 1] = by_name(rows, lines[i]:match('^ *(%S+)')) end
      assert.are.equal(3, #shown)
      for i = 2, #shown do assert.is_true(shown[i - 1][key] >= shown[i][key], key .. ' order') end
      local ms = total / 1e3
      assert.are.equal(string.format('Self CPU time total: %.3f%s', total >= 1e3 and ms or total,
        total >= 1e3 and 'ms' or 'us'), lines[#lines])
    end
    local top = rows:table{ sort_by = 'count', row_limit = 1 }
    assert.matches('torch.matmul +%S+ +%S+ +%S+ +%S+ +%S+ +5  \n', top)
    assert.is_nil(top:find('Tensor.relu', 1, true))
    assert.has_error(function() rows:table{ sort_by = 'speed' } end,
      "table: unknown sort_by 'speed' (one of self_cpu_time_total, cpu_time_total, count, cpu_time_avg, cpu_time, "
        .. "self_cpu_time_avg, cpu_memory_usage, self_cpu_memory_usage)")
  end)

  it('exports a Chrome trace with one complete event per event', function()
    local a = torch.randn(3, 3)
    local prof = profiler.profile({ record_shapes = true, profile_memory = true }, function()
      local _ <close> = profiler.record_function('a "quoted" range\n')
      local _ = (a * a):sum()
    end)
    local path = os.tmpname()
    prof:export_chrome_trace(path)
    local f = assert(io.open(path))
    local trace = json_decode(f:read('a'))
    f:close()
    os.remove(path)
    local ev = prof:events()
    assert.are.equal(#ev, #trace.traceEvents)
    for i, t in ipairs(trace.traceEvents) do
      assert.are.equal('X', t.ph)
      assert.are.equal(ev[i].name, t.name)
      assert.are.equal(1, t.tid)
      assert.is_true(math.abs(t.ts - ev[i].start) < 1e-3 and math.abs(t.dur - ev[i].duration) < 1e-3)
      assert.are.equal(ev[i].memory, t.args['Memory delta'])
    end
    assert.are.equal('[[3, 3], [3, 3]]', trace.traceEvents[2].args['Input Dims'])
    local bad = os.tmpname() .. '/no/such/dir/trace.json'
    assert.has_error(function() prof:export_chrome_trace(bad) end)
    local ok, msg = pcall(prof.export_chrome_trace, prof, bad)
    assert.is_false(ok)
    assert.matches('export_chrome_trace: cannot write ' .. bad:gsub('%p', '%%%0'), msg)
  end)

  it('puts the original functions back when it stops, and then records nothing', function()
    local orig = { torch.add, torch.matmul, Tensor.add, Tensor.relu, Tensor.backward, MT.__add, MT.__mul, F.linear,
      torch.linalg.norm, torch.autograd.backward, torch.autograd.grad }
    local call = nn.Module.__call
    local a = torch.ones(2)
    local prof
    do
      prof = profiler.profile{}
      local _p <close> = prof
      assert.is_true(profiler._is_wrapper(torch.add))
      assert.is_true(profiler._is_wrapper(Tensor.relu))
      assert.is_true(profiler._is_wrapper(MT.__add))
      assert.is_true(profiler._is_wrapper(F.linear))
      local _ = a + a
    end
    local now = { torch.add, torch.matmul, Tensor.add, Tensor.relu, Tensor.backward, MT.__add, MT.__mul, F.linear,
      torch.linalg.norm, torch.autograd.backward, torch.autograd.grad }
    for i = 1, #orig do assert.is_true(rawequal(orig[i], now[i]), 'function ' .. i .. ' is not the original') end
    assert.is_true(rawequal(call, nn.Module.__call))
    local n = #prof:events()
    assert.are.equal(1, n)
    local _ = torch.add(a, a) + a
    local _ = nn.Linear(2, 2)(a)
    assert.are.equal(n, #prof:events())
    -- start and stop again: the same
    prof:start()
    local _ = a:add(a)
    prof:stop()
    assert.are.equal(n + 1, #prof:events())
    assert.is_true(rawequal(orig[3], Tensor.add))
    -- a wrapper kept past its profile calls the original
    local kept
    profiler.profile(nil, function() kept = torch.mul end)
    assert.is_true(profiler._is_wrapper(kept))
    assert.are.same({ 2, 2 }, kept(a, 2):totable())
  end)

  it('records optimizers\' step and zero_grad by class, and empties the inherited slots again', function()
    local m = nn.Linear(3, 2)
    local adamw, sgd = torch.optim.AdamW(m:parameters()), torch.optim.SGD(m:parameters(), { lr = 0.1 })
    local own_step = rawget(torch.optim.SGD, 'step')
    local x = torch.randn(4, 3)
    local prof = profiler.profile({}, function()
      for _ = 1, 2 do
        adamw:zero_grad()
        m(x):sum():backward()
        adamw:step()
        sgd:step()
      end
    end)
    local counts = {}
    for _, e in ipairs(prof:events()) do counts[e.name] = (counts[e.name] or 0) + 1 end
    assert.are.equal(2, counts['Optimizer.zero_grad#AdamW.zero_grad'])
    assert.are.equal(2, counts['Optimizer.step#AdamW.step'])
    assert.are.equal(2, counts['Optimizer.step#SGD.step'])
    -- AdamW inherits both from its bases: the slots the profile filled are empty again
    assert.is_nil(rawget(torch.optim.AdamW, 'step'))
    assert.is_nil(rawget(torch.optim.AdamW, 'zero_grad'))
    assert.is_true(rawequal(own_step, rawget(torch.optim.SGD, 'step')))
  end)

  it('records backward as one event', function()
    local w = torch.randn(3, { requires_grad = true })
    local prof = profiler.profile(nil, function()
      local loss = (w * w):sum()
      loss:backward()
      torch.autograd.backward({ (w * 2):sum() })
    end)
    assert.are.equal(2, by_name(prof:key_averages(), 'autograd::backward').count)
    assert.is_not_nil(w.grad)
  end)

  it('an op that raises inside a profile: the same message and place, and the profile ends', function()
    local x = torch.zeros(2)
    local function errors()
      local out = {}
      out[1] = select(2, pcall(function() local y = x:add('a'); return y end))
      out[2] = select(2, pcall(function() local y = torch.add(x, torch.zeros(3)); return y end))
      out[3] = select(2, pcall(function() local y = F.linear(torch.zeros(2, 3), torch.zeros(4)); return y end))
      out[4] = select(2, pcall(function() local y = x + 'a'; return y end))
      out[5] = select(2, pcall(function() local y = torch.zeros(2, { dtyp = 1 }); return y end))
      out[6] = select(2, pcall(torch.add, x, torch.zeros(3)))
      out[7] = select(2, pcall(function() local y = x:sum(5); return y end))
      return out
    end
    local plain = errors()
    local profiled
    local prof = profiler.profile(nil, function() profiled = errors() end)
    assert.are.same(plain, profiled)
    assert.matches('bad argument #1 to \'add\'', plain[1])
    assert.matches('profiler_spec.lua:%d+: linear: weight must be 2%-D', plain[3])
    -- the failed ops were recorded, closed
    assert.are.equal(1, by_name(prof:key_averages(), 'nn.functional.linear').count)
    for _, e in ipairs(prof:events()) do assert.are.equal(0, e.depth) end
    -- an error out of the profiled function: raised as it was, the profile stopped
    local ok, msg = pcall(profiler.profile, nil, function() local y = torch.add(x, torch.zeros(3)); return y end)
    assert.is_false(ok)
    assert.matches('profiler_spec.lua:%d+: add: the shapes %[2%] and %[3%] cannot be broadcast', msg)
    assert.is_false(profiler._is_wrapper(torch.add))
    -- and a to-be-closed profile closed by the error
    local p2
    ok = pcall(function()
      p2 = profiler.profile{}
      local _ <close> = p2
      local _r <close> = profiler.record_function('range')
      error('boom')
    end)
    assert.is_false(ok)
    assert.is_false(profiler._is_wrapper(torch.add))
    assert.are.same({ 'range' }, names(p2:events()))
  end)

  it('keeps each coroutine\'s nesting apart', function()
    local a = torch.ones(2)
    local prof = profiler.profile(nil, function()
      local co = coroutine.wrap(function()
        local _ <close> = profiler.record_function('in coroutine')
        coroutine.yield(a:add(1))
        local _ = a:mul(2)
      end)
      local _r <close> = profiler.record_function('main')
      co()
      local _ = a:sub(1)
      co()
    end)
    local ev = prof:events()
    local function get(n) return by_name(ev, n) end
    assert.are.same({ 1, 0 }, { get('main').thread, get('main').depth })
    assert.are.same({ 2, 0 }, { get('in coroutine').thread, get('in coroutine').depth })
    assert.are.same({ 2, 1 }, { get('Tensor.add').thread, get('Tensor.add').depth })
    assert.are.same({ 2, 1 }, { get('Tensor.mul').thread, get('Tensor.mul').depth })
    assert.are.same({ 1, 1 }, { get('Tensor.sub').thread, get('Tensor.sub').depth })
    -- main's children: Tensor.sub only
    assert.is_true(math.abs(get('main').self_time - (get('main').duration - get('Tensor.sub').duration)) < 1e-6)
  end)

  it('records only the active steps of a schedule', function()
    local ready = {}
    local a = torch.ones(2)
    local prof = profiler.profile{
      schedule = profiler.schedule{ wait = 1, warmup = 1, active = 2, ['repeat'] = 1 },
      on_trace_ready = function(p) ready[#ready + 1] = #p:events() end,
    }
    for step = 1, 6 do
      for _ = 1, step do local _ = a:add(1) end
      prof:step()
    end
    prof:stop()
    -- steps 3 and 4 (3 + 4 adds) are active
    assert.are.same({ 7 }, ready)
    assert.are.equal(7, by_name(prof:key_averages(), 'Tensor.add').count)
  end)

  it('refuses bad options, a second profile and a range without a name', function()
    assert.has_error(function() profiler.profile{ record_shape = true } end,
      "profiler.profile: unknown option 'record_shape' (its options are record_shapes, profile_memory, with_stack, "
        .. 'schedule, on_trace_ready, activities, memory_device)')
    assert.has_error(function() profiler.profile(5) end, 'profiler.profile: expected an options table, got number')
    assert.has_error(function() profiler.profile{ schedule = 3 } end,
      'profiler.profile: schedule must be a function of the step (torch.profiler.schedule{...}), got number')
    assert.has_error(function() profiler.schedule{ active = 0 } end,
      'profiler.schedule: active must be an integer >= 1, got 0')
    local p = profiler.profile{}
    local ok, msg = pcall(profiler.profile, {})
    assert.is_false(ok)
    assert.matches('another profile is already running', msg)
    p:stop()
    assert.has_error(function() profiler.record_function(42) end,
      'profiler.record_function: expected a name (a string), got number')
    assert.has_error(function() p:key_averages{ group_by_shape = true } end)
    -- outside a profile a range records nothing and runs its function
    assert.are.equal(3, profiler.record_function('idle', function() return 3 end))
  end)

  it('records the caller with with_stack', function()
    local prof = profiler.profile({ with_stack = true }, function()
      local _ = torch.ones(1):neg()
    end)
    for _, e in ipairs(prof:events()) do assert.matches('profiler_spec.lua:%d+$', e.stack) end
  end)
end)
