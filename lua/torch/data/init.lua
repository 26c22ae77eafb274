-- torch.data: datasets, samplers and the DataLoader (PyTorch's torch.utils.data, 1-based).
--   local data = torch.data
--   local ds = data.TensorDataset(x, y)
--   local loader = data.DataLoader(ds, {batch_size = 32, shuffle = true, seed = 0})
--   for xb, yb in loader:iter() do ... end
-- torch.data.datasets (FashionMNIST, MNIST) loads on first use.
local D = require 'torch.data.dataset'
local S = require 'torch.data.sampler'
local L = require 'torch.data.dataloader'

local data = {
  Dataset = D.Dataset,
  TensorDataset = D.TensorDataset,
  Subset = D.Subset,
  ConcatDataset = D.ConcatDataset,
  IterableDataset = D.IterableDataset,
  ChainDataset = D.ChainDataset,
  random_split = D.random_split,
  Sampler = S.Sampler,
  SequentialSampler = S.SequentialSampler,
  RandomSampler = S.RandomSampler,
  BatchSampler = S.BatchSampler,
  SubsetRandomSampler = S.SubsetRandomSampler,
  WeightedRandomSampler = S.WeightedRandomSampler,
  DistributedSampler = S.DistributedSampler,
  DataLoader = L.DataLoader,
  default_collate = L.default_collate,
  get_worker_info = L.get_worker_info,
}

return setmetatable(data, {
  __index = function(t, k)
    if k == 'datasets' then
      local v = require 'torch.data.datasets'
      rawset(t, k, v)
      return v
    end
    return nil
  end,
})
