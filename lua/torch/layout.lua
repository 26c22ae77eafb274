-- A tensor's layout and identity: torch.strided (the one layout lutorch has: sizes and strides over
-- a storage), x.layout, x.is_nested (false: lutorch has no nested tensors), x:is_set_to(y) (the
-- same storage, offset, sizes and strides), and PyTorch's deprecated out-of-place x:resize(sizes)
-- and x:resize_as(y) (x's elements in the new shape, which must hold as many; differentiable, as
-- PyTorch's Resize function; x:resize_ changes x in place).
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local check_tensor = U.check_tensor

local Layout = { __name = 'torch.layout' }
Layout.__index = Layout
Layout.__tostring = function(l) return 'torch.' .. l.name end
torch.strided = setmetatable({ name = 'strided' }, Layout)
--- torch.is_layout(v): whether v is a layout (torch.strided)
function torch.is_layout(v) return getmetatable(v) == Layout end

Tensor.__properties = Tensor.__properties or {}
local props = Tensor.__properties
function props.layout() return torch.strided end
function props.is_nested() return false end

--- x:is_set_to(y) -> whether x and y are the same view of the same storage (storage, offset, sizes,
-- strides and dtype all equal)
function Tensor.is_set_to(x, y)
  check_tensor(x, 'is_set_to')
  check_tensor(y, 'is_set_to', 'tensor')
  if x.dtype ~= y.dtype or x.device ~= y.device or x:storage_offset() ~= y:storage_offset() then return false end
  -- the storages' first elements
  if x:data_ptr() - x:storage_offset() * x:element_size() ~= y:data_ptr() - y:storage_offset() * y:element_size() then
    return false
  end
  if x:dim() ~= y:dim() then return false end
  local xs, ys = x:stride(), y:stride()
  for d = 1, x:dim() do
    if x:size(d) ~= y:size(d) or xs[d] ~= ys[d] then return false end
  end
  return true
end

local warned = {}
local function warn_once(op)
  if not warned[op] then
    warned[op] = true
    io.stderr:write('UserWarning: non-inplace ' .. op .. ' is deprecated\n')
  end
end

local function resize(op, x, sizes)
  local n = 1
  for i, s in ipairs(sizes) do
    if math.type(s) ~= 'integer' or s < 0 then
      error(string.format('%s: sizes must be non-negative integers, got %s at %d', op, tostring(s), i), 3)
    end
    n = n * s
  end
  if n ~= x:numel() then
    error(string.format("%s: requested resize to %s (%d elements in total), but the given tensor has a size of %s (%d "
      .. "elements). autograd's resize can only change the shape of a given tensor, while preserving the number of "
      .. 'elements.', op, table.concat(sizes, 'x'), n, table.concat(x.shape, 'x'), x:numel()), 3)
  end
  warn_once(op)
  return x:contiguous():view(sizes)
end

--- x:resize(sizes...) (numbers, or one table or torch.Size) -> x's elements in that shape (a view when
-- x is contiguous); as many elements as x
function Tensor.resize(x, ...)
  check_tensor(x, 'resize')
  local sizes = ...
  if type(sizes) ~= 'table' then sizes = { ... } end
  local s = {}
  for i, v in ipairs(sizes) do s[i] = U.as_int(v) end
  return resize('resize', x, s)
end

--- x:resize_as(y) -> x:resize(y.shape)
function Tensor.resize_as(x, y)
  check_tensor(x, 'resize_as')
  check_tensor(y, 'resize_as', 'the_template')
  return resize('resize_as', x, y.shape)
end

return torch
