-- InstanceNorm, LocalResponseNorm, AdaptiveMaxPool, LPPool, MaxUnpool, EmbeddingBag, Bilinear,
-- Softmax2d, ChannelShuffle, the Upsampling layers, alpha dropout, Dropout3d, RReLU, gumbel_softmax,
-- ParameterList and ParameterDict: values against element-by-element references computed here in
-- Lua loops, float32 and float64, non-contiguous inputs, gradients by finite differences (gradcheck,
-- float64), parameters and their initialisation, state dict keys, and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local gradcheck = torch.autograd.gradcheck

local f64 = torch.float64
local function leaf(shape) return torch.randn(shape, { dtype = f64 }):requires_grad_() end
local function tol(dt) return dt == f64 and 1e-10 or 2e-5 end

-- a 4-D N x C x H x W tensor that is not contiguous (made as N x C x W x H and transposed)
local function nc_randn(n, c, h, w, dt)
  local x = torch.randn(n, c, w, h, { dtype = dt }):transpose(3, 4)
  assert(not x:is_contiguous())
  return x
end

describe('InstanceNorm', function()
  -- y[n][c] = (x[n][c] - mean) / sqrt(var + eps) * w[c] + b[c], over the positions of x[n][c]
  local function ref(xt, w, b, eps)
    local out, means, vars = {}, {}, {}
    for n, xn in ipairs(xt) do
      out[n], means[n], vars[n] = {}, {}, {}
      for c, xc in ipairs(xn) do
        local flat = H.flatten(xc)
        local s, ss = 0, 0
        for _, v in ipairs(flat) do s = s + v end
        local mean = s / #flat
        for _, v in ipairs(flat) do ss = ss + (v - mean) ^ 2 end
        local var = ss / #flat
        means[n][c], vars[n][c] = mean, var
        local r = {}
        for i, v in ipairs(flat) do r[i] = (v - mean) / math.sqrt(var + eps) * (w and w[c] or 1) + (b and b[c] or 0) end
        out[n][c] = r
      end
    end
    return out, means, vars
  end

  it('F.instance_norm against the reference, float32 and float64, non-contiguous, with weight and bias', function()
    torch.manual_seed(11)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = nc_randn(2, 3, 4, 5, dt)
      local w, b = torch.randn(3, { dtype = dt }), torch.randn(3, { dtype = dt })
      local want = ref(x:totable(), w:totable(), b:totable(), 1e-5)
      H.assert_values(F.instance_norm(x, nil, nil, w, b), want, tol(dt))
      H.assert_values(F.instance_norm(x, nil, nil, nil, nil, { eps = 0.1 }), (ref(x:totable(), nil, nil, 0.1)), tol(dt))
      -- 3-D (N x C x L) and 5-D (N x C x D x H x W)
      local x3 = torch.randn(2, 4, 6, { dtype = dt })
      H.assert_values(F.instance_norm(x3), (ref(x3:totable(), nil, nil, 1e-5)), tol(dt))
      local x5 = torch.randn(1, 2, 2, 3, 2, { dtype = dt })
      H.assert_values(F.instance_norm(x5), (ref(x5:totable(), nil, nil, 1e-5)), tol(dt))
    end
  end)

  it('updates running statistics with the batch mean of the instances\' means and unbiased variances, and uses them when use_input_stats is false', function()
    torch.manual_seed(12)
    local x = torch.randn(3, 2, 5, { dtype = f64 })
    local rm, rv = torch.tensor({ 0.5, -1.0 }, { dtype = f64 }), torch.tensor({ 2.0, 0.5 }, { dtype = f64 })
    local _, means, vars = ref(x:totable(), nil, nil, 1e-5)
    local want_m, want_v = {}, {}
    for c = 1, 2 do
      local sm, sv = 0, 0
      for n = 1, 3 do sm, sv = sm + means[n][c], sv + vars[n][c] * 5 / 4 end
      want_m[c] = 0.7 * rm[c] + 0.3 * sm / 3
      want_v[c] = 0.7 * rv[c] + 0.3 * sv / 3
    end
    F.instance_norm(x, rm, rv, nil, nil, { momentum = 0.3 })
    H.assert_values(rm, want_m, 1e-12)
    H.assert_values(rv, want_v, 1e-12)
    local y = F.instance_norm(x, rm, rv, nil, nil, { use_input_stats = false }):totable()
    local xt = x:totable()
    for n = 1, 3 do
      for c = 1, 2 do
        for l = 1, 5 do H.close(y[n][c][l], (xt[n][c][l] - want_m[c]) / math.sqrt(want_v[c] + 1e-5), 1e-12) end
      end
    end
  end)

  it('modules: no parameters nor buffers by default; affine (ones, zeros) and running statistics on request; unbatched input', function()
    torch.manual_seed(13)
    for nd, name in ipairs { 'InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d' } do
      local m = nn[name](4)
      assert.are.equal(0, #m:parameters())
      assert.are.equal(0, #m:buffers())
      assert.are.equal(name .. '(4, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)', tostring(m))
      local a = nn[name](4, { affine = true, track_running_stats = true })
      local keys = {}
      for k in pairs(a:state_dict()) do keys[#keys + 1] = k end
      assert.are.same({ 'weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked' }, keys)
      H.assert_values(a.weight, { 1, 1, 1, 1 })
      H.assert_values(a.bias, { 0, 0, 0, 0 })
      local shape = { 2, 4 }
      for _ = 1, nd do shape[#shape + 1] = 3 end
      local x = torch.randn(shape, { dtype = f64 })
      a:double()
      local y = a(x)
      H.assert_values(y, F.instance_norm(x):totable(), 1e-12)
      assert.are.equal(0, a.num_batches_tracked:item()) -- PyTorch's instance norm does not count batches
      assert.is_false(a.running_mean:equal(torch.zeros(4, { dtype = f64 })))
      a:eval()
      H.assert_values(a(x), F.instance_norm(x, a.running_mean, a.running_var, a.weight, a.bias,
        { use_input_stats = false }):totable(), 1e-12)
      -- no batch dim: a batch of one
      local u = nn[name](4):double()
      H.assert_values(u(x[1]), u(x:narrow(1, 1, 1)):squeeze(1):totable(), 1e-12)
    end
  end)

  it('passes gradcheck in input, weight and bias', function()
    torch.manual_seed(14)
    assert.is_true(gradcheck(function(x, w, b) return F.instance_norm(x, nil, nil, w, b) end,
      { leaf({ 2, 3, 4 }), leaf({ 3 }), leaf({ 3 }) }))
    local rm, rv = torch.zeros(2, { dtype = f64 }), torch.ones(2, { dtype = f64 })
    assert.is_true(gradcheck(function(x) return F.instance_norm(x, rm, rv, nil, nil, { use_input_stats = false }) end,
      { leaf({ 2, 2, 3 }) }))
  end)

  it('names bad input', function()
    H.raises(function() return nn.InstanceNorm2d(3)(torch.randn(3, 4)) end, 'InstanceNorm2d', '3D or 4D')
    H.raises(function() return nn.InstanceNorm1d(3, { affine = true })(torch.randn(2, 4, 5)) end, 'InstanceNorm1d',
      'num_features')
    H.raises(function() return F.instance_norm(torch.randn(2, 3, 1)) end, 'instance_norm', 'more than 1 spatial element')
    H.raises(function() return F.instance_norm(torch.ones(2, 3, 4, { dtype = torch.int64 })) end, 'instance_norm', 'floating')
    H.raises(function() return F.instance_norm(torch.randn(2, 3, 4), nil, nil, nil, nil, { use_input_stats = false }) end,
      'instance_norm', 'running_mean')
    H.raises(function() return F.instance_norm(torch.randn(2, 3, 4), nil, nil, torch.ones(2)) end, 'instance_norm', 'weight')
    H.raises(function() return F.instance_norm(torch.randn(2, 3, 4), nil, nil, nil, nil, { bogus = 1 }) end,
      'instance_norm', 'bogus')
    H.raises(function() return nn.InstanceNorm2d(0) end, 'InstanceNorm2d', 'num_features')
  end)
end)

describe('LocalResponseNorm', function()
  -- x / (k + alpha / size * sum of x^2 over channels c - size // 2 .. c + (size - 1) // 2)^beta
  local function ref(flat_t, nc, positions, size, alpha, beta, k)
    local out = {}
    for c = 1, nc do
      out[c] = {}
      for p = 1, positions do
        local s = 0
        for j = c - size // 2, c + (size - 1) // 2 do
          if j >= 1 and j <= nc then s = s + flat_t[j][p] ^ 2 end
        end
        out[c][p] = flat_t[c][p] / (k + alpha / size * s) ^ beta
      end
    end
    return out
  end

  it('F.local_response_norm and nn.LocalResponseNorm against the reference, 3-D and 4-D, float32 and float64', function()
    torch.manual_seed(15)
    for _, dt in ipairs { f64, torch.float32 } do
      for _, g in ipairs { { 3, 0.1, 0.6, 2.0 }, { 4, 1e-4, 0.75, 1.0 }, { 1, 0.5, 1.0, 0.5 } } do
        local size, alpha, beta, k = table.unpack(g)
        local x = nc_randn(2, 5, 3, 2, dt)
        local y = F.local_response_norm(x, size, alpha, beta, k)
        local y3 = F.local_response_norm(x:reshape(2, 5, 6), size, { alpha = alpha, beta = beta, k = k })
        local m = nn.LocalResponseNorm(size, alpha, beta, k)
        for n = 1, 2 do
          local want = ref(x[n]:reshape(5, 6):totable(), 5, 6, size, alpha, beta, k)
          H.assert_values(y[n]:reshape(5, 6), want, tol(dt))
          H.assert_values(y3[n], want, tol(dt))
        end
        H.assert_values(m(x), y:totable(), 0)
      end
    end
    assert.are.equal('LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)', tostring(nn.LocalResponseNorm(2)))
    assert.is_true(gradcheck(function(x) return F.local_response_norm(x, 3, 0.5, 0.75, 1) end, { leaf({ 2, 4, 3 }) }))
    H.raises(function() return F.local_response_norm(torch.randn(2, 3), 2) end, 'local_response_norm', '3D or higher')
    H.raises(function() return F.local_response_norm(torch.randn(2, 3, 4), 0) end, 'local_response_norm', 'size')
    H.raises(function() return nn.LocalResponseNorm(2, { gamma = 1 }) end, 'LocalResponseNorm', 'gamma')
  end)
end)

describe('adaptive max pooling', function()
  -- bins floor(i in / out) .. ceil((i + 1) in / out) - 1 (0-based), the first maximum and its 1-based
  -- flat index in the plane
  local function ref(plane, h, w, oh, ow)
    local vals, idx = {}, {}
    for i = 0, oh - 1 do
      vals[i + 1], idx[i + 1] = {}, {}
      local r0, r1 = math.floor(i * h / oh), math.ceil((i + 1) * h / oh) - 1
      for j = 0, ow - 1 do
        local c0, c1 = math.floor(j * w / ow), math.ceil((j + 1) * w / ow) - 1
        local best, at = -math.huge, nil
        for r = r0, r1 do
          for c = c0, c1 do
            local v = plane[r + 1][c + 1]
            if v > best then best, at = v, r * w + c + 1 end
          end
        end
        vals[i + 1][j + 1], idx[i + 1][j + 1] = best, at
      end
    end
    return vals, idx
  end

  it('F.adaptive_max_pool2d against the reference for sizes that do and do not divide, float32 and float64, non-contiguous', function()
    torch.manual_seed(16)
    for _, dt in ipairs { f64, torch.float32 } do
      for _, g in ipairs { { 5, 7, 3, 3 }, { 6, 4, 2, 4 }, { 4, 5, 4, 5 }, { 3, 3, 5, 4 }, { 7, 6, 1, 1 } } do
        local h, w, oh, ow = table.unpack(g)
        local x = nc_randn(2, 3, h, w, dt)
        local y, i = F.adaptive_max_pool2d(x, { oh, ow }, true)
        assert.are.equal(torch.int64, i.dtype)
        for n = 1, 2 do
          for c = 1, 3 do
            local vals, idx = ref(x[n][c]:totable(), h, w, oh, ow)
            H.assert_values(y[n][c], vals, 0)
            H.assert_values(i[n][c], idx, 0)
          end
        end
        H.assert_values(F.adaptive_max_pool2d(x, { oh, ow }), y:totable(), 0)
        H.assert_values(nn.AdaptiveMaxPool2d({ oh, ow })(x), y:totable(), 0)
      end
    end
    -- the first of equal maxima; the indices are max_pool2d's where the windows are the same
    local z = torch.zeros(1, 1, 4, 4)
    local _, zi = F.adaptive_max_pool2d(z, 2, { return_indices = true })
    H.assert_values(zi, { { { { 1, 3 }, { 9, 11 } } } })
    local x = torch.randn(2, 3, 6, 6)
    local a, ai = F.adaptive_max_pool2d(x, 3, true)
    local b, bi = F.max_pool2d(x, 2, { return_indices = true })
    assert.is_true(a:equal(b) and ai:equal(bi))
    -- a nil entry keeps the input's size; unbatched input
    assert.are.same({ 2, 3, 6, 2 }, { table.unpack(F.adaptive_max_pool2d(x, { nil, 2 }).shape) })
    assert.is_true(F.adaptive_max_pool2d(x[1], 3):equal(a[1]))
  end)

  it('F.adaptive_max_pool1d and the modules, with 1-based positions; unpooling the indices', function()
    torch.manual_seed(17)
    local x = torch.randn(2, 3, 7, { dtype = f64 })
    local y, i = F.adaptive_max_pool1d(x, 3, true)
    for n = 1, 2 do
      for c = 1, 3 do
        local vals, idx = ref({ x[n][c]:totable() }, 1, 7, 1, 3)
        H.assert_values(y[n][c], vals, 0)
        H.assert_values(i[n][c], idx, 0)
      end
    end
    local m = nn.AdaptiveMaxPool1d(3, { return_indices = true })
    local my, mi = m(x)
    assert.is_true(my:equal(y) and mi:equal(i))
    assert.are.equal('AdaptiveMaxPool1d(output_size=3)', tostring(m))
    assert.are.equal('AdaptiveMaxPool2d(output_size=(None, 3))', tostring(nn.AdaptiveMaxPool2d({ nil, 3 })))
    -- the indices place the maxima back where they were
    local u = torch.zeros(2, 3, 7, { dtype = f64 }):scatter(3, i, y)
    for n = 1, 2 do
      for c = 1, 3 do
        for k = 1, 3 do H.close(u[n][c][i[n][c][k]], x[n][c][i[n][c][k]]) end
      end
    end
  end)

  it('passes gradcheck and names bad input', function()
    torch.manual_seed(18)
    assert.is_true(gradcheck(function(x) return F.adaptive_max_pool2d(x, { 2, 3 }) end, { leaf({ 1, 2, 5, 4 }) }))
    assert.is_true(gradcheck(function(x) return F.adaptive_max_pool1d(x, 2) end, { leaf({ 2, 5 }) }))
    H.raises(function() return F.adaptive_max_pool2d(torch.randn(4, 4), 2) end, 'adaptive_max_pool2d', '4-D')
    H.raises(function() return F.adaptive_max_pool2d(torch.randn(1, 2, 0, 4), 2) end, 'adaptive_max_pool2d', 'non-zero size')
    H.raises(function() return F.adaptive_max_pool2d(torch.randn(1, 2, 4, 4), 0) end, 'adaptive_max_pool2d', 'positive')
    H.raises(function() return F.adaptive_max_pool1d(torch.randn(2, 3, 4, 4), 2) end, 'adaptive_max_pool1d', '3-D')
    H.raises(function() return nn.AdaptiveMaxPool2d(2.5) end, 'AdaptiveMaxPool2d', 'output_size')
  end)
end)

describe('LPPool', function()
  it('F.lp_pool2d is (sum of x^p over each window)^(1/p), times area over count for ceil mode\'s clipped windows', function()
    torch.manual_seed(19)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = nc_randn(2, 2, 5, 6, dt):abs()
      local xt = x:totable()
      for _, g in ipairs { { 2, 2, 3, 2, 3, false }, { 3.5, 3, 2, 2, 1, true }, { 1, 2, 2, 2, 2, true } } do
        local p, kh, kw, sh, sw, ceil = table.unpack(g)
        local y = F.lp_pool2d(x, p, { kh, kw }, { stride = { sh, sw }, ceil_mode = ceil })
        local function count(n, k, s)
          if ceil then
            local o = math.ceil((n - k) / s) + 1
            if (o - 1) * s >= n then o = o - 1 end
            return o
          end
          return (n - k) // s + 1
        end
        local oh, ow = count(5, kh, sh), count(6, kw, sw)
        assert.are.same({ 2, 2, oh, ow }, { table.unpack(y.shape) })
        local yt = y:totable()
        for n = 1, 2 do
          for c = 1, 2 do
            for i = 0, oh - 1 do
              for j = 0, ow - 1 do
                local s, cnt = 0, 0
                for r = i * sh, math.min(i * sh + kh, 5) - 1 do
                  for q = j * sw, math.min(j * sw + kw, 6) - 1 do
                    s, cnt = s + xt[n][c][r + 1][q + 1] ^ p, cnt + 1
                  end
                end
                H.close(yt[n][c][i + 1][j + 1], (s * kh * kw / cnt) ^ (1 / p), tol(dt) * 10)
              end
            end
          end
        end
      end
    end
  end)

  it('F.lp_pool1d, the modules and their reprs, gradcheck, errors', function()
    torch.manual_seed(20)
    local x = torch.rand(2, 3, 7, { dtype = f64 }) + 0.1
    local y = F.lp_pool1d(x, 2, 3, { stride = 2 })
    local xt = x:totable()
    for n = 1, 2 do
      for c = 1, 3 do
        for o = 0, 2 do
          local s = 0
          for k = o * 2, o * 2 + 2 do s = s + xt[n][c][k + 1] ^ 2 end
          H.close(y[n][c][o + 1], math.sqrt(s), 1e-12)
        end
      end
    end
    H.assert_values(nn.LPPool1d(2, 3, { stride = 2 })(x), y:totable(), 0)
    H.assert_values(nn.LPPool2d(2, { 1, 3 }, { stride = { 1, 2 } })(x:unsqueeze(1)):squeeze(1), y:totable(), 1e-12)
    assert.are.equal('LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)', tostring(nn.LPPool2d(2, 3)))
    assert.are.equal('LPPool1d(norm_type=2.0, kernel_size=3, stride=2, ceil_mode=False)',
      tostring(nn.LPPool1d(2.0, 3, { stride = 2 })))
    assert.is_true(gradcheck(function(a) return F.lp_pool2d(a, 3, 2) end,
      { (torch.rand(1, 2, 4, 4, { dtype = f64 }) + 0.5):requires_grad_() }))
    assert.is_true(gradcheck(function(a) return F.lp_pool1d(a, 1.5, 2) end,
      { (torch.rand(2, 6, { dtype = f64 }) + 0.5):requires_grad_() }))
    H.raises(function() return F.lp_pool2d(x:unsqueeze(1), 'two', 2) end, 'lp_pool2d', 'norm_type')
    H.raises(function() return nn.LPPool2d(2, 2, { padding = 1 }) end, 'LPPool2d', 'padding')
  end)
end)

describe('MaxUnpool', function()
  it('F.max_unpool2d puts each value at its 1-based index in zeros of the default or the given size', function()
    torch.manual_seed(21)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = nc_randn(2, 3, 6, 4, dt)
      local y, i = F.max_pool2d(x, 2, { return_indices = true })
      for _, size in ipairs { false, { 6, 5 }, { 2, 3, 7, 5 } } do
        local u = F.max_unpool2d(y, i, 2, { output_size = size or nil })
        local oh, ow = size and size[#size - 1] or 6, size and size[#size] or 4
        assert.are.same({ 2, 3, oh, ow }, { table.unpack(u.shape) })
        local yt, it = y:totable(), i:totable()
        for n = 1, 2 do
          for c = 1, 3 do
            local want = {}
            for k = 1, oh * ow do want[k] = 0 end
            for r = 1, 3 do for q = 1, 2 do want[it[n][c][r][q]] = yt[n][c][r][q] end end
            H.assert_values(u[n][c]:reshape(-1), want, 0)
          end
        end
      end
    end
    -- stride and padding set the default size: (3 - 1) 2 - 2 + 3 = 5
    local v = torch.tensor({ { { { 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0 }, { 7.0, 8.0, 9.0 } } } })
    local idx = torch.tensor({ { { { 1, 3, 5 }, { 11, 13, 15 }, { 21, 23, 25 } } } })
    local u = F.max_unpool2d(v, idx, 3, { stride = 2, padding = 1 })
    assert.are.same({ 1, 1, 5, 5 }, { table.unpack(u.shape) })
    H.assert_values(u:reshape(-1):index_select(1, idx:reshape(-1)), { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 0)
    H.close(u:sum():item(), 45)
  end)

  it('F.max_unpool1d and the modules take the indices MaxPool returns; gradcheck; errors', function()
    torch.manual_seed(22)
    local x = torch.randn(2, 3, 8, { dtype = f64 })
    local pool = nn.MaxPool1d(2, { return_indices = true })
    local y, i = pool(x)
    local u = nn.MaxUnpool1d(2)(y, i)
    local xt = x:totable()
    for n = 1, 2 do
      for c = 1, 3 do
        for k = 1, 4 do
          local a, b = xt[n][c][2 * k - 1], xt[n][c][2 * k]
          H.assert_values(u[n][c]:narrow(1, 2 * k - 1, 2), a >= b and { a, 0 } or { 0, b }, 0)
        end
      end
    end
    assert.are.same({ 2, 3, 9 }, { table.unpack(F.max_unpool1d(y, i, 2, { output_size = { 9 } }).shape) })
    local x2 = torch.randn(1, 2, 4, 4, { dtype = f64 })
    local y2, i2 = nn.MaxPool2d(2, { return_indices = true })(x2)
    H.assert_values(nn.MaxUnpool2d(2)(y2, i2), F.max_unpool2d(y2, i2, 2):totable(), 0)
    assert.are.equal('MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))', tostring(nn.MaxUnpool2d(2)))
    assert.are.equal('MaxUnpool1d(kernel_size=(2,), stride=(1,), padding=(0,))', tostring(nn.MaxUnpool1d(2, { stride = 1 })))
    assert.is_true(gradcheck(function(a) return F.max_unpool2d(a, i2, 2) end, { y2:detach():requires_grad_() }))
    assert.is_true(gradcheck(function(a) return F.max_unpool1d(a, i, 2) end, { y:detach():requires_grad_() }))
    H.raises(function() return F.max_unpool2d(y2, i2 + 100, 2) end, 'max_unpool2d', 'invalid max index')
    H.raises(function() return F.max_unpool2d(y2, i2 - 10, 2) end, 'max_unpool2d', 'invalid max index')
    H.raises(function() return F.max_unpool2d(y2, i2:int(), 2) end, 'max_unpool2d', 'int64')
    H.raises(function() return F.max_unpool2d(y2, i2:narrow(4, 1, 1), 2) end, 'max_unpool2d', 'shape of indices')
    H.raises(function() return F.max_unpool2d(y2, i2, 2, { output_size = { 7, 4 } }) end, 'max_unpool2d', 'output_size')
    H.raises(function() return F.max_unpool2d(y2, i2, 2, { output_size = { 4 } }) end, 'max_unpool2d', 'output_size')
    H.raises(function() return F.max_unpool1d(y2, i2, 2) end, 'max_unpool1d', '3-D')
  end)
end)

describe('EmbeddingBag', function()
  -- one reduction a bag: bags[b] lists 1-based positions in idx
  local function ref(wt, idx, bags, mode, pad, psw)
    local out = {}
    for b, bag in ipairs(bags) do
      local row, n = {}, 0
      for d = 1, #wt[1] do row[d] = mode == 'max' and -math.huge or 0 end
      for _, p in ipairs(bag) do
        local k = idx[p]
        if k ~= pad then
          n = n + 1
          for d = 1, #wt[1] do
            local v = wt[k][d] * (psw and psw[p] or 1)
            if mode == 'max' then row[d] = math.max(row[d], v) else row[d] = row[d] + v end
          end
        end
      end
      for d = 1, #wt[1] do
        if n == 0 then row[d] = 0 elseif mode == 'mean' then row[d] = row[d] / n end
      end
      out[b] = row
    end
    return out
  end

  it('F.embedding_bag against the reference: modes, 1-based offsets, padding_idx, include_last_offset, float32 and float64', function()
    torch.manual_seed(23)
    for _, dt in ipairs { f64, torch.float32 } do
      local w = torch.randn(3, 10, { dtype = dt }):t() -- 10 x 3, not contiguous
      local wt = w:totable()
      local idx = { 2, 3, 5, 6, 5, 4, 3, 10, 1 }
      local input = torch.tensor(idx)
      local offsets = torch.tensor({ 1, 5, 5, 8 })
      local bags = { { 1, 2, 3, 4 }, {}, { 5, 6, 7 }, { 8, 9 } }
      for _, mode in ipairs { 'sum', 'mean', 'max' } do
        H.assert_values(F.embedding_bag(input, w, offsets, { mode = mode }), ref(wt, idx, bags, mode), tol(dt))
        H.assert_values(F.embedding_bag(input, w, offsets, { mode = mode, padding_idx = 5 }),
          ref(wt, idx, bags, mode, 5), tol(dt))
        H.assert_values(F.embedding_bag(input, w, offsets, { mode = mode, padding_idx = -1 }),
          ref(wt, idx, bags, mode, 10), tol(dt))
        -- include_last_offset: the last offset ends the last bag (position 9 is in none)
        H.assert_values(F.embedding_bag(input, w, offsets:int(), { mode = mode, include_last_offset = true }),
          ref(wt, idx, { { 1, 2, 3, 4 }, {}, { 5, 6, 7 } }, mode), tol(dt))
        -- 2-D input: one bag a row, options in offsets' place
        local two = torch.tensor({ { 2, 3, 5 }, { 6, 5, 4 }, { 3, 10, 1 } })
        H.assert_values(F.embedding_bag(two, w, { mode = mode }),
          ref(wt, idx, { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, mode), tol(dt))
      end
      local psw = torch.randn(9, { dtype = dt })
      H.assert_values(F.embedding_bag(input, w, offsets, { mode = 'sum', per_sample_weights = psw, padding_idx = 3 }),
        ref(wt, idx, bags, 'sum', 3, psw:totable()), tol(dt))
      assert.are.equal(dt, F.embedding_bag(input, w, offsets).dtype)
    end
  end)

  it('max_norm: every row named is first renormalised in place, to max_norm / (norm + 1e-7) of itself', function()
    torch.manual_seed(28)
    for _, dt in ipairs { f64, torch.float32 } do
      for _, p in ipairs { 2, 1, 3 } do
        local w0 = torch.randn(3, 6, { dtype = dt }):t() * 1.5 -- 6 x 3
        -- row 6 is named only after the last offset (include_last_offset), row 4 is the padding row:
        -- both renormalised too, as PyTorch's; row 1 is not named
        local input, offsets = torch.tensor({ 2, 3, 3, 4, 5, 2, 6 }), torch.tensor({ 1, 3, 6 })
        local want = w0:totable()
        for _, k in ipairs { 2, 3, 4, 5, 6 } do
          local norm = 0
          for d = 1, 3 do norm = norm + math.abs(want[k][d]) ^ p end
          norm = norm ^ (1 / p)
          if norm > 0.9 then
            for d = 1, 3 do want[k][d] = want[k][d] * (0.9 / (norm + 1e-7)) end
          end
        end
        for _, mode in ipairs { 'sum', 'mean', 'max' } do
          local w = w0:clone():requires_grad_()
          local y = F.embedding_bag(input, w, offsets, { mode = mode, max_norm = 0.9, norm_type = p,
            include_last_offset = true, padding_idx = 4 })
          H.assert_values(w, want, tol(dt))
          H.assert_values(y, ref(want, input:totable(), { { 1, 2 }, { 3, 4, 5 } }, mode, 4), tol(dt))
          -- the gradient is that of the renormalised rows' reduction (the renormalisation is outside autograd)
          y:sum():backward()
          local g2 = {}
          for d = 1, 3 do
            if mode == 'sum' then g2[d] = 1
            elseif mode == 'mean' then g2[d] = 0.5
            else g2[d] = want[2][d] > want[3][d] and 1 or 0 end
          end
          H.assert_values(w.grad[2], g2, tol(dt))
        end
      end
    end
    local m = nn.EmbeddingBag(5, 2, { max_norm = 1, norm_type = 1, mode = 'sum' })
    assert.are.equal('EmbeddingBag(5, 2, max_norm=1, norm_type=1, mode=sum)', tostring(m))
    torch.no_grad(function() m.weight:copy_(torch.tensor({ { 3, 4 }, { 0.25, 0.5 }, { 1, 1 }, { 0, 0 }, { 2, 0 } })) end)
    H.assert_values(m(torch.tensor({ { 1, 2 } })), { { 3 / 7 + 0.25, 4 / 7 + 0.5 } }, 1e-6)
    H.assert_values(m.weight, { { 3 / 7, 4 / 7 }, { 0.25, 0.5 }, { 1, 1 }, { 0, 0 }, { 2, 0 } }, 1e-6)
    local p = nn.EmbeddingBag.from_pretrained(torch.tensor({ { 3, 4 }, { 0.3, 0.4 } }, { dtype = f64 }), { max_norm = 2 })
    H.assert_values(p(torch.tensor({ { 1 } })), { { 6 / (5 + 1e-7), 8 / (5 + 1e-7) } }, 1e-12)
  end)

  it('passes gradcheck in the weight and per_sample_weights; the padding row gets no gradient', function()
    torch.manual_seed(24)
    local input, offsets = torch.tensor({ 1, 3, 3, 2, 4, 1 }), torch.tensor({ 1, 3, 6 })
    for _, mode in ipairs { 'sum', 'mean', 'max' } do
      assert.is_true(gradcheck(function(w) return F.embedding_bag(input, w, offsets, { mode = mode, padding_idx = 2 }) end,
        { leaf({ 4, 3 }) }))
    end
    assert.is_true(gradcheck(function(w, s) return F.embedding_bag(input, w, offsets, { mode = 'sum', per_sample_weights = s }) end,
      { leaf({ 4, 3 }), leaf({ 6 }) }))
    local m = nn.EmbeddingBag(4, 3, { mode = 'sum', padding_idx = 2 })
    m(input, offsets):sum():backward()
    H.assert_values(m.weight.grad[2], { 0, 0, 0 })
    H.assert_values(m.weight.grad[3], { 2, 2, 2 })
  end)

  it('module: N(0, 1) weight with a zero padding row, state dict, repr, from_pretrained', function()
    torch.manual_seed(25)
    local m = nn.EmbeddingBag(2000, 8, { padding_idx = 3 })
    assert.are.same({ 2000, 8 }, { table.unpack(m.weight.shape) })
    H.assert_values(m.weight[3], { 0, 0, 0, 0, 0, 0, 0, 0 })
    local mean, std = m.weight:mean():item(), m.weight:std():item()
    assert.is_true(math.abs(mean) < 0.03 and math.abs(std - 1) < 0.03, mean .. ' ' .. std)
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({ 'weight' }, keys)
    assert.are.equal('EmbeddingBag(2000, 8, mode=mean, padding_idx=3)', tostring(m))
    assert.are.equal('EmbeddingBag(5, 2, mode=max)', tostring(nn.EmbeddingBag(5, 2, { mode = 'max' })))
    local w = torch.randn(4, 2, { dtype = f64 })
    local p = nn.EmbeddingBag.from_pretrained(w, { mode = 'sum' })
    assert.is_false(p.weight.requires_grad)
    H.assert_values(p(torch.tensor({ { 1, 4 } })), { { w[1][1] + w[4][1], w[1][2] + w[4][2] } }, 1e-12)
    H.assert_values(p(torch.tensor({ 1, 2, 3 }), torch.tensor({ 1, 2 }), torch.tensor({ 1.0, 2.0, 3.0 }, { dtype = f64 })),
      { { w[1][1], w[1][2] }, { 2 * w[2][1] + 3 * w[3][1], 2 * w[2][2] + 3 * w[3][2] } }, 1e-12)
  end)

  it('names bad input', function()
    local w = torch.randn(5, 2)
    local x = torch.tensor({ 1, 2, 3 })
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 0, 2 })) end, 'embedding_bag', 'offsets[1] has to be 1')
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 1, 3, 2 })) end, 'embedding_bag', 'non-decreasing')
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 1, 5 })) end, 'embedding_bag', 'offsets[-1]')
    H.raises(function() return F.embedding_bag(x, w) end, 'embedding_bag', 'offsets')
    H.raises(function() return F.embedding_bag(x:view(1, 3), w, torch.tensor({ 1 })) end, 'embedding_bag', '2-D')
    H.raises(function() return F.embedding_bag(torch.tensor({ 1, 6 }), w, torch.tensor({ 1 })) end, 'embedding_bag', 'out of range')
    H.raises(function() return F.embedding_bag(torch.tensor({ 0, 1 }), w, torch.tensor({ 1 })) end, 'embedding_bag', 'out of range')
    H.raises(function() return F.embedding_bag(torch.tensor({ 1.0 }), w, torch.tensor({ 1 })) end, 'embedding_bag', 'int64')
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 1 }), { mode = 'mean', per_sample_weights = torch.ones(3) }) end,
      'embedding_bag', "mode='sum'")
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 1 }), { mode = 'median' }) end, 'embedding_bag', 'mode')
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 1 }), { max_norm = '1' }) end, 'embedding_bag',
      'max_norm must be a number')
    H.raises(function() return F.embedding_bag(x, w, torch.tensor({ 1 }), { max_norm = 1, norm_type = 'l2' }) end,
      'embedding_bag', 'norm_type must be a number')
    H.raises(function() return nn.EmbeddingBag(5, 2, { max_norm = true }) end, 'EmbeddingBag', 'max_norm must be a number')
    H.raises(function() return nn.EmbeddingBag(5, 2, { padding_idx = 6 }) end, 'EmbeddingBag', 'padding_idx')
    H.raises(function() return nn.EmbeddingBag(5, 2, { mode = 'min' }) end, 'EmbeddingBag', 'mode')
    H.raises(function() return nn.EmbeddingBag(5, 2, { sparse = true }) end, 'EmbeddingBag', 'sparse')
  end)
