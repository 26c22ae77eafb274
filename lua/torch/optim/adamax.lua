-- torch.optim.Adamax(params, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
-- maximize = false}): Adam over the infinity norm, PyTorch's rule at step t:
--   g = grad (negated with maximize) + weight_decay * p
--   exp_avg = lerp(exp_avg, g, 1 - beta1)
--   exp_inf = max(beta2 * exp_inf, |g| + eps)
--   p = p - lr / (1 - beta1^t) * exp_avg / exp_inf
-- State per parameter: step (a number), exp_avg, exp_inf. Tensor ops on every device;
-- float16/bfloat16 parameters keep float32 state and update in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'
local Adam = require 'torch.optim.adam'

local Adamax = Optimizer:extend('Adamax')

local defaults = { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, maximize = false }

function Adamax:init(params, opts)
  local o = Adam._options('Adamax', opts, defaults) -- lr, eps, betas, weight_decay checked
  Optimizer.init(self, params, o)
end

local function update(p, grad, state, step, lr, beta1, beta2, eps, wd, maximize)
  local g = grad
  if maximize then g = -g end
  if wd ~= 0 then g = g:add(p, { alpha = wd }) end
  local m, u = state.exp_avg, state.exp_inf
  Adam._lerp_(m, g, 1 - beta1)
  u:copy_(torch.maximum(u:mul_(beta2), g:abs():add_(eps)))
  local clr = lr / (1 - beta1 ^ step)
  -- p:addcdiv_(exp_avg, exp_inf, {value = -clr})
  p:add_(m:div(u):mul_(-clr))
end

function Adamax:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.step == nil then
      state.step = 0
      state.exp_avg = Optimizer._zeros_state(p)
      state.exp_inf = Optimizer._zeros_state(p)
    end
    local step = state.step + 1
    state.step = step
    local beta1, beta2 = group.betas[1], group.betas[2]
    Optimizer._lua_update(p, g, function(x, grad)
      update(x, grad, state, step, group.lr, beta1, beta2, group.eps, group.weight_decay,
        group.maximize and true or false)
    end)
  end)
end

return Adamax
