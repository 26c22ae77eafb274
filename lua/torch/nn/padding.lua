-- The padding layers over F.pad: ZeroPad1d/2d/3d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d,
-- ReplicationPad1d/2d/3d and CircularPad1d/2d/3d. The padding is a number (every side) or PyTorch's
-- tuple: {left, right} for 1-D, {left, right, top, bottom} for 2-D, {left, right, top, bottom, front,
-- back} for 3-D.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

local function layer(name, dims, mode)
  local cls = Module:extend(name)
  M[name] = cls
  cls.init = function(self, padding, value)
    local pad = {}
    padding = as_int(padding)
    if math.type(padding) == 'integer' then
      for i = 1, 2 * dims do pad[i] = padding end
    elseif type(padding) == 'table' and #padding == 2 * dims then
      for i = 1, 2 * dims do pad[i] = padding[i] end
    else
      error(string.format('%s: padding must be an integer or a table of %d integers, got %s', name, 2 * dims,
        type(padding) == 'table' and (#padding .. ' values') or tostring(padding)), 3)
    end
    for i, v in ipairs(pad) do
      v = as_int(v)
      pad[i] = v
      if math.type(v) ~= 'integer' then error(name .. ': padding must hold integers, got ' .. tostring(v), 3) end
    end
    self.padding = pad
    if mode == 'constant' then
      if name:find('^Zero') then value = 0 end
      if type(value) ~= 'number' then error(name .. ': value must be a number, got ' .. tostring(value), 3) end
      self.value = value
    end
  end
  cls.forward = function(self, x)
    if x:dim() ~= dims + 1 and x:dim() ~= dims + 2 then
      error(string.format('%s: expected a %d-D (unbatched) or %d-D (batched) input, got %d-D', name, dims + 1, dims + 2, x:dim()), 2)
    end
    if mode == 'constant' then return F.pad(x, self.padding, { mode = 'constant', value = self.value }) end
    return F.pad(x, self.padding, { mode = mode })
  end
  cls.extra_repr = function(self)
    local s = '(' .. table.concat(self.padding, ', ') .. ')'
    if mode == 'constant' and not name:find('^Zero') then s = s .. ', value=' .. pyrepr(self.value + 0.0) end
    return s
  end
end

for dims = 1, 3 do
  layer('ZeroPad' .. dims .. 'd', dims, 'constant')
  layer('ConstantPad' .. dims .. 'd', dims, 'constant')
  layer('ReflectionPad' .. dims .. 'd', dims, 'reflect')
  layer('ReplicationPad' .. dims .. 'd', dims, 'replicate')
  layer('CircularPad' .. dims .. 'd', dims, 'circular')
end

return M
