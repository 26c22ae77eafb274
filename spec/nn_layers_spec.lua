-- nn layers, losses, nn.init and nn.utils: forwards against plain-Lua references, default
-- initialisation bounds and moments with a seeded RNG, gradients by finite differences in float64,
-- BatchNorm's running statistics, Dropout in train/eval, Embedding's padding row, loss reductions,
-- clip_grad_norm_ against a hand computation. Specs of layers over torch._nn (conv, pooling,
-- softmax, batch/layer norm, NLL) need those kernels.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local F = nn.functional
local gradcheck = torch.autograd.gradcheck
local f64 = { dtype = torch.float64 }

local function assert_shape(x, dims)
  local got = {}
  for i = 1, x:dim() do got[i] = x:size(i) end
  assert.are.same(dims, got)
end

local function stats(t)
  local v = H.flatten(t:detach():double():totable())
  local s, s2, lo, hi = 0, 0, math.huge, -math.huge
  for _, x in ipairs(v) do
    s = s + x; s2 = s2 + x * x
    lo = math.min(lo, x); hi = math.max(hi, x)
  end
  local mean = s / #v
  return mean, s2 / #v - mean * mean, lo, hi
end

-- plain-Lua y = x W^T + b for 2-D tables
local function linear_ref(x, w, b)
  local y = {}
  for i = 1, #x do
    y[i] = {}
    for o = 1, #w do
      local s = b and b[o] or 0
      for k = 1, #x[i] do s = s + x[i][k] * w[o][k] end
      y[i][o] = s
    end
  end
  return y
end

-- plain-Lua 2-D convolution of one image [C][H][W] with weights [O][C/g][kh][kw]; pads are
-- {top, bottom, left, right}
local function conv_ref(x, w, b, stride, pads, dil, groups)
  local C, Hh, W = #x, #x[1], #x[1][1]
  local O, Cg, kh, kw = #w, #w[1], #w[1][1], #w[1][1][1]
  local Ho = (Hh + pads[1] + pads[2] - dil[1] * (kh - 1) - 1) // stride[1] + 1
  local Wo = (W + pads[3] + pads[4] - dil[2] * (kw - 1) - 1) // stride[2] + 1
  local og = O // groups
  local y = {}
  for o = 1, O do
    y[o] = {}
    local g = (o - 1) // og
    for i = 1, Ho do
      y[o][i] = {}
      for j = 1, Wo do
        local s = b and b[o] or 0
        for c = 1, Cg do
          for p = 1, kh do
            for q = 1, kw do
              local r = (i - 1) * stride[1] - pads[1] + (p - 1) * dil[1] + 1
              local col = (j - 1) * stride[2] - pads[3] + (q - 1) * dil[2] + 1
              if r >= 1 and r <= Hh and col >= 1 and col <= W then
                s = s + x[g * Cg + c][r][col] * w[o][c][p][q]
              end
            end
          end
        end
        y[o][i][j] = s
      end
    end
  end
  _ = C
  return y
end

