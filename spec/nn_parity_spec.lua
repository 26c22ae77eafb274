-- torch.nn.functional against PyTorch itself: spec/data/nn_reference.lua holds PyTorch 1.13's
-- outputs and gradients (of sum(y * gy)) for fixed float64 inputs (tools/gen_nn_reference.py).
local torch = require 'torch'
local F = torch.nn.functional

local cases = dofile('spec/data/nn_reference.lua')

local function tensor_of(r)
  local t = torch.tensor(r.data, { dtype = torch[r.dtype] })
  if #r.shape == 0 then return t:reshape({}) end
  return t:reshape(r.shape)
end

-- m with the case's weight and bias (a.w, a.b), run on a.x; a.w becomes the module's weight, whose
-- gradient the case checks
local function module_case(a, m)
  torch.no_grad(function() m.weight:copy_(a.w); m.bias:copy_(a.b) end)
  local y = m(a.x)
  a.w = m.weight
  return y
end

-- a recurrent module with the case's parameters (inputs named as its parameters), run on a.x with
-- the state a.h0 (and a.h1: LSTM's {h, c}) when given; the parameters whose gradients the case
-- checks become the module's
local function run_rnn(a, m, lstm)
  torch.no_grad(function()
    for name, p in m:named_parameters() do p:copy_(a[name]) end
  end)
  for name, p in m:named_parameters() do
    if a[name].requires_grad then a[name] = p end
  end
  local state = a.h0
  if a.h1 then state = { a.h0, a.h1 } end
  local out, st = m(a.x, state)
  if lstm then return out, st[1] end
  return out, st
end

-- a module given the case's parameters (named as PyTorch names them: ModuleList children from 0),
-- then call(m) run; the parameters whose gradients the case checks become the module's
local function run_module(a, m, call)
  local function pt_name(name) return (name:gsub('%f[%w]layers%.(%d+)', function(i) return 'layers.' .. (tonumber(i) - 1) end)) end
  torch.no_grad(function()
    for name, p in m:named_parameters() do p:copy_(a[pt_name(name)]) end
  end)
  for name, p in m:named_parameters() do
    if a[pt_name(name)].requires_grad then a[pt_name(name)] = p end
  end
  return call(m)
end

-- each case as lutorch writes it; `a` holds the inputs (tensors), `c` the case
local run = {
  conv2d_basic = function(a) return F.conv2d(a.x, a.w, a.b, { padding = 1 }) end,
  conv2d_strided_dilated_groups = function(a)
    return F.conv2d(a.x, a.w, a.b, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = { 1, 2 }, groups = 2 })
  end,
  conv2d_depthwise_nobias = function(a) return F.conv2d(a.x, a.w, nil, { stride = 2, groups = 3 }) end,
  conv2d_1x1 = function(a) return F.conv2d(a.x, a.w, a.b) end,
  conv2d_unbatched = function(a) return F.conv2d(a.x, a.w, a.b, { padding = 2, dilation = 2 }) end,
  lstm_2layer_bidirectional_batch_first = function(a)
    return run_rnn(a, torch.nn.LSTM(3, 4, { num_layers = 2, bidirectional = true, batch_first = true, dtype = a.x.dtype }), true)
  end,
  gru_unbatched = function(a) return run_rnn(a, torch.nn.GRU(3, 5, { dtype = a.x.dtype })) end,
  gru_2layer_h0 = function(a) return run_rnn(a, torch.nn.GRU(2, 3, { num_layers = 2, dtype = a.x.dtype })) end,
  rnn_relu_bidirectional = function(a)
    return run_rnn(a, torch.nn.RNN(3, 4, { nonlinearity = 'relu', bidirectional = true, dtype = a.x.dtype }))
  end,
  lstm_nobias = function(a) return run_rnn(a, torch.nn.LSTM(2, 3, { bias = false, dtype = a.x.dtype }), true) end,
  lstm_cell = function(a) return run_rnn(a, torch.nn.LSTMCell(3, 4, { dtype = a.x.dtype })) end,
  gru_cell = function(a) return run_rnn(a, torch.nn.GRUCell(3, 4, { dtype = a.x.dtype })) end,
  rnn_cell_unbatched = function(a) return run_rnn(a, torch.nn.RNNCell(3, 4, { nonlinearity = 'relu', dtype = a.x.dtype })) end,
  mha_self_padding = function(a)
    return run_module(a, torch.nn.MultiheadAttention(6, 2, { dtype = a.x.dtype }),
      function(m) return m(a.x, a.x, a.x, { key_padding_mask = a.pad }) end)
  end,
  mha_causal_batch_first_heads = function(a)
    return run_module(a, torch.nn.MultiheadAttention(8, 4, { batch_first = true, dtype = a.x.dtype }),
      function(m) return m(a.x, a.x * 0.5, a.x, { attn_mask = a.causal, average_attn_weights = false }) end)
  end,
  mha_unbatched_float_mask = function(a)
    return run_module(a, torch.nn.MultiheadAttention(4, 1, { bias = false, dtype = a.x.dtype }),
      function(m) return m(a.x, a.x, a.x, { attn_mask = a.fmask }) end)
  end,
  encoder_layer_post_norm = function(a)
    return run_module(a, torch.nn.TransformerEncoderLayer(6, 2, { dim_feedforward = 10, dropout = 0, dtype = a.x.dtype }),
      function(m) return m(a.x, { src_key_padding_mask = a.pad }) end)
  end,
  encoder_layer_pre_norm_gelu = function(a)
    return run_module(a, torch.nn.TransformerEncoderLayer(6, 3, { dim_feedforward = 12, dropout = 0, activation = 'gelu',
      norm_first = true, batch_first = true, dtype = a.x.dtype }), function(m) return m(a.x, { src_mask = a.causal }) end)
  end,
  encoder_2_layers_norm = function(a)
    local layer = torch.nn.TransformerEncoderLayer(6, 2, { dim_feedforward = 8, dropout = 0, dtype = a.x.dtype })
    local enc = torch.nn.TransformerEncoder(layer, 2, { norm = torch.nn.LayerNorm(6, { dtype = a.x.dtype }) })
    return run_module(a, enc, function(m) return m(a.x) end)
  end,
  mha_kdim_vdim_bias_kv_zero_attn = function(a)
    return run_module(a, torch.nn.MultiheadAttention(6, 2, { kdim = 4, vdim = 3, add_bias_kv = true, add_zero_attn = true,
      dtype = a.x.dtype }), function(m) return m(a.x, a.k, a.v, { key_padding_mask = a.pad, attn_mask = a.amask }) end)
  end,
  decoder_layer_post_norm = function(a)
    return run_module(a, torch.nn.TransformerDecoderLayer(6, 2, { dim_feedforward = 10, dropout = 0, dtype = a.x.dtype }),
      function(m)
        return m(a.x, a.memory, { tgt_mask = a.causal4, memory_key_padding_mask = a.pad, tgt_key_padding_mask = a.tpad })
      end)
  end,
  decoder_layer_pre_norm_gelu_batch_first = function(a)
    return run_module(a, torch.nn.TransformerDecoderLayer(6, 3, { dim_feedforward = 12, dropout = 0, activation = 'gelu',
      norm_first = true, batch_first = true, dtype = a.x.dtype }), function(m) return m(a.x, a.memory, { memory_mask = a.mmask }) end)
  end,
  transformer_small = function(a)
    local m = torch.nn.Transformer(6, 2, { num_encoder_layers = 2, num_decoder_layers = 2, dim_feedforward = 8, dropout = 0,
      dtype = a.x.dtype })
    return run_module(a, m, function(t)
      return t(a.src, a.x, { tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(4, { dtype = a.x.dtype }),
        src_key_padding_mask = a.pad })
    end)
  end,
  einsum_matmul = function(a) return torch.einsum('ij,jk->ik', a.a, a.b) end,
  einsum_batch_attention = function(a) return torch.einsum('bhqd,bhkd->bhqk', a.q, a.k) end,
  einsum_trace_diag = function(a)
    return torch.einsum('ii', a.m) * torch.einsum('jj->j', a.m) + torch.einsum('i,i', a.v, a.v)
  end,
  einsum_ellipsis_broadcast = function(a) return torch.einsum('...ij,...jk', a.x, a.y) end,
  einsum_three_operands_outer = function(a)
    return torch.einsum('ab,bc,cd->da', { a.a, a.b, a.c }) + torch.einsum('a,b->ab', a.a[1], a.c[1]):sum()
  end,
  einsum_implicit_sum_size1 = function(a) return torch.einsum('iBj,ij->Bi', a.x, a.y) + torch.einsum('...->', a.x) end,
  conv_transpose2d_basic = function(a)
    return F.conv_transpose2d(a.x, a.w, a.b, { stride = 2, padding = 1, output_padding = 1 })
  end,
  conv_transpose2d_groups_dilation = function(a)
    return F.conv_transpose2d(a.x, a.w, nil, { stride = { 2, 3 }, padding = { 1, 0 }, output_padding = { 1, 2 }, groups = 2,
      dilation = { 1, 2 } })
  end,
  conv_transpose2d_unbatched_crop = function(a) return F.conv_transpose2d(a.x, a.w, a.b, { padding = { 2, 1 } }) end,
  conv_transpose1d = function(a) return F.conv_transpose1d(a.x, a.w, a.b, { stride = 3, padding = 1, output_padding = 2 }) end,
  interpolate_nearest_factor = function(a) return F.interpolate(a.x, { scale_factor = { 1.5, 2 } }) end,
  interpolate_nearest_size_1d = function(a) return F.interpolate(a.x, { size = 7 }) end,
  interpolate_bilinear = function(a) return F.interpolate(a.x, { size = { 7, 3 }, mode = 'bilinear' }) end,
  interpolate_bilinear_corners_factor = function(a)
    return F.interpolate(a.x, { scale_factor = 2.5, mode = 'bilinear', align_corners = true })
  end,
  interpolate_linear_factor = function(a) return F.interpolate(a.x, { scale_factor = 1.7, mode = 'linear' }) end,
  conv1d_basic = function(a) return F.conv1d(a.x, a.w, a.b, { padding = 1 }) end,
  conv1d_strided_dilated_groups = function(a)
    return F.conv1d(a.x, a.w, a.b, { stride = 2, padding = 2, dilation = 2, groups = 2 })
  end,
  conv1d_same_unbatched = function(a) return F.conv1d(a.x, a.w, nil, { padding = 'same', dilation = 3 }) end,
  conv2d_same_even = function(a) return F.conv2d(a.x, a.w, a.b, { padding = 'same' }) end,
  -- a module with padding_mode: its weight and bias set to the case's, its weight's gradient checked
  conv2d_module_reflect = function(a)
    return module_case(a, torch.nn.Conv2d(2, 3, { 3, 5 }, { padding = { 1, 2 }, padding_mode = 'reflect', dtype = a.x.dtype }))
  end,
  conv2d_module_circular_same = function(a)
    return module_case(a, torch.nn.Conv2d(2, 2, { 2, 4 }, { padding = 'same', padding_mode = 'circular', dtype = a.x.dtype }))
  end,
  conv1d_module_replicate = function(a)
    return module_case(a, torch.nn.Conv1d(3, 4, 5, { stride = 2, padding = 2, padding_mode = 'replicate', dtype = a.x.dtype }))
  end,
  max_pool2d_ceil = function(a)
    return F.max_pool2d(a.x, 3, { stride = 2, padding = 1, ceil_mode = true, return_indices = true })
  end,
  max_pool2d_dilated = function(a)
    return F.max_pool2d(a.x, { 2, 3 }, { stride = { 1, 2 }, dilation = { 2, 1 }, return_indices = true })
  end,
  avg_pool2d_ceil_nopad_count = function(a)
    return F.avg_pool2d(a.x, 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false })
  end,
  avg_pool2d_include_pad = function(a) return F.avg_pool2d(a.x, { 3, 2 }, { stride = { 2, 2 }, padding = { 1, 1 } }) end,
  avg_pool2d_divisor = function(a) return F.avg_pool2d(a.x, 2, { divisor_override = 3 }) end,
  adaptive_avg_pool2d = function(a) return F.adaptive_avg_pool2d(a.x, { 3, 4 }) end,
  softmax_dim2 = function(a) return F.softmax(a.x, 2) end,
  log_softmax_last = function(a) return F.log_softmax(a.x, -1) end,
  log_softmax_large = function(a) return F.log_softmax(a.x, 1) end,
  batch_norm_train_3d = function(a)
    local rm, rv = a.rm:clone(), a.rv:clone()
    local y = F.batch_norm(a.x, rm, rv, a.w, a.b, { training = true, momentum = 0.2, eps = 1e-4 })
    return y, torch.cat({ rm, rv })
  end,
  batch_norm_train_4d_noaffine = function(a) return F.batch_norm(a.x, nil, nil, nil, nil, { training = true }) end,
  batch_norm_eval_2d = function(a)
    return F.batch_norm(a.x, a.rm, a.rv, a.w, a.b, { training = false, eps = 1e-3 })
  end,
  layer_norm_2dims = function(a) return F.layer_norm(a.x, { 4, 5 }, a.w, a.b, { eps = 1e-5 }) end,
  layer_norm_noaffine = function(a) return F.layer_norm(a.x, { 6 }) end,
  max_pool1d = function(a)
    return F.max_pool1d(a.x, 3, { stride = 2, padding = 1, ceil_mode = true, return_indices = true })
  end,
  avg_pool1d = function(a) return F.avg_pool1d(a.x, 3, { stride = 2, padding = 1, count_include_pad = false }) end,
  adaptive_avg_pool1d = function(a) return F.adaptive_avg_pool1d(a.x, 4) end,
  group_norm = function(a) return F.group_norm(a.x, 2, a.w, a.b, { eps = 1e-4 }) end,
  group_norm_4d_noaffine = function(a) return F.group_norm(a.x, 3) end,
  gelu = function(a) return F.gelu(a.x) end,
  gelu_tanh = function(a) return F.gelu(a.x, { approximate = 'tanh' }) end,
  silu = function(a) return F.silu(a.x) end,
  mish = function(a) return F.mish(a.x) end,
  softplus = function(a) return F.softplus(a.x) end,
  softplus_beta_threshold = function(a) return F.softplus(a.x, { beta = 2, threshold = 5 }) end,
  hardswish = function(a) return F.hardswish(a.x) end,
  hardsigmoid = function(a) return F.hardsigmoid(a.x) end,
  logsigmoid = function(a) return F.logsigmoid(a.x) end,
  selu = function(a) return F.selu(a.x) end,
  softsign = function(a) return F.softsign(a.x) end,
  tanhshrink = function(a) return F.tanhshrink(a.x) end,
  relu6 = function(a) return F.relu6(a.x) end,
  exp2 = function(a) return torch.exp2(a.x) end,
  frac = function(a) return a.x:frac() end,
  leaky_relu = function(a) return F.leaky_relu(a.x, 0.2) end,
  elu = function(a) return F.elu(a.x, { alpha = 0.7 }) end,
  celu = function(a) return F.celu(a.x, 1.5) end,
  hardtanh = function(a) return F.hardtanh(a.x, -0.5, 2) end,
  threshold = function(a) return F.threshold(a.x, 0.3, -2) end,
  prelu_channels = function(a) return F.prelu(a.x, a.w) end,
  prelu_single = function(a) return F.prelu(a.x, a.w) end,
  glu_last = function(a) return F.glu(a.x) end,
  glu_dim1 = function(a) return F.glu(a.x, 1) end,
  softmin = function(a) return F.softmin(a.x, 2) end,
  pad_constant = function(a) return F.pad(a.x, { 1, 2, 2, 0 }, { value = -0.5 }) end,
  pad_crop = function(a) return F.pad(a.x, { -1, 2, 1, -1 }) end,
  pad_reflect = function(a) return F.pad(a.x, { 2, 1, 1, 2 }, { mode = 'reflect' }) end,
  pad_replicate = function(a) return F.pad(a.x, { 3, 1, 0, 2 }, 'replicate') end,
  pad_circular = function(a) return F.pad(a.x, { 2, 3 }, { mode = 'circular' }) end,
  normalize = function(a) return F.normalize(a.x) end,
  normalize_p1_dim0 = function(a) return F.normalize(a.x, { p = 1, dim = 1 }) end,
  cosine_similarity = function(a) return F.cosine_similarity(a.a, a.b) end,
  cosine_similarity_broadcast = function(a) return F.cosine_similarity(a.a, a.b, { dim = -1, eps = 1e-6 }) end,
  pairwise_distance = function(a) return F.pairwise_distance(a.a, a.b, { p = 3, keepdim = true }) end,
  binary_cross_entropy = function(a) return F.binary_cross_entropy(a.x, a.y, { weight = a.w }) end,
  smooth_l1_loss = function(a) return F.smooth_l1_loss(a.x, a.y, { beta = 0.5 }) end,
  smooth_l1_loss_beta0_sum = function(a) return F.smooth_l1_loss(a.x, a.y, { beta = 0, reduction = 'sum' }) end,
  huber_loss = function(a) return F.huber_loss(a.x, a.y, { delta = 0.7, reduction = 'none' }) end,
  kl_div_batchmean = function(a) return F.kl_div(a.x, a.t, { reduction = 'batchmean' }) end,
  kl_div_log_target = function(a) return F.kl_div(a.x, a.t, { reduction = 'sum', log_target = true }) end,
  margin_ranking_loss = function(a) return F.margin_ranking_loss(a.a, a.b, a.y, { margin = 0.3 }) end,
  soft_margin_loss = function(a) return F.soft_margin_loss(a.x, a.y) end,
  tril_triu = function(a) return a.x:tril(1) * 2 + torch.triu(a.x, -1) * 3 end,
  flip_roll = function(a) return a.x:flip({ 1, 3 }) * 2 + a.x:roll({ 1, -2 }, { 2, 3 }) * 3 end,
  embedding_padding = function(a, c) return F.embedding(a.idx, a.w, { padding_idx = c.padding_idx }) end,
  linear_3d = function(a) return F.linear(a.x, a.w, a.b) end,
  cross_entropy_weight_ignore_smooth = function(a, c)
    return F.cross_entropy(a.x, a.target, { weight = a.weight, ignore_index = c.ignore_index, label_smoothing = 0.1 })
  end,
  cross_entropy_ignore_smooth = function(a, c)
    return F.cross_entropy(a.x, a.target, { ignore_index = c.ignore_index, label_smoothing = 0.3 })
  end,
  cross_entropy_plain = function(a) return F.cross_entropy(a.x, a.target) end,
  cross_entropy_smooth_sum = function(a)
    return F.cross_entropy(a.x, a.target, { label_smoothing = 0.2, reduction = 'sum' })
  end,
  cross_entropy_kdim_none = function(a) return F.cross_entropy(a.x, a.target, { reduction = 'none' }) end,
  nll_loss_weight_sum = function(a) return F.nll_loss(a.x, a.target, { weight = a.weight, reduction = 'sum' }) end,
  mse_loss = function(a) return F.mse_loss(a.x, a.y) end,
  l1_loss_sum = function(a) return F.l1_loss(a.x, a.y, { reduction = 'sum' }) end,
  bce_with_logits_posweight = function(a)
    return F.binary_cross_entropy_with_logits(a.x, a.y, { weight = a.weight, pos_weight = a.pos_weight })
  end,
}

