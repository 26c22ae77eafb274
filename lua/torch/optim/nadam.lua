-- torch.optim.NAdam(params, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
-- momentum_decay = 4e-3, decoupled_weight_decay = false, maximize = false}): Adam with Nesterov
-- momentum, PyTorch's rule (_single_tensor_nadam) at step t:
--   g = grad (negated with maximize); then, with weight_decay, p = p * (1 - lr * weight_decay)
--       (decoupled_weight_decay) or g = g + weight_decay * p
--   mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)), mu_{t+1} likewise at t + 1
--   mu_product = mu_product * mu_t (the product mu_1 ... mu_t; 1 before the first step)
--   exp_avg = lerp(exp_avg, g, 1 - beta1); exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g^2
--   denom = sqrt(exp_avg_sq / (1 - beta2^t)) + eps
--   p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
--   p = p - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * exp_avg / denom
-- State per parameter: step and mu_product (numbers; PyTorch's float32 scalar tensors, which
-- load_state_dict accepts), exp_avg, exp_avg_sq. Tensor ops on every device; float16/bfloat16
-- parameters keep float32 state and update in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'
local Adam = require 'torch.optim.adam'

local NAdam = Optimizer:extend('NAdam')

local defaults = { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, momentum_decay = 4e-3,
  decoupled_weight_decay = false, maximize = false }

function NAdam:init(params, opts)
  local o = Adam._options('NAdam', opts, defaults) -- lr, eps, betas, weight_decay checked
  if type(o.momentum_decay) ~= 'number' or o.momentum_decay < 0 then
    error('NAdam: Invalid momentum_decay value: ' .. tostring(o.momentum_decay))
  end
  Optimizer.init(self, params, o)
end

-- one step on p (or its float32 copy); mu_product already includes this step's mu
local function update(p, grad, state, step, mu, mu_next, mu_product, group)
  local lr, eps, wd = group.lr, group.eps, group.weight_decay
  local beta1, beta2 = group.betas[1], group.betas[2]
  local m, v, g = Adam._moments(p, grad, state, lr, beta1, beta2, wd, group.maximize,
    group.decoupled_weight_decay)
  local denom = v:div(1 - beta2 ^ step):sqrt_():add_(eps)
  local mu_product_next = mu_product * mu_next
  -- p:addcdiv_(g, denom, {value = ...}); p:addcdiv_(exp_avg, denom, {value = ...})
  p:add_(g:div(denom):mul_(-lr * (1 - mu) / (1 - mu_product)))
  p:add_(m:div(denom):mul_((-lr * mu_next) / (1 - mu_product_next)))
end

function NAdam:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.step == nil then
      state.step = 0
      state.mu_product = 1
      state.exp_avg = Optimizer._zeros_state(p)
      state.exp_avg_sq = Optimizer._zeros_state(p)
    end
    -- a state dict saved by PyTorch holds mu_product as a scalar tensor
    if torch.is_tensor(state.mu_product) then state.mu_product = state.mu_product:item() end
    local step = state.step + 1
    state.step = step
    local beta1, psi = group.betas[1], group.momentum_decay
    local mu = beta1 * (1 - 0.5 * 0.96 ^ (step * psi))
    local mu_next = beta1 * (1 - 0.5 * 0.96 ^ ((step + 1) * psi))
    local mu_product = state.mu_product * mu
    state.mu_product = mu_product
    Optimizer._lua_update(p, g, function(x, grad)
      update(x, grad, state, step, mu, mu_next, mu_product, group)
    end)
  end)
end

return NAdam
