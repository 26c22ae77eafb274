-- PyTorch's advanced indexing in lutorch's table form: x[{ {}, idx }], x[{ mask, '...' }],
-- x[{ i1, {}, i2 }] = v. For a read, the binding (bindings/tensor.c) applies the basic forms of the
-- key (numbers, ranges, '...', torch.newaxis) as a view and hands the index tensors here, each with
-- the dim of that view it indexes; they are gathered with permute, reshape and index_select. A write
-- with index tensors reads the same key from a tensor of x's flat positions and put_s the value
-- there (a write with a basic key is the binding's, through the view). Composed of existing ops,
-- both work on every device and pass gradients.
-- PyTorch's rules: index tensors (int64/int32 values, 1-based, negative from the end; a bool mask
-- of k dims stands for the k index tensors of its true positions) are broadcast together; their
-- result dims replace theirs where they are adjacent in the key, and come first otherwise.
local torch = require 'torch'
local Tensor = torch.Tensor
local broadcast_shape = require('torch.composite').broadcast_shape

local M = {}

--- the 0-based row-major positions, over x's dims dims[1..k] merged in that order, of the index
--- tensors idx[1..k] (1-based, negative from the end, broadcast together), as an int64 tensor of
--- their broadcast shape; also that shape and the number of merged rows. A value out of range is
--- an error naming names[k] as its dimension (raised at `level`).
function M.positions(op, x, idx, dims, names, level)
  local shapes = {}
  for k, t in ipairs(idx) do shapes[k] = t.shape end
  local bshape = broadcast_shape(shapes, op, level > 0 and level + 1 or 0)
  local lin, rows = nil, 1
  for k = #idx, 1, -1 do
    local size, i = x:size(dims[k]), idx[k]
    local bad = i:eq(0):logical_or(i:lt(-size)):logical_or(i:gt(size))
    if bad:any():item() then
      error(string.format('%s: index %d is out of bounds for dimension %d with size %d (indices are 1-based, negative from the end)',
        op, i:masked_select(bad)[1], names[k], size), level)
    end
    i = torch.where(i:lt(0), i + size, i - 1)
    lin = lin and lin + i * rows or i * rows
    rows = rows * size
  end
  return lin:expand(bshape), bshape, rows
end

