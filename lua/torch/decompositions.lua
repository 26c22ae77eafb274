-- torch.linalg's decompositions: cholesky, qr, eigh and svd (LAPACK's potrf, geqrf/orgqr, syevd
-- and gesdd through core/lapack.c, on float32 and float64 batches on the CPU) with PyTorch's
-- gradients as autograd Functions, the triangular solve (core/lu.c), and what is composed from
-- them (so it passes gradients too): eigvalsh, svdvals, pinv, matrix_rank, lstsq, cond,
-- cholesky_solve and cholesky_inverse, and the spectral and nuclear matrix norms. Installed into
-- torch.linalg by lua/torch/linalg.lua.
local torch = require 'torch'

return function(linalg, h)
  local named = h.named
  local Function = torch.autograd.Function

  local function mT(x) return x:transpose(-2, -1) end

  -- a batch of float32/float64 matrices (square when asked), or an error naming op at the level of
  -- the user's call (lua/torch/lu.lua's check); CUDA tensors reach the routines as CPU copies
  -- (lua/torch/linalg.lua's via_cpu)
  local function input(a, op, square, what) h.input(a, 'linalg.' .. op, square, what, 4) end

  -- LAPACK's eigen and singular value solvers are not defined on NaN or inf
  local function finite(a, op)
    if not a:isfinite():all():item() then
      error(string.format('linalg.%s: the input contains non-finite values (NaN or inf)', op), 3)
    end
  end

  local function eye_like(x, n)
    return torch.eye(n, { dtype = x.dtype, device = x.device })
  end

  -- whether a gradient the engine passed is more than the zeros it puts for an unused output
  local function used(g) return g ~= nil and g:ne(0):any():item() end

  -- x with the matrices' diagonals set to d (..., n) (x's diagonal is zero)
  local function plus_diag(x, d) return x + d:unsqueeze(-2) * eye_like(d, d:size(-1)) end

  -- ---- triangular solves ----

  -- X = A^-1 B for triangular A (the upper or lower triangle; unit: a diagonal of ones)
  -- (under create_graph its backward is made of recorded ops: the solve applied again, to the
  -- inputs with their history)
  local TriSolve = Function:extend('LinalgSolveTriangularBackward0')
  function TriSolve.forward(ctx, a, b, upper, unit)
    ctx.upper, ctx.unit = upper, unit
    local x = torch._solve_triangular(a, b, upper, false, unit)
    ctx:save_for_backward(a, x)
    ctx.a, ctx.b = a, b
    return x
  end
  function TriSolve.backward(ctx, g)
    local a, x = table.unpack(ctx.saved_tensors)
    -- gB = A^-T g; gA = -gB X^T on A's triangle (off its diagonal when unit)
    local gb
    if torch.is_grad_enabled() then
      a = ctx.a
      gb = TriSolve.apply(mT(a), g, not ctx.upper, ctx.unit)
      x = TriSolve.apply(a, ctx.b, ctx.upper, ctx.unit)
    else
      gb = torch._solve_triangular(a, g, ctx.upper, true, ctx.unit)
    end
    local ga = -gb:matmul(mT(x))
    if ctx.upper then ga = ga:triu(ctx.unit and 1 or 0) else ga = ga:tril(ctx.unit and -1 or 0) end
    return ga, gb
  end

  -- A and B expanded to their common batch shape
  local function broadcast_batch(a, b, op)
    local na, nb = a:dim() - 2, b:dim() - 2
    local nd = math.max(na, nb)
    local shape = {}
    for d = 1, nd do
      local sa = d > nd - na and a:size(d - (nd - na)) or 1
      local sb = d > nd - nb and b:size(d - (nd - nb)) or 1
      if sa ~= sb and sa ~= 1 and sb ~= 1 then
        error(string.format('linalg.%s: the batch shapes of A %s and B %s do not broadcast', op, tostring(a.shape),
          tostring(b.shape)), 4)
      end
      shape[d] = sa == 1 and sb or sa
    end
    local sa_, sb_ = { table.unpack(shape) }, { table.unpack(shape) }
    sa_[nd + 1], sa_[nd + 2] = a:size(-2), a:size(-1)
    sb_[nd + 1], sb_[nd + 2] = b:size(-2), b:size(-1)
    return a:expand(sa_), b:expand(sb_)
  end

  --- linalg.solve_triangular(A, B, {upper, left = true, unitriangular = false}): X with A X = B
  --- (left) or X A = B, for A triangular (only its upper or lower triangle is read)
  function linalg.solve_triangular(a, b, ...)
    input(a, 'solve_triangular', true)
    input(b, 'solve_triangular', false, 'B')
    local upper, left, unit = named('solve_triangular', { ... }, { 'upper', 'left', 'unitriangular' })
    if type(upper) ~= 'boolean' then
      error('linalg.solve_triangular: upper must be given, true or false (A\'s triangle), got ' .. tostring(upper), 2)
    end
    if left == nil then left = true end
    unit = unit or false
    if b.dtype ~= a.dtype then
      error(string.format('linalg.solve_triangular: A is %s but B is %s', tostring(a.dtype), tostring(b.dtype)), 2)
    end
    local n = a:size(-1)
    if (left and b:size(-2) ~= n) or (not left and b:size(-1) ~= n) then
      error(string.format('linalg.solve_triangular: A is %d by %d but B has %d %s', n, n,
        left and b:size(-2) or b:size(-1), left and 'rows' or 'columns'), 2)
    end
    a, b = broadcast_batch(a, b, 'solve_triangular')
    if left then return TriSolve.apply(a, b, upper, unit) end
    -- X A = B  <=>  A^T X^T = B^T
    return mT(TriSolve.apply(mT(a), mT(b), not upper, unit))
  end

  -- ---- Cholesky ----

  local Cholesky = Function:extend('LinalgCholeskyExBackward0')

  function Cholesky.forward(ctx, a, upper, out)
    local l, info = torch._cholesky(a, upper)
    out.info = info
    ctx.upper = upper
    ctx:save_for_backward(l)
    ctx.a = a
    return l
  end
  function Cholesky.backward(ctx, g)
    local l = ctx.saved_tensors[1]
    -- under create_graph: L again as a recorded op of A (its history), the solves through TriSolve
    local graph = torch.is_grad_enabled()
    if graph then l = Cholesky.apply(ctx.a, ctx.upper, {}) end
    if ctx.upper then l, g = mT(l), mT(g) end
    -- Murray (2016): gA = L^-T Phi(L^T gL) L^-1, Phi: the lower triangle made symmetric, halved
    local p = mT(l):matmul(g):tril()
    p = (p + mT(p:tril(-1))) * 0.5
    if graph then
      local x = TriSolve.apply(mT(l), p, true, false)          -- L^-T p
      return mT(TriSolve.apply(mT(l), mT(x), true, false))     -- (L^-T x^T)^T = x L^-1
    end
    local x = torch._solve_triangular(l, p, false, true, false)     -- L^-T p
    return mT(torch._solve_triangular(l, mT(x), false, true, false)) -- (L^-T x^T)^T = x L^-1
  end

  local function cholesky_ex(a, upper, op)
    local out = {}
    local l = Cholesky.apply(a, upper, out)
    return l, out.info
  end

  --- linalg.cholesky_ex(A, {upper = false}) -> L, info: info (of the batch shape) is 0, or the
  --- order of the leading minor that is not positive-definite (L is then incomplete)
  function linalg.cholesky_ex(a, ...)
    input(a, 'cholesky_ex', true)
    local upper = named('cholesky_ex', { ... }, { 'upper', 'check_errors' })
    return cholesky_ex(a, upper or false)
  end

  --- linalg.cholesky(A, {upper = false}): L lower triangular with A = L L^T (upper: U with
  --- A = U^T U), for symmetric positive-definite A (only its lower triangle is read)
  function linalg.cholesky(a, ...)
    input(a, 'cholesky', true)
    local upper = named('cholesky', { ... }, { 'upper' })
    local l, info = cholesky_ex(a, upper or false)
    if info:ne(0):any():item() then
      local flat = info:reshape(-1):tolist()
      for i, v in ipairs(flat) do
        if v ~= 0 then
          error(string.format('linalg.cholesky: %sThe factorization could not be completed because the input is not '
            .. 'positive-definite (the leading minor of order %d is not positive-definite).',
            info:dim() > 0 and string.format('(batch element %d): ', i) or '', v), 2)
        end
      end
    end
    return l
  end

  --- torch.cholesky_solve(B, L, upper = false): X with A X = B, where A = L L^T (or U^T U)
  function torch.cholesky_solve(b, l, upper)
    input(b, 'cholesky_solve', false, 'B')
    input(l, 'cholesky_solve', true, 'L')
    if upper then
      return linalg.solve_triangular(l, linalg.solve_triangular(mT(l), b, { upper = false }), { upper = true })
    end
    return linalg.solve_triangular(mT(l), linalg.solve_triangular(l, b, { upper = false }), { upper = true })
  end

  --- torch.cholesky_inverse(L, upper = false): A^-1 for A = L L^T (or U^T U)
  function torch.cholesky_inverse(l, upper)
    input(l, 'cholesky_inverse', true, 'L')
    return torch.cholesky_solve(eye_like(l, l:size(-1)):expand(l.shape), l, upper)
  end

  -- ---- symmetric indefinite LDL^T ----

  -- LAPACK's factors carry no gradient in PyTorch 1.13; a backward through them is an error
  local LDLFactor = Function:extend('LinalgLdlFactorExBackward0')
  LDLFactor.once_differentiable = true -- its backward is not made of recorded ops
  function LDLFactor.forward(_, a, out)
    local ld, piv, info = torch._ldl_factor(a)
    out.pivots, out.info = piv, info
    return ld
  end
  function LDLFactor.backward()
    error('linalg.ldl_factor: the derivative of the LDL factorisation is not implemented (nor in PyTorch 1.13)', 0)
  end

  local function ldl_args(a, op, ...)
    input(a, op, true)
    local hermitian, check = named(op, { ... }, { 'hermitian', 'check_errors' })
    if hermitian ~= nil and type(hermitian) ~= 'boolean' then
      error(string.format('linalg.%s: hermitian must be true or false, got %s', op, tostring(hermitian)), 3)
    end
    local out = {}
    local ld = LDLFactor.apply(a, out)
    return ld, out.pivots, out.info, check
  end

  local ldl_fmt = 'D[%d,%d] is zero: the input matrix is singular and ldl_solve with its factors would divide by zero. '
    .. 'To factor it anyway, call linalg.ldl_factor_ex'

  --- linalg.ldl_factor_ex(A, {hermitian = false, check_errors = false}) -> LD, pivots, info:
  --- A = P L D L^T P^T for symmetric A (its lower triangle read) by Bunch-Kaufman pivoting, as
  --- LAPACK's sytrf stores it (D's 1 x 1 and 2 x 2 blocks, L's multipliers below them); pivots
  --- (..., n) int32 sytrf's (1-based; both entries of a 2 x 2 block -p); info (...) int32 0, or
  --- the first i with D[i][i] zero
  function linalg.ldl_factor_ex(a, ...)
    local ld, piv, info, check = ldl_args(a, 'ldl_factor_ex', ...)
    if check then h.raise_info(info, 'linalg.ldl_factor_ex', ldl_fmt, 2) end
    return ld, piv, info
  end

  --- linalg.ldl_factor(A, {hermitian = false}) -> LD, pivots: as ldl_factor_ex, D singular an error
  function linalg.ldl_factor(a, ...)
    local o = ...
    if type(o) == 'table' and o.check_errors ~= nil then
      error("linalg.ldl_factor: unknown option 'check_errors' (its options are hermitian)", 2)
    end
    local ld, piv, info = ldl_args(a, 'ldl_factor', ...)
    h.raise_info(info, 'linalg.ldl_factor', ldl_fmt, 2)
    return ld, piv
  end

  -- X = A^-1 B for ldl_factor's factors; the gradient reaches B (A is symmetric: gB = A^-1 g), not LD
  local LDLSolve = Function:extend('LinalgLdlSolveBackward0')
  LDLSolve.once_differentiable = true -- its backward is not made of recorded ops
  function LDLSolve.forward(ctx, ld, piv, b)
    ctx:save_for_backward(ld, piv)
    return torch._ldl_solve(ld, piv, b)
  end
  function LDLSolve.backward(ctx, g)
    if ctx.needs_input_grad[1] then
      error('linalg.ldl_solve: the derivative with respect to LD is not implemented (nor in PyTorch 1.13)', 0)
    end
    local ld, piv = table.unpack(ctx.saved_tensors)
    return nil, nil, torch._ldl_solve(ld, piv, g:contiguous())
  end

  --- linalg.ldl_solve(LD, pivots, B, {hermitian = false}): X with A X = B for the factors of
  --- ldl_factor; batches broadcast
  function linalg.ldl_solve(ld, piv, b, ...)
    local op = 'ldl_solve'
    input(ld, op, true, 'LD')
    input(b, op, false, 'B')
    named(op, { ... }, { 'hermitian' })
    if not torch.is_tensor(piv) or piv.dtype ~= torch.int32 then
      error('linalg.ldl_solve: pivots must be the int32 tensor of ldl_factor, got '
        .. (torch.is_tensor(piv) and tostring(piv.dtype) or type(piv)), 2)
    end
    if b.dtype ~= ld.dtype then
      error(string.format('linalg.ldl_solve: Expected LD and B to have the same dtype, but found LD of type %s and B '
        .. 'of type %s instead', tostring(ld.dtype), tostring(b.dtype)), 2)
    end
    local n = ld:size(-1)
    if b:size(-2) ~= n or piv:dim() < 1 or piv:size(-1) ~= n then
      error(string.format('linalg.ldl_solve: Incompatible matrix sizes: each LD matrix is %d by %d, each B matrix %d by '
        .. '%d and the pivots %s', n, n, b:size(-2), b:size(-1), tostring(piv.shape)), 2)
    end
    local batch = h.common_batch('linalg.ldl_solve', ld, 2, piv, 1, b, 2)
    return LDLSolve.apply(ld:expand(h.with(batch, n, n)):contiguous(), piv:expand(h.with(batch, n)):contiguous(),
      b:expand(h.with(batch, n, b:size(-1))):contiguous())
  end

  -- ---- QR ----

  -- (under create_graph its backward is made of recorded ops: the saved Q and R are its outputs,
  -- which carry their history, and the triangular solve goes through TriSolve)
  local QR = Function:extend('LinalgQrBackward0')

  function QR.forward(ctx, a, mode)
    local q, r = torch._qr(a, mode)
    ctx.mode = mode
    ctx:save_for_backward(q, r)
    return q, r
  end
  function QR.backward(ctx, gq, gr)
    local q, r = table.unpack(ctx.saved_tensors)
    if ctx.mode == 'r' then
      error("linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
        .. "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.", 0)
    end
    local m, n = q:size(-2), r:size(-1)
    if ctx.mode == 'complete' and m > n then
      error("linalg.qr: The QR decomposition is not differentiable when mode='complete' and nrows > ncols.", 0)
    end
    local k = math.min(m, n)
    -- A = [X | Y] with X = Q U (U = R's first k columns, square), Y = Q V (V the rest)
    local u, gu = r:narrow(-1, 1, k), gr:narrow(-1, 1, k)
    local gy
    if m < n then
      local v, gv = r:narrow(-1, k + 1, n - k), gr:narrow(-1, k + 1, n - k)
      gq = gq + q:matmul(v):matmul(mT(gv)) -- V = Q^T Y depends on Q
      gy = q:matmul(gv)
    end
    -- gX = (gQ + Q copyltu(M)) U^-T with M = U gU^T - gQ^T Q, copyltu(M) = tril(M) + tril(M, -1)^T
    local mm = u:matmul(mT(gu)) - mT(gq):matmul(q)
    local w = gq + q:matmul(mm:tril() + mT(mm:tril(-1)))
    local gx
    if torch.is_grad_enabled() then
      gx = mT(TriSolve.apply(u, mT(w), true, false))
    else
      gx = mT(torch._solve_triangular(u, mT(w), true, false, false))
    end
    if gy then return torch.cat({ gx, gy }, -1) end
    return gx
  end

  --- linalg.qr(A, mode = 'reduced') -> Q, R: A = Q R with Q's columns orthonormal and R upper
  --- triangular; 'complete' gives Q square, 'r' only R (Q an empty tensor)
  function linalg.qr(a, ...)
    input(a, 'qr', false)
    local mode = named('qr', { ... }, { 'mode' })
    mode = mode or 'reduced'
    if mode ~= 'reduced' and mode ~= 'complete' and mode ~= 'r' then
      error("linalg.qr: mode must be 'reduced', 'complete' or 'r', got " .. tostring(mode), 2)
    end
    return QR.apply(a, mode)
  end

  --- torch.qr(A, some = true) -> Q, R (some = false: the complete decomposition)
  function torch.qr(a, some)
    return linalg.qr(a, some == false and 'complete' or 'reduced')
  end
  torch.Tensor.qr = torch.qr

  -- geqrf's factors carry no gradient (nor in PyTorch 1.13)
  local Geqrf = Function:extend('GeqrfBackward0')
  Geqrf.once_differentiable = true -- its backward is not made of recorded ops
  function Geqrf.forward(_, a, out)
    local qr, tau = torch._geqrf(a)
    out.tau = tau
    return qr
  end
  function Geqrf.backward()
    error('geqrf: the derivative of geqrf is not implemented (nor in PyTorch 1.13): differentiate linalg.qr', 0)
  end

  --- torch.geqrf(A) -> a, tau: LAPACK's QR factors of A (..., m, n): R on and above the diagonal of
  --- a, the Householder vectors below it; Q = linalg.householder_product(a, tau)
  function torch.geqrf(a)
    h.input(a, 'geqrf', false, 'A', 3)
    if a.device.type ~= 'cpu' then
      local qr, tau = torch.geqrf(a:to('cpu'))
      return qr:to(a.device), tau:to(a.device)
    end
    local out = {}
    local qr = Geqrf.apply(a, out)
    return qr, out.tau
  end
  torch.Tensor.geqrf = torch.geqrf

  -- ---- symmetric eigendecomposition ----

  local Eigh = Function:extend('LinalgEighBackward0')
  function Eigh.forward(ctx, a, upper)
    local w, v = torch._eigh(a, upper, true)
    ctx:save_for_backward(w, v)
    return w, v
  end
  function Eigh.backward(ctx, gw, gv)
    local w, v = table.unpack(ctx.saved_tensors)
    -- gA = V (diag(gw) + skew(V^T gV) / 2 / E) V^T, E[i][j] = w[j] - w[i]: symmetric, as PyTorch's
    if not used(gv) then return (v * gw:unsqueeze(-2)):matmul(mT(v)) end
    local x = mT(v):matmul(gv)
    local e = w:unsqueeze(-2) - w:unsqueeze(-1) + eye_like(w, w:size(-1))
    local inner = plus_diag((x - mT(x)) * 0.5 / e, gw)
    return v:matmul(inner):matmul(mT(v))
  end

  local function uplo(v, op)
    if v == nil or v == 'L' then return false end
    if v == 'U' then return true end
    error(string.format("linalg.%s: UPLO must be 'L' or 'U', got %s", op, tostring(v)), 3)
  end

  --- linalg.eigh(A, UPLO = 'L') -> eigenvalues (ascending), eigenvectors (columns) of symmetric A,
  --- of which only the lower (or upper) triangle is read
  function linalg.eigh(a, ...)
    input(a, 'eigh', true)
    finite(a, 'eigh')
    local up = uplo(named('eigh', { ... }, { 'UPLO' }), 'eigh')
    return Eigh.apply(a, up)
  end

  --- linalg.eigvalsh(A, UPLO = 'L'): the eigenvalues of symmetric A, ascending
  function linalg.eigvalsh(a, ...)
    input(a, 'eigvalsh', true)
    finite(a, 'eigvalsh')
    local up = uplo(named('eigvalsh', { ... }, { 'UPLO' }), 'eigvalsh')
    if a.requires_grad and torch.is_grad_enabled() then return (Eigh.apply(a, up)) end
    return (torch._eigh(a, up, false))
  end

  -- ---- singular value decomposition ----

  local SVD = Function:extend('LinalgSvdBackward0')
  function SVD.forward(ctx, a, full)
    local u, s, vh = torch._svd(a, full, true)
    ctx.full = full
    ctx:save_for_backward(u, s, vh)
    return u, s, vh
  end
  function SVD.backward(ctx, gu, gs, gvh)
    local u, s, vh = table.unpack(ctx.saved_tensors)
    local k = s:size(-1)
    if ctx.full then -- the columns past k carry no gradient (PyTorch narrows them too)
      u, gu, vh, gvh = u:narrow(-1, 1, k), gu:narrow(-1, 1, k), vh:narrow(-2, 1, k), gvh:narrow(-2, 1, k)
    end
    local m, n = u:size(-2), vh:size(-1)
    local has_u, has_v = used(gu), used(gvh)
    if not has_u and not has_v then return u:matmul(gs:unsqueeze(-1) * vh) end
    local function skew(x) return x - mT(x) end
    local s2 = s * s
    local e = s2:unsqueeze(-2) - s2:unsqueeze(-1) + eye_like(s, k)
    local inner
    if has_u and has_v then
      inner = (skew(mT(u):matmul(gu)) * s:unsqueeze(-2) + s:unsqueeze(-1) * skew(vh:matmul(mT(gvh)))) / e
    elseif has_u then
      inner = skew(mT(u):matmul(gu)) * (s:unsqueeze(-2) / e)
    else
      inner = (s:unsqueeze(-1) / e) * skew(vh:matmul(mT(gvh)))
    end
    inner = plus_diag(inner, gs)
    if m > n and has_u then
      -- the part of gU outside U's span: (I - U U^T) gU S^-1
      local gus = gu / s:unsqueeze(-2)
      return (u:matmul(inner) + gus - u:matmul(mT(u):matmul(gus))):matmul(vh)
    elseif m < n and has_v then
      local sgv = gvh / s:unsqueeze(-1)
      return u:matmul(inner:matmul(vh) + sgv - sgv:matmul(mT(vh)):matmul(vh))
    end
    return u:matmul(inner):matmul(vh)
  end

  --- linalg.svd(A, full_matrices = true) -> U, S, Vh with A = U diag(S) Vh, S descending
  function linalg.svd(a, ...)
    input(a, 'svd', false)
    finite(a, 'svd')
    local full = named('svd', { ... }, { 'full_matrices' })
    if full == nil then full = true end
    return SVD.apply(a, full and true or false)
  end

  --- linalg.svdvals(A): the singular values, descending
  function linalg.svdvals(a)
    input(a, 'svdvals', false)
    finite(a, 'svdvals')
    if a.requires_grad and torch.is_grad_enabled() then
      local _, s = SVD.apply(a, false)
      return s
    end
    local _, s = torch._svd(a, false, false)
    return s
  end

  --- torch.svd(A, some = true, compute_uv = true) -> U, S, V (V, not V^T; without compute_uv, U and
  --- V are zero matrices of the full shapes, as PyTorch's)
  function torch.svd(a, some, compute_uv)
    input(a, 'svd', false)
    finite(a, 'svd')
    if compute_uv == false then
      local m, n = a:size(-2), a:size(-1)
      local su, sv = a.shape, a.shape
      su = { table.unpack(su) }; sv = { table.unpack(sv) }
      su[#su] = m
      sv[#sv - 1] = n
      return torch.zeros(su, { dtype = a.dtype }), linalg.svdvals(a), torch.zeros(sv, { dtype = a.dtype })
    end
    local u, s, vh = linalg.svd(a, some == false)
    return u, s, mT(vh)
  end
  torch.Tensor.svd = torch.svd

  -- ---- composed from the decompositions ----

  -- the tolerance below which a singular value counts as zero: max(atol, rtol * the largest), with
  -- PyTorch's defaults (rtol = eps * max(m, n) when neither is given, 0 when only atol is)
  local function tolerance(smax, a, atol, rtol)
    if rtol == nil then
      rtol = (atol == nil or atol == 0) and torch.finfo(a.dtype).eps * math.max(a:size(-2), a:size(-1)) or 0
    end
    local tol = smax * rtol
    if atol ~= nil then tol = tol:clamp(atol) end
    return tol
  end

  -- U, S^+ and Vh of a's reduced SVD (S^+: the inverses of the singular values above the tolerance,
  -- zero for the others) and which singular values are kept (a bool mask)
  local function svd_inverted(a, atol, rtol)
    local u, s, vh = linalg.svd(a, false)
    local smax = s:size(-1) > 0 and s:narrow(-1, 1, 1) or s
    local keep = s:gt(tolerance(smax, a, atol, rtol))
    local sinv = torch.where(keep, 1 / torch.where(keep, s, torch.ones_like(s)), torch.zeros_like(s))
    return u, sinv, vh, keep
  end

  --- linalg.pinv(A, {atol, rtol, hermitian = false}): the pseudo-inverse, from the SVD (from eigh
  --- when hermitian), singular values at or below the tolerance dropped
  function linalg.pinv(a, ...)
    input(a, 'pinv', false)
    local atol, rtol, hermitian = named('pinv', { ... }, { 'atol', 'rtol', 'hermitian' })
    if hermitian then
      local w, v = linalg.eigh(a)
      local aw = w:abs()
      local keep = aw:gt(tolerance(aw:amax(-1, true), a, atol, rtol))
      local winv = torch.where(keep, 1 / torch.where(keep, w, torch.ones_like(w)), torch.zeros_like(w))
      return (v * winv:unsqueeze(-2)):matmul(mT(v))
    end
    local u, sinv, vh = svd_inverted(a, atol, rtol)
    return mT(vh):matmul(sinv:unsqueeze(-1) * mT(u))
  end

  --- torch.pinverse(A, rcond = 1e-15)
  function torch.pinverse(a, rcond) return linalg.pinv(a, { rtol = rcond or 1e-15 }) end
  torch.Tensor.pinverse = torch.pinverse

  --- linalg.matrix_rank(A, {atol, rtol, hermitian = false}): the singular values above the
  --- tolerance, counted (int64, of the batch shape)
  function linalg.matrix_rank(a, ...)
    input(a, 'matrix_rank', false)
    local atol, rtol, hermitian = named('matrix_rank', { ... }, { 'atol', 'rtol', 'hermitian' })
    local s
    if hermitian then
      s = linalg.eigvalsh(a):abs()
    else
      s = linalg.svdvals(a)
    end
    s = s:detach()
    if s:size(-1) == 0 then return s:sum(-1):long() end
    return s:gt(tolerance(s:amax(-1, true), a, atol, rtol)):long():sum(-1)
  end

  --- linalg.lstsq(A, B, {rcond}) -> solution, residuals, rank, singular_values: the least-squares
  --- (minimum-norm) solution of A X = B through the pseudo-inverse; residuals and singular_values
  --- are empty, as those of PyTorch's default driver on the CPU (gelsy)
  function linalg.lstsq(a, b, ...)
    input(a, 'lstsq', false)
    if not torch.is_tensor(b) then error('linalg.lstsq: B must be a tensor, got ' .. type(b), 2) end
    if b.dtype ~= a.dtype then
      error(string.format('linalg.lstsq: A is %s but B is %s', tostring(a.dtype), tostring(b.dtype)), 2)
    end
    local rcond = named('lstsq', { ... }, { 'rcond', 'driver' })
    local vector = h.vector_rhs(a, b)
    local bm = vector and b:unsqueeze(-1) or b
    if bm:dim() < 2 or bm:size(-2) ~= a:size(-2) then
      error(string.format('linalg.lstsq: A has %d rows but B %s', a:size(-2),
        bm:dim() < 2 and 'is not a matrix' or ('has ' .. bm:size(-2))), 2)
    end
    -- A^+ B as V (S^+ (U^T B)), one SVD giving the rank too (matrix_rank's count, of the same
    -- singular values and tolerance)
    local u, sinv, vh, keep = svd_inverted(a, nil, rcond)
    local x = mT(vh):matmul(sinv:unsqueeze(-1) * mT(u):matmul(bm))
    if vector then x = x:squeeze(-1) end
    local empty = torch.empty({ 0 }, { dtype = a.dtype })
    return x, empty, keep:long():sum(-1), empty:clone()
  end

  -- the matrices of a along dims r, c moved last (r, c normalised, 1-based)
  local function matrices(a, r, c)
    if r == a:dim() - 1 and c == a:dim() then return a end
    local perm = {}
    for d = 1, a:dim() do if d ~= r and d ~= c then perm[#perm + 1] = d end end
    perm[#perm + 1], perm[#perm + 2] = r, c
    return a:permute(perm)
  end

  --- the matrix norms that need singular values: 2 (the largest), -2 (the smallest), 'nuc' (their sum)
  function h.spectral_norm(a, ord, r, c, keepdim)
    local s = linalg.svdvals(matrices(a, r, c))
    local v = ord == 'nuc' and s:sum(-1) or ord == 2 and s:amax(-1) or s:amin(-1)
    if keepdim then v = v:unsqueeze(math.min(r, c)):unsqueeze(math.max(r, c)) end
    return v
  end

  --- linalg.cond(A, p = nil): the condition number, the ratio of the largest to the smallest
  --- singular value (p nil or 2; -2 the inverse), else norm(A, p) * norm(A^-1, p)
  function linalg.cond(a, p)
    input(a, 'cond', false)
    if p == nil or p == 2 or p == -2 then
      local s = linalg.svdvals(a)
      local big, small = s:amax(-1), s:amin(-1)
      if p == -2 then return small / big end
      return big / small
    end
    input(a, 'cond', true)
    return linalg.matrix_norm(a, p) * linalg.matrix_norm(linalg.inv(a), p)
  end

  torch.cholesky = function(a, upper) return linalg.cholesky(a, { upper = upper or false }) end
  torch.Tensor.cholesky = torch.cholesky
  torch.Tensor.cholesky_solve = torch.cholesky_solve
  torch.Tensor.cholesky_inverse = torch.cholesky_inverse
end
