-- F.fractional_max_pool2d (Graham's fractional max pooling, as PyTorch's): the window starts along
-- each axis are PyTorch's pseudo-random sequence for a sample u in [0, 1) of that plane,
-- start_i = floor((i + u) alpha) - floor(u alpha) for i = 0 .. out - 2, alpha = (in - k) / (out - 1),
-- and in - k for the last, computed in the input's precision (float32 arithmetic for float32
-- input) so that the windows are PyTorch's for the same samples. Each output is the maximum of its
-- k_h x k_w window (the first of equal maxima); indices are 1-based flat positions in the H x W
-- plane. Composed of gather and max, so autograd gives the gradient (to the maximum's position).
local torch = require 'torch'

return function(F, u)
  local check_tensor, opts_of, pair = u.check_tensor, u.opts_of, u.pair

  local function fround(x) return (string.unpack('f', string.pack('f', x))) end

  -- PyTorch's generate_intervals: 0-based window starts
  local function intervals(sample, input, output, pool, single)
    local r = single and fround or function(x) return x end
    local seq = {}
    if output > 1 then
      local alpha = r(r(input - pool) / r(output - 1))
      for i = 0, output - 2 do
        seq[i + 1] = math.floor(r(r(i + sample) * alpha)) - math.floor(r(sample * alpha))
      end
    end
    if output > 0 then seq[output] = input - pool end
    return seq
  end

  --- F.fractional_max_pool2d(x, kernel_size, {output_size | output_ratio, return_indices = false,
  -- _random_samples}) -> y (and indices): x is N x C x H x W or C x H x W; _random_samples N x C x 2
  -- (1 x C x 2 unbatched) in [0, 1), the first of each pair for the width, the second for the
  -- height; drawn with torch.rand when not given
  function F.fractional_max_pool2d(x, k, o)
    local op = 'fractional_max_pool2d'
    o = opts_of(o, op, { 'output_size', 'output_ratio', 'return_indices', '_random_samples' })
    check_tensor(x, op)
    if x:dim() ~= 3 and x:dim() ~= 4 then
      error(string.format('%s: expected a 3-D (unbatched) or 4-D (batched) input, got %d-D', op, x:dim()), 2)
    end
    if not x:is_floating_point() then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 2) end
    local kh, kw = pair(k, 'kernel_size', op)
    local batched = x:dim() == 4
    if not batched then x = x:unsqueeze(1) end
    local n, c, h, w = x:size(1), x:size(2), x:size(3), x:size(4)
    local oh, ow
    if o.output_size ~= nil then
      oh, ow = pair(o.output_size, 'output_size', op)
    elseif o.output_ratio ~= nil then
      local rh, rw = o.output_ratio, o.output_ratio
      if type(rh) == 'table' then rh, rw = rh[1], rh[2] end
      if type(rh) ~= 'number' or type(rw) ~= 'number' then
        error(op .. ': output_ratio must be a number or a pair of numbers', 2)
      end
      oh, ow = math.floor(h * rh), math.floor(w * rw)
    else
      error(op .. ' requires specifying either an output_size or an output_ratio', 2)
    end
    if oh + kh - 1 > h then
      error(string.format('%s: pool height %d too large relative to input height %d (output height %d)', op, kh, h, oh), 2)
    end
    if ow + kw - 1 > w then
      error(string.format('%s: pool width %d too large relative to input width %d (output width %d)', op, kw, w, ow), 2)
    end
    if oh < 1 or ow < 1 or kh < 1 or kw < 1 then
      error(string.format('%s: the output size (%d, %d) and the kernel size (%d, %d) must be positive', op, oh, ow, kh, kw), 2)
    end
    local samples = o._random_samples
    if samples == nil then
      samples = torch.rand(n, c, 2, { dtype = x.dtype, device = x.device })
    elseif not torch.is_tensor(samples) or samples:dim() ~= 3 or samples:size(1) ~= n or samples:size(2) ~= c
      or samples:size(3) ~= 2 then
      error(string.format('%s: _random_samples must be a tensor of shape (%d, %d, 2), got %s', op, n, c,
        torch.is_tensor(samples) and tostring(samples.shape) or type(samples)), 2)
    end
    local single = x.dtype ~= torch.float64
    local s = samples:to(torch.float64):totable()
    -- idx[plane][i][j][a][b]: the 1-based flat position of element (a, b) of window (i, j)
    local list = {}
    for p = 0, n * c - 1 do
      local pair_of = s[p // c + 1][p % c + 1]
      local sw = intervals(pair_of[1], w, ow, kw, single)
      local sh = intervals(pair_of[2], h, oh, kh, single)
      for i = 1, oh do
        for j = 1, ow do
          for a = 0, kh - 1 do
            local row = (sh[i] + a) * w + sw[j] + 1
            for b = 0, kw - 1 do list[#list + 1] = row + b end
          end
        end
      end
    end
    local m, kk = oh * ow, kh * kw
    local idx = torch.tensor(list, { dtype = torch.int64, device = x.device }):view(n, c, m * kk)
    local windows = x:reshape(n, c, h * w):gather(3, idx):view(n, c, m, kk)
    local y, at = windows:max(4)
    local indices = idx:view(n, c, m, kk):gather(4, at:unsqueeze(4))
    y, indices = y:view(n, c, oh, ow), indices:view(n, c, oh, ow)
    if not batched then y, indices = y:squeeze(1), indices:squeeze(1) end
    if o.return_indices then return y, indices end
    return y
  end
end
