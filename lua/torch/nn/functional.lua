-- torch.nn.functional (also torch.F): PyTorch's positional arguments, then an options table.
-- Convolution, pooling, softmax, normalisation and the NLL loss run fused C kernels with their own
-- backward (torch._nn); the rest is composed of tensor ops, which autograd differentiates.
local torch = require 'torch'
local C = torch._nn
local F = {}
-- losses run in float32 inside autocast regions, as PyTorch's (a pass-through outside them)
local fp32 = torch._autocast_fp32

-- the options table of op (or an empty one), refusing keys op does not take (lua/torch/options.lua)
local opts_of = require('torch.options').check
local as_int = require('torch.composite').as_int

F._opts_of = opts_of -- for the modules that check options tables the same way

-- a number or a pair {h, w} as two numbers
local function pair(v, name, op)
  if v == nil then return nil end
  if type(v) == 'number' then return v, v end
  if type(v) == 'table' and #v == 2 then return v[1], v[2] end
  error(string.format('%s: %s must be a number or a pair {h, w}', op, name), 3)
end

local function check_tensor(x, op, what)
  if not torch.is_tensor(x) then
    error(string.format('%s: expected %s to be a tensor, got %s', op, what or 'input', type(x)), 3)
  end
end
F._check_tensor = check_tensor -- for the nn code that checks its tensor arguments the same way

