-- nn.Module: the base class of layers and models. Every field of an instance lives outside its raw
-- table (the raw table holds only private keys), so every assignment reaches __newindex, which
-- registers parameters, buffers and submodules in assignment order as PyTorch's __setattr__ does.
local torch = require 'torch'
local class = require 'torch.class'
local parameter = require 'torch.nn.parameter'

local is_parameter = parameter.is_parameter
local is_tensor = torch.is_tensor
local getmetatable, rawget, type = getmetatable, rawget, type

-- private keys of an instance's raw table
local VALS = setmetatable({}, { __name = 'nn.Module values' })     -- name -> value, every field
local KIND = setmetatable({}, { __name = 'nn.Module kinds' })      -- name -> 'param' | 'buffer' | 'module'
local ORDER = setmetatable({}, { __name = 'nn.Module order' })     -- kind -> array of names
local NONPERSIST = setmetatable({}, { __name = 'nn.Module non-persistent buffers' })
-- the number of changes made to the instance's fields (assignments, registrations, removals), so
-- that a copy of it (a DataParallel replica's) can tell whether it is still current
local CHANGES = setmetatable({}, { __name = 'nn.Module changes' })

local Module = class.Object:extend('Module')
-- reachable from package.loaded, so that a copy of an instance in another Lua state (a
-- DataParallel replica's thread) is keyed by that state's own keys
Module._VALS, Module._KIND, Module._ORDER, Module._NONPERSIST = VALS, KIND, ORDER, NONPERSIST
Module._CHANGES = CHANGES

function Module.__alloc(cls)
  return setmetatable({
    [VALS] = { training = true },
    [KIND] = {},
    [ORDER] = { param = {}, buffer = {}, module = {} },
    [NONPERSIST] = {},
    [CHANGES] = 0,
  }, cls)
end

-- subclasses call nn.Module.init(self); the state already exists, so there is nothing to do
function Module:init() end

local function is_module(v) return type(v) == 'table' and rawget(v, VALS) ~= nil end
Module.is_module = is_module

local function get_name(m) return rawget(getmetatable(m), '__name') or 'Module' end

local function typename(v)
  if is_tensor(v) then return 'torch.Tensor' end
  if is_module(v) then return get_name(v) end
  return type(v)
end

-- fields first (parameters, buffers, submodules and plain values), then the class chain
function Module.__index(t, k)
  local v = t[VALS][k]
  if v ~= nil then return v end
  return getmetatable(t)[k]
end

local function changed(t) rawset(t, CHANGES, (rawget(t, CHANGES) or 0) + 1) end

local function remove_name(t, k)
  changed(t)
  local kind = t[KIND][k]
  if kind then
    local list = t[ORDER][kind]
    for i = 1, #list do
      if list[i] == k then table.remove(list, i); break end
    end
    t[KIND][k] = nil
  end
  t[NONPERSIST][k] = nil
  t[VALS][k] = nil
end

local function check_member_name(what, k, level)
  if type(k) ~= 'string' then
    error(string.format('%s name should be a string, got %s', what, type(k)), level + 1)
  end
  if k == '' then error(string.format('%s name can\'t be empty string ""', what), level + 1) end
  if k:find('.', 1, true) then error(string.format('%s name can\'t contain ".", got: %s', what, k), level + 1) end
end

local function register(t, kind, k, v)
  changed(t)
  if t[KIND][k] ~= kind then
    remove_name(t, k)
    t[KIND][k] = kind
    local list = t[ORDER][kind]
    list[#list + 1] = k
  end
  t[VALS][k] = v
end

-- PyTorch's __setattr__: a Parameter registers; a parameter name takes only a Parameter or nil;
-- a Module registers; a submodule name takes only a Module or nil; a buffer name takes a tensor
-- or nil; anything else is a plain field.
local function setattr(t, k, v, level)
  level = (level or 1) + 1
  changed(t)
  local vals = t[VALS]
  if type(k) ~= 'string' then vals[k] = v; return end
  local kind = t[KIND][k]
  if v ~= nil and is_tensor(v) and is_parameter(v) then
    check_member_name('parameter', k, level)
    register(t, 'param', k, v)
  elseif kind == 'param' then
    if v ~= nil then
      error(string.format("cannot assign '%s' as parameter '%s' (torch.nn.Parameter or nil expected)",
        typename(v), k), level)
    end
    vals[k] = nil
  elseif is_module(v) then
    check_member_name('module', k, level)
    register(t, 'module', k, v)
  elseif kind == 'module' then
    if v ~= nil then
      error(string.format("cannot assign '%s' as child module '%s' (torch.nn.Module or nil expected)",
        typename(v), k), level)
    end
    vals[k] = nil
  elseif kind == 'buffer' then
    if v ~= nil and not is_tensor(v) then
      error(string.format("cannot assign '%s' as buffer '%s' (torch.Tensor or nil expected)", typename(v), k), level)
    end
    vals[k] = v
  else
    vals[k] = v
  end
end
Module._setattr = setattr

function Module.__newindex(t, k, v) setattr(t, k, v, 2) end

-- a name that is already a field of another kind, or a method, cannot be registered as kind
local function check_free(t, what, kind, k)
  if (t[VALS][k] ~= nil and t[KIND][k] ~= kind) or getmetatable(t)[k] ~= nil then
    error(string.format("%s: attribute '%s' already exists", what, k), 3)
  end
end

function Module:register_buffer(name, t, persistent)
  if type(persistent) == 'table' then persistent = persistent.persistent end
  if persistent == nil then persistent = true end
  check_member_name('buffer', name, 2)
  check_free(self, 'register_buffer', 'buffer', name)
  if t ~= nil and not is_tensor(t) then
    error(string.format("register_buffer: cannot assign '%s' object to buffer '%s' (torch.Tensor or nil required)",
      typename(t), name), 2)
  end
  register(self, 'buffer', name, t)
  if persistent then self[NONPERSIST][name] = nil else self[NONPERSIST][name] = true end
end

function Module:register_parameter(name, p)
  check_member_name('parameter', name, 2)
  check_free(self, 'register_parameter', 'param', name)
  if p ~= nil and not (is_tensor(p) and is_parameter(p)) then
    error(string.format("register_parameter: cannot assign '%s' object to parameter '%s' (torch.nn.Parameter or nil "
      .. 'required)', typename(p), name), 2)
  end
  register(self, 'param', name, p)
end

function Module:add_module(name, m)
  check_member_name('module', name, 2)
  check_free(self, 'add_module', 'module', name)
  if m ~= nil and not is_module(m) then
    error(string.format('add_module: %s is not a Module subclass', typename(m)), 2)
  end
  register(self, 'module', name, m)
end
Module.register_module = Module.add_module

-- ---- traversal ----
local function join(prefix, name) return prefix == '' and name or prefix .. '.' .. name end

local function collect_modules(m, prefix, memo, out)
  if memo then
    if memo[m] then return out end
    memo[m] = true
  end
  out[#out + 1] = { prefix, m }
  local vals = m[VALS]
  for _, name in ipairs(m[ORDER].module) do
    local c = vals[name]
    if c ~= nil then collect_modules(c, join(prefix, name), memo, out) end
  end
  return out
end

local function collect_members(m, kind, prefix, recurse, dedup)
  local mods = recurse and collect_modules(m, prefix, dedup and {} or nil, {}) or { { prefix, m } }
  local out, memo = {}, {}
  for _, pm in ipairs(mods) do
    local mp, mod = pm[1], pm[2]
    local vals = mod[VALS]
    for _, name in ipairs(mod[ORDER][kind]) do
      local v = vals[name]
      if v ~= nil and not (dedup and memo[v]) then
        memo[v] = true
        out[#out + 1] = { join(mp, name), v }
      end
    end
  end
  return out
end

-- (prefix, recurse, remove_duplicate) positional, or one options table
local function member_args(a, b, c)
  if type(a) == 'table' then
    return a.prefix or '', a.recurse ~= false, a.remove_duplicate ~= false
  end
  return a or '', b ~= false, c ~= false
end

local function iter(list)
  local i = 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

local function values_of(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e[2] end
  return out
end

local function recurse_arg(r)
  if type(r) == 'table' then return r.recurse ~= false end
  return r ~= false
end

function Module:parameters(recurse)
  return values_of(collect_members(self, 'param', '', recurse_arg(recurse), true))
end

function Module:named_parameters(...)
  local prefix, recurse, dedup = member_args(...)
  return iter(collect_members(self, 'param', prefix, recurse, dedup))
end

function Module:buffers(recurse)
  return values_of(collect_members(self, 'buffer', '', recurse_arg(recurse), true))
end

function Module:named_buffers(...)
  local prefix, recurse, dedup = member_args(...)
  return iter(collect_members(self, 'buffer', prefix, recurse, dedup))
end

local function children_list(m)
  local out, memo = {}, {}
  local vals = m[VALS]
  for _, name in ipairs(m[ORDER].module) do
    local c = vals[name]
    if c ~= nil and not memo[c] then
      memo[c] = true
      out[#out + 1] = { name, c }
    end
  end
  return out
end

function Module:children() return values_of(children_list(self)) end
function Module:named_children() return iter(children_list(self)) end

function Module:modules() return values_of(collect_modules(self, '', {}, {})) end

-- named_modules({prefix = '', remove_duplicate = true}) or named_modules(memo, prefix, remove_duplicate)
function Module:named_modules(a, b, c)
  local memo, prefix, dedup
  if type(a) == 'table' and (a.prefix ~= nil or a.remove_duplicate ~= nil) then
    prefix, dedup = a.prefix or '', a.remove_duplicate ~= false
  else
    memo, prefix, dedup = a, b or '', c ~= false
  end
  return iter(collect_modules(self, prefix, dedup and (memo or {}) or nil, {}))
end

-- the submodule at a dotted path ('' is the module itself); op names the caller in errors
local function submodule_at(self, target, op, level)
  if target == '' or target == nil then return self end
  local m = self
  for part in tostring(target):gmatch('[^.]+') do
    local c = m[VALS][part]
    if m[KIND][part] ~= 'module' or c == nil then
      error(string.format('%s: %s has no attribute `%s`', op, get_name(m), part), level + 1)
    end
    m = c
  end
  return m
end

function Module:get_submodule(target) return submodule_at(self, target, 'get_submodule', 2) end

function Module:apply(fn)
  for _, c in ipairs(self:children()) do c:apply(fn) end
  fn(self)
  return self
end

function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= 'boolean' then error('train: training mode is expected to be boolean, got ' .. type(mode), 2) end
  self[VALS].training = mode
  changed(self)
  for _, c in ipairs(self:children()) do c:train(mode) end
  return self
end

function Module:eval() return self:train(false) end

function Module:requires_grad_(flag)
  if flag == nil then flag = true end
  for _, p in ipairs(self:parameters()) do p:requires_grad_(flag) end
  return self
end

-- set_to_none = true (PyTorch's default) drops the gradients; false zeroes them in place
function Module:zero_grad(set_to_none)
  if type(set_to_none) == 'table' then set_to_none = set_to_none.set_to_none end
  if set_to_none == nil then set_to_none = true end
  for _, p in ipairs(self:parameters()) do
    local g = p.grad
    if g ~= nil then
      if set_to_none then
        p.grad = nil
      else
        if g.grad_fn ~= nil then g:detach_() else g:requires_grad_(false) end
        torch.no_grad(function() g:zero_() end)
      end
    end
  end
end

-- ---- conversions: tensors change in place (set_) so that every reference sees the change ----
local function replace(t, new)
  if not rawequal(new, t) then t:set_(new) end
end

function Module:_apply(fn)
  for _, c in ipairs(self:children()) do c:_apply(fn) end
  local vals = self[VALS]
  torch.no_grad(function()
    for _, name in ipairs(self[ORDER].param) do
      local p = vals[name]
      if p ~= nil then
        replace(p, fn(p))
        local g = p.grad
        if g ~= nil then replace(g, fn(g)) end
      end
    end
    for _, name in ipairs(self[ORDER].buffer) do
      local b = vals[name]
      if b ~= nil then replace(b, fn(b)) end
    end
  end)
  return self
end

local function is_dtype(v)
  local mt = getmetatable(v)
  return type(v) == 'table' and type(mt) == 'table' and rawget(mt, '__name') == 'torch.dtype'
end
local function is_device(v)
  local mt = getmetatable(v)
  return type(v) == 'userdata' and type(mt) == 'table' and rawget(mt, '__name') == 'torch.device'
end

local function converter(device, dtype, non_blocking)
  local opts = non_blocking and { non_blocking = true } or nil
  return function(t)
    local r = t
    if dtype and r:is_floating_point() and r.dtype ~= dtype then r = r:to(dtype) end
    if device then
      if opts then r = r:to(device, opts) else r = r:to(device) end
    end
    return r
  end
end

-- to(device), to(dtype), to(tensor), to(device, dtype), to{device = ..., dtype = ..., non_blocking = ...}
function Module:to(...)
  local device, dtype, non_blocking
  for i = 1, select('#', ...) do
    local a = select(i, ...)
    if a == nil then
      -- skipped, as PyTorch's None
    elseif is_tensor(a) then
      device, dtype = a.device, a.dtype
    elseif is_dtype(a) then
      dtype = a
    elseif is_device(a) then
      device = a
    elseif type(a) == 'string' then
      device = torch.device(a)
    elseif type(a) == 'table' then
      if a.device ~= nil then device = is_device(a.device) and a.device or torch.device(a.device) end
      if a.dtype ~= nil then dtype = a.dtype end
      if a.non_blocking then non_blocking = true end
    else
      error('Module.to: expected a device, a dtype or a tensor, got ' .. type(a), 2)
    end
  end
  if dtype ~= nil and not (is_dtype(dtype) and dtype.is_floating_point) then
    error('nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=' .. tostring(dtype), 2)
  end
  return self:_apply(converter(device, dtype, non_blocking))
end

function Module:cuda(device)
  if device == nil then return self:to(torch.device('cuda')) end
  if type(device) == 'number' then return self:to(torch.device('cuda', device)) end
  return self:to(device)
end
function Module:cpu() return self:to(torch.device('cpu')) end
function Module:float() return self:_apply(converter(nil, torch.float32)) end
function Module:double() return self:_apply(converter(nil, torch.float64)) end
function Module:half() return self:_apply(converter(nil, torch.float16)) end
function Module:bfloat16() return self:_apply(converter(nil, torch.bfloat16)) end

-- ---- state dicts ----
-- a table that remembers the order in which keys were added; pairs() follows it
local function ordered_dict()
  local order = {}
  return setmetatable({}, {
    __name = 'OrderedDict',
    __newindex = function(t, k, v)
      rawset(t, k, v)
      order[#order + 1] = k
    end,
    __pairs = function(t)
      local keys, seen = {}, {}
      for _, k in ipairs(order) do
        if not seen[k] and rawget(t, k) ~= nil then seen[k] = true; keys[#keys + 1] = k end
      end
      for k in next, t do
        if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
      end
      local i = 0
      return function()
        i = i + 1
        local k = keys[i]
        if k ~= nil then return k, rawget(t, k) end
      end, t, nil
    end,
  })
end
Module._ordered_dict = ordered_dict

-- the (key, tensor) pairs of a state dict in module order; shared modules appear under each name
local function each_state(m, prefix, fn)
  local vals = m[VALS]
  for _, name in ipairs(m[ORDER].param) do
    local p = vals[name]
    if p ~= nil then fn(prefix .. name, p, m, name) end
  end
  local np = m[NONPERSIST]
  for _, name in ipairs(m[ORDER].buffer) do
    local b = vals[name]
    if b ~= nil and not np[name] then fn(prefix .. name, b, m, name) end
  end
end

-- the functions of a hook list (an array of {id = n, fn = hook}) as they are now, so that a hook may
-- remove itself while the list runs
local function hook_fns(list)
  local c = {}
  for i, h in ipairs(list) do c[i] = h.fn end
  return c
end

local EXTRA_STATE = '_extra_state'

-- PyTorch's _save_to_state_dict and state_dict: the module's parameters and persistent buffers, its
-- extra state (when its class defines get_extra_state), its submodules', then its state-dict hooks
-- (hook(module, state_dict, prefix, local_metadata) may return a replacement, which a parent ignores)
local function save_state(m, prefix, out, keep_vars)
  each_state(m, prefix, function(key, t) out[key] = keep_vars and t or t:detach() end)
  if getmetatable(m).get_extra_state ~= Module.get_extra_state then
    out[prefix .. EXTRA_STATE] = m:get_extra_state()
  end
  local vals = m[VALS]
  for _, name in ipairs(m[ORDER].module) do
    local c = vals[name]
    if c ~= nil then save_state(c, prefix .. name .. '.', out, keep_vars) end
  end
  local hooks = vals._state_dict_hooks
  if hooks ~= nil then
    for _, hook in ipairs(hook_fns(hooks)) do
      local r = hook(m, out, prefix, {})
      if r ~= nil then out = r end
    end
  end
  return out
end

-- state_dict({prefix = '', keep_vars = false}): dotted names -> detached tensors sharing storage
function Module:state_dict(opts)
  opts = opts or {}
  return save_state(self, opts.prefix or '', opts.destination or ordered_dict(), opts.keep_vars)
end

local function quote_join(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = '"' .. tostring(k) .. '"' end
  return table.concat(parts, ', ')
end

local incompatible_mt = {
  __name = 'IncompatibleKeys',
  __tostring = function(r)
    if #r.missing_keys == 0 and #r.unexpected_keys == 0 then return '<All keys matched successfully>' end
    return string.format('IncompatibleKeys(missing_keys={%s}, unexpected_keys={%s})',
      quote_join(r.missing_keys), quote_join(r.unexpected_keys))
  end,
}

-- load_state_dict(sd, {strict = true}) (or a boolean): copies under no_grad into the module's own
-- tensors; raises one error listing every problem, as PyTorch. Each module, parents first, runs its
-- load-state-dict pre-hooks, loads its tensors and its extra state (when its class defines
-- set_extra_state; a missing `_extra_state` key is a missing key) and finds the unexpected keys
-- under its prefix (those whose first name is neither a submodule nor one of its tensors); its
-- post-hooks run after its submodules have loaded.
function Module:load_state_dict(sd, opts)
  local strict = true
  if type(opts) == 'boolean' then strict = opts
  elseif type(opts) == 'table' and opts.strict ~= nil then strict = opts.strict end
  if type(sd) ~= 'table' then
    error('load_state_dict: expected state_dict to be a table, got ' .. typename(sd), 2)
  end
  local src_keys, src_vals = {}, {}
  for k, v in pairs(sd) do
    src_keys[#src_keys + 1] = k
    src_vals[k] = v
  end
  local mt = getmetatable(sd)
  if not (type(mt) == 'table' and mt.__pairs) then
    table.sort(src_keys, function(a, b) return tostring(a) < tostring(b) end)
  end
  -- a copy that hooks may edit, keeping the keys' order
  local src = ordered_dict()
  for _, k in ipairs(src_keys) do src[k] = src_vals[k] end

  local missing, unexpected, errors = {}, {}, {}
  local function load(m, prefix)
    local vals = m[VALS]
    local pre = vals._load_state_dict_pre_hooks
    if pre ~= nil then
      for _, h in ipairs(table.move(pre, 1, #pre, 1, {})) do
        if h.with_module then
          h.fn(m, src, prefix, {}, true, missing, unexpected, errors)
        else
          h.fn(src, prefix, {}, true, missing, unexpected, errors)
        end
      end
    end
    local hook = m._load_state_hook
    if hook then hook(m, src, prefix) end
    local own = {}
    each_state(m, prefix, function(key, t, _, name)
      own[name] = true
      local v = src[key]
      if v == nil then
        missing[#missing + 1] = key
      elseif not is_tensor(v) then
        errors[#errors + 1] = string.format('While copying the parameter named "%s", expected torch.Tensor or '
          .. 'Tensor-like object from checkpoint but received %s', key, type(v))
      elseif v.shape ~= t.shape then
        errors[#errors + 1] = string.format('size mismatch for %s: copying a param with shape %s from checkpoint, '
          .. 'the shape in current model is %s.', key, tostring(v.shape), tostring(t.shape))
      else
        local ok, err = pcall(torch.no_grad, function() t:copy_(v) end)
        if not ok then
          errors[#errors + 1] = string.format('While copying the parameter named "%s", whose dimensions in the model '
            .. 'are %s and whose dimensions in the checkpoint are %s, an exception occurred : %s.',
            key, tostring(t.shape), tostring(v.shape), tostring(err))
        end
      end
    end)
    local extra_key = prefix .. EXTRA_STATE
    if getmetatable(m).set_extra_state ~= Module.set_extra_state then
      local v = src[extra_key]
      if v ~= nil then m:set_extra_state(v) else missing[#missing + 1] = extra_key end
    elseif src[extra_key] ~= nil then
      unexpected[#unexpected + 1] = extra_key
    end
    local kinds, n = m[KIND], #prefix
    for k in pairs(src) do
      if type(k) ~= 'string' then
        if prefix == '' then unexpected[#unexpected + 1] = k end
      elseif k ~= extra_key and k:sub(1, n) == prefix then
        local name = k:sub(n + 1):match('^[^.]*')
        if kinds[name] ~= 'module' and not own[name] then unexpected[#unexpected + 1] = k end
      end
    end
    for _, name in ipairs(m[ORDER].module) do
      local c = vals[name]
      if c ~= nil then load(c, prefix .. name .. '.') end
    end
    local post = vals._load_state_dict_post_hooks
    if post ~= nil and #post > 0 then
      local keys = setmetatable({ missing_keys = missing, unexpected_keys = unexpected }, incompatible_mt)
      for _, h in ipairs(hook_fns(post)) do
        if h(m, keys) ~= nil then
          error('load_state_dict: hooks registered with register_load_state_dict_post_hook are not expected to '
            .. 'return new values; edit incompatible_keys.missing_keys and unexpected_keys in place', 0)
        end
      end
    end
  end
  load(self, '')

  if strict then
    if #unexpected > 0 then
      table.insert(errors, 1, 'Unexpected key(s) in state_dict: ' .. quote_join(unexpected) .. '. ')
    end
    if #missing > 0 then
      table.insert(errors, 1, 'Missing key(s) in state_dict: ' .. quote_join(missing) .. '. ')
    end
  end
  if #errors > 0 then
    error(string.format('Error(s) in loading state_dict for %s:\n\t%s', get_name(self),
      table.concat(errors, '\n\t')), 2)
  end
  return setmetatable({ missing_keys = missing, unexpected_keys = unexpected }, incompatible_mt)
end

-- get_parameter, get_buffer, extra state, the state-dict hooks, to_empty, type, share_memory
require('torch.nn.module_state')(Module, { VALS = VALS, KIND = KIND, get_name = get_name, typename = typename,
  submodule_at = submodule_at, is_dtype = is_dtype, is_device = is_device })

-- ---- printing, as PyTorch's __repr__ ----
-- Python's repr of a float: the shortest digits that read back, fixed notation for exponents in
-- [-4, 16), else d.ddde-05
local function pyfloat(x)
  if x ~= x then return 'nan' end
  if x == math.huge then return 'inf' end
  if x == -math.huge then return '-inf' end
  local s
  for p = 1, 17 do
    s = string.format('%.' .. (p - 1) .. 'e', x)
    if tonumber(s) == x then break end
  end
  local sign, d1, rest, e = s:match('^(-?)(%d)%.?(%d*)e([-+]%d+)$')
  local digits = (d1 .. rest):gsub('0+$', '')
  if digits == '' then digits = '0' end
  e = tonumber(e)
  if e >= -4 and e < 16 then
    local int, frac
    if e >= 0 then
      if #digits <= e + 1 then
        int, frac = digits .. string.rep('0', e + 1 - #digits), '0'
      else
        int, frac = digits:sub(1, e + 1), digits:sub(e + 2)
      end
    else
      int, frac = '0', string.rep('0', -e - 1) .. digits
    end
    return sign .. int .. '.' .. frac
  end
  local mant = digits:sub(1, 1)
  if #digits > 1 then mant = mant .. '.' .. digits:sub(2) end
  return string.format('%s%se%s%02d', sign, mant, e < 0 and '-' or '+', math.abs(e))
end

-- a value as Python would print it inside a module's repr (tables are tuples)
local function pyrepr(v)
  if v == nil then return 'None' end
  if v == true then return 'True' end
  if v == false then return 'False' end
  if type(v) == 'number' then
    if math.type(v) == 'integer' then return tostring(v) end
    return pyfloat(v)
  end
  if type(v) == 'table' and not is_module(v) then
    local parts = {}
    for i = 1, #v do parts[i] = pyrepr(v[i]) end
    if #parts == 1 then return '(' .. parts[1] .. ',)' end
    return '(' .. table.concat(parts, ', ') .. ')'
  end
  return tostring(v)
end
Module._pyrepr = pyrepr
Module._pyfloat = pyfloat

local function addindent(s, n)
  if not s:find('\n', 1, true) then return s end
  local pad = string.rep(' ', n)
  return (s:gsub('\n', '\n' .. pad))
end
Module._addindent = addindent

function Module:extra_repr() return '' end
function Module:_get_name() return get_name(self) end

function Module:__tostring()
  local extra_lines = {}
  local extra = self:extra_repr()
  if extra and extra ~= '' then
    for line in (extra .. '\n'):gmatch('(.-)\n') do extra_lines[#extra_lines + 1] = line end
  end
  local child_lines = {}
  local vals = self[VALS]
  for _, name in ipairs(self[ORDER].module) do
    local c = vals[name]
    local s = c ~= nil and tostring(c) or 'None'
    child_lines[#child_lines + 1] = '(' .. name .. '): ' .. addindent(s, 2)
  end
  local main = get_name(self) .. '('
  if #extra_lines + #child_lines > 0 then
    if #extra_lines == 1 and #child_lines == 0 then
      main = main .. extra_lines[1]
    else
      local lines = {}
      for _, l in ipairs(extra_lines) do lines[#lines + 1] = l end
      for _, l in ipairs(child_lines) do lines[#lines + 1] = l end
      main = main .. '\n  ' .. table.concat(lines, '\n  ') .. '\n'
    end
  end
  return main .. ')'
end

-- ---- calling ----
function Module:forward()
  error(string.format('Module [%s] is missing the required "forward" function', get_name(self)), 2)
end

-- ---- forward hooks, as PyTorch's: kept in the plain fields _forward_pre_hooks and _forward_hooks
-- (arrays of {id = n, fn = hook}, in registration order; a hook may be any callable, a function or
-- an object with __call). register_forward_pre_hook(hook): hook(module, input) runs before forward,
-- input the packed arguments ({x, n = 1}); results, when the first is not nil, are the new
-- arguments (`return x2`, `return a, b`). register_forward_hook(hook): hook(module, input, ...)
-- runs after forward with its results; results, when the first is not nil, replace them. Each
-- returns a handle: h:remove(), also a to-be-closed value (`local h <close> = m:register_...`).
local hooks = require 'torch.utils.hooks'

local function add_hook(m, field, hook, what)
  if not hooks.callable(hook) then
    error(string.format('%s: expected a function, got %s', what, typename(hook)), 3)
  end
  local vals = m[VALS]
  local list = vals[field]
  if list == nil then
    list = {}
    setattr(m, field, list, 2)
  end
  changed(m)
  return hooks.add(list, hook)
end

-- m:register_forward_pre_hook(hook) -> handle: hook(module, input) before each forward; its results,
-- when the first is not nil, are the new arguments
function Module:register_forward_pre_hook(hook)
  return add_hook(self, '_forward_pre_hooks', hook, 'register_forward_pre_hook')
end

-- m:register_forward_hook(hook) -> handle: hook(module, input, ...) after each forward, with its
-- results; its results, when the first is not nil, replace them
function Module:register_forward_hook(hook)
  return add_hook(self, '_forward_hooks', hook, 'register_forward_hook')
end

-- m:register_full_backward_hook(hook) -> handle: hook(module, grad_input, grad_output) in backward,
-- grad_input and grad_output arrays of the gradients of the call's arguments and results (nil where
-- an argument or result is not a tensor or gets no gradient); a table it returns replaces grad_input.
-- Kept in the plain field _backward_hooks; torch.utils.hooks.BackwardHook runs them.
function Module:register_full_backward_hook(hook)
  return add_hook(self, '_backward_hooks', hook, 'register_full_backward_hook')
end

local snapshot = hooks.snapshot

local function call_with_hooks(self, pre, post, bw, ...)
  local input = table.pack(...)
  if pre ~= nil then
    for _, hook in ipairs(snapshot(pre)) do
      local r = table.pack(hook(self, input))
      if r[1] ~= nil then input = r end
    end
  end
  local bw_hook
  if bw ~= nil and #bw > 0 then
    bw_hook = hooks.BackwardHook(self, snapshot(bw))
    input = bw_hook:setup_input_hook(input)
  end
  local out = table.pack(self:forward(table.unpack(input, 1, input.n)))
  if post ~= nil then
    for _, hook in ipairs(snapshot(post)) do
      local r = table.pack(hook(self, input, table.unpack(out, 1, out.n)))
      if r[1] ~= nil then out = r end
    end
  end
  if bw_hook then out = bw_hook:setup_output_hook(out) end
  return table.unpack(out, 1, out.n)
end

local function call(self, ...)
  local vals = self[VALS]
  local pre, post, bw = vals._forward_pre_hooks, vals._forward_hooks, vals._backward_hooks
  if (pre == nil or #pre == 0) and (post == nil or #post == 0) and (bw == nil or #bw == 0) then
    return self:forward(...)
  end
  return call_with_hooks(self, pre, post, bw, ...)
end

-- torch.profiler, while it runs, sees every module call: profile_hook(module, call, ...) runs the
-- call and records it. Every class copies __call when it is made, so the hook is one variable here
-- rather than a wrapper installed in each class; nil (no cost but this test) when not profiling.
local profile_hook = nil
function Module.__call(self, ...)
  if profile_hook ~= nil then return profile_hook(self, call, ...) end
  return call(self, ...)
end

-- Module._set_profile_hook(fn or nil) -> the previous hook (for torch.profiler only)
function Module._set_profile_hook(fn)
  local prev = profile_hook
  profile_hook = fn
  return prev
end

-- ---- deep copies (copy.deepcopy's): the module's tables copied, its tensors cloned (detached;
-- leaves keep requires_grad, parameters stay parameters; a tensor met twice is cloned once);
-- functions, classes and other objects with a metatable (dtypes, hook objects) are shared.
-- Gradients are not copied.
local function deepcopy(v, memo)
  local c = memo[v]
  if c ~= nil then return c end
  if is_tensor(v) then
    c = torch.no_grad(function() return v:detach():clone() end)
    if v.requires_grad and v.is_leaf then c:requires_grad_(true) end
    if is_parameter(v) then parameter._mark(c) end
    memo[v] = c
    return c
  end
  if type(v) ~= 'table' then return v end
  local mt = getmetatable(v)
  if mt ~= nil and not is_module(v) then return v end
  c = {}
  memo[v] = c
  for k, x in next, v do rawset(c, k, deepcopy(x, memo)) end
  return setmetatable(c, mt)
end

function Module:_deepcopy() return deepcopy(self, {}) end

-- the private keys, for the containers in this package
Module._VALS, Module._KIND, Module._ORDER = VALS, KIND, ORDER
Module._remove_name = remove_name
Module._add_hook = add_hook

return Module
