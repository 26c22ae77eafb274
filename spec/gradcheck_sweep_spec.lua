-- gradcheck and gradgradcheck (float64 central differences) over every differentiable function
-- lutorch exposes: torch.*, the Tensor methods, torch.nn.functional, torch.linalg and torch.special
-- are walked, and each function name is either a case below (differentiable: CASES; without a
-- gradient, as PyTorch: NONDIFF) or skipped with its reason (SKIP_PATTERNS, SKIP). A name that is
-- neither fails the last test, which lists it: a new function gets covered or skipped on purpose.
--
-- A case runs its function on a contiguous input, on a non-contiguous one (the same values every
-- other element of a larger tensor), on broadcast shapes where the op broadcasts (bc), on a 0-dim
-- and a 0-size input where meaningful (scalar, empty), and as the Tensor method where that is
-- another function. Each run: gradcheck; the gradient under create_graph equals the one of the
-- backward kernels (gradgradcheck differentiates the former, so a wrong recorded formula would go
-- unseen otherwise); gradgradcheck passes, or, for the nodes the README names as refused (refuse),
-- raises an error naming the op; PyTorch's ops without a derivative raise one (no_derivative).
--
-- A case key 'X' or 'X(variant)' covers torch.X and Tensor.X; 'F.X', 'linalg.X', 'special.X' that
-- namespace's X; a function covers every name bound to it. The in-place X_ variants are in
-- inplace_spec, not here.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional
local AG = torch.autograd
local f64 = { dtype = torch.float64 }

