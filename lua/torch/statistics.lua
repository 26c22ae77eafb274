-- Reductions, counting and sampling composed in Lua from the primitives: nansum, nanmean,
-- count_nonzero, aminmax, dist, kthvalue, median, unique, unique_consecutive, histc, bernoulli,
-- multinomial, std_mean/var_mean, cov/corrcoef, bincount, mode, nanmedian, quantile/nanquantile and
-- renorm; methods and torch.* functions, indices 1-based.
local torch = require 'torch'
local Tensor = torch.Tensor
local U = require 'torch.composite'
local as_int = require('torch.composite').as_int
local check_tensor, norm_dim, opts_of, both, is_float = U.check_tensor, U.norm_dim, U.opts_of, U.both, U.is_float
local naming = U.naming

-- ---- reductions ----

--- NaNs counted as zero (sum) or left out (mean)
both('nansum', naming('nansum', function(x, ...)
  return torch.where(x:ne(x), torch.zeros_like(x), x):sum(...)
end))
both('nanmean', naming('nanmean', function(x, dim, keepdim)
  check_tensor(x, 'nanmean')
  if not is_float(x) then
    error('nanmean: expected a floating point input, got ' .. x.dtype.name .. ' (as PyTorch; use mean)', 2)
  end
  local ok = x:eq(x)
  local s = torch.where(ok, x, torch.zeros_like(x))
  if dim == nil then return s:sum() / ok:sum() end
  return s:sum(dim, keepdim) / ok:sum(dim, keepdim)
end))

both('count_nonzero', naming('count_nonzero', function(x, dim)
  if dim == nil then return x:ne(0):sum() end
  return x:ne(0):sum(dim)
end))

both('aminmax', function(x, o)
  o = opts_of(o, 'aminmax', { 'dim', 'keepdim' })
  if o.dim == nil then return x:amin(), x:amax() end
  return x:amin(o.dim, o.keepdim), x:amax(o.dim, o.keepdim)
end)

both('dist', function(a, b, p) return (a - b):norm(p or 2) end)

--- the k-th smallest element along dim (default: the last), with its index
both('kthvalue', function(x, k, dim, keepdim)
  check_tensor(x, 'kthvalue')
  if x:dim() == 0 then x, keepdim = x:reshape(1), false end -- a 0-D result, keepdim or not (PyTorch)
  dim = norm_dim(dim or -1, x:dim(), 'kthvalue')
  local n = x:size(dim)
  k = as_int(k)
  if math.type(k) ~= 'integer' or k < 1 or k > n then
    error(string.format('kthvalue: k (%s) out of range for dimension %d of size %d', tostring(k), dim, n), 2)
  end
  local v, i = x:sort(dim)
  v, i = v:narrow(dim, k, 1), i:narrow(dim, k, 1)
  if not keepdim then v, i = v:squeeze(dim), i:squeeze(dim) end
  return v, i
end)

-- the median m (0-D) of the whole of x (flattened) as PyTorch's: its gradient is shared evenly
-- among the elements equal to it (among the NaNs where it is NaN)
local WholeMedian = torch.autograd.Function:extend('MedianBackward0')
function WholeMedian.forward(ctx, x, m)
  ctx:save_for_backward(x, m)
  return m:clone()
end
function WholeMedian.backward(ctx, g)
  local x, m = table.unpack(ctx.saved_tensors)
  local hit = (m:ne(m):item() and x:ne(x) or x:eq(m)):to(x.dtype)
  return hit * (g / hit:sum())
end

-- op's median of the whole of x (flattened, by value(x) along dim 1); an empty x is an error
-- (PyTorch gives NaN for floats, an uninitialised value for integers)
local function whole_median(op, x, value)
  if x:numel() == 0 then error(op .. ': cannot compute the median of an empty tensor', 3) end
  local m = value(x)
  return WholeMedian.apply(x, m:detach():reshape({}))
end

