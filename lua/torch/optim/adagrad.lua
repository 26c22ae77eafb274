-- torch.optim.Adagrad(params, {lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0,
-- eps = 1e-10, maximize = false}), PyTorch's rule, at step t:
--   g = grad (negated with maximize) + weight_decay * p
--   clr = lr / (1 + (t - 1) * lr_decay)
--   sum = sum + g^2 (sum starts at initial_accumulator_value)
--   p = p - clr * g / (sqrt(sum) + eps)
-- Tensor ops on every device; float16/bfloat16 parameters keep float32 state and update in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'

local Adagrad = Optimizer:extend('Adagrad')

local defaults = { lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10,
  maximize = false }

function Adagrad:init(params, opts)
  local o = Optimizer._options('Adagrad', opts, defaults)
  if type(o.lr) ~= 'number' or o.lr < 0 then error('Adagrad: Invalid learning rate: ' .. tostring(o.lr)) end
  if type(o.lr_decay) ~= 'number' or o.lr_decay < 0 then error('Adagrad: Invalid lr_decay value: ' .. tostring(o.lr_decay)) end
  if type(o.weight_decay) ~= 'number' or o.weight_decay < 0 then
    error('Adagrad: Invalid weight_decay value: ' .. tostring(o.weight_decay))
  end
  if type(o.initial_accumulator_value) ~= 'number' or o.initial_accumulator_value < 0 then
    error('Adagrad: Invalid initial_accumulator_value value: ' .. tostring(o.initial_accumulator_value))
  end
  if type(o.eps) ~= 'number' or o.eps < 0 then error('Adagrad: Invalid epsilon value: ' .. tostring(o.eps)) end
  Optimizer.init(self, params, o)
  -- PyTorch makes the state at construction
  for _, group in ipairs(self.param_groups) do
    for _, p in ipairs(group.params) do
      local state = self:_state(p)
      state.step = 0
      state.sum = Optimizer._zeros_state(p):fill_(group.initial_accumulator_value)
    end
  end
end

function Adagrad:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.sum == nil then -- a parameter added later (add_param_group)
      state.step = 0
      state.sum = Optimizer._zeros_state(p):fill_(group.initial_accumulator_value)
    end
    state.step = state.step + 1
    local clr = group.lr / (1 + (state.step - 1) * group.lr_decay)
    local wd, eps, maximize = group.weight_decay, group.eps, group.maximize
    Optimizer._lua_update(p, g, function(x, grad)
      local d = grad
      if maximize then d = -d end
      if wd ~= 0 then d = d:add(x, { alpha = wd }) end
      state.sum:add_(d:mul(d))
      x:add_(d:div(state.sum:sqrt():add_(eps)), { alpha = -clr })
    end)
  end)
end

return Adagrad
