-- The transforms onto the simplex and onto Cholesky factors, as PyTorch 1.13 has them:
-- SoftmaxTransform (not bijective), StickBreakingTransform (bijective, one coordinate more),
-- LowerCholeskyTransform (matrices to lower triangles with a positive diagonal, not bijective) and
-- CorrCholeskyTransform (vectors of D (D - 1) / 2 reals to Cholesky factors of D x D correlation
-- matrices). Loaded by transforms.lua, which it extends.
local torch = require 'torch'
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'

return function(T)
  local Transform = T.Transform
  local name_of = T._name_of

  -- x with a column of ones before (side 'first') or after (side 'last') its last dimension
  local function pad_one(x, side)
    return torch.F.pad(x, side == 'first' and { 1, 0 } or { 0, 1 }, { value = 1 })
  end

  -- x without the last element of its last dimension
  local function drop_last(x) return x:narrow(-1, 1, x:size(-1) - 1) end

  local function same_class(cls) return function(a, b) return class.isinstance(a, cls) and class.isinstance(b, cls) end end

  -- shapes of at least `n` dimensions
  local function min_dims(t, method, shape, n)
    if type(shape) ~= 'table' or torch.is_tensor(shape) then
      U.raise('%s.%s: expected a shape (a table of sizes), got %s', name_of(t), method, type(shape))
    end
    if #shape < n then
      U.raise('%s.%s: too few dimensions on input (%d, expected at least %d)', name_of(t), method, #shape, n)
    end
  end

  -- ---- SoftmaxTransform ----

  local Softmax = Transform:extend('SoftmaxTransform')
  T.SoftmaxTransform = Softmax
  --- SoftmaxTransform(): y = exp(x) normalised over the last dimension; its inverse is log (one of
  --- the preimages)
  Softmax.domain, Softmax.codomain = C.real_vector, C.simplex
  Softmax.__eq = same_class(Softmax)
  function Softmax:_call(x)
    local probs = (x - x:max(-1, true)):exp()
    return probs / probs:sum(-1, true)
  end
  function Softmax:_inverse(y) return y:log() end
  function Softmax:forward_shape(shape)
    min_dims(self, 'forward_shape', shape, 1)
    return shape
  end
  function Softmax:inverse_shape(shape)
    min_dims(self, 'inverse_shape', shape, 1)
    return shape
  end

  -- ---- StickBreakingTransform ----

  local StickBreaking = Transform:extend('StickBreakingTransform')
  T.StickBreakingTransform = StickBreaking
  --- StickBreakingTransform(): K reals to the K + 1 coordinates of a point of the simplex, by
  --- breaking off the share sigmoid(x_i - log(K + 1 - i)) of what is left at step i
  StickBreaking.domain, StickBreaking.codomain, StickBreaking.bijective = C.real_vector, C.simplex, true
  StickBreaking.__eq = same_class(StickBreaking)

  -- log(K + 1 - i), i = 1..K, of v's dtype and device
  local function log_offset(v, k)
    return (k + 1 - torch.arange(1, k + 1, { dtype = v.dtype, device = v.device })):log()
  end

  -- v: a tensor of at least one dimension
  local function vectors(t, v)
    if not torch.is_tensor(v) then U.raise('%s: expected a tensor, got %s', name_of(t), type(v)) end
    if v:dim() < 1 then U.raise('%s: expected a vector or a batch of them, got a scalar', name_of(t)) end
    return v
  end

  function StickBreaking:_call(x)
    vectors(self, x)
    local f = U.finfo(x.dtype)
    local z = torch.sigmoid(x - log_offset(x, x:size(-1))):clamp(f.tiny, 1 - f.eps)
    local z_cumprod = (1 - z):cumprod(-1)
    return pad_one(z, 'last') * pad_one(z_cumprod, 'first')
  end
  function StickBreaking:_inverse(y)
    local y_crop = drop_last(vectors(self, y))
    -- the stick left, kept positive where y's last coordinate is about 0
    local sf = (1 - y_crop:cumsum(-1)):clamp(U.finfo(y.dtype).tiny)
    return y_crop:log() - sf:log() + log_offset(y, y_crop:size(-1))
  end
  function StickBreaking:log_abs_det_jacobian(x, y)
    x = vectors(self, x) - log_offset(x, x:size(-1))
    vectors(self, y)
    -- 1 - sigmoid(x) = exp(-x) sigmoid(x)
    return (-x + x:logsigmoid() + drop_last(y):log()):sum(-1)
  end
  function StickBreaking:forward_shape(shape)
    min_dims(self, 'forward_shape', shape, 1)
    local s = U.size(shape)
    s[#s] = s[#s] + 1
    return s
  end
  function StickBreaking:inverse_shape(shape)
    min_dims(self, 'inverse_shape', shape, 1)
    local s = U.size(shape)
    s[#s] = s[#s] - 1
    return s
  end

  -- ---- LowerCholeskyTransform ----

  local LowerCholesky = Transform:extend('LowerCholeskyTransform')
  T.LowerCholeskyTransform = LowerCholesky
  --- LowerCholeskyTransform(): the strict lower triangle of x, and the exp of its diagonal
  LowerCholesky.domain, LowerCholesky.codomain = C.independent(C.real, 2), C.lower_cholesky
  LowerCholesky.__eq = same_class(LowerCholesky)
  local function tril_map_diagonal(t, v, fn)
    if not torch.is_tensor(v) then U.raise('%s: expected a tensor, got %s', name_of(t), type(v)) end
    if v:dim() < 2 then U.raise('%s: expected a matrix or a batch of them, got shape %s', name_of(t), tostring(v.shape)) end
    return v:tril(-1) + torch.diag_embed(fn(v:diagonal(0, -2, -1)))
  end
  function LowerCholesky:_call(x) return tril_map_diagonal(self, x, torch.exp) end
  function LowerCholesky:_inverse(y) return tril_map_diagonal(self, y, torch.log) end

  -- ---- CorrCholeskyTransform ----

  -- the positions (1-based, row-major) of the entries of an n x n matrix on and below its diagonal
  -- `diag` (-1: the strict lower triangle), row by row as PyTorch's tril_matrix_to_vec takes them
  local function tril_positions(n, diag, device)
    local pos = {}
    for r = 1, n do
      for c = 1, math.min(n, r + diag) do pos[#pos + 1] = (r - 1) * n + c end
    end
    return torch.tensor(pos, { dtype = torch.int64, device = device })
  end

  -- the entries of the matrices on and below diagonal `diag`, as vectors
  local function tril_to_vec(m, diag)
    return m:flatten(-2):index_select(-1, tril_positions(m:size(-1), diag, m.device))
  end

  -- vectors of n (n - 1) / 2 entries to n x n matrices with them below the diagonal, row by row
  -- (zero elsewhere): each entry of the matrix is entry from[i] of the vector after a leading zero
  local function vec_to_strict_tril(v, n)
    local from, k = {}, 1
    for i = 1, n * n do from[i] = 1 end
    for r = 1, n do
      for c = 1, r - 1 do
        k = k + 1
        from[(r - 1) * n + c] = k
      end
    end
    local shape = U.slice(v.shape, 1, v:dim() - 1)
    shape[#shape + 1] = n
    shape[#shape + 1] = n
    local index = torch.tensor(from, { dtype = torch.int64, device = v.device })
    return torch.F.pad(v, { 1, 0 }):index_select(-1, index):reshape(shape)
  end

  -- D for a vector of D (D - 1) / 2 entries (or nil)
  local function corr_size(len)
    local d = math.floor((0.25 + 2 * len) ^ 0.5 + 0.5 + 0.5)
    if d * (d - 1) // 2 ~= len then return nil end
    return d
  end

  local CorrCholesky = Transform:extend('CorrCholeskyTransform')
  T.CorrCholeskyTransform = CorrCholesky
  --- CorrCholeskyTransform(): x of D (D - 1) / 2 reals, row by row the strict lower triangle, through
  --- tanh into (-1, 1), then each row by a signed stick-breaking to unit norm with a positive diagonal
  CorrCholesky.domain, CorrCholesky.codomain, CorrCholesky.bijective = C.real_vector, C.corr_cholesky, true
  function CorrCholesky:_call(x)
    vectors(self, x)
    local n = corr_size(x:size(-1))
    if n == nil then
      U.raise('CorrCholeskyTransform: the size of the last dimension is %d, which is not D (D - 1) / 2 for any D',
        x:size(-1))
    end
    local eps = U.finfo(x.dtype).eps
    local r = vec_to_strict_tril(x:tanh():clamp(-1 + eps, 1 - eps), n)
    -- y = sign(r) sqrt(z * prod(1 - z) of the row before) = r sqrt(prod(1 - r^2) before), 1 on the diagonal
    local z1m_cumprod_sqrt = (1 - r:pow(2)):sqrt():cumprod(-1)
    r = r + torch.eye(n, { dtype = r.dtype, device = r.device })
    return r * pad_one(drop_last(z1m_cumprod_sqrt), 'first')
  end
  local function square(t, v)
    if not torch.is_tensor(v) then U.raise('%s: expected a tensor, got %s', name_of(t), type(v)) end
    if v:dim() < 2 or v:size(-1) ~= v:size(-2) then
      U.raise('%s: expected square matrices, got shape %s', name_of(t), tostring(v.shape))
    end
  end
  function CorrCholesky:_inverse(y)
    square(self, y)
    local shifted = pad_one(drop_last(1 - (y * y):cumsum(-1)), 'first')
    local t = tril_to_vec(y, -1) / tril_to_vec(shifted, -1):sqrt()
    -- atanh
    return ((1 + t) / (1 - t)):log() / 2
  end
  --- log |det J| of x against the strict lower triangle of y (the Jacobian between the two spaces
  --- of D (D - 1) / 2 coordinates)
  function CorrCholesky:log_abs_det_jacobian(x, y)
    square(self, y)
    local y1m_cumsum = 1 - (y * y):cumsum(-1)
    -- below diagonal -1, so that no shift to the right is needed
    local stick_breaking_logdet = 0.5 * tril_to_vec(y1m_cumsum, -2):log():sum(-1)
    local tanh_logdet = -2 * (x + torch.softplus(-2 * x) - math.log(2)):sum(-1)
    return stick_breaking_logdet + tanh_logdet
  end
  function CorrCholesky:forward_shape(shape)
    min_dims(self, 'forward_shape', shape, 1)
    local n = corr_size(shape[#shape])
    if n == nil then
      U.raise('CorrCholeskyTransform.forward_shape: %d is not D (D - 1) / 2 for any D', shape[#shape])
    end
    local s = U.slice(shape, 1, #shape - 1)
    s[#s + 1] = n
    s[#s + 1] = n
    return s
  end
  function CorrCholesky:inverse_shape(shape)
    min_dims(self, 'inverse_shape', shape, 2)
    local n = shape[#shape]
    if shape[#shape - 1] ~= n then
      U.raise('CorrCholeskyTransform.inverse_shape: expected square matrices, got shape %s', tostring(U.size(shape)))
    end
    local s = U.slice(shape, 1, #shape - 2)
    s[#s + 1] = n * (n - 1) // 2
    return s
  end
end
