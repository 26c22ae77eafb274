-- torch.optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
-- amsgrad = false, maximize = false, fused = nil}), PyTorch's rule at step t:
--   grad = g (negated with maximize) + weight_decay * p
--   m = lerp(m, grad, 1 - beta1); v = beta2 * v + (1 - beta2) * grad^2; vmax = max(vmax, v) (amsgrad)
--   p = p - lr / (1 - beta1^t) * m / (sqrt(v or vmax) / sqrt(1 - beta2^t) + eps)
-- AdamW (adamw.lua) is this class with decoupled weight decay: p = p * (1 - lr * weight_decay) first.
-- State per parameter: step (a number), exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad).
-- Contiguous floating-point CPU parameters take the fused C step (torch._optim.adam_step); others,
-- or every one with fused = false, the tensor ops. The state of a float16/bfloat16 parameter is
-- float32 and its update is computed in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'

local Adam = Optimizer:extend('Adam')

-- option checks shared with AdamW
function Adam._check(cname, o)
  if type(o.lr) ~= 'number' or o.lr < 0 then error(cname .. ': Invalid learning rate: ' .. tostring(o.lr)) end
  if type(o.eps) ~= 'number' or o.eps < 0 then error(cname .. ': Invalid epsilon value: ' .. tostring(o.eps)) end
  if type(o.betas) ~= 'table' then error(cname .. ': betas must be a pair {beta1, beta2}') end
  for i = 1, 2 do
    local b = o.betas[i]
    if type(b) ~= 'number' or not (b >= 0 and b < 1) then
      error(cname .. ': Invalid beta parameter at index ' .. i .. ': ' .. tostring(b))
    end
  end
  if type(o.weight_decay) ~= 'number' or o.weight_decay < 0 then
    error(cname .. ': Invalid weight_decay value: ' .. tostring(o.weight_decay))
  end
end

Adam._defaults = { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, amsgrad = false, maximize = false }
Adam._decoupled = false

-- the options of an Adam-like optimizer `name` over its defaults, betas copied, checked with
-- PyTorch's messages (lr, eps, betas, weight_decay)
function Adam._options(name, opts, defaults)
  local o = Optimizer._options(name, opts, defaults)
  if type(o.betas) == 'table' then o.betas = { o.betas[1], o.betas[2] } end
  Adam._check(name, o)
  return o
end

function Adam:init(params, opts)
  Optimizer.init(self, params, Adam._options(self.__name, opts, self._defaults))
end

-- m:lerp_(g, w) as PyTorch computes it: from the nearer end, and a float32 lerp takes w in float32
local function lerp_(m, g, w)
  if m.dtype == torch.float32 then w = string.unpack('f', string.pack('f', w)) end
  local diff = g - m
  if math.abs(w) < 0.5 then
    m:add_(diff, { alpha = w })
  else
    m:copy_(g):add_(diff, { alpha = -(1 - w) })
  end
end
Adam._lerp_ = lerp_

-- The moments of the Adam family's step on p: the gradient negated with maximize, then weight
-- decay (p scaled by 1 - lr wd when decoupled, else wd p added to the gradient), then
-- exp_avg = lerp(exp_avg, g, 1 - beta1) and exp_avg_sq = beta2 exp_avg_sq + (1 - beta2) g^2.
-- Returns exp_avg, exp_avg_sq and the gradient used.
function Adam._moments(p, grad, state, lr, beta1, beta2, wd, maximize, decoupled)
  local g = grad
  if maximize then g = -g end
  if decoupled then
    if wd ~= 0 then p:mul_(1 - lr * wd) end
  elseif wd ~= 0 then
    g = g:add(p, { alpha = wd })
  end
  local m, v = state.exp_avg, state.exp_avg_sq
  lerp_(m, g, 1 - beta1)
  -- v:mul_(beta2):addcmul_(g, g, {value = 1 - beta2})
  v:mul_(beta2):add_(g:mul(1 - beta2):mul_(g))
  return m, v, g
end

-- looked up at each call (a spec counts the calls)
local C = torch._optim

-- the tensor-op path: PyTorch's single-tensor Adam/AdamW
local function lua_step(p, g, state, step, lr, beta1, beta2, eps, wd, amsgrad, maximize, decoupled)
  local m, v = Adam._moments(p, g, state, lr, beta1, beta2, wd, maximize, decoupled)
  local bc1, bc2 = 1 - beta1 ^ step, 1 - beta2 ^ step
  local step_size = lr / bc1
  local bc2_sqrt = math.sqrt(bc2)
  local denom
  if amsgrad then
    local vmax = state.max_exp_avg_sq
    vmax:copy_(torch.maximum(vmax, v))
    denom = vmax:sqrt():div_(bc2_sqrt):add_(eps)
  else
    denom = v:sqrt():div_(bc2_sqrt):add_(eps)
  end
  -- p:addcdiv_(m, denom, {value = -step_size})
  p:add_(m:mul(-step_size):div_(denom))
end

function Adam:step(closure)
  local loss = Optimizer._closure(closure)
  local _ <close> = torch.no_grad()
  local decoupled = self._decoupled
  for _, group in ipairs(self.param_groups) do
    local lr, eps, wd = group.lr, group.eps, group.weight_decay
    local beta1, beta2 = group.betas[1], group.betas[2]
    local amsgrad, maximize = group.amsgrad and true or false, group.maximize and true or false
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then
        local state = self:_state(p)
        if state.step == nil then
          state.step = 0
          state.exp_avg = Optimizer._zeros_state(p)
          state.exp_avg_sq = Optimizer._zeros_state(p)
          if amsgrad then state.max_exp_avg_sq = Optimizer._zeros_state(p) end
        end
        if amsgrad and state.max_exp_avg_sq == nil then
          error(self.__name .. ': amsgrad was turned on after the first step (no max_exp_avg_sq in the state)')
        end
        local step = state.step + 1
        state.step = step
        local vmax = amsgrad and state.max_exp_avg_sq or nil
        if Optimizer._fusable(group, p, g, state.exp_avg, state.exp_avg_sq, vmax) then
          C.adam_step(p, g, state.exp_avg, state.exp_avg_sq, vmax, step, lr, beta1, beta2, eps, wd, decoupled, maximize)
        else
          Optimizer._lua_update(p, g, function(x, grad)
            lua_step(x, grad, state, step, lr, beta1, beta2, eps, wd, amsgrad, maximize, decoupled)
          end)
        end
      end
    end
  end
  return loss
end

return Adam
