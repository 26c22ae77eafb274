-- DataLoader with num_workers > 0: batches made by worker threads (each with its own Lua state)
-- equal those made in this thread, in order; seeds, errors, shutdown (no thread left behind) and
-- tensors crossing by reference.
local torch = require 'torch'
local H = require 'spec.helpers'
local data = require 'torch.data'
local dataloader = require 'torch.data.dataloader'

-- workers inherit package.path: make the spec's support modules findable from the repository root
package.path = './?.lua;' .. package.path
local SQ = require 'spec.support.square_dataset'

local FASHION = '/usr/share/datasets/fashion-mnist'
local get_worker_info = data.get_worker_info or dataloader.get_worker_info

local function threads()
  local f = assert(io.open('/proc/self/status'))
  local n
  for line in f:lines() do
    n = n or tonumber(line:match('^Threads:%s*(%d+)'))
  end
  f:close()
  return n
end

-- the thread count returns to base (OpenMP helpers of a worker may take a moment to go)
local function settles_to(base)
  local t0 = torch.utils.clock()
  while threads() > base and torch.utils.clock() - t0 < 3 do
    local t1 = torch.utils.clock()
    while torch.utils.clock() - t1 < 0.01 do end
  end
  assert.are.equal(base, threads())
end

-- every batch of an epoch as plain Lua values (tensors as tables, with dtype names)
local function plain(v)
  if torch.is_tensor(v) then return { dtype = v.dtype.name, values = v:totable() } end
  if type(v) == 'table' then
    local out = {}
    for k, x in pairs(v) do out[k] = plain(x) end
    return out
  end
  return v
