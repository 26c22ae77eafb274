-- The volumetric (3-D) layers: F.conv3d / nn.Conv3d, F.conv_transpose3d / nn.ConvTranspose3d, max,
-- average and adaptive pooling, MaxUnpool3d, BatchNorm3d, the 3-D padding layers and F.interpolate /
-- nn.Upsample on 5-D input. Values against references written here as plain Lua loops over flat
-- arrays (a direct convolution, PyTorch's pooling loops, trilinear interpolation by its formula),
-- float32 and float64, non-contiguous and unbatched inputs, gradients by finite differences
-- (gradcheck, float64), default initialisation, another CPU device, and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local gradcheck = torch.autograd.gradcheck

local f64, f32 = torch.float64, torch.float32
local function tol(dt) return dt == f64 and 1e-11 or 2e-5 end
local function leaf(shape) return torch.randn(shape, { dtype = f64 }):requires_grad_() end

-- a tensor as a flat row-major array and its sizes
local function flat(t) return H.flatten(t:totable()), t.shape end

-- a 5-D N x C x D x H x W tensor that is not contiguous (made as N x C x W x H x D and permuted)
local function nc_randn(n, c, d, h, w, dt)
  local x = torch.randn(n, c, w, h, d, { dtype = dt }):permute(1, 2, 5, 4, 3)
  assert(not x:is_contiguous())
  return x
end

-- the 1-based flat position of (a, b, i, j, k) (all 1-based) in an array of sizes s
local function at5(s, a, b, i, j, k)
  return (((((a - 1) * s[2] + b - 1) * s[3] + i - 1) * s[4] + j - 1) * s[5]) + k
end

-- ---- references ----

-- a direct 3-D convolution: y[n][co][od][oh][ow] = b[co] + sum over the group's input channels and the
-- kernel's taps; o = {stride, lo, hi (padding before and after each dim), dilation, groups}
local function ref_conv3d(x, xs, w, ws, b, o)
  local N, Cin = xs[1], xs[2]
  local Cout, Cig = ws[1], ws[2]
  local K = { ws[3], ws[4], ws[5] }
  local I = { xs[3], xs[4], xs[5] }
  local out = {}
  for i = 1, 3 do out[i] = (I[i] + o.lo[i] + o.hi[i] - o.dilation[i] * (K[i] - 1) - 1) // o.stride[i] + 1 end
  local Cog = Cout // o.groups
  assert(Cig * o.groups == Cin)
  local y, ys = {}, { N, Cout, out[1], out[2], out[3] }
  for n = 1, N do
    for co = 1, Cout do
      local g = (co - 1) // Cog
      for od = 1, out[1] do
        for oh = 1, out[2] do
          for ow = 1, out[3] do
            local s = b and b[co] or 0
            for ci = 1, Cig do
              local cin = g * Cig + ci
              for kd = 1, K[1] do
                local id = (od - 1) * o.stride[1] - o.lo[1] + (kd - 1) * o.dilation[1] + 1
                for kh = 1, K[2] do
                  local ih = (oh - 1) * o.stride[2] - o.lo[2] + (kh - 1) * o.dilation[2] + 1
                  for kw = 1, K[3] do
                    local iw = (ow - 1) * o.stride[3] - o.lo[3] + (kw - 1) * o.dilation[3] + 1
                    if id >= 1 and id <= I[1] and ih >= 1 and ih <= I[2] and iw >= 1 and iw <= I[3] then
                      s = s + x[at5(xs, n, cin, id, ih, iw)] * w[at5(ws, co, ci, kd, kh, kw)]
                    end
                  end
                end
              end
            end
            y[at5(ys, n, co, od, oh, ow)] = s
          end
        end
      end
    end
  end
  return y, ys
end

-- a transposed 3-D convolution by its definition: each input element adds x w[ci][co] to the outputs
-- at i stride - padding + k dilation; o = {stride, padding, output_padding, dilation, groups}
local function ref_conv_transpose3d(x, xs, w, ws, b, o)
  local N, Cin = xs[1], xs[2]
  local Cog = ws[2]
  local Cout = Cog * o.groups
  local Cig = Cin // o.groups
  local K = { ws[3], ws[4], ws[5] }
  local I = { xs[3], xs[4], xs[5] }
  local out = {}
  for i = 1, 3 do
    out[i] = (I[i] - 1) * o.stride[i] - 2 * o.padding[i] + o.dilation[i] * (K[i] - 1) + o.output_padding[i] + 1
  end
  local ys = { N, Cout, out[1], out[2], out[3] }
  local y = {}
  for n = 1, N do
    for co = 1, Cout do
      for i = 1, out[1] * out[2] * out[3] do y[at5(ys, n, co, 1, 1, 1) + i - 1] = b and b[co] or 0 end
    end
  end
  for n = 1, N do
    for ci = 1, Cin do
      local g = (ci - 1) // Cig
      for id = 1, I[1] do
        for ih = 1, I[2] do
          for iw = 1, I[3] do
            local v = x[at5(xs, n, ci, id, ih, iw)]
            for c = 1, Cog do
              for kd = 1, K[1] do
                local od = (id - 1) * o.stride[1] - o.padding[1] + (kd - 1) * o.dilation[1] + 1
                for kh = 1, K[2] do
                  local oh = (ih - 1) * o.stride[2] - o.padding[2] + (kh - 1) * o.dilation[2] + 1
                  for kw = 1, K[3] do
                    local ow = (iw - 1) * o.stride[3] - o.padding[3] + (kw - 1) * o.dilation[3] + 1
                    if od >= 1 and od <= out[1] and oh >= 1 and oh <= out[2] and ow >= 1 and ow <= out[3] then
                      local p = at5(ys, n, g * Cog + c, od, oh, ow)
                      y[p] = y[p] + v * w[at5(ws, ci, c, kd, kh, kw)]
                    end
                  end
                end
              end
            end
          end
        end
      end
    end
  end
  return y, ys
end

-- PyTorch's output size of a pooling along one dim
local function pooled(n, k, p, s, d, ceil_mode)
  local o = (n + 2 * p - d * (k - 1) - 1 + (ceil_mode and s - 1 or 0)) // s + 1
  if ceil_mode and (o - 1) * s >= n + p then o = o - 1 end
  return o
end

-- PyTorch's max_pool3d loops: the window's taps inside the input in (d, h, w) order, a value taken
-- when greater than the maximum so far (or NaN); the index starts at the window's first position
-- (its start moved past the padding by dilation steps). Values and 0-based flat indices per plane.
local function ref_max_pool3d(x, xs, k, s, p, dl, ceil_mode)
  local I = { xs[3], xs[4], xs[5] }
  local out = {}
  for i = 1, 3 do out[i] = pooled(I[i], k[i], p[i], s[i], dl[i], ceil_mode) end
  local ys = { xs[1], xs[2], out[1], out[2], out[3] }
  local y, idx = {}, {}
  for n = 1, xs[1] do
    for c = 1, xs[2] do
      for od = 0, out[1] - 1 do
        for oh = 0, out[2] - 1 do
          for ow = 0, out[3] - 1 do
            local st = { od * s[1] - p[1], oh * s[2] - p[2], ow * s[3] - p[3] }
            local en = {}
            for i = 1, 3 do
              en[i] = math.min(st[i] + (k[i] - 1) * dl[i] + 1, I[i])
              while st[i] < 0 do st[i] = st[i] + dl[i] end
            end
            local best, bi = -math.huge, (st[1] * I[2] + st[2]) * I[3] + st[3]
            for a = st[1], en[1] - 1, dl[1] do
              for b = st[2], en[2] - 1, dl[2] do
                for e = st[3], en[3] - 1, dl[3] do
                  local v = x[at5(xs, n, c, a + 1, b + 1, e + 1)]
                  if v > best or v ~= v then best, bi = v, (a * I[2] + b) * I[3] + e end
                end
              end
            end
            local q = at5(ys, n, c, od + 1, oh + 1, ow + 1)
            y[q], idx[q] = best, bi
          end
        end
      end
    end
  end
  return y, idx, ys
end

-- PyTorch's avg_pool3d loops: the window clipped to the input plus padding gives the divisor with
-- count_include_pad, the window clipped to the input without
local function ref_avg_pool3d(x, xs, k, s, p, ceil_mode, cip, div)
  local I = { xs[3], xs[4], xs[5] }
  local out = {}
  for i = 1, 3 do out[i] = pooled(I[i], k[i], p[i], s[i], 1, ceil_mode) end
  local ys = { xs[1], xs[2], out[1], out[2], out[3] }
  local y = {}
  for n = 1, xs[1] do
    for c = 1, xs[2] do
      for od = 0, out[1] - 1 do
        for oh = 0, out[2] - 1 do
          for ow = 0, out[3] - 1 do
            local st, en = { od * s[1] - p[1], oh * s[2] - p[2], ow * s[3] - p[3] }, {}
            local pool = 1
            for i = 1, 3 do
              en[i] = math.min(st[i] + k[i], I[i] + p[i])
              pool = pool * (en[i] - st[i])
              st[i], en[i] = math.max(st[i], 0), math.min(en[i], I[i])
            end
            local sum = 0
            for a = st[1], en[1] - 1 do
              for b = st[2], en[2] - 1 do
                for e = st[3], en[3] - 1 do sum = sum + x[at5(xs, n, c, a + 1, b + 1, e + 1)] end
              end
            end
            local count = (en[1] - st[1]) * (en[2] - st[2]) * (en[3] - st[3])
            y[at5(ys, n, c, od + 1, oh + 1, ow + 1)] = sum / (div or (cip and pool or count))
          end
        end
      end
    end
  end
  return y, ys
end

-- adaptive pooling: output o of m over n positions reads floor(o n / m) .. ceil((o + 1) n / m) - 1;
-- the mean, or the first maximum (and its 0-based flat index), of each window
local function ref_adaptive3d(x, xs, out, is_max)
  local I = { xs[3], xs[4], xs[5] }
  local ys = { xs[1], xs[2], out[1], out[2], out[3] }
  local y, idx = {}, {}
  for n = 1, xs[1] do
    for c = 1, xs[2] do
      for od = 0, out[1] - 1 do
        for oh = 0, out[2] - 1 do
          for ow = 0, out[3] - 1 do
            local o = { od, oh, ow }
            local st, en = {}, {}
            for i = 1, 3 do
              st[i] = (o[i] * I[i]) // out[i]
              en[i] = ((o[i] + 1) * I[i] + out[i] - 1) // out[i]
            end
            local sum, best, bi = 0, -math.huge, nil
            for a = st[1], en[1] - 1 do
              for b = st[2], en[2] - 1 do
                for e = st[3], en[3] - 1 do
                  local v = x[at5(xs, n, c, a + 1, b + 1, e + 1)]
                  sum = sum + v
                  if bi == nil or v > best then best, bi = v, (a * I[2] + b) * I[3] + e end
                end
              end
            end
            local q = at5(ys, n, c, od + 1, oh + 1, ow + 1)
            if is_max then
              y[q], idx[q] = best, bi
            else
              y[q] = sum / ((en[1] - st[1]) * (en[2] - st[2]) * (en[3] - st[3]))
            end
          end
        end
      end
    end
  end
  return y, idx, ys
end

-- interpolation of x (sizes xs) to out: per dim, the source coordinate of each output position, then
-- nearest (floor) or the trilinear sum over the 8 corners of the source cell
local function ref_interpolate3d(x, xs, out, mode, align_corners, factors)
  local I = { xs[3], xs[4], xs[5] }
  local src = {}
  for i = 1, 3 do
    src[i] = {}
    for o = 0, out[i] - 1 do
      local c
      if mode == 'nearest' then
        local scale = factors and 1 / factors[i] or I[i] / out[i]
        local f = math.min(math.floor(o * scale), I[i] - 1)
        c = { f, f, 0 }
      else
        local r
        if align_corners then
          r = out[i] > 1 and o * (I[i] - 1) / (out[i] - 1) or 0
        else
          local scale = factors and 1 / factors[i] or I[i] / out[i]
          r = math.max((o + 0.5) * scale - 0.5, 0)
        end
        local i0 = math.min(math.floor(r), I[i] - 1)
        c = { i0, math.min(i0 + 1, I[i] - 1), r - i0 }
      end
      src[i][o + 1] = c
    end
  end
  local ys = { xs[1], xs[2], out[1], out[2], out[3] }
  local y = {}
  for n = 1, xs[1] do
    for c = 1, xs[2] do
      for a = 1, out[1] do
        for b = 1, out[2] do
          for e = 1, out[3] do
            local sd, sh, sw = src[1][a], src[2][b], src[3][e]
            local v = 0
            for _, pd in ipairs { { sd[1], 1 - sd[3] }, { sd[2], sd[3] } } do
              for _, ph in ipairs { { sh[1], 1 - sh[3] }, { sh[2], sh[3] } } do
                for _, pw in ipairs { { sw[1], 1 - sw[3] }, { sw[2], sw[3] } } do
                  local wt = pd[2] * ph[2] * pw[2]
                  if wt ~= 0 then v = v + wt * x[at5(xs, n, c, pd[1] + 1, ph[1] + 1, pw[1] + 1)] end
                end
              end
            end
            y[at5(ys, n, c, a, b, e)] = v
          end
        end
      end
    end
  end
  return y, ys
end

local function assert_shape(t, s, msg)
  assert.are.same(s, { table.unpack(t.shape) }, msg)
end

-- ---- convolution ----

describe('F.conv3d', function()
  local cases = {
    { name = 'plain', x = { 2, 3, 4, 5, 4 }, w = { 4, 3, 3, 2, 3 }, stride = { 1, 1, 1 }, padding = { 0, 0, 0 },
      dilation = { 1, 1, 1 }, groups = 1 },
    { name = 'stride, padding, dilation', x = { 2, 2, 6, 5, 7 }, w = { 3, 2, 2, 3, 2 }, stride = { 2, 1, 3 },
      padding = { 1, 2, 0 }, dilation = { 2, 1, 2 }, groups = 1 },
    { name = 'groups 2', x = { 1, 4, 5, 4, 5 }, w = { 6, 2, 3, 3, 1 }, stride = { 1, 2, 1 }, padding = { 1, 1, 0 },
      dilation = { 1, 1, 1 }, groups = 2 },
    { name = 'depthwise', x = { 2, 3, 3, 4, 4 }, w = { 3, 1, 2, 2, 2 }, stride = { 1, 1, 2 }, padding = { 1, 0, 1 },
      dilation = { 1, 2, 1 }, groups = 3 },
    { name = '1x1x1', x = { 2, 3, 2, 3, 2 }, w = { 2, 3, 1, 1, 1 }, stride = { 1, 1, 1 }, padding = { 0, 0, 0 },
      dilation = { 1, 1, 1 }, groups = 1 },
  }

  it('matches a direct 3-D convolution, float64 and float32, with and without bias', function()
    torch.manual_seed(1)
    for _, c in ipairs(cases) do
      for _, dt in ipairs { f64, f32 } do
        local x = torch.randn(c.x, { dtype = dt })
        local w = torch.randn(c.w, { dtype = dt })
        local b = torch.randn(c.w[1], { dtype = dt })
        local xf, xs = flat(x)
        local wf, ws = flat(w)
        for _, bias in ipairs { b, false } do
          local want, ys = ref_conv3d(xf, xs, wf, ws, bias and b:totable(), { stride = c.stride, lo = c.padding,
            hi = c.padding, dilation = c.dilation, groups = c.groups })
          local y = F.conv3d(x, w, bias or nil, { stride = c.stride, padding = c.padding, dilation = c.dilation,
            groups = c.groups })
          assert.are.equal(dt, y.dtype)
          assert.is_true(y:is_contiguous())
          assert_shape(y, ys, c.name)
          H.assert_values(y, want, tol(dt), c.name)
        end
      end
    end
  end)

  it('takes integer sizes, non-contiguous and unbatched inputs, and padding same and valid', function()
    torch.manual_seed(2)
    local x = nc_randn(2, 2, 5, 4, 6, f64)
    local w = torch.randn(3, 2, 3, 3, 3, { dtype = f64 }):transpose(4, 5)
    local xf, xs = flat(x)
    local wf, ws = flat(w)
    local want = ref_conv3d(xf, xs, wf, ws, nil, { stride = { 2, 2, 2 }, lo = { 1, 1, 1 }, hi = { 1, 1, 1 },
      dilation = { 1, 1, 1 }, groups = 1 })
    H.assert_values(F.conv3d(x, w, nil, { stride = 2, padding = 1 }), want, 1e-11)
    -- unbatched: the batched result's first sample
    H.assert_values(F.conv3d(x[2], w, nil, { padding = 1 }), F.conv3d(x, w, nil, { padding = 1 })[2]:totable(), 1e-12)
    assert.are.equal(4, F.conv3d(x[1], w).dim and F.conv3d(x[1], w):dim())
    -- 'same' with even kernels and dilation: the odd total's extra plane at the end
    local we = torch.randn(2, 2, 2, 4, 3, { dtype = f64 })
    local wef, wes = flat(we)
    local lo, hi = {}, {}
    for i, k in ipairs { 2, 4, 3 } do
      local d = ({ 3, 1, 2 })[i]
      local total = d * (k - 1)
      lo[i], hi[i] = total // 2, total - total // 2
    end
    local same, ss = ref_conv3d(xf, xs, wef, wes, nil, { stride = { 1, 1, 1 }, lo = lo, hi = hi, dilation = { 3, 1, 2 },
      groups = 1 })
    local y = F.conv3d(x, we, nil, { padding = 'same', dilation = { 3, 1, 2 } })
    assert_shape(y, ss)
    assert.are.same({ 2, 2, 5, 4, 6 }, { table.unpack(y.shape) })
    H.assert_values(y, same, 1e-11)
    H.assert_values(F.conv3d(x, w, nil, { padding = 'valid' }), F.conv3d(x, w):totable(), 0)
    -- an empty batch
    assert_shape(F.conv3d(torch.randn(0, 2, 4, 4, 4), torch.randn(3, 2, 3, 3, 3)), { 0, 3, 2, 2, 2 })
    assert_shape(F.conv_transpose3d(torch.randn(0, 2, 2, 2, 2), torch.randn(2, 3, 3, 3, 3)), { 0, 3, 4, 4, 4 })
  end)

  it('passes gradcheck in input, weight and bias', function()
    torch.manual_seed(3)
    assert.is_true(gradcheck(function(x, w, b) return F.conv3d(x, w, b, { stride = { 2, 1, 1 }, padding = { 1, 0, 1 },
      dilation = { 1, 2, 1 } }) end, { leaf({ 1, 2, 3, 4, 3 }), leaf({ 2, 2, 2, 2, 2 }), leaf({ 2 }) }))
    assert.is_true(gradcheck(function(x, w) return F.conv3d(x, w, nil, { groups = 2, padding = 'same' }) end,
      { leaf({ 1, 4, 2, 3, 2 }), leaf({ 2, 2, 2, 1, 2 }) }))
  end)

  it('runs on another CPU device and keeps it', function()
    if torch.cpu.device_count() < 2 then return end
    torch.manual_seed(4)
    local x, w, b = torch.randn(1, 2, 3, 4, 3), torch.randn(3, 2, 2, 2, 2), torch.randn(3)
    local y = F.conv3d(x:to('cpu:1'), w:to('cpu:1'), b:to('cpu:1'), { padding = 1 })
    assert.are.equal('cpu:1', tostring(y.device))
    H.assert_values(y:to('cpu:0'), F.conv3d(x, w, b, { padding = 1 }):totable(), 1e-6)
    H.raises(function() return F.conv3d(x, w:to('cpu:1')) end, 'conv3d', 'cpu:0', 'cpu:1')
  end)

  it('names the function in its errors', function()
    local x, w = torch.randn(1, 2, 3, 3, 3), torch.randn(4, 2, 2, 2, 2)
    H.raises(function() return F.conv3d(torch.randn(2, 3, 3), w) end, 'conv3d', '4-D (unbatched) or 5-D')
    H.raises(function() return F.conv3d(x, torch.randn(4, 2, 2, 2)) end, 'conv3d', '5-D weight')
    H.raises(function() return F.conv3d(torch.randn(1, 3, 3, 3, 3), w) end, 'conv3d', 'expected input', 'to have 2 channels, but got 3')
    H.raises(function() return F.conv3d(x, torch.randn(4, 2, 4, 2, 2)) end, 'conv3d', 'smaller than the effective kernel size')
    H.raises(function() return F.conv3d(x, torch.randn(4, 2, 2, 2, 2), nil, { dilation = { 1, 3, 1 } }) end, 'conv3d',
      'effective kernel size')
    H.raises(function() return F.conv3d(x, w, nil, { groups = 3 }) end, 'conv3d', 'groups=3')
    H.raises(function() return F.conv3d(x, w, torch.randn(3)) end, 'conv3d', 'bias')
    H.raises(function() return F.conv3d(x, w:double()) end, 'conv3d', 'weight type')
    H.raises(function() return F.conv3d(x:long(), w) end, 'conv3d', 'floating point')
    H.raises(function() return F.conv3d(x, w, nil, { stride = 2, padding = 'same' }) end, 'conv3d', "padding='same'")
    H.raises(function() return F.conv3d(x, w, nil, { padding = 'full' }) end, 'conv3d', 'invalid padding string')
    H.raises(function() return F.conv3d(x, w, nil, { stride = { 1, 2 } }) end, 'conv3d', 'stride', 'triple')
    H.raises(function() return F.conv3d(x, w, nil, { stride = 0 }) end, 'conv3d', 'stride must be positive')
    H.raises(function() return F.conv3d(x, w, nil, { padding = -1 }) end, 'conv3d', 'non-negative')
    H.raises(function() return F.conv3d(torch.randn(1, 2, 0, 3, 3), w) end, 'conv3d', 'non-zero size')
    H.raises(function() return F.conv3d(x, w, nil, { bogus = 1 }) end, 'conv3d', 'bogus')
  end)
end)

describe('nn.Conv3d', function()
  it('has PyTorch\'s parameters, default initialisation bounds and repr', function()
    torch.manual_seed(5)
    local m = nn.Conv3d(4, 6, { 3, 2, 3 }, { stride = 2, padding = { 1, 0, 1 }, groups = 2 })
    assert_shape(m.weight, { 6, 2, 3, 2, 3 })
    assert_shape(m.bias, { 6 })
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ 'bias', 'weight' }, keys)
    -- kaiming_uniform(a = sqrt(5)) and the bias: both within 1 / sqrt(fan_in), fan_in = 2 * 3 * 2 * 3
    local bound = 1 / math.sqrt(36)
    for _, p in ipairs { m.weight, m.bias } do
      local a = p:abs():max():item()
      assert.is_true(a <= bound and a > 0.5 * bound)
    end
    assert.are.equal('Conv3d(4, 6, kernel_size=(3, 2, 3), stride=(2, 2, 2), padding=(1, 0, 1), groups=2)', tostring(m))
    assert.are.equal('Conv3d(2, 3, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same, bias=False, '
      .. 'padding_mode=reflect)', tostring(nn.Conv3d(2, 3, 3, { padding = 'same', bias = false, padding_mode = 'reflect' })))
    assert.is_nil(nn.Conv3d(2, 3, 3, { bias = false }).bias)
    local d = nn.Conv3d(2, 3, 1, { dtype = f64 })
    assert.are.equal(f64, d.weight.dtype)
    assert.are.equal(f64, d.bias.dtype)
  end)

  it('computes F.conv3d of its parameters, and pads first for the other padding modes', function()
    torch.manual_seed(6)
    local x = nc_randn(2, 2, 4, 5, 3, f64)
    local m = nn.Conv3d(2, 3, { 3, 2, 3 }, { padding = { 1, 2, 1 }, dilation = { 1, 2, 1 }, dtype = f64 })
    local xf, xs = flat(x)
    local wf, ws = flat(m.weight)
    local want = ref_conv3d(xf, xs, wf, ws, m.bias:totable(), { stride = { 1, 1, 1 }, lo = { 1, 2, 1 }, hi = { 1, 2, 1 },
      dilation = { 1, 2, 1 }, groups = 1 })
    H.assert_values(m(x), want, 1e-11)
    for _, mode in ipairs { 'reflect', 'replicate', 'circular' } do
      local p = nn.Conv3d(2, 3, 3, { padding = { 1, 2, 1 }, padding_mode = mode, dtype = f64 })
      local padded = F.pad(x, { 1, 1, 2, 2, 1, 1 }, { mode = mode })
      H.assert_values(p(x), F.conv3d(padded, p.weight, p.bias):totable(), 1e-12, mode)
    end
    -- 'same' with an even kernel in a padding mode: the extra plane at the end
    local s = nn.Conv3d(2, 2, { 2, 3, 4 }, { padding = 'same', padding_mode = 'replicate', dtype = f64 })
    local padded = F.pad(x, { 1, 2, 1, 1, 0, 1 }, { mode = 'replicate' })
    H.assert_values(s(x), F.conv3d(padded, s.weight, s.bias):totable(), 1e-12)
  end)

  it('trains: gradients reach the weight and bias, on cpu:1 too', function()
    torch.manual_seed(7)
    local m = nn.Conv3d(2, 2, 2)
    local x = torch.randn(2, 2, 3, 3, 3)
    m(x):sum():backward()
    assert_shape(m.weight.grad, { 2, 2, 2, 2, 2 })
    -- d sum / d bias: one per output position
    H.assert_values(m.bias.grad, { 16, 16 }, 1e-6)
    if torch.cpu.device_count() < 2 then return end
    m:to('cpu:1')
    assert.are.equal('cpu:1', tostring(m.weight.device))
    assert.are.equal('cpu:1', tostring(m(x:to('cpu:1')).device))
  end)

  it('names the layer in its argument errors', function()
    H.raises(function() return nn.Conv3d(3, 4, 3, { groups = 2 }) end, 'Conv3d', 'divisible by groups')
    H.raises(function() return nn.Conv3d(2, 4, { 3, 3 }) end, 'Conv3d', 'kernel_size', 'triple')
    H.raises(function() return nn.Conv3d(2, 4, 3, { padding_mode = 'mirror' }) end, 'Conv3d', 'padding_mode')
    H.raises(function() return nn.Conv3d(2, 4, 3, { stride = 2, padding = 'same' }) end, 'Conv3d', "padding='same'")
    H.raises(function() return nn.Conv3d(2, 4, 0) end, 'Conv3d', 'positive')
    H.raises(function() return nn.Conv3d(2, 4, 3)(torch.randn(2, 2, 3)) end, 'conv3d', '4-D (unbatched) or 5-D')
    H.raises(function() return nn.Conv3d(2, 4, 3)(torch.randn(1, 3, 4, 4, 4)) end, 'conv3d', 'channels')
    H.raises(function() return nn.Conv3d(2, 4, 3)(torch.randn(1, 2, 2, 4, 4)) end, 'conv3d', 'effective kernel size')
  end)
