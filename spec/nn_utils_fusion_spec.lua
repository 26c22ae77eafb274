-- nn.utils.fusion: the fused weights against PyTorch 1.13's (spec/data/fusion_reference.lua, from
-- tools/gen_fusion_reference.py), and the fused layers' outputs against the layer then batch norm
-- in eval mode, in float64 on random inputs; the originals untouched; the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local fusion = nn.utils.fusion
local ref = require 'spec.data.fusion_reference'
local f64 = torch.float64

local function opt(r) return r and H.from_ref(r) end

-- random running statistics and affine parameters, then eval mode
local function randomize_bn(bn)
  torch.no_grad(function()
    bn.running_mean:copy_(torch.randn(bn.num_features, { dtype = f64 }))
    bn.running_var:copy_(torch.rand(bn.num_features, { dtype = f64 }) + 0.5)
    if bn.weight ~= nil then
      bn.weight:copy_(torch.randn(bn.num_features, { dtype = f64 }))
      bn.bias:copy_(torch.randn(bn.num_features, { dtype = f64 }))
    end
  end)
  return bn:eval()
end

local function max_diff(a, b) return (a - b):abs():max():item() end

describe('nn.utils.fusion', function()
  setup(function() torch.manual_seed(7) end)

  it('fuse_conv_bn_weights and fuse_linear_bn_weights give PyTorch 1.13\'s values', function()
    for _, c in ipairs(ref.cases) do
      local w, b, rm, rv = H.from_ref(c.w), opt(c.b), H.from_ref(c.rm), H.from_ref(c.rv)
      local bw, bb = opt(c.bw), opt(c.bb)
      local fw, fb
      if c.linear then
        fw, fb = fusion.fuse_linear_bn_weights(w, b, rm, rv, c.eps, bw, bb)
      else
        fw, fb = fusion.fuse_conv_bn_weights(w, b, rm, rv, c.eps, bw, bb, c.transpose)
      end
      assert.are.equal('torch.Size([' .. table.concat(c.fused_w.shape, ', ') .. '])', tostring(fw.shape), c.name)
      H.assert_values(fw, c.fused_w.data, 1e-12, c.name .. ' weight')
      H.assert_values(fb, c.fused_b.data, 1e-12, c.name .. ' bias')
      assert.is_true(fw.requires_grad and fw.is_leaf and fb.requires_grad and fb.is_leaf, c.name)
      assert.is_true(nn.parameter.is_parameter(fw) and nn.parameter.is_parameter(fb), c.name)
    end
  end)

  it('a fused convolution gives bn(conv(x)) in eval mode, for 1-, 2- and 3-d, groups and transposes', function()
    local cases = {
      { nn.Conv1d(4, 6, 3, { padding = 1, dtype = f64 }), nn.BatchNorm1d(6), { 2, 4, 7 } },
      { nn.Conv2d(4, 6, 3, { stride = 2, groups = 2, dtype = f64 }), nn.BatchNorm2d(6), { 2, 4, 9, 8 } },
      { nn.Conv2d(3, 5, 2, { bias = false, dtype = f64 }), nn.BatchNorm2d(5, { affine = false }), { 3, 3, 5, 5 } },
      { nn.Conv3d(2, 3, 2, { dtype = f64 }), nn.BatchNorm3d(3), { 1, 2, 4, 4, 4 } },
      { nn.ConvTranspose2d(3, 4, 3, { stride = 2, dtype = f64 }), nn.BatchNorm2d(4), { 2, 3, 4, 5 }, true },
      { nn.ConvTranspose1d(2, 3, 2, { bias = false, dtype = f64 }), nn.BatchNorm1d(3), { 2, 2, 6 }, true },
    }
    for i, c in ipairs(cases) do
      local conv, bn, transpose = c[1]:eval(), randomize_bn(c[2]:double()), c[4]
      local w0 = conv.weight:clone()
      local fused = fusion.fuse_conv_bn_eval(conv, bn, transpose)
      local x = torch.randn(c[3], { dtype = f64 })
      local want = bn(conv(x))
      assert.is_true(max_diff(fused(x), want) < 1e-6 * (1 + want:abs():max():item()), 'case ' .. i)
      assert.are.equal(fused:_get_name(), conv:_get_name())
      assert.is_true(conv.weight:equal(w0), 'the original conv is unchanged')
      assert.are_not.equal(conv.weight, fused.weight)
      assert.is_not_nil(fused.bias, 'case ' .. i)
    end
  end)

  it('a fused linear layer gives bn(linear(x)) in eval mode', function()
    for _, o in ipairs { { bias = true }, { bias = false } } do
      local lin = nn.Linear(5, 4, { bias = o.bias, dtype = f64 }):eval()
      local bn = randomize_bn(nn.BatchNorm1d(4):double())
      local fused = fusion.fuse_linear_bn_eval(lin, bn)
      local x = torch.randn(6, 5, { dtype = f64 })
      local want = bn(lin(x))
      assert.is_true(max_diff(fused(x), want) < 1e-6 * (1 + want:abs():max():item()))
      -- against the formula in plain Lua: w'[i][j] = w[i][j] * g_i / sqrt(v_i + eps)
      local w, g, v = lin.weight:totable(), bn.weight:totable(), bn.running_var:totable()
      local fw = fused.weight:totable()
      for r = 1, 4 do
        for c = 1, 5 do H.close(fw[r][c], w[r][c] * g[r] / math.sqrt(v[r] + bn.eps), 1e-12) end
      end
    end
  end)

  it('raises clear errors for training mode, missing statistics and mismatched shapes', function()
    local conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)
    H.raises(function() fusion.fuse_conv_bn_eval(conv, bn) end, 'fuse_conv_bn_eval: fusion only for eval!')
    bn:eval()
    H.raises(function() fusion.fuse_conv_bn_eval(conv, bn) end, 'fuse_conv_bn_eval: fusion only for eval!')
    conv:eval()
    bn:train()
    H.raises(function() fusion.fuse_conv_bn_eval(conv, bn) end, 'fuse_conv_bn_eval: fusion only for eval!')
    H.raises(function() fusion.fuse_linear_bn_eval(nn.Linear(2, 3), nn.BatchNorm1d(3):eval()) end,
      'fuse_linear_bn_eval: fusion only for eval!')
    H.raises(function() fusion.fuse_linear_bn_eval(nn.Linear(2, 3):eval(), nn.BatchNorm1d(3, {
      track_running_stats = false }):eval()) end, 'fuse_linear_bn_eval: the batch norm has no running statistics')
    H.raises(function() fusion.fuse_conv_bn_eval(conv, 3) end, 'fuse_conv_bn_eval: expected two modules, got table '
      .. 'and number')
    H.raises(function() fusion.fuse_conv_bn_eval(conv, nn.BatchNorm2d(4):eval()) end,
      'fuse_conv_bn_weights: the convolution weight of shape', 'has 3 output channels, the batch norm 4')
    H.raises(function() fusion.fuse_linear_bn_eval(nn.Linear(2, 3):eval(), nn.BatchNorm1d(2):eval()) end,
      'fuse_linear_bn_weights: the linear weight of shape', "does not have the batch norm's 2 output features")
    local rm, rv = torch.zeros(3), torch.ones(3)
    H.raises(function() fusion.fuse_conv_bn_weights(5, nil, rm, rv, 1e-5) end,
      'fuse_conv_bn_weights: expected conv_w to be a tensor, got number')
    H.raises(function() fusion.fuse_conv_bn_weights(torch.ones(3, 1, 1), nil, rm, rv, 'x') end,
      'fuse_conv_bn_weights: expected bn_eps to be a number, got string')
    H.raises(function() fusion.fuse_linear_bn_weights(torch.ones(3, 2), nil, nil, rv, 1e-5) end,
      'fuse_linear_bn_weights: expected bn_rm (the running mean) to be a tensor, got nil')
  end)
end)
