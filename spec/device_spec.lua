-- torch.device, moving tensors, the same-device rule and the virtual CPU devices.
-- The test runner starts with LUTORCH_CPU_DEVICES=2.
local torch = require 'torch'
local H = require 'spec.helpers'

describe('torch.device', function()
  it('parses device strings and (type, index)', function()
    local d = torch.device('cpu:1')
    assert.are.equal('cpu', d.type)
    assert.are.equal(1, d.index)
    assert.are.equal('cpu:1', tostring(d))
    assert.is_nil(torch.device('cpu').index)
    assert.are.equal('cpu', tostring(torch.device('cpu')))
    assert.is_true(torch.device('cpu', 1) == torch.device('cpu:1'))
    assert.is_false(torch.device('cpu') == torch.device('cpu:0'))
    assert.is_true(torch.device(torch.device('cpu:0')) == torch.device('cpu:0'))
  end)

  it('rejects malformed strings and types this build lacks, listing the types it has', function()
    for _, bad in ipairs { 'cpu:', 'cpu:-1', 'cpu:01', 'cpu:x', 'cpu:1:2', 'cpu: 1', ' cpu', 'CPU' } do
      H.raises(function() return torch.device(bad) end, 'torch.device', bad)
    end
    H.raises(function() return torch.device('gpu') end, 'invalid device string', 'cpu')
    H.raises(function() return torch.device('tpu') end, "'tpu'", 'available types: cpu')
    if not torch.cuda.is_built() then
      H.raises(function() return torch.device('cuda') end, 'cuda', 'available types')
    end
    H.raises(function() return torch.device('') end, 'empty')
    H.raises(function() return torch.device('cpu:1', 1) end, 'must not include an index')
    H.raises(function() return torch.device('cpu:99999') end, 'torch.device')
    H.raises(function() return torch.zeros(2, { device = 'cpu:7' }) end, 'cpu:7', 'does not exist')
  end)
end)

describe('CPU devices', function()
  it('are counted from LUTORCH_CPU_DEVICES and cannot change once tensors exist', function()
    assert.are.equal(2, torch.cpu.device_count())
    local keep = torch.ones(2) -- CPU memory is in use from here on
    H.raises(function() torch.cpu.set_device_count(3) end, 'set_device_count', 'already exist')
    torch.cpu.set_device_count(2) -- the same count is fine
    H.raises(function() torch.cpu.set_device_count(0) end, 'set_device_count')
  end)

  it('can be set at the start of a script, after torch and its libraries are loaded', function()
    -- loading torch, nn, optim, data and linalg makes no CPU tensor (once, one did: a script could
    -- then no longer choose its device count)
    local bin = os.getenv('LUTORCH_BIN') or 'build/lutorch'
    local code = "local _ = torch.nn, torch.optim, torch.data, torch.linalg, torch.F; " ..
      "torch.cpu.set_device_count(3); print('count=' .. torch.cpu.device_count())"
    local p = io.popen(string.format('env -u LUTORCH_CPU_DEVICES %s -e %q 2>&1', bin, code))
    local out = p:read('a')
    p:close()
    assert.is_truthy(out:find('count=3', 1, true), out)
  end)

  it('hold tensors, and x:to() moves between them, returning x when nothing changes', function()
    local x = torch.arange(6):view(2, 3)
    assert.are.equal('cpu:0', tostring(x.device))
    local y = x:to('cpu:1')
    assert.are.equal('cpu:1', tostring(y.device))
    assert.is_true(y:to('cpu:1') == y)
    assert.is_true(x:to('cpu') == x)
    assert.is_true(x:to(torch.device('cpu', 0)) == x)
    assert.is_true(x:cpu() == x)
    assert.is_false(x:to('cpu:0', { copy = true }) == x)
    H.assert_values(y, { 0, 1, 2, 3, 4, 5 })
    local z = x:to('cpu:1', torch.float64)
    assert.are.equal(torch.float64, z.dtype)
    assert.are.equal('cpu:1', tostring(z.device))
    assert.are.equal('cpu:1', tostring(x:to(z).device))
    assert.is_true(torch.ones(2, { device = 'cpu:1' }):to('cpu:0'):equal(torch.ones(2)))
  end)

  it('enforce the same-device rule, naming both devices', function()
    local a = torch.ones(3)
    local b = torch.ones(3, { device = 'cpu:1' })
    H.raises(function() return a + b end, 'add', 'expected all tensors to be on the same device', 'cpu:0', 'cpu:1')
    H.raises(function() return torch.matmul(a, b) end, 'same device')
    H.raises(function() return torch.cat({ a, b }) end, 'same device')
    -- a 0-dim CPU tensor joins another device, as a number would
    local c = b + torch.tensor(2.0)
    assert.are.equal('cpu:1', tostring(c.device))
    H.assert_values(c, { 3, 3, 3 })
    -- results live on their inputs' device
    assert.are.equal('cpu:1', tostring((b * 2):sum().device))
    assert.are.equal('cpu:1', tostring(b:view(3, 1):expand(3, 2).device))
  end)

  it('new_* and *_like keep the device', function()
    local b = torch.ones(2, { device = 'cpu:1', dtype = torch.float16 })
    for _, t in ipairs { b:new_zeros(3), b:new_ones(1), b:new_full({ 2 }, 3), b:new_empty(2), b:new_tensor({ 1 }),
      torch.zeros_like(b), torch.rand_like(b) } do
      assert.are.equal('cpu:1', tostring(t.device))
      assert.are.equal(torch.float16, t.dtype)
    end
    assert.are.equal('cpu:0', tostring(b:new_zeros(2, { device = 'cpu:0' }).device))
  end)

  it('print the device when it is not cpu:0', function()
    assert.are.equal("tensor([1., 1.], device='cpu:1')", tostring(torch.ones(2, { device = 'cpu:1' })))
  end)

  it('without CUDA, CUDA requests fail clearly', function()
    if torch.cuda.is_available() then return end
    assert.are.equal(0, torch.cuda.device_count())
    H.raises(function() return torch.ones(2):cuda() end, 'cuda', 'not available')
    H.raises(function() return torch.cuda.current_device() end, 'CUDA is not available')
  end)
end)
