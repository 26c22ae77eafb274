-- nn.utils.spectral_norm(module, {name = 'weight', n_power_iterations = 1, eps = 1e-12, dim}) and
-- nn.utils.remove_spectral_norm(module, name): PyTorch's spectral normalisation (the hook version of
-- torch/nn/utils/spectral_norm.py). The parameter `name` is renamed name_orig (the same tensor, so
-- an optimizer holding it keeps working), two buffers name_u and name_v (random unit vectors at
-- first) are added, and before every forward (a forward pre-hook) the weight is recomputed as
-- W_orig / sigma, sigma = u . (W v) with W the weight as a matrix (dim moved first, the rest
-- flattened). In training mode n_power_iterations steps of power iteration first update u and v in
-- place (v = normalize(W^T u), u = normalize(W v), with eps); in eval mode u and v are used as they
-- are. dim is 1-based: by default 1, or 2 for the ConvTranspose layers (PyTorch's 0 and 1); a
-- negative dim counts from the end. remove_spectral_norm puts back one parameter `name` (the
-- normalised weight, without a power iteration) and drops the hook and the buffers.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local wn = require 'torch.nn.weight_norm'
local as_int = require('torch.composite').as_int

local M = {}

local SpectralNorm = {}
SpectralNorm.__index = SpectralNorm
SpectralNorm.__name = 'SpectralNorm'

-- the weight as a matrix: dim (1-based) moved first, the other dimensions flattened
local function weight_matrix(weight, dim)
  local w = weight
  if dim ~= 1 then
    local perm = { dim }
    for d = 1, w:dim() do
      if d ~= dim then perm[#perm + 1] = d end
    end
    w = w:permute(perm)
  end
  return w:reshape(w:size(1), -1)
end
M._weight_matrix = weight_matrix

-- n steps of power iteration on mat, updating the unit vectors u and v in place (so that a
-- DataParallel replica's update reaches the module's buffers); v_first: v = normalize(W^T u) then
-- u = normalize(W v), the hook version's order; else u first, the parametrization's order
function M._power_iteration(mat, u, v, n, eps, v_first)
  torch.no_grad(function()
    for _ = 1, n do
      if v_first then v:copy_(F.normalize(torch.mv(mat:t(), u), { dim = 1, eps = eps })) end
      u:copy_(F.normalize(torch.mv(mat, v), { dim = 1, eps = eps }))
      if not v_first then v:copy_(F.normalize(torch.mv(mat:t(), u), { dim = 1, eps = eps })) end
    end
  end)
end

-- random unit vectors u (rows of mat) and v (its columns)
function M._random_vectors(mat, eps)
  return torch.no_grad(function()
    return F.normalize(mat:new_empty(mat:size(1)):normal_(0, 1), { dim = 1, eps = eps }),
      F.normalize(mat:new_empty(mat:size(2)):normal_(0, 1), { dim = 1, eps = eps })
  end)
end

-- the weight divided by sigma = u . (W v), u and v cloned so that a backward through two forwards
-- sees the vectors of its own forward
function M._normalized(weight, mat, u, v)
  return weight / torch.dot(u:clone(), torch.mv(mat, v:clone()))
end

function SpectralNorm:reshape_weight_to_matrix(weight) return weight_matrix(weight, self.dim) end

function SpectralNorm:compute_weight(module, do_power_iteration)
  local weight = module[self.name .. '_orig']
  local u, v = module[self.name .. '_u'], module[self.name .. '_v']
  local mat = self:reshape_weight_to_matrix(weight)
  if do_power_iteration then M._power_iteration(mat, u, v, self.n_power_iterations, self.eps, true) end
  return M._normalized(weight, mat, u, v)
end

-- the forward pre-hook
function SpectralNorm.__call(self, module)
  module[self.name] = self:compute_weight(module, module.training)
end

local allowed = { name = true, n_power_iterations = true, eps = true, dim = true }

-- spectral_norm(module, {name = 'weight', n_power_iterations = 1, eps = 1e-12, dim}) (or PyTorch's
-- positional order): the weight divided by its largest singular value, estimated by power iteration
-- before each forward in training; name_orig is the parameter, name_u and name_v buffers
function M.spectral_norm(module, name, n_power_iterations, eps, dim)
  local op = 'spectral_norm'
  if not Module.is_module(module) then error('spectral_norm: expected a module, got ' .. type(module), 2) end
  if type(name) == 'table' then
    for k in pairs(name) do
      if not allowed[k] then error("spectral_norm: unknown option '" .. tostring(k) .. "'", 2) end
    end
    name, n_power_iterations, eps, dim = name.name, name.n_power_iterations, name.eps, name.dim
  end
  name = name or 'weight'
  n_power_iterations = n_power_iterations or 1
  eps = eps or 1e-12
  n_power_iterations = as_int(n_power_iterations)
  if math.type(n_power_iterations) ~= 'integer' or n_power_iterations <= 0 then
    error('spectral_norm: Expected n_power_iterations to be positive, but got n_power_iterations='
      .. tostring(n_power_iterations), 2)
  end
  if wn._find_hook(module, SpectralNorm, name) then
    error('spectral_norm: Cannot register two spectral_norm hooks on the same parameter ' .. name, 2)
  end
  local weight = wn._parameter_of(module, name, op, 2)
  if weight:dim() == 0 then error('spectral_norm: the weight must have at least one dimension', 2) end
  if dim == nil then
    dim = 1
    local name_of = module:_get_name()
    if name_of:match('^ConvTranspose%dd$') then dim = 2 end
  end
  dim = wn._resolve_dim(dim, weight:dim(), op, 2)
  local fn = setmetatable({ name = name, dim = dim, n_power_iterations = n_power_iterations, eps = eps }, SpectralNorm)
  local u, v = M._random_vectors(fn:reshape_weight_to_matrix(weight), eps)
  Module._remove_name(module, name)
  module:register_parameter(name .. '_orig', weight)
  -- the weight stays reachable under its name (a plain field) until the first forward
  module[name] = weight:detach()
  module:register_buffer(name .. '_u', u)
  module:register_buffer(name .. '_v', v)
  module:register_forward_pre_hook(fn)
  return module
end

-- remove_spectral_norm(module, name = 'weight'): one parameter `name` again (the normalised weight)
function M.remove_spectral_norm(module, name)
  if not Module.is_module(module) then error('remove_spectral_norm: expected a module, got ' .. type(module), 2) end
  if type(name) == 'table' then name = name.name end
  name = name or 'weight'
  local fn, i = wn._find_hook(module, SpectralNorm, name)
  if fn == nil then
    error(string.format("remove_spectral_norm: spectral_norm of '%s' not found in %s", tostring(name),
      module:_get_name()), 2)
  end
  local weight = torch.no_grad(function() return fn:compute_weight(module, false) end)
  for _, suffix in ipairs { '', '_u', '_v', '_orig' } do Module._remove_name(module, name .. suffix) end
  module:register_parameter(name, Parameter(weight:detach()))
  table.remove(rawget(module, Module._VALS)._forward_pre_hooks, i)
  return module
end

M.SpectralNorm = SpectralNorm
return M