-- elementwise |got - want| <= rel * max(|want|, floor); floor is 1 in float64 and, in float32, a
-- twentieth of the tensor's largest magnitude, or of 1 (so values that cancel to near 0, or tails like
-- gelu's, are not held to more digits than float32 has)
local function close(got, want, what, rel)
  rel = rel or 1e-9
  assert.are.same(want.shape, { table.unpack(got.shape) }, what .. ': shape')
  local g = got:double():reshape(-1):tolist()
  local w = want.data
  local floor = 1
  if rel > 1e-9 then
    local m = 0
    for i = 1, #w do m = math.max(m, math.abs(w[i])) end
    floor = 5e-2 * math.max(m, 1)
  end
  for i = 1, #w do
    local tol = rel * math.max(floor, math.abs(w[i]))
    if not (math.abs(g[i] - w[i]) <= tol) then
      error(string.format('%s: element %d is %.17g, PyTorch gives %.17g', what, i, g[i], w[i]), 2)
    end
  end
end

local function run_case(c, dtype, rel)
  local fn = run[c.name]
  assert.is_function(fn, 'no lutorch form for case ' .. c.name)
  local a = {}
  for k, r in pairs(c.inputs) do
    a[k] = tensor_of(r)
    if dtype ~= torch.float64 and a[k]:is_floating_point() then a[k] = a[k]:to(dtype) end
    if c.grads and c.grads[k] then a[k]:requires_grad_() end
  end
  local tag = c.name .. (dtype == torch.float64 and '' or ' (' .. tostring(dtype) .. ')')
  local y, y2 = fn(a, c)
  assert.are.equal(dtype, y.dtype)
  close(y, c.out, tag .. ' output', rel)
  if c.out2 then
    local want = c.out2
    if want.dtype == 'int64' then -- PyTorch's 0-based indices; lutorch's are 1-based
      local shifted = {}
      for i, v in ipairs(want.data) do shifted[i] = v + 1 end
      want = { shape = want.shape, data = shifted }
    end
    close(y2, want, tag .. ' second output', want.dtype == 'int64' and 1e-9 or rel)
  end
  if c.grads then
    (y * tensor_of(c.gy):to(dtype)):sum():backward()
    for k, r in pairs(c.grads) do
      assert.is_not_nil(a[k].grad, tag .. ': no gradient for ' .. k)
      close(a[k].grad, r, tag .. ' gradient of ' .. k, rel)
    end
  end
