-- nn.Flatten: flattens dims start_dim..end_dim (1-based; the defaults keep the batch dim).
local Module = require 'torch.nn.module'

local M = {}

-- Flatten(start_dim = 2, end_dim = -1) (or Flatten({start_dim = ..., end_dim = ...}))
local Flatten = Module:extend('Flatten')
M.Flatten = Flatten

function Flatten:init(start_dim, end_dim)
  if type(start_dim) == 'table' then start_dim, end_dim = start_dim.start_dim, start_dim.end_dim end
  start_dim, end_dim = start_dim or 2, end_dim or -1
  if math.type(start_dim) ~= 'integer' or math.type(end_dim) ~= 'integer' then
    error('Flatten: start_dim and end_dim must be integers', 3)
  end
  self.start_dim, self.end_dim = start_dim, end_dim
end

function Flatten:forward(x) return x:flatten(self.start_dim, self.end_dim) end

function Flatten:extra_repr() return string.format('start_dim=%d, end_dim=%d', self.start_dim, self.end_dim) end

return M
