-- The numerical limits of the dtypes, as PyTorch gives them: torch.finfo(dtype) for the floating
-- types (bits, eps, max, min, tiny = smallest_normal, resolution, dtype) and torch.iinfo(dtype) for
-- the integer types (bits, max, min, dtype). The floating limits are computed from each format's
-- significand bits and exponent range (IEEE 754 binary32/binary64/binary16 and bfloat16, the
-- binary32 exponent with 7 significand bits). torch.set_default_dtype and get_default_dtype are in
-- C (bindings/torch.c), since the factories and the type promotion read the setting there.
local torch = require 'torch'

local dtype_mt = debug.getregistry()['torch.dtype']

-- significand bits (without the implicit one), the largest and smallest normal exponents, and
-- the decimal digits every value keeps (std::numeric_limits<T>::digits10)
local FLOATS = {
  float32 = { mant = 23, emax = 127, emin = -126, digits10 = 6 },
  float64 = { mant = 52, emax = 1023, emin = -1022, digits10 = 15 },
  float16 = { mant = 10, emax = 15, emin = -14, digits10 = 3 },
  bfloat16 = { mant = 7, emax = 127, emin = -126, digits10 = 2 },
}
local INTS = {
  int64 = { min = math.mininteger, max = math.maxinteger },
  int32 = { min = -2147483648, max = 2147483647 },
  int16 = { min = -32768, max = 32767 },
  int8 = { min = -128, max = 127 },
  uint8 = { min = 0, max = 255 },
}

-- dtype (a torch.dtype or its name, nil for the default) as a torch.dtype, or an error naming op
local function dtype_of(d, op)
  if d == nil then return torch.get_default_dtype() end
  if type(d) == 'string' and rawget(torch, d) and getmetatable(rawget(torch, d)) == dtype_mt then return torch[d] end
  if getmetatable(d) ~= dtype_mt then
    error(string.format('%s: expected a dtype (e.g. torch.float32), got %s', op,
      type(d) == 'string' and "'" .. d .. "'" or type(d)), 3)
  end
  return d
end

local finfo_mt = { __name = 'torch.finfo' }
function finfo_mt.__tostring(f)
  return string.format('finfo(resolution=%g, min=%g, max=%g, eps=%g, smallest_normal=%g, tiny=%g, dtype=%s)',
    f.resolution, f.min, f.max, f.eps, f.smallest_normal, f.tiny, f.dtype)
end
local iinfo_mt = { __name = 'torch.iinfo' }
function iinfo_mt.__tostring(i)
  return string.format('iinfo(min=%g, max=%g, dtype=%s)', i.min, i.max, i.dtype)
end

--- torch.finfo(dtype = the default dtype): the limits of a floating dtype, as PyTorch's finfo (its
--- dtype field is the name, 'float32', as in PyTorch)
function torch.finfo(d)
  d = dtype_of(d, 'finfo')
  local f = FLOATS[d.name]
  if not f then
    error(string.format('finfo: expected a floating point dtype, got torch.%s (torch.iinfo gives the limits of '
      .. 'integer types)', d.name), 2)
  end
  local max = (2 - 2 ^ -f.mant) * 2 ^ f.emax
  local tiny = 2 ^ f.emin
  return setmetatable({ bits = d.itemsize * 8, eps = 2 ^ -f.mant, max = max, min = -max, tiny = tiny,
    smallest_normal = tiny, resolution = 10 ^ -f.digits10, dtype = d.name }, finfo_mt)
end

--- torch.iinfo(dtype): the limits of an integer dtype (integers: int64's are math.mininteger and
--- math.maxinteger)
function torch.iinfo(d)
  d = dtype_of(d, 'iinfo')
  local i = INTS[d.name]
  if not i then
    error(string.format('iinfo: expected an integer dtype, got torch.%s%s', d.name,
      d.is_floating_point and ' (torch.finfo gives the limits of floating point types)' or ''), 2)
  end
  return setmetatable({ bits = d.itemsize * 8, max = i.max, min = i.min, dtype = d.name }, iinfo_mt)
end
