-- Samplers: which dataset indices (1-based) an epoch visits, and in what order. Every sampler has
-- #s and s:iter(), a fresh iterator per epoch. SequentialSampler and RandomSampler also give the
-- whole epoch as one int64 tensor (s:_index_tensor()), which the loader's fast path slices.
local torch = require 'torch'
local D = require 'torch.data.dataset'
local as_int = require('torch.composite').as_int

local M = {}

local Sampler = D.class('Sampler')
M.Sampler = Sampler

function Sampler:__len()
  local len = self.len
  if not len then error((rawget(getmetatable(self), "__name") or "?") .. ': a Sampler needs __len or len()', 2) end
  return len(self)
end
function Sampler:iter() error((rawget(getmetatable(self), "__name") or "?") .. ': a Sampler needs iter()', 2) end

-- an iterator over the values of an array table or a 1-D tensor
local function iter_values(list)
  if torch.is_tensor(list) then list = list:totable() end
  local i, n = 0, #list
  return function()
    if i >= n then return nil end
    i = i + 1
    return list[i]
  end
end
M.iter_values = iter_values

local function dataset_size(name, ds)
  local ok, n = pcall(function() return #ds end)
  if not ok then error(name .. ': the dataset has no length: ' .. tostring(n), 4) end
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 0 then
    error(name .. ': the dataset length must be a non-negative integer, got ' .. tostring(n), 4)
  end
  return n
end
M.dataset_size = dataset_size

-- ---- SequentialSampler(ds): 1, 2, ..., #ds ----
local SequentialSampler = Sampler:extend('SequentialSampler')
M.SequentialSampler = SequentialSampler

function SequentialSampler:init(data_source)
  self.data_source = data_source
  dataset_size('SequentialSampler', data_source)
end
function SequentialSampler:__len() return dataset_size('SequentialSampler', self.data_source) end
function SequentialSampler:iter()
  local i, n = 0, #self
  return function()
    if i >= n then return nil end
    i = i + 1
    return i
  end
end
function SequentialSampler:_index_tensor()
  return torch.arange(1, #self + 1, { dtype = torch.int64 })
end

-- ---- RandomSampler(ds, {replacement = false, num_samples = #ds, seed, generator}) ----
-- Without a seed (or generator) it draws from torch's global generator, so torch.manual_seed makes
-- it repeatable; with one it keeps a generator of its own, and each epoch continues its stream.
local RandomSampler = Sampler:extend('RandomSampler')
M.RandomSampler = RandomSampler

local function check_opts(name, opts, known)
  if opts == nil then return {} end
  if type(opts) ~= 'table' then error(name .. ': expected an options table, got ' .. type(opts), 4) end
  for k in pairs(opts) do
    if not known[k] then error(string.format("%s: unknown option '%s'", name, tostring(k)), 4) end
  end
  return opts
end
M.check_opts = check_opts

function RandomSampler:init(data_source, opts)
  opts = check_opts('RandomSampler', opts,
    { replacement = true, num_samples = true, seed = true, generator = true })
  self.data_source = data_source
  dataset_size('RandomSampler', data_source)
  local replacement = opts.replacement
  if replacement == nil then replacement = false end
  if type(replacement) ~= 'boolean' then
    error('RandomSampler: replacement should be a boolean value, but got replacement=' .. tostring(replacement), 3)
  end
  self.replacement = replacement
  local ns = opts.num_samples
  ns = as_int(ns)
  if ns ~= nil and (math.type(ns) ~= 'integer' or ns <= 0) then
    error('RandomSampler: num_samples should be a positive integer value, but got num_samples=' .. tostring(ns), 3)
  end
  self._num_samples = ns
  self.generator = D.generator_of('RandomSampler', opts, 3)
end

function RandomSampler:__len()
  return self._num_samples or dataset_size('RandomSampler', self.data_source)
end

function RandomSampler:_index_tensor()
  local n = dataset_size('RandomSampler', self.data_source)
  local count = #self
  local g = self.generator
  if self.replacement then
    if n == 0 then error('RandomSampler: cannot draw samples with replacement from an empty dataset', 2) end
    if g then return g:randint(1, n + 1, count) end
    return torch.randint(1, n + 1, { count })
  end
  local function perm() return g and g:randperm(n) or torch.randperm(n) end
  if count == n then return perm() end
  -- as PyTorch: whole permutations, then the head of one more
  local parts = {}
  if n > 0 then
    for _ = 1, count // n do parts[#parts + 1] = perm() end
    if count % n > 0 then parts[#parts + 1] = perm():narrow(1, 1, count % n) end
  end
  if #parts == 0 then return torch.empty({ 0 }, { dtype = torch.int64 }) end
  if #parts == 1 then return parts[1] end
  return torch.cat(parts, 1)
end

function RandomSampler:iter() return iter_values(self:_index_tensor()) end

-- ---- BatchSampler(sampler, batch_size, drop_last): arrays of indices ----
local BatchSampler = Sampler:extend('BatchSampler')
M.BatchSampler = BatchSampler

local function check_batch_size(name, bs, level)
  bs = as_int(bs)
  if math.type(bs) ~= 'integer' or bs <= 0 then
    error(string.format('%s: batch_size should be a positive integer value, but got batch_size=%s', name,
      tostring(bs)), level)
  end
  return bs
end
M.check_batch_size = check_batch_size

-- a sampler given as an array table of indices visits them in order
local ListSampler = Sampler:extend('ListSampler')
function ListSampler:init(list) self.list = list end
function ListSampler:__len() return #self.list end
function ListSampler:iter() return iter_values(self.list) end

-- (batches: an array of arrays of indices, for batch_sampler)
local function as_sampler(name, s, level, batches)
  if type(s) == 'table' and getmetatable(s) == nil then
    for i = 1, #s do
      local ok = batches and type(s[i]) == 'table' or not batches and math.type(as_int(s[i])) == 'integer'
      if not ok then
        error(string.format('%s: %s entry %d is not %s (%s)', name, batches and 'batch_sampler' or 'sampler', i,
          batches and 'an array of indices' or 'an integer index', tostring(s[i])), level)
      end
    end
    return ListSampler(s)
  end
  if (type(s) ~= 'table' and type(s) ~= 'userdata') or type(s.iter) ~= 'function' then
    error(name .. ': a sampler must have iter() and a length (#s), or be an array of indices; got ' .. type(s), level)
  end
  return s
end
M.as_sampler = as_sampler

function BatchSampler:init(sampler, batch_size, drop_last)
  self.sampler = as_sampler('BatchSampler', sampler, 4)
  batch_size = check_batch_size('BatchSampler', batch_size, 3)
  if drop_last == nil then drop_last = false end
  if type(drop_last) ~= 'boolean' then
    error('BatchSampler: drop_last should be a boolean value, but got drop_last=' .. tostring(drop_last), 3)
  end
  self.batch_size, self.drop_last = batch_size, drop_last
end

function BatchSampler:__len()
  local n, bs = #self.sampler, self.batch_size
  if self.drop_last then return n // bs end
  return (n + bs - 1) // bs
end

function BatchSampler:iter()
  local nxt = self.sampler:iter()
  local bs, drop_last = self.batch_size, self.drop_last
  local done = false
  return function()
    if done then return nil end
    local batch = {}
    for k = 1, bs do
      local i = nxt()
      if i == nil then
        done = true
        break
      end
      batch[k] = i
    end
    if #batch == 0 or (drop_last and #batch < bs) then
      done = true
      return nil
    end
    return batch
  end
end

-- ---- DistributedSampler(ds, {num_replicas, rank, shuffle = true, seed = 0, drop_last = false}) ----
-- Rank `rank`'s share of the dataset, as PyTorch's: the indices (randperm with a generator seeded
-- seed + epoch when shuffling, else in order), padded by repeating their head up to a multiple of
-- num_replicas (or cut to one with drop_last), every num_replicas-th from rank's. Ranks are 0-based
-- as torch.distributed's; the indices it yields are 1-based. num_replicas and rank default to the
-- process group's.
local DistributedSampler = Sampler:extend('DistributedSampler')
M.DistributedSampler = DistributedSampler

function DistributedSampler:init(dataset, opts)
  opts = check_opts('DistributedSampler', opts,
    { num_replicas = true, rank = true, shuffle = true, seed = true, drop_last = true })
  local n = dataset_size('DistributedSampler', dataset)
  local R, rank = opts.num_replicas, opts.rank
  if R == nil or rank == nil then
    local dist = torch.distributed
    if not dist.is_initialized() then error('DistributedSampler: ' .. dist._NOT_INIT, 3) end
    R = R or dist.get_world_size()
    rank = rank or dist.get_rank()
  end
  R = as_int(R)
  if math.type(R) ~= 'integer' or R <= 0 then
    error('DistributedSampler: num_replicas must be a positive integer, got ' .. tostring(R), 3)
  end
  rank = as_int(rank)
  if math.type(rank) ~= 'integer' or rank < 0 or rank >= R then
    error(string.format('Invalid rank %s, rank should be in the interval [0, %d]', tostring(rank), R - 1), 3)
  end
  local shuffle = opts.shuffle
  if shuffle == nil then shuffle = true end
  local drop_last = opts.drop_last or false
  local seed = opts.seed or 0
  seed = as_int(seed)
  if math.type(seed) ~= 'integer' then error('DistributedSampler: seed must be an integer, got ' .. tostring(seed), 3) end
  self.dataset, self.num_replicas, self.rank = dataset, R, rank
  self.shuffle, self.seed, self.drop_last, self.epoch = shuffle and true or false, seed, drop_last and true or false, 0
  if self.drop_last and n % R ~= 0 then
    self.num_samples = (n - R + R - 1) // R -- ceil((n - R) / R)
  else
    self.num_samples = (n + R - 1) // R
  end
  self.total_size = self.num_samples * R
end

function DistributedSampler:__len() return self.num_samples end

-- set_epoch(e): the shuffle of epoch e (the same epoch repeats the same order)
function DistributedSampler:set_epoch(epoch)
  epoch = as_int(epoch)
  if math.type(epoch) ~= 'integer' then error('DistributedSampler: set_epoch: epoch must be an integer, got ' .. tostring(epoch), 2) end
  self.epoch = epoch
end

-- this rank's indices for the current epoch, as an array table
function DistributedSampler:indices()
  local n = dataset_size('DistributedSampler', self.dataset)
  local all
  if self.shuffle then
    all = n > 0 and torch.Generator():manual_seed(self.seed + self.epoch):randperm(n):totable() or {}
  else
    all = {}
    for i = 1, n do all[i] = i end
  end
  local total = self.total_size
  if not self.drop_last then
    local have = #all
    if have == 0 and total > 0 then error('DistributedSampler: the dataset is empty', 2) end
    for i = have + 1, total do all[i] = all[(i - 1) % have + 1] end
  end
  local out = {}
  for i = self.rank + 1, total, self.num_replicas do out[#out + 1] = all[i] end
  return out
end

function DistributedSampler:iter() return iter_values(self:indices()) end
function DistributedSampler:_index_tensor() return torch.tensor(self:indices(), { dtype = torch.int64 }) end

-- ---- SubsetRandomSampler(indices, {generator, seed}): the indices in a random order ----
-- Each epoch draws randperm(#indices) from the generator (or torch's global one), as PyTorch's.
local SubsetRandomSampler = Sampler:extend('SubsetRandomSampler')
M.SubsetRandomSampler = SubsetRandomSampler

function SubsetRandomSampler:init(indices, opts)
  opts = check_opts('SubsetRandomSampler', opts, { generator = true, seed = true })
  self.indices = D.index_list('SubsetRandomSampler', indices, nil, 3)
  self.generator = D.generator_of('SubsetRandomSampler', opts, 3)
end

function SubsetRandomSampler:__len() return #self.indices end

function SubsetRandomSampler:iter()
  local n, idx = #self.indices, self.indices
  local perm = n > 0 and D.randperm(self.generator, n):totable() or {}
  for k = 1, n do perm[k] = idx[perm[k]] end
  return iter_values(perm)
end

-- ---- WeightedRandomSampler(weights, num_samples, {replacement = true, generator, seed}) ----
-- num_samples indices in 1..#weights, index i drawn with probability weights[i] / sum(weights):
-- torch.multinomial(weights, num_samples, replacement) from torch's global generator, as PyTorch;
-- with a generator (or seed), the same law (inverse CDF, or Efraimidis-Spirakis keys without
-- replacement) from that generator's uniform draws.
local WeightedRandomSampler = Sampler:extend('WeightedRandomSampler')
M.WeightedRandomSampler = WeightedRandomSampler

function WeightedRandomSampler:init(weights, num_samples, opts)
  opts = check_opts('WeightedRandomSampler', opts, { replacement = true, generator = true, seed = true })
  num_samples = as_int(num_samples)
  if math.type(num_samples) ~= 'integer' or num_samples <= 0 then
    error('WeightedRandomSampler: num_samples should be a positive integer value, but got num_samples=' ..
      tostring(num_samples), 3)
  end
  local replacement = opts.replacement
  if replacement == nil then replacement = true end
  if type(replacement) ~= 'boolean' then
    error('WeightedRandomSampler: replacement should be a boolean value, but got replacement=' .. tostring(replacement), 3)
  end
  if type(weights) == 'table' then
    for k = 1, #weights do
      if type(weights[k]) ~= 'number' then
        error(string.format('WeightedRandomSampler: weight %d is a %s, expected a number', k, type(weights[k])), 3)
      end
    end
    weights = torch.tensor(weights, { dtype = torch.float64 })
  elseif torch.is_tensor(weights) then
    weights = weights:double()
  else
    error('WeightedRandomSampler: weights should be a 1-D tensor or an array of numbers, got ' .. type(weights), 3)
  end
  if weights:dim() ~= 1 or weights:numel() == 0 then
    error('WeightedRandomSampler: weights should be a non-empty 1-D sequence', 3)
  end
  if weights:lt(0):any():item() or weights:ne(weights):any():item() or weights:eq(math.huge):any():item() then
    error('WeightedRandomSampler: weights should be non-negative and finite', 3)
  end
  if weights:sum():item() <= 0 then error('WeightedRandomSampler: the weights sum to 0', 3) end
  if not replacement and num_samples > weights:numel() then
    error(string.format('WeightedRandomSampler: cannot draw %d samples without replacement from %d weights',
      num_samples, weights:numel()), 3)
  end
  self.weights, self.num_samples, self.replacement = weights, num_samples, replacement
  self.generator = D.generator_of('WeightedRandomSampler', opts, 3)
end

function WeightedRandomSampler:__len() return self.num_samples end

-- n uniforms in [0, 1) from generator g (53 random bits each)
local function uniforms(g, n) return g:randint(0, 1 << 53, n):double() / 2 ^ 53 end

function WeightedRandomSampler:_index_tensor()
  local w, n, g = self.weights, self.num_samples, self.generator
  if not g then return torch.multinomial(w, n, self.replacement) end
  local k = w:numel()
  if self.replacement then
    -- the first bin whose cumulative weight exceeds u
    local cdf = (w / w:sum()):cumsum(1)
    local u = uniforms(g, n)
    return (cdf:unsqueeze(1):le(u:unsqueeze(2)):sum(2) + 1):clamp(1, k):long()
  end
  local keys = torch.where(w:gt(0), uniforms(g, k):log() / w, torch.full_like(w, -math.huge))
  local _, idx = keys:topk(n)
  return idx:long()
end

function WeightedRandomSampler:iter() return iter_values(self:_index_tensor()) end

return M
