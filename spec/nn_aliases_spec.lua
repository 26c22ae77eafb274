-- The other spellings of nn functions: torch.* with PyTorch's positional torch.* signatures
-- (lua/torch/nn/torch_aliases.lua), F's _with_indices and in-place forms (functional/variants.lua),
-- and F.multi_head_attention_forward against the attention formula written here in plain Lua.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional

local function same(a, b, msg)
  assert(torch.is_tensor(a) and torch.is_tensor(b), (msg or '') .. ': expected tensors')
  assert.are.same(a.shape, b.shape)
  assert.are.equal(a.dtype, b.dtype)
  H.assert_values(a, b:totable(), 0, msg)
end

-- a non-contiguous tensor of shape: the transpose of a contiguous one with its last two dims swapped
local function nc(shape, dtype)
  local s = {}
  for i, v in ipairs(shape) do s[i] = v end
  local n = #s
  s[n - 1], s[n] = s[n], s[n - 1]
  local t = torch.randn(s, { dtype = dtype }):transpose(n - 1, n)
  assert(not t:is_contiguous())
  return t
end

describe('torch.* aliases of nn functions', function()
  for _, dt in ipairs { torch.float32, torch.float64 } do
    it('equal F with their positional PyTorch arguments (' .. tostring(dt) .. ', non-contiguous inputs)', function()
      torch.manual_seed(7)
      local x4 = nc({ 2, 4, 5, 6 }, dt)
      local x3 = nc({ 2, 4, 6 }, dt)
      local x5 = nc({ 1, 2, 3, 4, 5 }, dt)
      local w2 = torch.randn(4, 2, 3, 3, { dtype = dt })
      local b = torch.randn(3, { dtype = dt })
      local b4_ = torch.randn(4, { dtype = dt })
      same(torch.conv2d(x4, w2, b4_, 2, 1, 1, 2), F.conv2d(x4, w2, b4_, { stride = 2, padding = 1, groups = 2 }), 'conv2d')
      same(torch.conv2d(x4, w2, nil, { padding = 1, groups = 2 }), F.conv2d(x4, w2, nil, { padding = 1, groups = 2 }),
        'conv2d options')
      local w1 = torch.randn(3, 4, 2, { dtype = dt })
      same(torch.conv1d(x3, w1, b, 1, 1, 2), F.conv1d(x3, w1, b, { padding = 1, dilation = 2 }), 'conv1d')
      local w3 = torch.randn(2, 2, 2, 2, 2, { dtype = dt })
      same(torch.conv3d(x5, w3, nil, 1, 1), F.conv3d(x5, w3, nil, { padding = 1 }), 'conv3d')
      local wt2 = torch.randn(4, 2, 3, 3, { dtype = dt })
      same(torch.conv_transpose2d(x4, wt2, nil, 2, 1, 1), F.conv_transpose2d(x4, wt2, nil,
        { stride = 2, padding = 1, output_padding = 1 }), 'conv_transpose2d')
      local wt1 = torch.randn(4, 3, 3, { dtype = dt })
      same(torch.conv_transpose1d(x3, wt1, b, 2, 0, 1, 1, 1), F.conv_transpose1d(x3, wt1, b,
        { stride = 2, output_padding = 1 }), 'conv_transpose1d')
      local wt3 = torch.randn(2, 1, 2, 2, 2, { dtype = dt })
      same(torch.conv_transpose3d(x5, wt3), F.conv_transpose3d(x5, wt3), 'conv_transpose3d')
      same(torch.max_pool2d(x4, 2, {}, 1, 1, true), F.max_pool2d(x4, 2, { padding = 1, ceil_mode = true }), 'max_pool2d')
      same(torch.max_pool1d(x3, 3, 2), F.max_pool1d(x3, 3, { stride = 2 }), 'max_pool1d')
      same(torch.max_pool3d(x5, { 1, 2, 2 }), F.max_pool3d(x5, { 1, 2, 2 }), 'max_pool3d')
      same(torch.avg_pool1d(x3, 3, 2, 1, false, false), F.avg_pool1d(x3, 3, { stride = 2, padding = 1,
        count_include_pad = false }), 'avg_pool1d')
      same(torch.adaptive_avg_pool1d(x3, 4), F.adaptive_avg_pool1d(x3, 4), 'adaptive_avg_pool1d')
      local y, i = torch.adaptive_max_pool1d(x3, 4)
      local fy, fi = F.adaptive_max_pool1d(x3, 4, true)
      same(y, fy, 'adaptive_max_pool1d')
      same(i, fi, 'adaptive_max_pool1d indices')
      local rm, rv = torch.randn(4, { dtype = dt }), torch.rand(4, { dtype = dt }) + 0.5
      local w4, b4 = torch.randn(4, { dtype = dt }), torch.randn(4, { dtype = dt })
      same(torch.batch_norm(x4, w4, b4, rm, rv, false, 0.1, 1e-3, true),
        F.batch_norm(x4, rm, rv, w4, b4, { training = false, eps = 1e-3 }), 'batch_norm')
      same(torch.instance_norm(x4, w4, b4, nil, nil, true, 0.1, 1e-4, true),
        F.instance_norm(x4, nil, nil, w4, b4, { eps = 1e-4 }), 'instance_norm')
      local w6 = torch.randn(6, { dtype = dt })
      same(torch.layer_norm(x4, { 6 }, w6, nil, 1e-3, true), F.layer_norm(x4, { 6 }, w6, nil, { eps = 1e-3 }), 'layer_norm')
      same(torch.group_norm(x4, 2, w4, b4, 1e-3), F.group_norm(x4, 2, w4, b4, { eps = 1e-3 }), 'group_norm')
      local emb = torch.randn(5, 3, { dtype = dt })
      local idx = torch.tensor({ { 1, 5, 2 }, { 3, 3, 4 } })
      same(torch.embedding(emb, idx), F.embedding(idx, emb), 'embedding')
      same(torch.embedding(emb, idx, -1), F.embedding(idx, emb), 'embedding, padding_idx -1 is none')
      same(torch.embedding(emb, idx, 3), F.embedding(idx, emb, { padding_idx = 3 }), 'embedding padding_idx')
      local flat, offs = torch.tensor({ 1, 2, 4, 5, 3 }), torch.tensor({ 1, 3 })
      same(torch.embedding_bag(emb, flat, offs), F.embedding_bag(flat, emb, offs, { mode = 'sum' }), 'embedding_bag sum')
      same(torch.embedding_bag(emb, flat, offs, false, 2), F.embedding_bag(flat, emb, offs, { mode = 'max' }),
        'embedding_bag max')
      same(torch.pixel_shuffle(x4, 2), F.pixel_shuffle(x4, 2), 'pixel_shuffle')
      same(torch.pixel_unshuffle(x4:narrow(3, 1, 4), 2), F.pixel_unshuffle(x4:narrow(3, 1, 4), 2), 'pixel_unshuffle')
      same(torch.channel_shuffle(x4, 2), F.channel_shuffle(x4, 2), 'channel_shuffle')
      same(torch.constant_pad_nd(x3, { 1, 2, 0, 1 }, 2.5), F.pad(x3, { 1, 2, 0, 1 }, { value = 2.5 }), 'constant_pad_nd')
      local a, c = nc({ 3, 5 }, dt), nc({ 3, 5 }, dt)
      same(torch.cosine_similarity(a, c, 1, 1e-6), F.cosine_similarity(a, c, { dim = 1, eps = 1e-6 }), 'cosine_similarity')
      same(torch.pairwise_distance(a, c, 1, 1e-6, true), F.pairwise_distance(a, c, { p = 1, keepdim = true }),
        'pairwise_distance')
      same(torch.pdist(a, 3), F.pdist(a, 3), 'pdist')
      same(torch.prelu(x4, w4), F.prelu(x4, w4), 'prelu')
      same(torch.celu(x4, 0.5), F.celu(x4, 0.5), 'celu')
      same(torch.rrelu(x4, 0.1, 0.3), F.rrelu(x4, 0.1, 0.3), 'rrelu (eval)')
      same(torch.threshold(x4, 0.2, -1), F.threshold(x4, 0.2, -1), 'threshold')
      same(torch.hardshrink(x4, 0.3), F.hardshrink(x4, 0.3), 'hardshrink')
      local bw = torch.randn(2, 5, 5, { dtype = dt })
      same(torch.bilinear(a, c, bw, nil), F.bilinear(a, c, bw, nil), 'bilinear')
      local t = torch.rand(3, 5, { dtype = dt })
      same(torch.kl_div(a, t, 2, { log_target = false }), F.kl_div(a, t, { reduction = 'sum' }), 'kl_div')
      same(torch.kl_div(a, c, 0, { log_target = true }), F.kl_div(a, c, { reduction = 'none', log_target = true }),
        'kl_div log_target')
      local sgn = torch.tensor({ 1, -1, 1, 1, -1 }, { dtype = dt })
      same(torch.margin_ranking_loss(a[1], c[1], sgn, 0.5, 0), F.margin_ranking_loss(a[1], c[1], sgn,
        { margin = 0.5, reduction = 'none' }), 'margin_ranking_loss')
      same(torch.hinge_embedding_loss(a, sgn:expand(3, 5), 2, 2), F.hinge_embedding_loss(a, sgn:expand(3, 5),
        { margin = 2, reduction = 'sum' }), 'hinge_embedding_loss')
      local s3 = torch.tensor({ 1, -1, 1 }, { dtype = dt })
      same(torch.cosine_embedding_loss(a, c, s3, 0.1), F.cosine_embedding_loss(a, c, s3, { margin = 0.1 }),
        'cosine_embedding_loss')
      same(torch.poisson_nll_loss(a, t, true, true, 1e-8, 1), F.poisson_nll_loss(a, t, { full = true }), 'poisson_nll_loss')
      same(torch.triplet_margin_loss(a, c, t, 0.5, 1, 1e-6, true, 0), F.triplet_margin_loss(a, c, t,
        { margin = 0.5, p = 1, swap = true, reduction = 'none' }), 'triplet_margin_loss')
      same(torch.binary_cross_entropy_with_logits(a, t, nil, t + 1, 'sum'), F.binary_cross_entropy_with_logits(a, t,
        { pos_weight = t + 1, reduction = 'sum' }), 'binary_cross_entropy_with_logits')
      local lp = F.log_softmax(torch.randn(6, 2, 4, { dtype = dt }), 3)
      local tg = torch.tensor({ { 2, 3 }, { 4, 4 } })
      same(torch.ctc_loss(lp, tg, { 6, 5 }, { 2, 1 }, 1, 2), F.ctc_loss(lp, tg, { 6, 5 }, { 2, 1 }, { reduction = 'sum' }),
        'ctc_loss')
      -- dropout: not training is the input itself; training with p = 1 zeroes everything
      same(torch.dropout(x4, 0.5, false), x4, 'dropout eval')
      same(torch.feature_alpha_dropout(x4, 0.5, false), x4, 'feature_alpha_dropout eval')
      same(torch.alpha_dropout(x4, 0.5, false), x4, 'alpha_dropout eval')
      same(torch.dropout(x4, 1, true), x4 * 0, 'dropout p = 1')
    end)
  end

  it('torch.feature_dropout drops whole channels of N x C x ... (a 2-D input element by element)', function()
    torch.manual_seed(3)
    local x = torch.ones(8, 16, 5, { dtype = torch.float64 })
    local y = torch.feature_dropout(x, 0.5, true)
    local rows = y:totable()
    local dropped = 0
    for n = 1, 8 do
      for c = 1, 16 do
        local v = rows[n][c][1]
        assert(v == 0 or v == 2, 'scaled by 1 / (1 - p): ' .. v)
        for l = 2, 5 do assert.are.equal(v, rows[n][c][l]) end
        if v == 0 then dropped = dropped + 1 end
      end
    end
    assert(dropped > 30 and dropped < 98, 'about half the channels dropped: ' .. dropped)
    same(torch.feature_dropout(x, 0.5, false), x)
    local z = torch.ones(4, 6)
    assert.are.equal(z, torch.feature_dropout_(z, 1, true))
    H.assert_values(z, torch.zeros(4, 6):totable(), 0)
    H.raises(function() torch.feature_dropout(torch.ones(3), 0.5, true) end, 'feature_dropout', 'at least 2 dimensions')
  end)

  it('in-place torch.relu_, celu_, selu_, threshold_, rrelu_ and dropout_ write into the input', function()
    for _, case in ipairs {
      { torch.relu_, function(x) return F.relu(x) end },
      { function(x) return torch.celu_(x, 0.7) end, function(x) return F.celu(x, 0.7) end },
      { torch.selu_, function(x) return F.selu(x) end },
      { function(x) return torch.threshold_(x, 0.1, 9) end, function(x) return F.threshold(x, 0.1, 9) end },
      { function(x) return torch.rrelu_(x, 0.2, 0.4) end, function(x) return F.rrelu(x, 0.2, 0.4) end },
      { function(x) return torch.dropout_(x, 0, true) end, function(x) return x:clone() end },
    } do
      local x = torch.randn(3, 4, { dtype = torch.float64 })
      local want = case[2](x)
      local r = case[1](x)
      assert.are.equal(x, r)
      same(x, want)
    end
  end)

  it('name bad calls', function()
    local x = torch.randn(2, 3, 4, 5)
    H.raises(function() torch.conv2d(x, torch.randn(2, 3, 2, 2), nil, 1, 0, 1, 1, 7) end, 'conv2d', 'at most 5 arguments')
    H.raises(function() torch.conv1d(x[1], torch.randn(2, 3, 2), nil, { strides = 2 }) end, "conv1d: unknown option 'strides'")
    H.raises(function() torch.conv2d(x, torch.randn(2, 3, 2, 2), nil, 2, { stride = 2 }) end, "'stride' given twice")
    H.raises(function() torch.conv3d(x, torch.randn(2, 3, 2, 2, 2)) end, 'conv3d')
    H.raises(function() torch.conv_transpose1d(x, torch.randn(3, 2, 2)) end, 'conv_transpose')
    H.raises(function() torch.conv_transpose2d(x[1][1], torch.randn(3, 2, 2, 2)) end, 'conv_transpose2d')
    H.raises(function() torch.conv_transpose3d(x, torch.randn(3, 2, 2, 2, 2)) end, 'conv_transpose3d')
    H.raises(function() torch.max_pool1d(x, 2) end, 'max_pool1d')
    H.raises(function() torch.max_pool2d(x, 9) end, 'max_pool2d')
    H.raises(function() torch.max_pool3d(x[1][1], 2) end, 'max_pool3d')
    H.raises(function() torch.avg_pool1d(x, 2) end, 'avg_pool1d')
    H.raises(function() torch.adaptive_avg_pool1d(x, 2) end, 'adaptive_avg_pool1d')
    H.raises(function() torch.adaptive_max_pool1d(x, 2) end, 'adaptive_max_pool1d')
    H.raises(function() torch.batch_norm(x, nil, nil, torch.zeros(2), torch.ones(2), false, 0.1, 1e-5, true) end, 'batch_norm')
    H.raises(function() torch.instance_norm(x[1][1]) end, 'instance_norm')
    H.raises(function() torch.layer_norm(x, { 4 }) end, 'layer_norm', 'normalized_shape')
    H.raises(function() torch.group_norm(x, 2) end, 'group_norm')
    H.raises(function() torch.embedding(torch.randn(3, 2), torch.tensor({ 4 })) end, 'embedding', 'out of range')
    H.raises(function() torch.embedding(torch.randn(3, 2), torch.tensor({ 1 }), -1, false, true) end, 'sparse is not supported')
    H.raises(function() torch.embedding(torch.randn(3, 2), torch.tensor({ 1 }), -1, 1) end, 'embedding', 'scale_grad_by_freq')
    H.raises(function() torch.embedding_bag(torch.randn(3, 2), torch.tensor({ 1 }), torch.tensor({ 1 }), false, 3) end,
      'embedding_bag: mode must be 0 (sum), 1 (mean), 2 (max)')
    H.raises(function() torch.dropout(x, 0.5) end, 'dropout: expected (input, p, train)')
    H.raises(function() torch.alpha_dropout(x, 2, true) end, 'alpha_dropout', 'between 0 and 1')
    H.raises(function() torch.feature_alpha_dropout(torch.ones(3), 0.5, true) end, 'feature_alpha_dropout')
    H.raises(function() torch.pixel_shuffle(x, 2) end, 'pixel_shuffle')
    H.raises(function() torch.pixel_unshuffle(x, 2) end, 'pixel_unshuffle')
    H.raises(function() torch.channel_shuffle(x, 2) end, 'channel_shuffle')
    H.raises(function() torch.constant_pad_nd(x, { 1 }) end, 'pad', 'divisible by 2')
    H.raises(function() torch.constant_pad_nd(x, { 1, 1 }, 'a') end, 'constant_pad_nd: value must be a number')
    H.raises(function() torch.cosine_similarity(x, torch.randn(7)) end)
    H.raises(function() torch.pairwise_distance(x, 1) end)
    H.raises(function() torch.pdist(x) end, 'pdist')
    H.raises(function() torch.prelu(x, torch.ones(5)) end, 'prelu', 'weight has 5 elements')
    H.raises(function() torch.celu(x, 0) end, 'celu: alpha must not be 0')
    H.raises(function() torch.celu_(x, 0) end, 'celu: alpha must not be 0')
    H.raises(function() torch.relu_(1) end, 'relu: expected input to be a tensor')
    H.raises(function() torch.selu_(1) end, 'selu: expected input to be a tensor')
    H.raises(function() torch.rrelu(x, 0.5, 0.1) end, 'rrelu: Lower bound should be less than or equal to the upper bound')
    H.raises(function() torch.rrelu_(x, 0.1, 0.2, true, {}) end, 'rrelu_: generator is not supported')
    H.raises(function() torch.threshold(x, 'a', 1) end, 'threshold: threshold must be a number')
    H.raises(function() torch.threshold_(x, 1, nil) end, 'threshold: value must be a number')
    H.raises(function() torch.hardshrink(x, 'a') end, 'hardshrink: lambd must be a number')
    H.raises(function() torch.bilinear(x, x, x) end, 'bilinear')
    H.raises(function() torch.kl_div(x, x, 3) end, "kl_div: reduction must be 0 ('none'), 1 ('mean'), 2 ('sum')")
    H.raises(function() torch.margin_ranking_loss(x, x, x, 0, 'avg') end, 'margin_ranking_loss')
    H.raises(function() torch.hinge_embedding_loss(x, 1) end, 'hinge_embedding_loss')
    H.raises(function() torch.cosine_embedding_loss(x, x, 1) end, 'cosine_embedding_loss')
    H.raises(function() torch.poisson_nll_loss(x, x) end, 'poisson_nll_loss: expected (input, target, log_input, full, eps, reduction)')
    H.raises(function() torch.triplet_margin_loss(x, x, 1) end, 'triplet_margin_loss')
    H.raises(function() torch.ctc_loss(x, x, { 1 }, { 1 }) end, 'ctc_loss')
    H.raises(function() torch.binary_cross_entropy_with_logits(x, x[1]) end, 'binary_cross_entropy_with_logits')
  end)
end)