--- an error (at `level`) unless the value tensor broadcasts to the indexing result's shape
function M.check_value_shape(op, value, shape, level)
  local fits = value:dim() <= #shape
  for d = 1, value:dim() do
    local s = value:size(d)
    if fits and s ~= 1 and s ~= shape[#shape - value:dim() + d] then fits = false end
  end
  if not fits then
    error(string.format('%s: shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s',
      op, tostring(value.shape), tostring(shape)), level)
  end
end

-- the index tensors of the records {tensor, view dim, tensor dim} as int64 tensors on v's device
-- (masks as their true positions), with the view dims they index and the tensor dims to name
local function index_tensors(op, v, records)
  local idx, dims, names = {}, {}, {}
  local function add(t, d, name) idx[#idx + 1], dims[#dims + 1], names[#names + 1] = t, d, name end
  for _, r in ipairs(records) do
    local t, d, name = r[1], r[2], r[3]
    if t.dtype == torch.bool then
      local m = t:dim() == 0 and t:reshape(1) or t
      for j = 1, m:dim() do
        if m:size(j) ~= v:size(d + j - 1) then
          local covered = {}
          for c = 1, m:dim() do covered[c] = v:size(d + c - 1) end
          error(string.format('%s: the mask of shape %s does not match the sizes %s of the dimensions %d to %d it covers', op,
            tostring(t.shape), tostring(setmetatable(covered, torch.Size)), name, name + m:dim() - 1), 0)
        end
      end
      local nz = m:to(v.device):nonzero()
      for j = 1, m:dim() do add(nz:select(2, j), d + j - 1, name + j - 1) end
    elseif t.dtype == torch.int64 or t.dtype == torch.int32 then
      add(t:to(v.device):long(), d, name)
    else
      error(string.format('%s: tensors used as indices must be int64, int32 or bool, got %s (for dimension %d)', op,
        t.dtype.name, name), 0)
    end
  end
  return idx, dims, names
end

-- the permutation of v's dims that puts the indexed dims first (in order), then the others
local function indexed_first(v, dims)
  local perm, taken = {}, {}
  for k, d in ipairs(dims) do perm[k], taken[d] = d, true end
  for d = 1, v:dim() do if not taken[d] then perm[#perm + 1] = d end end
  return perm
end

-- the permutation that moves the nb leading dims of an n-dim tensor to start at dim `at`
local function leading_to(nb, at, n)
  local perm = {}
  for d = 1, at - 1 do perm[#perm + 1] = nb + d end
  for d = 1, nb do perm[#perm + 1] = d end
  for d = nb + at, n do perm[#perm + 1] = d end
  return perm
end

-- where the indexed dims' result goes: their first dim when they are adjacent, else 1
local function result_at(dims)
  return dims[#dims] - dims[1] == #dims - 1 and dims[1] or 1
end

--- x[{...}] with index tensors in the key: v is the view of the basic forms, records the index
--- tensors (see the binding); a new tensor (a copy), gradients passing back (duplicates add up)
function Tensor._index_advanced(v, records)
  local idx, dims, names = index_tensors('index', v, records)
  local lin, bshape, rows = M.positions('index', v, idx, dims, names, 0)
  local at = result_at(dims)
  if #idx == 1 then -- one index tensor: index_select along its dim, its shape in place
    local d, shape = dims[1], {}
    for k = 1, d - 1 do shape[#shape + 1] = v:size(k) end
    for _, s in ipairs(bshape) do shape[#shape + 1] = s end
    for k = d + 1, v:dim() do shape[#shape + 1] = v:size(k) end
    return v:index_select(d, lin:reshape(-1) + 1):reshape(shape)
  end
  local xp = v:permute(indexed_first(v, dims))
  local flat, shape = { rows }, {}
  for _, s in ipairs(bshape) do shape[#shape + 1] = s end
  for k = #dims + 1, xp:dim() do
    flat[#flat + 1] = xp:size(k)
    shape[#shape + 1] = xp:size(k)
  end
  local r = xp:reshape(flat):index_select(1, lin:reshape(-1) + 1):reshape(shape)
  if at > 1 then r = r:permute(leading_to(#bshape, at, #shape)) end
  return r
end

-- x[key] = value: x's elements at the flat positions that key selects from a tensor of them (a
-- pass over all of x, as put_ and the index_put_ it stands for are)
local function put(x, key, value)
  local at = torch.arange(1, x:numel() + 1, { device = x.device }):reshape(x.shape)[key]
  if type(at) == 'number' then at = torch.full({}, at, { dtype = torch.int64, device = x.device }) end
  if torch.is_tensor(value) then
    while value:dim() > at:dim() and value:size(1) == 1 do value = value:select(1, 1) end -- as PyTorch
    M.check_value_shape('index assignment', value, at.shape, 0)
    value = value:to(x.dtype):to(x.device):expand(at.shape)
  elseif type(value) == 'number' or type(value) == 'boolean' then
    value = torch.full(at.shape, value, { dtype = x.dtype, device = x.device })
  else
    error('index assignment: the value must be a number, a boolean or a tensor, got ' .. type(value), 0)
  end
  x:put_(at, value)
end

--- x[key] = value for a key with index tensors (or a basic key too long for the binding to record
--- under autograd): the elements of x that x[key] reads take value (a number, a boolean or a
--- tensor broadcast to x[key]'s shape), by put_ at their flat positions, so that the write is
--- recorded on x itself (not on a view of it); repeated positions take one of their values
function Tensor._index_put(x, key, value)
  local ok, err = pcall(put, x, key, value)
  if ok then return end
  local msg = tostring(err):gsub('^[^\n]-:%d+: ', '', 1) -- raised again naming the assignment
  error((msg:gsub('^index: ', 'index assignment: '):gsub('^put_: ', 'index assignment: ')))
end

return M
