-- The tensor forms that scripts ported from Torch7 or from older PyTorch use: torch.Tensor(...) and
-- the typed constructors (torch.FloatTensor(2, 3), torch.LongTensor({1, 2})), type names in
-- x:type() ('torch.FloatTensor', as both give) and x:type('torch.DoubleTensor'), and elementwise
-- Lua functions written back in place: PyTorch's x:apply_(fn), x:map_(y, fn), x:map2_(y, z, fn) and
-- Torch7's x:apply, x:map, x:map2 (the same, in place as in Torch7).
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local as_int = require('torch.composite').as_int
local check_tensor = U.check_tensor

-- PyTorch's legacy names of the dtypes
local NAMES = {
  { 'FloatTensor', torch.float32 }, { 'DoubleTensor', torch.float64 }, { 'HalfTensor', torch.float16 },
  { 'BFloat16Tensor', torch.bfloat16 }, { 'LongTensor', torch.int64 }, { 'IntTensor', torch.int32 },
  { 'ShortTensor', torch.int16 }, { 'CharTensor', torch.int8 }, { 'ByteTensor', torch.uint8 },
  { 'BoolTensor', torch.bool },
}
local dtype_of, name_of = {}, {}
for _, e in ipairs(NAMES) do dtype_of[e[1]], name_of[e[2]] = e[2], e[1] end

-- torch.Tensor(...) and torch.<Name>Tensor(...): sizes (numbers, or one torch.Size) give an
-- uninitialised tensor, a (nested) table of values a tensor of them, a tensor the same data
-- (of the same dtype), nothing an empty tensor; the dtype is the name's (the default one for
-- torch.Tensor, as in PyTorch, where torch.Tensor({1, 2}) is float).
local function construct(op, dtype, ...)
  local n, first = select('#', ...), ...
  dtype = dtype or torch.get_default_dtype()
  if n == 0 then return torch.empty(0, { dtype = dtype }) end
  if torch.is_tensor(first) then
    if n > 1 then error(op .. ': expected one tensor and nothing after it', 3) end
    if first.dtype ~= dtype then
      error(string.format('%s: expected a tensor of dtype %s, got %s (use x:to(dtype) to convert)', op,
        tostring(dtype), tostring(first.dtype)), 3)
    end
    return first:detach()
  end
  if type(first) == 'table' and getmetatable(first) ~= torch.Size then
    if n > 1 then error(op .. ': expected one table of values and nothing after it', 3) end
    return torch.tensor(first, { dtype = dtype })
  end
  for i = 1, n do
    local s = select(i, ...)
    s = as_int(s)
    if not (math.type(s) == 'integer' and s >= 0) and getmetatable(s) ~= torch.Size then
      error(string.format('%s: expected sizes (non-negative integers), a table of values or a tensor; ' ..
        'argument %d is %s', op, i, math.type(s) or type(s)), 3)
    end
  end
  local sizes = getmetatable(first) == torch.Size and first or { ... }
  return torch.empty(sizes, { dtype = dtype })
end

setmetatable(Tensor, { __call = function(_, ...) return construct('torch.Tensor', nil, ...) end })
for name, dtype in pairs(dtype_of) do
  torch[name] = function(...) return construct('torch.' .. name, dtype, ...) end
end

local c_type = Tensor.type
-- x:type(): 'torch.FloatTensor' ('torch.cuda.FloatTensor' on a GPU); x:type(t): x converted to t,
-- a dtype or one of those names (a cuda name moves x to the current GPU, another name to the CPU)
function Tensor.type(x, t, ...)
  check_tensor(x, 'type', 'self')
  if t == nil then
    return (x.device.type == 'cuda' and 'torch.cuda.' or 'torch.') .. name_of[x.dtype]
  end
  if type(t) == 'string' then
    local name, device = t:match('^torch%.(%w+)$'), 'cpu'
    if not name then name, device = t:match('^torch%.cuda%.(%w+)$'), 'cuda' end
    if dtype_of[name] then
      if x.device.type ~= device then x = x:to(device) end
      return x:to(dtype_of[name])
    end
  end
  return c_type(x, t, ...)
end

-- the values of t, broadcast to x's shape, as a flat Lua array in x's (row-major) order
local function values_like(x, t, op, what)
  check_tensor(t, op, what)
  local ok, e = pcall(t.expand, t, x.shape)
  if not ok then
    error(string.format('%s: %s of shape %s cannot be broadcast to self of shape %s', op, what,
      tostring(t.shape), tostring(x.shape)), 3)
  end
  return e:reshape(-1):totable()
end

-- fn over the elements of x (and of the others, broadcast to x), its results written into x; a nil
-- result keeps the element, as Torch7's apply does
local function map_into(op, x, fn, ...)
  check_tensor(x, op, 'self')
  if type(fn) ~= 'function' and not (getmetatable(fn) or {}).__call then
    error(string.format('%s: expected a function, got %s', op, type(fn)), 3)
  end
  if x.requires_grad then
    error(op .. ': a tensor that requires grad cannot be changed by a Lua function (it is not differentiable)', 3)
  end
  local v = x:reshape(-1):totable()
  local others = { ... }
  for k, t in ipairs(others) do others[k] = values_like(x, t, op, k == 1 and 'the second tensor' or 'the third tensor') end
  local a, b = others[1], others[2]
  for i = 1, #v do
    local r
    if b then r = fn(v[i], a[i], b[i]) elseif a then r = fn(v[i], a[i]) else r = fn(v[i]) end
    if r ~= nil then
      if type(r) ~= 'number' and type(r) ~= 'boolean' then
        error(string.format('%s: the function returned a %s for element %d (expected a number)', op, type(r), i), 3)
      end
      v[i] = r
    end
  end
  if #v > 0 then torch.no_grad(function() x:copy_(torch.tensor(v, { dtype = x.dtype }):view(x.shape)) end) end
  return x
end

function Tensor.apply_(x, fn) return map_into('apply_', x, fn) end
function Tensor.map_(x, y, fn) return map_into('map_', x, fn, y) end
function Tensor.map2_(x, y, z, fn) return map_into('map2_', x, fn, y, z) end
function Tensor.apply(x, fn) return map_into('apply', x, fn) end
function Tensor.map(x, y, fn) return map_into('map', x, fn, y) end
function Tensor.map2(x, y, z, fn) return map_into('map2', x, fn, y, z) end

--- torch.matrix_rank(...): removed from PyTorch 1.13 (it raises there, naming its successor); the
--- same error here
function torch.matrix_rank()
  error('matrix_rank: this function was deprecated since version 1.9 and is now removed. Please use the '
    .. '`torch.linalg.matrix_rank` function instead.', 2)
end
