-- torch's process-wide settings (lua/torch/settings.lua, core/settings.c): deterministic
-- algorithms and their debug mode, the float32 matmul precision, warn_always, flush-denormal,
-- the inter-op thread count, torch.seed, compiled_with_cxx11_abi and is_storage; values as
-- PyTorch 1.13 gives them, and their errors. Each test restores what it changes.
local torch = require 'torch'

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, 'expected an error')
  return tostring(e)
end

local function restore_determinism()
  torch.use_deterministic_algorithms(false, { warn_only = false })
end

describe('torch.use_deterministic_algorithms', function()
  after_each(restore_determinism)

  it('is off by default and turns on and off, with warn_only', function()
    assert.is_false(torch.are_deterministic_algorithms_enabled())
    assert.is_false(torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(true)
    assert.is_true(torch.are_deterministic_algorithms_enabled())
    assert.is_false(torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(true, { warn_only = true })
    assert.is_true(torch.is_deterministic_algorithms_warn_only_enabled())
    -- as PyTorch 1.13: warn_only is recorded even when mode is false
    torch.use_deterministic_algorithms(false, { warn_only = true })
    assert.is_false(torch.are_deterministic_algorithms_enabled())
    assert.is_true(torch.is_deterministic_algorithms_warn_only_enabled())
    assert.are.equal(0, torch.get_deterministic_debug_mode())
  end)

  it('maps to the debug mode and back (strings and 0, 1, 2)', function()
    local cases = { { 'default', 0, false, false }, { 'warn', 1, true, true }, { 'error', 2, true, false },
      { 1, 1, true, true }, { 2, 2, true, false }, { 0, 0, false, false } }
    for _, c in ipairs(cases) do
      torch.set_deterministic_debug_mode(c[1])
      assert.are.equal(c[2], torch.get_deterministic_debug_mode())
      assert.are.equal(c[3], torch.are_deterministic_algorithms_enabled())
      assert.are.equal(c[4], torch.is_deterministic_algorithms_warn_only_enabled())
    end
    torch.use_deterministic_algorithms(true, { warn_only = true })
    assert.are.equal(1, torch.get_deterministic_debug_mode())
    torch.use_deterministic_algorithms(true)
    assert.are.equal(2, torch.get_deterministic_debug_mode())
    assert.are.equal('integer', math.type(torch.get_deterministic_debug_mode()))
  end)

  it('refuses bad arguments with PyTorch-style messages', function()
    assert.matches('mode must be a boolean, got number', err_of(torch.use_deterministic_algorithms, 1))
    assert.matches('warn_only must be a boolean', err_of(torch.use_deterministic_algorithms, true, { warn_only = 1 }))
    assert.matches("unknown option 'warnonly'", err_of(torch.use_deterministic_algorithms, true, { warnonly = true }))
    assert.matches('expected one of `default`, `warn`, `error`, but got foo',
      err_of(torch.set_deterministic_debug_mode, 'foo'))
    assert.matches('expected 0, 1, or 2, but got 3', err_of(torch.set_deterministic_debug_mode, 3))
    assert.matches('expected 0, 1, or 2, but got %-1', err_of(torch.set_deterministic_debug_mode, -1))
    -- (1.0 is the integer 1, as everywhere an integer goes)
    assert.matches('must be a string or an integer, but got float', err_of(torch.set_deterministic_debug_mode, 1.5))
    assert.matches('must be a string or an integer, but got nil', err_of(torch.set_deterministic_debug_mode))
    assert.is_false(torch.are_deterministic_algorithms_enabled()) -- nothing changed
  end)

  it("leaves the CPU kernels running (they are deterministic): pooling backwards give the same bits", function()
    torch.use_deterministic_algorithms(true)
    local function grads()
      torch.manual_seed(3)
      local x = torch.randn(2, 3, 9, 9, { requires_grad = true })
      local y = torch.F.max_pool2d(x, 3, { stride = 1 }):sum() + torch.F.avg_pool2d(x, 3, { stride = 1 }):sum()
        + torch.F.adaptive_avg_pool2d(x, { 4, 4 }):sum()
      y:backward()
      local s = torch.zeros(2, 3, 9, 9):scatter_add(4, torch.randint(1, 10, { 2, 3, 9, 9 }), x:detach())
      return x.grad, s
    end
    local g1, s1 = grads()
    local g2, s2 = grads()
    assert.is_true(g1:equal(g2))
    assert.is_true(s1:equal(s2))
    assert.is_true(g1:abs():sum():item() > 0)
  end)

  local cuda = torch.cuda.is_available()
  local function gpu_it(name, fn)
    if cuda then it(name, fn) else pending('no CUDA device: ' .. name) end
  end
  gpu_it('makes the CUDA pooling backwards (atomic adds) raise, or warn with warn_only', function()
    local x = torch.randn(1, 2, 8, 8, { device = 'cuda', requires_grad = true })
    torch.use_deterministic_algorithms(true)
    local y = torch.F.max_pool2d(x, 3, { stride = 1 }):sum()
    local e = err_of(function() y:backward() end)
    assert.matches('max_pool2d_backward_cuda does not have a deterministic implementation', e)
    torch.use_deterministic_algorithms(true, { warn_only = true })
    torch.F.adaptive_avg_pool2d(x, { 3, 3 }):sum():backward()
    assert.is_true(x.grad:sum():item() > 0)
    restore_determinism()
    x.grad = nil
    torch.F.avg_pool2d(x, 3, { stride = 1 }):sum():backward()
    assert.is_true(x.grad:sum():item() > 0)
  end)
  gpu_it('asks for CUBLAS_WORKSPACE_CONFIG before a cuBLAS product', function()
    local a = torch.randn(4, 4, { device = 'cuda' })
    torch.use_deterministic_algorithms(true)
    local cfg = os.getenv('CUBLAS_WORKSPACE_CONFIG')
    if cfg == ':4096:8' or cfg == ':16:8' then
      assert.is_true(a:mm(a):isfinite():all():item())
    else
      assert.matches('CUBLAS_WORKSPACE_CONFIG=:4096:8', err_of(function() return a:mm(a) end))
    end
  end)
end)

describe('torch.set_float32_matmul_precision', function()
  after_each(function() torch.set_float32_matmul_precision('highest') end)

  it("is 'highest' by default and keeps each valid name", function()
    assert.are.equal('highest', torch.get_float32_matmul_precision())
    for _, p in ipairs { 'high', 'medium', 'highest' } do
      torch.set_float32_matmul_precision(p)
      assert.are.equal(p, torch.get_float32_matmul_precision())
    end
  end)

  it('computes float32 products in float32 at every setting', function()
    -- 1 + 2^-20 needs float32's 23 bits: TF32 (10 bits) or bfloat16 would round it to 1
    local a = torch.tensor({ { 1 + 2 ^ -20 } })
    for _, p in ipairs { 'highest', 'high', 'medium' } do
      torch.set_float32_matmul_precision(p)
      assert.are.equal(1 + 2 ^ -20, a:mm(torch.ones(1, 1)):item())
    end
  end)

  it('refuses names it does not know and non-strings', function()
    torch.set_float32_matmul_precision('medium')
    assert.matches("foo is not one of 'highest', 'high', or 'medium'", err_of(torch.set_float32_matmul_precision, 'foo'))
    assert.matches('expects a string, but got number', err_of(torch.set_float32_matmul_precision, 1))
    assert.are.equal('medium', torch.get_float32_matmul_precision())
  end)
end)

describe('torch.set_warn_always', function()
  after_each(function() torch.set_warn_always(false) end)

  it('is off by default and turns on and off', function()
    assert.is_false(torch.is_warn_always_enabled())
    torch.set_warn_always(true)
    assert.is_true(torch.is_warn_always_enabled())
    torch.set_warn_always(false)
    assert.is_false(torch.is_warn_always_enabled())
  end)

  it("repeats torch.utils.checkpoint's once-only warning", function()
    local cp = torch.utils.checkpoint
    local written = {}
    local stderr = io.stderr
    -- a stand-in for io.stderr that records what is written
    io.stderr = { write = function(_, ...) written[#written + 1] = table.concat({ ... }) end }
    local ok, e = pcall(function()
      torch.set_warn_always(true)
      for _ = 1, 2 do cp.checkpoint(function(x) return x * 2 end, torch.ones(2)) end
    end)
    io.stderr = stderr
    assert(ok, e)
    local n = 0
    for _, w in ipairs(written) do if w:find('requires_grad') then n = n + 1 end end
    assert.are.equal(2, n)
  end)

  it('refuses a non-boolean', function()
    assert.matches('set_warn_always: the flag must be a boolean, got number', err_of(torch.set_warn_always, 1))
  end)
end)

describe('torch.set_flush_denormal', function()
  after_each(function() torch.set_flush_denormal(false) end)

  local x86 = jit == nil and io.popen('uname -m'):read('l'):match('x86') ~= nil
  it('flushes float32 and float64 denormal results to zero on x86 and stops when turned off', function()
    local tiny64 = torch.tensor({ 1e-300, 2e-300 }, { dtype = torch.float64 })
    local tiny32 = torch.tensor({ 1e-30, 2e-30 })
    assert.are.equal(1e-310, (tiny64 * 1e-10)[1]) -- a denormal by default
    assert.is_true((tiny32 * 1e-10)[1] > 0)
    local supported = torch.set_flush_denormal(true)
    assert.are.equal(x86, supported)
    -- compared by their bytes: with denormals-are-zero on, Lua's own == takes 1e-310 for 0
    local function is_zero(v) return string.pack('d', v) == string.pack('d', 0) end
    if supported then
      assert.is_true(is_zero((tiny64 * 1e-10)[1]))
      assert.is_true(is_zero((tiny64 * 1e-10)[2]))
      assert.is_true(is_zero((tiny32 * 1e-10)[1]))
    end
    torch.set_flush_denormal(false)
    local d = tiny64 * 1e-10
    assert.is_false(is_zero(d[1]))
    if supported then
      torch.set_flush_denormal(true)
      -- denormal operands read as zero too: 1e-310 * 1e10 is 0, not 1e-300
      assert.is_true(is_zero((d * 1e10)[1]))
    end
    assert.is_true(torch.set_flush_denormal(false) == supported)
    assert.are.equal(1e-310, (tiny64 * 1e-10)[1])
  end)

  it('refuses a non-boolean', function()
    assert.matches('set_flush_denormal: mode must be a boolean, got number', err_of(torch.set_flush_denormal, 1))
  end)
end)

describe('torch.set_num_interop_threads', function()
  it('starts at 1, refuses non-positive and non-integer counts, and can be set once', function()
    assert.are.equal(1, torch.get_num_interop_threads())
    for _, bad in ipairs { 0, -2, 1.5, '2' } do
      assert.matches('set_num_interop_threads expects a positive integer', err_of(torch.set_num_interop_threads, bad))
    end
    assert.are.equal(1, torch.get_num_interop_threads())
    torch.set_num_interop_threads(3)
    assert.are.equal(3, torch.get_num_interop_threads())
    assert.matches('cannot set number of interop threads after set_num_interop_threads called',
      err_of(torch.set_num_interop_threads, 2))
    assert.are.equal(3, torch.get_num_interop_threads())
  end)
end)

describe('torch.seed', function()
  after_each(function() torch.manual_seed(0) end)

  it('seeds the default generator with a fresh non-negative seed and returns it', function()
    local s1 = torch.seed()
    assert.are.equal('integer', math.type(s1))
    assert.is_true(s1 >= 0)
    assert.are.equal(s1, torch.initial_seed())
    local a = torch.rand(5)
    torch.manual_seed(s1)
    assert.is_true(a:equal(torch.rand(5)))
    local s2 = torch.seed()
    assert.are_not.equal(s1, s2) -- 63 random bits: equal once in 2^63
    assert.are.equal(s2, torch.initial_seed())
  end)
end)

describe('torch.compiled_with_cxx11_abi and torch.is_storage', function()
  it('are false', function()
    assert.is_false(torch.compiled_with_cxx11_abi())
    assert.is_false(torch.is_storage(torch.zeros(2)))
    assert.is_false(torch.is_storage({}))
    assert.is_false(torch.is_storage(nil))
  end)
end)
