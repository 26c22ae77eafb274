-- conv2d and 2-D pooling (torch._nn.* and torch.nn.functional): forward values against plain Lua
-- loops in float64 over many configurations, the other dtypes against float64, gradients by finite
-- differences (gradcheck), max pooling's indices, and every error case.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional
local C = torch._nn
local gradcheck = torch.autograd.gradcheck

local f64 = torch.float64

-- ---- plain Lua references, on nested tables (N, C, H, W) ----

local function shape4(t)
  return #t, #t[1], #t[1][1], #t[1][1][1]
end

local function zeros4(n, c, h, w)
  local t = {}
  for a = 1, n do
    t[a] = {}
    for b = 1, c do
      t[a][b] = {}
      for i = 1, h do
        t[a][b][i] = {}
        for j = 1, w do t[a][b][i][j] = 0 end
      end
    end
  end
  return t
end

-- o = {stride = {sh, sw}, padding = {ph, pw}, dilation = {dh, dw}, groups = g}
local function ref_conv(x, w, b, o)
  local N, Cin, Hi, Wi = shape4(x)
  local Cout, Cig, KH, KW = shape4(w)
  local sh, sw = o.stride[1], o.stride[2]
  local ph, pw = o.padding[1], o.padding[2]
  local dh, dw = o.dilation[1], o.dilation[2]
  local groups = o.groups
  local Cog = Cout // groups
  assert(Cig * groups == Cin)
  local OH = (Hi + 2 * ph - dh * (KH - 1) - 1) // sh + 1
  local OW = (Wi + 2 * pw - dw * (KW - 1) - 1) // sw + 1
  local y = zeros4(N, Cout, OH, OW)
  for n = 1, N do
    for co = 1, Cout do
      local g = (co - 1) // Cog
      for oh = 1, OH do
        for ow = 1, OW do
          local s = b and b[co] or 0
          for ci = 1, Cig do
            local cin = g * Cig + ci
            for ki = 1, KH do
              local ih = (oh - 1) * sh - ph + (ki - 1) * dh + 1
              if ih >= 1 and ih <= Hi then
                for kj = 1, KW do
                  local iw = (ow - 1) * sw - pw + (kj - 1) * dw + 1
                  if iw >= 1 and iw <= Wi then s = s + x[n][cin][ih][iw] * w[co][ci][ki][kj] end
                end
              end
            end
          end
          y[n][co][oh][ow] = s
        end
      end
    end
  end
  return y
end

-- the gradients of sum(y * g) for y = conv(x, w, b): loops over the same taps as ref_conv
local function ref_conv_backward(x, w, g, o)
  local N, Cin, Hi, Wi = shape4(x)
  local Cout, Cig, KH, KW = shape4(w)
  local _, _, OH, OW = shape4(g)
  local Cog = Cout // o.groups
  local gx, gw, gb = zeros4(N, Cin, Hi, Wi), zeros4(Cout, Cig, KH, KW), {}
  for co = 1, Cout do gb[co] = 0 end
  for n = 1, N do
    for co = 1, Cout do
      local grp = (co - 1) // Cog
      for oh = 1, OH do
        for ow = 1, OW do
          local gv = g[n][co][oh][ow]
          gb[co] = gb[co] + gv
          for ci = 1, Cig do
            local cin = grp * Cig + ci
            for ki = 1, KH do
              local ih = (oh - 1) * o.stride[1] - o.padding[1] + (ki - 1) * o.dilation[1] + 1
              if ih >= 1 and ih <= Hi then
                for kj = 1, KW do
                  local iw = (ow - 1) * o.stride[2] - o.padding[2] + (kj - 1) * o.dilation[2] + 1
                  if iw >= 1 and iw <= Wi then
                    gx[n][cin][ih][iw] = gx[n][cin][ih][iw] + gv * w[co][ci][ki][kj]
                    gw[co][ci][ki][kj] = gw[co][ci][ki][kj] + gv * x[n][cin][ih][iw]
                  end
                end
              end
            end
          end
        end
      end
    end
  end
  return gx, gw, gb
end

-- PyTorch's pooling output size
local function pooled(n, k, p, s, d, ceil)
  local num = n + 2 * p - d * (k - 1) - 1 + (ceil and s - 1 or 0)
  local out = num // s + 1
  if ceil and (out - 1) * s >= n + p then out = out - 1 end
  return out
end

-- max pooling: values and 1-based flat indices within each plane (NaN wins, ties go to the first)
local function ref_max_pool(x, k, s, p, d, ceil)
  local N, Cc, Hi, Wi = shape4(x)
  local OH, OW = pooled(Hi, k[1], p[1], s[1], d[1], ceil), pooled(Wi, k[2], p[2], s[2], d[2], ceil)
  local y, idx = zeros4(N, Cc, OH, OW), zeros4(N, Cc, OH, OW)
  for n = 1, N do
    for c = 1, Cc do
      for oh = 1, OH do
        for ow = 1, OW do
          local best, at = -math.huge, nil
          for ki = 1, k[1] do
            local ih = (oh - 1) * s[1] - p[1] + (ki - 1) * d[1]
            for kj = 1, k[2] do
              local iw = (ow - 1) * s[2] - p[2] + (kj - 1) * d[2]
              if ih >= 0 and ih < Hi and iw >= 0 and iw < Wi then
                local v = x[n][c][ih + 1][iw + 1]
                if at == nil then at = ih * Wi + iw end
                if v > best or v ~= v then best, at = v, ih * Wi + iw end
              end
            end
          end
          y[n][c][oh][ow], idx[n][c][oh][ow] = best, at + 1
        end
      end
    end
  end
  return y, idx
end

local function ref_avg_pool(x, k, s, p, ceil, cip, divisor)
  local N, Cc, Hi, Wi = shape4(x)
  local OH, OW = pooled(Hi, k[1], p[1], s[1], 1, ceil), pooled(Wi, k[2], p[2], s[2], 1, ceil)
  local y = zeros4(N, Cc, OH, OW)
  for n = 1, N do
    for c = 1, Cc do
      for oh = 1, OH do
        for ow = 1, OW do
          local hs, ws = (oh - 1) * s[1] - p[1], (ow - 1) * s[2] - p[2]
          local he, we = math.min(hs + k[1], Hi + p[1]), math.min(ws + k[2], Wi + p[2])
          local pool = (he - hs) * (we - ws)
          hs, ws, he, we = math.max(hs, 0), math.max(ws, 0), math.min(he, Hi), math.min(we, Wi)
          local sum, cnt = 0, 0
          for ih = hs, he - 1 do
            for iw = ws, we - 1 do sum, cnt = sum + x[n][c][ih + 1][iw + 1], cnt + 1 end
          end
          local div = divisor ~= 0 and divisor or (cip and pool or cnt)
          y[n][c][oh][ow] = cnt == 0 and 0 or sum / div
        end
      end
    end
  end
  return y
end

local function ref_adaptive(x, oh_n, ow_n)
  local N, Cc, Hi, Wi = shape4(x)
  local y = zeros4(N, Cc, oh_n, ow_n)
  for n = 1, N do
    for c = 1, Cc do
      for oh = 0, oh_n - 1 do
        local h0, h1 = math.floor(oh * Hi / oh_n), math.ceil((oh + 1) * Hi / oh_n)
        for ow = 0, ow_n - 1 do
          local w0, w1 = math.floor(ow * Wi / ow_n), math.ceil((ow + 1) * Wi / ow_n)
          local s = 0
          for ih = h0, h1 - 1 do
            for iw = w0, w1 - 1 do s = s + x[n][c][ih + 1][iw + 1] end
          end
          y[n][c][oh + 1][ow + 1] = s / ((h1 - h0) * (w1 - w0))
        end
      end
    end
  end
  return y
end

local function randn(shape, dtype) return torch.randn(shape, { dtype = dtype or f64 }) end

