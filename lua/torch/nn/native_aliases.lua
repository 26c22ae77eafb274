-- PyTorch's "native_" and low-level forms of ops lutorch has under their ordinary names, with their
-- ATen signatures (every argument positional and required, as PyTorch's; nil for an optional
-- tensor, PyTorch's None) and their extra outputs:
--   torch.native_layer_norm(input, normalized_shape, weight, bias, eps) -> output, mean, rstd
--   torch.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
--     -> output, save_mean, save_invstd (empty when not training, as PyTorch's CPU kernel)
--   torch.native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> output, mean, rstd (N x group)
--   torch.native_dropout(input, p, train) -> output, mask (bool)
--   torch.native_channel_shuffle(input, groups) (and F.native_channel_shuffle)
--   torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
--   torch.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) and its _2d and
--     _3d forms: modes as PyTorch's numbers (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
--     2 reflection)
--   torch.affine_grid_generator(theta, size, align_corners)
--   torch.conv_tbc(input, weight, bias, pad = 0) (and F.conv_tbc): a 1-D convolution over input
--     (time, batch, in_channels) with weight (kernel, in_channels, out_channels)
-- Each maps onto the torch.nn.functional function of the same concept, so autograd and every
-- device come with it. Loading this file does not load torch.nn: F is looked up on each call.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

local function F() return torch.F end

local function shape_str(t) return '[' .. table.concat(t.shape, ', ') .. ']' end

local function tensor_arg(op, what, t, optional)
  if t == nil and optional then return end
  if not torch.is_tensor(t) then
    error(string.format('%s: expected %s to be a tensor%s, got %s', op, what, optional and ' or nil' or '', type(t)), 3)
  end
end

local function number_arg(op, what, v)
  if type(v) ~= 'number' then error(string.format('%s: expected %s to be a number, got %s', op, what, type(v)), 3) end
  return v
end

local function int_arg(op, what, v)
  local i = as_int(v)
  if math.type(i) ~= 'integer' then
    error(string.format('%s: expected %s to be an integer, got %s', op, what, tostring(v)), 3)
  end
  return i
end

local function bool_arg(op, what, v)
  if type(v) ~= 'boolean' then error(string.format('%s: expected %s to be a boolean, got %s', op, what, type(v)), 3) end
  return v
end

local function floating(op, x)
  if not x.dtype.is_floating_point then
    error(string.format('%s: expected a floating point input, got %s', op, tostring(x.dtype)), 3)
  end
end

-- ---- normalisation with its statistics ----

--- torch.native_layer_norm(input, normalized_shape, weight, bias, eps) -> output, mean, rstd: mean and
-- 1 / sqrt(biased variance + eps) over the last #normalized_shape dims, of shape input's leading
-- dims then 1s
function torch.native_layer_norm(x, shape, w, b, eps)
  local op = 'native_layer_norm'
  tensor_arg(op, 'input', x)
  if type(shape) == 'number' then shape = { shape } end
  if type(shape) ~= 'table' or torch.is_tensor(shape) then
    error(op .. ': expected normalized_shape to be a table of sizes, got ' .. type(shape), 2)
  end
  tensor_arg(op, 'weight', w, true)
  tensor_arg(op, 'bias', b, true)
  eps = number_arg(op, 'eps', eps)
  floating(op, x)
  local n, d = #shape, x:dim()
  local ok = d >= n
  for i = 1, n do ok = ok and x:size(d - n + i) == shape[i] end
  if not ok then
    error(string.format('%s: given normalized_shape=[%s], expected input with shape [*, %s], but got input of size %s',
      op, table.concat(shape, ', '), table.concat(shape, ', '), shape_str(x)), 2)
  end
  local stat_shape, outer = {}, 1
  for i = 1, d do
    stat_shape[i] = i <= d - n and x:size(i) or 1
    if i <= d - n then outer = outer * x:size(i) end
  end
  local flat = x:reshape(outer, -1)
  local mean = flat:mean(2, true)
  local rstd = (flat:var(2, true, { unbiased = false }) + eps):rsqrt()
  return F().layer_norm(x, shape, w, b, { eps = eps }), mean:view(stat_shape), rstd:view(stat_shape)
end

