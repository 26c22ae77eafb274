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
end)