end)

describe('F.conv_transpose3d and nn.ConvTranspose3d', function()
  local cases = {
    { name = 'plain', x = { 2, 2, 2, 3, 2 }, w = { 2, 3, 2, 2, 3 }, stride = { 1, 1, 1 }, padding = { 0, 0, 0 },
      output_padding = { 0, 0, 0 }, dilation = { 1, 1, 1 }, groups = 1 },
    { name = 'stride, padding, output_padding', x = { 1, 3, 3, 2, 3 }, w = { 3, 2, 3, 2, 3 }, stride = { 2, 3, 1 },
      padding = { 1, 0, 2 }, output_padding = { 1, 2, 0 }, dilation = { 1, 1, 2 }, groups = 1 },
    { name = 'groups 2, dilation', x = { 2, 4, 2, 3, 3 }, w = { 4, 1, 2, 3, 2 }, stride = { 2, 1, 2 },
      padding = { 0, 1, 1 }, output_padding = { 1, 0, 1 }, dilation = { 2, 1, 1 }, groups = 2 },
  }

  it('matches the definition, float64 and float32, and is the adjoint of conv3d', function()
    torch.manual_seed(8)
    for _, c in ipairs(cases) do
      for _, dt in ipairs { f64, f32 } do
        local x = torch.randn(c.x, { dtype = dt })
        local w = torch.randn(c.w, { dtype = dt })
        local b = torch.randn(c.w[2] * c.groups, { dtype = dt })
        local xf, xs = flat(x)
        local wf, ws = flat(w)
        local o = { stride = c.stride, padding = c.padding, output_padding = c.output_padding, dilation = c.dilation,
          groups = c.groups }
        local want, ys = ref_conv_transpose3d(xf, xs, wf, ws, b:totable(), o)
        local y = F.conv_transpose3d(x, w, b, o)
        assert.is_true(y:is_contiguous())
        assert_shape(y, ys, c.name)
        H.assert_values(y, want, tol(dt), c.name)
      end
    end
    -- <conv3d(u, w), v> = <u, conv_transpose3d(v, w)>
    local u, w = torch.randn(2, 2, 5, 4, 5, { dtype = f64 }), torch.randn(3, 2, 2, 3, 2, { dtype = f64 })
    local o = { stride = { 2, 1, 2 }, padding = { 1, 1, 0 } }
    local v = torch.randn(F.conv3d(u, w, nil, o).shape, { dtype = f64 })
    local t = F.conv_transpose3d(v, w, nil, { stride = o.stride, padding = o.padding, output_padding = { 1, 0, 1 } })
    assert_shape(t, { 2, 2, 5, 4, 5 })
    H.close((F.conv3d(u, w, nil, o) * v):sum():item(), (u * t):sum():item(), 1e-12)
  end)

  it('takes unbatched and non-contiguous inputs and passes gradcheck', function()
    torch.manual_seed(9)
    local x = nc_randn(2, 2, 2, 3, 2, f64)
    local w = torch.randn(2, 2, 2, 2, 2, { dtype = f64 })
    local xf, xs = flat(x)
    local wf, ws = flat(w)
    local o = { stride = { 2, 2, 2 }, padding = { 1, 1, 1 }, output_padding = { 1, 1, 1 }, dilation = { 1, 1, 1 }, groups = 1 }
    H.assert_values(F.conv_transpose3d(x, w, nil, o), (ref_conv_transpose3d(xf, xs, wf, ws, nil, o)), 1e-11)
    H.assert_values(F.conv_transpose3d(x[2], w, nil, o), F.conv_transpose3d(x, w, nil, o)[2]:totable(), 1e-12)
    assert.is_true(gradcheck(function(a, b, c) return F.conv_transpose3d(a, b, c, { stride = { 2, 1, 1 },
      padding = { 0, 1, 0 }, output_padding = { 1, 0, 0 }, groups = 2 }) end,
      { leaf({ 1, 2, 2, 2, 2 }), leaf({ 2, 1, 2, 2, 1 }), leaf({ 2 }) }))
  end)

  it('module: weight in x out/groups x kernel, PyTorch\'s initialisation bounds, repr, forward and errors', function()
    torch.manual_seed(10)
    local m = nn.ConvTranspose3d(4, 6, { 2, 3, 2 }, { stride = 2, output_padding = { 1, 0, 1 }, groups = 2, dtype = f64 })
    assert_shape(m.weight, { 4, 3, 2, 3, 2 })
    -- fan_in from the weight's second dim: 3 * 2 * 3 * 2
    local bound = 1 / math.sqrt(36)
    for _, p in ipairs { m.weight, m.bias } do assert.is_true(p:abs():max():item() <= bound) end
    assert.are.equal('ConvTranspose3d(4, 6, kernel_size=(2, 3, 2), stride=(2, 2, 2), output_padding=(1, 0, 1), '
      .. 'groups=2)', tostring(m))
    local x = torch.randn(1, 4, 2, 2, 3, { dtype = f64 })
    H.assert_values(m(x), F.conv_transpose3d(x, m.weight, m.bias, { stride = 2, output_padding = { 1, 0, 1 },
      groups = 2 }):totable(), 1e-12)
    assert_shape(m(x), { 1, 6, 5, 5, 7 })
    H.raises(function() return nn.ConvTranspose3d(2, 2, 3, { output_padding = 1 }) end, 'ConvTranspose3d',
      'output padding must be smaller')
    H.raises(function() return nn.ConvTranspose3d(2, 2, 3, { padding_mode = 'reflect' }) end, 'ConvTranspose3d', 'zeros')
    H.raises(function() return F.conv_transpose3d(torch.randn(2, 3, 3), torch.randn(3, 2, 2, 2, 2)) end,
      'conv_transpose3d', '4-D (unbatched) or 5-D')
    H.raises(function() return F.conv_transpose3d(torch.randn(1, 2, 2, 2, 2), torch.randn(3, 2, 2, 2, 2)) end,
      'conv_transpose3d', 'input channels')
    H.raises(function() return F.conv_transpose3d(torch.randn(1, 2, 1, 1, 1), torch.randn(2, 2, 1, 1, 1), nil,
      { padding = 1 }) end, 'conv_transpose3d', 'too small')
  end)
end)

