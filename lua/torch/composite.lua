-- Tensor operations composed in Lua from the C primitives, with the helpers the other composed
-- families share (torch.shapes, torch.indexing, torch.statistics, torch.builders, torch.special):
-- PyTorch's less frequent elementwise functions (signs and exponents, gcd/lcm, isin), products and
-- diagonals, as methods and as torch.* functions with PyTorch's positional arguments (its keyword
-- arguments in a trailing options table). Being made of differentiable primitives, they pass
-- gradients where PyTorch's do; dims and indices are 1-based as everywhere in lutorch.
local torch = require 'torch'
local Tensor = torch.Tensor

local function check_tensor(x, op, what)
  if not torch.is_tensor(x) then
    error(string.format('%s: %s must be a tensor, got %s', op, what or 'the input', type(x)), 3)
  end
end

-- v as an integer when it is a number with an exact integer value (3 or 3.0: in Lua 5.4 n / 2
-- and 1e3 are floats), else v unchanged (2.5, NaN, inf, 1e300, nil, a table...), for the checks
-- of integer-only parameters (sizes, dims, indices, counts) to accept integral floats as Lua's own
-- library does and go on with the integer
local function as_int(v)
  return math.type(v) and math.tointeger(v) or v
end

-- dim (1-based, negative from the end) of a tensor of ndim dims, as a positive dim
local function norm_dim(dim, ndim, op, what)
  dim = as_int(dim)
  if math.type(dim) ~= 'integer' then
    error(string.format('%s: %s must be an integer, got %s', op, what or 'dim', tostring(dim)), 3)
  end
  local n = math.max(ndim, 1)
  if dim < -n or dim > n or dim == 0 then
    error(string.format('%s: %s %d is out of range for a tensor of %d dimension%s (expected %d to %d, not 0)',
      op, what or 'dim', dim, ndim, ndim == 1 and '' or 's', -n, n), 3)
  end
  return dim < 0 and dim + n + 1 or dim
end

local opts_of = require('torch.options').check

