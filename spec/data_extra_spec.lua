-- Subset, ConcatDataset, random_split, SubsetRandomSampler, WeightedRandomSampler, IterableDataset,
-- ChainDataset and the DataLoader over them (num_workers = 0 and 2), against plain-Lua references.
local torch = require 'torch'
local data = require 'torch.data'

package.path = './?.lua;' .. package.path
local ST = require 'spec.support.stream_dataset'

-- dataset of 1..n: sample i is the integer 10 * i (a 1-D int64 tensor's row)
local function tens(n) return data.TensorDataset(torch.arange(1, n + 1, { dtype = torch.int64 }) * 10) end
local function item(v) return torch.is_tensor(v) and v:item() or v end

-- every value of every batch, flattened, in order
local function flat(loader)
  local out = {}
  for x in loader:iter() do
    for _, v in ipairs(torch.is_tensor(x) and x:reshape({ -1 }):totable() or x) do out[#out + 1] = v end
  end
  return out
end

local function sorted(t)
  local c = table.move(t, 1, #t, 1, {})
  table.sort(c)
  return c
end

local function range(a, b)
  local t = {}
  for i = a, b do t[#t + 1] = i end
  return t
end

local function errs(pattern, fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  assert.truthy(tostring(err):find(pattern, 1, true), tostring(err))
end

describe('Subset', function()
  it('maps index i to indices[i], from a table or an int64 tensor', function()
    local ds = tens(10)
    local idx = { 4, 9, 1, 4 }
    for _, s in ipairs({ data.Subset(ds, idx), data.Subset(ds, torch.tensor(idx, { dtype = torch.int64 })) }) do
      assert.are.equal(4, #s)
      for i = 1, 4 do assert.are.equal(10 * idx[i], item(s:get(i))) end
    end
  end)
  it('errors on out-of-range indices', function()
    errs('Subset: index 2 (11) out of range for a dataset of 10 samples', function() data.Subset(tens(10), { 1, 11 }) end)
    errs('Subset:get: index 3 out of range', function() data.Subset(tens(10), { 1, 2 }):get(3) end)
    errs('Subset: indices should be a 1-D integer tensor', function() data.Subset(tens(3), torch.ones(2)) end)
  end)
  for _, nw in ipairs({ 0, 2 }) do
    it('loads through a DataLoader with num_workers = ' .. nw, function()
      local idx = { 7, 2, 2, 10, 5 }
      local got = flat(data.DataLoader(data.Subset(tens(10), idx), { batch_size = 2, num_workers = nw }))
      local want = {}
      for k, i in ipairs(idx) do want[k] = 10 * i end
      assert.are.same(want, got)
    end)
  end
end)

describe('ConcatDataset', function()
  it('has the cumulative sizes and maps each index to its dataset', function()
    local a, b, c = tens(3), data.TensorDataset(torch.arange(101, 103)), tens(4)
    local cd = data.ConcatDataset({ a, b, c })
    assert.are.same({ 3, 5, 9 }, cd.cumulative_sizes)
    assert.are.equal(9, #cd)
    -- reference: walk the datasets in turn
    local want = {}
    for _, d in ipairs({ a, b, c }) do
      for i = 1, #d do want[#want + 1] = item(d:get(i)) end
    end
    for i = 1, 9 do assert.are.equal(want[i], item(cd:get(i))) end
    for _, nw in ipairs({ 0, 2 }) do
      local got = flat(data.DataLoader(data.ConcatDataset({ a, data.Subset(c, { 4, 1 }) }), { batch_size = 2, num_workers = nw }))
      assert.are.same({ 10, 20, 30, 40, 10 }, got)
    end
  end)
  it('errors on an empty list, an iterable dataset and a bad index', function()
    errs('ConcatDataset: datasets should not be an empty iterable', function() data.ConcatDataset({}) end)
    errs('ConcatDataset: dataset 2 is an IterableDataset', function() data.ConcatDataset({ tens(2), ST.Range(1, 2) }) end)
    errs('ConcatDataset:get: index 6 out of range for a dataset of 5 samples', function()
      data.ConcatDataset({ tens(2), tens(3) }):get(6)
    end)
  end)
end)

describe('random_split', function()
  local function check_partition(splits, n)
    local all = {}
    for _, s in ipairs(splits) do
      for _, i in ipairs(s.indices) do all[#all + 1] = i end
    end
    assert.are.same(range(1, n), sorted(all))
  end
  it('splits by counts into a partition; the permutation is PyTorch randperm for the seed', function()
    local ds = tens(10)
    local s = data.random_split(ds, { 3, 7 }, { generator = torch._data_generator(0) })
    -- torch.randperm(10, generator=torch.Generator().manual_seed(0)) in PyTorch 1.13: {4,1,7,5,3,9,0,8,6,2}
    assert.are.same({ 5, 2, 8 }, s[1].indices)
    assert.are.same({ 6, 4, 10, 1, 9, 7, 3 }, s[2].indices)
    assert.are.equal(50, item(s[1]:get(1)))
    check_partition(s, 10)
  end)
  it('splits by fractions with the remainder round-robin from the first (PyTorch 1.13)', function()
    local cases = { { 10, { 0.25, 0.25, 0.5 }, { 3, 2, 5 } }, { 7, { 1 / 3, 1 / 3, 1 / 3 }, { 3, 2, 2 } },
      { 11, { 0.1, 0.1, 0.1, 0.7 }, { 2, 1, 1, 7 } }, { 5, { 0.5, 0.5 }, { 3, 2 } } }
    for _, c in ipairs(cases) do
      local n, fr = c[1], c[2]
      -- reference: floor, then one each from the first
      local want, given = {}, 0
      for k, f in ipairs(fr) do
        want[k] = math.floor(n * f)
        given = given + want[k]
      end
      for r = 0, n - given - 1 do want[r % #fr + 1] = want[r % #fr + 1] + 1 end
      assert.are.same(c[3], want)
      local s = data.random_split(tens(n), fr, { seed = 3 })
      local got = {}
      for k = 1, #s do got[k] = #s[k] end
      assert.are.same(want, got)
      check_partition(s, n)
    end
  end)
  it('repeats for a seed, differs for another, and uses the global generator without one', function()
    local a = data.random_split(tens(20), { 10, 10 }, { seed = 5 })
    local b = data.random_split(tens(20), { 10, 10 }, { seed = 5 })
    local c = data.random_split(tens(20), { 10, 10 }, { seed = 6 })
    assert.are.same(a[1].indices, b[1].indices)
    assert.are_not.same(a[1].indices, c[1].indices)
    torch.manual_seed(0)
    local g1 = data.random_split(tens(10), { 3, 7 })
    assert.are.same({ 5, 2, 8 }, g1[1].indices)
  end)
  it('errors when the lengths do not sum', function()
    errs('random_split: sum of input lengths (9) does not equal the length of the input dataset (10)', function()
      data.random_split(tens(10), { 4, 5 })
    end)
    errs('random_split: length 1 (-1) should be a non-negative integer', function() data.random_split(tens(2), { -1, 3 }) end)
    errs("random_split: unknown option 'gen'", function() data.random_split(tens(2), { 1, 1 }, { gen = 1 }) end)
  end)
end)

describe('SubsetRandomSampler', function()
  it('yields a permutation of its indices, repeatable by seed', function()
    local idx = { 12, 3, 7, 40, 5, 6 }
    local s = data.SubsetRandomSampler(idx, { seed = 1 })
    assert.are.equal(6, #s)
    local seen = {}
    for _ = 1, 5 do
      local got = {}
      for i in s:iter() do got[#got + 1] = i end
      assert.are.same(sorted(idx), sorted(got))
      seen[table.concat(got, ',')] = true
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.is_true(n > 1) -- epochs differ
    local a, b = {}, {}
    for i in data.SubsetRandomSampler(idx, { seed = 9 }):iter() do a[#a + 1] = i end
    for i in data.SubsetRandomSampler(idx, { generator = torch._data_generator(9) }):iter() do b[#b + 1] = i end
    assert.are.same(a, b)
  end)
  for _, nw in ipairs({ 0, 2 }) do
    it('drives a DataLoader with num_workers = ' .. nw, function()
      local got = flat(data.DataLoader(tens(10), { sampler = data.SubsetRandomSampler({ 2, 4, 6 }, { seed = 2 }),
        batch_size = 2, num_workers = nw }))
      assert.are.same({ 20, 40, 60 }, sorted(got))
    end)
  end
end)

describe('WeightedRandomSampler', function()
  -- chi-square of observed counts against the weights (df = #weights with a positive weight - 1)
  local function chi2(counts, w, n)
    local total, x = 0, 0
    for _, v in ipairs(w) do total = total + v end
    for k, v in ipairs(w) do
      if v > 0 then
        local e = n * v / total
        x = x + (counts[k] - e) ^ 2 / e
      else
        assert.are.equal(0, counts[k])
      end
    end
    return x
  end
  local w = { 1, 0, 3, 6, 2 }
  for _, opts in ipairs({ {}, { seed = 4 } }) do
    it('draws in proportion to the weights' .. (opts.seed and ' from its own generator' or ''), function()
      torch.manual_seed(1)
      local n = 20000
      local s = data.WeightedRandomSampler(w, n, opts)
      assert.are.equal(n, #s)
      local counts = { 0, 0, 0, 0, 0 }
      for i in s:iter() do counts[i] = counts[i] + 1 end
      -- df = 3: P(chi2 > 16.27) = 0.001
      assert.is_true(chi2(counts, w, n) < 16.27)
    end)
  end
  it('draws each index at most once without replacement, never one of zero weight', function()
    for _, opts in ipairs({ { replacement = false }, { replacement = false, seed = 2 } }) do
      local got = {}
      for i in data.WeightedRandomSampler(w, 4, opts):iter() do got[#got + 1] = i end
      assert.are.same({ 1, 3, 4, 5 }, sorted(got))
    end
  end)
  it('drives a DataLoader with num_workers = 2', function()
    local got = flat(data.DataLoader(tens(5), { sampler = data.WeightedRandomSampler({ 0, 1, 0, 0, 1 }, 6, { seed = 1 }),
      batch_size = 4, num_workers = 2 }))
    assert.are.equal(6, #got)
    for _, v in ipairs(got) do assert.is_true(v == 20 or v == 50) end
  end)
  it('errors on bad weights and counts', function()
    errs('WeightedRandomSampler: weights should be non-negative and finite', function() data.WeightedRandomSampler({ 1, -1 }, 2) end)
    errs('WeightedRandomSampler: num_samples should be a positive integer value, but got num_samples=0', function()
      data.WeightedRandomSampler({ 1 }, 0)
    end)
    errs('WeightedRandomSampler: cannot draw 3 samples without replacement from 2 weights', function()
      data.WeightedRandomSampler({ 1, 1 }, 3, { replacement = false })
    end)
    errs('WeightedRandomSampler: the weights sum to 0', function() data.WeightedRandomSampler({ 0, 0 }, 1) end)
  end)
end)

describe('IterableDataset', function()
  it('batches the stream with and without drop_last', function()
    local b = {}
    for x, i in data.DataLoader(ST.Range(1, 7), { batch_size = 3 }):iter() do b[#b + 1] = i:totable() end
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 }, { 7 } }, b)
    b = {}
    for _, i in data.DataLoader(ST.Range(1, 7), { batch_size = 3, drop_last = true }):iter() do b[#b + 1] = i:totable() end
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, b)
  end)
  it('takes a collate_fn', function()
    local b = {}
    local function sum(samples)
      local s = 0
      for _, smp in ipairs(samples) do s = s + smp[2] end
      return s
    end
    for s in data.DataLoader(ST.Range(1, 5), { batch_size = 2, collate_fn = sum }):iter() do b[#b + 1] = s end
    assert.are.same({ 3, 7, 5 }, b)
  end)
  it('has no worker info in the main state', function()
    assert.is_nil(data.get_worker_info())
    assert.are.same({ 0, 0, 0 }, flat(data.DataLoader(ST.Ids(3), { batch_size = 2 })))
  end)
  it('with num_workers = 2 and sharding yields each item exactly once', function()
    for _, bs in ipairs({ 1, 2, 3 }) do
      local got = {}
      for _, i in data.DataLoader(ST.Range(1, 11, { shard = true }), { batch_size = bs, num_workers = 2 }):iter() do
        for _, v in ipairs(i:totable()) do got[#got + 1] = v end
      end
      assert.are.same(range(1, 11), sorted(got))
    end
  end)
  it('with num_workers = 2 and no sharding yields the stream once per worker; ids are 1-based', function()
    local got = flat(data.DataLoader(ST.Ids(3), { batch_size = 2, num_workers = 2 }))
    assert.are.same({ 1, 1, 1, 2, 2, 2 }, sorted(got))
    -- a worker whose stream ends first is skipped; the others go on
    got = flat(data.DataLoader(ST.Ids(2, true), { batch_size = 1, num_workers = 2 }))
    assert.are.same({ 1, 2, 1, 2, 2, 2 }, got)
    local nb = 0
    for _ in data.DataLoader(ST.Range(1, 5), { batch_size = 2, drop_last = true, num_workers = 2 }):iter() do nb = nb + 1 end
    assert.are.equal(4, nb) -- each worker drops its own last partial batch
  end)
  it('rejects sampler, shuffle and batch_sampler, and has no get or length', function()
    errs('DataLoader with IterableDataset: expected unspecified shuffle option', function()
      data.DataLoader(ST.Range(1, 3), { shuffle = true })
    end)
    errs('DataLoader with IterableDataset: expected unspecified sampler option', function()
      data.DataLoader(ST.Range(1, 3), { sampler = { 1, 2 } })
    end)
    errs('DataLoader with IterableDataset: expected unspecified batch_sampler option', function()
      data.DataLoader(ST.Range(1, 3), { batch_sampler = { { 1 } } })
    end)
    errs('Range: an IterableDataset is not indexable', function() ST.Range(1, 3):get(1) end)
    errs('Range: this IterableDataset has no length', function() return #ST.Range(1, 3) end)
    local Bad = data.IterableDataset:extend('Bad')
    errs('Bad: an IterableDataset needs __iter() or iter()', function() flat(data.DataLoader(Bad())) end)
  end)
end)

describe('ChainDataset', function()
  for _, nw in ipairs({ 0, 2 }) do
    it('chains the streams, num_workers = ' .. nw, function()
      local ds = data.ChainDataset({ ST.Range(1, 3, { shard = true }), ST.Range(10, 12, { shard = true }) })
      local got = {}
      for _, i in data.DataLoader(ds, { batch_size = 2, num_workers = nw }):iter() do
        for _, v in ipairs(i:totable()) do got[#got + 1] = v end
      end
      if nw == 0 then assert.are.same({ 1, 2, 3, 10, 11, 12 }, got) else assert.are.same({ 1, 2, 3, 10, 11, 12 }, sorted(got)) end
    end)
  end
  it('errors on a map-style dataset', function()
    errs('ChainDataset: dataset 2 is not an IterableDataset', function() data.ChainDataset({ ST.Range(1, 2), tens(2) }) end)
  end)
end)
