-- Grad mode contexts, custom autograd functions in Lua, and the finite-difference gradient check.
local torch = require 'torch'
local autograd = torch.autograd
local hooks = require 'torch.utils.hooks'

-- ---- grad mode: to-be-closed values, or a function run inside ----
local restore_mt = {
  __close = function(self) self.set(self.prev) end,
  __name = 'torch.grad_mode',
}

-- set(on) -> the previous mode; with fn, runs fn(...) in the mode and restores the previous one
local function run_in(set, on, fn, ...)
  local prev = set(on)
  if fn == nil then return setmetatable({ prev = prev, set = set }, restore_mt) end
  local r = table.pack(pcall(fn, ...))
  set(prev)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

local function run_with(on, fn, ...) return run_in(torch._set_grad_enabled, on, fn, ...) end

--- torch.no_grad(fn, ...) -> fn's results: runs fn(...) without recording the autograd graph;
-- torch.no_grad() alone returns a to-be-closed value: `local _ <close> = torch.no_grad()`
function torch.no_grad(fn, ...) return run_with(false, fn, ...) end
function torch.enable_grad(fn, ...) return run_with(true, fn, ...) end
-- set_grad_enabled(b) switches the mode now (as in PyTorch) and returns a value that restores
-- the previous mode when closed
function torch.set_grad_enabled(on, fn, ...) return run_with(on and true or false, fn, ...) end
autograd.no_grad, autograd.enable_grad = torch.no_grad, torch.enable_grad