-- the shape (a torch.Size) that shapes (tables of sizes) broadcast to, or an error naming op and
-- the shapes that clash (at `level`, 3 by default: the caller of the function that called this)
local function broadcast_shape(shapes, op, level)
  local out = {}
  for _, s in ipairs(shapes) do
    local n = math.max(#out, #s)
    local r = {}
    for i = 1, n do
      local a, b = out[i - (n - #out)] or 1, s[i - (n - #s)] or 1
      if a ~= b and a ~= 1 and b ~= 1 then
        error(string.format('%s: shape mismatch: objects cannot be broadcast to a single shape (%s and %s)', op,
          tostring(setmetatable(out, torch.Size)), tostring(setmetatable({ table.unpack(s) }, torch.Size))), level or 3)
      end
      r[i] = a == 1 and b or a
    end
    out = r
  end
  return setmetatable(out, torch.Size)
end

-- a number or tensor operand as a tensor of x's device and dtype
local function operand(x, v, op)
  if torch.is_tensor(v) then return v end
  if type(v) ~= 'number' and type(v) ~= 'boolean' then
    error(string.format('%s: expected other to be a tensor or a number, got %s', op, type(v)), 3)
  end
  return torch.full({}, v, { dtype = x.dtype, device = x.device })
end

local function both(name, f)
  Tensor[name] = f
  torch[name] = f
end

local function is_float(x) return x.dtype.is_floating_point end

-- an error naming op unless every tensor given is floating (PyTorch has no integer kernel for op)
local function check_floating(op, ...)
  for i = 1, select('#', ...) do
    local t = select(i, ...)
    if torch.is_tensor(t) and not is_float(t) then
      error(string.format('%s: not implemented for %s tensors (it takes floating ones)', op, t.dtype.name), 3)
    end
  end
end

-- ---- elementwise ----

--- x:lerp(end, weight): x + weight * (end - x), as PyTorch 1.13 computes it (from end when weight
--- is 0.5 or more; float16 and bfloat16 in float32); floating tensors only
local lerp
lerp = function(x, e, w)
  check_tensor(x, 'lerp')
  check_tensor(e, 'lerp', 'end')
  check_floating('lerp', x, e, w)
  local dt = x.dtype
  for what, t in pairs { ['`end`'] = e, ['`weight`'] = w } do
    if torch.is_tensor(t) and t.dtype ~= dt then
      error(('lerp: expected dtype %s for %s but got dtype %s'):format(dt.name, what, t.dtype.name), 2)
    end
  end
  if dt == torch.float16 or dt == torch.bfloat16 then
    if torch.is_tensor(w) then w = w:float() end
    return lerp(x:float(), e:float(), w):to(dt)
  end
  if type(w) == 'number' then
    if w < 0.5 then return x + (e - x) * w end
    return e - (e - x) * (1 - w)
  end
  check_tensor(w, 'lerp', 'weight')
  local d = e - x
  return torch.where(w:lt(0.5), x + d * w, e - d * (1 - w))
end
both('lerp', lerp)

--- x:addcmul(t1, t2, {value = 1}) = x + value * t1 * t2; addcdiv likewise with t1 / t2
both('addcmul', function(x, a, b, o)
  local v = opts_of(o, 'addcmul', { 'value' }).value or 1
  if x.dtype == torch.bool then error('addcmul: not implemented for bool tensors', 2) end
  return x + (a * b) * v
end)
both('addcdiv', function(x, a, b, o)
  local v = opts_of(o, 'addcdiv', { 'value' }).value or 1
  if not is_float(a) and not is_float(b) then
    error('addcdiv: integer division with addcdiv is not supported (PyTorch removed it); divide floating tensors', 2)
  end
  return x + (a / b) * v
end)

-- log(base^a + base^b) without overflow, from the larger; equal operands (infinities) give
-- a + log(2) (a + 1 for base 2). exp and log1p are of base e or 2.
local function log_add(op, a, b, exp, log1p, log2)
  check_tensor(a, op)
  b = operand(a, b, op)
  check_floating(op, a, b)
  local m = torch.maximum(a, b)
  local r = m + log1p(exp(-(a - b):abs()))
  return torch.where(a:eq(b), a + log2, r)
end
--- log(exp(a) + exp(b))
both('logaddexp', function(a, b)
  return log_add('logaddexp', a, b, torch.exp, torch.log1p, math.log(2))
end)
--- log2(2^a + 2^b)
both('logaddexp2', function(a, b)
  return log_add('logaddexp2', a, b, torch.exp2, function(t) return t:log1p() / math.log(2) end, 1)
end)

--- x * log(y), 0 where x is 0 (unless y is NaN)
both('xlogy', function(x, y)
  check_tensor(x, 'xlogy')
  y = operand(x, y, 'xlogy')
  local r = x * y:log()
  return torch.where(x:eq(0):logical_and(y:eq(y)), torch.zeros_like(r), r)
end)

-- NumPy's names of the inverse hyperbolic functions (kernels of the unary op table)
torch.arcsinh, torch.arccosh, torch.arctanh = torch.asinh, torch.acosh, torch.atanh
Tensor.arcsinh, Tensor.arccosh, Tensor.arctanh = Tensor.asinh, Tensor.acosh, Tensor.atanh

both('deg2rad', function(x) return x * (math.pi / 180) end)
both('rad2deg', function(x) return x * (180 / math.pi) end)

--- sin(pi x) / (pi x), 1 at 0
both('sinc', function(x)
  local px = x * math.pi
  local r = px:sin() / px
  return torch.where(x:eq(0), torch.ones_like(r), r)
end)

--- log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given
both('logit', function(x, eps)
  check_tensor(x, 'logit')
  if not is_float(x) then x = x:to(torch.get_default_dtype()) end
  if eps ~= nil then x = x:clamp(eps, 1 - eps) end
  return (x / (1 - x)):log()
end)

--- x rounded half to even; to `decimals` decimal places with {decimals = n} (negative: to tens,
--- hundreds, ...) as PyTorch rounds them: x * 10^n rounded, then divided by 10^n (x / 10^-n and
--- times it for n < 0), in float32 for float16 and bfloat16; integer tensors refused there
local round = Tensor.round
both('round', function(x, o)
  if o == nil then return round(x) end
  check_tensor(x, 'round')
  local d = opts_of(o, 'round', { 'decimals' }).decimals or 0
  if math.type(d) ~= 'integer' then error('round: decimals must be an integer, got ' .. tostring(d), 2) end
  if d == 0 then return round(x) end
  if not is_float(x) then error(('round: decimals is not implemented for %s tensors'):format(x.dtype.name), 2) end
  local half = x.dtype == torch.float16 or x.dtype == torch.bfloat16
  local y, p = half and x:float() or x, 10.0 ^ math.abs(d)
  if d > 0 then y = round(y * p) / p else y = round(y / p) * p end
  return half and y:to(x.dtype) or y
end)

--- NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest finite values)
both('nan_to_num', function(x, o)
  check_tensor(x, 'nan_to_num')
  o = opts_of(o, 'nan_to_num', { 'nan', 'posinf', 'neginf' })
  if not is_float(x) then return x:clone() end
  local big = torch.finfo(x.dtype).max
  local r = torch.where(x:ne(x), torch.full_like(x, o.nan or 0), x)
  r = torch.where(r:eq(math.huge), torch.full_like(x, o.posinf or big), r)
  return torch.where(r:eq(-math.huge), torch.full_like(x, o.neginf or -big), r)
end)

--- the larger (smaller) of a and b, the other when one is NaN
both('fmax', function(a, b)
  check_tensor(a, 'fmax')
  b = operand(a, b, 'fmax')
  return torch.where(a:ne(a), b, torch.where(b:ne(b), a, torch.maximum(a, b)))
end)
both('fmin', function(a, b)
  check_tensor(a, 'fmin')
  b = operand(a, b, 'fmin')
  return torch.where(a:ne(a), b, torch.where(b:ne(b), a, torch.minimum(a, b)))
end)

--- x:heaviside(values): 0 below 0, 1 above, values at 0
both('heaviside', function(x, values)
  check_tensor(x, 'heaviside')
  values = operand(x, values, 'heaviside')
  local step = x:gt(0):to(x.dtype)
  return torch.where(x:eq(0), values:to(x.dtype), step)
end)

both('signbit', function(x)
  if not is_float(x) then return x:lt(0) end
  -- -0.0 has its sign bit set: 1 / -0 is -inf
  return x:lt(0):logical_or(x:eq(0):logical_and((1 / x):lt(0)))
end)
both('isposinf', function(x) return x:eq(math.huge) end)
both('isneginf', function(x) return x:eq(-math.huge) end)
both('isreal', function(x) return torch.ones_like(x, { dtype = torch.bool }) end)
both('sgn', function(x) return x:sign() end)
both('negative', function(x) return -x end)
both('absolute', function(x) return x:abs() end)
both('fix', function(x) return x:trunc() end)
-- the argument of a real number: pi for the negative ones, 0 for the others, NaN for NaN (floating:
-- the default dtype for integers and bools); its gradient is zero, as PyTorch's for real inputs
local Angle = torch.autograd.Function:extend('Angle')
function Angle.forward(_, x)
  local f = is_float(x) and x or x:to(torch.get_default_dtype())
  return torch.where(f:ne(f), f, torch.where(f:lt(0), math.pi, torch.zeros_like(f)))
end
function Angle.backward(_, g) return torch.zeros_like(g) end
both('angle', function(x)
  check_tensor(x, 'angle')
  return Angle.apply(x)
end)
both('float_power', function(x, e)
  if torch.is_tensor(e) then e = e:double() end
  return x:double():pow(e)
end)

-- on the tensors' metatable, reached without making a tensor (that would fix the CPU device count)
debug.getregistry()['torch.Tensor'].__idiv = function(a, b) return torch.floor_divide(a, b) end

--- torch.fill(x, value): a tensor of x's shape, dtype and device filled with value (a number or a
--- 0-D tensor; x's gradient is zero, value's the sum of the upstream one)
function torch.fill(x, value)
  check_tensor(x, 'fill')
  if torch.is_tensor(value) and value.requires_grad then -- (fill_ takes no value that requires grad)
    if value:dim() ~= 0 then error('fill: the value must be a number or a 0-D tensor, got a ' .. value:dim() .. '-D tensor', 2) end
    return value:to(x):expand(x.shape):clone()
  end
  return x:clone():fill_(value)
end
torch.detach = Tensor.detach

both('type_as', function(x, other)
  check_tensor(other, 'type_as', 'other')
  return x:to(other.dtype)
end)

-- whether an in-place write to x with these operands is recorded by autograd (x or a tensor
-- operand requires grad, grad mode on)
local function records(x, ...)
  if not torch.is_grad_enabled() then return false end
  if x.requires_grad then return true end
  for i = 1, select('#', ...) do
    local a = select(i, ...)
    if torch.is_tensor(a) and a.requires_grad then return true end
  end
  return false
end

-- f, whose errors are raised again at its caller's call naming op instead of the operation f
-- called (argsort's dims are checked by sort, nansum's by sum)
local function naming(op, f)
  return function(...)
    local r = table.pack(pcall(f, ...))
    if r[1] then return table.unpack(r, 2, r.n) end
    local msg = tostring(r[2]):gsub('^[^\n]-:%d+: ', '', 1)
    if msg:sub(1, #op + 1) ~= op .. ':' then msg = op .. ': ' .. msg:gsub('^[%w_.]+%(?%)?: ', '', 1) end
    error(msg, 2)
  end
end

-- x:name_(...): f's result written into x, which keeps its shape and dtype (an error, as PyTorch's,
-- when the result would need another shape or a dtype x cannot hold). With autograd, autograd's
-- rules hold (a leaf that requires grad is refused before anything is computed) and f runs on a
-- copy of x, so that x's old values, which f's backward may have saved, are not those written
-- over: x then takes f's history, as the C in-place ops do.
local function in_place(name, f)
  local op = name .. '_'
  Tensor[op] = function(x, ...)
    check_tensor(x, op)
    local src = x
    if records(x, ...) then
      local bad = x:_inplace_error(op)
      if bad then error(bad, 2) end
      src = x:clone()
    end
    local ok, r = pcall(f, src, ...)
    if not ok then -- raised again at the user's call, naming op
      local msg = tostring(r):gsub('^[^\n]-:%d+: ', '', 1)
      if msg:sub(1, #name + 1) == name .. ':' then msg = op .. msg:sub(#name + 1)
      elseif msg:sub(1, #name) ~= name then msg = op .. ': ' .. msg end
      error(msg, 2)
    end
    if r.shape ~= x.shape then
      error(string.format("%s: output with shape %s doesn't match the broadcast shape %s", op, tostring(x.shape),
        tostring(r.shape)), 2)
    end
    if r.dtype ~= x.dtype and not torch.can_cast(r.dtype, x.dtype) then
      error(string.format("%s: result type %s can't be cast to the desired output type %s", op, r.dtype.name,
        x.dtype.name), 2)
    end
    return x:copy_(r)
  end
  return Tensor[op]
end

-- the floating dtype an op on a and b computes in: their promoted type, float32 for integers
local function float_result(a, b)
  local dt = torch.result_type(a, b)
  if not dt.is_floating_point then dt = torch.get_default_dtype() end
  return dt
end

-- ---- signs and exponents ----

--- |a| with the sign of b (its sign bit: -0.0 counts as negative); a floating result
both('copysign', function(a, b)
  check_tensor(a, 'copysign')
  if not torch.is_tensor(b) and type(b) ~= 'number' then
    error('copysign: other must be a tensor or a number, got ' .. type(b), 2)
  end
  local m = a:to(float_result(a, b)):abs()
  if type(b) == 'number' then
    if b < 0 or (b == 0 and 1 / b < 0) then return -m end
    return m
  end
  return torch.where(b:signbit(), -m, m)
end)
in_place('copysign', Tensor.copysign)

--- x * 2^e, as PyTorch computes it (2^e in the result's floating dtype)
both('ldexp', function(x, e)
  check_tensor(x, 'ldexp')
  check_tensor(e, 'ldexp', 'other')
  local dt = float_result(x, e)
  return x:to(dt) * torch.pow(2.0, e:to(dt))
end)
in_place('ldexp', Tensor.ldexp)

--- x as mantissa * 2^exponent: the mantissa in [0.5, 1) with x's sign and dtype (x itself where x
--- is 0, infinite or NaN, with exponent 0), the exponent int32; gradients pass to the mantissa
both('frexp', function(x)
  check_tensor(x, 'frexp')
  if not is_float(x) then error('frexp: only floating-point dtypes are supported, got ' .. x.dtype.name, 2) end
  -- the exponent from log2 in float64, put right by one step where log2 rounded across a power of 2;
  -- the powers of two are taken as 2^(e - 1), which float64 holds for every exponent of every dtype
  local e = torch.no_grad(function()
    local a = x:detach():double():abs()
    local regular = a:isfinite():logical_and(a:ne(0))
    a = torch.where(regular, a, torch.ones_like(a))
    local ex = a:log2():floor() + 1
    local m = a / torch.pow(2.0, ex - 1) -- in [1, 2) when ex is right
    ex = torch.where(m:ge(2), ex + 1, torch.where(m:lt(1), ex - 1, ex))
    return torch.where(regular, ex, torch.zeros_like(ex))
  end)
  local mantissa = (x:double() / torch.pow(2.0, e - 1)) * 0.5
  return mantissa:to(x.dtype), e:int()
end)

--- the next float32/float64 value after a in the direction of b (the C kernel, nextafter of libm);
--- not differentiable, as in PyTorch
local nextafter, nextafter_ = Tensor.nextafter, Tensor.nextafter_
local function nextafter_check(a, b, op)
  check_tensor(a, op)
  check_tensor(b, op, 'other')
  for _, t in ipairs { a, b } do
    if t.dtype ~= torch.float32 and t.dtype ~= torch.float64 then
      error(string.format('%s: expected float32 or float64 tensors, got %s', op, t.dtype.name), 3)
    end
  end
end
both('nextafter', function(a, b)
  nextafter_check(a, b, 'nextafter')
  return nextafter(a, b)
end)
Tensor.nextafter_ = function(a, b)
  nextafter_check(a, b, 'nextafter_')
  return nextafter_(a, b)
end

--- other - alpha * x (x:sub with its operands swapped); other may be a number
function torch.rsub(x, other, o)
  check_tensor(x, 'rsub')
  local alpha = opts_of(o, 'rsub', { 'alpha' }).alpha
  return torch.sub(other, x, alpha and { alpha = alpha } or nil)
end

-- ---- integer division ----

local function integer_operands(op, a, b)
  check_tensor(a, op)
  if math.type(b) == 'integer' then b = torch.full({}, b, { dtype = a.dtype, device = a.device }) end
  check_tensor(b, op, 'other')
  for _, t in ipairs { a, b } do
    if t.dtype.is_floating_point or t.dtype == torch.bool then
      error(string.format('%s: expected integer tensors, got %s', op, t.dtype.name), 3)
    end
  end
  local dt = torch.promote_types(a.dtype, b.dtype)
  return a:to(dt), b:to(dt)
end

--- the greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0): Euclid's algorithm on
--- whole tensors, one remainder a step until every divisor is 0 (at most 92 steps for 64-bit
--- values; the bound guards the lowest integer, whose absolute value wraps)
local function gcd(a, b)
  a, b = a:abs(), b:abs()
  for _ = 1, 100 do
    if not b:ne(0):any():item() then break end
    local nz = b:ne(0)
    local r = a:remainder(torch.where(nz, b, torch.ones_like(b)))
    a, b = torch.where(nz, b, a), torch.where(nz, r, torch.zeros_like(r))
  end
  return a
end
both('gcd', function(a, b) return gcd(integer_operands('gcd', a, b)) end)
in_place('gcd', Tensor.gcd)

-- a / b for integer tensors where b divides a: a float64 estimate, put right by the remainder it
-- leaves (exact for int64 values beyond float64's 53 bits too)
local function exact_quotient(a, b)
  local q = (a:double() / b:double()):round():to(a.dtype)
  local r = a - q * b
  return q + (r:double() / b:double()):round():to(a.dtype)
end

--- the least common multiple, elementwise (non-negative; 0 where either is 0)
both('lcm', function(a, b)
  a, b = integer_operands('lcm', a, b)
  local g = gcd(a, b)
  local zero = g:eq(0)
  -- the product in int64, then its absolute value, then a's dtype: PyTorch's C++ promotes the
  -- narrow integers to int, so that an overflowing lcm wraps after abs (int8: lcm(100, 7) is -68)
  local l = (exact_quotient(a, torch.where(zero, torch.ones_like(g), g)):long() * b:long()):abs():to(a.dtype)
  return torch.where(zero, torch.zeros_like(l), l)
end)
in_place('lcm', Tensor.lcm)

-- ---- membership and predicates ----

--- whether each element of `elements` is among `test_elements` (either may be a number), as a
--- bool tensor of elements' shape; {invert = true} negates it ({assume_unique} is accepted and has
--- no effect). Both are sorted together: an element is in the test set when its run of equal
--- values holds a test element (NaN equals nothing).
function torch.isin(elements, test, o)
  o = opts_of(o, 'isin', { 'assume_unique', 'invert' })
  local ref = torch.is_tensor(elements) and elements or test
  if not torch.is_tensor(ref) then error('isin: expected elements or test_elements to be a tensor', 2) end
  local function as_tensor(v, what)
    if torch.is_tensor(v) then return v end
    if type(v) ~= 'number' and type(v) ~= 'boolean' then
      error(string.format('isin: %s must be a tensor or a number, got %s', what, type(v)), 3)
    end
    return torch.tensor(v, { device = ref.device })
  end
  local e, t = as_tensor(elements, 'elements'), as_tensor(test, 'test_elements')
  local dt = torch.promote_types(e.dtype, t.dtype)
  if dt == torch.bool then dt = torch.uint8 end
  local n, m = e:numel(), t:numel()
  local found
  if n == 0 or m == 0 then
    found = torch.zeros(n, { dtype = torch.bool, device = e.device })
  else
    local s, order = torch.cat({ e:reshape(-1):to(dt), t:reshape(-1):to(dt) }):sort()
    local new = torch.cat({ torch.ones(1, { dtype = torch.bool, device = e.device }),
      s:narrow(1, 2, n + m - 1):ne(s:narrow(1, 1, n + m - 1)) })
    local run = new:long():cumsum(1)
    local tests = torch.zeros(n + m, { dtype = torch.int64, device = e.device }):scatter_add(1, run, order:gt(n):long())
    found = torch.zeros(n + m, { dtype = torch.bool, device = e.device }):scatter(1, order, tests:gather(1, run):gt(0))
    found = found:narrow(1, 1, n)
  end
  if o.invert then found = found:logical_not() end
  return found:reshape(e.shape)
end

function torch.is_floating_point(x)
  check_tensor(x, 'is_floating_point')
  return x.dtype.is_floating_point
end
torch.is_nonzero = Tensor.is_nonzero

-- ---- products ----

both('outer', function(a, b)
  if a:dim() ~= 1 or b:dim() ~= 1 then
    error(string.format('outer: expected two 1-D tensors, got %d-D and %d-D', a:dim(), b:dim()), 2)
  end
  return a:unsqueeze(2) * b:unsqueeze(1)
end)
torch.ger, Tensor.ger = torch.outer, Tensor.outer

--- the sum over the last dimension of both: a dot product for vectors
both('inner', function(a, b)
  if a:dim() == 0 or b:dim() == 0 then return a * b end
  if a:size(-1) ~= b:size(-1) then
    error(string.format('inner: the last dimensions must match, got %d and %d', a:size(-1), b:size(-1)), 2)
  end
  if a:dim() == 1 and b:dim() == 1 then return a:dot(b) end
  local bs = b:dim() == 1 and b:unsqueeze(1) or b:reshape(-1, b:size(-1))
  local r = torch.matmul(a, bs:t())
  local shape = {}
  for i = 1, a:dim() - 1 do shape[#shape + 1] = a:size(i) end
  for i = 1, b:dim() - 1 do shape[#shape + 1] = b:size(i) end
  return r:reshape(shape)
end)
both('vdot', function(a, b) return a:dot(b) end)

--- the Kronecker product
both('kron', function(a, b)
  check_tensor(a, 'kron')
  check_tensor(b, 'kron', 'other')
  local n = math.max(a:dim(), b:dim())
  local function padded(x)
    local s = {}
    for _ = 1, n - x:dim() do s[#s + 1] = 1 end
    for i = 1, x:dim() do s[#s + 1] = x:size(i) end
    return x:reshape(s), s
  end
  local pa, sa = padded(a)
  local pb, sb = padded(b)
  local va, vb, out = {}, {}, {}
  for i = 1, n do
    va[2 * i - 1], va[2 * i] = sa[i], 1
    vb[2 * i - 1], vb[2 * i] = 1, sb[i]
    out[i] = sa[i] * sb[i]
  end
  return (pa:reshape(va) * pb:reshape(vb)):reshape(out)
end)

--- the cross product of 3-vectors along dim (default: the first dimension of size 3)
both('cross', function(a, b, dim)
  check_tensor(a, 'cross')
  check_tensor(b, 'cross', 'other')
  if dim == nil then
    for i = 1, a:dim() do
      if a:size(i) == 3 then dim = i break end
    end
    if dim == nil then error('cross: no dimension of size 3 in the input', 2) end
  end
  dim = norm_dim(dim, a:dim(), 'cross')
  if a:size(dim) ~= 3 or b:size(dim) ~= 3 then
    error(string.format('cross: dimension %d must have size 3, got %d and %d', dim, a:size(dim), b:size(dim)), 2)
  end
  local function c(x, i) return x:narrow(dim, i, 1) end
  return torch.cat({
    c(a, 2) * c(b, 3) - c(a, 3) * c(b, 2),
    c(a, 3) * c(b, 1) - c(a, 1) * c(b, 3),
    c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1),
  }, dim)
end)

--- beta * x + alpha * (mat @ vec), and the outer-product, batched and summed forms alike
local function scaled(op, x, prod, o)
  o = opts_of(o, op, { 'beta', 'alpha' })
  local beta, alpha = o.beta or 1, o.alpha or 1
  if alpha ~= 1 then prod = prod * alpha end
  if beta == 0 then return prod + torch.zeros_like(x) end -- PyTorch ignores x (its NaNs) then
  return (beta == 1 and x or x * beta) + prod
end
both('addmv', function(x, mat, vec, o) return scaled('addmv', x, torch.mv(mat, vec), o) end)
both('addr', function(x, a, b, o) return scaled('addr', x, torch.outer(a, b), o) end)
both('baddbmm', function(x, a, b, o) return scaled('baddbmm', x, torch.bmm(a, b), o) end)
both('addbmm', function(x, a, b, o) return scaled('addbmm', x, torch.bmm(a, b):sum(1), o) end)

-- ---- diagonals ----

-- A diagonal's gradient is g written into the diagonal of zeros of the input's shape (PyTorch's
-- diagonal_backward: the input's size, not its storage's, as as_strided's gradient would take), an
-- op whose own gradient is the diagonal again, so that both differentiate any number of times.
local Diagonal = torch.autograd.Function:extend('DiagonalBackward0')
local DiagonalEmbed = torch.autograd.Function:extend('DiagonalBackwardBackward0')
function Diagonal.forward(ctx, x, offset, dim1, dim2, size, stride, first)
  ctx.shape, ctx.offset, ctx.dim1, ctx.dim2 = x.shape, offset, dim1, dim2
  return x:_as_strided(size, stride, first)
end
function Diagonal.backward(ctx, g) return DiagonalEmbed.apply(g, ctx.shape, ctx.offset, ctx.dim1, ctx.dim2) end
function DiagonalEmbed.forward(ctx, g, shape, offset, dim1, dim2)
  ctx.offset, ctx.dim1, ctx.dim2 = offset, dim1, dim2
  local z = torch.zeros(shape, { dtype = g.dtype, device = g.device })
  z:diagonal(offset, dim1, dim2):copy_(g)
  return z
end
function DiagonalEmbed.backward(ctx, g) return g:diagonal(ctx.offset, ctx.dim1, ctx.dim2) end

--- the diagonal of dims dim1 and dim2 (offset above the main one when positive), as the last dim
both('diagonal', function(x, offset, dim1, dim2)
  check_tensor(x, 'diagonal')
  if type(offset) == 'table' then offset, dim1, dim2 = offset.offset, offset.dim1, offset.dim2 end
  offset = offset or 0
  if x:dim() < 2 then error(string.format('diagonal: expected a tensor of at least 2 dimensions, got %d', x:dim()), 2) end
  dim1 = norm_dim(dim1 or 1, x:dim(), 'diagonal', 'dim1')
  dim2 = norm_dim(dim2 or 2, x:dim(), 'diagonal', 'dim2')
  if dim1 == dim2 then error('diagonal: dim1 and dim2 cannot be the same dimension', 2) end
  local rows, cols = x:size(dim1), x:size(dim2)
  local n = offset >= 0 and math.min(rows, cols - offset) or math.min(rows + offset, cols)
  n = math.max(n, 0)
  -- a view, as PyTorch's: the other dims in order, then the diagonal, whose step is the sum of
  -- the two dims' strides, from the first element of diagonal `offset`
  local st = x:stride()
  local size, stride = {}, {}
  for i = 1, x:dim() do
    if i ~= dim1 and i ~= dim2 then size[#size + 1], stride[#stride + 1] = x:size(i), st[i] end
  end
  size[#size + 1], stride[#stride + 1] = n, st[dim1] + st[dim2]
  local first = x:storage_offset() + (n == 0 and 0 or (offset >= 0 and offset * st[dim2] or -offset * st[dim1]))
  if x.requires_grad and torch.is_grad_enabled() then
    return Diagonal.apply(x, offset, dim1, dim2, size, stride, first)
  end
  return x:_as_strided(size, stride, first)
end)

--- a vector as a square matrix's diagonal (offset k), or a matrix's diagonal k as a vector
both('diag', function(x, k)
  check_tensor(x, 'diag')
  k = k or 0
  if x:dim() == 2 then return x:diagonal(k) end
  if x:dim() ~= 1 then error(string.format('diag: expected a 1-D or 2-D tensor, got %d-D', x:dim()), 2) end
  local n = x:numel()
  local size = n + math.abs(k)
  local m = x:unsqueeze(2) * torch.eye(n, { dtype = x.dtype, device = x.device })
  if k == 0 then return m end
  -- shift the n x n block right (k > 0) or down (k < 0)
  if k > 0 then return torch.F.pad(m, { k, 0, 0, k }) end
  return torch.F.pad(m, { 0, -k, -k, 0 }):reshape(size, size)
end)

--- the sum of a matrix's diagonal
both('trace', function(x)
  if x:dim() ~= 2 then error(string.format('trace: expected a matrix, got a %d-D tensor', x:dim()), 2) end
  return x:diagonal():sum()
end)

-- ---- functional forms as methods ----
Tensor.softmax = function(x, dim, o) return torch.F.softmax(x, dim, o) end
Tensor.log_softmax = function(x, dim, o) return torch.F.log_softmax(x, dim, o) end
torch.softmax, torch.log_softmax = Tensor.softmax, Tensor.log_softmax

-- ---- nonzero's tuple form ----
-- x:nonzero({as_tuple = true}) and torch.where(cond): one 1-D tensor of (1-based) indices per dim
-- of x, the k-th nonzero element at (t[1][k], t[2][k], ...); a 0-dim x gives one tensor, as PyTorch
local c_nonzero, c_where = Tensor.nonzero, torch.where
local function nonzero_tuple(x)
  local nz = c_nonzero(x)
  if x:dim() == 0 then return { torch.ones(nz:size(1), { dtype = torch.int64, device = x.device }) } end
  local out = {}
  for d = 1, x:dim() do out[d] = nz:select(2, d) end
  return out
end
both('nonzero', function(x, o)
  o = opts_of(o, 'nonzero', { 'as_tuple' })
  if o.as_tuple then return nonzero_tuple(x) end
  return c_nonzero(x)
end)
function torch.where(cond, ...)
  if select('#', ...) == 0 then
    check_tensor(cond, 'where', 'the condition')
    return nonzero_tuple(cond)
  end
  return c_where(cond, ...)
end

-- the helpers, for the other composed families
return { check_tensor = check_tensor, as_int = as_int, norm_dim = norm_dim, opts_of = opts_of, operand = operand, both = both,
  is_float = is_float, in_place = in_place, records = records, broadcast_shape = broadcast_shape, naming = naming }
