-- torch.data.DataLoader and default_collate.
--   local loader = torch.data.DataLoader(ds, {batch_size = 64, shuffle = true, seed = 1})
--   print(#loader)                                  -- number of batches
--   for x, y in loader:iter() do ... end            -- a batch's fields come as several values
-- A sample is what ds:get(i) returns: one value, or several (packed into an array for collate_fn).
-- A batch whose collated value is an array table is yielded as its elements, so a dataset
-- returning x, y (or {x, y}) gives `for x, y in loader:iter()`; any other batch is one value.
-- num_workers = N > 0 loads batches in N background threads, each with a Lua state of its own
-- (bindings/data_worker.c, lua/torch/data/worker.lua, which says how a worker gets the dataset).
-- The sampler runs here; worker k (1-based) makes batches k, k + N, ..., at most prefetch_factor
-- (2) ahead, and they arrive in sampler order. Tensors cross by reference, never copied.
--   DataLoader(ds, {num_workers = 2})                      ds's class comes from a module
--   DataLoader(ds, {num_workers = 2, dataset_factory = 'mydata.make', dataset_args = {...}})
--   DataLoader(ds, {num_workers = 2, dataset_module = 'mydata', dataset_args = {...}})
--   collate_fn = 'mymodule.collate', worker_init_fn = 'mymodule.init' (names, which a worker requires)
-- Worker k's seed is base_seed + k - 1 (PyTorch's base_seed + worker_id, whose ids start at 0);
-- base_seed is drawn each epoch from the loader's generator, or its seed (a generator of its own), or else from
-- torch's global generator after the sampler has drawn its order. A worker seeds math.random and,
-- when the core gives threads generators of their own, torch's generator with it.
-- torch.data.get_worker_info() is, in a worker, {id, num_workers, seed, dataset}; nil elsewhere.
-- An epoch's workers are joined when it ends, when the loop breaks (iter's 4th value closes it),
-- when an error is raised, when the iterator is collected and at exit.
local torch = require 'torch'
local D = require 'torch.data.dataset'
local S = require 'torch.data.sampler'
local W = require 'torch.data.worker'
local as_int = require('torch.composite').as_int

local M = {}

-- ---- worker info ----
local worker_info = nil
-- torch.data.get_worker_info(): in a worker, {id (1-based), num_workers, seed, dataset}; else nil
function M.get_worker_info() return worker_info end
function M._set_worker_info(info) worker_info = info end

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
--- DataLoader(dataset, {batch_size = 1, shuffle = false, sampler, batch_sampler, drop_last,
-- collate_fn, num_workers = 0, prefetch_factor, seed, generator, ...}): batches of the dataset, by
-- `for x, y in loader:iter() do ... end`; #loader is the number of batches
local DataLoader = D.class('DataLoader')
M.DataLoader = DataLoader

local KNOWN = { batch_size = true, shuffle = true, sampler = true, batch_sampler = true, num_workers = true,
  collate_fn = true, pin_memory = true, drop_last = true, timeout = true, worker_init_fn = true,
  prefetch_factor = true, persistent_workers = true, seed = true, generator = true, dataset_factory = true, dataset_module = true,
  dataset_args = true }

