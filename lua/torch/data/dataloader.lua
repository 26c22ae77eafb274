-- torch.data.DataLoader and default_collate.
--   local loader = torch.data.DataLoader(ds, {batch_size = 64, shuffle = true, seed = 1})
--   print(#loader)                                  -- number of batches
--   for x, y in loader:iter() do ... end            -- a batch's fields come as several values
-- A sample is what ds:get(i) returns: one value, or several (packed into an array for collate_fn).
-- A batch whose collated value is an array table is yielded as its elements, so a dataset
-- returning x, y (or {x, y}) gives `for x, y in loader:iter()`; any other batch is one value.
-- num_workers > 0 is accepted, but batches are still loaded in the calling thread for now.
local torch = require 'torch'
local D = require 'torch.data.dataset'
local S = require 'torch.data.sampler'

local M = {}

-- ---- default_collate ----
local function shape_str(t)
  local s = {}
  for d = 1, t:dim() do s[d] = tostring(t:size(d)) end
  return '[' .. table.concat(s, ', ') .. ']'
end

local function kind(v)
  if torch.is_tensor(v) then return 'tensor' end
  return type(v)
end

local collate

local function collate_tensors(batch)
  local first = batch[1]
  local nd = first:dim()
  local sizes = {}
  for d = 1, nd do sizes[d] = first:size(d) end
  for k = 2, #batch do
    local t = batch[k]
    local same = t:dim() == nd
    if same then
      for d = 1, nd do
        if t:size(d) ~= sizes[d] then same = false; break end
      end
    end
    if not same then
      error(string.format('default_collate: stack expects each tensor to be equal size, but got %s at entry 1 and %s at entry %d',
        shape_str(first), shape_str(t), k), 0)
    end
  end
  return torch.stack(batch, 1)
end

local function column(batch, key)
  local col = {}
  for k = 1, #batch do
    local v = batch[k][key]
    if v == nil then
      error(string.format("default_collate: entry %d has no field '%s' (entry 1 has it)", k, tostring(key)), 0)
    end
    col[k] = v
  end
  return col
end

local function is_array(t)
  local n = #t
  if n == 0 then return false end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

function collate(batch)
  local first = batch[1]
  local k1 = kind(first)
  for k = 2, #batch do
    local kk = kind(batch[k])
    if kk ~= k1 then
      error(string.format('default_collate: entry %d is a %s but entry 1 is a %s', k, kk, k1), 0)
    end
  end
  if k1 == 'tensor' then return collate_tensors(batch) end
  if k1 == 'number' then
    local all_int = true
    for k = 1, #batch do
      if math.type(batch[k]) ~= 'integer' then all_int = false; break end
    end
    return torch.tensor(batch, { dtype = all_int and torch.int64 or torch.float64 })
  end
  if k1 == 'boolean' then return torch.tensor(batch, { dtype = torch.bool }) end
  if k1 == 'string' then return table.move(batch, 1, #batch, 1, {}) end
  if k1 == 'table' then
    for k = 1, #batch do
      local mt = getmetatable(batch[k])
      if mt ~= nil then
        error(string.format('default_collate: entry %d is an object (%s), not a plain table; give the DataLoader a collate_fn for it',
          k, tostring(mt.__name or 'table with a metatable')), 0)
      end
    end
    local out = {}
    if is_array(first) then
      local n = #first
      for k = 2, #batch do
        if #batch[k] ~= n or not is_array(batch[k]) then
          error(string.format('default_collate: each element in list of batch should be of equal size (entry 1 has %d fields, entry %d has %d)',
            n, k, #batch[k]), 0)
        end
      end
      for f = 1, n do out[f] = collate(column(batch, f)) end
    else
      for key in pairs(first) do out[key] = collate(column(batch, key)) end
    end
    return out
  end
  error(string.format('default_collate: cannot collate a %s (batches hold tensors, numbers, booleans, strings and tables of them)',
    k1), 0)
end

-- default_collate(samples): tensors are stacked along a new first dimension; integers become an
-- int64 tensor and other numbers float64, booleans a bool tensor; strings stay a list; tables are
-- collated field by field (arrays by position, others by key).
function M.default_collate(batch)
  if type(batch) ~= 'table' or #batch == 0 then
    error('default_collate: expected a non-empty array of samples', 2)
  end
  return collate(batch)
end
local default_collate = M.default_collate

-- ---- DataLoader ----
local DataLoader = D.class('DataLoader')
M.DataLoader = DataLoader

local KNOWN = { batch_size = true, shuffle = true, sampler = true, batch_sampler = true, num_workers = true,
  collate_fn = true, pin_memory = true, drop_last = true, timeout = true, worker_init_fn = true,
  prefetch_factor = true, persistent_workers = true, seed = true }

function DataLoader:init(dataset, opts)
  opts = S.check_opts('DataLoader', opts, KNOWN)
  if type(dataset) ~= 'table' and type(dataset) ~= 'userdata' then
    error('DataLoader: expected a dataset, got ' .. type(dataset), 3)
  end
  if type(dataset.get) ~= 'function' then
    error('DataLoader: the dataset has no get(i) method', 3)
  end
  local function bool_opt(name, default)
    local v = opts[name]
    if v == nil then return default end
    if type(v) ~= 'boolean' then
      error(string.format('DataLoader: %s should be a boolean value, but got %s=%s', name, name, tostring(v)), 4)
    end
    return v
  end
  local shuffle = bool_opt('shuffle', false)
  local drop_last = bool_opt('drop_last', false)
  self.pin_memory = bool_opt('pin_memory', false)
  local persistent = bool_opt('persistent_workers', false)

  local nw = opts.num_workers or 0
  if math.type(nw) ~= 'integer' or nw < 0 then
    error('DataLoader: num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.', 3)
  end
  self.num_workers = nw
  local timeout = opts.timeout or 0
  if type(timeout) ~= 'number' or timeout < 0 then
    error('DataLoader: timeout option should be non-negative', 3)
  end
  self.timeout = timeout
  if persistent and nw == 0 then error('DataLoader: persistent_workers option needs num_workers > 0', 3) end
  if opts.prefetch_factor ~= nil and nw == 0 then
    error('DataLoader: prefetch_factor option could only be specified in multiprocessing; let num_workers > 0 to enable multiprocessing, otherwise leave prefetch_factor unset', 3)
  end
  if opts.worker_init_fn ~= nil and type(opts.worker_init_fn) ~= 'function' then
    error('DataLoader: worker_init_fn should be a function', 3)
  end
  self.worker_init_fn, self.persistent_workers, self.prefetch_factor = opts.worker_init_fn, persistent,
    opts.prefetch_factor

  if opts.collate_fn ~= nil and type(opts.collate_fn) ~= 'function' then
    error('DataLoader: collate_fn should be a function, got ' .. type(opts.collate_fn), 3)
  end
  self.collate_fn = opts.collate_fn or default_collate
  if opts.seed ~= nil and math.type(opts.seed) ~= 'integer' then
    error('DataLoader: seed should be an integer, got ' .. tostring(opts.seed), 3)
  end
  self.seed = opts.seed

  self.dataset = dataset
  local n = S.dataset_size('DataLoader', dataset)
  self._n = n

  if opts.batch_sampler ~= nil then
    if (opts.batch_size ~= nil and opts.batch_size ~= 1) or shuffle or opts.sampler ~= nil or drop_last then
      error('DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last', 3)
    end
    self.batch_sampler = S.as_sampler('DataLoader', opts.batch_sampler, 4, true)
    self.batch_size, self.drop_last = nil, false
  else
    local bs = opts.batch_size
    if bs == nil then bs = 1 end
    S.check_batch_size('DataLoader', bs, 3)
    local sampler
    if opts.sampler ~= nil then
      if shuffle then error('DataLoader: sampler option is mutually exclusive with shuffle', 3) end
      sampler = S.as_sampler('DataLoader', opts.sampler, 4)
    elseif shuffle then
      sampler = S.RandomSampler(dataset, { seed = opts.seed })
    else
      sampler = S.SequentialSampler(dataset)
    end
    self.sampler = sampler
    self.batch_size, self.drop_last = bs, drop_last
    self.batch_sampler = S.BatchSampler(sampler, bs, drop_last)
  end
end

function DataLoader:__len() return #self.batch_sampler end

function DataLoader:__tostring()
  return string.format('DataLoader (%d batches of %s samples)', #self, tostring(self.batch_size))
end

-- ---- fetching a batch ----
local function pin(v)
  if torch.is_tensor(v) then return v:pin_memory() end
  if type(v) == 'table' then
    local out = {}
    for k, x in pairs(v) do out[k] = pin(x) end
    return out
  end
  return v
end

-- what collate_fn returned, as the iterator's values
local function deliver(pin_memory, ...)
  local n = select('#', ...)
  if n == 1 then
    local b = ...
    if pin_memory then b = pin(b) end
    if type(b) == 'table' and getmetatable(b) == nil and is_array(b) then return table.unpack(b, 1, #b) end
    return b
  end
  if not pin_memory then return ... end
  local out = table.pack(...)
  for k = 1, n do out[k] = pin(out[k]) end
  return table.unpack(out, 1, n)
end

-- one sample: a single value, or several packed into an array
local function sample(ds, i)
  local s = table.pack(ds:get(i))
  if s.n == 0 then error(string.format('DataLoader: dataset:get(%d) returned nothing', i), 0) end
  for k = 1, s.n do
    if s[k] == nil then
      error(string.format('DataLoader: dataset:get(%d) returned nil as value %d', i, k), 0)
    end
  end
  if s.n == 1 then return s[1] end
  s.n = nil
  return s
end

local function check_indices(indices, n)
  if type(indices) ~= 'table' then
    error('DataLoader: the batch sampler yielded a ' .. type(indices) .. ', expected an array of indices', 0)
  end
  for k = 1, #indices do
    local i = indices[k]
    if math.type(i) ~= 'integer' or i < 1 or i > n then
      error(string.format('DataLoader: sampler index %s out of range for a dataset of %d samples', tostring(i), n), 0)
    end
  end
end

local function rows_batch(rows, index, pin_memory)
  local nr = #rows
  if nr == 1 then return deliver(pin_memory, rows[1]:index_select(1, index)) end
  if nr == 2 then return deliver(pin_memory, rows[1]:index_select(1, index), rows[2]:index_select(1, index)) end
  local out = {}
  for k = 1, nr do out[k] = rows[k]:index_select(1, index) end
  return deliver(pin_memory, table.unpack(out, 1, nr))
end

-- loader:iter(): an iterator over this epoch's batches (each call starts a new epoch)
function DataLoader:iter()
  local ds, collate_fn = self.dataset, self.collate_fn
  local pin_memory = self.pin_memory and torch.cuda.is_available()
  local n = S.dataset_size('DataLoader', ds)
  -- the fast path: rows of tensors, default collate: one index_select per tensor and batch
  local rows = collate_fn == default_collate and type(ds._row_tensors) == 'function' and ds:_row_tensors() or nil
  local bsamp = self.batch_sampler
  if rows and bsamp.iter == S.BatchSampler.iter and type(bsamp.sampler._index_tensor) == 'function' then
    local index = bsamp.sampler:_index_tensor()
    local total, bs = index:size(1), bsamp.batch_size
    local nb = bsamp.drop_last and total // bs or (total + bs - 1) // bs
    local b = 0
    return function()
      if b >= nb then return nil end
      local start = b * bs + 1
      b = b + 1
      return rows_batch(rows, index:narrow(1, start, math.min(bs, total - start + 1)), pin_memory)
    end
  end
  local nxt = bsamp:iter()
  return function()
    local indices = nxt()
    if indices == nil then return nil end
    check_indices(indices, n)
    if rows then return rows_batch(rows, torch.tensor(indices, { dtype = torch.int64 }), pin_memory) end
    local samples = {}
    for k = 1, #indices do samples[k] = sample(ds, indices[k]) end
    return deliver(pin_memory, collate_fn(samples))
  end
end

return M
