-- torch.nn.init: PyTorch's initialisers. Each fills its tensor in place under no_grad and returns it.
-- (This file is not called init.lua because that name is the torch.nn module itself.)
local torch = require 'torch'
local init = {}

local function check(t, op)
  if not torch.is_tensor(t) then error(string.format('%s: expected a tensor, got %s', op, type(t)), 3) end
end

local function no_grad(fn, ...) return torch.no_grad(fn, ...) end

-- the recommended gain for a nonlinearity (param: leaky_relu's negative slope)
function init.calculate_gain(nonlinearity, param)
  local linear = { linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
    conv_transpose2d = true, conv_transpose3d = true }
  if linear[nonlinearity] or nonlinearity == 'sigmoid' then return 1 end
  if nonlinearity == 'tanh' then return 5.0 / 3 end
  if nonlinearity == 'relu' then return math.sqrt(2.0) end
  if nonlinearity == 'leaky_relu' then
    local slope
    if param == nil then
      slope = 0.01
    elseif type(param) == 'number' and type(param) ~= 'boolean' then
      slope = param
    else
      error('calculate_gain: negative_slope ' .. tostring(param) .. ' not a valid number', 2)
    end
    return math.sqrt(2.0 / (1 + slope * slope))
  end
  if nonlinearity == 'selu' then return 3.0 / 4 end
  error('calculate_gain: unsupported nonlinearity ' .. tostring(nonlinearity), 2)
end

-- (fan_in, fan_out) of a weight: dim 2 times the receptive field, dim 1 times it
function init._calculate_fan_in_and_fan_out(t)
  local d = t:dim()
  if d < 2 then
    error('init: fan in and fan out can not be computed for tensor with fewer than 2 dimensions', 3)
  end
  local receptive = 1
  for i = 3, d do receptive = receptive * t:size(i) end
  return t:size(2) * receptive, t:size(1) * receptive
end

local function fan(t, mode, op)
  mode = mode or 'fan_in'
  if mode ~= 'fan_in' and mode ~= 'fan_out' then
    error(string.format("%s: mode %s not supported, please use one of fan_in, fan_out", op, tostring(mode)), 3)
  end
  local fin, fout = init._calculate_fan_in_and_fan_out(t)
  return mode == 'fan_in' and fin or fout
end

function init.uniform_(t, a, b)
  check(t, 'uniform_')
  if type(a) == 'table' then a, b = a.a, a.b end
  return no_grad(function() return t:uniform_(a or 0, b or 1) end)
end

function init.normal_(t, mean, std)
  check(t, 'normal_')
  if type(mean) == 'table' then mean, std = mean.mean, mean.std end
  return no_grad(function() return t:normal_(mean or 0, std or 1) end)
end

function init.constant_(t, val)
  check(t, 'constant_')
  if type(val) ~= 'number' and type(val) ~= 'boolean' then error('constant_: expected a number, got ' .. type(val), 2) end
  return no_grad(function() return t:fill_(val) end)
end

function init.ones_(t) check(t, 'ones_'); return no_grad(function() return t:fill_(1) end) end
function init.zeros_(t) check(t, 'zeros_'); return no_grad(function() return t:zero_() end) end

function init.eye_(t)
  check(t, 'eye_')
  if t:dim() ~= 2 then error('eye_: only tensors with 2 dimensions are supported, got ' .. t:dim(), 2) end
  return no_grad(function()
    t:copy_(torch.eye(t:size(1), t:size(2), { dtype = t.dtype, device = t.device }))
    return t
  end)
end

-- dirac_(t, groups = 1): the identity of a convolution with 3 to 5 dimensions
function init.dirac_(t, groups)
  check(t, 'dirac_')
  if type(groups) == 'table' then groups = groups.groups end
  groups = groups or 1
  local d = t:dim()
  if d < 3 or d > 5 then error('dirac_: only tensors with 3, 4, or 5 dimensions are supported', 2) end
  if t:size(1) % groups ~= 0 then error('dirac_: dim 1 is not divisible by groups', 2) end
  local out_per = t:size(1) // groups
  local min_dim = math.min(out_per, t:size(2))
  return no_grad(function()
    t:zero_()
    for g = 0, groups - 1 do
      for k = 1, min_dim do
        local at = { g * out_per + k, k }
        for i = 3, d do at[i] = t:size(i) // 2 + 1 end
        t[at] = 1
      end
    end
    return t
  end)
end

-- gain (and the tensor) positional, or an options table
local function gain_arg(g)
  if type(g) == 'table' then return g.gain or 1 end
  return g or 1
end

function init.xavier_uniform_(t, gain)
  check(t, 'xavier_uniform_')
  local fin, fout = init._calculate_fan_in_and_fan_out(t)
  local std = gain_arg(gain) * math.sqrt(2.0 / (fin + fout))
  local a = math.sqrt(3.0) * std
  return no_grad(function() return t:uniform_(-a, a) end)
end

function init.xavier_normal_(t, gain)
  check(t, 'xavier_normal_')
  local fin, fout = init._calculate_fan_in_and_fan_out(t)
  local std = gain_arg(gain) * math.sqrt(2.0 / (fin + fout))
  return no_grad(function() return t:normal_(0, std) end)
end

-- (t, a = 0, mode = 'fan_in', nonlinearity = 'leaky_relu') positional, or (t, {a, mode, nonlinearity})
local function kaiming_args(a, mode, nonlinearity)
  if type(a) == 'table' then return a.a or 0, a.mode or 'fan_in', a.nonlinearity or 'leaky_relu' end
  return a or 0, mode or 'fan_in', nonlinearity or 'leaky_relu'
end

local function has_zero_size(t)
  for i = 1, t:dim() do if t:size(i) == 0 then return true end end
  return false
end

function init.kaiming_uniform_(t, ...)
  check(t, 'kaiming_uniform_')
  local a, mode, nl = kaiming_args(...)
  if has_zero_size(t) then return t end
  local std = init.calculate_gain(nl, a) / math.sqrt(fan(t, mode, 'kaiming_uniform_'))
  local bound = math.sqrt(3.0) * std
  return no_grad(function() return t:uniform_(-bound, bound) end)
end

function init.kaiming_normal_(t, ...)
  check(t, 'kaiming_normal_')
  local a, mode, nl = kaiming_args(...)
  if has_zero_size(t) then return t end
  local std = init.calculate_gain(nl, a) / math.sqrt(fan(t, mode, 'kaiming_normal_'))
  return no_grad(function() return t:normal_(0, std) end)
end

-- trunc_normal_(t, mean = 0, std = 1, a = -2, b = 2): normal draws redrawn until they fall in [a, b]
-- (the exact truncated distribution, where PyTorch inverts the CDF)
function init.trunc_normal_(t, mean, std, a, b)
  check(t, 'trunc_normal_')
  if type(mean) == 'table' then mean, std, a, b = mean.mean, mean.std, mean.a, mean.b end
  mean, std, a, b = mean or 0, std or 1, a or -2, b or 2
  if a >= b then error(string.format('trunc_normal_: a (%g) must be less than b (%g)', a, b), 2) end
  return no_grad(function()
    t:normal_(mean, std)
    for _ = 1, 1000 do
      local bad = t:lt(a):logical_or(t:gt(b))
      if not bad:any():item() then return t end
      local fresh = torch.empty_like(t):normal_(mean, std)
      t:copy_(torch.where(bad, fresh, t))
    end
    -- only an interval far in a tail gets here; clamping keeps the result inside it
    t:clamp_(a, b)
    return t
  end)
end

-- orthogonal_(t, gain = 1): rows (or columns) orthonormal: PyTorch's recipe, Q of the QR of a
-- normal_ draw of t's dtype (transposed when wide), with the signs of R's diagonal (so the same
-- seed gives PyTorch's values); by Gram-Schmidt in float64 when the BLAS has no LAPACK
function init.orthogonal_(t, gain)
  check(t, 'orthogonal_')
  if t:dim() < 2 then error('orthogonal_: only tensors with 2 or more dimensions are supported', 2) end
  gain = gain_arg(gain)
  if t:numel() == 0 then return t end
  local rows = t:size(1)
  local cols = t:numel() // rows
  return no_grad(function()
    local transposed = rows < cols
    local flat = torch.empty(rows, cols, { dtype = t.dtype, device = t.device }):normal_(0, 1)
    if transposed then flat = flat:t() end
    local q
    if torch._lapack_available() then
      local a = flat:to('cpu')
      if a.dtype ~= torch.float64 then a = a:float() end
      local r
      q, r = torch.linalg.qr(a)
      q = q * r:diagonal():sign()
    else
      -- q: orthonormal columns, built column by column (R's diagonal, the norms, is positive)
      local a = flat:double():cpu()
      local n, m = a:size(1), a:size(2)
      q = torch.zeros(n, m, { dtype = torch.float64 })
      for j = 1, m do
        local v = a:select(2, j):clone()
        for _ = 1, 2 do -- twice, for numerical orthogonality
          for i = 1, j - 1 do
            local qi = q:select(2, i)
            v = v - qi * (qi:dot(v))
          end
        end
        q:select(2, j):copy_(v / v:norm():item())
      end
    end
    if transposed then q = q:t() end
    t:copy_((q * gain):reshape(t.shape))
    return t
  end)
end

-- sparse_(t, sparsity, std = 0.01): a 2-D tensor drawn from N(0, std^2), then in each column
-- ceil(sparsity * rows) elements (rows chosen by a random permutation) set to 0, as PyTorch's
function init.sparse_(t, sparsity, std)
  check(t, 'sparse_')
  if type(sparsity) == 'table' then sparsity, std = sparsity.sparsity, sparsity.std end
  if t:dim() ~= 2 then error('sparse_: Only tensors with 2 dimensions are supported', 2) end
  if type(sparsity) ~= 'number' then error('sparse_: sparsity must be a number, got ' .. type(sparsity), 2) end
  std = std or 0.01
  local rows, cols = t:size(1), t:size(2)
  local num_zeros = math.ceil(sparsity * rows)
  return no_grad(function()
    t:normal_(0, std)
    if num_zeros <= 0 then return t end
    for col = 1, cols do
      local zero_rows = torch.randperm(rows):narrow(1, 1, math.min(num_zeros, rows))
      t:select(2, col):index_fill_(1, zero_rows:to(t.device), 0)
    end
    return t
  end)
end

return init
