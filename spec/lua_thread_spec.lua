-- Lua states on threads of their own (torch._lua_thread, bindings/lua_thread.c) and the copying of
-- Lua values between states (bindings/lua_transfer.c): round trips of every kind of value, library
-- objects mapped to the destination's own, a user's nn.Module class run in a thread, tensors by
-- reference with their autograd graph, grad mode, errors, and two threads running at once.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn

local function new_thread(opts)
  return torch._lua_thread(opts or { name = 'cpu:1' })
end

-- run fn(...) in th and return its results
local function run(th, fn, ...)
  th:start(fn, table.pack(...))
  return th:wait()
end

-- a float64 reference of x @ w:t() + b, with plain Lua loops
local function linear_ref(x, w, b)
  local X, W, B = x:double():totable(), w:double():totable(), b:double():totable()
  local out = {}
  for i = 1, #X do
    out[i] = {}
    for j = 1, #W do
      local s = B[j]
      for k = 1, #W[j] do s = s + X[i][k] * W[j][k] end
      out[i][j] = s
    end
  end
  return out
end

describe('copying values into a Lua thread and back', function()
  local th
  before_each(function() th = new_thread() end)
  after_each(function() th:close() end)

  it('keeps scalars, integers apart from floats, and strings with zero bytes', function()
    local a, b, c, d, e, f, g, h = run(th, function(...)
      local n = select('#', ...)
      local a, b, c, d, e, f, g = ...
      return a, b, c, d, e, f, g, n
    end, nil, true, false, 3, 3.0, 'a\0b', -0.5)
    assert.is_nil(a)
    assert.is_true(b)
    assert.is_false(c)
    assert.are.equal('integer', math.type(d))
    assert.are.equal(3, d)
    assert.are.equal('float', math.type(e))
    assert.are.equal(3.0, e)
    assert.are.equal('a\0b', f)
    assert.are.equal(-0.5, g)
    assert.are.equal(7, h)
    local types = { run(th, function(i, x, big) return math.type(i), math.type(x), big end, 1, 1.0, math.maxinteger) }
    assert.are.same({ 'integer', 'float', math.maxinteger }, types)
  end)

  it('preserves sharing and cycles inside one copy, in both directions', function()
    local shared = { 1, 2, { 3 } }
    local t = { a = shared, b = shared, list = { 10, 20, 30 }, [true] = 'yes', [2.5] = 'half' }
    t.self = t
    t[shared] = 'table key'
    local checks, back = run(th, function(x)
      local keyed
      for k, v in pairs(x) do
        if type(k) == 'table' then keyed = (k == x.a) and v end
      end
      return {
        same = x.a == x.b, cycle = x.self == x, nested = x.a[3][1], keyed = keyed,
        bool_key = x[true], float_key = x[2.5], list = x.list[3], len = #x.list,
      }, x
    end, t)
    assert.are.same({ same = true, cycle = true, nested = 3, keyed = 'table key', bool_key = 'yes',
      float_key = 'half', list = 30, len = 3 }, checks)
    assert.are_not.equal(t, back)
    assert.are.equal(back, back.self)
    assert.are.equal(back.a, back.b)
    assert.are.same({ 1, 2, { 3 } }, back.a)
    assert.are.equal('table key', back[back.a])
  end)

  it('copies plain metatables and maps library objects to the destination\'s own', function()
    local Point = { __index = { norm2 = function(p) return p.x * p.x + p.y * p.y end } }
    local p = setmetatable({ x = 3, y = 4 }, Point)
    local lin = nn.Linear(2, 3)
    local res = run(th, function(pt, l, fmt, relu, f32, dev, nnmod, G, pr, ins)
      return {
        norm = pt:norm2(),
        linear_class = getmetatable(l) == torch.nn.Linear,
        fmt = fmt == string.format,
        relu = relu == torch.nn.functional.relu,
        f32 = f32 == torch.float32,
        dev = tostring(dev), dev_type = dev.type,
        nn = nnmod == torch.nn,
        G = G == _G,
        print = pr == print,
        insert = ins == table.insert,
        out_features = l.out_features,
      }
    end, p, lin, string.format, torch.nn.functional.relu, torch.float32, torch.device('cpu:1'), torch.nn,
      _G, print, table.insert)
    assert.are.same({ norm = 25, linear_class = true, fmt = true, relu = true, f32 = true, dev = 'cpu:1',
      dev_type = 'cpu', nn = true, G = true, print = true, insert = true, out_features = 3 }, res)
    -- and back: library objects returned by the thread are the caller's own
    local b = { run(th, function() return torch.nn.Linear, string.format, torch.float64, _G, torch.device('cpu:0') end) }
    assert.are.equal(torch.nn.Linear, b[1])
    assert.are.equal(string.format, b[2])
    assert.are.equal(torch.float64, b[3])
    assert.are.equal(_G, b[4])
    assert.are.equal(torch.device('cpu:0'), b[5])
  end)

  it('copies Lua functions with their upvalues, shared upvalues staying shared', function()
    local count = 10
    local function inc(k) count = count + k end
    local function get() return count end
    local function fact(n) return n <= 1 and 1 or n * fact(n - 1) end
    local tbl = { scale = 2 }
    local function scaled(v) return v * tbl.scale end
    local r = { run(th, function(i, g, f, s)
      i(5)
      return g(), f(10), s(21)
    end, inc, get, fact, scaled) }
    assert.are.same({ 15, 3628800, 42 }, r)
    assert.are.equal(10, count) -- the caller's upvalue is not the thread's
  end)

  it('gives a function started again the current values of its upvalues', function()
    local w = torch.tensor({ 1.0 })
    local scale = 2
    local function job(x) return (x * w):item() * scale end
    assert.are.equal(6, run(th, job, torch.tensor({ 3.0 })))
    w = torch.tensor({ 10.0 })
    scale = 3
    assert.are.equal(90, run(th, job, torch.tensor({ 3.0 })))
    -- substitution reaches upvalues too
    th:start(job, { torch.tensor({ 1.0 }) }, { subst = { [w] = torch.tensor({ -1.0 }) } })
    assert.are.equal(-3, th:wait())
  end)

  it('copies a user class once and runs its forward like the caller', function()
    torch.manual_seed(7)
    local F = torch.nn.functional
    local HIDDEN = 5
    local FooNet = nn.Module:extend('FooNet')
    function FooNet:init(n_in, n_out)
      nn.Module.init(self)
      self.fc1 = nn.Linear(n_in, HIDDEN)
      self.fc2 = nn.Linear(HIDDEN, n_out)
    end
    function FooNet:forward(x) return self.fc2(F.relu(self.fc1(x))) end
    local model = FooNet(4, 3)
    local x = torch.randn(6, 4)
    local function fwd(m, inp)
      _G.seen_classes = _G.seen_classes or {}
      local cls = getmetatable(m)
      local first = _G.seen_classes[1]
      _G.seen_classes[#_G.seen_classes + 1] = cls
      return m(inp), cls.__name, m:is_module() and #m:parameters() or -1,
        getmetatable(m.fc1) == torch.nn.Linear, first == nil or first == cls, m
    end
    local y, name, nparams, lin, same_class, back = run(th, fwd, model, x)
    assert.are.equal('FooNet', name)
    assert.are.equal(4, nparams)
    assert.is_true(lin)
    assert.is_true(same_class)
    -- the thread's output against the caller's forward and a float64 reference
    local want = model(x)
    H.assert_values(y, want:totable(), 1e-6, 'thread forward vs caller forward')
    local h = linear_ref(x, model.fc1.weight, model.fc1.bias)
    for i = 1, #h do for j = 1, #h[i] do h[i][j] = math.max(h[i][j], 0) end end
    local ref = linear_ref(torch.tensor(h), model.fc2.weight, model.fc2.bias)
    H.assert_values(y, ref, 1e-5, 'thread forward vs float64 loops')
    -- the module returned is an instance of the caller's class, holding the caller's tensors
    assert.are.equal(FooNet, getmetatable(back))
    assert.are.equal(torch._worker_data_ptr(model.fc1.weight), torch._worker_data_ptr(back.fc1.weight))
    -- a second copy reuses the class copied the first time (checked in the thread)
    local _, _, _, _, same_again = run(th, fwd, model, x)
    assert.is_true(same_again)
    local n_seen = run(th, function() return #_G.seen_classes end)
    assert.are.equal(2, n_seen)
  end)

  it('requires a module the caller loaded when the thread has not, and maps its class', function()
    package.path = './?.lua;' .. package.path
    local SQ = require 'spec.support.square_dataset'
    local th2 = new_thread { name = 'modules' } -- made after the change: it has the new path
    local ds = SQ.SquareDataset(5, { scale = 2 })
    local same_class, loaded, n, x = run(th2, function(d)
      local mod = package.loaded['spec.support.square_dataset']
      return getmetatable(d) == mod.SquareDataset, mod ~= nil, #d, (d:get(3))
    end, ds)
    th2:close()
    assert.is_true(same_class)
    assert.is_true(loaded)
    assert.are.equal(5, n)
    H.assert_values(x, { 6, 18 }, 0)
  end)

  it('copies what a module the thread cannot load holds, except its C functions', function()
    local wrapped = coroutine.wrap(function() end)
    package.loaded['spec.no_such_module'] = { f = function(v) return v * 2 end, cw = wrapped }
    local M = package.loaded['spec.no_such_module']
    assert.are.equal(42, run(th, function(f) return f(21) end, M.f))
    assert.are.equal(42, run(th, function(f) return f(21) end, M.f)) -- the failed require is remembered
    H.raises(function() th:start(function() end, { M.cw }) end,
      "cannot copy argument 1: module 'spec.no_such_module' cannot be loaded in the destination state")
    package.loaded['spec.no_such_module'] = nil
  end)

  it('returns a copied function or class to the caller as the original', function()
    local function f(a) return a + 1 end
    local Cls = { __index = {} }
    local obj = setmetatable({}, Cls)
    local g, cls, h = run(th, function(fn, o)
      local made = function() return 'made in the thread' end
      return fn, getmetatable(o), made
    end, f, obj)
    assert.are.equal(f, g)
    assert.are.equal(Cls, cls)
    assert.are.equal('made in the thread', h())
  end)

  it('keeps its caches bounded when given a new closure every call', function()
    local x = torch.zeros(1)
    -- the entries of the registry's tables after a full collection (in whichever state runs it:
    -- the thread's state collects only as it allocates otherwise)
    local function sizes()
      collectgarbage()
      local n = 0
      for _, v in pairs(debug.getregistry()) do
        if type(v) == 'table' then for _ in pairs(v) do n = n + 1 end end
      end
      return n
    end
    local function step(i)
      th:start(function(v) v[1] = i; return function() return i end end, { x })
      assert.are.equal(i, th:wait()())
    end
    -- a closure's entry in the thread goes when the caller's state has collected the closure and
    -- the thread's state then collects: two rounds of both, so that releases from either side land
    -- before counting (with one, how many were pending depended on the collectors' phase)
    local function settle()
      for _ = 1, 2 do
        collectgarbage()
        run(th, function() collectgarbage() end)
      end
    end
    -- the caches are swept whenever they have doubled, keeping the entries whose source is alive
    -- then: dead closures the caller's collector has not reached count as alive until the next
    -- sweep, so the caller collects now and then, as a running program's collector does (the bound
    -- is what a leak would pass: one entry a call)
    local function steps(from, to)
      for i = from, to do
        step(i)
        if i % 250 == 0 then collectgarbage() end
      end
    end
    steps(1, 500)
    settle()
    local before, before_there = sizes(), run(th, sizes)
    steps(1, 3000)
    settle()
    assert.are.equal(3000, x[1])
    -- entries of closures that died are swept: far fewer than one per call remain, on both sides
    local grew, grew_there = sizes() - before, run(th, sizes) - before_there
    assert.is_true(grew < 1000, 'the registry grew by ' .. grew)
    assert.is_true(grew_there < 1000, 'the thread\'s registry grew by ' .. grew_there)
  end)

  it('substitutes values given in opts.subst', function()
    local w = torch.tensor({ 1.0, 2.0 })
    local w2 = torch.tensor({ 10.0, 20.0 })
    local m = { weight = w, again = w, other = 'kept' }
    th:start(function(t) return t.weight, t.again == t.weight, t.other end, { m }, { subst = { [w] = w2 } })
    local got, same, other = th:wait()
    H.assert_values(got, { 10, 20 }, 0)
    assert.is_true(same)
    assert.are.equal('kept', other)
    got[1] = 11
    assert.are.equal(11, w2[1]) -- the replica itself, by reference
    assert.are.equal(1, w[1])
  end)

  it('shares tensors by reference: a write in the thread is seen by the caller', function()
    local base = torch.zeros(3, 4)
    local tr = base:t() -- non-contiguous
    local strides = { run(th, function(a, b)
      a[{ 2, 3 }] = 5
      b[{ 1, 2 }] = 7 -- base[2][1]
      return b:is_contiguous(), a:stride(1), b:stride(1)
    end, base, tr) }
    assert.are.same({ false, 4, 1 }, strides)
    assert.are.equal(5, base[2][3])
    assert.are.equal(7, base[2][1])
    for _, dt in ipairs(H.all_dtypes) do
      local t = torch.zeros(2, { dtype = dt })
      local name = run(th, function(v) v:fill_(1); return v.dtype.name end, t)
      assert.are.equal(dt.name, name)
      assert.are.equal(1, t:double()[2])
    end
  end)

  it('keeps autograd state: a graph recorded in the thread backwards in the caller', function()
    local w = torch.tensor({ 0.5, -1.5, 2.0 }, { requires_grad = true, dtype = torch.float64 })
    local x = torch.tensor({ 3.0, 4.0, -5.0 }, { dtype = torch.float64 })
    local y, leaf_rg, y_rg = run(th, function(w_, x_)
      local out = (w_ * x_):sum()
      return out, w_.requires_grad, out.requires_grad
    end, w, x)
    assert.is_true(leaf_rg)
    assert.is_true(y_rg)
    H.close(y:item(), 0.5 * 3 - 1.5 * 4 - 2 * 5, 1e-12)
    y:backward()
    H.assert_values(w.grad, { 3, 4, -5 }, 1e-12, 'w.grad')
    -- the thread's tensors stay usable there too: a second graph through the thread's op
    local y2 = run(th, function(w_) return (w_ * w_):sum() end, w)
    y2:backward()
    H.assert_values(w.grad, { 3 + 1, 4 - 3, -5 + 4 }, 1e-12, 'accumulated w.grad')
  end)

  it('passes the caller\'s grad mode unless opts.grad_enabled says otherwise', function()
    local probe = function(w) return torch.is_grad_enabled(), (w * 2).requires_grad end
    local w = torch.ones(2, { requires_grad = true })
    assert.are.same({ true, true }, { run(th, probe, w) })
    torch.no_grad(function() assert.are.same({ false, false }, { run(th, probe, w) }) end)
    th:start(probe, { w }, { grad_enabled = false })
    assert.are.same({ false, false }, { th:wait() })
    torch.no_grad(function()
      th:start(probe, { w }, { grad_enabled = true })
      assert.are.same({ true, true }, { th:wait() })
    end)
    assert.is_true(torch.is_grad_enabled())
  end)
end)

describe('errors of Lua threads', function()
  local th
  before_each(function() th = new_thread { name = 'cpu:1' } end)
  after_each(function() th:close() end)

  it('names the path of a coroutine or a userdata that cannot move', function()
    local co = coroutine.create(function() end)
    local model = { layers = { {}, { handle = co } } }
    H.raises(function() th:start(function() end, { 1, model }) end,
      'cpu:1: cannot copy argument 2.layers[2].handle: a coroutine cannot move between Lua states')
    local f = io.tmpfile()
    H.raises(function() th:start(function() end, { { file = f } }) end,
      'cannot copy argument 1.file: a FILE*', 'cannot move between Lua states')
    f:close()
    local wrapped = coroutine.wrap(function() end)
    H.raises(function() th:start(function() return wrapped end, {}) end,
      'cannot copy the function[upvalue wrapped]: a C function', 'cannot move between Lua states')
    -- results too
    th:start(function() return 1, coroutine.create(print) end, {})
    H.raises(function() th:wait() end, 'cpu:1: cannot copy result 2: a coroutine cannot move between Lua states')
    -- the thread is still usable after each failure
    assert.are.equal(3, run(th, function(a, b) return a + b end, 1, 2))
  end)

  it('raises an error of the function in the caller with the thread\'s name and traceback', function()
    th:start(function(v) if v > 0 then error('replica failed on ' .. v) end end, { 4 })
    local err = H.raises(function() th:wait() end, 'cpu:1: ', 'replica failed on 4', 'stack traceback')
    assert.truthy(err:find('lua_thread_spec.lua', 1, true))
    th:start(function() error({ code = 1 }) end, {})
    H.raises(function() th:wait() end, 'cpu:1: (error object is a table value)')
    assert.are.equal('ok', run(th, function() return 'ok' end))
  end)

  it('refuses start while busy, wait without start, and any use after close', function()
    th:start(function() return 1 end, {})
    H.raises(function() th:start(function() end, {}) end, 'cpu:1: busy')
    assert.are.equal(1, th:wait())
    H.raises(function() th:wait() end, 'cpu:1: wait without a start')
    H.raises(function() th:start(42, {}) end, 'function expected')
    th:close()
    H.raises(function() th:start(function() end, {}) end, 'cpu:1: the thread was closed')
    H.raises(function() th:wait() end, 'cpu:1: the thread was closed')
    th:close() -- closing twice is fine
    H.raises(function() torch._lua_thread { threads = -1 } end, 'threads must be a non-negative integer')
  end)

  it('stops a thread closed while it runs an endless loop', function()
    local t2 = new_thread { name = 'spinner' }
    t2:start(function() while true do end end, {})
    local t0 = torch.utils.clock()
    t2:close()
    assert.is_true(torch.utils.clock() - t0 < 5)
    H.raises(function() t2:wait() end, 'spinner: the thread was closed')
  end)
end)

describe('Lua threads running at once', function()
  it('run two functions concurrently', function()
    local a = torch._lua_thread { name = 'cpu:0', threads = 1 }
    local b = torch._lua_thread { name = 'cpu:1', threads = 1 }
    local flags = torch.zeros(2, { dtype = torch.int64 })
    -- each sets its own flag, then waits (at most 10 s) for the other's: both succeed only when
    -- they run at the same time
    local function meet(f, me, other)
      f[me] = 1
      local t0 = torch.utils.clock()
      while f[other] == 0 do
        if torch.utils.clock() - t0 > 10 then return false end
      end
      return true
    end
    a:start(meet, { flags, 1, 2 })
    b:start(meet, { flags, 2, 1 })
    assert.is_true(a:wait())
    assert.is_true(b:wait())
    a:close()
    b:close()
  end)

  it('run deferred calls on the caller\'s OpenMP team with torch._lua_threads_run', function()
    local a = torch._lua_thread { name = 'cpu:1', threads = 1, device = 'cpu:1' }
    local b = torch._lua_thread { name = 'cpu:0b', threads = 1 }
    local flags = torch.zeros(3, { dtype = torch.int64 })
    local function meet(f, me)
      f[me] = 1
      local t0 = torch.utils.clock()
      while f[1] + f[2] + f[3] < 3 do
        if torch.utils.clock() - t0 > 10 then return false end
      end
      -- the thread's settings: its device, its kernel-thread limit, the caller's grad mode
      return true, tostring(torch.zeros(1).device), torch.get_num_threads(), torch.is_grad_enabled()
    end
    local before = torch.get_num_threads()
    a:start(meet, { flags, 2 }, { defer = true })
    b:start(meet, { flags, 3 }, { defer = true, grad_enabled = false })
    assert.is_true(a:busy())
    local here
    -- the three calls meet: they run at the same time (on 2 cores: 2 threads and a third that
    -- waits its turn would time out)
    -- both calls ran on the team's workers, not handed to the Lua threads' own pthreads
    assert.are.equal(2, torch._lua_threads_run({ a, b }, function() here = { meet(flags, 1) } end, 1))
    assert.is_true(here[1])
    assert.are.same({ true, 'cpu:1', 1, true }, { a:wait() })
    assert.are.same({ true, 'cpu:0', 1, false }, { b:wait() })
    -- the caller's settings are its own again
    assert.are.equal(before, torch.get_num_threads())
    assert.are.equal('cpu:0', tostring(torch.zeros(1).device))
    assert.is_true(torch.is_grad_enabled())
    -- errors: of a call, raised by its wait; of fn, raised by _lua_threads_run
    a:start(function() error('deferred call failed') end, {}, { defer = true })
    H.raises(function() torch._lua_threads_run({ a }, function() error('fn failed') end) end, 'fn failed')
    H.raises(function() a:wait() end, 'cpu:1: ', 'deferred call failed')
    -- a deferred call never run by _lua_threads_run runs on its own thread at wait
    a:start(function(x) return x + 1 end, { 41 }, { defer = true })
    assert.are.equal(42, a:wait())
    -- inside a team, a nested one has no more threads: the call goes to its own pthread
    a:start(function() return 1 end, {}, { defer = true })
    b:start(function(x) return x * 2 end, { 21 }, { defer = true })
    local inner
    assert.are.equal(1, torch._lua_threads_run({ a }, function() inner = torch._lua_threads_run({ b }, function() end) end))
    assert.are.equal(0, inner)
    assert.are.equal(1, a:wait())
    assert.are.equal(42, b:wait())
    H.raises(function() torch._lua_threads_run({ a }, function() end) end, 'was not started with opts.defer')
    H.raises(function() torch._lua_threads_run({ 1 }, function() end) end, 'element 1 is not an open Lua thread')
    a:close()
    b:close()
  end)

  it('limit the kernel threads of a thread made with threads = 1, not the caller\'s', function()
    local before = torch.get_num_threads()
    local one = torch._lua_thread { name = 'one', threads = 1 }
    local free = torch._lua_thread { name = 'free' }
    assert.are.equal(1, run(one, function() return torch.get_num_threads() end))
    assert.are.equal(before, run(free, function() return torch.get_num_threads() end))
    assert.are.equal(before, torch.get_num_threads())
    -- a kernel above the parallel threshold gives the same result there
    local x = torch.arange(1, 200001, { dtype = torch.float64 })
    local s = run(one, function(v) return (v * 2):sum():item() end, x)
    assert.are.equal(200000 * 200001, s)
    one:close()
    free:close()
  end)

  it('sets the thread\'s current device when given one', function()
    local th = torch._lua_thread { name = 'dev', device = 'cpu:1' }
    assert.are.same({ 'cpu:1', 'cpu:0' }, { run(th, function() return tostring(torch.zeros(1).device) end),
      tostring(torch.zeros(1).device) })
    th:close()
    H.raises(function() torch._lua_thread { device = 'cpu:7' } end, '_lua_thread: device cpu:7 does not exist')
  end)

  it('can be made inside another Lua thread, and are closed with it', function()
    local outer = torch._lua_thread { name = 'outer' }
    local x = torch.zeros(2)
    local r = run(outer, function(v)
      local inner = torch._lua_thread { name = 'inner' }
      inner:start(function(w) w[2] = 9; return 'inner ran' end, { v })
      local got = inner:wait()
      _G.left_open = torch._lua_thread { name = 'left open' } -- joined when outer's state closes
      _G.left_open:start(function() while true do end end, {})
      return got
    end, x)
    assert.are.equal('inner ran', r)
    assert.are.equal(9, x[2])
    local t0 = torch.utils.clock()
    outer:close()
    assert.is_true(torch.utils.clock() - t0 < 5)
  end)

  it('uses the caller\'s package.path', function()
    local th = torch._lua_thread { name = 'paths' }
    assert.are.same({ package.path, package.cpath }, { run(th, function() return package.path, package.cpath end) })
    th:close()
  end)
end)
