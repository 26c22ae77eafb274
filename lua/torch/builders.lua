-- Building and combining tensors, composed in Lua from the primitives: vstack/hstack/dstack/
-- column_stack, atleast_Nd, meshgrid, cartesian_prod, combinations, block_diag, tensordot, cdist,
-- searchsorted/bucketize (1-based insertion positions), trapezoid, logspace, tril_indices/
-- triu_indices (1-based coordinates), diag_embed, diagflat, vander and randint_like.
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local as_int = require('torch.composite').as_int
local check_tensor, norm_dim, opts_of = U.check_tensor, U.norm_dim, U.opts_of
local reserve = require 'torch.reserve'

-- ---- building and combining tensors ----

local function tensor_list(op, ts)
  if type(ts) ~= 'table' or torch.is_tensor(ts) then error(op .. ': expected a table of tensors', 3) end
  if #ts == 0 then error(op .. ': expected a non-empty table of tensors', 3) end
  for i, t in ipairs(ts) do
    if not torch.is_tensor(t) then error(string.format('%s: element %d is not a tensor (%s)', op, i, type(t)), 3) end
  end
  return ts
end

local function at_least(x, n)
  if x:dim() >= n then return x end
  if n == 1 then return x:reshape(1) end
  if n == 2 then return x:dim() == 0 and x:reshape(1, 1) or x:unsqueeze(1) end
  if x:dim() == 0 then return x:reshape(1, 1, 1) end
  if x:dim() == 1 then return x:reshape(1, x:size(1), 1) end
  return x:unsqueeze(3)
end
for n = 1, 3 do
  local op = 'atleast_' .. n .. 'd'
  torch[op] = function(x)
    if not torch.is_tensor(x) then error(string.format('%s: expected a tensor, got %s', op, type(x)), 2) end
    return at_least(x, n)
  end
end

-- the tensors of ts, each given at least n dims
local function each_at_least(op, ts, n)
  local a = {}
  for i, t in ipairs(tensor_list(op, ts)) do a[i] = at_least(t, n) end
  return a
end

