-- torch.testing: assert_close (tensors, numbers and nested tables compared with PyTorch 1.13's
-- default tolerances by dtype and its mismatch messages, indices 1-based) and make_tensor (random
-- tensors of any shape, dtype and range, optionally non-contiguous).
local torch = require 'torch'
local opts_of = require('torch.options').check
local as_int = require('torch.composite').as_int

local testing = {}
torch.testing = testing

-- PyTorch's default (rtol, atol) by dtype; integers and bool compare exactly
local TOL = {
  float16 = { 1e-3, 1e-5 }, bfloat16 = { 1.6e-2, 1e-5 }, float32 = { 1.3e-6, 1e-5 }, float64 = { 1e-7, 1e-7 },
}
local function default_tol(dtype)
  local t = TOL[dtype.name]
  if t then return t[1], t[2] end
  return 0, 0
end

-- a number as Python's repr writes it: integers plainly, floats in their shortest exact form,
-- positional from 1e-4 to below 1e16 (with at least one decimal), scientific outside
local function pyrepr(x)
  if math.type(x) == 'integer' then return tostring(x) end
  if x ~= x then return 'nan' end
  if x == math.huge then return 'inf' end
  if x == -math.huge then return '-inf' end
  if x == 0 then return (1 / x < 0) and '-0.0' or '0.0' end
  local p, s = 1, nil
  repeat
    s = string.format('%.' .. (p - 1) .. 'e', x)
    p = p + 1
  until tonumber(s) == x or p > 17
  local mant, e = s:match('^(.-)e([-+]%d+)$')
  e = tonumber(e)
  local digits = #mant:gsub('[^%d]', '')
  if e >= -4 and e < 16 then
    local dec = math.max(digits - 1 - e, 0)
    local r = string.format('%.' .. dec .. 'f', x)
    return dec == 0 and r .. '.0' or r
  end
  return mant .. 'e' .. (e < 0 and '-' or '+') .. string.format('%02d', math.abs(e))
end
testing._pyrepr = pyrepr

-- the error of a failed comparison: the user's msg (a string, or a function of the generated
-- message) replaces the generated one; where names the item inside nested tables
local function fail(msg, generated, where)
  if where ~= '' then generated = generated .. '\n\nThe failure occurred for item ' .. where end
  if type(msg) == 'string' then generated = msg elseif type(msg) == 'function' then generated = msg(generated) end
  error(generated, 0)
end

local function mismatch_line(kind, diff, idx, tol, equality)
  local m
  if idx then m = string.format('Greatest %s difference: %s at index %s', kind, pyrepr(diff), idx)
  else m = string.format('%s difference: %s', kind:sub(1, 1):upper() .. kind:sub(2), pyrepr(diff)) end
  if not equality then m = m .. ' (up to ' .. pyrepr(tol) .. ' allowed)' end
  return m
end

local function header(what, equality) return what .. ' are not ' .. (equality and 'equal' or 'close') .. '!\n\n' end

-- a 0-based flat position as the 1-based index tuple of a shape, as Python writes tuples
local function unravel(flat, shape)
  local idx = {}
  for d = #shape, 1, -1 do
    idx[d] = flat % shape[d] + 1
    flat = flat // shape[d]
  end
  return #idx == 1 and '(' .. idx[1] .. ',)' or '(' .. table.concat(idx, ', ') .. ')'
end

local function scalar_msg(a, b, rtol, atol, what)
  local equality = rtol == 0 and atol == 0
  local d = math.abs(a - b)
  local rel = b == 0 and math.huge or d / math.abs(b)
  if math.type(a) == 'integer' and math.type(b) == 'integer' and b ~= 0 then rel = d / math.abs(b) end
  return header(what, equality) .. mismatch_line('absolute', d, nil, atol, equality) .. '\n' ..
    mismatch_line('relative', rel, nil, rtol, equality)
end

local function attr_fail(o, where, name, a, b)
  fail(o.msg, string.format("The values for attribute '%s' do not match: %s != %s.", name, a, b), where)
end

local function strides(x)
  local s = x:stride()
  return #s == 1 and '(' .. s[1] .. ',)' or '(' .. table.concat(s, ', ') .. ')'
end