describe("F's _with_indices and in-place forms", function()
  it('_with_indices return the output and indices of return_indices = true', function()
    torch.manual_seed(11)
    for _, dt in ipairs { torch.float32, torch.float64 } do
      local x3, x4, x5 = nc({ 2, 3, 9 }, dt), nc({ 2, 3, 7, 8 }, dt), nc({ 1, 2, 5, 6, 7 }, dt)
      for _, case in ipairs {
        { 'max_pool1d', x3, 3, { stride = 2, padding = 1 } },
        { 'max_pool2d', x4, 2, { ceil_mode = true } },
        { 'max_pool3d', x5, 2, { dilation = 1 } },
      } do
        local name, x, k, o = case[1], case[2], case[3], case[4]
        local y, i = F[name .. '_with_indices'](x, k, o)
        local wo = { return_indices = true }
        for key, v in pairs(o) do wo[key] = v end
        local fy, fi = F[name](x, k, wo)
        same(y, fy, name)
        same(i, fi, name .. ' indices')
        assert.is_nil(o.return_indices) -- the caller's table is left alone
      end
      for _, case in ipairs { { 'adaptive_max_pool1d', x3, 4 }, { 'adaptive_max_pool2d', x4, { 3, 5 } },
        { 'adaptive_max_pool3d', x5, 2 } } do
        local y, i = F[case[1] .. '_with_indices'](case[2], case[3])
        local fy, fi = F[case[1]](case[2], case[3], true)
        same(y, fy, case[1])
        same(i, fi, case[1] .. ' indices')
      end
      local samples = torch.rand(2, 3, 2, { dtype = dt })
      local y, i = F.fractional_max_pool2d_with_indices(x4, 2, { output_size = 3, _random_samples = samples })
      local fy, fi = F.fractional_max_pool2d(x4, 2, { output_size = 3, _random_samples = samples, return_indices = true })
      same(y, fy, 'fractional_max_pool2d')
      same(i, fi, 'fractional_max_pool2d indices')
    end
    -- the max of each window of 1..9 in plain terms: windows {1,2,3}, {3,4,5}, ... of stride 2
    local y, i = F.max_pool1d_with_indices(torch.tensor({ { { 3, 1, 4, 1, 5, 9, 2, 6, 5 } } }, { dtype = torch.float64 }), 3, { stride = 2 })
    H.assert_values(y, { 4, 5, 9, 6 }, 0)
    H.assert_values(i, { 3, 5, 6, 8 }, 0)
    H.raises(function() F.max_pool2d_with_indices(torch.randn(1, 1, 4, 4), 2, { strides = 1 }) end,
      "max_pool2d_with_indices: unknown option 'strides'")
    H.raises(function() F.max_pool1d_with_indices(torch.randn(1, 1, 1, 4), 2) end, 'max_pool1d')
    H.raises(function() F.max_pool3d_with_indices(torch.randn(4), 2) end, 'max_pool3d')
    H.raises(function() F.adaptive_max_pool1d_with_indices(torch.randn(4), 2) end, 'adaptive_max_pool1d')
    H.raises(function() F.adaptive_max_pool2d_with_indices(torch.randn(4), 2) end, 'adaptive_max_pool2d')
    H.raises(function() F.adaptive_max_pool3d_with_indices(torch.randn(4), 2) end, 'adaptive_max_pool3d')
    H.raises(function() F.adaptive_max_pool3d_with_indices(torch.randn(1, 2, 2, 2), 1, { indices = true }) end,
      "unknown option 'indices'")
    H.raises(function() F.fractional_max_pool2d_with_indices(torch.randn(1, 1, 4, 4), 2) end, 'fractional_max_pool2d')
  end)

  it('the in-place activations equal the out-of-place ones and return the input', function()
    torch.manual_seed(5)
    for _, dt in ipairs { torch.float32, torch.float64 } do
      for _, case in ipairs {
        { 'relu', {} }, { 'selu', {} }, { 'elu', { 0.5 } }, { 'celu', { 1.5 } }, { 'leaky_relu', { 0.2 } },
        { 'hardtanh', { -0.5, 0.25 } }, { 'threshold', { 0.1, -3 } }, { 'rrelu', { 0.1, 0.3 } },
        { 'elu', { { alpha = 2 } } }, { 'hardtanh', { { max_val = 0.5 } } },
      } do
        local name, a = case[1], case[2]
        local base = torch.randn(4, 6, { dtype = dt })
        local x = base:clone():t() -- non-contiguous
        local want = F[name](base:t(), table.unpack(a))
        local r = F[name .. '_'](x, table.unpack(a))
        assert.are.equal(x, r)
        same(x, want, name .. '_')
      end
    end
    -- elu_ in plain terms: x where x > 0, else alpha (e^x - 1)
    local x = torch.tensor({ -1, 0.5, -2 }, { dtype = torch.float64 })
    F.elu_(x, 0.5)
    H.assert_values(x, { 0.5 * (math.exp(-1) - 1), 0.5, 0.5 * (math.exp(-2) - 1) }, 1e-15)
    H.raises(function() F.relu_(3) end, 'relu: expected input to be a tensor')
    H.raises(function() F.elu_(torch.ones(2), 1, 2) end, 'elu_: takes at most 1 arguments after the input, got 2')
    H.raises(function() F.leaky_relu_(torch.ones(2), { slope = 1 }) end, "leaky_relu_: unknown option 'slope'")
    H.raises(function() F.hardtanh_(torch.ones(2), 1, -1) end, 'hardtanh: min_val (1) must not exceed max_val (-1)')
    H.raises(function() F.celu_(torch.ones(2), 0) end, 'celu: alpha must not be 0')
    H.raises(function() F.selu_('x') end, 'selu')
    H.raises(function() F.threshold_(torch.ones(2), 1) end, 'threshold: value must be a number')
    H.raises(function() F.rrelu_(torch.ones(2), 0.5, 0.1) end, 'rrelu: Lower bound')
  end)
end)

