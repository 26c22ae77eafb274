-- Containers: nn.Sequential, nn.ModuleList (children named '1', '2', ... so that seq[i] is the
-- child at 1-based index i), nn.ModuleDict, and nn.ParameterList and nn.ParameterDict, which hold
-- parameters the same ways.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local parameter = require 'torch.nn.parameter'
local as_int = require('torch.composite').as_int

local M = {}
local VALS, ORDER = Module._VALS, Module._ORDER
local is_module, remove_name, addindent = Module.is_module, Module._remove_name, Module._addindent
local module_index, module_newindex = Module.__index, Module.__newindex

local function child_list(self)
  local out, vals = {}, self[VALS]
  for i, name in ipairs(self[ORDER].module) do out[i] = vals[name] end
  return out
end

local function check_module(m, op, level)
  if not is_module(m) then
    error(string.format('%s: expected a Module, got %s', op, type(m) == 'table' and 'table' or type(m)), level + 1)
  end
end

-- renames the children '1'..'n' in the order given
local function set_children(self, list)
  for _, name in ipairs({ table.unpack(self[ORDER].module) }) do remove_name(self, name) end
  for i, m in ipairs(list) do Module._setattr(self, tostring(i), m) end
end

-- the 1-based position of an integer index, negative ones counting from the end
local function position(self, k, op, allow_end)
  local n = #self[ORDER].module
  local i = k < 0 and n + k + 1 or k
  if i < 1 or i > n + (allow_end and 1 or 0) then
    error(string.format('%s: index %d is out of range (the container has %d modules)', op, k, n), 3)
  end
  return i
end

-- ---- behaviour shared by Sequential and ModuleList ----
local List = Module:extend('_ModuleListBase')

function List.__index(t, k)
  k = as_int(k)
  if math.type(k) == 'integer' then
    local n = #t[ORDER].module
    if k < 0 then k = n + k + 1 end
    return t[VALS][tostring(k)]
  end
  return module_index(t, k)
end

function List.__newindex(t, k, v)
  k = as_int(k)
  if math.type(k) == 'integer' then
    local op = t:_get_name() .. '.__newindex'
    local i = position(t, k, op, true)
    if v == nil then
      local list = child_list(t)
      table.remove(list, i)
      set_children(t, list)
      return
    end
    check_module(v, op, 2)
    Module._setattr(t, tostring(i), v)
    return
  end
  module_newindex(t, k, v)
end

function List.__len(t) return #t[ORDER].module end

-- modules given as varargs, or as one array of modules
local function module_args(op, ...)
  local n = select('#', ...)
  local first = ...
  if n == 1 and type(first) == 'table' and not is_module(first) then
    local list = {}
    for i, m in ipairs(first) do
      check_module(m, op, 3)
      list[i] = m
    end
    return list
  end
  local list = {}
  for i = 1, n do
    local m = select(i, ...)
    check_module(m, op, 3)
    list[i] = m
  end
  return list
end

