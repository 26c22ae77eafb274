-- nn.BatchNorm1d/2d/3d, nn.LayerNorm, nn.GroupNorm, nn.RMSNorm, nn.InstanceNorm1d/2d/3d and
-- nn.LocalResponseNorm: parameters, running-statistics buffers and PyTorch's momentum rules over
-- F.batch_norm, F.layer_norm, F.group_norm, F.rms_norm, F.instance_norm and F.local_response_norm.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local options = require 'torch.options'
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

-- BatchNorm(num_features, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true,
-- device, dtype}); momentum = false (PyTorch's None) means a cumulative average
local BatchNorm = Module:extend('_BatchNorm')
M._BatchNorm = BatchNorm
-- PyTorch's defaults of affine and track_running_stats: true here, false for InstanceNorm
BatchNorm._affine_default, BatchNorm._track_default = true, true

local function flag(v, default)
  if v == nil then return default end
  return v and true or false
end

function BatchNorm:init(num_features, o)
  o = o or {}
  local name = self:_get_name()
  num_features = as_int(num_features)
  if math.type(num_features) ~= 'integer' or num_features <= 0 then
    error(string.format('%s: num_features must be a positive integer, got %s', name, tostring(num_features)), 3)
  end
  self.num_features = num_features
  self.eps = o.eps or 1e-5
  -- nil in an options table cannot be told from absent, so false (or the string 'none') asks for None
  local momentum = o.momentum
  if momentum == nil then momentum = 0.1 elseif momentum == false or momentum == 'none' then momentum = nil end
  self.momentum = momentum
  self.affine = flag(o.affine, self._affine_default)
  self.track_running_stats = flag(o.track_running_stats, self._track_default)
  local f = { dtype = o.dtype, device = o.device }
  if self.affine then
    self.weight = Parameter(torch.empty(num_features, f))
    self.bias = Parameter(torch.empty(num_features, f))
  else
    self:register_parameter('weight', nil)
    self:register_parameter('bias', nil)
  end
  if self.track_running_stats then
    self:register_buffer('running_mean', torch.zeros(num_features, f))
    self:register_buffer('running_var', torch.ones(num_features, f))
    self:register_buffer('num_batches_tracked', torch.zeros({}, { dtype = torch.int64, device = o.device }))
  else
    self:register_buffer('running_mean', nil)
    self:register_buffer('running_var', nil)
    self:register_buffer('num_batches_tracked', nil)
  end
  self:reset_parameters()
end

function BatchNorm:reset_running_stats()
  if self.track_running_stats then
    torch.no_grad(function()
      self.running_mean:zero_()
      self.running_var:fill_(1)
      self.num_batches_tracked:zero_()
    end)
  end
end

function BatchNorm:reset_parameters()
  self:reset_running_stats()
  if self.affine then
    init.ones_(self.weight)
    init.zeros_(self.bias)
  end
end

-- PyTorch's _BatchNorm.forward up to the call of batch_norm (SyncBatchNorm shares it): counts the
-- batch when training and tracking, and returns the running statistics to use (nil: none), whether
-- the batch's own statistics normalise, and the running statistics' update factor
function BatchNorm:_prepare_stats()
  local factor = self.momentum or 0.0
  if self.training and self.track_running_stats and self.num_batches_tracked ~= nil then
    torch.no_grad(function() self.num_batches_tracked:add_(1) end)
    if self.momentum == nil then
      factor = 1.0 / self.num_batches_tracked:item()
    end
  end
  local bn_training = self.training or (self.running_mean == nil and self.running_var == nil)
  local use_stats = not self.training or self.track_running_stats
  return use_stats and self.running_mean or nil, use_stats and self.running_var or nil, bn_training, factor
end

function BatchNorm:forward(x)
  self:_check_input_dim(x)
  local running_mean, running_var, bn_training, factor = self:_prepare_stats()
  return F.batch_norm(x, running_mean, running_var, self.weight, self.bias,
    { training = bn_training, momentum = factor, eps = self.eps })
end

-- a state dict without num_batches_tracked (saved before it existed) keeps the current count
function BatchNorm:_load_state_hook(sd, prefix)
  local key = prefix .. 'num_batches_tracked'
  if self.track_running_stats and sd[key] == nil then
    sd[key] = self.num_batches_tracked or torch.tensor(0)
  end
end

function BatchNorm:extra_repr()
  return string.format('%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s', self.num_features,
    pyrepr(self.eps), pyrepr(self.momentum), pyrepr(self.affine), pyrepr(self.track_running_stats))
end

local BatchNorm1d = BatchNorm:extend('BatchNorm1d')
M.BatchNorm1d = BatchNorm1d
function BatchNorm1d:_check_input_dim(x)
  if not torch.is_tensor(x) then error('BatchNorm1d: expected a tensor, got ' .. type(x), 3) end
  if x:dim() ~= 2 and x:dim() ~= 3 then
    error(string.format('BatchNorm1d: expected 2D or 3D input (got %dD input)', x:dim()), 3)
  end
end

local BatchNorm2d = BatchNorm:extend('BatchNorm2d')
M.BatchNorm2d = BatchNorm2d
function BatchNorm2d:_check_input_dim(x)
  if not torch.is_tensor(x) then error('BatchNorm2d: expected a tensor, got ' .. type(x), 3) end
  if x:dim() ~= 4 then
    error(string.format('BatchNorm2d: expected 4D input (got %dD input)', x:dim()), 3)
  end
end

local BatchNorm3d = BatchNorm:extend('BatchNorm3d')
M.BatchNorm3d = BatchNorm3d
function BatchNorm3d:_check_input_dim(x)
  if not torch.is_tensor(x) then error('BatchNorm3d: expected a tensor, got ' .. type(x), 3) end
  if x:dim() ~= 5 then
    error(string.format('BatchNorm3d: expected 5D input (got %dD input)', x:dim()), 3)
  end
end

-- InstanceNorm1d/2d/3d(num_features, {eps = 1e-5, momentum = 0.1, affine = false, track_running_stats = false,
-- device, dtype}): each sample's channels normalised over their own positions (F.instance_norm);
-- with track_running_stats, the running statistics are updated while training and used in eval
-- mode; unbatched input (no N) is taken as a batch of one
local InstanceNorm = BatchNorm:extend('_InstanceNorm')
M._InstanceNorm = InstanceNorm
InstanceNorm._affine_default, InstanceNorm._track_default = false, false

function InstanceNorm:forward(x)
  local name = self:_get_name()
  if not torch.is_tensor(x) then error(name .. ': expected a tensor, got ' .. type(x), 2) end
  local nd = self._spatial_dims
  if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
    error(string.format('%s: expected %dD or %dD input (got %dD input)', name, nd + 1, nd + 2, x:dim()), 2)
  end
  local feature_dim = x:dim() - nd
  if x:size(feature_dim) ~= self.num_features and self.affine then
    error(string.format("%s: expected input's size at dim=%d to match num_features (%d), but got: %d.", name,
      feature_dim, self.num_features, x:size(feature_dim)), 2)
  end
  local batched = x:dim() == nd + 2
  if not batched then x = x:unsqueeze(1) end
  local momentum = self.momentum
  if momentum == nil then
    if self.training and self.track_running_stats then
      error(name .. ': momentum=None (a cumulative average) is not supported by instance_norm', 2)
    end
    momentum = 0.1
  end
  local y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
    { use_input_stats = self.training or not self.track_running_stats, momentum = momentum, eps = self.eps })
  if not batched then y = y:squeeze(1) end
  return y
