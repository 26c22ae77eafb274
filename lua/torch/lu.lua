-- torch.linalg's LU family over core/lu.c's factorisation (float32 and float64 on the CPU):
-- lu_factor, lu_factor_ex, lu, lu_solve, and the older torch.lu, torch.lu_unpack, torch.lu_solve
-- and torch.triangular_solve, with PyTorch's gradients. The factorisation is an autograd Function
-- (PyTorch's linalg_lu_backward); the unpacking and the solves are composed from differentiable
-- ops (tril and triu, gather, the triangular solves), so they pass gradients to LU and B as
-- PyTorch's do. Pivots are LAPACK's: 1-based, int32, at step i rows i and pivots[i] swapped.
-- Installed into torch.linalg by lua/torch/linalg.lua.
local torch = require 'torch'
local options = require 'torch.options'

return function(linalg, h)
  local named, Function = h.named, torch.autograd.Function

  local function mT(x) return x:transpose(-2, -1) end

  -- the batch of float32/float64 matrices LAPACK takes (square when asked), or an error naming op
  -- at the level of the user's call (level, 3 by default: the caller's caller); integers get
  -- PyTorch's message
  local function input(a, op, square, what, level)
    what, level = what or 'A', level or 3
    if not torch.is_tensor(a) then
      error(string.format('%s: %s must be a tensor, got %s', op, what, type(a)), level)
    end
    if not a.dtype.is_floating_point then
      error(string.format('%s: Expected a floating point tensor as input. Got %s', op, tostring(a.dtype)), level)
    end
    if a.dtype ~= torch.float32 and a.dtype ~= torch.float64 then
      error(string.format('%s: expected %s to be a float32 or float64 tensor, got %s', op, what, tostring(a.dtype)),
        level)
    end
    if a:dim() < 2 then
      error(string.format('%s: %s must have at least 2 dimensions, got %d', op, what, a:dim()), level)
    end
    if square and a:size(-1) ~= a:size(-2) then
      error(string.format('%s: %s must be batches of square matrices, but they are %d by %d matrices', op, what,
        a:size(-2), a:size(-1)), level)
    end
  end
  h.input = input

  local function batch_of(t, trailing)
    local s = {}
    for d = 1, t:dim() - trailing do s[d] = t:size(d) end
    return s
  end

  local function with(batch, ...)
    local s = { table.unpack(batch) }
    for _, v in ipairs({ ... }) do s[#s + 1] = v end
    return s
  end

  -- the common batch shape of the tensors (each given with its count of trailing non-batch dims)
  local function common_batch(op, ...)
    local args = { ... }
    local shapes = {}
    for i = 1, #args, 2 do shapes[#shapes + 1] = batch_of(args[i], args[i + 1]) end
    local ok, s = pcall(torch.broadcast_shapes, table.unpack(shapes))
    if not ok then
      local strs = {}
      for i = 1, #args, 2 do strs[#strs + 1] = tostring(args[i].shape) end
      error(string.format('%s: the batch dimensions of %s do not broadcast', op, table.concat(strs, ', ')), 3)
    end
    local out = {}
    for d = 1, #s do out[d] = s[d] end
    return out
  end

  h.common_batch, h.with, h.batch_of = common_batch, with, batch_of

  -- integer pivots (..., k) with 1 <= pivots <= m, or an error
  local function check_pivots(piv, op, k, m)
    if not torch.is_tensor(piv) then error(string.format('%s: pivots must be a tensor, got %s', op, type(piv)), 3) end
    if piv.dtype ~= torch.int32 and piv.dtype ~= torch.int64 then
      error(string.format('%s: pivots must be an int32 (or int64) tensor, got %s', op, tostring(piv.dtype)), 3)
    end
    if piv:dim() < 1 or piv:size(-1) ~= k then
      error(string.format('%s: expected pivots of shape (..., %d), got %s', op, k, tostring(piv.shape)), 3)
    end
    if piv:numel() > 0 and (piv:lt(1):any():item() or piv:gt(m):any():item()) then
      error(string.format('%s: the pivots must be between 1 and %d (LAPACK\'s, 1-based)', op, m), 3)
    end
  end

  -- perm (..., m) int64 with row i of P^T A being row perm[i] of A, and its inverse, for pivots
  -- (..., k) of m-row matrices (PyTorch's P: A = P L U)
  local function permutation(piv, m)
    local k = piv:size(-1)
    local batch = batch_of(piv, 1)
    local count = piv:numel() // math.max(k, 1)
    if k == 0 then count = 1; for _, s in ipairs(batch) do count = count * s end end
    local flat = k > 0 and piv:reshape(count, k):tolist() or {}
    local perm, inv = {}, {}
    for b = 1, count do
      local p, q = {}, {}
      for i = 1, m do p[i] = i end
      local row = flat[b]
      for i = 1, k do
        local j = row[i]
        p[i], p[j] = p[j], p[i]
      end
      for i = 1, m do q[p[i]] = i end
      perm[b], inv[b] = p, q
    end
    local function tensor(t)
      if count == 0 or m == 0 then return torch.zeros(with(batch, m), { dtype = torch.int64, device = piv.device }) end
      return torch.tensor(t, { dtype = torch.int64 }):reshape(with(batch, m)):to(piv.device)
    end
    return tensor(perm), tensor(inv)
  end

  -- the rows of b (..., m, k) taken in the order idx (..., m)
  local function rows(b, idx)
    return b:gather(-2, idx:unsqueeze(-1):expand(b.shape))
  end

  -- the permutation matrices P (..., m, m) of the pivots
  local function perm_matrix(piv, m, dtype)
    local perm = permutation(piv, m)
    local cols = torch.arange(1, m + 1, { dtype = torch.int64, device = piv.device })
    -- P^T[i][j] = (perm[i] == j)
    return mT(perm:unsqueeze(-1):eq(cols):to(dtype)):contiguous()
  end

  -- core/lu.c's factors of m x n matrices, the pivots and infos int32 as PyTorch's
  local function factor(a)
    local f, piv, info = torch._lu_factor(a)
    return f, piv:to(torch.int32), info:to(torch.int32)
  end

  -- L (..., m, k) and U (..., k, n) of packed factors
  local function unpack_lu(f)
    local m, n = f:size(-2), f:size(-1)
    local k = math.min(m, n)
    local l = f:narrow(-1, 1, k):tril(-1) + torch.eye(m, k, { dtype = f.dtype, device = f.device })
    return l, f:narrow(-2, 1, k):triu()
  end

  -- PyTorch's linalg_lu_backward: gA from gL and gU (either may be nil), for A = P L U
  local function lu_backward(p, l, u, gl, gu)
    local m, n = l:size(-2), u:size(-1)
    local k = math.min(m, n)
    local solve = linalg.solve_triangular
    local ga
    if m == n then
      -- P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T
      ga = mT(l):matmul(gl):tril(-1) + gu:matmul(mT(u)):triu()
      ga = solve(mT(u), ga, { upper = false, left = false })
      ga = solve(mT(l), ga, { upper = true, unitriangular = true })
    elseif m < n then
      -- wide: U = [U1 U2]; gA1 = P L^-T [triu(gU1) + tril(L^T gL - gU U^T, -1) U1^-T], gA2 = P L^-T gU2
      local u1 = u:narrow(-1, 1, k)
      ga = (mT(l):matmul(gl) - gu:triu():matmul(mT(u))):tril(-1)
      ga = solve(mT(u1), ga, { upper = false, left = false })
      ga = torch.cat({ ga + gu:narrow(-1, 1, k):triu(), gu:narrow(-1, k + 1, n - k) }, -1)
      ga = solve(mT(l), ga, { upper = true, unitriangular = true })
    else
      -- tall: L = [L1; L2]; gA1 = P [tril(gL1, -1) + L1^-T triu(gU U^T - L^T gL)] U^-T, gA2 = P gL2 U^-T
      local l1 = l:narrow(-2, 1, k)
      ga = (gu:matmul(mT(u)) - mT(l):matmul(gl:tril(-1))):triu()
      ga = solve(mT(l1), ga, { upper = true, unitriangular = true })
      ga = torch.cat({ ga + gl:narrow(-2, 1, k):tril(-1), gl:narrow(-2, k + 1, m - k) }, -2)
      ga = solve(mT(u), ga, { upper = false, left = false })
    end
    return p:matmul(ga)
  end

  -- the packed factors, pivots and infos in out
  local LUFactor = Function:extend('LinalgLuFactorExBackward0')
  function LUFactor.forward(ctx, a, out)
    local f, piv, info = factor(a)
    out.pivots, out.info = piv, info
    ctx:save_for_backward(f, piv)
    return f
  end
  function LUFactor.backward(ctx, g)
    local f, piv = table.unpack(ctx.saved_tensors)
    local m, n = f:size(-2), f:size(-1)
    local k = math.min(m, n)
    local l, u = unpack_lu(f)
    local p = perm_matrix(piv, m, f.dtype)
    return lu_backward(p, l, u, g:narrow(-1, 1, k):tril(-1), g:narrow(-2, 1, k):triu())
  end

  local function no_pivot(op, pivot)
    if pivot == false then error(op .. ': LU without pivoting is not implemented on the CPU', 3) end
  end

  local function lu_factor_ex(a)
    local out = {}
    local f = LUFactor.apply(a, out)
    return f, out.pivots, out.info
  end

  -- the first non-zero info as PyTorch's error, "(Batch element i): " (1-based) before it in a batch
  local function raise_info(info, op, fmt, level)
    if not info:ne(0):any():item() then return end
    local flat = info:reshape(-1):tolist()
    for i, v in ipairs(flat) do
      if v ~= 0 then
        error(string.format('%s: %s' .. fmt, op, info:dim() > 0 and string.format('(Batch element %d): ', i) or '', v, v),
          level > 0 and level + 1 or 0)
      end
    end
  end
  h.raise_info = raise_info

  local lu_fmt = 'U[%d,%d] is zero and using it on lu_solve would result in a division by zero. If you still want '
    .. 'to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)'

  --- linalg.lu_factor_ex(A, {pivot = true, check_errors = false}) -> LU, pivots, info: the packed
  --- factors of P A = L U (m x n A; L's unit diagonal implied), pivots (..., min(m, n)) int32,
  --- info (...) int32: 0, or the first (1-based) i with U[i][i] = 0
  function linalg.lu_factor_ex(a, ...)
    input(a, 'linalg.lu_factor_ex', false)
    local pivot, check = named('lu_factor_ex', { ... }, { 'pivot', 'check_errors' })
    no_pivot('linalg.lu_factor_ex', pivot)
    local f, piv, info = lu_factor_ex(a)
    if check then raise_info(info, 'linalg.lu_factor_ex', lu_fmt, 2) end
    return f, piv, info
  end

  --- linalg.lu_factor(A, {pivot = true}) -> LU, pivots: as lu_factor_ex, a singular matrix an error
  function linalg.lu_factor(a, ...)
    input(a, 'linalg.lu_factor', false)
    local pivot = named('lu_factor', { ... }, { 'pivot' })
    no_pivot('linalg.lu_factor', pivot)
    local f, piv, info = lu_factor_ex(a)
    raise_info(info, 'linalg.lu_factor', lu_fmt, 2)
    return f, piv
  end

  local function empty(f) return torch.empty({ 0 }, { dtype = f.dtype, device = f.device }) end

  --- torch.lu_unpack(LU, pivots, unpack_data = true, unpack_pivots = true) -> P, L, U with A = P L U:
  --- P (..., m, m), L (..., m, k) unit lower, U (..., k, n) upper; what is not unpacked is empty
  function torch.lu_unpack(f, piv, ...)
    input(f, 'torch.lu_unpack', false, 'LU_data')
    local data, pivots = options.args('torch.lu_unpack', { ... }, { 'unpack_data', 'unpack_pivots' }, nil, 3)
    local m, n = f:size(-2), f:size(-1)
    check_pivots(piv, 'torch.lu_unpack', math.min(m, n), m)
    local p, l, u = empty(f), empty(f), empty(f)
    if data ~= false then l, u = unpack_lu(f) end
    if pivots ~= false then p = perm_matrix(piv, m, f.dtype) end
    return p, l, u
  end

  --- linalg.lu(A, {pivot = true}) -> P, L, U with A = P L U, for any m x n A
  function linalg.lu(a, ...)
    input(a, 'linalg.lu', false)
    local pivot = named('lu', { ... }, { 'pivot' })
    no_pivot('linalg.lu', pivot)
    local f, piv = lu_factor_ex(a)
    return torch.lu_unpack(f, piv)
  end

  --- torch.lu(A, pivot = true, get_infos = false) -> LU, pivots[, infos]: no error for a singular
  --- matrix (PyTorch's)
  function torch.lu(a, ...)
    input(a, 'torch.lu', false)
    local pivot, infos = options.args('torch.lu', { ... }, { 'pivot', 'get_infos' }, nil, 3)
    no_pivot('torch.lu', pivot)
    local f, piv, info = linalg.lu_factor_ex(a)
    if infos then return f, piv, info end
    return f, piv
  end
  torch.Tensor.lu = torch.lu

  -- X = A^-1 B (adjoint: A^-T B) for A = P L U packed in f, batches already broadcast: B's rows
  -- permuted, then the two triangular solves that read L's and U's triangles of f (so the gradient
  -- reaches both, as PyTorch's)
  local function solve_packed(f, piv, b, adjoint)
    local solve = linalg.solve_triangular
    local perm, inv = permutation(piv, f:size(-1))
    if not adjoint then
      local y = solve(f, rows(b, perm), { upper = false, unitriangular = true })
      return solve(f, y, { upper = true })
    end
    -- A^T = U^T L^T P^T: X = P L^-T U^-T B
    local y = solve(mT(f), b, { upper = false })
    return rows(solve(mT(f), y, { upper = true, unitriangular = true }), inv)
  end

  --- linalg.lu_solve(LU, pivots, B, {left = true, adjoint = false}): X with A X = B (left) or
  --- X A = B, A^T in place of A when adjoint, for the factors of lu_factor; batches broadcast
  function linalg.lu_solve(f, piv, b, ...)
    local op = 'linalg.lu_solve'
    input(f, op, true, 'LU')
    input(b, op, false, 'B')
    local left, adjoint = named('lu_solve', { ... }, { 'left', 'adjoint' })
    if left == nil then left = true end
    if b.dtype ~= f.dtype then
      error(string.format('%s: Expected LU and B to have the same dtype, but found LU of type %s and B of type %s '
        .. 'instead', op, tostring(f.dtype), tostring(b.dtype)), 2)
    end
    local n = f:size(-1)
    check_pivots(piv, op, n, n)
    if (left and b:size(-2) ~= n) or (not left and b:size(-1) ~= n) then
      error(string.format('%s: Incompatible shapes of A and B for the equation %s (%dx%d and %dx%d)', op,
        left and 'AX = B' or 'XA = B', n, n, b:size(-2), b:size(-1)), 2)
    end
    local batch = common_batch(op, f, 2, piv, 1, b, 2)
    f = f:expand(with(batch, n, n))
    piv = piv:expand(with(batch, n))
    b = b:expand(with(batch, b:size(-2), b:size(-1)))
    if left then return solve_packed(f, piv, b, adjoint or false) end
    -- X A = B <=> A^T X^T = B^T
    return mT(solve_packed(f, piv, mT(b), not adjoint))
  end

  --- torch.lu_solve(B, LU, pivots): X with A X = B
  function torch.lu_solve(b, f, piv) return linalg.lu_solve(f, piv, b) end
  torch.Tensor.lu_solve = torch.lu_solve

  --- torch.triangular_solve(B, A, upper = true, transpose = false, unitriangular = false) ->
  --- solution, cloned_coefficient: X with op(A) X = B (op(A) = A^T when transpose), A triangular
  --- (only the given triangle read), and a copy of A broadcast to the batch
  function torch.triangular_solve(b, a, ...)
    local op = 'torch.triangular_solve'
    input(b, op, false, 'B')
    input(a, op, true, 'A')
    local upper, transpose, unit = options.args(op, { ... }, { 'upper', 'transpose', 'unitriangular' }, nil, 3)
    if upper == nil then upper = true end
    if b.dtype ~= a.dtype then
      error(string.format('%s: Expected b and A to have the same dtype, but found b of type %s and A of type %s instead',
        op, tostring(b.dtype), tostring(a.dtype)), 2)
    end
    local n = a:size(-1)
    if b:size(-2) ~= n then
      error(string.format('%s: Incompatible matrix sizes for triangular_solve: each A matrix is %d by %d but each b '
        .. 'matrix is %d by %d', op, n, n, b:size(-2), b:size(-1)), 2)
    end
    local batch = common_batch(op, a, 2, b, 2)
    a = a:expand(with(batch, n, n))
    local x
    if transpose then
      x = linalg.solve_triangular(mT(a), b, { upper = not upper, unitriangular = unit or false })
    else
      x = linalg.solve_triangular(a, b, { upper = upper and true or false, unitriangular = unit or false })
    end
    return x, a:clone()
  end
  torch.Tensor.triangular_solve = torch.triangular_solve
end