end
local function epoch(loader)
  local out = {}
  for a, b, c, d, e, f in loader:iter() do out[#out + 1] = plain { a, b, c, d, e, f } end
  return out
end

local function xy(n)
  local rows, labels = {}, {}
  for i = 1, n do
    rows[i] = { i, -i, i * 0.5 }
    labels[i] = 100 + i
  end
  return torch.tensor(rows, { dtype = torch.float32 }), torch.tensor(labels, { dtype = torch.int64 }), rows, labels
end

describe('DataLoader workers', function()
  local base
  -- OpenMP's threads of the main thread stay once started: start them before counting threads
  setup(function()
    local big = torch.arange(0, 4 * 250000, { dtype = torch.float32 })
    big = (big * 2):sum()
  end)
  before_each(function()
    collectgarbage()
    base = threads()
  end)
  after_each(function()
    collectgarbage()
    settles_to(base)
  end)

  it('TensorDataset: the same batches, in order, with 0 to 3 workers, against plain Lua', function()
    local x, y, rows, labels = xy(11)
    -- a non-contiguous tensor too: the transposed copy's transpose
    local xt = x:t():contiguous():t()
    assert.is_false(xt:is_contiguous())
    for _, ds in ipairs { data.TensorDataset(x, y), data.TensorDataset(xt, y) } do
      for _, opts in ipairs { { batch_size = 3 }, { batch_size = 4, drop_last = true }, { batch_size = 2, shuffle = true, seed = 7 } } do
        local ref
        for nw = 0, 3 do
          local o = {}
          for k, v in pairs(opts) do o[k] = v end
          o.num_workers = nw
          local got = epoch(data.DataLoader(ds, o))
          if nw == 0 then
            ref = got
            -- the reference itself, against the plain rows
            local n = 0
            for _, b in ipairs(got) do
              for r = 1, #b[2].values do
                local lab = b[2].values[r]
                local i = lab - 100
                assert.are.same(rows[i], b[1].values[r])
                assert.are.equal(labels[i], lab)
                n = n + 1
              end
              assert.are.equal('float32', b[1].dtype)
              assert.are.equal('int64', b[2].dtype)
            end
            assert.are.equal(opts.drop_last and 8 or 11, n)
          else
            assert.are.same(ref, got)
          end
        end
      end
    end
  end)

  it('FashionMNIST (a subset through a sampler): the same images and labels with 0 to 3 workers', function()
    local ds = data.datasets.FashionMNIST { root = FASHION, train = false }
    local idx = {}
    for k = 1, 37 do idx[k] = (k * 263) % ds._n + 1 end
    local ref
    for nw = 0, 3 do
      local l = data.DataLoader(ds, { batch_size = 8, sampler = idx, num_workers = nw })
      local got, at = {}, 0
      for img, lab in l:iter() do
        assert.are.equal('uint8', img.dtype.name)
        for r = 1, img:size(1) do
          at = at + 1
          assert.is_true(img[r]:equal(ds.data[idx[at]]))
          assert.are.equal(ds.targets[idx[at]], lab[r])
        end
        got[#got + 1] = plain { img, lab }
      end
      assert.are.equal(37, at)
      if nw == 0 then ref = got else assert.are.same(ref, got) end
    end
  end)

  it('a user Dataset from a module: the same batches with 0 to 3 workers; worker k makes batches k, k + N, ...', function()
    local ds = SQ.SquareDataset(13, { scale = 0.5 })
    local ref
    for nw = 0, 3 do
      local got = epoch(data.DataLoader(ds, { batch_size = 3, num_workers = nw }))
      assert.are.equal(5, #got)
      for b, batch in ipairs(got) do
        local x, i, worker, names = batch[1], batch[2], batch[3], batch[4]
        for r = 1, #i.values do
          local k = (b - 1) * 3 + r
          assert.are.equal(k, i.values[r])
          assert.are.same({ k * 0.5, k * k * 0.5 }, x.values[r])
          assert.are.equal('item' .. k, names[r])
          assert.are.equal(nw == 0 and 0 or (b - 1) % nw + 1, worker.values[r])
        end
        batch[3] = nil
      end
      if nw == 0 then ref = got else assert.are.same(ref, got) end
    end
  end)

  it('builds the dataset in each worker from dataset_factory or dataset_module with dataset_args', function()
    local ds = SQ.SquareDataset(7, { scale = 2 })
    local ref = epoch(data.DataLoader(ds, { batch_size = 2 }))
    for _, o in ipairs {
      { dataset_factory = 'spec.support.square_dataset.make', dataset_args = { 7, 2 } },
      { dataset_module = 'spec.support.square_dataset', dataset_args = { 7, { scale = 2 } } },
    } do
      o.batch_size, o.num_workers = 2, 2
      local got = epoch(data.DataLoader(ds, o))
      for _, b in ipairs(got) do b[3] = nil end
      for _, b in ipairs(ref) do b[3] = nil end
      assert.are.same(ref, got)
    end
  end)

  it('sends objects nested in a dataset (a dataset holding a dataset), dtypes and devices', function()
    local x, y = xy(7)
    local ds = SQ.Wrap(data.TensorDataset(x, y), torch.float64)
    local ref = epoch(data.DataLoader(ds, { batch_size = 3 }))
    assert.are.equal('float64', ref[1][1].dtype)
    assert.are.same({ 'cpu', 'cpu', 'cpu' }, ref[1][3])
    assert.are.same(ref, epoch(data.DataLoader(ds, { batch_size = 3, num_workers = 2 })))
  end)

  it('shuffles as with num_workers = 0 for the same seed (seed option or torch.manual_seed)', function()
    local ds = SQ.SquareDataset(20)
    local function order(o)
      local out = {}
      for _, b in ipairs(epoch(data.DataLoader(ds, o))) do out[#out + 1] = b[2].values end
      return out
    end
    local a = order { batch_size = 3, shuffle = true, seed = 11 }
    local b = order { batch_size = 3, shuffle = true, seed = 11, num_workers = 3 }
    assert.are.same(a, b)
    local seen = {}
    for _, batch in ipairs(a) do for _, i in ipairs(batch) do seen[#seen + 1] = i end end
    table.sort(seen)
    for i = 1, 20 do assert.are.equal(i, seen[i]) end
    torch.manual_seed(5)
    local c = order { batch_size = 4, shuffle = true }
    torch.manual_seed(5)
    local d = order { batch_size = 4, shuffle = true, num_workers = 2 }
    assert.are.same(c, d)
  end)

  it('seeds each worker with base_seed + id - 1, reproducibly for a seed, and runs worker_init_fn', function()
    local ds = SQ.Info(12)
    local function run(seed)
      local l = data.DataLoader(ds, { batch_size = 2, num_workers = 3, seed = seed,
        worker_init_fn = 'spec.support.square_dataset.init_worker' })
      local per = {}
      local out = {}
      for i, id, nw, seed_, inited, r in l:iter() do
        for k = 1, i:size(1) do
          local w = id[k]
          assert.are.equal(3, nw[k])
          assert.are.equal(w, inited[k]) -- worker_init_fn ran in that worker, with its id
          per[w] = per[w] or seed_[k]
          assert.are.equal(per[w], seed_[k])
          out[#out + 1] = { i[k], w, seed_[k], r[k] }
        end
      end
      assert.are.equal(per[1] + 1, per[2])
      assert.are.equal(per[1] + 2, per[3])
      return out
    end
    local a, b, c = run(3), run(3), run(4)
    assert.are.same(a, b) -- math.random in the workers too
    assert.are_not.same(a[1][3], c[1][3])
    assert.is_nil(get_worker_info())
  end)

  it('random transforms with torch.rand in workers are reproducible for a seed', function()
    assert.is_true(torch._worker_pool_thread_rng())
    local ds = SQ.SquareDataset(10, { noise = 'torch' })
    local main_state = torch.get_rng_state()
    local function run() return epoch(data.DataLoader(ds, { batch_size = 2, num_workers = 2, seed = 9 })) end
    local a, b = run(), run()
    assert.are.same(a, b)
    -- the workers' seeding leaves the main thread's generator alone
    assert.is_true(torch.get_rng_state():equal(main_state))
  end)

  it("raises a worker's error in the main thread with its message and traceback", function()
    local ds = SQ.SquareDataset(10, { fail_at = 5 })
    local l = data.DataLoader(ds, { batch_size = 3, num_workers = 2 })
    local seen = 0
    local err = H.raises(function()
      for _ in l:iter() do seen = seen + 1 end
    end, 'DataLoader worker 2: ', 'square: cannot load sample 5', 'stack traceback', 'square_dataset.lua')
    assert.are.equal(1, seen)
    assert.is_truthy(err:find('batch 2', 1, true))
    settles_to(base)
    -- the loader still works for a new epoch
    ds.fail_at = nil
    assert.are.equal(4, #epoch(l))
  end)

  it('an early break joins the workers, and a new epoch starts from the first batch', function()
    local ds = SQ.SquareDataset(40)
    local l = data.DataLoader(ds, { batch_size = 2, num_workers = 3, prefetch_factor = 3 })
    for _ = 1, 2 do
      local n = 0
      for _, i in l:iter() do
        n = n + 1
        assert.are.equal(2 * n - 1, i[1])
        if n == 3 then break end
      end
      settles_to(base)
    end
    assert.are.equal(20, #epoch(l))
  end)

  it('many epochs leave no thread behind, nor does an abandoned iterator once collected', function()
    local x, y = xy(9)
    local l = data.DataLoader(data.TensorDataset(x, y), { batch_size = 2, num_workers = 2 })
    for _ = 1, 15 do
      assert.are.equal(5, #epoch(l))
      settles_to(base)
    end
    do
      local it = l:iter()
      assert.is_truthy(it())
      assert.is_true(threads() >= base + 2)
    end
    collectgarbage()
    collectgarbage()
    settles_to(base)
  end)

  it('persistent_workers keeps the threads across epochs', function()
    local ds = SQ.SquareDataset(9)
    local l = data.DataLoader(ds, { batch_size = 2, num_workers = 2, persistent_workers = true })
    local ref = epoch(data.DataLoader(ds, { batch_size = 2 }))
    for _, b in ipairs(ref) do b[3] = nil end
    for _ = 1, 3 do
      local got = epoch(l)
      for _, b in ipairs(got) do b[3] = nil end
      assert.are.same(ref, got)
      assert.are.equal(base + 2, threads())
    end
    l = nil
    collectgarbage()
    collectgarbage()
  end)

  it('shares tensors with the workers: views come back on the same memory, nothing is copied', function()
    local t = torch.arange(0, 4 * 250000, { dtype = torch.float32 }):reshape(4, 250000) -- 4 MB
    local ds = SQ.Rows(t)
    local before = torch.memory.stats('cpu')['allocated_bytes.all.current']
    local l = data.DataLoader(ds, { batch_size = 1, num_workers = 3, collate_fn = 'spec.support.square_dataset.first' })
    local n = 0
    for row in l:iter() do
      n = n + 1
      assert.are.equal(torch._worker_data_ptr(t[n]), torch._worker_data_ptr(row))
      assert.are.equal((n - 1) * 250000, row[1])
      -- three workers and two batches in flight each: no copy of the 4 MB tensor anywhere
      assert.is_true(torch.memory.stats('cpu')['allocated_bytes.all.current'] - before < 1000000)
    end
    assert.are.equal(4, n)
  end)

  it('runs a per-sample Lua transform in the workers, with the same results', function()
    local ds = SQ.SquareDataset(24, { work = 20000, noise = 'math' })
    math.randomseed(1) -- num_workers = 0 draws from this state's math.random
    local a = epoch(data.DataLoader(ds, { batch_size = 4, num_workers = 3, seed = 1 }))
    local b = epoch(data.DataLoader(ds, { batch_size = 4, num_workers = 3, seed = 1 }))
    assert.are.same(a, b)
    for bi, batch in ipairs(a) do
      for r = 1, 4 do
        local k = (bi - 1) * 4 + r
        local v = batch[1].values[r]
        assert.is_true(v[1] >= k and v[1] < k + 1 and v[2] >= k * k and v[2] < k * k + 1)
      end
    end
  end)

  it('takes collate_fn by name; refuses Lua functions with workers, saying what to do', function()
    local ds = SQ.SquareDataset(6)
    for nw = 0, 2 do
      local l = data.DataLoader(ds, { batch_size = 4, num_workers = nw, collate_fn = 'spec.support.square_dataset.sum_collate' })
      local got = {}
      for s, idx in l:iter() do got[#got + 1] = { s, idx } end
      assert.are.same({ { 1 + 1 + 2 + 4 + 3 + 9 + 4 + 16, { 1, 2, 3, 4 } }, { 5 + 25 + 6 + 36, { 5, 6 } } }, got)
    end
    H.raises(function() data.DataLoader(ds, { num_workers = 2, collate_fn = function(b) return b end }) end,
      "collate_fn is a Lua function", "collate_fn = 'mymodule.collate'")
    H.raises(function() data.DataLoader(ds, { num_workers = 1, worker_init_fn = function() end }) end,
      "worker_init_fn = 'mymodule.init_worker'")
    H.raises(function() data.DataLoader(ds, { collate_fn = 'spec.support.square_dataset.nope' }) end,
      "collate_fn 'spec.support.square_dataset.nope': module 'spec.support.square_dataset' has no function 'nope'")
    H.raises(function() data.DataLoader(ds, { collate_fn = 'nomodule' }) end, 'module-qualified function name')
  end)

  it('says how to fix a dataset that cannot be rebuilt in a worker', function()
    local Inline = data.Dataset:extend('Inline') -- in no module
    function Inline:__len() return 3 end
    function Inline:get(i) return i end
    local err = H.raises(function() epoch(data.DataLoader(Inline(), { num_workers = 2 })) end,
      "dataset is an object of class 'Inline', which no loaded module returns", "dataset_factory = 'mymodule.make_dataset'",
      'num_workers = 0')
    assert.is_nil(err:find('stack traceback', 1, true))
    local ds = SQ.SquareDataset(3)
    ds.transform = function(v) return v end
    H.raises(function() epoch(data.DataLoader(ds, { num_workers = 1 })) end,
      'dataset.transform is a function', 'dataset_factory')
    H.raises(function()
      epoch(data.DataLoader(ds, { num_workers = 1, dataset_factory = 'spec.support.nothing_here.make' }))
    end, 'DataLoader worker 1: ', "cannot require module 'spec.support.nothing_here'")
    H.raises(function() data.DataLoader(ds, { dataset_args = { 1 } }) end, 'dataset_args goes with dataset_factory')
    H.raises(function() data.DataLoader(ds, { dataset_factory = 'a.b', dataset_module = 'a' }) end, 'mutually exclusive')
    H.raises(function() data.DataLoader(ds, { num_workers = 1, prefetch_factor = 0 }) end,
      'prefetch_factor option should be a positive integer')
    local cyc = SQ.SquareDataset(3)
    cyc.self = cyc
    H.raises(function() epoch(data.DataLoader(cyc, { num_workers = 1 })) end, 'nested deeper than 64 levels')
    local ud = SQ.SquareDataset(3)
    ud.file = io.stdout
    H.raises(function() epoch(data.DataLoader(ud, { num_workers = 1 })) end, 'dataset.file is a FILE*')
  end)

  it('times out a worker slower than timeout, and stops it without waiting for it', function()
    local l = data.DataLoader(SQ.Slow(30), { batch_size = 1, num_workers = 2, timeout = 0.2 })
    local t0 = torch.utils.clock()
    H.raises(function() epoch(l) end, 'DataLoader timed out after 0.2 seconds')
    assert.is_true(torch.utils.clock() - t0 < 10)
  end)
end)