-- ---- inference mode ----
-- torch.inference_mode([mode,] fn, ...) runs fn(...) in inference mode (mode true, the default) or
-- out of it (false); torch.inference_mode([mode]) alone returns a to-be-closed value. In it no graph
-- is recorded (grad mode is off; mode false turns grad mode on, as PyTorch's), and the tensors made
-- are inference tensors (x:is_inference()): outside inference mode they may not be saved for
-- backward, written in place, or made to require grad.
-- mode (a boolean), or a state {inference, grad} to restore -> the state before
local function set_inference(mode)
  local inf, grad = mode, not mode
  if type(mode) == 'table' then inf, grad = mode[1], mode[2] end
  return { autograd._set_inference_mode(inf), torch._set_grad_enabled(grad) }
end

local function inference_in(mode, fn, ...)
  if fn ~= nil and not hooks.callable(fn) then
    error('inference_mode: expected a function, got ' .. (torch.typename(fn) or type(fn)), 3)
  end
  return run_in(set_inference, mode, fn, ...)
end

function torch.inference_mode(...)
  if type((...)) == 'boolean' then return inference_in(...) end
  return inference_in(true, ...)
end
autograd.inference_mode = torch.inference_mode

-- ---- anomaly detection ----
-- torch.autograd.detect_anomaly(fn, ...) runs fn(...) with anomaly detection on (alone: a
-- to-be-closed value); set_detect_anomaly(on) switches it now and returns a value that restores the
-- previous state when closed. While it is on (for every thread) backward runs serially, a backward
-- function returning NaN is an error naming it, and an error in backward names the node and gives
-- the Lua traceback of the forward call that recorded it.
-- on (a boolean: check_nan true, as PyTorch's default), or a state {on, check_nan} to restore ->
-- the state before
local function set_anomaly(on)
  local check_nan = true
  if type(on) == 'table' then on, check_nan = on[1], on[2] end
  return { autograd._set_detect_anomaly(on), autograd._set_anomaly_check_nan(check_nan) }
end
function autograd.detect_anomaly(fn, ...) return run_in(set_anomaly, true, fn, ...) end
--- torch.set_anomaly_enabled(enabled, check_nan = true): switches anomaly mode now (no value to
--- close, as PyTorch's); check_nan false keeps the NaN check of the gradients off while it is on.
--- torch.is_anomaly_check_nan_enabled() reads check_nan. detect_anomaly and set_detect_anomaly
--- restore both on leaving.
function torch.set_anomaly_enabled(enabled, check_nan)
  if type(enabled) ~= 'boolean' then
    error('set_anomaly_enabled: expected enabled to be a boolean, got ' .. (torch.typename(enabled) or type(enabled)), 2)
  end
  if check_nan == nil then check_nan = true end
  if type(check_nan) ~= 'boolean' then
    error('set_anomaly_enabled: expected check_nan to be a boolean, got ' .. (torch.typename(check_nan) or type(check_nan)), 2)
  end
  set_anomaly({ enabled, check_nan })
end
function autograd.set_detect_anomaly(on, fn, ...)
  if type(on) ~= 'boolean' then
    error('set_detect_anomaly: expected a boolean, got ' .. (torch.typename(on) or type(on)), 2)
  end
  return run_in(set_anomaly, on, fn, ...)
end

-- ---- tensor hooks: x:register_hook(fn) -> handle ----
-- fn(grad) runs on the gradient flowing into x during backward (a leaf's summed over its uses,
-- before .grad takes it; a non-leaf's before it flows on); a tensor it returns replaces the gradient
-- for the next hook and what follows. The lists live on x's node (or x, a leaf), in the C engine;
-- autograd._hook_list finds them (bindings/autograd.c).
local Tensor = torch.Tensor

local function hook_name(fn)
  if type(fn) == 'function' then
    local info = debug.getinfo(fn, 'S')
    if info.what ~= 'C' then return info.short_src .. ':' .. info.linedefined end
  end
  return tostring(fn)
end

local function shape_str(t)
  return '[' .. table.concat(t.shape, ', ') .. ']'
end

-- list, grad -> the new grad (nil when unchanged), the grad at retain_grad's place (nil: none)
autograd._set_hook_runner(function(list, grad)
  local g, at = grad, nil
  local snap = {}
  for i = 1, #list do snap[i] = list[i] end
  for _, e in ipairs(snap) do
    if e.retain then
      at = g
    else
      local r = e.fn(g)
      if r ~= nil then
        local name = hook_name(e.fn)
        if not torch.is_tensor(r) then
          error(string.format("hook '%s' should return a tensor or nil, got %s", name, torch.typename(r) or type(r)), 0)
        end
        if r.dtype ~= g.dtype or tostring(r.device) ~= tostring(g.device) then
          error(string.format("hook '%s' has changed the type of value (was %s on %s got %s on %s)", name,
            tostring(g.dtype), tostring(g.device), tostring(r.dtype), tostring(r.device)), 0)
        end
        if shape_str(r) ~= shape_str(g) then
          error(string.format("hook '%s' has changed the size of value (was %s got %s)", name, shape_str(g),
            shape_str(r)), 0)
        end
        g = r
      end
    end
  end
  return g ~= grad and g or nil, at
end)

function Tensor.register_hook(self, fn)
  if not hooks.callable(fn) then
    error('register_hook: expected a function, got ' .. (torch.typename(fn) or type(fn)), 2)
  end
  if not self.requires_grad then
    error("register_hook: cannot register a hook on a tensor that doesn't require gradient", 2)
  end
  local list, fresh = autograd._hook_list(self, true)
  -- retain_grad keeps the gradient at its place among the hooks (PyTorch 1.13)
  if fresh and self.retains_grad then list[1] = { retain = true } end
  return hooks.add(list, fn)
end

local c_retain_grad = Tensor.retain_grad
function Tensor.retain_grad(self)
  local was = self.retains_grad
  c_retain_grad(self)
  if not was and self.retains_grad then
    local list = autograd._hook_list(self, false)
    if list then list[#list + 1] = { retain = true } end
  end
end

-- ---- custom functions ----
-- local Cube = torch.autograd.Function:extend('Cube')
-- function Cube.forward(ctx, x) ctx:save_for_backward(x); return x ^ 3 end
-- function Cube.backward(ctx, g) local x = table.unpack(ctx.saved_tensors); return g * 3 * x ^ 2 end
-- Cube.apply(x)
-- Cube.once_differentiable = true makes a backward with create_graph an error (for a backward
-- that is not made of differentiable ops), as PyTorch's @once_differentiable
local Ctx = {}
Ctx.__index = Ctx
function Ctx:save_for_backward(...)
  self.saved_tensors = table.pack(...)
end
function Ctx:mark_non_differentiable(...) self.non_differentiable = table.pack(...) end

-- a class of torch.class (lua/torch/class.lua), as nn.Module and torch.data.Dataset are; its
-- classes are used through Cls.apply rather than instantiated
local Function = require('torch.class')('Function')
autograd.Function = Function

function Function:extend(name)
  if type(name) ~= 'string' or name == '' then
    error('Function:extend: expected a class name (a non-empty string), got ' .. type(name), 2)
  end
  local cls = require('torch.class').Object.extend(self, name)
  cls.apply = function(...)
    local n = select('#', ...)
    local args = table.pack(...)
    local needs = {}
    for i = 1, n do
      local a = args[i]
      needs[i] = torch.is_tensor(a) and a.requires_grad or false
    end
    local ctx = setmetatable({ saved_tensors = {}, needs_input_grad = needs }, Ctx)
    if type(cls.forward) ~= 'function' then error(name .. '.apply: the class has no forward function', 2) end
    if type(cls.backward) ~= 'function' then error(name .. '.apply: the class has no backward function', 2) end
    local outs = table.pack(torch.no_grad(cls.forward, ctx, ...))
    local list = {}
    for k = 1, outs.n do list[k] = outs[k] end
    -- with create_graph the engine runs backward with grad mode on, so that a backward made of
    -- recorded ops is itself differentiated; a class whose backward is not (it calls raw kernels,
    -- or uses factors saved without their history) sets once_differentiable, and refuses
    local bw = function(...)
      if cls.once_differentiable and torch.is_grad_enabled() then
        error(string.format('create_graph: double backward through %s is not supported yet', name), 0)
      end
      return cls.backward(ctx, ...)
    end
    local recorded = autograd._record(name, args, n, list, bw)
    for k = 1, outs.n do outs[k] = recorded[k] end
    return table.unpack(outs, 1, outs.n)
  end
  return cls
end

-- ---- gradcheck: analytic gradients against central finite differences ----
local function as_list(v)
  if torch.is_tensor(v) then return { v } end
  return v
end

local function flat_outputs(fn, inputs)
  local outs = table.pack(fn(table.unpack(inputs)))
  local list = {}
  for k = 1, outs.n do
    if torch.is_tensor(outs[k]) then list[#list + 1] = outs[k] end
  end
  return list
end

function autograd.gradcheck(fn, inputs, opts)
  opts = opts or {}
  local eps, atol, rtol = opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
  inputs = as_list(inputs)
  local wrt = {}
  for i, x in ipairs(inputs) do
    if torch.is_tensor(x) and x.requires_grad then
      if x.dtype ~= torch.float64 then
        io.stderr:write('gradcheck: input ' .. i .. ' is not float64; the check may fail from rounding\n')
      end
      wrt[#wrt + 1] = i
    end
  end
  if #wrt == 0 then error('gradcheck: no input requires grad', 2) end
  local outs = flat_outputs(fn, inputs)
  for o = 1, #outs do
    -- a fresh graph for each output: the numeric part below changes the inputs in place
    local out = o == 1 and outs[1] or flat_outputs(fn, inputs)[o]
    local flat_out = out:reshape(-1)
    local n_out = flat_out:numel()
    -- analytic: one backward per output element; an output without history (as PyTorch) has a
    -- Jacobian of zeros, which the finite differences must show too
    local analytic = {}
    for j = 1, n_out do
      if not out.requires_grad then analytic[j] = {}; goto next_out end
      local go = torch.zeros_like(out):reshape(-1)
      go[j] = 1
      local grads = autograd.grad({ out }, (function()
        local l = {}
        for k, i in ipairs(wrt) do l[k] = inputs[i] end
        return l
      end)(), { grad_outputs = { go:view(out.shape) }, retain_graph = true, allow_unused = true })
      analytic[j] = grads
      ::next_out::
    end
    -- numeric: perturb each element of each input
    for k, i in ipairs(wrt) do
      local x = inputs[i]
      local xd, shape = x:detach(), x.shape
      for e = 1, x:numel() do
        -- the coordinates of element e in row-major order (x may be non-contiguous)
        local at, rest = {}, e - 1
        for d = #shape, 1, -1 do
          at[d] = rest % shape[d] + 1
          rest = rest // shape[d]
        end
        local function set(v) if #shape == 0 then xd:fill_(v) else xd[at] = v end end
        local orig = #shape == 0 and xd:item() or xd[at]
        local plus, minus
        torch.no_grad(function()
          set(orig + eps)
          plus = flat_outputs(fn, inputs)[o]:reshape(-1):double():clone()
          set(orig - eps)
          minus = flat_outputs(fn, inputs)[o]:reshape(-1):double():clone()
          set(orig)
        end)
        local numeric = (plus - minus) / (2 * eps)
        for j = 1, n_out do
          local g = analytic[j][k]
          local a = g and g:reshape(-1):double()[e] or 0
          local nmr = numeric[j]
          if math.abs(a - nmr) > atol + rtol * math.abs(nmr) then
            error(string.format('gradcheck: Jacobian mismatch for output %d with respect to input %d, '
              .. 'element %d of the input and %d of the output: numerical %.10g, analytical %.10g',
              o, i, e, j, nmr, a), 2)
          end
        end
      end
    end
  end
  return true
end

--- gradgradcheck(fn, inputs, grad_outputs = random, {eps, atol, rtol}) -> true, or raises: the
--- gradients of fn's gradients (autograd.grad with create_graph) against finite differences of
--- the gradients, by gradcheck of the function (inputs..., grad_outputs...) -> the gradients.
--- grad_outputs: a tensor or an array, one per tensor output (random normal values when absent).
function autograd.gradgradcheck(fn, inputs, grad_outputs, opts)
  if type(grad_outputs) == 'table' and not torch.is_tensor(grad_outputs) and opts == nil
      and grad_outputs[1] == nil and next(grad_outputs) ~= nil then
    grad_outputs, opts = nil, grad_outputs -- gradgradcheck(fn, inputs, {eps = ...})
  end
  inputs = as_list(inputs)
  local n = #inputs
  local wrt = {}
  for i, x in ipairs(inputs) do
    if torch.is_tensor(x) and x.requires_grad then wrt[#wrt + 1] = i end
  end
  if #wrt == 0 then error('gradgradcheck: no input requires grad', 2) end
  local outs = torch.enable_grad(flat_outputs, fn, inputs)
  local gos
  if grad_outputs ~= nil then
    gos = as_list(grad_outputs)
    if #gos ~= #outs then
      error(string.format('gradgradcheck: got %d grad_outputs for %d outputs', #gos, #outs), 2)
    end
  else
    gos = {}
    for k, o in ipairs(outs) do
      gos[k] = torch.randn(o.shape, { dtype = o.dtype, device = o.device }):requires_grad_()
    end
  end
  local function grads_of(...)
    local args = table.pack(...)
    local ins, go = {}, {}
    for i = 1, n do ins[i] = args[i] end
    for k = 1, #gos do go[k] = args[n + k] end
    return torch.enable_grad(function()
      local diff = {}
      for k, i in ipairs(wrt) do diff[k] = ins[i] end
      local gs = autograd.grad(flat_outputs(fn, ins), diff, { grad_outputs = go, create_graph = true,
        allow_unused = true })
      local r = {}
      for k = 1, #diff do
        if gs[k] then r[#r + 1] = gs[k] end
      end
      return table.unpack(r)
    end)
  end
  local all = {}
  for i = 1, n do all[i] = inputs[i] end
  for k, g in ipairs(gos) do all[n + k] = g end
  return autograd.gradcheck(grads_of, all, opts)
end

return autograd