-- distinct values (no ties within a window, even after a finite-difference step), shuffled
local function distinct(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return (torch.randperm(n):double() * 0.37 - n * 0.15):reshape(shape)
end

-- a non-contiguous tensor with x's values: a transposed copy viewed back
local function noncontig(x)
  local y = x:transpose(-1, -2):contiguous():transpose(-1, -2)
  assert(not y:is_contiguous() or x:size(-1) == 1 or x:size(-2) == 1)
  return y
end

local function conv_of(x, w, b, o)
  return C.conv2d(x, w, b, o.stride[1], o.stride[2], o.padding[1], o.padding[2], o.dilation[1], o.dilation[2],
    o.groups)
end

local function conv_cfg(t)
  return {
    N = t.N or 2, Cin = t.Cin or 3, Cout = t.Cout or 4, H = t.H or 6, W = t.W or 5, kh = t.kh or 3, kw = t.kw or 3,
    stride = t.stride or { 1, 1 }, padding = t.padding or { 0, 0 }, dilation = t.dilation or { 1, 1 },
    groups = t.groups or 1, bias = t.bias ~= false, name = t.name,
  }
end

local conv_configs = {
  conv_cfg { name = 'plain 3x3' },
  conv_cfg { name = 'non-square kernel, stride and padding', kh = 3, kw = 2, stride = { 2, 1 }, padding = { 1, 2 } },
  conv_cfg { name = 'stride 3 with uneven coverage', H = 8, W = 7, stride = { 3, 3 }, padding = { 1, 0 } },
  conv_cfg { name = 'dilation', H = 7, W = 7, dilation = { 2, 3 }, padding = { 2, 1 } },
  conv_cfg { name = 'padding wider than the kernel', kh = 2, kw = 2, padding = { 3, 2 }, stride = { 2, 2 } },
  conv_cfg { name = 'groups 2', Cin = 4, Cout = 6, groups = 2, padding = { 1, 1 } },
  conv_cfg { name = 'depthwise', Cin = 3, Cout = 6, groups = 3, padding = { 1, 1 }, stride = { 2, 2 } },
  conv_cfg { name = 'depthwise multiplier 1', Cin = 4, Cout = 4, groups = 4, kh = 3, kw = 3, padding = { 1, 1 } },
  conv_cfg { name = 'depthwise, strided, dilated, batch 8 (split over threads)', N = 8, Cin = 8, Cout = 16, groups = 8,
    H = 13, W = 12, stride = { 2, 1 }, padding = { 2, 1 }, dilation = { 2, 1 } },
  conv_cfg { name = 'one input channel', Cin = 1, Cout = 5, H = 7, W = 8, stride = { 1, 2 }, padding = { 1, 1 } },
  conv_cfg { name = 'one input channel, 3x3 stride 1 padding 1 (the nine taps in one pass)', Cin = 1, Cout = 5, H = 7, W = 20,
    padding = { 1, 1 } },
  conv_cfg { name = 'one input channel, kernel wider than 32', N = 1, Cin = 1, Cout = 2, H = 3, W = 40, kh = 2, kw = 34,
    padding = { 1, 2 }, stride = { 1, 3 } },
  conv_cfg { name = '1x1 (no im2col)', kh = 1, kw = 1 },
  conv_cfg { name = '1x1 grouped (no im2col)', Cin = 4, Cout = 2, kh = 1, kw = 1, groups = 2 },
  conv_cfg { name = '1x1 stride 2', kh = 1, kw = 1, stride = { 2, 2 } },
  conv_cfg { name = '1x1 padded', kh = 1, kw = 1, padding = { 1, 1 } },
  conv_cfg { name = 'kernel the size of the input', kh = 6, kw = 5 },
  conv_cfg { name = 'batch 1, no bias', N = 1, bias = false, padding = { 1, 1 } },
  conv_cfg { name = 'batch 9 (split over threads)', N = 9, Cin = 4, Cout = 8, H = 9, W = 8, padding = { 1, 1 } },
  conv_cfg { name = 'batch 9, 1x1 (split over threads)', N = 9, Cin = 16, Cout = 32, H = 9, W = 8, kh = 1, kw = 1 },
  conv_cfg { name = '1x1 input', H = 1, W = 1, kh = 1, kw = 1 },
}

local function make_conv_inputs(c, dtype)
  local x = randn({ c.N, c.Cin, c.H, c.W }, dtype)
  local w = randn({ c.Cout, c.Cin // c.groups, c.kh, c.kw }, dtype)
  local b = c.bias and randn({ c.Cout }, dtype) or nil
  return x, w, b
end

describe('conv2d forward', function()
  for _, c in ipairs(conv_configs) do
    it('matches the Lua loops in float64: ' .. c.name, function()
      torch.manual_seed(11)
      local x, w, b = make_conv_inputs(c, f64)
      local want = ref_conv(x:totable(), w:totable(), b and b:totable(), c)
      local y = conv_of(x, w, b, c)
      assert.are.equal(f64, y.dtype)
      H.assert_values(y, want, 1e-12, c.name)
      -- the same through torch.nn.functional
      local yf = F.conv2d(x, w, b, { stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups })
      H.assert_values(yf, want, 1e-12, c.name .. ' (F)')
    end)
  end

  it('takes non-contiguous input and weight', function()
    torch.manual_seed(12)
    for _, c in ipairs { conv_configs[2], conv_configs[6], conv_configs[9], conv_configs[12] } do
      local x, w, b = make_conv_inputs(c, f64)
      local want = ref_conv(x:totable(), w:totable(), b and b:totable(), c)
      local xn, wn = noncontig(x), w:permute(2, 1, 3, 4):contiguous():permute(2, 1, 3, 4)
      assert.is_false(xn:is_contiguous())
      if wn:size(2) > 1 then assert.is_false(wn:is_contiguous()) end
      H.assert_values(conv_of(xn, wn, b, c), want, 1e-12, c.name .. ' non-contiguous')
      -- a sliced batch and channel range
      local big = randn({ c.N + 1, c.Cin + 2, c.H, c.W })
      local xs = big:narrow(1, 2, c.N):narrow(2, 2, c.Cin)
      H.assert_values(conv_of(xs, w, b, c), ref_conv(xs:totable(), w:totable(), b and b:totable(), c), 1e-12)
    end
  end)

  it('takes an unbatched 3-D input and returns a 3-D result', function()
    torch.manual_seed(13)
    local c = conv_cfg { N = 1, padding = { 1, 1 }, stride = { 2, 1 } }
    local x, w, b = make_conv_inputs(c, f64)
    local y = F.conv2d(x[1], w, b, { stride = c.stride, padding = c.padding })
    assert.are.same({ 4, 3, 5 }, y.shape)
    H.assert_values(y, ref_conv(x:totable(), w:totable(), b:totable(), c)[1], 1e-12)
  end)

  it('defaults to stride 1, no padding, dilation 1, groups 1 through F', function()
    torch.manual_seed(14)
    local c = conv_cfg {}
    local x, w, b = make_conv_inputs(c, f64)
    H.assert_values(F.conv2d(x, w, b), ref_conv(x:totable(), w:totable(), b:totable(), c), 1e-12)
    H.assert_values(F.conv2d(x, w), ref_conv(x:totable(), w:totable(), nil, c), 1e-12)
  end)

  it('gives float32 results close to float64', function()
    torch.manual_seed(15)
    for _, c in ipairs(conv_configs) do
      local x, w, b = make_conv_inputs(c, f64)
      local want = conv_of(x, w, b, c)
      local y = conv_of(x:float(), w:float(), b and b:float(), c)
      assert.are.equal(torch.float32, y.dtype)
      H.assert_values(y:double(), want:totable(), 1e-5, c.name .. ' float32')
    end
  end)

  it('computes float16 and bfloat16 in float32 and keeps their dtype', function()
    torch.manual_seed(16)
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      for _, c in ipairs { conv_configs[1], conv_configs[6], conv_configs[9], conv_configs[12] } do
        local x, w, b = make_conv_inputs(c, f64)
        x, w, b = x:to(dt), w:to(dt), b:to(dt)
        -- the reference sees the rounded inputs, so only the output's rounding differs
        local want = conv_of(x:double(), w:double(), b:double(), c)
        local y = conv_of(x, w, b, c)
        assert.are.equal(dt, y.dtype)
        local tol = dt == torch.float16 and 2e-3 or 1e-2
        local got, ref = H.flatten(y:double():totable()), H.flatten(want:totable())
        for i = 1, #ref do
          assert(math.abs(got[i] - ref[i]) <= tol * (1 + math.abs(ref[i])), c.name .. ' ' .. tostring(dt))
        end
      end
    end
  end)

  it('runs on another CPU device and keeps it', function()
    if torch.cpu.device_count() < 2 then return end
    torch.manual_seed(17)
    local c = conv_configs[2]
    local x, w, b = make_conv_inputs(c, f64)
    local y = conv_of(x:to('cpu:1'), w:to('cpu:1'), b:to('cpu:1'), c)
    assert.are.equal('cpu:1', tostring(y.device))
    H.assert_values(y:to('cpu:0'), ref_conv(x:totable(), w:totable(), b:totable(), c), 1e-12)
    local m, idx = F.max_pool2d(x:to('cpu:1'), 2, { return_indices = true })
    assert.are.equal('cpu:1', tostring(m.device))
    assert.are.equal('cpu:1', tostring(idx.device))
  end)

  it('records ConvolutionBackward0', function()
    local x = randn({ 1, 2, 4, 4 }):requires_grad_()
    local y = F.conv2d(x, randn({ 3, 2, 3, 3 }))
    assert.are.equal('ConvolutionBackward0', y.grad_fn.name)
    torch.no_grad(function() assert.is_nil(F.conv2d(x, randn({ 3, 2, 3, 3 })).grad_fn) end)
  end)
end)

describe('conv2d gradients', function()
  local cases = {
    conv_cfg { name = 'stride 2, padding 1', N = 2, Cin = 2, Cout = 3, H = 5, W = 4, stride = { 2, 2 }, padding = { 1, 1 } },
    conv_cfg { name = 'groups 2, non-square', N = 2, Cin = 4, Cout = 2, H = 4, W = 5, kh = 2, kw = 3, groups = 2, padding = { 1, 0 } },
    conv_cfg { name = 'dilation 2', N = 1, Cin = 2, Cout = 2, H = 5, W = 5, dilation = { 2, 2 }, padding = { 1, 2 } },
    conv_cfg { name = 'depthwise', N = 2, Cin = 3, Cout = 3, H = 4, W = 4, groups = 3, padding = { 1, 1 } },
    conv_cfg { name = 'depthwise multiplier 2, strided and dilated', N = 2, Cin = 2, Cout = 4, H = 5, W = 6, groups = 2,
      stride = { 2, 2 }, dilation = { 1, 2 }, padding = { 1, 2 } },
    conv_cfg { name = 'one input channel', N = 2, Cin = 1, Cout = 2, H = 4, W = 5, kh = 2, kw = 3, stride = { 1, 2 } },
    conv_cfg { name = 'one input channel, 3x3 stride 1 padding 1', N = 2, Cin = 1, Cout = 3, H = 5, W = 6, padding = { 1, 1 } },
    conv_cfg { name = '1x1', N = 2, Cin = 3, Cout = 2, H = 3, W = 3, kh = 1, kw = 1 },
    conv_cfg { name = '1x1 grouped, no bias', N = 2, Cin = 4, Cout = 4, H = 2, W = 3, kh = 1, kw = 1, groups = 2, bias = false },
    conv_cfg { name = 'batch 5 (split over threads)', N = 5, Cin = 4, Cout = 4, H = 4, W = 4, kh = 3, kw = 3, padding = { 1, 1 } },
  }
  for _, c in ipairs(cases) do
    it('match finite differences for x, w and b: ' .. c.name, function()
      torch.manual_seed(21)
      local x, w, b = make_conv_inputs(c, f64)
      x:requires_grad_()
      w:requires_grad_()
      if b then b:requires_grad_() end
      assert.is_true(gradcheck(function(a, ww, bb) return conv_of(a, ww, bb, c) end, { x, w, b }))
    end)
  end

  for _, c in ipairs {
    conv_cfg { name = 'batch 8 (split over threads)', N = 8, Cin = 4, Cout = 8, H = 10, W = 9, padding = { 1, 1 },
      stride = { 1, 2 } },
    conv_cfg { name = 'batch 8, 1x1 (split over threads)', N = 8, Cin = 16, Cout = 16, H = 8, W = 8, kh = 1, kw = 1 },
    conv_cfg { name = 'batch 8, grouped (split over threads)', N = 8, Cin = 8, Cout = 8, H = 9, W = 9, groups = 2,
      padding = { 2, 1 }, dilation = { 2, 1 } },
    conv_cfg { name = 'batch 8, depthwise (split over threads)', N = 8, Cin = 8, Cout = 16, H = 12, W = 12, groups = 8,
      padding = { 1, 1 } },
    conv_cfg { name = 'bias of a large output (split over threads)', N = 16, Cin = 1, Cout = 8, H = 26, W = 26 },
  } do
    it('match the Lua loops with a random output gradient: ' .. c.name, function()
      torch.manual_seed(25)
      local x, w, b = make_conv_inputs(c, f64)
      x:requires_grad_()
      w:requires_grad_()
      b:requires_grad_()
      local y = conv_of(x, w, b, c)
      local g = randn(y.shape)
      y:backward(g)
      local gx, gw, gb = ref_conv_backward(x:detach():totable(), w:detach():totable(), g:totable(), c)
      H.assert_values(x.grad, gx, 1e-10, c.name .. ' gx')
      H.assert_values(w.grad, gw, 1e-10, c.name .. ' gw')
      H.assert_values(b.grad, gb, 1e-10, c.name .. ' gb')
      -- float32 against the same loops
      local x32, w32, b32 = x:detach():float():requires_grad_(), w:detach():float():requires_grad_(),
          b:detach():float():requires_grad_()
      conv_of(x32, w32, b32, c):backward(g:float())
      H.assert_values(x32.grad:double(), gx, 1e-4, c.name .. ' gx float32')
      H.assert_values(w32.grad:double(), gw, 1e-4, c.name .. ' gw float32')
      H.assert_values(b32.grad:double(), gb, 1e-4, c.name .. ' gb float32')
    end)
  end

  it('match finite differences for an unbatched, non-contiguous input', function()
    torch.manual_seed(22)
    local x = noncontig(randn({ 2, 4, 5 })):requires_grad_()
    local w = randn({ 3, 2, 2, 3 }):requires_grad_()
    local b = randn({ 3 }):requires_grad_()
    assert.is_false(x:is_contiguous())
    assert.is_true(gradcheck(function(a, ww, bb)
      return F.conv2d(a, ww, bb, { stride = { 1, 2 }, padding = 1 })
    end, { x, w, b }))
  end)

  it('give only the gradients asked for, with the inputs\' dtypes', function()
    torch.manual_seed(23)
    local x = randn({ 2, 3, 5, 5 }, torch.float32)
    local w = randn({ 4, 3, 3, 3 }, torch.float32):requires_grad_()
    local y = F.conv2d(x, w, nil, { padding = 1 })
    y:sum():backward()
    assert.is_nil(x.grad)
    assert.are.equal(torch.float32, w.grad.dtype)
    -- d(sum y)/dw[co, ci, i, j] is the sum of the inputs that tap (i, j) sees
    local xt = x:double():totable()
    for ci = 1, 3 do
      for i = 1, 3 do
        for j = 1, 3 do
          local s = 0
          for n = 1, 2 do
            for oh = 1, 5 do
              for ow = 1, 5 do
                local ih, iw = oh - 2 + i, ow - 2 + j
                if ih >= 1 and ih <= 5 and iw >= 1 and iw <= 5 then s = s + xt[n][ci][ih][iw] end
              end
            end
          end
          for co = 1, 4 do H.close(w.grad[co][ci][i][j], s, 1e-5) end
        end
      end
    end
  end)

  it('work in float16 and bfloat16 (gradients in the input dtype, close to float64)', function()
    torch.manual_seed(24)
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local x64, w64, b64 = randn({ 2, 2, 4, 4 }), randn({ 3, 2, 3, 3 }), randn({ 3 })
      local x, w, b = x64:to(dt):requires_grad_(), w64:to(dt):requires_grad_(), b64:to(dt):requires_grad_()
      local xr, wr, br = x:detach():double():requires_grad_(), w:detach():double():requires_grad_(),
          b:detach():double():requires_grad_()
      F.conv2d(x, w, b, { padding = 1 }):sum():backward()
      F.conv2d(xr, wr, br, { padding = 1 }):sum():backward()
      local tol = dt == torch.float16 and 5e-3 or 3e-2
      for _, pair in ipairs { { x, xr }, { w, wr }, { b, br } } do
        assert.are.equal(dt, pair[1].grad.dtype)
        local got, want = H.flatten(pair[1].grad:double():totable()), H.flatten(pair[2].grad:totable())
        for i = 1, #want do
          assert(math.abs(got[i] - want[i]) <= tol * (1 + math.abs(want[i])), tostring(dt))
        end
      end
    end
  end)
end)

-- The fast paths, against the float64 Lua loops: Winograd F(2x2, 3x3) (float32, 3x3, stride 1,
-- dilation 1, one group, at least 8 channels in and out: the forward, the input's gradient when the
-- padding is at most 2, and the weight's gradient) and the padded-plane loops of stride-1
-- convolutions with one input channel per group (float32 and float64).
describe('conv2d fast paths', function()
  -- values and the gradients asked for (need = {x, w, b}) of conv(x, w, b) in dtype, with the
  -- output gradient gy, against the loops; prep(x) may make x non-contiguous
  local function check(c, dtype, tol, need, prep)
    need = need or { true, true, true }
    torch.manual_seed(41)
    local x, w, b = make_conv_inputs(c, f64)
    local want = ref_conv(x:totable(), w:totable(), b and b:totable(), c)
    local _, _, OH, OW = shape4(want)
    local gy = randn({ c.N, c.Cout, OH, OW })
    local rgx, rgw, rgb = ref_conv_backward(x:totable(), w:totable(), gy:totable(), c)
    local xd, wd, bd = x:to(dtype), w:to(dtype), b and b:to(dtype)
    if prep then xd = prep(xd) end
    if need[1] then xd:requires_grad_() end
    if need[2] then wd:requires_grad_() end
    if bd and need[3] then bd:requires_grad_() end
    local y = conv_of(xd, wd, bd, c)
    assert.are.equal(dtype, y.dtype)
    H.assert_values(y:double(), want, tol, c.name .. ' y')
    y:backward(gy:to(dtype))
    if need[1] then H.assert_values(xd.grad:double(), rgx, tol, c.name .. ' gx') else assert.is_nil(xd.grad) end
    if need[2] then H.assert_values(wd.grad:double(), rgw, tol, c.name .. ' gw') else assert.is_nil(wd.grad) end
    if bd and need[3] then H.assert_values(bd.grad:double(), rgb, tol, c.name .. ' gb') end
  end

  local wino = {
    conv_cfg { name = 'Winograd, padding 1, odd output (partial tiles)', N = 3, Cin = 8, Cout = 9, H = 7, W = 9,
      padding = { 1, 1 } },
    conv_cfg { name = 'Winograd, no padding, no bias', N = 2, Cin = 9, Cout = 8, H = 7, W = 9, bias = false },
    conv_cfg { name = 'Winograd, padding 2 and 0', N = 2, Cin = 8, Cout = 8, H = 5, W = 6, padding = { 2, 0 } },
    conv_cfg { name = 'Winograd, padding 3 (input gradient by im2col)', N = 2, Cin = 8, Cout = 8, H = 4, W = 3,
      padding = { 3, 1 } },
    conv_cfg { name = 'Winograd, 1x1 input padded', N = 2, Cin = 8, Cout = 8, H = 1, W = 1, padding = { 1, 1 } },
    conv_cfg { name = 'Winograd, 2x2 output from 4x4', N = 1, Cin = 8, Cout = 8, H = 4, W = 4 },
    -- 16 samples of 6 tile rows: several blocks, one boundary inside a sample
    conv_cfg { name = 'Winograd, blocks across samples (split over threads)', N = 16, Cin = 8, Cout = 8, H = 12,
      W = 12, padding = { 1, 1 } },
    conv_cfg { name = 'Winograd, 16 -> 24 channels, many blocks', N = 12, Cin = 16, Cout = 24, H = 10, W = 14,
      padding = { 1, 1 } },
    -- two blocks of tile rows, one a thread, each with its own weight-gradient sums, added after
    conv_cfg { name = 'Winograd, 16 -> 40 channels, two threads', N = 8, Cin = 16, Cout = 40,
      H = 12, W = 12, padding = { 1, 1 } },
  }
  for _, c in ipairs(wino) do
    it('match the Lua loops in float32: ' .. c.name, function() check(c, torch.float32, 1e-4) end)
  end

  it('Winograd: only the gradients asked for, non-contiguous and unbatched inputs', function()
    local c = wino[1]
    check(c, torch.float32, 1e-4, { false, true, true })
    check(c, torch.float32, 1e-4, { true, false, false })
    check(c, torch.float32, 1e-4, nil, noncontig)
    check(c, torch.float32, 1e-4, nil, function(x) return x:permute(1, 3, 4, 2):contiguous():permute(1, 4, 2, 3) end)
    torch.manual_seed(42)
    local cu = conv_cfg { N = 1, Cin = 8, Cout = 8, H = 5, W = 5, padding = { 1, 1 } }
    local x, w, b = make_conv_inputs(cu, f64)
    local y = F.conv2d(x[1]:float(), w:float(), b:float(), { padding = 1 })
    assert.are.same({ 8, 5, 5 }, y.shape)
    H.assert_values(y:double(), ref_conv(x:totable(), w:totable(), b:totable(), cu)[1], 1e-4)
  end)

  it('Winograd: float16 and bfloat16 computed in float32', function()
    torch.manual_seed(43)
    local c = wino[1]
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local x, w, b = make_conv_inputs(c, f64)
      x, w, b = x:to(dt):requires_grad_(), w:to(dt):requires_grad_(), b:to(dt)
      local want = conv_of(x:detach():double(), w:detach():double(), b:double(), c)
      local y = conv_of(x, w, b, c)
      assert.are.equal(dt, y.dtype)
      local tol = dt == torch.float16 and 2e-3 or 1e-2
      H.assert_values(y:double(), want:totable(), tol, tostring(dt))
      local g = randn(y.shape):to(dt)
      y:backward(g)
      local xr, wr = x:detach():double():requires_grad_(), w:detach():double():requires_grad_()
      conv_of(xr, wr, b:double(), c):backward(g:double())
      H.assert_values(x.grad:double(), xr.grad:totable(), 3 * tol, tostring(dt) .. ' gx')
      H.assert_values(w.grad:double(), wr.grad:totable(), 3 * tol, tostring(dt) .. ' gw')
    end
  end)

  it('Winograd: float32 error stays near the direct method\'s on a large sum', function()
    -- 64 channels of 3x3: 576 products a value; relative to the values' scale
    torch.manual_seed(44)
    local x, w = randn({ 2, 64, 8, 8 }), randn({ 32, 64, 3, 3 })
    local want = F.conv2d(x, w, nil, { padding = 1 })
    local y = F.conv2d(x:float(), w:float(), nil, { padding = 1 }):double()
    local scale = want:abs():max():item()
    assert((y - want):abs():max():item() <= 2e-6 * scale)
    local xr, wr = x:clone():requires_grad_(), w:clone():requires_grad_()
    local xf, wf = x:float():requires_grad_(), w:float():requires_grad_()
    local g = randn(want.shape)
    F.conv2d(xr, wr, nil, { padding = 1 }):backward(g)
    F.conv2d(xf, wf, nil, { padding = 1 }):backward(g:float())
    assert((xf.grad:double() - xr.grad):abs():max():item() <= 2e-6 * xr.grad:abs():max():item())
    assert((wf.grad:double() - wr.grad):abs():max():item() <= 2e-6 * wr.grad:abs():max():item())
  end)

  -- blocks of tile rows are handed out by stealing (core/steal.h): each thread starts on its own run
  -- and takes from the back of the other's when done, so which thread computes a block varies from
  -- run to run; no value may depend on it
  describe('Winograd with two threads', function()
    torch.manual_seed(45)
    -- 16 -> 48 channels: 19 blocks of 192 tiles (the weight gradient's blocks are taken only where
    -- a block's product adds to the sum in one rounding: 256 tiles or fewer)
    local x, w, b = randn({ 64, 16, 14, 14 }):float(), randn({ 48, 16, 3, 3 }):float(), randn({ 48 }):float()
    local g = randn({ 64, 48, 14, 14 }):float()
    local function run()
      local xr, wr = x:clone():requires_grad_(), w:clone():requires_grad_()
      local y = F.conv2d(xr, wr, b, { padding = 1 })
      y:backward(g)
      return { y = y, gx = xr.grad, gw = wr.grad }
    end
    local prev
    setup(function() prev = torch.get_num_threads() torch.set_num_threads(math.max(prev, 2)) end)
    teardown(function() torch.set_num_threads(prev) torch._set_steal_delay(0) end)

    it('give the same bits however the blocks fall between them', function()
      local want = run()
      for _, delay in ipairs { 0, 0, 2000, 0, 5000 } do
        -- with a delay, worker 0 waits before each block of its own run: the other takes from it
        torch._set_steal_delay(delay)
        local got = run()
        torch._set_steal_delay(0)
        for _, k in ipairs { 'y', 'gx', 'gw' } do
          assert.is_true(torch.equal(want[k], got[k]), k .. ' with delay ' .. delay)
        end
      end
      -- the output and the input gradient are each block's alone: the same bits on one thread
      torch.set_num_threads(1)
      local one = run()
      torch.set_num_threads(math.max(prev, 2))
      assert.is_true(torch.equal(want.y, one.y) and torch.equal(want.gx, one.gx))
      -- and all are right: against float64
      local xd, wd = x:double():requires_grad_(), w:double():requires_grad_()
      local yd = F.conv2d(xd, wd, b:double(), { padding = 1 })
      yd:backward(g:double())
      for k, ref in pairs { y = yd, gx = xd.grad, gw = wd.grad } do
        assert((want[k]:double() - ref):abs():max():item() <= 1e-5 * ref:abs():max():item(), k)
      end
    end)

    it('give the same bits when the team has one thread of the two asked for', function()
      -- OMP_THREAD_LIMIT=1: the second worker's run is never started, and is summed after the
      -- parallel part, in its place in the order
      local want = run()
      local dir = os.tmpname()
      os.remove(dir)
      local inp, out = dir .. '_in.safetensors', dir .. '_out.safetensors'
      torch.save(inp, { x = x, w = w, b = b, g = g })
      local code = ("torch.set_num_threads(2); local t = torch.load(%q); " ..
        "local xr, wr = t.x:clone():requires_grad_(), t.w:clone():requires_grad_(); " ..
        "local y = torch.nn.functional.conv2d(xr, wr, t.b, { padding = 1 }); y:backward(t.g); " ..
        "torch.save(%q, { y = y, gx = xr.grad, gw = wr.grad })"):format(inp, out)
      local bin = os.getenv('LUTORCH_BIN') or 'build/lutorch'
      local p = io.popen(string.format('OMP_THREAD_LIMIT=1 %s -e %q 2>&1', bin, code))
      local msg = p:read('a')
      local ok = p:close()
      local got = ok and torch.load(out)
      os.remove(inp)
      os.remove(out)
      assert(ok, msg)
      for _, k in ipairs { 'y', 'gx', 'gw' } do assert.is_true(torch.equal(want[k], got[k]), k) end
    end)
  end)

  local planes = {
    conv_cfg { name = 'one input channel, 32 filters, padding 1', N = 3, Cin = 1, Cout = 32, H = 9, W = 8,
      padding = { 1, 1 } },
    conv_cfg { name = 'one input channel, dilated, uneven padding', N = 2, Cin = 1, Cout = 3, H = 9, W = 10,
      dilation = { 2, 3 }, padding = { 0, 3 }, kh = 3, kw = 2 },
    conv_cfg { name = 'depthwise multiplier 2, 5x4 kernel, padding 2', N = 2, Cin = 3, Cout = 6, groups = 3, H = 7,
      W = 6, kh = 5, kw = 4, padding = { 2, 1 } },
    conv_cfg { name = 'one input channel, kernel wider than 32', N = 1, Cin = 1, Cout = 2, H = 3, W = 40, kh = 2,
      kw = 34, padding = { 1, 2 } },
    conv_cfg { name = 'depthwise, batch 8 (split over threads), no bias', N = 8, Cin = 8, Cout = 8, groups = 8, H = 12,
      W = 11, padding = { 1, 1 }, bias = false },
    conv_cfg { name = 'one input channel, 1x1 kernel', N = 2, Cin = 1, Cout = 4, H = 3, W = 4, kh = 1, kw = 1 },
  }
  for _, c in ipairs(planes) do
    it('match the Lua loops in float64 and float32: ' .. c.name, function()
      check(c, f64, 1e-12)
      check(c, torch.float32, 1e-5)
      check(c, torch.float32, 1e-5, { false, true, true })
      check(c, f64, 1e-12, { true, false, false }, noncontig)
    end)
  end
end)

-- ---- pooling ----

local function maxpool_of(x, o)
  return C.max_pool2d(x, o.k[1], o.k[2], o.s[1], o.s[2], o.p[1], o.p[2], o.d[1], o.d[2], o.ceil)
end
local function avgpool_of(x, o)
  return C.avg_pool2d(x, o.k[1], o.k[2], o.s[1], o.s[2], o.p[1], o.p[2], o.ceil, o.cip, o.div)
end

local function pool_cfg(t)
  return {
    name = t.name, shape = t.shape or { 2, 3, 7, 6 }, k = t.k or { 2, 2 }, s = t.s or t.k or { 2, 2 },
    p = t.p or { 0, 0 }, d = t.d or { 1, 1 }, ceil = t.ceil or false, cip = t.cip ~= false, div = t.div or 0,
  }
end

local max_configs = {
  pool_cfg { name = '2x2' },
  pool_cfg { name = '2x2 on odd sizes (the last row and column dropped)', shape = { 2, 3, 7, 9 } },
  pool_cfg { name = '2x2 over many planes (split over threads)', shape = { 8, 16, 14, 14 } },
  pool_cfg { name = '2x2 with rows of more than 16 windows (whole vectors and a masked tail)', shape = { 2, 3, 6, 70 } },
  pool_cfg { name = '3x3 stride 2 padding 1', k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 } },
  pool_cfg { name = 'non-square, stride 1', k = { 3, 2 }, s = { 1, 2 }, p = { 1, 0 } },
  pool_cfg { name = 'ceil_mode', k = { 2, 2 }, s = { 2, 2 }, ceil = true },
  pool_cfg { name = 'ceil_mode with padding (last window dropped)', shape = { 1, 2, 6, 6 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 }, ceil = true },
  pool_cfg { name = 'ceil_mode stride 3', shape = { 1, 2, 8, 7 }, k = { 2, 3 }, s = { 3, 3 }, ceil = true },
  pool_cfg { name = 'dilation', k = { 2, 3 }, s = { 1, 1 }, d = { 2, 2 }, p = { 1, 1 } },
  pool_cfg { name = 'dilation and ceil_mode', shape = { 1, 2, 9, 8 }, k = { 3, 2 }, s = { 2, 3 }, d = { 2, 3 }, p = { 1, 1 }, ceil = true },
  pool_cfg { name = 'kernel as the input', shape = { 2, 2, 3, 4 }, k = { 3, 4 } },
  pool_cfg { name = 'many planes (split over threads)', shape = { 8, 16, 12, 12 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 } },
}

describe('max_pool2d', function()
  for _, c in ipairs(max_configs) do
    it('values and 1-based indices match the Lua loops: ' .. c.name, function()
      torch.manual_seed(31)
      local x = randn(c.shape)
      local want, widx = ref_max_pool(x:totable(), c.k, c.s, c.p, c.d, c.ceil)
      local y, idx = maxpool_of(x, c)
      assert.are.equal(torch.int64, idx.dtype)
      assert.are.same(y.shape, idx.shape)
      H.assert_values(y, want, 0, c.name)
      H.assert_values(idx, widx, 0, c.name .. ' indices')
      -- float32, float16, bfloat16: the same positions and the rounded values
      for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
        local xd = x:to(dt)
        local wd, wi = ref_max_pool(xd:double():totable(), c.k, c.s, c.p, c.d, c.ceil)
        local yd, id = maxpool_of(xd, c)
        assert.are.equal(dt, yd.dtype)
        H.assert_values(yd:double(), wd, 0, c.name .. ' ' .. tostring(dt))
        H.assert_values(id, wi, 0, c.name .. ' indices ' .. tostring(dt))
      end
    end)
  end

  it('through F: stride defaults to the kernel, return_indices, non-contiguous and unbatched input', function()
    torch.manual_seed(32)
    local x = noncontig(randn({ 2, 3, 6, 7 }))
    local want, widx = ref_max_pool(x:totable(), { 3, 3 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, false)
    H.assert_values(F.max_pool2d(x, 3, { padding = 1 }), want, 0)
    local y, idx = F.max_pool2d(x, 3, { padding = 1, return_indices = true })
    H.assert_values(idx, widx, 0)
    local y3, i3 = F.max_pool2d(x[2], { 3, 3 }, { padding = { 1, 1 }, return_indices = true })
    assert.are.same({ 3, 2, 3 }, y3.shape)
    H.assert_values(y3, want[2], 0)
    H.assert_values(i3, widx[2], 0)
    assert(y)
  end)

  for _, dt in ipairs { f64, torch.float32 } do
  it('propagates NaN (NaN is the maximum, its index is taken) and handles -inf windows: ' .. tostring(dt), function()
    local nan, inf = 0 / 0, math.huge
    local x = torch.tensor({ { { { 1, nan, 3, 4 }, { 5, 6, 7, 8 }, { -inf, -inf, 2, nan }, { -inf, -inf, nan, 1 } } } },
      { dtype = dt })
    local y, idx = maxpool_of(x, pool_cfg { k = { 2, 2 } })
    local yt = H.flatten(y:totable())
    assert(yt[1] ~= yt[1])
    assert.are.equal(8, yt[2])
    assert.are.equal(-inf, yt[3])
    assert(yt[4] ~= yt[4])
    -- the last NaN of the window wins (PyTorch's rule), -inf everywhere gives the first position
    H.assert_values(idx, { { { { 2, 8 }, { 9, 15 } } } }, 0)
    local want, widx = ref_max_pool(x:totable(), { 2, 2 }, { 2, 2 }, { 0, 0 }, { 1, 1 }, false)
    H.assert_values(y, want, 0)
    H.assert_values(idx, widx, 0)
  end)

  it('goes to the first of tied maxima: ' .. tostring(dt), function()
    local x = torch.ones(1, 1, 2, 4, { dtype = dt })
    local _, idx = maxpool_of(x, pool_cfg { k = { 2, 2 } })
    H.assert_values(idx, { { { { 1, 3 } } } }, 0)
  end)
  end

  local grad_cases = {
    pool_cfg { name = '3x3 stride 2 padding 1', shape = { 2, 2, 5, 5 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 } },
    pool_cfg { name = 'overlapping windows', shape = { 1, 2, 4, 5 }, k = { 2, 3 }, s = { 1, 1 } },
    pool_cfg { name = 'ceil_mode', shape = { 1, 2, 5, 5 }, k = { 2, 2 }, s = { 2, 2 }, ceil = true },
    pool_cfg { name = 'dilation', shape = { 1, 2, 6, 6 }, k = { 2, 2 }, s = { 1, 2 }, d = { 2, 3 }, p = { 1, 1 } },
  }
  for _, c in ipairs(grad_cases) do
    it('gradient matches finite differences: ' .. c.name, function()
      local x = distinct(c.shape):requires_grad_()
      assert.is_true(gradcheck(function(a) return (maxpool_of(a, c)) end, { x }))
    end)
  end

  it('gradient of a non-contiguous, unbatched input; MaxPool2DWithIndicesBackward0', function()
    local x = noncontig(distinct({ 2, 5, 4 })):requires_grad_()
    local y = F.max_pool2d(x, 2, { stride = 1 })
    assert.are.equal('MaxPool2DWithIndicesBackward0', y.grad_fn.name)
    assert.is_true(gradcheck(function(a) return F.max_pool2d(a, 2, { stride = 1 }) end, { x }))
  end)

  it('gradient in float32 and float16 keeps the dtype and sums overlapping windows', function()
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
      local x = torch.tensor({ { { { 1, 2, 3 }, { 4, 9, 5 }, { 6, 7, 8 } } } }, { dtype = dt, requires_grad = true })
      F.max_pool2d(x, 2, { stride = 1 }):sum():backward()
      assert.are.equal(dt, x.grad.dtype)
      H.assert_values(x.grad:double(), { { { { 0, 0, 0 }, { 0, 4, 0 }, { 0, 0, 0 } } } }, 0)
    end
  end)
end)

local avg_configs = {
  pool_cfg { name = '2x2' },
  pool_cfg { name = '2x2 on odd sizes (the last row and column dropped)', shape = { 2, 3, 7, 9 } },
  pool_cfg { name = '2x2 over many planes (split over threads)', shape = { 8, 16, 14, 14 } },
  pool_cfg { name = '3x3 stride 2 padding 1, count_include_pad', k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 } },
  pool_cfg { name = '3x3 stride 2 padding 1, count_include_pad false', k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 }, cip = false },
  pool_cfg { name = 'ceil_mode clips to input + padding', shape = { 1, 2, 6, 5 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 }, ceil = true },
  pool_cfg { name = 'ceil_mode, count_include_pad false', shape = { 1, 2, 6, 5 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 }, ceil = true, cip = false },
  pool_cfg { name = 'ceil_mode without padding', shape = { 2, 2, 5, 7 }, k = { 2, 3 }, s = { 2, 2 }, ceil = true },
  pool_cfg { name = 'divisor_override', k = { 3, 2 }, s = { 1, 2 }, p = { 1, 1 }, div = 5 },
  pool_cfg { name = 'divisor_override with ceil_mode', shape = { 1, 1, 5, 5 }, k = { 2, 2 }, s = { 2, 2 }, ceil = true, div = 3 },
  pool_cfg { name = 'non-square stride 1', k = { 2, 3 }, s = { 1, 1 }, p = { 1, 1 } },
  pool_cfg { name = 'many planes (split over threads)', shape = { 8, 16, 12, 12 }, k = { 3, 3 }, s = { 2, 2 }, p = { 1, 1 }, cip = false },
}

describe('avg_pool2d', function()
  for _, c in ipairs(avg_configs) do
    it('matches the Lua loops: ' .. c.name, function()
      torch.manual_seed(41)
      local x = randn(c.shape)
      local want = ref_avg_pool(x:totable(), c.k, c.s, c.p, c.ceil, c.cip, c.div)
      H.assert_values(avgpool_of(x, c), want, 1e-12, c.name)
      H.assert_values(avgpool_of(noncontig(x), c), want, 1e-12, c.name .. ' non-contiguous')
      local y32 = avgpool_of(x:float(), c)
      assert.are.equal(torch.float32, y32.dtype)
      H.assert_values(y32:double(), want, 1e-5, c.name .. ' float32')
      for _, dt in ipairs { torch.float16, torch.bfloat16 } do
        local xd = x:to(dt)
        local yd = avgpool_of(xd, c)
        assert.are.equal(dt, yd.dtype)
        H.assert_values(yd:double(), ref_avg_pool(xd:double():totable(), c.k, c.s, c.p, c.ceil, c.cip, c.div),
          dt == torch.float16 and 2e-3 or 1e-2, c.name .. ' ' .. tostring(dt))
      end
    end)
  end

  it('divides by the window clipped to input + padding (closed form on ones)', function()
    -- 6 rows, kernel 3, stride 2, padding 1, ceil_mode: windows [-1,2) [1,4) [3,6) [5,7); the last one
    -- covers input row 5 and one padding row: it counts 2 rows with padding, 1 without
    local x = torch.ones(1, 1, 6, 6, { dtype = f64 })
    local valid, padded = { 2, 3, 3, 1 }, { 3, 3, 3, 2 }
    local y = F.avg_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true })
    local y2 = F.avg_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false })
    local y3 = F.avg_pool2d(x, 3, { stride = 2, padding = 1, ceil_mode = true, divisor_override = 2 })
    assert.are.same({ 1, 1, 4, 4 }, y.shape)
    local w1, w2, w3 = {}, {}, {}
    for i = 1, 4 do
      w1[i], w2[i], w3[i] = {}, {}, {}
      for j = 1, 4 do
        w1[i][j] = valid[i] * valid[j] / (padded[i] * padded[j])
        w2[i][j] = 1
        w3[i][j] = valid[i] * valid[j] / 2
      end
    end
    H.assert_values(y, { { w1 } }, 1e-15)
    H.assert_values(y2, { { w2 } }, 1e-15)
    H.assert_values(y3, { { w3 } }, 1e-15)
  end)

  it('through F: defaults (stride = kernel, count_include_pad true) and an unbatched input', function()
    torch.manual_seed(42)
    local x = randn({ 2, 5, 6 })
    local want = ref_avg_pool({ x:totable() }, { 2, 2 }, { 2, 2 }, { 1, 1 }, false, true, 0)[1]
    H.assert_values(F.avg_pool2d(x, 2, { padding = 1 }), want, 1e-12)
    local want2 = ref_avg_pool({ x:totable() }, { 2, 2 }, { 2, 2 }, { 1, 1 }, true, false, 3)[1]
    H.assert_values(F.avg_pool2d(x, 2, { padding = 1, ceil_mode = true, count_include_pad = false, divisor_override = 3 }),
      want2, 1e-12)
  end)

  for _, c in ipairs { avg_configs[2], avg_configs[3], avg_configs[5], avg_configs[7], avg_configs[8] } do
    it('gradient matches finite differences: ' .. c.name, function()
      torch.manual_seed(43)
      local shape = { 1, 2, c.shape[3], c.shape[4] }
      local x = noncontig(randn(shape)):requires_grad_()
      local y = avgpool_of(x, c)
      assert.are.equal('AvgPool2DBackward0', y.grad_fn.name)
      assert.is_true(gradcheck(function(a) return avgpool_of(a, c) end, { x }))
    end)
  end
end)

