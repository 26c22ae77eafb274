-- torch.finfo and torch.iinfo against PyTorch's values (spec/data/functions_reference.lua, written
-- by tools/gen_functions_reference.py) and against closed forms, and torch.set_default_dtype /
-- get_default_dtype: what the factories, the type promotion and printing make of it, in the main
-- state, in DataLoader workers and in Lua threads. Every test that changes the default restores it.
local torch = require 'torch'
local REF = dofile('spec/data/functions_reference.lua')

local FLOATS = { 'float32', 'float64', 'float16', 'bfloat16' }
local INTS = { 'int64', 'int32', 'int16', 'int8', 'uint8' }

describe('torch.finfo', function()
  it("gives PyTorch's values for every floating dtype", function()
    for _, name in ipairs(FLOATS) do
      local f, r = torch.finfo(torch[name]), REF.finfo[name]
      for _, k in ipairs { 'bits', 'eps', 'max', 'min', 'tiny', 'smallest_normal', 'resolution' } do
        assert.are.equal(r[k], f[k], name .. '.' .. k)
      end
      assert.are.equal(name, f.dtype)
    end
  end)

  it('agrees with the closed forms of the formats', function()
    -- eps: the gap above 1; max: the largest finite value; tiny: the smallest normal
    local fmt = { float32 = { 23, 127, -126 }, float64 = { 52, 1023, -1022 }, float16 = { 10, 15, -14 },
      bfloat16 = { 7, 127, -126 } }
    for name, p in pairs(fmt) do
      local f = torch.finfo(torch[name])
      assert.are.equal(2.0 ^ -p[1], f.eps)
      assert.are.equal((2 - 2.0 ^ -p[1]) * 2.0 ^ p[2], f.max)
      assert.are.equal(-f.max, f.min)
      assert.are.equal(2.0 ^ p[3], f.tiny)
    end
    -- the values are the dtypes' own: 1 + eps is the next value after 1, max stays finite, max * 2 does not
    for _, name in ipairs(FLOATS) do
      local f, dt = torch.finfo(torch[name]), torch[name]
      assert.is_true(torch.tensor({ 1 + f.eps }, { dtype = dt }):item() > 1, name)
      assert.are.equal(1.0, torch.tensor({ 1 + f.eps / 4 }, { dtype = dt }):item(), name)
      assert.are.equal(f.max, torch.tensor({ f.max }, { dtype = dt }):item(), name)
      assert.are.equal(f.tiny, torch.tensor({ f.tiny }, { dtype = dt }):item(), name)
    end
  end)

  it("without an argument gives the default dtype's, and prints as PyTorch's", function()
    assert.are.equal('float32', torch.finfo().dtype)
    assert.are.equal('finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, '
      .. 'smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)', tostring(torch.finfo()))
    torch.set_default_dtype(torch.float64)
    local ok, f = pcall(torch.finfo)
    torch.set_default_dtype(torch.float32)
    assert.is_true(ok, f)
    assert.are.equal(REF.finfo.float64.eps, f.eps)
    assert.are.equal(torch.finfo('float16').max, 65504.0)
  end)

  it('refuses other types with a clear error', function()
    for _, name in ipairs(INTS) do
      assert.has_error(function() torch.finfo(torch[name]) end,
        'finfo: expected a floating point dtype, got torch.' .. name .. ' (torch.iinfo gives the limits of integer types)')
    end
    assert.has_error(function() torch.finfo(torch.bool) end)
    assert.has_error(function() torch.finfo(3) end, 'finfo: expected a dtype (e.g. torch.float32), got number')
    assert.has_error(function() torch.finfo('float128') end, "finfo: expected a dtype (e.g. torch.float32), got 'float128'")
  end)
end)