-- refuses tensors (after op's name, pairs of a description and a tensor or nil) whose shapes do not
-- broadcast together, naming op and them
local function check_broadcast(op, ...)
  local args, names, shapes = { ... }, {}, {}
  for i = 1, select('#', ...), 2 do
    if args[i + 1] ~= nil then names[#names + 1], shapes[#shapes + 1] = args[i], args[i + 1].shape end
  end
  if not pcall(torch.broadcast_shapes, table.unpack(shapes)) then
    local parts = {}
    for i = 1, #names do parts[i] = names[i] .. ' of shape ' .. tostring(shapes[i]) end
    error(string.format('%s: %s do not broadcast together', op, table.concat(parts, ', ')), 3)
  end
end

-- ---- activations ----
--- F.relu(x, {inplace = false}) -> tensor: max(x, 0) elementwise; in place with inplace = true
function F.relu(x, o)
  check_tensor(x, 'relu')
  if o ~= nil then opts_of(o, 'relu', { 'inplace' }) end
  if o and o.inplace then return x:relu_() end
  return x:relu()
end
--- F.gelu(x, {approximate = 'none' | 'tanh'}) -> tensor: x * Phi(x), or its tanh approximation
function F.gelu(x, o)
  check_tensor(x, 'gelu')
  if o ~= nil then opts_of(o, 'gelu', { 'approximate' }) end
  local approximate = o and o.approximate or 'none'
  if approximate == 'tanh' then return x:gelu_tanh() end
  if approximate ~= 'none' then error("gelu: approximate must be 'none' or 'tanh', got " .. tostring(approximate), 2) end
  return x:gelu()
end
function F.tanh(x) return x:tanh() end
function F.sigmoid(x) return x:sigmoid() end

-- the activations of the op table (C kernels on every device, their derivatives in
-- kernels/elementwise.h): F.silu(x, {inplace}), F.relu6, F.hardswish, ...
for _, name in ipairs { 'silu', 'mish', 'hardswish', 'hardsigmoid', 'selu', 'relu6', 'softsign', 'tanhshrink' } do
  F[name] = function(x, o)
    check_tensor(x, name)
    if o ~= nil and type(o) ~= 'boolean' then opts_of(o, name, { 'inplace' }) end
    if o == true or (type(o) == 'table' and o.inplace) then return x[name .. '_'](x) end
    return x[name](x)
  end
end
--- F.logsigmoid(x) -> tensor: log(1 / (1 + exp(-x))), computed stably
function F.logsigmoid(x)
  check_tensor(x, 'logsigmoid')
  return x:logsigmoid()
end

-- positional parameters with PyTorch's defaults, or one options table in their place
-- (F.leaky_relu(x, 0.2), F.leaky_relu(x, {negative_slope = 0.2, inplace = true}))
local function params(op, args, names, defaults)
  local o = args[1]
  local v = {}
  if type(o) == 'table' then
    opts_of(o, op, names)
    for i, n in ipairs(names) do
      if o[n] == nil then v[i] = defaults[i] else v[i] = o[n] end
    end
  else
    for i = 1, #names do
      if args[i] == nil then v[i] = defaults[i] else v[i] = args[i] end
    end
  end
  for i, n in ipairs(names) do
    if n ~= 'inplace' and n ~= 'dim' and type(v[i]) ~= 'number' then
      error(string.format('%s: %s must be a number, got %s', op, n, type(v[i])), 3)
    end
  end
  return table.unpack(v, 1, #names)
end

-- y computed out of place, then written into x when inplace (as PyTorch's in-place forms)
local function result(x, y, inplace)
  if inplace then return x:copy_(y) end
  return y
end

--- F.leaky_relu(x, negative_slope = 0.01, inplace = false) -> tensor: x where x > 0, else slope * x
function F.leaky_relu(x, ...)
  check_tensor(x, 'leaky_relu')
  local slope, inplace = params('leaky_relu', { ... }, { 'negative_slope', 'inplace' }, { 0.01, false })
  if x.dtype.is_floating_point then return result(x, torch._leaky_relu(x, slope), inplace) end
  return result(x, torch.where(x:gt(0), x, x * slope), inplace)
end

--- F.elu(x, alpha = 1, inplace = false) -> tensor: x where x > 0, else alpha * (exp(x) - 1)
function F.elu(x, ...)
  check_tensor(x, 'elu')
  local alpha, inplace = params('elu', { ... }, { 'alpha', 'inplace' }, { 1, false })
  if x.dtype.is_floating_point then return result(x, torch._elu(x, alpha), inplace) end
  -- the negative branch on min(x, 0): no exp overflow where it is not taken (its gradient is 0 there)
  return result(x, torch.where(x:gt(0), x, x:clamp(nil, 0):expm1() * alpha), inplace)
end

--- F.celu(x, alpha = 1, inplace = false) -> tensor: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
function F.celu(x, ...)
  check_tensor(x, 'celu')
  local alpha, inplace = params('celu', { ... }, { 'alpha', 'inplace' }, { 1, false })
  if alpha == 0 then error('celu: alpha must not be 0', 2) end
  if x.dtype.is_floating_point then return result(x, torch._celu(x, alpha), inplace) end
  return result(x, torch.where(x:gt(0), x, (x:clamp(nil, 0) / alpha):expm1() * alpha), inplace)
end

--- F.softplus(x, beta = 1, threshold = 20) -> tensor: log(1 + exp(beta x)) / beta, x itself where
-- beta x > threshold
function F.softplus(x, ...)
  check_tensor(x, 'softplus')
  local beta, threshold = params('softplus', { ... }, { 'beta', 'threshold' }, { 1, 20 })
  if beta == 1 and threshold == 20 then return x:softplus() end
  local z = beta == 1 and x or x * beta
  -- softplus on min(z, threshold): the branch not taken stays finite
  return torch.where(z:gt(threshold), x, z:clamp(nil, threshold):softplus() / beta)
end

--- F.hardtanh(x, min_val = -1, max_val = 1, inplace = false) -> tensor: x clamped to [min_val, max_val]
function F.hardtanh(x, ...)
  check_tensor(x, 'hardtanh')
  local lo, hi, inplace = params('hardtanh', { ... }, { 'min_val', 'max_val', 'inplace' }, { -1, 1, false })
  if lo > hi then error(string.format('hardtanh: min_val (%g) must not exceed max_val (%g)', lo, hi), 2) end
  if inplace then return x:clamp_(lo, hi) end
  return x:clamp(lo, hi)
end

-- the shrinkage activations: floating inputs and lambd a number (>= 0 for softshrink)
local function shrink_args(op, x, lambd, nonneg)
  check_tensor(x, op)
  if type(lambd) == 'table' then lambd = opts_of(lambd, op, { 'lambd' }).lambd end
  if lambd == nil then lambd = 0.5 end
  if type(lambd) ~= 'number' then error(op .. ': lambd must be a number, got ' .. type(lambd), 3) end
  if nonneg and lambd < 0 then error(string.format('%s: lambd must be greater or equal to 0, got %g', op, lambd), 3) end
  if not x.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 3) end
  return lambd
end

--- F.softshrink(x, lambd = 0.5) -> tensor: x - lambd where x > lambd, x + lambd where x < -lambd,
-- else 0 (NaN too, as PyTorch's)
function F.softshrink(x, lambd)
  local l = shrink_args('softshrink', x, lambd, true)
  return torch.where(x:gt(l), x - l, torch.where(x:lt(-l), x + l, 0))
end

--- F.hardshrink(x, lambd = 0.5) -> tensor: 0 where -lambd <= x <= lambd, else x (NaN stays NaN)
function F.hardshrink(x, lambd)
  local l = shrink_args('hardshrink', x, lambd, false)
  return torch.where(x:ge(-l):logical_and(x:le(l)), 0, x)
end

--- F.threshold(x, threshold, value, inplace = false) -> tensor: x where x > threshold, else value
function F.threshold(x, ...)
  check_tensor(x, 'threshold')
  local th, value, inplace = params('threshold', { ... }, { 'threshold', 'value', 'inplace' }, { nil, nil, false })
  return result(x, torch.where(x:gt(th), x, value), inplace)
end

--- F.prelu(x, weight) -> tensor: x where x > 0, else weight * x; weight has 1 element or one per
-- channel (dim 2 of x)
function F.prelu(x, w)
  check_tensor(x, 'prelu')
  check_tensor(w, 'prelu', 'weight')
  local n = w:numel()
  if n ~= 1 then
    if x:dim() < 2 or x:size(2) ~= n then
      error(string.format('prelu: weight has %d elements, but the input has %s channels (dim 2)', n,
        x:dim() < 2 and 'no' or tostring(x:size(2))), 2)
    end
    local shape = { 1, n }
    for _ = 3, x:dim() do shape[#shape + 1] = 1 end
    w = w:reshape(shape)
  else
    w = w:reshape({})
  end
  return torch.where(x:gt(0), x, x * w)
end

--- F.glu(x, dim = -1) -> tensor: a * sigmoid(b), a and b the halves of x along dim
function F.glu(x, dim)
  check_tensor(x, 'glu')
  dim = as_int(dim or -1)
  if math.type(dim) ~= 'integer' then error('glu: dim must be an integer, got ' .. tostring(dim), 2) end
  local d = dim < 0 and x:dim() + dim + 1 or dim
  if d < 1 or d > x:dim() then error(string.format('glu: dim %d is out of range for a %d-D input', dim, x:dim()), 2) end
  local n = x:size(d)
  if n % 2 ~= 0 then error(string.format('glu: halving dimension must be even, but dimension %d is size %d', dim, n), 2) end
  return x:narrow(d, 1, n // 2) * x:narrow(d, n // 2 + 1, n // 2):sigmoid()
end

--- F.softmin(x, dim) -> tensor: softmax(-x, dim)
function F.softmin(x, dim)
  check_tensor(x, 'softmin')
  if dim == nil then error('softmin: dim is required', 2) end
  return C.softmax(-x, dim)
end

--- F.softmax(x, dim) -> tensor: exp(x) / sum(exp(x)) along dim (1-based, required)
function F.softmax(x, dim)
  check_tensor(x, 'softmax')
  if dim == nil then error('softmax: dim is required', 2) end
  return C.softmax(x, dim)
end
--- F.log_softmax(x, dim) -> tensor: log(softmax(x, dim)), computed stably
function F.log_softmax(x, dim)
  check_tensor(x, 'log_softmax')
  if dim == nil then error('log_softmax: dim is required', 2) end
  return C.log_softmax(x, dim)
end

-- ---- linear and convolution ----
-- x w^T + b, its checks and product in one C call (torch._nn.linear)
F.linear = C.linear

--- F.conv2d(x, w, b, {stride = 1, padding = 0, dilation = 1, groups = 1}) -> tensor
-- x: N x C x H x W (or C x H x W), w: out x C/groups x kh x kw, b: out values or nil;
-- padding may be a number, a pair, 'same' or 'valid'
function F.conv2d(x, w, b, o)
  o = opts_of(o, 'conv2d', { 'stride', 'padding', 'dilation', 'groups' })
  check_tensor(x, 'conv2d')
  check_tensor(w, 'conv2d', 'weight')
  local sh, sw = pair(o.stride or 1, 'stride', 'conv2d')
  local dh, dw = pair(o.dilation or 1, 'dilation', 'conv2d')
  local padding = o.padding or 0
  if padding == 'valid' then padding = 0 end
  if padding == 'same' then
    if sh ~= 1 or sw ~= 1 then error("conv2d: padding='same' is not supported for strided convolutions", 2) end
    if w:dim() ~= 4 then error('conv2d: expected a 4-D weight, got ' .. w:dim() .. '-D', 2) end
    -- total padding d (k - 1) per dim; when odd, PyTorch puts the extra row/column at the end, which is
    -- the symmetric padding of ceil(total / 2) with the first output row/column dropped
    local th, tw = dh * (w:size(3) - 1), dw * (w:size(4) - 1)
    local y = C.conv2d(x, w, b, 1, 1, (th + 1) // 2, (tw + 1) // 2, dh, dw, o.groups or 1)
    local d = y:dim()
    if th % 2 == 1 then y = y:narrow(d - 1, 2, y:size(d - 1) - 1) end
    if tw % 2 == 1 then y = y:narrow(d, 2, y:size(d) - 1) end
    return y
  end
  if type(padding) == 'string' then
    error(string.format("conv2d: invalid padding string '%s', should be one of {'valid', 'same'}", padding), 2)
  end
  local ph, pw = pair(padding, 'padding', 'conv2d')
  return C.conv2d(x, w, b, sh, sw, ph, pw, dh, dw, o.groups or 1)
end

-- f(...)'s results, f being the 2-D function named inner that op (a 1-D function) delegates to; its
-- errors are raised again naming op, at op's caller
local function as_op(op, inner, f, ...)
  local r = table.pack(pcall(f, ...))
  if not r[1] then
    local msg = tostring(r[2])
    local _, j = msg:find(inner .. ': ', 1, true)
    error(j and op .. ': ' .. msg:sub(j + 1) or msg, 3)
  end
  return table.unpack(r, 2, r.n)
end

-- a number or a 1-tuple {n} as a number
local function single(v, name, op)
  if type(v) == 'table' and #v == 1 then v = v[1] end
  if type(v) ~= 'number' then error(string.format('%s: %s must be a number or a 1-tuple {n}', op, name), 3) end
  return v
end

-- x with s - 1 zeros after each element along dim d but the last (a transposed convolution's input)
local function zero_stuff(x, d, s)
  local n = x:size(d)
  if s == 1 or n == 0 then return x end
  local shape = { table.unpack(x.shape) }
  table.insert(shape, d + 1, s - 1)
  local z = torch.zeros(shape, { dtype = x.dtype, device = x.device })
  local merged = { table.unpack(x.shape) }
  merged[d] = n * s
  return torch.cat({ x:unsqueeze(d + 1), z }, d + 1):reshape(merged):narrow(d, 1, (n - 1) * s + 1)
end

--- F.conv_transpose2d(x, w, b, {stride = 1, padding = 0, output_padding = 0, groups = 1, dilation = 1})
-- -> tensor: the adjoint of conv2d (its gradient with respect to the input), x: N x C_in x H x W (or
-- C_in x H x W), w: C_in x C_out/groups x kh x kw; output H: (H - 1) stride - 2 padding +
-- dilation (kh - 1) + output_padding + 1. Computed as a convolution of the zero-stuffed, padded input
-- with the flipped kernel.
function F.conv_transpose2d(x, w, b, o)
  o = opts_of(o, 'conv_transpose2d', { 'stride', 'padding', 'output_padding', 'groups', 'dilation' })
  check_tensor(x, 'conv_transpose2d')
  check_tensor(w, 'conv_transpose2d', 'weight')
  if x:dim() ~= 3 and x:dim() ~= 4 then
    error('conv_transpose2d: expected a 3-D (unbatched) or 4-D (batched) input, got ' .. x:dim() .. '-D', 2)
  end
  if w:dim() ~= 4 then error('conv_transpose2d: expected a 4-D weight (in_channels, out_channels / groups, kh, kw), got ' .. w:dim() .. '-D', 2) end
  local g = o.groups or 1
  local sh, sw = pair(o.stride or 1, 'stride', 'conv_transpose2d')
  local ph, pw = pair(o.padding or 0, 'padding', 'conv_transpose2d')
  local oh, ow = pair(o.output_padding or 0, 'output_padding', 'conv_transpose2d')
  local dh, dw = pair(o.dilation or 1, 'dilation', 'conv_transpose2d')
  local cin = x:size(x:dim() - 2)
  if w:size(1) ~= cin then
    error(string.format('conv_transpose2d: the weight has %d input channels, but the input has %d', w:size(1), cin), 2)
  end
  g = as_int(g)
  if math.type(g) ~= 'integer' or g < 1 or cin % g ~= 0 then
    error('conv_transpose2d: groups must be a positive integer dividing the input channels, got ' .. tostring(g), 2)
  end
  if oh >= math.max(sh, dh) or ow >= math.max(sw, dw) then
    error('conv_transpose2d: output padding must be smaller than either stride or dilation', 2)
  end
  local kh, kw = w:size(3), w:size(4)
  local batched = x:dim() == 4
  if not batched then x = x:unsqueeze(1) end
  x = zero_stuff(zero_stuff(x, 3, sh), 4, sw)
  local th, tw = dh * (kh - 1) - ph, dw * (kw - 1) - pw
  x = F.pad(x, { tw, tw + ow, th, th + oh })
  -- (C_in, C_out/g, kh, kw) -> (C_out, C_in/g, kh, kw), flipped
  local cout_g = w:size(2)
  local wt = w:reshape(g, cin // g, cout_g, kh, kw):transpose(2, 3):reshape(g * cout_g, cin // g, kh, kw):flip({ 3, 4 })
  local y = C.conv2d(x, wt, b, 1, 1, 0, 0, dh, dw, g)
  if not batched then y = y:squeeze(1) end
  return y
end

--- F.conv_transpose1d(x, w, b, {stride, padding, output_padding, groups, dilation}) -> tensor: the
-- transposed 1-D convolution (a 2-D one over a height of 1)
function F.conv_transpose1d(x, w, b, o)
  o = opts_of(o, 'conv_transpose1d', { 'stride', 'padding', 'output_padding', 'groups', 'dilation' })
  check_tensor(x, 'conv_transpose1d')
  check_tensor(w, 'conv_transpose1d', 'weight')
  if w:dim() ~= 3 then error('conv_transpose1d: expected a 3-D weight, got ' .. w:dim() .. '-D', 2) end
  local op = 'conv_transpose1d'
  return as_op(op, 'conv_transpose2d', F.conv_transpose2d, x:unsqueeze(-2), w:unsqueeze(-2), b,
    { stride = { 1, single(o.stride or 1, 'stride', op) }, padding = { 0, single(o.padding or 0, 'padding', op) },
      output_padding = { 0, single(o.output_padding or 0, 'output_padding', op) }, groups = o.groups,
      dilation = { 1, single(o.dilation or 1, 'dilation', op) } }):squeeze(-2)
end


--- F.conv1d(x, w, b, {stride = 1, padding = 0, dilation = 1, groups = 1}) -> tensor
-- x: N x C x L (or C x L), w: out x C/groups x k; padding a number, 'same' or 'valid'; a 2-D
-- convolution over a height of 1
function F.conv1d(x, w, b, o)
  o = opts_of(o, 'conv1d', { 'stride', 'padding', 'dilation', 'groups' })
  check_tensor(x, 'conv1d')
  check_tensor(w, 'conv1d', 'weight')
  if x:dim() ~= 2 and x:dim() ~= 3 then
    error('conv1d: expected a 2-D (unbatched) or 3-D (batched) input, got ' .. x:dim() .. '-D', 2)
  end
  if w:dim() ~= 3 then error('conv1d: expected a 3-D weight (out_channels, in_channels / groups, k), got ' .. w:dim() .. '-D', 2) end
  local padding = o.padding or 0
  if type(padding) ~= 'string' then padding = { 0, single(padding, 'padding', 'conv1d') } end
  local y = as_op('conv1d', 'conv2d', F.conv2d, x:unsqueeze(-2), w:unsqueeze(-2), b,
    { stride = { 1, single(o.stride or 1, 'stride', 'conv1d') }, padding = padding,
      dilation = { 1, single(o.dilation or 1, 'dilation', 'conv1d') }, groups = o.groups })
  return y:squeeze(-2)
end

-- ---- pooling ----
--- F.max_pool2d(x, kernel_size, {stride = kernel_size, padding = 0, dilation = 1,
-- ceil_mode = false}) -> tensor: the maximum of each window of N x C x H x W input
function F.max_pool2d(x, k, o)
  o = opts_of(o, 'max_pool2d', { 'stride', 'padding', 'dilation', 'ceil_mode', 'return_indices' })
  check_tensor(x, 'max_pool2d')
  local kh, kw = pair(k, 'kernel_size', 'max_pool2d')
  local sh, sw = pair(o.stride or k, 'stride', 'max_pool2d')
  local ph, pw = pair(o.padding or 0, 'padding', 'max_pool2d')
  local dh, dw = pair(o.dilation or 1, 'dilation', 'max_pool2d')
  local y, idx = C.max_pool2d(x, kh, kw, sh, sw, ph, pw, dh, dw, o.ceil_mode or false)
  if o.return_indices then return y, idx end
  return y
end

function F.avg_pool2d(x, k, o)
  o = opts_of(o, 'avg_pool2d', { 'stride', 'padding', 'ceil_mode', 'count_include_pad', 'divisor_override' })
  check_tensor(x, 'avg_pool2d')
  local kh, kw = pair(k, 'kernel_size', 'avg_pool2d')
  local sh, sw = pair(o.stride or k, 'stride', 'avg_pool2d')
  local ph, pw = pair(o.padding or 0, 'padding', 'avg_pool2d')
  local cip = o.count_include_pad
  if cip == nil then cip = true end
  local div = o.divisor_override
  -- (0 is the kernel's 'none')
  if div ~= nil and (math.type(div) ~= 'integer' or div == 0) then
    error('avg_pool2d: divisor_override must be a non-zero integer, got ' .. tostring(div), 2)
  end
  return C.avg_pool2d(x, kh, kw, sh, sw, ph, pw, o.ceil_mode or false, cip, div or 0)
end

function F.adaptive_avg_pool2d(x, size)
  check_tensor(x, 'adaptive_avg_pool2d')
  -- a table's nil (or false) entries keep the input's size, as PyTorch's None
  local h, w
  if type(size) == 'table' then
    h = size[1] or x:size(-2)
    w = size[2] or x:size(-1)
  else
    h, w = pair(size, 'output_size', 'adaptive_avg_pool2d')
  end
  -- to 1 x 1 (a CNN's global average pooling): the mean over each plane, one reduction
  -- (16 x 8 x 32 x 32: 108 -> 14 us); the kernel checks everything else
  if h == 1 and w == 1 and (x:dim() == 3 or x:dim() == 4) and x.dtype.is_floating_point and x:size(-1) > 0 and
    x:size(-2) > 0 then
    return x:mean({ -2, -1 }, true)
  end
  return C.adaptive_avg_pool2d(x, h, w)
end

-- ---- one-hot, padding, normalisation, distances ----
--- F.one_hot(t, num_classes = -1) -> int64 tensor of t's shape plus a last dim of num_classes, 1
-- at each class (1-based classes, as every index in lutorch); -1 takes the largest class in t
function F.one_hot(t, num_classes)
  check_tensor(t, 'one_hot')
  if t.dtype ~= torch.int64 then error('one_hot: class values must be an int64 tensor, got ' .. tostring(t.dtype), 2) end
  num_classes = num_classes or -1
  num_classes = as_int(num_classes)
  if math.type(num_classes) ~= 'integer' or (num_classes < 1 and num_classes ~= -1) then
    error('one_hot: num_classes must be a positive integer or -1, got ' .. tostring(num_classes), 2)
  end
  if t:numel() == 0 then
    if num_classes == -1 then error('one_hot: Can not infer total number of classes from empty tensor.', 2) end
  else
    local lo, hi = t:min():item(), t:max():item()
    if lo < 1 then error(string.format('one_hot: Class values must be at least 1 (they are 1-based), got %d', lo), 2) end
    if num_classes == -1 then num_classes = hi end
    if hi > num_classes then error(string.format('one_hot: Class values must be at most num_classes (%d), got %d', num_classes, hi), 2) end
  end
  local shape = { table.unpack(t.shape) }
  shape[#shape + 1] = num_classes
  local out = torch.zeros(shape, { dtype = torch.int64, device = t.device })
  if t:numel() == 0 then return out end
  return out:scatter_(-1, t:unsqueeze(-1), 1)
end

local reserve = require 'torch.reserve'

-- positions 1 - l .. n + r of a dim of n elements, mapped into 1..n by a padding mode
local PAD_INDEX = {
  replicate = function(i, n) return math.min(math.max(i, 1), n) end,
  reflect = function(i, n)
    if i < 1 then return 2 - i end
    if i > n then return 2 * n - i end
    return i
  end,
  circular = function(i, n) return (i - 1) % n + 1 end,
}

--- F.pad(x, pad, {mode = 'constant', value = 0}) -> x padded (or cropped, for negative amounts):
-- pad = {left, right} for the last dim, {left, right, top, bottom} for the last two, and so on;
-- mode 'constant' (value), 'reflect', 'replicate' or 'circular' ('circular' crops a negative
-- amount first and wraps around the rest, as PyTorch)
function F.pad(x, pad, o)
  check_tensor(x, 'pad')
  if type(o) == 'string' then o = { mode = o } end
  o = opts_of(o, 'pad', { 'mode', 'value' })
  local mode, value = o.mode or 'constant', o.value or 0
  if type(pad) ~= 'table' or #pad % 2 ~= 0 then error('pad: Padding length must be divisible by 2', 2) end
  if #pad / 2 > x:dim() then error('pad: Padding length too large', 2) end
  if mode ~= 'constant' and not PAD_INDEX[mode] then
    error("pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got " .. tostring(mode), 2)
  end
  if mode ~= 'constant' and value ~= 0 then error("pad: value is only for mode 'constant'", 2) end
  -- mode 'constant' without autograd: the padded tensor filled once and x copied into its interior
  -- (with autograd: blocks of value joined by cat, whose backward gives x's part of the gradient)
  local filled = mode == 'constant' and not (x.requires_grad and torch.is_grad_enabled()) and {} or nil
  for k = 1, #pad / 2 do
    local d = x:dim() - k + 1
    local l, r = pad[2 * k - 1], pad[2 * k]
    l = as_int(l)
    r = as_int(r)
    if math.type(l) ~= 'integer' or math.type(r) ~= 'integer' then error('pad: amounts must be integers', 2) end
    local n = x:size(d)
    if mode == 'constant' then
      -- crop first (negative amounts), then add blocks of value
      if l < 0 or r < 0 then
        local a, b = math.max(-l, 0), math.max(-r, 0)
        if a + b > n then error(string.format('pad: cropping %d elements from a dim of %d', a + b, n), 2) end
        x = x:narrow(d, a + 1, n - a - b)
      end
      if filled then
        filled[#filled + 1] = { d, math.max(l, 0), math.max(r, 0) }
        goto next_dim
      end
      local parts = {}
      local function block(size)
        local shape = { table.unpack(x.shape) }
        shape[d] = size
        return torch.full(shape, value, { dtype = x.dtype, device = x.device })
      end
      if l > 0 then parts[#parts + 1] = block(l) end
      parts[#parts + 1] = x
      if r > 0 then parts[#parts + 1] = block(r) end
      if #parts > 1 then x = torch.cat(parts, d) end
    elseif l ~= 0 or r ~= 0 then
      if mode == 'circular' and (l < 0 or r < 0) then
        -- PyTorch crops first and wraps around what is left
        local a, b = math.max(-l, 0), math.max(-r, 0)
        if a + b > n then error(string.format('pad: cropping %d elements from a dim of %d', a + b, n), 2) end
        x = x:narrow(d, a + 1, n - a - b)
        n, l, r = n - a - b, math.max(l, 0), math.max(r, 0)
      end
      if mode == 'reflect' and (l >= n or r >= n) then
        error(string.format('pad: Padding size should be less than the corresponding input dimension, but got: '
          .. 'padding (%d, %d) at dimension %d of input of size %d', l, r, d, n), 2)
      end
      if mode == 'circular' and (l > n or r > n) then
        error('pad: Padding value causes wrapping around more than once.', 2)
      end
      if n == 0 then error(string.format("pad: mode '%s' needs a non-empty dimension %d", mode, d), 2) end
      local shape = { table.unpack(x.shape) }
      shape[d] = math.max(n + (l + 0.0) + r, 0) -- in floats: l + r may pass 2^63
      reserve('pad', x, shape, 2)
      local idx, f = {}, PAD_INDEX[mode]
      for i = 1 - l, n + r do idx[#idx + 1] = f(i, n) end
      x = x:index_select(d, torch.tensor(idx, { dtype = torch.int64, device = x.device }))
    end
    ::next_dim::
  end
  if filled then
    local shape, grown = { table.unpack(x.shape) }, false
    for _, f in ipairs(filled) do
      shape[f[1]] = shape[f[1]] + f[2] + f[3]
      grown = grown or f[2] + f[3] > 0
    end
    if not grown then return x end
    reserve('pad', x, shape, 2)
    local out = torch.full(shape, value, { dtype = x.dtype, device = x.device })
    local inner = out
    for _, f in ipairs(filled) do inner = inner:narrow(f[1], f[2] + 1, x:size(f[1])) end
    inner:copy_(x)
    return out
  end
  return x
end

--- F.normalize(x, {p = 2, dim = 2, eps = 1e-12}) -> x / max(||x||_p along dim, eps)
function F.normalize(x, o)
  check_tensor(x, 'normalize')
  o = opts_of(o, 'normalize', { 'p', 'dim', 'eps' })
  local p, dim, eps = o.p or 2, o.dim or 2, o.eps or 1e-12
  if x:dim() == 1 and o.dim == nil then dim = 1 end
  return x / x:norm(p, dim, true):clamp(eps, nil):expand_as(x)
end

--- F.cosine_similarity(x1, x2, {dim = 2, eps = 1e-8}) -> the cosine of the angle between x1 and x2
-- along dim (broadcast): sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)), as PyTorch 1.13
function F.cosine_similarity(x1, x2, o)
  check_tensor(x1, 'cosine_similarity', 'x1')
  check_tensor(x2, 'cosine_similarity', 'x2')
  o = opts_of(o, 'cosine_similarity', { 'dim', 'eps' })
  check_broadcast('cosine_similarity', 'x1', x1, 'x2', x2)
  -- broadcast first, as PyTorch: dim counts in the broadcast shape
  x1, x2 = table.unpack(torch.broadcast_tensors(x1, x2))
  local dim, eps = o.dim or 2, o.eps or 1e-8
  -- each squared norm raised to eps^2 outside autograd, as PyTorch 1.13 (which clamps them in place
  -- under no_grad): its gradient is that of the unclamped one
  local function norm(x)
    local s = (x * x):sum(dim, true)
    local sd = s:detach()
    return (s + (sd:clamp(eps * eps, nil) - sd)):sqrt()
  end
  return ((x1 / norm(x1)) * (x2 / norm(x2))):sum(dim)
end

--- F.pairwise_distance(x1, x2, {p = 2, eps = 1e-6, keepdim = false}) -> ||x1 - x2 + eps||_p over the
-- last dim
function F.pairwise_distance(x1, x2, o)
  check_tensor(x1, 'pairwise_distance', 'x1')
  check_tensor(x2, 'pairwise_distance', 'x2')
  o = opts_of(o, 'pairwise_distance', { 'p', 'eps', 'keepdim' })
  return (x1 - x2 + (o.eps or 1e-6)):norm(o.p or 2, -1, o.keepdim or false)
end

--- F.pdist(x, p = 2) -> the p-norm distances of the rows of the N x M x, pairs (i, j) with i < j in
-- PyTorch's order (1, 2), (1, 3), ..., (1, N), (2, 3), ...: a tensor of N (N - 1) / 2
function F.pdist(x, p)
  check_tensor(x, 'pdist')
  if x:dim() ~= 2 then error('pdist: expected a 2-D input (N x M), got ' .. x:dim() .. '-D', 2) end
  p = p or 2
  if type(p) ~= 'number' or p < 0 then error('pdist: p must be a non-negative number, got ' .. tostring(p), 2) end
  local n = x:size(1)
  local ii, jj = {}, {}
  for i = 1, n - 1 do
    for j = i + 1, n do ii[#ii + 1], jj[#jj + 1] = i, j end
  end
  -- fewer than 2 rows: no pairs, an empty result connected to x (its gradient zeros, as PyTorch's)
  if #ii == 0 then return x:reshape(-1):narrow(1, 1, 0) end
  local function rows(t) return x:index_select(1, torch.tensor(t, { dtype = torch.int64, device = x.device })) end
  return (rows(ii) - rows(jj)):norm(p, -1)
end

-- ---- 1-D pooling: the 2-D kernels over a height of 1 ----
local function check_1d(x, op)
  check_tensor(x, op)
  if x:dim() ~= 2 and x:dim() ~= 3 then
    error(string.format('%s: expected a 2-D (unbatched) or 3-D (batched) input, got %d-D', op, x:dim()), 3)
  end
end

--- F.max_pool1d(x, kernel_size, {stride = kernel_size, padding = 0, dilation = 1, ceil_mode = false,
-- return_indices = false}) -> the maximum of each window of N x C x L input (and 1-based indices)
function F.max_pool1d(x, k, o)
  o = opts_of(o, 'max_pool1d', { 'stride', 'padding', 'dilation', 'ceil_mode', 'return_indices' })
  check_1d(x, 'max_pool1d')
  k = single(k, 'kernel_size', 'max_pool1d')
  local y, idx = as_op('max_pool1d', 'max_pool2d', F.max_pool2d, x:unsqueeze(-2), { 1, k },
    { stride = { 1, single(o.stride or k, 'stride', 'max_pool1d') },
    padding = { 0, single(o.padding or 0, 'padding', 'max_pool1d') },
    dilation = { 1, single(o.dilation or 1, 'dilation', 'max_pool1d') }, ceil_mode = o.ceil_mode, return_indices = true })
  if o.return_indices then return y:squeeze(-2), idx:squeeze(-2) end
  return y:squeeze(-2)
end

--- F.avg_pool1d(x, kernel_size, {stride = kernel_size, padding = 0, ceil_mode = false,
-- count_include_pad = true}) -> the mean of each window of N x C x L input
function F.avg_pool1d(x, k, o)
  o = opts_of(o, 'avg_pool1d', { 'stride', 'padding', 'ceil_mode', 'count_include_pad' })
  check_1d(x, 'avg_pool1d')
  k = single(k, 'kernel_size', 'avg_pool1d')
  return as_op('avg_pool1d', 'avg_pool2d', F.avg_pool2d, x:unsqueeze(-2), { 1, k },
    { stride = { 1, single(o.stride or k, 'stride', 'avg_pool1d') }, padding = { 0, single(o.padding or 0, 'padding', 'avg_pool1d') },
      ceil_mode = o.ceil_mode, count_include_pad = o.count_include_pad }):squeeze(-2)
end

--- F.adaptive_avg_pool1d(x, output_size) -> N x C x output_size means of adaptive windows
function F.adaptive_avg_pool1d(x, size)
  check_1d(x, 'adaptive_avg_pool1d')
  return as_op('adaptive_avg_pool1d', 'adaptive_avg_pool2d', F.adaptive_avg_pool2d, x:unsqueeze(-2),
    { 1, single(size, 'output_size', 'adaptive_avg_pool1d') }):squeeze(-2)
end

--- F.group_norm(x, num_groups, weight, bias, {eps = 1e-5}) -> x normalised over each group of
-- channels (and all positions) of N x C x ..., then scaled and shifted per channel
function F.group_norm(x, groups, w, b, o)
  o = opts_of(o, 'group_norm', { 'eps' })
  check_tensor(x, 'group_norm')
  if x:dim() < 2 then error('group_norm: expected an input of at least 2 dimensions (N, C, ...), got ' .. x:dim() .. '-D', 2) end
  local n, c = x:size(1), x:size(2)
  groups = as_int(groups)
  if math.type(groups) ~= 'integer' or groups < 1 or c % groups ~= 0 then
    error(string.format('group_norm: Expected number of channels in input (%d) to be divisible by num_groups, but got '
      .. 'num_groups=%s', c, tostring(groups)), 2)
  end
  local eps = o.eps or 1e-5
  local g = x:reshape(n, groups, -1)
  local mean = g:mean(3, true)
  local var = g:var(3, true, { unbiased = false })
  local y = ((g - mean) / (var + eps):sqrt()):view(x.shape)
  if w ~= nil or b ~= nil then
    local shape = { 1, c }
    for _ = 3, x:dim() do shape[#shape + 1] = 1 end
    if w ~= nil then y = y * w:view(shape) end
    if b ~= nil then y = y + b:view(shape) end
  end
  return y
end

-- ---- dropout ----
--- F.dropout(x, p = 0.5, training = true, inplace = false) -> tensor: zeroes each element with
-- probability p and scales the others by 1 / (1 - p); x itself when not training
function F.dropout(x, p, training, inplace)
  check_tensor(x, 'dropout')
  p = p or 0.5
  if type(p) ~= 'number' then error('dropout: p must be a number, got ' .. type(p), 2) end
  if training == nil then training = true end
  if p < 0 or p > 1 then error('dropout: probability has to be between 0 and 1, but got ' .. p, 2) end
  if not training or p == 0 then return x end
  if p == 1 then return x * 0 end
  local mask = torch.empty_like(x):bernoulli_(1 - p):div_(1 - p)
  if inplace then return x:mul_(mask) end
  return x * mask
end

-- ---- channel dropout ----
-- zeroes whole channels (dims 3.. of N x C x ..., or 2.. of an unbatched C x ...) with probability
-- p, scaling the others by 1 / (1 - p); dims nil: any input of 2 or more dims, batched (N x C x ...)
local function channel_dropout(x, p, training, inplace, op, dims)
  check_tensor(x, op)
  p = p or 0.5
  if type(p) ~= 'number' or p < 0 or p > 1 then
    error(op .. ': dropout probability has to be between 0 and 1, but got ' .. tostring(p), 3)
  end
  if dims == nil then
    if x:dim() < 2 then error(op .. ': Feature dropout requires at least 2 dimensions in the input', 3) end
  elseif x:dim() ~= dims and x:dim() ~= dims + 1 then
    error(string.format('%s: expected a %d-D (unbatched) or %d-D (batched) input, got %d-D', op, dims, dims + 1, x:dim()), 3)
  end
  if training == nil then training = true end
  if not training or p == 0 then return x end
  local shape = {}
  local lead = dims and x:dim() - dims + 1 or 2 -- the channel dim
  for d = 1, x:dim() do shape[d] = d <= lead and x:size(d) or 1 end
  local mask = torch.empty(shape, { dtype = x.dtype, device = x.device })
  if p == 1 then mask:zero_() else mask:bernoulli_(1 - p):div_(1 - p) end
  if inplace then return x:mul_(mask) end
  return x * mask
end

--- F.dropout1d(x, p = 0.5, training = true, inplace = false): whole channels of N x C x L input
function F.dropout1d(x, p, training, inplace) return channel_dropout(x, p, training, inplace, 'dropout1d', 2) end
--- F.dropout2d(x, p = 0.5, training = true, inplace = false): whole channels of N x C x H x W input
function F.dropout2d(x, p, training, inplace) return channel_dropout(x, p, training, inplace, 'dropout2d', 3) end
--- F.dropout3d(x, p = 0.5, training = true, inplace = false): whole channels of N x C x D x H x W input
function F.dropout3d(x, p, training, inplace) return channel_dropout(x, p, training, inplace, 'dropout3d', 4) end
-- F._feature_dropout(x, p, training, inplace): whole channels (dim 2) of any N x C x ... input
-- (torch.feature_dropout; PyTorch's F has no such function)
function F._feature_dropout(x, p, training, inplace)
  return channel_dropout(x, p, training, inplace, 'feature_dropout', nil)
end

-- ---- RMS normalisation ----
--- F.rms_norm(x, normalized_shape, weight, {eps}) -> x / sqrt(mean(x^2) + eps) over the last dims
-- of normalized_shape, times weight; eps defaults to the dtype's machine epsilon (PyTorch's
-- finfo(x.dtype).eps). float16 and bfloat16 are computed in float32.
function F.rms_norm(x, shape, w, o)
  o = opts_of(o, 'rms_norm', { 'eps' })
  check_tensor(x, 'rms_norm')
  shape = as_int(shape)
  if math.type(shape) == 'integer' then shape = { shape } end
  if type(shape) ~= 'table' then error('rms_norm: normalized_shape must be an integer or a table of integers', 2) end
  local n = #shape
  if x:dim() < n then
    error(string.format('rms_norm: input of shape %s has fewer dimensions than normalized_shape [%s]',
      tostring(x.shape), table.concat(shape, ', ')), 2)
  end
  for i = 1, n do
    if x:size(x:dim() - n + i) ~= shape[i] then
      error(string.format('rms_norm: given normalized_shape=[%s], expected input with shape [*, %s], but got '
        .. 'input of size %s', table.concat(shape, ', '), table.concat(shape, ', '), tostring(x.shape)), 2)
    end
  end
  if not x.dtype.is_floating_point then error('rms_norm: expected a floating point input, got ' .. tostring(x.dtype), 2) end
  local eps = o.eps or torch.finfo(x.dtype).eps
  local low = x.dtype == torch.float16 or x.dtype == torch.bfloat16
  local xf = low and x:float() or x
  local dims = {}
  for i = 1, n do dims[i] = x:dim() - n + i end
  local y = n > 0 and xf * ((xf * xf):mean(dims, true) + eps):rsqrt() or xf * (xf * xf + eps):rsqrt()
  if low then y = y:to(x.dtype) end
  if w ~= nil then y = y * w end
  return y
end

-- ---- pixel shuffle ----
local function shuffle_check(x, r, op)
  check_tensor(x, op)
  r = as_int(r)
  if math.type(r) ~= 'integer' or r < 1 then error(string.format('%s: the factor must be a positive integer, got %s', op, tostring(r)), 3) end
  if x:dim() < 3 then error(string.format('%s: expected an input of at least 3 dimensions (*, C, H, W), got %d-D', op, x:dim()), 3) end
end

--- F.pixel_shuffle(x, r): (*, C r^2, H, W) -> (*, C, H r, W r)
function F.pixel_shuffle(x, r)
  shuffle_check(x, r, 'pixel_shuffle')
  local nd = x:dim()
  local c, h, w = x:size(nd - 2), x:size(nd - 1), x:size(nd)
  if c % (r * r) ~= 0 then
    error(string.format('pixel_shuffle: expected the channels (%d) to be divisible by the square of the upscale factor (%d)', c, r * r), 2)
  end
  local lead = {}
  for i = 1, nd - 3 do lead[i] = x:size(i) end
  local v = { table.unpack(lead) }
  for _, s in ipairs { c // (r * r), r, r, h, w } do v[#v + 1] = s end
  local perm = {}
  for i = 1, nd - 3 do perm[i] = i end
  local b = nd - 3
  for _, s in ipairs { 1, 4, 2, 5, 3 } do perm[#perm + 1] = b + s end
  local out = { table.unpack(lead) }
  for _, s in ipairs { c // (r * r), h * r, w * r } do out[#out + 1] = s end
  return x:reshape(v):permute(perm):reshape(out)
end

--- F.pixel_unshuffle(x, r): (*, C, H r, W r) -> (*, C r^2, H, W), the inverse
function F.pixel_unshuffle(x, r)
  shuffle_check(x, r, 'pixel_unshuffle')
  local nd = x:dim()
  local c, h, w = x:size(nd - 2), x:size(nd - 1), x:size(nd)
  if h % r ~= 0 or w % r ~= 0 then
    error(string.format('pixel_unshuffle: expected the height (%d) and width (%d) to be divisible by the downscale factor (%d)', h, w, r), 2)
  end
  local lead = {}
  for i = 1, nd - 3 do lead[i] = x:size(i) end
  local v = { table.unpack(lead) }
  for _, s in ipairs { c, h // r, r, w // r, r } do v[#v + 1] = s end
  local perm = {}
  for i = 1, nd - 3 do perm[i] = i end
  local b = nd - 3
  for _, s in ipairs { 1, 3, 5, 2, 4 } do perm[#perm + 1] = b + s end
  local out = { table.unpack(lead) }
  for _, s in ipairs { c * r * r, h // r, w // r } do out[#out + 1] = s end
  return x:reshape(v):permute(perm):reshape(out)
end

-- ---- sliding blocks (im2col and its adjoint) ----
-- the geometry of unfold/fold: kernel, dilation, padding, stride as pairs, and the count of blocks
-- along each spatial dim of an h x w input
local function blocks(op, k, o, h, w)
  o = opts_of(o, op, { 'dilation', 'padding', 'stride' })
  local kh, kw = pair(k, 'kernel_size', op)
  local dh, dw = pair(o.dilation or 1, 'dilation', op)
  local ph, pw = pair(o.padding or 0, 'padding', op)
  local sh, sw = pair(o.stride or 1, 'stride', op)
  kh, kw, dh, dw, sh, sw = as_int(kh), as_int(kw), as_int(dh), as_int(dw), as_int(sh), as_int(sw)
  ph, pw = as_int(ph), as_int(pw)
  for _, v in ipairs { kh, kw, dh, dw, sh, sw } do
    if math.type(v) ~= 'integer' or v < 1 then error(op .. ': kernel_size, dilation and stride must be positive integers', 3) end
  end
  for _, v in ipairs { ph, pw } do
    if math.type(v) ~= 'integer' or v < 0 then error(op .. ': padding must be a non-negative integer', 3) end
  end
  local oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
  local ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
  return { kh = kh, kw = kw, dh = dh, dw = dw, ph = ph, pw = pw, sh = sh, sw = sw, oh = oh, ow = ow }
end

-- the 1-based rows (or columns) of the padded input that kernel offset i of each block reads
local function block_index(i, d, s, n, device)
  return torch.arange(0, n, { dtype = torch.int64, device = device }) * s + (i * d + 1)
end

--- F.unfold(x, kernel_size, {dilation = 1, padding = 0, stride = 1}): the sliding blocks of an
-- N x C x H x W (or C x H x W) input as columns: N x (C kh kw) x L, L the number of blocks
function F.unfold(x, k, o)
  check_tensor(x, 'unfold')
  local batched = x:dim() == 4
  if x:dim() ~= 3 and not batched then error('unfold: expected a 3-D (unbatched) or 4-D (batched) input, got ' .. x:dim() .. '-D', 2) end
  if not batched then x = x:unsqueeze(1) end
  local n, c, h, w = x:size(1), x:size(2), x:size(3), x:size(4)
  local g = blocks('unfold', k, o, h, w)
  if g.oh < 1 or g.ow < 1 then
    error(string.format('unfold: the kernel (%d x %d, dilation %d x %d) does not fit the padded input (%d x %d)',
      g.kh, g.kw, g.dh, g.dw, h + 2 * g.ph, w + 2 * g.pw), 2)
  end
  local xp = (g.ph > 0 or g.pw > 0) and F.pad(x, { g.pw, g.pw, g.ph, g.ph }) or x
  local cols = {}
  for i = 0, g.kh - 1 do
    local rows = xp:index_select(3, block_index(i, g.dh, g.sh, g.oh, x.device))
    for j = 0, g.kw - 1 do
      cols[#cols + 1] = rows:index_select(4, block_index(j, g.dw, g.sw, g.ow, x.device))
    end
  end
  -- N x C x (kh kw) x oh x ow: channel-major, as PyTorch orders the rows
  local out = torch.stack(cols, 3):reshape(n, c * g.kh * g.kw, g.oh * g.ow)
  if not batched then out = out:squeeze(1) end
  return out
end

--- F.fold(x, output_size, kernel_size, {dilation = 1, padding = 0, stride = 1}): the adjoint of
-- unfold, N x (C kh kw) x L columns summed into an N x C x H x W output (overlaps add up)
function F.fold(x, output_size, k, o)
  check_tensor(x, 'fold')
  local batched = x:dim() == 3
  if x:dim() ~= 2 and not batched then error('fold: expected a 2-D (unbatched) or 3-D (batched) input, got ' .. x:dim() .. '-D', 2) end
  if not batched then x = x:unsqueeze(1) end
  local h, w = pair(output_size, 'output_size', 'fold')
  local g = blocks('fold', k, o, h, w)
  local n, ck, l = x:size(1), x:size(2), x:size(3)
  if ck % (g.kh * g.kw) ~= 0 then
    error(string.format('fold: expected size of input\'s dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=%d and kernel_size=(%d, %d)', ck, g.kh, g.kw), 2)
  end
  if g.oh < 1 or g.ow < 1 or l ~= g.oh * g.ow then
    error(string.format('fold: expected the input\'s last dimension (%d) to match the calculated number of sliding blocks %d * %d = %d',
      l, math.max(g.oh, 0), math.max(g.ow, 0), math.max(g.oh, 0) * math.max(g.ow, 0)), 2)
  end
  local c = ck // (g.kh * g.kw)
  local hp, wp = h + 2 * g.ph, w + 2 * g.pw
  local cols = x:reshape(n, c, g.kh * g.kw, g.oh, g.ow)
  local out = torch.zeros(n, c, hp, wp, { dtype = x.dtype, device = x.device })
  local q = 0
  for i = 0, g.kh - 1 do
    local rows = block_index(i, g.dh, g.sh, g.oh, x.device)
    for j = 0, g.kw - 1 do
      q = q + 1
      local part = torch.zeros(n, c, g.oh, wp, { dtype = x.dtype, device = x.device })
        :index_add(4, block_index(j, g.dw, g.sw, g.ow, x.device), cols:select(3, q))
      out = out:index_add(3, rows, part)
    end
  end
  if g.ph > 0 or g.pw > 0 then out = out:narrow(3, g.ph + 1, h):narrow(4, g.pw + 1, w) end
  if not batched then out = out:squeeze(1) end
  return out
end

-- ---- resampling ----
-- the scale of an axis of n_in resampled to n_out (PyTorch's area_pixel_compute_scale)
local function axis_scale(n_in, n_out, scale_factor, align_corners)
  if align_corners then return n_out > 1 and (n_in - 1) / (n_out - 1) or 0 end
  if scale_factor then return 1 / scale_factor end
  return n_in / n_out
end

-- the source positions of an axis of n_in resampled to n_out: for 'nearest' and 'nearest-exact', one
-- index each; for 'linear', two indices and the weight of the second (PyTorch's coordinate rules)
local function axis_plan(n_in, n_out, scale_factor, mode, align_corners)
  local scale = axis_scale(n_in, n_out, scale_factor, align_corners)
  local i0, i1, w1 = {}, {}, {}
  for d = 0, n_out - 1 do
    if mode == 'nearest' then
      i0[d + 1] = math.min(math.floor(d * scale), n_in - 1) + 1
    elseif mode == 'nearest-exact' then
      i0[d + 1] = math.min(math.floor((d + 0.5) * scale), n_in - 1) + 1
    else
      local src = align_corners and d * scale or math.max((d + 0.5) * scale - 0.5, 0)
      local a = math.min(math.floor(src), n_in - 1)
      i0[d + 1], i1[d + 1], w1[d + 1] = a + 1, math.min(a + 1, n_in - 1) + 1, src - a
    end
  end
  return i0, i1, w1
end

-- Keys' cubic convolution kernel with parameter A at a distance v: near for v < 1, far for 1 <= v < 2
-- (numbers or tensors)
local function cubic_near(v, A) return ((A + 2) * v - (A + 3)) * v * v + 1 end
local function cubic_far(v, A) return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A end

-- PyTorch's cubic convolution weights (A = -0.75) of the four taps floor(src) - 1 .. floor(src) + 2,
-- t = src - floor(src) a number or a tensor
local CUBIC_A = -0.75
local function cubic_weights(t)
  local A = CUBIC_A
  return { cubic_far(t + 1, A), cubic_near(t, A), cubic_near(1 - t, A), cubic_far(2 - t, A) }
end

-- the filters of antialiased resampling (PyTorch's aa_filter of _upsample_bilinear2d_aa and
-- _upsample_bicubic2d_aa, the bicubic one with A = -0.5 as Pillow's): their support (half-width) and value
local AA_FILTERS = {
  bilinear = { support = 1, f = function(v)
    v = math.abs(v)
    return v < 1 and 1 - v or 0
  end },
  bicubic = { support = 2, f = function(v)
    v = math.abs(v)
    if v < 1 then return cubic_near(v, -0.5) end
    if v < 2 then return cubic_far(v, -0.5) end
    return 0
  end },
}

-- the n_in x n_out matrix (row-major, a flat table) that resamples an axis by a matrix product: for
-- 'bicubic', the cubic weights of each output on its taps clamped to the axis; for 'area', 1 / the
-- window length on each adaptive-average-pooling window [floor(d n_in / n_out), ceil((d + 1) n_in / n_out))
local function axis_matrix(n_in, n_out, scale_factor, mode, align_corners)
  local m = {}
  for k = 1, n_in * n_out do m[k] = 0 end
  for d = 0, n_out - 1 do
    if mode == 'bicubic' then
      local scale = axis_scale(n_in, n_out, scale_factor, align_corners)
      local src = align_corners and d * scale or (d + 0.5) * scale - 0.5
      local f = math.floor(src)
      local w = cubic_weights(src - f)
      for k = 1, 4 do
        local i = math.max(0, math.min(f - 2 + k, n_in - 1))
        m[i * n_out + d + 1] = m[i * n_out + d + 1] + w[k]
      end
    else
      local lo, hi = (d * n_in) // n_out, -((-(d + 1) * n_in) // n_out)
      for i = lo, hi - 1 do m[i * n_out + d + 1] = 1 / (hi - lo) end
    end
  end
  return m
end

-- the n_in x n_out matrix (as axis_matrix's) of PyTorch's antialiased resampling of an axis: output d
-- is mode's filter centred at source position scale (d + 0.5), stretched by the scale where it is
-- above 1 (downsampling), over the pixels [floor(centre - support + 0.5), floor(centre + support + 0.5))
-- within the axis, its weights divided by their sum
local function antialias_matrix(n_in, n_out, scale_factor, mode, align_corners)
  local filter = AA_FILTERS[mode]
  local scale = axis_scale(n_in, n_out, scale_factor, align_corners)
  local stretch = math.max(scale, 1)
  local support = filter.support * stretch
  local m = {}
  for k = 1, n_in * n_out do m[k] = 0 end
  for d = 0, n_out - 1 do
    local centre = scale * (d + 0.5)
    local lo = math.max(math.floor(centre - support + 0.5), 0)
    local hi = math.min(math.floor(centre + support + 0.5), n_in)
    local w, total = {}, 0
    for i = lo, hi - 1 do
      w[i] = filter.f((i - centre + 0.5) / stretch)
      total = total + w[i]
    end
    for i = lo, hi - 1 do m[i * n_out + d + 1] = total ~= 0 and w[i] / total or w[i] end
  end
  return m
end

--- F.interpolate(x, {size, scale_factor, mode = 'nearest', align_corners = false, recompute_scale_factor,
-- antialias = false}) -> x resampled over its last dims: N x C x L ('nearest', 'nearest-exact', 'area',
-- 'linear'), N x C x H x W ('nearest', 'nearest-exact', 'area', 'bilinear', 'bicubic') or
-- N x C x D x H x W ('nearest', 'nearest-exact', 'area', 'trilinear'); size and scale_factor a number
-- or one per spatial dim. antialias ('bilinear' and 'bicubic' only) resamples with PyTorch's
-- antialiasing filters (a triangle, or Keys' cubic with A = -0.5), widened by the scale when
-- downsampling. Every mode is separable: one resampling along each spatial dim in turn, by
-- index_select (nearest), two of them (linear) or a matrix product (bicubic, area, antialias).
local LINEAR_MODE = { 'linear', 'bilinear', 'trilinear' }
local ANY_DIM_MODE = { nearest = true, ['nearest-exact'] = true, area = true }
function F.interpolate(x, o)
  o = opts_of(o, 'interpolate', { 'size', 'scale_factor', 'mode', 'align_corners', 'recompute_scale_factor',
    'antialias' })
  check_tensor(x, 'interpolate')
  local mode = o.mode or 'nearest'
  local nsp = x:dim() - 2
  if nsp < 1 or nsp > 3 then
    error('interpolate: expected a 3-D (N, C, L), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input, got ' .. x:dim()
      .. '-D', 2)
  end
  local linear = mode == 'linear' or mode == 'bilinear' or mode == 'trilinear'
  if not ANY_DIM_MODE[mode] and mode ~= LINEAR_MODE[nsp] and not (mode == 'bicubic' and nsp == 2) then
    error(string.format("interpolate: mode '%s' is not supported for %d-D input (use 'nearest', 'nearest-exact' or "
      .. "'area', 'linear' for 3-D, 'bilinear' or 'bicubic' for 4-D or 'trilinear' for 5-D)", tostring(mode), x:dim()), 2)
  end
  if o.align_corners ~= nil and not linear and mode ~= 'bicubic' then
    error('interpolate: align_corners option can only be set with the interpolating modes: '
      .. 'linear | bilinear | bicubic | trilinear', 2)
  end
  if o.antialias and not ((mode == 'bilinear' or mode == 'bicubic') and nsp == 2) then
    error(string.format("interpolate: antialias is only supported for the 'bilinear' and 'bicubic' modes of 4-D "
      .. "input (N, C, H, W), got mode '%s' for %d-D input", mode, x:dim()), 2)
  end
  if (o.size == nil) == (o.scale_factor == nil) then error('interpolate: exactly one of size or scale_factor must be given', 2) end
  local function per_dim(v, what)
    if type(v) == 'number' then
      local t = {}
      for i = 1, nsp do t[i] = v end
      return t
    end
    if type(v) ~= 'table' or #v ~= nsp then
      error(string.format('interpolate: %s must be a number or %d numbers, one per spatial dim', what, nsp), 3)
    end
    return { table.unpack(v, 1, nsp) }
  end
  local sizes, factors = {}, nil
  if o.size ~= nil then
    sizes = per_dim(o.size, 'size')
  else
    factors = per_dim(o.scale_factor, 'scale_factor')
    for i = 1, nsp do sizes[i] = math.floor(x:size(2 + i) * factors[i]) end
  end
  for i = 1, nsp do
    sizes[i] = as_int(sizes[i])
    if math.type(sizes[i]) ~= 'integer' or sizes[i] < 1 then error('interpolate: output sizes must be positive integers', 2) end
  end
  local shape = { x:size(1), x:size(2), table.unpack(sizes, 1, nsp) }
  reserve('interpolate', x, shape, 2)
  local use_factor = factors ~= nil and not o.recompute_scale_factor
  for i = 1, nsp do
    local d = 2 + i
    local factor = use_factor and factors[i] or nil
    if mode == 'bicubic' or mode == 'area' or o.antialias then
      reserve('interpolate', x, { x:size(d), sizes[i] }, 2) -- the matrix
      local m = (o.antialias and antialias_matrix or axis_matrix)(x:size(d), sizes[i], factor, mode, o.align_corners)
      local w = torch.tensor(m, { dtype = x.dtype, device = x.device }):view(x:size(d), sizes[i])
      x = torch.matmul(x:transpose(d, -1), w):transpose(d, -1)
    else
      local i0, i1, w1 = axis_plan(x:size(d), sizes[i], factor, linear and 'linear' or mode, o.align_corners)
      local idx0 = torch.tensor(i0, { dtype = torch.int64, device = x.device })
      if not linear then
        x = x:index_select(d, idx0)
      else
        local shape = {}
        for k = 1, x:dim() do shape[k] = 1 end
        shape[d] = sizes[i]
        local wt = torch.tensor(w1, { dtype = x.dtype, device = x.device }):view(shape)
        local a = x:index_select(d, idx0)
        local b = x:index_select(d, torch.tensor(i1, { dtype = torch.int64, device = x.device }))
        x = a + (b - a) * wt
      end
    end
  end
  return x
end

-- the deprecated aliases: F.upsample(x, opts) is F.interpolate; F.upsample_nearest(x, size, scale_factor)
-- and F.upsample_bilinear(x, size, scale_factor) (or either with {size = ..., scale_factor = ...}) are
-- F.interpolate with mode 'nearest', and 'bilinear' with align_corners = true, as in PyTorch
function F.upsample(x, o) return F.interpolate(x, o) end
for name, mode in pairs { upsample_nearest = 'nearest', upsample_bilinear = 'bilinear' } do
  F[name] = function(x, size, scale_factor)
    if type(size) == 'table' and #size == 0 then
      local o = opts_of(size, name, { 'size', 'scale_factor' })
      size, scale_factor = o.size, o.scale_factor
    end
    return F.interpolate(x, { size = size, scale_factor = scale_factor, mode = mode,
      align_corners = mode == 'bilinear' or nil })
  end
end

-- ---- attention ----
--- F.scaled_dot_product_attention(q, k, v, {attn_mask, dropout_p = 0, is_causal = false, scale})
-- -> softmax(q k^T * scale + mask) v over the last two dims (batch dims broadcast); scale defaults
-- to 1/sqrt(q:size(-1)); a bool attn_mask marks with true the pairs that take part (PyTorch 2's
-- rule), a floating one is added; is_causal lets position i see positions 1..i only
function F.scaled_dot_product_attention(q, k, v, o)
  o = opts_of(o, 'scaled_dot_product_attention', { 'attn_mask', 'dropout_p', 'is_causal', 'scale' })
  check_tensor(q, 'scaled_dot_product_attention', 'query')
  check_tensor(k, 'scaled_dot_product_attention', 'key')
  check_tensor(v, 'scaled_dot_product_attention', 'value')
  local L, S = q:size(-2), k:size(-2)
  if o.is_causal and o.attn_mask ~= nil then
    error('scaled_dot_product_attention: attn_mask and is_causal cannot both be given', 2)
  end
  local scale = o.scale or 1 / math.sqrt(q:size(-1))
  local scores = torch.matmul(q, k:transpose(-2, -1)) * scale
  local mask = o.attn_mask
  if o.is_causal then mask = torch.ones(L, S, { dtype = torch.bool, device = q.device }):tril() end
  if mask ~= nil then
    if mask.dtype == torch.bool then
      scores = scores:masked_fill(mask:logical_not(), -math.huge)
    else
      scores = scores + mask
    end
  end
  local attn = C.softmax(scores, -1)
  if (o.dropout_p or 0) > 0 then attn = F.dropout(attn, o.dropout_p, true) end
  return torch.matmul(attn, v)
end

-- ---- normalisation ----
function F.batch_norm(x, running_mean, running_var, w, b, o)
  o = opts_of(o, 'batch_norm', { 'training', 'momentum', 'eps' })
  check_tensor(x, 'batch_norm')
  local training = o.training or false
  return C.batch_norm(x, w, b, running_mean, running_var, training, o.momentum or 0.1, o.eps or 1e-5)
end

function F.layer_norm(x, shape, w, b, o)
  o = opts_of(o, 'layer_norm', { 'eps' })
  check_tensor(x, 'layer_norm')
  if type(shape) == 'number' then shape = { shape } end
  local n = #shape
  if x:dim() < n then
    error(string.format('layer_norm: input of shape %s has fewer dimensions than normalized_shape [%s]',
      tostring(x.shape), table.concat(shape, ', ')), 2)
  end
  for i = 1, n do
    if x:size(x:dim() - n + i) ~= shape[i] then
      error(string.format('layer_norm: given normalized_shape=[%s], expected input with shape [*, %s], but got '
        .. 'input of size %s', table.concat(shape, ', '), table.concat(shape, ', '), tostring(x.shape)), 2)
    end
  end
  return C.layer_norm(x, n, w, b, o.eps or 1e-5)
end

-- ---- embedding ----
-- refuses max_norm and norm_type options of op (F.embedding, F.embedding_bag) that are not numbers
local function check_max_norm(o, op)
  if o.max_norm ~= nil and type(o.max_norm) ~= 'number' then
    error(op .. ': max_norm must be a number, got ' .. type(o.max_norm), 3)
  end
  if o.norm_type ~= nil and type(o.norm_type) ~= 'number' then
    error(op .. ': norm_type must be a number, got ' .. type(o.norm_type), 3)
  end
end

-- PyTorch's embedding_renorm_: the rows of w at the 1-based indices flat (1-D, in range) whose
-- norm_type-norm exceeds max_norm scaled, in place and outside autograd, to max_norm / (norm + 1e-7)
-- of themselves
local function embedding_renorm_(w, flat, max_norm, norm_type)
  torch.no_grad(function()
    local at = flat:unique()
    local sel = w:index_select(1, at)
    local norms = sel:norm(norm_type or 2, 2, true)
    w:index_copy_(1, at, torch.where(norms:gt(max_norm), sel * (max_norm / (norms + 1e-7)), sel))
  end)
end

F._embedding_renorm_ = embedding_renorm_ -- torch.embedding_renorm_ (lua/torch/nn/torch_aliases.lua)

-- scale_grad_by_freq: the rows looked up, whose gradients are divided by scale (each row's
-- index's count in the batch)
local ScaleGradByFreq = torch.autograd.Function:extend('EmbeddingBackward0')
function ScaleGradByFreq.forward(ctx, rows, freq)
  ctx.freq = freq
  return rows:clone()
end
function ScaleGradByFreq.backward(ctx, g) return g / ctx.freq:to(g.dtype) end

--- F.embedding(indices, weight, {padding_idx, max_norm, norm_type = 2, scale_grad_by_freq = false})
-- -> the weight's rows at the 1-based indices, of shape indices' shape x embedding_dim. padding_idx's
-- row gets no gradient; with max_norm, the rows looked up whose norm_type-norm exceeds max_norm are
-- first scaled, in place and outside autograd, to max_norm / (norm + 1e-7) of themselves (PyTorch's
-- embedding_renorm_); with scale_grad_by_freq, the gradient of each row looked up is divided by the
-- number of times its index occurs in indices
function F.embedding(idx, w, o)
  o = opts_of(o, 'embedding', { 'padding_idx', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'sparse' })
  if o.sparse then error('embedding: sparse is not supported by lutorch', 2) end
  if o.scale_grad_by_freq ~= nil and type(o.scale_grad_by_freq) ~= 'boolean' then
    error('embedding: scale_grad_by_freq must be a boolean, got ' .. type(o.scale_grad_by_freq), 2)
  end
  check_tensor(idx, 'embedding', 'indices')
  check_tensor(w, 'embedding', 'weight')
  check_max_norm(o, 'embedding')
  if idx.dtype ~= torch.int64 and idx.dtype ~= torch.int32 then
    error('embedding: expected indices of dtype int64 or int32, got ' .. tostring(idx.dtype), 2)
  end
  local n = w:size(1)
  local flat = idx:dim() == 1 and idx or idx:reshape(-1)
  -- the range is checked by index_select; when it fails, or before max_norm renormalises rows,
  -- the bad index is named here
  local function check_range()
    if flat:numel() == 0 then return end
    local lo, hi = flat:min():item(), flat:max():item()
    if lo < 1 or hi > n then
      error(string.format('embedding: index %d is out of range 1..%d (indices are 1-based rows of the weight)',
        lo < 1 and lo or hi, n), 3)
    end
  end
  if o.max_norm and flat:numel() > 0 then
    check_range()
    embedding_renorm_(w, flat, o.max_norm, o.norm_type)
  end
  local ok, rows = pcall(w.index_select, w, 1, flat)
  if not ok then
    check_range()
    error(rows, 0)
  end
  if o.scale_grad_by_freq and rows.requires_grad then
    local counts = torch.zeros(n, { dtype = torch.int64, device = flat.device })
    counts:index_add_(1, flat:long(), torch.ones_like(flat, { dtype = torch.int64 }))
    rows = ScaleGradByFreq.apply(rows, counts:index_select(1, flat:long()):view(-1, 1))
  end
  local pad = o.padding_idx
  if pad then
    if pad < 0 then pad = pad + n + 1 end
    -- rows of the padding index get no gradient
    local is_pad = flat:eq(pad):view(-1, 1)
    rows = torch.where(is_pad, rows:detach(), rows)
  end
  if idx:dim() == 1 then return rows end
  local shape = {}
  for i = 1, idx:dim() do shape[i] = idx:size(i) end
  shape[#shape + 1] = w:size(2)
  return rows:view(shape)
end

-- ---- losses ----
local function reduce(l, reduction, op)
  reduction = reduction or 'mean'
  if reduction == 'mean' then return l:mean() end
  if reduction == 'sum' then return l:sum() end
  if reduction == 'none' then return l end
  error(string.format("%s: reduction must be 'mean', 'sum' or 'none', got %s", op, tostring(reduction)), 3)
end

local function check_same_shape(x, y, op)
  check_tensor(x, op)
  check_tensor(y, op, 'target')
  if x.shape ~= y.shape then
    error(string.format('%s: input of shape %s and target of shape %s differ', op, tostring(x.shape), tostring(y.shape)), 3)
  end
end

--- F.mse_loss(x, y, {reduction = 'mean' | 'sum' | 'none'}) -> tensor: (x - y)^2, reduced
function F.mse_loss(x, y, o)
  o = opts_of(o, 'mse_loss', { 'reduction' })
  check_same_shape(x, y, 'mse_loss')
  x, y = fp32(x, y)
  local d = x - y
  return reduce(d * d, o and o.reduction, 'mse_loss')
end

function F.l1_loss(x, y, o)
  o = opts_of(o, 'l1_loss', { 'reduction' })
  check_same_shape(x, y, 'l1_loss')
  x, y = fp32(x, y)
  return reduce((x - y):abs(), o and o.reduction, 'l1_loss')
end

-- PyTorch's stable form: (1 - y) x + (1 + (pw - 1) y) (log(1 + exp(-|x|)) + max(-x, 0))
function F.binary_cross_entropy_with_logits(x, y, o)
  o = opts_of(o, 'binary_cross_entropy_with_logits', { 'weight', 'pos_weight', 'reduction' })
  check_same_shape(x, y, 'binary_cross_entropy_with_logits')
  check_broadcast('binary_cross_entropy_with_logits', 'input', x, 'weight', o.weight, 'pos_weight', o.pos_weight)
  local pw, w
  x, y, pw, w = fp32(x, y, o.pos_weight, o.weight)
  o = { pos_weight = pw, weight = w, reduction = o.reduction }
  local soft = (-x:abs()):exp():log1p() + (-x):relu()
  local l
  if o.pos_weight then
    local lw = (o.pos_weight - 1) * y + 1
    l = (1 - y) * x + lw * soft
  else
    l = (1 - y) * x + soft
  end
  if o.weight then l = l * o.weight end
  return reduce(l, o.reduction, 'binary_cross_entropy_with_logits')
end

-- the elementwise loss of binary_cross_entropy, with PyTorch's gradient in x: (x - y) / max(x (1 - x),
-- 1e-12), finite where x is 0 or 1 (the logs' clamp at -100 would give 0 * inf there); in y the
-- difference of the clamped logs. The 1e-12 is PyTorch's, a float32 constant.
local BCE_EPS = 9.999999960041972e-13
local BinaryCrossEntropy = torch.autograd.Function:extend('BinaryCrossEntropyBackward0')
function BinaryCrossEntropy.forward(ctx, x, y)
  ctx:save_for_backward(x, y)
  return -(y * x:log():clamp(-100, nil) + (1 - y) * (1 - x):log():clamp(-100, nil))
end
function BinaryCrossEntropy.backward(ctx, g)
  local x, y = table.unpack(ctx.saved_tensors)
  local gx = ctx.needs_input_grad[1] and g * (x - y) / (x * (1 - x)):clamp(BCE_EPS, nil) or nil
  local gy = ctx.needs_input_grad[2] and g * ((1 - x):log():clamp(-100, nil) - x:log():clamp(-100, nil)) or nil
  return gx, gy
end

--- F.binary_cross_entropy(x, y, {weight, reduction = 'mean'}) -> -(y log x + (1 - y) log(1 - x)),
-- x probabilities in [0, 1], each log clamped to >= -100 as PyTorch's
function F.binary_cross_entropy(x, y, o)
  o = opts_of(o, 'binary_cross_entropy', { 'weight', 'reduction' })
  check_same_shape(x, y, 'binary_cross_entropy')
  check_broadcast('binary_cross_entropy', 'input', x, 'weight', o.weight)
  local w
  x, y, w = fp32(x, y, o.weight)
  if x:numel() > 0 and (x:min():item() < 0 or x:max():item() > 1) then
    error('binary_cross_entropy: all elements of input should be between 0 and 1', 2)
  end
  local l = BinaryCrossEntropy.apply(x, y)
  if w then l = l * w end
  return reduce(l, o.reduction, 'binary_cross_entropy')
end

--- F.smooth_l1_loss(x, y, {reduction = 'mean', beta = 1}) -> 0.5 d^2 / beta where |d| < beta, else
-- |d| - 0.5 beta (d = x - y; beta = 0 is the L1 loss)
function F.smooth_l1_loss(x, y, o)
  o = opts_of(o, 'smooth_l1_loss', { 'reduction', 'beta' })
  check_same_shape(x, y, 'smooth_l1_loss')
  local beta = o.beta or 1.0
  if type(beta) ~= 'number' or beta < 0 then error('smooth_l1_loss: beta must be a non-negative number, got ' .. tostring(beta), 2) end
  x, y = fp32(x, y)
  local d = x - y
  local ad = d:abs()
  if beta == 0 then return reduce(ad, o.reduction, 'smooth_l1_loss') end
  return reduce(torch.where(ad:lt(beta), d * d * (0.5 / beta), ad - 0.5 * beta), o.reduction, 'smooth_l1_loss')
end

--- F.huber_loss(x, y, {reduction = 'mean', delta = 1}) -> 0.5 d^2 where |d| < delta, else
-- delta (|d| - 0.5 delta)
function F.huber_loss(x, y, o)
  o = opts_of(o, 'huber_loss', { 'reduction', 'delta' })
  check_same_shape(x, y, 'huber_loss')
  local delta = o.delta or 1.0
  if type(delta) ~= 'number' or delta <= 0 then error('huber_loss: delta must be a positive number, got ' .. tostring(delta), 2) end
  x, y = fp32(x, y)
  local d = x - y
  local ad = d:abs()
  return reduce(torch.where(ad:lt(delta), d * d * 0.5, (ad - 0.5 * delta) * delta), o.reduction, 'huber_loss')
end

--- F.kl_div(input, target, {reduction = 'mean', log_target = false}) -> target (log target - input)
-- pointwise (0 where target is 0), input holding log-probabilities; reduction 'batchmean' divides
-- the sum by the batch size (the KL divergence), 'mean' by the element count (PyTorch's default)
function F.kl_div(x, t, o)
  o = opts_of(o, 'kl_div', { 'reduction', 'log_target' })
  check_tensor(x, 'kl_div')
  check_tensor(t, 'kl_div', 'target')
  x, t = fp32(x, t)
  local l
  if o.log_target then
    l = t:exp() * (t - x)
  else
    -- t log t with 0 log 0 = 0 (the log of 1 where t is 0: no NaN in either direction)
    l = t * (torch.where(t:gt(0), t, 1):log() - x)
  end
  if o.reduction == 'batchmean' then
    if x:dim() == 0 then return l:sum() end
    return l:sum() / x:size(1)
  end
  return reduce(l, o.reduction, 'kl_div')
end

--- F.margin_ranking_loss(x1, x2, y, {margin = 0, reduction = 'mean'}) -> max(0, -y (x1 - x2) + margin)
function F.margin_ranking_loss(x1, x2, y, o)
  o = opts_of(o, 'margin_ranking_loss', { 'margin', 'reduction' })
  check_tensor(x1, 'margin_ranking_loss', 'input1')
  check_tensor(x2, 'margin_ranking_loss', 'input2')
  check_tensor(y, 'margin_ranking_loss', 'target')
  check_broadcast('margin_ranking_loss', 'input1', x1, 'input2', x2, 'target', y)
  return reduce((-y * (x1 - x2) + (o.margin or 0)):relu(), o.reduction, 'margin_ranking_loss')
end

--- F.soft_margin_loss(x, y, {reduction = 'mean'}) -> log(1 + exp(-y x)), y = 1 or -1
function F.soft_margin_loss(x, y, o)
  o = opts_of(o, 'soft_margin_loss', { 'reduction' })
  check_same_shape(x, y, 'soft_margin_loss')
  x, y = fp32(x, y)
  return reduce((-y * x):exp():log1p(), o.reduction, 'soft_margin_loss')
end

-- ---- PoissonNLLLoss, GaussianNLLLoss, CosineEmbeddingLoss, HingeEmbeddingLoss, TripletMarginLoss,
-- MultiLabelSoftMarginLoss: PyTorch's formulas (aten/src/ATen/native/Loss.cpp, torch/nn/functional.py)
-- composed of tensor ops, so autograd gives the gradients ----

-- a number option (default when nil), refused otherwise
local function number_opt(v, default, op, name)
  if v == nil then return default end
  if type(v) ~= 'number' then error(string.format('%s: %s must be a number, got %s', op, name, type(v)), 3) end
  return v
end

-- a boolean option (default when nil), refused otherwise
local function flag_opt(v, default, op, name)
  if v == nil then return default end
  if type(v) ~= 'boolean' then error(string.format('%s: %s must be a boolean, got %s', op, name, type(v)), 3) end
  return v
end

--- F.poisson_nll_loss(input, target, {log_input = true, full = false, eps = 1e-8, reduction = 'mean'})
-- -> exp(input) - target input (log_input), or input - target log(input + eps); full adds the
-- Stirling term target log(target) - target + 0.5 log(2 pi target) where target > 1
function F.poisson_nll_loss(x, t, o)
  local op = 'poisson_nll_loss'
  o = opts_of(o, op, { 'log_input', 'full', 'eps', 'reduction' })
  check_same_shape(x, t, op)
  local log_input = flag_opt(o.log_input, true, op, 'log_input')
  local full = flag_opt(o.full, false, op, 'full')
  local eps = number_opt(o.eps, 1e-8, op, 'eps')
  x, t = fp32(x, t)
  local l
  if log_input then
    l = x:exp() - t * x
  else
    l = x - t * (x + eps):log()
  end
  if full then
    -- computed on target > 1 only (2 elsewhere): no log of 0 nor NaN in either direction
    local big = t:gt(1)
    local tb = torch.where(big, t, 2)
    l = l + torch.where(big, tb * tb:log() - tb + (tb * (2 * math.pi)):log() * 0.5, 0)
  end
  return reduce(l, o.reduction, op)
end

--- F.gaussian_nll_loss(input, target, var, {full = false, eps = 1e-6, reduction = 'mean'})
-- -> 0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full).
-- var has input's shape, or it less the last dim, or it with a last dim of 1 (one variance
-- shared by the last dim); target has input's shape, dims of size 1 broadcast. The clamp passes
-- no gradient of its own, as PyTorch's (var's gradient is taken at the clamped value)
function F.gaussian_nll_loss(x, t, var, o)
  local op = 'gaussian_nll_loss'
  o = opts_of(o, op, { 'full', 'eps', 'reduction' })
  check_tensor(x, op)
  check_tensor(t, op, 'target')
  check_tensor(var, op, 'var')
  local full = flag_opt(o.full, false, op, 'full')
  local eps = number_opt(o.eps, 1e-6, op, 'eps')
  local n = x:dim()
  local t_ok = t:dim() == n
  for d = 1, n do
    if not t_ok then break end
    t_ok = t:size(d) == x:size(d) or t:size(d) == 1
  end
  if not t_ok then
    error(string.format('%s: target of shape %s does not match input of shape %s (each dim equal or 1)',
      op, tostring(t.shape), tostring(x.shape)), 2)
  end
  if var.shape ~= x.shape then
    local lead = var:dim() >= n - 1 and n >= 1
    for d = 1, n - 1 do
      if not lead then break end
      lead = var:size(d) == x:size(d)
    end
    if lead and var:dim() == n - 1 then
      var = var:unsqueeze(-1)
    elseif not (lead and var:dim() == n and var:size(n) == 1) then
      error(string.format('%s: var is of incorrect size: %s for an input of shape %s (expected the input\'s shape, '
        .. 'it less the last dim, or it with a last dim of 1)', op, tostring(var.shape), tostring(x.shape)), 2)
    end
  end
  x, t, var = fp32(x, t, var)
  if var:numel() > 0 and var:lt(0):any():item() then error(op .. ': var has negative entry/entries', 2) end
  var = var:clone()
  torch.no_grad(function() var:clamp_(eps, nil) end)
  local d = x - t
  local l = (var:log() + d * d / var) * 0.5
  if full then l = l + 0.5 * math.log(2 * math.pi) end
  return reduce(l, o.reduction, op)
end

--- F.cosine_embedding_loss(x1, x2, y, {margin = 0, reduction = 'mean'}) -> 1 - cos(x1, x2) where y = 1,
-- max(0, cos(x1, x2) - margin) where y = -1; x1, x2 of N x D with y of N, or of D with a 0-D y; the
-- cosine sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12)) as PyTorch's
function F.cosine_embedding_loss(x1, x2, y, o)
  local op = 'cosine_embedding_loss'
  o = opts_of(o, op, { 'margin', 'reduction' })
  check_tensor(x1, op, 'input1')
  check_tensor(x2, op, 'input2')
  check_tensor(y, op, 'target')
  local margin = number_opt(o.margin, 0, op, 'margin')
  if y:dim() > 1 then
    error(op .. ': 0D or 1D target tensor expected, multi-target not supported, got ' .. y:dim() .. '-D', 2)
  end
  if x1:dim() ~= y:dim() + 1 or x2:dim() ~= y:dim() + 1 then
    error(string.format('%s: %dD target tensor expects %dD input tensors, but found inputs with sizes %s and %s',
      op, y:dim(), y:dim() + 1, tostring(x1.shape), tostring(x2.shape)), 2)
  end
  if x1.shape ~= x2.shape then
    error(string.format('%s: input1 of shape %s and input2 of shape %s differ', op, tostring(x1.shape),
      tostring(x2.shape)), 2)
  end
  if y:dim() == 1 and y:size(1) ~= x1:size(1) then
    error(string.format('%s: target of shape %s does not match a batch of %d', op, tostring(y.shape), x1:size(1)), 2)
  end
  if y:numel() > 0 and y:ne(1):logical_and(y:ne(-1)):any():item() then
    error(op .. ': target must contain only 1 or -1', 2)
  end
  x1, x2, y = fp32(x1, x2, y)
  local d = y:dim() + 1
  local prod = (x1 * x2):sum(d)
  local m1, m2 = (x1 * x1):sum(d) + 1e-12, (x2 * x2):sum(d) + 1e-12
  local cos = prod / (m1 * m2):sqrt()
  return reduce(torch.where(y:eq(1), 1 - cos, (cos - margin):clamp(0, nil)), o.reduction, op)
end

--- F.hinge_embedding_loss(x, y, {margin = 1, reduction = 'mean'}) -> x where y = 1,
-- max(0, margin - x) where y = -1. As PyTorch's, y is not checked: an element neither 1 nor -1
-- takes both terms
function F.hinge_embedding_loss(x, y, o)
  local op = 'hinge_embedding_loss'
  o = opts_of(o, op, { 'margin', 'reduction' })
  check_same_shape(x, y, op)
  local margin = number_opt(o.margin, 1.0, op, 'margin')
  x, y = fp32(x, y)
  local l = torch.where(y:ne(1), (margin - x):clamp(0, nil), 0) + torch.where(y:ne(-1), x, 0)
  return reduce(l, o.reduction, op)
end

--- F.triplet_margin_loss(anchor, positive, negative, {margin = 1, p = 2, eps = 1e-6, swap = false,
-- reduction = 'mean'}) -> max(0, margin + d(a, p) - d(a, n)), d = F.pairwise_distance (||x1 - x2 + eps||_p
-- over the last dim); swap takes min(d(a, n), d(p, n)) for d(a, n)
function F.triplet_margin_loss(a, pos, neg, o)
  local op = 'triplet_margin_loss'
  o = opts_of(o, op, { 'margin', 'p', 'eps', 'swap', 'reduction' })
  check_tensor(a, op, 'anchor')
  check_tensor(pos, op, 'positive')
  check_tensor(neg, op, 'negative')
  local margin = number_opt(o.margin, 1.0, op, 'margin')
  if margin <= 0 then error(op .. ': margin must be greater than 0, got ' .. tostring(margin), 2) end
  local p = number_opt(o.p, 2, op, 'p')
  if p <= 0 then error(op .. ': p must be a positive number, got ' .. tostring(p), 2) end
  local eps = number_opt(o.eps, 1e-6, op, 'eps')
  local swap = flag_opt(o.swap, false, op, 'swap')
  if a:dim() ~= pos:dim() or a:dim() ~= neg:dim() then
    error(string.format('%s: all inputs should have same dimension but got %dD, %dD and %dD inputs',
      op, a:dim(), pos:dim(), neg:dim()), 2)
  end
  if a:dim() == 0 then error(op .. ': expected inputs of at least 1 dimension, got 0-D', 2) end
  if a.shape ~= pos.shape or a.shape ~= neg.shape then
    error(string.format('%s: anchor of shape %s, positive of shape %s and negative of shape %s differ',
      op, tostring(a.shape), tostring(pos.shape), tostring(neg.shape)), 2)
  end
  a, pos, neg = fp32(a, pos, neg)
  local po = { p = p, eps = eps }
  local d_pos = F.pairwise_distance(a, pos, po)
  local d_neg = F.pairwise_distance(a, neg, po)
  if swap then d_neg = torch.minimum(d_neg, F.pairwise_distance(pos, neg, po)) end
  return reduce((d_pos - d_neg + margin):clamp(0, nil), o.reduction, op)
end

--- F.triplet_margin_with_distance_loss(anchor, positive, negative, {distance_function, margin = 1,
-- swap = false, reduction = 'mean'}) -> max(0, margin + d(a, p) - d(a, n)), d the distance_function
-- (a Lua function of two tensors giving a tensor of distances; F.pairwise_distance if not given);
-- swap takes min(d(a, n), d(p, n)) for d(a, n)
function F.triplet_margin_with_distance_loss(a, pos, neg, o)
  local op = 'triplet_margin_with_distance_loss'
  o = opts_of(o, op, { 'distance_function', 'margin', 'swap', 'reduction' })
  check_tensor(a, op, 'anchor')
  check_tensor(pos, op, 'positive')
  check_tensor(neg, op, 'negative')
  local margin = number_opt(o.margin, 1.0, op, 'margin')
  if margin <= 0 then error(op .. ': margin must be greater than 0, got ' .. tostring(margin), 2) end
  local swap = flag_opt(o.swap, false, op, 'swap')
  local dist = o.distance_function or F.pairwise_distance
  if type(dist) ~= 'function' and not (type(dist) == 'table' and getmetatable(dist) and getmetatable(dist).__call) then
    error(op .. ': distance_function must be a function, got ' .. type(dist), 2)
  end
  if a:dim() ~= pos:dim() or a:dim() ~= neg:dim() then
    error(string.format('%s: all inputs should have same dimension but got %dD, %dD and %dD inputs',
      op, a:dim(), pos:dim(), neg:dim()), 2)
  end
  local d_pos, d_neg = dist(a, pos), dist(a, neg)
  if swap then d_neg = torch.minimum(d_neg, dist(pos, neg)) end
  return reduce((d_pos - d_neg + margin):clamp(0, nil), o.reduction, op)
end

--- F.multilabel_soft_margin_loss(x, y, {weight, reduction = 'mean'}) -> the mean over the last (class)
-- dim of -w (y log sigmoid(x) + (1 - y) log sigmoid(-x)): one loss a sample, then reduced; weight
-- broadcasts against x (a weight a class: C)
function F.multilabel_soft_margin_loss(x, y, o)
  local op = 'multilabel_soft_margin_loss'
  o = opts_of(o, op, { 'weight', 'reduction' })
  check_same_shape(x, y, op)
  if x:dim() == 0 then error(op .. ': expected an input of at least 1 dimension (N x C or C), got 0-D', 2) end
  local w = o.weight
  if w ~= nil then
    check_tensor(w, op, 'weight')
    local ok = w:dim() <= x:dim()
    for k = 0, w:dim() - 1 do
      if not ok then break end
      local ws = w:size(w:dim() - k)
      ok = ws == 1 or ws == x:size(x:dim() - k)
    end
    if not ok then
      error(string.format('%s: weight of shape %s does not broadcast to the input\'s shape %s', op,
        tostring(w.shape), tostring(x.shape)), 2)
    end
  end
  x, y, w = fp32(x, y, w)
  local l = -(y * x:logsigmoid() + (1 - y) * (-x):logsigmoid())
  if w then l = l * w end
  local cd = x:dim()
  return reduce(l:sum(cd) / x:size(cd), o.reduction, op)
end

local REDUCTIONS = { none = 0, mean = 1, sum = 2 }
local function reduction_code(r, op)
  local c = REDUCTIONS[r or 'mean']
  if not c then error(string.format("%s: reduction must be 'mean', 'sum' or 'none', got %s", op, tostring(r)), 3) end
  return c
end

-- targets are 1-based class indices; ignore_index is a 1-based class (default: none)
-- the class weights of nll_loss (and cross_entropy's class-index targets) get no gradient: one that
-- requires grad is refused, as PyTorch (rather than left out of the gradient silently)
local function weight_without_grad(w, op)
  if w ~= nil and torch.is_tensor(w) and w.requires_grad and torch.is_grad_enabled() then
    error(op .. ": not differentiable with respect to argument 'weight' (as PyTorch): it cannot require grad "
      .. '(detach it)', 3)
  end
end

function F.nll_loss(logp, target, o)
  o = opts_of(o, 'nll_loss', { 'weight', 'ignore_index', 'reduction' })
  check_tensor(logp, 'nll_loss')
  check_tensor(target, 'nll_loss', 'target')
  weight_without_grad(o.weight, 'nll_loss')
  return C.nll_loss('nll_loss', logp, target, o.weight, o.ignore_index, reduction_code(o.reduction, 'nll_loss'))
end

-- cross_entropy's class-probability targets (target of x's shape): -sum over the classes of
-- target (smoothed toward 1 / C) * weight * log_softmax(x); 'mean' divides by the number of samples
-- (positions), whatever the weights, as PyTorch does
local function cross_entropy_probabilities(x, target, logp, cdim, o, red)
  if x.shape ~= target.shape then
    error(string.format('cross_entropy: expected a target of class probabilities of the input\'s shape %s, got %s',
      tostring(x.shape), tostring(target.shape)), 3)
  end
  if o.ignore_index ~= nil then error('cross_entropy: ignore_index is not supported for class-probability targets', 3) end
  local n_classes = x:size(cdim)
  local eps = o.label_smoothing or 0
  if eps > 0 then target = target * (1 - eps) + eps / n_classes end
  local terms = logp * target
  if o.weight then
    local shape = {}
    for i = 1, x:dim() do shape[i] = 1 end
    shape[cdim] = n_classes
    terms = terms * o.weight:view(shape)
  end
  local l = -terms:sum(cdim)
  if red == 1 then return l:mean() end
  if red == 2 then return l:sum() end
  return l
end

--- F.cross_entropy(x, target, {weight, ignore_index, reduction = 'mean', label_smoothing = 0})
-- -> tensor: nll_loss(log_softmax(x)) of logits x (N x C, or C) and 1-based class targets (N), or
-- the cross entropy with class probabilities (a floating target of x's shape)
function F.cross_entropy(x, target, o)
  o = opts_of(o, 'cross_entropy', { 'weight', 'ignore_index', 'reduction', 'label_smoothing' })
  check_tensor(x, 'cross_entropy')
  check_tensor(target, 'cross_entropy', 'target')
  local probabilities = target.dtype.is_floating_point
  if o.weight then
    local w
    if probabilities then x, target, w = fp32(x, target, o.weight) else x, w = fp32(x, o.weight) end
    o = { weight = w, ignore_index = o.ignore_index, reduction = o.reduction, label_smoothing = o.label_smoothing }
  elseif probabilities then
    x, target = fp32(x, target)
  else
    x = fp32(x)
  end
  local eps = o.label_smoothing or 0
  if eps < 0 or eps > 1 then error('cross_entropy: label_smoothing must be between 0.0 and 1.0, got ' .. eps, 2) end
  local cdim = x:dim() == 1 and 1 or 2
  local logp = C.log_softmax(x, cdim)
  local red = reduction_code(o.reduction, 'cross_entropy')
  if probabilities then return cross_entropy_probabilities(x, target, logp, cdim, o, red) end
  weight_without_grad(o.weight, 'cross_entropy')
  local nll = C.nll_loss('cross_entropy', logp, target, o.weight, o.ignore_index, red)
  if eps == 0 then return nll end
  local n_classes = x:size(cdim)
  local smooth
  if o.weight then
    local shape = {}
    for i = 1, x:dim() do shape[i] = 1 end
    shape[cdim] = n_classes
    smooth = -(logp * o.weight:view(shape)):sum(cdim)
  else
    smooth = -logp:sum(cdim)
  end
  local ignore = o.ignore_index and target:eq(o.ignore_index) or nil
  if ignore then smooth = smooth:masked_fill(ignore, 0) end
  local ret
  if red == 1 then
    if o.weight then
      local kept = ignore and target:masked_select(ignore:logical_not()) or target:reshape(-1)
      ret = smooth:sum() / o.weight:index_select(1, kept:reshape(-1)):sum()
    elseif ignore then -- PyTorch divides by the number of targets kept
      ret = smooth:sum() / ignore:logical_not():sum()
    else
      ret = smooth:mean()
    end
  elseif red == 2 then
    ret = smooth:sum()
  else
    ret = smooth
  end
  return nll * (1 - eps) + ret * (eps / n_classes)
end

-- the families written in files of their own (lua/torch/nn/functional/*.lua) add their functions to F,
-- given the checks above
local util = { check_tensor = check_tensor, opts_of = opts_of, params = params, pair = pair, single = single,
  reduce = reduce, fp32 = fp32, as_op = as_op, cubic_weights = cubic_weights, check_max_norm = check_max_norm,
  embedding_renorm_ = embedding_renorm_ }
for _, part in ipairs { 'normalization', 'pooling', 'linear', 'sparse', 'activation', 'dropout', 'vision', 'loss', 'ctc',
  'volumetric', 'fractional_pool', 'variants', 'attention' } do
  require('torch.nn.functional.' .. part)(F, util)
end

-- F.conv_tbc(input, weight, bias, pad = 0) and F.native_channel_shuffle(input, groups): PyTorch's F
-- names of torch.conv_tbc and torch.native_channel_shuffle (lua/torch/nn/native_aliases.lua)
function F.conv_tbc(x, w, b, pad) return torch.conv_tbc(x, w, b, pad) end
function F.native_channel_shuffle(x, groups) return torch.native_channel_shuffle(x, groups) end

return F