-- ---- pooling ----

describe('F.max_pool3d and nn.MaxPool3d', function()
  local cases = {
    { name = 'kernel 2', x = { 2, 2, 4, 4, 6 }, k = { 2, 2, 2 }, s = { 2, 2, 2 }, p = { 0, 0, 0 }, d = { 1, 1, 1 } },
    { name = 'overlapping, padded', x = { 1, 3, 5, 6, 5 }, k = { 3, 2, 3 }, s = { 2, 1, 2 }, p = { 1, 1, 1 }, d = { 1, 1, 1 } },
    { name = 'dilated, ceil mode', x = { 2, 1, 7, 5, 6 }, k = { 2, 3, 2 }, s = { 2, 2, 3 }, p = { 1, 1, 0 }, d = { 2, 1, 2 },
      ceil = true },
    { name = 'a window past the input (dilation)', x = { 1, 2, 2, 3, 3 }, k = { 2, 1, 1 }, s = { 1, 1, 1 }, p = { 1, 0, 0 },
      d = { 3, 1, 1 } },
  }

  it('matches PyTorch\'s loops: values and 1-based flat indices into each D x H x W volume', function()
    torch.manual_seed(11)
    for _, c in ipairs(cases) do
      for _, dt in ipairs { f64, f32 } do
        local x = torch.randn(c.x, { dtype = dt })
        local xf, xs = flat(x)
        local want, widx, ys = ref_max_pool3d(xf, xs, c.k, c.s, c.p, c.d, c.ceil)
        local y, idx = F.max_pool3d(x, c.k, { stride = c.s, padding = c.p, dilation = c.d, ceil_mode = c.ceil,
          return_indices = true })
        assert_shape(y, ys, c.name)
        assert.are.equal(torch.int64, idx.dtype)
        H.assert_values(y, want, 0, c.name)
        for i = 1, #widx do widx[i] = widx[i] + 1 end
        H.assert_values(idx, widx, 0, c.name .. ' indices')
      end
    end
  end)

  it('keeps the first of equal maxima and propagates NaN (the last NaN of a window, as PyTorch)', function()
    local x = torch.zeros(1, 1, 2, 2, 2, { dtype = f64 })
    local y, idx = F.max_pool3d(x, 2, { return_indices = true })
    H.assert_values(idx, { 1 })
    x[1][1][2][1][2] = 0 / 0
    y, idx = F.max_pool3d(x, 2, { return_indices = true })
    assert.is_true(y:item() ~= y:item())
    H.assert_values(idx, { 6 })
    -- several NaNs in a window: PyTorch's loops keep the last one in (d, h, w) order
    local z = torch.randn(2, 2, 5, 4, 4, { dtype = f64 })
    -- (windows: depths {1}, {2, 3}, {4, 5}, and the same along H and W)
    for _, at in ipairs { { 1, 1, 2, 3, 2 }, { 1, 1, 3, 2, 2 }, { 1, 2, 2, 2, 2 }, { 1, 2, 2, 3, 3 }, { 2, 1, 4, 3, 3 },
      { 2, 1, 5, 2, 2 }, { 2, 2, 1, 1, 1 }, { 2, 2, 4, 4, 4 }, { 2, 2, 5, 4, 4 } } do
      z[at] = 0 / 0
    end
    local zf, zs = flat(z)
    local want, widx = ref_max_pool3d(zf, zs, { 2, 2, 2 }, { 2, 2, 2 }, { 1, 1, 1 }, { 1, 1, 1 }, true)
    local zy, zi = F.max_pool3d(z, 2, { padding = 1, ceil_mode = true, return_indices = true })
    H.assert_values(zy, want, 0)
    for i = 1, #widx do widx[i] = widx[i] + 1 end
    H.assert_values(zi, widx, 0)
  end)

  it('takes non-contiguous and unbatched input, defaults the stride to the kernel, passes gradcheck', function()
    torch.manual_seed(12)
    local x = nc_randn(2, 2, 5, 4, 6, f64)
    local xf, xs = flat(x)
    local want, widx = ref_max_pool3d(xf, xs, { 2, 2, 3 }, { 2, 2, 3 }, { 1, 0, 1 }, { 1, 1, 1 }, false)
    local y, idx = F.max_pool3d(x, { 2, 2, 3 }, { padding = { 1, 0, 1 }, return_indices = true })
    H.assert_values(y, want, 0)
    for i = 1, #widx do widx[i] = widx[i] + 1 end
    H.assert_values(idx, widx, 0)
    for _, fn in ipairs { F.max_pool3d, F.avg_pool3d, F.adaptive_max_pool3d, F.adaptive_avg_pool3d } do
      assert_shape(fn(torch.randn(0, 2, 4, 4, 4), 2), { 0, 2, 2, 2, 2 })
    end
    local yu, iu = F.max_pool3d(x[2], { 2, 2, 3 }, { padding = { 1, 0, 1 }, return_indices = true })
    H.assert_values(yu, y[2]:totable(), 0)
    H.assert_values(iu, idx[2]:totable(), 0)
    assert.is_true(gradcheck(function(a) return F.max_pool3d(a, { 2, 2, 2 }, { stride = { 1, 2, 1 }, padding = 1 }) end,
      { leaf({ 1, 2, 3, 4, 3 }) }))
    -- the gradient goes to each window's maximum, once per window that takes it
    local g = torch.randn(2, 1, 4, 4, 4, { dtype = f64 }):requires_grad_()
    F.max_pool3d(g, 3, { stride = 1 }):sum():backward()
    local gf, gs = flat(g:detach())
    local _, gi = ref_max_pool3d(gf, gs, { 3, 3, 3 }, { 1, 1, 1 }, { 0, 0, 0 }, { 1, 1, 1 }, false)
    local count = {}
    for i = 1, #gf do count[i] = 0 end
    for q = 1, #gi do
      local sample = (q - 1) // 8
      local p = sample * 64 + gi[q] + 1
      count[p] = count[p] + 1
    end
    H.assert_values(g.grad, count, 0)
  end)

  it('module: repr, return_indices, and cpu:1', function()
    local m = nn.MaxPool3d(3, { stride = 2, padding = 1 })
    assert.are.equal('MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)', tostring(m))
    assert.are.equal('MaxPool3d(kernel_size=(2, 1, 2), stride=(2, 1, 2), padding=0, dilation=1, ceil_mode=True)',
      tostring(nn.MaxPool3d({ 2, 1, 2 }, { ceil_mode = true })))
    local x = torch.randn(2, 3, 5, 5, 5)
    local y, idx = nn.MaxPool3d(3, { stride = 2, padding = 1, return_indices = true })(x)
    H.assert_values(y, m(x):totable(), 0)
    assert_shape(idx, { 2, 3, 3, 3, 3 })
    if torch.cpu.device_count() < 2 then return end
    local y1, i1 = F.max_pool3d(x:to('cpu:1'), 2, { return_indices = true })
    assert.are.equal('cpu:1', tostring(y1.device))
    assert.are.equal('cpu:1', tostring(i1.device))
    local y0, i0 = F.max_pool3d(x, 2, { return_indices = true })
    H.assert_values(y1:to('cpu:0'), y0:totable(), 0)
    H.assert_values(i1:to('cpu:0'), i0:totable(), 0)
  end)

  it('names the function in its errors', function()
    local x = torch.randn(1, 2, 4, 4, 4)
    H.raises(function() return F.max_pool3d(torch.randn(2, 4, 4), 2) end, 'max_pool3d', '4-D (unbatched) or 5-D')
    H.raises(function() return nn.MaxPool3d(2)(torch.randn(1, 1, 1, 2, 4, 4)) end, 'max_pool3d', 'got 6-D')
    H.raises(function() return F.max_pool3d(x, 5) end, 'max_pool3d', 'too small')
    H.raises(function() return F.max_pool3d(x, 2, { padding = 2 }) end, 'max_pool3d', 'pad should be at most half')
    H.raises(function() return F.max_pool3d(x, { 2, 2 }) end, 'max_pool3d', 'kernel_size', 'triple')
    H.raises(function() return F.max_pool3d(x, 0) end, 'max_pool3d', 'kernel_size must be positive')
    H.raises(function() return F.max_pool3d(x:long(), 2) end, 'max_pool3d', 'floating point')
    H.raises(function() return F.max_pool3d(torch.randn(1, 2, 4, 0, 4), 2) end, 'max_pool3d', 'non-zero size')
    H.raises(function() return nn.MaxPool3d({ 2, 2 }) end, 'MaxPool3d', 'triple')
  end)
end)

