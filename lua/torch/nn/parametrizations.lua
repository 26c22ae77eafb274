-- nn.utils.parametrizations, as PyTorch 1.13's: orthogonal(module, name, {orthogonal_map,
-- use_trivialization}) and spectral_norm(module, name, {n_power_iterations, eps, dim}), both
-- registered with nn.utils.parametrize (the state dict holds parametrizations.weight.original and
-- the parametrization's buffers under parametrizations.weight.1).
--
-- orthogonal: the weight (n x k, or k x n, taken transposed) is mapped to a matrix with orthonormal
-- columns. 'matrix_exp' and 'cayley' take X.tril(), embed it in n x n, A = X - X^T, and use exp(A)
-- (scaling and squaring of a Taylor polynomial, composed here from matrix products) or the Cayley
-- map (I - A/2)^{-1} (I + A/2), keeping the first k columns; 'householder' multiplies the
-- reflections I - tau_i v_i v_i^T, v_i column i of X.tril(-1) with a 1 added on the diagonal,
-- tau_i = 2 / |v_i|^2, and the columns' signs are those of X's diagonal. With use_trivialization (the default) a buffer `base` holds an orthogonal
-- matrix fixed at registration (or assignment) and the map's result is multiplied by it; the
-- original then starts as -I, so that the weight starts as the (orthogonalised) weight it was.
-- Without trivialization, 'householder' takes an assigned matrix to the reflectors of its QR
-- (torch.geqrf); 'matrix_exp' and 'cayley' cannot be assigned to. Only 2-D weights are accepted.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local parametrize = require 'torch.nn.parametrize'
local sn = require 'torch.nn.spectral_norm'
local wn = require 'torch.nn.weight_norm'
local as_int = require('torch.composite').as_int

local M = {}

local eps_of = { [torch.float64] = 2.220446049250313e-16, [torch.float32] = 1.1920928955078125e-07,
  [torch.float16] = 0.0009765625, [torch.bfloat16] = 0.0078125 }

-- does the tall Q have orthonormal columns (within 10 n eps)?
local function is_orthogonal(Q)
  local n, k = Q:size(1), Q:size(2)
  local id = torch.eye(k, { dtype = Q.dtype, device = Q.device })
  return torch.allclose(torch.matmul(Q:t(), Q), id, { rtol = 1e-5, atol = 10 * n * eps_of[Q.dtype] })
end

-- the Q of A = QR (A tall) with diag(R) >= 0
local function make_orthogonal(A)
  local Q, R = torch.linalg.qr(A)
  return Q * R:diagonal():sign():unsqueeze(1)
end

local maps = { matrix_exp = true, cayley = true, householder = true }

local Orthogonal = Module:extend('_Orthogonal')
M._Orthogonal = Orthogonal

function Orthogonal:init(weight, orthogonal_map, use_trivialization)
  self.shape = weight.shape
  self.orthogonal_map = orthogonal_map
  self.use_trivialization = use_trivialization
  if use_trivialization then self:register_buffer('base', nil) end
end

function Orthogonal:forward(X)
  local n, k = X:size(1), X:size(2)
  local transposed = n < k
  if transposed then X, n, k = X:t(), k, n end
  local Q
  if self.orthogonal_map == 'householder' then
    local A = X:tril(-1)
    local tau = 2 / (1 + (A * A):sum(1))
    Q = torch.linalg.householder_product(A, tau)
    -- the signs of X's diagonal (-1 or 1), not differentiated
    Q = Q * X:diagonal():detach():trunc():unsqueeze(1)
  else
    X = X:tril()
    if n ~= k then X = torch.cat({ X, X:new_zeros(n, n - k) }, 2) end
    local A = X - X:t()
    if self.orthogonal_map == 'matrix_exp' then
      Q = torch.linalg.matrix_exp(A)
    else
      local I = torch.eye(n, { dtype = A.dtype, device = A.device })
      Q = torch.linalg.solve(I - A * 0.5, I + A * 0.5)
    end
    if n ~= k then Q = Q:narrow(2, 1, k) end
  end
  if self.use_trivialization then Q = torch.matmul(self.base, Q) end
  if transposed then Q = Q:t() end
  return Q
end

function Orthogonal:right_inverse(Q)
  return torch.no_grad(function()
    if Q.shape ~= self.shape then
      error(string.format('orthogonal: Expected a matrix of shape %s. Got a tensor of shape %s.',
        tostring(self.shape), tostring(Q.shape)), 0)
    end
    local Q_init = Q
    local n, k = Q:size(1), Q:size(2)
    local transposed = n < k
    if transposed then Q, n, k = Q:t(), k, n end
    if not self.use_trivialization then
      if self.orthogonal_map ~= 'householder' then
        parametrize.not_implemented('It is not possible to assign to the matrix exponential or the Cayley '
          .. 'parametrizations when use_trivialization=False.')
      end
      -- Q = QR's Q with diag(R) > 0: geqrf's reflectors, the diagonal the signs of R's (flipped
      -- where tau is 0: LAPACK's exact zero for no reflection, where forward's tau = 2 reflects)
      local A, tau = torch.geqrf(Q)
      local signs = A:diagonal():sign()
      signs = torch.where(tau:eq(0), -signs, signs)
      local diag = torch.eye(n, k, { dtype = torch.bool, device = A.device })
      A = torch.where(diag, signs:unsqueeze(1):expand(n, k), A)
      return transposed and A:t() or A
    end
    if n == k then
      Q = is_orthogonal(Q) and Q:clone() or make_orthogonal(Q)
    else
      local N = torch.randn(n, n - k, { dtype = Q.dtype, device = Q.device })
      Q = make_orthogonal(torch.cat({ Q, N }, 2))
    end
    self.base = Q
    -- -I: householder(-I) and exp(0) are the identity, so the weight is base's first columns
    return -torch.eye(Q_init:size(1), Q_init:size(2), { dtype = Q_init.dtype, device = Q_init.device })
  end)
