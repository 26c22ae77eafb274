-- nn.utils.prune, as PyTorch 1.13's torch.nn.utils.prune. Pruning the tensor `name` of a module
-- moves the parameter to name_orig, adds a buffer name_mask (1 keeps an entry, 0 prunes it) and
-- keeps module[name] = name_orig * name_mask as a plain field, recomputed before every forward by a
-- forward pre-hook (the pruning method object). Pruning the same tensor again combines the masks
-- in a PruningContainer: an unstructured method sees only the entries still kept, a structured one
-- only the channels not yet wholly pruned. amount is a fraction of the entries (a float in [0, 1],
-- rounded half to even as Python's round) or a count (a non-negative integer).
--
-- Ties: l1_unstructured prunes the entries of smallest magnitude, taken from a stable ascending
-- sort, so among equal magnitudes the one with the lower flat (row-major) index is pruned first;
-- ln_structured keeps the channels of largest norm, among equal norms the one with the lower index.
-- Structured dims are 1-based (-1, the default of PyTorch's signature, is the last).
local torch = require 'torch'
local class = require 'torch.class'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local wn = require 'torch.nn.weight_norm'

local M = {}
local VALS = Module._VALS

-- ---- amounts ----
local function validate_amount_init(amount, op, level)
  if type(amount) ~= 'number' then
    error(string.format('%s: Invalid type for amount: %s. Must be int or float.', op, tostring(amount)), level + 1)
  end
  if (math.type(amount) == 'integer' and amount < 0) or (math.type(amount) == 'float' and (amount > 1 or amount < 0)) then
    error(string.format('%s: amount=%s should either be a float in the range [0, 1] or a non-negative integer', op,
      tostring(amount)), level + 1)
  end
end

-- Python's round: halves to the even neighbour
local function round_half_even(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f)
end

local function nparams_toprune(amount, size, op)
  local n = math.type(amount) == 'integer' and amount or round_half_even(amount * size)
  if math.type(amount) == 'integer' and amount > size then
    error(string.format('%s: amount=%d should be smaller than the number of parameters to prune=%d', op, amount, size), 0)
  end
  return n
end

local function check_structured(t, dim, op)
  if t:dim() <= 1 then
    error(string.format('%s: Structured pruning can only be applied to multidimensional tensors. Found tensor of shape '
      .. '%s with %d dims', op, tostring(t.shape), t:dim()), 0)
  end
  return wn._resolve_dim(dim, t:dim(), op, 1)
end

-- a mask of t's shape: 1 on the channels `keep` (1-based indices along dim), 0 elsewhere
local function channel_mask(t, dim, keep)
  local mask = torch.zeros_like(t)
  if keep:numel() > 0 then mask:index_fill_(dim, keep, 1) end
  return mask
end

-- ---- pruning methods: compute_mask(t, default_mask) ----
local Base = class('BasePruningMethod')
M.BasePruningMethod = Base

-- the forward pre-hook: the pruned tensor recomputed from name_orig and name_mask
function Base:__call(module) module[self._tensor_name] = self:apply_mask(module) end

function Base:apply_mask(module)
  local mask, orig = module[self._tensor_name .. '_mask'], module[self._tensor_name .. '_orig']
  return mask:to(orig.dtype) * orig
end

-- prune(t, {default_mask, importance_scores}): t times the mask, without a module
function Base:prune(t, o)
  o = o or {}
  local scores = o.importance_scores or t
  return t * self:compute_mask(scores, o.default_mask or torch.ones_like(t))
end

-- remove(module): name becomes a plain parameter again holding the pruned values (the name_orig
-- tensor object, so that an optimizer holding it keeps working)
function Base:remove(module)
  local name = self._tensor_name
  local weight = torch.no_grad(function() return self:apply_mask(module) end)
  local orig = module[name .. '_orig']
  torch.no_grad(function() orig:set_(weight:detach()) end)
  for _, n in ipairs { name, name .. '_orig', name .. '_mask' } do Module._remove_name(module, n) end
  module:register_parameter(name, orig)
end

local function method(name, kind, init)
  local cls = Base:extend(name)
  cls.PRUNING_TYPE = kind
  if init then cls.init = init end
  M[name] = cls
  return cls
end

local Identity = method('Identity', 'unstructured')
function Identity:compute_mask(_, default_mask) return default_mask end

local function amount_init(op)
  return function(self, amount, dim, n)
    validate_amount_init(amount, op, 4)
    self.amount, self.dim, self.n = amount, dim, n
  end
end

local RandomUnstructured = method('RandomUnstructured', 'unstructured', amount_init('random_unstructured'))
function RandomUnstructured:compute_mask(t, default_mask)
  local k = nparams_toprune(self.amount, t:numel(), 'random_unstructured')
  local mask = default_mask:clone()
  if k ~= 0 then
    local _, idx = torch.topk(torch.rand_like(t):reshape(-1), k)
    mask:view(-1):index_fill_(1, idx, 0)
  end
  return mask
end

local L1Unstructured = method('L1Unstructured', 'unstructured', amount_init('l1_unstructured'))
function L1Unstructured:compute_mask(t, default_mask)
  local k = nparams_toprune(self.amount, t:numel(), 'l1_unstructured')
  local mask = default_mask:clone()
  if k ~= 0 then
    local _, order = torch.sort(t:abs():reshape(-1), { stable = true })
    mask:view(-1):index_fill_(1, order:narrow(1, 1, k), 0)
  end
  return mask
end

-- a structured method's dim (resolved), the number of channels along it and how many to prune
local function structured_counts(self, t, op)
  local dim = check_structured(t, self.dim, op)
  local size = t:size(dim)
  return dim, size, nparams_toprune(self.amount, size, op)
end

local RandomStructured = method('RandomStructured', 'structured', amount_init('random_structured'))
function RandomStructured:compute_mask(t, default_mask)
  local dim, size, k = structured_counts(self, t, 'random_structured')
  if k == 0 then return default_mask end
  -- the channels whose random draw is above the k-th smallest
  local prob = torch.rand(size)
  local threshold = torch.kthvalue(prob, k)
  local keep = prob:gt(threshold):nonzero():reshape(-1)
  return channel_mask(t, dim, keep) * default_mask:to(t.dtype)
end

-- the n-norm of every channel along dim (n a number, 'fro', 'inf' or '-inf')
local function channel_norms(t, n, dim)
  local p = n
  if n == 'fro' then p = 2 elseif n == 'inf' then p = math.huge elseif n == '-inf' then p = -math.huge end
  return t:transpose(1, dim):reshape(t:size(dim), -1):norm(p, 2)
end

local LnStructured = method('LnStructured', 'structured', amount_init('ln_structured'))
function LnStructured:compute_mask(t, default_mask)
  local dim, size, k = structured_counts(self, t, 'ln_structured')
  if k == 0 then return default_mask end
  -- keep the size - k channels of largest norm; a stable sort of the negated norms puts the lower
  -- index first among equal norms
  local _, order = torch.sort(-channel_norms(t, self.n, dim), { stable = true })
  return channel_mask(t, dim, order:narrow(1, 1, size - k)) * default_mask:to(t.dtype)
end

local CustomFromMask = method('CustomFromMask', 'global', function(self, mask) self.mask = mask end)
function CustomFromMask:compute_mask(_, default_mask)
  if default_mask.shape ~= self.mask.shape then
    error(string.format('custom_from_mask: the mask is of shape %s, the tensor %s', tostring(self.mask.shape),
      tostring(default_mask.shape)), 0)
  end
  return default_mask * self.mask:to(default_mask.dtype)
end

-- ---- PruningContainer: the masks of successive prunings of one tensor combined ----
local PruningContainer = Base:extend('PruningContainer')
M.PruningContainer = PruningContainer

function PruningContainer:init(...)
  self._pruning_methods = {}
  for i = 1, select('#', ...) do
    local m = select(i, ...)
    if i == 1 and select('#', ...) == 1 then self._tensor_name = m._tensor_name end
    self:add_pruning_method(m)
  end
end

function PruningContainer:add_pruning_method(m)
  if not class.isinstance(m, Base) then
    error('PruningContainer.add_pruning_method: ' .. tostring(m) .. ' is not a BasePruningMethod', 2)
  end
  if self._tensor_name ~= m._tensor_name then
    error(string.format("PruningContainer.add_pruning_method: Can only add pruning methods acting on the parameter "
      .. "named '%s'. Found '%s'", tostring(self._tensor_name), tostring(m._tensor_name)), 2)
  end
  self._pruning_methods[#self._pruning_methods + 1] = m
end

-- the last method's mask, computed on the part of t that the mask still keeps
function PruningContainer:compute_mask(t, default_mask)
  local m = self._pruning_methods[#self._pruning_methods]
  local mask = default_mask:to(t.dtype)
  if m.PRUNING_TYPE == 'unstructured' then
    local keep = mask:eq(1)
    local partial = m:compute_mask(t:masked_select(keep), mask:masked_select(keep))
    return mask:masked_scatter(keep, partial:to(mask.dtype))
  elseif m.PRUNING_TYPE == 'structured' then
    local dim = wn._resolve_dim(m.dim, t:dim(), 'PruningContainer', 1)
    -- the channels along dim that are not wholly pruned yet
    local sums = mask:transpose(1, dim):reshape(t:size(dim), -1):sum(2)
    local keep = sums:ne(0):nonzero():reshape(-1)
    local partial = m:compute_mask(t:index_select(dim, keep), mask:index_select(dim, keep))
    return mask:index_copy(dim, keep, partial:to(mask.dtype))
  elseif m.PRUNING_TYPE == 'global' then
    return m:compute_mask(t, mask)
  end
  error('PruningContainer: unrecognized PRUNING_TYPE ' .. tostring(m.PRUNING_TYPE), 0)
end

-- ---- applying a method to a module ----
local function pre_hooks(module) return rawget(module, VALS)._forward_pre_hooks or {} end

local function find_hook(module, name)
  for i, h in ipairs(pre_hooks(module)) do
    if class.isinstance(h.fn, Base) and h.fn._tensor_name == name then return h.fn, i end
  end
end

local function check_target(module, name, op, level)
  if not Module.is_module(module) then error(string.format('%s: expected a module, got %s', op, type(module)), level + 1) end
  if type(name) ~= 'string' then error(string.format('%s: name must be a string, got %s', op, type(name)), level + 1) end
  if find_hook(module, name) == nil then
    local kind = rawget(module, Module._KIND)[name]
    if kind ~= 'param' or rawget(module, VALS)[name] == nil then
      error(string.format("%s: %s has no parameter '%s'", op, module:_get_name(), name), level + 1)
    end
  end
end

-- cls's method on module[name], combined with an earlier one in a PruningContainer
local function apply(op, module, name, m, importance_scores)
  m._tensor_name = name
  local old, i = find_hook(module, name)
  if old ~= nil then
    table.remove(pre_hooks(module), i)
    if class.isinstance(old, PruningContainer) then
      old:add_pruning_method(m)
      m = old
    else
      local c = PruningContainer(old)
      c:add_pruning_method(m)
      m = c
    end
  end
  local orig = module[name]
  if importance_scores ~= nil then
    if not torch.is_tensor(importance_scores) or importance_scores.shape ~= orig.shape then
      error(string.format('%s: importance_scores should have the same shape as parameter %s of %s', op, name,
        module:_get_name()), 3)
    end
  else
    importance_scores = orig
  end
  local default_mask
  if old == nil then
    Module._remove_name(module, name)
    module:register_parameter(name .. '_orig', orig)
    default_mask = torch.ones_like(orig)
  else
    default_mask = module[name .. '_mask']:detach():clone()
  end
  local ok, err = pcall(function()
    local mask = torch.no_grad(function() return m:compute_mask(importance_scores:detach(), default_mask) end)
    module:register_buffer(name .. '_mask', mask)
    module[name] = m:apply_mask(module)
    module:register_forward_pre_hook(m)
  end)
  if not ok then
    if old == nil then
      Module._remove_name(module, name .. '_orig')
      Module._remove_name(module, name)
      module:register_parameter(name, orig)
    else
      module:register_forward_pre_hook(old)
    end
    error(type(err) == 'string' and err or tostring(err), 3)
  end
  return m
end

local function pruner(op, cls, nargs)
  return function(module, name, ...)
    check_target(module, name, op, 2)
    local args = table.pack(...)
    local importance_scores = args[nargs + 1]
    if type(importance_scores) == 'table' and not torch.is_tensor(importance_scores) then
      importance_scores = importance_scores.importance_scores
    end
    local m = cls(table.unpack(args, 1, nargs))
    apply(op, module, name, m, importance_scores)
    return module
  end
end

-- identity(module, name)
M.identity = pruner('identity', Identity, 0)
-- random_unstructured(module, name, amount)
M.random_unstructured = pruner('random_unstructured', RandomUnstructured, 1)
-- l1_unstructured(module, name, amount, {importance_scores})
M.l1_unstructured = pruner('l1_unstructured', L1Unstructured, 1)
-- random_structured(module, name, amount, dim)
M.random_structured = function(module, name, amount, dim)
  validate_amount_init(amount, 'random_structured', 2)
  return pruner('random_structured', RandomStructured, 2)(module, name, amount, dim or -1)
end
-- ln_structured(module, name, amount, n, dim, {importance_scores})
M.ln_structured = function(module, name, amount, n, dim, o)
  validate_amount_init(amount, 'ln_structured', 2)
  if not (type(n) == 'number' or n == 'fro' or n == 'inf' or n == '-inf') then
    error("ln_structured: n must be a number, 'fro', 'inf' or '-inf', got " .. tostring(n), 2)
  end
  check_target(module, name, 'ln_structured', 2)
  apply('ln_structured', module, name, LnStructured(amount, dim or -1, n), type(o) == 'table' and o.importance_scores or o)
  return module
end
-- custom_from_mask(module, name, mask)
M.custom_from_mask = function(module, name, mask)
  if not torch.is_tensor(mask) then error('custom_from_mask: mask must be a tensor, got ' .. type(mask), 2) end
  return pruner('custom_from_mask', CustomFromMask, 1)(module, name, mask)
end

-- the amount is checked before anything changes, as PyTorch's constructors do
for _, op in ipairs { 'random_unstructured', 'l1_unstructured' } do
  local f = M[op]
  M[op] = function(module, name, amount, ...)
    validate_amount_init(amount, op, 2)
    return f(module, name, amount, ...)
  end
end

-- global_unstructured(parameters, pruning_method, {importance_scores, amount, ...}): parameters
-- is an array of {module, name}; the method (a class, e.g. prune.L1Unstructured, of type
-- 'unstructured') is applied to all of them at once, as one vector; each gets its share of the
-- mask through custom_from_mask. importance_scores maps a module to {name = tensor}.
function M.global_unstructured(parameters, pruning_method, o)
  local op = 'global_unstructured'
  if type(parameters) ~= 'table' then error(op .. ': parameters is not an array of {module, name}', 2) end
  o = o or {}
  local scores = o.importance_scores or {}
  if type(scores) ~= 'table' then error(op .. ': importance_scores must be a table', 2) end
  if not (type(pruning_method) == 'table' and class.issubclass(pruning_method, Base)) then
    error(op .. ': pruning_method must be a pruning method class (e.g. prune.L1Unstructured)', 2)
  end
  if pruning_method.PRUNING_TYPE ~= 'unstructured' then
    error(string.format('%s: Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method %s '
      .. 'of type %s', op, pruning_method.__name, pruning_method.PRUNING_TYPE), 2)
  end
  local flat_scores, flat_masks = {}, {}
  for i, pair in ipairs(parameters) do
    local module, name = pair[1], pair[2]
    if not Module.is_module(module) or not torch.is_tensor(module[name]) then
      error(string.format('%s: parameters[%d] is not a {module, name} pair of a module and a tensor name', op, i), 2)
    end
    local t = module[name]
    local s = scores[module] and scores[module][name] or t
    flat_scores[i] = s:detach():reshape(-1)
    flat_masks[i] = (module[name .. '_mask'] or torch.ones_like(t)):reshape(-1)
  end
  validate_amount_init(o.amount, op, 2)
  local c = PruningContainer()
  c._tensor_name = 'temp'
  local m = pruning_method(o.amount)
  m._tensor_name = 'temp'
  c:add_pruning_method(m)
  local final = torch.no_grad(function() return c:compute_mask(torch.cat(flat_scores), torch.cat(flat_masks)) end)
  local at = 1
  for _, pair in ipairs(parameters) do
    local t = pair[1][pair[2]]
    M.custom_from_mask(pair[1], pair[2], final:narrow(1, at, t:numel()):reshape(t.shape))
    at = at + t:numel()
  end
end

-- remove(module, name) -> module: the pruning made permanent
function M.remove(module, name)
  if not Module.is_module(module) then error('remove: expected a module, got ' .. type(module), 2) end
  local m, i = find_hook(module, name)
  if m == nil then
    error(string.format("remove: Parameter '%s' of module %s has to be pruned before pruning can be removed",
      tostring(name), module:_get_name()), 2)
  end
  m:remove(module)
  table.remove(pre_hooks(module), i)
  return module
end

-- is_pruned(module): does the module or any submodule have a pruning hook?
function M.is_pruned(module)
  if not Module.is_module(module) then error('is_pruned: expected a module, got ' .. type(module), 2) end
  for _, sub in ipairs(module:modules()) do
    for _, h in ipairs(pre_hooks(sub)) do
      if class.isinstance(h.fn, Base) then return true end
    end
  end
  return false
end

M._round_half_even = round_half_even
return M
