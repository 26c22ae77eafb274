-- IterableDatasets in a module of their own, for spec/data_extra_spec.lua: DataLoader workers
-- rebuild them by requiring this module.
local torch = require 'torch'
local data = require 'torch.data'

local M = {}

-- Range(lo, hi, {shard = bool}): the samples lo..hi as (0-d float64 tensor, integer); with shard,
-- a worker yields only its share (every num_workers-th sample from its id's)
local Range = data.IterableDataset:extend('Range')
M.Range = Range

function Range:init(lo, hi, opts)
  self.lo, self.hi, self.shard = lo, hi, opts and opts.shard or false
end

function Range:__iter()
  local lo, step = self.lo, 1
  local info = data.get_worker_info()
  if self.shard and info then lo, step = self.lo + info.id - 1, info.num_workers end
  local i = lo - step
  return function()
    i = i + step
    if i <= self.hi then return torch.tensor(i, { dtype = torch.float64 }), i end
  end
end

-- Ids(n, scale): n samples (n * id in worker id when scale), each the id of the worker that made
-- it (0 in the main thread)
local Ids = data.IterableDataset:extend('Ids')
M.Ids = Ids
function Ids:init(n, scale) self.n, self.scale = n, scale or false end
function Ids:iter()
  local info = data.get_worker_info()
  local k, n = 0, self.n
  if self.scale and info then n = n * info.id end
  return function()
    k = k + 1
    if k <= n then return info and info.id or 0 end
  end
end

return M
