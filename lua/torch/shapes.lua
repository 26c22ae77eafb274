-- Shape functions composed in Lua from the primitives (views, index selections and copies, so
-- that they pass gradients): movedim, swapaxes, broadcast_to, ravel, unflatten, repeat/tile,
-- repeat_interleave, flipud/fliplr, rot90, diff, unfold (sliding windows), take, take_along_dim,
-- index_add, index_fill, msort, argwhere; methods and torch.* functions, dims 1-based.
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local check_tensor, norm_dim, opts_of, both = U.check_tensor, U.norm_dim, U.opts_of, U.both

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
  local alpha = opts_of(o, 'index_add', { 'alpha' }).alpha or 1
  return x:clone():index_add_(dim, index, alpha == 1 and source or source * alpha)
end)
both('index_fill', function(x, dim, index, value) return x:clone():index_fill_(dim, index, value) end)