end)

describe('Bilinear', function()
  it('F.bilinear against the reference, float32 and float64, non-contiguous inputs, leading dims', function()
    torch.manual_seed(26)
    for _, dt in ipairs { f64, torch.float32 } do
      local x1 = torch.randn(3, 2, 4, { dtype = dt }):transpose(1, 2) -- 2 x 3 x 4
      local x2 = torch.randn(2, 3, 5, { dtype = dt })
      local w, b = torch.randn(6, 4, 5, { dtype = dt }), torch.randn(6, { dtype = dt })
      local y = F.bilinear(x1, x2, w, b)
      assert.are.same({ 2, 3, 6 }, { table.unpack(y.shape) })
      local a, c, wt, bt, yt = x1:totable(), x2:totable(), w:totable(), b:totable(), y:totable()
      for i = 1, 2 do
        for j = 1, 3 do
          for k = 1, 6 do
            local s = bt[k]
            for p = 1, 4 do for q = 1, 5 do s = s + a[i][j][p] * wt[k][p][q] * c[i][j][q] end end
            H.close(yt[i][j][k], s, tol(dt) * 10)
          end
        end
      end
      H.assert_values(F.bilinear(x1[1][1], x2[1][1], w), (y[1][1] - b):totable(), tol(dt) * 10) -- 1-D inputs, no bias
    end
    assert.is_true(gradcheck(function(a, c, w, b) return F.bilinear(a, c, w, b) end,
      { leaf({ 3, 2 }), leaf({ 3, 4 }), leaf({ 2, 2, 4 }), leaf({ 2 }) }))
  end)

  it('module: weight out x in1 x in2 and bias from U(-1/sqrt(in1), 1/sqrt(in1)), state dict, repr, errors', function()
    torch.manual_seed(27)
    local m = nn.Bilinear(16, 3, 40)
    assert.are.same({ 40, 16, 3 }, { table.unpack(m.weight.shape) })
    assert.are.same({ 40 }, { table.unpack(m.bias.shape) })
    for _, p in ipairs { m.weight, m.bias } do
      assert.is_true(p:abs():max():item() <= 0.25)
      assert.is_true(p:abs():max():item() > 0.2) -- the draws fill the range
    end
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({ 'weight', 'bias' }, keys)
    assert.are.equal('Bilinear(in1_features=16, in2_features=3, out_features=40, bias=True)', tostring(m))
    local nb = nn.Bilinear(2, 3, 4, { bias = false, dtype = f64 })
    assert.is_nil(nb.bias)
    assert.are.equal(f64, nb.weight.dtype)
    local x1, x2 = torch.randn(5, 2, { dtype = f64 }), torch.randn(5, 3, { dtype = f64 })
    H.assert_values(nb(x1, x2), F.bilinear(x1, x2, nb.weight):totable(), 0)
    H.raises(function() return F.bilinear(torch.randn(5, 3), torch.randn(5, 3), torch.randn(4, 2, 3)) end, 'bilinear', 'weight')
    H.raises(function() return F.bilinear(torch.randn(5, 2), torch.randn(4, 3), torch.randn(4, 2, 3)) end, 'bilinear', 'leading')
    H.raises(function() return F.bilinear(torch.randn(5, 2), torch.randn(5, 3), torch.randn(4, 2, 3), torch.randn(3)) end,
      'bilinear', 'bias')
    H.raises(function() return nn.Bilinear(2, -1, 3) end, 'Bilinear', 'non-negative')
  end)
end)

