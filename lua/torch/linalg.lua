-- torch.linalg: the norms, products and powers composed from the tensor operations (so they pass
-- gradients), and det, slogdet, solve and inv over the LU factorisation of core/lu.c (float32 and
-- float64 on the CPU) with PyTorch's gradients, with PyTorch's names and arguments. The
-- decompositions LAPACK computes (cholesky, qr, eigh, svd) and what is built on them are in
-- lua/torch/decompositions.lua. Asking for a function that is not here is an error that lists what
-- there is.
local torch = require 'torch'
local options = require 'torch.options'
local as_int = require('torch.composite').as_int

local linalg = {}
-- what lua/torch/decompositions.lua shares with this file
local helpers = {}

local function check_tensor(x, op, what)
  if not torch.is_tensor(x) then
    error(string.format('linalg.%s: %s must be a tensor, got %s', op, what or 'the input', type(x)), 3)
  end
end

local function floating(x, op)
  if not x.dtype.is_floating_point then
    error(string.format('linalg.%s: Expected a floating point tensor as input. Got %s', op, tostring(x.dtype)), 3)
  end
end

-- the options given as a table in place of the positional arguments after x (lua/torch/options.lua)
local function named(op, args, names) return options.args('linalg.' .. op, args, names, nil, 4) end

--- linalg.vector_norm(x, ord = 2, dim = all, keepdim = false): (sum |x|^ord)^(1 / ord); ord inf and
--- -inf the largest and smallest |x|, ord 0 the count of non-zeros
function linalg.vector_norm(x, ...)
  check_tensor(x, 'vector_norm')
  floating(x, 'vector_norm')
  local ord, dim, keepdim = named('vector_norm', { ... }, { 'ord', 'dim', 'keepdim' })
  ord = ord or 2
  if type(ord) ~= 'number' then error('linalg.vector_norm: ord must be a number, got ' .. tostring(ord), 2) end
  keepdim = keepdim or false
  local a = x:abs()
  local function red(f)
    if dim == nil then
      local r = f(a:reshape(-1), 1, false)
      if keepdim then
        local shape = {}
        for d = 1, x:dim() do shape[d] = 1 end
        r = r:reshape(shape)
      end
      return r
    end
    return f(a, dim, keepdim)
  end
  if ord == math.huge then return red(function(t, d, k) return t:amax(d, k) end) end
  if ord == -math.huge then return red(function(t, d, k) return t:amin(d, k) end) end
  if ord == 0 then return red(function(t, d, k) return t:ne(0):to(x.dtype):sum(d, k) end) end
  if ord == 1 then return red(function(t, d, k) return t:sum(d, k) end) end
  if ord == 2 then return red(function(t, d, k) return (t * t):sum(d, k):sqrt() end) end
  return red(function(t, d, k) return (t ^ ord):sum(d, k) ^ (1 / ord) end)
end

--- linalg.matrix_norm(A, ord = 'fro', dim = {-2, -1}, keepdim = false): 'fro'; 1 and -1 the largest
--- and smallest column sum of |A|; inf and -inf the largest and smallest row sum
function linalg.matrix_norm(a, ...)
  check_tensor(a, 'matrix_norm')
  floating(a, 'matrix_norm')
  local ord, dim, keepdim = named('matrix_norm', { ... }, { 'ord', 'dim', 'keepdim' })
  ord, dim, keepdim = ord or 'fro', dim or { -2, -1 }, keepdim or false
  if a:dim() < 2 then error('linalg.matrix_norm: the input must have at least 2 dimensions, got ' .. a:dim(), 2) end
  if type(dim) ~= 'table' or #dim ~= 2 then error('linalg.matrix_norm: dim must be a table of two dims', 2) end
  local r, c = dim[1], dim[2]
  if ord == 'fro' then return (a * a):sum(dim, keepdim):sqrt() end
  local function norm_d(d) return d < 0 and d + a:dim() + 1 or d end
  r, c = norm_d(r), norm_d(c)
  if ord == 'nuc' or ord == 2 or ord == -2 then return helpers.spectral_norm(a, ord, r, c, keepdim) end
  local abs = a:abs()
  local sum_dim, red_dim
  if ord == 1 or ord == -1 then sum_dim, red_dim = r, c elseif ord == math.huge or ord == -math.huge then sum_dim, red_dim = c, r
  else error("linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got " .. tostring(ord), 2) end
  local s = abs:sum(sum_dim, true)
  local m = (ord > 0) and s:amax(red_dim, true) or s:amin(red_dim, true)
  if not keepdim then m = m:squeeze(math.max(r, c)):squeeze(math.min(r, c)) end
  return m
