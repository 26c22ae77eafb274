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
local as_int = require('torch.composite').as_int

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

-- ds[i] is not a sample: PyTorch's ds[0] is the sample's tuple, and a Lua index gives one value
-- where ds:get(i) gives them all (x, y). A number key that a dataset does not hold raises an error
-- that says so, instead of nil. (The lookup of everything else is the class's, as before.)
function Dataset.__index(self, k)
  local v = getmetatable(self)[k]
  if v == nil and type(k) == 'number' then
    error(string.format('%s[%s]: a sample is ds:get(%s), which returns all its values (ds[i] would give one)',
      rawget(getmetatable(self), '__name') or 'Dataset', tostring(k), tostring(k)), 2)
  end
  return v
end

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
  i = as_int(i)
  if math.type(i) ~= 'integer' then
    error(string.format('%s:get: expected an integer index, got %s', name, type(i) == 'number' and tostring(i) or type(i)), 3)
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

-- ---- generators: {generator = g} (a torch.Generator, or anything with randperm(n) (1-based) and
-- randint(low, high, n)), {seed = s} (a generator of its own), or neither (torch's global one) ----
function M.generator_of(name, opts, level)
  if opts.generator ~= nil then
    local g = opts.generator
    if not torch._is_generator(g) and (type(g) ~= 'table' or g.randperm == nil or g.randint == nil) then
      error(name .. ': generator should be a torch.Generator, got ' .. type(g), level + 1)
    end
    return g
  end
  if opts.seed ~= nil then
    opts.seed = as_int(opts.seed)
    if math.type(opts.seed) ~= 'integer' then
      error(name .. ': seed must be an integer, got ' .. tostring(opts.seed), level + 1)
    end
    return torch.Generator():manual_seed(opts.seed)
  end
  return nil
end

-- randperm(n) from g, or from torch's global generator: 1-based int64
function M.randperm(g, n)
  if g then return g:randperm(n) end
  return torch.randperm(n)
end

-- ---- Subset(dataset, indices): sample i is dataset:get(indices[i]) ----
local Subset = Dataset:extend('Subset')
M.Subset = Subset

-- an array of integer indices from a table or an integer tensor, each checked against 1..n (n may be nil)
local function index_list(name, indices, n, level)
  if torch.is_tensor(indices) then
    if indices:dim() ~= 1 or indices:is_floating_point() or indices.dtype == torch.bool then
      error(name .. ': indices should be a 1-D integer tensor or an array of integers', level + 1)
    end
    indices = indices:totable()
  elseif type(indices) ~= 'table' then
    error(name .. ': indices should be an array of integers or a 1-D integer tensor, got ' .. type(indices), level + 1)
  else
    indices = table.move(indices, 1, #indices, 1, {})
  end
  for k = 1, #indices do
    local i = indices[k]
    i = as_int(i)
    if math.type(i) ~= 'integer' then
      error(string.format('%s: index %d is not an integer (%s)', name, k, tostring(i)), level + 1)
    end
    if n and (i < 1 or i > n) then
      error(string.format('%s: index %d (%d) out of range for a dataset of %d samples', name, k, i, n), level + 1)
    end
  end
  return indices
end
M.index_list = index_list

function Subset:init(dataset, indices)
  if type(dataset) ~= 'table' or type(dataset.get) ~= 'function' then
    error('Subset: expected a dataset with get(i), got ' .. type(dataset), 3)
  end
  self.dataset = dataset
  self.indices = index_list('Subset', indices, #dataset, 3)
end

function Subset:__len() return #self.indices end

function Subset:get(i)
  i = M.check_index('Subset', i, #self.indices)
  return self.dataset:get(self.indices[i])
end

-- ---- ConcatDataset(datasets): the samples of each dataset in turn ----
local ConcatDataset = Dataset:extend('ConcatDataset')
M.ConcatDataset = ConcatDataset

function ConcatDataset:init(datasets)
  if type(datasets) ~= 'table' or getmetatable(datasets) ~= nil then
    error('ConcatDataset: expected an array of datasets, got ' .. type(datasets), 3)
  end
  if #datasets == 0 then error('ConcatDataset: datasets should not be an empty iterable', 3) end
  local cum, total = {}, 0
  for k = 1, #datasets do
    local d = datasets[k]
    if M.is_instance(d, M.IterableDataset) then
      error(string.format('ConcatDataset: dataset %d is an IterableDataset, which ConcatDataset does not support (use ChainDataset)', k), 3)
    end
    if type(d) ~= 'table' or type(d.get) ~= 'function' then
      error(string.format('ConcatDataset: entry %d is not a dataset (a %s)', k, type(d)), 3)
    end
    total = total + #d
    cum[k] = total
  end
  self.datasets = table.move(datasets, 1, #datasets, 1, {})
  self.cumulative_sizes = cum
end

function ConcatDataset:__len() return self.cumulative_sizes[#self.cumulative_sizes] end

function ConcatDataset:get(i)
  local cum = self.cumulative_sizes
  i = M.check_index('ConcatDataset', i, cum[#cum])
  -- the first dataset whose cumulative size reaches i
  local lo, hi = 1, #cum
  while lo < hi do
    local mid = (lo + hi) // 2
    if cum[mid] >= i then hi = mid else lo = mid + 1 end
  end
  return self.datasets[lo]:get(i - (cum[lo - 1] or 0))
end

-- ---- random_split(dataset, lengths, {generator, seed}) -> Subsets ----
-- lengths are counts summing to #dataset, or fractions summing to 1 (PyTorch 1.13: each
-- floor(n * f), then the remainder one by one round-robin from the first). The indices are
-- randperm(n) of the generator, as PyTorch's (torch.Generator():manual_seed(s) draws what
-- torch.Generator().manual_seed(s) does).
function M.random_split(dataset, lengths, opts)
  opts = opts or {}
  if type(opts) ~= 'table' then error('random_split: expected an options table, got ' .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= 'generator' and k ~= 'seed' then error("random_split: unknown option '" .. tostring(k) .. "'", 2) end
  end
  if type(lengths) ~= 'table' or #lengths == 0 then error('random_split: lengths should be a non-empty array', 2) end
  local n = #dataset
  local sum = 0
  for k = 1, #lengths do
    if type(lengths[k]) ~= 'number' then
      error(string.format('random_split: length %d is a %s, expected a number', k, type(lengths[k])), 2)
    end
    sum = sum + lengths[k]
  end
  local sizes = {}
  if math.abs(sum - 1) <= 1e-9 and sum <= 1 then
    local given = 0
    for k = 1, #lengths do
      local f = lengths[k]
      if f < 0 or f > 1 then error(string.format('random_split: fraction at index %d is not between 0 and 1', k), 2) end
      sizes[k] = math.floor(n * f)
      given = given + sizes[k]
    end
    for r = 0, n - given - 1 do
      local k = r % #sizes + 1
      sizes[k] = sizes[k] + 1
    end
  else
    for k = 1, #lengths do
      local c = lengths[k]
      c = as_int(c)
      if math.type(c) ~= 'integer' or c < 0 then
        error(string.format('random_split: length %d (%s) should be a non-negative integer or a fraction', k, tostring(c)), 2)
      end
      sizes[k] = c
    end
    if sum ~= n then
      error(string.format('random_split: sum of input lengths (%s) does not equal the length of the input dataset (%d)',
        tostring(sum), n), 2)
    end
  end
  local g = M.generator_of('random_split', opts, 2)
  local perm = n > 0 and M.randperm(g, n):totable() or {}
  local out, offset = {}, 0
  for k = 1, #sizes do
    out[k] = Subset(dataset, table.move(perm, offset + 1, offset + sizes[k], 1, {}))
    offset = offset + sizes[k]
  end
  return out
end

-- ---- IterableDataset: a stream of samples ----
--   local Stream = torch.data.IterableDataset:extend('Stream')
--   function Stream:init(n) self.n = n end
--   function Stream:__iter()           -- or Stream:iter(); an iterator as for a generic `for`
--     local i = 0
--     return function() i = i + 1; if i <= self.n then return torch.tensor(i) end end
--   end
-- A sample is what the iterator yields: one value, or several. It has no get(i) and no length
-- unless it defines len() (or __len).
local IterableDataset = Dataset:extend('IterableDataset')
M.IterableDataset = IterableDataset

local function cname(self) return rawget(getmetatable(self), '__name') or 'IterableDataset' end

function IterableDataset:iter()
  local it = self.__iter
  if type(it) ~= 'function' then
    error(cname(self) .. ': an IterableDataset needs __iter() or iter() returning an iterator', 2)
  end
  return it(self)
end

function IterableDataset:get()
  error(cname(self) .. ': an IterableDataset is not indexable (no get(i)); iterate it with ds:iter() or a DataLoader', 2)
end

function IterableDataset:len()
  error(cname(self) .. ': this IterableDataset has no length (define len() to give one)', 2)
end
function IterableDataset:__len() return self:len() end

function IterableDataset:__tostring() return cname(self) .. ' (iterable)' end

-- packed_stream(ds) -> next(): the next sample as table.pack(values), nil at the end
local function packed_stream(ds)
  local f, s, c = ds:iter()
  if type(f) ~= 'function' then
    error(cname(ds) .. ': iter() should return an iterator function, got ' .. type(f), 3)
  end
  return function()
    if f == nil then return nil end
    local r = table.pack(f(s, c))
    if r[1] == nil then
      f = nil
      return nil
    end
    c = r[1]
    return r
  end
end

-- stream(ds) -> next(): the next sample (one value, or several packed into an array), nil at the end
function M.stream(ds)
  local nxt = packed_stream(ds)
  return function()
    local r = nxt()
    if r == nil or r.n == 1 then return r and r[1] end
    r.n = nil
    return r
  end
end

-- ---- ChainDataset(datasets): the streams of several IterableDatasets, one after another ----
local ChainDataset = IterableDataset:extend('ChainDataset')
M.ChainDataset = ChainDataset

function ChainDataset:init(datasets)
  if type(datasets) ~= 'table' or getmetatable(datasets) ~= nil then
    error('ChainDataset: expected an array of IterableDatasets, got ' .. type(datasets), 3)
  end
  for k = 1, #datasets do
    if not M.is_instance(datasets[k], IterableDataset) then
      error(string.format('ChainDataset: dataset %d is not an IterableDataset (ChainDataset only supports IterableDataset)', k), 3)
    end
  end
  self.datasets = table.move(datasets, 1, #datasets, 1, {})
end

function ChainDataset:iter()
  local k, nxt = 0, nil
  local ds = self.datasets
  return function()
    while true do
      if nxt then
        local r = nxt()
        if r ~= nil then return table.unpack(r, 1, r.n) end
      end
      k = k + 1
      if k > #ds then return nil end
      nxt = packed_stream(ds[k])
    end
  end
end

function ChainDataset:len()
  local total = 0
  for k = 1, #self.datasets do total = total + #self.datasets[k] end
  return total
end

return M
