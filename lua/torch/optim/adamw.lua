-- torch.optim.AdamW(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2,
-- amsgrad = false, maximize = false, fused = nil}): Adam with decoupled weight decay, PyTorch's
-- rule: p = p * (1 - lr * weight_decay), then Adam's update without weight decay in the gradient.
local Adam = require 'torch.optim.adam'

local AdamW = Adam:extend('AdamW')
AdamW._defaults = { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 1e-2, amsgrad = false, maximize = false }
AdamW._decoupled = true

return AdamW