describe('Linear', function()
  it('computes x W^T + b on contiguous and transposed inputs, with and without bias', function()
    torch.manual_seed(1)
    local m = nn.Linear(4, 3, f64)
    local x = torch.randn(5, 4, f64)
    H.assert_values(m(x), linear_ref(x:totable(), m.weight:detach():totable(), m.bias:detach():totable()), 1e-12)
    local xt = torch.randn(4, 5, f64):t()
    H.assert_values(m(xt), linear_ref(xt:totable(), m.weight:detach():totable(), m.bias:detach():totable()), 1e-12)
    local nb = nn.Linear(4, 3, { bias = false, dtype = torch.float64 })
    assert.is_nil(nb.bias)
    assert.are.equal(1, #nb:parameters())
    H.assert_values(nb(x), linear_ref(x:totable(), nb.weight:detach():totable()), 1e-12)
    -- a 3-D input applies to the last dimension
    local x3 = torch.randn(2, 5, 4, f64)
    assert.is_true(m(x3)[2]:allclose(m(x3[2])))
    H.raises(function() m(torch.randn(2, 5, f64)) end, 'linear')
    H.raises(function() nn.Linear(-1, 2) end, 'Linear: in_features and out_features must be non-negative integers')
  end)

  it('is initialised U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias', function()
    torch.manual_seed(2)
    local m = nn.Linear(100, 200)
    local bound = 1 / math.sqrt(100)
    local mean, var, lo, hi = stats(m.weight)
    assert.is_true(lo >= -bound and hi <= bound)
    assert.is_true(hi > 0.95 * bound and lo < -0.95 * bound)
    assert.is_true(math.abs(mean) < 0.01 * bound * 10)
    H.close(var, bound * bound / 3, 0.05)
    local _, _, blo, bhi = stats(m.bias)
    assert.is_true(blo >= -bound and bhi <= bound)
    assert.are.equal(torch.float32, m.weight.dtype)
    assert.is_true(m.weight.requires_grad and m.weight.is_leaf)
  end)

  it('passes gradients to its parameters (finite differences)', function()
    torch.manual_seed(3)
    local m = nn.Linear(3, 2, f64)
    local x = torch.randn(4, 3, f64):requires_grad_()
    assert.is_true(gradcheck(function(xx, w, b) return F.linear(xx, w, b) end, { x, m.weight, m.bias }))
    m(x):sum():backward()
    -- d(sum)/dW[o][k] = sum_i x[i][k]; d/db = batch size
    local colsum = x:detach():sum(1)
    for o = 1, 2 do H.assert_values(m.weight.grad[o], colsum:totable(), 1e-12) end
    H.assert_values(m.bias.grad, { 4, 4 }, 1e-12)
  end)
end)

describe('Conv2d', function()
  it('is initialised with bound 1/sqrt(fan_in) and has the right shapes', function()
    torch.manual_seed(4)
    local m = nn.Conv2d(4, 8, 3, { groups = 2 })
    assert_shape(m.weight, { 8, 2, 3, 3 })
    local bound = 1 / math.sqrt(2 * 9)
    local _, var, lo, hi = stats(m.weight)
    assert.is_true(lo >= -bound and hi <= bound)
    H.close(var, bound * bound / 3, 0.15)
    local _, _, blo, bhi = stats(m.bias)
    assert.is_true(blo >= -bound and bhi <= bound)
    assert.is_nil(nn.Conv2d(1, 1, 1, { bias = false }).bias)
  end)

  it('checks its arguments as PyTorch', function()
    H.raises(function() nn.Conv2d(3, 4, 3, { groups = 2 }) end, 'in_channels must be divisible by groups')
    H.raises(function() nn.Conv2d(4, 3, 3, { groups = 2 }) end, 'out_channels must be divisible by groups')
    H.raises(function() nn.Conv2d(1, 1, 3, { padding = 'full' }) end, "invalid padding string 'full'")
    H.raises(function() nn.Conv2d(1, 1, 3, { padding = 'same', stride = 2 }) end,
      "padding='same' is not supported for strided convolutions")
    H.raises(function() nn.Conv2d(1, 1, 3, { padding_mode = 'mirror' }) end, "padding_mode must be one of 'zeros', 'reflect'")
    H.raises(function() nn.Conv2d(1, 1, { 3 }) end, 'kernel_size must be an integer or a pair')
    H.raises(function() nn.Conv2d(0, 1, 3) end, 'in_channels and out_channels must be positive')
  end)

  it('matches a plain-Lua convolution (stride, padding, dilation, groups; needs torch._nn.conv2d)', function()
    torch.manual_seed(5)
    local m = nn.Conv2d(4, 6, { 3, 2 }, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = { 1, 2 }, groups = 2,
      dtype = torch.float64 })
    local x = torch.randn(2, 4, 7, 6, f64)
    local y = m(x)
    local w, b = m.weight:detach():totable(), m.bias:detach():totable()
    for n = 1, 2 do
      H.assert_values(y[n], conv_ref(x[n]:totable(), w, b, { 2, 1 }, { 1, 1, 2, 2 }, { 1, 2 }, 2), 1e-10)
    end
  end)

  it("padding 'same' keeps the size, with the extra row at the end for even kernels (needs torch._nn.conv2d)", function()
    torch.manual_seed(6)
    local m = nn.Conv2d(2, 3, { 4, 3 }, { padding = 'same', dtype = torch.float64 })
    local x = torch.randn(1, 2, 5, 6, f64)
    local y = m(x)
    assert_shape(y, { 1, 3, 5, 6 })
    -- total padding 3 rows: 1 on top, 2 below; 2 columns: 1 each side
    H.assert_values(y[1], conv_ref(x[1]:totable(), m.weight:detach():totable(), m.bias:detach():totable(), { 1, 1 },
      { 1, 2, 1, 1 }, { 1, 1 }, 1), 1e-10)
    local v = nn.Conv2d(2, 3, 3, { padding = 'valid', dtype = torch.float64 })
    assert_shape(v(x), { 1, 3, 3, 4 })
  end)

  it('passes gradients to weight and bias (needs torch._nn.conv2d)', function()
    torch.manual_seed(7)
    local m = nn.Conv2d(2, 2, 3, { padding = 1, dtype = torch.float64 })
    local x = torch.randn(1, 2, 3, 3, f64):requires_grad_()
    assert.is_true(gradcheck(function(xx, w, b) return F.conv2d(xx, w, b, { padding = 1 }) end,
      { x, m.weight, m.bias }))
    m(x):sum():backward()
    assert.is_not_nil(m.weight.grad)
    assert.is_not_nil(m.bias.grad)
    H.assert_values(m.bias.grad, { 9, 9 }, 1e-12)
  end)
end)

describe('pooling (needs torch._nn)', function()
  it('MaxPool2d and AvgPool2d match plain Lua', function()
    local x = torch.arange(0, 32, f64):view(1, 2, 4, 4)
    local mp = nn.MaxPool2d(2)(x)
    H.assert_values(mp, { { { { 5, 7 }, { 13, 15 } }, { { 21, 23 }, { 29, 31 } } } })
    local ap = nn.AvgPool2d(2)(x)
    H.assert_values(ap, { { { { 2.5, 4.5 }, { 10.5, 12.5 } }, { { 18.5, 20.5 }, { 26.5, 28.5 } } } }, 1e-12)
    local aap = nn.AdaptiveAvgPool2d(1)(x)
    H.assert_values(aap, { { { { 7.5 } }, { { 23.5 } } } }, 1e-12)
    local mp3 = nn.MaxPool2d(3, { stride = 1, padding = 1 })(x)
    assert_shape(mp3, { 1, 2, 4, 4 })
    assert.are.equal(5, mp3[1][1][1][1])
  end)
end)

