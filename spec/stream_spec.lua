-- Streams and events on the CPU devices (run with LUTORCH_CPU_DEVICES=2): CPU streams are
-- synchronous and events time with the host clock, so every call of the API is checked here; the
-- CUDA cases are in spec/cuda_spec.lua.
local torch = require 'torch'
local H = require 'spec.helpers'

local two = torch.cpu.device_count() >= 2
local d1 = two and 'cpu:1' or 'cpu:0'

-- a busy loop (no sleep) of at least `secs` of wall time (the host's monotonic clock, as CPU
-- events; not os.clock, the whole process's processor time, which other threads of the process
-- add to); returns the time it took
local function busy(secs)
  local t0 = torch.utils.clock()
  local x = 0
  while torch.utils.clock() - t0 < secs do
    for i = 1, 1000 do x = x + i % 7 end
  end
  return torch.utils.clock() - t0, x
end

describe('torch.Stream', function()
  it('has a device, an id, equality and a string form', function()
    local s = torch.Stream(d1)
    assert.are.equal(torch.device(d1), s.device)
    assert.are.equal(d1, tostring(s.device))
    assert.is_true(s.stream_id >= 1)
    assert.are.equal('torch.Stream(device=' .. d1 .. ', stream_id=' .. s.stream_id .. ')', tostring(s))
    local s2 = torch.Stream(d1)
    assert.are_not.equal(s.stream_id, s2.stream_id) -- the pool hands streams out round-robin
    assert.is_false(s == s2)
    assert.is_true(s == s)
    -- the default stream: id 0, current until another is made current
    local def = torch.default_stream(d1)
    assert.are.equal(0, def.stream_id)
    assert.is_true(torch.current_stream(d1) == def)
    assert.is_true(torch.current_stream(d1) == torch.current_stream(torch.device(d1)))
    assert.is_false(def == s)
    -- the same stream on another device is another stream
    if two then assert.is_false(torch.default_stream('cpu:0') == torch.default_stream('cpu:1')) end
    -- nil is the current CPU device
    assert.are.equal('cpu:0', tostring(torch.Stream().device))
  end)

  it('synchronizes and answers query at once on the CPU', function()
    local s = torch.Stream(d1)
    assert.is_true(s:query())
    s:synchronize()
    assert.is_true(torch.current_stream(d1):query())
    torch.default_stream(d1):synchronize()
  end)

  it('waits for streams and events (no-ops on the synchronous CPU) and checks its arguments', function()
    local s, o = torch.Stream(d1), torch.Stream(d1)
    s:wait_stream(o)
    s:wait_stream(s)
    if two then s:wait_stream(torch.Stream('cpu:0')) end -- a stream of another device of the type
    local e = o:record_event()
    assert.are.equal('torch.Event', getmetatable(e).__name)
    assert.is_true(e:query())
    s:wait_event(e)
    e:wait(s)
    e:wait() -- the current stream
    -- record_event(e) records the given event and returns it
    local e2 = torch.Event(d1)
    assert.is_true(rawequal(e2, s:record_event(e2)))
    H.raises(function() s:wait_stream(nil) end, 'wait_stream', 'expected a stream')
    H.raises(function() s:wait_stream(e) end, 'wait_stream', 'expected a stream')
    H.raises(function() s:wait_event(s) end, 'wait_event', 'expected an event')
    H.raises(function() s:record_event(42) end, 'record_event', 'expected an event')
  end)

  it('refuses devices that do not exist', function()
    H.raises(function() return torch.Stream('cpu:63') end, 'Stream', 'cpu:63', 'does not exist')
    H.raises(function() return torch.current_stream('cpu:63') end, 'current_stream', 'does not exist')
    H.raises(function() return torch.Event('cpu:63') end, 'Event', 'does not exist')
    H.raises(function() return torch.Stream('gpu') end, 'invalid device string')
  end)
end)

describe('torch.stream', function()
  it('makes a stream and its device current inside the context, and restores both', function()
    local s = torch.Stream(d1)
    local idx = tonumber(d1:match('%d+'))
    assert.are.equal(0, torch.cpu.current_device())
    do
      local _ <close> = torch.stream(s)
      assert.is_true(torch.current_stream(d1) == s)
      assert.are.equal(idx, torch.cpu.current_device())
      assert.is_true(torch.current_stream() == s) -- the current device's current stream
      -- nested: the inner one wins, the outer comes back
      local s2 = torch.Stream(d1)
      do
        local _ <close> = torch.stream(s2)
        assert.is_true(torch.current_stream(d1) == s2)
      end
      assert.is_true(torch.current_stream(d1) == s)
    end
    assert.is_true(torch.current_stream(d1) == torch.default_stream(d1))
    assert.are.equal(0, torch.cpu.current_device())
    if two then -- other devices keep their own current stream
      assert.is_true(torch.current_stream('cpu:0') == torch.default_stream('cpu:0'))
    end
  end)

  it('has a function form that returns fn\'s results and restores after an error', function()
    local s = torch.Stream(d1)
    local a, b = torch.stream(s, function()
      assert.is_true(torch.current_stream(d1) == s)
      return 1, 'two'
    end)
    assert.are.equal(1, a)
    assert.are.equal('two', b)
    local ok, err = pcall(torch.stream, s, function()
      assert.is_true(torch.current_stream(d1) == s)
      error('boom inside')
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('boom inside', 1, true))
    assert.is_true(torch.current_stream(d1) == torch.default_stream(d1))
    assert.are.equal(0, torch.cpu.current_device())
    -- the to-be-closed form restores after an error too
    ok, err = pcall(function()
      local _ <close> = torch.stream(s)
      error({ code = 7 })
    end)
    assert.is_false(ok)
    assert.are.equal(7, err.code)
    assert.is_true(torch.current_stream(d1) == torch.default_stream(d1))
    assert.are.equal(0, torch.cpu.current_device())
  end)

  it('does nothing for nil, and checks its arguments', function()
    do local _ <close> = torch.stream(nil) end
    assert.are.equal(5, torch.stream(nil, function() return 5 end))
    assert.is_true(torch.current_stream() == torch.default_stream())
    H.raises(function() return torch.stream(42) end, 'stream', 'expected a stream')
    H.raises(function() return torch.stream(torch.Stream(), 42) end, 'function expected')
  end)
end)

