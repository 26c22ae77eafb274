-- Tensor operations composed in Lua from the C primitives: PyTorch's less frequent elementwise
-- functions, reductions, shape functions and samplers, as methods and as torch.* functions with
-- PyTorch's positional arguments (its keyword arguments in a trailing options table). Being made of
-- differentiable primitives, they pass gradients where PyTorch's do; dims and indices are 1-based as
-- everywhere in lutorch.
local torch = require 'torch'
local Tensor = torch.Tensor

local function check_tensor(x, op, what)
  if not torch.is_tensor(x) then
    error(string.format('%s: %s must be a tensor, got %s', op, what or 'the input', type(x)), 3)
  end
end

-- dim (1-based, negative from the end) of a tensor of ndim dims, as a positive dim
local function norm_dim(dim, ndim, op, what)
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

local function opts_of(t, op, known)
  if t == nil then return {} end
  if type(t) ~= 'table' or torch.is_tensor(t) then
    error(string.format('%s: expected an options table, got %s', op, torch.is_tensor(t) and 'a tensor' or type(t)), 3)
  end
  for k in pairs(t) do
    if not known[k] then error(string.format("%s: unknown option '%s'", op, tostring(k)), 3) end
  end
  return t
end

-- a number or tensor operand as a tensor of x's device and dtype
local function operand(x, v)
  if torch.is_tensor(v) then return v end
  return torch.full({}, v, { dtype = x.dtype, device = x.device })
end

local function both(name, f)
  Tensor[name] = f
  torch[name] = f
end

local function is_float(x) return x.dtype.is_floating_point end

-- ---- elementwise ----

--- x:lerp(end, weight): x + weight * (end - x), as PyTorch computes it (from the nearer end)
both('lerp', function(x, e, w)
  check_tensor(x, 'lerp')
  check_tensor(e, 'lerp', 'end')
  if type(w) == 'number' then
    if math.abs(w) < 0.5 then return x + (e - x) * w end
    return e - (e - x) * (1 - w)
  end
  check_tensor(w, 'lerp', 'weight')
  local d = e - x
  return torch.where(w:abs():lt(0.5), x + d * w, e - d * (1 - w))
end)

--- x:addcmul(t1, t2, {value = 1}) = x + value * t1 * t2; addcdiv likewise with t1 / t2
both('addcmul', function(x, a, b, o)
  local v = opts_of(o, 'addcmul', { value = true }).value or 1
  return x + (a * b) * v
end)
both('addcdiv', function(x, a, b, o)
  local v = opts_of(o, 'addcdiv', { value = true }).value or 1
  return x + (a / b) * v
end)

both('hypot', function(a, b) return (a * a + b * b):sqrt() end)

--- log(exp(a) + exp(b)) without overflow; equal infinities give themselves
both('logaddexp', function(a, b)
  check_tensor(a, 'logaddexp')
  b = operand(a, b)
  local m = torch.maximum(a, b)
  local r = m + (-(a - b):abs()):exp():log1p()
  return torch.where(a:eq(b), a + math.log(2), r)
end)

--- x * log(y), 0 where x is 0 (unless y is NaN)
both('xlogy', function(x, y)
  check_tensor(x, 'xlogy')
  y = operand(x, y)
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
  if eps ~= nil then x = x:clamp(eps, 1 - eps) end
  return (x / (1 - x)):log()
end)

--- NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest finite values)
both('nan_to_num', function(x, o)
  check_tensor(x, 'nan_to_num')
  o = opts_of(o, 'nan_to_num', { nan = true, posinf = true, neginf = true })
  if not is_float(x) then return x:clone() end
  local big = ({ float16 = 65504.0, bfloat16 = 3.3895313892515355e38, float32 = 3.4028234663852886e38 })[x.dtype.name]
    or 1.7976931348623157e308
  local r = torch.where(x:ne(x), torch.full_like(x, o.nan or 0), x)
  r = torch.where(r:eq(math.huge), torch.full_like(x, o.posinf or big), r)
  return torch.where(r:eq(-math.huge), torch.full_like(x, o.neginf or -big), r)
end)

--- the larger (smaller) of a and b, the other when one is NaN
both('fmax', function(a, b)
  b = operand(a, b)
  return torch.where(a:ne(a), b, torch.where(b:ne(b), a, torch.maximum(a, b)))
end)
both('fmin', function(a, b)
  b = operand(a, b)
  return torch.where(a:ne(a), b, torch.where(b:ne(b), a, torch.minimum(a, b)))
end)