function DataLoader:init(dataset, opts)
  opts = S.check_opts('DataLoader', opts, KNOWN)
  if type(dataset) ~= 'table' and type(dataset) ~= 'userdata' then
    error('DataLoader: expected a dataset, got ' .. type(dataset), 3)
  end
  local iterable = D.is_instance(dataset, D.IterableDataset)
  if not iterable and type(dataset.get) ~= 'function' then
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
  nw = as_int(nw)
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
  local pf = opts.prefetch_factor
  pf = as_int(pf)
  if pf ~= nil and (math.type(pf) ~= 'integer' or pf < 1) then
    error('DataLoader: prefetch_factor option should be a positive integer, got ' .. tostring(pf), 3)
  end
  local wif = opts.worker_init_fn
  if wif ~= nil and type(wif) ~= 'function' and type(wif) ~= 'string' then
    error('DataLoader: worker_init_fn should be a function (or, for workers, a function name as \'mymodule.init\')', 3)
  end
  if type(wif) == 'function' and nw > 0 then
    error("DataLoader: worker_init_fn is a Lua function, which cannot move to a worker's Lua state; with num_workers > 0 give its module-qualified name, as worker_init_fn = 'mymodule.init_worker'", 3)
  end
  if type(wif) == 'string' then W.resolve(wif, 'worker_init_fn') end
  self.worker_init_fn, self.persistent_workers, self.prefetch_factor = wif, persistent, pf or 2

  local cf = opts.collate_fn
  if cf ~= nil and type(cf) ~= 'function' and type(cf) ~= 'string' then
    error('DataLoader: collate_fn should be a function (or a module-qualified function name, as \'mymodule.collate\'), got ' .. type(cf), 3)
  end
  if type(cf) == 'function' and cf ~= default_collate and nw > 0 then
    error("DataLoader: collate_fn is a Lua function, which cannot move to a worker's Lua state; with num_workers > 0 give its module-qualified name, as collate_fn = 'mymodule.collate' (a worker requires the module), or use num_workers = 0", 3)
  end
  if type(cf) == 'string' then
    self._collate_name = cf
    cf = W.resolve(cf, 'collate_fn')
  end
  self.collate_fn = cf or default_collate

  local fac, mod = opts.dataset_factory, opts.dataset_module
  if fac ~= nil and type(fac) ~= 'string' then
    error("DataLoader: dataset_factory should be a module-qualified function name, as 'mymodule.make_dataset'", 3)
  end
  if mod ~= nil and type(mod) ~= 'string' then
    error("DataLoader: dataset_module should be a module name, as 'mymodule'", 3)
  end
  if fac and mod then error('DataLoader: dataset_factory and dataset_module are mutually exclusive', 3) end
  if opts.dataset_args ~= nil and type(opts.dataset_args) ~= 'table' then
    error('DataLoader: dataset_args should be a table of constructor arguments', 3)
  end
  if opts.dataset_args ~= nil and not (fac or mod) then
    error('DataLoader: dataset_args goes with dataset_factory or dataset_module', 3)
  end
  self.dataset_factory, self.dataset_module, self.dataset_args = fac, mod, opts.dataset_args
  opts.seed = as_int(opts.seed)
  if opts.seed ~= nil and math.type(opts.seed) ~= 'integer' then
    error('DataLoader: seed should be an integer, got ' .. tostring(opts.seed), 3)
  end
  self.seed = opts.seed
  if opts.generator ~= nil and opts.seed ~= nil then
    error('DataLoader: give either seed or generator, not both', 3)
  end
  -- a torch.Generator: the shuffling order and the workers' base_seed drawn from it, as PyTorch's
  self.generator = D.generator_of('DataLoader', { generator = opts.generator }, 3)

  self.dataset = dataset
  if iterable then
    -- a stream: no sampler, batches of consecutive samples (each worker batches its own stream)
    for _, o in ipairs({ 'sampler', 'batch_sampler' }) do
      if opts[o] ~= nil then
        error(string.format('DataLoader with IterableDataset: expected unspecified %s option, but got %s=%s', o, o,
          tostring(opts[o])), 3)
      end
    end
    if shuffle then error('DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=true', 3) end
    if persistent then error('DataLoader with IterableDataset: persistent_workers is not supported', 3) end
    local bs = opts.batch_size
    if bs == nil then bs = 1 end
    bs = S.check_batch_size('DataLoader', bs, 3)
    self._iterable, self.batch_size, self.drop_last = true, bs, drop_last
    return
  end
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
    bs = S.check_batch_size('DataLoader', bs, 3)
    local sampler
    if opts.sampler ~= nil then
      if shuffle then error('DataLoader: sampler option is mutually exclusive with shuffle', 3) end
      sampler = S.as_sampler('DataLoader', opts.sampler, 4)
    elseif shuffle then
      sampler = S.RandomSampler(dataset, { seed = opts.seed, generator = self.generator })
    else
      sampler = S.SequentialSampler(dataset)
    end
    self.sampler = sampler
    self.batch_size, self.drop_last = bs, drop_last
    self.batch_sampler = S.BatchSampler(sampler, bs, drop_last)
  end
end

function DataLoader:__len()
  if self._iterable then -- the dataset's length, when it has one, in batches
    local n, bs = #self.dataset, self.batch_size
    return self.drop_last and n // bs or (n + bs - 1) // bs
  end
  return #self.batch_sampler
end

function DataLoader:__tostring()
  if self._iterable then return string.format('DataLoader (IterableDataset, batches of %d samples)', self.batch_size) end
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
    i = as_int(i)
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