end

--- linalg.norm(x, ord, dim, keepdim): a vector norm (1-D input or one dim) or a matrix norm (2-D
--- input or two dims); with neither ord nor dim, the 2-norm of the flattened input
function linalg.norm(x, ...)
  check_tensor(x, 'norm')
  local ord, dim, keepdim = named('norm', { ... }, { 'ord', 'dim', 'keepdim' })
  if type(dim) == 'number' then dim = { dim } end
  if ord == nil then
    if dim ~= nil and #dim == 2 then return linalg.matrix_norm(x, 'fro', dim, keepdim) end
    return linalg.vector_norm(x, 2, dim and dim[1], keepdim)
  end
  if (dim ~= nil and #dim == 2) or (dim == nil and x:dim() == 2) then
    return linalg.matrix_norm(x, ord, dim, keepdim)
  end
  if dim == nil and x:dim() ~= 1 then
    error('linalg.norm: with ord given, the input must be 1-D or 2-D unless dim says which dims, got ' .. x:dim() .. '-D', 2)
  end
  return linalg.vector_norm(x, ord, dim and dim[1], keepdim)
end

--- linalg.vecdot(x, y, dim = -1): the dot products along dim
function linalg.vecdot(x, y, dim)
  check_tensor(x, 'vecdot')
  check_tensor(y, 'vecdot', 'y')
  if type(dim) == 'table' then dim = dim.dim end
  return (x * y):sum(dim or -1)
end

--- linalg.cross(x, y, dim = -1)
function linalg.cross(x, y, dim)
  if type(dim) == 'table' then dim = dim.dim end
  return torch.cross(x, y, dim or -1)
end

linalg.matmul = function(a, b) return torch.matmul(a, b) end
linalg.diagonal = function(a, o)
  o = o or {}
  return torch.diagonal(a, o.offset or 0, o.dim1 or -2, o.dim2 or -1)
end

--- linalg.multi_dot({A, B, C, ...}): the product of the matrices (a 1-D first or last as a
--- row or column vector), in the order that needs the fewest multiplications
function linalg.multi_dot(ts)
  if type(ts) ~= 'table' or torch.is_tensor(ts) or #ts < 2 then
    error('linalg.multi_dot: expected a table of at least two tensors', 2)
  end
  local m = {}
  for i, t in ipairs(ts) do
    check_tensor(t, 'multi_dot', 'element ' .. i)
    local first_or_last = i == 1 or i == #ts
    if t:dim() == 1 and first_or_last then
      m[i] = i == 1 and t:unsqueeze(1) or t:unsqueeze(2)
    elseif t:dim() ~= 2 then
      error(string.format('linalg.multi_dot: tensor %d must be 2-D%s, got %d-D', i, first_or_last and ' (or 1-D)' or '', t:dim()), 2)
    else
      m[i] = t
    end
  end
  local n = #m
  for i = 1, n - 1 do
    if m[i]:size(2) ~= m[i + 1]:size(1) then
      error(string.format('linalg.multi_dot: tensors %d and %d cannot be multiplied (%dx%d and %dx%d)', i, i + 1,
        m[i]:size(1), m[i]:size(2), m[i + 1]:size(1), m[i + 1]:size(2)), 2)
    end
  end
  -- the classic chain order: cost[i][j] of multiplying m[i..j], split[i][j] where to split
  local p = { m[1]:size(1) }
  for i = 1, n do p[i + 1] = m[i]:size(2) end
  local cost, split = {}, {}
  for i = 1, n do cost[i], split[i] = { [i] = 0 }, {} end
  for len = 2, n do
    for i = 1, n - len + 1 do
      local j = i + len - 1
      cost[i][j] = math.huge
      for k = i, j - 1 do
        local c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
        if c < cost[i][j] then cost[i][j], split[i][j] = c, k end
      end
    end
  end
  local function product(i, j)
    if i == j then return m[i] end
    local k = split[i][j]
    return product(i, k):mm(product(k + 1, j))
  end
  local r = product(1, n)
  if ts[1]:dim() == 1 then r = r:squeeze(1) end
  if ts[n]:dim() == 1 then r = r:squeeze(-1) end
  return r
end

--- linalg.matrix_power(A, n): A multiplied by itself n times (the identity for 0; the inverse's -n
--- times for n < 0), by squaring
function linalg.matrix_power(a, n)
  check_tensor(a, 'matrix_power')
  if a:dim() < 2 or a:size(-1) ~= a:size(-2) then
    error('linalg.matrix_power: expected a square matrix or a batch of them, got shape ' .. tostring(a.shape), 2)
  end
  n = as_int(n)
  if math.type(n) ~= 'integer' then error('linalg.matrix_power: n must be an integer, got ' .. tostring(n), 2) end
  if n < 0 then a, n = linalg.inv(a), -n end -- PyTorch's: the inverse's power (an error if singular)
  local k = a:size(-1)
  if n == 0 then
    return torch.eye(k, { dtype = a.dtype, device = a.device }):expand(a.shape):clone()
  end
  local result, base = nil, a
  while n > 0 do
    if n % 2 == 1 then result = result and torch.matmul(result, base) or base end
    n = n // 2
    if n > 0 then base = torch.matmul(base, base) end
  end
  return result
end

-- ---- determinants and solves, over the LU factorisation ----

local function square_batch(a, op)
  check_tensor(a, op)
  if a.dtype ~= torch.float32 and a.dtype ~= torch.float64 then
    error(string.format('linalg.%s: expected a floating point tensor of float32 or float64, got %s', op, tostring(a.dtype)), 3)
  end
  if a:dim() < 2 or a:size(-1) ~= a:size(-2) then
    error(string.format('linalg.%s: A must be batches of square matrices, but they are %s', op,
      a:dim() < 2 and (a:dim() .. '-D') or (a:size(-2) .. ' by ' .. a:size(-1) .. ' matrices')), 3)
  end
end

-- the LU factors, pivots and infos; with_sign: and the sign of the permutation (a tensor of the
-- batch shape)
local function lu(a, op, with_sign)
  square_batch(a, op)
  local f, piv, info = torch._lu_factor(a)
  if not with_sign then return f, piv, info end
  local n = a:size(-1)
  local swaps = piv:ne(torch.arange(1, n + 1, { dtype = torch.int64, device = a.device })):sum(-1)
  local sign = 1 - (swaps % 2) * 2
  return f, piv, info, sign
end

local function mT(x) return x:transpose(-2, -1) end

-- the batch shape of a batch of matrices (lua/torch/lu.lua's)
local function lu_batch(a) return helpers.batch_of(a, 2) end

-- A^-T for the factors of A: the inverse, transposed (a view)
local function inv_t(f, piv)
  if f:numel() == 0 then return torch.zeros_like(f) end -- 0 x 0 matrices or an empty batch: none to solve
  return mT(torch._lu_inverse(f, piv))
end

-- Each function below factors A once, in its forward, and its backward solves with those factors.
-- Under create_graph (grad mode on in backward) the backward is made of recorded ops instead: the
-- functions themselves applied again to the inputs (which keep their history), so they
-- differentiate any number of times.
local Det, Solve = torch.autograd.Function:extend('LinalgDetBackward0'), nil

-- A^-T as a recorded op (a solve of the identity with A^T)
local function inv_t_graph(a)
  if a:numel() == 0 then return torch.zeros_like(a) end
  local eye = torch.eye(a:size(-1), { dtype = a.dtype, device = a.device }):expand(a.shape)
  return Solve.apply(mT(a), eye, 'inv', nil, true)
end

function Det.forward(ctx, a)
  local f, piv, _, sign = lu(a, 'det', true)
  local d = f:diagonal(0, -2, -1):prod(-1) * sign:to(f.dtype)
  ctx:save_for_backward(f, piv, d)
  ctx.a = a
  return d
end
function Det.backward(ctx, g)
  -- d det / dA = det A^-T (inf or NaN for a singular A, where PyTorch takes cofactors)
  if torch.is_grad_enabled() then
    return (g * Det.apply(ctx.a)):unsqueeze(-1):unsqueeze(-1) * inv_t_graph(ctx.a)
  end
  local f, piv, d = table.unpack(ctx.saved_tensors)
  return (g * d):unsqueeze(-1):unsqueeze(-1) * inv_t(f, piv)
end

--- linalg.det(A): the determinants of a batch of square matrices
function linalg.det(a) return Det.apply(a) end

-- logabsdet, the sign left in out.sign (it carries no gradient)
local LogAbsDet = torch.autograd.Function:extend('LinalgSlogdetBackward0')
function LogAbsDet.forward(ctx, a, out)
  local f, piv, _, sign = lu(a, 'slogdet', true)
  local diag = f:diagonal(0, -2, -1)
  out.sign = diag:sign():prod(-1) * sign:to(f.dtype)
  ctx:save_for_backward(f, piv)
  ctx.a = a
  return diag:abs():log():sum(-1)
end
function LogAbsDet.backward(ctx, g)
  if torch.is_grad_enabled() then return g:unsqueeze(-1):unsqueeze(-1) * inv_t_graph(ctx.a) end
  local f, piv = table.unpack(ctx.saved_tensors)
  return g:unsqueeze(-1):unsqueeze(-1) * inv_t(f, piv)
end

--- linalg.slogdet(A) -> sign, logabsdet (a singular matrix: sign 0, logabsdet -inf)
function linalg.slogdet(a)
  local out = {}
  local l = LogAbsDet.apply(a, out)
  return out.sign, l
end

-- PyTorch's errors for a singular A, by the first zero pivot
local singular = {
  solve = 'The solver failed because the input matrix is singular.',
  inv = 'The diagonal element %d is zero, the inversion could not be completed because the input matrix is singular.',
}

-- X = A^-1 B for A and B of one batch shape; out = {info = ...}: infos (int32) there and no error
-- for a singular A (whose X then has infs or NaNs, as LAPACK's); eye: B is the identity (an inverse)
Solve = torch.autograd.Function:extend('LinalgSolveExBackward0')
function Solve.forward(ctx, a, b, op, out, eye)
  local f, piv, info = lu(a, op)
  if out then
    out.info = info:to(torch.int32)
  else
    helpers.raise_info(info, 'linalg.' .. op, singular[op], 0)
  end
  -- 0 x 0 matrices or an empty batch: nothing to solve (the LU solver wants a factorisation)
  local x = f:numel() == 0 and torch.zeros(b.shape, { dtype = b.dtype, device = b.device })
    or eye and torch._lu_inverse(f, piv)
    or torch._lu_solve(f, piv, b:contiguous())
  ctx:save_for_backward(f, piv, x)
  ctx.a, ctx.b, ctx.op, ctx.eye = a, b, op, eye
  return x
end
function Solve.backward(ctx, g)
  -- gB = A^-T g, gA = -gB x^T
  if torch.is_grad_enabled() then
    local gb = Solve.apply(mT(ctx.a), g, ctx.op)
    return -gb:matmul(mT(Solve.apply(ctx.a, ctx.b, ctx.op, nil, ctx.eye))), gb
  end
  local f, piv, x = table.unpack(ctx.saved_tensors)
  if f:numel() == 0 then return torch.zeros_like(f), torch.zeros_like(x) end
  local gb = torch._lu_solve(f, piv, g:contiguous(), true)
  return -gb:matmul(mT(x)), gb
end

-- whether B is a vector (or a batch of them) for A: 1-D, or A's shape less its last dim (PyTorch's
-- rule for solve and lstsq)
local function vector_rhs(a, b)
  if b:dim() == 1 then return true end
  if b:dim() ~= a:dim() - 1 then return false end
  for d = 1, b:dim() do
    if b:size(d) ~= a:size(d) then return false end
  end
  return true
end

-- X with A X = B (left) or X A = B, the errors naming op (solve or inv); out: see Solve
local function solve(a, b, op, left, out, eye)
  square_batch(a, op)
  check_tensor(b, op, 'B')
  if b.dtype ~= a.dtype then
    error(string.format('linalg.%s: Expected A and B to have the same dtype, but found A of type %s and B of type %s instead',
      op, tostring(a.dtype), tostring(b.dtype)), 3)
  end
  if left == false then
    -- X A = B <=> A^T X^T = B^T
    if b:dim() < 2 then error(string.format('linalg.%s: with left = false, B must be a matrix or a batch of them', op), 3) end
    return mT(solve(mT(a), mT(b), op, true, out))
  end
  local n = a:size(-1)
  local vector = vector_rhs(a, b)
  local bm = vector and b:unsqueeze(-1) or b
  if bm:size(-2) ~= n then
    error(string.format('linalg.%s: A is %d by %d but B has %d rows', op, n, n, bm:size(-2)), 3)
  end
  local batch = {}
  for d = 1, a:dim() - 2 do batch[d] = a:size(d) end
  local bshape = { table.unpack(batch) }
  bshape[#bshape + 1], bshape[#bshape + 2] = n, bm:size(-1)
  local ok, be = pcall(function() return bm:expand(bshape) end)
  if not ok or bm:dim() > #bshape then
    error(string.format('linalg.%s: B of shape %s does not match the batch of A, %s', op, tostring(b.shape), tostring(a.shape)), 3)
  end
  local x = Solve.apply(a, be, op, out, eye)
  return vector and x:squeeze(-1) or x
end

--- linalg.solve(A, B, {left = true}): X with A X = B (left) or X A = B, for B (..., n, k) or a
--- vector (..., n)
function linalg.solve(a, b, ...)
  local left = named('solve', { ... }, { 'left' })
  return solve(a, b, 'solve', left)
end

--- linalg.solve_ex(A, B, {left = true, check_errors = false}) -> result, info: as solve, info (...)
--- int32 0 or the first zero pivot of A's LU factorisation instead of an error
function linalg.solve_ex(a, b, ...)
  local left, check = named('solve_ex', { ... }, { 'left', 'check_errors' })
  local out = {}
  local x = solve(a, b, 'solve', left, not check and out or nil)
  return x, out.info or torch.zeros(lu_batch(a), { dtype = torch.int32 })
end

local function identity_of(a)
  square_batch(a, 'inv')
  return torch.eye(a:size(-1), { dtype = a.dtype, device = a.device }):expand(a.shape)
end

--- linalg.inv(A): the inverses of a batch of square matrices (an error when one is singular)
function linalg.inv(a) return solve(a, identity_of(a), 'inv', true, nil, true) end

--- linalg.inv_ex(A, {check_errors = false}) -> inverse, info: as inv, info (...) int32 0 or the
--- first zero pivot instead of an error (the inverse then has infs or NaNs)
function linalg.inv_ex(a, ...)
  local check = named('inv_ex', { ... }, { 'check_errors' })
  local out = {}
  local x = solve(a, identity_of(a), 'inv', true, not check and out or nil, true)
  return x, out.info or torch.zeros(lu_batch(a), { dtype = torch.int32 })
end
torch.det, torch.Tensor.det = linalg.det, linalg.det
torch.inverse, torch.Tensor.inverse = linalg.inv, linalg.inv
torch.slogdet, torch.Tensor.slogdet = linalg.slogdet, linalg.slogdet
torch.logdet = function(a)
  local s, l = linalg.slogdet(a)
  return torch.where(s:lt(0), torch.full_like(l, 0 / 0), l)
end
torch.Tensor.logdet = torch.logdet

torch.matrix_power, torch.Tensor.matrix_power = linalg.matrix_power, linalg.matrix_power
torch.chain_matmul = function(...) return linalg.multi_dot({ ... }) end

helpers.named, helpers.check_tensor, helpers.floating, helpers.vector_rhs = named, check_tensor, floating, vector_rhs
require('torch.lu')(linalg, helpers)
require('torch.decompositions')(linalg, helpers)
require('torch.linalg_composed')(linalg, helpers)

-- CUDA tensors: the factorisations and solves run on the CPU, on copies of the arguments, and their
-- results are copied back to the arguments' device (both copies recorded for autograd, so gradients
-- reach the CUDA tensors), until CUDA kernels for them (cuSOLVER) exist. Tensors on two devices are
-- the mixed-device error.
local function via_cpu(name, f)
  return function(...)
    local args = table.pack(...)
    local dev
    for i = 1, args.n do
      local t = args[i]
      if torch.is_tensor(t) then
        if dev and t.device ~= dev then
          error(string.format('linalg.%s: expected all tensors to be on the same device, but found at least two '
            .. 'devices, %s and %s', name, tostring(dev), tostring(t.device)), 2)
        end
        dev = t.device
      end
    end
    if not dev or dev.type == 'cpu' then return f(...) end
    for i = 1, args.n do
      if torch.is_tensor(args[i]) then args[i] = args[i]:to('cpu') end
    end
    local res = table.pack(f(table.unpack(args, 1, args.n)))
    for i = 1, res.n do
      if torch.is_tensor(res[i]) then res[i] = res[i]:to(dev) end
    end
    return table.unpack(res, 1, res.n)
  end
end
for _, name in ipairs { 'det', 'slogdet', 'solve', 'solve_ex', 'inv', 'inv_ex', 'cholesky', 'cholesky_ex', 'qr', 'eigh',
  'eigvalsh', 'svd', 'svdvals', 'solve_triangular', 'lu_factor', 'lu_factor_ex', 'lu', 'lu_solve', 'ldl_factor',
  'ldl_factor_ex', 'ldl_solve' } do
  linalg[name] = via_cpu(name, linalg[name])
end
torch.det, torch.Tensor.det = linalg.det, linalg.det
torch.inverse, torch.Tensor.inverse = linalg.inv, linalg.inv
torch.slogdet, torch.Tensor.slogdet = linalg.slogdet, linalg.slogdet

-- x:norm('nuc', dim = {-2, -1}, keepdim): the nuclear norm, as torch.norm (the other norms are the
-- core's x:norm)
local vector_norms = torch.Tensor.norm
local function norm(x, p, ...)
  if p ~= 'nuc' then return vector_norms(x, p, ...) end
  check_tensor(x, 'norm')
  local dim, keepdim = ...
  if dim == nil and x:dim() ~= 2 then
    error("norm: the 'nuc' norm needs a 2-D input or two dims, got a " .. x:dim() .. '-D input', 2)
  end
  return linalg.matrix_norm(x, 'nuc', dim, keepdim)
end
torch.norm, torch.Tensor.norm = norm, norm

--- torch.frobenius_norm(x, dim, keepdim) (dim: one or two dims; none: every element) and
--- torch.nuclear_norm(x, keepdim) or (x, dim, keepdim): PyTorch's older spellings of x:norm(2, ...)
--- and x:norm('nuc', ...)
local naming = require('torch.composite').naming
function torch.frobenius_norm(x, dim, keepdim)
  check_tensor(x, 'frobenius_norm')
  if type(dim) == 'table' and #dim > 2 then
    error('frobenius_norm: expected at most 2 dims, got ' .. #dim, 2)
  end
  if dim == nil then return naming('frobenius_norm', vector_norms)(x, 2) end
  return naming('frobenius_norm', vector_norms)(x, 2, dim, keepdim)
end
function torch.nuclear_norm(x, dim, keepdim)
  check_tensor(x, 'nuclear_norm')
  if dim == nil or type(dim) == 'boolean' then dim, keepdim = nil, dim end
  return naming('nuclear_norm', norm)(x, 'nuc', dim, keepdim)
end

-- a name that is not here is an error naming what is
return setmetatable(linalg, {
  __index = function(_, k)
    local names = {}
    for name in pairs(linalg) do names[#names + 1] = name end
    table.sort(names)
    error(string.format("torch.linalg has no function '%s' (it has %s)", tostring(k), table.concat(names, ', ')), 2)
  end,
})
