-- Helpers shared by the distributions: argument lists with a trailing options table, PyTorch's
-- broadcast_all, shapes as torch.Size, the limits of the floating dtypes (torch.finfo's eps, tiny
-- and max), probs/logits conversions, and errors reported at the user's line.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

local U = {}

U.euler_constant = 0.57721566490153286060

-- ---- errors ----

--- U.raise(fmt, ...): a Lua error with string.format(fmt, ...), at the user's call into the
--- library (a constructor or a method): the place the library's `error` gives
function U.raise(fmt, ...)
  error(select('#', ...) > 0 and string.format(fmt, ...) or fmt)
end

-- ---- classes with properties ----

--- U.property_index(self, k): an __index for classes with property getters: for each class from
--- the instance's up (the derived first), its `properties` getters, then its other fields
function U.property_index(self, k)
  local cls = getmetatable(self)
  while cls ~= nil do
    local props = rawget(cls, 'properties')
    local get = props and props[k]
    if get ~= nil then return get(self) end
    local v = rawget(cls, k)
    if v ~= nil then return v end
    cls = rawget(cls, 'super')
  end
  return nil
end

-- ---- arguments ----

-- an options table: a plain Lua table (no metatable, no array part)
local function is_options(v)
  return type(v) == 'table' and getmetatable(v) == nil and rawlen(v) == 0
end

--- U.args(op, names, ...) -> a table name -> value: PyTorch's positional arguments in the order
--- of `names`, then at most one options table holding any of them by name (its keyword
--- arguments): Normal(0, 1, {validate_args = false}), Bernoulli{logits = l}
function U.args(op, names, ...)
  local n = select('#', ...)
  local given = { ... }
  local out = {}
  for i = 1, n do
    local v = given[i]
    if is_options(v) then
      for j = i + 1, n do
        if given[j] ~= nil then U.raise('%s: the options table must be the last argument', op) end
      end
      for k, w in pairs(v) do
        local known = false
        for _, name in ipairs(names) do
          if k == name then known = true; break end
        end
        if not known then
          U.raise("%s: unknown option '%s' (its options are %s)", op, tostring(k), table.concat(names, ', '))
        end
        if out[k] ~= nil then U.raise("%s: '%s' is given twice", op, k) end
        out[k] = w
      end
      return out
    end
    if i > #names then U.raise('%s: expected at most %d arguments, got %d', op, #names, n) end
    out[names[i]] = v
  end
  return out
end

--- U.check_flag(op, name, v): v, which must be nil or a boolean
function U.check_flag(op, name, v)
  if v ~= nil and type(v) ~= 'boolean' then
    U.raise('%s: %s must be true, false or nil, got %s', op, name, tostring(v))
  end
  return v
end

--- U.tensor_arg(op, name, v, min_dim): v must be a tensor (of at least min_dim dimensions)
function U.tensor_arg(op, name, v, min_dim)
  if not torch.is_tensor(v) then
    U.raise('%s: %s must be a tensor, got %s', op, name, type(v))
  end
  if min_dim and v:dim() < min_dim then
    U.raise('%s: %s must be at least %s-dimensional, got a tensor of shape %s', op, name,
      min_dim == 1 and 'one' or 'two', tostring(v.shape))
  end
  return v
end

--- U.broadcast_all(op, names, ...) -> the values as tensors broadcast to one shape: numbers become
--- tensors of the first tensor's dtype and device (the default dtype when all are numbers), as in
--- PyTorch's broadcast_all
function U.broadcast_all(op, names, ...)
  local vals = table.pack(...)
  local proto
  for i = 1, vals.n do
    local v = vals[i]
    if torch.is_tensor(v) then
      proto = proto or v
    elseif type(v) ~= 'number' then
      U.raise('%s: %s must be a number or a tensor, got %s', op, names[i], type(v))
    end
  end
  local opts = proto and { dtype = proto.dtype, device = proto.device } or { dtype = torch.get_default_dtype() }
  local ts = {}
  for i = 1, vals.n do
    ts[i] = torch.is_tensor(vals[i]) and vals[i] or torch.tensor(vals[i], opts)
  end
  if vals.n == 1 then return ts[1] end
  local ok, res = pcall(torch.broadcast_tensors, table.unpack(ts, 1, vals.n))
  if not ok then
    local shapes = {}
    for i = 1, vals.n do shapes[i] = names[i] .. ' ' .. tostring(ts[i].shape) end
    U.raise('%s: the parameters do not broadcast to one shape (%s)', op, table.concat(shapes, ', '))
  end
  return table.unpack(res, 1, vals.n)