-- run(indices) -> the batch packed as table.pack(collate_fn(samples)): what a worker makes
function M._batch_fn(ds, collate_fn)
  local rows = collate_fn == default_collate and type(ds._row_tensors) == 'function' and ds:_row_tensors() or nil
  return function(indices)
    if rows then
      local index = torch.tensor(indices, { dtype = torch.int64 })
      local out = { n = #rows }
      for k = 1, #rows do out[k] = rows[k]:index_select(1, index) end
      return out
    end
    local samples = {}
    for k = 1, #indices do samples[k] = sample(ds, indices[k]) end
    return table.pack(collate_fn(samples))
  end
end

-- next() -> the next batch of an IterableDataset's stream, packed as table.pack(collate_fn(samples)),
-- or nil at the end of the stream (or of its last full batch with drop_last)
function M._stream_batches(ds, collate_fn, bs, drop_last)
  local nxt = D.stream(ds)
  local done = false
  return function()
    if done then return nil end
    local samples = {}
    for k = 1, bs do
      local v = nxt()
      if v == nil then
        done = true
        break
      end
      samples[k] = v
    end
    if #samples == 0 or (drop_last and #samples < bs) then
      done = true
      return nil
    end
    return table.pack(collate_fn(samples))
  end
end

-- what a worker runs for an IterableDataset: each task asks for its next batch; { n = 0, done = true }
-- says that its stream has ended
function M._stream_fn(ds, collate_fn, bs, drop_last)
  local nxt = M._stream_batches(ds, collate_fn, bs, drop_last)
  return function()
    return nxt() or { n = 0, done = true }
  end
end

local DATASET_HINT = "A worker rebuilds the dataset in its own Lua state, without functions: give a dataset whose class a module returns (defined in a file that `require` finds, and required) and whose fields are tensors (shared, not copied), numbers, strings, booleans and tables of them; or name a factory, DataLoader(ds, {num_workers = N, dataset_factory = 'mymodule.make_dataset', dataset_args = {...}}), which each worker calls with dataset_args (torch.data.get_worker_info() tells it which worker it is); or a class, dataset_module = 'mymodule', called with dataset_args; or use num_workers = 0"

-- what every worker gets to rebuild the dataset and the collate function
function DataLoader:_worker_init()
  local init = { collate = self._collate_name, worker_init = self.worker_init_fn }
  if self._iterable then init.stream = { batch_size = self.batch_size, drop_last = self.drop_last } end
  local args = self.dataset_args
  if args then
    args = table.move(args, 1, args.n or #args, 1, { n = args.n or #args })
  end
  if self.dataset_factory then
    init.factory, init.args = self.dataset_factory, args
  elseif self.dataset_module then
    local mt = getmetatable(self.dataset)
    init.module, init.args = self.dataset_module, args
    init.class = type(mt) == 'table' and type(rawget(mt, '__name')) == 'string' and rawget(mt, '__name') or nil
  else
    init.dataset = self.dataset
  end
  return init
end

function DataLoader:_base_seed()
  local hi = 1 << 62
  if self.generator then return self.generator:randint(0, hi, 1):totable()[1] end
  if self.seed ~= nil then
    -- a stream of its own, apart from the shuffling generator seeded with the same seed
    self._seed_gen = self._seed_gen or torch.Generator():manual_seed(self.seed ~ 0x2545F4914F6CDD1D)
    return self._seed_gen:randint(0, hi, 1):totable()[1]
  end
  return torch.randint(0, hi, { 1 }, { dtype = torch.int64 }):totable()[1]
end

function DataLoader:_new_pool(base_seed)
  local nw = self.num_workers
  local ok, pool = pcall(torch._worker_pool_new, self:_worker_init(), {
    num_workers = nw, prefetch_factor = self.prefetch_factor, timeout = self.timeout, base_seed = base_seed,
    path = package.path, cpath = package.cpath, class_path = W.class_path, rebuild = W.rebuild,
  })
  if ok then return pool end
  pool = tostring(pool)
  if pool:find('^DataLoader') then error(pool, 0) end
  error(string.format('DataLoader: cannot send the dataset to its %d worker thread%s: %s. %s', nw, nw > 1 and 's' or '',
    pool, DATASET_HINT), 0)
end

-- step as a generic-for iterator with a 4th value that calls finish when the loop ends; finish is
-- also called when the iterator is collected (the closer lives as long as the iterator)
local function closing_iter(step, finish)
  local closer = setmetatable({}, { __close = finish, __gc = finish })
  return function()
    local _ = closer
    return step()
  end, nil, nil, closer
end

-- the batches of one epoch from the workers, in sampler order
function DataLoader:_iter_workers(pin_memory, n)
  local nxt = self.batch_sampler:iter() -- first, so that the order matches num_workers = 0
  local nw, pf = self.num_workers, self.prefetch_factor
  local pool
  if self.persistent_workers and self._pool and self._pool:alive() and not self._pool_busy then
    pool = self._pool
  else
    pool = self:_new_pool(self:_base_seed())
    if self.persistent_workers and not self._pool_busy then self._pool = pool end
  end
  local persistent = pool == self._pool
  if persistent then self._pool_busy = true end
  local sent, got, exhausted, closed = 0, 0, false, false
  local loader = self

  -- ends the epoch: a persistent pool that delivered everything it was sent is kept
  local function finish(clean)
    if closed then return end
    closed = true
    if persistent then
      loader._pool_busy = false
      if clean and got == sent then return end
      loader._pool = nil
    end
    pool:shutdown()
  end

  local function send_next()
    if exhausted then return end
    local indices = nxt()
    if indices == nil then
      exhausted = true
      return
    end
    check_indices(indices, n)
    sent = sent + 1
    pool:send((sent - 1) % nw + 1, sent, indices)
  end

  local ok, err = pcall(function()
    for _ = 1, nw * pf do
      send_next()
      if exhausted then break end
    end
  end)
  if not ok then
    finish(false)
    error(err, 0)
  end

  local function step()
    if closed then return nil end
    if got >= sent then
      finish(true)
      return nil
    end
    got = got + 1
    local ok2, seq, res = pcall(pool.recv, pool, (got - 1) % nw + 1)
    if ok2 and seq ~= got then
      ok2, seq = false, string.format('DataLoader: internal error: expected batch %d, worker sent batch %s', got,
        tostring(seq))
    end
    if ok2 then ok2, seq = pcall(send_next) end
    if not ok2 then
      finish(false)
      error(seq, 0)
    end
    return deliver(pin_memory, table.unpack(res, 1, res.n))
  end
  return closing_iter(step, function() finish(false) end)
end

-- an IterableDataset's batches from the workers: each worker iterates its own copy of the dataset
-- (as PyTorch's, a dataset that does not shard itself by get_worker_info() is yielded once per
-- worker); batches are taken from the workers in turn, skipping those whose stream has ended
function DataLoader:_iter_stream_workers(pin_memory)
  local nw, pf = self.num_workers, self.prefetch_factor
  local pool = self:_new_pool(self:_base_seed())
  local active, left, cursor, seq, closed = {}, nw, 0, 0, false
  local function finish()
    if closed then return end
    closed = true
    pool:shutdown()
  end
  local ok, err = pcall(function()
    for k = 1, nw do
      active[k] = true
      for _ = 1, pf do
        seq = seq + 1
        pool:send(k, seq, true)
      end
    end
  end)
  if not ok then
    finish()
    error(err, 0)
  end
  local function step()
    while not closed and left > 0 do
      cursor = cursor % nw + 1
      if active[cursor] then
        local ok2, e, res = pcall(pool.recv, pool, cursor)
        if ok2 and not res.done then
          seq = seq + 1
          ok2, e = pcall(pool.send, pool, cursor, seq, true)
        end
        if not ok2 then
          finish()
          error(e, 0)
        end
        if res.done then
          active[cursor], left = false, left - 1
        else
          return deliver(pin_memory, table.unpack(res, 1, res.n))
        end
      end
    end
    finish()
    return nil
  end
  return closing_iter(step, finish)
end

-- loader:iter(): an iterator over this epoch's batches (each call starts a new epoch). With
-- workers it returns a 4th value that closes the epoch (for ... in loader:iter() does this when
-- the loop ends, breaks or raises).
function DataLoader:iter()
  local ds, collate_fn = self.dataset, self.collate_fn
  local pin_memory = self.pin_memory and torch.cuda.is_available()
  if self._iterable then
    if self.num_workers > 0 then return self:_iter_stream_workers(pin_memory) end
    local nxt = M._stream_batches(ds, collate_fn, self.batch_size, self.drop_last)
    return function()
      local b = nxt()
      if b == nil then return nil end
      return deliver(pin_memory, table.unpack(b, 1, b.n))
    end
  end
  if self.num_workers > 0 then return self:_iter_workers(pin_memory, S.dataset_size('DataLoader', ds)) end
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