describe('torch.iinfo', function()
  it("gives PyTorch's values for the integer dtypes and uint8, as integers", function()
    for _, name in ipairs(INTS) do
      local i, r = torch.iinfo(torch[name]), REF.iinfo[name]
      assert.are.equal(r.bits, i.bits)
      assert.are.equal(r.max, i.max)
      assert.are.equal(r.min, i.min)
      assert.are.equal('integer', math.type(i.max))
      assert.are.equal('integer', math.type(i.min))
      assert.are.equal(name, i.dtype)
      -- closed forms: two's complement of `bits` bits, or unsigned
      local signed = name ~= 'uint8'
      if i.bits < 64 then
        assert.are.equal(signed and (1 << (i.bits - 1)) - 1 or (1 << i.bits) - 1, i.max)
        assert.are.equal(signed and -(1 << (i.bits - 1)) or 0, i.min)
      else
        assert.are.equal(math.maxinteger, i.max)
        assert.are.equal(math.mininteger, i.min)
      end
      -- the limits are held exactly by a tensor of the dtype
      assert.are.equal(i.max, torch.tensor({ i.max }, { dtype = torch[name] }):item())
      assert.are.equal(i.min, torch.tensor({ i.min }, { dtype = torch[name] }):item())
    end
    assert.are.equal('iinfo(min=0, max=255, dtype=uint8)', tostring(torch.iinfo(torch.uint8)))
  end)

  it('refuses floating types and bool with a clear error', function()
    assert.has_error(function() torch.iinfo(torch.float32) end,
      'iinfo: expected an integer dtype, got torch.float32 (torch.finfo gives the limits of floating point types)')
    assert.has_error(function() torch.iinfo(torch.bool) end, 'iinfo: expected an integer dtype, got torch.bool')
    assert.has_error(function() torch.iinfo({}) end, 'iinfo: expected a dtype (e.g. torch.float32), got table')
  end)
end)

describe('the limits used inside torch', function()
  it('rms_norm, matrix_rank and the distributions take eps and tiny from torch.finfo', function()
    local x = torch.tensor({ { 0.0, 0.0 } }, { dtype = torch.float64 })
    -- eps = finfo.eps: x / sqrt(0 + eps) at x = 0 stays 0, at x = 1e-8 it is 1e-8 / sqrt(eps)
    local y = torch.F.rms_norm(x + 1e-8, { 2 })
    assert.is_true(math.abs(y[1][1] - 1e-8 / math.sqrt(1e-16 + 2.0 ^ -52)) < 1e-12)
    local U = require 'torch.distributions.utils'
    assert.are.equal(2.0 ^ -23, U.finfo(torch.float32).eps)
    assert.are.equal(2.0 ^ -14, U.finfo(torch.float16).tiny)
    assert.are.equal(2.0 ^ -23, U.finfo(torch.int64).eps) -- integer dtypes: the default's
    -- nan_to_num: infinities become the dtype's max
    local t = torch.tensor({ math.huge, -math.huge }, { dtype = torch.float16 }):nan_to_num()
    assert.are.same({ 65504.0, -65504.0 }, t:totable())
  end)
end)

