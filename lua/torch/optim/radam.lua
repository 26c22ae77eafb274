-- torch.optim.RAdam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
-- decoupled_weight_decay = false, maximize = false}): rectified Adam, PyTorch's rule at step t:
--   g = grad (negated with maximize); then, with weight_decay, p = p * (1 - lr * weight_decay)
--       (decoupled_weight_decay) or g = g + weight_decay * p
--   exp_avg = lerp(exp_avg, g, 1 - beta1); exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g^2
--   bias_correction1 = 1 - beta1^t, bias_correction2 = 1 - beta2^t
--   rho_inf = 2 / (1 - beta2) - 1, rho_t = rho_inf - 2 t beta2^t / bias_correction2
--   rho_t > 5: rect = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t)),
--              adaptive_lr = sqrt(bias_correction2) / (sqrt(exp_avg_sq) + eps),
--              p = p - exp_avg / bias_correction1 * lr * adaptive_lr * rect
--   else:      p = p - exp_avg / bias_correction1 * lr
-- State per parameter: step (a number), exp_avg, exp_avg_sq. Tensor ops on every device;
-- float16/bfloat16 parameters keep float32 state and update in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'
local Adam = require 'torch.optim.adam'

local RAdam = Optimizer:extend('RAdam')

local defaults = { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, decoupled_weight_decay = false,
  maximize = false }

function RAdam:init(params, opts)
  local o = Adam._options('RAdam', opts, defaults) -- lr, eps, betas, weight_decay checked
  Optimizer.init(self, params, o)
end

local function update(p, grad, state, step, group)
  local lr, eps, wd = group.lr, group.eps, group.weight_decay
  local beta1, beta2 = group.betas[1], group.betas[2]
  local m, v, g = Adam._moments(p, grad, state, lr, beta1, beta2, wd, group.maximize,
    group.decoupled_weight_decay)
  local bc1, bc2 = 1 - beta1 ^ step, 1 - beta2 ^ step
  local mhat = m:div(bc1)
  local rho_inf = 2 / (1 - beta2) - 1
  local rho_t = rho_inf - 2 * step * beta2 ^ step / bc2
  if rho_t > 5 then
    local rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ^ 0.5
    local adaptive_lr = bc2 ^ 0.5 / v:sqrt():add_(eps)
    p:sub_(mhat:mul_(lr):mul_(adaptive_lr):mul_(rect))
  else
    p:sub_(mhat:mul_(lr))
  end
end

function RAdam:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.step == nil then
      state.step = 0
      state.exp_avg = Optimizer._zeros_state(p)
      state.exp_avg_sq = Optimizer._zeros_state(p)
    end
    local step = state.step + 1
    state.step = step
    Optimizer._lua_update(p, g, function(x, grad) update(x, grad, state, step, group) end)
  end)
end

return RAdam
