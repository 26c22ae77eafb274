-- nn.utils.weight_norm(module, {name = 'weight', dim = 1}) and nn.utils.remove_weight_norm(module,
-- name): PyTorch's weight normalisation. The parameter `name` is replaced by two parameters,
-- name_g (its norms) and name_v (its direction, sharing the old parameter's data), and the weight
-- is recomputed before every forward (a forward pre-hook) as w = g * v / ||v||, the norm taken over
-- every dimension but `dim`; g has v's shape with 1 in those dimensions. dim is 1-based (PyTorch's
-- default dim=0 is dim = 1 here); a negative dim counts from the end; dim = false (or 'none') takes the
-- norm over the whole tensor (PyTorch's dim=None) and g is then a 0-dim tensor.
-- remove_weight_norm puts back one parameter `name` (the weight computed last) and drops the hook.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local as_int = require('torch.composite').as_int

local M = {}

local WeightNorm = {}
WeightNorm.__index = WeightNorm
WeightNorm.__name = 'WeightNorm'

-- the 2-norms of v over every dimension but dim (nil: over all), shaped to broadcast against v
local function norm_except_dim(v, dim)
  if dim == nil then return v:norm(2) end
  local shape = {}
  for d = 1, v:dim() do shape[d] = d == dim and v:size(d) or 1 end
  local n = v:size(dim)
  return v:transpose(1, dim):reshape(n, -1):norm(2, 2):reshape(shape)
end
M._norm_except_dim = norm_except_dim

function WeightNorm:compute_weight(module)
  local g, v = module[self.name .. '_g'], module[self.name .. '_v']
  return v * (g / norm_except_dim(v, self.dim))
end

-- the forward pre-hook
function WeightNorm.__call(self, module) module[self.name] = self:compute_weight(module) end

local function hooks_of(module) return rawget(module, Module._VALS)._forward_pre_hooks or {} end

-- the hook of class cls on parameter name, and its index in the list
function M._find_hook(module, cls, name)
  local list = hooks_of(module)
  for i, h in ipairs(list) do
    if getmetatable(h.fn) == cls and h.fn.name == name then return h.fn, i end
  end
end

-- (module, name, dim) positional or (module, {name = ..., dim = ...})
local function args(name, dim, op, level)
  if type(name) == 'table' then
    for k in pairs(name) do
      if k ~= 'name' and k ~= 'dim' then error(string.format("%s: unknown option '%s'", op, tostring(k)), level + 1) end
    end
    name, dim = name.name, name.dim
  end
  return name or 'weight', dim
end

local function check_module(module, op, level)
  if not Module.is_module(module) then
    error(string.format('%s: expected a module, got %s', op, type(module)), level + 1)
  end
end

M._check_module = check_module

-- the parameter `name` of module, or an error
local function parameter_of(module, name, op, level)
  local kind = rawget(module, Module._KIND)[name]
  local p = rawget(module, Module._VALS)[name]
  if kind ~= 'param' or p == nil then
    error(string.format("%s: %s has no parameter '%s'", op, module:_get_name(), tostring(name)), level + 1)
  end
  return p
end
M._parameter_of = parameter_of

-- a 1-based dim of a tensor with n dimensions (negative from the end), or an error
function M._resolve_dim(dim, n, op, level)
  dim = as_int(dim)
  if math.type(dim) ~= 'integer' then
    error(string.format('%s: dim must be an integer, got %s', op, tostring(dim)), level + 1)
  end
  local d = dim < 0 and n + 1 + dim or dim
  if d < 1 or d > math.max(n, 1) then
    error(string.format('%s: dim %d is out of range for a weight with %d dimensions (dims are 1-based)', op, dim, n),
      level + 1)
  end
  return d
end

-- weight_norm(module, {name = 'weight', dim = 1}) (or (module, name, dim)): `name` becomes name_g and
-- name_v, and the weight g * v / ||v|| (norm over every dim but dim; dim = false: the whole tensor) is
-- recomputed before each forward
function M.weight_norm(module, name, dim)
  local op = 'weight_norm'
  check_module(module, op, 2)
  name, dim = args(name, dim, op, 2)
  if M._find_hook(module, WeightNorm, name) then
    error('weight_norm: Cannot register two weight_norm hooks on the same parameter ' .. name, 2)
  end
  local weight = parameter_of(module, name, op, 2)
  if dim == nil then dim = 1 end
  if dim == false or dim == 'none' then
    dim = nil
  else
    dim = M._resolve_dim(dim, weight:dim(), op, 2)
    if weight:dim() == 0 then dim = nil end
  end
  local fn = setmetatable({ name = name, dim = dim }, WeightNorm)
  Module._remove_name(module, name)
  module:register_parameter(name .. '_g', Parameter(torch.no_grad(norm_except_dim, weight:detach(), dim)))
  module:register_parameter(name .. '_v', Parameter(weight:detach()))
  module[name] = fn:compute_weight(module)
  module:register_forward_pre_hook(fn)
  return module
end

-- remove_weight_norm(module, name = 'weight'): one parameter `name` again, the hook dropped
function M.remove_weight_norm(module, name)
  check_module(module, 'remove_weight_norm', 2)
  name = args(name, nil, 'remove_weight_norm', 2)
  local fn, i = M._find_hook(module, WeightNorm, name)
  if fn == nil then
    error(string.format("remove_weight_norm: weight_norm of '%s' not found in %s", tostring(name), module:_get_name()), 2)
  end
  local weight = fn:compute_weight(module)
  Module._remove_name(module, name)
  Module._remove_name(module, name .. '_g')
  Module._remove_name(module, name .. '_v')
  module:register_parameter(name, Parameter(weight:detach()))
  table.remove(hooks_of(module), i)
  return module
end

M.WeightNorm = WeightNorm
return M
