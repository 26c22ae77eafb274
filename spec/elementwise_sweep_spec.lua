-- An OpInfo-like parity sweep of the elementwise ops against PyTorch 1.13: every op over every dtype
-- on a few values each, chosen for their edge cases (0, -0, negatives, NaN, inf, large values, each
-- integer dtype's extremes and wraparound), and type promotion (every pair of dtypes, tensors with
-- Lua integers and floats, 0-dim tensors beside dimensioned ones). The references are PyTorch's
-- results (spec/data/elementwise_sweep_reference.lua, written by tools/gen_elementwise_sweep.py):
-- the same dtype, shape and values (exactly for integer and bool results and for the exact ops,
-- within a tolerance suited to the dtype for the transcendental ones; NaN equals NaN; the sign of a
-- zero counts for the exact ops), or an error naming the op where PyTorch raises. Each case runs
-- again on transposed (strided) views of its inputs and on broadcast ones.
--
-- Deliberate departures from PyTorch 1.13 (the reference follows lutorch's side, or the case is
-- checked here by hand):
--   float16 ops that PyTorch 1.13 lacks on the CPU ("not implemented for 'Half'": sqrt, exp, sin,
--     floor, atan2, lerp, clamp, ...): lutorch has them; the reference is PyTorch's float32 result
--     rounded to float16, as its CUDA kernels compute (cases marked half32).
--   the integer division of the dtype's minimum by -1 (int32, int64): PyTorch 1.13 dies of SIGFPE;
--     lutorch wraps around, as the other integer overflows do (checked below).
--   shifts by a negative amount: PyTorch 1.13 shifts as x86 does (C++'s undefined behaviour);
--     lutorch gives later PyTorch's 0 or sign (spec/bitwise_spec.lua); the sweep shifts by b's |b|.
--   the sign of a zero from maximum, minimum, fmax, fmin and clamp of 0 and -0: PyTorch 1.13 gives
--     either, depending on the dtype (IEEE leaves it open); not compared.
--   a number divided by a tensor: PyTorch 1.13 multiplies by the tensor's reciprocal (an ulp off);
--     lutorch divides, correctly rounded (div is compared within a tolerance).
--   the entries of DEPARTURES below.
local torch = require 'torch'
local H = require 'spec.helpers'
local C = require 'spec.support.sweep'

local REF = dofile('spec/data/elementwise_sweep_reference.lua')
local INF = math.huge

-- cases where lutorch departs from PyTorch 1.13 on purpose: a pattern matching the case (as
-- describe_case writes it) and either the reason it is skipped or fix(x), lutorch's value where
-- the first argument's element is x (nil: PyTorch's)
local DEPARTURES = {
  -- PyTorch 1.13's i0 of +-inf is NaN (its series divides inf by inf); I0(+-inf) is +inf
  { '^i0%(', fix = function(x) if x == INF or x == -INF then return INF end end },
  -- PyTorch 1.13 has nextafter for bfloat16 (not float16); lutorch refuses both
  { '^nextafter%(bfloat16_a', skip = 'float16 and bfloat16 refused' },
}

-- the device the inputs are made on: the CPU, then the GPU where one is present (the same cases, its
-- results copied back to be compared)
local device = 'cpu'

