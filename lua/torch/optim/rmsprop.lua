-- torch.optim.RMSprop(params, {lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0,
-- centered = false, maximize = false}), PyTorch's rule:
--   g = grad (negated with maximize) + weight_decay * p
--   square_avg = alpha * square_avg + (1 - alpha) * g^2
--   avg = sqrt(square_avg - grad_avg^2) (centered: grad_avg = alpha * grad_avg + (1 - alpha) * g) or
--         sqrt(square_avg); then avg + eps
--   momentum: buf = momentum * buf + g / avg, p = p - lr * buf; else p = p - lr * g / avg
-- Tensor ops on every device; float16/bfloat16 parameters keep float32 state and update in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'

local RMSprop = Optimizer:extend('RMSprop')

local defaults = { lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false,
  maximize = false }

function RMSprop:init(params, opts)
  local o = Optimizer._options('RMSprop', opts, defaults)
  if type(o.lr) ~= 'number' or o.lr < 0 then error('RMSprop: Invalid learning rate: ' .. tostring(o.lr)) end
  if type(o.eps) ~= 'number' or o.eps < 0 then error('RMSprop: Invalid epsilon value: ' .. tostring(o.eps)) end
  if type(o.momentum) ~= 'number' or o.momentum < 0 then error('RMSprop: Invalid momentum value: ' .. tostring(o.momentum)) end
  if type(o.weight_decay) ~= 'number' or o.weight_decay < 0 then
    error('RMSprop: Invalid weight_decay value: ' .. tostring(o.weight_decay))
  end
  if type(o.alpha) ~= 'number' or o.alpha < 0 then error('RMSprop: Invalid alpha value: ' .. tostring(o.alpha)) end
  Optimizer.init(self, params, o)
end

local function update(p, grad, state, lr, alpha, eps, wd, momentum, centered, maximize)
  local g = grad
  if maximize then g = -g end
  if wd ~= 0 then g = g:add(p, { alpha = wd }) end
  local sq = state.square_avg
  sq:mul_(alpha):add_(g:mul(g), { alpha = 1 - alpha })
  local avg
  if centered then
    local ga = state.grad_avg
    ga:mul_(alpha):add_(g, { alpha = 1 - alpha })
    avg = sq:sub(ga:mul(ga)):sqrt_()
  else
    avg = sq:sqrt()
  end
  avg:add_(eps)
  if momentum > 0 then
    local buf = state.momentum_buffer
    buf:mul_(momentum):add_(g:div(avg))
    p:add_(buf, { alpha = -lr })
  else
    p:add_(g:div(avg), { alpha = -lr })
  end
end

function RMSprop:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    local momentum, centered = group.momentum, group.centered and true or false
    if state.step == nil then
      state.step = 0
      state.square_avg = Optimizer._zeros_state(p)
    end
    if momentum > 0 and state.momentum_buffer == nil then state.momentum_buffer = Optimizer._zeros_state(p) end
    if centered and state.grad_avg == nil then state.grad_avg = Optimizer._zeros_state(p) end
    state.step = state.step + 1
    Optimizer._lua_update(p, g, function(x, grad)
      update(x, grad, state, group.lr, group.alpha, group.eps, group.weight_decay, momentum, centered,
        group.maximize and true or false)
    end)
  end)
end

return RMSprop
