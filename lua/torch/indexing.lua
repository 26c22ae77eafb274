-- Writing into tensors at indices, composed in Lua from the primitives (scatter, scatter_add,
-- index_add_, gather, sort), so that they work on every device and pass gradients: index_copy,
-- index_put, masked_scatter, scatter_reduce, and the embeddings select_scatter, slice_scatter
-- and diagonal_scatter (with slice_scatter's twin torch.slice_copy). Out of place as methods and
-- torch.* functions, in place as x:name_(...).
-- Indices are 1-based, as everywhere in lutorch.
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local check_tensor, norm_dim, both, in_place = U.check_tensor, U.norm_dim, U.both, U.in_place
local broadcast_shape = U.broadcast_shape
local A = require 'torch.advanced_index'
local positions, check_value_shape = A.positions, A.check_value_shape
local args = require('torch.options').args
local as_int = require('torch.composite').as_int

local function is_index_dtype(t) return t.dtype == torch.int64 or t.dtype == torch.int32 end

-- an error (at the user's call) unless every value of index is in 1..size
local function check_range(op, index, size, dim, level)
  if index:numel() == 0 then return end
  local lo, hi = index:min():item(), index:max():item()
  local bad = lo < 1 and lo or hi > size and hi or nil
  if bad then
    error(string.format('%s: index %d is out of bounds for dimension %d with size %d (indices are 1-based)', op, bad, dim,
      size), level or 3)
  end
end

-- x with the slices index[i] along dim replaced by src's slices i (scatter with the index spread
-- over src's shape: gradients go to src's slices and to x outside the written slices)
-- the 1-D index (one entry per slice of src along dim) as a scatter index of src's shape
local function spread(index, dim, src)
  local shape = {}
  for d = 1, src:dim() do shape[d] = d == dim and index:numel() or 1 end
  return index:reshape(shape):expand(src.shape)
end

local function copy_slices(x, dim, index, src)
  return x:scatter(dim, spread(index, dim, src), src)
end

-- ---- index_copy, index_put, masked_scatter ----

-- op's checks of x, dim, index (int64 or int32, at most 1-D, 1-based within x's size along dim)
-- and source (x's dtype, x's shape but index:numel() along dim) for the ops that take slices of
-- source to index's slices of x; returns them ready (0-D x and source as 1-D, the index int64)
-- and whether x was 0-D. Errors at `level` (3: the caller of the op's caller).
local function slice_args(op, x, dim, index, source, level)
  level = level or 3
  check_tensor(x, op)
  check_tensor(index, op, 'index')
  check_tensor(source, op, 'source')
  dim = norm_dim(dim, x:dim(), op)
  if not is_index_dtype(index) then
    error(op .. ': expected an int64 or int32 index tensor, got ' .. index.dtype.name, level)
  end
  if index:dim() > 1 then error(string.format('%s: index should have dimension 1 or 0 (got %d)', op, index:dim()), level) end
  if source.dtype ~= x.dtype then
    error(string.format('%s: self and source expected to have the same dtype, but got (self) %s and (source) %s', op,
      x.dtype.name, source.dtype.name), level)
  end
  local zero_d = x:dim() == 0
  if zero_d then x = x:reshape(1) end
  if source:dim() == 0 then source = source:reshape(1) end
  local n = index:numel()
  local ok = source:dim() == x:dim() and source:size(dim) == n
  for d = 1, x:dim() do
    if ok and d ~= dim and source:size(d) ~= x:size(d) then ok = false end
  end
  if not ok then
    error(string.format('%s: source of shape %s does not fit self of shape %s with %d indices along dimension %d', op,
      tostring(source.shape), tostring(x.shape), n, dim), level)
  end
  check_range(op, index, x:size(dim), dim, level + 1)
  return x, dim, index:long(), source, zero_d
end

--- x with its slices index[i] along dim (1-based) replaced by source's slices i; source has x's
--- shape but index:numel() along dim, and x's dtype
both('index_copy', function(x, dim, index, source)
  local zero_d
  x, dim, index, source, zero_d = slice_args('index_copy', x, dim, index, source)
  local r = copy_slices(x, dim, index, source)
  return zero_d and r:reshape({}) or r
end)
in_place('index_copy', Tensor.index_copy)

local index_reductions = { prod = true, mean = true, amax = true, amin = true }

--- x:index_reduce(dim, index, source, reduce, {include_self = true}): source's slices i reduced
--- into x's slices index[i] along dim (1-based) with 'prod', 'mean', 'amax' or 'amin', x's own
--- values taking part unless include_self is false (slices no index names keep x's values);
--- 'mean' of integers rounds down, as PyTorch. scatter_reduce's computation and gradients.
both('index_reduce', function(x, dim, index, source, reduce, o)
  local op = 'index_reduce'
  local include_self = U.opts_of(o, op, { 'include_self' }).include_self
  if include_self == nil then include_self = true end
  if not index_reductions[reduce] then
    error(op .. ': Expected reduce to be one of prod, mean, amax or amin but got ' .. tostring(reduce), 2)
  end
  if torch.is_tensor(x) and x.dtype == torch.bool then error(op .. ': not implemented for bool', 2) end
  local zero_d
  x, dim, index, source, zero_d = slice_args(op, x, dim, index, source)
  local r = x:scatter_reduce(dim, spread(index, dim, source), source, reduce, { include_self = include_self })
  return zero_d and r:reshape({}) or r
end)
in_place('index_reduce', Tensor.index_reduce)

--- torch.put(x, index, source, accumulate = false) / x:put_(...): x with its elements at the flat
--- (row-major) positions index (1-based; -1 is the last element) replaced by source's elements in
--- order, or, with accumulate, source's elements added there (repeated positions add up)
both('put', function(x, index, source, accumulate)
  check_tensor(x, 'put')
  check_tensor(index, 'put', 'index')
  check_tensor(source, 'put', 'source')
  if type(accumulate) == 'table' then accumulate = args('put', { accumulate }, { 'accumulate' }) end
  if index.dtype ~= torch.int64 then error('put: expected an int64 index tensor, got ' .. index.dtype.name, 2) end
  if source.dtype ~= x.dtype then
    error(string.format('put: self and source expected to have the same dtype, but got (self) %s and (source) %s',
      x.dtype.name, source.dtype.name), 2)
  end
  if source:numel() ~= index:numel() then
    error(string.format('put: expected source and index to have the same number of elements, but got %d and %d',
      source:numel(), index:numel()), 2)
  end
  local n, at = x:numel(), index:reshape(-1)
  if at:numel() > 0 then
    local lo, hi = at:min():item(), at:max():item()
    local bad = (lo < -n and lo) or (hi > n and hi) or (at:eq(0):any():item() and 0) or nil
    if bad then
      error(string.format('put: index %d is out of range for a tensor of %d elements (indices are 1 to %d, or -%d to -1 '
        .. 'from the end)', bad, n, n, n), 2)
    end
  end
  at = torch.where(at:lt(0), at + (n + 1), at):to(x.device)
  local flat, src = x:reshape(-1), source:reshape(-1)
  local r = accumulate and flat:index_add(1, at, src) or flat:scatter(1, at, src)
  return r:reshape(x.shape)
end)
in_place('put', Tensor.put)

-- a k-dim mask as k index tensors (its true positions), for x's dims from `first`
local function mask_indices(op, mask, x, first, out)
  for d = 1, mask:dim() do
    if first + d - 1 > x:dim() or mask:size(d) ~= x:size(first + d - 1) then
      error(string.format('%s: the shape of the mask %s does not match the shape of the indexed tensor %s starting at dimension %d',
        op, tostring(mask.shape), tostring(x.shape), first), 4)
    end
  end
  local nz = mask:nonzero()
  for d = 1, mask:dim() do out[#out + 1] = nz:select(2, d) end
end

--- x with x[indices] = values (PyTorch's advanced indexing): indices is a table of index tensors
--- for x's leading dims (1-based, negative from the end, broadcast together), where a bool mask
--- of k dims stands for k of them; values (a tensor of x's dtype or a number) broadcast to the
--- indexed shape (the index shape, then x's remaining dims). With accumulate, values are added,
--- repeated positions summed; without, a repeated position takes one of its values.
local function index_put(x, indices, values, accumulate, op)
  check_tensor(x, op)
  if type(indices) ~= 'table' or torch.is_tensor(indices) then
    error(op .. ': indices must be a table of tensors, got ' .. (torch.is_tensor(indices) and 'a tensor' or type(indices)), 3)
  end
  local idx = {}
  for i, t in ipairs(indices) do
    check_tensor(t, op, 'indices[' .. i .. ']')
    if t.dtype == torch.bool or t.dtype == torch.uint8 then
      mask_indices(op, t:bool(), x, #idx + 1, idx)
    elseif is_index_dtype(t) then
      idx[#idx + 1] = t:long()
    else
      error(string.format('%s: tensors used as indices must be int64, int32 or bool tensors, got %s', op, t.dtype.name), 3)
    end
  end
  if #idx == 0 then error(op .. ': expected at least one index tensor', 3) end
  if #idx > x:dim() then
    error(string.format('%s: too many indices for tensor of dimension %d (got %d)', op, x:dim(), #idx), 3)
  end
  if type(values) == 'number' or type(values) == 'boolean' then
    values = torch.full({}, values, { dtype = x.dtype, device = x.device })
  end
  check_tensor(values, op, 'values')
  if values.dtype ~= x.dtype then
    error(string.format('%s: the values (%s) must have the dtype of the tensor (%s)', op, values.dtype.name, x.dtype.name), 3)
  end
  local dims = {}
  for d = 1, #idx do dims[d] = d end
  local lin, bshape, rows = positions(op, x, idx, dims, dims, 4)
  local target, rest = {}, {}
  for _, s in ipairs(bshape) do target[#target + 1] = s end
  for d = #idx + 1, x:dim() do
    rest[#rest + 1] = x:size(d)
    target[#target + 1] = x:size(d)
  end
  local tshape = setmetatable(target, torch.Size)
  check_value_shape(op, values, tshape, 4)
  local n = lin:numel()
  local flat = x:reshape({ rows, table.unpack(rest) })
  local v = values:expand(tshape):reshape({ n, table.unpack(rest) })
  local at = lin:reshape(n) + 1
  local r
  if accumulate then r = flat:index_add(1, at, v) else r = copy_slices(flat, 1, at, v) end
  return r:reshape(x.shape)
end
both('index_put', function(x, indices, values, accumulate) return (index_put(x, indices, values, accumulate, 'index_put')) end)
in_place('index_put', Tensor.index_put)

--- x (broadcast with mask) with the positions where mask is true filled, in row-major order, by
--- the first elements of source (of x's dtype; it needs at least as many as the mask has trues)
local function masked_scatter(x, mask, source, op)
  check_tensor(x, op)
  check_tensor(mask, op, 'mask')
  check_tensor(source, op, 'source')
  if mask.dtype ~= torch.bool and mask.dtype ~= torch.uint8 then
    error(op .. ': expected a bool mask, got ' .. mask.dtype.name, 3)
  end
  if source.dtype ~= x.dtype then
    error(string.format('%s: expected self and source to have same dtypes but got %s and %s', op, x.dtype.name,
      source.dtype.name), 3)
  end
  local shape = broadcast_shape({ x.shape, mask.shape }, op, 4)
  local flat = x:expand(shape):reshape(-1)
  local at = mask:bool():expand(shape):reshape(-1):nonzero():reshape(-1)
  local n = at:numel()
  if source:numel() < n then
    error(string.format('%s: Number of elements of source < number of ones in mask (%d < %d)', op, source:numel(), n), 3)
  end
  return flat:scatter(1, at, source:reshape(-1):narrow(1, 1, n)):reshape(shape)
end
both('masked_scatter', function(x, mask, source) return (masked_scatter(x, mask, source, 'masked_scatter')) end)
in_place('masked_scatter', Tensor.masked_scatter)

-- ---- scatter_reduce ----

-- the flat 0-based positions in x (contiguous, row-major) that the elements of index address:
-- index's value along dim, the element's own coordinates along the other dims
local function target_positions(x, dim, index)
  local stride, pos = 1, nil
  for d = x:dim(), 1, -1 do
    local c
    if d == dim then
      c = index - 1
    else
      local shape = {}
      for e = 1, index:dim() do shape[e] = e == d and index:size(d) or 1 end
      c = torch.arange(0, index:size(d), { dtype = torch.int64, device = x.device }):reshape(shape)
    end
    pos = pos and pos + c * stride or c * stride
    stride = stride * x:size(d)
  end
  return pos:expand(index.shape):reshape(-1)
end

-- the reduction (prod, amax or amin) of src's elements into x's positions, with x's own values when
-- include_self: sorted by position (stable), reduced within each run of one position by a
-- segmented scan in log2(n) steps, the last of each run scattered into x (positions unique)
local combine = { prod = function(a, b) return a * b end, amax = torch.maximum, amin = torch.minimum }
local function segment_reduce(x, dim, index, src, reduce, include_self)
  if index:numel() == 0 then return x:clone() end
  local pos, vals = target_positions(x, dim, index), src:reshape(-1)
  if include_self then
    pos = torch.cat({ torch.arange(0, x:numel(), { dtype = torch.int64, device = x.device }), pos })
    vals = torch.cat({ x:reshape(-1), vals })
  end
  local order = pos:argsort()
  pos, vals = pos:gather(1, order), vals:gather(1, order)
  local n, f = pos:numel(), combine[reduce]
  local shift = 1
  while shift < n do
    local same = pos:narrow(1, shift + 1, n - shift):eq(pos:narrow(1, 1, n - shift))
    local tail = vals:narrow(1, shift + 1, n - shift)
    local merged = torch.where(same, f(tail, vals:narrow(1, 1, n - shift)), tail)
    vals = torch.cat({ vals:narrow(1, 1, shift), merged })
    shift = shift * 2
  end
  local last = torch.cat({ pos:narrow(1, 2, n - 1):ne(pos:narrow(1, 1, n - 1)),
    torch.ones(1, { dtype = torch.bool, device = x.device }) })
  local at = pos:masked_select(last) + 1
  return x:reshape(-1):clone():scatter(1, at, vals:masked_select(last)):reshape(x.shape)
end

-- prod, amax and amin as an autograd Function with PyTorch's gradients: amax/amin share a
-- position's gradient evenly among the values equal to the result (x's own included, as PyTorch
-- counts it even without include_self); prod divides out each factor (zeros handled apart)
local ScatterReduce = torch.autograd.Function:extend('ScatterReduceBackward0')
function ScatterReduce.forward(ctx, x, src, dim, index, reduce, include_self)
  local r = segment_reduce(x, dim, index, src, reduce, include_self)
  ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
  ctx:save_for_backward(x, src, index, r)
  return r
end
function ScatterReduce.backward(ctx, g)
  local x, src, index, r = table.unpack(ctx.saved_tensors)
  local dim, reduce, include_self = ctx.dim, ctx.reduce, ctx.include_self
  local gx, gs
  if reduce == 'prod' then
    local x1 = x:masked_fill(x:eq(0), 1)
    gx = g * segment_reduce(x1, dim, index, src, 'prod', include_self) / x1
    local zero = src:eq(0)
    local zeros = torch.zeros_like(x):scatter_add(dim, index, zero:to(x.dtype)):gather(dim, index)
    local single = zero:logical_and(zeros:eq(1))
    local without = segment_reduce(x, dim, index, src:masked_fill(single, 1), 'prod', include_self)
    gs = torch.where(single, (g * without):gather(dim, index), (g * r):gather(dim, index) / src:masked_fill(zero, 1))
  else
    local value = r:gather(dim, index)
    local self_is = x:eq(r):to(x.dtype)
    local src_is = src:eq(value):to(x.dtype)
    local share = g / self_is:scatter_add(dim, index, src_is)
    gx = self_is * share
    gs = src_is * share:gather(dim, index)
  end
  if not include_self then gx = gx:scatter(dim, index, 0) end
  return gx, gs
end

local reductions = { sum = true, prod = true, mean = true, amax = true, amin = true }

--- x with src's elements reduced into the positions index gives along dim (1-based), as
--- x:scatter_add does for 'sum': reduce is 'sum', 'prod', 'mean', 'amax' or 'amin';
--- {include_self = true}: x's own values take part (false: only src's, where any arrive). 'mean'
--- divides by the count (floor division for integer dtypes, as PyTorch). Gradients for every
--- reduction, PyTorch's.
both('scatter_reduce', function(x, dim, index, src, reduce, o)
  local op = 'scatter_reduce'
  check_tensor(x, op)
  check_tensor(index, op, 'index')
  check_tensor(src, op, 'src')
  local include_self = U.opts_of(o, op, { 'include_self' }).include_self
  if include_self == nil then include_self = true end
  if not reductions[reduce] then
    error(op .. ": reduce argument must be either 'sum', 'prod', 'mean', 'amax' or 'amin', got " .. tostring(reduce), 2)
  end
  dim = norm_dim(dim, x:dim(), op)
  if index.dtype ~= torch.int64 then error(op .. ': expected an int64 index tensor, got ' .. index.dtype.name, 2) end
  if src.dtype ~= x.dtype then
    error(string.format('%s: expected self.dtype to be equal to src.dtype, got %s and %s', op, x.dtype.name, src.dtype.name), 2)
  end
  local zero_d = x:dim() == 0
  local function shaped(r) return zero_d and r:reshape({}) or r end
  if x:dim() == 0 then x, index, src = x:reshape(1), index:reshape(-1), src:reshape(-1) end
  if index:dim() ~= x:dim() or src:dim() ~= x:dim() then
    error(string.format('%s: index (%d-D) and src (%d-D) must have as many dimensions as self (%d-D)', op, index:dim(),
      src:dim(), x:dim()), 2)
  end
  for d = 1, x:dim() do
    if index:size(d) > src:size(d) or (d ~= dim and index:size(d) > x:size(d)) then
      error(string.format('%s: expected index %s to be smaller than self %s apart from dimension %d and to be smaller than src %s',
        op, tostring(index.shape), tostring(x.shape), dim, tostring(src.shape)), 2)
    end
  end
  check_range(op, index, x:size(dim), dim)
  -- src's elements that index addresses
  for d = 1, src:dim() do
    if src:size(d) ~= index:size(d) then src = src:narrow(d, 1, index:size(d)) end
  end
  if reduce == 'sum' or reduce == 'mean' then
    local base = include_self and x or x:scatter(dim, index, 0)
    local total = base:scatter_add(dim, index, src)
    if reduce == 'sum' then return shaped(total) end
    local count = (include_self and torch.ones_like(x) or torch.zeros_like(x)):scatter_add(dim, index, torch.ones_like(src))
    count = torch.where(count:eq(0), torch.ones_like(count), count)
    if x.dtype.is_floating_point then return shaped(total / count) end
    return shaped(total:floor_divide(count))
  end
  return shaped(ScatterReduce.apply(x, src, dim, index, reduce, include_self))
end)
in_place('scatter_reduce', Tensor.scatter_reduce)

-- ---- embeddings: src written into a slice, a range or a diagonal ----

-- src (cast to x's dtype) after a check that its shape is the one expected
local function fitting(op, src, x, expected)
  check_tensor(src, op, 'src')
  if src.shape ~= expected then
    error(string.format('%s: expected src to have a size equal to the slice of self. src size = %s, slice size = %s', op,
      tostring(src.shape), tostring(expected)), 3)
  end
  return src:to(x.dtype)
end

--- x with the slice at `index` (1-based, negative from the end) of dim replaced by src
both('select_scatter', function(x, src, dim, index)
  check_tensor(x, 'select_scatter')
  if x:dim() == 0 then error('select_scatter: cannot select from a 0-D tensor', 2) end
  dim = norm_dim(dim, x:dim(), 'select_scatter')
  local size = x:size(dim)
  index = as_int(index)
  if math.type(index) ~= 'integer' or index == 0 or index < -size or index > size then
    error(string.format('select_scatter: index %s is out of range for dimension %d of size %d (1-based, negative from the end)',
      tostring(index), dim, size), 2)
  end
  if index < 0 then index = index + size + 1 end
  src = fitting('select_scatter', src, x, x:select(dim, index).shape)
  return copy_slices(x, dim, torch.tensor({ index }, { device = x.device }), src:unsqueeze(dim))
end)

--- x with the elements start, start + step, ... up to end along dim (default 1) replaced by src:
--- start and end are 1-based and inclusive (negative from the end; defaults the first and the last,
--- bounds past the ends clamped), as a {first, last} range in x[{...}]; also as an options table
--- {dim, start, end, step}
-- op's slice of x from its arguments (dim = 1, start, end, step = 1; start and end 1-based and
-- inclusive, negative from the end, clamped to the dim): the dim, its 1-based positions (nil for
-- none) and the slice's shape
local function slice_range(op, x, ...)
  local dim, first, last, step = args(op, { ... }, { 'dim', 'start', 'end', 'step' }, { 1, nil, nil, 1 })
  if x:dim() == 0 then error(op .. ': cannot slice a 0-D tensor', 3) end
  dim = norm_dim(dim, x:dim(), op)
  local size = x:size(dim)
  first, last, step = as_int(first), as_int(last), as_int(step)
  for _, v in ipairs { first or 1, last or -1, step } do
    if math.type(v) ~= 'integer' then error(op .. ': start, end and step must be integers, got ' .. tostring(v), 3) end
  end
  if step <= 0 then error(op .. ': slice step must be positive, got ' .. step, 3) end
  first, last = first or 1, last or size
  if first < 0 then first = first + size + 1 end
  if last < 0 then last = last + size + 1 end
  first, last = math.max(first, 1), math.min(last, size)
  local n = last >= first and (last - first) // step + 1 or 0
  local shape = x.shape
  shape[dim] = n
  local at = n > 0 and torch.arange(0, n, { dtype = torch.int64, device = x.device }) * step + first or nil
  return dim, at, shape
end

-- (naming: their errors raised at the user's call)
both('slice_scatter', U.naming('slice_scatter', function(x, src, ...)
  local op = 'slice_scatter'
  check_tensor(x, op)
  local dim, at, expected = slice_range(op, x, ...)
  src = fitting(op, src, x, expected)
  if at == nil then return x:clone() end
  return copy_slices(x, dim, at, src)
end))

--- x's slice along dim (dim = 1, start, end, step = 1: 1-based and inclusive, as slice_scatter's)
--- in a tensor of its own (PyTorch's slice_copy)
torch.slice_copy = U.naming('slice_copy', function(x, ...)
  check_tensor(x, 'slice_copy')
  local dim, at, shape = slice_range('slice_copy', x, ...)
  if at == nil then return torch.empty(shape, { dtype = x.dtype, device = x.device }) end
  return x:index_select(dim, at)
end)

--- x with the diagonal of dims dim1 and dim2 (offset above the main one when positive), the one
--- x:diagonal(offset, dim1, dim2) reads, replaced by src; also as an options table
--- {offset, dim1, dim2}
both('diagonal_scatter', function(x, src, ...)
  local op = 'diagonal_scatter'
  check_tensor(x, op)
  local offset, dim1, dim2 = args(op, { ... }, { 'offset', 'dim1', 'dim2' }, { 0, 1, 2 })
  local diag = x:diagonal(offset, dim1, dim2)
  src = fitting(op, src, x, diag.shape)
  dim1, dim2 = norm_dim(dim1, x:dim(), op, 'dim1'), norm_dim(dim2, x:dim(), op, 'dim2')
  local rows, cols = x:size(dim1), x:size(dim2)
  local n = diag:size(-1)
  local m = x:movedim({ dim1, dim2 }, { -2, -1 })
  local shape = {}
  for i = 1, m:dim() - 2 do shape[i] = m:size(i) end
  shape[#shape + 1] = rows * cols
  local flat = m:reshape(shape)
  local first = offset >= 0 and offset or -offset * cols -- 0-based
  local at = torch.arange(0, n, { dtype = torch.int64, device = x.device }) * (cols + 1) + (first + 1)
  local ishape = {}
  for i = 1, src:dim() do ishape[i] = i == src:dim() and n or 1 end
  local r = flat:scatter(flat:dim(), at:reshape(ishape):expand(src.shape), src)
  return r:reshape(m.shape):movedim({ -2, -1 }, { dim1, dim2 })
end)

-- ---- scatter with a reduction, where with a condition alone ----

local scatter_plain, scatter_plain_ = Tensor.scatter, Tensor.scatter_
local scatter_modes = { add = 'sum', multiply = 'prod' }

-- scatter's arguments with a reduce option (a string or {reduce = ...}) as scatter_reduce's; nil
-- where there is none
local function scatter_reduce_args(op, x, dim, index, src, o)
  local reduce = type(o) == 'table' and U.opts_of(o, op, { 'reduce' }).reduce or o
  if reduce == nil then return nil end
  if not scatter_modes[reduce] then error(op .. ": reduce argument must be either 'add' or 'multiply', got " .. tostring(reduce), 3) end
  check_tensor(x, op)
  check_tensor(index, op, 'index')
  if not torch.is_tensor(src) then src = torch.full(index.shape, src, { dtype = x.dtype, device = x.device }) end
  return dim, index, src, scatter_modes[reduce]
end

--- x:scatter(dim, index, src, {reduce = 'add' | 'multiply'}) (also reduce as a string): src's
--- elements (or the number src) added to or multiplied into x's at the positions index gives
--- along dim, repeated positions all taking part; without reduce, the core's scatter
local function scatter(x, dim, index, src, o, ...)
  if o == nil then return scatter_plain(x, dim, index, src, ...) end
  local d, i, s, r = scatter_reduce_args('scatter', x, dim, index, src, o)
  return x:scatter_reduce(d, i, s, r)
end
local function scatter_(x, dim, index, src, o, ...)
  if o == nil then return scatter_plain_(x, dim, index, src, ...) end
  local d, i, s, r = scatter_reduce_args('scatter_', x, dim, index, src, o)
  return x:scatter_reduce_(d, i, s, r)
end
Tensor.scatter, torch.scatter, Tensor.scatter_ = scatter, scatter, scatter_