--- stacking along rows (dim 1), columns (dim 2, or dim 1 of vectors) and depth (dim 3)
function torch.vstack(ts) return torch.cat(each_at_least('vstack', ts, 2), 1) end
torch.row_stack = torch.vstack
torch.concatenate = torch.cat -- (PyTorch's alias, as torch.concat)
function torch.hstack(ts)
  local a = each_at_least('hstack', ts, 1)
  return torch.cat(a, a[1]:dim() == 1 and 1 or 2)
end
function torch.dstack(ts) return torch.cat(each_at_least('dstack', ts, 3), 3) end
function torch.column_stack(ts)
  ts = tensor_list('column_stack', ts)
  local a = {}
  for i, t in ipairs(ts) do a[i] = t:dim() <= 1 and t:reshape(t:numel(), 1) or t end
  return torch.cat(a, 2)
end

--- coordinate grids: tensors of N 1-D inputs' sizes, {indexing = 'ij' (default) or 'xy'}
function torch.meshgrid(...)
  local args = { ... }
  local opts = {}
  if #args >= 1 and type(args[#args]) == 'table' and not torch.is_tensor(args[#args]) and args[#args][1] == nil then
    opts = table.remove(args)
  end
  local ts = (#args == 1 and type(args[1]) == 'table' and not torch.is_tensor(args[1])) and args[1] or args
  ts = tensor_list('meshgrid', ts)
  opts = opts_of(opts, 'meshgrid', { 'indexing' })
  local indexing = opts.indexing or 'ij'
  if indexing ~= 'ij' and indexing ~= 'xy' then
    error("meshgrid: indexing must be 'ij' or 'xy', got " .. tostring(indexing), 2)
  end
  local n = #ts
  local sizes = {}
  for i, t in ipairs(ts) do
    if t:dim() > 1 then error(string.format('meshgrid: expected 0-D or 1-D tensors, got a %d-D tensor at %d', t:dim(), i), 2) end
    sizes[i] = t:numel()
  end
  local swap = indexing == 'xy' and n >= 2
  if swap then sizes[1], sizes[2] = sizes[2], sizes[1] end
  local out = {}
  for i, t in ipairs(ts) do
    local pos = i
    if swap and i <= 2 then pos = 3 - i end
    local shape = {}
    for d = 1, n do shape[d] = d == pos and sizes[d] or 1 end
    out[i] = t:reshape(shape):expand(sizes)
  end
  return out
end

--- every combination of the inputs' elements, one a row
function torch.cartesian_prod(...)
  local ts = tensor_list('cartesian_prod', { ... })
  if #ts == 1 then return ts[1] end
  local grids = torch.meshgrid(ts, { indexing = 'ij' })
  local cols = {}
  for i, g in ipairs(grids) do cols[i] = g:reshape(-1) end
  return torch.stack(cols, 2)
end

--- the r-element combinations of a vector's elements (with_replacement: with repeats), one a row
function torch.combinations(x, r, with_replacement)
  check_tensor(x, 'combinations')
  if type(r) == 'table' then r, with_replacement = r.r, r.with_replacement end
  r = r or 2
  if x:dim() ~= 1 then error('combinations: expected a 1-D tensor, got ' .. x:dim() .. '-D', 2) end
  r = as_int(r)
  if math.type(r) ~= 'integer' or r < 0 then error('combinations: r must be a non-negative integer, got ' .. tostring(r), 2) end
  local n = x:numel()
  -- C(n, r) rows, or C(n + r - 1, n - 1) with replacement, made first as Lua tables (in floats:
  -- r may be near 2^63)
  local count = 0.0
  if r > 0 and (with_replacement and n > 0 or r <= n) then
    local top, m = with_replacement and n + (r + 0.0) - 1 or n, with_replacement and n - 1 or math.min(r, n - r)
    count = 1.0
    for k = 1, m do count = count * (top - m + k) / k end
  end
  reserve('combinations', x, { count, r }, 2)
  -- the positions' working memory on the CPU, at most about six int64 copies of the output's
  -- size: a size that fits only the output fails at once, not after filling the memory
  local work = count * r * 6
  local ok, e = work < 2.0 ^ 60, 'size is too large'
  if ok then ok, e = pcall(torch.empty, math.tointeger(work), { dtype = torch.int64 }) end
  if not ok then
    error(string.format('combinations: %.0f rows of %d need about %.0f int64 of working memory: %s', count, r, work,
      (tostring(e):gsub('^[^:]*%.lua:%d+: ', ''))), 2)
  end
  e = nil
  if count == 0 then return torch.empty(0, r, { dtype = x.dtype, device = x.device }) end
  -- the rows' 0-based positions, in lexicographic order, one column at a time: each row of the
  -- first d columns is followed by every position after its last (or from it, with replacement)
  local i64 = { dtype = torch.int64 }
  local idx = torch.arange(n, i64):view(n, 1)
  for _ = 2, r do
    local first = idx:select(2, idx:size(2))
    if not with_replacement then first = first + 1 end
    local cnt = (-first):add_(n) -- positions after each row's last: n - first (>= 0)
    local rows = torch.repeat_interleave(torch.arange(idx:size(1), i64), cnt)
    local starts = cnt:cumsum(1):sub_(cnt) -- the first new row of each old row
    local pos = torch.arange(rows:numel(), i64):sub_(starts:index_select(1, rows + 1))
    local col = first:index_select(1, rows + 1):add_(pos)
    idx = torch.cat({ idx:index_select(1, rows + 1), col:view(-1, 1) }, 2)
  end
  return x:index_select(1, (idx + 1):reshape(-1):to(x.device)):reshape(idx:size(1), r)
end

--- matrices along the diagonal of a block matrix
function torch.block_diag(...)
  local ts = { ... }
  if #ts == 0 then return torch.empty(1, 0) end
  ts = tensor_list('block_diag', ts)
  local mats, width = {}, 0
  for i, t in ipairs(ts) do
    if t:dim() > 2 then error(string.format('block_diag: expected tensors of at most 2 dimensions, got %d-D at %d', t:dim(), i), 2) end
    mats[i] = t:dim() == 2 and t or t:reshape(1, t:numel())
    width = width + mats[i]:size(2)
  end
  local rows, left = {}, 0
  for i, m in ipairs(mats) do
    local w = m:size(2)
    rows[i] = torch.F.pad(m, { left, width - left - w })
    left = left + w
  end
  return torch.cat(rows, 1)
end

--- the sum of products over dims: the last `dims` of a with the first of b, or the listed pairs
function torch.tensordot(a, b, dims)
  check_tensor(a, 'tensordot')
  check_tensor(b, 'tensordot', 'the second input')
  if type(dims) == 'table' and type(dims.dims) ~= 'nil' then dims = dims.dims end
  dims = dims or 2
  local da, db = {}, {}
  dims = as_int(dims)
  if math.type(dims) == 'integer' then
    if dims < 0 or dims > a:dim() or dims > b:dim() then error('tensordot: dims out of range: ' .. dims, 2) end
    for i = 1, dims do da[i], db[i] = a:dim() - dims + i, i end
  elseif type(dims) == 'table' and type(dims[1]) == 'table' and type(dims[2]) == 'table' and #dims[1] == #dims[2] then
    for i = 1, #dims[1] do
      da[i] = norm_dim(dims[1][i], a:dim(), 'tensordot')
      db[i] = norm_dim(dims[2][i], b:dim(), 'tensordot')
    end
  else
    error('tensordot: dims must be an integer or a pair of equally long tables of dims', 2)
  end
  local ca, cb, k = {}, {}, 1
  for i = 1, #da do
    if a:size(da[i]) ~= b:size(db[i]) then
      error(string.format('tensordot: contracted dimensions need to match, but first has size %d in dim %d and second has size %d in dim %d',
        a:size(da[i]), da[i], b:size(db[i]), db[i]), 2)
    end
    ca[da[i]], cb[db[i]] = true, true
    k = k * a:size(da[i])
  end
  local pa, pb, out, m, n = {}, {}, {}, 1, 1
  for d = 1, a:dim() do if not ca[d] then pa[#pa + 1] = d; out[#out + 1] = a:size(d); m = m * a:size(d) end end
  for _, d in ipairs(da) do pa[#pa + 1] = d end
  for _, d in ipairs(db) do pb[#pb + 1] = d end
  for d = 1, b:dim() do if not cb[d] then pb[#pb + 1] = d; out[#out + 1] = b:size(d); n = n * b:size(d) end end
  local am = (a:dim() > 0 and a:permute(pa) or a):reshape(m, k)
  local bm = (b:dim() > 0 and b:permute(pb) or b):reshape(k, n)
  return am:mm(bm):reshape(out)
end

--- the p-norm distances between the rows of x1 (B x P x M or P x M) and of x2 (B x R x M)
function torch.cdist(x1, x2, p)
  check_tensor(x1, 'cdist', 'x1')
  check_tensor(x2, 'cdist', 'x2')
  if type(p) == 'table' then p = p.p end
  p = p or 2
  if x1:dim() < 2 or x2:dim() < 2 then error('cdist: expected inputs of at least 2 dimensions', 2) end
  if x1:size(-1) ~= x2:size(-1) then
    error(string.format('cdist: X1 and X2 must have the same number of columns. X1: %d X2: %d', x1:size(-1), x2:size(-1)), 2)
  end
  if type(p) ~= 'number' or p < 0 then error('cdist: only supports non-negative p values, got ' .. tostring(p), 2) end
  local d = (x1:unsqueeze(-2) - x2:unsqueeze(-3)):abs()
  if p == 0 then return d:ne(0):sum(-1):to(x1.dtype) end
  if p == math.huge then return d:amax(-1) end
  if p == 1 then return d:sum(-1) end
  if p == 2 then return (d * d):sum(-1):sqrt() end
  return (d ^ p):sum(-1) ^ (1 / p)
end

--- where each value would go in a sorted sequence: the 1-based position of the first element not
--- less than it (right: greater than it), so 1 .. n + 1; {right, side = 'left' | 'right'}
local function search(op, seq, values, right)
  local n = seq:size(-1)
  local v = values
  if seq:dim() == 1 then
    local flat = v:reshape(-1)
    local counts = {}
    local chunk = math.max(1, 4194304 // math.max(n, 1))
    for s = 1, flat:numel(), chunk do
      local part = flat:narrow(1, s, math.min(chunk, flat:numel() - s + 1)):unsqueeze(2)
      local c = right and seq:unsqueeze(1):le(part) or seq:unsqueeze(1):lt(part)
      counts[#counts + 1] = c:sum(2)
    end
    local r = #counts > 0 and torch.cat(counts) or torch.zeros(0, { dtype = torch.int64, device = seq.device })
    return (r + 1):reshape(v.shape)
  end
  if v:dim() ~= seq:dim() then
    error(string.format('%s: boundaries of %d dimensions need values of as many (their leading dims equal), got %d', op, seq:dim(), v:dim()), 3)
  end
  for d = 1, seq:dim() - 1 do
    if seq:size(d) ~= v:size(d) then
      error(string.format('%s: the leading dimensions of the sorted sequence (%s) and the values (%s) must match', op,
        tostring(seq.shape), tostring(v.shape)), 3)
    end
  end
  local c = right and seq:unsqueeze(-2):le(v:unsqueeze(-1)) or seq:unsqueeze(-2):lt(v:unsqueeze(-1))
  return c:sum(-1) + 1
end

function torch.searchsorted(seq, values, o)
  check_tensor(seq, 'searchsorted', 'sorted_sequence')
  o = opts_of(o, 'searchsorted', { 'right', 'side', 'out_int32' })
  if type(values) == 'number' then values = torch.tensor(values, { dtype = seq.dtype, device = seq.device }) end
  check_tensor(values, 'searchsorted', 'values')
  if o.side ~= nil and o.side ~= 'left' and o.side ~= 'right' then
    error("searchsorted: side must be 'left' or 'right', got " .. tostring(o.side), 2)
  end
  if o.side == 'left' and o.right then error("searchsorted: side and right can't be set to opposites", 2) end
  if seq:dim() == 0 then error('searchsorted: the sorted sequence must have at least 1 dimension', 2) end
  local r = search('searchsorted', seq, values, o.right or o.side == 'right')
  return o.out_int32 and r:int() or r
end

function torch.bucketize(x, boundaries, o)
  o = opts_of(o, 'bucketize', { 'right', 'out_int32' })
  if type(x) == 'number' then x = torch.tensor(x, { dtype = boundaries.dtype }) end
  check_tensor(x, 'bucketize')
  check_tensor(boundaries, 'bucketize', 'boundaries')
  if boundaries:dim() ~= 1 then error('bucketize: boundaries must be 1-D, got ' .. boundaries:dim() .. '-D', 2) end
  local r = search('bucketize', boundaries, x, o.right)
  return o.out_int32 and r:int() or r
end
Tensor.bucketize = torch.bucketize

-- the trapezoids' areas along dim (default the last) for trapezoid and cumulative_trapezoid:
-- (y[k] + y[k + 1]) / 2 times unit spacing, a spacing dx or the steps of the points x (1-D, one
-- per sample, or broadcasting with y); and dim
local function trapezoids(op, y, x, o)
  check_tensor(y, op)
  if type(x) == 'table' and not torch.is_tensor(x) then o, x = x, nil end
  o = opts_of(o, op, { 'dx', 'dim' }, 4)
  if y:dim() == 0 then error(op .. ': expected a tensor of at least 1 dimension, got a 0-D one', 3) end
  local dim = norm_dim(o.dim or -1, y:dim(), op)
  local n = y:size(dim)
  if x ~= nil and o.dx ~= nil then error(op .. ': give the sample points x or the spacing dx, not both', 3) end
  if x ~= nil then check_tensor(x, op, 'x') end
  if x ~= nil and (x:dim() == 1 and x:numel() ~= n or x:dim() > 1 and x:size(math.max(dim - y:dim() + x:dim(), 1)) ~= n) then
    error(op .. ': There must be one `x` value for each sample point', 3)
  end
  if n == 0 then return y:narrow(dim, 1, 0) * 1.0, dim end
  local mid = (y:narrow(dim, 2, n - 1) + y:narrow(dim, 1, n - 1)) * 0.5
  if x ~= nil then
    local dx
    if x:dim() == 1 then
      local shape = {}
      for d = 1, y:dim() do shape[d] = d == dim and n - 1 or 1 end
      dx = (x:narrow(1, 2, n - 1) - x:narrow(1, 1, n - 1)):reshape(shape)
    else
      local xd = dim - y:dim() + x:dim()
      dx = x:narrow(xd, 2, n - 1) - x:narrow(xd, 1, n - 1)
    end
    return mid * dx, dim
  end
  return mid * (o.dx or 1), dim
end

--- the trapezoidal rule along dim (default the last), over unit spacing, a spacing dx or the points x
function torch.trapezoid(y, x, o)
  local areas, dim = trapezoids('trapezoid', y, x, o)
  return areas:sum(dim)
end
torch.trapz = torch.trapezoid

--- the running trapezoidal rule along dim: its k-th value integrates over the first k + 1 samples
--- (one value fewer than y's along dim), with trapezoid's spacing (unit, dx or the points x)
function torch.cumulative_trapezoid(y, x, o)
  local areas, dim = trapezoids('cumulative_trapezoid', y, x, o)
  return areas:cumsum(dim)
end

-- ---- ranges, triangles, diagonals ----

-- the options of a factory: dtype, device, requires_grad
local function factory_opts(o, op, extra)
  local keys = { 'dtype', 'device', 'requires_grad' }
  for _, k in ipairs(extra or {}) do keys[#keys + 1] = k end
  return opts_of(o, op, keys, 4)
end
local function finish(t, o)
  if o.requires_grad then t:requires_grad_(true) end
  return t
end

--- base ^ linspace(start, end, steps): steps values from base^start to base^end, {base = 10, dtype,
--- device, requires_grad} (computed in float64, then converted to dtype)
function torch.logspace(start, stop, steps, o)
  o = factory_opts(o, 'logspace', { 'base' })
  local base = o.base or 10
  if type(start) ~= 'number' or type(stop) ~= 'number' then error('logspace: start and end must be numbers', 2) end
  steps = as_int(steps)
  if math.type(steps) ~= 'integer' or steps < 0 then
    error('logspace: number of steps must be a non-negative integer, got ' .. tostring(steps), 2)
  end
  if type(base) ~= 'number' then error('logspace: base must be a number, got ' .. type(base), 2) end
  local e = torch.linspace(start, stop, steps, { dtype = torch.float64, device = o.device })
  return finish(torch.pow(base, e):to(o.dtype or torch.get_default_dtype()), o)
end

-- the coordinates of a row x col matrix's triangle (on and below, or on and above, the diagonal
-- `offset`) as a 2 x N tensor, row by row
local function triangle(op, lower, row, col, offset, o)
  if type(offset) == 'table' then o, offset = offset, nil end
  o = opts_of(o, op, { 'dtype', 'device', 'layout' }, 4)
  row, col, offset = as_int(row), as_int(col), as_int(offset or 0)
  for _, v in ipairs { row, col, offset } do
    if math.type(v) ~= 'integer' then error(op .. ': row, col and offset must be integers, got ' .. tostring(v), 3) end
  end
  if row < 0 or col < 0 then error(string.format('%s: row and col must be non-negative, got %d and %d', op, row, col), 3) end
  local r = torch.arange(0, row, { dtype = torch.int64, device = o.device }):unsqueeze(2)
  local c = torch.arange(0, col, { dtype = torch.int64, device = o.device }):unsqueeze(1)
  local keep = lower and (c - r):le(offset) or (c - r):ge(offset)
  return keep:nonzero():t():contiguous():to(o.dtype or torch.int64)
end

--- the 1-based coordinates (row, then column) of the lower (upper) triangle of a row x col matrix,
--- on and below (above) the diagonal `offset`, as a 2 x N tensor in row-major order: PyTorch's
--- tril_indices/triu_indices plus one, so that they index lutorch tensors. {dtype = int64, device}
-- (calls in parentheses are no tail calls: the frames stay, so errors point at the user's line)
function torch.tril_indices(row, col, offset, o) return (triangle('tril_indices', true, row, col, offset, o)) end
function torch.triu_indices(row, col, offset, o) return (triangle('triu_indices', false, row, col, offset, o)) end

--- x's last dimension as the diagonal `offset` of matrices in the new dims dim1 and dim2 (of the
--- result, which has one dim more; defaults the last two)
local function diag_embed(x, offset, dim1, dim2)
  check_tensor(x, 'diag_embed')
  if type(offset) == 'table' then offset, dim1, dim2 = offset.offset, offset.dim1, offset.dim2 end
  offset, dim1, dim2 = offset or 0, dim1 or -2, dim2 or -1
  offset = as_int(offset)
  if math.type(offset) ~= 'integer' then error('diag_embed: offset must be an integer, got ' .. tostring(offset), 3) end
  local nd = x:dim() + 1
  dim1, dim2 = norm_dim(dim1, nd, 'diag_embed', 'dim1'), norm_dim(dim2, nd, 'diag_embed', 'dim2')
  if dim1 == dim2 then error('diag_embed: diagonal dimensions cannot be identical ' .. dim1 .. ', ' .. dim2, 3) end
  if x:dim() == 0 then x = x:reshape(1) end
  local n = x:size(-1)
  local m = n + math.abs(offset)
  local shape = x.shape
  shape[#shape] = m * m
  local first = offset >= 0 and offset or -offset * m -- 0-based
  local at = torch.arange(0, n, { dtype = torch.int64, device = x.device }) * (m + 1) + (first + 1)
  local ishape = {}
  for d = 1, x:dim() do ishape[d] = d == x:dim() and n or 1 end
  local flat = torch.zeros(shape, { dtype = x.dtype, device = x.device }):scatter(x:dim(), at:reshape(ishape):expand(x.shape), x)
  local out = x.shape
  out[#out] = m
  out[#out + 1] = m
  return flat:reshape(out):movedim({ nd - 1, nd }, { dim1, dim2 })
end
function torch.diag_embed(x, offset, dim1, dim2) return (diag_embed(x, offset, dim1, dim2)) end
Tensor.diag_embed = torch.diag_embed

--- the flattened x as the diagonal `offset` of a square matrix
function torch.diagflat(x, offset)
  check_tensor(x, 'diagflat')
  if type(offset) == 'table' then offset = offset.offset end
  return (diag_embed(x:reshape(-1), offset or 0, 1, 2))
end
Tensor.diagflat = torch.diagflat

--- the Vandermonde matrix of a vector: columns x^(N-1), ..., x^1, x^0 (increasing: x^0 first),
--- N = #x by default; integer inputs give int64, as PyTorch (powers by cumulative products)
function torch.vander(x, N, increasing)
  check_tensor(x, 'vander')
  if type(N) == 'table' then N, increasing = N.N, N.increasing end
  if x:dim() ~= 1 then error('vander: x must be a one-dimensional tensor, got ' .. x:dim() .. '-D', 2) end
  N = N or x:numel()
  N = as_int(N)
  if math.type(N) ~= 'integer' or N < 0 then error('vander: N must be a non-negative integer, got ' .. tostring(N), 2) end
  local dt = torch.promote_types(x.dtype, torch.int64)
  local n = x:numel()
  local ones = torch.ones(n, math.min(N, 1), { dtype = dt, device = x.device })
  local r = ones
  if N > 1 then r = torch.cat({ ones, x:to(dt):unsqueeze(2):expand(n, N - 1):cumprod(2) }, 2) end
  if not increasing then r = r:flip(2) end
  return r
end

--- random integers in [low, high) (low 0 when only high is given) in x's shape, dtype and device,
--- {dtype, device, requires_grad} overriding them
function torch.randint_like(x, low, high, o)
  check_tensor(x, 'randint_like')
  if type(high) == 'table' then o, high = high, nil end
  if high == nil then low, high = 0, low end
  o = factory_opts(o, 'randint_like')
  low = as_int(low)
  high = as_int(high)
  if math.type(low) ~= 'integer' or math.type(high) ~= 'integer' then
    error('randint_like: low and high must be integers', 2)
  end
  if low >= high then error(string.format('randint_like: expected low < high, got %d and %d', low, high), 2) end
  return finish(torch.randint(low, high, x.shape, { dtype = o.dtype or x.dtype, device = o.device or x.device }), o)
end
