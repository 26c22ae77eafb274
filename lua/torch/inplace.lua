-- The in-place forms of PyTorch's tensor ops that the C kernels do not provide, their aliases, and
-- the torch.* forms of the in-place functions PyTorch's torch namespace has (torch.abs_(x), ...):
-- in-place comparisons and logicals (1/0 written in self's dtype), the in-place composites
-- (addcmul_, cumsum_, lerp_, xlogy_, ...), the in-place view ops (squeeze_, t_, transpose_,
-- as_strided_: self's sizes and strides change, not its elements), resize_, fill_diagonal_, and
-- small helpers (is_same_size, is_signed, split_with_sizes, narrow_copy, torch.range,
-- torch.scalar_tensor, torch.as_tensor, torch.asarray).
--
-- Autograd as PyTorch's: an in-place op on a leaf that requires grad is refused; on a tensor with
-- history it is recorded, self taking the op's history; each write bumps the version counter, so
-- that backward refuses a tensor saved before it was changed.
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local as_int = require('torch.composite').as_int
local check_tensor, in_place, records, opts_of, both = U.check_tensor, U.in_place, U.records, U.opts_of, U.both

-- a message raised by a function that inplace.lua called, without its position, so that it can be
-- raised again at the user's call
local function strip_position(err)
  err = tostring(err)
  return (err:gsub('^[^\n]-:%d+: ', '', 1))
end

local function leaf_error(op)
  return op .. ': a leaf Variable that requires grad is being used in an in-place operation.'
end

-- ---- comparisons and logicals ----

-- x:name_(other): x's elements replaced by fn(x, other) (a bool tensor) as 1 and 0 in x's dtype;
-- other broadcasts to x's shape (not x to another). With autograd the gradient through it is zero
-- (PyTorch's formula for eq_ and the others): a custom function passes zeros to x and other.
local function title(s) return (s:gsub('^%l', string.upper):gsub('_(%l)', string.upper)) end
local function compare_in_place(name, fn)
  local op = name .. '_'
  local Zero = torch.autograd.Function:extend(title(name))
  function Zero.forward(_, x, _, r) return r:to(x.dtype) end
  function Zero.backward(_, g) return torch.zeros_like(g), torch.zeros_like(g) end
  Tensor[op] = function(x, other)
    check_tensor(x, op)
    local rec = records(x, other)
    if rec then
      local bad = x:_inplace_error(op)
      if bad then error(bad, 2) end
    end
    local ok, r = pcall(fn, x, other)
    if not ok then error(op .. ': ' .. strip_position(r):gsub('^[%w_]+: ', ''), 2) end
    if r.shape ~= x.shape then
      error(string.format("%s: output with shape %s doesn't match the broadcast shape %s", op, tostring(x.shape),
        tostring(r.shape)), 2)
    end
    if rec and x.dtype.is_floating_point then r = Zero.apply(x, other, r) end
    return x:copy_(r)
  end
end
for _, c in ipairs {
  { 'eq', Tensor.eq }, { 'ne', Tensor.ne }, { 'lt', Tensor.lt }, { 'le', Tensor.le }, { 'gt', Tensor.gt },
  { 'ge', Tensor.ge }, { 'greater', Tensor.gt }, { 'greater_equal', Tensor.ge }, { 'less', Tensor.lt },
  { 'less_equal', Tensor.le }, { 'not_equal', Tensor.ne }, { 'logical_and', Tensor.logical_and },
  { 'logical_or', Tensor.logical_or }, { 'logical_xor', Tensor.logical_xor },
} do
  compare_in_place(c[1], c[2])
end
compare_in_place('logical_not', function(x) return x:logical_not() end)
do -- logical_not_ takes no operand
  local f = Tensor.logical_not_
  Tensor.logical_not_ = function(x, ...)
    if select('#', ...) > 0 then error('logical_not_: expected no arguments after the tensor', 2) end
    return f(x)
  end
end

-- ---- arithmetic ----

-- the composites, written into self (its shape and dtype kept)
for _, name in ipairs { 'addcdiv', 'addcmul', 'addmm', 'addmv', 'addr', 'addbmm', 'baddbmm', 'cumsum', 'cumprod',
  'lerp', 'floor_divide', 'heaviside', 'xlogy', 'logit', 'nan_to_num', 'sinc', 'deg2rad', 'rad2deg',
  'mvlgamma' } do
  assert(Tensor[name], name)
  in_place(name, Tensor[name])
end

-- x:round_({decimals = n}): the composite round written into x; without decimals the C op
do
  local plain, with_decimals = Tensor.round_, in_place('round', Tensor.round)
  function Tensor.round_(x, o)
    if o == nil then return plain(x) end
    return with_decimals(x, o)
  end
end

--- x:float_power_(exponent): x ^ exponent in float64, x itself float64 (PyTorch's rule)
local float_power_ = in_place('float_power', Tensor.float_power)
function Tensor.float_power_(x, e)
  check_tensor(x, 'float_power_')
  if x.dtype ~= torch.float64 then
    error(string.format("float_power_: the base given to float_power_ has dtype %s but the operation's result "
      .. 'requires dtype float64', x.dtype.name), 2)
  end
  return float_power_(x, e)
end

-- aliases of the C in-place ops (NumPy's and PyTorch's other names)
local aliases = {
  sgn_ = 'sign_', fix_ = 'trunc_', absolute_ = 'abs_', negative_ = 'neg_', divide_ = 'div_',
  true_divide_ = 'div_', multiply_ = 'mul_', subtract_ = 'sub_', arctan2_ = 'atan2_', arccos_ = 'acos_',
  arcsin_ = 'asin_', arctan_ = 'atan_', arccosh_ = 'acosh_', arcsinh_ = 'asinh_', arctanh_ = 'atanh_',
}
for alias, name in pairs(aliases) do
  assert(Tensor[name], name)
  Tensor[alias] = Tensor[name]
end
for alias, name in pairs { arccos = 'acos', arcsin = 'asin', arctan = 'atan', arctan2 = 'atan2' } do
  Tensor[alias] = Tensor[alias] or Tensor[name]
  torch[alias] = rawget(torch, alias) or torch[name]
end

--- x:positive() / torch.positive(x): x itself (bool tensors refused, as PyTorch's unary +)
function Tensor.positive(x)
  check_tensor(x, 'positive')
  if x.dtype == torch.bool then
    error('positive: the + operator on a bool tensor is not supported', 2)
  end
  return x
end
torch.positive = Tensor.positive

-- the torch.* forms of the in-place functions of PyTorch 1.13's torch namespace (torch.abs_(x) is
-- x:abs_()); PyTorch's other in-place ops are methods only
for _, name in ipairs { 'abs_', 'acos_', 'acosh_', 'asin_', 'asinh_', 'atan_', 'atanh_', 'arccos_', 'arccosh_',
  'arcsin_', 'arcsinh_', 'arctan_', 'arctanh_', 'ceil_', 'clamp_', 'clamp_max_', 'clamp_min_', 'clip_', 'cos_',
  'cosh_', 'deg2rad_', 'rad2deg_', 'detach_', 'erf_', 'erfc_', 'exp_', 'exp2_', 'expm1_', 'fill_', 'fix_', 'floor_',
  'frac_', 'gcd_', 'lcm_', 'i0_', 'index_put_', 'ldexp_', 'log_', 'log10_', 'log1p_', 'log2_', 'logit_',
  'nan_to_num_', 'neg_', 'negative_', 'reciprocal_', 'relu_', 'round_', 'rsqrt_', 'selu_', 'sigmoid_', 'sin_',
  'sinc_', 'sinh_', 'sqrt_', 'square_', 'tan_', 'tanh_', 'trunc_', 'xlogy_', 'zero_', 'addmv_', 'resize_as_' } do
  if rawget(torch, name) == nil then
    local f = Tensor[name]
    if f then torch[name] = f end
  end
end
-- the in-place activations and dropouts of the torch namespace, from torch.nn.functional's
function torch.celu_(x, alpha) return torch.F.celu(x, alpha or 1, true) end
function torch.threshold_(x, threshold, value) return torch.F.threshold(x, threshold, value, true) end
function torch.dropout_(x, p, train) return torch.F.dropout(x, p, train, true) end

-- ---- in-place view ops ----

-- x:name_(...): x takes the sizes, strides and offset of view(x, ...) (a view op, recorded by
-- autograd where x has history), and its history: the elements stay
local function view_in_place(name, view)
  local op = name .. '_'
  Tensor[op] = function(x, ...)
    check_tensor(x, op)
    if x.requires_grad and x.is_leaf and torch.is_grad_enabled() then error(leaf_error(op), 2) end
    local ok, v = pcall(view, x, ...)
    if not ok then error(op .. ': ' .. strip_position(v):gsub('^[%w_]+: ', ''), 2) end
    return x:_set_view_(v)
  end
end
view_in_place('squeeze', Tensor.squeeze)
view_in_place('unsqueeze', Tensor.unsqueeze)
view_in_place('t', Tensor.t)
view_in_place('transpose', Tensor.transpose)
view_in_place('swapaxes', Tensor.transpose)
view_in_place('swapdims', Tensor.transpose)
view_in_place('as_strided', Tensor.as_strided)
torch.as_strided_ = Tensor.as_strided_ -- in PyTorch 1.13's torch namespace too

-- sizes given as numbers, one table or a torch.Size
local function sizes_of(op, ...)
  local first = ...
  local sizes
  if type(first) == 'table' and not torch.is_tensor(first) then
    if select('#', ...) > 1 then error(op .. ': expected the sizes as numbers or as one table', 3) end
    sizes = { table.unpack(first) }
  else
    sizes = { ... }
  end
  for i, s in ipairs(sizes) do
    s = as_int(s)
    sizes[i] = s
    if math.type(s) ~= 'integer' then
      error(string.format('%s: sizes must be integers, got %s at position %d', op, tostring(s), i), 3)
    end
  end
  return sizes
end

--- x:resize_(sizes...): x with the given sizes (contiguous strides, its storage offset kept), its
--- elements in storage order; where more are needed, x moves to a larger storage that holds its
--- old elements first (the new ones uninitialised). Refused for tensors that require grad.
function Tensor.resize_(x, ...)
  check_tensor(x, 'resize_')
  local sizes = sizes_of('resize_', ...)
  if x.requires_grad then error('resize_: cannot resize variables that require grad', 2) end
  local ok, err = pcall(x._resize_, x, sizes)
  if not ok then error(strip_position(err), 2) end
  return x
end

--- x:resize_as_(other): x:resize_(other's sizes)
function Tensor.resize_as_(x, other)
  check_tensor(x, 'resize_as_')
  check_tensor(other, 'resize_as_', 'the template')
  if x.requires_grad then error('resize_as_: cannot resize variables that require grad', 2) end
  local ok, err = pcall(x._resize_, x, { table.unpack(other.shape) })
  if not ok then error(strip_position(err), 2) end
  return x
end
torch.resize_as_ = rawget(torch, 'resize_as_') or Tensor.resize_as_

-- the elements fill_diagonal_ writes, as views of x (without autograd): the main diagonal, the
-- elements whose indices are all equal (step: the sum of the strides); wrapping a tall matrix,
-- whose diagonal starts again every cols + 1 rows (NumPy's, PyTorch's wrap), the further full
-- blocks of cols elements as one 2-D view and the last partial block
local function diagonal_views(x, wrap)
  local height, width = x:size(1), x:size(2)
  local step = 0
  for _, s in ipairs(x:stride()) do step = step + s end
  local n, off = math.min(height, width), x:storage_offset()
  local views = { x:_as_strided({ n }, { step }, off) }
  if wrap and x:dim() == 2 and height > width + 1 then
    -- the diagonal's elements are the row-major positions k (cols + 1) of the matrix, k < count
    local count = (height * width + width) // (width + 1)
    local rows = x:stride(1) * (width + 1) -- from one block's first element to the next's
    local full = count // width - 1 -- full blocks after the first
    if full > 0 then views[2] = x:_as_strided({ full, width }, { rows, step }, off + rows) end
    local rest = count % width
    if rest > 0 then views[#views + 1] = x:_as_strided({ rest }, { step }, off + (full + 1) * rows) end
  end
  return views
end

local function fill_views(x, value, wrap)
  for _, v in ipairs(diagonal_views(x, wrap)) do v:fill_(value) end
  return x
end

-- with autograd (x in a graph): x's values with the diagonal filled, whose gradient is the
-- output's with that diagonal zeroed, the same op (so differentiable again)
local FillDiagonal = torch.autograd.Function:extend('FillDiagonalBackward0')
function FillDiagonal.forward(ctx, x, value, wrap)
  ctx.wrap = wrap
  return fill_views(x:clone(), value, wrap)
end
function FillDiagonal.backward(ctx, g) return FillDiagonal.apply(g, 0, ctx.wrap) end

--- x:fill_diagonal_(value, wrap = false): value written on the main diagonal of x (2-D, or N-D
--- with every size equal: the elements whose indices are all equal); with wrap, a tall matrix's
--- diagonal starts again N + 1 rows down, as NumPy's fill_diagonal. Written through views of the
--- diagonal (no mask of x's elements).
function Tensor.fill_diagonal_(x, value, wrap)
  check_tensor(x, 'fill_diagonal_')
  if type(value) ~= 'number' and type(value) ~= 'boolean' then
    error('fill_diagonal_: fill_value must be a number, got ' .. (torch.is_tensor(value) and 'a tensor' or type(value)),
      2)
  end
  if wrap ~= nil and type(wrap) ~= 'boolean' then
    error('fill_diagonal_: wrap must be a boolean, got ' .. type(wrap), 2)
  end
  local nd = x:dim()
  if nd < 2 then error(string.format('fill_diagonal_: dimensions must larger than 1 (got %d)', nd), 2) end
  local height = x:size(1)
  if nd > 2 then
    for d = 2, nd do
      if x:size(d) ~= height then
        error(string.format('fill_diagonal_: all dimensions of input must be of equal length, got %s',
          tostring(x.shape)), 2)
      end
    end
  end
  local rec = records(x)
  if rec then
    local bad = x:_inplace_error('fill_diagonal_')
    if bad then error(bad, 2) end
  end
  if x:numel() == 0 then return x end
  if rec then return x:copy_(FillDiagonal.apply(x, value, wrap)) end
  return fill_views(x, value, wrap)
end

-- ---- small helpers ----

both('is_same_size', function(x, other)
  check_tensor(x, 'is_same_size')
  check_tensor(other, 'is_same_size', 'other')
  return x.shape == other.shape
end)
both('is_signed', function(x)
  check_tensor(x, 'is_signed')
  return x.dtype ~= torch.uint8 and x.dtype ~= torch.bool
end)
-- lutorch has no complex dtypes
both('is_complex', function(x)
  check_tensor(x, 'is_complex')
  return false
end)
-- x:is_inference() is the C method (made in torch.inference_mode); torch.is_inference(x) calls it
function torch.is_inference(x)
  check_tensor(x, 'is_inference')
  return x:is_inference()
end

--- x:new_empty_strided(size, stride, {dtype, device, requires_grad}): torch.empty_strided with
--- x's dtype and device unless given
function Tensor.new_empty_strided(x, size, stride, o)
  check_tensor(x, 'new_empty_strided')
  o = opts_of(o, 'new_empty_strided', { 'dtype', 'device', 'requires_grad' })
  local r = torch.empty_strided(size, stride, { dtype = o.dtype or x.dtype, device = o.device or x.device })
  if o.requires_grad then r:requires_grad_() end
  return r
end

--- x:split_with_sizes(sizes, dim = 1): x:split(sizes, dim), sizes a table that adds up to the size
--- of dim
both('split_with_sizes', function(x, sizes, dim)
  check_tensor(x, 'split_with_sizes')
  if type(sizes) ~= 'table' or torch.is_tensor(sizes) then
    error('split_with_sizes: split_sizes must be a table of integers, got ' .. type(sizes), 2)
  end
  return x:split(sizes, dim)
end)
-- PyTorch's unsafe_ forms skip its view tracking; lutorch's pieces are plain views already
both('unsafe_split', function(x, size, dim) return x:split(size, dim) end)
both('unsafe_split_with_sizes', Tensor.split_with_sizes)
both('unsafe_chunk', function(x, chunks, dim) return x:chunk(chunks, dim) end)

--- x:narrow_copy(dim, start, length): x:narrow(...) as a new contiguous tensor
both('narrow_copy', function(x, dim, start, length)
  check_tensor(x, 'narrow_copy')
  return x:narrow(dim, start, length):clone()
end)

--- torch.range(start, end, step = 1, {dtype, device, requires_grad}): start, start + step, ...
--- up to end included (deprecated in PyTorch for torch.arange, whose end is excluded); the
--- default dtype unless given; the values computed in float64
local range_warned = false
function torch.range(start, stop, step, o)
  if type(step) == 'table' then step, o = nil, step end
  o = opts_of(o, 'range', { 'dtype', 'device', 'requires_grad' })
  step = step or 1
  for _, v in ipairs { { 'start', start }, { 'end', stop }, { 'step', step } } do
    if type(v[2]) ~= 'number' then error(string.format('range: %s must be a number, got %s', v[1], type(v[2])), 2) end
  end
  if step == 0 then error('range: step must be nonzero', 2) end
  if (step > 0 and stop < start) or (step < 0 and stop > start) then
    error('range: upper bound and larger bound inconsistent with step sign', 2)
  end
  if not range_warned then
    range_warned = true
    io.stderr:write('UserWarning: torch.range is deprecated and will be removed in a future release because its '
      .. 'behavior is inconsistent with Python\'s range builtin. Instead, use torch.arange, which produces values '
      .. 'in [start, end).\n')
  end
  local n = math.floor((stop - start) / step) + 1
  local dtype = o.dtype or torch.get_default_dtype()
  local r = (torch.arange(0, n, { dtype = torch.float64 }) * step + start):to(dtype)
  if o.device then r = r:to(o.device) end
  if o.requires_grad then r:requires_grad_() end
  return r
end

--- torch.scalar_tensor(value, {dtype, device, requires_grad}): a 0-dim tensor of the default dtype
--- (or dtype) holding value
function torch.scalar_tensor(v, o)
  if type(v) ~= 'number' and type(v) ~= 'boolean' then
    error('scalar_tensor: expected a number, got ' .. (torch.is_tensor(v) and 'a tensor' or type(v)), 2)
  end
  o = opts_of(o, 'scalar_tensor', { 'dtype', 'device', 'requires_grad' })
  local r = torch.full({}, v, { dtype = o.dtype or torch.get_default_dtype(), device = o.device })
  if o.requires_grad then r:requires_grad_() end
  return r
end

local function same_device(x, d)
  return d == nil or x.device == torch.device(d)
end

--- torch.as_tensor(data, {dtype, device}): data itself when it is a tensor of that dtype and device
--- (or they are not given), else data converted (a copy that keeps autograd's history); a number or
--- a table of them as torch.tensor makes it
function torch.as_tensor(data, o)
  o = opts_of(o, 'as_tensor', { 'dtype', 'device' })
  if torch.is_tensor(data) then
    if (o.dtype == nil or o.dtype == data.dtype) and same_device(data, o.device) then return data end
    return data:to(o.dtype or data.dtype):to(o.device or data.device)
  end
  local ok, r = pcall(torch.tensor, data, { dtype = o.dtype, device = o.device })
  if not ok then error('as_tensor: ' .. strip_position(r):gsub('^tensor: ', ''), 2) end
  return r
end

--- torch.asarray(obj, {dtype, device, copy, requires_grad}): obj itself when it is a tensor of that
--- dtype and device and copy is not true, a converted copy when it is not (an error with copy =
--- false, which must share obj's memory), a clone with copy = true; numbers and tables as
--- torch.tensor. requires_grad given and different from the tensor's: a leaf sharing its memory
--- with that setting.
function torch.asarray(obj, o)
  o = opts_of(o, 'asarray', { 'dtype', 'device', 'copy', 'requires_grad' })
  local r
  if torch.is_tensor(obj) then
    local wrong_dtype = o.dtype ~= nil and o.dtype ~= obj.dtype
    local wrong_device = not same_device(obj, o.device)
    if o.copy == false and wrong_device then
      error(string.format("asarray: can't alias tensor from device '%s' to '%s'", tostring(obj.device),
        tostring(torch.device(o.device))), 2)
    end
    if o.copy == false and wrong_dtype then
      error(string.format("asarray: can't alias tensor with dtype '%s' into dtype '%s'", obj.dtype.name, o.dtype.name),
        2)
    end
    if wrong_dtype or wrong_device then
      r = obj:to(o.dtype or obj.dtype):to(o.device or obj.device)
    elseif o.copy then
      r = obj:clone()
    else
      r = obj
    end
  else
    local ok, t = pcall(torch.tensor, obj, { dtype = o.dtype, device = o.device })
    if not ok then error('asarray: ' .. strip_position(t):gsub('^tensor: ', ''), 2) end
    r = t
  end
  if o.requires_grad ~= nil and r.requires_grad ~= o.requires_grad then
    r = r:detach():requires_grad_(o.requires_grad)
  end
  return r
end
