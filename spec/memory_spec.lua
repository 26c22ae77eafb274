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
    H.raises(function() return torch.empty(1 << 40) end, 'out of memory', 'tried to allocate')
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
end)