describe('F.avg_pool3d and nn.AvgPool3d', function()
  local cases = {
    { name = 'kernel 2', x = { 2, 2, 4, 4, 6 }, k = { 2, 2, 2 }, s = { 2, 2, 2 }, p = { 0, 0, 0 } },
    { name = 'padded', x = { 1, 3, 5, 6, 5 }, k = { 3, 2, 3 }, s = { 2, 1, 2 }, p = { 1, 1, 1 } },
    { name = 'ceil mode', x = { 2, 1, 7, 5, 6 }, k = { 3, 3, 2 }, s = { 2, 2, 3 }, p = { 1, 1, 0 }, ceil = true },
  }

  it('matches PyTorch\'s loops with count_include_pad on and off, and divisor_override', function()
    torch.manual_seed(13)
    for _, c in ipairs(cases) do
      for _, dt in ipairs { f64, f32 } do
        local x = torch.randn(c.x, { dtype = dt })
        local xf, xs = flat(x)
        for _, cfg in ipairs { { cip = true }, { cip = false }, { cip = true, div = 7 }, { cip = false, div = -2 } } do
          local want, ys = ref_avg_pool3d(xf, xs, c.k, c.s, c.p, c.ceil, cfg.cip, cfg.div)
          local y = F.avg_pool3d(x, c.k, { stride = c.s, padding = c.p, ceil_mode = c.ceil, count_include_pad = cfg.cip,
            divisor_override = cfg.div })
          assert_shape(y, ys, c.name)
          H.assert_values(y, want, tol(dt), c.name)
        end
      end
    end
  end)

  it('takes non-contiguous and unbatched input and passes gradcheck', function()
    torch.manual_seed(14)
    local x = nc_randn(2, 2, 5, 4, 6, f64)
    local xf, xs = flat(x)
    local want = ref_avg_pool3d(xf, xs, { 3, 2, 3 }, { 2, 2, 2 }, { 1, 1, 0 }, true, false)
    local o = { stride = 2, padding = { 1, 1, 0 }, ceil_mode = true, count_include_pad = false }
    H.assert_values(F.avg_pool3d(x, { 3, 2, 3 }, o), want, 1e-12)
    H.assert_values(F.avg_pool3d(x[1], { 3, 2, 3 }, o), F.avg_pool3d(x, { 3, 2, 3 }, o)[1]:totable(), 1e-12)
    assert.is_true(gradcheck(function(a) return F.avg_pool3d(a, { 2, 3, 2 }, { stride = { 1, 2, 2 }, padding = 1,
      count_include_pad = false, ceil_mode = true }) end, { leaf({ 1, 2, 3, 4, 3 }) }))
  end)

  it('module: repr and forward; errors name the function', function()
    local m = nn.AvgPool3d(3, { stride = 2, padding = 1, count_include_pad = false, divisor_override = 4 })
    assert.are.equal('AvgPool3d(kernel_size=3, stride=2, padding=1)', tostring(m))
    local x = torch.randn(1, 2, 5, 5, 5)
    H.assert_values(m(x), F.avg_pool3d(x, 3, { stride = 2, padding = 1, count_include_pad = false,
      divisor_override = 4 }):totable(), 0)
    H.raises(function() return F.avg_pool3d(torch.randn(2, 4, 4), 2) end, 'avg_pool3d', '4-D (unbatched) or 5-D')
    H.raises(function() return F.avg_pool3d(x, 2, { padding = 2 }) end, 'avg_pool3d', 'pad should be at most half')
    H.raises(function() return F.avg_pool3d(x, 6) end, 'avg_pool3d', 'too small')
    H.raises(function() return F.avg_pool3d(x, 2, { divisor_override = 0 }) end, 'avg_pool3d', 'divisor_override')
    H.raises(function() return nn.AvgPool3d(2, { dilation = 2 }) end, 'AvgPool3d', 'dilation')
  end)
end)

