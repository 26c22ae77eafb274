-- torch.data.Dataset, TensorDataset, and the small class helper that torch.data's classes use.
--   local MyData = torch.data.Dataset:extend('MyData')
--   function MyData:init(n) self.n = n end
--   function MyData:__len() return self.n end      -- or function MyData:len()
--   function MyData:get(i) return torch.full({2}, i), i end   -- 1-based; any number of values
--   local ds = MyData(10); print(#ds, ds:get(3))
local torch = require 'torch'

local M = {}

-- ---- classes: torch.class (lua/torch/class.lua), the mechanism of nn.Module and the optimizers ----
local class = require 'torch.class'

-- M.class(name, parent): a new class; Cls:extend(name) derives from it.
function M.class(name, parent)
  if parent then return parent:extend(name) end
  return class(name)
end

-- Whether obj is an instance of cls or of a class derived from it.
M.is_instance = class.isinstance

-- ---- Dataset ----
local Dataset = M.class('Dataset')
M.Dataset = Dataset

local function dataset_len(self)
  local len = self.len
  if len == Dataset.len then
    error((rawget(getmetatable(self), "__name") or "?") .. ': a Dataset needs __len or len() to report its size', 2)
  end
  return len(self)
end
Dataset.__len = dataset_len

function Dataset:len()
  if getmetatable(self).__len == dataset_len then
    error((rawget(getmetatable(self), "__name") or "?") .. ': a Dataset needs __len or len() to report its size', 2)
  end
  return #self
end

function Dataset:get(i)
  error((rawget(getmetatable(self), "__name") or "?") .. ':get(' .. tostring(i) .. '): the Dataset does not define get(i)', 2)
end

function Dataset:__tostring()
  local ok, n = pcall(function() return #self end)
  return string.format('%s (%s samples)', (rawget(getmetatable(self), "__name") or "?"), ok and tostring(n) or '?')
end

-- The tensors whose rows are the samples (get(i) == t1[i], t2[i], ...), when that holds exactly;
-- the loader then builds a batch with one index_select per tensor. nil for other datasets.
function Dataset:_row_tensors() return nil end

-- Checks a sample index: an integer in 1..n.
function M.check_index(name, i, n)
  if math.type(i) ~= 'integer' then
    if math.type(i) == 'float' and i == math.floor(i) then
      i = math.tointeger(i)
    else
      error(string.format('%s:get: expected an integer index, got %s', name,
        type(i) == 'number' and tostring(i) or type(i)), 3)
    end
  end
  if i < 1 or i > n then
    error(string.format('%s:get: index %d out of range for a dataset of %d samples', name, i, n), 3)
  end
  return i
end

-- ---- TensorDataset(t1, t2, ...) ----
-- Sample i is (t1[i], t2[i], ...): rows of 1-D tensors are 0-d tensors, as in PyTorch, so that
-- collating them keeps the tensors' dtype.
local TensorDataset = Dataset:extend('TensorDataset')
M.TensorDataset = TensorDataset

function TensorDataset:init(...)
  local n = select('#', ...)
  if n == 0 then error('TensorDataset: expected at least one tensor', 3) end
  local tensors = { ... }
  for k = 1, n do
    local t = tensors[k]
    if not torch.is_tensor(t) then
      error(string.format('TensorDataset: argument %d is a %s, expected a tensor', k, type(t)), 3)
    end
    if t:dim() == 0 then
      error(string.format('TensorDataset: tensor %d is 0-dimensional; every tensor needs a first dimension', k), 3)
    end
  end
  local rows = tensors[1]:size(1)
  for k = 2, n do
    if tensors[k]:size(1) ~= rows then
      error(string.format('TensorDataset: Size mismatch between tensors: tensor 1 has %d rows, tensor %d has %d',
        rows, k, tensors[k]:size(1)), 3)
    end
  end
  self.tensors = tensors
  self._n = rows
end

function TensorDataset:__len() return self._n end

function TensorDataset:get(i)
  i = M.check_index('TensorDataset', i, self._n)
  local ts = self.tensors
  if #ts == 1 then return ts[1]:select(1, i) end
  if #ts == 2 then return ts[1]:select(1, i), ts[2]:select(1, i) end
  local out = {}
  for k = 1, #ts do out[k] = ts[k]:select(1, i) end
  return table.unpack(out, 1, #ts)
end

function TensorDataset:_row_tensors()
  if self.get ~= TensorDataset.get then return nil end
  return self.tensors
end

return M