local function compare_tensors(a, b, o, where)
  if tostring(a.shape) ~= tostring(b.shape) then attr_fail(o, where, 'shape', tostring(a.shape), tostring(b.shape)) end
  if o.check_device and tostring(a.device) ~= tostring(b.device) then
    attr_fail(o, where, 'device', tostring(a.device), tostring(b.device))
  end
  if o.check_dtype and a.dtype ~= b.dtype then attr_fail(o, where, 'dtype', tostring(a.dtype), tostring(b.dtype)) end
  if o.check_stride and strides(a) ~= strides(b) then attr_fail(o, where, 'stride()', strides(a), strides(b)) end
  local rtol, atol = o.rtol, o.atol
  if rtol == nil then
    local r1, a1 = default_tol(a.dtype)
    local r2, a2 = default_tol(b.dtype)
    rtol, atol = math.max(r1, r2), math.max(a1, a2)
  end
  -- compared as PyTorch does: floating in float64, integers and bool in int64, on the CPU
  local floating = a.dtype.is_floating_point or b.dtype.is_floating_point
  local ct = floating and torch.float64 or torch.int64
  a = a:detach():to('cpu'):to(ct)
  b = b:detach():to('cpu'):to(ct)
  local ok = torch.isclose(a, b, { rtol = rtol, atol = atol, equal_nan = o.equal_nan })
  if ok:all():item() then return end
  local what, equality = 'Tensor-likes', rtol == 0 and atol == 0
  if a:dim() == 0 then
    fail(o.msg, scalar_msg(a:item(), b:item(), rtol, atol, 'Scalars'), where)
  end
  local bad = ok:logical_not():reshape(-1)
  local n, nbad = bad:numel(), bad:sum():item()
  local af, bf = a:reshape(-1), b:reshape(-1)
  local diff = torch.where(bad, (af - bf):abs(), torch.zeros_like(af))
  local rel = torch.where(bad, diff / bf:abs(), torch.zeros_like(diff / bf:abs()))
  local dmax, di = torch.max(diff, 1)
  local rmax, ri = torch.max(rel, 1)
  local shape = a.shape
  fail(o.msg, header(what, equality) ..
    string.format('Mismatched elements: %d / %d (%.1f%%)\n', nbad, n, 100 * nbad / n) ..
    mismatch_line('absolute', dmax:item(), unravel(di:item() - 1, shape), atol, equality) .. '\n' ..
    mismatch_line('relative', rmax:item(), unravel(ri:item() - 1, shape), rtol, equality), where)
end

local function kind(v)
  if torch.is_tensor(v) then return 'tensor' end
  return type(v)
end

local function key_repr(k)
  if type(k) == 'string' then return string.format('%q', k):gsub('^"(.*)"$', "'%1'") end
  return tostring(k)
end

-- a table is a sequence when its keys are exactly 1..#t
local function is_sequence(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(x, y)
    if type(x) == type(y) and (type(x) == 'number' or type(x) == 'string') then return x < y end
    return type(x) < type(y)
  end)
  return ks
end

