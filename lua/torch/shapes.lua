-- Shape functions composed in Lua from the primitives (views, index selections and copies, so
-- that they pass gradients): movedim, swapaxes, broadcast_to, ravel, unflatten, repeat/tile,
-- repeat_interleave, flipud/fliplr, rot90, diff, unfold (sliding windows), take, take_along_dim,
-- index_add, index_fill, msort, argwhere, tensor_split/hsplit/vsplit/dsplit, broadcast_tensors/
-- broadcast_shapes, sum_to_size, adjoint and the x.mT, x.mH, x.T, x.H properties; methods and
-- torch.* functions, dims 1-based; and PyTorch's view copies (torch.t_copy, ...).
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local as_int = require('torch.composite').as_int
local check_tensor, norm_dim, opts_of, both = U.check_tensor, U.norm_dim, U.opts_of, U.both
local broadcast_shape = U.broadcast_shape

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
    r[i] = ri >= 1 and as_int(reps[ri]) or 1
    s[i] = si >= 1 and x:size(si) or 1
    if math.type(r[i]) ~= 'integer' or r[i] < 0 then
      error(string.format('%s: repetitions must be non-negative integers, got %s', op, tostring(r[i])), 3)
    end
  end
  -- x viewed as (1, s1, 1, s2, ...) expanded to (r1, s1, r2, s2, ...), then copied: a new tensor,
  -- as PyTorch's (a reshape alone would give x itself, or a view of it with zero strides)
  local v, e, out = {}, {}, {}
  for i = 1, n do
    v[2 * i - 1], v[2 * i] = 1, s[i]
    e[2 * i - 1], e[2 * i] = r[i], s[i]
    out[i] = r[i] * s[i]
  end
  local y = x:reshape(v):expand(e)
  y = y:is_contiguous() and y:clone() or y:contiguous()
  return y:reshape(out)
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
--- (repeat_interleave(repeats), one argument: each 1-based index i repeated repeats[i] times)
both('repeat_interleave', function(x, repeats, dim)
  check_tensor(x, 'repeat_interleave')
  if repeats == nil and dim == nil then
    if x:dim() > 1 or x.dtype.is_floating_point or x.dtype == torch.bool then
      error('repeat_interleave: repeats must be a 0-D or 1-D integer tensor, got a ' .. x:dim() .. '-D ' ..
        tostring(x.dtype) .. ' tensor', 2)
    end
    repeats = x:reshape(-1)
    x = torch.arange(1, repeats:numel() + 1, { dtype = torch.int64, device = x.device })
  end
  if type(dim) == 'table' then dim = dim.dim end
  if dim == nil then x, dim = x:reshape(-1), 1 end
  dim = norm_dim(dim, x:dim(), 'repeat_interleave')
  local n = x:size(dim)
  local idx
  if type(repeats) == 'number' then
    repeats = as_int(repeats)
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
    local i64 = { dtype = torch.int64 }
    local counts = repeats:to('cpu', torch.int64)
    if n > 0 and counts:min():item() < 0 then error('repeat_interleave: repeats can not be negative', 2) end
    -- the output's source positions without a loop: each element kept (a count above 0) marks the
    -- first of its copies with the step from the element kept before, and a running sum fills in
    local keep = counts:gt(0)
    local ids = torch.arange(1, n + 1, i64):masked_select(keep)
    local starts = (counts:cumsum(1) - counts):masked_select(keep)
    local m = ids:numel()
    local step = ids:clone()
    if m > 1 then step:narrow(1, 2, m - 1):sub_(ids:narrow(1, 1, m - 1)) end
    idx = torch.zeros(n > 0 and counts:sum():item() or 0, i64)
    if m > 0 then idx:index_copy_(1, starts + 1, step):cumsum_(1) end
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

--- the differences of neighbours along dim (n times), after prepend and append (tensors) are
--- concatenated to x along dim; of booleans, whether they differ (PyTorch's logical_xor).
--- diff(x, n = 1, dim = -1, prepend, append) or diff(x, {n, dim, prepend, append})
both('diff', function(x, n, dim, prepend, append)
  check_tensor(x, 'diff')
  if x:dim() == 0 then error('diff: expected an input of at least one dimension, got a 0-D tensor', 2) end
  if type(n) == 'table' then n, dim, prepend, append = n.n, n.dim, n.prepend, n.append end
  n, dim = as_int(n or 1), dim or -1
  if math.type(n) ~= 'integer' or n < 0 then error('diff: n must be a non-negative integer, got ' .. tostring(n), 2) end
  dim = norm_dim(dim, x:dim(), 'diff')
  if prepend ~= nil or append ~= nil then
    local parts = {}
    for _, t in ipairs { prepend or false, x, append or false } do
      if t then
        check_tensor(t, 'diff', 'prepend and append')
        if t:dim() ~= x:dim() then
          error(string.format('diff: prepend and append must have as many dimensions as the input (%d), got %d', x:dim(),
            t:dim()), 2)
        end
        parts[#parts + 1] = t
      end
    end
    x = torch.cat(parts, dim)
  end
  local bool = x.dtype == torch.bool
  if n == 0 then return x:clone() end -- a new tensor, as PyTorch's
  for _ = 1, n do
    local len = x:size(dim)
    if len <= 1 then return x:narrow(dim, 1, 0) end
    local a, b = x:narrow(dim, 2, len - 1), x:narrow(dim, 1, len - 1)
    x = bool and a:ne(b) or a - b
  end
  return x
end)

--- torch.gradient(x, {spacing = 1, dim, edge_order = 1}) -> a table of tensors, x's derivative
--- along each dim (all dims, or dim: a number or a table of them) by PyTorch's second-order central
--- differences inside and first- or second-order one-sided differences at the ends. spacing: a
--- number (the step along every dim), a table of numbers (one per dim), or a table of 1-D tensors
--- (each dim's coordinates, which may be unevenly spaced)
both('gradient', function(x, o)
  local op = 'gradient'
  check_tensor(x, op)
  o = opts_of(o, op, { 'spacing', 'dim', 'edge_order' })
  local edge = o.edge_order or 1
  if edge ~= 1 and edge ~= 2 then error('gradient: edge_order must be 1 or 2, got ' .. tostring(edge), 2) end
  if x.dtype == torch.uint8 or x.dtype == torch.bool then
    error('gradient: ' .. x.dtype.name .. ' input is not supported', 2)
  end
  if x:dim() == 0 then error('gradient: expected a tensor with at least one dimension, got a 0-dim tensor', 2) end
  local dims = o.dim
  if dims == nil then
    dims = {}
    for d = 1, x:dim() do dims[d] = d end
  elseif type(dims) ~= 'table' then
    dims = { dims }
  end
  local seen = {}
  for i, d in ipairs(dims) do
    d = norm_dim(d, x:dim(), op)
    if seen[d] then error('gradient: dim ' .. d .. ' appears more than once in dim', 2) end
    seen[d], dims[i] = true, d
  end
  local spacing = o.spacing == nil and 1 or o.spacing
  if type(spacing) ~= 'table' then spacing = { spacing } end
  if #spacing ~= 1 and #spacing ~= #dims then
    error(string.format('gradient: expected spacing to be a number or a table of %d (one per dim), got a table of %d',
      #dims, #spacing), 2)
  end
  local out = {}
  for i, d in ipairs(dims) do
    local n, h = x:size(d), spacing[#spacing == 1 and 1 or i]
    if n < edge + 1 then
      error(string.format('gradient: expected each dimension size to be at least edge_order+1 (%d), got size %d in dim %d',
        edge + 1, n, d), 2)
    end
    local function part(from, len) return x:narrow(d, from, len) end
    local center, first, last
    if torch.is_tensor(h) then
      if h:dim() ~= 1 or h:numel() ~= n then
        error(string.format('gradient: expected the coordinates of dim %d to be a 1-D tensor of %d values, got shape %s',
          d, n, tostring(h.shape)), 2)
      end
      local dx = h:diff()
      local shape = {}
      for k = 1, x:dim() do shape[k] = k == d and -1 or 1 end
      local dx1, dx2 = dx:narrow(1, 1, n - 2), dx:narrow(1, 2, n - 2)
      local a = (-dx2 / (dx1 * (dx1 + dx2))):reshape(shape)
      local b = ((dx2 - dx1) / (dx1 * dx2)):reshape(shape)
      local c = (dx1 / (dx2 * (dx1 + dx2))):reshape(shape)
      center = a * part(1, n - 2) + b * part(2, n - 2) + c * part(3, n - 2)
      local h0, h1, hl, hm = dx[1], dx[math.min(2, n - 1)], dx[n - 1], dx[math.max(n - 2, 1)]
      if edge == 1 then
        first = (part(2, 1) - part(1, 1)) / h0
        last = (part(n, 1) - part(n - 1, 1)) / hl
      else
        first = part(1, 1) * (-(2 * h0 + h1) / (h0 * (h0 + h1))) + part(2, 1) * ((h0 + h1) / (h0 * h1))
          + part(3, 1) * (-h0 / (h1 * (h0 + h1)))
        last = part(n - 2, 1) * (hl / (hm * (hl + hm))) + part(n - 1, 1) * (-(hl + hm) / (hl * hm))
          + part(n, 1) * ((2 * hl + hm) / (hl * (hl + hm)))
      end
    else
      if type(h) ~= 'number' then
        error('gradient: spacing must hold numbers or 1-D tensors, got ' .. type(h), 2)
      end
      center = (part(3, n - 2) - part(1, n - 2)) / h / 2
      if edge == 1 then
        first = (part(2, 1) - part(1, 1)) / h
        last = (part(n, 1) - part(n - 1, 1)) / h
      else
        first = (part(1, 1) * -1.5 + part(2, 1) * 2 + part(3, 1) * -0.5) / h
        last = (part(n - 2, 1) * 0.5 + part(n - 1, 1) * -2 + part(n, 1) * 1.5) / h
      end
    end
    out[i] = torch.cat({ first, center, last }, d)
  end
  return out
end)

--- torch.as_strided(x, size, stride, storage_offset = x's) / x:as_strided(...): a view of x's
--- storage with the given sizes and strides (>= 0) from storage_offset (elements, 0-based, as
--- x:storage_offset()), checked against the storage's size. Its gradient is gathered back into
--- the storage positions the view reads (where x's own elements do not overlap, as PyTorch's).
local AsStrided = torch.autograd.Function:extend('AsStridedBackward0')
function AsStrided.forward(ctx, x, size, stride, offset)
  ctx.size, ctx.stride, ctx.offset = size, stride, offset
  ctx.x_size, ctx.x_stride, ctx.x_offset, ctx.numel = { table.unpack(x.shape) }, x:stride(), x:storage_offset(),
    x:_storage_numel()
  return x:_as_strided(size, stride, offset)
end
function AsStrided.backward(ctx, g)
  local pos = torch.arange(ctx.numel, { device = g.device }):_as_strided(ctx.size, ctx.stride, ctx.offset)
  local storage = torch.zeros(ctx.numel, { dtype = g.dtype, device = g.device })
  storage:index_add_(1, pos:reshape(-1) + 1, g:reshape(-1))
  -- through as_strided itself, so that with create_graph the gradient is differentiated again
  return torch.as_strided(storage, ctx.x_size, ctx.x_stride, ctx.x_offset):clone()
end
both('as_strided', function(x, size, stride, offset)
  check_tensor(x, 'as_strided')
  if type(size) ~= 'table' or type(stride) ~= 'table' then
    error('as_strided: expected the sizes and the strides as two tables of integers', 2)
  end
  offset = as_int(offset)
  if offset ~= nil and math.type(offset) ~= 'integer' then
    error('as_strided: storage_offset must be an integer, got ' .. tostring(offset), 2)
  end
  offset = offset or x:storage_offset()
  if x.requires_grad and torch.is_grad_enabled() then return AsStrided.apply(x, size, stride, offset) end
  return x:_as_strided(size, stride, offset)
end)

-- the strides of PyTorch's clone of x (empty_like's preserve_format): x's layout when x is dense,
-- else dense strides in the order of x's (TensorIterator's permutation: by stride, size-0 and
-- stride-0 dims where they are, equal strides the smaller size first)
local function clone_strides(x)
  local n, size, st = x:dim(), x.shape, x:stride()
  local perm = {}
  for i = 1, n do perm[i] = n + 1 - i end
  local function should_swap(d0, d1)
    local s0, s1 = st[d0], st[d1]
    if s0 == 0 or s1 == 0 then return 0 end
    if s0 < s1 then return -1 end
    if s0 > s1 then return 1 end
    if size[d0] > size[d1] then return 1 end
    return 0
  end
  for i = 2, n do
    local d1 = i
    for d0 = i - 1, 1, -1 do
      local c = should_swap(perm[d0], perm[d1])
      if c > 0 then
        perm[d0], perm[d1] = perm[d1], perm[d0]
        d1 = d0
      elseif c < 0 then
        break
      end
    end
  end
  local out, curr = {}, 1
  for i = 1, n do
    out[perm[i]] = curr
    curr = curr * math.max(size[perm[i]], 1)
  end
  return out
end

local function shape_string(t) return '[' .. table.concat(t, ', ') .. ']' end

--- torch.as_strided_scatter(input, src, size, stride, storage_offset = 0) / x:as_strided_scatter(...):
--- a new tensor of input's values with src written where input:clone():as_strided(size, stride,
--- storage_offset) reads (strides and the 0-based storage_offset in elements of the clone's storage,
--- which keeps input's layout as PyTorch's clone does). src must have the view's shape and is cast to
--- input's dtype. Differentiable in both: src gets the view's gradient, input the rest.
both('as_strided_scatter', function(x, src, size, stride, offset)
  local op = 'as_strided_scatter'
  check_tensor(x, op)
  check_tensor(src, op, 'src')
  if type(size) ~= 'table' or type(stride) ~= 'table' then
    error(op .. ': expected the sizes and the strides as two tables of integers', 2)
  end
  offset = as_int(offset)
  if offset ~= nil and math.type(offset) ~= 'integer' then
    error(op .. ': storage_offset must be an integer, got ' .. tostring(offset), 2)
  end
  if src.device ~= x.device then
    error(string.format('%s: expected all tensors to be on the same device, but found at least two devices, %s and %s',
      op, tostring(x.device), tostring(src.device)), 2)
  end
  local n = x:numel()
  local shape = x.shape
  -- elem[p + 1]: the 0-based element (row-major) of x that the clone keeps at storage position p
  local elem = torch.empty(n, { dtype = torch.int64, device = x.device })
  elem:_as_strided(shape, clone_strides(x), 0):copy_(torch.arange(n, { device = x.device }):view(shape))
  local ok, target = pcall(elem.as_strided, elem, size, stride, offset or 0)
  if not ok then error(op .. ': ' .. tostring(target):gsub('^.-as_strided: ', ''), 2) end
  local tshape = target.shape
  local same = #tshape == src:dim()
  for i = 1, #tshape do same = same and tshape[i] == src:size(i) end
  if not same then
    error(string.format('%s: expected src to have a size equal to the slice of self. src size = %s, slice size = %s', op,
      shape_string(src.shape), shape_string(tshape)), 2)
  end
  if src.dtype ~= x.dtype then src = src:to(x.dtype) end
  return x:reshape(-1):scatter(1, target:reshape(-1) + 1, src:reshape(-1)):view(shape)
end)

-- unfold's gradient is the windows' gradients added back into zeros of the input's shape (PyTorch's
-- unfold_backward: the input's size, not its storage's, as as_strided's gradient would take), an op
-- whose own gradient is unfold again, so that both differentiate any number of times.
local Unfold = torch.autograd.Function:extend('UnfoldBackward0')
local UnfoldBack = torch.autograd.Function:extend('UnfoldBackwardBackward0')
function Unfold.forward(ctx, x, dim, size, step, sizes, strides)
  ctx.shape, ctx.dim, ctx.size, ctx.step = x.shape, dim, size, step
  return x:_as_strided(sizes, strides, x:storage_offset())
end
function Unfold.backward(ctx, g) return UnfoldBack.apply(g, ctx.shape, ctx.dim, ctx.size, ctx.step) end
function UnfoldBack.forward(ctx, g, shape, dim, size, step)
  ctx.dim, ctx.size, ctx.step = dim, size, step
  local z = torch.zeros(shape, { dtype = g.dtype, device = g.device })
  -- element j of every window is a view of z without overlaps (windows overlap when step < size)
  local windows, last = z:unfold(dim, size, step), g:dim()
  for j = 1, size do windows:select(last, j):add_(g:select(last, j)) end
  return z
end
function UnfoldBack.backward(ctx, g) return g:unfold(ctx.dim, ctx.size, ctx.step) end

--- windows of `size` elements every `step` along dim, as a new last dimension
both('unfold', function(x, dim, size, step)
  check_tensor(x, 'unfold')
  dim = norm_dim(dim, x:dim(), 'unfold')
  local len = x:dim() == 0 and 1 or x:size(dim)
  size = as_int(size)
  if math.type(size) ~= 'integer' or size < 0 or size > len then
    error(string.format('unfold: maximum size for tensor at dimension %d is %d but size is %s', dim, len, tostring(size)), 2)
  end
  step = as_int(step)
  if math.type(step) ~= 'integer' or step <= 0 then error('unfold: step must be a positive integer, got ' .. tostring(step), 2) end
  local count = (len - size) // step + 1
  -- a view, as PyTorch's: dim holds the windows (every step elements), a last dim their elements
  -- (a 0-dim x gives its one window alone, as PyTorch)
  if x:dim() == 0 then return torch.as_strided(x, { size }, { 1 }) end
  local sizes, strides = {}, {}
  local st = x:stride()
  for i = 1, x:dim() do sizes[i], strides[i] = x:size(i), st[i] end
  sizes[dim], strides[dim] = count, st[dim] * step
  sizes[#sizes + 1], strides[#strides + 1] = size, st[dim]
  if x.requires_grad and torch.is_grad_enabled() then return Unfold.apply(x, dim, size, step, sizes, strides) end
  return x:_as_strided(sizes, strides, x:storage_offset())
end)

both('take', function(x, index)
  check_tensor(index, 'take', 'index')
  return x:reshape(-1):index_select(1, index:reshape(-1)):reshape(index.shape)
end)

--- x:take_along_dim(indices, dim): x's elements at indices (1-based) along dim, x and indices
--- broadcast to each other in the other dims, as PyTorch's; without dim, of the flattened x
both('take_along_dim', function(x, indices, dim)
  local op = 'take_along_dim'
  check_tensor(x, op)
  check_tensor(indices, op, 'indices')
  if dim == nil then return x:reshape(-1):gather(1, indices:reshape(-1)) end
  if x:dim() ~= indices:dim() then
    error(string.format('%s: input (%d-D) and indices (%d-D) should have the same number of dimensions', op, x:dim(),
      indices:dim()), 2)
  end
  dim = norm_dim(dim, x:dim(), op)
  local xs, is = {}, {}
  for d = 1, x:dim() do xs[d], is[d] = d == dim and indices:size(d) or x:size(d), indices:size(d) end
  local shape = broadcast_shape({ xs, is }, op)
  local xshape = { table.unpack(shape) }
  xshape[dim] = x:size(dim)
  return x:expand(xshape):gather(dim, indices:expand(shape))
end)

both('msort', function(x) return (x:sort(1)) end)
both('argwhere', function(x) return x:nonzero() end)

both('index_add', function(x, dim, index, source, o)
  local alpha = opts_of(o, 'index_add', { 'alpha' }).alpha or 1
  return x:clone():index_add_(dim, index, alpha == 1 and source or source * alpha)
end)
both('index_fill', function(x, dim, index, value) return x:clone():index_fill_(dim, index, value) end)

-- ---- splitting ----

--- views of x along dim (default 1): `sections` pieces of near-equal size (the first size % n
--- one longer), or pieces that end at the given indices (a table or a 0-/1-D integer tensor). The
--- indices are 1-based, each the last element of a piece: {2, 5} gives elements 1-2, 3-5 and 6 to
--- the end, the same numbers as PyTorch's split points [2, 5]. Negative ones count from the end
--- (-1 is the last element, so {-1} leaves an empty last piece); indices past the ends clamp and a
--- smaller index than the one before gives an empty piece, as slices do.
local MAX_SECTIONS = 1 << 24
local function tensor_split(x, ios, dim, op, whole)
  check_tensor(x, op)
  if x:dim() == 0 then
    error(op .. ': expected at least a 1-dimensional tensor, but got a tensor with 0 dims', 3)
  end
  dim = norm_dim(dim or 1, x:dim(), op)
  local size = x:size(dim)
  if torch.is_tensor(ios) then
    if ios.dtype ~= torch.int64 and ios.dtype ~= torch.int32 then
      error(op .. ': expected the indices or sections to be an int64 or int32 tensor, got ' .. ios.dtype.name, 3)
    end
    if ios:dim() > 1 then
      error(string.format('%s: expected the indices or sections to be a 0-D or 1-D tensor, got %d-D', op, ios:dim()), 3)
    end
    ios = ios:dim() == 0 and ios:item() or ios:totable()
  end
  local pieces = {}
  ios = as_int(ios)
  if math.type(ios) == 'integer' then
    if ios <= 0 then error(op .. ': number of sections must be larger than 0, got ' .. ios, 3) end
    -- each section is a tensor, empty or not: past MAX_SECTIONS the loop would fill the memory
    if ios > MAX_SECTIONS then
      error(string.format('%s: too many sections (%d): at most %d', op, ios, MAX_SECTIONS), 3)
    end
    if whole and size % ios ~= 0 then
      error(string.format('%s: attempted to split along dimension %d, but the size of the dimension %d is not divisible by the split_size %d!',
        op, dim, size, ios), 3)
    end
    local base, extra, start = size // ios, size % ios, 1
    for i = 1, ios do
      local len = base + (i <= extra and 1 or 0)
      pieces[i] = x:narrow(dim, start, len)
      start = start + len
    end
  elseif type(ios) == 'table' then
    local prev = 0 -- the last element of the piece before (0: none)
    for i, v in ipairs(ios) do
      v = as_int(v)
      if math.type(v) ~= 'integer' then
        error(string.format('%s: indices must be integers, got %s at %d', op, tostring(v), i), 3)
      end
      if v < 0 then v = v + size + 1 end
      v = math.min(math.max(v, 0), size)
      pieces[i] = x:narrow(dim, prev + 1, math.max(v - prev, 0))
      prev = v
    end
    pieces[#pieces + 1] = x:narrow(dim, prev + 1, size - prev)
  else
    error(op .. ': expected a number of sections or a table of indices, got ' .. type(ios), 3)
  end
  return pieces
end
both('tensor_split', function(x, ios, dim) return (tensor_split(x, ios, dim, 'tensor_split')) end)

--- tensor_split along columns (dim 2, dim 1 of a vector), rows (dim 1) and depth (dim 3); a number
--- of sections must divide the dimension
both('hsplit', function(x, ios)
  check_tensor(x, 'hsplit')
  if x:dim() < 1 then error('hsplit: requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!', 2) end
  return (tensor_split(x, ios, x:dim() == 1 and 1 or 2, 'hsplit', true))
end)
both('vsplit', function(x, ios)
  check_tensor(x, 'vsplit')
  if x:dim() < 2 then error('vsplit: requires a tensor with at least 2 dimensions, but got a tensor with ' .. x:dim() .. ' dimensions!', 2) end
  return (tensor_split(x, ios, 1, 'vsplit', true))
end)
both('dsplit', function(x, ios)
  check_tensor(x, 'dsplit')
  if x:dim() < 3 then error('dsplit: requires a tensor with at least 3 dimensions, but got a tensor with ' .. x:dim() .. ' dimensions!', 2) end
  return (tensor_split(x, ios, 3, 'dsplit', true))
end)

-- ---- broadcasting ----


-- the arguments as a list: several values, or one table of them
local function listed(...)
  local a = table.pack(...)
  if a.n == 1 and type(a[1]) == 'table' and not torch.is_tensor(a[1]) then
    return a[1]
  end
  return a
end

--- the shape (a torch.Size) that the given shapes broadcast to; each a table of sizes, a
--- torch.Size or a number (a 1-D shape)
function torch.broadcast_shapes(...)
  local args = table.pack(...)
  local shapes = {}
  for i = 1, args.n do
    local s = args[i]
    s = as_int(s)
    if math.type(s) == 'integer' then s = { s } end
    if type(s) ~= 'table' or torch.is_tensor(s) then
      error(string.format('broadcast_shapes: expected shapes (tables of sizes or numbers), got %s at %d', type(s), i), 2)
    end
    local ints = {}
    for k, v in ipairs(s) do
      v = as_int(v)
      if math.type(v) ~= 'integer' or v < 0 then
        error(string.format('broadcast_shapes: sizes must be non-negative integers, got %s in shape %d', tostring(v), i), 2)
      end
      ints[k] = v
    end
    shapes[i] = ints
  end
  return broadcast_shape(shapes, 'broadcast_shapes')
end

--- the tensors (given as arguments or as one table) expanded to their common shape: a table of views
function torch.broadcast_tensors(...)
  local ts = listed(...)
  local shapes = {}
  for i = 1, #ts do
    if not torch.is_tensor(ts[i]) then
      error(string.format('broadcast_tensors: expected tensors, got %s at %d', type(ts[i]), i), 2)
    end
    shapes[i] = ts[i].shape
  end
  local shape = broadcast_shape(shapes, 'broadcast_tensors')
  local out = {}
  for i = 1, #ts do out[i] = ts[i]:expand(shape) end
  return out
end

--- x summed to `size` (numbers or a table), which x's shape must broadcast from: the gradient of
--- an expand to size
function Tensor.sum_to_size(x, ...)
  check_tensor(x, 'sum_to_size')
  local size = listed(...)
  local nd = x:dim()
  local ok = #size <= nd
  for i = 1, ok and #size or 0 do
    local s = x:size(nd - #size + i)
    if size[i] ~= s and size[i] ~= 1 then ok = false end
  end
  if not ok then
    error(string.format('sum_to_size: size %s is not expandable to size %s', tostring(setmetatable({ table.unpack(size) }, torch.Size)),
      tostring(x.shape)), 2)
  end
  local lead = nd - #size
  local r = x
  if lead > 0 then
    local dims = {}
    for d = 1, lead do dims[d] = d end
    r = r:sum(dims)
  end
  local ones = {}
  for i = 1, #size do
    if size[i] == 1 and r:size(i) ~= 1 then ones[#ones + 1] = i end
  end
  if #ones > 0 then r = r:sum(ones, true) end
  return r
end

-- ---- transposes ----

--- the last two dimensions swapped (a view; lutorch has no complex dtypes, so no conjugate)
both('adjoint', function(x)
  check_tensor(x, 'adjoint')
  if x:dim() < 2 then
    error('adjoint: is only supported on matrices or batches of matrices. Got ' .. x:dim() .. '-D tensor.', 2)
  end
  return x:transpose(-2, -1)
end)

-- properties served by the tensors' __index (bindings/tensor.c): x.mT and x.mH (the last two dims
-- swapped), x.T (every dim reversed; a 0-D or 1-D x itself) and x.H (a matrix's transpose)
Tensor.__properties = Tensor.__properties or {}
local props = Tensor.__properties
function props.mT(x)
  if x:dim() < 2 then
    error('tensor.mT is only supported on matrices or batches of matrices. Got ' .. x:dim() .. '-D tensor.', 3)
  end
  return x:transpose(-2, -1)
end
props.mH = props.mT
function props.T(x)
  if x:dim() < 2 then return x end
  local perm = {}
  for d = 1, x:dim() do perm[d] = x:dim() + 1 - d end
  return x:permute(perm)
end
function props.H(x)
  if x:dim() ~= 2 and x:dim() ~= 0 then
    error('tensor.H is only supported on matrices (2-D tensors). Got ' .. x:dim() .. '-D tensor.', 3)
  end
  return x:dim() == 2 and x:t() or x
end

-- ---- PyTorch's view copies: torch.X_copy(x, ...) is the view x:X(...) in a tensor of its own ----
-- (torch.slice_copy is in indexing.lua, beside slice_scatter)
for _, name in ipairs { 'as_strided', 'detach', 'diagonal', 'expand', 'permute', 'select', 'squeeze', 't',
  'transpose', 'unfold', 'unsqueeze', 'view' } do
  local op = name .. '_copy'
  torch[op] = U.naming(op, function(x, ...)
    check_tensor(x, op)
    return Tensor[name](x, ...):clone()
  end)
end
function torch.alias_copy(x)
  check_tensor(x, 'alias_copy')
  return x:clone()
end
-- the views of split, split_with_sizes and unbind, each in a tensor of its own
for _, name in ipairs { 'split', 'split_with_sizes', 'unbind' } do
  local op = name .. '_copy'
  torch[op] = U.naming(op, function(x, ...)
    check_tensor(x, op)
    local r = Tensor[name](x, ...)
    for i, v in ipairs(r) do r[i] = v:clone() end
    return r
  end)
end