local function input(name)
  if name == 'nil' then return nil end
  if type(name) ~= 'string' then return name end
  local r = REF.inputs[name]
  local t = torch.tensor(r.data, { dtype = torch[r.dtype] })
  return (#r.shape == 0 and t:reshape({}) or t):to(device)
end

-- the difference between got (a flat table) and the reference out, or nil
local function differs(op, got, out) return C.differs(op, got, out.data, out.dtype) end

local function call(c, args)
  local n = #c.args
  if c.kw then args[n + 1], n = c.kw, n + 1 end
  return torch[c.op](table.unpack(args, 1, n))
end

local function describe_case(c) return C.describe(c.op, c.args, c.kw) end

-- the failures of case c, appended to fails
local function check_case(c, fails)
  local args = {}
  for i = 1, #c.args do args[i] = input(c.args[i]) end
  local ok, r = pcall(call, c, args)
  local what = describe_case(c)
  for _, d in ipairs(DEPARTURES) do
    if what:find(d[1]) then
      if d.skip then return end
      local x = H.flatten(args[1]:totable())
      local data = {}
      for i, w in ipairs(c.out.data) do
        local v = d.fix(x[i])
        if v == nil then data[i] = w else data[i] = v end
      end
      c = { op = c.op, args = c.args, kw = c.kw, out = { dtype = c.out.dtype, shape = c.out.shape, data = data } }
    end
  end
  if c.err then
    if ok then
      fails[#fails + 1] = what .. ': PyTorch raises, lutorch gives ' .. tostring(r.dtype)
    elseif not tostring(r):find(c.op, 1, true) then
      fails[#fails + 1] = what .. ': the error does not name the op: ' .. tostring(r)
    end
    return
  end
  if not ok then fails[#fails + 1] = what .. ': raised ' .. tostring(r); return end
  local out = c.out
  if r.dtype ~= torch[out.dtype] then
    fails[#fails + 1] = ('%s: dtype %s, expected %s'):format(what, tostring(r.dtype), out.dtype)
    return
  end
  local shape = r.shape
  if #shape ~= #out.shape or (#shape == 1 and shape[1] ~= out.shape[1]) then
    fails[#fails + 1] = what .. ': wrong shape'
    return
  end
  if r.device.type ~= torch.device(device).type then
    fails[#fails + 1] = ('%s: result on %s, expected %s'):format(what, tostring(r.device), device)
    return
  end
  r = r:cpu()
  local d = differs(c.op, H.flatten(r:totable()), out)
  if d then fails[#fails + 1] = what .. ': ' .. d; return end
  -- the same on strided views and broadcast inputs, where every tensor argument has the output's length
  local n = out.shape[1]
  if #out.shape ~= 1 then return end
  local tensors = {}
  for i = 1, #c.args do
    local a = args[i]
    if torch.is_tensor(a) then
      if a:dim() ~= 1 or a:size(1) ~= n then return end
      tensors[#tensors + 1] = i
    end
  end
  local strided, broadcast = {}, {}
  for i = 1, #c.args do
    local a = args[i]
    strided[i], broadcast[i] = a, a
    if torch.is_tensor(a) then
      strided[i] = torch.stack({ a, a }, 2):t() -- [2, n], not contiguous
      broadcast[i] = i == tensors[1] and a:reshape({ 1, n }) or torch.stack({ a, a })
    end
  end
  if #tensors == 1 then broadcast[tensors[1]] = args[tensors[1]]:reshape({ 1, n }):expand({ 2, n }) end
  for view, vargs in pairs { strided = strided, broadcast = broadcast } do
    local vr = call(c, vargs):cpu()
    for row = 1, 2 do
      if vr.shape[1] ~= 2 then d = 'wrong shape' else d = differs(c.op, H.flatten(vr[row]:totable()), out) end
      if d then fails[#fails + 1] = ('%s on %s inputs: %s'):format(what, view, d); return end
    end
  end
end

describe('elementwise ops against PyTorch, every dtype', function()
  C.it_per_op(it, REF.cases, 'op', check_case)
end)

-- the same cases on the GPU, against the same references (the results are copied back to compare)
describe('elementwise ops against PyTorch on the GPU, every dtype', function()
  C.on_gpu({ pending = pending, setup = setup, teardown = teardown }, function(d) device = d end,
    function() C.it_per_op(it, REF.cases, 'op', check_case) end)
end)

describe('integer division at its edges', function()
  it('wraps the lowest value divided by -1, where PyTorch 1.13 dies of SIGFPE', function()
    for _, c in ipairs { { torch.int64, math.mininteger }, { torch.int32, -2147483648 }, { torch.int16, -32768 },
      { torch.int8, -128 } } do
      local dt, low = c[1], c[2]
      local a, m1 = torch.tensor({ low, low + 1 }, { dtype = dt }), torch.tensor({ -1, -1 }, { dtype = dt })
      local q = { low, -(low + 1) }
      H.assert_values(torch.div(a, m1, { rounding_mode = 'trunc' }), q)
      H.assert_values(torch.div(a, m1, { rounding_mode = 'floor' }), q)
      H.assert_values(torch.floor_divide(a, -1), q)
      H.assert_values(a // m1, q)
      H.assert_values(a:remainder(m1), { 0, 0 })
      H.assert_values(a:fmod(-1), { 0, 0 })
      assert.equal(dt, torch.floor_divide(a, -1).dtype)
    end
  end)

  it('raises ZeroDivisionError naming the op for an integer divisor 0, a tensor or a number', function()
    local a, z = torch.tensor({ 7, -7 }), torch.tensor({ 2, 0 })
    for _, dt in ipairs(H.int_dtypes) do
      local x, y = a:abs():to(dt), z:to(dt)
      H.raises(function() return torch.floor_divide(x, y) end, 'floor_divide', 'ZeroDivisionError')
      H.raises(function() return x // 0 end, 'floor_divide', 'ZeroDivisionError')
      H.raises(function() return x % y end, 'remainder', 'ZeroDivisionError')
      H.raises(function() return x:fmod(0) end, 'fmod', 'ZeroDivisionError')
      H.raises(function() return torch.div(x, y, { rounding_mode = 'trunc' }) end, 'div', 'ZeroDivisionError')
      H.raises(function() return x:div(y, { rounding_mode = 'floor' }) end, 'div', 'ZeroDivisionError')
    end
    -- floating division by zero is IEEE's
    H.assert_values(torch.div(torch.tensor({ 1.0, -1.0, 0.0 }), 0, { rounding_mode = 'floor' }), { INF, -INF, 0 / 0 })
    H.raises(function() return torch.div(a, z, { rounding_mode = 'round' }) end, 'div', 'rounding_mode')
  end)
end)