end

-- ---- shapes ----

--- U.size(t): a torch.Size holding a copy of the sizes in t
function U.size(t)
  local s = {}
  for i = 1, #t do s[i] = t[i] end
  return setmetatable(s, torch.Size)
end

--- U.cat(...): the torch.Size of the given shapes one after the other
function U.cat(...)
  local s = {}
  for i = 1, select('#', ...) do
    local t = select(i, ...)
    for j = 1, #t do s[#s + 1] = t[j] end
  end
  return setmetatable(s, torch.Size)
end

--- U.slice(t, i, j): the torch.Size of t[i..j] (j defaults to #t; empty when j < i)
function U.slice(t, i, j)
  local s = {}
  for k = i, j or #t do s[#s + 1] = t[k] end
  return setmetatable(s, torch.Size)
end

--- U.sample_shape(op, s, ...): a sample shape given as nothing, sizes, a table or a torch.Size
function U.sample_shape(op, s, ...)
  if s == nil then return setmetatable({}, torch.Size) end
  if type(s) == 'number' then s = { s, ... } end
  if type(s) ~= 'table' or torch.is_tensor(s) then
    U.raise('%s: sample_shape must be sizes or a table of sizes, got %s', op, type(s))
  end
  s = { table.unpack(s) }
  for i = 1, #s do
    s[i] = as_int(s[i])
    if math.type(s[i]) ~= 'integer' or s[i] < 0 then
      U.raise('%s: sample_shape must hold non-negative integers, got %s', op, tostring(s[i]))
    end
  end
  return U.size(s)
end

--- U.count(op, what, n): n, which must be a non-negative integer
function U.count(op, what, n)
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 0 then
    U.raise('%s: %s must be a non-negative integer, got %s', op, what, tostring(n))
  end
  return n
end

--- U.dim_arg(op, d): a dimension argument (1 when nil): a non-zero integer, 1-based, negative ones
--- counting from the end
function U.dim_arg(op, d)
  d = as_int(d == nil and 1 or d)
  if math.type(d) ~= 'integer' or d == 0 then U.raise('%s: dim must be a non-zero integer, got %s', op, tostring(d)) end
  return d
end

--- U.slice_dim(op, dim, x, n, what): the positive index of dimension `dim` of the tensor x (named
--- `what` in errors), whose size there must be n
function U.slice_dim(op, dim, x, n, what)
  if not torch.is_tensor(x) then U.raise('%s: expected the %s to be a tensor, got %s', op, what, type(x)) end
  local nd = x:dim()
  if dim < -nd or dim > nd then U.raise('%s: dim %d is out of range for the %s (of %d dimensions)', op, dim, what, nd) end
  local d = dim < 0 and dim + nd + 1 or dim
  if x:size(d) ~= n then U.raise('%s: expected the %s to have size %d at dimension %d, got %d', op, what, n, dim, x:size(d)) end
  return d
end

--- a Python tuple as PyTorch's messages print shapes: (3,), (2, 3), ()
function U.tuple(shape)
  local parts = {}
  for i = 1, #shape do parts[i] = tostring(shape[i]) end
  if #parts == 1 then return '(' .. parts[1] .. ',)' end
  return '(' .. table.concat(parts, ', ') .. ')'
end

--- U.sum_rightmost(x, n): x summed over its n rightmost dimensions
function U.sum_rightmost(x, n)
  if n == 0 then return x end
  local shape = U.slice(x.shape, 1, x:dim() - n)
  shape[#shape + 1] = -1
  return x:reshape(shape):sum(-1)
end

--- U.expand_fields(from, to, names, shape): to[name] = from's tensor `name` expanded to shape +
--- its own event dimensions (extra), for each name that `from` holds itself (lazy properties not
--- yet computed are skipped); extra[name] is the number of rightmost dimensions kept
function U.expand_fields(from, to, names, shape, extra)
  for _, name in ipairs(names) do
    local v = rawget(from, name)
    if v ~= nil then
      local keep = extra and extra[name] or 0
      to[name] = v:expand(U.cat(shape, U.slice(v.shape, v:dim() - keep + 1)))
    end
  end
end

-- ---- folded distributions ----

--- U.folded_log_prob(d, value), U.folded_cdf(d, value), U.folded_icdf(d, p): the methods of |X|
--- for X ~ d.base_dist, a distribution symmetric about 0 (HalfNormal, HalfCauchy)
function U.folded_log_prob(d, value)
  if d._validate_args then d:_validate_sample(value) end
  local lp = d.base_dist:log_prob(value) + math.log(2)
  return torch.where(value:ge(0), lp, -math.huge)
end
function U.folded_cdf(d, value)
  if d._validate_args then d:_validate_sample(value, 'cdf') end
  return 2 * d.base_dist:cdf(value) - 1
end
function U.folded_icdf(d, p) return d.base_dist:icdf((p + 1) / 2) end

-- ---- the relaxed distributions ----

--- U.relaxed_base(op, Base, a): the base distribution of RelaxedBernoulli or
--- RelaxedOneHotCategorical, Base(temperature, probs, logits) from the arguments a, validated
--- as the relaxed distribution asked (its errors name op)
function U.relaxed_base(op, Base, a)
  if (a.probs == nil) == (a.logits == nil) then
    U.raise('%s: either probs or logits must be specified, but not both', op)
  end
  return Base(a.temperature, { probs = a.probs, logits = a.logits, validate_args = a.validate_args })
end

--- U.relaxed_properties(cls): temperature, probs, logits and param_shape of a relaxed
--- distribution, read from its base
function U.relaxed_properties(cls)
  local props = cls.properties
  for _, name in ipairs { 'temperature', 'probs', 'logits', 'param_shape' } do
    props[name] = function(d) return d.base_dist[name] end
  end
end

-- ---- multivariate gamma ----

-- x[..., None] - (0, 1/2, ..., (p - 1)/2)
local function half_steps(x, p)
  return x:unsqueeze(-1) - torch.arange(0, p, { dtype = x.dtype, device = x.device }) / 2
end

--- U.mvlgamma(op, x, p): torch.mvlgamma(x, p), its domain errors naming op
function U.mvlgamma(op, x, p) return torch.special._multigammaln(op, x, p) end

--- U.mvdigamma(x, p): sum_{i=0}^{p-1} digamma(x - i / 2), the derivative of U.mvlgamma
function U.mvdigamma(x, p) return half_steps(x, p):digamma():sum(-1) end

-- ---- dtypes ----

--- U.finfo(dtype): torch.finfo(dtype) of a floating dtype; of the default dtype for the others
function U.finfo(dtype)
  return torch.finfo(dtype.is_floating_point and dtype or torch.get_default_dtype())
end

-- ---- probabilities ----

--- U.logits_to_probs(logits, is_binary): sigmoid, or softmax over the last dimension
function U.logits_to_probs(logits, is_binary)
  if is_binary then return torch.sigmoid(logits) end
  return torch.softmax(logits, -1)
end

--- U.clamp_probs(p): p clamped to [eps, 1 - eps] of its dtype
function U.clamp_probs(p)
  local eps = U.finfo(p.dtype).eps
  return p:clamp(eps, 1 - eps)
end

--- U.probs_to_logits(p, is_binary): log-odds, or log-probabilities
function U.probs_to_logits(p, is_binary)
  local c = U.clamp_probs(p)
  if is_binary then return c:log() - (-c):log1p() end
  return c:log()
end

--- U.bce_with_logits(x, t): max(x, 0) - x t + log(1 + exp(-|x|)), elementwise, differentiable in
--- both x and t (the entropy of a Bernoulli needs the target's gradient too)
function U.bce_with_logits(x, t)
  return x:clamp(0) - x * t + (-x:abs()):exp():log1p()
end

return U
