-- F.instance_norm and F.local_response_norm, composed of tensor ops (autograd differentiates them).
local torch = require 'torch'
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of, params = u.check_tensor, u.opts_of, u.params

  -- a per-channel tensor (running statistic, weight, bias) of c elements viewed as 1 x c x 1 ...
  local function per_channel(t, c, nd, op, what)
    check_tensor(t, op, what)
    if t:numel() ~= c then
      error(string.format('%s: %s has %d elements, expected one per channel (%d)', op, what, t:numel(), c), 3)
    end
    local shape = { 1, c }
    for _ = 3, nd do shape[#shape + 1] = 1 end
    return t:reshape(shape)
  end

  --- F.instance_norm(x, running_mean, running_var, weight, bias, {use_input_stats = true, momentum = 0.1,
  -- eps = 1e-5}) -> x (N x C x ...) normalised over the positions of each sample's channel, then scaled
  -- and shifted per channel (weight, bias may be nil). With use_input_stats and running statistics
  -- given, these move toward the batch's mean of the instances' means and unbiased variances
  -- (PyTorch's rule); without use_input_stats the running statistics normalise instead.
  function F.instance_norm(x, rm, rv, w, b, o)
    local op = 'instance_norm'
    o = opts_of(o, op, { 'use_input_stats', 'momentum', 'eps' })
    check_tensor(x, op)
    if x:dim() < 2 then error(op .. ': expected an input of at least 2 dimensions (N, C, ...), got ' .. x:dim() .. '-D', 2) end
    if not x.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 2) end
    if (rm == nil) ~= (rv == nil) then error(op .. ': running_mean and running_var must be given together', 2) end
    local use_input_stats = o.use_input_stats
    if use_input_stats == nil then use_input_stats = true end
    local momentum, eps = o.momentum or 0.1, o.eps or 1e-5
    if type(momentum) ~= 'number' then error(op .. ': momentum must be a number, got ' .. type(momentum), 2) end
    if type(eps) ~= 'number' then error(op .. ': eps must be a number, got ' .. type(eps), 2) end
    local n, c, nd = x:size(1), x:size(2), x:dim()
    local mean_c, var_c
    if rm ~= nil then
      mean_c, var_c = per_channel(rm, c, nd, op, 'running_mean'), per_channel(rv, c, nd, op, 'running_var')
    end
    local y
    if use_input_stats then
      local positions = 1
      for d = 3, nd do positions = positions * x:size(d) end
      if positions == 1 then
        error(string.format('%s: Expected more than 1 spatial element when training, got input size %s', op,
          tostring(x.shape)), 2)
      end
      local g = x:reshape(n, c, positions)
      local mean = g:mean(3, true)
      local var = g:var(3, true, { unbiased = false })
      y = ((g - mean) * (var + eps):rsqrt()):reshape(x.shape)
      if rm ~= nil then
        torch.no_grad(function()
          local bm = mean:reshape(n, c):mean(1)
          local bv = var:reshape(n, c):mean(1) * (positions / (positions - 1))
          rm:mul_(1 - momentum):add_((bm * momentum):to(rm.dtype):reshape(rm.shape))
          rv:mul_(1 - momentum):add_((bv * momentum):to(rv.dtype):reshape(rv.shape))
        end)
      end
    else
      if rm == nil then
        error(op .. ': Expected running_mean and running_var to be defined when use_input_stats is false', 2)
      end
      y = (x - mean_c:to(x.dtype)) * (var_c:to(x.dtype) + eps):rsqrt()
    end
    if w ~= nil then y = y * per_channel(w, c, nd, op, 'weight') end
    if b ~= nil then y = y + per_channel(b, c, nd, op, 'bias') end
    return y
  end

  -- the sums of sq (N x C x P) over the channels c - before .. c + after, zeros beyond the edges
  local function window_sums(sq, before, after)
    local n = sq:size(1)
    local parts = {}
    local f = { dtype = sq.dtype, device = sq.device }
    if before > 0 then parts[#parts + 1] = torch.zeros(n, before, sq:size(3), f) end
    parts[#parts + 1] = sq
    if after > 0 then parts[#parts + 1] = torch.zeros(n, after, sq:size(3), f) end
    local padded = #parts > 1 and torch.cat(parts, 2) or sq
    -- N x C x positions x (before + after + 1) windows along the channels, summed
    return padded:unfold(2, before + after + 1, 1):sum(4)
  end

  --- F.local_response_norm(x, size, alpha = 1e-4, beta = 0.75, k = 1) (or an options table after
  -- size) -> x / (k + alpha / size * sum of x^2 over the channels c - size // 2 .. c + (size - 1) // 2)^beta,
  -- over the channels (dim 2) of N x C x ... input, the sum taking zeros beyond the edges
  function F.local_response_norm(x, size, ...)
    local op = 'local_response_norm'
    check_tensor(x, op)
    local alpha, beta, k = params(op, { ... }, { 'alpha', 'beta', 'k' }, { 1e-4, 0.75, 1.0 })
    size = as_int(size)
    if math.type(size) ~= 'integer' or size < 1 then
      error(op .. ': size must be a positive integer, got ' .. tostring(size), 2)
    end
    if x:dim() < 3 then
      error(string.format('%s: Expected 3D or higher dimensionality input (got %d dimensions)', op, x:dim()), 2)
    end
    if x:numel() == 0 then return x end
    local n, c = x:size(1), x:size(2)
    local sq = (x * x):reshape(n, c, -1)
    local sums = window_sums(sq, size // 2, (size - 1) // 2)
    return x / (sums * (alpha / size) + k):pow(beta):reshape(x.shape)
  end

  --- F._cross_map_lrn2d(x, size, alpha, beta, k) -> nn.CrossMapLRN2d's values (Torch7's
  -- SpatialCrossMapLRN as PyTorch 1.13 computes it): x * (k + alpha / size * s)^-beta, s the sum of
  -- x^2 over the channels c - h .. c + h (h = (size - 1) // 2) of N x C x H x W input, and, for the
  -- channels c > h + 1 whose window leaves it out, channel 1's as well: PyTorch's running sum never
  -- takes channel 1 out. The gradient is this function's (autograd's); PyTorch's own backward is
  -- that of the window without channel 1 (it fails gradcheck against its forward).
  function F._cross_map_lrn2d(x, size, alpha, beta, k)
    local op = 'CrossMapLRN2d'
    check_tensor(x, op)
    if x:dim() ~= 4 then error(string.format('%s: expected a 4-D input (N x C x H x W), got %d-D', op, x:dim()), 3) end
    if not x.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 3) end
    if x:numel() == 0 then return x end
    local n, c = x:size(1), x:size(2)
    local sq = (x * x):reshape(n, c, -1)
    local h = (size - 1) // 2
    local sums = window_sums(sq, h, h)
    if c > h + 1 then
      local first = sq:narrow(2, 1, 1)
      local missing = torch.cat({ torch.zeros_like(first):expand(n, h + 1, sq:size(3)),
        first:expand(n, c - h - 1, sq:size(3)) }, 2)
      sums = sums + missing
    end
    return x * (sums * (alpha / size) + k):pow(-beta):reshape(x.shape)
  end
end
