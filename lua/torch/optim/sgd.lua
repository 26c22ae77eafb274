-- torch.optim.SGD(params, {lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0,
-- nesterov = false, maximize = false, fused = nil}), PyTorch's rule:
--   d = g (negated with maximize) + weight_decay * p
--   momentum: buf = d at the first step (a copy), then buf = momentum * buf + (1 - dampening) * d;
--             d = d + momentum * buf (nesterov) or buf
--   p = p - lr * d
-- Contiguous floating-point CPU parameters take the fused C step (torch._optim.sgd_step); others
-- (non-contiguous, other devices), or every one with fused = false, the tensor ops. The momentum
-- buffer of a float16/bfloat16 parameter is float32, and its update is computed in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'

local SGD = Optimizer:extend('SGD')

local defaults = { lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false }

function SGD:init(params, opts)
  local o = Optimizer._options('SGD', opts, defaults)
  if type(o.lr) ~= 'number' or o.lr < 0 then error('SGD: Invalid learning rate: ' .. tostring(o.lr)) end
  if type(o.momentum) ~= 'number' or o.momentum < 0 then error('SGD: Invalid momentum value: ' .. tostring(o.momentum)) end
  if type(o.dampening) ~= 'number' then error('SGD: Invalid dampening value: ' .. tostring(o.dampening)) end
  if type(o.weight_decay) ~= 'number' or o.weight_decay < 0 then
    error('SGD: Invalid weight_decay value: ' .. tostring(o.weight_decay))
  end
  if o.nesterov and (o.momentum <= 0 or o.dampening ~= 0) then
    error('SGD: Nesterov momentum requires a momentum and zero dampening')
  end
  Optimizer.init(self, params, o)
end

-- looked up at each call (a spec counts the calls)
local C = torch._optim

-- the tensor-op path: PyTorch's single-tensor SGD
local function lua_step(p, g, state, lr, momentum, dampening, wd, nesterov, maximize)
  local d = g
  if maximize then d = -d end
  if wd ~= 0 then d = d:add(p, { alpha = wd }) end
  if momentum ~= 0 then
    local buf = state.momentum_buffer
    if buf == nil then
      buf = d:clone():detach()
      state.momentum_buffer = buf
    else
      buf:mul_(momentum):add_(d, { alpha = 1 - dampening })
    end
    if nesterov then d = d:add(buf, { alpha = momentum }) else d = buf end
  end
  p:add_(d, { alpha = -lr })
end

function SGD:step(closure)
  local loss = Optimizer._closure(closure)
  local _ <close> = torch.no_grad()
  for _, group in ipairs(self.param_groups) do
    local lr, momentum, dampening, wd = group.lr, group.momentum, group.dampening, group.weight_decay
    local nesterov, maximize = group.nesterov and true or false, group.maximize and true or false
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then
        -- as PyTorch, a parameter gets state (its momentum buffer) only with momentum
        local state = momentum ~= 0 and self:_state(p) or nil
        local buf = state and state.momentum_buffer
        if Optimizer._fusable(group, p, g, buf) then
          local first = false
          if momentum ~= 0 and buf == nil then
            buf = torch.empty_like(p, { dtype = Optimizer._state_dtype(p.dtype) })
            state.momentum_buffer = buf
            first = true
          end
          C.sgd_step(p, g, momentum ~= 0 and buf or nil, first, lr, momentum, dampening, wd, nesterov, maximize)
        else
          Optimizer._lua_update(p, g, function(x, grad)
            lua_step(x, grad, state, lr, momentum, dampening, wd, nesterov, maximize)
          end)
        end
      end
    end
  end
  return loss
end

return SGD
