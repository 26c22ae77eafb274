-- torch.distributions.transforms: invertible maps with log |det J|, for TransformedDistribution.
-- t(x) applies t, t.inv is the inverse (t.inv.inv is t), t:log_abs_det_jacobian(x, y) is
-- log |dy/dx|, t.domain and t.codomain are constraints, t.sign is +1 or -1 for monotone maps.
-- ExpTransform, AffineTransform(loc, scale, {event_dim}), SigmoidTransform, SoftplusTransform,
-- TanhTransform, PowerTransform(exponent), AbsTransform, CumulativeDistributionTransform(distribution),
-- ComposeTransform{t1, t2, ...}; every one takes {cache_size = 1} to remember its last (x, y) pair, as
-- in PyTorch. The transforms of parts and shapes (IndependentTransform, ReshapeTransform, CatTransform,
-- StackTransform) are in transforms_structural.lua, those onto the simplex and onto Cholesky factors
-- (SoftmaxTransform, StickBreakingTransform, LowerCholeskyTransform, CorrCholeskyTransform) in
-- transforms_constrained.lua; all are fields of this module.
local torch = require 'torch'
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'

local T = {}

local Transform = class('Transform')
T.Transform = Transform
Transform.properties = {}
Transform.__index = U.property_index
Transform.bijective = false
function Transform:extend(name)
  local cls = class.Object.extend(self, name)
  rawset(cls, 'properties', {})
  return cls
end

local function name_of(t) return rawget(getmetatable(t), '__name') end

-- the cache_size option (0 or 1)
local function cache_size_of(op, o)
  local c = (o and o.cache_size) or 0
  if c ~= 0 and c ~= 1 then U.raise('%s: cache_size must be 0 or 1, got %s', op, tostring(c)) end
  return c
end

function Transform:init(o)
  o = o or {}
  self._cache_size = cache_size_of(name_of(self), o)
end

local tprops = Transform.properties
function tprops.event_dim(t)
  if t.domain.event_dim == t.codomain.event_dim then return t.domain.event_dim end
  U.raise('%s: please use either .domain.event_dim or .codomain.event_dim', name_of(t))
end
function tprops.inv(t)
  local inv = rawget(t, '_inv')
  if inv == nil then
    inv = T._InverseTransform(t)
    rawset(t, '_inv', inv)
  end
  return inv
end
function tprops.sign(t) U.raise('%s: sign is not implemented', name_of(t)) end

--- t(x): y
function Transform:__call(x)
  if self._cache_size == 0 then return self:_call(x) end
  if rawequal(x, rawget(self, '_cx')) then return rawget(self, '_cy') end
  local y = self:_call(x)
  rawset(self, '_cx', x); rawset(self, '_cy', y)
  return y
end

function Transform:_inv_call(y)
  if self._cache_size == 0 then return self:_inverse(y) end
  if rawequal(y, rawget(self, '_cy')) then return rawget(self, '_cx') end
  local x = self:_inverse(y)
  rawset(self, '_cx', x); rawset(self, '_cy', y)
  return x
end

function Transform:_call() U.raise('%s: the forward map is not implemented', name_of(self)) end
function Transform:_inverse() U.raise('%s: the inverse map is not implemented', name_of(self)) end
function Transform:log_abs_det_jacobian() U.raise('%s: log_abs_det_jacobian is not implemented', name_of(self)) end
function Transform:forward_shape(shape) return shape end
function Transform:inverse_shape(shape) return shape end
function Transform:__tostring() return name_of(self) .. '()' end
function Transform.__eq(a, b) return rawequal(a, b) end

--- t:with_cache(cache_size = 1): the same map with the given cache
function Transform:with_cache(cache_size)
  cache_size = cache_size or 1
  if self._cache_size == cache_size then return self end
  return getmetatable(self)({ cache_size = cache_size })
end

