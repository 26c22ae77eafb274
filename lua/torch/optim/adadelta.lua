-- torch.optim.Adadelta(params, {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false}),
-- PyTorch's rule:
--   g = grad (negated with maximize) + weight_decay * p
--   square_avg = rho * square_avg + (1 - rho) * g^2
--   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
--   acc_delta = rho * acc_delta + (1 - rho) * delta^2
--   p = p - lr * delta
-- State per parameter: step (a number, counted as PyTorch does though the rule does not use it),
-- square_avg, acc_delta. Tensor ops on every device; float16/bfloat16 parameters keep float32
-- state and update in float32.
local Optimizer = require 'torch.optim.optimizer'

local Adadelta = Optimizer:extend('Adadelta')

local defaults = { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false }

function Adadelta:init(params, opts)
  local o = Optimizer._options('Adadelta', opts, defaults)
  if type(o.lr) ~= 'number' or o.lr < 0 then error('Adadelta: Invalid learning rate: ' .. tostring(o.lr)) end
  if type(o.rho) ~= 'number' or not (o.rho >= 0 and o.rho <= 1) then
    error('Adadelta: Invalid rho value: ' .. tostring(o.rho))
  end
  if type(o.eps) ~= 'number' or o.eps < 0 then error('Adadelta: Invalid epsilon value: ' .. tostring(o.eps)) end
  if type(o.weight_decay) ~= 'number' or o.weight_decay < 0 then
    error('Adadelta: Invalid weight_decay value: ' .. tostring(o.weight_decay))
  end
  Optimizer.init(self, params, o)
end

local function update(p, grad, state, lr, rho, eps, wd, maximize)
  local g = grad
  if maximize then g = -g end
  if wd ~= 0 then g = g:add(p, { alpha = wd }) end
  local sq, acc = state.square_avg, state.acc_delta
  -- sq:mul_(rho):addcmul_(g, g, {value = 1 - rho})
  sq:mul_(rho):add_(g:mul(1 - rho):mul_(g))
  local std = sq:add(eps):sqrt_()
  local delta = acc:add(eps):sqrt_():div_(std):mul_(g)
  -- acc:mul_(rho):addcmul_(delta, delta, {value = 1 - rho})
  acc:mul_(rho):add_(delta:mul(1 - rho):mul_(delta))
  p:add_(delta, { alpha = -lr })
end

function Adadelta:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.step == nil then
      state.step = 0
      state.square_avg = Optimizer._zeros_state(p)
      state.acc_delta = Optimizer._zeros_state(p)
    end
    state.step = state.step + 1
    Optimizer._lua_update(p, g, function(x, grad)
      update(x, grad, state, group.lr, group.rho, group.eps, group.weight_decay, group.maximize and true or false)
    end)
  end)
end

return Adadelta