end

-- PyTorch's float64 hardsigmoid backward multiplies by 1.0f / 6.0f, a float32 sixth (relative
-- error 3e-8); lutorch divides by 6
local LOOSER64 = { hardsigmoid = 1e-7 }
-- float32 sums that cancel: the query bias's gradient through a causal softmax (1.3e-5 of its
-- largest element here)
local LOOSER32 = { mha_causal_batch_first_heads = 1e-4 }

describe('nn.functional parity with PyTorch', function()
  for _, c in ipairs(cases) do
    it(c.name, function() run_case(c, torch.float64, LOOSER64[c.name] or 1e-9) end)
    it(c.name .. ' in float32', function() run_case(c, torch.float32, LOOSER32[c.name] or 1e-5) end)
  end
end)

-- the same cases through the layers, their parameters set to the case's values
local by_name = {}
for _, c in ipairs(cases) do by_name[c.name] = c end

local function set(p, r) torch.no_grad(function() p:copy_(tensor_of(r)) end) end

describe('nn layers parity with PyTorch', function()
  local nn = torch.nn
  local function check(name, make, call)
    it(name, function()
      local c = by_name[name]
      local m = make(c)
      m:double()
      local a = {}
      for k, r in pairs(c.inputs) do a[k] = tensor_of(r) end
      if a.x then a.x:requires_grad_() end
      local y = call(m, a, c)
      close(y, c.out, name .. ' output')
      if c.grads and c.grads.x then
        (y * tensor_of(c.gy)):sum():backward()
        close(a.x.grad, c.grads.x, name .. ' gradient of x')
      end
      if c.grads and c.grads.w and m.weight then close(m.weight.grad, c.grads.w, name .. ' gradient of the weight') end
    end)
  end
  check('conv2d_basic', function(c)
    local m = nn.Conv2d(3, 4, 3, { padding = 1 }):double()
    set(m.weight, c.inputs.w); set(m.bias, c.inputs.b)
    return m
  end, function(m, a) return m(a.x) end)
  check('linear_3d', function(c)
    local m = nn.Linear(4, 5):double()
    set(m.weight, c.inputs.w); set(m.bias, c.inputs.b)
    return m
  end, function(m, a) return m(a.x) end)
  check('max_pool2d_ceil', function() return nn.MaxPool2d(3, { stride = 2, padding = 1, ceil_mode = true }) end,
    function(m, a) return m(a.x) end)
  check('batch_norm_train_3d', function(c)
    local m = nn.BatchNorm1d(3, { eps = 1e-4, momentum = 0.2 }):double()
    set(m.weight, c.inputs.w); set(m.bias, c.inputs.b)
    set(m.running_mean, c.inputs.rm); set(m.running_var, c.inputs.rv)
    return m
  end, function(m, a, c)
    local y = m(a.x)
    -- the running statistics were updated as PyTorch's
    local stats = torch.cat({ m.running_mean, m.running_var })
    close(stats, c.out2, 'batch_norm_train_3d running statistics')
    return y
  end)
  check('batch_norm_eval_2d', function(c)
    local m = nn.BatchNorm1d(3, { eps = 1e-3 }):double()
    set(m.weight, c.inputs.w); set(m.bias, c.inputs.b)
    set(m.running_mean, c.inputs.rm); set(m.running_var, c.inputs.rv)
    m:eval()
    return m
  end, function(m, a) return m(a.x) end)
  check('layer_norm_2dims', function(c)
    local m = nn.LayerNorm({ 4, 5 }):double()
    set(m.weight, c.inputs.w); set(m.bias, c.inputs.b)
    return m
  end, function(m, a) return m(a.x) end)
  check('embedding_padding', function(c)
    local m = nn.Embedding(5, 4, { padding_idx = c.padding_idx }):double()
    set(m.weight, c.inputs.w)
    return m
  end, function(m, a, c)
    local y = m(a.idx)
    ;(y * tensor_of(c.gy)):sum():backward()
    close(m.weight.grad, c.grads.w, 'embedding_padding gradient of the weight')
    return y
  end)
  check('cross_entropy_weight_ignore_smooth', function(c)
    return nn.CrossEntropyLoss({ weight = tensor_of(c.inputs.weight), ignore_index = c.ignore_index,
      label_smoothing = 0.1 })
  end, function(m, a) return m(a.x, a.target) end)
end)