--- torch.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
-- -> output, save_mean, save_invstd: training, the batch's per-channel mean and
-- 1 / sqrt(biased variance + eps) (and the running statistics updated); else two empty tensors
function torch.native_batch_norm(x, w, b, rm, rv, training, momentum, eps)
  local op = 'native_batch_norm'
  tensor_arg(op, 'input', x)
  for _, a in ipairs { { 'weight', w }, { 'bias', b }, { 'running_mean', rm }, { 'running_var', rv } } do
    tensor_arg(op, a[1], a[2], true)
  end
  bool_arg(op, 'training', training)
  momentum, eps = number_arg(op, 'momentum', momentum), number_arg(op, 'eps', eps)
  floating(op, x)
  if x:dim() < 2 then error(op .. ': expected an input of at least 2 dimensions (N, C, ...), got ' .. x:dim() .. '-D', 2) end
  local mean, invstd
  if training then
    local xc = x:transpose(1, 2):reshape(x:size(2), -1)
    mean = xc:mean(2)
    invstd = (xc:var(2, false, { unbiased = false }) + eps):rsqrt()
  else
    mean = torch.empty(0, { dtype = x.dtype, device = x.device })
    invstd = torch.empty(0, { dtype = x.dtype, device = x.device })
  end
  local y = F().batch_norm(x, rm, rv, w, b, { training = training, momentum = momentum, eps = eps })
  return y, mean, invstd
end

--- torch.native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> output, mean, rstd: the
-- statistics of each sample's groups of channels, N x group
function torch.native_group_norm(x, w, b, N, C, HxW, group, eps)
  local op = 'native_group_norm'
  tensor_arg(op, 'input', x)
  tensor_arg(op, 'weight', w, true)
  tensor_arg(op, 'bias', b, true)
  N, C, HxW = int_arg(op, 'N', N), int_arg(op, 'C', C), int_arg(op, 'HxW', HxW)
  group, eps = int_arg(op, 'group', group), number_arg(op, 'eps', eps)
  floating(op, x)
  if x:dim() < 2 or x:size(1) ~= N or x:size(2) ~= C or x:numel() ~= N * C * HxW then
    error(string.format('%s: expected an input of N x C x ... = %d x %d x (%d elements), got %s', op, N, C, HxW,
      shape_str(x)), 2)
  end
  if group < 1 or C % group ~= 0 then
    error(string.format('%s: Expected number of channels in input (%d) to be divisible by num_groups, but got '
      .. 'num_groups=%d', op, C, group), 2)
  end
  local g = x:reshape(N, group, -1)
  local mean = g:mean(3)
  local rstd = (g:var(3, false, { unbiased = false }) + eps):rsqrt()
  return F().group_norm(x, group, w, b, { eps = eps }), mean, rstd
end

-- ---- dropout with its mask ----