end

for nd = 1, 3 do
  local cls = InstanceNorm:extend('InstanceNorm' .. nd .. 'd')
  cls._spatial_dims = nd
  M['InstanceNorm' .. nd .. 'd'] = cls
end

-- LocalResponseNorm(size, alpha = 1e-4, beta = 0.75, k = 1) (or LocalResponseNorm(size, {alpha, beta, k}))
local LocalResponseNorm = Module:extend('LocalResponseNorm')
M.LocalResponseNorm = LocalResponseNorm

function LocalResponseNorm:init(size, ...)
  local op = self:_get_name()
  size = as_int(size)
  if math.type(size) ~= 'integer' or size < 1 then
    error(op .. ': size must be a positive integer, got ' .. tostring(size), 3)
  end
  local alpha, beta, k = options.args(op, { ... }, { 'alpha', 'beta', 'k' }, { 1e-4, 0.75, self._k_default }, 4)
  for name, v in pairs { alpha = alpha, beta = beta, k = k } do
    if type(v) ~= 'number' then error(string.format('%s: %s must be a number, got %s', op, name, type(v)), 3) end
  end
  self.size, self.alpha, self.beta, self.k = size, alpha, beta, k
end

function LocalResponseNorm:forward(x) return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k) end

function LocalResponseNorm:extra_repr()
  return string.format('%d, alpha=%s, beta=%s, k=%s', self.size, pyrepr(self.alpha + 0.0), pyrepr(self.beta + 0.0),
    pyrepr(self.k + 0.0))
end
LocalResponseNorm._k_default = 1.0

-- CrossMapLRN2d(size, alpha = 1e-4, beta = 0.75, k = 1) (or CrossMapLRN2d(size, {alpha, beta, k})):
-- Torch7's cross-channel LRN of N x C x H x W input, with PyTorch 1.13's values (F._cross_map_lrn2d)
local CrossMapLRN2d = LocalResponseNorm:extend('CrossMapLRN2d')
M.CrossMapLRN2d = CrossMapLRN2d
CrossMapLRN2d._k_default = 1

function CrossMapLRN2d:forward(x) return F._cross_map_lrn2d(x, self.size, self.alpha, self.beta, self.k) end

function CrossMapLRN2d:extra_repr()
  return string.format('%d, alpha=%s, beta=%s, k=%s', self.size, pyrepr(self.alpha), pyrepr(self.beta), pyrepr(self.k))
end