describe('adaptive 3-D pooling', function()
  it('F.adaptive_avg_pool3d and F.adaptive_max_pool3d match their bins, nil entries keep a size', function()
    torch.manual_seed(15)
    for _, dt in ipairs { f64, f32 } do
      local x = nc_randn(2, 3, 7, 5, 6, dt)
      local xf, xs = flat(x)
      for _, out in ipairs { { 3, 2, 4 }, { 1, 1, 1 }, { 7, 5, 6 }, { 4, 5, 2 } } do
        local want, _, ys = ref_adaptive3d(xf, xs, out, false)
        local y = F.adaptive_avg_pool3d(x, out)
        assert_shape(y, ys)
        H.assert_values(y, want, tol(dt))
        local wm, wi = ref_adaptive3d(xf, xs, out, true)
        local m, idx = F.adaptive_max_pool3d(x, out, true)
        H.assert_values(m, wm, 0)
        for i = 1, #wi do wi[i] = wi[i] + 1 end
        H.assert_values(idx, wi, 0)
      end
      assert_shape(F.adaptive_avg_pool3d(x, { 2, nil, 3 }), { 2, 3, 2, 5, 3 })
      assert_shape(F.adaptive_max_pool3d(x, 2), { 2, 3, 2, 2, 2 })
      H.assert_values(F.adaptive_avg_pool3d(x[2], 2), F.adaptive_avg_pool3d(x, 2)[2]:totable(), tol(dt))
      local um, ui = F.adaptive_max_pool3d(x[1], { 3, 2, 2 }, { return_indices = true })
      local bm, bi = F.adaptive_max_pool3d(x, { 3, 2, 2 }, { return_indices = true })
      H.assert_values(um, bm[1]:totable(), 0)
      H.assert_values(ui, bi[1]:totable(), 0)
    end
  end)

  it('pass gradcheck', function()
    torch.manual_seed(16)
    assert.is_true(gradcheck(function(a) return F.adaptive_avg_pool3d(a, { 2, 3, 2 }) end, { leaf({ 1, 2, 3, 4, 5 }) }))
    assert.is_true(gradcheck(function(a) return F.adaptive_max_pool3d(a, { 2, 3, 2 }) end, { leaf({ 1, 2, 3, 4, 5 }) }))
  end)

  it('modules: repr, forward, cpu:1; errors name the function', function()
    assert.are.equal('AdaptiveAvgPool3d(output_size=(2, None, 3))', tostring(nn.AdaptiveAvgPool3d({ 2, nil, 3 })))
    assert.are.equal('AdaptiveMaxPool3d(output_size=2)', tostring(nn.AdaptiveMaxPool3d(2)))
    local x = torch.randn(1, 2, 5, 4, 6)
    H.assert_values(nn.AdaptiveAvgPool3d({ 2, nil, 3 })(x), F.adaptive_avg_pool3d(x, { 2, 4, 3 }):totable(), 0)
    local y, idx = nn.AdaptiveMaxPool3d(2, { return_indices = true })(x)
    H.assert_values(y, F.adaptive_max_pool3d(x, 2):totable(), 0)
    assert_shape(idx, { 1, 2, 2, 2, 2 })
    if torch.cpu.device_count() >= 2 then
      local y1 = F.adaptive_max_pool3d(x:to('cpu:1'), 2)
      assert.are.equal('cpu:1', tostring(y1.device))
      assert.are.equal('cpu:1', tostring(F.adaptive_avg_pool3d(x:to('cpu:1'), 2).device))
      H.assert_values(y1:to('cpu:0'), y:totable(), 0)
    end
    H.raises(function() return F.adaptive_avg_pool3d(torch.randn(4, 4, 4), 2) end, 'adaptive_avg_pool3d', '4-D')
    H.raises(function() return F.adaptive_max_pool3d(torch.randn(2, 4, 4), 2) end, 'adaptive_max_pool3d', '4-D')
    H.raises(function() return F.adaptive_avg_pool3d(x, 0) end, 'adaptive_avg_pool3d', 'output_size')
    H.raises(function() return F.adaptive_max_pool3d(x, { 2, 2.5, 1 }) end, 'adaptive_max_pool3d', 'output_size')
    H.raises(function() return nn.AdaptiveAvgPool3d({ 1, 2, 3, 4 }) end, 'AdaptiveAvgPool3d', 'triple')
  end)
end)

