-- torch.optim.Rprop(params, {lr = 1e-2, etas = {0.5, 1.2}, step_sizes = {1e-6, 50}, maximize = false}):
-- resilient backpropagation, PyTorch's rule (_single_tensor_rprop), element by element:
--   g = grad (negated with maximize); s = sign(g * prev)
--   s > 0: step_size = min(step_size * etaplus, step_size_max)
--   s < 0: step_size = max(step_size * etaminus, step_size_min), and g = 0
--   s = 0: step_size unchanged (clamped to [step_size_min, step_size_max] as the others)
--   p = p - sign(g) * step_size; prev = g
-- State per parameter: step (a number), prev (zeros), step_size (lr everywhere at first). Rprop has
-- no weight decay in PyTorch 1.13. Tensor ops on every device; float16/bfloat16 parameters keep
-- float32 state and update in float32.
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'

local Rprop = Optimizer:extend('Rprop')

local defaults = { lr = 1e-2, etas = { 0.5, 1.2 }, step_sizes = { 1e-6, 50 }, maximize = false }

local function pair(cname, what, v)
  if type(v) ~= 'table' or torch.is_tensor(v) or type(v[1]) ~= 'number' or type(v[2]) ~= 'number' then
    error(('%s: %s must be a pair of numbers {a, b}'):format(cname, what))
  end
  return { v[1], v[2] }
end

function Rprop:init(params, opts)
  local o = Optimizer._options('Rprop', opts, defaults)
  if type(o.lr) ~= 'number' or o.lr < 0 then error('Rprop: Invalid learning rate: ' .. tostring(o.lr)) end
  o.etas = pair('Rprop', 'etas', o.etas)
  o.step_sizes = pair('Rprop', 'step_sizes', o.step_sizes)
  if not (0 < o.etas[1] and o.etas[1] < 1 and 1 < o.etas[2]) then
    error(('Rprop: Invalid eta values: %s, %s'):format(tostring(o.etas[1]), tostring(o.etas[2])))
  end
  Optimizer.init(self, params, o)
end

local function update(p, grad, state, etaminus, etaplus, smin, smax, maximize)
  local g = maximize and -grad or grad
  local prod = g:mul(state.prev)
  local pos, neg, zero = prod:gt(0), prod:lt(0), prod:eq(0)
  -- the factor: sign(prod) with its -1, 0 and 1 replaced (NaN stays NaN, as in PyTorch)
  local factor = prod:sign():masked_fill_(pos, etaplus):masked_fill_(neg, etaminus):masked_fill_(zero, 1)
  local step_size = state.step_size
  step_size:mul_(factor):clamp_(smin, smax)
  g = g:masked_fill(neg, 0)
  p:sub_(g:sign():mul_(step_size))
  state.prev:copy_(g)
end

function Rprop:step(closure)
  return self:_each_param(closure, function(group, p, g, state)
    if state.step == nil then
      state.step = 0
      state.prev = Optimizer._zeros_state(p)
      state.step_size = Optimizer._zeros_state(p):fill_(group.lr)
    end
    state.step = state.step + 1
    local etaminus, etaplus = group.etas[1], group.etas[2]
    local smin, smax = group.step_sizes[1], group.step_sizes[2]
    Optimizer._lua_update(p, g, function(x, grad)
      update(x, grad, state, etaminus, etaplus, smin, smax, group.maximize and true or false)
    end)
  end)
end

return Rprop
