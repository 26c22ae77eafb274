-- The nn functions that PyTorch also exposes at the top level (torch.conv2d, torch.layer_norm,
-- torch.dropout, ...), with the positional arguments of PyTorch's torch.* forms (its ATen
-- signatures, not F's keywords): torch.layer_norm(input, normalized_shape, weight, bias, eps,
-- cudnn_enable), torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
-- eps, cudnn_enabled), torch.dropout(input, p, train). Each maps its arguments onto the
-- torch.nn.functional function of the same concept. Arguments after the tensors may also come as one
-- trailing options table of their names. Dims, indices and classes are 1-based, as everywhere in
-- lutorch; a reduction is PyTorch's number (0 'none', 1 'mean', 2 'sum') or its name. Loading this
-- file does not load torch.nn: F is looked up on each call.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

local function F() return torch.F end

-- the values of `names` from the positional arguments in `given` (a table.pack), the last of which
-- may be an options table of names not given positionally (a table with no array part, so that a
-- size like {2, 2} stays positional); nil values take `defaults`
local function args(op, given, names, defaults)
  local n = given.n
  local last = given[n]
  local o
  if n > 0 and type(last) == 'table' and not torch.is_tensor(last) and #last == 0 and next(last) ~= nil then
    o, n = last, n - 1
  end
  if n > #names then
    error(string.format('%s: takes at most %d arguments, got %d', op, #names, n), 3)
  end
  local v = {}
  for i = 1, n do v[i] = given[i] end
  if o then
    for k, val in pairs(o) do
      local at
      for i, name in ipairs(names) do if name == k then at = i end end
      if at == nil then
        error(string.format("%s: unknown option '%s' (its arguments are %s)", op, tostring(k), table.concat(names, ', ')), 3)
      end
      if at <= n then error(string.format("%s: argument '%s' given twice", op, k), 3) end
      v[at] = val
    end
  end
  for i = 1, #names do
    if v[i] == nil then v[i] = defaults and defaults[i] end
  end
  return table.unpack(v, 1, #names)
end

local REDUCTIONS = { [0] = 'none', [1] = 'mean', [2] = 'sum' }

-- PyTorch's reduction number (or its name) as F's name
local function reduction(r, op)
  if r == nil then return 'mean' end
  if type(r) == 'string' then return r end
  local name = math.type(as_int(r)) == 'integer' and REDUCTIONS[as_int(r)]
  if not name then
    error(string.format("%s: reduction must be 0 ('none'), 1 ('mean'), 2 ('sum') or one of those names, got %s", op,
      tostring(r)), 3)
  end
  return name
end

-- stride = () (an empty size) in PyTorch's pooling signatures means the kernel size
local function stride_of(s)
  if type(s) == 'table' and not torch.is_tensor(s) and next(s) == nil then return nil end
  return s
end

local function refuse(op, what, v)
  if v then error(string.format('%s: %s is not supported by lutorch', op, what), 3) end
end

-- ---- convolutions ----
-- torch.convNd(input, weight, bias = nil, stride = 1, padding = 0, dilation = 1, groups = 1)
for _, d in ipairs { '1d', '2d', '3d' } do
  local name = 'conv' .. d
  torch[name] = function(x, w, ...)
    local b, stride, padding, dilation, groups = args(name, table.pack(...),
      { 'bias', 'stride', 'padding', 'dilation', 'groups' })
    return F()[name](x, w, b, { stride = stride, padding = padding, dilation = dilation, groups = groups })
  end
  -- torch.conv_transposeNd(input, weight, bias = nil, stride = 1, padding = 0, output_padding = 0,
  -- groups = 1, dilation = 1)
  local tname = 'conv_transpose' .. d
  torch[tname] = function(x, w, ...)
    local b, stride, padding, output_padding, groups, dilation = args(tname, table.pack(...),
      { 'bias', 'stride', 'padding', 'output_padding', 'groups', 'dilation' })
    return F()[tname](x, w, b, { stride = stride, padding = padding, output_padding = output_padding, groups = groups,
      dilation = dilation })
  end
  -- torch.max_poolNd(input, kernel_size, stride = kernel_size, padding = 0, dilation = 1, ceil_mode = false);
  -- torch.max_pool1d_with_indices likewise, -> output, 1-based indices
  local pname = 'max_pool' .. d
  for _, op in ipairs(d == '1d' and { pname, pname .. '_with_indices' } or { pname }) do
    torch[op] = function(x, k, ...)
      local stride, padding, dilation, ceil_mode = args(op, table.pack(...), { 'stride', 'padding', 'dilation', 'ceil_mode' })
      return F()[pname](x, k, { stride = stride_of(stride), padding = padding, dilation = dilation, ceil_mode = ceil_mode,
        return_indices = op ~= pname or nil })
    end
  end
end

--- torch.avg_pool1d(input, kernel_size, stride = kernel_size, padding = 0, ceil_mode = false,
-- count_include_pad = true)
function torch.avg_pool1d(x, k, ...)
  local stride, padding, ceil_mode, cip = args('avg_pool1d', table.pack(...),
    { 'stride', 'padding', 'ceil_mode', 'count_include_pad' })
  return F().avg_pool1d(x, k, { stride = stride_of(stride), padding = padding, ceil_mode = ceil_mode,
    count_include_pad = cip })
end
--- torch.adaptive_avg_pool1d(input, output_size)
function torch.adaptive_avg_pool1d(x, size) return F().adaptive_avg_pool1d(x, size) end
--- torch.adaptive_max_pool1d(input, output_size) -> output, 1-based indices (both, as PyTorch's)
function torch.adaptive_max_pool1d(x, size) return F().adaptive_max_pool1d(x, size, true) end

-- ---- normalisation ----
--- torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
function torch.batch_norm(x, ...)
  local w, b, rm, rv, training, momentum, eps = args('batch_norm', table.pack(...),
    { 'weight', 'bias', 'running_mean', 'running_var', 'training', 'momentum', 'eps', 'cudnn_enabled' })
  return F().batch_norm(x, rm, rv, w, b, { training = training, momentum = momentum, eps = eps })
end
--- torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
-- cudnn_enabled)
function torch.instance_norm(x, ...)
  local w, b, rm, rv, use_input_stats, momentum, eps = args('instance_norm', table.pack(...),
    { 'weight', 'bias', 'running_mean', 'running_var', 'use_input_stats', 'momentum', 'eps', 'cudnn_enabled' })
  return F().instance_norm(x, rm, rv, w, b, { use_input_stats = use_input_stats, momentum = momentum, eps = eps })
end
--- torch.layer_norm(input, normalized_shape, weight = nil, bias = nil, eps = 1e-5, cudnn_enable = true)
function torch.layer_norm(x, shape, ...)
  local w, b, eps = args('layer_norm', table.pack(...), { 'weight', 'bias', 'eps', 'cudnn_enable' })
  return F().layer_norm(x, shape, w, b, { eps = eps })
end
--- torch.group_norm(input, num_groups, weight = nil, bias = nil, eps = 1e-5, cudnn_enabled = true)
function torch.group_norm(x, groups, ...)
  local w, b, eps = args('group_norm', table.pack(...), { 'weight', 'bias', 'eps', 'cudnn_enabled' })
  return F().group_norm(x, groups, w, b, { eps = eps })
end

-- ---- embeddings ----
-- torch.embedding's padding_idx: nil or negative (PyTorch's -1) for none, else a 1-based row
local function padding_row(p, op)
  if p == nil or (type(p) == 'number' and p < 0) then return nil end
  p = as_int(p)
  if math.type(p) ~= 'integer' then error(op .. ': padding_idx must be an integer, got ' .. tostring(p), 3) end
  return p
end

--- torch.embedding(weight, indices, padding_idx = -1 (none), scale_grad_by_freq = false, sparse = false):
-- the weight first, as PyTorch's
function torch.embedding(w, idx, ...)
  local pad, sgbf, sparse = args('embedding', table.pack(...), { 'padding_idx', 'scale_grad_by_freq', 'sparse' })
  refuse('embedding', 'sparse', sparse)
  return F().embedding(idx, w, { padding_idx = padding_row(pad, 'embedding'), scale_grad_by_freq = sgbf })
end

--- torch.embedding_renorm_(weight, indices, max_norm, norm_type) -> weight: the rows of weight (2-D,
-- floating) at the 1-based indices (int64 or int32, any shape) whose norm_type-norm exceeds max_norm
-- scaled in place to max_norm / (norm + 1e-7) of themselves, outside autograd (a leaf that requires
-- grad is refused, as by PyTorch, unless grad mode is off)
function torch.embedding_renorm_(w, idx, max_norm, norm_type)
  local op = 'embedding_renorm_'
  if not torch.is_tensor(w) then error(op .. ': expected weight to be a tensor, got ' .. type(w), 2) end
  if not torch.is_tensor(idx) then error(op .. ': expected indices to be a tensor, got ' .. type(idx), 2) end
  if type(max_norm) ~= 'number' then error(op .. ': max_norm must be a number, got ' .. type(max_norm), 2) end
  if type(norm_type) ~= 'number' then error(op .. ': norm_type must be a number, got ' .. type(norm_type), 2) end
  if w:dim() ~= 2 then
    error(string.format('%s: expected weight to be a 2-dimensional tensor, got %d dimensions', op, w:dim()), 2)
  end
  if not w.dtype.is_floating_point then
    error(op .. ': expected a floating point weight, got ' .. tostring(w.dtype), 2)
  end
  if idx.dtype ~= torch.int64 and idx.dtype ~= torch.int32 then
    error(op .. ': expected indices of dtype int64 or int32, got ' .. tostring(idx.dtype), 2)
  end
  if idx.device ~= w.device then
    error(string.format('%s: expected indices and weight on the same device, got %s and %s', op,
      tostring(idx.device), tostring(w.device)), 2)
  end
  if w.requires_grad and w.is_leaf and torch.is_grad_enabled() then
    error(op .. ': a leaf Variable that requires grad is being used in an in-place operation.', 2)
  end
  local flat = idx:reshape(-1):long()
  if flat:numel() == 0 then return w end
  local lo, hi = flat:min():item(), flat:max():item()
  if lo < 1 or hi > w:size(1) then
    error(string.format('%s: index %d is out of range 1..%d (indices are 1-based rows of the weight)', op,
      lo < 1 and lo or hi, w:size(1)), 2)
  end
  F()._embedding_renorm_(w, flat, max_norm, norm_type)
  return w
end

--- torch.norm_except_dim(v, pow = 2, dim = 1): the pow-norms (pow an integer, as PyTorch's) of v over every dimension but dim, of
-- v's number of dimensions (sizes 1 but at dim), as weight_norm's g. dim is 1-based and negative
-- dims count from the end, as everywhere in lutorch; dim = false is the norm of the whole tensor (a
-- 0-dim tensor: PyTorch's dim = -1, which in lutorch is the last dimension; nn.utils.weight_norm's
-- dim = false likewise).
function torch.norm_except_dim(v, pow, dim)
  local op = 'norm_except_dim'
  if not torch.is_tensor(v) then error(op .. ': expected v to be a tensor, got ' .. type(v), 2) end
  if pow == nil then pow = 2 end
  pow = as_int(pow)
  if math.type(pow) ~= 'integer' then error(op .. ': pow must be an integer (as PyTorch\'s int pow), got ' .. tostring(pow), 2) end
  if not v.dtype.is_floating_point then
    error(op .. ': expected a floating point tensor, got ' .. tostring(v.dtype), 2)
  end
  if dim == false then return v:norm(pow) end
  if dim == nil then dim = 1 end
  dim = as_int(dim)
  local n = v:dim()
  if math.type(dim) ~= 'integer' then
    error(op .. ': dim must be an integer or false (the whole tensor), got ' .. tostring(dim), 2)
  end
  local d = dim < 0 and dim + n + 1 or dim
  if dim == 0 or d < 1 or d > n then
    error(string.format('%s: dim %d is out of range for a tensor with %d dimensions (dims are 1-based; '
      .. 'false: the whole tensor)', op, dim, n), 2)
  end
  local shape = {}
  for i = 1, n do shape[i] = i == d and v:size(i) or 1 end
  return v:transpose(1, d):reshape(v:size(d), -1):norm(pow, 2):reshape(shape)
end

local BAG_MODES = { [0] = 'sum', [1] = 'mean', [2] = 'max' }

--- torch.embedding_bag(weight, indices, offsets, scale_grad_by_freq = false, mode = 0 (sum; 1 mean,
-- 2 max, or the name), sparse = false, per_sample_weights = nil, include_last_offset = false,
-- padding_idx = nil) -> the bags' reductions (PyTorch also returns three bookkeeping tensors of its
-- backward; lutorch returns the output alone). offsets are 1-based.
function torch.embedding_bag(w, idx, offsets, ...)
  local op = 'embedding_bag'
  local sgbf, mode, sparse, psw, ilo, pad = args(op, table.pack(...),
    { 'scale_grad_by_freq', 'mode', 'sparse', 'per_sample_weights', 'include_last_offset', 'padding_idx' })
  if mode == nil then mode = 0 end
  if type(mode) ~= 'string' then
    local m = math.type(as_int(mode)) == 'integer' and BAG_MODES[as_int(mode)]
    if not m then error(op .. ": mode must be 0 (sum), 1 (mean), 2 (max) or one of those names, got " .. tostring(mode), 2) end
    mode = m
  end
  return F().embedding_bag(idx, w, offsets, { mode = mode, per_sample_weights = psw, include_last_offset = ilo,
    padding_idx = padding_row(pad, op), scale_grad_by_freq = sgbf, sparse = sparse })
end

-- ---- dropout: torch.X(input, p, train), train required as in PyTorch; torch.X_ in place ----
local function train_flag(op, p, train)
  if type(train) ~= 'boolean' then
    error(string.format('%s: expected (input, p, train) with train a boolean, got %s', op, type(train)), 3)
  end
  if type(p) ~= 'number' then error(string.format('%s: p must be a number, got %s', op, type(p)), 3) end
end
for name, f in pairs {
  dropout = function(x, p, train, inplace) return F().dropout(x, p, train, inplace) end,
  alpha_dropout = function(x, p, train, inplace) return F().alpha_dropout(x, p, train, inplace) end,
  feature_alpha_dropout = function(x, p, train, inplace) return F().feature_alpha_dropout(x, p, train, inplace) end,
  feature_dropout = function(x, p, train, inplace) return F()._feature_dropout(x, p, train, inplace) end,
} do
  torch[name] = function(x, p, train)
    train_flag(name, p, train)
    return f(x, p, train, false)
  end
  torch[name .. '_'] = function(x, p, train)
    train_flag(name .. '_', p, train)
    return f(x, p, train, true)
  end
end

-- ---- vision ----
function torch.pixel_shuffle(x, r) return F().pixel_shuffle(x, r) end
function torch.pixel_unshuffle(x, r) return F().pixel_unshuffle(x, r) end
function torch.channel_shuffle(x, groups) return F().channel_shuffle(x, groups) end
--- torch.constant_pad_nd(input, pad, value = 0)
function torch.constant_pad_nd(x, pad, value)
  if value ~= nil and type(value) ~= 'number' then
    error('constant_pad_nd: value must be a number, got ' .. type(value), 2)
  end
  return F().pad(x, pad, { value = value })
end

-- ---- distances ----
--- torch.cosine_similarity(x1, x2, dim = 2, eps = 1e-8)
function torch.cosine_similarity(x1, x2, ...)
  local dim, eps = args('cosine_similarity', table.pack(...), { 'dim', 'eps' })
  return F().cosine_similarity(x1, x2, { dim = dim, eps = eps })
end
--- torch.pairwise_distance(x1, x2, p = 2, eps = 1e-6, keepdim = false)
function torch.pairwise_distance(x1, x2, ...)
  local p, eps, keepdim = args('pairwise_distance', table.pack(...), { 'p', 'eps', 'keepdim' })
  return F().pairwise_distance(x1, x2, { p = p, eps = eps, keepdim = keepdim })
end
function torch.pdist(x, p) return F().pdist(x, p) end

-- ---- activations ----
function torch.prelu(x, w) return F().prelu(x, w) end
torch.Tensor.prelu = torch.prelu -- (x:prelu(w) and x:hardshrink(lambd) are PyTorch's methods too)
--- torch.celu(input, alpha = 1), torch.celu_ in place
function torch.celu(x, alpha) return F().celu(x, alpha or 1, false) end
function torch.celu_(x, alpha) return F().celu(x, alpha or 1, true) end
function torch.relu_(x) return F().relu(x, { inplace = true }) end
function torch.selu_(x) return F().selu(x, true) end
--- torch.rrelu(input, lower = 1/8, upper = 1/3, training = false, generator = nil); torch.rrelu_ in place
local function rrelu(op, inplace)
  return function(x, ...)
    local lower, upper, training, generator = args(op, table.pack(...), { 'lower', 'upper', 'training', 'generator' })
    refuse(op, 'generator', generator)
    return F().rrelu(x, lower or 1 / 8, upper or 1 / 3, training or false, inplace)
  end
end
torch.rrelu, torch.rrelu_ = rrelu('rrelu', false), rrelu('rrelu_', true)
--- torch.threshold(input, threshold, value); torch.threshold_ in place
function torch.threshold(x, th, value) return F().threshold(x, th, value, false) end
function torch.threshold_(x, th, value) return F().threshold(x, th, value, true) end
function torch.hardshrink(x, lambd) return F().hardshrink(x, lambd) end
torch.Tensor.hardshrink = torch.hardshrink
function torch.bilinear(x1, x2, w, b) return F().bilinear(x1, x2, w, b) end

-- ---- recurrent cells ----
--- torch.rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih = nil, b_hh = nil), torch.rnn_relu_cell and
--- torch.gru_cell -> h'; torch.lstm_cell(input, {h, c}, w_ih, w_hh, b_ih, b_hh) -> h', c': one step
--- of nn.RNNCell's, nn.GRUCell's and nn.LSTMCell's equations with the weights given
for op, mode in pairs { rnn_tanh_cell = 'RNN_TANH', rnn_relu_cell = 'RNN_RELU', gru_cell = 'GRU', lstm_cell = 'LSTM' } do
  torch[op] = function(x, hx, w_ih, w_hh, b_ih, b_hh)
    return require('torch.nn.rnn').cell_step(op, mode, x, hx, w_ih, w_hh, b_ih, b_hh)
  end
end

--- torch.rnn_tanh, torch.rnn_relu, torch.lstm and torch.gru: (input, hx, params, has_biases, num_layers,
--- dropout, train, bidirectional, batch_first) -> output, h_n (lstm: output, h_n, c_n), or the packed
--- form (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional): nn.RNN's,
--- nn.LSTM's and nn.GRU's layers over the weights given (M._sequence_op in lua/torch/nn/rnn.lua)
for op, mode in pairs { rnn_tanh = 'RNN_TANH', rnn_relu = 'RNN_RELU', gru = 'GRU', lstm = 'LSTM' } do
  torch[op] = function(...) return require('torch.nn.rnn')._sequence_op(op, mode, ...) end
end

-- ---- losses ----
--- torch.kl_div(input, target, reduction = 1, {log_target = false})
function torch.kl_div(x, t, ...)
  local r, log_target = args('kl_div', table.pack(...), { 'reduction', 'log_target' })
  return F().kl_div(x, t, { reduction = reduction(r, 'kl_div'), log_target = log_target })
end
--- torch.margin_ranking_loss(input1, input2, target, margin = 0, reduction = 1)
function torch.margin_ranking_loss(x1, x2, y, ...)
  local margin, r = args('margin_ranking_loss', table.pack(...), { 'margin', 'reduction' })
  return F().margin_ranking_loss(x1, x2, y, { margin = margin, reduction = reduction(r, 'margin_ranking_loss') })
end
--- torch.cosine_embedding_loss(input1, input2, target, margin = 0, reduction = 1)
function torch.cosine_embedding_loss(x1, x2, y, ...)
  local margin, r = args('cosine_embedding_loss', table.pack(...), { 'margin', 'reduction' })
  return F().cosine_embedding_loss(x1, x2, y, { margin = margin, reduction = reduction(r, 'cosine_embedding_loss') })
end
--- torch.hinge_embedding_loss(input, target, margin = 1, reduction = 1)
function torch.hinge_embedding_loss(x, y, ...)
  local margin, r = args('hinge_embedding_loss', table.pack(...), { 'margin', 'reduction' })
  return F().hinge_embedding_loss(x, y, { margin = margin, reduction = reduction(r, 'hinge_embedding_loss') })
end
--- torch.poisson_nll_loss(input, target, log_input, full, eps, reduction): all required, as PyTorch's
function torch.poisson_nll_loss(x, t, log_input, full, eps, r)
  if type(log_input) ~= 'boolean' or type(full) ~= 'boolean' or type(eps) ~= 'number' or r == nil then
    error('poisson_nll_loss: expected (input, target, log_input, full, eps, reduction), got log_input '
      .. type(log_input) .. ', full ' .. type(full) .. ', eps ' .. type(eps) .. ', reduction ' .. type(r), 2)
  end
  return F().poisson_nll_loss(x, t, { log_input = log_input, full = full, eps = eps,
    reduction = reduction(r, 'poisson_nll_loss') })
end
--- torch.triplet_margin_loss(anchor, positive, negative, margin = 1, p = 2, eps = 1e-6, swap = false,
-- reduction = 1)
function torch.triplet_margin_loss(a, pos, neg, ...)
  local margin, p, eps, swap, r = args('triplet_margin_loss', table.pack(...), { 'margin', 'p', 'eps', 'swap', 'reduction' })
  return F().triplet_margin_loss(a, pos, neg, { margin = margin, p = p, eps = eps, swap = swap,
    reduction = reduction(r, 'triplet_margin_loss') })
end
--- torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank = 1, reduction = 1,
-- zero_infinity = false): the blank a 1-based class
function torch.ctc_loss(lp, targets, il, tl, ...)
  local blank, r, zi = args('ctc_loss', table.pack(...), { 'blank', 'reduction', 'zero_infinity' })
  return F().ctc_loss(lp, targets, il, tl, { blank = blank, reduction = reduction(r, 'ctc_loss'), zero_infinity = zi })
end
--- torch.binary_cross_entropy_with_logits(input, target, weight = nil, pos_weight = nil, reduction = 1)
function torch.binary_cross_entropy_with_logits(x, y, ...)
  local w, pw, r = args('binary_cross_entropy_with_logits', table.pack(...), { 'weight', 'pos_weight', 'reduction' })
  return F().binary_cross_entropy_with_logits(x, y, { weight = w, pos_weight = pw,
    reduction = reduction(r, 'binary_cross_entropy_with_logits') })
end
