-- torch.utils.checkpoint: trading compute for memory, as PyTorch 1.13's reentrant checkpoint.
--   checkpoint(fn, ...) -> fn(...)'s results: fn runs without grad (its intermediate tensors are not
--     kept); the backward runs it again with grad, from detached copies of the tensor arguments, and
--     backpropagates through that run, so the gradients (of the tensor arguments, and of whatever
--     fn uses, a module's parameters included) are those of a plain run. Every argument is passed to
--     fn. The CPU generator's state at the forward is restored for the recomputation (and the current
--     one put back after), so dropout draws the same masks (lutorch has no torch.cuda.get_rng_state:
--     CUDA draws are not replayed); the autocast state of the forward is restored too. As PyTorch's reentrant version: only tensor arguments (not tensors inside tables)
--     get gradients; when no tensor argument requires grad the results do not either (the parameters
--     used by fn then get no gradient); torch.autograd.grad cannot go through a checkpoint (backward()
--     must be used); fn's results must be tensors.
--   checkpoint_sequential(functions, segments, input): functions (an nn.Sequential or an array of
--     modules or functions) run in `segments` pieces, each but the last one checkpointed.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

local M = {}

local CheckpointFunction = torch.autograd.Function:extend('CheckpointFunction')
-- its backward runs its own backward, whose gradients have no history (as PyTorch's reentrant
-- checkpoint, which does not support create_graph either)
CheckpointFunction.once_differentiable = true

function CheckpointFunction.forward(ctx, fn, ...)
  ctx.fn = fn
  ctx.inputs = table.pack(...)
  ctx.rng_state = torch.get_rng_state()
  ctx.autocast_state = torch._autocast_state()
  local outs = table.pack(fn(...))
  for k = 1, outs.n do
    if not torch.is_tensor(outs[k]) then
      error(string.format('checkpoint: the function must return tensors, but result %d is a %s', k, type(outs[k])), 0)
    end
  end
  return table.unpack(outs, 1, outs.n)
end

function CheckpointFunction.backward(ctx, ...)
  local grads = table.pack(...)
  local inputs = ctx.inputs
  -- detached copies of the tensor arguments, requiring grad where the originals do
  local detached = { n = inputs.n }
  for i = 1, inputs.n do
    local x = inputs[i]
    if torch.is_tensor(x) then
      local d = x:detach()
      if x.requires_grad then d:requires_grad_(true) end
      detached[i] = d
    else
      detached[i] = x
    end
  end
  -- the forward's random state and autocast state for the recomputation
  local rng_now = torch.get_rng_state()
  torch.set_rng_state(ctx.rng_state)
  local autocast_now = torch._autocast_state()
  torch._set_autocast_state(ctx.autocast_state)
  local ok, outs = pcall(torch.enable_grad, function()
    return table.pack(ctx.fn(table.unpack(detached, 1, detached.n)))
  end)
  torch._set_autocast_state(autocast_now)
  torch.set_rng_state(rng_now)
  if not ok then error(outs, 0) end
  local with_grad, grad_outputs = {}, {}
  for k = 1, outs.n do
    local o = outs[k]
    if torch.is_tensor(o) and o.requires_grad and grads[k] ~= nil then
      with_grad[#with_grad + 1] = o
      grad_outputs[#grad_outputs + 1] = grads[k]
    end
  end
  if #with_grad == 0 then
    error('checkpoint: none of output has requires_grad=True, this checkpoint() is not necessary', 0)
  end
  torch.enable_grad(function() torch.autograd.backward(with_grad, grad_outputs) end)
  -- one gradient per argument of apply: nil for fn, then the arguments'
  local result = { n = inputs.n + 1 }
  for i = 1, inputs.n do
    local d = detached[i]
    if torch.is_tensor(d) and d.requires_grad then result[i + 1] = d.grad end
  end
  return table.unpack(result, 1, result.n)
end

local function callable(f)
  local mt = getmetatable(f)
  return type(f) == 'function' or (type(mt) == 'table' and mt.__call ~= nil)
end

-- checkpoint(fn, ...) -> fn(...)'s results, without keeping fn's intermediate tensors: the backward
-- runs fn again (same random state) and backpropagates through it
function M.checkpoint(fn, ...)
  if not callable(fn) then error('checkpoint: expected a function (or a module), got ' .. type(fn), 2) end
  local any = false
  for i = 1, select('#', ...) do
    local x = select(i, ...)
    if torch.is_tensor(x) and x.requires_grad then any = true end
  end
  if not any and torch.is_grad_enabled() and (not M._warned or torch.is_warn_always_enabled()) then
    M._warned = true -- once, as Python's warnings
    io.stderr:write('checkpoint: None of the inputs have requires_grad=true. Gradients will be nil\n')
  end
  return CheckpointFunction.apply(fn, ...)
end

-- the functions of an nn.Sequential (its children) or of an array
local function functions_of(functions)
  local Module = require 'torch.nn.module'
  if Module.is_module(functions) then return functions:children() end
  if type(functions) ~= 'table' then
    error('checkpoint_sequential: expected an nn.Sequential or an array of functions, got ' .. type(functions), 3)
  end
  return functions
end

-- checkpoint_sequential(functions, segments, input): an nn.Sequential (or an array of functions) run
-- in `segments` pieces, each but the last checkpointed
function M.checkpoint_sequential(functions, segments, input)
  local list = functions_of(functions)
  segments = as_int(segments)
  if math.type(segments) ~= 'integer' or segments < 1 then
    error('checkpoint_sequential: segments must be a positive integer, got ' .. tostring(segments), 2)
  end
  local n = #list
  local function run(first, last)
    return function(x)
      for j = first, last do x = list[j](x) end
      return x
    end
  end
  local size = n // segments
  local last_end = 0
  -- as PyTorch: segments - 1 checkpointed pieces of n // segments functions, then the rest plainly
  for start = 1, size * (segments - 1), size do
    local stop = start + size - 1
    input = M.checkpoint(run(start, stop), input)
    last_end = stop
  end
  return run(last_end + 1, n)(input)
end

return M