describe('BatchNorm', function()
  it('has PyTorch\'s parameters and buffers', function()
    local bn = nn.BatchNorm2d(3)
    H.assert_values(bn.weight, { 1, 1, 1 })
    H.assert_values(bn.bias, { 0, 0, 0 })
    H.assert_values(bn.running_mean, { 0, 0, 0 })
    H.assert_values(bn.running_var, { 1, 1, 1 })
    assert.are.equal(torch.int64, bn.num_batches_tracked.dtype)
    assert.are.equal(0, bn.num_batches_tracked:dim())
    local keys = {}
    for k in pairs(bn:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({ 'weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked' }, keys)
    local na = nn.BatchNorm1d(3, { affine = false, track_running_stats = false })
    assert.are.equal(0, #na:parameters())
    assert.are.equal(0, #na:buffers())
  end)

  it('checks the input dimension', function()
    H.raises(function() nn.BatchNorm2d(3)(torch.randn(2, 3)) end, 'BatchNorm2d: expected 4D input (got 2D input)')
    H.raises(function() nn.BatchNorm1d(3)(torch.randn(2, 3, 4, 5)) end,
      'BatchNorm1d: expected 2D or 3D input (got 4D input)')
    H.raises(function() nn.BatchNorm1d(0) end, 'num_features must be a positive integer')
  end)

  it('normalises with batch statistics and updates running stats in training (needs torch._nn.batch_norm)', function()
    torch.manual_seed(8)
    local bn = nn.BatchNorm1d(2, f64)
    local x = torch.randn(5, 2, f64)
    local y = bn(x)
    local xs = x:totable()
    for c = 1, 2 do
      local s, s2 = 0, 0
      for i = 1, 5 do s = s + xs[i][c] end
      local mean = s / 5
      for i = 1, 5 do s2 = s2 + (xs[i][c] - mean) ^ 2 end
      local var_b, var_u = s2 / 5, s2 / 4
      for i = 1, 5 do H.close(y[i][c], (xs[i][c] - mean) / math.sqrt(var_b + 1e-5), 1e-9) end
      H.close(bn.running_mean[c], 0.1 * mean, 1e-12)
      H.close(bn.running_var[c], 0.9 + 0.1 * var_u, 1e-12)
    end
    assert.are.equal(1, bn.num_batches_tracked:item())
    -- eval uses the running statistics and changes nothing
    bn:eval()
    local rm = bn.running_mean:clone()
    local ye = bn(x)
    assert.is_true(bn.running_mean:equal(rm))
    assert.are.equal(1, bn.num_batches_tracked:item())
    H.close(ye[1][1], (x[1][1] - rm[1]) / math.sqrt(bn.running_var[1] + 1e-5), 1e-9)
  end)

  it('momentum = false keeps a cumulative average (needs torch._nn.batch_norm)', function()
    torch.manual_seed(9)
    local bn = nn.BatchNorm1d(1, { momentum = false, dtype = torch.float64 })
    local a, b = torch.randn(4, 1, f64), torch.randn(4, 1, f64)
    bn(a); bn(b)
    H.close(bn.running_mean[1], (a:mean():item() + b:mean():item()) / 2, 1e-12)
    assert.are.equal(2, bn.num_batches_tracked:item())
  end)
end)

describe('LayerNorm (needs torch._nn.layer_norm)', function()
  it('normalises over the last dims with weight and bias', function()
    torch.manual_seed(10)
    local ln = nn.LayerNorm(4, f64)
    assert_shape(ln.weight, { 4 })
    local x = torch.randn(3, 4, f64)
    local y = ln(x)
    for i = 1, 3 do
      local row = x[i]
      local mean = row:mean():item()
      local var = ((row - mean) ^ 2):mean():item()
      for j = 1, 4 do H.close(y[i][j], (row[j] - mean) / math.sqrt(var + 1e-5), 1e-9) end
    end
  end)
end)

describe('Dropout', function()
  it('is the identity in eval mode and zeroes about p of the elements in training, scaling the rest', function()
    torch.manual_seed(11)
    local d = nn.Dropout(0.3)
    local x = torch.ones(10000)
    local y = d(x)
    local zeros = y:eq(0):sum():item()
    assert.is_true(math.abs(zeros / 10000 - 0.3) < 0.02)
    local kept = y:masked_select(y:ne(0))
    H.close(kept:min():item(), 1 / 0.7, 1e-6)
    H.close(kept:max():item(), 1 / 0.7, 1e-6)
    d:eval()
    assert.is_true(d(x):equal(x))
    assert.are.equal(0, nn.Dropout(1.0)(x):abs():sum():item())
    assert.is_true(nn.Dropout(0.0)(x):equal(x))
    H.raises(function() nn.Dropout(1.5) end, 'dropout probability has to be between 0 and 1, but got 1.5')
  end)

  it('passes gradients only through kept elements', function()
    torch.manual_seed(12)
    local x = torch.ones(100, f64):requires_grad_()
    local y = nn.Dropout(0.5)(x)
    y:sum():backward()
    assert.is_true(x.grad:equal(y:detach()))
  end)
end)

describe('Embedding', function()
  it('is N(0, 1), looks up 1-based rows and zeroes the padding row', function()
    torch.manual_seed(13)
    local e = nn.Embedding(2000, 10)
    local mean, var = stats(e.weight)
    assert.is_true(math.abs(mean) < 0.02)
    H.close(var, 1, 0.03)
    local idx = torch.tensor({ { 1, 5 }, { 2000, 5 } })
    local y = e(idx)
    assert_shape(y, { 2, 2, 10 })
    assert.is_true(y[1][2]:equal(e.weight[5]))
    assert.is_true(y[2][1]:equal(e.weight[2000]))
    local p = nn.Embedding(5, 3, { padding_idx = 2 })
    assert.are.equal(0, p.weight[2]:abs():sum():item())
    H.raises(function() e(torch.tensor({ 0 })) end, 'out of range')
    H.raises(function() nn.Embedding(5, 3, { padding_idx = 6 }) end, 'padding_idx must be within num_embeddings')
    H.raises(function() nn.Embedding(5, 3, { padding_idx = 0 }) end, 'padding_idx must be within num_embeddings')
    assert.are.equal(5, nn.Embedding(5, 3, { padding_idx = -1 }).padding_idx)
  end)

  it('gives the padding row no gradient and counts the other rows', function()
    torch.manual_seed(14)
    local e = nn.Embedding(4, 2, { padding_idx = 3, dtype = torch.float64 })
    local y = e(torch.tensor({ 1, 3, 1, 4, 3 }))
    y:sum():backward()
    H.assert_values(e.weight.grad, { { 2, 2 }, { 0, 0 }, { 0, 0 }, { 1, 1 } })
  end)

  it('from_pretrained freezes by default', function()
    local w = torch.randn(3, 2)
    local e = nn.Embedding.from_pretrained(w)
    assert.is_false(e.weight.requires_grad)
    assert.is_true(e.weight:equal(w))
    assert.is_true(nn.Embedding.from_pretrained(w, { freeze = false }).weight.requires_grad)
  end)
end)

describe('activations', function()
  it('ReLU, GELU, Tanh, Sigmoid match their formulas', function()
    local vals = { -2.5, -0.5, 0, 0.3, 1.7 }
    local x = torch.tensor(vals, f64)
    local function each(fn) local o = {}; for i, v in ipairs(vals) do o[i] = fn(v) end; return o end
    H.assert_values(nn.ReLU()(x), each(function(v) return math.max(v, 0) end))
    H.assert_values(nn.Tanh()(x), each(function(v) return (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1) end), 1e-12)
    H.assert_values(nn.Sigmoid()(x), each(function(v) return 1 / (1 + math.exp(-v)) end), 1e-12)
    H.assert_values(nn.GELU({ approximate = 'tanh' })(x), each(function(v)
      return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ^ 3)))
    end), 1e-12)
    -- exact GELU: x * Phi(x); Phi from the erf of the tensor library on a float64 reference
    local phi = (x / math.sqrt(2)):erf() * 0.5 + 0.5
    assert.is_true(nn.GELU()(x):allclose(x * phi, { rtol = 1e-12, atol = 1e-14 }))
    local y = x:clone()
    nn.ReLU({ inplace = true })(y)
    H.assert_values(y, each(function(v) return math.max(v, 0) end))
    H.raises(function() nn.GELU({ approximate = 'erf' }) end, "approximate must be 'none' or 'tanh'")
  end)

  it('Softmax and LogSoftmax along a 1-based dim (needs torch._nn.softmax)', function()
    local x = torch.tensor({ { 1, 2, 3 }, { 0, 0, 0 } }, f64)
    local y = nn.Softmax(2)(x)
    local z = math.exp(1) + math.exp(2) + math.exp(3)
    H.assert_values(y[1], { math.exp(1) / z, math.exp(2) / z, math.exp(3) / z }, 1e-12)
    H.assert_values(y[2], { 1 / 3, 1 / 3, 1 / 3 }, 1e-12)
    H.assert_values(nn.LogSoftmax(2)(x)[1], { 1 - math.log(z), 2 - math.log(z), 3 - math.log(z) }, 1e-12)
    assert.is_true(nn.Softmax()(x):allclose(y)) -- PyTorch's implicit dim for 2-D input
  end)
end)

