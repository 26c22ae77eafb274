-- Reductions, counting and sampling composed in Lua from the primitives: nansum, nanmean,
-- count_nonzero, aminmax, dist, kthvalue, median, unique, unique_consecutive, histc, bernoulli and
-- multinomial; methods and torch.* functions, indices 1-based.
local torch = require 'torch'
local U = require 'torch.composite'
local check_tensor, norm_dim, opts_of, both, is_float = U.check_tensor, U.norm_dim, U.opts_of, U.both, U.is_float

-- ---- reductions ----

--- NaNs counted as zero (sum) or left out (mean)
both('nansum', function(x, ...)
  return torch.where(x:ne(x), torch.zeros_like(x), x):sum(...)
end)
both('nanmean', function(x, dim, keepdim)
  local ok = x:eq(x)
  local s = torch.where(ok, x, torch.zeros_like(x))
  if dim == nil then return s:sum() / ok:sum() end
  return s:sum(dim, keepdim) / ok:sum(dim, keepdim)
end)

both('count_nonzero', function(x, dim)
  if dim == nil then return x:ne(0):sum() end
  return x:ne(0):sum(dim)
end)

both('aminmax', function(x, o)
  o = opts_of(o, 'aminmax', { 'dim', 'keepdim' })
  if o.dim == nil then return x:amin(), x:amax() end
  return x:amin(o.dim, o.keepdim), x:amax(o.dim, o.keepdim)
end)

both('dist', function(a, b, p) return (a - b):norm(p or 2) end)

--- the k-th smallest element along dim (default: the last), with its index
both('kthvalue', function(x, k, dim, keepdim)
  check_tensor(x, 'kthvalue')
  if x:dim() == 0 then x = x:reshape(1) end
  dim = norm_dim(dim or -1, x:dim(), 'kthvalue')
  local n = x:size(dim)
  if math.type(k) ~= 'integer' or k < 1 or k > n then
    error(string.format('kthvalue: k (%s) out of range for dimension %d of size %d', tostring(k), dim, n), 2)
  end
  local v, i = x:sort(dim)
  v, i = v:narrow(dim, k, 1), i:narrow(dim, k, 1)
  if not keepdim then v, i = v:squeeze(dim), i:squeeze(dim) end
  return v, i
end)

--- the lower of the two middle values, NaN where a NaN is present (as PyTorch); with a dim, also
--- its index
both('median', function(x, dim, keepdim)
  check_tensor(x, 'median')
  local whole = dim == nil
  if whole then x = x:reshape(-1) end
  if x:dim() == 0 then x = x:reshape(1) end
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
  if whole then return mv:reshape({}) end
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

--- the distinct values in ascending order; {return_inverse, return_counts, sorted} as PyTorch's
--- options (each NaN is distinct)
both('unique', function(x, o)
  check_tensor(x, 'unique')
  o = opts_of(o, 'unique', { 'sorted', 'return_inverse', 'return_counts', 'dim' })
  if o.dim ~= nil then error('unique: the dim option is not supported; unique works on the flattened tensor', 2) end
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

--- consecutive runs of equal values as one; {return_inverse, return_counts}
both('unique_consecutive', function(x, o)
  check_tensor(x, 'unique_consecutive')
  o = opts_of(o, 'unique_consecutive', { 'return_inverse', 'return_counts', 'dim' })
  if o.dim ~= nil then error('unique_consecutive: the dim option is not supported', 2) end
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

-- ---- sampling ----

--- 0 or 1 drawn with the probabilities in x
both('bernoulli', function(x, p)
  check_tensor(x, 'bernoulli')
  if p ~= nil then return torch.empty_like(x):bernoulli_(p) end
  return torch.rand_like(x, { dtype = is_float(x) and x.dtype or torch.float32 }):lt(x):to(x.dtype)
end)

--- num_samples 1-based indices drawn from each row's weights (with replacement, or without:
--- each index at most once)
both('multinomial', function(x, num_samples, replacement)
  check_tensor(x, 'multinomial')
  if type(replacement) == 'table' then replacement = replacement.replacement end
  if x:dim() ~= 1 and x:dim() ~= 2 then error('multinomial: prob_dist must be 1 or 2 dim, got ' .. x:dim(), 2) end
  if not is_float(x) then error('multinomial: only floating point probabilities are supported, got ' .. tostring(x.dtype), 2) end
  local p = x:dim() == 1 and x:unsqueeze(1) or x
  local k = p:size(2)
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
    local u = torch.rand(p:size(1), num_samples, { dtype = torch.float64, device = x.device })
    -- the first bin whose cumulative weight exceeds u (never one of zero weight)
    out = cdf:unsqueeze(2):le(u:unsqueeze(3)):sum(3) + 1
    out = out:clamp(1, k)
  else
    -- the largest keys u^(1 / p): a draw without replacement in proportion to p (zero weights last)
    local u = torch.rand(p:size(1), k, { dtype = torch.float64, device = x.device })
    local keys = torch.where(pd:gt(0), u:log() / pd, torch.full_like(pd, -math.huge))
    local _, idx = keys:topk(num_samples, 2)
    out = idx
  end
  if x:dim() == 1 then out = out:squeeze(1) end
  return out:long()
end)