describe('F.max_unpool3d and nn.MaxUnpool3d', function()
  it('puts each value at its 1-based index in zeros, inverting max_pool3d where it kept values', function()
    torch.manual_seed(17)
    for _, dt in ipairs { f64, f32 } do
      local x = torch.randn(2, 2, 4, 4, 6, { dtype = dt })
      local y, idx = F.max_pool3d(x, 2, { return_indices = true })
      local u = F.max_unpool3d(y, idx, 2)
      assert_shape(u, { 2, 2, 4, 4, 6 })
      -- the reference: zeros, then each pooled value at its index of its own volume
      local yf, ys = flat(y)
      local inf = flat(idx)
      local want = {}
      for i = 1, 2 * 2 * 96 do want[i] = 0 end
      for q = 1, #yf do
        local volume = (q - 1) // (ys[3] * ys[4] * ys[5])
        want[volume * 96 + inf[q]] = yf[q]
      end
      H.assert_values(u, want, 0)
      -- pooling again gives the same maxima
      H.assert_values(F.max_pool3d(u, 2), y:totable(), 0)
    end
  end)

  it('takes output_size, unbatched input, and passes gradcheck', function()
    torch.manual_seed(18)
    local x = torch.randn(1, 2, 5, 5, 5, { dtype = f64 })
    local y, idx = F.max_pool3d(x, 2, { return_indices = true })
    local m = nn.MaxUnpool3d(2)
    assert.are.equal('MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))', tostring(m))
    -- the default output (4 x 4 x 4) cannot hold the indices into 5 x 5 x 5 volumes
    H.raises(function() return m(y, idx) end, 'max_unpool3d', 'invalid max index')
    local u = m(y, idx, { 5, 5, 5 })
    assert_shape(u, { 1, 2, 5, 5, 5 })
    H.assert_values(u:mul(x:ne(0)), u:totable(), 0)
    H.assert_values(F.max_unpool3d(y[1], idx[1], 2, { output_size = { 1, 2, 5, 5, 5 } }), u[1]:totable(), 0)
    assert.is_true(gradcheck(function(a) return F.max_unpool3d(a, idx, 2, { output_size = { 5, 5, 5 } }) end,
      { y:clone():requires_grad_() }))
    H.raises(function() return F.max_unpool3d(y, idx, 2, { output_size = { 9, 5, 5 } }) end, 'max_unpool3d', 'output_size')
    H.raises(function() return F.max_unpool3d(y, idx:narrow(5, 1, 1), 2) end, 'max_unpool3d', 'shape of indices')
    H.raises(function() return F.max_unpool3d(y, idx + 1000, 2) end, 'max_unpool3d', 'invalid max index')
  end)
end)

