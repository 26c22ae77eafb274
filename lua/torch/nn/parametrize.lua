-- nn.utils.parametrize, as PyTorch 1.13's torch.nn.utils.parametrize: a tensor of a module (a
-- parameter or a buffer) is replaced by the output of a module applied to it.
--
-- register_parametrization(module, 'weight', P) removes the parameter `weight`, moves it to
-- module.parametrizations.weight.original (a ParametrizationList, a ModuleList holding P; the state
-- dict key is PyTorch's `parametrizations.weight.original`) and gives the instance a class of its
-- own, ParametrizedLinear for a Linear, whose lookup of `weight` computes P(original) each time (once
-- inside parametrize.cached()) and whose assignment `module.weight = value` stores
-- P:right_inverse(value) in original. When P has a right_inverse it is applied to the tensor at
-- registration; P:right_inverse may return an array of tensors, which are kept as original0,
-- original1, ... and passed to P's forward as several arguments. Registering again on the same
-- tensor chains the parametrizations (module.parametrizations.weight[2], ...); the ModuleList names
-- them '1', '2' as every lutorch ModuleList does (PyTorch's '0', '1'). A right_inverse that cannot
-- invert raises parametrize.not_implemented(msg) (PyTorch's NotImplementedError): at registration
-- it counts as the identity.
local torch = require 'torch'
local class = require 'torch.class'
local Module = require 'torch.nn.module'
local container = require 'torch.nn.container'
local parameter = require 'torch.nn.parameter'

local M = {}
local VALS, KIND, ORDER = Module._VALS, Module._KIND, Module._ORDER

-- ---- PyTorch's NotImplementedError, for right_inverse ----
local NotImplemented = { __name = 'NotImplementedError' }
NotImplemented.__tostring = function(e) return 'NotImplementedError: ' .. e.msg end
function M.not_implemented(msg) error(setmetatable({ msg = msg }, NotImplemented), 2) end
local function is_not_implemented(err) return getmetatable(err) == NotImplemented end

-- ---- the cache of cached() ----
local cache_depth, cache = 0, setmetatable({}, { __mode = 'k' })

local cache_close = {
  __name = 'parametrize.cached',
  __close = function()
    cache_depth = cache_depth - 1
    if cache_depth == 0 then cache = setmetatable({}, { __mode = 'k' }) end
  end,
}

-- cached(): a to-be-closed value (`local _ <close> = parametrize.cached()`), or cached(fn, ...) runs
-- fn inside and returns its results; inside, each parametrized tensor is computed once
function M.cached(fn, ...)
  cache_depth = cache_depth + 1
  local ctx = setmetatable({}, cache_close)
  if fn == nil then return ctx end
  local r = table.pack(pcall(fn, ...))
  cache_close.__close(ctx)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

local function typename(v)
  if torch.is_tensor(v) then return 'Tensor' end
  if Module.is_module(v) then return v:_get_name() end
  return type(v)
end

-- a parameter stays a parameter, anything else is a buffer
local function register_parameter_or_buffer(m, name, t)
  if parameter.is_parameter(t) then m:register_parameter(name, t) else m:register_buffer(name, t) end
end

local function is_tensor_list(v)
  if type(v) ~= 'table' or torch.is_tensor(v) or #v == 0 then return false end
  for _, t in ipairs(v) do
    if not torch.is_tensor(t) then return false end
  end
  return true
end

local function has_right_inverse(m) return type(m.right_inverse) == 'function' end

local function check_same(what, want, got, op, detail)
  if want ~= got then
    error(string.format('%s: %s, unless the `unsafe` flag is enabled.\n%s%s\n%s%s', op, what, detail[1],
      tostring(want), detail[2], tostring(got)), 0)
  end
end

-- ---- ParametrizationList: the parametrizations of one tensor and its original(s) ----
local ParametrizationList = container.ModuleList:extend('ParametrizationList')
M.ParametrizationList = ParametrizationList

function ParametrizationList:init(modules, original, unsafe)
  local op = 'register_parametrization'
  container.ModuleList.init(self, modules)
  self.unsafe = unsafe and true or false
  local shape, dtype = original.shape, original.dtype
  local new = original
  torch.no_grad(function()
    for i = #modules, 1, -1 do
      local p = modules[i]
      if has_right_inverse(p) then
        local ok, r = pcall(p.right_inverse, p, new)
        if ok then new = r elseif not is_not_implemented(r) then error(r, 0) end
      end
    end
  end)
  if not torch.is_tensor(new) and not is_tensor_list(new) then
    error(string.format("%s: 'right_inverse' must return a Tensor or an array of tensors. Got %s", op,
      typename(new)), 0)
  end
  self.is_tensor = torch.is_tensor(new)
  self.ntensors = self.is_tensor and 1 or #new
  if self.is_tensor then
    if new.dtype ~= dtype then
      error(string.format('%s: When `right_inverse` outputs one tensor, it may not change the dtype.\n'
        .. 'original.dtype: %s\nright_inverse(original).dtype: %s', op, tostring(dtype), tostring(new.dtype)), 0)
    end
    -- set_, so that an optimizer holding the original keeps it
    torch.no_grad(function() original:set_(new) end)
    register_parameter_or_buffer(self, 'original', original)
  else
    for i, t in ipairs(new) do
      -- PyTorch's names: original0, original1, ...; each requires grad as the original did
      local o = t
      if parameter.is_parameter(original) then o = parameter.Parameter(t:detach(), original.requires_grad) end
      register_parameter_or_buffer(self, 'original' .. (i - 1), o)
    end
  end
  if not self.unsafe then
    local z = self:forward()
    if not torch.is_tensor(z) then
      error(string.format('%s: A parametrization must return a tensor. Got %s.', op, typename(z)), 0)
    end
    check_same('Registering a parametrization may not change the dtype of the tensor', dtype, z.dtype, op,
      { 'unparametrized dtype: ', 'parametrized dtype: ' })
    check_same('Registering a parametrization may not change the shape of the tensor', shape, z.shape, op,
      { 'unparametrized shape: ', 'parametrized shape: ' })
  end
end

function ParametrizationList:originals()
  if self.is_tensor then return { self.original } end
  local out = {}
  for i = 1, self.ntensors do out[i] = self['original' .. (i - 1)] end
  return out
end

-- stores the right inverse of value (through every parametrization, last first) in the original(s)
function ParametrizationList:right_inverse(value)
  torch.no_grad(function()
    for i = #self, 1, -1 do
      local p = self[i]
      if not has_right_inverse(p) then
        error(string.format('parametrize: parametrization %s does not implement right_inverse.', p:_get_name()), 0)
      end
      value = p:right_inverse(value)
    end
    if self.is_tensor then
      if not torch.is_tensor(value) then
        error('parametrize: `right_inverse` should return a tensor. Got ' .. typename(value), 0)
      end
      if value.dtype ~= self.original.dtype then
        error(string.format('parametrize: The tensor returned by `right_inverse` has dtype %s while `original` has '
          .. 'dtype %s', tostring(value.dtype), tostring(self.original.dtype)), 0)
      end
      self.original:set_(value)
    else
      if not is_tensor_list(value) or #value ~= self.ntensors then
        error(string.format("parametrize: 'right_inverse' must return an array of %d tensors. Got %s", self.ntensors,
          typename(value)), 0)
      end
      for i, t in ipairs(value) do
        local o = self['original' .. (i - 1)]
        if t.dtype ~= o.dtype then
          error(string.format('parametrize: Tensor %d returned by `right_inverse` has dtype %s while `original%d` has '
            .. 'dtype %s', i, tostring(t.dtype), i - 1, tostring(o.dtype)), 0)
        end
        o:set_(t)
      end
    end
  end)
end

function ParametrizationList:forward()
  local x = self[1](table.unpack(self:originals()))
  for i = 2, #self do x = self[i](x) end
  return x
end

-- ---- the class injected into a parametrized module ----
local function parametrizations_of(module)
  local p = rawget(module, VALS).parametrizations
  if p ~= nil and Module.is_module(p) and class.isinstance(p, container.ModuleDict) then return p end
end

local function list_of(module, name)
  local p = parametrizations_of(module)
  if p == nil or rawget(p, KIND)[name] ~= 'module' then return nil end
  return rawget(p, VALS)[name]
end

local function get_parametrized(module, name)
  local list = list_of(module, name)
  if cache_depth > 0 then
    local per = cache[module]
    if per == nil then per = {}; cache[module] = per end
    local t = per[name]
    if t == nil then t = list(); per[name] = t end
    return t
  end
  return list()
end

local function inject_class(module)
  local cls = getmetatable(module)
  local P = class.Object.extend(cls, 'Parametrized' .. (rawget(cls, '__name') or 'Module'))
  local names = {}
  rawset(P, '_parametrized_names', names)
  local parent_index, parent_newindex = cls.__index, cls.__newindex
  P.__index = function(t, k)
    if names[k] then return get_parametrized(t, k) end
    if type(parent_index) == 'function' then return parent_index(t, k) end
    return parent_index[k]
  end
  P.__newindex = function(t, k, v)
    if names[k] then
      list_of(t, k):right_inverse(v)
      return
    end
    parent_newindex(t, k, v)
  end
  setmetatable(module, P)
  return P
end

-- is_parametrized(module, name): is name (or, with no name, any tensor) parametrized?
function M.is_parametrized(module, name)
  if not Module.is_module(module) then return false end
  local p = parametrizations_of(module)
  if p == nil then return false end
  if name == nil then return #rawget(p, ORDER).module > 0 end
  return rawget(p, KIND)[name] == 'module'
end

-- type_before_parametrizations(module): the class the module had before its first parametrization
function M.type_before_parametrizations(module)
  local cls = getmetatable(module)
  if M.is_parametrized(module) then return rawget(cls, 'super') end
  return cls
end

local check_module = require('torch.nn.weight_norm')._check_module

local function check_tensor(what, z, op, y)
  if not torch.is_tensor(z) then error(string.format('%s: %s must return a tensor. Got %s.', op, what, typename(z)), 0) end
  check_same(what .. ' may not change the dtype of the tensor', y.dtype, z.dtype, op,
    { 'unparametrized dtype: ', 'parametrized dtype: ' })
  check_same(what .. ' may not change the shape of the tensor', y.shape, z.shape, op,
    { 'unparametrized shape: ', 'parametrized shape: ' })
end

-- register_parametrization(module, tensor_name, parametrization, {unsafe = false}) -> module
function M.register_parametrization(module, tensor_name, parametrization, o)
  local op = 'register_parametrization'
  check_module(module, op, 2)
  if type(tensor_name) ~= 'string' then
    error(op .. ': tensor_name must be a string, got ' .. type(tensor_name), 2)
  end
  if not Module.is_module(parametrization) then
    error(op .. ': the parametrization must be a Module, got ' .. typename(parametrization), 2)
  end
  local unsafe = type(o) == 'table' and o.unsafe or (o == true)
  parametrization:train(module.training)
  local kind = rawget(module, KIND)[tensor_name]
  if M.is_parametrized(module, tensor_name) then
    local list = list_of(module, tensor_name)
    if not unsafe then
      local y = module[tensor_name]
      local x = parametrization(y)
      check_tensor('A parametrization', x, op, y)
      if has_right_inverse(parametrization) then
        local ok, z = pcall(parametrization.right_inverse, parametrization, x)
        if ok then
          check_tensor('parametrization.right_inverse', z, op, y)
        elseif not is_not_implemented(z) then
          error(z, 0)
        end
      end
    end
    list:append(parametrization)
    list.unsafe = list.unsafe or unsafe and true or false
  elseif (kind == 'param' or kind == 'buffer') and rawget(module, VALS)[tensor_name] ~= nil then
    local original = rawget(module, VALS)[tensor_name]
    local list = ParametrizationList({ parametrization }, original, unsafe)
    Module._remove_name(module, tensor_name)
    if not M.is_parametrized(module) then
      inject_class(module)
      module.parametrizations = container.ModuleDict()
    end
    rawget(getmetatable(module), '_parametrized_names')[tensor_name] = true
    module.parametrizations[tensor_name] = list
  else
    error(string.format("%s: Module '%s' does not have a parameter, a buffer, or a parametrized element with name '%s'",
      op, module:_get_name(), tensor_name), 2)
  end
  return module
end

-- remove_parametrizations(module, tensor_name, {leave_parametrized = true}) -> module: the tensor
-- becomes a plain parameter (or buffer) again, holding its parametrized value (or, with
-- leave_parametrized = false, the original); the original tensor object is kept (set_), so an
-- optimizer holding it keeps working
function M.remove_parametrizations(module, tensor_name, o)
  local op = 'remove_parametrizations'
  check_module(module, op, 2)
  local leave = true
  if type(o) == 'table' then
    if o.leave_parametrized ~= nil then leave = o.leave_parametrized end
  elseif o ~= nil then
    leave = o
  end
  if not M.is_parametrized(module, tensor_name) then
    error(string.format('%s: Module %s does not have a parametrization on %s', op, module:_get_name(),
      tostring(tensor_name)), 2)
  end
  local list = list_of(module, tensor_name)
  local original
  if list.is_tensor then
    original = list.original
    if leave then
      local t = torch.no_grad(function() return module[tensor_name] end)
      torch.no_grad(function() original:set_(t) end)
    end
  else
    if not leave then
      error(op .. ': Cannot leave unparametrized (`leave_parametrized = false`) a tensor that is parametrized in '
        .. 'terms of a sequence of tensors.', 2)
    end
    local t = module[tensor_name]
    original = t.requires_grad and parameter.Parameter(t:detach(), true) or t:detach()
  end
  local cls = getmetatable(module)
  rawget(cls, '_parametrized_names')[tensor_name] = nil
  local dict = module.parametrizations
  Module._remove_name(dict, tensor_name)
  register_parameter_or_buffer(module, tensor_name, original)
  if not M.is_parametrized(module) then
    Module._remove_name(module, 'parametrizations')
    setmetatable(module, rawget(cls, 'super'))
  end
  return module
end

return M
