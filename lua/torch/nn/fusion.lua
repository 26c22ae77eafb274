-- nn.utils.fusion: a convolution or a linear layer followed by batch norm in eval mode, folded into
-- one layer, with PyTorch 1.13's formulas. With s = bn.weight / sqrt(running_var + eps):
--   weight' = weight * s (per output channel),  bias' = (bias - running_mean) * s + bn.bias
-- (a missing bias is zeros; a missing bn weight ones, a missing bn bias zeros).
local torch = require 'torch'
local Parameter = require('torch.nn.parameter').Parameter

local fusion = {}

local check_tensor = require('torch.nn.functional')._check_tensor

local function check_bn_args(op, rm, rv, eps, w, b)
  check_tensor(rm, op, 'bn_rm (the running mean)')
  check_tensor(rv, op, 'bn_rv (the running variance)')
  if type(eps) ~= 'number' then error(string.format('%s: expected bn_eps to be a number, got %s', op, type(eps)), 3) end
  if w == nil then w = torch.ones_like(rm) else check_tensor(w, op, 'bn_w') end
  if b == nil then b = torch.zeros_like(rm) else check_tensor(b, op, 'bn_b') end
  return w, b
end

-- fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose) -> weight, bias
-- (parameters); transpose for a ConvTranspose's weight (in, out / groups, k...), whose output
-- channels are its second dim
function fusion.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose)
  local op = 'fuse_conv_bn_weights'
  check_tensor(conv_w, op, 'conv_w')
  bn_w, bn_b = check_bn_args(op, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  if conv_b == nil then conv_b = torch.zeros_like(bn_rm) else check_tensor(conv_b, op, 'conv_b') end
  local channels = conv_w:size(transpose and 2 or 1)
  if conv_w:dim() < 2 or channels ~= bn_rm:numel() then
    error(string.format('%s: the convolution weight of shape %s has %s output channels, the batch norm %d',
      op, tostring(conv_w.shape), conv_w:dim() < 2 and 'no' or tostring(channels), bn_rm:numel()), 2)
  end
  return torch.no_grad(function()
    local rsqrt = torch.rsqrt(bn_rv + bn_eps)
    local shape = { transpose and 1 or -1, transpose and -1 or 1 }
    for i = 3, conv_w:dim() do shape[i] = 1 end
    local w = conv_w * (bn_w * rsqrt):reshape(shape)
    local b = (conv_b - bn_rm) * rsqrt * bn_w + bn_b
    return Parameter(w), Parameter(b)
  end)
end

-- fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b) -> weight, bias
function fusion.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local op = 'fuse_linear_bn_weights'
  check_tensor(linear_w, op, 'linear_w')
  bn_w, bn_b = check_bn_args(op, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  if linear_b == nil then linear_b = torch.zeros_like(bn_rm) else check_tensor(linear_b, op, 'linear_b') end
  if linear_w:dim() ~= 2 or linear_w:size(1) ~= bn_rm:numel() then
    error(string.format('%s: the linear weight of shape %s does not have the batch norm\'s %d output features',
      op, tostring(linear_w.shape), bn_rm:numel()), 2)
  end
  return torch.no_grad(function()
    local scale = bn_w * torch.rsqrt(bn_rv + bn_eps)
    local w = linear_w * scale:unsqueeze(-1)
    local b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(w), Parameter(b)
  end)
end

local function check_eval(op, layer, bn)
  local Module = require 'torch.nn.module'
  if not Module.is_module(layer) or not Module.is_module(bn) then
    error(string.format('%s: expected two modules, got %s and %s', op, type(layer), type(bn)), 3)
  end
  if layer.training or bn.training then
    error(op .. ': fusion only for eval! (call :eval() on both modules first)', 3)
  end
  if bn.running_mean == nil or bn.running_var == nil then
    error(op .. ': the batch norm has no running statistics (track_running_stats = false)', 3)
  end
end

-- fuse_conv_bn_eval(conv, bn, transpose = false): a deep copy of conv whose output is bn(conv(x))
function fusion.fuse_conv_bn_eval(conv, bn, transpose)
  check_eval('fuse_conv_bn_eval', conv, bn)
  local fused = conv:_deepcopy()
  fused.weight, fused.bias = fusion.fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
    bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
  return fused
end

-- fuse_linear_bn_eval(linear, bn): a deep copy of linear whose output is bn(linear(x))
function fusion.fuse_linear_bn_eval(linear, bn)
  check_eval('fuse_linear_bn_eval', linear, bn)
  local fused = linear:_deepcopy()
  fused.weight, fused.bias = fusion.fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean,
    bn.running_var, bn.eps, bn.weight, bn.bias)
  return fused
end

return fusion
