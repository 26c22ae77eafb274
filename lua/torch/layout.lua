-- A tensor's layout and identity: torch.strided (the one layout lutorch has: sizes and strides over
-- a storage), x.layout, x.is_nested (false: lutorch has no nested tensors), x:is_set_to(y) (the
-- same storage, offset, sizes and strides), and Torch7's in-place x:resize(sizes) and x:resize_as(y).
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

-- x:resize(sizes...) and x:resize_as(y) are Torch7's, in place: x:resize_(sizes) and
-- x:resize_as_(y), returning x (growing moves x to a larger storage, its old elements first), as
-- Torch7 scripts use them to size buffers. PyTorch's deprecated out-of-place forms (as many
-- elements, a new tensor) are left out: lutorch's legacy forms follow Torch7 where the two disagree,
-- as x:apply and x:map do (lua/torch/legacy.lua). Torch7's resizeAs is resize_as.
function Tensor.resize(x, ...)
  check_tensor(x, 'resize')
  return x:resize_(...)
end

function Tensor.resize_as(x, y)
  check_tensor(x, 'resize_as')
  return x:resize_as_(y)
end
Tensor.resizeAs = Tensor.resize_as
