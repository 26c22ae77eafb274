-- F.fractional_max_pool2d and F.fractional_max_pool3d (Graham's fractional max pooling, as
-- PyTorch's): the window starts along each axis are PyTorch's pseudo-random sequence for a sample u
-- in [0, 1) of that plane,
-- start_i = floor((i + u) alpha) - floor(u alpha) for i = 0 .. out - 2, alpha = (in - k) / (out - 1),
-- and in - k for the last, computed in the input's precision (float32 arithmetic for float32
-- input) so that the windows are PyTorch's for the same samples. Each output is the maximum of its
-- window (the first of equal maxima); indices are 1-based flat positions in the H x W plane (the
-- T x H x W volume). Composed of gather and max, so autograd gives the gradient (to the maximum's position).
local torch = require 'torch'
local as_int = require('torch.composite').as_int

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

  -- a number or an nd-tuple of numbers as an nd-array
  local function sizes(v, nd, what, op, level)
    if type(v) == 'number' then
      local t = {}
      for i = 1, nd do t[i] = v end
      return t
    end
    if type(v) == 'table' and not torch.is_tensor(v) and #v == nd then
      local t = {}
      for i = 1, nd do
        if type(v[i]) ~= 'number' then t = nil break end
        t[i] = v[i]
      end
      if t then return t end
    end
    error(string.format('%s: %s must be a number or %s', op, what, nd == 2 and 'a pair {h, w}' or 'a triple {t, h, w}'),
      level + 1)
  end

  local AXES = { [2] = { 'height', 'width' }, [3] = { 'time', 'height', 'width' } }
  -- the sample of each axis: PyTorch's 2-D kernel takes the first for the width, the 3-D one the
  -- first for the time
  local SAMPLE = { [2] = { 2, 1 }, [3] = { 1, 2, 3 } }

  -- F.fractional_max_pool2d / 3d over nd spatial dims
  local function fractional(op, nd, x, k, o)
    o = opts_of(o, op, { 'output_size', 'output_ratio', 'return_indices', '_random_samples' }, 3)
    check_tensor(x, op)
    if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
      error(string.format('%s: expected a %d-D (unbatched) or %d-D (batched) input, got %d-D', op, nd + 1, nd + 2,
        x:dim()), 2)
    end
    if not x:is_floating_point() then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 2) end
    local ks = sizes(k, nd, 'kernel_size', op, 2)
    local batched = x:dim() == nd + 2
    if not batched then x = x:unsqueeze(1) end
    local n, c = x:size(1), x:size(2)
    local ins = {}
    for d = 1, nd do ins[d] = x:size(d + 2) end
    local outs
    if o.output_size ~= nil then
      outs = sizes(o.output_size, nd, 'output_size', op, 2)
    elseif o.output_ratio ~= nil then
      local r = sizes(o.output_ratio, nd, 'output_ratio', op, 2)
      outs = {}
      for d = 1, nd do outs[d] = math.floor(ins[d] * r[d]) end
    else
      error(op .. ' requires specifying either an output_size or an output_ratio', 2)
    end
    local names = AXES[nd]
    -- PyTorch's 3-D check is strict (out + k - 1 < in), its 2-D one not
    for d = 1, nd do
      local last = nd == 3 and ins[d] - 1 or ins[d]
      if outs[d] + ks[d] - 1 > last then
        error(string.format('%s: pool %s %d too large relative to input %s %d (output %s %d)', op, names[d], ks[d],
          names[d], ins[d], names[d], outs[d]), 2)
      end
    end
    for d = 1, nd do
      outs[d], ks[d] = as_int(outs[d]), as_int(ks[d])
      if outs[d] < 1 or ks[d] < 1 or math.type(outs[d]) ~= 'integer' or math.type(ks[d]) ~= 'integer' then
        error(string.format('%s: the output size (%s) and the kernel size (%s) must be positive integers', op,
          table.concat(outs, ', '), table.concat(ks, ', ')), 2)
      end
    end
    local samples = o._random_samples
    if samples == nil then
      samples = torch.rand(n, c, nd, { dtype = x.dtype, device = x.device })
    elseif not torch.is_tensor(samples) or samples:dim() ~= 3 or samples:size(1) ~= n or samples:size(2) ~= c
      or samples:size(3) ~= nd then
      error(string.format('%s: _random_samples must be a tensor of shape (%d, %d, %d), got %s', op, n, c, nd,
        torch.is_tensor(samples) and tostring(samples.shape) or type(samples)), 2)
    end
    local single = x.dtype ~= torch.float64
    local s = samples:to(torch.float64):totable()
    -- the flat strides of the spatial dims, the window's offsets from its first element, and the
    -- numbers of outputs and window elements
    local stride, m, kk = {}, 1, 1
    stride[nd] = 1
    for d = nd - 1, 1, -1 do stride[d] = stride[d + 1] * ins[d + 1] end
    for d = 1, nd do m, kk = m * outs[d], kk * ks[d] end
    local offsets = {}
    for e = 0, kk - 1 do
      local off, rest = 0, e
      for d = nd, 1, -1 do
        off = off + (rest % ks[d]) * stride[d]
        rest = rest // ks[d]
      end
      offsets[e + 1] = off
    end
    -- list: the 1-based flat positions of every window's elements, window after window
    local list = {}
    for p = 0, n * c - 1 do
      local plane = s[p // c + 1][p % c + 1]
      local seq = {}
      for d = 1, nd do seq[d] = intervals(plane[SAMPLE[nd][d]], ins[d], outs[d], ks[d], single) end
      for w = 0, m - 1 do
        local start, rest = 1, w
        for d = nd, 1, -1 do
          start = start + seq[d][rest % outs[d] + 1] * stride[d]
          rest = rest // outs[d]
        end
        for e = 1, kk do list[#list + 1] = start + offsets[e] end
      end
    end
    local total = stride[1] * ins[1]
    local idx = torch.tensor(list, { dtype = torch.int64, device = x.device }):view(n, c, m * kk)
    local windows = x:reshape(n, c, total):gather(3, idx):view(n, c, m, kk)
    local y, at = windows:max(4)
    local indices = idx:view(n, c, m, kk):gather(4, at:unsqueeze(4))
    local shape = { n, c }
    for d = 1, nd do shape[d + 2] = outs[d] end
    y, indices = y:view(shape), indices:view(shape)
    if not batched then y, indices = y:squeeze(1), indices:squeeze(1) end
    if o.return_indices then return y, indices end
    return y
  end

  --- F.fractional_max_pool2d(x, kernel_size, {output_size | output_ratio, return_indices = false,
  -- _random_samples}) -> y (and indices): x is N x C x H x W or C x H x W; _random_samples N x C x 2
  -- (1 x C x 2 unbatched) in [0, 1), the first of each pair for the width, the second for the
  -- height; drawn with torch.rand when not given
  function F.fractional_max_pool2d(x, k, o) return fractional('fractional_max_pool2d', 2, x, k, o) end

  --- F.fractional_max_pool3d(x, kernel_size, {output_size | output_ratio, return_indices = false,
  -- _random_samples}) -> the same over N x C x T x H x W or C x T x H x W; _random_samples N x C x 3,
  -- for the time, the height and the width in that order (PyTorch's); indices are 1-based flat
  -- positions in the T x H x W volume
  function F.fractional_max_pool3d(x, k, o) return fractional('fractional_max_pool3d', 3, x, k, o) end
end
