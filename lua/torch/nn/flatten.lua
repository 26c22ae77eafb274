-- nn.Flatten: flattens dims start_dim..end_dim (1-based; the defaults keep the batch dim); nn.Unflatten
-- splits one dim into several.
local Module = require 'torch.nn.module'
local as_int = require('torch.composite').as_int

local M = {}

-- Flatten(start_dim = 2, end_dim = -1) (or Flatten({start_dim = ..., end_dim = ...}))
local Flatten = Module:extend('Flatten')
M.Flatten = Flatten

function Flatten:init(start_dim, end_dim)
  if type(start_dim) == 'table' then start_dim, end_dim = start_dim.start_dim, start_dim.end_dim end
  start_dim, end_dim = start_dim or 2, end_dim or -1
  start_dim = as_int(start_dim)
  end_dim = as_int(end_dim)
  if math.type(start_dim) ~= 'integer' or math.type(end_dim) ~= 'integer' then
    error('Flatten: start_dim and end_dim must be integers', 3)
  end
  self.start_dim, self.end_dim = start_dim, end_dim
end

function Flatten:forward(x) return x:flatten(self.start_dim, self.end_dim) end

function Flatten:extra_repr() return string.format('start_dim=%d, end_dim=%d', self.start_dim, self.end_dim) end

-- Unflatten(dim, unflattened_size): dim split into the sizes (one may be -1), as x:unflatten
local Unflatten = Module:extend('Unflatten')
M.Unflatten = Unflatten

function Unflatten:init(dim, sizes)
  dim = as_int(dim)
  if math.type(dim) ~= 'integer' then error('Unflatten: dim must be an integer, got ' .. tostring(dim), 3) end
  if type(sizes) ~= 'table' or #sizes == 0 then error('Unflatten: unflattened_size must be a non-empty table of integers', 3) end
  local copy = {}
  for i, s in ipairs(sizes) do
    s = as_int(s)
    if math.type(s) ~= 'integer' then error('Unflatten: unflattened_size must hold integers, got ' .. tostring(s), 3) end
    copy[i] = s
  end
  self.dim, self.unflattened_size = dim, copy
end

function Unflatten:forward(x) return x:unflatten(self.dim, self.unflattened_size) end

function Unflatten:extra_repr()
  return string.format('dim=%d, unflattened_size=(%s)', self.dim, table.concat(self.unflattened_size, ', '))
end

return M
