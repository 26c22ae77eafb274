-- The Fashion-MNIST examples: they train (a few batches here), write their checkpoint, CSV log and
-- SVG plot, and a run resumed from the checkpoint gives the numbers of an uninterrupted run.
local torch = require 'torch'
local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'

local function run(args)
  local p = assert(io.popen(BIN .. ' ' .. args .. ' 2>&1; echo "rc=$?"', 'r'))
  local out = p:read('a')
  p:close()
  local rc = tonumber(out:match('rc=(%d+)%s*$'))
  assert(rc == 0, 'command failed: ' .. args .. '\n' .. out)
  return out
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('a')
  f:close()
  return s
end

-- the CSV's numbers without the timing column
local function numbers(csv)
  local rows = {}
  for line in csv:gmatch('[^\n]+') do
    if not line:match('^epoch') then rows[#rows + 1] = line:gsub(',[%d.]+$', '') end
  end
  return rows
end

local tmp = os.tmpname()
os.remove(tmp)

describe('examples', function()
  teardown(function() os.execute('rm -rf "' .. tmp .. '"') end)

  it('the MLP resumes from its checkpoint to the numbers of an uninterrupted run', function()
    local common = ' --limit 60 --quiet --seed 3 '
    run('examples/fashion_mnist_mlp.lua --epochs 3 --out ' .. tmp .. '/a' .. common)
    run('examples/fashion_mnist_mlp.lua --epochs 2 --out ' .. tmp .. '/b' .. common)
    local out = run('examples/fashion_mnist_mlp.lua --epochs 3 --resume --out ' .. tmp .. '/b' .. common)
    assert.matches('resumed from .* after epoch 2', out)
    local a, b = numbers(read(tmp .. '/a/log.csv')), numbers(read(tmp .. '/b/log.csv'))
    assert.are.equal(3, #a)
    assert.are.same(a, b)
    -- it learns: 180 batches of 64 reach well above chance on 60000 test images' first 60000
    local acc = tonumber(a[3]:match(',([%d.]+)$'))
    assert.is_true(acc > 0.7, 'test accuracy ' .. acc)
    local svg = read(tmp .. '/a/curves.svg')
    assert.matches('^<svg ', svg)
    assert.matches('</svg>\n$', svg)
    assert.are.equal(2, select(2, svg:gsub('<polyline', '')) - 1)
  end)

  local gpu = torch.cuda.is_available()
  local gpu_it = gpu and it or function(name) pending('no CUDA device: ' .. name) end
  gpu_it('the MLP trains on the GPU to the CPU run\'s numbers, and resumes there', function()
    local common = ' --limit 60 --quiet --seed 3 '
    run('examples/fashion_mnist_mlp.lua --epochs 2 --device cpu --out ' .. tmp .. '/gc' .. common)
    local out = run('examples/fashion_mnist_mlp.lua --epochs 2 --device cuda --out ' .. tmp .. '/g' .. common)
    assert.matches('training on cuda:0', out, 1, true)
    run('examples/fashion_mnist_mlp.lua --epochs 1 --device cuda --out ' .. tmp .. '/gr' .. common)
    run('examples/fashion_mnist_mlp.lua --epochs 2 --device cuda --resume --out ' .. tmp .. '/gr' .. common)
    local c, g, r = numbers(read(tmp .. '/gc/log.csv')), numbers(read(tmp .. '/g/log.csv')),
      numbers(read(tmp .. '/gr/log.csv'))
    assert.are.same(g, r)
    for e = 1, 2 do
      local cv, gv = {}, {}
      for v in c[e]:gmatch('[^,]+') do cv[#cv + 1] = tonumber(v) end
      for v in g[e]:gmatch('[^,]+') do gv[#gv + 1] = tonumber(v) end
      -- train loss, test loss: float32 sums in another order, 120 steps on: within 1%; accuracy within 0.01
      assert.is_true(math.abs(cv[2] - gv[2]) < 0.01 * cv[2], c[e] .. ' vs ' .. g[e])
      assert.is_true(math.abs(cv[3] - gv[3]) < 0.01 * cv[3], c[e] .. ' vs ' .. g[e])
      assert.is_true(math.abs(cv[4] - gv[4]) < 0.01, c[e] .. ' vs ' .. g[e])
    end
  end)

  it('the CNN trains a few batches and saves its checkpoint', function()
    local out = run('examples/fashion_mnist_cnn.lua --epochs 1 --limit 20 --quiet --out ' .. tmp .. '/c')
    assert.matches('Conv2d%(1, 32, kernel_size=%(3, 3%)', out)
    assert.matches('epoch 1  train loss', out)
    local state = torch.load(tmp .. '/c/checkpoint.safetensors')
    assert.are.equal(1, state.epoch)
    assert.are.same({ 32, 1, 3, 3 }, { table.unpack(state.model['1.weight'].shape) })
  end)

  it('the CNN trains from DataLoader workers running a per-sample Lua transform', function()
    local out = run('examples/fashion_mnist_cnn.lua --epochs 1 --limit 10 --quiet --augment --workers 2 --out '
      .. tmp .. '/w')
    -- the epoch trained (a finite loss) and reports its share of time waiting for the workers
    local loss, wait = out:match('epoch 1  train loss ([%d.]+) .* s, ([%d.]+)%% waiting for data%)')
    assert.is_not_nil(loss, out)
    assert.is_true(tonumber(loss) > 0 and tonumber(loss) < 2.5, out)
    assert.is_true(tonumber(wait) >= 0 and tonumber(wait) <= 100, out)
  end)

  it('the devices tour runs on two CPU devices', function()
    local out = run('examples/devices_tour.lua')
    assert.matches('cpu:1', out)
    assert.matches('OOMs', out)
    -- the streams part: an event-timed product (its value checked) and the stream restored
    local ms, v = out:match('a 512x512 product on cpu:1 took ([%d.]+) ms %(events%), result (%d+)')
    assert.is_truthy(ms, out)
    assert.are.equal('512', v)
    assert.matches('current stream back to\ttorch.Stream%(device=cpu:1, stream_id=0%)', out)
    -- without a GPU the GPU part says what it skips and why
    if not torch.cuda.is_available() then assert.matches('the GPU part is skipped', out) end
  end)

  it('the DataParallel example splits FooNet\'s batch and trains the MLP over both devices', function()
    local out = run('examples/data_parallel.lua --steps 3 --batch 64')
    if torch.cuda.is_available() then -- the example runs over the GPUs then
      local n = torch.cuda.device_count()
      for d = 0, n - 1 do assert.matches('In FooNet on cuda:' .. d .. ': input size ' .. math.ceil(16 / n) .. 'x5', out, 1, true) end
      assert.matches('Outside: input size 16x5, output size 16x2 on cuda:0', out, 1, true)
    else
      assert.matches('In FooNet on cpu:0: input size 8x5', out, 1, true)
      assert.matches('In FooNet on cpu:1: input size 8x5', out, 1, true)
      assert.matches('Outside: input size 16x5, output size 16x2 on cpu:0', out, 1, true)
    end
    -- the same model, seed and batches with and without DataParallel: the same loss
    local l1 = tonumber(out:match('one device .-loss ([%d.]+)'))
    local l2 = tonumber(out:match('DataParallel over %d+ devices?: .-loss ([%d.]+)'))
    assert.is_truthy(l1 and l2, out)
    assert.is_true(math.abs(l1 - l2) < 1e-3, out)
  end)

  it('the seed training loop learns y = 3 x1 - 2 x2 + 1', function()
    local out = run('examples/seed_training.lua')
    local first = tonumber(out:match('epoch  1  loss ([%d.]+)'))
    local last = tonumber(out:match('epoch 10  loss ([%d.]+)'))
    assert.is_true(last < first / 10, out)
  end)

  it('the profiler example prints the table of a few training steps and writes its trace', function()
    local trace = tmp .. '-trace.json'
    local out = run('examples/profile_training.lua ' .. trace)
    os.remove(trace)
    assert.matches('Name +Self CPU %% +Self CPU +CPU total %% +CPU total +CPU time avg +CPU Mem +Self CPU Mem +# of Calls', out)
    assert.matches('\n +train_step +[%d.]+%% +%S+ +100%.00%% +%S+ +%S+ +%S+ %S+ +%S+ %S+ +7  \n', out)
    assert.matches('\n +autograd::backward .* 7  \n', out)
    assert.matches('Self CPU time total: [%d.]+m?s\n', out)
    assert.matches('(%d+) events; Chrome trace written to ', out)
  end)

  it('names a missing checkpoint and unknown options', function()
    assert.has_error(function() run('examples/fashion_mnist_mlp.lua --resume --out ' .. tmp .. '/none') end)
    local p = assert(io.popen(BIN .. ' examples/fashion_mnist_mlp.lua --bogus 1 2>&1'))
    local out = p:read('a')
    p:close()
    assert.matches('unknown argument %-%-bogus', out)
    p = assert(io.popen(BIN .. ' examples/fashion_mnist_mlp.lua --resume --out ' .. tmp .. '/none 2>&1'))
    out = p:read('a')
    p:close()
    assert.matches('%-%-resume: no checkpoint at', out)
    p = assert(io.popen(BIN .. ' examples/fashion_mnist_mlp.lua --device bogus 2>&1'))
    out = p:read('a')
    p:close()
    assert.matches('bogus', out)
    assert.is_nil(out:find('epoch 1', 1, true), out)
  end)
end)