describe('adaptive_avg_pool2d', function()
  local cases = { { 7, 6, 3, 2 }, { 7, 6, 3, 4 }, { 5, 5, 5, 5 }, { 4, 9, 1, 1 }, { 3, 4, 6, 7 }, { 10, 10, 4, 3 } }
  for _, cs in ipairs(cases) do
    local h, w, oh, ow = cs[1], cs[2], cs[3], cs[4]
    it(string.format('matches the Lua loops: %dx%d to %dx%d', h, w, oh, ow), function()
      torch.manual_seed(51)
      local x = randn({ 2, 3, h, w })
      local want = ref_adaptive(x:totable(), oh, ow)
      H.assert_values(C.adaptive_avg_pool2d(x, oh, ow), want, 1e-12)
      H.assert_values(F.adaptive_avg_pool2d(noncontig(x), { oh, ow }), want, 1e-12)
      H.assert_values(C.adaptive_avg_pool2d(x:float(), oh, ow):double(), want, 1e-5)
      for _, dt in ipairs { torch.float16, torch.bfloat16 } do
        local xd = x:to(dt)
        local yd = C.adaptive_avg_pool2d(xd, oh, ow)
        assert.are.equal(dt, yd.dtype)
        H.assert_values(yd:double(), ref_adaptive(xd:double():totable(), oh, ow), dt == torch.float16 and 2e-3 or 1e-2)
      end
    end)
  end

  it('through F: a number, nil entries keep the input size, unbatched input', function()
    torch.manual_seed(52)
    local x = randn({ 3, 5, 7 })
    H.assert_values(F.adaptive_avg_pool2d(x, 2), ref_adaptive({ x:totable() }, 2, 2)[1], 1e-12)
    local y = F.adaptive_avg_pool2d(x, { nil, 3 })
    assert.are.same({ 3, 5, 3 }, y.shape)
    H.assert_values(y, ref_adaptive({ x:totable() }, 5, 3)[1], 1e-12)
    H.assert_values(F.adaptive_avg_pool2d(x, 1), x:mean({ 2, 3 }, true):totable(), 1e-12)
    -- to 1 x 1 (a mean over each plane): values against the loops, gradient by finite differences
    local x4 = noncontig(randn({ 2, 3, 5, 4 }))
    H.assert_values(F.adaptive_avg_pool2d(x4, { 1, 1 }), ref_adaptive(x4:totable(), 1, 1), 1e-12)
    assert.is_true(gradcheck(function(a) return F.adaptive_avg_pool2d(a, 1) end, { x4:clone():requires_grad_() }))
  end)

  for _, cs in ipairs { { 5, 7, 3, 2 }, { 4, 4, 2, 2 }, { 3, 4, 5, 6 } } do
    it(string.format('gradient matches finite differences: %dx%d to %dx%d', cs[1], cs[2], cs[3], cs[4]), function()
      torch.manual_seed(53)
      local x = noncontig(randn({ 1, 2, cs[1], cs[2] })):requires_grad_()
      local y = F.adaptive_avg_pool2d(x, { cs[3], cs[4] })
      assert.are.equal('AdaptiveAvgPool2DBackward0', y.grad_fn.name)
      assert.is_true(gradcheck(function(a) return F.adaptive_avg_pool2d(a, { cs[3], cs[4] }) end, { x }))
    end)
  end
end)

