-- torch.optim.ASGD(params, {lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0,
-- maximize = false}): averaged SGD, PyTorch 1.13's rule (_single_tensor_asgd) at step t, with eta
-- and mu from the previous step (lr and 1 at the first):
--   g = grad (negated with maximize) + weight_decay * p
--   p = p * (1 - lambd * eta); p = p - eta * g
--   ax = ax + mu * (p - ax), or ax = p when mu is 1
--   eta = lr / (1 + lambd * lr * t)^alpha; mu = 1 / max(1, t - t0)
-- State per parameter: step, eta and mu (numbers; PyTorch's float32 scalar tensors, which
-- load_state_dict accepts) and ax, the average of the iterates since step t0 (a copy of p until
-- then). Tensor ops on every device; float16/bfloat16 parameters keep float32 state and update in
-- float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'

local ASGD = Optimizer:extend('ASGD')

local defaults = { lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0, maximize = false }

function ASGD:init(params, opts)
  local o = Optimizer._options('ASGD', opts, defaults)
  if type(o.lr) ~= 'number' or o.lr < 0 then error('ASGD: Invalid learning rate: ' .. tostring(o.lr)) end
  if type(o.weight_decay) ~= 'number' or o.weight_decay < 0 then
    error('ASGD: Invalid weight_decay value: ' .. tostring(o.weight_decay))
  end
  for _, k in ipairs { 'lambd', 'alpha', 't0' } do
    if type(o[k]) ~= 'number' then error(('ASGD: %s must be a number, got %s'):format(k, tostring(o[k]))) end
  end
  Optimizer.init(self, params, o)
end

local function number(v)
  if torch.is_tensor(v) then return v:item() end
  return v
end

function ASGD:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.step == nil then
      state.step = 0
      state.eta = group.lr
      state.mu = 1
      state.ax = Optimizer._zeros_state(p)
    end
    -- a state dict saved by PyTorch holds eta and mu as scalar tensors
    local eta, mu = number(state.eta), number(state.mu)
    local step = state.step + 1
    state.step = step
    local lambd, wd, maximize = group.lambd, group.weight_decay, group.maximize
    local ax = state.ax
    Optimizer._lua_update(p, g, function(x, grad)
      local d = maximize and -grad or grad
      if wd ~= 0 then d = d:add(x, { alpha = wd }) end
      x:mul_(1 - lambd * eta)
      x:add_(d, { alpha = -eta })
      if mu ~= 1 then
        ax:add_(x:sub(ax):mul_(mu))
      else
        ax:copy_(x)
      end
    end)
    state.eta = group.lr / (1 + lambd * group.lr * step) ^ group.alpha
    state.mu = 1 / math.max(1, step - group.t0)
  end)
end

return ASGD
