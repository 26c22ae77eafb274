-- torch.nn.utils: gradient clipping, flattening parameters to one vector, and weight_norm /
-- spectral_norm (weight_norm.lua, spectral_norm.lua), as PyTorch; rnn (padding and packing
-- sequences), parametrize, parametrizations and prune have files of their own.
local torch = require 'torch'
local utils = {}

-- a tensor or an array of tensors as an array
local function param_list(params, op)
  if torch.is_tensor(params) then return { params } end
  if type(params) ~= 'table' then
    error(string.format('%s: expected a tensor or an array of tensors, got %s', op, type(params)), 3)
  end
  local out = {}
  for i, p in ipairs(params) do
    if not torch.is_tensor(p) then
      error(string.format('%s: element %d is a %s, expected a tensor', op, i, type(p)), 3)
    end
    out[i] = p
  end
  return out
end

local function norm_type_of(v)
  if v == nil then return 2.0 end
  if v == 'inf' then return math.huge end
  if v == '-inf' then return -math.huge end
  if type(v) ~= 'number' then error('clip_grad_norm_: norm_type must be a number or \'inf\', got ' .. tostring(v), 3) end
  return v
end

-- clip_grad_norm_(parameters, max_norm, {norm_type = 2, error_if_nonfinite = false}): scales every
-- gradient by min(1, max_norm / (total_norm + 1e-6)); returns the total norm (a 0-dim tensor)
function utils.clip_grad_norm_(parameters, max_norm, o)
  o = o or {}
  local params = param_list(parameters, 'clip_grad_norm_')
  if type(max_norm) ~= 'number' then error('clip_grad_norm_: max_norm must be a number, got ' .. type(max_norm), 2) end
  local norm_type = norm_type_of(o.norm_type)
  local grads = {}
  for _, p in ipairs(params) do
    local g = p.grad
    if g ~= nil then grads[#grads + 1] = g end
  end
  if #grads == 0 then return torch.tensor(0.0) end
  local device = grads[1].device
  return torch.no_grad(function()
    local total
    if norm_type == math.huge then
      local m = {}
      for i, g in ipairs(grads) do m[i] = g:abs():max():to(device) end
      total = #m == 1 and m[1] or torch.stack(m):max()
    else
      local norms = {}
      for i, g in ipairs(grads) do norms[i] = g:norm(norm_type):to(device) end
      total = torch.stack(norms):norm(norm_type)
    end
    if o.error_if_nonfinite and not total:isfinite():item() then
      error(string.format('clip_grad_norm_: the total norm of order %s for gradients from `parameters` is non-finite, '
        .. 'so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, '
        .. 'set `error_if_nonfinite = false`', tostring(norm_type)), 0)
    end
    local coef = (max_norm / (total + 1e-6)):clamp(nil, 1.0)
    for _, g in ipairs(grads) do g:mul_(coef:to(g.device)) end
    return total
  end)
end

-- clip_grad_value_(parameters, clip_value): clamps every gradient to [-clip_value, clip_value]
function utils.clip_grad_value_(parameters, clip_value)
  local params = param_list(parameters, 'clip_grad_value_')
  if type(clip_value) ~= 'number' then
    error('clip_grad_value_: clip_value must be a number, got ' .. type(clip_value), 2)
  end
  torch.no_grad(function()
    for _, p in ipairs(params) do
      local g = p.grad
      if g ~= nil then g:clamp_(-clip_value, clip_value) end
    end
  end)
end

local function same_device(params, op)
  local dev
  for _, p in ipairs(params) do
    if dev == nil then
      dev = p.device
    elseif p.device ~= dev then
      error(string.format('%s: found two parameters on different devices, %s and %s', op, tostring(dev),
        tostring(p.device)), 3)
    end
  end
end

-- parameters_to_vector(parameters): one 1-D tensor of every parameter, flattened, in order
function utils.parameters_to_vector(parameters)
  local params = param_list(parameters, 'parameters_to_vector')
  same_device(params, 'parameters_to_vector')
  local flat = {}
  for i, p in ipairs(params) do flat[i] = p:reshape(-1) end
  return torch.cat(flat)
end

-- vector_to_parameters(vec, parameters): each parameter's data becomes its slice of vec (shared)
function utils.vector_to_parameters(vec, parameters)
  if not torch.is_tensor(vec) then error('vector_to_parameters: expected vec to be a tensor, got ' .. type(vec), 2) end
  if vec:dim() ~= 1 then error('vector_to_parameters: expected vec to be 1-D, got ' .. vec:dim() .. '-D', 2) end
  local params = param_list(parameters, 'vector_to_parameters')
  local total = 0
  for _, p in ipairs(params) do total = total + p:numel() end
  if total ~= vec:numel() then
    error(string.format('vector_to_parameters: vec has %d elements, the parameters %d', vec:numel(), total), 2)
  end
  torch.no_grad(function()
    local at = 1
    for _, p in ipairs(params) do
      local n = p:numel()
      p:set_(vec:detach():narrow(1, at, n):view(p.shape))
      at = at + n
    end
  end)
end

-- consume_prefix_in_state_dict_if_present(sd, 'module.'): strips a prefix (DataParallel's) in place
utils.consume_prefix_in_state_dict_if_present = function(sd, prefix)
  return require('torch.serialization').consume_prefix_in_state_dict_if_present(sd, prefix)
end

-- utils.rnn: pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence, PackedSequence,
-- unpad_sequence, unpack_sequence (rnn_utils.lua)
utils.rnn = require 'torch.nn.rnn_utils'

-- weight_norm(module, {name = 'weight', dim = 1}), remove_weight_norm(module, name),
-- spectral_norm(module, {name = 'weight', n_power_iterations = 1, eps = 1e-12, dim}),
-- remove_spectral_norm(module, name)
local weight_norm = require 'torch.nn.weight_norm'
local spectral_norm = require 'torch.nn.spectral_norm'
utils.weight_norm, utils.remove_weight_norm = weight_norm.weight_norm, weight_norm.remove_weight_norm
utils.spectral_norm, utils.remove_spectral_norm = spectral_norm.spectral_norm, spectral_norm.remove_spectral_norm

-- utils.parametrize (parametrize.lua), utils.parametrizations (parametrizations.lua: orthogonal,
-- spectral_norm) and utils.prune (prune.lua)
utils.parametrize = require 'torch.nn.parametrize'
utils.parametrizations = require 'torch.nn.parametrizations'
utils.prune = require 'torch.nn.prune'

-- utils.fusion: fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
-- (fusion.lua)
utils.fusion = require 'torch.nn.fusion'

-- utils.stateless.functional_call(module, parameters_and_buffers, args, kwargs) (stateless.lua)
utils.stateless = require 'torch.nn.stateless'

-- utils.skip_init(module_cls, ...): a module without its random initialisation (skip_init.lua)
utils.skip_init = require 'torch.nn.skip_init'

return utils