local function compare(a, b, o, where)
  local ka, kb = kind(a), kind(b)
  if ka == 'tensor' and kb == 'tensor' then return compare_tensors(a, b, o, where) end
  if ka == 'number' and kb == 'number' then
    if o.check_dtype and math.type(a) ~= math.type(b) then
      fail(o.msg, string.format('The (d)types do not match: %s != %s.', math.type(a), math.type(b)), where)
    end
    local rtol, atol = o.rtol, o.atol
    if rtol == nil then
      if math.type(a) == 'integer' and math.type(b) == 'integer' then rtol, atol = 0, 0 else rtol, atol = 1e-7, 1e-7 end
    end
    local close = a == b or (o.equal_nan and a ~= a and b ~= b) or
      (a == a and b == b and math.abs(b) ~= math.huge and math.abs(a - b) <= atol + rtol * math.abs(b))
    if not close then fail(o.msg, scalar_msg(a, b, rtol, atol, 'Scalars'), where) end
    return
  end
  if (ka == 'boolean' or ka == 'string') and ka == kb then
    if a ~= b then fail(o.msg, string.format('%s are not equal!\n\n%s != %s', ka == 'boolean' and 'Booleans' or 'Strings',
      tostring(a), tostring(b)), where) end
    return
  end
  if ka == 'table' and kb == 'table' then
    if is_sequence(a) and is_sequence(b) then
      if #a ~= #b then fail(o.msg, string.format('The length of the sequences mismatch: %d != %d', #a, #b), where) end
      for i = 1, #a do compare(a[i], b[i], o, where .. '[' .. i .. ']') end
      return
    end
    local missing, extra = {}, {}
    for _, k in ipairs(sorted_keys(b)) do if a[k] == nil then missing[#missing + 1] = key_repr(k) end end
    for _, k in ipairs(sorted_keys(a)) do if b[k] == nil then extra[#extra + 1] = key_repr(k) end end
    if #missing > 0 or #extra > 0 then
      fail(o.msg, 'The keys of the mappings do not match:\n' ..
        (#missing > 0 and 'Missing keys in the actual mapping: [' .. table.concat(missing, ', ') .. ']\n' or '') ..
        (#extra > 0 and 'Additional keys in the actual mapping: [' .. table.concat(extra, ', ') .. ']\n' or ''):gsub('\n$', ''),
        where)
    end
    for _, k in ipairs(sorted_keys(a)) do compare(a[k], b[k], o, where .. '[' .. key_repr(k) .. ']') end
    return
  end
  error(string.format('assert_close: no comparison pair was able to handle inputs of type %s and %s', ka, kb), 0)
end

--- torch.testing.assert_close(actual, expected, {rtol, atol, equal_nan = false, check_dtype = true,
--- check_device = true, check_stride = false, msg}): raises PyTorch's message when the values
--- differ by more than atol + rtol * |expected| (defaults by dtype), or shapes, dtypes, devices
--- (or strides, when asked) differ. Tables are compared item by item, recursively.
function testing.assert_close(actual, expected, options)
  local o = opts_of(options, 'assert_close',
    { 'rtol', 'atol', 'equal_nan', 'check_dtype', 'check_device', 'check_stride', 'msg' })
  if (o.rtol == nil) ~= (o.atol == nil) then
    error(string.format("assert_close: both 'rtol' and 'atol' must be either specified or omitted, but got no %s.",
      o.rtol == nil and 'rtol' or 'atol'), 2)
  end
  for _, k in ipairs({ 'rtol', 'atol' }) do
    if o[k] ~= nil and (type(o[k]) ~= 'number' or o[k] < 0) then
      error(string.format('assert_close: %s must be a non-negative number, got %s', k, tostring(o[k])), 2)
    end
  end
  if o.msg ~= nil and type(o.msg) ~= 'string' and type(o.msg) ~= 'function' then
    error('assert_close: msg must be a string or a function, got ' .. type(o.msg), 2)
  end
  o.equal_nan = o.equal_nan == true
  o.check_dtype = o.check_dtype ~= false
  o.check_device = o.check_device ~= false
  o.check_stride = o.check_stride == true
  compare(actual, expected, o, '')
end

local INT_RANGE = {
  uint8 = { 0, 255 }, int8 = { -128, 127 }, int16 = { -32768, 32767 }, int32 = { -2147483648, 2147483647 },
  int64 = { math.mininteger, math.maxinteger },
}

--- torch.testing.make_tensor(shape, {dtype, device, low, high, requires_grad, noncontiguous,
--- exclude_zero}): values drawn uniformly from [low, high) (defaults -9 and 9 for floats, -9 and 10
--- for integers, 0 and 10 for uint8; bool 0 or 1), low and high clamped to the dtype's range.
--- dtype defaults to the default float dtype and device to the CPU (PyTorch requires both).
--- noncontiguous gives every other element of a tensor twice as long in its last dim.
function testing.make_tensor(shape, options)
  local o = opts_of(options, 'make_tensor',
    { 'dtype', 'device', 'low', 'high', 'requires_grad', 'noncontiguous', 'exclude_zero' })
  shape = as_int(shape)
  if math.type(shape) == 'integer' then shape = { shape } end
  if type(shape) ~= 'table' then
    error('make_tensor: shape must be an integer or a table of integers, got ' .. type(shape), 2)
  end
  local dtype = o.dtype or torch.get_default_dtype()
  local device = o.device or 'cpu'
  if o.requires_grad and not dtype.is_floating_point then
    error('make_tensor: requires_grad must be false for integral dtype', 2)
  end
  local function range(lowest, highest, dlow, dhigh)
    local low, high = o.low or dlow, o.high or dhigh
    if type(low) ~= 'number' or type(high) ~= 'number' then
      error('make_tensor: low and high must be numbers', 3)
    end
    if low ~= low or high ~= high then error('make_tensor: one of low or high was NaN!', 3) end
    if low > high then error('make_tensor: low must be weakly less than high!', 3) end
    return math.min(math.max(low, lowest), highest), math.min(math.max(high, lowest), highest)
  end
  local r
  if dtype == torch.bool then
    r = torch.randint(0, 2, shape, { dtype = dtype, device = device })
  elseif INT_RANGE[dtype.name] then
    local lim = INT_RANGE[dtype.name]
    local low, high = range(lim[1], lim[2], dtype == torch.uint8 and 0 or -9, 10)
    r = torch.randint(math.floor(low), math.ceil(high), shape, { dtype = dtype, device = device })
  elseif dtype.is_floating_point then
    local fi = torch.finfo(dtype)
    local low, high = range(-fi.max, fi.max, -9, 9)
    local u = torch.rand(shape, { dtype = dtype, device = device })
    r = u * high + (1 - u) * low
  else
    error('make_tensor: the dtype ' .. tostring(dtype) .. ' is not supported', 2)
  end
  if o.exclude_zero then
    local one = dtype.is_floating_point and torch.finfo(dtype).tiny or 1
    r = torch.where(r:eq(0), torch.full_like(r, one), r)
  end
  if o.noncontiguous and r:numel() > 1 then
    -- every other element of the last dim doubled: a view with stride 2 there
    local doubled = r:repeat_interleave(2, -1)
    local st = doubled:stride()
    st[#st] = st[#st] * 2
    r = doubled:as_strided(r.shape, st)
  end
  if o.requires_grad then r:requires_grad_(true) end
  return r
end

return testing
