-- F.adaptive_max_pool1d/2d, F.lp_pool1d/2d and F.max_unpool1d/2d/3d, composed of tensor ops (gather,
-- max, scatter, avg_pool2d), so autograd differentiates them. Indices are 1-based flat positions in
-- each input plane (H x W, or L) or volume (D x H x W), as F.max_pool2d, F.max_pool1d and
-- F.max_pool3d return them.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of, pair, single = u.check_tensor, u.opts_of, u.pair, u.single
  local reserve = require 'torch.reserve'

  local function check_planes(x, op, nd)
    check_tensor(x, op)
    if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
      error(string.format('%s: expected a %d-D (unbatched) or %d-D (batched) input, got %d-D', op, nd + 1, nd + 2,
        x:dim()), 3)
    end
    for d = x:dim() - nd, x:dim() do
      if x:size(d) == 0 then
        error(string.format('%s: Expected input to have non-zero size for non-batch dimensions, but input has sizes %s',
          op, tostring(x.shape)), 3)
      end
    end
  end

  -- return_indices given as a boolean or as {return_indices = ...}
  local function indices_flag(v, op)
    if type(v) == 'table' then v = opts_of(v, op, { 'return_indices' }).return_indices end
    return v and true or false
  end

  -- the 1-based flat positions of the windows of an adaptive pooling of h x w to oh x ow (PyTorch's
  -- bins floor(i in / out) .. ceil((i + 1) in / out)), each padded to the largest window's k
  -- positions by repeating its first (the maximum is unchanged, and the first of equals is kept)
  local function adaptive_windows(h, w, oh, ow)
    local function bins(n, m)
      local s, e, widest = {}, {}, 0
      for i = 0, m - 1 do
        s[i + 1], e[i + 1] = (i * n) // m, ((i + 1) * n + m - 1) // m
        widest = math.max(widest, e[i + 1] - s[i + 1])
      end
      return s, e, widest
    end
    local sh, eh, kh = bins(h, oh)
    local sw, ew, kw = bins(w, ow)
    local k, list = kh * kw, {}
    for i = 1, oh do
      for j = 1, ow do
        local base, first = #list, nil
        for r = sh[i], eh[i] - 1 do
          for c = sw[j], ew[j] - 1 do
            local p = r * w + c + 1
            first = first or p
            list[#list + 1] = p
          end
        end
        for _ = #list - base + 1, k do list[#list + 1] = first end
      end
    end
    return list, k
  end

  local function adaptive_max(x, oh, ow, op)
    local batched = x:dim() == 4
    if not batched then x = x:unsqueeze(1) end
    local n, c, h, w = x:size(1), x:size(2), x:size(3), x:size(4)
    reserve(op, x, { n, c, oh, ow }, 3)
    local list, k = adaptive_windows(h, w, oh, ow)
    local m = oh * ow
    local idx = torch.tensor(list, { dtype = torch.int64, device = x.device })
    local windows = x:reshape(n, c, h * w):gather(3, idx:view(1, 1, m * k):expand(n, c, m * k)):view(n, c, m, k)
    local y, at = windows:max(4)
    local indices = idx:view(1, 1, m, k):expand(n, c, m, k):gather(4, at:unsqueeze(4))
    y, indices = y:view(n, c, oh, ow), indices:view(n, c, oh, ow)
    if not batched then y, indices = y:squeeze(1), indices:squeeze(1) end
    return y, indices
  end

  local function positive(v, op, what)
    v = as_int(v)
    if math.type(v) ~= 'integer' or v < 1 then
      error(string.format('%s: %s must be positive integers, got %s', op, what, tostring(v)), 3)
    end
    return v
  end

  --- F.adaptive_max_pool2d(x, output_size, return_indices = false) -> the maximum of each adaptive window
  -- of N x C x H x W (or C x H x W) input (and the 1-based flat indices of the maxima in each H x W
  -- plane); output_size a number or {h, w}, a nil entry keeping the input's size; return_indices
  -- may also be given as {return_indices = true}
  function F.adaptive_max_pool2d(x, size, ri)
    local op = 'adaptive_max_pool2d'
    check_planes(x, op, 2)
    local oh, ow
    if type(size) == 'table' then
      oh, ow = size[1] or x:size(-2), size[2] or x:size(-1)
    else
      oh, ow = pair(size, 'output_size', op)
    end
    positive(oh, op, 'output sizes')
    positive(ow, op, 'output sizes')
    local y, idx = adaptive_max(x, oh, ow, op)
    if indices_flag(ri, op) then return y, idx end
    return y
  end

  --- F.adaptive_max_pool1d(x, output_size, return_indices = false) -> the same over the last dim of
  -- N x C x L (or C x L) input; indices are 1-based positions in L
  function F.adaptive_max_pool1d(x, size, ri)
    local op = 'adaptive_max_pool1d'
    check_planes(x, op, 1)
    local ol = positive(single(size, 'output_size', op), op, 'output sizes')
    local y, idx = adaptive_max(x:unsqueeze(-2), 1, ol, op)
    if indices_flag(ri, op) then return y:squeeze(-2), idx:squeeze(-2) end
    return y:squeeze(-2)
  end

  local function norm_type_of(p, op)
    if type(p) ~= 'number' then error(op .. ': norm_type must be a number, got ' .. type(p), 3) end
    return p
  end

  --- F.lp_pool2d(x, norm_type, kernel_size, {stride = kernel_size, ceil_mode = false}) -> (sum of x^p
  -- over each window)^(1/p), computed as PyTorch's: avg_pool2d of x^p times the kernel's area
  function F.lp_pool2d(x, p, k, o)
    local op = 'lp_pool2d'
    o = opts_of(o, op, { 'stride', 'ceil_mode' })
    check_tensor(x, op)
    norm_type_of(p, op)
    local kh, kw = pair(k, 'kernel_size', op)
    local out = u.as_op(op, 'avg_pool2d', F.avg_pool2d, x:pow(p), k, { stride = o.stride, padding = 0, ceil_mode = o.ceil_mode })
    return (out:sign() * out:abs():relu()):mul(kh * kw):pow(1 / p)
  end

  --- F.lp_pool1d(x, norm_type, kernel_size, {stride = kernel_size, ceil_mode = false}) -> the same
  -- over the last dim of N x C x L (or C x L) input
  function F.lp_pool1d(x, p, k, o)
    local op = 'lp_pool1d'
    o = opts_of(o, op, { 'stride', 'ceil_mode' })
    check_tensor(x, op)
    norm_type_of(p, op)
    k = single(k, 'kernel_size', op)
    local out = u.as_op(op, 'avg_pool1d', F.avg_pool1d, x:pow(p), k, { stride = o.stride, padding = 0, ceil_mode = o.ceil_mode })
    return (out:sign() * out:abs():relu()):mul(k):pow(1 / p)
  end

  -- the output sizes of an unpooling: (in - 1) stride - 2 padding + kernel per dim, or output_size's
  -- last nd entries (it holds nd or nd + 2), each within (default - stride, default + stride)
  local function unpool_sizes(x, nd, k, s, p, output_size, op)
    local default = {}
    for d = 1, nd do default[d] = (x:size(x:dim() - nd + d) - 1) * s[d] + k[d] - 2 * p[d] end
    if output_size == nil then return default end
    local given = output_size
    if torch.is_tensor(given) or type(given) ~= 'table' then
      error(op .. ': output_size must be a table of sizes', 3)
    end
    given = { table.unpack(given, #given == nd + 2 and 3 or 1) }
    if #given ~= nd then
      error(string.format('%s: output_size should be a sequence containing %d or %d elements, but it has a length of %d',
        op, nd, nd + 2, #output_size), 3)
    end
    for d = 1, nd do
      local lo, hi = default[d] - s[d], default[d] + s[d]
      given[d] = as_int(given[d])
      if math.type(given[d]) ~= 'integer' or not (lo < given[d] and given[d] < hi) then
        error(string.format('%s: invalid output_size (dim %d must be between %d and %d, got %s)', op, d, lo, hi,
          tostring(given[d])), 3)
      end
    end
    return given
  end

  -- x and its 1-based indices (N x C x spatial dims, or C x ...) scattered into zeros of the output
  -- sizes (one per spatial dim: oh, ow for planes)
  local function unpool(x, indices, sizes, op)
    local nd = #sizes
    local batched = x:dim() == nd + 2
    if not batched then x, indices = x:unsqueeze(1), indices:unsqueeze(1) end
    local n, c = x:size(1), x:size(2)
    local cells = 1
    for d = 3, x:dim() do cells = cells * x:size(d) end
    local flat = indices:reshape(n, c, cells)
    local m = 1
    for _, v in ipairs(sizes) do m = m * v end
    local out = torch.zeros(n, c, m, { dtype = x.dtype, device = x.device })
    if flat:numel() > 0 then
      local lo, hi = flat:min():item(), flat:max():item()
      if lo < 1 or hi > m then
        error(string.format('%s: Found an invalid max index: %d (output %s of %s, indices are 1-based)', op,
          lo < 1 and lo or hi, nd == 3 and 'volumes' or 'planes', table.concat(sizes, ' x ')), 3)
      end
      out = out:scatter(3, flat, x:reshape(n, c, cells))
    end
    local shape = { n, c }
    for i = 1, nd do shape[2 + i] = sizes[i] end
    out = out:view(shape)
    if not batched then out = out:squeeze(1) end
    return out
  end

  local function check_unpool(x, indices, op, nd)
    check_planes(x, op, nd)
    check_tensor(indices, op, 'indices')
    if indices.dtype ~= torch.int64 then
      error(op .. ': elements in indices should be type int64, got ' .. tostring(indices.dtype), 3)
    end
    if indices.shape ~= x.shape then
      error(string.format('%s: Expected shape of indices to be same as that of the input tensor (%s) but got indices '
        .. 'tensor with shape: %s', op, tostring(x.shape), tostring(indices.shape)), 3)
    end
  end

  --- F.max_unpool2d(x, indices, kernel_size, {stride = kernel_size, padding = 0, output_size}) -> zeros
  -- of N x C x H_out x W_out (or C x ...) holding x's values at their 1-based flat indices (as
  -- F.max_pool2d returns them): the partial inverse of max_pool2d. H_out is (H - 1) stride -
  -- 2 padding + kernel unless output_size ({h, w} or {n, c, h, w}) says otherwise.
  function F.max_unpool2d(x, indices, k, o)
    local op = 'max_unpool2d'
    o = opts_of(o, op, { 'stride', 'padding', 'output_size' })
    check_unpool(x, indices, op, 2)
    local kh, kw = pair(k, 'kernel_size', op)
    local sh, sw = pair(o.stride or k, 'stride', op)
    local ph, pw = pair(o.padding or 0, 'padding', op)
    local size = unpool_sizes(x, 2, { kh, kw }, { sh, sw }, { ph, pw }, o.output_size, op)
    return unpool(x, indices, size, op)
  end

  --- F.max_unpool1d(x, indices, kernel_size, {stride = kernel_size, padding = 0, output_size}) -> the
  -- same over the last dim of N x C x L (or C x L) input; output_size {l} or {n, c, l}
  function F.max_unpool1d(x, indices, k, o)
    local op = 'max_unpool1d'
    o = opts_of(o, op, { 'stride', 'padding', 'output_size' })
    check_unpool(x, indices, op, 1)
    k = single(k, 'kernel_size', op)
    local s = single(o.stride or k, 'stride', op)
    local p = single(o.padding or 0, 'padding', op)
    local size = unpool_sizes(x, 1, { k }, { s }, { p }, o.output_size, op)
    return unpool(x:unsqueeze(-2), indices:unsqueeze(-2), { 1, size[1] }, op):squeeze(-2)
  end

  -- an integer or a triple {d, h, w} of integers
  local function triple(v, name, op)
    v = as_int(v)
    if math.type(v) == 'integer' then return { v, v, v } end
    if type(v) == 'table' and not torch.is_tensor(v) and #v == 3 and math.type(as_int(v[1])) == 'integer'
      and math.type(as_int(v[2])) == 'integer' and math.type(as_int(v[3])) == 'integer' then
      return { as_int(v[1]), as_int(v[2]), as_int(v[3]) }
    end
    error(string.format('%s: %s must be an integer or a triple {d, h, w} of integers, got %s', op, name, tostring(v)), 3)
  end

  --- F.max_unpool3d(x, indices, kernel_size, {stride = kernel_size, padding = 0, output_size}) -> zeros
  -- of N x C x D_out x H_out x W_out (or C x ...) holding x's values at their 1-based flat indices in
  -- each volume (as F.max_pool3d returns them); output_size {d, h, w} or {n, c, d, h, w}
  function F.max_unpool3d(x, indices, k, o)
    local op = 'max_unpool3d'
    o = opts_of(o, op, { 'stride', 'padding', 'output_size' })
    check_unpool(x, indices, op, 3)
    k = triple(k, 'kernel_size', op)
    local s = triple(o.stride or k, 'stride', op)
    local p = triple(o.padding or 0, 'padding', op)
    local size = unpool_sizes(x, 3, k, s, p, o.output_size, op)
    return unpool(x, indices, size, op)
  end
end
