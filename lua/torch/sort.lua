-- Sorting: x:sort, x:argsort, x:topk and their torch.* forms, PyTorch's positional arguments or an
-- options table in their place. The order and the values come from torch._topk (core/sort.c:
-- stable, NaN as the largest value, 1-based positions; k of n selected without sorting all n);
-- when autograd needs them, the values are x:gather(dim, order), which passes gradients back to
-- the selected elements.
local torch = require 'torch'
local Tensor = torch.Tensor

-- the arguments after x: positional in PyTorch's order, or one table of them by name
local args = require('torch.options').args
local as_int, naming = require('torch.composite').as_int, require('torch.composite').naming

local function check_tensor(x, op)
  if not torch.is_tensor(x) then error(string.format('%s: expected a tensor, got %s', op, type(x)), 3) end
end

local function check_dim(dim, op)
  dim = as_int(dim)
  if math.type(dim) ~= 'integer' then error(string.format('%s: dim must be an integer, got %s', op, tostring(dim)), 3) end
end

-- the values and 1-based positions of the first k (nil: all) along dim, largest first when `largest`
local function first_k(x, k, dim, largest)
  local values, order = torch._topk(x, k, dim, largest)
  if x.requires_grad and torch.is_grad_enabled() then
    values = x:dim() == 0 and x:clone() or x:gather(dim, order)
  end
  return values, order
end

--- x:sort(dim = -1, descending = false) -> values, indices (1-based): stable, NaN as the largest
function Tensor.sort(x, ...)
  check_tensor(x, 'sort')
  -- stable is accepted for PyTorch's signature: the order is always stable
  local dim, descending = args('sort', { ... }, { 'dim', 'descending', 'stable' }, { -1, false, false })
  check_dim(dim, 'sort')
  return first_k(x, nil, dim, descending)
end

--- x:argsort(dim = -1, descending = false) -> the 1-based indices that sort x along dim
function Tensor.argsort(x, ...)
  check_tensor(x, 'argsort')
  -- stable is accepted for PyTorch's signature: the order is always stable
  local dim, descending = args('argsort', { ... }, { 'dim', 'descending', 'stable' }, { -1, false, false })
  check_dim(dim, 'argsort')
  return naming('argsort', torch._argsort)(x, dim, descending)
end

--- x:topk(k, dim = -1, largest = true, sorted = true) -> values, indices (1-based) of the k largest
-- (or smallest) elements along dim, largest first (smallest first)
function Tensor.topk(x, k, ...)
  check_tensor(x, 'topk')
  local dim, largest, sorted = args('topk', { ... }, { 'dim', 'largest', 'sorted' }, { -1, true, true })
  check_dim(dim, 'topk')
  k = as_int(k)
  if math.type(k) ~= 'integer' then error('topk: k must be an integer, got ' .. tostring(k), 2) end
  local n = x:dim() == 0 and 1 or naming('topk', x.size)(x, dim)
  if k < 0 or k > n then error(string.format('topk: k (%d) is out of range for dimension %d of size %d', k, dim, n), 2) end
  return first_k(x, k, dim, largest)
end

torch.sort = Tensor.sort
torch.argsort = Tensor.argsort
torch.topk = Tensor.topk