describe('torch.Event', function()
  it('times a busy loop with the host clock', function()
    local s = torch.Stream(d1)
    local e1 = torch.Event(d1, { enable_timing = true })
    local e2 = torch.Event(d1, { enable_timing = true })
    assert.is_true(e1.enable_timing)
    local w0 = torch.utils.clock()
    e1:record(s)
    local cpu = busy(0.03)
    e2:record(s)
    local wall = torch.utils.clock() - w0
    e2:synchronize()
    assert.is_true(e1:query() and e2:query())
    local ms = e1:elapsed_time(e2)
    assert.are.equal('number', type(ms))
    -- the events bracket the loop: at least its time, at most the time around them
    assert.is_true(ms >= cpu * 1000 - 1, ('elapsed %g ms, busy loop %g ms'):format(ms, cpu * 1000))
    assert.is_true(ms <= wall * 1000 + 1e-3, ('elapsed %g ms, wall %g ms'):format(ms, wall * 1000))
    -- the other way round is negative
    assert.is_true(math.abs(e2:elapsed_time(e1) + ms) < 1e-9)
  end)

  it('records on the current stream by default, inside torch.stream too', function()
    local s = torch.Stream(d1)
    local e1 = torch.Event(d1, { enable_timing = true })
    local e2 = torch.Event(d1, { enable_timing = true })
    torch.stream(s, function()
      e1:record()
      busy(0.005)
      e2:record()
    end)
    assert.is_true(e1:elapsed_time(e2) >= 4)
    assert.are.equal(d1, tostring(e1.device))
    assert.truthy(tostring(e1):find('recorded=true', 1, true))
  end)

  it('raises PyTorch\'s errors for elapsed_time', function()
    local a = torch.Event(d1, { enable_timing = true })
    local b = torch.Event(d1, { enable_timing = true })
    a:record()
    H.raises(function() return a:elapsed_time(b) end, 'elapsed_time',
      'Both events must be recorded before calculating elapsed time.')
    H.raises(function() return b:elapsed_time(a) end, 'Both events must be recorded')
    local c, d = torch.Event(d1), torch.Event(d1) -- timing off
    c:record()
    d:record()
    assert.is_false(c.enable_timing)
    H.raises(function() return c:elapsed_time(d) end, 'elapsed_time',
      "Both events must be created with argument 'enable_timing=True'.")
    H.raises(function() return a:elapsed_time(d) end, "enable_timing=True")
    H.raises(function() return a:elapsed_time(42) end, 'elapsed_time', 'expected an event')
  end)

  it('answers query and synchronize before it is recorded', function()
    local e = torch.Event(d1)
    assert.is_true(e:query())
    e:synchronize()
    assert.truthy(tostring(e):find('recorded=false', 1, true))
  end)

  it('refuses a stream of another device, naming both', function()
    if not two then return pending('needs LUTORCH_CPU_DEVICES=2') end
    local e = torch.Event('cpu:0')
    H.raises(function() e:record(torch.Stream('cpu:1')) end, 'Event.record', 'cpu:0', 'cpu:1')
    H.raises(function() e:record(42) end, 'Event.record', 'expected a stream')
    H.raises(function() return torch.Event('cpu:0', 42) end, 'Event', 'options table')
    -- torch.Event{...}: the options alone, on the CPU
    assert.is_true(torch.Event({ enable_timing = true }).enable_timing)
  end)

  it('stays pending on a held CPU stream until it is released (the test hook)', function()
    local s = torch.Stream(d1)
    torch._stream_hold(s, true)
    assert.is_false(s:query())
    local e = s:record_event()
    assert.is_false(e:query())
    H.raises(function() e:synchronize() end, 'Event.synchronize', 'held pending')
    local before = torch.current_stream(d1):record_event() -- another stream is not held
    assert.is_true(before:query())
    torch._stream_hold(s, false)
    assert.is_true(s:query())
    assert.is_true(e:query())
    e:synchronize()
    -- an event recorded after the release completes at once
    assert.is_true(s:record_event():query())
  end)
end)

describe('x:record_stream', function()
  it('accepts a stream of the tensor\'s device type and checks its argument', function()
    local x = torch.ones(10, { device = d1 })
    x:record_stream(torch.Stream(d1))
    x:record_stream(torch.current_stream(d1)) -- the allocating stream: nothing to record
    x:t():record_stream(torch.Stream(d1))     -- a view records its storage's block
    H.raises(function() x:record_stream(nil) end, 'record_stream', 'expected a stream')
    H.raises(function() x:record_stream(torch.Event(d1)) end, 'record_stream', 'expected a stream')
    -- the values are untouched
    H.assert_values(x, { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 })
  end)
end)