--- torch.native_dropout(input, p, train) -> output, mask: mask a bool tensor, true where the element
-- is kept (probability 1 - p), output = input * mask / (1 - p) (zeros when p = 1); train false:
-- a copy of input and a mask of trues (train nil is training, as PyTorch's None)
function torch.native_dropout(x, p, train)
  local op = 'native_dropout'
  tensor_arg(op, 'input', x)
  p = number_arg(op, 'p', p)
  if train ~= nil then bool_arg(op, 'train', train) end
  if p < 0 or p > 1 then error(op .. ': dropout probability has to be between 0 and 1, but got ' .. p, 2) end
  floating(op, x)
  if train == false then
    return x:clone(), torch.ones(x.shape, { dtype = torch.bool, device = x.device })
  end
  local mask = torch.empty_like(x):bernoulli_(1 - p):to(torch.bool)
  local scale = p == 1 and 0 or 1 / (1 - p)
  return x * mask * scale, mask
end

-- ---- vision ----

--- torch.native_channel_shuffle(input, groups): torch.channel_shuffle
function torch.native_channel_shuffle(x, groups)
  tensor_arg('native_channel_shuffle', 'input', x)
  return F().channel_shuffle(x, groups)
end

local MODES = { [0] = 'bilinear', [1] = 'nearest', [2] = 'bicubic' }
local PADDINGS = { [0] = 'zeros', [1] = 'border', [2] = 'reflection' }

local function grid_sampler(op, dims)
  return function(input, grid, mode, padding, align_corners)
    tensor_arg(op, 'input', input)
    tensor_arg(op, 'grid', grid)
    local m, p = MODES[as_int(mode)], PADDINGS[as_int(padding)]
    if not m then
      error(op .. ': interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ' .. tostring(mode), 2)
    end
    if not p then
      error(op .. ': padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ' .. tostring(padding), 2)
    end
    bool_arg(op, 'align_corners', align_corners)
    if (dims and input:dim() ~= dims) or input:dim() ~= grid:dim() then
      error(string.format('%s: expected %s input and grid with the same number of dimensions, got input of size %s '
        .. 'and grid of size %s', op, dims and dims .. '-D' or '4-D or 5-D', shape_str(input), shape_str(grid)), 2)
    end
    return F().grid_sample(input, grid, { mode = m, padding_mode = p, align_corners = align_corners })
  end
end
torch.grid_sampler = grid_sampler('grid_sampler')
torch.grid_sampler_2d = grid_sampler('grid_sampler_2d', 4)
torch.grid_sampler_3d = grid_sampler('grid_sampler_3d', 5)

--- torch.affine_grid_generator(theta, size, align_corners): F.affine_grid
function torch.affine_grid_generator(theta, size, align_corners)
  local op = 'affine_grid_generator'
  tensor_arg(op, 'theta', theta)
  bool_arg(op, 'align_corners', align_corners)
  return F().affine_grid(theta, size, { align_corners = align_corners })
end

-- ---- convolutions ----

local CONV = { 'conv1d', 'conv2d', 'conv3d' }
local TRANSPOSED = { 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d' }

--- torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
-- groups): F.convNd, or F.conv_transposeNd when transposed, N from weight's dims (3, 4 or 5)
function torch.convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
  local op = 'convolution'
  tensor_arg(op, 'input', x)
  tensor_arg(op, 'weight', w)
  tensor_arg(op, 'bias', b, true)
  bool_arg(op, 'transposed', transposed)
  groups = int_arg(op, 'groups', groups)
  local n = w:dim() - 2
  if n < 1 or n > 3 then error(op .. ': expected a weight of 3, 4 or 5 dims, got ' .. shape_str(w), 2) end
  if x:dim() ~= n + 2 then
    error(string.format('%s: expected a %d-D input for a %d-D weight of size %s, got an input of size %s', op, n + 2,
      n + 2, shape_str(w), shape_str(x)), 2)
  end
  for _, a in ipairs { { 'stride', stride }, { 'padding', padding }, { 'dilation', dilation },
    { 'output_padding', output_padding } } do
    if type(a[2]) ~= 'number' and (type(a[2]) ~= 'table' or torch.is_tensor(a[2])) then
      error(string.format('%s: expected %s to be a number or a table of numbers, got %s', op, a[1], type(a[2])), 2)
    end
  end
  if transposed then
    return F()[TRANSPOSED[n]](x, w, b, { stride = stride, padding = padding, dilation = dilation,
      output_padding = output_padding, groups = groups })
  end
  return F()[CONV[n]](x, w, b, { stride = stride, padding = padding, dilation = dilation, groups = groups })
end

--- torch.conv_tbc(input, weight, bias, pad = 0): input (T, B, C_in), weight (K, C_in, C_out), bias
-- (C_out) -> (T + 2 pad - K + 1, B, C_out), output[t] = bias + sum_k input[t + k - pad] weight[k]
function torch.conv_tbc(x, w, b, pad)
  local op = 'conv_tbc'
  tensor_arg(op, 'input', x)
  tensor_arg(op, 'weight', w)
  tensor_arg(op, 'bias', b)
  pad = int_arg(op, 'pad', pad == nil and 0 or pad)
  if x:dim() ~= 3 then error(op .. ': Input must have 3 dims: time, batch, in_channel; got ' .. shape_str(x), 2) end
  if w:dim() ~= 3 then
    error(op .. ': Weight tensor must have 3 dims: kernel_width, in_channels, out_channels; got ' .. shape_str(w), 2)
  end
  if b:dim() ~= 1 then error(op .. ': Bias must be 1-D; got ' .. shape_str(b), 2) end
  if x:size(3) ~= w:size(2) then
    error(string.format('%s: Input dim 3 (input channels, %d) is not == dim 2 in the weight tensor (%d)', op, x:size(3),
      w:size(2)), 2)
  end
  if b:size(1) ~= w:size(3) then
    error(string.format('%s: Bias size (%d) must equal dim 3 in the weight tensor (output channels, %d)', op, b:size(1),
      w:size(3)), 2)
  end
  if pad < 0 then error(op .. ': pad must be non-negative, got ' .. pad, 2) end
  local y = F().conv1d(x:permute(2, 3, 1), w:permute(3, 2, 1), b, { padding = pad })
  return y:permute(3, 1, 2)
end

-- ---- SyncBatchNorm's primitives (lua/torch/nn/sync_batchnorm.lua, which is made of them) ----
--   torch.batch_norm_stats(input, eps), batch_norm_elemt(input, weight, bias, mean, invstd, eps),
--   batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count),
--   batch_norm_gather_stats_with_counts(... counts), batch_norm_backward_reduce(grad_out, input,
--   mean, invstd, weight, input_g, weight_g, bias_g), batch_norm_backward_elemt(grad_out, input, mean,
--   invstd, weight, sum_dy, sum_dy_xmu, count), batch_norm_update_stats(input, running_mean,
--   running_var, momentum)
for _, name in ipairs { 'batch_norm_stats', 'batch_norm_elemt', 'batch_norm_gather_stats',
  'batch_norm_gather_stats_with_counts', 'batch_norm_backward_reduce', 'batch_norm_backward_elemt',
  'batch_norm_update_stats' } do
  torch[name] = function(...) return require('torch.nn.sync_batchnorm')._ops[name](...) end
end
