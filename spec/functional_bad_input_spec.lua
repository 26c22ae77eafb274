-- torch.nn.functional's errors for bad options and shapes that the PyTorch sweep
-- (spec/functional_sweep_spec.lua) met: each names the function called, even where it is built on
-- another (the 1-D layers on the 2-D ones, lp_pool on avg_pool), and says what is wrong.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional

local function r(...) return torch.randn({ ... }, { dtype = torch.float64 }) end

describe('torch.nn.functional errors', function()
  it('name the 1-D layers, not the 2-D ones they are built on', function()
    H.raises(function() F.conv1d(r(1, 3, 5), r(2, 2, 3)) end, 'conv1d: ', 'to have 2 channels, but got 3')
    H.raises(function() F.conv1d(r(1, 2, 2), r(2, 2, 3)) end, 'conv1d: ', 'too small')
    H.raises(function() F.conv1d(r(1, 2, 5), r(2, 2, 3), r(3)) end, 'conv1d: ', 'bias')
    H.raises(function() F.conv_transpose1d(r(1, 2, 5), r(2, 2, 3), nil, { stride = 2, output_padding = 3 }) end,
      'conv_transpose1d: ', 'output padding must be smaller')
    H.raises(function() F.max_pool1d(r(1, 1, 2), 3) end, 'max_pool1d: ', 'too small')
    H.raises(function() F.avg_pool1d(r(1, 1, 5), 2, { stride = 0 }) end, 'avg_pool1d: ', 'stride should be greater than zero')
    H.raises(function() F.adaptive_avg_pool1d(r(1, 1, 5), -1) end, 'adaptive_avg_pool1d: ', 'output_size')
    H.raises(function() F.lp_pool1d(r(1, 1, 2), 2, 3) end, 'lp_pool1d: ', 'too small')
    H.raises(function() F.lp_pool2d(r(1, 1, 2, 2), 2, 3) end, 'lp_pool2d: ', 'too small')
    -- raised at the caller's line, not inside lutorch
    local err = H.raises(function() F.conv1d(r(1, 3, 5), r(2, 2, 3)) end, 'conv1d')
    assert(err:find('functional_bad_input_spec.lua', 1, true), err)
  end)

  it("refuse avg_pool2d's divisor_override of 0 (PyTorch's 'divisor must be not zero')", function()
    H.raises(function() F.avg_pool2d(r(1, 1, 4, 4), 2, { divisor_override = 0 }) end, 'avg_pool2d',
      'divisor_override must be a non-zero integer')
    H.raises(function() F.avg_pool2d(r(1, 1, 4, 4), 2, { divisor_override = 1.5 }) end, 'avg_pool2d', 'divisor_override')
  end)

  it('name the input of conv3d with a wrong channel count', function()
    H.raises(function() F.conv3d(r(1, 3, 4, 4, 4), r(2, 2, 2, 2, 2)) end, 'conv3d: ',
      'expected input of size torch.Size([1, 3, 4, 4, 4]) to have 2 channels')
  end)

  it('refuse class-probability targets of another shape, and an ignore_index with them', function()
    local x = r(3, 4)
    H.raises(function() F.cross_entropy(x, torch.rand(3, 5, { dtype = torch.float64 })) end, 'cross_entropy',
      'class probabilities', 'shape')
    H.raises(function() F.cross_entropy(x, torch.rand(3, 4, { dtype = torch.float64 }), { ignore_index = 1 }) end,
      'cross_entropy', 'ignore_index is not supported')
  end)

  it("refuse embedding's max_norm and norm_type other than numbers", function()
    H.raises(function() F.embedding(torch.tensor({ 1 }), r(3, 2), { max_norm = 'one' }) end, 'embedding', 'max_norm')
    H.raises(function() F.embedding(torch.tensor({ 1 }), r(3, 2), { max_norm = 1, norm_type = 'l2' }) end, 'embedding',
      'norm_type')
  end)
end)

describe('torch.nn.functional shape errors', function()
  it('name the function and the tensors whose shapes do not broadcast together', function()
    H.raises(function() F.cosine_similarity(r(3, 4), r(2, 4)) end, 'cosine_similarity: ', 'x1 of shape',
      'x2 of shape', 'do not broadcast')
    H.raises(function() F.margin_ranking_loss(r(3), r(4), r(3)) end, 'margin_ranking_loss: ', 'input2 of shape')
    local p = r(3, 4):sigmoid()
    H.raises(function() F.binary_cross_entropy(p, p, { weight = r(5) }) end, 'binary_cross_entropy: ', 'weight of shape')
    H.raises(function() F.binary_cross_entropy_with_logits(r(3, 4), p, { pos_weight = r(3) }) end,
      'binary_cross_entropy_with_logits: ', 'pos_weight of shape')
    -- shapes that broadcast are taken
    assert.equal(3, F.binary_cross_entropy_with_logits(r(3, 4), p, { weight = r(3, 1), reduction = 'none' }):size(1))
  end)
end)