--- the lower of the two middle values, NaN where a NaN is present (as PyTorch); with a dim, also
--- its index
both('median', function(x, dim, keepdim)
  check_tensor(x, 'median')
  local whole = dim == nil
  if whole then return whole_median('median', x:reshape(-1), function(f) return f:median(1) end) end
  if x:dim() == 0 then x, keepdim = x:reshape(1), false end -- a 0-D result, keepdim or not (PyTorch)
  dim = norm_dim(dim or 1, x:dim(), 'median')
  local n = x:size(dim)
  if n == 0 then error('median: cannot compute the median of an empty dimension', 2) end
  local v, i = x:sort(dim) -- NaNs last
  local pos = torch.full_like(v:narrow(dim, 1, 1), (n - 1) // 2 + 1, { dtype = torch.int64 })
  if is_float(x) then -- the first NaN where there is one
    local nans = x:ne(x):sum(dim, true)
    pos = torch.where(nans:gt(0), n - nans + 1, pos)
  end
  local mv, mi = v:gather(dim, pos), i:gather(dim, pos)
  if not keepdim then mv, mi = mv:squeeze(dim), mi:squeeze(dim) end
  return mv, mi
end)

-- the lengths of the runs that start where `new` (n booleans) is true
local function run_lengths(new, n, device)
  local starts = new:nonzero():reshape(-1)
  local m = starts:numel()
  if m == 0 then return torch.zeros(0, { dtype = torch.int64, device = device }) end
  local after = torch.full({ 1 }, n + 1, { dtype = torch.int64, device = device })
  local ends = m > 1 and torch.cat({ starts:narrow(1, 2, m - 1), after }) or after
  return ends - starts
end

-- the 1-based order that sorts the rows of the matrix m lexicographically: stable sorts by each
-- column, the last first (a radix sort whose digits are the columns)
local function lex_order(m)
  m = m:detach()
  local n = m:size(1)
  local order = torch.arange(1, n + 1, { dtype = torch.int64, device = m.device })
  for c = m:size(2), 1, -1 do
    order = order:index_select(1, m:select(2, c):index_select(1, order):argsort())
  end
  return order
end

-- op (unique or unique_consecutive) along dim: x's slices along dim (each flattened in the order of
-- x:transpose(1, dim), as PyTorch 1.13's, which decides their lexicographic order), sorted where
-- `sort` is set, with runs of equal ones kept once, and as o asks, each slice's 1-based place among
-- those kept and each kept slice's count
local function unique_slices(op, x, dim, o, sort)
  if x:dim() == 0 then error(op .. ': a 0-D tensor has no dim to take slices along', 3) end
  dim = norm_dim(dim, x:dim(), op)
  for d = 1, x:dim() do
    if d ~= dim and x:size(d) == 0 then
      error(string.format('%s: dimension %d has size 0 and is not dim (%d), so there are no slices to compare', op, d,
        dim), 3)
    end
  end
  local m = x:transpose(1, dim)
  local n = m:size(1)
  local rows = m:reshape({ n, n > 0 and m:numel() // n or 0 })
  local order = sort and n > 1 and lex_order(rows) or nil
  if order then rows = rows:index_select(1, order) end
  local new = torch.ones(n, { dtype = torch.bool, device = x.device })
  if n > 1 then new:narrow(1, 2, n - 1):copy_(rows:narrow(1, 2, n - 1):ne(rows:narrow(1, 1, n - 1)):any(2)) end
  local shape = m.shape
  local kept = rows:index_select(1, new:nonzero():reshape(-1))
  local sizes = { kept:size(1) }
  for d = 2, #shape do sizes[d] = shape[d] end
  local res = { kept:reshape(sizes):transpose(1, dim) }
  if o.return_inverse then
    local group = new:long():cumsum(1)
    if order then group = torch.zeros(n, { dtype = torch.int64, device = x.device }):scatter_(1, order, group) end
    res[#res + 1] = group
  end
  if o.return_counts then res[#res + 1] = run_lengths(new, n, x.device) end
  return table.unpack(res)
end

--- the distinct values in ascending order; {return_inverse, return_counts, sorted} as PyTorch's
--- options (each NaN is distinct); with {dim}, the distinct slices along dim in lexicographic
--- order (sorted or not, as PyTorch's)
both('unique', function(x, o)
  check_tensor(x, 'unique')
  o = opts_of(o, 'unique', { 'sorted', 'return_inverse', 'return_counts', 'dim' })
  if o.dim ~= nil then return unique_slices('unique', x, o.dim, o, true) end
  local flat = x:reshape(-1)
  local n = flat:numel()
  local s, order = flat:sort()
  local new
  if n > 0 then
    new = torch.cat({ torch.ones(1, { dtype = torch.bool, device = x.device }), s:narrow(1, 2, n - 1):ne(s:narrow(1, 1, n - 1)) })
  else
    new = torch.zeros(0, { dtype = torch.bool, device = x.device })
  end
  local values = s:masked_select(new)
  local res = { values }
  if o.return_inverse then
    local group = new:long():cumsum(1) -- 1-based: the unique value each sorted element is
    local inv = torch.zeros(n, { dtype = torch.int64, device = x.device })
    if n > 0 then inv:scatter_(1, order, group) end
    res[#res + 1] = inv:reshape(x.shape)
  end
  if o.return_counts then res[#res + 1] = run_lengths(new, n, x.device) end
  return table.unpack(res)
end)

--- consecutive runs of equal values (slices along dim, with dim) as one; {return_inverse,
--- return_counts, dim}
both('unique_consecutive', function(x, o)
  check_tensor(x, 'unique_consecutive')
  o = opts_of(o, 'unique_consecutive', { 'return_inverse', 'return_counts', 'dim' })
  if o.dim ~= nil then return unique_slices('unique_consecutive', x, o.dim, o, false) end
  local flat = x:reshape(-1)
  local n = flat:numel()
  local new = n > 0 and torch.cat({ torch.ones(1, { dtype = torch.bool, device = x.device }), flat:narrow(1, 2, n - 1):ne(flat:narrow(1, 1, n - 1)) })
    or torch.zeros(0, { dtype = torch.bool, device = x.device })
  local res = { flat:masked_select(new) }
  if o.return_inverse then res[#res + 1] = new:long():cumsum(1):reshape(x.shape) end
  if o.return_counts then res[#res + 1] = run_lengths(new, n, x.device) end
  return table.unpack(res)
end)

--- a histogram of `bins` equal bins over [min, max] (the data's range when both are 0)
both('histc', function(x, bins, lo, hi)
  check_tensor(x, 'histc')
  if type(bins) == 'table' then bins, lo, hi = bins.bins, bins.min, bins.max end
  bins, lo, hi = bins or 100, lo or 0, hi or 0
  if not is_float(x) then error('histc: expected a floating point tensor, got ' .. tostring(x.dtype), 2) end
  bins = as_int(bins)
  if math.type(bins) ~= 'integer' or bins <= 0 then error('histc: bins must be > 0, got ' .. tostring(bins), 2) end
  if lo == hi and x:numel() > 0 then lo, hi = x:min():item(), x:max():item() end
  if lo == hi then lo, hi = lo - 1, hi + 1 end
  if lo > hi then error(string.format('histc: max must be larger than min, got min %g and max %g', lo, hi), 2) end
  local flat = x:reshape(-1):double()
  local inside = flat:ge(lo):logical_and(flat:le(hi))
  local v = flat:masked_select(inside)
  local b = ((v - lo) * (bins / (hi - lo))):floor():long():clamp(0, bins - 1) + 1
  local h = torch.zeros(bins, { dtype = torch.float64, device = x.device })
  if b:numel() > 0 then h:scatter_add_(1, b, torch.ones(b:numel(), { dtype = torch.float64, device = x.device })) end
  return h:to(x.dtype)
end)

-- the outer edges of op's bins for the values x: range (nil or {min, max}), or the data's extent
-- (0 to 1 for no data), widened by 0.5 on each side when they meet, as PyTorch's; `what` names
-- the dimension in errors
local function outer_edges(op, x, range, what)
  local lo, hi
  if range ~= nil then
    if type(range) ~= 'table' or type(range[1]) ~= 'number' or type(range[2]) ~= 'number' then
      error(op .. ': range must be a table of two numbers {min, max}', 4)
    end
    lo, hi = range[1], range[2]
  elseif x:numel() > 0 then
    lo, hi = x:min():item(), x:max():item()
  else
    lo, hi = 0, 1
  end
  if lo > hi then error(string.format('%s: min should not exceed max, but got min %g max %g%s', op, lo, hi, what), 4) end
  if lo ~= lo or hi ~= hi or lo == -math.huge or hi == math.huge then
    local function show(v) return v ~= v and 'nan' or string.format('%g', v) end
    error(string.format('%s: the range [%s, %s] is not finite%s', op, show(lo), show(hi), what), 4)
  end
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  return lo, hi
end

-- the bin edges of op's histogram of the values x (a 1-D tensor): bins equal bins over range (or
-- the data's extent), or bins a 1-D tensor of non-decreasing edges (copied, on x's device)
local function bin_edges(op, x, bins, range, what)
  what = what or ''
  if torch.is_tensor(bins) then
    if range ~= nil then error(op .. ': range cannot be given with a tensor of bin edges', 3) end
    if bins:dim() ~= 1 or bins:numel() < 2 then
      error(string.format('%s: bin edges must be a 1-D tensor of at least 2 values, got shape %s%s', op,
        tostring(bins.shape), what), 3)
    end
    if bins.dtype ~= x.dtype then
      error(string.format('%s: input and bin edges should have the same dtype, got %s and %s%s', op, x.dtype.name,
        bins.dtype.name, what), 3)
    end
    if bins:diff():lt(0):any():item() then error(op .. ': bin edges must be non-decreasing' .. what, 3) end
    return bins:to(x.device):clone()
  end
  bins = as_int(bins)
  if math.type(bins) ~= 'integer' or bins <= 0 then
    error(string.format('%s: bins must be > 0, got %s%s', op, tostring(bins), what), 3)
  end
  local lo, hi = outer_edges(op, x, range, what)
  return torch.linspace(lo, hi, bins + 1, { dtype = x.dtype, device = x.device })
end

-- the 1-based bins of the values v (1-D) among edges, and whether each is inside them: each bin
-- holds its left edge, the last also its right one (searchsorted's 1-based insertion position
-- after the edges <= v is the bin + 1)
local function bins_of(v, edges)
  local nb = edges:numel() - 1
  local inside = v:ge(edges[1]):logical_and(v:le(edges[nb + 1]))
  return (torch.searchsorted(edges, v, { right = true }) - 1):clamp(1, nb), inside
end

local function check_float_input(op, x)
  if x.dtype ~= torch.float32 and x.dtype ~= torch.float64 then
    error(op .. ': expected a float32 or float64 input, got ' .. x.dtype.name, 3)
  end
end

--- torch.histogram(x, bins = 100, {range = {min, max}, weight, density = false}) -> hist, bin_edges:
--- the counts (or the weights summed) of x's values in each bin, for `bins` equal bins over range
--- (the data's extent by default) or bins given as a 1-D tensor of increasing edges; each bin holds
--- its left edge, the last also its right one; density divides by the total and the bin widths.
--- float32 and float64 inputs, as PyTorch's
both('histogram', function(x, bins, o)
  check_tensor(x, 'histogram')
  if type(bins) == 'table' and not torch.is_tensor(bins) then bins, o = nil, bins end
  o = opts_of(o, 'histogram', { 'range', 'weight', 'density' })
  check_float_input('histogram', x)
  local edges = bin_edges('histogram', x, bins or 100, o.range)
  local nb = edges:numel() - 1
  local flat = x:reshape(-1)
  local at, inside = bins_of(flat, edges)
  at = at:masked_select(inside)
  local w
  if o.weight ~= nil then
    check_tensor(o.weight, 'histogram', 'weight')
    if o.weight.shape ~= x.shape or o.weight.dtype ~= x.dtype then
      error(string.format('histogram: weight should have the shape and dtype of input (%s, %s), got %s, %s',
        tostring(x.shape), x.dtype.name, tostring(o.weight.shape), o.weight.dtype.name), 2)
    end
    w = o.weight:reshape(-1):masked_select(inside)
  else
    w = torch.ones(at:numel(), { dtype = x.dtype, device = x.device })
  end
  local hist = torch.zeros(nb, { dtype = x.dtype, device = x.device }):index_add(1, at, w)
  if o.density then hist = hist / (hist:sum() * edges:diff()) end
  return hist, edges
end)

--- torch.histogramdd(x, bins, {range, weight, density = false}) -> hist, bin_edges: the histogram
--- of the points x (its last dim holds each point's D coordinates; float32 or float64), hist of
--- D dims and bin_edges a table of D edge tensors. bins: a count for every dim, a table of D
--- counts, or a table of D edge tensors; range: {min1, max1, ..., minD, maxD} (default: each
--- coordinate's extent); weight: one per point (x's shape without its last dim); density divides
--- by the total and the bins' volumes. Each dim's binning is histogram's.
both('histogramdd', function(x, bins, o)
  local op = 'histogramdd'
  check_tensor(x, op)
  if type(bins) == 'table' and not torch.is_tensor(bins) and bins[1] == nil and next(bins) ~= nil then bins, o = nil, bins end
  o = opts_of(o, op, { 'range', 'weight', 'density' })
  check_float_input(op, x)
  if x:dim() < 2 then error(op .. ': input tensor should have at least 2 dimensions', 2) end
  local D = x:size(-1)
  if bins == nil then error(op .. ': bins is required', 2) end
  local per_dim = {}
  if type(bins) == 'table' and not torch.is_tensor(bins) then
    if #bins ~= D then
      error(string.format('%s: bins should have one entry for each of the %d dimensions, got %d', op, D, #bins), 2)
    end
    per_dim = bins
  else
    for d = 1, D do per_dim[d] = bins end
  end
  local range = o.range
  if range ~= nil and (type(range) ~= 'table' or #range ~= 2 * D) then
    error(string.format('%s: for a %d-dimensional histogram range should have %d elements, but got %s', op, D, 2 * D,
      type(range) == 'table' and #range or type(range)), 2)
  end
  local points = x:reshape(-1, D)
  local n = points:size(1)
  local w
  if o.weight ~= nil then
    check_tensor(o.weight, op, 'weight')
    local want = setmetatable({ table.unpack(x.shape, 1, x:dim() - 1) }, torch.Size)
    if o.weight.shape ~= want or o.weight.dtype ~= x.dtype then
      error(string.format('%s: weight should have the shape of input without its last dimension and its dtype (%s, %s), got %s, %s',
        op, tostring(want), x.dtype.name, tostring(o.weight.shape), o.weight.dtype.name), 2)
    end
    w = o.weight:reshape(-1)
  else
    w = torch.ones(n, { dtype = x.dtype, device = x.device })
  end
  local edges, sizes = {}, {}
  local flat = torch.zeros(n, { dtype = torch.int64, device = x.device })
  local inside = torch.ones(n, { dtype = torch.bool, device = x.device })
  for d = 1, D do
    local v = points:select(2, d)
    edges[d] = bin_edges(op, v, per_dim[d], range and { range[2 * d - 1], range[2 * d] },
      ' for dimension ' .. d)
    sizes[d] = edges[d]:numel() - 1
    local at, ins = bins_of(v, edges[d])
    flat = flat * sizes[d] + (at - 1)
    inside = inside:logical_and(ins)
  end
  local total = 1
  for d = 1, D do total = total * sizes[d] end
  local hist = torch.zeros(total, { dtype = x.dtype, device = x.device })
    :index_add(1, flat:masked_select(inside) + 1, w:masked_select(inside)):reshape(sizes)
  if o.density then
    local volume = hist:sum()
    for d = 1, D do
      local shape = {}
      for e = 1, D do shape[e] = e == d and sizes[d] or 1 end
      volume = volume * edges[d]:diff():reshape(shape)
    end
    hist = hist / volume
  end
  return hist, edges
end)

-- ---- sampling ----

-- the generator option of op's options table o (nil: torch's global generator)
local function generator_opt(o, op)
  local g = o and o.generator
  if g ~= nil and not torch._is_generator(g) then
    error(op .. ': generator should be a torch.Generator, got ' .. type(g), 3)
  end
  return g
end

--- 0 or 1 drawn with the probabilities in x (or with probability p): bernoulli(x, [p], {generator})
both('bernoulli', function(x, p, o)
  check_tensor(x, 'bernoulli')
  if type(p) == 'table' and not torch.is_tensor(p) then p, o = nil, p end
  local g = generator_opt(o, 'bernoulli')
  if p ~= nil then return torch.empty_like(x):bernoulli_(p, { generator = g }) end
  return torch.rand_like(x, { dtype = is_float(x) and x.dtype or torch.float32, generator = g }):lt(x):to(x.dtype)
end)

--- num_samples 1-based indices drawn from each row's weights (with replacement, or without:
--- each index at most once): multinomial(x, n, replacement, {generator}) or (x, n, {replacement, generator})
both('multinomial', function(x, num_samples, replacement, o)
  check_tensor(x, 'multinomial')
  if type(replacement) == 'table' then replacement, o = replacement.replacement, replacement end
  local g = generator_opt(o, 'multinomial')
  if x:dim() ~= 1 and x:dim() ~= 2 then error('multinomial: prob_dist must be 1 or 2 dim, got ' .. x:dim(), 2) end
  if not is_float(x) then error('multinomial: only floating point probabilities are supported, got ' .. tostring(x.dtype), 2) end
  local p = x:dim() == 1 and x:unsqueeze(1) or x
  local k = p:size(2)
  num_samples = as_int(num_samples)
  if math.type(num_samples) ~= 'integer' or num_samples <= 0 then
    error('multinomial: cannot sample n_sample <= 0 samples, got ' .. tostring(num_samples), 2)
  end
  if not replacement and num_samples > k then
    error(string.format('multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement (%d > %d)', num_samples, k), 2)
  end
  local pd = p:double()
  if pd:lt(0):any():item() or pd:ne(pd):any():item() or pd:eq(math.huge):any():item() then
    error('multinomial: probability tensor contains either `inf`, `nan` or element < 0', 2)
  end
  local total = pd:sum(2, true)
  if total:le(0):any():item() then error('multinomial: invalid multinomial distribution (sum of probabilities <= 0)', 2) end
  local out
  if replacement then
    local cdf = (pd / total):cumsum(2)
    local u = torch.rand(p:size(1), num_samples, { dtype = torch.float64, device = x.device, generator = g })
    -- the first bin whose cumulative weight exceeds u (never one of zero weight)
    out = cdf:unsqueeze(2):le(u:unsqueeze(3)):sum(3) + 1
    out = out:clamp(1, k)
  else
    -- the largest keys u^(1 / p): a draw without replacement in proportion to p (zero weights last)
    local u = torch.rand(p:size(1), k, { dtype = torch.float64, device = x.device, generator = g })
    local keys = torch.where(pd:gt(0), u:log() / pd, torch.full_like(pd, -math.huge))
    local _, idx = keys:topk(num_samples, 2)
    out = idx
  end
  if x:dim() == 1 then out = out:squeeze(1) end
  return out:long()
end)

-- ---- moments, covariance ----

--- torch.std_mean(x, ...) (var_mean): x:std(...) (x:var(...)) and the mean over the same dims, as
--- two results; the arguments are std's: (dim, keepdim, {unbiased, correction}), or an options
--- table alone, or PyTorch's std_mean(x, unbiased)
local function with_mean(op, f)
  torch[op] = function(x, ...)
    check_tensor(x, op)
    if not is_float(x) then error(op .. ': std and var only support floating point dtypes, got ' .. x.dtype.name, 2) end
    local a = table.pack(...)
    if type(a[1]) == 'boolean' then return f(x, { unbiased = a[1] }), x:mean() end
    local dim, keepdim = a[1], a[2] == true
    if type(dim) == 'table' and not torch.is_tensor(dim) and dim[1] == nil then dim, keepdim = nil, false end
    return f(x, ...), x:mean(dim, keepdim)
  end
end
with_mean('std_mean', Tensor.std)
with_mean('var_mean', Tensor.var)

--- the covariance matrix of the variables in x's rows (observations in its columns; a vector is
--- one variable): {correction = 1, fweights (integer counts of each observation), aweights
--- (floating weights)}, NumPy's and PyTorch's normalisation (a non-positive one gives inf/NaN)
both('cov', function(x, o)
  local op = 'cov'
  check_tensor(x, op)
  o = opts_of(o, op, { 'correction', 'fweights', 'aweights' })
  local correction = o.correction or 1
  if x:dim() > 2 then
    error(string.format('cov: expected input to have two or fewer dimensions but got an input with %d dimensions', x:dim()), 2)
  end
  if x.dtype == torch.bool then error('cov: bool dtype is not supported for input', 2) end
  if type(correction) ~= 'number' then error('cov: correction must be a number, got ' .. type(correction), 2) end
  local input = x:dim() < 2 and x:reshape(1, -1) or x
  local n = input:size(2)
  local dt = is_float(x) and x.dtype or torch.get_default_dtype()
  local function weights(name, integral)
    local w = o[name]
    if w == nil then return nil end
    check_tensor(w, op, name)
    if w:dim() > 1 then
      error(string.format('cov: expected %s to have one or fewer dimensions but got %s with %d dimensions', name, name, w:dim()), 3)
    end
    if integral and (is_float(w) or w.dtype == torch.bool) then
      error(string.format('cov: expected fweights to have integral dtype but got fweights with %s dtype', w.dtype.name), 3)
    end
    if not integral and not is_float(w) then
      error(string.format('cov: expected aweights to have floating point dtype but got aweights with %s dtype', w.dtype.name), 3)
    end
    if w:numel() ~= n then
      error(string.format('cov: expected %s to have the same numel as there are observations in the input but got %d != %d',
        name, w:numel(), n), 3)
    end
    if n > 0 and w:min():item() < 0 then error(string.format('cov: %s cannot be negative', name), 3) end
    return w
  end
  local fw, aw = weights('fweights', true), weights('aweights', false)
  if aw then dt = torch.promote_types(dt, aw.dtype) end
  input = input:to(dt)
  local w = fw and fw:to(dt)
  if aw then w = w and w * aw:to(dt) or aw:to(dt) end
  local w_sum = w and w:sum() or torch.full({}, n, { dtype = dt, device = x.device })
  if w and w_sum:eq(0):item() then error("cov: weights sum to zero, can't be normalized", 2) end
  local avg = (w and input * w or input):sum(2) / w_sum
  local norm
  if w and correction ~= 0 and aw then
    norm = w_sum - (w * aw:to(dt)):sum() / w_sum * correction
  else
    norm = w_sum - correction
  end
  norm = torch.where(norm:le(0), torch.zeros_like(norm), norm)
  local centred = input - avg:unsqueeze(2)
  local c = centred:mm((w and centred * w or centred):t()) / norm
  return c:squeeze()
end)

--- Pearson's correlation coefficients of the variables in x's rows: cov(x) scaled by the standard
--- deviations, clamped to [-1, 1]
both('corrcoef', function(x)
  check_tensor(x, 'corrcoef')
  local c = torch.cov(x)
  if c:dim() == 0 then return c / c end
  local sd = c:diagonal():sqrt()
  c = c / sd:unsqueeze(2)
  c = c / sd:unsqueeze(1)
  return c:clamp(-1, 1)
end)

-- ---- counting ----

--- the number of times each value 0, 1, ... occurs in a 1-D tensor of non-negative integers, at
--- position value + 1 (values are counted, not used as indices): max(x) + 1 or minlength
--- entries; {weights} sums a weight per element instead (float32 weights give float32, others
--- float64)
both('bincount', function(x, o)
  check_tensor(x, 'bincount')
  o = opts_of(o, 'bincount', { 'weights', 'minlength' })
  local minlength = o.minlength or 0
  if is_float(x) or x.dtype == torch.bool then
    error('bincount: only supports 1-d non-negative integral inputs, got ' .. x.dtype.name, 2)
  end
  if x:dim() ~= 1 then error('bincount: only supports 1-d non-negative integral inputs, got a ' .. x:dim() .. '-D tensor', 2) end
  minlength = as_int(minlength)
  if math.type(minlength) ~= 'integer' or minlength < 0 then
    error('bincount: minlength should be a non-negative integer, got ' .. tostring(minlength), 2)
  end
  local n = x:numel()
  if n > 0 and x:min():item() < 0 then error('bincount: only supports 1-d non-negative integral inputs (found a negative value)', 2) end
  local size = math.max(n > 0 and x:max():item() + 1 or 0, minlength)
  local w = o.weights
  local dt, src = torch.int64, nil
  if w ~= nil then
    check_tensor(w, 'bincount', 'weights')
    if w:dim() ~= 1 or w:numel() ~= n then
      error('bincount: weights should be 1-d and have the same length as input', 2)
    end
    dt = w.dtype == torch.float32 and torch.float32 or torch.float64
    src = w:to(dt)
  else
    src = torch.ones(n, { dtype = dt, device = x.device })
  end
  local counts = torch.zeros(size, { dtype = dt, device = x.device })
  if n == 0 then return counts end
  return counts:scatter_add(1, x:long() + 1, src)
end)

-- ---- order statistics ----

--- the most frequent value along dim (default the last) and the 1-based index of its last
--- occurrence; among equally frequent values the smallest (each NaN counts as a value of its own)
both('mode', function(x, dim, keepdim)
  check_tensor(x, 'mode')
  if type(dim) == 'table' then dim, keepdim = dim.dim, dim.keepdim end
  if x:dim() == 0 then return x:clone(), torch.ones({}, { dtype = torch.int64, device = x.device }) end
  dim = norm_dim(dim or -1, x:dim(), 'mode')
  local n = x:size(dim)
  if n == 0 then error(string.format('mode: Expected reduction dim %d to have non-zero size.', dim), 2) end
  local v, i = x:sort(dim) -- stable: equal values keep their order
  local shape = x.shape
  shape[dim] = 1
  local new = torch.cat({ torch.ones(shape, { dtype = torch.bool, device = x.device }),
    v:narrow(dim, 2, n - 1):ne(v:narrow(dim, 1, n - 1)) }, dim)
  local run = new:long():cumsum(dim) -- 1-based run of each sorted element
  local counts = torch.zeros_like(run):scatter_add(dim, run, torch.ones_like(run))
  local best = counts:argmax(dim, true) -- the first run of the largest count: the smallest value
  local last = counts:cumsum(dim):gather(dim, best)
  local mv, mi = v:gather(dim, last), i:gather(dim, last)
  if not keepdim then mv, mi = mv:squeeze(dim), mi:squeeze(dim) end
  return mv, mi
end)

--- the median of the values that are not NaN (NaN where all are), as median (the lower of two
--- middle values); with a dim, also its 1-based index
both('nanmedian', function(x, dim, keepdim)
  check_tensor(x, 'nanmedian')
  if not is_float(x) then return x:median(dim, keepdim) end
  if dim == nil then return whole_median('nanmedian', x:reshape(-1), function(f) return f:nanmedian(1) end) end
  if x:dim() == 0 then x, keepdim = x:reshape(1), false end -- a 0-D result, keepdim or not (PyTorch)
  dim = norm_dim(dim, x:dim(), 'nanmedian')
  if x:size(dim) == 0 then error('nanmedian: cannot compute the median of an empty dimension', 2) end
  local v, i = x:sort(dim) -- NaNs last
  local valid = x:eq(x):sum(dim, true)
  local pos = torch.where(valid:gt(0), (valid - 1):floor_divide(2) + 1, torch.ones_like(valid))
  local mv, mi = v:gather(dim, pos), i:gather(dim, pos)
  if not keepdim then mv, mi = mv:squeeze(dim), mi:squeeze(dim) end
  return mv, mi
end)

local interpolations = { linear = true, lower = true, higher = true, midpoint = true, nearest = true }

-- quantile and nanquantile: x sorted along dim (or flattened), the rank q * (n - 1) of each q (n
-- counting the values that are not NaN for nanquantile; the last rank, a NaN, where quantile meets
-- one) adjusted by the interpolation, and the values at the ranks either side interpolated
local function quantile(op, ignore_nan, x, q, dim, keepdim, o)
  check_tensor(x, op)
  if type(dim) == 'table' then o, dim, keepdim = dim, dim.dim, dim.keepdim end
  if type(keepdim) == 'table' then o, keepdim = keepdim, keepdim.keepdim end -- (x, q, dim, {options})
  o = opts_of(o, op, { 'dim', 'keepdim', 'interpolation' }, 4)
  local interpolation = o.interpolation or 'linear'
  if not interpolations[interpolation] then
    error(op .. ': interpolation must be one of linear, lower, higher, midpoint or nearest, but got ' .. tostring(interpolation), 3)
  end
  if x.dtype ~= torch.float32 and x.dtype ~= torch.float64 then
    error(op .. ': input tensor must be either float or double dtype, got ' .. x.dtype.name, 3)
  end
  if x:numel() == 0 then error(op .. ': input tensor must be non-empty', 3) end
  local scalar_q = not torch.is_tensor(q) or q:dim() == 0
  if torch.is_tensor(q) then
    if q:dim() > 1 then error(op .. ': q must be a scalar or 1D tensor', 3) end
    if q.dtype ~= x.dtype then
      error(string.format('%s: q tensor must be same dtype as the input tensor, got %s and %s', op, q.dtype.name, x.dtype.name), 3)
    end
    if q:numel() > 0 and (q:min():item() < 0 or q:max():item() > 1) then error(op .. ': q values must be in the range [0, 1]', 3) end
    q = q:reshape(-1)
  elseif type(q) == 'number' then
    if not (q >= 0 and q <= 1) then error(op .. ': q must be in the range [0, 1] but got ' .. tostring(q), 3) end
    q = torch.tensor({ q }, { dtype = x.dtype, device = x.device })
  else
    error(op .. ': q must be a number or a tensor, got ' .. type(q), 3)
  end
  local nd = x:dim()
  local sorted
  if dim == nil then
    sorted = x:reshape(-1):sort()
  else
    dim = norm_dim(dim, nd, op)
    sorted = (nd == 0 and x:reshape(1) or x):sort(dim)
    if nd > 0 then sorted = sorted:movedim(dim, -1) end
  end
  local n = sorted:size(-1)
  local nan = sorted:ne(sorted)
  local qshape = {}
  for d = 1, sorted:dim() - 1 do qshape[d] = 1 end
  qshape[#qshape + 1] = q:numel()
  local qs = q:reshape(qshape)
  local ranks
  if ignore_nan then
    ranks = qs * (nan:logical_not():sum(-1, true):to(x.dtype) - 1)
    ranks = torch.where(ranks:lt(0), torch.zeros_like(ranks), ranks)
  else
    ranks = torch.where(nan:any(-1, true), torch.full_like(qs, n - 1), qs * (n - 1))
  end
  if interpolation == 'lower' then ranks = ranks:floor()
  elseif interpolation == 'higher' then ranks = ranks:ceil()
  elseif interpolation == 'nearest' then ranks = ranks:round() end -- half to even, as PyTorch
  local below = ranks:floor()
  local r = sorted:gather(-1, below:long() + 1)
  if interpolation == 'linear' or interpolation == 'midpoint' then
    local above = sorted:gather(-1, ranks:ceil():long() + 1)
    local w = interpolation == 'midpoint' and torch.full_like(ranks, 0.5) or ranks - below
    r = r:lerp(above, w)
  end
  -- r is (rest..., nq): the q dim first, then the reduced shape (its dims kept as 1 with keepdim)
  if scalar_q then r = r:squeeze(-1) else r = r:movedim(-1, 1) end
  local lead = scalar_q and 0 or 1
  if keepdim then
    if dim == nil then
      local shape = scalar_q and {} or { q:numel() }
      for _ = 1, nd do shape[#shape + 1] = 1 end
      r = r:reshape(shape)
    elseif nd > 0 then
      r = r:unsqueeze(lead + dim)
    end
  elseif dim == nil and r:dim() > lead then
    r = r:reshape(scalar_q and {} or { q:numel() })
  end
  return r
end

--- the q-th quantiles (q a number or a 1-D tensor of x's dtype, in [0, 1]) along dim (the flattened
--- x without one), {keepdim, interpolation = 'linear' | 'lower' | 'higher' | 'midpoint' |
--- 'nearest'}; with a tensor q the result has q's dim first. quantile is NaN where NaN is present;
--- nanquantile leaves NaNs out. Also (x, q, {dim, keepdim, interpolation}) and (x, q, dim, {keepdim,
--- interpolation}).
both('quantile', function(x, q, dim, keepdim, o) return (quantile('quantile', false, x, q, dim, keepdim, o)) end)
both('nanquantile', function(x, q, dim, keepdim, o) return (quantile('nanquantile', true, x, q, dim, keepdim, o)) end)

-- ---- norms ----

--- x with each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm (by
--- maxnorm / (norm + 1e-7), as PyTorch)
both('renorm', function(x, p, dim, maxnorm)
  check_tensor(x, 'renorm')
  if not is_float(x) then error('renorm: expected a floating point tensor, got ' .. x.dtype.name, 2) end
  if x:dim() < 2 then error(string.format('renorm: input needs at least 2 dimensions, got %d dimensions', x:dim()), 2) end
  if type(p) ~= 'number' or not (p > 0) then error('renorm: non-positive-norm not supported, got p = ' .. tostring(p), 2) end
  if type(maxnorm) ~= 'number' or not (maxnorm >= 0) then
    error('renorm: expected maxnorm to be >= 0 but got ' .. tostring(maxnorm), 2)
  end
  dim = norm_dim(dim, x:dim(), 'renorm')
  local others = {}
  for d = 1, x:dim() do if d ~= dim then others[#others + 1] = d end end
  local norm = x:norm(p, others, true)
  local scale = torch.where(norm:gt(maxnorm), maxnorm / (norm + 1e-7), torch.ones_like(norm))
  return x * scale
end)
U.in_place('renorm', Tensor.renorm)
