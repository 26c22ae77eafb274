-- Randomized low-rank decompositions, PyTorch's torch/_lowrank.py: torch.svd_lowrank and
-- torch.pca_lowrank (Halko, Martinsson and Tropp 2009, algorithms 4.4 and 5.1). The random test
-- matrix is drawn from the default generator as PyTorch draws it, so the same seed gives
-- PyTorch's results. Batched over leading dims; float32 and float64.
local torch = require 'torch'
local args = require('torch.options').args
local check_tensor = require('torch.composite').check_tensor
local as_int = require('torch.composite').as_int

local function mT(t) return t:transpose(-2, -1) end

-- Q with q orthonormal columns such that Q Q^T (A - M) approximates A - M (M nil: 0), by niter
-- rounds of subspace iteration from A R, R an n x q draw of randn
local function approximate_basis(A, q, niter, M)
  local n = A:size(-1)
  local R = torch.randn(n, q, { dtype = A.dtype, device = A.device })
  local function times(X, Y)
    local r = torch.matmul(X, Y)
    if M ~= nil then r = r - torch.matmul(M, Y) end
    return r
  end
  local function times_t(X, Y)
    local r = torch.matmul(mT(X), Y)
    if M ~= nil then r = r - torch.matmul(mT(M), Y) end
    return r
  end
  local Q = torch.linalg.qr(times(A, R))
  for _ = 1, niter do
    Q = torch.linalg.qr(times_t(A, Q))
    Q = torch.linalg.qr(times(A, Q))
  end
  return Q
end

-- U, S, V with A - M ~ U diag(S) V^T (PyTorch's _svd_lowrank)
local function svd_lowrank(A, q, niter, M)
  local m, n = A:size(-2), A:size(-1)
  local U, S, V
  if m < n or n > q then
    -- the approximation of A^T: keeps B small (m < n) or V narrow (n > q)
    local Q = approximate_basis(mT(A), q, niter, M and mT(M))
    local B_t = torch.matmul(A, Q)
    if M ~= nil then B_t = B_t - torch.matmul(M, Q) end
    local Vh
    U, S, Vh = torch.linalg.svd(B_t, { full_matrices = false })
    V = torch.matmul(Q, mT(Vh))
  else
    local Q = approximate_basis(A, q, niter, M)
    local B = torch.matmul(mT(A), Q)
    if M ~= nil then B = B - torch.matmul(mT(M), Q) end
    local Vh
    U, S, Vh = torch.linalg.svd(mT(B), { full_matrices = false })
    V = mT(Vh)
    U = torch.matmul(Q, U)
  end
  return U, S, V
end

local function check_input(A, op)
  check_tensor(A, op, 'A')
  if A:dim() < 2 then error(string.format('%s: A must have at least 2 dimensions, got %d', op, A:dim()), 3) end
  if A.dtype ~= torch.float32 and A.dtype ~= torch.float64 then
    error(op .. ': expected a float32 or float64 matrix, got ' .. A.dtype.name, 3)
  end
  return A:size(-2), A:size(-1)
end

local function check_q_niter(op, q, niter, m, n)
  q = as_int(q)
  if math.type(q) ~= 'integer' or q < 0 or q > math.min(m, n) then
    error(string.format('%s: q(=%s) must be non-negative integer and not greater than min(m, n)=%d', op, tostring(q),
      math.min(m, n)), 3)
  end
  niter = as_int(niter)
  if math.type(niter) ~= 'integer' or niter < 0 then
    error(string.format('%s: niter(=%s) must be non-negative integer', op, tostring(niter)), 3)
  end
  return q, niter
end

--- torch.svd_lowrank(A, q, niter = 2, M) or torch.svd_lowrank(A, {q, niter, M}) -> U, S, V: a
--- nearly optimal rank-q approximation U diag(S) V^T of A (or of A - M, M broadcasting with A) for
--- A of shape (*, m, n): U (*, m, q), S (*, q), V (*, n, q). q defaults to min(6, m, n) (PyTorch's
--- 6 fails an assertion on smaller matrices). Random: seed the default generator to repeat it.
function torch.svd_lowrank(A, ...)
  local op = 'svd_lowrank'
  local m, n = check_input(A, op)
  local q, niter, M = args(op, { ... }, { 'q', 'niter', 'M' }, { math.min(6, m, n), 2 })
  q, niter = check_q_niter(op, q, niter, m, n)
  if M ~= nil then
    check_tensor(M, op, 'M')
    if M.dtype ~= A.dtype then
      error(string.format('%s: M must have the dtype of A (%s), got %s', op, A.dtype.name, M.dtype.name), 2)
    end
    if require('torch.composite').broadcast_shape({ A.shape, M.shape }, op) ~= A.shape then
      error(string.format('%s: M of shape %s must broadcast to the shape of A, %s', op, tostring(M.shape),
        tostring(A.shape)), 2)
    end
    M = M:expand(A.shape) -- (*, 1, n) works in every branch (PyTorch's fails in some)
  end
  return svd_lowrank(A, q, niter, M)
end

--- torch.pca_lowrank(A, {q = min(6, m, n), center = true, niter = 2}) -> U, S, V: principal
--- components of the m samples (rows) of A (*, m, n): svd_lowrank of A with its column means
--- subtracted (center false: A as it is). V's columns are the principal directions; S^2 / (m - 1)
--- the variances along them.
function torch.pca_lowrank(A, ...)
  local op = 'pca_lowrank'
  local m, n = check_input(A, op)
  local q, center, niter = args(op, { ... }, { 'q', 'center', 'niter' }, { math.min(6, m, n), true, 2 })
  q, niter = check_q_niter(op, q, niter, m, n)
  if type(center) ~= 'boolean' then error(op .. ': center must be a boolean, got ' .. type(center), 2) end
  if center then A = A - A:mean(-2, true) end
  return svd_lowrank(A, q, niter, nil)
end
