-- The API fuzzer (spec/support/api_fuzz.lua): a fixed seed and number of calls here; other seeds
-- and longer runs by hand:
--   LUTORCH_FUZZ_SEED=7 LUTORCH_FUZZ_CALLS=100000 build/lutorch /usr/bin/busted --no-auto-insulate spec/api_fuzz_spec.lua
-- LUTORCH_FUZZ_FIRST=i starts at call i (a call can be replayed alone unless the trace marks it a
-- mutant: those replay from call 1),
-- LUTORCH_FUZZ_TRACE=1 prints each call to stderr before making it (to name the one that crashes),
-- LUTORCH_FUZZ_SLOW=s makes a call slower than s seconds a finding (default 5; 15 suits the
-- sanitized build, about 3 times slower),
-- LUTORCH_FUZZ_BIG=1 adds sizes near 2^31 (run it under a memory limit: ulimit -v, or ASan's
-- max_allocation_size_mb). Below the run, the focused cases for the bugs it found.
local torch = require 'torch'
local H = require 'spec.helpers'
local fuzz = require 'spec.support.api_fuzz'

-- about 12 s in the normal build, 25 s in the sanitized one
local DEFAULT_CALLS = 20000

local function env_int(name, default)
  local v = os.getenv(name)
  return v and assert(math.tointeger(tonumber(v)), name .. ' must be an integer') or default
end

