-- torch.optim.Optimizer: the base of the optimizers, as PyTorch's: param_groups (each a table with
-- `params` and every option, missing ones filled from the defaults), per-parameter `state`,
-- zero_grad, step(closure), add_param_group, state_dict and load_state_dict.
--
-- state_dict() is {state = {[i] = {...}}, param_groups = {{lr = ..., params = {i, ...}}, ...}} with
-- the parameters numbered 1, 2, ... in group order (PyTorch numbers from 0). Its per-parameter
-- tables are copies holding the live state tensors (as PyTorch's do); load_state_dict copies the
-- tensors it is given, so the loaded optimizer never shares state with the dict's source. The step
-- count `step` is a Lua number (a float32 scalar tensor in PyTorch; load_state_dict accepts one).
-- The state of a float16/bfloat16 parameter is float32 (see _state_dtype).
local torch = require 'torch'

-- classes: torch.class (lua/torch/class.lua), as nn.Module's: Base:extend('Name') makes a
-- subclass, calling the class makes an instance, and `init` is the constructor
local class = require 'torch.class'
local function new_class(name, base)
  if base then return base:extend(name) end
  return class(name)
end

local Optimizer = new_class('Optimizer')
Optimizer._new_class = new_class -- for lr_scheduler.lua

local function copy_value(v)
  if type(v) ~= 'table' or torch.is_tensor(v) then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = copy_value(x) end
  return c
end

-- self.defaults: the options with their values; the subclass's init checks them first.
function Optimizer:init(params, defaults)
  self.defaults = defaults
  self.state = {}
  self.param_groups = {}
  local cname = self.__name
  if torch.is_tensor(params) then
    error(cname .. ': params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.Tensor')
  end
  if type(params) ~= 'table' then
    error(cname .. ': params argument given to the optimizer should be an iterable of Tensors or dicts, but got ' .. type(params))
  end
  if getmetatable(params) ~= nil then -- a module (or another object), not an array
    error(cname .. ': params argument given to the optimizer should be an iterable of Tensors or dicts, but got '
      .. (rawget(getmetatable(params), '__name') or 'an object') .. ' (pass model:parameters())')
  end
  if #params == 0 then error(cname .. ': optimizer got an empty parameter list') end
  local groups = params
  if type(params[1]) ~= 'table' or getmetatable(params[1]) ~= nil then groups = { { params = params } } end
  for _, g in ipairs(groups) do self:add_param_group(g) end
end

-- Checks and options of an optimizer's constructor: opts (a table, or a number: the learning rate)
-- against the defaults; unknown keys are errors (PyTorch raises on an unexpected keyword). `fused`
-- (nil: where possible, true: required, false: never) is kept in the groups; PyTorch's `foreach`
-- is accepted and ignored (a hint for how to batch kernels; each parameter takes one fused pass).
function Optimizer._options(cname, opts, defaults)
  if type(opts) == 'number' then opts = { lr = opts } end
  if opts ~= nil and type(opts) ~= 'table' then error(cname .. ': expected an options table, got ' .. type(opts)) end
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if defaults[k] == nil and k ~= 'fused' and k ~= 'foreach' then
      error(cname .. ": unknown option '" .. tostring(k) .. "'")
    end
    if k ~= 'foreach' then o[k] = v end
  end
  return o
end

function Optimizer:add_param_group(group)
  local cname = self.__name
  if type(group) ~= 'table' or torch.is_tensor(group) then error(cname .. ': param group must be a table') end
  local params = group.params
  if params == nil then error(cname .. ': a param group needs a params field') end
  local list = {}
  if torch.is_tensor(params) then
    list[1] = params
  elseif type(params) == 'table' then
    for i, p in ipairs(params) do list[i] = p end
  else
    error(cname .. ': params must be a tensor or an array of tensors, got ' .. type(params))
  end
  for _, p in ipairs(list) do
    if not torch.is_tensor(p) then
      error(cname .. ': optimizer can only optimize Tensors, but one of the params is ' .. type(p))
    end
    if not p.is_leaf then error(cname .. ": can't optimize a non-leaf Tensor") end
  end
  local g = {}
  for k, v in pairs(group) do g[k] = v end
  g.params = list
  for k, v in pairs(self.defaults) do
    if g[k] == nil then g[k] = copy_value(v) end
  end
  local seen = {}
  for _, old in ipairs(self.param_groups) do
    for _, p in ipairs(old.params) do seen[p] = true end
  end
  for _, p in ipairs(list) do
    if seen[p] then error(cname .. ': some parameters appear in more than one parameter group') end
  end
  self.param_groups[#self.param_groups + 1] = g
end

-- zero_grad(set_to_none = true), also zero_grad{set_to_none = false}: drop the gradients, or zero
-- them in place (detached from any graph).
function Optimizer:zero_grad(set_to_none)
  if type(set_to_none) == 'table' then set_to_none = set_to_none.set_to_none end
  if set_to_none == nil then set_to_none = true end
  local _ <close> = torch.no_grad()
  for _, group in ipairs(self.param_groups) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then
        if set_to_none then
          p.grad = nil
        else
          if g.requires_grad then g:detach_() end
          g:zero_()
        end
      end
    end
  end
end

-- Run the closure (re-evaluates the model and returns the loss) with grad enabled.
function Optimizer._closure(closure)
  if closure == nil then return nil end
  local _ <close> = torch.enable_grad()
  return closure()
end

function Optimizer:step()
  error(self.__name .. ': step is not implemented')
end

-- The tensor-op optimizers' step: the closure's loss, then fn(group, p, grad, state) for each
-- parameter with a gradient, under no_grad.
function Optimizer:_each_param(closure, fn)
  local loss = Optimizer._closure(closure)
  local _ <close> = torch.no_grad()
  for _, group in ipairs(self.param_groups) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then fn(group, p, g, self:_state(p)) end
    end
  end
  return loss
end

-- The state of p, created empty on first use.
function Optimizer:_state(p)
  local s = self.state[p]
  if s == nil then
    s = {}
    self.state[p] = s
  end
  return s
end

-- float16/bfloat16 parameters keep their state in float32 and are updated in float32 (the
-- parameter is rounded once per step): PyTorch keeps that state in the parameter's dtype and rounds
-- every operation, which loses small updates and makes eps = 1e-8 vanish (0/0 in Adam).
local f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
local function state_dtype(dt)
  if dt == f16 or dt == bf16 then return f32 end
  return dt
end
Optimizer._state_dtype = state_dtype

-- a zero state tensor for p
function Optimizer._zeros_state(p)
  local dt = p.dtype
  if dt == f16 or dt == bf16 then return torch.zeros_like(p, { dtype = f32 }) end
  return torch.zeros_like(p)
end

-- Whether the fused C step can update p (its state tensors given as extra arguments): contiguous
-- float32/float64/float16/bfloat16 CPU or CUDA tensors, gradients of p's dtype, state of its state dtype.
-- group.fused == false forces the tensor-op path; fused == true makes an unsupported parameter an
-- error.
function Optimizer._fusable(group, p, g, ...)
  local fused = group.fused
  if fused == false then return false end
  local ok = torch._optim.can_fuse(p, g, ...)
  if not ok and fused == true then
    error('optimizer: fused = true requires contiguous floating-point CPU or CUDA parameters, got a ' ..
      tostring(p.dtype) .. ' parameter on ' .. tostring(p.device) .. (p:is_contiguous() and '' or ' (not contiguous)'))
  end
  return ok
end

-- The tensor-op path on p's values: fn(x, grad) updates x in place, with x and grad p and its
-- gradient, or float32 copies of them for a float16/bfloat16 p (copied back after).
function Optimizer._lua_update(p, g, fn)
  local dt = p.dtype
  if dt == f16 or dt == bf16 then
    local x = p:to(f32)
    fn(x, g:to(f32))
    p:copy_(x)
  else
    fn(p, g)
  end
end

function Optimizer:state_dict()
  local index, n = {}, 0
  local groups = {}
  for gi, group in ipairs(self.param_groups) do
    local packed = {}
    for k, v in pairs(group) do
      if k ~= 'params' then packed[k] = copy_value(v) end
    end
    local ids = {}
    for j, p in ipairs(group.params) do
      if index[p] == nil then
        n = n + 1
        index[p] = n
      end
      ids[j] = index[p]
    end
    packed.params = ids
    groups[gi] = packed
  end
  local state = {}
  for p, s in pairs(self.state) do
    local i = index[p]
    if i ~= nil then
      local c = {}
      for k, v in pairs(s) do c[k] = v end
      state[i] = c
    end
  end
  return { state = state, param_groups = groups }
end

-- A state value of a loaded dict for parameter p: tensors copied to p's device (and to its state
-- dtype when p is floating; `step` keeps its dtype), PyTorch's casting rules; a tensor step becomes
-- a number.
local function cast_state(p, key, v)
  if torch.is_tensor(v) then
    if key == 'step' then return v:item() end
    local t = v:to(p.device)
    if p:is_floating_point() then t = t:to(state_dtype(p.dtype)) end
    if rawequal(t, v) then t = v:clone() end
    return t:detach()
  elseif type(v) == 'table' then
    local c = {}
    for k, x in pairs(v) do c[k] = cast_state(p, k, x) end
    return c
  end
  return v
end

function Optimizer:load_state_dict(sd)
  local cname = self.__name
  if type(sd) ~= 'table' or type(sd.param_groups) ~= 'table' then
    error(cname .. ': load_state_dict expects a table with state and param_groups')
  end
  local groups, saved = self.param_groups, sd.param_groups
  if #groups ~= #saved then error(cname .. ': loaded state dict has a different number of parameter groups') end
  for i = 1, #groups do
    if type(saved[i].params) ~= 'table' or #groups[i].params ~= #saved[i].params then
      error(cname .. ": loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
    end
  end
  local id_map = {}
  for i, sg in ipairs(saved) do
    for j, id in ipairs(sg.params) do id_map[id] = groups[i].params[j] end
  end
  -- ids of no parameter are dropped (PyTorch keeps them under their old keys)
  local state = {}
  for k, v in pairs(sd.state or {}) do
    local p = id_map[k]
    if p ~= nil then state[p] = cast_state(p, nil, v) end
  end
  local new_groups = {}
  for i, sg in ipairs(saved) do
    local g = {}
    for k, v in pairs(sg) do
      if k ~= 'params' then g[k] = copy_value(v) end
    end
    for k, v in pairs(self.defaults) do
      if g[k] == nil then g[k] = copy_value(v) end
    end
    g.params = groups[i].params
    new_groups[i] = g
  end
  self.state = state
  self.param_groups = new_groups
end

function Optimizer:__tostring()
  local lines = { self.__name .. ' (' }
  for i, group in ipairs(self.param_groups) do
    lines[#lines + 1] = 'Parameter Group ' .. i
    local keys = {}
    for k in pairs(group) do
      if k ~= 'params' then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = group[k]
      if type(v) == 'table' and not torch.is_tensor(v) then
        local parts = {}
        for j, x in ipairs(v) do parts[j] = tostring(x) end
        v = '{' .. table.concat(parts, ', ') .. '}'
      end
      lines[#lines + 1] = '    ' .. k .. ': ' .. tostring(v)
    end
  end
  lines[#lines + 1] = ')'
  return table.concat(lines, '\n')
end

return Optimizer
