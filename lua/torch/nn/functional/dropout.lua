-- F.alpha_dropout and F.feature_alpha_dropout: dropout that keeps the zero mean and unit variance of
-- SELU activations (PyTorch's formula, aten/src/ATen/native/Dropout.cpp).
local torch = require 'torch'

-- SELU's scale times its alpha: the value -alpha' that a dropped activation tends to
local ALPHA = 1.7580993408473766

return function(F, u)
  local check_tensor = u.check_tensor

  -- with keep ~ Bernoulli(1 - p) (per element, or per channel for feature), a = 1 / sqrt((alpha^2 p + 1)
  -- (1 - p)): a (x + alpha p) where kept, -a alpha (1 - p) where dropped
  local function alpha_dropout(x, p, training, inplace, op, feature)
    check_tensor(x, op)
    if p == nil then p = 0.5 end
    if type(p) ~= 'number' or p < 0 or p > 1 then
      error(op .. ': dropout probability has to be between 0 and 1, but got ' .. tostring(p), 3)
    end
    if not training or p == 0 or x:numel() == 0 then return x end
    if p == 1 then
      if inplace then return x:mul_(0) end
      return x * 0
    end
    if not x.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 3) end
    local shape = x.shape
    if feature then
      if x:dim() < 2 then error(op .. ': Feature dropout requires at least 2 dimensions in the input', 3) end
      shape = { x:size(1), x:size(2) }
      for _ = 3, x:dim() do shape[#shape + 1] = 1 end
    end
    local keep = torch.empty(shape, { dtype = x.dtype, device = x.device }):bernoulli_(1 - p)
    local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    local shift = (keep - 1) * (ALPHA * a) + ALPHA * a * p
    local scale = keep * a
    if inplace then return x:mul_(scale):add_(shift) end
    return x * scale + shift
  end

  --- F.alpha_dropout(x, p = 0.5, training = false, inplace = false) -> x with each element dropped with
  -- probability p and the result rescaled so that zero-mean unit-variance input keeps both; x itself
  -- when not training (PyTorch's default)
  function F.alpha_dropout(x, p, training, inplace)
    return alpha_dropout(x, p, training, inplace, 'alpha_dropout', false)
  end

  --- F.feature_alpha_dropout(x, p = 0.5, training = false, inplace = false) -> the same, dropping whole
  -- channels (dims 3.. of N x C x ...)
  function F.feature_alpha_dropout(x, p, training, inplace)
    return alpha_dropout(x, p, training, inplace, 'feature_alpha_dropout', true)
  end
end