-- ---- normalisation ----

describe('nn.BatchNorm3d', function()
  it('normalises each channel over N, D, H, W, updates the running statistics, and checks for 5-D input', function()
    torch.manual_seed(19)
    for _, dt in ipairs { f64, f32 } do
      local m = nn.BatchNorm3d(3, { momentum = 0.2, dtype = dt })
      torch.no_grad(function()
        m.weight:copy_(torch.tensor({ 1.5, -0.5, 2 }, { dtype = f64 }))
        m.bias:copy_(torch.tensor({ 0.1, 0.2, -0.3 }, { dtype = f64 }))
      end)
      assert.are.equal('BatchNorm3d(3, eps=1e-05, momentum=0.2, affine=True, track_running_stats=True)', tostring(m))
      local x = nc_randn(2, 3, 3, 2, 4, dt)
      local xf, xs = flat(x)
      local y = m(x)
      local want, mean, var = {}, {}, {}
      for c = 1, 3 do
        local vals, pos = {}, {}
        for n = 1, 2 do
          for i = 1, 3 * 2 * 4 do
            local p = at5(xs, n, c, 1, 1, 1) + i - 1
            vals[#vals + 1], pos[#pos + 1] = xf[p], p
          end
        end
        local s = 0
        for _, v in ipairs(vals) do s = s + v end
        mean[c] = s / #vals
        local ss = 0
        for _, v in ipairs(vals) do ss = ss + (v - mean[c]) ^ 2 end
        var[c] = ss / #vals
        local wc, bc = m.weight[c], m.bias[c]
        for k, p in ipairs(pos) do want[p] = (vals[k] - mean[c]) / math.sqrt(var[c] + 1e-5) * wc + bc end
        mean[c], var[c] = 0.2 * mean[c], 0.8 + 0.2 * var[c] * #vals / (#vals - 1)
      end
      H.assert_values(y, want, dt == f64 and 1e-10 or 1e-5)
      H.assert_values(m.running_mean, mean, dt == f64 and 1e-12 or 1e-6)
      H.assert_values(m.running_var, var, dt == f64 and 1e-12 or 1e-6)
      assert.are.equal(1, m.num_batches_tracked:item())
      m:eval()
      local e = m(x)
      H.assert_values(e, ((x - m.running_mean:view(1, 3, 1, 1, 1)) / (m.running_var:view(1, 3, 1, 1, 1) + 1e-5):sqrt()
        * m.weight:view(1, 3, 1, 1, 1) + m.bias:view(1, 3, 1, 1, 1)):totable(), dt == f64 and 1e-12 or 1e-5)
    end
    H.raises(function() return nn.BatchNorm3d(3)(torch.randn(2, 3, 4, 4)) end, 'BatchNorm3d', 'expected 5D input (got 4D input)')
  end)

  it('passes gradcheck', function()
    torch.manual_seed(20)
    local m = nn.BatchNorm3d(2, { dtype = f64 })
    assert.is_true(gradcheck(function(a) return m(a) end, { leaf({ 2, 2, 2, 1, 2 }) }))
  end)
end)

-- ---- padding ----

describe('3-D padding layers', function()
  -- position i (1-based, 1 - l .. n + r) of a padded dim of n, as an input position (nil: the constant)
  local MAP = {
    constant = function(i, n) return (i >= 1 and i <= n) and i or nil end,
    reflect = function(i, n)
      if i < 1 then return 2 - i end
      if i > n then return 2 * n - i end
      return i
    end,
    replicate = function(i, n) return math.min(math.max(i, 1), n) end,
    circular = function(i, n) return (i - 1) % n + 1 end,
  }
  local function ref_pad(xf, xs, pad, mode, value)
    -- pad: {left, right, top, bottom, front, back} for the last three dims
    local lo = { pad[5], pad[3], pad[1] }
    local hi = { pad[6], pad[4], pad[2] }
    local I = { xs[3], xs[4], xs[5] }
    local out = {}
    for i = 1, 3 do out[i] = I[i] + lo[i] + hi[i] end
    local ys = { xs[1], xs[2], out[1], out[2], out[3] }
    local y = {}
    for n = 1, xs[1] do
      for c = 1, xs[2] do
        for a = 1, out[1] do
          for b = 1, out[2] do
            for e = 1, out[3] do
              local ia, ib, ie = MAP[mode](a - lo[1], I[1]), MAP[mode](b - lo[2], I[2]), MAP[mode](e - lo[3], I[3])
              y[at5(ys, n, c, a, b, e)] = (ia and ib and ie) and xf[at5(xs, n, c, ia, ib, ie)] or value
            end
          end
        end
      end
    end
    return y, ys
  end

  it('match the index maps, batched and unbatched, with gradients', function()
    torch.manual_seed(21)
    local x = nc_randn(2, 2, 3, 4, 5, f64)
    local xf, xs = flat(x)
    local pad = { 1, 2, 0, 3, 2, 1 }
    for name, mode in pairs { ConstantPad3d = 'constant', ZeroPad3d = 'constant', ReflectionPad3d = 'reflect',
      ReplicationPad3d = 'replicate', CircularPad3d = 'circular' } do
      local value = name == 'ConstantPad3d' and 2.5 or 0
      local m = name == 'ConstantPad3d' and nn[name](pad, value) or nn[name](pad)
      local want, ys = ref_pad(xf, xs, pad, mode, value)
      local y = m(x)
      assert_shape(y, ys, name)
      H.assert_values(y, want, 0, name)
      H.assert_values(m(x[2]), y[2]:totable(), 0, name)
      local small = name == 'ConstantPad3d' and nn[name]({ 1, 0, 0, 1, 1, 1 }, value) or nn[name]({ 1, 0, 0, 1, 1, 1 })
      assert.is_true(gradcheck(function(a) return small(a) end, { leaf({ 1, 1, 2, 2, 3 }) }), name)
    end
    assert.are.equal('ReflectionPad3d((1, 1, 1, 1, 1, 1))', tostring(nn.ReflectionPad3d(1)))
    assert.are.equal('ReplicationPad3d((1, 2, 3, 4, 5, 6))', tostring(nn.ReplicationPad3d({ 1, 2, 3, 4, 5, 6 })))
    assert.are.equal('ConstantPad3d((1, 1, 1, 1, 1, 1), value=2.0)', tostring(nn.ConstantPad3d(1, 2)))
    H.raises(function() return nn.ReflectionPad3d({ 1, 2, 3, 4 }) end, 'ReflectionPad3d', '6 integers')
    H.raises(function() return nn.ReplicationPad3d(1)(torch.randn(2, 3, 4)) end, 'ReplicationPad3d', '4-D (unbatched) or 5-D')
    H.raises(function() return nn.ReflectionPad3d(3)(torch.randn(1, 1, 3, 4, 4)) end, 'pad', 'Padding size should be less')
  end)
end)

-- ---- interpolation ----

describe('F.interpolate and nn.Upsample on 5-D input', function()
  it('nearest and trilinear match their formulas, by size and by scale factor, with and without align_corners', function()
    torch.manual_seed(22)
    for _, dt in ipairs { f64, f32 } do
      local x = nc_randn(2, 2, 3, 4, 5, dt)
      local xf, xs = flat(x)
      local cases = {
        { size = { 5, 3, 7 }, mode = 'trilinear' },
        { size = { 6, 8, 10 }, mode = 'trilinear', align_corners = true },
        { size = { 1, 2, 1 }, mode = 'trilinear', align_corners = true },
        { scale_factor = { 1.5, 2, 0.6 }, mode = 'trilinear' },
        { scale_factor = 2, mode = 'trilinear', align_corners = true },
        { size = { 5, 3, 7 }, mode = 'nearest' },
        { scale_factor = { 2, 1.5, 0.6 }, mode = 'nearest' },
      }
      for _, c in ipairs(cases) do
        local out, factors = c.size, nil
        if c.scale_factor then
          factors = type(c.scale_factor) == 'table' and c.scale_factor or { c.scale_factor, c.scale_factor, c.scale_factor }
          out = {}
          for i = 1, 3 do out[i] = math.floor(xs[2 + i] * factors[i]) end
        end
        local want, ys = ref_interpolate3d(xf, xs, out, c.mode, c.align_corners, factors)
        local y = F.interpolate(x, { size = c.size, scale_factor = c.scale_factor, mode = c.mode,
          align_corners = c.align_corners })
        local what = c.mode .. (c.size and ' size' or ' scale_factor') .. (c.align_corners and ' align_corners' or '')
        assert_shape(y, ys, what)
        H.assert_values(y, want, dt == f64 and 1e-12 or 1e-5, what)
      end
    end
  end)

  it('passes gradcheck; nn.Upsample takes trilinear; errors name the function', function()
    torch.manual_seed(23)
    assert.is_true(gradcheck(function(a) return F.interpolate(a, { size = { 3, 2, 4 }, mode = 'trilinear' }) end,
      { leaf({ 1, 1, 2, 3, 2 }) }))
    assert.is_true(gradcheck(function(a) return F.interpolate(a, { scale_factor = 2, mode = 'trilinear',
      align_corners = true }) end, { leaf({ 1, 1, 2, 2, 2 }) }))
    local x = torch.randn(1, 2, 2, 3, 2)
    local up = nn.Upsample({ scale_factor = 2, mode = 'trilinear', align_corners = false })
    assert.are.equal('Upsample(scale_factor=2.0, mode=trilinear)', tostring(up))
    H.assert_values(up(x), F.interpolate(x, { scale_factor = 2, mode = 'trilinear', align_corners = false }):totable(), 0)
    assert_shape(nn.Upsample({ size = { 3, 4, 5 } })(x), { 1, 2, 3, 4, 5 })
    if torch.cpu.device_count() >= 2 then
      assert.are.equal('cpu:1', tostring(up(x:to('cpu:1')).device))
    end
    H.raises(function() return F.interpolate(x, { scale_factor = 2, mode = 'bilinear' }) end, 'interpolate',
      "mode 'bilinear' is not supported for 5-D input")
    H.raises(function() return F.interpolate(torch.randn(1, 1, 4, 4), { scale_factor = 2, mode = 'trilinear' }) end,
      'interpolate', "mode 'trilinear' is not supported for 4-D input")
    H.raises(function() return F.interpolate(x, { scale_factor = 2, align_corners = true }) end, 'interpolate',
      'align_corners option can only be set')
    H.raises(function() return F.interpolate(x, { size = { 3, 4 }, mode = 'trilinear' }) end, 'interpolate', '3 numbers')
    H.raises(function() return F.interpolate(torch.randn(1, 1, 2, 2, 2, 2), { scale_factor = 2 }) end, 'interpolate',
      '5-D (N, C, D, H, W)')
  end)
end)