describe('errors', function()
  local x = torch.randn(2, 4, 6, 6)
  local w = torch.randn(6, 4, 3, 3)

  it('conv2d: shapes, groups, parameters', function()
    H.raises(function() F.conv2d(torch.randn(4, 6), w) end, 'conv2d', '3-D (unbatched) or 4-D (batched)', '[4, 6]')
    H.raises(function() F.conv2d(x, torch.randn(6, 4, 3)) end, 'conv2d', '4-D weight', '[6, 4, 3]')
    H.raises(function() F.conv2d(x, torch.randn(6, 3, 3, 3)) end, 'conv2d', 'given groups=1',
      'expected input[2, 4, 6, 6] to have 3 channels, but got 4 channels instead')
    H.raises(function() F.conv2d(x, torch.randn(5, 2, 3, 3), nil, { groups = 2 }) end, 'conv2d',
      'expected weight to be divisible by 2 at dimension 0', '[5, 2, 3, 3]')
    H.raises(function() F.conv2d(x, torch.randn(6, 2, 3, 3), nil, { groups = 3 }) end, 'conv2d', 'given groups=3')
    H.raises(function() F.conv2d(x, w, nil, { groups = 0 }) end, 'conv2d', 'non-positive groups')
    H.raises(function() F.conv2d(x, w, nil, { stride = 0 }) end, 'conv2d', 'non-positive stride')
    H.raises(function() F.conv2d(x, w, nil, { stride = { 1, -1 } }) end, 'conv2d', 'non-positive stride')
    H.raises(function() F.conv2d(x, w, nil, { padding = -1 }) end, 'conv2d', 'negative padding')
    H.raises(function() F.conv2d(x, w, nil, { dilation = 0 }) end, 'conv2d', 'dilation should be greater than zero')
    H.raises(function() F.conv2d(x, w, torch.randn(5)) end, 'conv2d', 'expected bias to be 1-D with 6 elements',
      'bias of size [5]')
    H.raises(function() F.conv2d(x, w, torch.randn(6, 1)) end, 'conv2d', 'bias of size [6, 1]')
  end)

  it('conv2d: a kernel larger than the padded input', function()
    H.raises(function() F.conv2d(torch.randn(1, 4, 2, 6), w) end, 'conv2d', 'calculated output size (0 x 4) is too small',
      '(2 x 6)', '(3 x 3)')
    H.raises(function() F.conv2d(torch.randn(1, 4, 4, 4), w, nil, { dilation = 3 }) end, 'conv2d',
      'calculated output size', 'is too small', '(7 x 7)')
    -- padding makes it fit
    assert.are.same({ 1, 6, 2, 6 }, F.conv2d(torch.randn(1, 4, 2, 6), w, nil, { padding = 1 }).shape)
  end)

  it('conv2d: dtypes and devices', function()
    H.raises(function() F.conv2d(x:double(), w) end, 'conv2d: input type (float64) and weight type (float32) should be the same')
    H.raises(function() F.conv2d(x, w, torch.randn(6, { dtype = f64 })) end,
      'conv2d: input type (float32) and bias type (float64) should be the same')
    H.raises(function() F.conv2d(x:long(), w:long()) end, 'conv2d', 'floating point', 'int64')
    H.raises(function() F.conv2d(x:bool(), w:bool()) end, 'conv2d', 'floating point', 'bool')
    if torch.cpu.device_count() > 1 then
      H.raises(function() F.conv2d(x:to('cpu:1'), w) end, 'conv2d', 'same device', 'cpu:1', 'cpu:0')
    end
  end)

  it('conv2d: empty sizes', function()
    H.raises(function() F.conv2d(torch.randn(1, 4, 0, 6), w) end, 'conv2d', 'non-zero')
    H.raises(function() F.conv2d(torch.randn(1, 0, 6, 6), torch.randn(6, 0, 3, 3)) end, 'conv2d', 'non-zero')
    -- an empty batch is fine
    assert.are.same({ 0, 6, 4, 4 }, F.conv2d(torch.randn(0, 4, 6, 6), w).shape)
  end)

  it('conv2d binding: argument types', function()
    H.raises(function() C.conv2d(x, w, nil, 1.5, 1, 0, 0, 1, 1, 1) end, 'conv2d: stride must be an integer', '1.5')
    H.raises(function() C.conv2d(x, w, nil, 1, 1, 'a', 0, 1, 1, 1) end, 'conv2d: padding must be an integer')
    H.raises(function() C.conv2d(x, w, nil, 1, 1, 0, 0, 1, 1) end, 'conv2d: groups must be an integer', 'no value')
    H.raises(function() C.conv2d(x, w, 3, 1, 1, 0, 0, 1, 1, 1) end, 'conv2d: expected bias to be a tensor or nil')
    H.raises(function() C.conv2d(x, 'w', nil, 1, 1, 0, 0, 1, 1, 1) end, 'tensor')
    H.raises(function() F.conv2d(x, w, nil, { stride = { 1, 2, 3 } }) end, 'conv2d', 'stride must be a number or a pair')
    H.raises(function() C.conv2d(x, w, nil, 1 << 40, 1, 0, 0, 1, 1, 1) end, 'conv2d', 'must be at most')
    H.raises(function() C.conv2d(x, w, nil, 1, 1, 0, 0, 1, 1 << 62, 1) end, 'conv2d', 'must be at most')
    -- integral floats are integers
    assert.are.same({ 2, 6, 2, 2 }, C.conv2d(x, w, nil, 2.0, 2, 0, 0, 1, 1, 1).shape)
  end)

  it('max_pool2d', function()
    H.raises(function() F.max_pool2d(x, 2, { padding = 2 }) end, 'max_pool2d',
      'pad should be at most half of effective kernel size', 'pad=2, kernel_size=2 and dilation=1')
    H.raises(function() F.max_pool2d(x, 3, { padding = { 1, 2 } }) end, 'max_pool2d', 'pad should be at most half')
    H.raises(function() F.max_pool2d(x, 2, { padding = -1 }) end, 'max_pool2d', 'non-negative')
    H.raises(function() F.max_pool2d(x, 0) end, 'max_pool2d', 'kernel size should be greater than zero')
    H.raises(function() F.max_pool2d(x, 2, { stride = 0 }) end, 'max_pool2d', 'stride should be greater than zero')
    H.raises(function() F.max_pool2d(x, 2, { dilation = 0 }) end, 'max_pool2d', 'dilation should be greater than zero')
    H.raises(function() F.max_pool2d(x, 4, { dilation = 2 }) end, 'max_pool2d', 'calculated output size', 'too small')
    H.raises(function() F.max_pool2d(x, 7) end, 'max_pool2d', 'given input size (4x6x6)', 'calculated output size (4x0x0) is too small')
    H.raises(function() F.max_pool2d(torch.randn(6, 6), 2) end, 'max_pool2d', '3-D (unbatched) or 4-D (batched)')
    H.raises(function() F.max_pool2d(torch.randn(2, 0, 6, 6), 2) end, 'max_pool2d', 'non-zero')
    H.raises(function() F.max_pool2d(x:long(), 2) end, 'max_pool2d', 'floating point', 'int64')
    H.raises(function() F.max_pool2d(x:bool(), 2) end, 'max_pool2d', 'floating point', 'bool')
    H.raises(function() C.max_pool2d(x, 2, 2, 2, 2, 0, 0, 1, 1, 'yes') end, 'max_pool2d: ceil_mode must be a boolean')
    H.raises(function() C.max_pool2d(x, 2, 2.5, 2, 2, 0, 0, 1, 1, false) end, 'max_pool2d: kernel_size must be an integer')
    H.raises(function() C.max_pool2d(x, 1 << 62, 2, 2, 2, 0, 0, 1, 1, false) end, 'max_pool2d', 'must be at most')
    H.raises(function() C.max_pool2d(x, 2, 2, 2, 2, 0, 0, 1 << 50, 1, false) end, 'max_pool2d', 'must be at most')
  end)

  it('avg_pool2d', function()
    H.raises(function() F.avg_pool2d(x, 2, { padding = 2 }) end, 'avg_pool2d', 'pad should be at most half of kernel size',
      'pad=2 and kernel_size=2')
    H.raises(function() F.avg_pool2d(x, 0) end, 'avg_pool2d', 'kernel size should be greater than zero')
    H.raises(function() F.avg_pool2d(x, 2, { stride = -1 }) end, 'avg_pool2d', 'stride should be greater than zero')
    H.raises(function() F.avg_pool2d(x, 8) end, 'avg_pool2d', 'is too small')
    H.raises(function() F.avg_pool2d(x:int(), 2) end, 'avg_pool2d', 'floating point', 'int32')
    H.raises(function() F.avg_pool2d(torch.randn(2, 4, 6, 6, 1), 2) end, 'avg_pool2d', '3-D (unbatched) or 4-D')
    H.raises(function() C.avg_pool2d(x, 2, 2, 2, 2, 0, 0, false, 1, 0) end, 'avg_pool2d: count_include_pad must be a boolean')
    H.raises(function() C.avg_pool2d(x, 2, 2, 2, 2, 0, 0, false, true, 0.5) end, 'avg_pool2d: divisor_override must be an integer')
  end)

  it('adaptive_avg_pool2d', function()
    H.raises(function() F.adaptive_avg_pool2d(x, { -1, 2 }) end, 'adaptive_avg_pool2d', 'greater than or equal to 0')
    H.raises(function() F.adaptive_avg_pool2d(torch.randn(6), 2) end, 'adaptive_avg_pool2d', '3-D (unbatched) or 4-D')
    H.raises(function() F.adaptive_avg_pool2d(x:long(), 2) end, 'adaptive_avg_pool2d', 'floating point', 'int64')
    H.raises(function() C.adaptive_avg_pool2d(x, 2, 'a') end, 'adaptive_avg_pool2d: output_size must be an integer')
    H.raises(function() C.adaptive_avg_pool2d(x, 1 << 40, 2) end, 'adaptive_avg_pool2d', 'must be at most')
    H.raises(function() F.adaptive_avg_pool2d(x, 'big') end, 'adaptive_avg_pool2d', 'output_size must be a number or a pair')
  end)

  it('backward after an in-place change of a saved input', function()
    local xx = torch.randn(1, 2, 4, 4, { dtype = f64 }):requires_grad_()
    local a = xx * 1
    local y = F.max_pool2d(a, 2)
    a:mul_(2)
    H.raises(function() y:sum():backward() end, 'modified by an inplace operation')
  end)
end)