describe('training parity with PyTorch', function()
  it('a two-layer MLP trained 200 steps with SGD reaches the loss of the PyTorch run', function()
    local t = cases.training
    local nn = torch.nn
    local model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    set(model[1].weight, t.W1); set(model[1].bias, t.b1)
    set(model[3].weight, t.W2); set(model[3].bias, t.b2)
    local X, Y = tensor_of(t.X):float(), tensor_of(t.Y)
    local opt = torch.optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
    for step = 1, 200 do
      local loss = torch.F.cross_entropy(model(X), Y)
      opt:zero_grad()
      loss:backward()
      opt:step()
      local want = t.losses[step]
      assert(math.abs(loss:item() - want) <= 1e-4 * math.abs(want),
        string.format('step %d: loss %.8g, PyTorch %.8g', step, loss:item(), want))
    end
    assert.is_true(t.losses[200] < 0.7 * t.losses[1], 'the reference run learns')
    close(model[3].weight, t.final_W2, 'the last layer after 200 steps', 1e-4)
  end)
end)

-- after torch.manual_seed(0), a new module's parameters are PyTorch's own (the same generator, the
-- same draws in the same order)
describe('initial parameters after manual_seed(0), against PyTorch', function()
  local nn = torch.nn
  local makers = {
    Conv1d = function() return nn.Conv1d(3, 2, 3) end,
    ConvTranspose2d = function() return nn.ConvTranspose2d(3, 2, 3, { stride = 2 }) end,
    LSTM = function() return nn.LSTM(3, 4, { num_layers = 2, bidirectional = true }) end,
    GRUCell = function() return nn.GRUCell(3, 4) end,
    MultiheadAttention = function() return nn.MultiheadAttention(8, 2) end,
    TransformerEncoderLayer = function() return nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 }) end,
    MultiheadAttention_kdim_bias_kv = function()
      return nn.MultiheadAttention(8, 2, { kdim = 3, vdim = 5, add_bias_kv = true })
    end,
    Transformer = function()
      return nn.Transformer(8, 2, { num_encoder_layers = 2, num_decoder_layers = 1, dim_feedforward = 16 })
    end,
    PReLU = function() return nn.PReLU(3) end,
    GroupNorm = function() return nn.GroupNorm(2, 4) end,
  }
  for name, want in pairs(cases.inits) do
    it(name, function()
      torch.manual_seed(0)
      local ps = makers[name]():parameters()
      assert.are.equal(#want, #ps)
      for i, p in ipairs(ps) do
        local got = p:detach():reshape(-1):totable()
        assert.are.equal(#want[i], #got)
        for j = 1, #got do
          assert(math.abs(got[j] - want[i][j]) <= 1e-6, string.format('%s parameter %d element %d: %.9g, PyTorch %.9g', name, i, j, got[j], want[i][j]))
        end
      end
    end)
  end
end)