describe('torch.set_default_dtype', function()
  local function restore() torch.set_default_dtype(torch.float32) end
  after_each(restore)

  it('is float32 when not set', function()
    assert.are.equal(torch.float32, torch.get_default_dtype())
    assert.are.equal(torch.float32, torch.tensor({ 1.5 }).dtype)
    assert.are.equal(torch.float32, torch.zeros(2).dtype)
    assert.are.equal(torch.float32, torch.rand(2).dtype)
    assert.are.equal(torch.float32, torch.arange(0, 1, 0.5).dtype)
    assert.are.equal(torch.float32, torch.tensor({ 1, 2 }):sqrt().dtype)
    assert.are.equal(torch.float32, (torch.tensor({ 1, 2 }) * 0.5).dtype)
    assert.are.equal(torch.float32, torch.nn.Linear(2, 3).weight.dtype)
    assert.are.equal('tensor([1.5000])', tostring(torch.tensor({ 1.5 })))
  end)

  it('changes what the factories, the promotions and nn layers make, and printing', function()
    torch.set_default_dtype(torch.float64)
    local f64 = torch.float64
    assert.are.equal(f64, torch.get_default_dtype())
    -- a float64 literal keeps its digits
    assert.are.equal(0.1, torch.tensor({ 0.1 }):item())
    for name, t in pairs {
      tensor = torch.tensor({ 1.5, 2 }), empty_table = torch.tensor({}), zeros = torch.zeros(2), ones = torch.ones(2, 2),
      empty = torch.empty(3), full = torch.full({ 2 }, 0.5), rand = torch.rand(2), randn = torch.randn(2),
      arange = torch.arange(0, 1, 0.25), linspace = torch.linspace(0, 1, 5), eye = torch.eye(2),
      logspace = torch.logspace(0, 1, 3), sqrt_int = torch.tensor({ 1, 4 }):sqrt(),
      int_times_float = torch.tensor({ 1, 2 }) * 0.5, logsumexp_int = torch.tensor({ 1, 2 }):logsumexp(1), int_div = torch.tensor({ 1, 2 }) / torch.tensor({ 2, 2 }),
    } do
      assert.are.equal(f64, t.dtype, name)
    end
    assert.are.equal(torch.int64, torch.arange(0, 4).dtype)
    assert.are.equal(torch.int64, torch.full({ 2 }, 3).dtype)
    assert.are.equal(torch.float32, torch.zeros(2, { dtype = torch.float32 }).dtype)
    assert.are.equal(f64, torch.result_type(torch.tensor({ 1 }), 1.5))
    local lin = torch.nn.Linear(2, 3)
    assert.are.equal(f64, lin.weight.dtype)
    assert.are.equal(f64, lin.bias.dtype)
    assert.are.equal(f64, torch.nn.Conv2d(1, 2, 3).weight.dtype)
    -- printing: the default's name is left out, float32's is printed
    assert.are.equal('tensor([1.5000])', tostring(torch.tensor({ 1.5 })))
    assert.are.equal('tensor([1.5000], dtype=torch.float32)', tostring(torch.tensor({ 1.5 }, { dtype = torch.float32 })))
    restore()
    assert.are.equal(torch.float32, torch.zeros(1).dtype)
    assert.are.equal('tensor([1.5000], dtype=torch.float64)', tostring(torch.tensor({ 1.5 }, { dtype = f64 })))
  end)

  it('takes only float32 and float64, with clear errors', function()
    assert.has_error(function() torch.set_default_dtype(torch.int32) end,
      'set_default_dtype: only floating-point types are supported as the default type, got int32')
    assert.has_error(function() torch.set_default_dtype(torch.bool) end,
      'set_default_dtype: only floating-point types are supported as the default type, got bool')
    assert.has_error(function() torch.set_default_dtype(torch.float16) end,
      'set_default_dtype: only float32 and float64 are supported as the default type, got float16')
    assert.has_error(function() torch.set_default_dtype(torch.bfloat16) end,
      'set_default_dtype: only float32 and float64 are supported as the default type, got bfloat16')
    assert.has_error(function() torch.set_default_dtype(nil) end)
    assert.are.equal(torch.float32, torch.get_default_dtype())
  end)

  it('is one setting for the whole process: DataLoader workers and Lua threads see it', function()
    torch.set_default_dtype(torch.float64)
    local Halves = require('spec.support.default_dtype_dataset').Halves
    local loader = torch.data.DataLoader(Halves(4), { batch_size = 2, num_workers = 2 })
    local workers = {}
    for x, id in loader:iter() do
      assert.are.equal(torch.float64, x.dtype)
      assert.are.equal(x:select(2, 1):totable()[1] % 1, 0.5)
      workers[id[1]] = true
    end
    assert.is_true(workers[1] and workers[2], 'both workers made batches')
    local th = torch._lua_thread({ name = 'cpu:1' })
    th:start(function() return torch.get_default_dtype().name, torch.tensor({ 0.5 }).dtype.name end, table.pack())
    local a, b = th:wait()
    assert.are.equal('float64', a)
    assert.are.equal('float64', b)
    -- and back to float32 everywhere
    restore()
    for x in loader:iter() do assert.are.equal(torch.float32, x.dtype) end
  end)
end)
