-- torch.linalg's functions composed from other tensor ops, so they pass gradients through them:
-- matrix_exp (scaling and squaring around a Taylor polynomial), householder_product (torch.orgqr),
-- tensorinv and tensorsolve (reshapes around inv and solve) and vander (a cumulative product).
-- Installed into torch.linalg by lua/torch/linalg.lua.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

return function(linalg, h)
  local named = h.named

  local function mT(x) return x:transpose(-2, -1) end

  local check_tensor, floating = h.check_tensor, h.floating

  -- ---- the matrix exponential ----

  -- the Taylor polynomial's degree: for |B|_1 <= 1/2 its remainder is below 0.5^19 / 19!, 1e-23
  local TAYLOR_DEGREE = 18
  local SCALED_NORM = 0.5

  -- exp(A) for finite A (..., n, n): each matrix scaled by 2^-s so that its 1-norm is at most 1/2,
  -- the Taylor polynomial by Horner's rule, then squared s times (s per matrix: a matrix whose s is
  -- reached keeps its value); every step a differentiable op
  local function expm(a)
    local n = a:size(-1)
    -- the norm in float64: a float32 or half matrix's column sums can overflow its dtype, and an
    -- infinite s made the squaring loop endless; s stays below 1100 (2^-1100 scales any double
    -- to 0: only a float64 matrix whose norm passes 1.8e308 is that far)
    local norm = torch.no_grad(function() return a:double():abs():sum(-2):amax(-1) end)
    local s = (norm / SCALED_NORM):log2():ceil():clamp(0, 1100) -- (...), float64
    local smax = s:numel() > 0 and s:max():item() or 0
    -- scaled in float64: 2^s passes float32's range from s = 128 (and the scaled matrix was 0)
    local scaled = (a:double() / s:exp2():unsqueeze(-1):unsqueeze(-1)):to(a.dtype)
    local eye = torch.eye(n, { dtype = a.dtype, device = a.device })
    local e = eye
    for j = TAYLOR_DEGREE, 1, -1 do e = eye + torch.matmul(scaled, e) / j end
    for step = 1, smax do
      local more = s:ge(step):unsqueeze(-1):unsqueeze(-1)
      e = torch.where(more, torch.matmul(e, e), e)
    end
    return e
  end

  --- linalg.matrix_exp(A): the exponentials of a batch of square matrices (a matrix with a NaN or
  --- an infinity gives NaNs)
  function linalg.matrix_exp(a)
    local op = 'matrix_exp'
    check_tensor(a, op)
    floating(a, op)
    if a:dim() < 2 or a:size(-1) ~= a:size(-2) then
      error(string.format('linalg.%s: A must be batches of square matrices, but they are %s', op,
        a:dim() < 2 and (a:dim() .. '-D') or (a:size(-2) .. ' by ' .. a:size(-1) .. ' matrices')), 2)
    end
    if a:numel() == 0 then return a:clone() end
    local finite = torch.no_grad(function() return a:isfinite():all(-1):all(-1) end)
    if finite:all():item() then return expm(a) end
    local keep = finite:unsqueeze(-1):unsqueeze(-1)
    return torch.where(keep, expm(torch.where(keep, a, torch.zeros_like(a))), torch.full_like(a, 0 / 0))
  end
  torch.matrix_exp, torch.Tensor.matrix_exp = linalg.matrix_exp, linalg.matrix_exp

  -- ---- Householder products ----

  --- linalg.householder_product(A, tau): the first n columns of H_1 ... H_k for A (..., m, n),
  --- m >= n >= k, tau (..., k), H_i = I - tau_i v_i v_i^T with v_i A's column i below the diagonal
  --- and 1 on it (LAPACK's orgqr: geqrf's reflectors give QR's Q)
  function linalg.householder_product(a, tau)
    local op = 'householder_product'
    check_tensor(a, op, 'input')
    check_tensor(tau, op, 'tau')
    floating(a, op)
    if a:dim() < 2 then error(string.format('linalg.%s: input must have at least 2 dimensions, got %d', op, a:dim()), 2) end
    local m, n = a:size(-2), a:size(-1)
    if m < n then
      error('linalg.' .. op .. ': input.shape[-2] must be greater than or equal to input.shape[-1]', 2)
    end
    if tau:dim() ~= a:dim() - 1 then
      error(string.format('linalg.%s: input.dim() must be greater than tau.dim() by 1, got %d and %d', op, a:dim(),
        tau:dim()), 2)
    end
    local k = tau:size(-1)
    if n < k then error('linalg.' .. op .. ': input.shape[-1] must be greater than or equal to tau.shape[-1]', 2) end
    for d = 1, a:dim() - 2 do
      if a:size(d) ~= tau:size(d) then
        error(string.format('linalg.%s: Expected batch dimensions of tau to be equal to input.shape[:-2], but got %s and %s',
          op, tostring(tau.shape), tostring(a.shape)), 2)
      end
    end
    if tau.dtype ~= a.dtype then
      error(string.format('linalg.%s: tau dtype %s does not match input dtype %s', op, tostring(tau.dtype),
        tostring(a.dtype)), 2)
    end
    -- from the right: X = H_i X from X = the first n columns of I, an m x n update per reflector
    local batch_eye = torch.eye(m, n, { dtype = a.dtype, device = a.device }):expand(a.shape)
    local v = a:tril(-1) + batch_eye
    local x = batch_eye
    for i = k, 1, -1 do
      local vi = v:narrow(-1, i, 1)                               -- (..., m, 1)
      local ti = tau:narrow(-1, i, 1):unsqueeze(-1)               -- (..., 1, 1)
      x = x - (vi * ti):matmul(mT(vi):matmul(x))
    end
    return x
  end
  torch.orgqr, torch.Tensor.orgqr = linalg.householder_product, linalg.householder_product

  --- torch.ormqr(input, tau, other, left = true, transpose = false) / input:ormqr(...): Q other
  --- (left) or other Q (not left), with Q^T for Q where transpose is true, for Q = H_1 ... H_k the
  --- product of geqrf's reflectors (input (..., mn, >= k), tau (..., k), other (..., m, n), mn = m
  --- when left, n when not), as LAPACK's ormqr, without forming Q: one rank-1 update of other per
  --- reflector. Its gradient is that of the updates (PyTorch 1.13 has none).
  function torch.ormqr(a, tau, c, left, transpose, ...)
    local op = 'torch.ormqr'
    check_tensor(a, 'ormqr', 'input')
    check_tensor(tau, 'ormqr', 'tau')
    check_tensor(c, 'ormqr', 'other')
    if select('#', ...) > 0 then error(op .. ': takes at most 5 arguments', 2) end
    if type(left) == 'table' and transpose == nil then left, transpose = left.left, left.transpose end
    if left == nil then left = true end
    if transpose == nil then transpose = false end
    if type(left) ~= 'boolean' or type(transpose) ~= 'boolean' then
      error(op .. ': left and transpose must be booleans', 2)
    end
    if a:dim() < 2 then error(op .. ': input must have at least 2 dimensions.', 2) end
    if c:dim() < 2 then error(op .. ': other must have at least 2 dimensions.', 2) end
    if c:dim() ~= a:dim() then
      error(string.format('%s: input and other must have the same number of dimensions, got %d and %d', op, a:dim(),
        c:dim()), 2)
    end
    if tau:dim() ~= a:dim() - 1 then
      error(string.format('%s: input.dim() must be greater than tau.dim() by 1, got %d and %d', op, a:dim(), tau:dim()), 2)
    end
    local mn = a:size(-2)
    local k = tau:size(-1)
    if left then
      if c:size(-2) ~= mn then error(op .. ': other.shape[-2] must be equal to input.shape[-2]', 2) end
      if k > c:size(-2) then error(op .. ': other.shape[-2] must be greater than or equal to tau.shape[-1]', 2) end
    else
      if c:size(-1) ~= mn then error(op .. ': other.shape[-1] must be equal to input.shape[-2]', 2) end
      if k > c:size(-1) then error(op .. ': other.shape[-1] must be greater than or equal to tau.shape[-1]', 2) end
    end
    if k > a:size(-1) then error(op .. ': input.shape[-1] must be greater than or equal to tau.shape[-1]', 2) end
    for d = 1, a:dim() - 2 do
      if a:size(d) ~= tau:size(d) or a:size(d) ~= c:size(d) then
        error(string.format('%s: Expected batch dimensions of input, tau and other to be equal, got %s, %s and %s', op,
          tostring(a.shape), tostring(tau.shape), tostring(c.shape)), 2)
      end
    end
    if tau.dtype ~= a.dtype then
      error(string.format('%s: Expected input and tau to have the same dtype, but input has dtype %s and tau has dtype %s',
        op, tostring(a.dtype), tostring(tau.dtype)), 2)
    end
    if c.dtype ~= a.dtype then
      error(string.format('%s: Expected input and other to have the same dtype, but input has dtype %s and other has dtype %s',
        op, tostring(a.dtype), tostring(c.dtype)), 2)
    end
    if a.dtype ~= torch.float32 and a.dtype ~= torch.float64 then
      error(op .. ': not implemented for ' .. tostring(a.dtype) .. ' (expected float32 or float64)', 2)
    end
    if tau.device ~= a.device or c.device ~= a.device then
      error(string.format('%s: expected all tensors to be on the same device, got %s, %s and %s', op,
        tostring(a.device), tostring(tau.device), tostring(c.device)), 2)
    end
    if k == 0 then return c:clone() end
    local v = a:narrow(-1, 1, k):tril(-1) + torch.eye(mn, k, { dtype = a.dtype, device = a.device })
    -- Q = H_1 ... H_k: Q C applies H_k first, Q^T C H_1 first; C Q applies H_1 first, C Q^T H_k first
    local forward = left == transpose
    local x = c
    for j = 1, k do
      local i = forward and j or k + 1 - j
      local vi = v:narrow(-1, i, 1)                             -- (..., mn, 1)
      local ti = tau:narrow(-1, i, 1):unsqueeze(-1)             -- (..., 1, 1)
      if left then
        x = x - (vi * ti):matmul(mT(vi):matmul(x))
      else
        x = x - x:matmul(vi):matmul(mT(vi * ti))
      end
    end
    return x
  end
  torch.Tensor.ormqr = torch.ormqr

  -- ---- tensor inverses and solves ----

  local function prod(t, from, to)
    local p = 1
    for i = from, to do p = p * t[i] end
    return p
  end

  --- linalg.tensorinv(A, ind = 2): the tensor X with tensordot(X, A, ind) the identity: A reshaped
  --- to a square matrix of its first ind dims by the rest, inverted, reshaped to the rest's shape
  --- followed by the first ind dims'
  function linalg.tensorinv(a, ...)
    local op = 'tensorinv'
    check_tensor(a, op)
    local ind = named('tensorinv', { ... }, { 'ind' })
    ind = ind or 2
    ind = as_int(ind)
    if math.type(ind) ~= 'integer' or ind <= 0 then
      error(string.format("linalg.%s: Expected a strictly positive integer for 'ind', but got %s", op, tostring(ind)), 2)
    end
    local shape = { table.unpack(a.shape) }
    if ind > #shape then
      error(string.format("linalg.%s: 'ind' (%d) is larger than the number of dimensions of A (%d)", op, ind, #shape), 2)
    end
    local rows, cols = prod(shape, 1, ind), prod(shape, ind + 1, #shape)
    if rows ~= cols then
      error(string.format('linalg.%s: Expected self to satisfy the requirement prod(self.shape[ind:]) == '
        .. 'prod(self.shape[:ind]), but got %d != %d', op, cols, rows), 2)
    end
    local out = {}
    for d = ind + 1, #shape do out[#out + 1] = shape[d] end
    for d = 1, ind do out[#out + 1] = shape[d] end
    return linalg.inv(a:reshape(rows, cols)):reshape(out)
  end

  --- linalg.tensorsolve(A, B, dims = nil): X with tensordot(A, X, X:dim()) = B, the dims of A
  --- listed in dims (1-based) moved last first
  function linalg.tensorsolve(a, b, ...)
    local op = 'tensorsolve'
    check_tensor(a, op)
    check_tensor(b, op, 'B')
    local dims = named('tensorsolve', { ... }, { 'dims' })
    if dims ~= nil then
      if type(dims) == 'number' then dims = { dims } end
      local nd, moved, perm = a:dim(), {}, {}
      for _, d in ipairs(dims) do
        local dd = d < 0 and d + nd + 1 or d
        dd = as_int(dd)
        if math.type(dd) ~= 'integer' or dd < 1 or dd > nd or moved[dd] then
          error(string.format('linalg.%s: dims must be distinct dims of A (1..%d), got %s', op, nd, tostring(d)), 2)
        end
        moved[dd] = true
      end
      for d = 1, nd do if not moved[d] then perm[#perm + 1] = d end end
      for _, d in ipairs(dims) do perm[#perm + 1] = d < 0 and d + nd + 1 or d end
      a = a:permute(perm)
    end
    local shape, nb = { table.unpack(a.shape) }, b:dim()
    if nb > #shape then
      error(string.format('linalg.%s: B has %d dimensions, more than A\'s %d', op, nb, #shape), 2)
    end
    -- PyTorch compares the counts only: B's elements and those of A's dims after B's count
    local rows, cols = prod(shape, 1, nb), prod(shape, nb + 1, #shape)
    if cols ~= b:numel() then
      error(string.format('linalg.%s: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == '
        .. 'prod(self.shape[:other.ndim]), but got %d != %d', op, cols, b:numel()), 2)
    end
    if rows ~= cols then
      error(string.format('linalg.%s: A of shape %s is not square once reshaped to B\'s %d elements by the rest (%d by %d)',
        op, tostring(a.shape), b:numel(), rows, cols), 2)
    end
    local out = {}
    for d = nb + 1, #shape do out[#out + 1] = shape[d] end
    return linalg.solve(a:reshape(rows, cols), b:reshape(rows)):reshape(out)
  end

  -- ---- Vandermonde matrices ----

  --- linalg.vander(x, {N = x:size(-1)}): (..., n, N) with columns x^0, x^1, ..., x^(N-1), N > 1;
  --- floating point and integer x (integers give int64, as cumprod's, PyTorch's too)
  function linalg.vander(x, ...)
    local op = 'vander'
    check_tensor(x, op, 'x')
    local n = named('vander', { ... }, { 'N' })
    if x.dtype == torch.bool then
      error('linalg.' .. op .. ': supports floating point, complex, and integer tensors, but got torch.bool', 2)
    end
    if x:dim() == 0 then x = x:unsqueeze(-1) end
    n = n or x:size(-1)
    n = as_int(n)
    if math.type(n) ~= 'integer' or n <= 1 then
      error(string.format('linalg.%s: N must be greater than 1, got %s', op, tostring(n)), 2)
    end
    local shape = { table.unpack(x.shape) }
    shape[#shape + 1] = n - 1
    local powers = x:unsqueeze(-1):expand(shape):cumprod(-1)
    shape[#shape] = 1
    return torch.cat({ torch.ones(shape, { dtype = powers.dtype, device = x.device }), powers }, -1)
  end
end
