-- Rearranging and masking tensors: flip, roll, tril, triu (PyTorch's names and arguments, dims
-- 1-based), composed of index_select and masked_fill, so autograd and every device come with them.
local torch = require 'torch'
local as_int = require('torch.composite').as_int
local Tensor = torch.Tensor

local function check_tensor(x, op)
  if not torch.is_tensor(x) then error(string.format('%s: expected a tensor, got %s', op, type(x)), 3) end
end

-- dim (1-based or negative) as 1-based, checked against x
local function dim_of(x, dim, op)
  local n = x:dim()
  dim = as_int(dim)
  if math.type(dim) ~= 'integer' or dim == 0 or dim > n or dim < -n then
    error(string.format('%s: dimension %s is out of range for a %d-D tensor', op, tostring(dim), n), 3)
  end
  return dim < 0 and n + dim + 1 or dim
end

-- a number or an array of numbers as an array
local function list(v)
  if type(v) == 'table' then return v end
  return { v }
end

--- x:flip(dims) -> the elements in reverse order along each of dims (a number or an array); a new
--- tensor, as PyTorch's, even where nothing moves (a 0-D x takes dim 1 or -1)
function Tensor.flip(x, dims)
  check_tensor(x, 'flip')
  if dims == nil then error('flip: dims is required', 2) end
  local seen, r = {}, x
  for _, d in ipairs(list(dims)) do
    d = dim_of(x:dim() == 0 and x:reshape(1) or x, d, 'flip')
    if seen[d] then error(string.format('flip: dim %d appears multiple times in the list of dims', d), 2) end
    seen[d] = true
    local n = x:dim() == 0 and 1 or x:size(d)
    if n > 1 then r = r:index_select(d, torch.arange(n, 0, -1, { device = x.device })) end
  end
  return rawequal(r, x) and x:clone() or r
end

--- x:roll(shifts, dims) -> the elements shifted cyclically by shifts[k] along dims[k]; without
-- dims, over the flattened tensor, shape kept; a new tensor, as PyTorch's, even where nothing moves
function Tensor.roll(x, shifts, dims)
  check_tensor(x, 'roll')
  shifts = list(shifts)
  if dims == nil then
    if #shifts ~= 1 then error('roll: shifts must have one element when dims is not given', 2) end
    return x:reshape(-1):roll(shifts, 1):view(x.shape)
  end
  dims = list(dims)
  if #shifts ~= #dims then
    error(string.format('roll: shifts and dimensions must align. shifts: %d, dims: %d', #shifts, #dims), 2)
  end
  local r = x
  for k, d in ipairs(dims) do
    d = dim_of(x, d, 'roll')
    local n, s = x:size(d), shifts[k]
    s = as_int(s)
    if math.type(s) ~= 'integer' then error('roll: shifts must be integers, got ' .. tostring(s), 2) end
    if n > 0 and s % n ~= 0 then
      -- element i of the result is element (i - s) mod n of x: the last s of x, then the first
      -- n - s (two block copies; an index_select of the last dim gathered element by element)
      local k = s % n
      r = torch.cat({ r:narrow(d, n - k + 1, k), r:narrow(d, 1, n - k) }, d)
    end
  end
  return rawequal(r, x) and x:clone() or r
end

-- the mask of the last two dims kept by tril (keep_lower) or triu, for a matrix of m x n
local function tri_mask(x, diagonal, keep_lower, op)
  if x:dim() < 2 then error(string.format('%s: input tensor must have at least 2 dimensions', op), 3) end
  diagonal = as_int(diagonal)
  if math.type(diagonal) ~= 'integer' then error(string.format('%s: diagonal must be an integer, got %s', op, tostring(diagonal)), 3) end
  local m, n = x:size(-2), x:size(-1)
  local offset = torch.arange(1, n + 1, { device = x.device }):view(1, n) - torch.arange(1, m + 1, { device = x.device }):view(m, 1)
  if keep_lower then return offset:le(diagonal) end
  return offset:ge(diagonal)
end

--- x:tril(diagonal = 0) -> x with the elements above the diagonal-th diagonal of its last two dims
-- zeroed (diagonal > 0 keeps more above, < 0 fewer); x:triu likewise below; tril_ and triu_ in place
for _, v in ipairs { { 'tril', true }, { 'triu', false } } do
  local name, lower = v[1], v[2]
  Tensor[name] = function(x, diagonal)
    check_tensor(x, name)
    return x:masked_fill(tri_mask(x, diagonal or 0, lower, name):logical_not(), 0)
  end
  Tensor[name .. '_'] = function(x, diagonal)
    check_tensor(x, name .. '_')
    local bad = x.requires_grad and x:_inplace_error(name .. '_')
    if bad then error(bad, 2) end
    return x:masked_fill_(tri_mask(x, diagonal or 0, lower, name .. '_'):logical_not(), 0)
  end
end

torch.flip, torch.roll, torch.tril, torch.triu = Tensor.flip, Tensor.roll, Tensor.tril, Tensor.triu