function List:append(m)
  check_module(m, self:_get_name() .. '.append', 2)
  Module._setattr(self, tostring(#self[ORDER].module + 1), m)
  return self
end
List.add = List.append

-- extend(modules) on an instance appends them; on a class, extend(name) makes a subclass as usual
local class_extend = Module.extend
function List:extend(ms)
  if rawget(self, VALS) == nil then return class_extend(self, ms) end
  local op = self:_get_name() .. '.extend'
  if type(ms) ~= 'table' then error(op .. ': expected an array of modules, got ' .. type(ms), 2) end
  local list = is_module(ms) and child_list(ms) or ms
  for _, m in ipairs(list) do check_module(m, op, 2) end
  for _, m in ipairs(list) do Module._setattr(self, tostring(#self[ORDER].module + 1), m) end
  return self
end

-- insert(index, module): before the module now at index (1-based; #list + 1 appends)
function List:insert(index, m)
  local op = self:_get_name() .. '.insert'
  check_module(m, op, 2)
  local i = position(self, index, op, true)
  local list = child_list(self)
  table.insert(list, i, m)
  set_children(self, list)
  return self
end

-- pop(index = -1): removes and returns the module at index
function List:pop(index)
  local i = position(self, index or -1, self:_get_name() .. '.pop', false)
  local list = child_list(self)
  local m = table.remove(list, i)
  set_children(self, list)
  return m
end

function List:__pairs()
  local list, i = child_list(self), 0
  return function()
    i = i + 1
    if list[i] ~= nil then return i, list[i] end
  end, self, nil
end

-- Sequential(m1, m2, ...) or Sequential({m1, m2, ...}): applies the modules in order
local Sequential = List:extend('Sequential')
M.Sequential = Sequential

function Sequential:init(...)
  for i, m in ipairs(module_args('Sequential', ...)) do Module._setattr(self, tostring(i), m) end
end

function Sequential:forward(x)
  local vals = self[VALS]
  for _, name in ipairs(self[ORDER].module) do x = vals[name](x) end
  return x
end

-- ModuleList(modules): holds modules; it has no forward
local ModuleList = List:extend('ModuleList')
M.ModuleList = ModuleList

function ModuleList:init(...)
  if select('#', ...) == 0 or (select('#', ...) == 1 and (...) == nil) then return end
  for i, m in ipairs(module_args('ModuleList', ...)) do Module._setattr(self, tostring(i), m) end
end

-- PyTorch's ModuleList repr: runs of identical children print once as '(1-3): 3 x Linear(...)'
function ModuleList:__tostring()
  local list = child_list(self)
  if #list == 0 then return self:_get_name() .. '()' end
  local blocks = {}
  for i, m in ipairs(list) do
    local r = tostring(m)
    local last = blocks[#blocks]
    if last and last.repr == r then last.stop = i else blocks[#blocks + 1] = { start = i, stop = i, repr = r } end
  end
  local lines = {}
  for _, b in ipairs(blocks) do
    local s
    if b.start == b.stop then
      s = string.format('(%d): %s', b.start, b.repr)
    else
      s = string.format('(%d-%d): %d x %s', b.start, b.stop, b.stop - b.start + 1, b.repr)
    end
    lines[#lines + 1] = addindent(s, 2)
  end
  return self:_get_name() .. '(\n  ' .. table.concat(lines, '\n  ') .. '\n)'
end

-- items(), pop(key), clear() and pairs() of a dictionary container (ModuleDict, ParameterDict)
-- whose entries are of `kind` ('module' or 'param'), in insertion order
local function dict_methods(cls, kind, what)
  local cls_name = cls.__name
  function cls:items()
    local out = {}
    for i, name in ipairs(self[ORDER][kind]) do out[i] = { name, self[VALS][name] } end
    return out
  end
  function cls:pop(key)
    local v = self[VALS][key]
    if v == nil or self[Module._KIND][key] ~= kind then
      error(string.format("%s.pop: no %s named '%s'", cls_name, what, tostring(key)), 2)
    end
    remove_name(self, key)
    return v
  end
  function cls:clear()
    for _, name in ipairs(self:keys()) do remove_name(self, name) end
  end
  function cls:__pairs()
    local names, i = self:keys(), 0
    return function()
      i = i + 1
      local k = names[i]
      if k ~= nil then return k, self[VALS][k] end
    end, self, nil
  end
end

-- ModuleDict(modules): modules by name; given a map, the names are added in sorted order, given an
-- array of {name, module} pairs, in that order. pairs(d) iterates in insertion order.
local ModuleDict = Module:extend('ModuleDict')
M.ModuleDict = ModuleDict

local function dict_entries(t, op)
  if type(t) ~= 'table' or is_module(t) then
    error(op .. ': expected a table of modules, got ' .. type(t), 3)
  end
  local entries = {}
  if #t > 0 then
    for i, e in ipairs(t) do
      if type(e) ~= 'table' or type(e[1]) ~= 'string' then
        error(op .. ': element ' .. i .. ' should be a {name, module} pair', 3)
      end
      entries[i] = { e[1], e[2] }
    end
  else
    for k, v in pairs(t) do entries[#entries + 1] = { k, v } end
    table.sort(entries, function(a, b) return tostring(a[1]) < tostring(b[1]) end)
  end
  for _, e in ipairs(entries) do
    if type(e[1]) ~= 'string' then error(op .. ': module names must be strings, got ' .. type(e[1]), 3) end
    check_module(e[2], op, 3)
  end
  return entries
end

function ModuleDict:init(modules)
  if modules ~= nil then self:update(modules) end
end

function ModuleDict:update(modules)
  for _, e in ipairs(dict_entries(modules, 'ModuleDict.update')) do self:add_module(e[1], e[2]) end
  return self
end

-- d[name] = nil removes the module (PyTorch's del d[name]); other assignments are a module's
function ModuleDict.__newindex(t, k, v)
  if v == nil and type(k) == 'string' and t[Module._KIND][k] == 'module' then
    remove_name(t, k)
    return
  end
  module_newindex(t, k, v)
end

function ModuleDict.__len(t) return #t[ORDER].module end

function ModuleDict:keys() return { table.unpack(self[ORDER].module) } end
function ModuleDict:values() return child_list(self) end
dict_methods(ModuleDict, 'module', 'module')

-- ---- containers of parameters ----
-- a tensor as a parameter: itself when it is one, else nn.Parameter(t) (PyTorch's conversion)
local function as_parameter(v, op, level)
  if not torch.is_tensor(v) then
    error(string.format('%s: expected a tensor or a Parameter, got %s', op, type(v)), level + 1)
  end
  if parameter.is_parameter(v) then return v end
  return parameter.Parameter(v)
end

local LEGACY_TYPES = { float32 = 'FloatTensor', float64 = 'DoubleTensor', float16 = 'HalfTensor',
  bfloat16 = 'BFloat16Tensor', int64 = 'LongTensor', int32 = 'IntTensor', int16 = 'ShortTensor', int8 = 'CharTensor',
  uint8 = 'ByteTensor', bool = 'BoolTensor' }

-- PyTorch's line for a parameter in a container's repr: 'Parameter containing: [torch.float32 of size 2x3]'
-- (ParameterDict names the legacy type, torch.FloatTensor, as PyTorch 1.13 does)
local function parameter_line(key, p, legacy)
  local sizes = {}
  for i, n in ipairs(p.shape) do sizes[i] = tostring(n) end
  local dev = p.device
  local where = ''
  if dev.type == 'cuda' then where = string.format(' (GPU %d)', dev.index)
  elseif dev.type ~= 'cpu' or dev.index ~= 0 then where = ' (' .. tostring(dev) .. ')' end
  local kind = legacy and ('torch.' .. (dev.type == 'cuda' and 'cuda.' or '') .. (LEGACY_TYPES[p.dtype.name] or 'Tensor'))
    or tostring(p.dtype)
  return string.format('  (%s): Parameter containing: [%s of size %s%s]', key, kind, table.concat(sizes, 'x'), where)
end

-- ParameterList(params): parameters named '1', '2', ... (ModuleList's numbering, so that pl[i] is the
-- parameter at 1-based index i and the state dict's keys are '1', '2', ...); a tensor that is not a
-- Parameter becomes one. pl[#pl + 1] = p appends, pl[i] = nil removes and renumbers.
local ParameterList = Module:extend('ParameterList')
M.ParameterList = ParameterList

local function param_list(self)
  local out, vals = {}, self[VALS]
  for i, name in ipairs(self[ORDER].param) do out[i] = vals[name] end
  return out
end

local function set_params(self, list)
  for _, name in ipairs({ table.unpack(self[ORDER].param) }) do remove_name(self, name) end
  for i, p in ipairs(list) do Module._setattr(self, tostring(i), p) end
end

function ParameterList.__index(t, k)
  k = as_int(k)
  if math.type(k) == 'integer' then
    if k < 0 then k = #t[ORDER].param + k + 1 end
    return t[VALS][tostring(k)]
  end
  return module_index(t, k)
end

function ParameterList.__newindex(t, k, v)
  k = as_int(k)
  if math.type(k) == 'integer' then
    local n = #t[ORDER].param
    local i = k < 0 and n + k + 1 or k
    if i < 1 or i > n + 1 then
      error(string.format('ParameterList.__newindex: index %d is out of range (the list has %d parameters)', k, n), 2)
    end
    if v == nil then
      local list = param_list(t)
      table.remove(list, i)
      set_params(t, list)
      return
    end
    Module._setattr(t, tostring(i), as_parameter(v, 'ParameterList.__newindex', 2))
    return
  end
  module_newindex(t, k, v)
end

function ParameterList.__len(t) return #t[ORDER].param end

function ParameterList:init(params)
  if params ~= nil then self:extend(params) end
end

function ParameterList:append(p)
  Module._setattr(self, tostring(#self[ORDER].param + 1), as_parameter(p, 'ParameterList.append', 2))
  return self
end

-- extend(params) on an instance appends them; on a class, extend(name) makes a subclass as usual
function ParameterList:extend(ps)
  if rawget(self, VALS) == nil then return class_extend(self, ps) end
  if type(ps) ~= 'table' or torch.is_tensor(ps) then
    error('ParameterList.extend: expected an array of tensors, got ' .. (torch.is_tensor(ps) and 'a tensor' or type(ps)), 2)
  end
  local list = {}
  for i, p in ipairs(ps) do list[i] = as_parameter(p, 'ParameterList.extend', 2) end
  for _, p in ipairs(list) do Module._setattr(self, tostring(#self[ORDER].param + 1), p) end
  return self
end

function ParameterList:__pairs()
  local list, i = param_list(self), 0
  return function()
    i = i + 1
    if list[i] ~= nil then return i, list[i] end
  end, self, nil
end

function ParameterList:extra_repr()
  local lines = {}
  for i, p in ipairs(param_list(self)) do lines[i] = parameter_line(i, p, false) end
  return table.concat(lines, '\n')
end

-- ParameterDict(params): parameters by name; given a map, the names are added in sorted order,
-- given an array of {name, parameter} pairs or another ParameterDict, in that order. d[name] = t
-- adds or replaces (a tensor becomes a Parameter), d[name] = nil removes; pairs(d) iterates in
-- insertion order. A name that is a method (keys, update, ...) is refused.
local ParameterDict = Module:extend('ParameterDict')
M.ParameterDict = ParameterDict

local function param_entries(t, op)
  if type(t) ~= 'table' or torch.is_tensor(t) or (is_module(t) and not t.is_parameter_dict) then
    error(op .. ': expected a table of parameters, got ' .. (torch.is_tensor(t) and 'a tensor' or type(t)), 3)
  end
  local entries = {}
  if is_module(t) then
    entries = t:items()
  elseif #t > 0 then
    for i, e in ipairs(t) do
      if type(e) ~= 'table' or type(e[1]) ~= 'string' then
        error(op .. ': element ' .. i .. ' should be a {name, parameter} pair', 3)
      end
      entries[i] = { e[1], e[2] }
    end
  else
    for k, v in pairs(t) do
      if type(k) ~= 'string' then error(op .. ': parameter names must be strings, got ' .. type(k), 3) end
      entries[#entries + 1] = { k, v }
    end
    table.sort(entries, function(a, b) return a[1] < b[1] end)
  end
  for _, e in ipairs(entries) do e[2] = as_parameter(e[2], op, 3) end
  return entries
end

ParameterDict.is_parameter_dict = true

function ParameterDict:init(params)
  if params ~= nil then self:update(params) end
end

function ParameterDict:update(params)
  for _, e in ipairs(param_entries(params, 'ParameterDict.update')) do self:register_parameter(e[1], e[2]) end
  return self
end

function ParameterDict.__newindex(t, k, v)
  if type(k) == 'string' and (v == nil and t[Module._KIND][k] == 'param') then
    remove_name(t, k)
    return
  end
  if type(k) == 'string' and torch.is_tensor(v) then
    t:register_parameter(k, as_parameter(v, 'ParameterDict.__newindex', 2))
    return
  end
  module_newindex(t, k, v)
end

function ParameterDict.__len(t) return #t[ORDER].param end

function ParameterDict:keys() return { table.unpack(self[ORDER].param) } end
function ParameterDict:values() return param_list(self) end
-- get(key, default): the parameter named key, or default
function ParameterDict:get(key, default)
  if self[Module._KIND][key] == 'param' and self[VALS][key] ~= nil then return self[VALS][key] end
  return default
end

dict_methods(ParameterDict, 'param', 'parameter')

function ParameterDict:extra_repr()
  local lines = {}
  for i, e in ipairs(self:items()) do lines[i] = parameter_line(e[1], e[2], true) end
  return table.concat(lines, '\n')
end

return M