describe('Flatten and Identity', function()
  it('flatten dims 2..-1 by default, or the given 1-based range', function()
    local x = torch.randn(2, 3, 4, 5)
    assert_shape(nn.Flatten()(x), { 2, 60 })
    assert_shape(nn.Flatten(1, 2)(x), { 6, 4, 5 })
    assert_shape(nn.Flatten({ start_dim = 3 })(x), { 2, 3, 20 })
    assert.is_true(nn.Flatten()(x):equal(x:reshape(2, 60)))
    assert.are.equal(x, nn.Identity(3, { a = 1 })(x))
  end)
end)

describe('losses', function()
  local x = torch.tensor({ { 0.5, -1.0 }, { 2.0, 0.25 } }, f64)
  local y = torch.tensor({ { 1.0, 0.0 }, { 0.0, 1.0 } }, f64)
  local xv, yv = H.flatten(x:totable()), H.flatten(y:totable())

  local function reduce_ref(fn)
    local s, none = 0, {}
    for i = 1, #xv do none[i] = fn(xv[i], yv[i]); s = s + none[i] end
    return s / #xv, s, none
  end

  it('MSELoss and L1Loss with each reduction', function()
    for _, c in ipairs { { nn.MSELoss, function(a, b) return (a - b) ^ 2 end },
      { nn.L1Loss, function(a, b) return math.abs(a - b) end } } do
      local mean, sum, none = reduce_ref(c[2])
      H.close(c[1]()(x, y):item(), mean, 1e-12)
      H.close(c[1]({ reduction = 'sum' })(x, y):item(), sum, 1e-12)
      H.assert_values(c[1]({ reduction = 'none' })(x, y), none, 1e-12)
    end
    H.raises(function() nn.MSELoss({ reduction = 'avg' }) end, "reduction must be 'mean', 'sum' or 'none'")
  end)

  it('BCEWithLogitsLoss with weight and pos_weight', function()
    local function bce(a, b, pw)
      local s = 1 / (1 + math.exp(-a))
      return -((pw or 1) * b * math.log(s) + (1 - b) * math.log(1 - s))
    end
    local mean, sum = reduce_ref(bce)
    H.close(nn.BCEWithLogitsLoss()(x, y):item(), mean, 1e-12)
    H.close(nn.BCEWithLogitsLoss({ reduction = 'sum' })(x, y):item(), sum, 1e-12)
    local pw = torch.tensor({ 2.0, 3.0 }, f64)
    local m = nn.BCEWithLogitsLoss({ pos_weight = pw })
    local s = 0
    for i = 1, 2 do for j = 1, 2 do s = s + bce(x[i][j], y[i][j], pw[j]) end end
    H.close(m(x, y):item(), s / 4, 1e-12)
    assert.are.equal(pw, m.pos_weight) -- a buffer
    assert.are.equal(1, #m:buffers())
  end)

  it('losses pass gradients (finite differences)', function()
    local xr = x:clone():requires_grad_()
    assert.is_true(gradcheck(function(a) return nn.MSELoss()(a, y) end, { xr }))
    assert.is_true(gradcheck(function(a) return nn.BCEWithLogitsLoss()(a, y) end, { xr }))
  end)

  it('CrossEntropyLoss and NLLLoss with 1-based targets (needs torch._nn)', function()
    local logits = torch.tensor({ { 1.0, 2.0, 0.5 }, { 0.1, 0.2, 3.0 } }, f64)
    local target = torch.tensor({ 2, 3 })
    local function lse(r) local s = 0; for _, v in ipairs(r) do s = s + math.exp(v) end; return math.log(s) end
    local l = logits:totable()
    local l1, l2 = lse(l[1]) - l[1][2], lse(l[2]) - l[2][3]
    H.close(nn.CrossEntropyLoss()(logits, target):item(), (l1 + l2) / 2, 1e-12)
    H.close(nn.CrossEntropyLoss({ reduction = 'sum' })(logits, target):item(), l1 + l2, 1e-12)
    H.close(nn.NLLLoss()(nn.LogSoftmax(2)(logits), target):item(), (l1 + l2) / 2, 1e-12)
    -- label smoothing eps: (1 - eps) nll + eps/C * sum_c -logp_c
    local eps = 0.1
    local smooth = 0
    for i = 1, 2 do for c = 1, 3 do smooth = smooth + (lse(l[i]) - l[i][c]) end end
    H.close(nn.CrossEntropyLoss({ label_smoothing = eps })(logits, target):item(),
      (1 - eps) * (l1 + l2) / 2 + eps / 3 * smooth / 2, 1e-12)
    H.close(nn.CrossEntropyLoss({ ignore_index = 3 })(logits, target):item(), l1, 1e-12)
    H.raises(function() nn.CrossEntropyLoss({ label_smoothing = 2 }) end, 'label_smoothing must be between 0.0 and 1.0')
  end)
end)

describe('nn.init', function()
  it('calculate_gain gives PyTorch\'s values', function()
    local g = nn.init.calculate_gain
    assert.are.equal(1, g('linear'))
    assert.are.equal(1, g('conv2d'))
    assert.are.equal(1, g('sigmoid'))
    H.close(g('tanh'), 5 / 3, 1e-15)
    H.close(g('relu'), math.sqrt(2), 1e-15)
    H.close(g('leaky_relu'), math.sqrt(2 / (1 + 0.01 ^ 2)), 1e-15)
    H.close(g('leaky_relu', math.sqrt(5)), math.sqrt(2 / 6), 1e-15)
    assert.are.equal(0.75, g('selu'))
    H.raises(function() g('swish') end, 'unsupported nonlinearity swish')
    H.raises(function() g('leaky_relu', 'x') end, 'not a valid number')
  end)

  it('fills with constants, eye and dirac, returning the tensor', function()
    local t = torch.empty(2, 3)
    assert.are.equal(t, nn.init.constant_(t, 0.5))
    H.assert_values(t, { { 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 } })
    nn.init.ones_(t); assert.are.equal(6, t:sum():item())
    nn.init.zeros_(t); assert.are.equal(0, t:abs():sum():item())
    nn.init.eye_(t); H.assert_values(t, { { 1, 0, 0 }, { 0, 1, 0 } })
    H.raises(function() nn.init.eye_(torch.empty(2, 2, 2)) end, 'only tensors with 2 dimensions')
    local c = torch.empty(2, 2, 3, 3)
    nn.init.dirac_(c)
    assert.are.equal(1, c[1][1][2][2])
    assert.are.equal(1, c[2][2][2][2])
    assert.are.equal(2, c:sum():item())
    -- a parameter that requires grad is filled under no_grad
    local p = nn.Parameter(torch.empty(3))
    nn.init.normal_(p, 0, 1)
    assert.is_true(p.is_leaf)
    assert.is_nil(p.grad_fn)
  end)

  it('uniform_, normal_, xavier_* and kaiming_* have the right bounds and moments', function()
    torch.manual_seed(15)
    local t = torch.empty(300, 200)
    nn.init.uniform_(t, -2, 3)
    local mean, var, lo, hi = stats(t)
    assert.is_true(lo >= -2 and hi <= 3)
    H.close(mean, 0.5, 0.02); H.close(var, 25 / 12, 0.02)
    nn.init.normal_(t, 1, 2)
    mean, var = stats(t)
    H.close(mean, 1, 0.02); H.close(var, 4, 0.02)
    nn.init.xavier_uniform_(t, 2)
    local a = 2 * math.sqrt(6 / 500)
    mean, var, lo, hi = stats(t)
    assert.is_true(lo >= -a and hi <= a and hi > 0.99 * a)
    H.close(var, a * a / 3, 0.02)
    nn.init.xavier_normal_(t)
    _, var = stats(t)
    H.close(var, 2 / 500, 0.02)
    nn.init.kaiming_uniform_(t, { a = 0, mode = 'fan_in', nonlinearity = 'relu' })
    local bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(200)
    _, var, lo, hi = stats(t)
    assert.is_true(lo >= -bound and hi <= bound)
    H.close(var, bound * bound / 3, 0.02)
    nn.init.kaiming_normal_(t, 0, 'fan_out', 'relu')
    _, var = stats(t)
    H.close(var, 2 / 300, 0.02)
    local c = torch.empty(16, 8, 3, 3)
    local fi, fo = nn.init._calculate_fan_in_and_fan_out(c)
    assert.are.equal(72, fi); assert.are.equal(144, fo)
    H.raises(function() nn.init.xavier_uniform_(torch.empty(5)) end, 'fewer than 2 dimensions')
    H.raises(function() nn.init.kaiming_uniform_(t, { mode = 'fan_avg' }) end, 'mode fan_avg not supported')
  end)

  it('trunc_normal_ stays within [a, b] and orthogonal_ gives orthonormal rows', function()
    torch.manual_seed(16)
    local t = torch.empty(20000)
    nn.init.trunc_normal_(t, 0, 1, -1, 1.5)
    local mean, _, lo, hi = stats(t)
    assert.is_true(lo >= -1 and hi <= 1.5)
    -- mean of N(0,1) truncated to [a, b]: (phi(a) - phi(b)) / (Phi(b) - Phi(a))
    local function phi(v) return math.exp(-v * v / 2) / math.sqrt(2 * math.pi) end
    local Phi = function(v) return 0.5 * (1 + torch.tensor(v / math.sqrt(2), f64):erf():item()) end
    H.close(mean, (phi(-1) - phi(1.5)) / (Phi(1.5) - Phi(-1)), 0.03)
    local w = torch.empty(3, 5, f64)
    nn.init.orthogonal_(w, 2)
    assert.is_true(torch.matmul(w, w:t()):allclose(torch.eye(3, f64) * 4, { atol = 1e-10 }))
    local tall = torch.empty(6, 2, f64)
    nn.init.orthogonal_(tall)
    assert.is_true(torch.matmul(tall:t(), tall):allclose(torch.eye(2, f64), { atol = 1e-10 }))
  end)
end)

describe('nn.utils', function()
  local function with_grads(g1, g2)
    local a = nn.Parameter(torch.zeros(#g1, f64))
    local b = nn.Parameter(torch.zeros(#g2, f64))
    a.grad = torch.tensor(g1, f64)
    b.grad = torch.tensor(g2, f64)
    return a, b
  end

  it('clip_grad_norm_ scales by max_norm / (total + 1e-6) and returns the total norm', function()
    local a, b = with_grads({ 3, 4 }, { 12 })
    local total = nn.utils.clip_grad_norm_({ a, b }, 1.0)
    H.close(total:item(), 13, 1e-12)
    local coef = 1.0 / (13 + 1e-6)
    H.assert_values(a.grad, { 3 * coef, 4 * coef }, 1e-12)
    H.assert_values(b.grad, { 12 * coef }, 1e-12)
    -- below max_norm: unchanged (coefficient clamped to 1)
    a, b = with_grads({ 0.3, 0.4 }, { 0 })
    H.close(nn.utils.clip_grad_norm_({ a, b }, 1.0):item(), 0.5, 1e-12)
    H.assert_values(a.grad, { 0.3, 0.4 }, 1e-15)
    -- inf and 1 norms; a single tensor; parameters without grad are skipped
    a, b = with_grads({ 3, -4 }, { 2 })
    H.close(nn.utils.clip_grad_norm_({ a, b }, 2.0, { norm_type = math.huge }):item(), 4, 1e-12)
    H.assert_values(a.grad, { 3 * 2 / (4 + 1e-6), -4 * 2 / (4 + 1e-6) }, 1e-12)
    a, b = with_grads({ 3, -4 }, { 2 })
    H.close(nn.utils.clip_grad_norm_({ a, b }, 100, { norm_type = 1 }):item(), 9, 1e-12)
    local c = nn.Parameter(torch.zeros(2))
    H.close(nn.utils.clip_grad_norm_(c, 1.0):item(), 0, 0)
    a, b = with_grads({ 0.0 / 0.0, 1 }, { 1 })
    H.raises(function() nn.utils.clip_grad_norm_({ a, b }, 1, { error_if_nonfinite = true }) end, 'non-finite')
    H.raises(function() nn.utils.clip_grad_norm_({ a, 3 }, 1) end, 'element 2 is a number')
  end)

  it('clip_grad_value_ clamps every gradient', function()
    local a, b = with_grads({ -3, 0.5 }, { 2 })
    nn.utils.clip_grad_value_({ a, b }, 1)
    H.assert_values(a.grad, { -1, 0.5 })
    H.assert_values(b.grad, { 1 })
  end)

  it('parameters_to_vector and vector_to_parameters round-trip, sharing the vector', function()
    local m = nn.Linear(3, 2, f64)
    local v = nn.utils.parameters_to_vector(m:parameters())
    assert.are.equal(8, v:numel())
    H.assert_values(v:narrow(1, 1, 6), H.flatten(m.weight:detach():totable()), 0)
    local w = torch.arange(0, 8, f64)
    local weight = m.weight
    nn.utils.vector_to_parameters(w, m:parameters())
    assert.are.equal(weight, m.weight)
    H.assert_values(m.weight, { { 0, 1, 2 }, { 3, 4, 5 } })
    H.assert_values(m.bias, { 6, 7 })
    w[1] = 42
    assert.are.equal(42, m.weight[1][1])
    H.raises(function() nn.utils.vector_to_parameters(torch.zeros(3, f64), m:parameters()) end,
      'vec has 3 elements, the parameters 8')
  end)
end)

describe('more losses (values against PyTorch in nn_parity_spec)', function()
  local nn, F = torch.nn, torch.nn.functional
  it('modules run their functions with their options, and print as PyTorch', function()
    torch.manual_seed(11)
    local x, y = torch.rand(4, 3), torch.rand(4, 3)
    local lx, lt = F.log_softmax(torch.randn(4, 3), 2), F.softmax(torch.randn(4, 3), 2)
    local pm = torch.tensor({ 1, -1, 1, -1 }):float()
    local cases = {
      { nn.BCELoss(), F.binary_cross_entropy(x, y), x, y, 'BCELoss()' },
      { nn.BCELoss({ weight = y, reduction = 'sum' }), F.binary_cross_entropy(x, y, { weight = y, reduction = 'sum' }), x, y },
      { nn.SmoothL1Loss({ beta = 0.2 }), F.smooth_l1_loss(x, y, { beta = 0.2 }), x, y, 'SmoothL1Loss()' },
      { nn.HuberLoss({ delta = 0.3, reduction = 'none' }), F.huber_loss(x, y, { delta = 0.3, reduction = 'none' }), x, y, 'HuberLoss()' },
      { nn.KLDivLoss({ reduction = 'batchmean' }), F.kl_div(lx, lt, { reduction = 'batchmean' }), lx, lt, 'KLDivLoss()' },
      { nn.SoftMarginLoss(), F.soft_margin_loss(x:select(2, 1), pm), x:select(2, 1), pm, 'SoftMarginLoss()' },
    }
    for i, c in ipairs(cases) do
      assert.is_true(torch.equal(c[1](c[3], c[4]), c[2]), 'case ' .. i)
      if c[5] then assert.are.equal(c[5], tostring(c[1])) end
    end
    local mr = nn.MarginRankingLoss({ margin = 0.1 })
    assert.is_true(torch.equal(mr(x:select(2, 1), x:select(2, 2), pm), F.margin_ranking_loss(x:select(2, 1), x:select(2, 2), pm, { margin = 0.1 })))
  end)
  it('give the documented values', function()
    local x, y = torch.tensor({ 0.5, 2.0, -1.0 }), torch.tensor({ 0.0, 0.0, 0.0 })
    H.assert_values(F.smooth_l1_loss(x, y, { reduction = 'none' }), { 0.125, 1.5, 0.5 }, 1e-7)
    H.assert_values(F.huber_loss(x, y, { delta = 0.5, reduction = 'none' }), { 0.125, 0.875, 0.375 }, 1e-7)
    H.close(F.binary_cross_entropy(torch.tensor({ 0.25 }), torch.tensor({ 1.0 })):item(), math.log(4), 1e-6)
    -- a certain wrong prediction costs 100 (the clamp), not inf
    H.close(F.binary_cross_entropy(torch.tensor({ 0.0 }), torch.tensor({ 1.0 })):item(), 100, 0)
    -- KL(p || p) = 0; 0 log 0 counts as 0
    local p = torch.tensor({ { 0.0, 0.25, 0.75 } })
    H.close(F.kl_div(torch.where(p:gt(0), p, 1):log(), p, { reduction = 'sum' }):item(), 0, 1e-7)
  end)
  it('name bad arguments', function()
    H.raises(function() F.binary_cross_entropy(torch.tensor({ 1.5 }), torch.tensor({ 1.0 })) end,
      'binary_cross_entropy: all elements of input should be between 0 and 1')
    H.raises(function() F.binary_cross_entropy(torch.ones(2), torch.ones(3)) end, 'binary_cross_entropy: input of shape')
    H.raises(function() F.smooth_l1_loss(torch.ones(2), torch.ones(2), { beta = -1 }) end, 'beta must be a non-negative number')
    H.raises(function() F.huber_loss(torch.ones(2), torch.ones(2), { delta = 0 }) end, 'delta must be a positive number')
    H.raises(function() F.kl_div(torch.ones(2), torch.ones(2), { reduction = 'avg' }) end, "kl_div: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.BCELoss({ reduction = 'max' }) end, "BCELoss: reduction must be 'mean', 'sum' or 'none'")
  end)
end)

describe('Conv1d, 1-D pooling, GroupNorm and padding modes (values against PyTorch in nn_parity_spec)', function()
  local nn, F = torch.nn, torch.nn.functional
  it('print as PyTorch and have its shapes and initialisation bounds', function()
    local c = nn.Conv1d(4, 6, 3, { stride = 2, padding = 1, groups = 2, bias = false, padding_mode = 'reflect' })
    assert.are.equal('Conv1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), groups=2, bias=False, padding_mode=reflect)',
      tostring(c))
    assert.are.same({ 6, 2, 3 }, { table.unpack(c.weight.shape) })
    local bound = 1 / math.sqrt(2 * 3)
    assert.is_true(c.weight:abs():max():item() <= bound)
    assert.are.equal('Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=same, padding_mode=circular)',
      tostring(nn.Conv2d(1, 2, 3, { padding = 'same', padding_mode = 'circular' })))
    assert.are.equal('MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)', tostring(nn.MaxPool1d(2)))
    assert.are.equal('AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))', tostring(nn.AvgPool1d(3, { stride = 2, padding = 1 })))
    assert.are.equal('AdaptiveAvgPool1d(output_size=5)', tostring(nn.AdaptiveAvgPool1d(5)))
    assert.are.equal('GroupNorm(2, 6, eps=1e-05, affine=True)', tostring(nn.GroupNorm(2, 6)))
    local g = nn.GroupNorm(3, 6, { affine = false })
    assert.are.equal(0, #g:parameters())
  end)
  it('run their functions on batched and unbatched inputs', function()
    torch.manual_seed(12)
    local x = torch.randn(2, 4, 9)
    local c = nn.Conv1d(4, 6, 3, { padding = 1 })
    assert.is_true(torch.equal(c(x), F.conv1d(x, c.weight, c.bias, { padding = 1 })))
    assert.are.same({ 6, 9 }, { table.unpack(c(x[1]).shape) })
    H.assert_values(c(x[1]), c(x)[1]:totable(), 1e-6)
    assert.is_true(torch.equal(nn.MaxPool1d(2)(x), F.max_pool1d(x, 2)))
    assert.is_true(torch.equal(nn.AvgPool1d(3, { stride = 2 })(x), F.avg_pool1d(x, 3, { stride = 2 })))
    assert.are.same({ 2, 4, 3 }, { table.unpack(nn.AdaptiveAvgPool1d(3)(x).shape) })
    local gn = nn.GroupNorm(2, 4)
    local y = gn(x)
    -- each group of two channels has mean 0 and (biased) variance 1
    local grp = y:reshape(2, 2, -1)
    H.assert_values(grp:mean(3), { { 0, 0 }, { 0, 0 } }, 1e-5)
    H.assert_values(grp:var(3, false, { unbiased = false }), { { 1, 1 }, { 1, 1 } }, 1e-3)
    -- a model of them trains
    torch.manual_seed(2)
    local model = nn.Sequential(nn.Conv1d(1, 4, 3, { padding = 'same', padding_mode = 'replicate' }), nn.GroupNorm(2, 4),
      nn.ReLU(), nn.MaxPool1d(2), nn.Flatten(), nn.Linear(32, 1))
    local inp = torch.randn(16, 1, 16)
    local target = inp:mean(3)
    local first, last = H.fit({ model }, 100, 0.02, function() return F.mse_loss(model(inp), target) end)
    assert(last < first / 3, first .. ' -> ' .. last)
  end)
  it('name bad arguments', function()
    H.raises(function() nn.Conv1d(2, 2, { 3, 3 }) end, 'Conv1d: kernel_size must be an integer or a 1-tuple')
    H.raises(function() nn.Conv1d(2, 2, 3, { padding = 'same', stride = 2 }) end, "padding='same' is not supported for strided")
    H.raises(function() F.conv1d(torch.ones(2, 3, 4, 5), torch.ones(1, 3, 2)) end, 'conv1d: expected a 2-D (unbatched) or 3-D')
    H.raises(function() F.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 3, 3), nil, { padding = 'full' }) end,
      "conv2d: invalid padding string 'full'")
    H.raises(function() F.max_pool1d(torch.ones(4), 2) end, 'max_pool1d: expected a 2-D (unbatched) or 3-D')
    H.raises(function() nn.GroupNorm(4, 6) end, 'GroupNorm: num_channels must be divisible by num_groups')
    H.raises(function() F.group_norm(torch.ones(2, 6, 3), 4) end, 'Expected number of channels in input (6) to be divisible by num_groups')
    H.raises(function() nn.AvgPool1d({ 2, 2 }) end, 'AvgPool1d: kernel_size must be an integer or a 1-tuple')
  end)
end)

describe('ConvTranspose1d/2d and Upsample (values against PyTorch in nn_parity_spec)', function()
  local nn, F = torch.nn, torch.nn.functional
  it("print as PyTorch's and invert a strided convolution's shape", function()
    assert.are.equal('ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1))',
      tostring(nn.ConvTranspose2d(4, 2, 3, { stride = 2, padding = 1, output_padding = 1 })))
    assert.are.equal('ConvTranspose1d(4, 6, kernel_size=(3,), stride=(1,), groups=2, bias=False)',
      tostring(nn.ConvTranspose1d(4, 6, 3, { groups = 2, bias = false })))
    assert.are.equal('Upsample(scale_factor=2.0, mode=nearest)', tostring(nn.Upsample({ scale_factor = 2 })))
    assert.are.equal('Upsample(size=(4, 5), mode=bilinear)', tostring(nn.Upsample({ size = { 4, 5 }, mode = 'bilinear' })))
    local down = nn.Conv2d(3, 8, 4, { stride = 2, padding = 1 })
    local up = nn.ConvTranspose2d(8, 3, 4, { stride = 2, padding = 1 })
    local x = torch.randn(2, 3, 16, 12)
    assert.are.same({ 2, 3, 16, 12 }, { table.unpack(up(down(x)).shape) })
    assert.are.same({ 2, 3, 32, 24 }, { table.unpack(nn.Upsample({ scale_factor = 2, mode = 'bilinear' })(x).shape) })
    assert.are.same({ 3, 8 }, { table.unpack(nn.ConvTranspose1d(2, 3, 4, { stride = 2 })(torch.randn(2, 3)).shape) })
  end)
  it('is the adjoint of conv2d: <conv(x), y> = <x, conv_transpose(y)>', function()
    torch.manual_seed(6)
    local x, w = torch.randn(2, 4, 9, 8, { dtype = torch.float64 }), torch.randn(6, 2, 3, 3, { dtype = torch.float64 })
    local o = { stride = 2, padding = 1, groups = 2, dilation = 1 }
    local y = F.conv2d(x, w, nil, o)
    local r = torch.randn(y.shape, { dtype = torch.float64 })
    -- output_padding recovers the width the stride dropped (8 -> 4 -> 7 + 1)
    local back = F.conv_transpose2d(r, w, nil, { stride = 2, padding = 1, groups = 2, output_padding = { 0, 1 } })
    assert.are.same({ 2, 4, 9, 8 }, { table.unpack(back.shape) })
    H.close((y * r):sum():item(), (x * back):sum():item(), 1e-10)
  end)
  it('an autoencoder of them learns', function()
    torch.manual_seed(7)
    local model = nn.Sequential(nn.Conv2d(1, 4, 4, { stride = 2, padding = 1 }), nn.ReLU(),
      nn.ConvTranspose2d(4, 1, 4, { stride = 2, padding = 1 }))
    local x = torch.rand(8, 1, 8, 8)
    local first, last = H.fit({ model }, 150, 0.01, function() return F.mse_loss(model(x), x) end)
    assert(last < first / 5, first .. ' -> ' .. last)
  end)
  it('name bad arguments', function()
    H.raises(function() nn.ConvTranspose2d(4, 2, 3, { output_padding = 2, stride = 2 }) end,
      'output padding must be smaller than either stride or dilation')
    H.raises(function() nn.ConvTranspose2d(4, 2, 3, { padding_mode = 'reflect' }) end, "Only 'zeros' padding mode is supported")
    H.raises(function() F.conv_transpose2d(torch.ones(1, 3, 4, 4), torch.ones(2, 2, 3, 3)) end,
      'the weight has 2 input channels, but the input has 3')
    H.raises(function() F.interpolate(torch.ones(1, 1, 4, 4), { size = 8, mode = 'linear' }) end, "mode 'linear' is not supported for 4-D input")
    H.raises(function() F.interpolate(torch.ones(1, 1, 4, 4)) end, 'exactly one of size or scale_factor must be given')
    H.raises(function() F.interpolate(torch.ones(1, 1, 4, 4), { size = 8, align_corners = true }) end,
      'align_corners option can only be set with the interpolating modes')
    H.raises(function() nn.Upsample({}) end, 'Upsample: exactly one of size or scale_factor must be given')
  end)
end)