--- T._with_cache_of(args): a with_cache for a class whose constructor takes the positional
--- arguments args(t) returns, then its options
function T._with_cache_of(args)
  return function(self, cache_size)
    cache_size = cache_size or 1
    if self._cache_size == cache_size then return self end
    local a = args(self)
    a[#a + 1] = { cache_size = cache_size }
    return getmetatable(self)(table.unpack(a))
  end
end

T._name_of = name_of

-- ---- the inverse of a transform ----

local Inverse = Transform:extend('_InverseTransform')
T._InverseTransform = Inverse
function Inverse:init(t)
  Transform.init(self, { cache_size = t._cache_size })
  rawset(self, '_inv', t)
end
local iprops = Inverse.properties
function iprops.domain(t) return t._inv.codomain end
function iprops.codomain(t) return t._inv.domain end
function iprops.bijective(t) return t._inv.bijective end
function iprops.sign(t) return t._inv.sign end
function Inverse:with_cache(cache_size) return self._inv:with_cache(cache_size).inv end
function Inverse.__eq(a, b)
  return class.isinstance(b, Inverse) and class.isinstance(a, Inverse) and a._inv == b._inv
end
function Inverse:__tostring() return '_InverseTransform(' .. tostring(self._inv) .. ')' end
function Inverse:__call(x) return self._inv:_inv_call(x) end
function Inverse:log_abs_det_jacobian(x, y) return -self._inv:log_abs_det_jacobian(y, x) end
function Inverse:forward_shape(shape) return self._inv:inverse_shape(shape) end
function Inverse:inverse_shape(shape) return self._inv:forward_shape(shape) end

-- ---- composition ----

local Compose = Transform:extend('ComposeTransform')
T.ComposeTransform = Compose
--- ComposeTransform({t1, t2, ...}, {cache_size}): x -> ...t2(t1(x))
function Compose:init(parts, o)
  if type(parts) ~= 'table' then U.raise('ComposeTransform: expected a list of transforms, got %s', type(parts)) end
  local cs = cache_size_of('ComposeTransform', o)
  local list = {}
  for i, p in ipairs(parts) do
    if not class.isinstance(p, Transform) then
      U.raise('ComposeTransform: part %d is not a transform (%s)', i, type(p))
    end
    list[i] = cs ~= 0 and p:with_cache(cs) or p
  end
  Transform.init(self, { cache_size = cs })
  self.parts = list
end
local cprops = Compose.properties
function cprops.domain(t)
  local parts = t.parts
  if #parts == 0 then return C.real end
  local domain = parts[1].domain
  local event_dim = parts[#parts].codomain.event_dim
  for i = #parts, 1, -1 do
    local p = parts[i]
    event_dim = math.max(event_dim + p.domain.event_dim - p.codomain.event_dim, p.domain.event_dim)
  end
  if event_dim > domain.event_dim then domain = C.independent(domain, event_dim - domain.event_dim) end
  return domain
end
function cprops.codomain(t)
  local parts = t.parts
  if #parts == 0 then return C.real end
  local codomain = parts[#parts].codomain
  local event_dim = parts[1].domain.event_dim
  for _, p in ipairs(parts) do
    event_dim = math.max(event_dim + p.codomain.event_dim - p.domain.event_dim, p.codomain.event_dim)
  end
  if event_dim > codomain.event_dim then codomain = C.independent(codomain, event_dim - codomain.event_dim) end
  return codomain
end
function cprops.bijective(t)
  for _, p in ipairs(t.parts) do
    if not p.bijective then return false end
  end
  return true
end
function cprops.sign(t)
  local s = 1
  for _, p in ipairs(t.parts) do s = s * p.sign end
  return s
end
function cprops.inv(t)
  local inv = rawget(t, '_inv')
  if inv == nil then
    local parts = {}
    for i = #t.parts, 1, -1 do parts[#parts + 1] = t.parts[i].inv end
    inv = Compose(parts)
    rawset(inv, '_inv', t)
    rawset(t, '_inv', inv)
  end
  return inv
end
function Compose.__eq(a, b)
  if not (class.isinstance(a, Compose) and class.isinstance(b, Compose)) or #a.parts ~= #b.parts then return false end
  for i = 1, #a.parts do
    if a.parts[i] ~= b.parts[i] then return false end
  end
  return true
end
function Compose:with_cache(cache_size)
  cache_size = cache_size or 1
  if self._cache_size == cache_size then return self end
  return Compose(self.parts, { cache_size = cache_size })
end
function Compose:__call(x)
  for _, p in ipairs(self.parts) do x = p(x) end
  return x
end
function Compose:_inv_call(y)
  for i = #self.parts, 1, -1 do y = self.parts[i].inv(y) end
  return y
end
function Compose:log_abs_det_jacobian(x, y)
  local parts = self.parts
  if #parts == 0 then return torch.zeros_like(x) end
  local xs = { x }
  for i = 1, #parts - 1 do xs[i + 1] = parts[i](xs[i]) end
  xs[#parts + 1] = y
  local total
  local event_dim = self.domain.event_dim
  for i, p in ipairs(parts) do
    local term = U.sum_rightmost(p:log_abs_det_jacobian(xs[i], xs[i + 1]), event_dim - p.domain.event_dim)
    total = total and total + term or term
    event_dim = event_dim + p.codomain.event_dim - p.domain.event_dim
  end
  return total
end
function Compose:forward_shape(shape)
  for _, p in ipairs(self.parts) do shape = p:forward_shape(shape) end
  return shape
end
function Compose:inverse_shape(shape)
  for i = #self.parts, 1, -1 do shape = self.parts[i]:inverse_shape(shape) end
  return shape
end
function Compose:__tostring()
  local parts = {}
  for i, p in ipairs(self.parts) do parts[i] = tostring(p) end
  return 'ComposeTransform(\n    ' .. table.concat(parts, ',\n    ') .. '\n)'
end

T.identity_transform = Compose({})

-- ---- elementwise maps ----

local Exp = Transform:extend('ExpTransform')
T.ExpTransform = Exp
Exp.domain, Exp.codomain, Exp.bijective, Exp.sign = C.real, C.positive, true, 1
function Exp.__eq(a, b) return class.isinstance(a, Exp) and class.isinstance(b, Exp) end
function Exp:_call(x) return x:exp() end
function Exp:_inverse(y) return y:log() end
function Exp:log_abs_det_jacobian(x) return x end

local Sigmoid = Transform:extend('SigmoidTransform')
T.SigmoidTransform = Sigmoid
Sigmoid.domain, Sigmoid.codomain, Sigmoid.bijective, Sigmoid.sign = C.real, C.unit_interval, true, 1
function Sigmoid.__eq(a, b) return class.isinstance(a, Sigmoid) and class.isinstance(b, Sigmoid) end
function Sigmoid:_call(x)
  local f = U.finfo(x.dtype)
  return torch.sigmoid(x):clamp(f.tiny, 1 - f.eps)
end
function Sigmoid:_inverse(y)
  local f = U.finfo(y.dtype)
  y = y:clamp(f.tiny, 1 - f.eps)
  return y:log() - (-y):log1p()
end
function Sigmoid:log_abs_det_jacobian(x) return -torch.softplus(-x) - torch.softplus(x) end

local Softplus = Transform:extend('SoftplusTransform')
T.SoftplusTransform = Softplus
--- SoftplusTransform(): y = log(1 + exp(x)) (x itself beyond 20), from the reals onto the positive reals
Softplus.domain, Softplus.codomain, Softplus.bijective, Softplus.sign = C.real, C.positive, true, 1
function Softplus.__eq(a, b) return class.isinstance(a, Softplus) and class.isinstance(b, Softplus) end
function Softplus:_call(x) return torch.softplus(x) end
function Softplus:_inverse(y) return (-y):expm1():neg():log() + y end
function Softplus:log_abs_det_jacobian(x) return -torch.softplus(-x) end

local Tanh = Transform:extend('TanhTransform')
T.TanhTransform = Tanh
Tanh.domain, Tanh.codomain, Tanh.bijective, Tanh.sign = C.real, C.interval(-1.0, 1.0), true, 1
function Tanh.__eq(a, b) return class.isinstance(a, Tanh) and class.isinstance(b, Tanh) end
function Tanh:_call(x) return x:tanh() end
function Tanh:_inverse(y) return torch.atanh(y) end
-- 2 (log 2 - x - softplus(-2x)), stable for large |x|
function Tanh:log_abs_det_jacobian(x) return 2 * (math.log(2) - x - torch.softplus(-2 * x)) end

local Affine = Transform:extend('AffineTransform')
T.AffineTransform = Affine
Affine.bijective = true
--- AffineTransform(loc, scale, {event_dim = 0, cache_size = 0}): y = loc + scale x
function Affine:init(loc, scale, o)
  o = o or {}
  for _, v in ipairs { { 'loc', loc }, { 'scale', scale } } do
    if type(v[2]) ~= 'number' and not torch.is_tensor(v[2]) then
      U.raise('AffineTransform: %s must be a number or a tensor, got %s', v[1], type(v[2]))
    end
  end
  Transform.init(self, { cache_size = o.cache_size })
  self.loc, self.scale = loc, scale
  self._event_dim = o.event_dim or 0
end
local aprops = Affine.properties
function aprops.event_dim(t) return t._event_dim end
function aprops.domain(t) return t._event_dim == 0 and C.real or C.independent(C.real, t._event_dim) end
function aprops.codomain(t) return t._event_dim == 0 and C.real or C.independent(C.real, t._event_dim) end
function aprops.sign(t)
  local s = t.scale
  if type(s) == 'number' then return s > 0 and 1 or (s < 0 and -1 or 0) end
  return s:sign()
end
function Affine:with_cache(cache_size)
  cache_size = cache_size or 1
  if self._cache_size == cache_size then return self end
  return Affine(self.loc, self.scale, { event_dim = self._event_dim, cache_size = cache_size })
end
local function same(a, b)
  if type(a) == 'number' and type(b) == 'number' then return a == b end
  if type(a) == 'number' then a, b = b, a end
  return a:eq(b):all():item()
end
function Affine.__eq(a, b)
  if not (class.isinstance(a, Affine) and class.isinstance(b, Affine)) then return false end
  return same(a.loc, b.loc) and same(a.scale, b.scale)
end
function Affine:_call(x) return self.loc + self.scale * x end
function Affine:_inverse(y) return (y - self.loc) / self.scale end
function Affine:log_abs_det_jacobian(x)
  local shape = x.shape
  local scale = self.scale
  local result
  if type(scale) == 'number' then
    result = torch.full_like(x, math.log(math.abs(scale)))
  else
    result = scale:abs():log()
  end
  local ed = self._event_dim
  if ed > 0 then
    local rs = U.slice(result.shape, 1, result:dim() - ed)
    rs[#rs + 1] = -1
    result = result:reshape(rs):sum(-1)
    shape = U.slice(shape, 1, #shape - ed)
  end
  return result:expand(shape)
end
local function param_shape(v) return torch.is_tensor(v) and v.shape or {} end
function Affine:forward_shape(shape) return torch.broadcast_shapes(shape, param_shape(self.loc), param_shape(self.scale)) end
Affine.inverse_shape = Affine.forward_shape
function Affine:__tostring() return 'AffineTransform()' end

local Power = Transform:extend('PowerTransform')
T.PowerTransform = Power
Power.domain, Power.codomain, Power.bijective, Power.sign = C.positive, C.positive, true, 1
--- PowerTransform(exponent, {cache_size}): y = x ^ exponent on the positive reals
-- (a number exponent stays a Lua number, so that 1 / exponent is exact in float64)
function Power:init(exponent, o)
  Transform.init(self, { cache_size = o and o.cache_size })
  if type(exponent) ~= 'number' and not torch.is_tensor(exponent) then
    U.raise('PowerTransform: exponent must be a number or a tensor, got %s', type(exponent))
  end
  self.exponent = exponent
end
function Power.__eq(a, b)
  return class.isinstance(a, Power) and class.isinstance(b, Power) and same(a.exponent, b.exponent)
end
function Power:with_cache(cache_size)
  cache_size = cache_size or 1
  if self._cache_size == cache_size then return self end
  return Power(self.exponent, { cache_size = cache_size })
end
function Power:_call(x) return x:pow(self.exponent) end
function Power:_inverse(y) return y:pow(1 / self.exponent) end
function Power:log_abs_det_jacobian(x, y) return (self.exponent * y / x):abs():log() end
function Power:forward_shape(shape) return torch.broadcast_shapes(shape, param_shape(self.exponent)) end
Power.inverse_shape = Power.forward_shape

local Abs = Transform:extend('AbsTransform')
T.AbsTransform = Abs
--- AbsTransform(): y = |x|, from the reals onto the positive reals; not bijective, and its inverse
--- maps y to y (the positive branch), as PyTorch's does
Abs.domain, Abs.codomain = C.real, C.positive
function Abs.__eq(a, b) return class.isinstance(a, Abs) and class.isinstance(b, Abs) end
function Abs:_call(x) return x:abs() end
function Abs:_inverse(y) return y end

local CDF = Transform:extend('CumulativeDistributionTransform')
T.CumulativeDistributionTransform = CDF
CDF.bijective, CDF.codomain, CDF.sign = true, C.unit_interval, 1
--- CumulativeDistributionTransform(distribution, {cache_size}): y = distribution:cdf(x), from the
--- support of a univariate distribution onto [0, 1]; its inverse is icdf, log |dy/dx| log_prob
function CDF:init(...)
  local a = U.args('CumulativeDistributionTransform', { 'distribution', 'cache_size' }, ...)
  local Distribution = require 'torch.distributions.distribution'
  if not class.isinstance(a.distribution, Distribution) then
    U.raise('CumulativeDistributionTransform: distribution must be a distribution, got %s', type(a.distribution))
  end
  Transform.init(self, { cache_size = a.cache_size })
  self.distribution = a.distribution
end
function CDF.properties.domain(t) return t.distribution.support end
CDF.with_cache = T._with_cache_of(function(t) return { t.distribution } end)
function CDF:_call(x) return self.distribution:cdf(x) end
function CDF:_inverse(y) return self.distribution:icdf(y) end
function CDF:log_abs_det_jacobian(x) return self.distribution:log_prob(x) end

require('torch.distributions.transforms_structural')(T)
require('torch.distributions.transforms_constrained')(T)

return T
