-- RMSNorm, channel dropout, pixel (un)shuffle, unfold/fold, the padding layers, Unflatten and the
-- distance modules: values against element-by-element references computed here in Lua, gradients
-- by finite differences (gradcheck, float64), the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local gradcheck = torch.autograd.gradcheck

local function leaf(shape) return torch.randn(shape, { dtype = torch.float64 }):requires_grad_() end

describe('RMSNorm', function()
  it('F.rms_norm and nn.RMSNorm against a loop over each row, float32 and float64, with the default eps', function()
    torch.manual_seed(1)
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local x = torch.randn(3, 4, 5, { dtype = dt })
      local w = torch.randn(4, 5, { dtype = dt })
      local eps = dt == torch.float64 and 2.220446049250313e-16 or 1.1920928955078125e-07
      local y = F.rms_norm(x, { 4, 5 }, w)
      local xt, wt, yt = x:totable(), w:totable(), y:totable()
      for b = 1, 3 do
        local ss = 0
        for i = 1, 4 do for j = 1, 5 do ss = ss + xt[b][i][j] ^ 2 end end
        local r = 1 / math.sqrt(ss / 20 + eps)
        for i = 1, 4 do
          for j = 1, 5 do H.close(yt[b][i][j], xt[b][i][j] * r * wt[i][j], dt == torch.float64 and 1e-12 or 2e-6) end
        end
      end
      local m = nn.RMSNorm({ 4, 5 }, { dtype = dt })
      torch.no_grad(function() m.weight:copy_(w) end)
      H.assert_values(m(x), yt, dt == torch.float64 and 1e-12 or 1e-6)
    end
    -- a given eps, no weight, the last dim only, on a transposed input
    local x = torch.randn(6, 3, { dtype = torch.float64 }):t()
    local y = F.rms_norm(x, 6, nil, { eps = 0.5 }):totable()
    local xt = x:totable()
    for r = 1, 3 do
      local ss = 0
      for k = 1, 6 do ss = ss + xt[r][k] ^ 2 end
      for k = 1, 6 do H.close(y[r][k], xt[r][k] / math.sqrt(ss / 6 + 0.5), 1e-12) end
    end
    H.assert_values(F.rms_norm(torch.tensor({ { 3.0, 4.0 } }), 2, nil, { eps = 0 }), { { 3 / math.sqrt(12.5), 4 / math.sqrt(12.5) } }, 1e-6)
  end)

  it('computes bfloat16 and float16 in float32 and keeps the dtype; passes gradients', function()
    torch.manual_seed(2)
    local x = torch.randn(4, 8)
    for _, dt in ipairs { torch.bfloat16, torch.float16 } do
      local y = F.rms_norm(x:to(dt), 8)
      assert.are.equal(dt, y.dtype)
      H.assert_values(y:float(), F.rms_norm(x:to(dt):float(), 8, nil, { eps = dt == torch.float16 and 0.0009765625 or 0.0078125 }):to(dt):float():totable(), 0)
    end
    assert.is_true(gradcheck(function(a, w) return F.rms_norm(a, 5, w, { eps = 1e-3 }) end, { leaf({ 3, 5 }), leaf({ 5 }) }))
  end)

  it('module: no weight without elementwise_affine, prints as PyTorch, refuses bad shapes', function()
    local m = nn.RMSNorm(4, { elementwise_affine = false })
    assert.are.equal(0, #m:parameters())
    assert.are.equal('RMSNorm((4,), eps=None, elementwise_affine=False)', tostring(m))
    assert.are.equal('RMSNorm((2, 3), eps=1e-05, elementwise_affine=True)', tostring(nn.RMSNorm({ 2, 3 }, { eps = 1e-5 })))
    H.raises(function() return F.rms_norm(torch.ones(2, 3), 4) end, 'rms_norm', 'normalized_shape')
    H.raises(function() return F.rms_norm(torch.ones(2, 3, { dtype = torch.int64 }), 3) end, 'rms_norm', 'floating point')
    H.raises(function() return nn.RMSNorm(2, { bogus = 1 }) end, 'RMSNorm', 'bogus')
  end)
end)

describe('channel dropout', function()
  it('Dropout2d zeroes whole channels and scales the rest by 1 / (1 - p); Dropout1d likewise', function()
    torch.manual_seed(3)
    local x = torch.rand(8, 16, 3, 4) + 1
    local m = nn.Dropout2d(0.25)
    local y = m(x)
    local zeros = 0
    for n = 1, 8 do
      for c = 1, 16 do
        local ch, xc = y[n][c], x[n][c]
        if ch:eq(0):all():item() then
          zeros = zeros + 1
        else
          H.assert_values(ch, (xc / 0.75):totable(), 1e-6)
        end
      end
    end
    assert.is_true(zeros > 10 and zeros < 55, 'dropped ' .. zeros .. ' of 128 channels')
    m:eval()
    assert.are.equal(x, m(x))
    local y1 = F.dropout1d(torch.ones(2, 50, 6), 0.5)
    for n = 1, 2 do
      for c = 1, 50 do
        local s = y1[n][c]:totable()
        for k = 2, 6 do assert.are.equal(s[1], s[k]) end
        assert.is_true(s[1] == 0 or s[1] == 2)
      end
    end
    -- unbatched input: the first dim is the channel
    local u = F.dropout2d(torch.ones(40, 2, 2), 0.5)
    for c = 1, 40 do assert.is_true(u[c]:eq(u[c][1][1]):all():item()) end
    H.assert_values(F.dropout2d(torch.ones(1, 2, 2, 2), 1), { 0, 0, 0, 0, 0, 0, 0, 0 })
    H.raises(function() return F.dropout2d(torch.ones(2, 2), 0.5) end, 'dropout2d', '3-D')
    H.raises(function() return nn.Dropout2d(1.5) end, 'probability')
    assert.are.equal('Dropout2d(p=0.25, inplace=False)', tostring(nn.Dropout2d(0.25)))
  end)
end)

describe('pixel shuffle', function()
  it('pixel_shuffle moves channel c r^2 + i r + j to row h r + i, column w r + j; unshuffle inverts it', function()
    local r, c, h, w = 2, 3, 2, 3
    local x = torch.arange(0, 2 * c * r * r * h * w):view(2, c * r * r, h, w):double()
    local y = F.pixel_shuffle(x, r)
    assert.are.same({ 2, c, h * r, w * r }, { y:size(1), y:size(2), y:size(3), y:size(4) })
    local xt, yt = x:totable(), y:totable()
    for n = 1, 2 do
      for ch = 0, c - 1 do
        for i = 0, r - 1 do
          for j = 0, r - 1 do
            for hh = 0, h - 1 do
              for ww = 0, w - 1 do
                assert.are.equal(xt[n][ch * r * r + i * r + j + 1][hh + 1][ww + 1], yt[n][ch + 1][hh * r + i + 1][ww * r + j + 1])
              end
            end
          end
        end
      end
    end
    assert.is_true(F.pixel_unshuffle(y, r):equal(x))
    assert.is_true(nn.PixelShuffle(r)(x):equal(y))
    assert.is_true(nn.PixelUnshuffle(r)(y):equal(x))
    assert.is_true(F.pixel_shuffle(x[1], r):equal(y[1])) -- no batch dim
    assert.is_true(gradcheck(function(a) return F.pixel_shuffle(a, 2) end, { leaf({ 1, 8, 2, 2 }) }))
    H.raises(function() return F.pixel_shuffle(torch.ones(1, 3, 2, 2), 2) end, 'pixel_shuffle', 'divisible')
    H.raises(function() return F.pixel_unshuffle(torch.ones(1, 1, 3, 2), 2) end, 'pixel_unshuffle', 'divisible')
    assert.are.equal('PixelShuffle(upscale_factor=2)', tostring(nn.PixelShuffle(2)))
  end)
end)

describe('unfold and fold', function()
  -- the reference: column (c, i, j) of block (bh, bw) is the padded input at (bh s + i d, bw s + j d)
  local function ref_unfold(xt, c, h, w, k, d, p, s)
    local oh = (h + 2 * p - d * (k - 1) - 1) // s + 1
    local ow = (w + 2 * p - d * (k - 1) - 1) // s + 1
    local out = {}
    for ch = 0, c - 1 do
      for i = 0, k - 1 do
        for j = 0, k - 1 do
          local row = {}
          for bh = 0, oh - 1 do
            for bw = 0, ow - 1 do
              local y, x = bh * s + i * d - p, bw * s + j * d - p
              row[#row + 1] = (y >= 0 and y < h and x >= 0 and x < w) and xt[ch + 1][y + 1][x + 1] or 0
            end
          end
          out[#out + 1] = row
        end
      end
    end
    return out, oh, ow
  end

  it('F.unfold against the reference over kernels, dilations, paddings and strides; transposed input', function()
    torch.manual_seed(4)
    for _, g in ipairs { { 2, 1, 0, 1 }, { 3, 1, 1, 1 }, { 3, 2, 1, 2 }, { 2, 1, 2, 3 } } do
      local k, d, p, s = table.unpack(g)
      local x = torch.randn(2, 3, 6, 7, { dtype = torch.float64 })
      local y = F.unfold(x, k, { dilation = d, padding = p, stride = s })
      for n = 1, 2 do
        local want, oh, ow = ref_unfold(x[n]:totable(), 3, 6, 7, k, d, p, s)
        assert.are.same({ 3 * k * k, oh * ow }, { y:size(2), y:size(3) })
        H.assert_values(y[n], want, 0)
      end
    end
    local x = torch.randn(5, 4, { dtype = torch.float64 })
    local xt = x:t():reshape(1, 1, 4, 5)
    local want = ref_unfold(xt[1]:totable(), 1, 4, 5, 2, 1, 0, 1)
    H.assert_values(F.unfold(x:t():unsqueeze(1), { 2, 2 }), want, 0) -- unbatched, non-contiguous
    -- a non-square kernel
    local y = F.unfold(torch.arange(1, 13):view(1, 1, 3, 4):double(), { 2, 3 })
    H.assert_values(y, { { { 1, 2, 5, 6 }, { 2, 3, 6, 7 }, { 3, 4, 7, 8 }, { 5, 6, 9, 10 }, { 6, 7, 10, 11 }, { 7, 8, 11, 12 } } })
    -- NaN and inf stay where they are
    local z = F.unfold(torch.tensor({ { { { 0 / 0, 1 }, { 2, math.huge } } } }), 1)
    H.assert_values(z, { { { 0 / 0, 1, 2, math.huge } } })
  end)

  it('F.fold is unfold\'s adjoint (<unfold(x), y> = <x, fold(y)>), undoes a non-overlapping unfold, and sums overlaps', function()
    torch.manual_seed(5)
    local o = { dilation = 2, padding = 1, stride = 2 }
    local x = torch.randn(2, 3, 7, 6, { dtype = torch.float64 })
    local u = F.unfold(x, 3, o)
    local y = torch.randn(u.shape, { dtype = torch.float64 })
    H.close((u * y):sum():item(), (x * F.fold(y, { 7, 6 }, 3, o)):sum():item(), 1e-10)
    local a = torch.randn(1, 2, 4, 6, { dtype = torch.float64 })
    assert.is_true(F.fold(F.unfold(a, 2, { stride = 2 }), { 4, 6 }, 2, { stride = 2 }):equal(a))
    -- overlapping 2 x 2 blocks with stride 1 over a 3 x 3 output: each pixel counted once per block holding it
    local counts = F.fold(F.unfold(torch.ones(1, 1, 3, 3), 2), { 3, 3 }, 2)
    H.assert_values(counts, { { { { 1, 2, 1 }, { 2, 4, 2 }, { 1, 2, 1 } } } })
    assert.is_true(nn.Fold({ 4, 6 }, 2, { stride = 2 })(nn.Unfold(2, { stride = 2 })(a)):equal(a))
    assert.is_true(gradcheck(function(t) return F.unfold(t, 2, { padding = 1, stride = 2 }) end, { leaf({ 1, 2, 3, 4 }) }))
    assert.is_true(gradcheck(function(t) return F.fold(t, { 3, 3 }, 2) end, { leaf({ 1, 4, 4 }) }))
    H.raises(function() return F.unfold(torch.ones(1, 1, 2, 2), 3) end, 'unfold', 'does not fit')
    H.raises(function() return F.unfold(torch.ones(2, 2), 1) end, 'unfold', '4-D')
    H.raises(function() return F.fold(torch.ones(1, 5, 4), { 3, 3 }, 2) end, 'fold', 'divisible')
    H.raises(function() return F.fold(torch.ones(1, 4, 5), { 3, 3 }, 2) end, 'fold', 'sliding blocks')
    H.raises(function() return F.unfold(torch.ones(1, 1, 4, 4), 2, { stride = 0 }) end, 'unfold', 'positive')
  end)
end)

describe('padding layers', function()
  it('each equals F.pad in its mode, with an integer or per-side padding, and prints as PyTorch', function()
    local x = torch.arange(1, 13):view(1, 2, 2, 3):double()
    H.assert_values(nn.ZeroPad2d(1)(x), F.pad(x, { 1, 1, 1, 1 }):totable())
    H.assert_values(nn.ConstantPad2d({ 1, 0, 2, 0 }, 3.5)(x), F.pad(x, { 1, 0, 2, 0 }, { value = 3.5 }):totable())
    H.assert_values(nn.ReflectionPad2d({ 2, 1, 1, 0 })(x), F.pad(x, { 2, 1, 1, 0 }, 'reflect'):totable())
    H.assert_values(nn.ReplicationPad2d(2)(x), F.pad(x, { 2, 2, 2, 2 }, 'replicate'):totable())
    H.assert_values(nn.CircularPad2d(1)(x), F.pad(x, { 1, 1, 1, 1 }, 'circular'):totable())
    local v = torch.tensor({ { { 1.0, 2, 3 } } })
    H.assert_values(nn.ReflectionPad1d(2)(v), { { { 3, 2, 1, 2, 3, 2, 1 } } })
    H.assert_values(nn.ReplicationPad1d({ 1, 2 })(v), { { { 1, 1, 2, 3, 3, 3 } } })
    H.assert_values(nn.ZeroPad1d({ 0, 1 })(v), { { { 1, 2, 3, 0 } } })
    H.assert_values(nn.ConstantPad1d(1, -1)(v[1]), { { -1, 1, 2, 3, -1 } }) -- unbatched
    assert.are.equal('ZeroPad2d((1, 1, 1, 1))', tostring(nn.ZeroPad2d(1)))
    assert.are.equal('ConstantPad1d((1, 1), value=-1.0)', tostring(nn.ConstantPad1d(1, -1)))
    H.raises(function() return nn.ZeroPad2d({ 1, 2 }) end, 'ZeroPad2d', '4 integers')
    H.raises(function() return nn.ReflectionPad2d(1)(torch.ones(2, 2)) end, 'ReflectionPad2d', '3-D')
    H.raises(function() return nn.ConstantPad2d(1) end, 'ConstantPad2d', 'value')
  end)
end)

describe("F.pad's constant mode", function()
  -- without autograd the padded tensor is filled once and x copied into its interior; with it,
  -- blocks are joined by cat: both against the definition written here (pads and crops mixed, a
  -- non-contiguous x, every kind of dtype), and the gradient x's part of the output's
  local function reference(xv, shape, pads, value)
    -- output index (1-based) -> x's index: minus the left pad of each padded dim (last first)
    local nd = #shape
    local out = {}
    local function fill(t, d, idx)
      for i = 1, shape[d] do
        idx[d] = i
        if d == nd then
          local src, inside = {}, true
          for k = 1, nd do
            local j = nd - k + 1 -- pads[2k-1], pads[2k] are dim j's
            local l = pads[2 * k - 1] or 0
            src[j] = idx[j] - l
          end
          local v = xv
          for k = 1, nd do
            if v == nil or type(v) ~= 'table' or src[k] < 1 or src[k] > #v then inside = false break end
            v = v[src[k]]
          end
          t[i] = inside and v or value
        else
          t[i] = {}
          fill(t[i], d + 1, idx)
        end
      end
    end
    fill(out, 1, {})
    return out
  end

  it('fills the border with value and copies x inside, cropping negative amounts, with and without autograd', function()
    torch.manual_seed(12)
    local cases = {
      { torch.float32, { 1, 2, -1, 3, 0, 1 }, 2.5 }, { torch.float64, { 2, 0, 1, 1 }, -1 },
      { torch.int64, { 0, 3, 2, -1 }, 9 }, { torch.float16, { 1, 1, 1, 1, 1, 1 }, 0 },
      { torch.uint8, { 3, 0 }, 7 }, { torch.bfloat16, { -1, -1, 2, 0 }, 1.5 },
    }
    for _, c in ipairs(cases) do
      local dt, pads, value = c[1], c[2], c[3]
      local x = torch.randint(0, 50, { 3, 5, 4 }):to(dt):transpose(1, 3) -- 4 x 5 x 3, not contiguous
      local y = F.pad(x, pads, { value = value })
      -- the reference on x with the crops applied as the definition: out[i] = x[i - left]
      local xv = x:contiguous():totable()
      local shape = { x:size(1), x:size(2), x:size(3) }
      for k = 1, #pads // 2 do
        local j = 3 - k + 1
        shape[j] = shape[j] + pads[2 * k - 1] + pads[2 * k]
      end
      assert.are.same(shape, { table.unpack(y.shape) }, tostring(dt))
      assert.are.same(reference(xv, shape, pads, value), y:totable(), tostring(dt) .. ' ' .. table.concat(pads, ','))
      if dt.is_floating_point then
        local xg = x:clone():requires_grad_()
        local yg = F.pad(xg, pads, { value = value })
        assert.are.same(y:totable(), yg:totable(), tostring(dt) .. ' with autograd')
      end
    end
  end)
end)

describe('Unflatten, CosineSimilarity, PairwiseDistance', function()
  it('equal their functional forms', function()
    local x = torch.arange(1, 25):view(2, 12)
    local u = nn.Unflatten(2, { 3, -1 })(x)
    assert.are.same({ 2, 3, 4 }, { u:size(1), u:size(2), u:size(3) })
    assert.are.equal(x[2][7], u[2][2][3])
    assert.are.equal('Unflatten(dim=2, unflattened_size=(3, -1))', tostring(nn.Unflatten(2, { 3, -1 })))
    H.raises(function() return nn.Unflatten(2, {}) end, 'Unflatten', 'non-empty')
    torch.manual_seed(6)
    local a, b = torch.randn(4, 5), torch.randn(4, 5)
    H.assert_values(nn.CosineSimilarity()(a, b), F.cosine_similarity(a, b):totable(), 0)
    H.assert_values(nn.CosineSimilarity({ dim = 1 })(a, b), F.cosine_similarity(a, b, { dim = 1 }):totable(), 0)
    H.assert_values(nn.PairwiseDistance({ p = 1, keepdim = true })(a, b), F.pairwise_distance(a, b, { p = 1, keepdim = true }):totable(), 0)
    local at, bt = a:totable(), b:totable()
    local d = nn.PairwiseDistance()(a, b):totable()
    for r = 1, 4 do
      local s = 0
      for k = 1, 5 do s = s + (at[r][k] - bt[r][k] + 1e-6) ^ 2 end
      H.close(d[r], math.sqrt(s), 1e-6)
    end
  end)
end)

describe('the new functions on another device', function()
  local it2 = torch.cpu.device_count() >= 2 and it or pending
  it2('keep their tensors on the input\'s device (cpu:1 here, as for CUDA)', function()
    local x = torch.rand(1, 4, 2, 3):to('cpu:1')
    local results = {
      F.unfold(x, 2), F.fold(torch.ones(1, 4, 2):to('cpu:1'), { 2, 3 }, 2), F.dropout2d(x, 0.5), F.dropout1d(x[1], 0.5),
      F.rms_norm(x, 3), F.pixel_shuffle(x, 2), F.pixel_unshuffle(torch.rand(1, 1, 2, 4):to('cpu:1'), 2),
      nn.ReflectionPad2d(1)(x), nn.ZeroPad2d(1)(x),
    }
    for k, r in ipairs(results) do assert.are.equal('cpu:1', tostring(r.device), 'result ' .. k) end
  end)
end)