end

-- (module, name, opts) or (module, opts with name): the name and the options, checked
local function args_of(op, module, name, o, allowed, level)
  if not Module.is_module(module) then error(string.format('%s: expected a module, got %s', op, type(module)), level + 1) end
  if type(name) == 'table' then name, o = name.name, name end
  o = o or {}
  for key in pairs(o) do
    if key ~= 'name' and not allowed[key] then
      error(string.format("%s: unknown option '%s'", op, tostring(key)), level + 1)
    end
  end
  name = name or 'weight'
  local weight = module[name]
  if not torch.is_tensor(weight) then
    error(string.format("%s: Module '%s' has no parameter or buffer with name '%s'", op, module:_get_name(),
      tostring(name)), level + 1)
  end
  return name, o, weight
end

-- orthogonal(module, name = 'weight', {orthogonal_map, use_trivialization = true}) -> module:
-- orthogonal_map defaults to 'matrix_exp' for a square weight, 'householder' otherwise
function M.orthogonal(module, name, o)
  local op = 'orthogonal'
  local weight
  name, o, weight = args_of(op, module, name, o, { orthogonal_map = true, use_trivialization = true }, 2)
  if weight:dim() ~= 2 then
    error(string.format('%s: Expected a matrix. Got a tensor of %d dimensions (batches of matrices are not '
      .. 'supported in lutorch).', op, weight:dim()), 2)
  end
  local map = o.orthogonal_map
  if map == nil then map = weight:size(1) == weight:size(2) and 'matrix_exp' or 'householder' end
  if not maps[map] then
    error(string.format('%s: orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: %s', op,
      tostring(map)), 2)
  end
  local triv = o.use_trivialization ~= false
  parametrize.register_parametrization(module, name, Orthogonal(weight, map, triv), { unsafe = true })
  return module
end

-- ---- spectral_norm, the parametrization form of torch.nn.utils.spectral_norm ----
local SpectralNorm = Module:extend('_SpectralNorm')
M._SpectralNorm = SpectralNorm

function SpectralNorm:init(weight, n_power_iterations, dim, eps)
  self.dim, self.eps = dim, eps
  if weight:dim() > 1 then
    self.n_power_iterations = n_power_iterations
    local mat = sn._weight_matrix(weight, dim)
    local u, v = sn._random_vectors(mat, eps)
    self:register_buffer('_u', u)
    self:register_buffer('_v', v)
    -- u and v start from 15 iterations of the power method, as PyTorch's
    sn._power_iteration(mat:detach(), u, v, 15, eps, false)
  end
end

function SpectralNorm:forward(weight)
  if weight:dim() == 1 then return F.normalize(weight, { dim = 1, eps = self.eps }) end
  local mat = sn._weight_matrix(weight, self.dim)
  if self.training then sn._power_iteration(mat:detach(), self._u, self._v, self.n_power_iterations, self.eps, false) end
  return sn._normalized(weight, mat, self._u, self._v)
end

function SpectralNorm:right_inverse(value) return value end

-- spectral_norm(module, name = 'weight', {n_power_iterations = 1, eps = 1e-12, dim}) -> module: dim
-- is 1-based, by default 1 (2 for the ConvTranspose layers)
function M.spectral_norm(module, name, o)
  local op = 'parametrizations.spectral_norm'
  local weight
  name, o, weight = args_of(op, module, name, o, { n_power_iterations = true, eps = true, dim = true }, 2)
  local n = o.n_power_iterations or 1
  n = as_int(n)
  if math.type(n) ~= 'integer' or n <= 0 then
    error(op .. ': Expected n_power_iterations to be positive, but got n_power_iterations=' .. tostring(n), 2)
  end
  local dim = o.dim
  if dim == nil then dim = module:_get_name():match('ConvTranspose%dd$') and 2 or 1 end
  dim = wn._resolve_dim(dim, weight:dim(), op, 2)
  parametrize.register_parametrization(module, name, SpectralNorm(weight, n, dim, o.eps or 1e-12))
  return module
end

return M