--- x:heaviside(values): 0 below 0, 1 above, values at 0
both('heaviside', function(x, values)
  check_tensor(x, 'heaviside')
  values = operand(x, values)
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
both('float_power', function(x, e)
  if torch.is_tensor(e) then e = e:double() end
  return x:double():pow(e)
end)

--- a // b rounded toward minus infinity, exactly for integer tensors (through float64's 53 bits)
both('floor_divide', function(a, b)
  check_tensor(a, 'floor_divide')
  b = operand(a, b)
  if is_float(a) or is_float(b) then return (a / b):floor() end
  if b:eq(0):any():item() then error('floor_divide: ZeroDivisionError (integer division by zero)', 2) end
  local r = a:remainder(b)
  local dt = torch.promote_types and torch.promote_types(a.dtype, b.dtype) or a.dtype
  return ((a - r):double() / b:double()):round():to(dt)
end)
-- on the tensors' metatable, reached without making a tensor (that would fix the CPU device count)
debug.getregistry()['torch.Tensor'].__idiv = function(a, b)
  if not torch.is_tensor(a) then a = operand(b, a) end
  return Tensor.floor_divide(a, b)
end

both('type_as', function(x, other)
  check_tensor(other, 'type_as', 'other')
  return x:to(other.dtype)
end)

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
  o = opts_of(o, op, { beta = true, alpha = true })
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
  local m = x:movedim({ dim1, dim2 }, { -2, -1 })
  local shape = {}
  for i = 1, m:dim() - 2 do shape[i] = m:size(i) end
  shape[#shape + 1] = rows * cols
  local flat = m:reshape(shape)
  local first = offset >= 0 and offset or -offset * cols -- 0-based
  local idx = torch.arange(0, n, { dtype = torch.int64, device = x.device }) * (cols + 1) + (first + 1)
  return flat:index_select(flat:dim(), idx)
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

-- ---- shapes ----

--- dims moved from source to destination positions (numbers or tables of them), the rest in order
both('movedim', function(x, src, dst)
  check_tensor(x, 'movedim')
  local n = x:dim()
  if type(src) ~= 'table' then src = { src } end
  if type(dst) ~= 'table' then dst = { dst } end
  if #src ~= #dst then
    error(string.format('movedim: invalid source or destination dims: source (%d dims) should contain the same number of dims as destination (%d dims)', #src, #dst), 2)
  end
  local perm, used_s, used_d = {}, {}, {}
  for i = 1, #src do
    local s, d = norm_dim(src[i], n, 'movedim', 'source'), norm_dim(dst[i], n, 'movedim', 'destination')
    if used_s[s] then error('movedim: repeated dim in source', 2) end
    if used_d[d] then error('movedim: repeated dim in destination', 2) end
    used_s[s], used_d[d] = true, true
    perm[d] = s
  end
  local rest = {}
  for i = 1, n do if not used_s[i] then rest[#rest + 1] = i end end
  local k = 1
  for d = 1, n do
    if perm[d] == nil then perm[d] = rest[k]; k = k + 1 end
  end
  if n == 0 then return x end
  return x:permute(perm)
end)
torch.moveaxis, Tensor.moveaxis = torch.movedim, Tensor.movedim
both('swapaxes', function(x, a, b) return x:transpose(a, b) end)
torch.swapdims, Tensor.swapdims = torch.swapaxes, Tensor.swapaxes

both('broadcast_to', function(x, sizes) return x:expand(sizes) end)
both('ravel', function(x) return x:reshape(-1) end)

--- dim split into the given sizes (one may be -1)
both('unflatten', function(x, dim, sizes)
  check_tensor(x, 'unflatten')
  dim = norm_dim(dim, x:dim(), 'unflatten')
  if type(sizes) ~= 'table' then error('unflatten: sizes must be a table of integers', 2) end
  local shape = {}
  for i = 1, dim - 1 do shape[#shape + 1] = x:size(i) end
  local known, free = 1, nil
  for _, s in ipairs(sizes) do
    if s == -1 then free = #shape + 1 else known = known * s end
    shape[#shape + 1] = s
  end
  if free then shape[free] = known ~= 0 and x:size(dim) // known or 0 end
  local prod = 1
  for i = dim, #shape do prod = prod * shape[i] end
  if prod ~= x:size(dim) then
    error(string.format('unflatten: provided sizes don\'t multiply up to the size of dim %d (%d) in the input tensor', dim, x:size(dim)), 2)
  end
  for i = dim + 1, x:dim() do shape[#shape + 1] = x:size(i) end
  return x:reshape(shape)
end)

--- the tensor repeated reps[i] times along dim i (PyTorch's x.repeat; Torch7's repeatTensor)
local function tile(x, reps, op)
  check_tensor(x, op)
  if type(reps) ~= 'table' then error(string.format('%s: expected the repetitions, got %s', op, type(reps)), 3) end
  local n = math.max(#reps, x:dim())
  if op == 'repeat' and #reps < x:dim() then
    error(string.format('repeat: number of repeat dims (%d) can not be smaller than number of tensor dims (%d)', #reps, x:dim()), 3)
  end
  local r, s = {}, {}
  for i = 1, n do
    local ri, si = i - (n - #reps), i - (n - x:dim())
    r[i] = ri >= 1 and reps[ri] or 1
    s[i] = si >= 1 and x:size(si) or 1
    if math.type(r[i]) ~= 'integer' or r[i] < 0 then
      error(string.format('%s: repetitions must be non-negative integers, got %s', op, tostring(r[i])), 3)
    end
  end
  -- x viewed as (1, s1, 1, s2, ...) expanded to (r1, s1, r2, s2, ...)
  local v, e, out = {}, {}, {}
  for i = 1, n do
    v[2 * i - 1], v[2 * i] = 1, s[i]
    e[2 * i - 1], e[2 * i] = r[i], s[i]
    out[i] = r[i] * s[i]
  end
  return x:reshape(v):expand(e):reshape(out)
end
local function reps_of(...)
  local a = { ... }
  if type(a[1]) == 'table' then return a[1] end
  return a
end
Tensor['repeat'] = function(x, ...) return tile(x, reps_of(...), 'repeat') end
Tensor.repeatTensor = Tensor['repeat']
both('tile', function(x, ...) return tile(x, reps_of(...), 'tile') end)

--- each element repeated (a number of times, or repeats[i] times for element i) along dim
--- (the flattened tensor without one)
both('repeat_interleave', function(x, repeats, dim)
  check_tensor(x, 'repeat_interleave')
  if type(dim) == 'table' then dim = dim.dim end
  if dim == nil then x, dim = x:reshape(-1), 1 end
  dim = norm_dim(dim, x:dim(), 'repeat_interleave')
  local n = x:size(dim)
  local idx
  if type(repeats) == 'number' then
    if math.type(repeats) ~= 'integer' or repeats < 0 then
      error('repeat_interleave: repeats must be a non-negative integer, got ' .. tostring(repeats), 2)
    end
    idx = torch.arange(1, n + 1, { dtype = torch.int64 }):unsqueeze(2):expand(n, repeats):reshape(-1)
  else
    check_tensor(repeats, 'repeat_interleave', 'repeats')
    if repeats:numel() == 1 and n ~= 1 then repeats = repeats:reshape(1):expand(n) end
    if repeats:dim() > 1 or repeats:numel() ~= n then
      error(string.format('repeat_interleave: repeats must have the same size as input along dim, got %d and %d', repeats:numel(), n), 2)
    end
    local counts = repeats:long():totable()
    local list = {}
    for i = 1, n do
      if counts[i] < 0 then error('repeat_interleave: repeats can not be negative', 2) end
      for _ = 1, counts[i] do list[#list + 1] = i end
    end
    idx = torch.tensor(list, { dtype = torch.int64 })
  end
  return x:index_select(dim, idx:to(x.device))
end)

both('flipud', function(x) return x:flip(1) end)
both('fliplr', function(x)
  if x:dim() < 2 then error('fliplr: input must be >= 2-d', 2) end
  return x:flip(2)
end)

--- k quarter turns from dims[1] toward dims[2]
both('rot90', function(x, k, dims)
  check_tensor(x, 'rot90')
  k = (k or 1) % 4
  dims = dims or { 1, 2 }
  local a, b = norm_dim(dims[1], x:dim(), 'rot90'), norm_dim(dims[2], x:dim(), 'rot90')
  if a == b then error('rot90: the two dims must differ', 2) end
  if k == 1 then return x:flip(b):transpose(a, b) end
  if k == 2 then return x:flip(a):flip(b) end
  if k == 3 then return x:flip(a):transpose(a, b) end
  return x:clone()
end)

--- the differences of neighbours along dim (n times)
both('diff', function(x, n, dim)
  check_tensor(x, 'diff')
  if type(n) == 'table' then n, dim = n.n, n.dim end
  n, dim = n or 1, dim or -1
  dim = norm_dim(dim, x:dim(), 'diff')
  for _ = 1, n do
    local len = x:size(dim)
    if len <= 1 then return x:narrow(dim, 1, 0) end
    x = x:narrow(dim, 2, len - 1) - x:narrow(dim, 1, len - 1)
  end
  return x
end)

--- windows of `size` elements every `step` along dim, as a new last dimension
both('unfold', function(x, dim, size, step)
  check_tensor(x, 'unfold')
  dim = norm_dim(dim, x:dim(), 'unfold')
  local len = x:dim() == 0 and 1 or x:size(dim)
  if math.type(size) ~= 'integer' or size < 0 or size > len then
    error(string.format('unfold: maximum size for tensor at dimension %d is %d but size is %s', dim, len, tostring(size)), 2)
  end
  if math.type(step) ~= 'integer' or step <= 0 then error('unfold: step must be a positive integer, got ' .. tostring(step), 2) end
  local count = (len - size) // step + 1
  local starts = torch.arange(0, count, { dtype = torch.int64 }) * step
  local idx = (starts:unsqueeze(2) + torch.arange(1, size + 1, { dtype = torch.int64 }):unsqueeze(1)):reshape(-1)
  local picked = x:index_select(dim, idx:to(x.device))
  return picked:unflatten(dim, { count, size }):movedim(dim + 1, -1)
end)

both('take', function(x, index)
  check_tensor(index, 'take', 'index')
  return x:reshape(-1):index_select(1, index:reshape(-1)):reshape(index.shape)
end)

both('take_along_dim', function(x, indices, dim)
  check_tensor(indices, 'take_along_dim', 'indices')
  if dim == nil then return x:reshape(-1):gather(1, indices:reshape(-1)) end
  return x:gather(dim, indices)
end)

both('msort', function(x) return (x:sort(1)) end)
both('argwhere', function(x) return x:nonzero() end)

both('index_add', function(x, dim, index, source, o)
  local alpha = opts_of(o, 'index_add', { alpha = true }).alpha or 1
  return x:clone():index_add_(dim, index, alpha == 1 and source or source * alpha)
end)
both('index_fill', function(x, dim, index, value) return x:clone():index_fill_(dim, index, value) end)

-- ---- reductions ----

--- NaNs counted as zero (sum) or left out (mean)
both('nansum', function(x, ...)
  return torch.where(x:ne(x), torch.zeros_like(x), x):sum(...)
end)
both('nanmean', function(x, dim, keepdim)
  local ok = x:eq(x)
  local s = torch.where(ok, x, torch.zeros_like(x))
  if dim == nil then return s:sum() / ok:sum() end
  return s:sum(dim, keepdim) / ok:sum(dim, keepdim)
end)

both('count_nonzero', function(x, dim)
  if dim == nil then return x:ne(0):sum() end
  return x:ne(0):sum(dim)
end)

both('aminmax', function(x, o)
  o = opts_of(o, 'aminmax', { dim = true, keepdim = true })
  if o.dim == nil then return x:amin(), x:amax() end
  return x:amin(o.dim, o.keepdim), x:amax(o.dim, o.keepdim)
end)

both('dist', function(a, b, p) return (a - b):norm(p or 2) end)

--- the k-th smallest element along dim (default: the last), with its index
both('kthvalue', function(x, k, dim, keepdim)
  check_tensor(x, 'kthvalue')
  if x:dim() == 0 then x = x:reshape(1) end
  dim = norm_dim(dim or -1, x:dim(), 'kthvalue')
  local n = x:size(dim)
  if math.type(k) ~= 'integer' or k < 1 or k > n then
    error(string.format('kthvalue: k (%s) out of range for dimension %d of size %d', tostring(k), dim, n), 2)
  end
  local v, i = x:sort(dim)
  v, i = v:narrow(dim, k, 1), i:narrow(dim, k, 1)
  if not keepdim then v, i = v:squeeze(dim), i:squeeze(dim) end
  return v, i
end)

--- the lower of the two middle values, NaN where a NaN is present (as PyTorch); with a dim, also
--- its index
both('median', function(x, dim, keepdim)
  check_tensor(x, 'median')
  local whole = dim == nil
  if whole then x = x:reshape(-1) end
  if x:dim() == 0 then x = x:reshape(1) end
  dim = norm_dim(dim or 1, x:dim(), 'median')
  local n = x:size(dim)
  if n == 0 then error('median: cannot compute the median of an empty dimension', 2) end
  local v, i = x:sort(dim) -- NaNs last
  local pos = torch.full_like(v:narrow(dim, 1, 1), (n - 1) // 2 + 1, { dtype = torch.int64 })
  if is_float(x) then -- the first NaN where there is one
    local nans = x:ne(x):sum(dim, true)
    pos = torch.where(nans:gt(0), n - nans + 1, pos)
  end
  local mv, mi = v:gather(dim, pos), i:gather(dim, pos)
  if whole then return mv:reshape({}) end
  if not keepdim then mv, mi = mv:squeeze(dim), mi:squeeze(dim) end
  return mv, mi
end)

-- the lengths of the runs that start where `new` (n booleans) is true
local function run_lengths(new, n, device)
  local starts = new:nonzero():reshape(-1)
  local m = starts:numel()
  if m == 0 then return torch.zeros(0, { dtype = torch.int64, device = device }) end
  local after = torch.full({ 1 }, n + 1, { dtype = torch.int64, device = device })
  local ends = m > 1 and torch.cat({ starts:narrow(1, 2, m - 1), after }) or after
  return ends - starts
end

--- the distinct values in ascending order; {return_inverse, return_counts, sorted} as PyTorch's
--- options (each NaN is distinct)
both('unique', function(x, o)
  check_tensor(x, 'unique')
  o = opts_of(o, 'unique', { sorted = true, return_inverse = true, return_counts = true, dim = true })
  if o.dim ~= nil then error('unique: the dim option is not supported; unique works on the flattened tensor', 2) end
  local flat = x:reshape(-1)
  local n = flat:numel()
  local s, order = flat:sort()
  local new
  if n > 0 then
    new = torch.cat({ torch.ones(1, { dtype = torch.bool, device = x.device }), s:narrow(1, 2, n - 1):ne(s:narrow(1, 1, n - 1)) })
  else
    new = torch.zeros(0, { dtype = torch.bool, device = x.device })
  end
  local values = s:masked_select(new)
  local res = { values }
  if o.return_inverse then
    local group = new:long():cumsum(1) -- 1-based: the unique value each sorted element is
    local inv = torch.zeros(n, { dtype = torch.int64, device = x.device })
    if n > 0 then inv:scatter_(1, order, group) end
    res[#res + 1] = inv:reshape(x.shape)
  end
  if o.return_counts then res[#res + 1] = run_lengths(new, n, x.device) end
  return table.unpack(res)
end)

--- consecutive runs of equal values as one; {return_inverse, return_counts}
both('unique_consecutive', function(x, o)
  check_tensor(x, 'unique_consecutive')
  o = opts_of(o, 'unique_consecutive', { return_inverse = true, return_counts = true, dim = true })
  if o.dim ~= nil then error('unique_consecutive: the dim option is not supported', 2) end
  local flat = x:reshape(-1)
  local n = flat:numel()
  local new = n > 0 and torch.cat({ torch.ones(1, { dtype = torch.bool, device = x.device }), flat:narrow(1, 2, n - 1):ne(flat:narrow(1, 1, n - 1)) })
    or torch.zeros(0, { dtype = torch.bool, device = x.device })
  local res = { flat:masked_select(new) }
  if o.return_inverse then res[#res + 1] = new:long():cumsum(1):reshape(x.shape) end
  if o.return_counts then res[#res + 1] = run_lengths(new, n, x.device) end
  return table.unpack(res)
end)

--- a histogram of `bins` equal bins over [min, max] (the data's range when both are 0)
both('histc', function(x, bins, lo, hi)
  check_tensor(x, 'histc')
  if type(bins) == 'table' then bins, lo, hi = bins.bins, bins.min, bins.max end
  bins, lo, hi = bins or 100, lo or 0, hi or 0
  if not is_float(x) then error('histc: expected a floating point tensor, got ' .. tostring(x.dtype), 2) end
  if math.type(bins) ~= 'integer' or bins <= 0 then error('histc: bins must be > 0, got ' .. tostring(bins), 2) end
  if lo == hi and x:numel() > 0 then lo, hi = x:min():item(), x:max():item() end
  if lo == hi then lo, hi = lo - 1, hi + 1 end
  if lo > hi then error(string.format('histc: max must be larger than min, got min %g and max %g', lo, hi), 2) end
  local flat = x:reshape(-1):double()
  local inside = flat:ge(lo):logical_and(flat:le(hi))
  local v = flat:masked_select(inside)
  local b = ((v - lo) * (bins / (hi - lo))):floor():long():clamp(0, bins - 1) + 1
  local h = torch.zeros(bins, { dtype = torch.float64, device = x.device })
  if b:numel() > 0 then h:scatter_add_(1, b, torch.ones(b:numel(), { dtype = torch.float64, device = x.device })) end
  return h:to(x.dtype)
end)

-- ---- sampling ----

--- 0 or 1 drawn with the probabilities in x
both('bernoulli', function(x, p)
  check_tensor(x, 'bernoulli')
  if p ~= nil then return torch.empty_like(x):bernoulli_(p) end
  return torch.rand_like(x, { dtype = is_float(x) and x.dtype or torch.float32 }):lt(x):to(x.dtype)
end)

--- num_samples 1-based indices drawn from each row's weights (with replacement, or without:
--- each index at most once)
both('multinomial', function(x, num_samples, replacement)
  check_tensor(x, 'multinomial')
  if type(replacement) == 'table' then replacement = replacement.replacement end
  if x:dim() ~= 1 and x:dim() ~= 2 then error('multinomial: prob_dist must be 1 or 2 dim, got ' .. x:dim(), 2) end
  if not is_float(x) then error('multinomial: only floating point probabilities are supported, got ' .. tostring(x.dtype), 2) end
  local p = x:dim() == 1 and x:unsqueeze(1) or x
  local k = p:size(2)
  if math.type(num_samples) ~= 'integer' or num_samples <= 0 then
    error('multinomial: cannot sample n_sample <= 0 samples, got ' .. tostring(num_samples), 2)
  end
  if not replacement and num_samples > k then
    error(string.format('multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement (%d > %d)', num_samples, k), 2)
  end
  local pd = p:double()
  if pd:lt(0):any():item() or pd:ne(pd):any():item() or pd:eq(math.huge):any():item() then
    error('multinomial: probability tensor contains either `inf`, `nan` or element < 0', 2)
  end
  local total = pd:sum(2, true)
  if total:le(0):any():item() then error('multinomial: invalid multinomial distribution (sum of probabilities <= 0)', 2) end
  local out
  if replacement then
    local cdf = (pd / total):cumsum(2)
    local u = torch.rand(p:size(1), num_samples, { dtype = torch.float64, device = x.device })
    -- the first bin whose cumulative weight exceeds u (never one of zero weight)
    out = cdf:unsqueeze(2):le(u:unsqueeze(3)):sum(3) + 1
    out = out:clamp(1, k)
  else
    -- the largest keys u^(1 / p): a draw without replacement in proportion to p (zero weights last)
    local u = torch.rand(p:size(1), k, { dtype = torch.float64, device = x.device })
    local keys = torch.where(pd:gt(0), u:log() / pd, torch.full_like(pd, -math.huge))
    local _, idx = keys:topk(num_samples, 2)
    out = idx
  end
  if x:dim() == 1 then out = out:squeeze(1) end
  return out:long()
end)

-- ---- building and combining tensors ----

local function tensor_list(op, ts)
  if type(ts) ~= 'table' or torch.is_tensor(ts) then error(op .. ': expected a table of tensors', 3) end
  if #ts == 0 then error(op .. ': expected a non-empty table of tensors', 3) end
  for i, t in ipairs(ts) do
    if not torch.is_tensor(t) then error(string.format('%s: element %d is not a tensor (%s)', op, i, type(t)), 3) end
  end
  return ts
end

local function at_least(x, n)
  if x:dim() >= n then return x end
  if n == 1 then return x:reshape(1) end
  if n == 2 then return x:dim() == 0 and x:reshape(1, 1) or x:unsqueeze(1) end
  if x:dim() == 0 then return x:reshape(1, 1, 1) end
  if x:dim() == 1 then return x:reshape(1, x:size(1), 1) end
  return x:unsqueeze(3)
end
torch.atleast_1d = function(x) return at_least(x, 1) end
torch.atleast_2d = function(x) return at_least(x, 2) end
torch.atleast_3d = function(x) return at_least(x, 3) end

-- the tensors of ts, each given at least n dims
local function each_at_least(op, ts, n)
  local a = {}
  for i, t in ipairs(tensor_list(op, ts)) do a[i] = at_least(t, n) end
  return a
end

--- stacking along rows (dim 1), columns (dim 2, or dim 1 of vectors) and depth (dim 3)
function torch.vstack(ts) return torch.cat(each_at_least('vstack', ts, 2), 1) end
torch.row_stack = torch.vstack
function torch.hstack(ts)
  local a = each_at_least('hstack', ts, 1)
  return torch.cat(a, a[1]:dim() == 1 and 1 or 2)
end
function torch.dstack(ts) return torch.cat(each_at_least('dstack', ts, 3), 3) end
function torch.column_stack(ts)
  ts = tensor_list('column_stack', ts)
  local a = {}
  for i, t in ipairs(ts) do a[i] = t:dim() <= 1 and t:reshape(t:numel(), 1) or t end
  return torch.cat(a, 2)
end

--- coordinate grids: tensors of N 1-D inputs' sizes, {indexing = 'ij' (default) or 'xy'}
function torch.meshgrid(...)
  local args = { ... }
  local opts = {}
  if #args >= 1 and type(args[#args]) == 'table' and not torch.is_tensor(args[#args]) and args[#args][1] == nil then
    opts = table.remove(args)
  end
  local ts = (#args == 1 and type(args[1]) == 'table' and not torch.is_tensor(args[1])) and args[1] or args
  ts = tensor_list('meshgrid', ts)
  opts = opts_of(opts, 'meshgrid', { indexing = true })
  local indexing = opts.indexing or 'ij'
  if indexing ~= 'ij' and indexing ~= 'xy' then
    error("meshgrid: indexing must be 'ij' or 'xy', got " .. tostring(indexing), 2)
  end
  local n = #ts
  local sizes = {}
  for i, t in ipairs(ts) do
    if t:dim() > 1 then error(string.format('meshgrid: expected 0-D or 1-D tensors, got a %d-D tensor at %d', t:dim(), i), 2) end
    sizes[i] = t:numel()
  end
  local swap = indexing == 'xy' and n >= 2
  if swap then sizes[1], sizes[2] = sizes[2], sizes[1] end
  local out = {}
  for i, t in ipairs(ts) do
    local pos = i
    if swap and i <= 2 then pos = 3 - i end
    local shape = {}
    for d = 1, n do shape[d] = d == pos and sizes[d] or 1 end
    out[i] = t:reshape(shape):expand(sizes)
  end
  return out
end

--- every combination of the inputs' elements, one a row
function torch.cartesian_prod(...)
  local ts = tensor_list('cartesian_prod', { ... })
  if #ts == 1 then return ts[1] end
  local grids = torch.meshgrid(ts, { indexing = 'ij' })
  local cols = {}
  for i, g in ipairs(grids) do cols[i] = g:reshape(-1) end
  return torch.stack(cols, 2)
end

--- the r-element combinations of a vector's elements (with_replacement: with repeats), one a row
function torch.combinations(x, r, with_replacement)
  check_tensor(x, 'combinations')
  if type(r) == 'table' then r, with_replacement = r.r, r.with_replacement end
  r = r or 2
  if x:dim() ~= 1 then error('combinations: expected a 1-D tensor, got ' .. x:dim() .. '-D', 2) end
  if math.type(r) ~= 'integer' or r < 0 then error('combinations: r must be a non-negative integer, got ' .. tostring(r), 2) end
  local n = x:numel()
  local rows, cur = {}, {}
  local function rec(start, depth)
    if depth > r then
      rows[#rows + 1] = { table.unpack(cur, 1, r) }
      return
    end
    for i = start, n do
      cur[depth] = i
      rec(with_replacement and i or i + 1, depth + 1)
    end
  end
  if r > 0 then rec(1, 1) end
  if #rows == 0 then return torch.empty(0, r, { dtype = x.dtype, device = x.device }) end
  local idx = torch.tensor(rows, { dtype = torch.int64 }):to(x.device)
  return x:index_select(1, idx:reshape(-1)):reshape(#rows, r)
end

--- matrices along the diagonal of a block matrix
function torch.block_diag(...)
  local ts = { ... }
  if #ts == 0 then return torch.empty(1, 0) end
  ts = tensor_list('block_diag', ts)
  local mats, width = {}, 0
  for i, t in ipairs(ts) do
    if t:dim() > 2 then error(string.format('block_diag: expected tensors of at most 2 dimensions, got %d-D at %d', t:dim(), i), 2) end
    mats[i] = t:dim() == 2 and t or t:reshape(1, t:numel())
    width = width + mats[i]:size(2)
  end
  local rows, left = {}, 0
  for i, m in ipairs(mats) do
    local w = m:size(2)
    rows[i] = torch.F.pad(m, { left, width - left - w })
    left = left + w
  end
  return torch.cat(rows, 1)
end

--- the sum of products over dims: the last `dims` of a with the first of b, or the listed pairs
function torch.tensordot(a, b, dims)
  check_tensor(a, 'tensordot')
  check_tensor(b, 'tensordot', 'the second input')
  if type(dims) == 'table' and type(dims.dims) ~= 'nil' then dims = dims.dims end
  dims = dims or 2
  local da, db = {}, {}
  if math.type(dims) == 'integer' then
    if dims < 0 or dims > a:dim() or dims > b:dim() then error('tensordot: dims out of range: ' .. dims, 2) end
    for i = 1, dims do da[i], db[i] = a:dim() - dims + i, i end
  elseif type(dims) == 'table' and type(dims[1]) == 'table' and type(dims[2]) == 'table' and #dims[1] == #dims[2] then
    for i = 1, #dims[1] do
      da[i] = norm_dim(dims[1][i], a:dim(), 'tensordot')
      db[i] = norm_dim(dims[2][i], b:dim(), 'tensordot')
    end
  else
    error('tensordot: dims must be an integer or a pair of equally long tables of dims', 2)
  end
  local ca, cb, k = {}, {}, 1
  for i = 1, #da do
    if a:size(da[i]) ~= b:size(db[i]) then
      error(string.format('tensordot: contracted dimensions need to match, but first has size %d in dim %d and second has size %d in dim %d',
        a:size(da[i]), da[i], b:size(db[i]), db[i]), 2)
    end
    ca[da[i]], cb[db[i]] = true, true
    k = k * a:size(da[i])
  end
  local pa, pb, out, m, n = {}, {}, {}, 1, 1
  for d = 1, a:dim() do if not ca[d] then pa[#pa + 1] = d; out[#out + 1] = a:size(d); m = m * a:size(d) end end
  for _, d in ipairs(da) do pa[#pa + 1] = d end
  for _, d in ipairs(db) do pb[#pb + 1] = d end
  for d = 1, b:dim() do if not cb[d] then pb[#pb + 1] = d; out[#out + 1] = b:size(d); n = n * b:size(d) end end
  local am = (a:dim() > 0 and a:permute(pa) or a):reshape(m, k)
  local bm = (b:dim() > 0 and b:permute(pb) or b):reshape(k, n)
  return am:mm(bm):reshape(out)
end

--- the p-norm distances between the rows of x1 (B x P x M or P x M) and of x2 (B x R x M)
function torch.cdist(x1, x2, p)
  check_tensor(x1, 'cdist', 'x1')
  check_tensor(x2, 'cdist', 'x2')
  if type(p) == 'table' then p = p.p end
  p = p or 2
  if x1:dim() < 2 or x2:dim() < 2 then error('cdist: expected inputs of at least 2 dimensions', 2) end
  if x1:size(-1) ~= x2:size(-1) then
    error(string.format('cdist: X1 and X2 must have the same number of columns. X1: %d X2: %d', x1:size(-1), x2:size(-1)), 2)
  end
  if type(p) ~= 'number' or p < 0 then error('cdist: only supports non-negative p values, got ' .. tostring(p), 2) end
  local d = (x1:unsqueeze(-2) - x2:unsqueeze(-3)):abs()
  if p == 0 then return d:ne(0):sum(-1):to(x1.dtype) end
  if p == math.huge then return d:amax(-1) end
  if p == 1 then return d:sum(-1) end
  if p == 2 then return (d * d):sum(-1):sqrt() end
  return (d ^ p):sum(-1) ^ (1 / p)
end

--- where each value would go in a sorted sequence: the 1-based position of the first element not
--- less than it (right: greater than it), so 1 .. n + 1; {right, side = 'left' | 'right'}
local function search(op, seq, values, right)
  local n = seq:size(-1)
  local v = values
  if seq:dim() == 1 then
    local flat = v:reshape(-1)
    local counts = {}
    local chunk = math.max(1, 4194304 // math.max(n, 1))
    for s = 1, flat:numel(), chunk do
      local part = flat:narrow(1, s, math.min(chunk, flat:numel() - s + 1)):unsqueeze(2)
      local c = right and seq:unsqueeze(1):le(part) or seq:unsqueeze(1):lt(part)
      counts[#counts + 1] = c:sum(2)
    end
    local r = #counts > 0 and torch.cat(counts) or torch.zeros(0, { dtype = torch.int64, device = seq.device })
    return (r + 1):reshape(v.shape)
  end
  if v:dim() ~= seq:dim() then
    error(string.format('%s: boundaries of %d dimensions need values of as many (their leading dims equal), got %d', op, seq:dim(), v:dim()), 3)
  end
  for d = 1, seq:dim() - 1 do
    if seq:size(d) ~= v:size(d) then
      error(string.format('%s: the leading dimensions of the sorted sequence (%s) and the values (%s) must match', op,
        tostring(seq.shape), tostring(v.shape)), 3)
    end
  end
  local c = right and seq:unsqueeze(-2):le(v:unsqueeze(-1)) or seq:unsqueeze(-2):lt(v:unsqueeze(-1))
  return c:sum(-1) + 1
end

function torch.searchsorted(seq, values, o)
  check_tensor(seq, 'searchsorted', 'sorted_sequence')
  o = opts_of(o, 'searchsorted', { right = true, side = true, out_int32 = true })
  if type(values) == 'number' then values = torch.tensor(values, { dtype = seq.dtype, device = seq.device }) end
  check_tensor(values, 'searchsorted', 'values')
  if o.side ~= nil and o.side ~= 'left' and o.side ~= 'right' then
    error("searchsorted: side must be 'left' or 'right', got " .. tostring(o.side), 2)
  end
  if o.side == 'left' and o.right then error("searchsorted: side and right can't be set to opposites", 2) end
  if seq:dim() == 0 then error('searchsorted: the sorted sequence must have at least 1 dimension', 2) end
  local r = search('searchsorted', seq, values, o.right or o.side == 'right')
  return o.out_int32 and r:int() or r
end

function torch.bucketize(x, boundaries, o)
  o = opts_of(o, 'bucketize', { right = true, out_int32 = true })
  if type(x) == 'number' then x = torch.tensor(x, { dtype = boundaries.dtype }) end
  check_tensor(x, 'bucketize')
  check_tensor(boundaries, 'bucketize', 'boundaries')
  if boundaries:dim() ~= 1 then error('bucketize: boundaries must be 1-D, got ' .. boundaries:dim() .. '-D', 2) end
  local r = search('bucketize', boundaries, x, o.right)
  return o.out_int32 and r:int() or r
end
Tensor.bucketize = torch.bucketize

--- the trapezoidal rule along dim (default the last), over unit spacing, a spacing dx or the points x
function torch.trapezoid(y, x, o)
  check_tensor(y, 'trapezoid')
  if type(x) == 'table' and not torch.is_tensor(x) then o, x = x, nil end
  o = opts_of(o, 'trapezoid', { dx = true, dim = true })
  local dim = norm_dim(o.dim or -1, y:dim(), 'trapezoid')
  local n = y:size(dim)
  if n == 0 then return y:sum(dim) end
  local mid = (y:narrow(dim, 2, n - 1) + y:narrow(dim, 1, n - 1)) * 0.5
  if x ~= nil then
    check_tensor(x, 'trapezoid', 'x')
    local xd = x:dim() == 1 and x or x
    local dx
    if x:dim() == 1 then
      local shape = {}
      for d = 1, y:dim() do shape[d] = d == dim and n - 1 or 1 end
      dx = (x:narrow(1, 2, n - 1) - x:narrow(1, 1, n - 1)):reshape(shape)
    else
      dx = xd:narrow(dim, 2, n - 1) - xd:narrow(dim, 1, n - 1)
    end
    return (mid * dx):sum(dim)
  end
  return mid:sum(dim) * (o.dx or 1)
end
torch.trapz = torch.trapezoid

-- ---- functional forms as methods ----
Tensor.softmax = function(x, dim, o) return torch.F.softmax(x, dim, o) end
Tensor.log_softmax = function(x, dim, o) return torch.F.log_softmax(x, dim, o) end
torch.softmax, torch.log_softmax = Tensor.softmax, Tensor.log_softmax

return Tensor
