-- The caching allocator's statistics, and tensor memory given back by the garbage collector.
local torch = require 'torch'
local H = require 'spec.helpers'

describe('torch.memory', function()
  it('counts allocated and reserved bytes per device, with peaks', function()
    local d = 'cpu:1'
    collectgarbage()
    torch.memory.empty_cache(d)
    local base = torch.memory.allocated(d)
    torch.memory.reset_peak(d)
    local x = torch.empty(1000, { device = d }) -- 4000 bytes: a 4096-byte block
    assert.are.equal(base + 4096, torch.memory.allocated(d))
    assert.is_true(torch.memory.reserved(d) >= torch.memory.allocated(d))
    local s = torch.memory.stats(d)
    assert.are.equal(torch.memory.allocated(d), s['allocated_bytes.all.current'])
    x = nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(base, torch.memory.allocated(d))
    assert.are.equal(base + 4096, torch.memory.max_allocated(d))
    -- the freed block stays cached until empty_cache
    assert.is_true(torch.memory.reserved(d) >= 4096)
    local y = torch.empty(1000, { device = d })
    local s2 = torch.memory.stats(d)
    assert.are.equal(s['segment.all.allocated'], s2['segment.all.allocated']) -- reused, not a new block
    y = nil
    collectgarbage()
    collectgarbage()
    torch.memory.empty_cache(d)
    assert.are.equal(torch.memory.allocated(d), torch.memory.reserved(d))
    torch.memory.reset_peak(d)
    assert.are.equal(torch.memory.allocated(d), torch.memory.max_allocated(d))
    assert.is_string(torch.memory.summary(d))
    assert.is_truthy(torch.memory.summary(d):find('cpu:1', 1, true))
    -- its rows are the statistics: the current allocation count and segments
    local st = torch.memory.stats(d)
    local sm = torch.memory.summary(d)
    assert.is_truthy(sm:find('| Allocations%s+|%s+' .. st['allocation.all.current'] .. ' |'), sm)
    assert.is_truthy(sm:find('| Non%-releasable allocs |%s+' .. st['inactive_split.all.current'] .. ' |'), sm)
  end)

  it('stays flat in a loop of temporaries', function()
    collectgarbage()
    local d = 'cpu:0'
    torch.memory.reset_peak(d)
    local x = torch.ones(256, 1024) -- 1 MiB
    for _ = 1, 1000 do
      local y = x * 2 + 1 -- two 1 MiB temporaries per step, 2 GiB in all
    end
    local peak = torch.memory.max_allocated(d)
    assert.is_true(peak < 256 * 1024 * 1024, 'peak allocated ' .. peak)
  end)

  it('spaces full collections by how much of what was allocated they found dead', function()
    local MiB = 1024 * 1024
    local t = torch._gc_full_threshold
    -- everything allocated died: the base, max(live, 32 MiB)
    assert.are.equal(32 * MiB, t(0, 64 * MiB, 64 * MiB))
    assert.are.equal(100 * MiB, t(100 * MiB, 200 * MiB, 200 * MiB))
    -- a quarter of it: the garbage at that rate stays under half the base at 64 MiB
    assert.are.equal(64 * MiB, t(10 * MiB, 16 * MiB, 64 * MiB))
    -- little or nothing found dead: at most 96 MiB above the base
    assert.are.equal(128 * MiB, t(10 * MiB, 1 * MiB, 64 * MiB))
    assert.are.equal(128 * MiB, t(10 * MiB, 0, 64 * MiB))
    assert.are.equal(1096 * MiB, t(1000 * MiB, 0, 64 * MiB))
    H.raises(function() return t(-1, 0, 0) end, '_gc_full_threshold', 'negative')
  end)

  it("counts tensor memory net of what an op gave back: a kernel's work buffer starts no collection", function()
    collectgarbage()
    local F = torch.nn.functional
    -- a dilated convolution runs through a column buffer of ~19 MB, taken and given back inside
    -- the op, for an output of 32 KB: twenty of them, all kept, are no garbage
    local x, w = torch.randn(8, 64, 32, 32), torch.randn(1, 64, 3, 3)
    local keep = { F.conv2d(x, w, nil, { padding = 2, dilation = 2 }) }
    local fulls, steps = torch._gc_counts()
    for i = 2, 20 do keep[i] = F.conv2d(x, w, nil, { padding = 2, dilation = 2 }) end
    local fulls2, steps2 = torch._gc_counts()
    assert.are.same({ fulls, steps }, { fulls2, steps2 })
    -- what the script holds still counts: 40 MiB of temporaries start collections
    local y = torch.ones(256, 1024) -- 1 MiB
    for _ = 1, 40 do local z = y * 2 end
    local fulls3, steps3 = torch._gc_counts()
    assert.is_true(fulls3 + steps3 > fulls2 + steps2, 'no collection after 40 MiB of temporaries')
    assert.are.same({ 8, 1, 32, 32 }, keep[20]:size())
  end)

  it('stays bounded when the temporaries start to die old', function()
    collectgarbage()
    local d = 'cpu:0'
    local MiB = 1024 * 1024
    -- temporaries that die young: minor collections free them
    local x = torch.ones(256, 1024) -- 1 MiB
    for _ = 1, 300 do local y = x * 2 + 1 end
    -- then each temporary lives through 16 steps, and minor collections, before it dies (old)
    local ring = {}
    torch.memory.reset_peak(d)
    local base = torch.memory.allocated(d)
    -- the rule's base: what is live on every CPU device (earlier specs may hold some on cpu:1) with
    -- the ring, at least 32 MiB
    local held = 0
    for i = 0, torch.cpu.device_count() - 1 do held = held + torch.memory.allocated('cpu:' .. i) end
    local floor = math.max(held + 17 * MiB, 32 * MiB)
    for i = 1, 400 do ring[i % 16 + 1] = x * 2 end
    local first = torch.memory.max_allocated(d) - base
    -- the first full collection found most of it dead: later ones come at the base again
    torch.memory.reset_peak(d)
    for i = 1, 400 do ring[i % 16 + 1] = x * 2 end
    local later = torch.memory.max_allocated(d) - base
    assert.is_true(first < floor + 96 * MiB + 24 * MiB, 'peak above the start ' .. first)
    assert.is_true(later < floor + 24 * MiB, 'peak above the start, later ' .. later .. ', base ' .. floor)
  end)

  it('leaks nothing when an op raises', function()
    collectgarbage()
    collectgarbage()
    local before = torch.memory.allocated()
    local a, b = torch.ones(100), torch.ones(7)
    for _ = 1, 100 do
      pcall(function() return a + b end)
      pcall(function() return torch.matmul(a, b) end)
      pcall(function() return a:view(3, 3) end)
    end
    a, b = nil, nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, torch.memory.allocated())
  end)

  it('reports out-of-memory as an error naming the sizes', function()
    -- 2^47 bytes: more than the address space a process has, whatever the kernel's overcommit
    H.raises(function() return torch.empty(1 << 45) end, 'out of memory', 'tried to allocate')
    H.raises(function() return torch.empty(1 << 62) end, 'too large')
    -- empty, but its strides would overflow
    H.raises(function() return torch.empty(4294967295, 0, 4294967295) end, 'too large')
  end)

  -- the stream rules run on the CPU devices in the allocator code every device type shares
  local dev = torch.cpu.device_count() >= 2 and 'cpu:1' or 'cpu:0'
  local function stat(k) return torch.memory.stats(dev)[k] end
  local function gc() collectgarbage(); collectgarbage() end
  local N = 1500 -- 6000 bytes: a 6144-byte block, a size nothing else here uses

  it('reuses a cached block only on the stream it was allocated on', function()
    gc()
    torch.memory.empty_cache(dev)
    local s = torch.Stream(dev)
    local base = torch.memory.allocated(dev)
    local segs = stat('segment.all.allocated')
    local x = torch.empty(N, { device = dev })
    assert.are.equal(segs + 1, stat('segment.all.allocated'))
    x = nil
    gc()
    -- on another stream the cached block is not handed out: a new segment
    local y = torch.stream(s, function() return torch.empty(N, { device = dev }) end)
    assert.are.equal(segs + 2, stat('segment.all.allocated'))
    -- back on the default stream the first block is reused
    local z = torch.empty(N, { device = dev })
    assert.are.equal(segs + 2, stat('segment.all.allocated'))
    assert.are.equal(base + 2 * 6144, stat('allocated_bytes.all.current'))
    y, z = nil, nil
    gc()
    -- and s's block is reused on s, where it is the only one of its size
    local w = torch.stream(s, function() return torch.empty(N, { device = dev }) end)
    assert.are.equal(segs + 2, stat('segment.all.allocated'))
    assert.are.equal(base + 6144, stat('allocated_bytes.all.current'))
    w = nil
    gc()
    torch.memory.empty_cache(dev)
    assert.are.equal(torch.memory.allocated(dev), torch.memory.reserved(dev))
  end)

  it('defers the free of a block used on another stream until its work completes', function()
    gc()
    torch.memory.empty_cache(dev)
    local s = torch.Stream(dev)
    local base = torch.memory.allocated(dev)
    local segs = stat('segment.all.allocated')
    local frees = stat('allocation.all.freed')
    local x = torch.ones(N, { device = dev })
    x:record_stream(s)
    torch._stream_hold(s, true) -- work queued on s is "still running"
    x = nil
    gc()
    -- freed for the statistics, but waiting for s: not reused, not cached, not given back
    assert.are.equal(base, torch.memory.allocated(dev))
    assert.are.equal(frees + 1, stat('allocation.all.freed'))
    assert.are.equal(1, torch._memory_pending(dev))
    local reserved = torch.memory.reserved(dev)
    local y = torch.empty(N, { device = dev })
    assert.are.equal(segs + 2, stat('segment.all.allocated')) -- a new block: the first is pending
    torch.memory.empty_cache(dev)
    assert.are.equal(1, torch._memory_pending(dev)) -- empty_cache cannot free it either
    assert.is_true(torch.memory.reserved(dev) >= reserved)
    torch._stream_hold(s, false) -- s's work completes
    assert.are.equal(0, torch._memory_pending(dev))
    local z = torch.empty(N, { device = dev })
    assert.are.equal(segs + 2, stat('segment.all.allocated')) -- the first block, reused
    -- a block recorded on a stream that is not held is cached at once
    z:record_stream(s)
    z = nil
    gc()
    assert.are.equal(0, torch._memory_pending(dev))
    local v = torch.empty(N, { device = dev })
    assert.are.equal(segs + 2, stat('segment.all.allocated'))
    y, v = nil, nil
    gc()
    torch.memory.empty_cache(dev)
    assert.are.equal(base, torch.memory.allocated(dev))
    assert.are.equal(torch.memory.allocated(dev), torch.memory.reserved(dev))
  end)

  it('names the requested, allocated, reserved and total bytes when out of memory', function()
    gc()
    local keep = torch.ones(1000) -- something allocated on cpu:0
    local alloc, res = torch.memory.allocated('cpu:0'), torch.memory.reserved('cpu:0')
    local s0 = torch.memory.stats('cpu:0')
    local n = 1 << 48 -- floats: 2^50 bytes
    local ok, err = pcall(torch.empty, n)
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find('out of memory on cpu:0', 1, true), err)
    assert.truthy(err:find('tried to allocate 1024.00 TiB (' .. (1 << 50) .. ' bytes)', 1, true), err)
    assert.truthy(err:find('(' .. alloc .. ' bytes) allocated', 1, true), err)
    assert.truthy(err:find('reserved', 1, true), err)
    -- the total is the machine's memory, as /proc/meminfo says
    local f = io.open('/proc/meminfo')
    if f then
      local kb = f:read('a'):match('MemTotal:%s*(%d+) kB')
      f:close()
      assert.truthy(err:find('(' .. (tonumber(kb) * 1024) .. ' bytes) total memory of the device', 1, true), err)
    end
    local s1 = torch.memory.stats('cpu:0')
    assert.are.equal(s0.num_ooms + 1, s1.num_ooms)
    assert.are.equal(s0.num_alloc_retries + 1, s1.num_alloc_retries) -- the cache was freed and retried once
    assert.is_true(s1['reserved_bytes.all.current'] <= res) -- the retry emptied the cache
    assert.are.equal(alloc, torch.memory.allocated('cpu:0'))
    keep = nil
  end)

  it('refuses an allocation over the memory available, naming what is available', function()
    local function meminfo()
      local f = io.open('/proc/meminfo')
      if not f then return nil end
      local info = f:read('a')
      f:close()
      return tonumber(info:match('MemTotal:%s*(%d+) kB')) * 1024, tonumber(info:match('MemAvailable:%s*(%d+) kB')) * 1024
    end
    local total, avail = meminfo()
    if not total then pending('no /proc/meminfo') return end
    -- a request between what is available and the machine's total, which Linux (heuristic
    -- overcommit) grants, the pages untouched, and whose filling would bring the kernel's
    -- out-of-memory killer: the allocator refuses it with an error. Under the split policy the
    -- request is rounded to 2 MB only (the class policy's quarter powers of two could pass the total).
    local want = (avail + (total - avail) // 2) // (2 << 20) * (2 << 20)
    if want - avail < (128 << 20) or total - want < (128 << 20) then
      pending('the machine reports almost all its memory available')
      return
    end
    gc()
    local previous = torch._memory_set_policy('cpu:0', 'split')
    local ok, err = pcall(torch.empty, want // 4)
    torch._memory_set_policy('cpu:0', previous)
    assert.is_false(ok, 'an allocation of ' .. want .. ' bytes over what is available was made')
    err = tostring(err)
    assert.truthy(err:find('out of memory on cpu:0', 1, true), err)
    assert.truthy(err:find('bytes) available', 1, true), err)
    -- and one well within it, above the size from which allocations are checked, is made
    local t = torch.empty(300 << 18) -- 300 MB
    assert.are.equal(300 << 18, t:numel())
    t = nil
    gc()
  end)
end)

-- PyTorch's segment splitting and merging (the split policy, CUDA's), run on a CPU device: every
-- number below is computed by hand from PyTorch's rules (pytorch_semantics.md, section 3)
describe('the splitting allocator', function()
  local dev = torch.cpu.device_count() >= 2 and 'cpu:1' or 'cpu:0'
  local KiB, MiB = 1024, 1024 * 1024
  local function gc() collectgarbage(); collectgarbage() end
  local function stats() return torch.memory.stats(dev) end
  local function bytes(n) return torch.empty(n, { dtype = torch.uint8, device = dev }) end
  local ptr = torch._worker_data_ptr
  local previous, base

  -- the counters as differences from the state at the start of a test
  local function delta()
    local s = stats()
    return {
      allocated = s['allocated_bytes.all.current'] - base['allocated_bytes.all.current'],
      reserved = s['reserved_bytes.all.current'] - base['reserved_bytes.all.current'],
      segments = s['segment.all.current'] - base['segment.all.current'],
      new_segments = s['segment.all.allocated'] - base['segment.all.allocated'],
      allocations = s['allocation.all.current'] - base['allocation.all.current'],
      active = s['active.all.current'] - base['active.all.current'],
      active_bytes = s['active_bytes.all.current'] - base['active_bytes.all.current'],
      split = s['inactive_split.all.current'] - base['inactive_split.all.current'],
      split_bytes = s['inactive_split_bytes.all.current'] - base['inactive_split_bytes.all.current'],
    }
  end
  local function expect(want, msg)
    local got = delta()
    for k, v in pairs(want) do
      assert.are.equal(v, got[k], (msg or '') .. ' ' .. k)
    end
  end

  before_each(function()
    gc()
    previous = torch._memory_set_policy(dev, 'split')
    torch.memory.empty_cache(dev)
    torch.memory.reset_peak(dev)
    base = stats()
  end)
  after_each(function()
    gc()
    torch._memory_set_policy(dev, previous)
    torch.memory.empty_cache(dev)
  end)

  it('carves small requests out of one 2 MiB segment', function()
    local a = bytes(4000) -- rounds up to 4096 (a multiple of 512)
    expect({ allocated = 4096, reserved = 2 * MiB, segments = 1, new_segments = 1, allocations = 1,
             split = 1, split_bytes = 2 * MiB - 4096 }, 'a')
    local b = bytes(1) -- 512 bytes, right after a in the same segment
    expect({ allocated = 4096 + 512, reserved = 2 * MiB, segments = 1, new_segments = 1, allocations = 2,
             split = 1, split_bytes = 2 * MiB - 4096 - 512 }, 'b')
    assert.are.equal(ptr(a) + 4096, ptr(b))
    local c = bytes(0) -- an empty tensor still takes a 512-byte block
    expect({ allocated = 4096 + 1024, segments = 1, allocations = 3 }, 'c')
    c = nil -- merges with the free tail
    gc()
    expect({ allocated = 4096 + 512, split = 1, split_bytes = 2 * MiB - 4096 - 512 }, 'c freed')
    b = nil
    gc()
    expect({ allocated = 4096, split = 1, split_bytes = 2 * MiB - 4096 }, 'b freed')
    a = nil
    gc()
    -- everything merged back: one free block, the whole segment, no longer split
    expect({ allocated = 0, reserved = 2 * MiB, segments = 1, allocations = 0, active = 0, split = 0,
             split_bytes = 0 }, 'freed')
    local s = stats()
    assert.are.equal(base['allocated_bytes.all.current'] + 4096 + 1024, s['allocated_bytes.all.peak'])
    assert.are.equal(base['reserved_bytes.all.current'] + 2 * MiB, s['reserved_bytes.all.peak'])
    assert.are.equal(base['inactive_split_bytes.all.current'] + 2 * MiB - 4096, s['inactive_split_bytes.all.peak'])
    torch.memory.empty_cache(dev)
    expect({ reserved = 0, segments = 0 }, 'empty_cache')
  end)

  it('reuses the smallest free block that fits (best fit), splitting it', function()
    local a, x1 = bytes(4096), bytes(512)
    local b, x2 = bytes(2048), bytes(512)
    local c, x3 = bytes(8192), bytes(512)
    local pa, pb, pc = ptr(a), ptr(b), ptr(c)
    a, b, c = nil, nil, nil
    gc()
    -- free: a 4096, b 2048, c 8192 (kept apart by x1..x3) and the segment's tail
    local used = 4096 + 2048 + 8192 + 3 * 512
    expect({ allocated = 3 * 512, split = 4, split_bytes = 2 * MiB - 3 * 512 }, 'holes')
    local d = bytes(1500) -- 1536: b (2048) is the best fit, and its rest of 512 is split off
    assert.are.equal(pb, ptr(d))
    expect({ allocated = 3 * 512 + 1536, split = 4, split_bytes = 2 * MiB - 3 * 512 - 1536, new_segments = 1 }, 'd')
    local e = bytes(4096) -- a, exactly: no split
    assert.are.equal(pa, ptr(e))
    expect({ split = 3, split_bytes = 2 * MiB - 3 * 512 - 1536 - 4096 }, 'e')
    local f = bytes(5000) -- 5120: only c (8192) and the tail fit; c is smaller
    assert.are.equal(pc, ptr(f))
    local g = bytes(8192) -- nothing freed fits but the tail, after x3
    assert.are.equal(pa + used, ptr(g))
    expect({ new_segments = 1, segments = 1, reserved = 2 * MiB }, 'one segment throughout')
    x1, x2, x3, d, e, f, g = nil, nil, nil, nil, nil, nil, nil
  end)

  it('merges a freed block with its free neighbours, in any order', function()
    local orders = { { 1, 2, 3 }, { 1, 3, 2 }, { 2, 1, 3 }, { 2, 3, 1 }, { 3, 1, 2 }, { 3, 2, 1 } }
    local sizes = { 4096, 1024, 2560 }
    for _, order in ipairs(orders) do
      local t = { bytes(sizes[1]), bytes(sizes[2]), bytes(sizes[3]) }
      local guard = bytes(512) -- keeps the three apart from the segment's free tail
      local first = ptr(t[1])
      assert.are.equal(first + 4096, ptr(t[2]))
      assert.are.equal(first + 4096 + 1024, ptr(t[3]))
      local freed = { false, false, false }
      for step, i in ipairs(order) do
        t[i] = nil
        freed[i] = true
        gc()
        -- the free blocks: maximal runs of freed neighbours, plus the tail after the guard
        local runs, run_bytes = 0, 0
        for k = 1, 3 do
          if freed[k] and (k == 1 or not freed[k - 1]) then runs = runs + 1 end
          if freed[k] then run_bytes = run_bytes + sizes[k] end
        end
        local tail = 2 * MiB - 4096 - 1024 - 2560 - 512
        expect({ split = runs + 1, split_bytes = run_bytes + tail }, table.concat(order, ',') .. ' step ' .. step)
      end
      -- the three merged: one block of their total, served from the cache
      local whole = bytes(4096 + 1024 + 2560)
      assert.are.equal(first, ptr(whole))
      expect({ new_segments = 1, segments = 1, split = 1 }, table.concat(order, ','))
      whole, guard = nil, nil
      gc()
      expect({ split = 0, allocated = 0, reserved = 2 * MiB }, 'all freed')
    end
  end)

  it('sizes segments as PyTorch: 2 MiB small, 20 MiB below 10 MiB, else rounded to 2 MiB', function()
    -- 1 MiB is still small: a 2 MiB segment, split (the rest, 1 MiB, is at least 512 bytes)
    local a = bytes(MiB)
    expect({ allocated = MiB, reserved = 2 * MiB, segments = 1, split = 1, split_bytes = MiB }, '1 MiB')
    -- one byte more: large; a 20 MiB segment, split (the rest is above 1 MiB); the small
    -- segment's free MiB is another pool's
    local b = bytes(MiB + 1)
    local bsz = MiB + 512
    expect({ allocated = MiB + bsz, reserved = 22 * MiB, segments = 2, split = 2,
             split_bytes = MiB + 20 * MiB - bsz }, '1 MiB + 1')
    -- and per pool, as PyTorch's small_pool / large_pool keys
    local s = stats()
    local function pool(key, name) return s[key:format(name)] - base[key:format(name)] end
    assert.are.equal(2 * MiB, pool('reserved_bytes.%s.current', 'small_pool'))
    assert.are.equal(20 * MiB, pool('reserved_bytes.%s.current', 'large_pool'))
    assert.are.equal(MiB, pool('allocated_bytes.%s.current', 'small_pool'))
    assert.are.equal(bsz, pool('allocated_bytes.%s.current', 'large_pool'))
    assert.are.equal(1, pool('segment.%s.allocated', 'small_pool'))
    assert.are.equal(1, pool('segment.%s.allocated', 'large_pool'))
    assert.are.equal(MiB, pool('inactive_split_bytes.%s.current', 'small_pool'))
    assert.are.equal(20 * MiB - bsz, pool('inactive_split_bytes.%s.current', 'large_pool'))
    assert.are.equal(MiB + bsz, pool('allocated_bytes.%s.allocated', 'all'))
    -- 19.5 MiB: 20 MiB rounded to 2 MiB, and its rest of 0.5 MiB is not split: allocated grows by
    -- the whole 20 MiB (the free 19 MiB of b's segment are too few)
    local c = bytes(19 * MiB + 512 * KiB)
    expect({ allocated = MiB + bsz + 20 * MiB, reserved = 42 * MiB, segments = 3, split = 2 }, '19.5 MiB')
    -- 9 MiB fits b's segment's rest (20 MiB - bsz): best fit, no new segment
    local d = bytes(9 * MiB)
    expect({ reserved = 42 * MiB, segments = 3, split = 2, split_bytes = MiB + 20 * MiB - bsz - 9 * MiB }, '9 MiB')
    -- 11 MiB + 1: 11 MiB + 512 fits nowhere; a 12 MiB segment whose rest (512 KiB - 512) is not split
    local e = bytes(11 * MiB + 1)
    expect({ allocated = MiB + bsz + 20 * MiB + 9 * MiB + 12 * MiB, reserved = 54 * MiB, segments = 4 }, '11 MiB + 1')
    -- 10 MiB is at least kMinLargeAlloc: its own 10 MiB segment, as b's segment's rest is
    -- 20 MiB - bsz - 9 MiB = 10 MiB - 512, one block short
    local f = bytes(10 * MiB)
    expect({ reserved = 64 * MiB, segments = 5, split = 2 }, '10 MiB')
    -- and 10 MiB - 512 takes that rest exactly: no new segment, nothing left to split
    local g = bytes(10 * MiB - 512)
    expect({ reserved = 64 * MiB, segments = 5, split = 1, split_bytes = MiB }, '10 MiB - 512')
    a, b, c, d, e, f, g = nil, nil, nil, nil, nil, nil, nil
    gc()
    expect({ allocated = 0, reserved = 64 * MiB, split = 0 }, 'freed')
    torch.memory.empty_cache(dev)
    expect({ reserved = 0, segments = 0 }, 'empty_cache')
  end)

  it('empty_cache gives back only the segments entirely free', function()
    local a, b = bytes(1000), bytes(1000) -- a small segment
    local big = bytes(12 * MiB) -- a 12 MiB large segment
    expect({ reserved = 14 * MiB, segments = 2 }, 'two segments')
    b, big = nil, nil
    gc()
    torch.memory.empty_cache(dev)
    -- a keeps its segment; the large one goes
    expect({ reserved = 2 * MiB, segments = 1, allocated = 1024, split = 1, split_bytes = 2 * MiB - 1024 }, 'a live')
    local s = stats()
    assert.are.equal(base['segment.all.freed'] + 1, s['segment.all.freed'])
    a = nil
    gc()
    torch.memory.empty_cache(dev)
    expect({ reserved = 0, segments = 0, split = 0, allocated = 0 }, 'all freed')
  end)

  it('hands a block freed on one stream only to that stream', function()
    local s = torch.Stream(dev)
    local a = bytes(6000)
    local pa = ptr(a)
    a = nil
    gc()
    -- on s: not a's block nor the rest of a's segment, which are the default stream's
    local b = torch.stream(s, function() return bytes(6000) end)
    expect({ new_segments = 2, segments = 2, reserved = 4 * MiB }, 'on s')
    assert.are_not.equal(pa, ptr(b))
    -- a block of s's segment freed on s goes back to s's segment, not to the default stream
    local b2 = torch.stream(s, function() return bytes(512) end)
    assert.are.equal(ptr(b) + 6144, ptr(b2))
    b2 = nil
    gc()
    local c = bytes(6000) -- default stream: a's block again
    assert.are.equal(pa, ptr(c))
    local d = bytes(512) -- right after it in the default stream's segment
    assert.are.equal(pa + 6144, ptr(d))
    expect({ new_segments = 2, segments = 2 }, 'no third segment')
    b, c, d = nil, nil, nil
    gc()
    torch.memory.empty_cache(dev)
    expect({ reserved = 0, segments = 0 }, 'both segments given back')
  end)

  it('defers a block used on another stream until its work completes', function()
    local s = torch.Stream(dev)
    local x = bytes(6000)
    local px = ptr(x)
    x:record_stream(s)
    torch._stream_hold(s, true) -- work queued on s is "still running"
    x = nil
    gc()
    -- freed for allocated, still active (PyTorch's free_block waits for the events)
    expect({ allocated = 0, allocations = 0, active = 1, active_bytes = 6144, split = 1 }, 'pending')
    assert.are.equal(1, torch._memory_pending(dev))
    local y = bytes(6000) -- from the segment's rest, not x's block
    assert.are.equal(px + 6144, ptr(y))
    -- active counts x and y: its peak is above allocation's
    expect({ allocated = 6144, allocations = 1, active = 2, active_bytes = 2 * 6144 }, 'y')
    assert.are.equal(base['active.all.current'] + 2, stats()['active.all.peak'])
    assert.are.equal(base['allocation.all.current'] + 1, stats()['allocation.all.peak'])
    torch.memory.empty_cache(dev) -- the segment is in use: nothing given back
    expect({ reserved = 2 * MiB, segments = 1 }, 'empty_cache while pending')
    torch._stream_hold(s, false) -- s's work completes
    assert.are.equal(0, torch._memory_pending(dev))
    expect({ active = 1, active_bytes = 6144, split = 2, split_bytes = 2 * MiB - 6144 }, 'released')
    local z = bytes(6000) -- x's block, the best fit
    assert.are.equal(px, ptr(z))
    expect({ new_segments = 1 }, 'one segment')
    y, z = nil, nil
    gc()
    torch.memory.empty_cache(dev)
    expect({ reserved = 0, allocated = 0, active = 0 }, 'all freed')
  end)

  it('on out of memory gives back the free segments, retries once, then names the sizes', function()
    local keep = bytes(1000)
    local big = bytes(30 * MiB)
    big = nil
    gc()
    expect({ reserved = 32 * MiB, segments = 2 }, 'before')
    local ok, err = pcall(bytes, 1 << 50)
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find('out of memory on ' .. dev, 1, true), err)
    assert.truthy(err:find('tried to allocate 1024.00 TiB (' .. (1 << 50) .. ' bytes)', 1, true), err)
    local s = stats()
    assert.truthy(err:find('(' .. s['allocated_bytes.all.current'] .. ' bytes) allocated', 1, true), err)
    -- the free 30 MiB segment went back before the retry; keep's segment stayed
    assert.truthy(err:find('(' .. s['reserved_bytes.all.current'] .. ' bytes) reserved', 1, true), err)
    expect({ reserved = 2 * MiB, segments = 1, allocated = 1024 }, 'after')
    assert.are.equal(base.num_alloc_retries + 1, s.num_alloc_retries)
    assert.are.equal(base.num_ooms + 1, s.num_ooms)
    keep = nil
  end)

  it('switches policy with blocks alive, and rejects a bad policy', function()
    torch._memory_set_policy(dev, 'class')
    local a = bytes(6000) -- a class block: 6144 bytes, a device allocation of its own
    expect({ allocated = 6144, reserved = 6144 }, 'class')
    assert.are.equal('class', torch._memory_set_policy(dev, 'split'))
    local b = bytes(6000) -- split: a 2 MiB segment
    expect({ allocated = 2 * 6144, reserved = 6144 + 2 * MiB }, 'split')
    a = nil -- a class block freed under the split policy goes back to the device
    gc()
    expect({ allocated = 6144, reserved = 2 * MiB }, 'class block freed')
    assert.are.equal('split', torch._memory_set_policy(dev, 'class'))
    b = nil -- and a segment entirely free under the class policy too
    gc()
    expect({ allocated = 0, reserved = 0, segments = 0, split = 0 }, 'segment freed')
    H.raises(function() torch._memory_set_policy(dev, 'buddy') end, "_memory_set_policy: expected 'split' or 'class', got 'buddy'")
    H.raises(function() torch._memory_set_policy('cpu:63', 'split') end, 'memory.set_policy', 'cpu:63')
  end)
end)