describe('Softmax2d, ChannelShuffle and the Upsampling layers', function()
  it('Softmax2d is a softmax over the channels at each position', function()
    torch.manual_seed(28)
    local x = nc_randn(2, 3, 2, 4, f64)
    local y, xt = nn.Softmax2d()(x):totable(), x:totable()
    for n = 1, 2 do
      for i = 1, 2 do
        for j = 1, 4 do
          local s = 0
          for c = 1, 3 do s = s + math.exp(xt[n][c][i][j]) end
          for c = 1, 3 do H.close(y[n][c][i][j], math.exp(xt[n][c][i][j]) / s, 1e-12) end
        end
      end
    end
    H.assert_values(nn.Softmax2d()(x[1]), y[1], 1e-12)
    H.raises(function() return nn.Softmax2d()(torch.randn(2, 3)) end, 'Softmax2d', '3D or 4D')
  end)

  it('channel_shuffle moves channel (i - 1) k + j to (j - 1) g + i', function()
    local x = torch.randn(2, 6, 3, 2, { dtype = f64 })
    local y = F.channel_shuffle(x, 2)
    for c = 1, 6 do
      local i, j = (c - 1) // 3 + 1, (c - 1) % 3 + 1
      assert.is_true(y[{ {}, (j - 1) * 2 + i }]:equal(x[{ {}, c }]))
    end
    assert.is_true(nn.ChannelShuffle(2)(x):equal(y))
    assert.is_true(F.channel_shuffle(x:transpose(3, 4), 3):equal(F.channel_shuffle(x, 3):transpose(3, 4)))
    assert.are.equal('ChannelShuffle(groups=2)', tostring(nn.ChannelShuffle(2)))
    assert.is_true(gradcheck(function(a) return F.channel_shuffle(a, 2) end, { leaf({ 1, 4, 3 }) }))
    H.raises(function() return F.channel_shuffle(torch.randn(2, 4), 2) end, 'channel_shuffle', '> 2 dims')
    H.raises(function() return F.channel_shuffle(torch.randn(1, 6, 2), 4) end, 'channel_shuffle', 'divisible')
    H.raises(function() return nn.ChannelShuffle(0) end, 'ChannelShuffle', 'groups')
  end)

  it('UpsamplingNearest2d takes pixel floor(i in / out); UpsamplingBilinear2d interpolates with align_corners', function()
    torch.manual_seed(29)
    local x = torch.randn(1, 2, 3, 4, { dtype = f64 })
    local xt = x:totable()
    local y = nn.UpsamplingNearest2d({ 5, 7 })(x):totable()
    for c = 1, 2 do
      for i = 0, 4 do
        for j = 0, 6 do
          assert.are.equal(xt[1][c][i * 3 // 5 + 1][j * 4 // 7 + 1], y[1][c][i + 1][j + 1])
        end
      end
    end
    local b = nn.UpsamplingBilinear2d({ scale_factor = 2 })(x)
    assert.are.same({ 1, 2, 6, 8 }, { table.unpack(b.shape) })
    local bt = b:totable()
    for c = 1, 2 do
      for i = 0, 5 do
        for j = 0, 7 do
          local sy, sx = i * 2 / 5, j * 3 / 7
          local y0, x0 = math.min(math.floor(sy), 1), math.min(math.floor(sx), 2)
          local dy, dx = sy - y0, sx - x0
          local p = xt[1][c]
          local want = (1 - dy) * ((1 - dx) * p[y0 + 1][x0 + 1] + dx * p[y0 + 1][x0 + 2])
            + dy * ((1 - dx) * p[y0 + 2][x0 + 1] + dx * p[y0 + 2][x0 + 2])
          H.close(bt[1][c][i + 1][j + 1], want, 1e-12)
        end
      end
    end
    -- the corners are kept (align_corners)
    H.close(bt[1][2][6][8], xt[1][2][3][4], 1e-12)
    assert.are.equal('UpsamplingBilinear2d(scale_factor=2.0, mode=bilinear)', tostring(nn.UpsamplingBilinear2d(nil, 2)))
    assert.are.equal('UpsamplingNearest2d(size=3, mode=nearest)', tostring(nn.UpsamplingNearest2d(3)))
    H.raises(function() return nn.UpsamplingNearest2d() end, 'UpsamplingNearest2d', 'exactly one')
    H.raises(function() return nn.UpsamplingBilinear2d({ sizes = 2 }) end, 'UpsamplingBilinear2d', 'sizes')
  end)
end)

describe('alpha dropout, Dropout3d, RReLU and gumbel_softmax', function()
  local ALPHA = 1.7580993408473766

  it('alpha_dropout keeps a (x + alpha p) or gives -a alpha (1 - p), and keeps zero mean and unit variance', function()
    torch.manual_seed(30)
    local p = 0.3
    local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    local x = torch.randn(200000, { dtype = f64 })
    local y = F.alpha_dropout(x, p, true)
    local xt, yt = x:totable(), y:totable()
    local dropped = 0
    for i = 1, #xt, 97 do
      local kept = a * (xt[i] + ALPHA * p)
      if math.abs(yt[i] - kept) > 1e-12 then
        H.close(yt[i], -a * ALPHA * (1 - p), 1e-12)
        dropped = dropped + 1
      end
    end
    local frac = dropped / math.ceil(#xt / 97)
    assert.is_true(math.abs(frac - p) < 0.03, 'dropped ' .. frac)
    assert.is_true(math.abs(y:mean():item()) < 0.01 and math.abs(y:std():item() - 1) < 0.01)
    -- not training (F's default): x itself; p = 1: zeros; float32 works too
    assert.are.equal(x, F.alpha_dropout(x, 0.5))
    H.assert_values(F.alpha_dropout(torch.ones(3), 1, true), { 0, 0, 0 })
    assert.are.equal(torch.float32, F.alpha_dropout(torch.randn(4), 0.5, true).dtype)
    local m = nn.AlphaDropout(0.2)
    assert.are.equal('AlphaDropout(p=0.2, inplace=False)', tostring(m))
    m:eval()
    assert.are.equal(x, m(x))
    H.raises(function() return F.alpha_dropout(x, 1.5, true) end, 'alpha_dropout', 'between 0 and 1')
  end)

  it('feature_alpha_dropout and Dropout3d act on whole channels', function()
    torch.manual_seed(31)
    local p = 0.5
    local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    local x = torch.randn(4, 30, 2, 3, { dtype = f64 })
    local y = nn.FeatureAlphaDropout(p)(x)
    for n = 1, 4 do
      for c = 1, 30 do
        local kept = (x[n][c] + ALPHA * p) * a
        assert.is_true(y[n][c]:sub(kept):abs():max():item() < 1e-12 or y[n][c]:eq(-a * ALPHA * (1 - p)):all():item())
      end
    end
    H.raises(function() return F.feature_alpha_dropout(torch.randn(3), 0.5, true) end, 'feature_alpha_dropout', '2 dimensions')
    local x5 = torch.rand(3, 20, 2, 2, 2) + 1
    local y5 = nn.Dropout3d(0.25)(x5)
    local zeros = 0
    for n = 1, 3 do
      for c = 1, 20 do
        if y5[n][c]:eq(0):all():item() then zeros = zeros + 1 else H.assert_values(y5[n][c], (x5[n][c] / 0.75):totable(), 1e-6) end
      end
    end
    assert.is_true(zeros > 3 and zeros < 30, 'dropped ' .. zeros)
    assert.are.same({ 20, 2, 2, 2 }, { table.unpack(F.dropout3d(x5[1], 0.5).shape) }) -- unbatched 4-D input
    H.raises(function() return F.dropout3d(torch.randn(2, 3, 4), 0.5) end, 'dropout3d', '4-D')
    assert.are.equal('Dropout3d(p=0.25, inplace=False)', tostring(nn.Dropout3d(0.25)))
  end)

  it('RReLU: slopes from U(lower, upper) while training (and their gradient), their mean in eval mode', function()
    torch.manual_seed(32)
    local x = torch.randn(2000, { dtype = f64 }):requires_grad_()
    local m = nn.RReLU(0.1, 0.3)
    local y = m(x)
    y:sum():backward()
    local xt, yt, gt = x:totable(), y:totable(), x.grad:totable()
    local lo, hi = math.huge, -math.huge
    for i = 1, #xt do
      if xt[i] > 0 then
        assert.are.equal(xt[i], yt[i])
        assert.are.equal(1, gt[i])
      else
        local s = yt[i] / xt[i]
        assert.is_true(s >= 0.1 and s <= 0.3)
        H.close(gt[i], s, 1e-12)
        lo, hi = math.min(lo, s), math.max(hi, s)
      end
    end
    assert.is_true(lo < 0.11 and hi > 0.29)
    m:eval()
    local e = m(x):totable()
    for i = 1, #xt do H.close(e[i], xt[i] > 0 and xt[i] or 0.2 * xt[i], 1e-12) end
    H.assert_values(F.rrelu(torch.tensor({ -8.0, 2.0 })), { -8 * (1 / 8 + 1 / 3) / 2, 2 }, 1e-6)
    assert.are.equal('RReLU(lower=0.125, upper=0.3333333333333333)', tostring(nn.RReLU()))
    assert.are.equal('RReLU(lower=0.1, upper=0.3, inplace=True)', tostring(nn.RReLU({ lower = 0.1, upper = 0.3, inplace = true })))
    assert.is_true(gradcheck(function(a) return F.rrelu(a, 0.1, 0.4) end, { leaf({ 3, 4 }) }))
    H.raises(function() return nn.RReLU(0.5, 0.1) end, 'RReLU', 'Lower bound')
    H.raises(function() return F.rrelu(x, { lower = 0.1, slope = 2 }) end, 'rrelu', 'slope')
  end)

  it('gumbel_softmax: a softmax that samples the categories in proportion, hard one-hot with the soft gradient', function()
    torch.manual_seed(33)
    local probs = { 0.1, 0.2, 0.3, 0.4 }
    local logits = torch.tensor(probs, { dtype = f64 }):log():view(1, 4):expand(20000, 4)
    local y = F.gumbel_softmax(logits, { tau = 0.5 })
    H.assert_values(y:sum(2), torch.ones(20000):totable(), 1e-12)
    local hard = F.gumbel_softmax(logits, { hard = true })
    assert.is_true(hard:eq(0):logical_or(hard:eq(1)):all():item())
    H.assert_values(hard:sum(2), torch.ones(20000):totable(), 0)
    local freq = hard:mean(1):totable()
    for k = 1, 4 do assert.is_true(math.abs(freq[k] - probs[k]) < 0.015, 'category ' .. k .. ': ' .. freq[k]) end
    -- the same noise (same seed): the hard sample's gradient is the soft sample's
    local l = torch.randn(3, 5, { dtype = f64 })
    local c = torch.randn(3, 5, { dtype = f64 })
    local a, b = l:clone():requires_grad_(), l:clone():requires_grad_()
    torch.manual_seed(34)
    local ys = F.gumbel_softmax(a, 2.0, false, 1e-10, 1)
    torch.manual_seed(34)
    local yh = F.gumbel_softmax(b, { tau = 2.0, hard = true, dim = 1 })
    H.assert_values(ys:sum(1), { 1, 1, 1, 1, 1 }, 1e-12)
    local _, at = ys:max(1)
    assert.is_true(yh:argmax(1):equal(at))
    local ls, lh = (ys * c):sum(), (yh * c):sum()
    ls:backward()
    lh:backward()
    H.assert_values(b.grad, a.grad:totable(), 1e-12)
    H.raises(function() return F.gumbel_softmax(torch.tensor({ 1, 2 }), {}) end, 'gumbel_softmax', 'floating')
    H.raises(function() return F.gumbel_softmax(l, { temperature = 1 }) end, 'gumbel_softmax', 'temperature')
  end)
end)

describe('ParameterList and ParameterDict', function()
  it('ParameterList: 1-based indexing, append, extend, removal, conversion of tensors, state dict, repr', function()
    local a, b = nn.Parameter(torch.randn(2, 3)), torch.randn(3)
    local pl = nn.ParameterList({ a, b })
    assert.are.equal(2, #pl)
    assert.are.equal(a, pl[1])
    assert.is_true(nn.parameter.is_parameter(pl[2]) and pl[2].requires_grad)
    assert.is_true(pl[2]:equal(b))
    assert.are.equal(pl[2], pl[-1])
    pl:append(torch.zeros(4)):extend({ torch.ones(1), nn.Parameter(torch.ones(2, 2)) })
    assert.are.equal(5, #pl)
    local keys = {}
    for k in pairs(pl:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({ '1', '2', '3', '4', '5' }, keys)
    local n = 0
    for i, p in ipairs(pl) do n = n + 1; assert.are.equal(pl[i], p) end
    assert.are.equal(5, n)
    pl[2] = nil -- removes and renumbers
    assert.are.equal(4, #pl)
    assert.are.same({ 4 }, { table.unpack(pl[2].shape) })
    pl[1] = torch.ones(7)
    assert.are.same({ 7 }, { table.unpack(pl[1].shape) })
    assert.are.same({ 7 }, { table.unpack(pl:parameters()[1].shape) })
    assert.are.equal('ParameterList(\n    (1): Parameter containing: [torch.float32 of size 7]\n'
      .. '    (2): Parameter containing: [torch.float32 of size 4]\n'
      .. '    (3): Parameter containing: [torch.float32 of size 1]\n'
      .. '    (4): Parameter containing: [torch.float32 of size 2x2]\n)', tostring(pl))
    assert.are.equal('ParameterList()', tostring(nn.ParameterList()))
    H.raises(function() pl[9] = torch.ones(1) end, 'ParameterList', 'out of range')
    H.raises(function() pl:append(3) end, 'ParameterList.append', 'tensor')
    H.raises(function() nn.ParameterList({ torch.tensor({ 1, 2 }) }) end, 'floating point')
  end)

  it('a model with a ParameterList trains, loads its state dict and moves with to()', function()
    torch.manual_seed(35)
    local Net = nn.Module:extend('PLNet')
    function Net:init()
      self.ws = nn.ParameterList({ torch.randn(3, 3), torch.randn(3, 1) })
    end
    function Net:forward(x) return x:matmul(self.ws[1]):tanh():matmul(self.ws[2]) end
    local net = Net()
    local keys = {}
    for k in pairs(net:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({ 'ws.1', 'ws.2' }, keys)
    local x, t = torch.randn(16, 3), torch.randn(16, 1)
    local first, last = H.fit({ net }, 60, 0.05, function() return F.mse_loss(net(x), t) end)
    assert.is_true(last < first * 0.7, first .. ' -> ' .. last)
    local other = Net()
    other:load_state_dict(net:state_dict())
    assert.is_true(other.ws[2]:equal(net.ws[2]))
    other:double()
    assert.are.equal(f64, other.ws[1].dtype)
  end)

  it('ParameterDict: sorted or ordered insertion, set, remove, get, pop, update, state dict, repr', function()
    local pd = nn.ParameterDict({ b = torch.randn(2), a = nn.Parameter(torch.randn(1, 2)) })
    assert.are.same({ 'a', 'b' }, pd:keys())
    assert.are.equal(2, #pd)
    assert.is_true(nn.parameter.is_parameter(pd.b))
    pd.c = torch.zeros(3, { dtype = f64 })
    pd['b'] = nil
    assert.are.same({ 'a', 'c' }, pd:keys())
    local names = {}
    for k, p in pairs(pd) do names[#names + 1] = k; assert.are.equal(pd[k], p) end
    assert.are.same({ 'a', 'c' }, names)
    assert.are.equal(pd.c, pd:get('c'))
    assert.are.equal(42, pd:get('zz', 42))
    local ordered = nn.ParameterDict({ { 'z', torch.ones(1) }, { 'y', torch.ones(2) } })
    assert.are.same({ 'z', 'y' }, ordered:keys())
    pd:update(ordered)
    assert.are.same({ 'a', 'c', 'z', 'y' }, pd:keys())
    local keys = {}
    for k in pairs(pd:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({ 'a', 'c', 'z', 'y' }, keys)
    assert.are.equal(4, #pd:parameters())
    local z = pd:pop('z')
    assert.are.same({ 1 }, { table.unpack(z.shape) })
    assert.are.same({ 'a', 'c', 'y' }, pd:keys())
    assert.are.equal('ParameterDict(\n    (a): Parameter containing: [torch.FloatTensor of size 1x2]\n'
      .. '    (c): Parameter containing: [torch.DoubleTensor of size 3]\n'
      .. '    (y): Parameter containing: [torch.FloatTensor of size 2]\n)', tostring(pd))
    pd:clear()
    assert.are.equal(0, #pd)
    H.raises(function() pd.keys = torch.ones(1) end, "'keys' already exists")
    H.raises(function() pd:pop('nope') end, 'ParameterDict.pop', 'nope')
    H.raises(function() nn.ParameterDict({ a = 1 }) end, 'ParameterDict', 'tensor')
  end)
end)