-- LayerNorm(normalized_shape, {eps = 1e-5, elementwise_affine = true, bias = true, device, dtype})
local LayerNorm = Module:extend('LayerNorm')
M.LayerNorm = LayerNorm

-- normalized_shape (an integer or a table of them) as a new table, checked for layer `name`
local function normalized_shape_of(name, normalized_shape)
  local shape = {}
  normalized_shape = as_int(normalized_shape)
  if math.type(normalized_shape) == 'integer' then
    shape[1] = normalized_shape
  elseif type(normalized_shape) == 'table' then
    for i = 1, #normalized_shape do shape[i] = normalized_shape[i] end
  else
    error(name .. ': normalized_shape must be an integer or a table of integers, got ' .. type(normalized_shape), 4)
  end
  for i, s in ipairs(shape) do
    s = as_int(s)
    shape[i] = s
    if math.type(s) ~= 'integer' or s < 0 then
      error(name .. ': normalized_shape must hold non-negative integers, got ' .. tostring(s), 4)
    end
  end
  return shape
end

function LayerNorm:init(normalized_shape, o)
  o = o or {}
  local shape = normalized_shape_of('LayerNorm', normalized_shape)
  self.normalized_shape = shape
  self.eps = o.eps or 1e-5
  self.elementwise_affine = flag(o.elementwise_affine, true)
  local f = { dtype = o.dtype, device = o.device }
  if self.elementwise_affine then
    self.weight = Parameter(torch.ones(shape, f))
    if flag(o.bias, true) then
      self.bias = Parameter(torch.zeros(shape, f))
    else
      self:register_parameter('bias', nil)
    end
  else
    self:register_parameter('weight', nil)
    self:register_parameter('bias', nil)
  end
end

function LayerNorm:reset_parameters()
  if self.elementwise_affine then
    init.ones_(self.weight)
    if self.bias ~= nil then init.zeros_(self.bias) end
  end
end

function LayerNorm:forward(x)
  return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, { eps = self.eps })
end

function LayerNorm:extra_repr()
  return string.format('%s, eps=%s, elementwise_affine=%s', pyrepr(self.normalized_shape), pyrepr(self.eps),
    pyrepr(self.elementwise_affine))
end

-- GroupNorm(num_groups, num_channels, {eps = 1e-5, affine = true, device, dtype}): statistics over
-- each group of channels (and every position) of N x C x ... input, weight and bias per channel
local GroupNorm = Module:extend('GroupNorm')
M.GroupNorm = GroupNorm

function GroupNorm:init(num_groups, num_channels, o)
  o = o or {}
  num_groups = as_int(num_groups)
  num_channels = as_int(num_channels)
  if math.type(num_groups) ~= 'integer' or num_groups < 1 or math.type(num_channels) ~= 'integer' or num_channels < 1 then
    error(string.format('GroupNorm: num_groups and num_channels must be positive integers, got %s and %s',
      tostring(num_groups), tostring(num_channels)), 3)
  end
  if num_channels % num_groups ~= 0 then error('GroupNorm: num_channels must be divisible by num_groups', 3) end
  self.num_groups, self.num_channels = num_groups, num_channels
  self.eps = o.eps or 1e-5
  self.affine = flag(o.affine, true)
  local f = { dtype = o.dtype, device = o.device }
  if self.affine then
    self.weight = Parameter(torch.ones(num_channels, f))
    self.bias = Parameter(torch.zeros(num_channels, f))
  else
    self:register_parameter('weight', nil)
    self:register_parameter('bias', nil)
  end
end

function GroupNorm:forward(x) return F.group_norm(x, self.num_groups, self.weight, self.bias, { eps = self.eps }) end

function GroupNorm:extra_repr()
  return string.format('%d, %d, eps=%s, affine=%s', self.num_groups, self.num_channels, pyrepr(self.eps), pyrepr(self.affine))
end

-- RMSNorm(normalized_shape, {eps (the dtype's machine epsilon when nil), elementwise_affine = true,
-- device, dtype})
local RMSNorm = Module:extend('RMSNorm')
M.RMSNorm = RMSNorm

function RMSNorm:init(normalized_shape, o)
  o = F._opts_of(o, 'RMSNorm', { 'eps', 'elementwise_affine', 'device', 'dtype' })
  local shape = normalized_shape_of('RMSNorm', normalized_shape)
  self.normalized_shape = shape
  self.eps = o.eps
  self.elementwise_affine = flag(o.elementwise_affine, true)
  if self.elementwise_affine then
    self.weight = Parameter(torch.ones(shape, { dtype = o.dtype, device = o.device }))
  else
    self:register_parameter('weight', nil)
  end
end

function RMSNorm:reset_parameters()
  if self.elementwise_affine then init.ones_(self.weight) end
end

function RMSNorm:forward(x)
  return F.rms_norm(x, self.normalized_shape, self.weight, { eps = self.eps })
end

function RMSNorm:extra_repr()
  return string.format('%s, eps=%s, elementwise_affine=%s', pyrepr(self.normalized_shape),
    self.eps == nil and 'None' or pyrepr(self.eps), pyrepr(self.elementwise_affine))
end

return M