-- ---- input builders ----------------------------------------------------------------------------
-- a domain letter and a shape: 'R:2,3'. R: signed, |v| in [0.3, 0.9]; P: positive in [0.5, 1.5];
-- G: in [1.5, 2.5]; Q: in (0.2, 0.8); W: signed, |v| in [0.6, 1.4] (away from +-0.5 kinks);
-- M: n x n (batched: b,n,n) well-conditioned, 2I + 0.3 R; S: symmetric positive definite
local function values(dom, shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  if dom == 'M' or dom == 'S' then
    local k = shape[#shape]
    local r = torch.rand(shape, f64) * 0.6 - 0.3
    local eye = torch.eye(shape[#shape - 1], k, f64)
    if dom == 'M' then return r + eye * 2 end
    return r:matmul(r:transpose(-1, -2)) + eye
  end
  local u = torch.rand(shape, f64)
  local sign = (torch.rand(shape, f64):gt(0.5):double() * 2 - 1)
  if dom == 'R' then return (u * 0.6 + 0.3) * sign end
  if dom == 'W' then return (u * 0.8 + 0.6) * sign end
  if dom == 'P' then return u + 0.5 end
  if dom == 'G' then return u + 1.5 end
  if dom == 'Q' then return u * 0.6 + 0.2 end
  error('unknown domain ' .. dom)
end

local function parse(spec)
  local dom, dims = spec:match('^(%a):?(.*)$')
  local shape = {}
  for d in dims:gmatch('%d+') do shape[#shape + 1] = tonumber(d) end
  return dom, shape
end

-- a leaf requiring grad; strided: the same values every other element of a larger tensor
local function leaf(spec, strided)
  local dom, shape = parse(spec)
  local v = values(dom, shape)
  if strided and #shape > 0 then
    v = torch.stack({ v, torch.zeros_like(v) }, -1):select(-1, 1)
    assert(not v:is_contiguous() or v:numel() <= 1)
  end
  return v:detach():requires_grad_()
end

-- ---- the differentiable cases ------------------------------------------------------------------
-- { args = input specs, f = function(inputs...) (default torch[name]), bc = broadcast specs,
--   no_derivative = the fragment of the error of an op without a derivative (as in PyTorch),
--   scalar = run on 0-dim inputs, empty = run on [0, 2] inputs, refuse = the fragment of a
--   refused double backward's error (refuse_only: the refusal is all that is checked), nogg = reason gradgradcheck is not run, ns = namespaces }
local CASES = {}
local function case(names, c)
  for name in names:gmatch('%S+') do CASES[name] = c end
end

-- unary elementwise, by domain
local UNARY = {
  R = 'abs absolute asin asinh atan atanh cos cosh deg2rad erf erfinv exp exp2 expm1 frac i0 neg negative '
    .. 'positive rad2deg reciprocal sigmoid sin sinc sinh square tan tanh relu relu6 selu celu gelu silu mish '
    .. 'softplus softsign logsigmoid hardsigmoid hardswish tanhshrink nan_to_num clone arccos arcsin '
    .. 'arcsinh arctan arctanh acos erfc gelu_tanh',
  P = 'digamma lgamma log log10 log1p log2 rsqrt sqrt',
  G = 'acosh arccosh',
  Q = 'logit',
  W = 'hardshrink',
}
for dom, names in pairs(UNARY) do
  case(names, { args = { dom .. ':2,3' }, scalar = true, empty = true })
end
-- PyTorch's convention: zero gradients, checked by gradcheck away from the jumps
case('ceil floor round trunc fix sign sgn', { args = { 'R:2,3' }, scalar = true, empty = true })

-- binary elementwise, broadcasting
local BINARY = {
  RR = 'add sub subtract mul multiply maximum minimum fmax fmin atan2 arctan2 hypot logaddexp logaddexp2 rsub',
  RW = 'div divide true_divide',
  PR = 'pow float_power',
  PP = 'xlogy',
  RP = 'copysign',
}
for doms, names in pairs(BINARY) do
  local a, b = doms:sub(1, 1), doms:sub(2, 2)
  case(names, { args = { a .. ':2,3', b .. ':2,3' }, bc = { a .. ':2,3', b .. ':3' }, scalar = true })
end
case('fmod remainder', { args = { 'P:2,3', 'G:2,3' }, bc = { 'P:2,3', 'G:3' } })
case('lerp', { args = { 'R:2,3', 'R:2,3', 'Q:2,3' }, bc = { 'R:2,3', 'R:3', 'Q:1' } })
case('addcmul addcdiv', { args = { 'R:2,3', 'R:2,3', 'W:2,3' }, bc = { 'R:3', 'R:2,1', 'W:2,3' } })
case('ldexp', { args = { 'R:2,3' }, f = function(a) return torch.ldexp(a, torch.tensor({ 1, 2, 3 }, f64)) end })
case('igamma igammac', { args = { 'P:2,3' },
  f = function(x) return torch.igamma(torch.full({ 2, 3 }, 1.5, f64), x) end })

-- reductions and scans (dim 2 where they take one)
local function dim2(name, ...)
  local extra = table.pack(...)
  return function(x) return torch[name](x, 2, table.unpack(extra, 1, extra.n)) end
end
case('sum mean prod nansum nanmean logsumexp amax amin std var norm', { args = { 'R:2,3' }, scalar = true })
for _, n in ipairs { 'sum', 'mean', 'prod', 'nansum', 'nanmean', 'amax', 'amin', 'std', 'var', 'cumsum',
  'cumprod', 'logcumsumexp', 'softmax', 'log_softmax', 'diff' } do
  CASES[n .. '(dim)'] = { args = { 'R:2,3' }, f = dim2(n) }
end
CASES['logsumexp'] = { args = { 'R:2,3' }, f = dim2('logsumexp') }
CASES['norm(dim)'] = { args = { 'R:2,3' }, f = function(x) return torch.norm(x, 3, 2) end }
local function first(name, ...)
  local extra = table.pack(...)
  return function(x) return (torch[name](x, table.unpack(extra, 1, extra.n))) end
end
local function both(name, ...)
  local extra = table.pack(...)
  return function(x)
    local a, b = torch[name](x, table.unpack(extra, 1, extra.n))
    return a, b
  end
end
case('max min median nanmedian', { args = { 'R:2,3' }, scalar = true })
for _, n in ipairs { 'max', 'min', 'median', 'nanmedian', 'mode', 'cummax', 'cummin' } do
  CASES[n .. '(dim)'] = { args = { 'R:2,3' }, f = first(n, 2) }
end
CASES.mode = CASES['mode(dim)']
CASES.cummax, CASES.cummin = CASES['cummax(dim)'], CASES['cummin(dim)']
case('kthvalue', { args = { 'R:2,3' }, f = first('kthvalue', 2, 2) })
case('topk', { args = { 'R:2,3' }, f = first('topk', 2, 2) })
case('sort', { args = { 'R:2,3' }, f = first('sort', 2) })
case('msort', { args = { 'R:3,2' } })
case('std_mean var_mean', { args = { 'R:2,3' }, scalar = true })
case('aminmax', { args = { 'R:2,3' }, f = function(x) local a, b = torch.aminmax(x); return a, b end })
case('quantile nanquantile', { args = { 'R:2,3' }, f = function(x) return torch.quantile(x, 0.3, 2) end })
case('trace', { args = { 'R:3,3' } })
case('renorm', { args = { 'R:3,2' }, f = function(x) return torch.renorm(x, 2, 1, 0.5) end })
case('trapezoid trapz', { args = { 'R:2,3' } })
case('cumulative_trapezoid', { args = { 'R:2,3' } })
case('gradient', { args = { 'R:2,3' }, f = function(x) return table.unpack(torch.gradient(x)) end })
case('dist', { args = { 'R:2,3', 'R:2,3' }, bc = { 'R:2,3', 'R:3' } })

-- shapes, views and indexing
local function with(name, ...)
  local extra = table.pack(...)
  return { args = { 'R:2,3' }, f = function(x) return torch[name](x, table.unpack(extra, 1, extra.n)) end }
end
local function unpacked(name, ...)
  local extra = table.pack(...)
  return { args = { 'R:2,4' }, f = function(x) return table.unpack(torch[name](x, table.unpack(extra, 1, extra.n))) end }
end
local idx = function(t) return torch.tensor(t, { dtype = torch.int64 }) end
CASES.reshape = with('reshape', { 3, 2 })
CASES.flatten = with('flatten')
CASES.ravel = with('ravel')
CASES.permute = with('permute', { 2, 1 })
CASES.transpose = with('transpose', 1, 2)
CASES.swapaxes, CASES.swapdims = with('swapaxes', 1, 2), with('swapdims', 1, 2)
CASES.movedim, CASES.moveaxis = with('movedim', 1, 2), with('moveaxis', 1, 2)
case('t adjoint', { args = { 'R:2,3' } })
CASES.squeeze = { args = { 'R:2,1,3' } }
CASES.unsqueeze = with('unsqueeze', 2)
CASES.narrow, CASES.narrow_copy = with('narrow', 2, 2, 2), with('narrow_copy', 2, 2, 2)
CASES.select = with('select', 2, 2)
CASES.unflatten = with('unflatten', 2, { 3, 1 })
CASES.unfold = { args = { 'R:2,5' }, f = function(x) return x:unfold(2, 2, 2) end }
CASES.flip, CASES.fliplr, CASES.flipud = with('flip', { 1, 2 }), with('fliplr'), with('flipud')
CASES.roll, CASES.rot90 = with('roll', 1, 2), with('rot90')
CASES.tile = with('tile', { 2, 1 })
CASES.repeat_interleave = with('repeat_interleave', 2, 2)
CASES.broadcast_to = { args = { 'R:3' }, f = function(x) return torch.broadcast_to(x, { 2, 3 }) end }
CASES.broadcast_tensors = { args = { 'R:3', 'R:2,1' },
  f = function(a, b) return table.unpack(torch.broadcast_tensors(a, b)) end }
CASES.chunk, CASES.unsafe_chunk = unpacked('chunk', 2, 2), unpacked('unsafe_chunk', 2, 2)
CASES.split, CASES.unsafe_split = unpacked('split', 2, 2), unpacked('unsafe_split', 2, 2)
CASES.split_with_sizes = unpacked('split_with_sizes', { 1, 3 }, 2)
CASES.unsafe_split_with_sizes = unpacked('unsafe_split_with_sizes', { 1, 3 }, 2)
CASES.tensor_split = unpacked('tensor_split', 2, 2)
CASES.hsplit, CASES.vsplit = unpacked('hsplit', 2), unpacked('vsplit', 2)
CASES.dsplit = { args = { 'R:2,2,4' }, f = function(x) return table.unpack(torch.dsplit(x, 2)) end }
CASES.unbind = unpacked('unbind', 2)
-- PyTorch's view copies (torch.X_copy): the view's gradient (detach_copy has none: NONDIFF)
local function copied(name, ...)
  local extra = table.pack(...)
  return { args = { 'R:2,3' }, f = function(x) return torch[name .. '_copy'](x, table.unpack(extra, 1, extra.n)) end }
end
CASES.alias_copy, CASES.t_copy = copied('alias'), copied('t')
CASES.as_strided_copy = copied('as_strided', { 2, 2 }, { 1, 2 })
CASES.diagonal_copy, CASES.permute_copy = copied('diagonal', 1), copied('permute', { 2, 1 })
CASES.select_copy, CASES.slice_copy = copied('select', 2, 2), copied('slice', 2, 1, 3, 2)
CASES.transpose_copy, CASES.unfold_copy = copied('transpose', 1, 2), copied('unfold', 2, 2, 1)
CASES.unsqueeze_copy, CASES.view_copy = copied('unsqueeze', 2), copied('view', { 3, 2 })
CASES.expand_copy = { args = { 'R:3' }, f = function(x) return torch.expand_copy(x, { 2, 3 }) end }
CASES.squeeze_copy = { args = { 'R:2,1,3' }, f = torch.squeeze_copy }
CASES.split_copy, CASES.unbind_copy = unpacked('split_copy', 2, 2), unpacked('unbind_copy', 2)
CASES.split_with_sizes_copy = unpacked('split_with_sizes_copy', { 1, 3 }, 2)
local function listed(name, ...)
  local extra = table.pack(...)
  return { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return torch[name]({ a, b }, table.unpack(extra, 1, extra.n)) end }
end
CASES.cat, CASES.concat, CASES.stack = listed('cat', 2), listed('concat', 1), listed('stack', 2)
for _, n in ipairs { 'hstack', 'vstack', 'dstack', 'column_stack', 'row_stack', 'block_diag' } do
  CASES[n] = listed(n)
end
CASES.block_diag = { args = { 'R:2,3', 'R:1,2' }, f = function(a, b) return torch.block_diag(a, b) end }
CASES.atleast_1d = { args = { 'R:' }, f = torch.atleast_1d, scalar = true }
CASES.atleast_2d = { args = { 'R:3' }, f = torch.atleast_2d }
CASES.atleast_3d = { args = { 'R:2,3' }, f = torch.atleast_3d }
CASES.cartesian_prod = { args = { 'R:2', 'R:3' } }
CASES.combinations = { args = { 'R:4' } }
CASES.meshgrid = { args = { 'R:2', 'R:3' }, f = function(a, b) return table.unpack(torch.meshgrid({ a, b }, { indexing = 'ij' })) end }
CASES.kron = { args = { 'R:2,2', 'R:2,3' } }
CASES.as_strided = { args = { 'R:2,3' }, f = function(x) return torch.as_strided(x, { 2, 2 }, { 1, 2 }) end }
CASES.take = { args = { 'R:2,3' }, f = function(x) return torch.take(x, idx { 1, 6, 3, 3 }) end }
CASES.take_along_dim = { args = { 'R:2,3' }, f = function(x) return torch.take_along_dim(x, idx { { 1, 3 }, { 2, 2 } }, 2) end }
CASES.gather = { args = { 'R:2,3' }, f = function(x) return torch.gather(x, 2, idx { { 1, 3 }, { 2, 2 } }) end }
CASES.index_select = { args = { 'R:2,3' }, f = function(x) return torch.index_select(x, 2, idx { 3, 1, 3 }) end }
CASES.masked_select = { args = { 'R:2,3' }, f = function(x) return torch.masked_select(x, x:detach():gt(0)) end }
CASES.masked_fill = { args = { 'R:2,3' }, f = function(x) return torch.masked_fill(x, x:detach():gt(0), 2) end }
CASES.masked_scatter = { args = { 'R:2,3', 'R:6' },
  f = function(x, s) return torch.masked_scatter(x, torch.tensor({ true, false, true }), s) end }
CASES.scatter = { args = { 'R:2,3', 'R:2,2' }, f = function(x, s) return torch.scatter(x, 2, idx { { 1, 3 }, { 2, 1 } }, s) end }
CASES.scatter_add = { args = { 'R:2,3', 'R:2,2' }, f = function(x, s) return torch.scatter_add(x, 2, idx { { 1, 1 }, { 2, 1 } }, s) end }
CASES.scatter_reduce = { args = { 'R:2,3', 'R:2,2' },
  f = function(x, s) return torch.scatter_reduce(x, 2, idx { { 1, 1 }, { 2, 1 } }, s, 'prod') end }
CASES.index_add = { args = { 'R:2,3', 'R:2,2' }, f = function(x, s) return torch.index_add(x, 2, idx { 3, 3 }, s) end }
CASES.index_copy = { args = { 'R:2,3', 'R:2,2' }, f = function(x, s) return torch.index_copy(x, 2, idx { 3, 1 }, s) end }
CASES.index_fill = { args = { 'R:2,3' }, f = function(x) return torch.index_fill(x, 2, idx { 3, 1 }, 0.5) end }
CASES.index_reduce = { args = { 'R:2,3', 'R:2,2' },
  f = function(x, s) return torch.index_reduce(x, 2, idx { 3, 3 }, s, 'prod') end }
CASES.index_put = { args = { 'R:2,3', 'R:2' }, f = function(x, v) return torch.index_put(x, { idx { 1, 2 }, idx { 3, 1 } }, v) end }
CASES.put = { args = { 'R:2,3', 'R:2' }, f = function(x, v) return x:put(idx { 2, 5 }, v) end }
CASES.diagonal_scatter = { args = { 'R:3,3', 'R:3' } }
CASES.select_scatter = { args = { 'R:2,3', 'R:3' }, f = function(x, s) return torch.select_scatter(x, s, 1, 2) end }
CASES.slice_scatter = { args = { 'R:4,3', 'R:2,3' }, f = function(x, s) return torch.slice_scatter(x, s, 1, 1, 4, 2) end }
CASES.where = { args = { 'R:2,3', 'R:3' }, f = function(a, b) return torch.where(a:detach():gt(0), a, b) end }
CASES.clamp = { args = { 'R:2,3' }, f = function(x) return torch.clamp(x, -0.5, 0.55) end, scalar = true }
CASES.clip = { args = { 'R:2,3' }, f = function(x) return torch.clip(x, -0.5, 0.55) end }
CASES['clamp(tensors)'] = { args = { 'R:2,3', 'R:3', 'R:2,3' }, f = function(x, lo, hi) return torch.clamp(x, lo, hi) end }
CASES.clamp_min = { args = { 'R:2,3' }, f = function(x) return torch.clamp_min(x, -0.5) end }
CASES.clamp_max = { args = { 'R:2,3' }, f = function(x) return torch.clamp_max(x, 0.55) end }
CASES.threshold = { args = { 'W:2,3' }, f = function(x) return torch.threshold(x, 0.5, -2) end }
CASES.type_as = { args = { 'R:2,3' }, f = function(x) return torch.type_as(x, x) end }
CASES.constant_pad_nd = { args = { 'R:2,3' }, f = function(x) return torch.constant_pad_nd(x, { 1, 2 }, 0.5) end }
CASES.channel_shuffle = { args = { 'R:1,4,2' }, f = function(x) return torch.channel_shuffle(x, 2) end }
CASES.pixel_shuffle = { args = { 'R:1,4,1,2' }, f = function(x) return torch.pixel_shuffle(x, 2) end }
CASES.pixel_unshuffle = { args = { 'R:1,1,2,2' }, f = function(x) return torch.pixel_unshuffle(x, 2) end }
CASES.segment_reduce = { args = { 'R:5' }, f = function(x) return torch.segment_reduce(x, 'sum', { lengths = idx { 2, 3 } }) end }
CASES.diag = { args = { 'R:3' }, scalar = false }
CASES['diag(matrix)'] = { args = { 'R:3,3' }, f = torch.diag }
CASES.diag_embed, CASES.diagflat = { args = { 'R:2,3' } }, { args = { 'R:3' } }
CASES.diagonal = with('diagonal', 1)
CASES.tril, CASES.triu = { args = { 'R:3,3' } }, { args = { 'R:3,3' } }
CASES.vander = { args = { 'R:3' } }

-- matrix products and linear algebra
local L = torch.linalg
local function mats(...) return { args = { ... } } end
CASES.mm, CASES.matmul, CASES.bmm = mats('R:2,3', 'R:3,2'), mats('R:2,3', 'R:3'), mats('R:2,2,3', 'R:2,3,2')
CASES.mv, CASES.dot, CASES.vdot = mats('R:2,3', 'R:3'), mats('R:3', 'R:3'), mats('R:3', 'R:3')
CASES.inner, CASES.outer, CASES.ger = mats('R:2,3', 'R:3'), mats('R:2', 'R:3'), mats('R:2', 'R:3')
CASES.addmm, CASES.addmv = mats('R:2,2', 'R:2,3', 'R:3,2'), mats('R:2', 'R:2,3', 'R:3')
CASES.addr = mats('R:2,3', 'R:2', 'R:3')
CASES.addbmm, CASES.baddbmm = mats('R:2,2', 'R:2,2,3', 'R:2,3,2'), mats('R:2,2,2', 'R:2,2,3', 'R:2,3,2')
CASES.chain_matmul = { args = { 'R:2,3', 'R:3,2', 'R:2,2' }, f = function(a, b, c) return torch.chain_matmul(a, b, c) end }
CASES.einsum = { args = { 'R:2,3', 'R:3,2' }, f = function(a, b) return torch.einsum('ij,jk->ik', a, b) end }
CASES.tensordot = { args = { 'R:2,3', 'R:3,2' }, f = function(a, b) return torch.tensordot(a, b, 1) end }
CASES.cross = { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return torch.cross(a, b, 2) end }
CASES.cov, CASES.corrcoef = { args = { 'R:2,4' } }, { args = { 'R:2,4' } }
CASES.cdist = { args = { 'R:2,3', 'R:3,3' } }
CASES.matrix_power = { args = { 'M:3,3' }, f = function(a) return torch.matrix_power(a, 3) end }
CASES['matrix_power(-2)'] = { args = { 'M:3,3' }, f = function(a) return torch.matrix_power(a, -2) end }
case('matrix_exp det logdet inverse pinverse', { args = { 'M:3,3' }, bc = { 'M:2,3,3' } })
CASES.slogdet = { args = { 'M:3,3' }, f = function(a) local s, l = torch.slogdet(a); return l end }
-- the symmetric-input functions read one triangle: checked through (A + A^T) / 2, as PyTorch's own
local function sym(f) return function(a, ...) return f((a + a:transpose(-1, -2)) / 2, ...) end end
CASES.cholesky = { args = { 'S:3,3' }, bc = { 'S:2,3,3' }, f = sym(torch.cholesky) }
CASES.cholesky_inverse = { args = { 'M:3,3' }, f = function(a) return torch.cholesky_inverse(torch.tril(a)) end }
CASES.cholesky_solve = { args = { 'R:3,2', 'M:3,3' }, f = function(b, a) return torch.cholesky_solve(b, torch.tril(a)) end }
CASES.triangular_solve = { args = { 'R:3,2', 'M:3,3' },
  f = function(b, a) return (torch.triangular_solve(b, torch.triu(a))) end }
CASES.lu_solve = { args = { 'R:3,2', 'M:3,3' }, f = function(b, a)
  local lu, piv = L.lu_factor(a)
  return torch.lu_solve(b, lu, piv)
end }
CASES.lu = { args = { 'M:3,3' }, f = function(a) return (torch.lu(a)) end }
CASES.lu_unpack = { args = { 'M:3,3' }, f = function(a)
  local lu, piv = L.lu_factor(a)
  local _, l, u = torch.lu_unpack(lu, piv)
  return l, u
end }
CASES.qr = { args = { 'M:3,3' }, f = function(a) local q, r = torch.qr(a); return q, r end }
CASES.svd = { args = { 'M:3,2' }, f = function(a) local u, s, v = torch.svd(a); return s, u:abs(), v:abs() end }
CASES.orgqr = { args = { 'M:3,3' }, f = function(a) return torch.orgqr(a, torch.tensor({ 1.2, 1.5 }, f64)) end }
CASES.ormqr = { args = { 'R:4,3', 'R:3', 'R:4,2' } }
CASES['ormqr(right, transpose)'] = { args = { 'R:4,3', 'R:3', 'R:2,4' },
  f = function(a, t, c) return torch.ormqr(a, t, c, false, true) end }
CASES.norm_except_dim = { args = { 'R:2,3,2' } }
CASES['norm_except_dim(3, 2)'] = { args = { 'R:2,3,2' }, f = function(v) return torch.norm_except_dim(v, 3, 2) end }
CASES.as_strided_scatter = { args = { 'R:2,3', 'R:2,2' },
  f = function(x, src) return torch.as_strided_scatter(x, src, { 2, 2 }, { 1, 2 }, 1) end }
CASES.geqrf = { args = { 'M:3,3' }, f = function(a) return (torch.geqrf(a)) end, no_derivative = 'geqrf' }
CASES.pca_lowrank = { args = { 'M:4,3' }, nogg = 'random projections',
  f = function(a) torch.manual_seed(1); local _, s = torch.pca_lowrank(a, { q = 2, center = false }); return s end }
CASES.svd_lowrank = { args = { 'M:4,3' }, nogg = 'random projections',
  f = function(a) torch.manual_seed(1); local _, s = torch.svd_lowrank(a, { q = 2 }); return s end }
local LCASES = {
  cholesky = { args = { 'S:3,3' }, f = sym(L.cholesky) },
  cholesky_ex = { args = { 'S:3,3' }, f = sym(function(a) return (L.cholesky_ex(a)) end) },
  cond = { args = { 'M:3,3' } }, cross = { args = { 'R:2,3', 'R:2,3' } }, det = { args = { 'M:3,3' } },
  diagonal = { args = { 'R:2,3,3' } },
  eigh = { args = { 'S:3,3' }, f = sym(function(a) local w, v = L.eigh(a); return w, v:abs() end) },
  eigvalsh = { args = { 'S:3,3' }, f = sym(L.eigvalsh) },
  householder_product = { args = { 'M:3,3', 'Q:2' } },
  inv = { args = { 'M:3,3' } }, inv_ex = { args = { 'M:3,3' }, f = function(a) return (L.inv_ex(a)) end },
  ldl_factor = { args = { 'S:3,3' }, f = function(a) return (L.ldl_factor(a)) end, no_derivative = 'ldl_factor' },
  ldl_factor_ex = { args = { 'S:3,3' }, f = function(a) return (L.ldl_factor_ex(a)) end, no_derivative = 'ldl_factor' },
  ldl_solve = { args = { 'R:3,2' }, refuse = 'LdlSolve', f = function(b)
    local ld, piv = L.ldl_factor(torch.tensor({ { 3, 1, 0 }, { 1, 2, 0.5 }, { 0, 0.5, 2 } }, f64))
    return L.ldl_solve(ld, piv, b)
  end },
  lstsq = { args = { 'M:4,3', 'R:4,2' }, f = function(a, b) return (L.lstsq(a, b)) end },
  lu = { args = { 'M:3,3' }, f = function(a) local p, l, u = L.lu(a); return l, u end },
  lu_factor = { args = { 'M:3,3' }, f = function(a) return (L.lu_factor(a)) end },
  lu_factor_ex = { args = { 'M:3,3' }, f = function(a) return (L.lu_factor_ex(a)) end },
  lu_solve = { args = { 'M:3,3', 'R:3,2' }, f = function(a, b)
    local lu, piv = L.lu_factor(a)
    return L.lu_solve(lu, piv, b)
  end },
  matmul = { args = { 'R:2,3', 'R:3,2' } }, matrix_exp = { args = { 'M:3,3' } },
  matrix_norm = { args = { 'R:2,3' } },
  ['matrix_norm(nuc)'] = { args = { 'M:3,2' }, f = function(a) return L.matrix_norm(a, 'nuc') end },
  matrix_power = { args = { 'M:3,3' }, f = function(a) return L.matrix_power(a, 2) end },
  matrix_rank = false, -- integer output: NONDIFF
  multi_dot = { args = { 'R:2,3', 'R:3,2', 'R:2,2' }, f = function(a, b, c) return L.multi_dot({ a, b, c }) end },
  norm = { args = { 'R:2,3' } }, pinv = { args = { 'M:3,2' } },
  qr = { args = { 'M:3,3' }, f = function(a) local q, r = L.qr(a); return q, r end },
  slogdet = { args = { 'M:3,3' }, f = function(a) local _, l = L.slogdet(a); return l end },
  solve = { args = { 'M:3,3', 'R:3,2' }, bc = { 'M:2,3,3', 'R:3,2' } },
  solve_ex = { args = { 'M:3,3', 'R:3,2' }, f = function(a, b) return (L.solve_ex(a, b)) end },
  solve_triangular = { args = { 'M:3,3', 'R:3,2' }, f = function(a, b) return L.solve_triangular(torch.triu(a), b, { upper = true }) end },
  svd = { args = { 'M:3,2' }, f = function(a) local u, s, vh = L.svd(a, { full_matrices = false }); return s, u:abs(), vh:abs() end },
  svdvals = { args = { 'M:3,2' } },
  tensorinv = { args = { 'M:4,4' }, f = function(a) return L.tensorinv(a:reshape(4, 2, 2), { ind = 1 }) end },
  tensorsolve = { args = { 'M:4,4', 'R:4' }, f = function(a, b) return L.tensorsolve(a:reshape(4, 2, 2), b) end },
  vander = { args = { 'R:3' } }, vecdot = { args = { 'R:2,3', 'R:3' } }, vector_norm = { args = { 'R:2,3' } },
}
for name, c in pairs(LCASES) do
  if c then
    c.f = c.f or L[name:match('^[%w_]+')]
    CASES['linalg.' .. name] = c
  end
end

-- torch.nn.functional (loss targets and indices fixed, not differentiated unless they are inputs)
local function Fc(args, f, extra)
  local c = { args = args, f = f }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end
-- the random ops with the same draws at every call
local function seeded(f) return function(...) torch.manual_seed(11); return f(...) end end
local tgt = function() return torch.tensor({ 2, 3 }, { dtype = torch.int64 }) end
local FCASES = {
  adaptive_avg_pool1d = Fc({ 'R:1,2,5' }, function(x) return F.adaptive_avg_pool1d(x, 3) end),
  adaptive_avg_pool2d = Fc({ 'R:1,1,3,4' }, function(x) return F.adaptive_avg_pool2d(x, { 2, 3 }) end),
  adaptive_avg_pool3d = Fc({ 'R:1,1,2,2,3' }, function(x) return F.adaptive_avg_pool3d(x, { 1, 2, 2 }) end),
  adaptive_max_pool1d = Fc({ 'R:1,2,5' }, function(x) return F.adaptive_max_pool1d(x, 3) end),
  adaptive_max_pool1d_with_indices = Fc({ 'R:1,2,5' }, function(x) return (F.adaptive_max_pool1d_with_indices(x, 3)) end),
  adaptive_max_pool2d = Fc({ 'R:1,1,3,4' }, function(x) return F.adaptive_max_pool2d(x, { 2, 2 }) end),
  adaptive_max_pool2d_with_indices = Fc({ 'R:1,1,3,4' }, function(x) return (F.adaptive_max_pool2d_with_indices(x, { 2, 2 })) end),
  adaptive_max_pool3d = Fc({ 'R:1,1,2,2,3' }, function(x) return F.adaptive_max_pool3d(x, { 1, 2, 2 }) end),
  adaptive_max_pool3d_with_indices = Fc({ 'R:1,1,2,2,3' }, function(x) return (F.adaptive_max_pool3d_with_indices(x, { 1, 2, 2 })) end),
  affine_grid = Fc({ 'R:1,2,3' }, function(t) return F.affine_grid(t, { 1, 1, 2, 3 }, { align_corners = false }) end),
  avg_pool1d = Fc({ 'R:1,2,5' }, function(x) return F.avg_pool1d(x, 2) end),
  avg_pool2d = Fc({ 'R:1,1,3,4' }, function(x) return F.avg_pool2d(x, 2, { stride = 1 }) end),
  avg_pool3d = Fc({ 'R:1,1,2,3,3' }, function(x) return F.avg_pool3d(x, 2, { stride = 1 }) end),
  batch_norm = Fc({ 'R:3,2', 'P:2', 'R:2' }, function(x, w, b) return F.batch_norm(x, nil, nil, w, b, { training = true }) end),
  ['batch_norm(eval)'] = Fc({ 'R:3,2', 'P:2', 'R:2' }, function(x, w, b)
    return F.batch_norm(x, torch.tensor({ 0.1, -0.2 }, f64), torch.tensor({ 1.5, 0.7 }, f64), w, b) end),
  bilinear = Fc({ 'R:2,3', 'R:2,2', 'R:4,3,2', 'R:4' }),
  binary_cross_entropy = Fc({ 'Q:2,3', 'Q:2,3' }),
  binary_cross_entropy_with_logits = Fc({ 'R:2,3', 'Q:2,3' }),
  celu = Fc({ 'R:2,3' }), elu = Fc({ 'R:2,3' }), gelu = Fc({ 'R:2,3' }), hardsigmoid = Fc({ 'R:2,3' }),
  hardswish = Fc({ 'R:2,3' }), hardtanh = Fc({ 'R:2,3' }, function(x) return F.hardtanh(x, -0.5, 0.55) end),
  hardshrink = Fc({ 'W:2,3' }), softshrink = Fc({ 'W:2,3' }),
  leaky_relu = Fc({ 'R:2,3' }, function(x) return F.leaky_relu(x, 0.2) end),
  logsigmoid = Fc({ 'R:2,3' }), mish = Fc({ 'R:2,3' }), relu = Fc({ 'R:2,3' }), relu6 = Fc({ 'R:2,3' }),
  selu = Fc({ 'R:2,3' }), sigmoid = Fc({ 'R:2,3' }), silu = Fc({ 'R:2,3' }), softplus = Fc({ 'R:2,3' }),
  softsign = Fc({ 'R:2,3' }), tanh = Fc({ 'R:2,3' }), tanhshrink = Fc({ 'R:2,3' }),
  threshold = Fc({ 'W:2,3' }, function(x) return F.threshold(x, 0.5, -1) end),
  glu = Fc({ 'R:2,4' }),
  prelu = Fc({ 'R:2,3', 'P:3' }),
  rrelu = Fc({ 'R:2,3' }, function(x) return F.rrelu(x) end),
  softmax = Fc({ 'R:2,3' }, function(x) return F.softmax(x, 2) end),
  softmin = Fc({ 'R:2,3' }, function(x) return F.softmin(x, 2) end),
  log_softmax = Fc({ 'R:2,3' }, function(x) return F.log_softmax(x, 2) end),
  channel_shuffle = Fc({ 'R:1,4,2' }, function(x) return F.channel_shuffle(x, 2) end),
  conv1d = Fc({ 'R:1,2,4', 'R:2,2,2', 'R:2' }),
  conv2d = Fc({ 'R:1,1,3,3', 'R:2,1,2,2', 'R:2' }),
  conv3d = Fc({ 'R:1,1,2,2,3', 'R:1,1,2,2,2', 'R:1' }),
  conv_transpose1d = Fc({ 'R:1,2,3', 'R:2,1,2', 'R:1' }),
  conv_transpose2d = Fc({ 'R:1,1,2,2', 'R:1,2,2,2', 'R:2' }),
  conv_transpose3d = Fc({ 'R:1,1,2,1,2', 'R:1,1,2,2,2', 'R:1' }),
  cosine_embedding_loss = Fc({ 'R:2,3', 'R:2,3' }, function(a, b) return F.cosine_embedding_loss(a, b, torch.tensor({ 1, -1 }, f64)) end),
  cosine_similarity = Fc({ 'R:2,3', 'R:2,3' }),
  cross_entropy = Fc({ 'R:2,3' }, function(x) return F.cross_entropy(x, tgt()) end),
  nll_loss = Fc({ 'R:2,3' }, function(x) return F.nll_loss(x, tgt()) end),
  ctc_loss = Fc({ 'R:4,1,3' }, function(x)
    return F.ctc_loss(F.log_softmax(x, 3), torch.tensor({ { 2, 3 } }), torch.tensor({ 4 }), torch.tensor({ 2 })) end),
  dropout = Fc({ 'R:2,3' }, seeded(function(x) return F.dropout(x, 0.4) end)),
  alpha_dropout = Fc({ 'R:2,3' }, seeded(function(x) return F.alpha_dropout(x, 0.4, true) end)),
  feature_alpha_dropout = Fc({ 'R:2,3,2' }, seeded(function(x) return F.feature_alpha_dropout(x, 0.4, true) end)),
  dropout1d = Fc({ 'R:2,3,2' }, seeded(function(x) return F.dropout1d(x, 0.4) end)),
  dropout2d = Fc({ 'R:2,3,2,1' }, seeded(function(x) return F.dropout2d(x, 0.4) end)),
  dropout3d = Fc({ 'R:2,3,1,2,1' }, seeded(function(x) return F.dropout3d(x, 0.4) end)),
  gumbel_softmax = Fc({ 'R:2,3' }, seeded(function(x) return F.gumbel_softmax(x, { tau = 0.7 }) end)),
  ['rrelu(training)'] = Fc({ 'R:2,3' }, seeded(function(x) return F.rrelu(x, 0.1, 0.3, true) end)),
  embedding = Fc({ 'R:4,2' }, function(w) return F.embedding(torch.tensor({ 1, 3, 3 }), w) end),
  embedding_bag = Fc({ 'R:4,2' }, function(w) return F.embedding_bag(torch.tensor({ { 1, 3 }, { 3, 4 } }), w) end),
  fold = Fc({ 'R:1,4,4' }, function(x) return F.fold(x, { 3, 3 }, 2) end),
  unfold = Fc({ 'R:1,1,3,3' }, function(x) return F.unfold(x, 2) end),
  gaussian_nll_loss = Fc({ 'R:2,3', 'R:2,3', 'P:2,3' }),
  grid_sample = Fc({ 'R:1,1,3,3', 'R:1,2,2,2' }, function(x, g) return F.grid_sample(x, g * 0.7, { align_corners = false }) end),
  group_norm = Fc({ 'R:2,4,2', 'P:4', 'R:4' }, function(x, w, b) return F.group_norm(x, 2, w, b) end),
  instance_norm = Fc({ 'R:2,2,3' }, function(x) return F.instance_norm(x) end),
  layer_norm = Fc({ 'R:2,3', 'P:3', 'R:3' }, function(x, w, b) return F.layer_norm(x, { 3 }, w, b) end),
  rms_norm = Fc({ 'R:2,3', 'P:3' }, function(x, w) return F.rms_norm(x, { 3 }, w) end),
  local_response_norm = Fc({ 'R:1,3,2' }, function(x) return F.local_response_norm(x, 2) end),
  normalize = Fc({ 'R:2,3' }),
  hinge_embedding_loss = Fc({ 'R:2,3' }, function(x) return F.hinge_embedding_loss(x, torch.tensor({ { 1, -1, 1 }, { -1, -1, 1 } }, f64)) end),
  huber_loss = Fc({ 'R:2,3', 'R:2,3' }), smooth_l1_loss = Fc({ 'R:2,3', 'R:2,3' }),
  l1_loss = Fc({ 'R:2,3', 'R:2,3' }), mse_loss = Fc({ 'R:2,3', 'R:2,3' }),
  kl_div = Fc({ 'R:2,3', 'Q:2,3' }),
  interpolate = Fc({ 'R:1,1,2,3' }, function(x) return F.interpolate(x, { size = { 3, 4 }, mode = 'bilinear', align_corners = false }) end),
  upsample = Fc({ 'R:1,1,3' }, function(x) return F.upsample(x, { scale_factor = 2, mode = 'linear' }) end),
  upsample_bilinear = Fc({ 'R:1,1,2,2' }, function(x) return F.upsample_bilinear(x, { 3, 3 }) end),
  upsample_nearest = Fc({ 'R:1,1,2,2' }, function(x) return F.upsample_nearest(x, { 3, 3 }) end),
  linear = Fc({ 'R:2,3', 'R:2,3', 'R:2' }),
  lp_pool1d = Fc({ 'P:1,1,4' }, function(x) return F.lp_pool1d(x, 2, 2) end),
  lp_pool2d = Fc({ 'P:1,1,2,4' }, function(x) return F.lp_pool2d(x, 2, 2) end),
  margin_ranking_loss = Fc({ 'R:3', 'R:3' }, function(a, b) return F.margin_ranking_loss(a, b, torch.tensor({ 1, -1, 1 }, f64)) end),
  max_pool1d = Fc({ 'R:1,2,4' }, function(x) return F.max_pool1d(x, 2) end),
  max_pool1d_with_indices = Fc({ 'R:1,2,4' }, function(x) return (F.max_pool1d_with_indices(x, 2)) end),
  max_pool2d = Fc({ 'R:1,1,3,4' }, function(x) return F.max_pool2d(x, 2, { stride = 1 }) end),
  max_pool2d_with_indices = Fc({ 'R:1,1,3,4' }, function(x) return (F.max_pool2d_with_indices(x, 2)) end),
  max_pool3d = Fc({ 'R:1,1,2,2,3' }, function(x) return F.max_pool3d(x, 2, { stride = 1 }) end),
  max_pool3d_with_indices = Fc({ 'R:1,1,2,2,3' }, function(x) return (F.max_pool3d_with_indices(x, 2, { stride = 1 })) end),
  max_unpool1d = Fc({ 'R:1,1,2' }, function(x) return F.max_unpool1d(x, torch.tensor({ { { 1, 4 } } }), 2) end),
  max_unpool2d = Fc({ 'R:1,1,1,2' }, function(x) return F.max_unpool2d(x, torch.tensor({ { { { 1, 4 } } } }), 2) end),
  max_unpool3d = Fc({ 'R:1,1,1,1,2' }, function(x) return F.max_unpool3d(x, torch.tensor({ { { { { 1, 4 } } } } }), 2) end),
  multi_margin_loss = Fc({ 'R:2,3' }, function(x) return F.multi_margin_loss(x, tgt()) end),
  multilabel_margin_loss = Fc({ 'R:2,3' }, function(x) return F.multilabel_margin_loss(x, torch.tensor({ { 2, 0, 0 }, { 1, 3, 0 } })) end),
  multilabel_soft_margin_loss = Fc({ 'R:2,3' }, function(x) return F.multilabel_soft_margin_loss(x, torch.tensor({ { 1, 0, 1 }, { 0, 0, 1 } }, f64)) end),
  soft_margin_loss = Fc({ 'R:2,3' }, function(x) return F.soft_margin_loss(x, torch.tensor({ { 1, -1, 1 }, { -1, -1, 1 } }, f64)) end),
  pad = Fc({ 'R:1,2,3' }, function(x) return F.pad(x, { 1, 2 }, { mode = 'reflect' }) end),
  pairwise_distance = Fc({ 'R:2,3', 'R:2,3' }),
  pdist = Fc({ 'R:3,2' }),
  pixel_shuffle = Fc({ 'R:1,4,1,2' }, function(x) return F.pixel_shuffle(x, 2) end),
  pixel_unshuffle = Fc({ 'R:1,1,2,2' }, function(x) return F.pixel_unshuffle(x, 2) end),
  poisson_nll_loss = Fc({ 'R:2,3', 'P:2,3' }),
  scaled_dot_product_attention = Fc({ 'R:1,2,3', 'R:1,2,3', 'R:1,2,3' }),
  triplet_margin_loss = Fc({ 'R:2,3', 'R:2,3', 'R:2,3' }),
  triplet_margin_with_distance_loss = Fc({ 'R:2,3', 'R:2,3', 'R:2,3' }),
  multi_head_attention_forward = Fc({ 'R:2,1,2', 'R:6,2', 'R:2,2' }, function(x, w, ow)
    local out = F.multi_head_attention_forward(x, x, x, 2, 1, w, nil, nil, nil, false, 0, ow, nil, { need_weights = false })
    return out
  end),
}
for name, c in pairs(FCASES) do
  c.f = c.f or F[name]
  CASES['F.' .. name] = c
end

-- torch.special, and the torch functions of its kind
local S = torch.special
local SCASES = {
  digamma = 'P', psi = 'P', gammaln = 'P', entr = 'P', erf = 'R', erfc = 'R', erfcx = 'R', erfinv = 'R',
  exp2 = 'R', expit = 'R', expm1 = 'R', i0 = 'R', i0e = 'R', i1 = 'R', i1e = 'R', log1p = 'P', log_ndtr = 'R',
  logit = 'Q', ndtr = 'R', ndtri = 'Q', round = 'R', sinc = 'R',
}
for name, dom in pairs(SCASES) do
  CASES['special.' .. name] = { args = { dom .. ':2,3' }, f = S[name], scalar = true }
end
-- i1 and i1e at 0, where their derivative is 1/2: of x minus the values x has at its first call
local function at_zero(f)
  local first = setmetatable({}, { __mode = 'k' })
  return function(x)
    first[x] = first[x] or x:detach():clone()
    return f(x - first[x])
  end
end
CASES['special.i1(0)'] = { args = { 'R:2,3' }, f = at_zero(S.i1) }
CASES['special.i1e(0)'] = { args = { 'R:2,3' }, f = at_zero(S.i1e) }
CASES['special.log_softmax'] = { args = { 'R:2,3' }, f = function(x) return S.log_softmax(x, 2) end }
CASES['special.softmax'] = { args = { 'R:2,3' }, f = function(x) return S.softmax(x, 2) end }
CASES['special.logsumexp'] = { args = { 'R:2,3' }, f = function(x) return S.logsumexp(x, 2) end }
CASES['special.xlogy'] = { args = { 'P:2,3', 'P:2,3' }, bc = { 'P:2,3', 'P:3' }, f = S.xlogy }
CASES['special.xlog1py'] = { args = { 'P:2,3', 'P:2,3' }, bc = { 'P:2,3', 'P:3' }, f = S.xlog1py }
-- as PyTorch: the derivative in the first argument is not implemented, in the second it is
CASES['special.gammainc'] = { args = { 'P:2,3' }, f = function(x) return S.gammainc(torch.full({ 2, 3 }, 1.5, f64), x) end }
CASES['special.gammaincc'] = { args = { 'P:2,3' }, f = function(x) return S.gammaincc(torch.full({ 2, 3 }, 1.5, f64), x) end }
CASES['special.zeta'] = { args = { 'G:2,3' }, f = function(x) return S.zeta(x, torch.full({ 2, 3 }, 1.5, f64)) end,
  no_derivative = 'zeta' }
CASES['igamma(first)'] = { args = { 'P:2,3' }, f = function(a) return torch.igamma(a, torch.full({ 2, 3 }, 1.5, f64)) end,
  no_derivative = 'igamma' }
CASES['special.polygamma'] = { args = { 'P:2,3' }, f = function(x) return S.polygamma(2, x) end }
CASES.polygamma = { args = { 'P:2,3' }, f = function(x) return torch.polygamma(1, x) end, scalar = true }
CASES['special.multigammaln'] = { args = { 'G:2,3' }, f = function(x) return S.multigammaln(x, 2) end }
CASES.mvlgamma = { args = { 'G:2,3' }, f = function(x) return torch.mvlgamma(x, 2) end }

-- more broadcasting, number operands, rounding modes and 0-size inputs
CASES['matmul(batched)'] = { args = { 'R:2,2,3', 'R:3,2' }, f = torch.matmul, bc = { 'R:2,1,2,3', 'R:2,3,1' } }
CASES['addmm(broadcast)'] = { args = { 'R:2', 'R:2,3', 'R:3,2' }, f = torch.addmm }
CASES['addmv(broadcast)'] = { args = { 'R:1', 'R:2,3', 'R:3' }, f = torch.addmv }
CASES['addr(broadcast)'] = { args = { 'R:3', 'R:2', 'R:3' }, f = torch.addr }
CASES['baddbmm(broadcast)'] = { args = { 'R:2', 'R:2,2,3', 'R:2,3,2' }, f = torch.baddbmm }
CASES['cross(broadcast)'] = { args = { 'R:1,3', 'R:2,3' }, f = function(a, b) return torch.cross(a, b, 2) end }
CASES['F.cosine_similarity(broadcast)'] = { args = { 'R:2,3', 'R:3' }, f = F.cosine_similarity }
CASES['pow(number)'] = { args = { 'P:2,3' }, f = function(x) return torch.pow(x, 2.5) end, scalar = true, empty = true }
CASES['pow(number base)'] = { args = { 'R:2,3' }, f = function(x) return torch.pow(2.5, x) end, scalar = true }
CASES['div(floor)'] = { args = { 'R:2,3', 'W:2,3' }, f = function(a, b) return torch.div(a, b, { rounding_mode = 'floor' }) end }
CASES['div(trunc)'] = { args = { 'R:2,3', 'W:2,3' }, f = function(a, b) return torch.div(a, b, { rounding_mode = 'trunc' }) end }
CASES['lerp(number)'] = { args = { 'R:2,3', 'R:3' }, f = function(a, b) return torch.lerp(a, b, 0.3) end }
CASES['sum(empty)'] = { args = { 'R:0,2' }, f = torch.sum }
CASES['prod(empty)'] = { args = { 'R:0,2' }, f = function(x) return torch.prod(x, 1) end }
CASES['cumsum(empty)'] = { args = { 'R:0,2' }, f = function(x) return torch.cumsum(x, 1) end }
CASES['mm(empty)'] = { args = { 'R:2,0', 'R:0,3' }, f = torch.mm }
CASES['softmax(empty)'] = { args = { 'R:0,3' }, f = function(x) return torch.softmax(x, 2) end }

-- nn.functional options
local function opt(name, args, ...)
  local extra = table.pack(...)
  return { args = args, f = function(...)
    local a = table.pack(...)
    for i = 1, extra.n do a[a.n + i] = extra[i] end
    return F[name](table.unpack(a, 1, a.n + extra.n))
  end }
end
local FOPTS = {
  ['conv2d(stride, padding, dilation, groups)'] = opt('conv2d', { 'R:1,2,4,4', 'R:2,1,2,2', 'R:2' },
    { stride = 2, padding = 1, dilation = 1, groups = 2 }),
  ['conv2d(dilation)'] = opt('conv2d', { 'R:1,1,4,4', 'R:1,1,2,2' }, nil, { dilation = 2, padding = 'same' }),
  ['conv1d(padding same)'] = opt('conv1d', { 'R:1,1,4', 'R:1,1,3' }, nil, { padding = 'same' }),
  ['conv_transpose2d(stride, output_padding, groups)'] = opt('conv_transpose2d', { 'R:1,2,2,2', 'R:2,1,2,2' }, nil,
    { stride = 2, output_padding = 1, groups = 2 }),
  ['conv_transpose1d(dilation, padding)'] = opt('conv_transpose1d', { 'R:1,1,3', 'R:1,1,2' }, nil, { dilation = 2, padding = 1 }),
  ['interpolate(nearest)'] = opt('interpolate', { 'R:1,1,2,3' }, { size = { 3, 5 }, mode = 'nearest' }),
  ['interpolate(bicubic)'] = opt('interpolate', { 'R:1,1,2,3' }, { size = { 3, 4 }, mode = 'bicubic', align_corners = true }),
  ['interpolate(trilinear)'] = opt('interpolate', { 'R:1,1,2,2,2' }, { scale_factor = 1.5, mode = 'trilinear' }),
  ['interpolate(area)'] = opt('interpolate', { 'R:1,1,3,4' }, { size = { 2, 3 }, mode = 'area' }),
  ['interpolate(linear)'] = opt('interpolate', { 'R:1,2,3' }, { size = 5, mode = 'linear', align_corners = true }),
  ['pad(replicate)'] = opt('pad', { 'R:1,2,3' }, { 2, 1 }, { mode = 'replicate' }),
  ['pad(circular)'] = opt('pad', { 'R:1,1,2,3' }, { 1, 2, 1, 0 }, { mode = 'circular' }),
  ['pad(constant)'] = opt('pad', { 'R:2,3' }, { 1, 1, 0, 2 }, { value = 0.5 }),
  ['pad(reflect 2d)'] = opt('pad', { 'R:1,1,3,3' }, { 1, 1, 2, 1 }, { mode = 'reflect' }),
  ['grid_sample(nearest, border)'] = { args = { 'R:1,1,3,3', 'R:1,2,2,2' },
    f = function(x, g) return F.grid_sample(x, g * 0.7, { mode = 'nearest', padding_mode = 'border', align_corners = true }) end },
  ['grid_sample(reflection)'] = { args = { 'R:1,1,3,3', 'R:1,2,2,2' },
    f = function(x, g) return F.grid_sample(x, g * 1.3, { padding_mode = 'reflection', align_corners = false }) end },
  ['embedding_bag(mean)'] = { args = { 'R:4,2' }, f = function(w) return F.embedding_bag(torch.tensor({ { 1, 3 }, { 3, 4 } }), w, { mode = 'mean' }) end },
  ['embedding_bag(max)'] = { args = { 'R:4,2' }, f = function(w) return F.embedding_bag(torch.tensor({ { 1, 3 }, { 2, 4 } }), w, { mode = 'max' }) end },
  ['embedding_bag(per_sample_weights)'] = { args = { 'R:4,2', 'R:2,2' },
    f = function(w, p) return F.embedding_bag(torch.tensor({ { 1, 3 }, { 3, 4 } }), w, { mode = 'sum', per_sample_weights = p }) end },
  -- the padding row gets no gradient (PyTorch's convention): checked through an output where it is
  -- masked out, so the finite differences agree
  ['embedding(padding_idx)'] = { args = { 'R:4,2' }, f = function(w)
    return F.embedding(torch.tensor({ 1, 2, 2, 4 }), w, { padding_idx = 2 }) * torch.tensor({ { 1 }, { 0 }, { 0 }, { 1 } }, f64) end },
  ['nll_loss(weight, ignore_index)'] = { args = { 'R:3,3' }, f = function(x)
    return F.nll_loss(x, torch.tensor({ 1, 3, 2 }), { weight = torch.tensor({ 0.5, 2, 1.5 }, f64), ignore_index = 2 }) end },
  ['cross_entropy(weight, label_smoothing)'] = { args = { 'R:3,3' }, f = function(x)
    return F.cross_entropy(x, torch.tensor({ 1, 3, 2 }), { weight = torch.tensor({ 0.5, 2, 1.5 }, f64), label_smoothing = 0.1 }) end },
  -- differentiable in the weight where PyTorch is: class-probability targets
  ['cross_entropy(probabilities, weight)'] = { args = { 'R:2,3', 'P:3' },
    f = function(x, w) return F.cross_entropy(x, torch.tensor({ { 0.2, 0.5, 0.3 }, { 0.6, 0.1, 0.3 } }, f64), { weight = w }) end },
  -- and where PyTorch refuses a weight that requires grad and lutorch differentiates it
  ['binary_cross_entropy(weight)'] = { args = { 'Q:2,3', 'P:3' },
    f = function(x, w) return F.binary_cross_entropy(x, torch.tensor({ 0.2, 0.5, 0.9 }, f64):expand(2, 3), { weight = w }) end },
  ['binary_cross_entropy_with_logits(weight)'] = { args = { 'R:2,3', 'P:3' },
    f = function(x, w) return F.binary_cross_entropy_with_logits(x, torch.tensor({ 0.2, 0.5, 0.9 }, f64):expand(2, 3), { weight = w }) end },
  ['multi_margin_loss(weight)'] = { args = { 'R:2,3', 'P:3' },
    f = function(x, w) return F.multi_margin_loss(x, torch.tensor({ 2, 3 }), { weight = w }) end },
  ['cross_entropy(label_smoothing)'] = { args = { 'R:2,3' },
    f = function(x) return F.cross_entropy(x, torch.tensor({ 1, 3 }), { label_smoothing = 0.2 }) end },
  ['cross_entropy(probabilities)'] = { args = { 'R:2,3', 'Q:2,3' }, f = function(x, t) return F.cross_entropy(x, t) end },
  ['cross_entropy(4-D)'] = { args = { 'R:1,3,2,2' },
    f = function(x) return F.cross_entropy(x, torch.tensor({ { { 1, 2 }, { 3, 1 } } }), { reduction = 'sum' }) end },
  ['avg_pool2d(ceil, no padding count)'] = opt('avg_pool2d', { 'R:1,1,3,4' }, 2,
    { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false }),
  ['avg_pool2d(divisor_override)'] = opt('avg_pool2d', { 'R:1,1,2,4' }, 2, { divisor_override = 3 }),
  ['max_pool2d(dilation, padding)'] = opt('max_pool2d', { 'R:1,1,4,4' }, 2, { dilation = 2, padding = 1 }),
  ['max_pool1d(ceil)'] = opt('max_pool1d', { 'R:1,1,5' }, 2, { ceil_mode = true }),
  ['ctc_loss(sum)'] = { args = { 'R:5,2,3' }, f = function(x)
    return F.ctc_loss(F.log_softmax(x, 3), torch.tensor({ { 2, 3 }, { 2, 2 } }), torch.tensor({ 5, 4 }), torch.tensor({ 2, 2 }),
      { reduction = 'sum' }) end },
  ['kl_div(log_target)'] = { args = { 'R:2,3', 'R:2,3' }, f = function(x, t) return F.kl_div(x, t, { log_target = true, reduction = 'batchmean' }) end },
  ['binary_cross_entropy_with_logits(pos_weight)'] = { args = { 'R:2,3', 'Q:2,3', 'P:3' },
    f = function(x, t, p) return F.binary_cross_entropy_with_logits(x, t, { pos_weight = p }) end },
  ['poisson_nll_loss(full, not log)'] = { args = { 'P:2,3', 'P:2,3' },
    f = function(x, t) return F.poisson_nll_loss(x, t, { log_input = false, full = true }) end },
  ['gaussian_nll_loss(full)'] = { args = { 'R:2,3', 'R:2,3', 'P:2,1' },
    f = function(x, t, v) return F.gaussian_nll_loss(x, t, v, { full = true }) end },
  ['layer_norm(2 dims)'] = { args = { 'R:2,2,3', 'P:2,3', 'R:2,3' }, f = function(x, w, b) return F.layer_norm(x, { 2, 3 }, w, b) end },
  ['instance_norm(affine)'] = { args = { 'R:2,2,3', 'P:2', 'R:2' }, f = function(x, w, b) return F.instance_norm(x, nil, nil, w, b) end },
  ['scaled_dot_product_attention(causal)'] = { args = { 'R:1,3,2', 'R:1,3,2', 'R:1,3,2' },
    f = function(q, k, v) return F.scaled_dot_product_attention(q, k, v, { is_causal = true }) end },
  ['normalize(p = 1)'] = { args = { 'R:2,3' }, f = function(x) return F.normalize(x, { p = 1, dim = 1 }) end },
  ['pdist(p = 1)'] = { args = { 'R:3,2' }, f = function(x) return F.pdist(x, 1) end },
  ['cdist(p = 1)'] = { args = { 'R:2,3', 'R:3,3' }, f = function(a, b) return torch.cdist(a, b, 1) end },
  ['triplet_margin_loss(swap, p = 1)'] = { args = { 'R:2,3', 'R:2,3', 'R:2,3' },
    f = function(a, p, n) return F.triplet_margin_loss(a, p, n, { swap = true, p = 1, margin = 3 }) end },
  ['smooth_l1_loss(beta)'] = { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return F.smooth_l1_loss(a, b, { beta = 0.1 }) end },
  ['huber_loss(delta)'] = { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return F.huber_loss(a, b, { delta = 0.1 }) end },
  ['lp_pool2d(p = 3)'] = opt('lp_pool2d', { 'P:1,1,2,4' }, 3, 2),
  ['adaptive_avg_pool2d(uneven)'] = opt('adaptive_avg_pool2d', { 'R:1,1,5,3' }, { 3, 2 }),
}
for name, c in pairs(FOPTS) do
  CASES[name:match('^cdist') and name or 'F.' .. name] = c
end

-- reduction options: several dims, negative dims, keepdim, norms' orders, corrections
local function red(f) return { args = { 'R:2,3,2' }, f = f } end
local ROPTS = {
  ['sum(dims, keepdim)'] = red(function(x) return torch.sum(x, { 1, 3 }, true) end),
  ['mean(-1)'] = red(function(x) return torch.mean(x, -1) end),
  ['amax(dims)'] = red(function(x) return torch.amax(x, { 1, -1 }) end),
  ['logsumexp(dims)'] = red(function(x) return torch.logsumexp(x, { 2, 3 }) end),
  ['var(correction 0)'] = red(function(x) return torch.var(x, 2, { correction = 0 }) end),
  ['std(unbiased false, keepdim)'] = red(function(x) return torch.std(x, 2, false, true) end),
  ['prod(keepdim)'] = red(function(x) return torch.prod(x, 3, true) end),
  ['norm(inf)'] = red(function(x) return torch.norm(x, math.huge) end),
  ['norm(1, dims)'] = red(function(x) return torch.norm(x, 1, { 1, 2 }) end),
  ['norm(0.5)'] = red(function(x) return torch.norm(x, 0.5) end),
  ['norm(fro)'] = red(function(x) return torch.norm(x, 'fro') end),
  ['sort(descending)'] = red(function(x) return (torch.sort(x, 2, true)) end),
  ['topk(smallest)'] = red(function(x) return (torch.topk(x, 2, 2, false)) end),
  ['max(dim, keepdim)'] = red(function(x) return (torch.max(x, 2, true)) end),
  ['median(all)'] = red(function(x) return torch.median(x) end),
  ['cumsum(-1)'] = red(function(x) return torch.cumsum(x, -1) end),
  ['cumprod(with a zero)'] = { args = { 'R:2,3' }, f = function(x) return torch.cumprod(x * torch.tensor({ 1, 0, 1 }, f64), 2) end },
  ['prod(with a zero)'] = { args = { 'R:2,3' }, f = function(x) return torch.prod(x * torch.tensor({ 1, 0, 1 }, f64), 2) end },
  ['linalg.vector_norm(inf)'] = red(function(x) return torch.linalg.vector_norm(x, math.huge, { 2, 3 }) end),
  ['linalg.vector_norm(-inf)'] = red(function(x) return torch.linalg.vector_norm(x, -math.huge) end),
  ['linalg.vector_norm(3, keepdim)'] = red(function(x) return torch.linalg.vector_norm(x, 3, 1, true) end),
  ['linalg.matrix_norm(1)'] = { args = { 'R:2,3' }, f = function(x) return torch.linalg.matrix_norm(x, 1) end },
  ['linalg.matrix_norm(inf)'] = { args = { 'R:2,3' }, f = function(x) return torch.linalg.matrix_norm(x, math.huge) end },
  ['linalg.matrix_norm(2)'] = { args = { 'M:3,2' }, f = function(x) return torch.linalg.matrix_norm(x, 2) end },
  ['linalg.matrix_norm(-2)'] = { args = { 'M:3,2' }, f = function(x) return torch.linalg.matrix_norm(x, -2) end },
  ['linalg.norm(nuc)'] = { args = { 'M:3,2' }, f = function(x) return torch.linalg.norm(x, 'nuc') end },
  ['linalg.norm(vector 2, dim)'] = red(function(x) return torch.linalg.norm(x, 2, 2) end),
  ['linalg.cond(fro)'] = { args = { 'M:3,3' }, f = function(x) return torch.linalg.cond(x, 'fro') end },
  ['linalg.cond(1)'] = { args = { 'M:3,3' }, f = function(x) return torch.linalg.cond(x, 1) end },
  ['linalg.pinv(hermitian)'] = { args = { 'S:3,3' }, f = sym(function(x) return torch.linalg.pinv(x, { hermitian = true }) end) },
  ['linalg.solve(left false)'] = { args = { 'M:3,3', 'R:2,3' }, f = function(a, b) return torch.linalg.solve(a, b, { left = false }) end },
  ['linalg.solve_triangular(lower, left false, unit)'] = { args = { 'M:3,3', 'R:2,3' },
    f = function(a, b) return torch.linalg.solve_triangular(torch.tril(a), b, { upper = false, left = false, unitriangular = true }) end },
  -- as PyTorch: no Q, no derivative
  ['linalg.qr(r)'] = { args = { 'M:4,3' }, f = function(a) local _, r = torch.linalg.qr(a, 'r'); return r end,
    no_derivative = "mode='r'" },
  ['linalg.qr(complete)'] = { args = { 'M:3,3' }, f = function(a) local q, r = torch.linalg.qr(a, 'complete'); return q, r end },
  ['linalg.lu(batched)'] = { args = { 'M:2,3,3' }, f = function(a) local _, l, u = torch.linalg.lu(a); return l, u end },
  ['linalg.det(batched)'] = { args = { 'M:2,3,3' }, f = torch.linalg.det },
  ['linalg.inv(batched)'] = { args = { 'M:2,3,3' }, f = torch.linalg.inv },
  ['linalg.lstsq(wide)'] = { args = { 'M:2,3', 'R:2,2' }, f = function(a, b) return (torch.linalg.lstsq(a, b)) end },
  ['linalg.svd(full)'] = { args = { 'M:3,2' }, f = function(a) local u, s, vh = torch.linalg.svd(a); return s, (u:narrow(2, 1, 2)):abs(), vh:abs() end },
  ['linalg.eigvalsh(upper)'] = { args = { 'S:3,3' }, f = sym(function(a) return torch.linalg.eigvalsh(a, 'U') end) },
  ['linalg.cholesky(upper)'] = { args = { 'S:3,3' }, f = sym(function(a) return torch.linalg.cholesky(a, { upper = true }) end) },
  ['linalg.householder_product(tall)'] = { args = { 'M:4,2', 'Q:2' }, f = torch.linalg.householder_product },
}
for name, c in pairs(ROPTS) do CASES[name] = c end

-- Tensor plumbing that carries gradients, and more indexing modes
local function m(f) return { args = { 'R:2,3' }, f = f } end
local IOPTS = {
  ['repeat'] = m(function(x) return x['repeat'](x, 2, 1, 2) end),
  repeatTensor = m(function(x) return x:repeatTensor(2, 2) end),
  expand = { args = { 'R:2,1' }, f = function(x) return x:expand(2, 2, 3) end },
  expand_as = { args = { 'R:3' }, f = function(x) return x:expand_as(torch.zeros(2, 3)) end },
  view = m(function(x) return x:contiguous():view(3, 2) end),
  view_as = m(function(x) return x:contiguous():view_as(torch.zeros(6)) end),
  reshape_as = m(function(x) return x:reshape_as(torch.zeros(3, 2)) end),
  contiguous = m(function(x) return x:contiguous() end),
  sum_to_size = m(function(x) return x:sum_to_size(1, 3) end),
  double = m(function(x) return x:double() end),
  to = m(function(x) return x:to(torch.float64) end),
  type = m(function(x) return x:type('torch.DoubleTensor') end),
  ['index(advanced)'] = m(function(x) return x[{ torch.tensor({ 2, 1, 2 }), torch.tensor({ 3, 3, 1 }) }] end),
  ['index(mask)'] = m(function(x) return x[x:detach():gt(0)] end),
  ['index_put(accumulate)'] = { args = { 'R:2,3', 'R:3' },
    f = function(x, v) return torch.index_put(x, { torch.tensor({ 1, 1, 2 }), torch.tensor({ 2, 2, 3 }) }, v, true) end },
  ['scatter_reduce(sum, exclude self)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.scatter_reduce(x, 2, idx { { 1, 1 }, { 2, 3 } }, s, 'sum', { include_self = false }) end },
  ['scatter_reduce(mean)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.scatter_reduce(x, 2, idx { { 1, 1 }, { 2, 3 } }, s, 'mean') end },
  ['scatter_reduce(amax)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.scatter_reduce(x, 2, idx { { 1, 1 }, { 2, 3 } }, s, 'amax') end },
  ['scatter_reduce(amin, exclude self)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.scatter_reduce(x, 2, idx { { 1, 1 }, { 2, 3 } }, s, 'amin', { include_self = false }) end },
  ['index_reduce(mean)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.index_reduce(x, 2, idx { 3, 3 }, s, 'mean') end },
  ['index_reduce(amax, exclude self)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.index_reduce(x, 2, idx { 3, 1 }, s, 'amax', { include_self = false }) end },
  ['scatter(reduce add)'] = { args = { 'R:2,3', 'R:2,2' },
    f = function(x, s) return torch.scatter(x, 2, idx { { 1, 1 }, { 2, 3 } }, s, { reduce = 'add' }) end },
  ['gather(-1)'] = m(function(x) return torch.gather(x, -1, idx { { 1, 3 }, { 2, 2 } }) end),
  ['take_along_dim(flat)'] = m(function(x) return torch.take_along_dim(x, idx { 6, 1, 1 }) end),
  ['masked_fill(broadcast mask)'] = m(function(x) return torch.masked_fill(x, torch.tensor({ true, false, true }), -1) end),
  ['masked_fill(tensor value)'] = { args = { 'R:2,3', 'R:' },
    f = function(x, v) return torch.masked_fill(x, torch.tensor({ true, false, true }), v) end },
  ['masked_fill(tensor value, method)'] = { args = { 'R:2,3', 'R:' },
    f = function(x, v) return x:masked_fill(torch.tensor({ { true }, { false } }), v) end },
  ['where(number)'] = m(function(x) return torch.where(x:detach():gt(0), x, 0.5) end),
  ['where(0-dim)'] = { args = { 'R:', 'R:2,3' }, f = function(a, b) return torch.where(b:detach():gt(0), a, b) end },
  ['select(negative)'] = m(function(x) return x:select(-1, -1) end),
  ['narrow(negative)'] = m(function(x) return x:narrow(-1, 2, 2) end),
  ['diagonal(offset)'] = { args = { 'R:3,4' }, f = function(x) return torch.diagonal(x, 1) end },
  ['diagonal(dims)'] = { args = { 'R:2,3,3' }, f = function(x) return torch.diagonal(x, -1, 2, 3) end },
  ['diag_embed(offset)'] = { args = { 'R:2,3' }, f = function(x) return torch.diag_embed(x, -1) end },
  ['tril(offset)'] = { args = { 'R:3,4' }, f = function(x) return torch.tril(x, 1) end },
  ['triu(negative)'] = { args = { 'R:2,3,3' }, f = function(x) return torch.triu(x, -1) end },
  ['roll(dims)'] = m(function(x) return torch.roll(x, { 1, -1 }, { 1, 2 }) end),
  ['roll(flat)'] = m(function(x) return torch.roll(x, 2) end),
  ['rot90(k = 3)'] = m(function(x) return torch.rot90(x, 3) end),
  ['repeat_interleave(tensor)'] = m(function(x) return torch.repeat_interleave(x, torch.tensor({ 1, 0, 2 }), 2) end),
  ['unfold(overlapping)'] = { args = { 'R:2,5' }, f = function(x) return x:unfold(2, 3, 1) end },
  ['as_strided(overlapping)'] = m(function(x) return torch.as_strided(x, { 2, 3 }, { 1, 1 }) end),
  ['kthvalue(keepdim)'] = m(function(x) return (torch.kthvalue(x, 1, 1, true)) end),
}
for name, c in pairs(IOPTS) do CASES[name] = c end

-- the refused double backwards outside the walked namespaces (SyncBatchNorm's needs a process
-- group: nn_sync_batchnorm_spec). standard_gamma's gradient is the implicit one (of the quantile at
-- a fixed CDF), not the finite differences of a seeded rejection sampler: its refusal only
CASES['distributions standard_gamma'] = { args = { 'G:3' }, refuse = 'StandardGamma', refuse_only = true, f = function(a)
  torch.manual_seed(5)
  return require('torch.distributions.samplers').standard_gamma(a)
end }
CASES['utils.checkpoint'] = { args = { 'R:2,3' }, refuse = 'CheckpointFunction',
  f = function(x) return require('torch.utils.checkpoint').checkpoint(function(y) return torch.sin(y) * y end, x) end }

-- more nn.functional options
local MORE = {
  ['batch_norm(4-D)'] = { args = { 'R:2,2,2,2', 'P:2', 'R:2' }, f = function(x, w, b) return F.batch_norm(x, nil, nil, w, b, { training = true }) end },
  ['group_norm(no affine)'] = { args = { 'R:2,4,3' }, f = function(x) return F.group_norm(x, 2) end },
  ['layer_norm(no affine)'] = { args = { 'R:2,3' }, f = function(x) return F.layer_norm(x, { 3 }) end },
  ['instance_norm(running stats)'] = { args = { 'R:2,2,3' }, f = function(x)
    return F.instance_norm(x, torch.zeros(2, f64), torch.ones(2, f64), nil, nil, { use_input_stats = true }) end },
  ['local_response_norm(4-D)'] = { args = { 'R:1,3,2,2' }, f = function(x) return F.local_response_norm(x, 3, { alpha = 0.1, beta = 0.75, k = 2 }) end },
  ['fold(stride, padding, dilation)'] = { args = { 'R:1,4,9' }, f = function(x) return F.fold(x, { 4, 4 }, 2, { stride = 2, padding = 1, dilation = 1 }) end },
  ['unfold(stride, padding, dilation)'] = { args = { 'R:1,1,4,4' }, f = function(x) return F.unfold(x, 2, { stride = 2, padding = 1, dilation = 2 }) end },
  ['affine_grid(align_corners)'] = { args = { 'R:1,2,3' }, f = function(t) return F.affine_grid(t, { 1, 1, 3, 2 }, { align_corners = true }) end },
  ['interpolate(bilinear align_corners)'] = { args = { 'R:1,1,2,3' }, f = function(x) return F.interpolate(x, { scale_factor = 2, mode = 'bilinear', align_corners = true }) end },
  ['interpolate(bilinear antialias)'] = { args = { 'R:1,2,5,4' }, f = function(x) return F.interpolate(x, { size = { 2, 3 }, mode = 'bilinear', antialias = true }) end },
  ['interpolate(bicubic antialias)'] = { args = { 'R:1,1,6,3' }, f = function(x)
    return F.interpolate(x, { size = { 2, 4 }, mode = 'bicubic', antialias = true, align_corners = true }) end },
  ['grid_sample(bicubic)'] = { args = { 'R:1,2,3,3', 'R:1,2,2,2' },
    f = function(x, g) return F.grid_sample(x, g * 1.2, { mode = 'bicubic', padding_mode = 'border' }) end },
  ['grid_sample(bicubic, reflection)'] = { args = { 'R:1,1,3,4', 'R:1,2,2,2' },
    f = function(x, g) return F.grid_sample(x, g * 1.6, { mode = 'bicubic', padding_mode = 'reflection', align_corners = true }) end },
  ['grid_sample(5-D)'] = { args = { 'R:1,2,2,3,3', 'R:1,2,1,2,3' },
    f = function(x, g) return F.grid_sample(x, g * 1.3, { padding_mode = 'reflection', align_corners = true }) end },
  ['grid_sample(5-D nearest)'] = { args = { 'R:1,1,2,3,3' },
    f = function(x) return F.grid_sample(x, torch.tensor({ { { { { 0.2, -0.6, 0.45 }, { -0.9, 0.3, -0.15 } } } } }, f64), { mode = 'nearest' }) end },
  ['affine_grid(5-D)'] = { args = { 'R:1,3,4' }, f = function(t) return F.affine_grid(t, { 1, 1, 2, 3, 2 }) end },
  -- max_norm above the rows' norms: the renormalisation (outside autograd) changes nothing, so the
  -- finite differences agree; the path through it keeps the gradient
  ['embedding_bag(max_norm)'] = { args = { 'R:4,2' },
    f = function(w) return F.embedding_bag(torch.tensor({ { 1, 3 }, { 3, 4 } }), w, { mode = 'sum', max_norm = 10 }) end },
  ['adaptive_max_pool2d(uneven)'] = { args = { 'R:1,1,5,3' }, f = function(x) return F.adaptive_max_pool2d(x, { 3, 2 }) end },
  ['max_unpool2d(output_size)'] = { args = { 'R:1,1,1,2' }, f = function(x) return F.max_unpool2d(x, torch.tensor({ { { { 2, 5 } } } }), 2, { output_size = { 3, 3 } }) end },
  ['ctc_loss(zero_infinity)'] = { args = { 'R:2,1,3' }, f = function(x)
    return F.ctc_loss(F.log_softmax(x, 3), torch.tensor({ { 2, 2, 3 } }), torch.tensor({ 2 }), torch.tensor({ 3 }), { zero_infinity = true }) end },
  ['rrelu(eval)'] = { args = { 'R:2,3' }, f = function(x) return F.rrelu(x, 0.1, 0.3, false) end },
  ['elu(alpha)'] = { args = { 'R:2,3' }, f = function(x) return F.elu(x, 0.7) end },
  ['celu(alpha)'] = { args = { 'R:2,3' }, f = function(x) return F.celu(x, 0.7) end },
  ['softplus(beta, threshold)'] = { args = { 'R:2,3' }, f = function(x) return F.softplus(x, 2, 1) end },
  ['gelu(tanh)'] = { args = { 'R:2,3' }, f = function(x) return F.gelu(x, { approximate = 'tanh' }) end },
  ['glu(dim 1)'] = { args = { 'R:4,3' }, f = function(x) return F.glu(x, 1) end },
  ['prelu(one weight)'] = { args = { 'R:2,3', 'P:1' }, f = F.prelu },
  ['linear(no bias)'] = { args = { 'R:2,3', 'R:2,3' }, f = F.linear },
  ['linear(1-D input)'] = { args = { 'R:3', 'R:2,3', 'R:2' }, f = F.linear },
  ['bilinear(no bias)'] = { args = { 'R:2,3', 'R:2,2', 'R:4,3,2' }, f = F.bilinear },
  ['scaled_dot_product_attention(float mask)'] = { args = { 'R:1,2,3', 'R:1,3,3', 'R:1,3,2', 'R:2,3' },
    f = function(q, k, v, m) return F.scaled_dot_product_attention(q, k, v, { attn_mask = m }) end },
  ['scaled_dot_product_attention(bool mask)'] = { args = { 'R:1,2,3', 'R:1,3,3', 'R:1,3,2' },
    f = function(q, k, v) return F.scaled_dot_product_attention(q, k, v, { attn_mask = torch.tensor({ { true, false, true }, { true, true, false } }) }) end },
  ['multi_head_attention_forward(weights)'] = { args = { 'R:2,1,2', 'R:6,2', 'R:6', 'R:2,2' }, f = function(x, w, b, ow)
    local out, attn = F.multi_head_attention_forward(x, x, x, 2, 1, w, b, nil, nil, false, 0, ow, nil, { need_weights = true })
    return out, attn
  end },
  ['kl_div(none)'] = { args = { 'R:2,3', 'Q:2,3' }, f = function(x, t) return F.kl_div(x, t, { reduction = 'none' }) end },
  ['mse_loss(broadcast, sum)'] = { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return F.mse_loss(a, b, { reduction = 'sum' }) end },
  ['l1_loss(none)'] = { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return F.l1_loss(a, b, { reduction = 'none' }) end },
  ['cosine_embedding_loss(margin)'] = { args = { 'R:2,3', 'R:2,3' }, f = function(a, b) return F.cosine_embedding_loss(a, b, torch.tensor({ -1, -1 }, f64), { margin = -0.5 }) end },
  ['multi_margin_loss(p 2, margin)'] = { args = { 'R:2,3' }, f = function(x) return F.multi_margin_loss(x, torch.tensor({ 2, 3 }), { p = 2, margin = 0.5 }) end },
  ['triplet_margin_with_distance_loss(distance)'] = { args = { 'R:2,3', 'R:2,3', 'R:2,3' }, f = function(a, p, n)
    return F.triplet_margin_with_distance_loss(a, p, n, { distance_function = function(u, v) return (u - v):abs():sum(2) end, margin = 2 }) end },
  ['pairwise_distance(p 1, keepdim)'] = { args = { 'R:2,3', 'R:3' }, f = function(a, b) return F.pairwise_distance(a, b, { p = 1, keepdim = true }) end },
  ['pixel_shuffle(batched)'] = { args = { 'R:2,1,4,1,2' }, f = function(x) return F.pixel_shuffle(x, 2) end },
  ['normalize(0-size)'] = { args = { 'R:0,3' }, f = F.normalize },
}
for name, c in pairs(MORE) do CASES['F.' .. name] = c end

-- empty matrices and batches
local EMPTY = {
  ['linalg.det(0 x 0)'] = { args = { 'R:0,0' }, f = torch.linalg.det },
  ['linalg.slogdet(0 x 0)'] = { args = { 'R:0,0' }, f = function(a) local _, l = torch.linalg.slogdet(a); return l end },
  ['linalg.det(empty batch)'] = { args = { 'R:0,2,2' }, f = torch.linalg.det },
  ['logdet(0 x 0)'] = { args = { 'R:0,0' }, f = torch.logdet },
  ['linalg.inv(empty batch)'] = { args = { 'R:0,2,2' }, f = torch.linalg.inv },
  ['linalg.solve(0 columns)'] = { args = { 'M:3,3', 'R:3,0' }, f = torch.linalg.solve },
  ['linalg.cholesky(0 x 0)'] = { args = { 'R:0,0' }, f = torch.linalg.cholesky },
  ['linalg.matrix_exp(0 x 0)'] = { args = { 'R:0,0' }, f = torch.linalg.matrix_exp },
  ['linalg.qr(0 rows)'] = { args = { 'R:0,2' }, f = function(a) local q, r = torch.linalg.qr(a); return q, r end },
  ['linalg.svdvals(0 rows)'] = { args = { 'R:0,2' }, f = torch.linalg.svdvals },
  ['linalg.eigvalsh(0 x 0)'] = { args = { 'R:0,0' }, f = torch.linalg.eigvalsh },
  ['linalg.pinv(0 rows)'] = { args = { 'R:0,2' }, f = torch.linalg.pinv },
  ['linalg.matrix_norm(0 rows)'] = { args = { 'R:0,2' }, f = torch.linalg.matrix_norm },
  ['linalg.vector_norm(empty)'] = { args = { 'R:0' }, f = torch.linalg.vector_norm },
  ['matmul(0 inner)'] = { args = { 'R:2,0', 'R:0' }, f = torch.matmul },
  ['bmm(empty batch)'] = { args = { 'R:0,2,3', 'R:0,3,2' }, f = torch.bmm },
  ['cat(empty part)'] = { args = { 'R:0,3', 'R:2,3' }, f = function(a, b) return torch.cat({ a, b }) end },
  ['stack(0-dim)'] = { args = { 'R:', 'R:' }, f = function(a, b) return torch.stack({ a, b }) end },
  ['logsumexp(empty)'] = { args = { 'R:0,2' }, f = function(x) return torch.logsumexp(x, 1) end },
  ['cumprod(0-dim)'] = { args = { 'R:' }, f = function(x) return torch.cumprod(x, 1) end },
  ['F.linear(empty batch)'] = { args = { 'R:0,3', 'R:2,3', 'R:2' }, f = F.linear },
  ['F.layer_norm(empty batch)'] = { args = { 'R:0,3' }, f = function(x) return F.layer_norm(x, { 3 }) end },
  ['F.conv2d(empty batch)'] = { args = { 'R:0,1,3,3', 'R:1,1,2,2' }, f = F.conv2d },
  ['F.cross_entropy(empty batch, sum)'] = { args = { 'R:0,3' },
    f = function(x) return F.cross_entropy(x, torch.tensor({}, { dtype = torch.int64 }), { reduction = 'sum' }) end },
  ['F.softmax(0-dim)'] = { args = { 'R:' }, f = function(x) return F.softmax(x, 1) end },
  ['lerp(0-dim weight)'] = { args = { 'R:2,3', 'R:3', 'Q:' }, f = torch.lerp },
  ['clamp(0-dim bounds)'] = { args = { 'R:2,3', 'R:', 'R:' }, f = function(x, lo, hi) return torch.clamp(x, lo - 1, hi + 1) end },
}
local L0 = torch.linalg
for name, c in pairs {
  ['linalg.solve_triangular(0 x 0)'] = { args = { 'R:0,0', 'R:0,2' }, f = function(a, b) return L0.solve_triangular(a, b, { upper = true }) end },
  ['cholesky_solve(0 x 0)'] = { args = { 'R:0,2', 'R:0,0' }, f = torch.cholesky_solve },
  ['linalg.lu_factor(0 x 0)'] = { args = { 'R:0,0' }, f = function(a) return (L0.lu_factor(a)) end },
  ['linalg.eigh(0 x 0)'] = { args = { 'R:0,0' }, f = function(a) local w, v = L0.eigh(a); return w, v end },
  ['linalg.svd(0 rows)'] = { args = { 'R:0,2' }, f = function(a) local u, s0, vh = L0.svd(a, { full_matrices = false }); return s0 end },
  ['linalg.lstsq(0 columns)'] = { args = { 'M:3,3', 'R:3,0' }, f = function(a, b) return (L0.lstsq(a, b)) end },
  ['linalg.matrix_power(0 x 0)'] = { args = { 'R:0,0' }, f = function(a) return L0.matrix_power(a, 3) end },
  ['linalg.inv(0 x 0)'] = { args = { 'R:0,0' }, f = L0.inv },
  ['linalg.cross(empty batch)'] = { args = { 'R:0,3', 'R:0,3' }, f = L0.cross },
  ['trace(0 x 0)'] = { args = { 'R:0,0' }, f = torch.trace },
  ['diag(empty)'] = { args = { 'R:0' }, f = torch.diag },
  ['kron(empty)'] = { args = { 'R:0,2', 'R:2,2' }, f = torch.kron },
  ['einsum(empty)'] = { args = { 'R:2,0', 'R:0,3' }, f = function(a, b) return torch.einsum('ij,jk->ik', a, b) end },
  ['cdist(empty)'] = { args = { 'R:0,3', 'R:2,3' }, f = torch.cdist },
  ['F.pdist(one row)'] = { args = { 'R:1,3' }, f = F.pdist },
  ['F.embedding(no indices)'] = { args = { 'R:3,2' }, f = function(w) return F.embedding(torch.tensor({}, { dtype = torch.int64 }), w) end },
  ['index_select(no indices)'] = { args = { 'R:2,3' }, f = function(x) return torch.index_select(x, 2, torch.tensor({}, { dtype = torch.int64 })) end },
  ['masked_select(none)'] = { args = { 'R:2,3' }, f = function(x) return torch.masked_select(x, torch.zeros(2, 3, { dtype = torch.bool })) end },
} do EMPTY[name] = c end
for name, c in pairs(EMPTY) do CASES[name] = c end

-- options of the other torch functions
local TOPTS = {
  ['diff(prepend, append, n 2)'] = { args = { 'R:2,3', 'R:2,1', 'R:2,2' },
    f = function(x, p, a) return torch.diff(x, 2, 2, p, a) end },
  ['gradient(spacing, dim)'] = { args = { 'R:3,4' }, f = function(x) return table.unpack(torch.gradient(x, { spacing = 0.5, dim = 2, edge_order = 2 })) end },
  ['trapezoid(x)'] = { args = { 'R:2,3', 'R:3' }, f = function(y, x) return torch.trapezoid(y, x:cumsum(1)) end },
  ['cumulative_trapezoid(dx)'] = { args = { 'R:2,3' }, f = function(y) return torch.cumulative_trapezoid(y, { dx = 0.3 }) end },
  ['cov(weights, correction)'] = { args = { 'R:2,4', 'P:4' },
    f = function(x, w) return torch.cov(x, { correction = 0, fweights = torch.tensor({ 1, 2, 1, 3 }), aweights = w }) end },
  ['quantile(nearest, midpoint, keepdim)'] = { args = { 'R:2,5' }, f = function(x)
    return torch.quantile(x, torch.tensor({ 0.2, 0.7 }, f64), 2, true, { interpolation = 'midpoint' }) end },
  ['quantile(lower, all)'] = { args = { 'R:2,3' }, f = function(x) return torch.quantile(x, 0.4, nil, false, { interpolation = 'lower' }) end },
  ['renorm(p 1, dim 2)'] = { args = { 'R:3,2' }, f = function(x) return torch.renorm(x, 1, 2, 0.7) end },
  ['xlogy(0)'] = { args = { 'P:2,3' }, f = function(y) return torch.xlogy(torch.zeros(2, 3, f64), y) end },
  ['logaddexp(equal)'] = { args = { 'R:2,3' }, f = function(x) return torch.logaddexp(x, x) end },
  ['atan2(number)'] = { args = { 'R:2,3' }, f = function(x) return torch.atan2(x, 0.5) end },
  ['atan2(number first)'] = { args = { 'R:2,3' }, f = function(x) return torch.atan2(0.5, x) end },
  ['maximum(ties)'] = { args = { 'R:2,3' }, f = function(x) return torch.maximum(x, x * 1) end },
  ['clamp(min only, tensor)'] = { args = { 'R:2,3', 'R:3' }, f = function(x, lo) return torch.clamp(x, lo) end },
  ['std_mean(dim)'] = { args = { 'R:2,3' }, f = function(x) return torch.std_mean(x, 2) end },
  ['var_mean(dims, correction 0)'] = { args = { 'R:2,3,2' }, f = function(x) return torch.var_mean(x, { 1, 3 }, { correction = 0 }) end },
  ['aminmax(dim)'] = { args = { 'R:2,3' }, f = function(x) return torch.aminmax(x, { dim = 2 }) end },
  ['einsum(trace, broadcast)'] = { args = { 'R:2,3,3', 'R:3' }, f = function(a, b) return torch.einsum('bii,i->b', a, b) end },
  ['einsum(ellipsis)'] = { args = { 'R:2,2,3', 'R:3,2' }, f = function(a, b) return torch.einsum('...ij,jk->...ik', a, b) end },
  ['tensordot(dims)'] = { args = { 'R:2,3,2', 'R:3,2,2' }, f = function(a, b) return torch.tensordot(a, b, { { 2, 3 }, { 1, 2 } }) end },
  ['block_diag(0-dim, 1-D)'] = { args = { 'R:', 'R:2', 'R:2,2' }, f = torch.block_diag },
  ['meshgrid(xy)'] = { args = { 'R:2', 'R:3' }, f = function(a, b) return table.unpack(torch.meshgrid({ a, b }, { indexing = 'xy' })) end },
  ['combinations(r 3, replacement)'] = { args = { 'R:3' }, f = function(x) return torch.combinations(x, 2, true) end },
  ['vander(N, increasing)'] = { args = { 'R:3' }, f = function(x) return torch.vander(x, 4, true) end },
  ['cdist(inf)'] = { args = { 'R:2,3', 'R:3,3' }, f = function(a, b) return torch.cdist(a, b, math.huge) end },
  ['cdist(batched, p 3)'] = { args = { 'R:2,2,3', 'R:2,3,3' }, f = function(a, b) return torch.cdist(a, b, 3) end },
  ['cross(default dim)'] = { args = { 'R:3,2', 'R:3,2' }, f = function(a, b) return torch.cross(a, b) end },
}
for name, c in pairs(TOPTS) do CASES[name] = c end

-- gradients PyTorch 1.13 does not implement (an error at backward there) and lutorch computes:
-- bincount's in its weights, unique's and unique_consecutive's values (a gather), floor_divide's
-- (zero, as floor's) and heaviside's (zero in the input, in the values 1 where the input is 0)
CASES.bincount = { args = { 'R:3' }, f = function(w) return torch.bincount(torch.tensor({ 1, 3, 3 }), { weights = w }) end }
CASES.unique = { args = { 'R:2,3' }, f = function(x) return (torch.unique(torch.cat({ x, x }))) end }
CASES.unique_consecutive = { args = { 'R:2,3' }, f = function(x) return (torch.unique_consecutive(x:repeat_interleave(2))) end }
CASES['unique(dim)'] = { args = { 'R:2,3' }, f = function(x) return (torch.unique(torch.cat({ x, x }, 2), { dim = 2 })) end }
CASES['unique_consecutive(dim)'] = { args = { 'R:2,3' },
  f = function(x) return (torch.unique_consecutive(x:repeat_interleave(2, 1), { dim = 1 })) end }
-- angle's gradient is zero for real inputs (as PyTorch's); fill's reaches its 0-D value
CASES.angle = { args = { 'R:2,3' } }
CASES.fill = { args = { 'R:' }, f = function(v) return torch.fill(torch.zeros(2, 3, f64), v) end }
CASES.frobenius_norm = { args = { 'R:2,3' } }
CASES['frobenius_norm(dim)'] = { args = { 'R:2,3' }, f = function(x) return torch.frobenius_norm(x, 2, true) end }
CASES.nuclear_norm = { args = { 'R:2,3' } }
CASES.prelu = { args = { 'R:2,3', 'P:3' } }
-- the functional recurrent cells, in every tensor (lstm_cell's two outputs)
CASES.rnn_tanh_cell = { args = { 'R:2,3', 'R:2,2', 'R:2,3', 'R:2,2', 'R:2', 'R:2' } }
CASES.rnn_relu_cell = { args = { 'R:2,3', 'R:2,2', 'R:2,3', 'R:2,2', 'R:2', 'R:2' } }
CASES.gru_cell = { args = { 'R:2,3', 'R:2,2', 'R:6,3', 'R:6,2', 'R:6', 'R:6' } }
CASES.lstm_cell = { args = { 'R:2,3', 'R:2,2', 'R:2,2', 'R:8,3', 'R:8,2', 'R:8', 'R:8' },
  f = function(x, h, c, wi, wh, bi, bh) return torch.lstm_cell(x, { h, c }, wi, wh, bi, bh) end }
CASES.floor_divide = { args = { 'R:2,3', 'W:2,3' }, bc = { 'R:2,3', 'W:3' } }
-- PyTorch's native_ and low-level forms (nn/native_aliases.lua), in every output with a gradient
CASES.native_layer_norm = { args = { 'R:2,3', 'P:3', 'R:3' },
  f = function(x, w, b) return torch.native_layer_norm(x, { 3 }, w, b, 1e-5) end }
CASES.native_batch_norm = { args = { 'R:3,2', 'P:2', 'R:2' },
  f = function(x, w, b) return torch.native_batch_norm(x, w, b, nil, nil, true, 0.1, 1e-5) end }
CASES.native_group_norm = { args = { 'R:2,4,2', 'P:4', 'R:4' },
  f = function(x, w, b) return torch.native_group_norm(x, w, b, 2, 4, 2, 2, 1e-5) end }
CASES.native_dropout = { args = { 'R:2,3' }, f = seeded(function(x) return (torch.native_dropout(x, 0.4, true)) end) }
CASES.native_channel_shuffle = { args = { 'R:1,4,2' }, f = function(x) return torch.native_channel_shuffle(x, 2) end }
CASES['F.native_channel_shuffle'] = { args = { 'R:1,4,2' }, f = function(x) return F.native_channel_shuffle(x, 2) end }
CASES.convolution = { args = { 'R:1,2,4', 'R:2,2,2', 'R:2' },
  f = function(x, w, b) return torch.convolution(x, w, b, { 1 }, { 1 }, { 1 }, false, { 0 }, 1) end }
CASES['convolution(transposed)'] = { args = { 'R:1,2,3', 'R:2,2,2', 'R:2' },
  f = function(x, w, b) return torch.convolution(x, w, b, { 2 }, { 1 }, { 1 }, true, { 1 }, 1) end }
CASES.conv_tbc = { args = { 'R:4,1,2', 'R:2,2,3', 'R:3' }, f = function(x, w, b) return torch.conv_tbc(x, w, b, 1) end }
CASES['F.conv_tbc'] = { args = { 'R:4,1,2', 'R:2,2,3', 'R:3' }, f = function(x, w, b) return F.conv_tbc(x, w, b) end }
CASES.grid_sampler = { args = { 'R:1,1,3,3', 'R:1,2,2,2' }, f = function(x, g) return torch.grid_sampler(x, g * 0.7, 0, 0, false) end }
CASES.grid_sampler_2d = { args = { 'R:1,1,3,3', 'R:1,2,2,2' },
  f = function(x, g) return torch.grid_sampler_2d(x, g * 1.3, 0, 2, true) end }
CASES.grid_sampler_3d = { args = { 'R:1,1,2,2,2', 'R:1,1,2,2,3' },
  f = function(x, g) return torch.grid_sampler_3d(x, g * 0.7, 0, 1, false) end }
CASES.affine_grid_generator = { args = { 'R:1,2,3' }, f = function(t) return torch.affine_grid_generator(t, { 1, 1, 2, 3 }, false) end }
-- SyncBatchNorm's primitives (nn/sync_batchnorm.lua)
CASES.batch_norm_stats = { args = { 'R:3,2' }, f = function(x) return torch.batch_norm_stats(x, 1e-5) end }
CASES.batch_norm_elemt = { args = { 'R:3,2', 'P:2', 'R:2', 'R:2', 'P:2' },
  f = function(x, w, b, m, i) return torch.batch_norm_elemt(x, w, b, m, i, 1e-5) end }
CASES.batch_norm_gather_stats_with_counts = { args = { 'R:3,2', 'R:2,2', 'P:2,2' },
  f = function(x, m, i) return torch.batch_norm_gather_stats_with_counts(x, m, i, nil, nil, 0.1, 1e-5, torch.tensor({ 3, 4 }, f64)) end }
CASES.batch_norm_gather_stats = { args = { 'R:3,2', 'R:2,2', 'P:2,2' },
  f = function(x, m, i) return torch.batch_norm_gather_stats(x, m, i, nil, nil, 0.1, 1e-5, 3) end }
CASES.batch_norm_backward_reduce = { args = { 'R:3,2', 'R:3,2', 'R:2', 'P:2', 'P:2' },
  f = function(dy, x, m, i, w) return torch.batch_norm_backward_reduce(dy, x, m, i, w, true, true, true) end }
CASES.batch_norm_backward_elemt = { args = { 'R:3,2', 'R:3,2', 'R:2', 'P:2', 'P:2', 'R:2', 'R:2' },
  f = function(dy, x, m, i, w, sd, sdx)
    return torch.batch_norm_backward_elemt(dy, x, m, i, w, sd, sdx, torch.tensor({ 3 }, f64)) end }
CASES.batch_norm_update_stats = { args = { 'R:3,2' }, f = function(x) return torch.batch_norm_update_stats(x, nil, nil, 0.1) end }
-- the functional RNNs (nn/rnn.lua), one layer over 3 steps
CASES.rnn_tanh = { args = { 'R:3,2,2', 'R:1,2,2', 'R:2,2', 'R:2,2', 'R:2', 'R:2' },
  f = function(x, h, wi, wh, bi, bh) return torch.rnn_tanh(x, h, { wi, wh, bi, bh }, true, 1, 0, false, false, false) end }
CASES.rnn_relu = { args = { 'P:2,3,2', 'P:1,2,2', 'P:2,2', 'P:2,2' },
  f = function(x, h, wi, wh) return torch.rnn_relu(x, h, { wi, wh }, false, 1, 0, false, false, true) end }
CASES.gru = { args = { 'R:3,2,2', 'R:1,2,2', 'R:6,2', 'R:6,2', 'R:6', 'R:6' },
  f = function(x, h, wi, wh, bi, bh) return torch.gru(x, h, { wi, wh, bi, bh }, true, 1, 0, false, false, false) end }
CASES['gru(packed)'] = { args = { 'R:3,2', 'R:1,2,2', 'R:6,2', 'R:6,2' },
  f = function(x, h, wi, wh) return torch.gru(x, torch.tensor({ 2, 1 }), h, { wi, wh }, false, 1, 0, false, false) end }
CASES.lstm = { args = { 'R:3,2,2', 'R:1,2,2', 'R:1,2,2', 'R:8,2', 'R:8,2', 'R:8', 'R:8' },
  f = function(x, h, c, wi, wh, bi, bh)
    return torch.lstm(x, { h, c }, { wi, wh, bi, bh }, true, 1, 0, false, false, false) end }
CASES.heaviside = { args = { 'R:2,3', 'R:2,3' }, f = function(x, v) return torch.heaviside(x * torch.tensor({ 1, 0, 1 }, f64), v) end }
CASES.nextafter = { args = { 'R:2,3', 'R:2,3' }, no_derivative = 'nextafter' }
CASES.frexp = { args = { 'R:2,3' }, f = function(x) return (torch.frexp(x * 3)) end, scalar = true }
CASES['F.fractional_max_pool2d'] = { args = { 'R:1,1,4,4' },
  f = seeded(function(x) return F.fractional_max_pool2d(x, 2, { output_size = { 2, 2 } }) end) }
CASES['F.fractional_max_pool3d'] = { args = { 'R:1,1,4,4,4' },
  f = seeded(function(x) return F.fractional_max_pool3d(x, 2, { output_size = { 2, 2, 2 } }) end) }

-- ---- functions without a gradient (as PyTorch's) -----------------------------------------------
-- their outputs do not require grad (integer, boolean or index results, or not differentiable)
local NONDIFF = {}
local NONDIFF_OUT = 'argmax argmin argsort argwhere bucketize count_nonzero eq ne lt le gt ge greater greater_equal '
  .. 'less less_equal not_equal equal isclose allclose isnan isinf isfinite isneginf isposinf isreal signbit '
  .. 'nonzero searchsorted histc histogram histogramdd logical_and logical_or logical_xor logical_not '
  .. 'bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift isin '
  .. 'gcd lcm is_nonzero is_same_size numel all any '
  .. 'special.bessel_j0 special.bessel_j1 special.bessel_y0 special.bessel_y1 special.modified_bessel_i0 '
  .. 'special.modified_bessel_i1 special.modified_bessel_k0 special.modified_bessel_k1 special.airy_ai '
  .. 'special.scaled_modified_bessel_k0 special.scaled_modified_bessel_k1 special.spherical_bessel_j0 '
  .. 'special.chebyshev_polynomial_t special.chebyshev_polynomial_u special.chebyshev_polynomial_v '
  .. 'special.chebyshev_polynomial_w special.shifted_chebyshev_polynomial_t special.shifted_chebyshev_polynomial_u '
  .. 'special.shifted_chebyshev_polynomial_v special.shifted_chebyshev_polynomial_w special.hermite_polynomial_h '
  .. 'special.hermite_polynomial_he special.laguerre_polynomial_l special.legendre_polynomial_p linalg.matrix_rank '
  .. 'F.one_hot'
for name in NONDIFF_OUT:gmatch('%S+') do NONDIFF[name] = true end
NONDIFF.detach_copy = true

-- each non-differentiable function on float64 inputs that require grad, and what it returns
local BOOLS = function() return torch.tensor({ { true, false, true }, { false, true, true } }) end
local function nondiff_call(name, x, y)
  local ns, n = name:match('^(%a+)%.([%w_]+)$')
  n = n or name
  if ns == 'special' then
    if n:find('polynomial') then return torch.special[n](x, 3) end
    return torch.special[n](x)
  end
  if ns == 'linalg' then return torch.linalg[n](x) end
  if ns == 'F' then return F.one_hot(torch.tensor({ 1, 3 }), 4) end
  if n == 'bitwise_not' then return torch.bitwise_not(torch.tensor({ 3, 5 })) end
  if n:match('^bitwise') or n == 'gcd' or n == 'lcm' then
    local i = torch.tensor({ 3, 5, 6 })
    return torch[n](i, n:find('shift') and 1 or torch.tensor({ 2, 3, 4 }))
  end
  if n:match('^logical') then return n == 'logical_not' and torch[n](x) or torch[n](x, y) end
  if n == 'bucketize' then return torch[n](x, torch.tensor({ -0.5, 0, 0.5 }, f64)) end
  if n == 'searchsorted' then return torch[n](torch.tensor({ -0.5, 0, 0.5 }, f64), x:reshape(-1)) end
  if n == 'isin' then return torch.isin(x, y) end
  if n == 'bincount' then return torch.bincount(torch.tensor({ 1, 2, 2 }), { weights = x:reshape(-1):narrow(1, 1, 3) }) end
  if n == 'histogram' or n == 'histogramdd' then return (torch[n](x:reshape(-1, 2), 3)) end
  if n == 'nonzero' or n == 'argwhere' then return torch[n](x) end
  if n == 'is_nonzero' then return torch.is_nonzero(x:sum()) end
  local two = { eq = 1, ne = 1, lt = 1, le = 1, gt = 1, ge = 1, greater = 1, greater_equal = 1, less = 1, less_equal = 1,
    not_equal = 1, equal = 1, isclose = 1, allclose = 1, is_same_size = 1 }
  if two[n] then return torch[n](x, y) end
  return torch[n](x)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

describe('gradcheck sweep: no gradient', function()
  for _, name in ipairs(sorted_keys(NONDIFF)) do
    it(name, function()
      torch.manual_seed(7)
      local x, y = leaf('R:2,3'), leaf('R:2,3')
      local r = nondiff_call(name, x, y)
      if torch.is_tensor(r) then
        assert(not r.requires_grad, name .. ': the result requires grad')
      else
        assert(type(r) == 'boolean' or type(r) == 'number', name .. ': ' .. type(r))
      end
    end)
  end
end)

-- ---- skipped, with the reason ------------------------------------------------------------------
local SKIP_PATTERNS = {
  { '^_', 'internal helper' },
  { '_$', 'in-place variant: inplace_spec checks them against the out-of-place op covered here' },
  { '^is_', 'a predicate on a tensor or a setting' },
  { '^get_', 'a setting' }, { '^set_', 'a setting' },
  { '^%u', 'a class or constructor' },
  { '_like$', 'a factory' }, { '^new_', 'a factory' }, { '_window$', 'a factory' },
  { '^rand', 'random numbers' },
  { '_with_indices$', 'see the case of the same op without _with_indices' },
}
local SKIP = {
  ['tensor as_tensor asarray scalar_tensor arange range linspace logspace eye empty empty_strided full zeros ones '
    .. 'tril_indices triu_indices from_file frombuffer load save'] = 'a factory or I/O: nothing to differentiate',
  ['matrix_rank'] = 'removed in PyTorch 1.13: it raises, naming linalg.matrix_rank (covered here)',
  ['bernoulli binomial multinomial normal poisson manual_seed seed initial_seed cauchy_ geometric_'] = 'random sampling (no gradient in PyTorch)',
  ['no_grad enable_grad inference_mode autocast compiled_with_cxx11_abi are_deterministic_algorithms_enabled '
    .. 'use_deterministic_algorithms finfo iinfo can_cast promote_types result_type broadcast_shapes typename '
    .. 'isinstance stream current_stream default_stream device print_options clear_autocast_cache'] = 'a setting, context or type query',
  ['backward register_hook retain_grad requires_grad_ detach apply map map2 item tolist totable storage_offset '
    .. 'stride size dim ndimension nelement element_size data_ptr is_contiguous is_pinned pin_memory record_stream '
    .. 'cpu cuda float half bfloat16 int long short char byte bool new'] = 'Tensor plumbing: a device, a '
    .. 'lower-precision or an integer dtype (autograd_spec covers their gradients), or no tensor result',
  ['resize resize_as resizeAs'] = "Torch7's in-place resize_ and resize_as_ (inplace_spec)",
}
local function skipped(ns, name)
  -- torch's positional spellings of F's functions (nn/torch_aliases.lua; nn_aliases_spec checks
  -- them against F)
  if ns == 'torch' and (CASES['F.' .. name] or name == 'feature_dropout') then return 'an alias of F.' .. name end
  for _, p in ipairs(SKIP_PATTERNS) do
    if name:find(p[1]) then return p[2] end
  end
  for names, why in pairs(SKIP) do
    for n in names:gmatch('%S+') do
      if n == name or n == ns .. '.' .. name then return why end
    end
  end
end

-- ---- running a case ----------------------------------------------------------------------------
local function fn_of(name, c)
  if c.f then return c.f end
  local f = torch[name] or torch.Tensor[name]
  assert(f, 'no function ' .. name)
  return f
end

-- the gradients of f's outputs for random upstream gradients, with and without create_graph
local function same_grads(name, f, inputs, what)
  local wrt = {}
  for _, x in ipairs(inputs) do if x.requires_grad then wrt[#wrt + 1] = x end end
  local outs, gos = {}, {}
  for _, o in ipairs(table.pack(f(table.unpack(inputs)))) do
    if torch.is_tensor(o) and o.requires_grad then
      outs[#outs + 1] = o
      gos[#gos + 1] = torch.randn(o.shape, f64)
    end
  end
  if #outs == 0 then return end
  local plain = AG.grad(outs, wrt, { grad_outputs = gos, retain_graph = true, allow_unused = true })
  local graph = AG.grad(outs, wrt, { grad_outputs = gos, create_graph = true, allow_unused = true })
  for k = 1, #wrt do
    local a, b = plain[k], graph[k]
    assert((a == nil) == (b == nil) or (a or b):abs():sum():item() == 0,
      string.format('%s (%s): input %d has a gradient only %s create_graph', name, what, k, a and 'without' or 'with'))
    if a and b then
      H.assert_values(b:detach(), a:totable(), 1e-9, string.format('%s (%s): gradient %d under create_graph', name, what, k))
    end
  end
end

local function check(name, c, f, inputs, what)
  if c.refuse_only then
    H.raises(function() AG.gradgradcheck(f, inputs) end, c.refuse)
    return
  end
  if c.no_derivative then -- PyTorch 1.13 has no derivative either: an error naming the op
    H.raises(function() AG.gradcheck(f, inputs) end, c.no_derivative)
    return
  end
  local ok, err = pcall(AG.gradcheck, f, inputs)
  assert(ok, string.format('%s (%s): %s', name, what, tostring(err)))
  if c.nogg then return end
  -- lutorch computes a gradient under create_graph by recorded formulas, not by the backward
  -- kernels: gradgradcheck differentiates that gradient, so it must equal the kernels' one
  if not c.refuse then same_grads(name, f, inputs, what) end
  ok, err = pcall(AG.gradgradcheck, f, inputs)
  if c.refuse then
    assert(not ok and tostring(err):find(c.refuse, 1, true),
      string.format('%s (%s): double backward should be refused naming %q, got %s', name, what, c.refuse,
        tostring(err)))
  else
    assert(ok, string.format('%s (%s) double backward: %s', name, what, tostring(err)))
  end
end

local function run_case(name, c)
  local f = fn_of(name, c)
  local function build(specs, strided, reshape)
    local ins = {}
    for i, s in ipairs(specs) do
      if reshape then s = s:match('^(%a)') .. ':' .. reshape end
      ins[i] = leaf(s, strided)
    end
    return ins
  end
  check(name, c, f, build(c.args), 'contiguous')
  check(name, c, f, build(c.args, true), 'non-contiguous')
  if c.bc then check(name, c, f, build(c.bc, true), 'broadcast') end
  if c.scalar then check(name, c, f, build(c.args, false, ''), '0-dim') end
  if c.empty then check(name, c, f, build(c.args, false, '0,2'), '0-size') end
  -- the method, where it is another function than torch's
  local method = not c.f and torch.Tensor[name]
  if method and method ~= f then check(name, c, method, build(c.args, true), 'method') end
end

describe('gradcheck sweep', function()
  for _, name in ipairs(sorted_keys(CASES)) do
    it(name, function()
      torch.manual_seed(7)
      run_case(name, CASES[name])
    end)
  end
end)

-- a class weight that requires grad where the gradient would leave it out: refused, as PyTorch
describe('gradcheck sweep: refused weights', function()
  it('nll_loss and cross_entropy with class indices refuse a weight that requires grad', function()
    local x, w, t = leaf('R:3,3'), leaf('P:3'), torch.tensor({ 1, 3, 2 })
    H.raises(function() return F.nll_loss(F.log_softmax(x, 2), t, { weight = w }) end, 'nll_loss', 'weight')
    H.raises(function() return F.cross_entropy(x, t, { weight = w, label_smoothing = 0.1 }) end, 'cross_entropy', 'weight')
    -- detached, or outside grad mode, it is a constant
    assert(F.cross_entropy(x, t, { weight = w:detach() }).requires_grad)
    torch.no_grad(function() F.nll_loss(x, t, { weight = w }) end)
  end)
end)

-- ---- exhaustiveness ----------------------------------------------------------------------------
local NAMESPACES = { torch = torch, Tensor = torch.Tensor, F = F, linalg = torch.linalg, special = torch.special }

-- the qualified names a case or NONDIFF key covers: 'X' or 'X(variant)' covers torch.X and Tensor.X,
-- 'F.X' (linalg., special.) that namespace's X
local function covered_names(keys)
  local out = {}
  for key in pairs(keys) do
    local ns, name = key:match('^(%a+)%.([%w_]+)')
    if ns and NAMESPACES[ns] then
      out[ns .. '.' .. name] = true
    else
      name = key:match('^[%w_]+')
      out['torch.' .. name], out['Tensor.' .. name] = true, true
    end
  end
  return out
end

describe('gradcheck sweep coverage', function()
  it('covers or skips, with a reason, every function lutorch exposes', function()
    local covered = covered_names(CASES)
    for k in pairs(covered_names(NONDIFF)) do covered[k] = true end
    -- a function covered under one name is covered under all the names bound to it
    local funcs = {}
    for q in pairs(covered) do
      local ns, name = q:match('^(%a+)%.(.+)$')
      local f = rawget(NAMESPACES[ns], name)
      if f then funcs[f] = true end
    end
    local missing = {}
    for ns, t in pairs(NAMESPACES) do
      for name, f in pairs(t) do
        local q = ns .. '.' .. name
        if type(name) == 'string' and type(f) == 'function' and not covered[q] and not funcs[f] and not skipped(ns, name) then
          missing[#missing + 1] = q
        end
      end
    end
    table.sort(missing)
    assert(#missing == 0, #missing .. ' exposed functions neither covered nor skipped with a reason: '
      .. table.concat(missing, ' '))
  end)
end)
