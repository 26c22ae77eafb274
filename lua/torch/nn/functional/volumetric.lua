-- F.conv3d, F.conv_transpose3d, F.max_pool3d, F.avg_pool3d, F.adaptive_avg_pool3d and
-- F.adaptive_max_pool3d: the volumetric layers (N x C x D x H x W input, or unbatched C x D x H x W)
-- composed over the 2-D kernels, so that they are threaded, differentiable and device-aware as those
-- are. A 3-D convolution is one 2-D convolution whose input channels are the kernel's depth taps:
-- the depth slices that each output depth reads are gathered side by side, (N OD) x (KD C) x H x W,
-- and the weight's depth is folded into its input channels (one GEMM per sample slice, the depth's
-- im2col done by index_select). Its transpose is the adjoint: one transposed 2-D convolution whose
-- output channels are the depth taps, added into the output depths by index_add. Pooling is
-- separable: the 2-D kernel over each depth slice's H x W, then the windows along the depth.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of = u.check_tensor, u.opts_of
  local i64 = torch.int64

  -- an integer or a triple {d, h, w} of integers, each at least lo, as a new table; errors at the
  -- caller's caller (level 3) or at `level`
  local function triple(v, name, op, lo, level)
    local t
    v = as_int(v)
    if math.type(v) == 'integer' then
      t = { v, v, v }
    elseif type(v) == 'table' and not torch.is_tensor(v) and #v == 3 and math.type(as_int(v[1])) == 'integer'
      and math.type(as_int(v[2])) == 'integer' and math.type(as_int(v[3])) == 'integer' then
      t = { as_int(v[1]), as_int(v[2]), as_int(v[3]) }
    else
      local got = tostring(v)
      if type(v) == 'table' and not torch.is_tensor(v) then
        local parts = {}
        for i = 1, #v do parts[i] = tostring(v[i]) end
        got = '{' .. table.concat(parts, ', ') .. '}'
      end
      error(string.format('%s: %s must be an integer or a triple {d, h, w} of integers, got %s', op, name, got),
        level or 3)
    end
    for i = 1, 3 do
      if t[i] < lo then
        error(string.format('%s: %s must be %s, got {%d, %d, %d}', op, name, lo > 0 and 'positive' or 'non-negative',
          t[1], t[2], t[3]), level or 3)
      end
    end
    return t
  end

  local function shape_str(t) return table.concat(t, 'x') end

  -- x: a non-empty 4-D (unbatched) or 5-D floating tensor; true when batched; errors at the
  -- caller's caller (level 3) or at `level`
  local function check_volume(x, op, level)
    check_tensor(x, op)
    if x:dim() ~= 4 and x:dim() ~= 5 then
      error(string.format('%s: expected a 4-D (unbatched) or 5-D (batched) input, got %d-D', op, x:dim()), level or 3)
    end
    if not x.dtype.is_floating_point then
      error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), level or 3)
    end
    for d = x:dim() - 3, x:dim() do
      if x:size(d) == 0 then
        error(string.format('%s: Expected input to have non-zero size for non-batch dimensions, but input has sizes %s',
          op, tostring(x.shape)), level or 3)
      end
    end
    return x:dim() == 5
  end

  -- weight (and bias) of x's dtype and device
  local function check_operands(op, x, w, b, level)
    for _, t in ipairs { w, b } do
      if t.device ~= x.device then
        error(string.format('%s: expected all tensors to be on the same device, but found at least two devices, %s and %s',
          op, tostring(x.device), tostring(t.device)), level or 3)
      end
      if t.dtype ~= x.dtype then
        error(string.format('%s: input type (%s) and %s type (%s) should be the same', op, tostring(x.dtype),
          t == w and 'weight' or 'bias', tostring(t.dtype)), level or 3)
      end
    end
  end

  local function index(list, device) return torch.tensor(list, { dtype = i64, device = device }) end

  -- ---- convolution ----

  -- the checks conv3d and conv_transpose3d share: the input, a 5-D weight (`layout` names its first
  -- two dims), the bias, their dtypes and devices, groups, stride and dilation; errors at the user's
  -- call. Returns batched, groups, stride, dilation.
  local function conv_args(x, w, b, o, op, layout)
    local batched = check_volume(x, op, 4)
    for _, t in ipairs { { w, 'weight' }, { b, 'bias' } } do
      if (t[2] == 'weight' or t[1] ~= nil) and not torch.is_tensor(t[1]) then
        error(string.format('%s: expected %s to be a tensor, got %s', op, t[2], type(t[1])), 3)
      end
    end
    if w:dim() ~= 5 then
      error(string.format('%s: expected a 5-D weight (%s, kd, kh, kw), got %d-D', op, layout, w:dim()), 3)
    end
    check_operands(op, x, w, b, 4)
    local g = o.groups or 1
    g = as_int(g)
    if math.type(g) ~= 'integer' or g < 1 then error(op .. ': groups must be a positive integer, got ' .. tostring(g), 3) end
    return batched, g, triple(o.stride or 1, 'stride', op, 1, 4), triple(o.dilation or 1, 'dilation', op, 1, 4)
  end

  --- F.conv3d(x, w, b, {stride = 1, padding = 0, dilation = 1, groups = 1}) -> tensor
  -- x: N x C x D x H x W (or C x D x H x W), w: out x C/groups x kd x kh x kw, b: out values or nil;
  -- sizes are integers or triples {d, h, w}; padding may also be 'same' (stride 1; an odd total puts
  -- the extra plane at the end, as PyTorch) or 'valid'
  function F.conv3d(x, w, b, o)
    local op = 'conv3d'
    o = opts_of(o, op, { 'stride', 'padding', 'dilation', 'groups' })
    local batched, g, s, dil = conv_args(x, w, b, o, op, 'out_channels, in_channels / groups')
    local padding = o.padding or 0
    if not batched then x = x:unsqueeze(1) end
    local n, c = x:size(1), x:size(2)
    local cout, cig = w:size(1), w:size(2)
    local k = { w:size(3), w:size(4), w:size(5) }
    if cout == 0 or cig == 0 or k[1] == 0 or k[2] == 0 or k[3] == 0 then
      error(string.format('%s: expected a weight with non-zero sizes, got %s', op, tostring(w.shape)), 2)
    end
    if cout % g ~= 0 then
      error(string.format('%s: given groups=%d, expected weight to be divisible by %d at dimension 1, but got weight of '
        .. 'size %s instead', op, g, g, tostring(w.shape)), 2)
    end
    if cig * g ~= c then
      error(string.format('%s: given groups=%d, weight of size %s, expected input of size %s to have %d channels, but got %d '
        .. 'channels instead', op, g, tostring(w.shape), tostring(x.shape), cig * g, c), 2)
    end
    if b ~= nil and (b:dim() ~= 1 or b:size(1) ~= cout) then
      error(string.format('%s: expected bias to be 1-D with %d elements (one per output channel), got %s', op, cout,
        tostring(b.shape)), 2)
    end
    -- the padding before and after each spatial dim
    local lo, hi = {}, {}
    if padding == 'same' then
      for i = 1, 3 do
        if s[i] ~= 1 then error(op .. ": padding='same' is not supported for strided convolutions", 2) end
        local total = dil[i] * (k[i] - 1)
        lo[i], hi[i] = total // 2, total - total // 2
      end
    elseif padding == 'valid' then
      lo, hi = { 0, 0, 0 }, { 0, 0, 0 }
    elseif type(padding) == 'string' then
      error(string.format("%s: invalid padding string '%s', should be one of {'valid', 'same'}", op, padding), 2)
    else
      lo = triple(padding, 'padding', op, 0)
      hi = lo
    end
    local size, out, padded, eff = {}, {}, {}, {}
    for i = 1, 3 do
      size[i] = x:size(2 + i)
      padded[i], eff[i] = size[i] + lo[i] + hi[i], dil[i] * (k[i] - 1) + 1
      out[i] = (padded[i] - eff[i]) // s[i] + 1
    end
    for i = 1, 3 do
      if padded[i] < eff[i] then
        error(string.format('%s: the padded input size per channel (%s) is smaller than the effective kernel size (%s): '
          .. 'calculated output size (%s) is too small', op, shape_str(padded), shape_str(eff), shape_str(out)), 2)
      end
    end
    local od, kd = out[1], k[1]
    -- N x D x C x H x W, zero-padded along the depth
    local xp = x:permute(1, 3, 2, 4, 5)
    if lo[1] > 0 or hi[1] > 0 then xp = F.pad(xp, { 0, 0, 0, 0, 0, 0, lo[1], hi[1] }) end
    -- the padded depths that output depth j reads, tap after tap (1-based)
    local taps = {}
    for j = 0, od - 1 do
      for t = 0, kd - 1 do taps[#taps + 1] = j * s[1] + t * dil[1] + 1 end
    end
    local cols
    if kd == 1 and s[1] == 1 and od == xp:size(2) then
      cols = xp
    else
      cols = xp:index_select(2, index(taps, x.device))
    end
    -- (N OD) x (KD C) x H x W with the channels of a group together: group, tap, channel
    local h, wd = size[2], size[3]
    if g == 1 then
      cols = cols:reshape(n * od, kd * c, h, wd)
    else
      cols = cols:reshape(n, od, kd, g, cig, h, wd):transpose(3, 4):reshape(n * od, g * kd * cig, h, wd)
    end
    local w2 = w:permute(1, 3, 2, 4, 5):reshape(cout, kd * cig, k[2], k[3])
    local hw_padding = padding == 'same' and 'same' or { lo[2], lo[3] }
    local y = F.conv2d(cols, w2, b, { stride = { s[2], s[3] }, padding = hw_padding, dilation = { dil[2], dil[3] },
      groups = g })
    y = y:view(n, od, cout, out[2], out[3]):transpose(2, 3):contiguous()
    if not batched then y = y:squeeze(1) end
    return y
  end

  --- F.conv_transpose3d(x, w, b, {stride = 1, padding = 0, output_padding = 0, groups = 1, dilation = 1})
  -- -> tensor: the adjoint of conv3d (its gradient with respect to the input); x: N x C_in x D x H x W
  -- (or C_in x D x H x W), w: C_in x C_out/groups x kd x kh x kw; output D: (D - 1) stride -
  -- 2 padding + dilation (kd - 1) + output_padding + 1, and likewise H and W
  function F.conv_transpose3d(x, w, b, o)
    local op = 'conv_transpose3d'
    o = opts_of(o, op, { 'stride', 'padding', 'output_padding', 'groups', 'dilation' })
    local batched, g, s, dil = conv_args(x, w, b, o, op, 'in_channels, out_channels / groups')
    local p = triple(o.padding or 0, 'padding', op, 0)
    local op_ = triple(o.output_padding or 0, 'output_padding', op, 0)
    if not batched then x = x:unsqueeze(1) end
    local n, cin = x:size(1), x:size(2)
    if w:size(1) ~= cin then
      error(string.format('%s: the weight has %d input channels, but the input has %d', op, w:size(1), cin), 2)
    end
    if cin % g ~= 0 then
      error(string.format('%s: groups (%d) must divide the input channels (%d)', op, g, cin), 2)
    end
    local cog = w:size(2)
    local cout = cog * g
    local k = { w:size(3), w:size(4), w:size(5) }
    if cog == 0 or k[1] == 0 or k[2] == 0 or k[3] == 0 then
      error(string.format('%s: expected a weight with non-zero sizes, got %s', op, tostring(w.shape)), 2)
    end
    if b ~= nil and (b:dim() ~= 1 or b:size(1) ~= cout) then
      error(string.format('%s: expected bias to be 1-D with %d elements (one per output channel), got %s', op, cout,
        tostring(b.shape)), 2)
    end
    local size, out = {}, {}
    for i = 1, 3 do
      if op_[i] >= math.max(s[i], dil[i]) then
        error(op .. ': output padding must be smaller than either stride or dilation', 2)
      end
      size[i] = x:size(2 + i)
      out[i] = (size[i] - 1) * s[i] - 2 * p[i] + dil[i] * (k[i] - 1) + op_[i] + 1
    end
    for i = 1, 3 do
      if out[i] < 1 then
        error(string.format('%s: calculated output size (%s) is too small (input %s, padding %s)', op, shape_str(out),
          shape_str(size), shape_str(p)), 2)
      end
    end
    local d, kd = size[1], k[1]
    -- every input depth slice, transposed-convolved in H x W with each depth tap of the kernel:
    -- (N D) x (g KD C_out/g) x OH x OW, the taps of a group together
    local planes = x:permute(1, 3, 2, 4, 5):reshape(n * d, cin, size[2], size[3])
    local wt = w:permute(1, 3, 2, 4, 5):reshape(cin, kd * cog, k[2], k[3])
    local z = F.conv_transpose2d(planes, wt, nil, { stride = { s[2], s[3] }, padding = { p[2], p[3] },
      output_padding = { op_[2], op_[3] }, groups = g, dilation = { dil[2], dil[3] } })
    local oh, ow = out[2], out[3]
    z = z:view(n, d, g, kd, cog, oh, ow)
    if g == 1 then
      z = z:reshape(n, d * kd, cout, oh, ow)
    else
      z = z:transpose(3, 4):reshape(n, d * kd, cout, oh, ow)
    end
    -- input depth i's tap t lands on depth i stride + t dilation of the unpadded output
    local full = (d - 1) * s[1] + dil[1] * (kd - 1) + 1 + op_[1]
    local at = {}
    for i = 0, d - 1 do
      for t = 0, kd - 1 do at[#at + 1] = i * s[1] + t * dil[1] + 1 end
    end
    local y = torch.zeros(n, full, cout, oh, ow, { dtype = x.dtype, device = x.device }):index_add(2, index(at, x.device), z)
    y = y:narrow(2, p[1] + 1, out[1]):transpose(2, 3)
    if b ~= nil then y = y + b:view(1, cout, 1, 1, 1) else y = y:contiguous() end
    if not batched then y = y:squeeze(1) end
    return y
  end

  -- ---- pooling ----

  -- PyTorch's pooling_output_shape
  local function pooled_size(n, k, p, s, d, ceil_mode)
    local out = (n + 2 * p - d * (k - 1) - 1 + (ceil_mode and s - 1 or 0)) // s + 1
    -- the last window must start inside the input or its left padding
    if ceil_mode and (out - 1) * s >= n + p then out = out - 1 end
    return out
  end

  -- the windows along one dim of n positions: for each of m outputs, the k 0-based positions it reads
  -- (start + j step, start = o stride - pad), false for those outside 0..n-1, and as the list's
  -- `fill` its first inside position (the start clamped, when none is); whether the window has a
  -- position inside; and PyTorch's first position (the start moved past the padding by steps)
  local function windows(n, m, k, stride, pad, step)
    local taps, inside, first = {}, {}, {}
    for o = 0, m - 1 do
      local start = o * stride - pad
      local f = start
      while f < 0 do f = f + step end
      local list = {}
      for j = 0, k - 1 do
        local t = start + j * step
        if t >= 0 and t < n then
          list.fill = list.fill or t
          list[j + 1] = t
        else
          list[j + 1] = false
        end
      end
      inside[o + 1] = list.fill ~= nil
      list.fill = list.fill or math.min(f, n - 1)
      taps[o + 1], first[o + 1] = list, f
    end
    return taps, inside, first
  end

  -- adaptive windows of n positions for m outputs: PyTorch's bins floor(o n / m) .. ceil((o + 1) n / m),
  -- each padded with false to the widest one's k positions (its first as the `fill`); and each
  -- bin's width
  local function bins(n, m)
    local taps, width, k = {}, {}, 0
    for o = 0, m - 1 do
      local s, e = (o * n) // m, ((o + 1) * n + m - 1) // m
      local list = { fill = s }
      for t = s, e - 1 do list[#list + 1] = t end
      taps[o + 1], width[o + 1] = list, e - s
      k = math.max(k, e - s)
    end
    for o = 1, m do
      for j = width[o] + 1, k do taps[o][j] = false end
    end
    return taps, width, k
  end

  -- the taps (lists of k depths, false where left out) as 0-based depths, the left-out ones their
  -- list's fill (a maximum and the first of equals are then unchanged), and whether each is genuine
  local function flatten(taps, k)
    local flat, genuine = {}, {}
    for _, list in ipairs(taps) do
      for j = 1, k do
        local t = list[j]
        flat[#flat + 1] = t == false and list.fill or t
        genuine[#genuine + 1] = t ~= false
      end
    end
    return flat, genuine
  end

  -- y2, i2: the H x W windows' maxima of each depth slice (P x D x OH x OW) and their 1-based
  -- positions in the slice; taps: the depth windows (OD lists of k 0-based depths). The maxima's
  -- 1-based positions in each D x H x W volume: P x OD x OH x OW, the first of equals in (d, h, w)
  -- order, as PyTorch's loops take it
  local function depth_argmax(y2, i2, taps, k, hw)
    local p, oh, ow, od = y2:size(1), y2:size(3), y2:size(4), #taps
    local flat, genuine = flatten(taps, k)
    local depths = index(flat, y2.device)
    local sel = depths + 1
    local g = y2:index_select(2, sel):view(p, od, k, oh, ow)
    local _, at = g:max(3, true)
    -- PyTorch's loops keep the last NaN of a window (max keeps the first)
    local nan = g:ne(g)
    if nan:any():item() then
      nan = nan:logical_and(torch.tensor(genuine, { device = y2.device }):view(1, od, k, 1, 1))
      local last = torch.where(nan, torch.arange(1, k + 1, { dtype = i64, device = y2.device }):view(1, 1, k, 1, 1), 0)
        :max(3, true)
      at = torch.where(last:gt(0), last, at)
    end
    local within = i2:index_select(2, sel):view(p, od, k, oh, ow):gather(3, at)
    local depth = depths:view(1, od, k, 1, 1):expand(p, od, k, oh, ow):gather(3, at)
    return (depth * hw + within):squeeze(3)
  end

  -- x (N x C x D x H x W) at the 1-based positions idx (N x C x OD x OH x OW) of each volume: the
  -- pooled values, whose gradient goes to those positions only
  local function take(x, idx)
    local n, c = x:size(1), x:size(2)
    local cells = idx:size(3) * idx:size(4) * idx:size(5)
    return x:reshape(n, c, x:size(3) * x:size(4) * x:size(5)):gather(3, idx:reshape(n, c, cells)):view(idx.shape)
  end

  -- the geometry of a 3-D pooling from its options (stride = kernel_size, padding 0, dilation 1):
  -- batched, x (batched), kernel, stride, padding, dilation, ceil_mode, N, C, the input's D, H, W and
  -- the output's; errors at the user's call (level 3) for a padding over half the kernel and an empty
  -- output
  local function pool_geometry(x, k, o, op)
    local batched = check_volume(x, op, 4)
    k = triple(k, 'kernel_size', op, 1, 4)
    local s = o.stride ~= nil and triple(o.stride, 'stride', op, 1, 4) or k
    local p = triple(o.padding or 0, 'padding', op, 0, 4)
    local dil = triple(o.dilation or 1, 'dilation', op, 1, 4)
    local ceil_mode = o.ceil_mode and true or false
    for i = 1, 3 do
      if p[i] > k[i] // 2 then
        error(string.format('%s: pad should be at most half of kernel size, but got pad=(%d, %d, %d) and '
          .. 'kernel_size=(%d, %d, %d)', op, p[1], p[2], p[3], k[1], k[2], k[3]), 3)
      end
    end
    if not batched then x = x:unsqueeze(1) end
    local n, c = x:size(1), x:size(2)
    local size, out = {}, {}
    for i = 1, 3 do
      size[i] = x:size(2 + i)
      out[i] = pooled_size(size[i], k[i], p[i], s[i], dil[i], ceil_mode)
    end
    if out[1] < 1 or out[2] < 1 or out[3] < 1 then
      error(string.format('%s: given input size (%dx%s), calculated output size (%dx%s) is too small', op, c,
        shape_str(size), c, shape_str(out)), 3)
    end
    return batched, x, k, s, p, dil, ceil_mode, n, c, size, out
  end

  local function return_indices_flag(v, op)
    if type(v) == 'table' then v = opts_of(v, op, { 'return_indices' }).return_indices end
    return v and true or false
  end

  --- F.max_pool3d(x, kernel_size, {stride = kernel_size, padding = 0, dilation = 1, ceil_mode = false,
  -- return_indices = false}) -> the maximum of each window of N x C x D x H x W (or C x D x H x W)
  -- input, and with return_indices its 1-based flat position in the D x H x W volume (as F.max_pool2d
  -- gives positions in each H x W plane); sizes are integers or triples {d, h, w}
  function F.max_pool3d(x, k, o)
    local op = 'max_pool3d'
    o = opts_of(o, op, { 'stride', 'padding', 'dilation', 'ceil_mode', 'return_indices' })
    local batched, s, p, dil, ceil_mode, n, c, size, out
    batched, x, k, s, p, dil, ceil_mode, n, c, size, out = pool_geometry(x, k, o, op)
    local hw = size[2] * size[3]
    local idx = torch.no_grad(function()
      local y2, i2 = F.max_pool2d(x:reshape(n * c, size[1], size[2], size[3]), { k[2], k[3] }, { stride = { s[2], s[3] },
        padding = { p[2], p[3] }, dilation = { dil[2], dil[3] }, ceil_mode = ceil_mode, return_indices = true })
      local taps = windows(size[1], out[1], k[1], s[1], p[1], dil[1])
      return depth_argmax(y2, i2, taps, k[1], hw):view(n, c, out[1], out[2], out[3])
    end)
    -- windows with no position inside the input (a dilation wider than the input) are -inf, their
    -- index PyTorch's first position, as its loops leave them
    local inside, first = {}, {}
    local all = true
    for i = 1, 3 do
      local _, ins, f = windows(size[i], out[i], k[i], s[i], p[i], dil[i])
      for _, v in ipairs(ins) do all = all and v end
      local shape = { 1, 1, 1 }
      shape[i] = out[i]
      inside[i] = torch.tensor(ins, { device = x.device }):view(shape)
      first[i] = index(f, x.device):view(shape)
    end
    local y
    if all then
      y = take(x, idx)
    else
      local mask = inside[1]:logical_and(inside[2]):logical_and(inside[3])
      local start = first[1] * hw + first[2] * size[3] + first[3] + 1
      idx = torch.where(mask, idx, start):contiguous()
      y = torch.where(mask, take(x, idx:clamp(1, size[1] * hw)), -math.huge)
    end
    if not batched then y, idx = y:squeeze(1), idx:squeeze(1) end
    if o.return_indices then return y, idx end
    return y
  end

  -- P x D x OH x OW slices summed along the depth over each window of taps (OD lists of k 0-based
  -- depths; false where a tap is left out), times scale[o] for output o: P x OD x OH x OW
  local function depth_sum(y2, taps, k, scale)
    local p, oh, ow, od = y2:size(1), y2:size(3), y2:size(4), #taps
    local flat, keep = flatten(taps, k)
    local partial = false
    for _, v in ipairs(keep) do partial = partial or not v end
    local f = { dtype = y2.dtype, device = y2.device }
    local g = y2:index_select(2, index(flat, y2.device) + 1):view(p, od, k, oh, ow)
    if partial then g = torch.where(torch.tensor(keep, { device = y2.device }):view(1, od, k, 1, 1), g, 0) end
    return g:sum(3) * torch.tensor(scale, f):view(1, od, 1, 1)
  end

  --- F.avg_pool3d(x, kernel_size, {stride = kernel_size, padding = 0, ceil_mode = false,
  -- count_include_pad = true, divisor_override}) -> the mean of each window of N x C x D x H x W (or
  -- C x D x H x W) input: its sum divided by the window's size (the padding counted, or not), or by
  -- divisor_override
  function F.avg_pool3d(x, k, o)
    local op = 'avg_pool3d'
    o = opts_of(o, op, { 'stride', 'padding', 'ceil_mode', 'count_include_pad', 'divisor_override' })
    local div = o.divisor_override
    div = as_int(div)
    if div ~= nil and (math.type(div) ~= 'integer' or div == 0) then
      error(op .. ': divisor_override must be a non-zero integer, got ' .. tostring(div), 2)
    end
    local cip = o.count_include_pad
    if cip == nil then cip = true end
    local batched, s, p, _, ceil_mode, n, c, size, out
    batched, x, k, s, p, _, ceil_mode, n, c, size, out = pool_geometry(x, k, o, op)
    -- the H x W means (or sums, with divisor_override) of each depth slice; their divisors times the
    -- depth's are PyTorch's: the window's size is the product of its extents along each dim
    local y2 = F.avg_pool2d(x:reshape(n * c, size[1], size[2], size[3]), { k[2], k[3] }, { stride = { s[2], s[3] },
      padding = { p[2], p[3] }, ceil_mode = ceil_mode, count_include_pad = cip, divisor_override = div and 1 or nil })
    local d = size[1]
    local taps, scale = {}, {}
    for j = 0, out[1] - 1 do
      local start = j * s[1] - p[1]
      local stop = math.min(start + k[1], d + p[1])
      local pool = stop - start
      local list = { fill = math.max(start, 0) }
      for t = 0, k[1] - 1 do
        local at = start + t
        list[t + 1] = (at >= 0 and at < d) and at or false
      end
      local inside = math.min(stop, d) - math.max(start, 0)
      taps[j + 1] = list
      scale[j + 1] = 1 / (div or (cip and pool or inside))
    end
    local y = depth_sum(y2, taps, k[1], scale):view(n, c, out[1], out[2], out[3])
    if not batched then y = y:squeeze(1) end
    return y
  end

  -- output sizes: an integer or a triple {d, h, w} whose nil entries keep the input's size
  local function adaptive_sizes(x, size, op)
    local t
    size = as_int(size)
    if math.type(size) == 'integer' then
      t = { size, size, size }
    elseif type(size) == 'table' and not torch.is_tensor(size) then
      t = {}
      for i = 1, 3 do t[i] = size[i] == nil and x:size(x:dim() - 3 + i) or size[i] end
      for key in pairs(size) do
        key = as_int(key)
        if math.type(key) ~= 'integer' or key < 1 or key > 3 then t = nil break end
      end
    end
    if t then
      for i = 1, 3 do
        t[i] = as_int(t[i])
        if math.type(t[i]) ~= 'integer' or t[i] < 1 then t = nil break end
      end
    end
    if not t then
      error(string.format('%s: output_size must be a positive integer or a triple {d, h, w} of them (nil keeps the '
        .. "input's size), got %s", op, tostring(size)), 3)
    end
    return t
  end

  --- F.adaptive_avg_pool3d(x, output_size) -> N x C x od x oh x ow (or C x ...) means of adaptive
  -- windows (PyTorch's bins); output_size an integer or {d, h, w}, a nil entry keeping the input's size
  function F.adaptive_avg_pool3d(x, size)
    local op = 'adaptive_avg_pool3d'
    local batched = check_volume(x, op)
    local out = adaptive_sizes(x, size, op)
    if not batched then x = x:unsqueeze(1) end
    local n, c, d, h, w = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
    local y2 = F.adaptive_avg_pool2d(x:reshape(n * c, d, h, w), { out[2], out[3] })
    local taps, width, k = bins(d, out[1])
    local scale = {}
    for o = 1, out[1] do scale[o] = 1 / width[o] end
    local y = depth_sum(y2, taps, k, scale):view(n, c, out[1], out[2], out[3])
    if not batched then y = y:squeeze(1) end
    return y
  end

  --- F.adaptive_max_pool3d(x, output_size, return_indices = false) -> the maximum of each adaptive
  -- window of N x C x D x H x W (or C x D x H x W) input (and its 1-based flat position in the
  -- D x H x W volume); return_indices may also be given as {return_indices = true}
  function F.adaptive_max_pool3d(x, size, ri)
    local op = 'adaptive_max_pool3d'
    local batched = check_volume(x, op)
    local out = adaptive_sizes(x, size, op)
    if not batched then x = x:unsqueeze(1) end
    local n, c, d, h, w = x:size(1), x:size(2), x:size(3), x:size(4), x:size(5)
    local idx = torch.no_grad(function()
      local y2, i2 = F.adaptive_max_pool2d(x:reshape(n * c, d, h, w), { out[2], out[3] }, true)
      local taps, _, k = bins(d, out[1])
      return depth_argmax(y2, i2, taps, k, h * w):view(n, c, out[1], out[2], out[3])
    end)
    local y = take(x, idx)
    if not batched then y, idx = y:squeeze(1), idx:squeeze(1) end
    if return_indices_flag(ri, op) then return y, idx end
    return y
  end
end