describe('F.multi_head_attention_forward', function()
  -- softmax(q k^T * scale) v for one (L x d), (S x d), (S x dv) problem, in plain Lua
  local function ref_attention(q, k, v, scale)
    local out = {}
    for i = 1, #q do
      local w, m = {}, -math.huge
      for j = 1, #k do
        local dot = 0
        for t = 1, #q[i] do dot = dot + q[i][t] * k[j][t] end
        w[j] = dot * scale
        m = math.max(m, w[j])
      end
      local z = 0
      for j = 1, #k do w[j] = math.exp(w[j] - m); z = z + w[j] end
      out[i] = {}
      for t = 1, #v[1] do
        local acc = 0
        for j = 1, #k do acc = acc + w[j] / z * v[j][t] end
        out[i][t] = acc
      end
    end
    return out
  end

  it('with identity projections is the attention of the inputs; static_k / static_v replace the keys and values', function()
    torch.manual_seed(4)
    local E, L, S, N = 4, 3, 5, 2
    local eye = torch.eye(E, { dtype = torch.float64 })
    local in_w = torch.cat({ eye, eye, eye }, 1)
    local q = torch.randn(L, N, E, { dtype = torch.float64 })
    local k = torch.randn(N, S, E, { dtype = torch.float64 }):transpose(1, 2) -- non-contiguous
    local v = torch.randn(S, N, E, { dtype = torch.float64 })
    local out, w = F.multi_head_attention_forward(q, k, v, E, 1, in_w, nil, nil, nil, false, 0, eye, nil)
    for n = 1, N do
      H.assert_values(out:select(2, n), ref_attention(q:select(2, n):totable(), k:select(2, n):totable(),
        v:select(2, n):totable(), 1 / math.sqrt(E)), 1e-12)
    end
    assert.are.same({ N, L, S }, w.shape)
    -- two heads: each head attends within its half of the features
    local out2 = F.multi_head_attention_forward(q, k, v, E, 2, in_w, nil, nil, nil, false, 0, eye, nil,
      { need_weights = false })
    for n = 1, N do
      for h = 0, 1 do
        local part = function(t) return t:select(2, n):narrow(2, 2 * h + 1, 2):totable() end
        H.assert_values(out2:select(2, n):narrow(2, 2 * h + 1, 2), ref_attention(part(q), part(k), part(v), 1 / math.sqrt(2)),
          1e-12)
      end
    end
    -- static keys and values of (N * heads, S', head_dim)
    local sk, sv = torch.randn(N, 6, E, { dtype = torch.float64 }), torch.randn(N, 6, E, { dtype = torch.float64 })
    local out3 = F.multi_head_attention_forward(q, k, v, E, 1, in_w, nil, nil, nil, false, 0, eye, nil,
      { static_k = sk, static_v = sv })
    for n = 1, N do
      H.assert_values(out3:select(2, n), ref_attention(q:select(2, n):totable(), sk[n]:totable(), sv[n]:totable(),
        1 / math.sqrt(E)), 1e-12)
    end
  end)

  it('is what nn.MultiheadAttention computes, with separate projection weights too', function()
    torch.manual_seed(9)
    local m = nn.MultiheadAttention(6, 2, { kdim = 4, vdim = 3, dtype = torch.float64 })
    local q, k, v = torch.randn(5, 2, 6, { dtype = torch.float64 }), torch.randn(4, 2, 4, { dtype = torch.float64 }),
      torch.randn(4, 2, 3, { dtype = torch.float64 })
    local out, w = m(q, k, v)
    local fo, fw = F.multi_head_attention_forward(q, k, v, 6, 2, nil, m.in_proj_bias, nil, nil, false, 0,
      m.out_proj.weight, m.out_proj.bias, { use_separate_proj_weight = true, q_proj_weight = m.q_proj_weight,
        k_proj_weight = m.k_proj_weight, v_proj_weight = m.v_proj_weight })
    same(out, fo)
    same(w, fw)
    assert.is_true(torch.autograd.gradcheck(function(a)
      return (F.multi_head_attention_forward(a, k, v, 6, 2, nil, m.in_proj_bias, nil, nil, false, 0, m.out_proj.weight,
        m.out_proj.bias, { use_separate_proj_weight = true, q_proj_weight = m.q_proj_weight,
          k_proj_weight = m.k_proj_weight, v_proj_weight = m.v_proj_weight }))
    end, { q:detach():requires_grad_() }))
  end)

  it('names bad arguments', function()
    local x = torch.randn(3, 2, 4)
    local in_w, ow = torch.randn(12, 4), torch.randn(4, 4)
    local function mha(...) return F.multi_head_attention_forward(...) end
    H.raises(function() mha(x, x, x, 5, 1, in_w, nil, nil, nil, false, 0, ow, nil) end,
      'multi_head_attention_forward: was expecting embedding dimension of 5, but got 4')
    H.raises(function() mha(x, x, x, 4, 3, in_w, nil, nil, nil, false, 0, ow, nil) end, 'embed_dim 4 not divisible by num_heads 3')
    H.raises(function() mha(x, x, x, 4, 1, nil, nil, nil, nil, false, 0, ow, nil) end,
      'use_separate_proj_weight is false but in_proj_weight is nil')
    H.raises(function() mha(x, x, x, 4, 1, nil, nil, nil, nil, false, 0, ow, nil, { use_separate_proj_weight = true }) end,
      'use_separate_proj_weight is true but q_proj_weight is nil')
    H.raises(function() mha(x, x, x, 4, 1, in_w, nil, nil, nil, false, 2, ow, nil) end, 'dropout_p must be a number between 0 and 1')
    H.raises(function() mha(x, x, x, 4, 1, in_w, nil, torch.zeros(1, 1, 4), nil, false, 0, ow, nil) end,
      'bias_k and bias_v must be given together')
    H.raises(function() mha(x, x, x, 4, 1, in_w, nil, nil, nil, false, 0, ow, nil, { static_k = torch.zeros(2, 3, 3) }) end,
      'expecting static_k of shape (2, S, 4)')
    H.raises(function() mha(x, x, x, 4, 1, in_w, nil, nil, nil, false, 0, ow, nil, { attn_mask = torch.zeros(2, 2) }) end,
      'The shape of the 2D attn_mask is [2, 2], but should be (3, 3).')
    H.raises(function() mha(x, x, x, 4, 1, in_w, nil, nil, nil, false, 0, ow, nil, { mask = 1 }) end, "unknown option 'mask'")
  end)
end)
