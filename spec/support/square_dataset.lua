-- A user Dataset in a module of its own, for spec/data_workers_spec.lua: DataLoader workers rebuild
-- it by requiring this module (require 'spec.support.square_dataset').
-- Sample i is (x, i, worker, name): x = {i, i^2} * scale (float64, plus noise when asked), the
-- worker that made it (0 in the main thread) and a string.
local torch = require 'torch'
local data = require 'torch.data'
local dataloader = require 'torch.data.dataloader'

local M = {}

local SquareDataset = data.Dataset:extend('SquareDataset')
M.SquareDataset = SquareDataset

-- opts: scale, fail_at (get(fail_at) raises), noise = 'math' | 'torch', work (a per-sample loop)
function SquareDataset:init(n, opts)
  opts = opts or {}
  self.n, self.scale, self.fail_at, self.noise, self.work = n, opts.scale or 1, opts.fail_at, opts.noise, opts.work
end

function SquareDataset:__len() return self.n end

function SquareDataset:get(i)
  if i == self.fail_at then error('square: cannot load sample ' .. i) end
  local a, b = i * self.scale, i * i * self.scale
  if self.work then -- per-sample Lua work (a transform written in Lua)
    local s = 0
    for k = 1, self.work do s = s + (k * i) % 7 end
    a = a + s * 0
  end
  local x = torch.tensor({ a, b }, { dtype = torch.float64 })
  if self.noise == 'math' then x = x + torch.tensor({ math.random(), math.random() }, { dtype = torch.float64 }) end
  if self.noise == 'torch' then x = x + torch.rand(2, { dtype = torch.float64 }) end
  local info = dataloader.get_worker_info()
  return x, i, info and info.id or 0, 'item' .. i
end

-- dataset_factory
function M.make(n, scale) return SquareDataset(n, { scale = scale }) end

-- a collate_fn by name: the first sample's x, unchanged (a view crosses as it is)
function M.first(samples) return samples[1] end

-- a collate_fn by name: x's summed, as a plain number, and the indices
function M.sum_collate(samples)
  local s, idx = 0, {}
  for k, smp in ipairs(samples) do
    s = s + smp[1]:sum():item()
    idx[k] = smp[2]
  end
  return s, idx
end

-- a worker_init_fn by name: records the worker id seen, which get_worker_info must agree with
function M.init_worker(id)
  local info = dataloader.get_worker_info()
  if info.id ~= id then error('init_worker: id ' .. id .. ' but get_worker_info().id ' .. info.id) end
  M.initialized = id
end

-- a Dataset returning views of a tensor (to check that tensors are shared, not copied)
local Rows = data.Dataset:extend('Rows')
M.Rows = Rows
function Rows:init(t) self.t = t end
function Rows:__len() return self.t:size(1) end
function Rows:get(i) return self.t[i] end

-- a Dataset reporting, per sample, the worker info and whether init_worker ran
local Info = data.Dataset:extend('Info')
M.Info = Info
function Info:init(n) self.n = n end
function Info:__len() return self.n end
function Info:get(i)
  local info = dataloader.get_worker_info()
  return { i, info.id, info.num_workers, info.seed, M.initialized or 0, math.random(1, 1 << 30) }
end

-- a Dataset that spins (Lua code) for a while on sample 1
local Slow = data.Dataset:extend('Slow')
M.Slow = Slow
function Slow:init(seconds) self.seconds = seconds end
function Slow:__len() return 4 end
function Slow:get(i)
  if i == 1 then
    local t0 = torch.utils.clock()
    while torch.utils.clock() - t0 < self.seconds do end
  end
  return i
end

-- a Dataset wrapping another (an object in a field) and a dtype: sample i is inner's, converted
local Wrap = data.Dataset:extend('Wrap')
M.Wrap = Wrap
function Wrap:init(inner, dtype) self.inner, self.dtype, self.meta = inner, dtype, { device = torch.device('cpu') } end
function Wrap:__len() return #self.inner end
function Wrap:get(i)
  local x, y = self.inner:get(i)
  return x:to(self.dtype), y, tostring(self.meta.device)
end

return M
