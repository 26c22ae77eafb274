-- torch.utils.data: PyTorch's name for lutorch's torch.data (DataLoader, Dataset, TensorDataset, the
-- samplers, ...), so that `local data = torch.utils.data` and `require 'torch.utils.data'` work as
-- in PyTorch scripts. The same table as torch.data; it loads on first use, as torch.data does.
return require 'torch.data'