describe('API fuzzer', function()
  it('a seeded run: errors are messages, results are sane, nothing is slow', function()
    local seed, calls = env_int('LUTORCH_FUZZ_SEED', 1), env_int('LUTORCH_FUZZ_CALLS', DEFAULT_CALLS)
    local report = fuzz.run {
      seed = seed, calls = calls, first = env_int('LUTORCH_FUZZ_FIRST', 1), big = os.getenv('LUTORCH_FUZZ_BIG') == '1',
      trace = os.getenv('LUTORCH_FUZZ_TRACE') == '1', slow = env_int('LUTORCH_FUZZ_SLOW', 5),
    }
    local c = report.counts
    if os.getenv('LUTORCH_FUZZ_TRACE') or calls ~= DEFAULT_CALLS then
      io.stderr:write(('fuzz seed %d: %d calls (%d ok, %d errors), %d of %d targets\n'):format(seed, c.calls, c.ok,
        c.errors, c.distinct, c.available))
    end
    assert(#report.findings == 0, #report.findings .. ' findings:\n' .. table.concat(report.findings, '\n', 1,
      math.min(#report.findings, 40)))
    -- the run reaches most targets, and both outcomes are common
    if calls >= 3000 then
      assert.is_true(c.distinct > 0.9 * c.available, ('reached %d of %d targets'):format(c.distinct, c.available))
      assert.is_true(c.ok > c.calls / 10 and c.errors > c.calls / 10, ('%d ok, %d errors'):format(c.ok, c.errors))
    end
  end)
end)

-- Each case below failed (or hung) before the fix named in it.
describe('API fuzzer findings', function()
  it('polygamma of a huge order returns at once: n! stops at its overflow (it looped n times)', function()
    local ok, y = fuzz.within(2, function() return torch.tensor({ 0.5, 2 }):polygamma(1 << 62) end)
    assert(ok, y)
    -- (-1)^(n + 1) n! zeta(n + 1, x): n! is inf, zeta(n + 1, 0.5) = 2^(n + 1) is inf and zeta(n + 1, 2) is 0
    H.assert_values(y, { -math.huge, 0 / 0 })
    ok, y = fuzz.within(2, function() return torch.tensor({ 0.5 }):polygamma(math.maxinteger) end)
    assert(ok, y)
    H.assert_values(y, { math.huge })
    -- ordinary orders are unchanged: psi''(1) = -2 zeta(3)
    H.assert_values(torch.tensor({ 1.0 }, { dtype = torch.float64 }):polygamma(2), { -2.4041138063191885 }, 1e-12)
  end)

  it("Laguerre's and Legendre's polynomials refuse a degree whose recurrence would run for years", function()
    local x = torch.tensor({ 0.5 }, { dtype = torch.float64 })
    for _, name in ipairs { 'laguerre_polynomial_l', 'legendre_polynomial_p' } do
      local f = torch.special[name]
      -- (this one first: without the limit it still returns, in a few hundredths of a second)
      H.raises(function() f(x, torch.tensor({ 1, (1 << 24) + 1 })) end, 'special.' .. name .. ': degree n = 16777217 is too large')
      H.raises(function() f(x, math.maxinteger) end, 'degree n = 9223372036854775807 is too large')
      H.raises(function() f(x, torch.tensor({ 0 / 0, math.huge })) end, 'degree n = inf is too large')
      -- up to the limit they compute, NaN degrees included (0, as for n < 0)
      assert.are.equal(2, f(x, torch.tensor({ 1 << 24, 0 / 0 })):numel())
    end
    -- L_3(0.5) = (-x^3 + 9x^2 - 18x + 6) / 6, P_3(0.5) = (5x^3 - 3x) / 2
    H.assert_values(torch.special.laguerre_polynomial_l(x, 3), { (-0.125 + 2.25 - 9 + 6) / 6 }, 1e-12)
    H.assert_values(torch.special.legendre_polynomial_p(x, 3), { (0.625 - 1.5) / 2 }, 1e-12)
  end)

  it('split and split_with_sizes: sizes near 2^63 neither overflow nor pass for a smaller sum', function()
    -- a size of 2^63 - 1 made ceil(size / split_size) overflow (caught by the UBSan build)
    local pieces = torch.arange(0, 3):split(math.maxinteger)
    assert.are.equal(1, #pieces)
    assert.are.same({ 0, 1, 2 }, pieces[1]:totable())
    -- (2^63 - 1) * 2 + 2 wrapped to 0, the size of the dimension
    local x = torch.zeros(0, 3)
    H.raises(function() x:split_with_sizes({ math.maxinteger, math.maxinteger, 2 }) end,
      'split_with_sizes: expects split_sizes to sum exactly to 0')
    H.raises(function() torch.zeros(5):split_with_sizes({ math.maxinteger, 3, -1 }) end, 'non-negative')
    assert.are.same({ 2, 3 }, H.map(torch.zeros(5):split_with_sizes({ 2, 3 }), function(t) return t:numel() end))
  end)

  it('tensor_split refuses a number of sections that would fill the memory with empty views', function()
    local ok, err = fuzz.within(2, torch.tensor_split, torch.zeros(0, 3), 1 << 62)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('tensor_split: too many sections (4611686018427387904)', 1, true), err)
    -- more sections than elements are still fine: the last ones are empty
    local p = torch.arange(0, 3):tensor_split(5)
    assert.are.same({ 1, 1, 1, 0, 0 }, H.map(p, function(t) return t:numel() end))
  end)

  -- a freed block full of the byte 190 in the CPU cache, for the next allocation of its size
  local function dirty_cache(n)
    local t = torch.full({ n }, 190, { dtype = torch.uint8 })
    t = nil
    collectgarbage()
    collectgarbage()
  end

  it('bool tensors never hold bytes other than 0 and 1 (reading one as C bool is undefined)', function()
    -- empty and its kin start false (each made from `base`, which exists before the cache is dirtied)
    local makers = {
      function() return torch.empty(4096, { dtype = torch.bool }) end,
      function(base) return torch.empty_like(base:expand(4096)) end,
      function(base) return base:new_empty(4096) end,
      function() return torch.empty_strided({ 4096 }, { 1 }, { dtype = torch.bool }) end,
      function(base) return base:new_empty_strided({ 4096 }, { 1 }) end,
      -- resize_ grows a bool tensor with false
      function(base) return base:resize_(4096) end,
    }
    for i, make in ipairs(makers) do
      local base = torch.zeros(1, { dtype = torch.bool })
      dirty_cache(4096)
      local b = make(base)
      assert.are.equal(0, b:to(torch.uint8):max():item(), 'maker ' .. i)
    end
    -- a safetensors file's BOOL bytes: any non-zero byte is true
    local path = os.tmpname()
    local header = '{"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}'
    local f = assert(io.open(path, 'wb'))
    f:write(string.pack('<I8', #header) .. header .. '\2\0\255')
    f:close()
    local a = torch.load(path).a
    os.remove(path)
    assert.are.same({ 1, 0, 1 }, a:to(torch.uint8):totable())
    assert.are.same({ true, false, true }, a:totable())
  end)

  it('transpose and permute of a tensor that requires grad refuse a bad dim before recording it', function()
    -- the dim, wrapped but not checked, indexed the recorded permutation out of its bounds (caught by
    -- the UBSan build)
    local x = torch.zeros(3, 2, { requires_grad = true })
    H.raises(function() x:transpose(1, -4) end, 'transpose: dimension out of range')
    H.raises(function() torch.swapdims(x, 5, 1) end, 'transpose')
    H.raises(function() x:permute(1, -5) end, 'permute')
    local y = x:transpose(1, -1)
    assert.are.same({ 2, 3 }, y:size())
    y:sum():backward()
    H.assert_values(x.grad, { { 1, 1 }, { 1, 1 }, { 1, 1 } })
  end)

  it('pad, interpolate and the adaptive max pools refuse an output no memory holds at once', function()
    -- each built a Lua table as long as the output's dim before making any tensor
    local F = torch.nn.functional
    local cases = {
      { 'pad: an output of size [2, 4611686018427387904]', F.pad, torch.zeros(2, 3), { 1 << 62, 4 }, 'replicate' },
      { 'pad: an output of size', F.pad, torch.zeros(2, 3), { math.maxinteger, math.maxinteger }, 'replicate' },
      { 'interpolate: an output of size [2, 3, 9223372036854775807]', F.interpolate, torch.zeros(2, 3, 5),
        { size = math.maxinteger } },
      -- 'area' resamples by a product with an n_in x n_out matrix, a table first
      { 'interpolate: an output of size [1048576, 1048576]', F.interpolate, torch.zeros(1, 1, 1 << 20),
        { size = 1 << 20, mode = 'area' } },
      { 'adaptive_max_pool1d: an output of size [1, 33, 1, 4611686018427387904]', F.adaptive_max_pool1d,
        torch.zeros(33, 33), 1 << 62 },
      { 'adaptive_max_pool2d: an output of size', F.adaptive_max_pool2d, torch.zeros(1, 2, 3), { 1 << 40, 1 << 40 } },
    }
    for _, c in ipairs(cases) do
      local ok, err = fuzz.within(2, c[2], table.unpack(c, 3))
      assert.is_false(ok, c[1])
      assert.truthy(tostring(err):find(c[1], 1, true), err)
    end
    -- ordinary sizes still work
    assert.are.same({ { 1, 1, 1, 2, 3, 3 } }, F.pad(torch.arange(1, 4):view(1, 3), { 2, 1 }, 'replicate'):totable())
    assert.are.same({ 1, 1, 6 }, F.interpolate(torch.ones(1, 1, 3), { size = 6 }):size())
    H.assert_values(F.adaptive_max_pool1d(torch.tensor({ { 1.0, 3, 2, 5 } }), 2), { { 3, 5 } })
  end)

  it('an expanded view whose sizes multiply past 2^63 is refused (its element count overflowed)', function()
    H.raises(function() torch.tile(torch.zeros(33, 33), math.maxinteger) end, 'more than 2^63 elements')
    H.raises(function() torch.zeros(1, 16):expand(1 << 62, 16) end, 'view: a view of size [4611686018427387904, 16]')
    H.raises(function() torch.linalg.vander(torch.zeros(2, 2), { N = 1 << 62 }) end, 'more than 2^63 elements')
    -- up to 2^63 - 1 elements a view of one element is fine: nothing is allocated
    local v = torch.zeros(1, 1):expand(1 << 31, 1 << 31)
    assert.are.equal(1 << 62, v:numel())
    assert.are.same({ 0, 0 }, { v:stride(1), v:stride(2) })
  end)

  it('combinations refuses a count of rows no memory holds before listing them', function()
    -- C(1025, 9) is about 3.3e21 rows: they were listed one Lua table at a time
    local ok, err = fuzz.within(2, torch.combinations, torch.zeros(1025), 9)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('combinations: an output of size [3322432355087930097664, 9]', 1, true), err)
    ok, err = fuzz.within(2, torch.combinations, torch.zeros(3), 1 << 62, true)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('combinations: an output of size', 1, true), err)
    -- C(4, 2) = 6 rows, C(5, 2) = 10 with replacement, none when r > n
    assert.are.same({ { 1, 2 }, { 1, 3 }, { 1, 4 }, { 2, 3 }, { 2, 4 }, { 3, 4 } }, torch.combinations(torch.arange(1, 5), 2):totable())
    assert.are.equal(10, torch.combinations(torch.arange(1, 5), 2, true):size(1))
    assert.are.equal(0, torch.combinations(torch.arange(1, 4), 5):size(1))
  end)

  it('an index of 2^63 - 1 (0-based) is reported without overflowing its 1-based number', function()
    local x = torch.zeros(3)
    -- math.mininteger, 1-based, is 2^63 - 1 once made 0-based (modulo 2^64)
    H.raises(function() x:gather(1, torch.tensor({ math.mininteger })) end, 'gather(): index 9223372036854775808 is out of bounds')
    H.raises(function() x:index_select(1, torch.tensor({ math.mininteger })) end, 'index_select: index 9223372036854775808 out of range')
    H.raises(function() torch.diagflat(torch.zeros(3), math.maxinteger) end, 'index 9223372036854775808')
    H.raises(function() x:gather(1, torch.tensor({ 4 })) end, 'gather(): index 4 is out of bounds for dimension 1 with size 3')
  end)

  it('matrix_exp of finite float32 matrices near its range neither loops forever nor scales them to 0', function()
    -- the column sums overflowed float32 to inf, and the number of squarings with them
    local ok, e = fuzz.within(2, torch.linalg.matrix_exp, torch.full({ 2, 5, 5 }, 3.4e38))
    assert(ok, e)
    assert.is_false(e:isfinite():any():item())
    -- 2^128, the scale of a norm past 2^127, overflowed float32: the scaled matrix was 0 and exp(A) = I
    H.assert_values(torch.linalg.matrix_exp(torch.full({ 1, 1 }, 1e38)), { { math.huge } })
    H.assert_values(torch.linalg.matrix_exp(torch.full({ 1, 1 }, -1e38)), { { 0 } })
    H.assert_values(torch.linalg.matrix_exp(torch.full({ 1, 1 }, 80.0)), { { math.exp(80) } }, 1e-4)
  end)

  it('an index assignment of a bad value does not leak the tensor (the view was held across the error)', function()
    collectgarbage()
    collectgarbage()
    local before = torch.memory.allocated('cpu')
    do
      local x = torch.zeros(1000)
      H.raises(function() x[{}] = nil end, 'index assignment: the value must be a number, a boolean or a tensor, got nil')
      H.raises(function() x[{ { 1, 2 } }] = 'a' end, 'the value must be a number, a boolean or a tensor, got string')
    end
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, torch.memory.allocated('cpu'))
    -- good values are still assigned
    local y = torch.zeros(2, 3)
    y[{ {}, 2 }] = 7
    y[{ 1 }] = torch.ones(3)
    assert.are.same({ { 1, 1, 1 }, { 0, 7, 0 } }, y:totable())
  end)

  it('an empty view with a size of 2^62 counts its elements without overflowing (x:tile(2^62) of a [33, 0])', function()
    -- the element count multiplied 2^62 by 33 before the 0 (signed overflow, under UBSan an abort)
    local y = torch.zeros(33, 0):reshape({ 1, 33, 1, 0 }):expand({ 1, 33, 1 << 62, 0 })
    assert.are.same({ 1, 33, 1 << 62, 0 }, y:size())
    assert.are.equal(0, y:numel())
    H.raises(function() return torch.zeros(33, 0, { dtype = torch.bfloat16 }):tile(1 << 62) end, 'too large')
  end)
end)
