-- nn.DataParallel over the virtual CPU devices: outputs and gradients equal the single-device run,
-- training matches, state_dict prefixes, and the errors of bad input.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn

local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'

local function run(ndev, script, ...)
  local cmd = string.format('LUTORCH_CPU_DEVICES=%d %s %s %s 2>&1', ndev, BIN, script, table.concat({ ... }, ' '))
  local p = assert(io.popen(cmd))
  local out = p:read('a')
  local ok = p:close()
  return out, ok
end

local function max_err(a, b) return (a - b):abs():max():item() end

describe('nn.DataParallel', function()
  it('equals the single-device run over 2 and 3 CPU devices (batches divisible, not, smaller)', function()
    for _, case in ipairs { { 2, { 4, 5, 1 } }, { 3, { 6, 7, 2, 1 } } } do
      local ndev, batches = case[1], case[2]
      local out, ok = run(ndev, 'spec/support/data_parallel_check.lua', table.unpack(batches))
      assert(ok, out)
      local lines = 0
      for b, dev, oerr, gerr in out:gmatch('batch (%d+) (%S+) (%S+) (%S+)') do
        lines = lines + 1
        assert.are.equal('cpu:0', dev)
        assert(tonumber(oerr) <= 1e-5, ('%d devices, batch %s: output differs by %s'):format(ndev, b, oerr))
        assert(tonumber(gerr) <= 1e-5, ('%d devices, batch %s: gradients differ by %s'):format(ndev, b, gerr))
      end
      assert.are.equal(#batches, lines, out)
    end
  end)

  it("sums the replicas' gradients in device order, the same bits every backward", function()
    local out, ok = run(3, 'spec/support/data_parallel_order.lua')
    assert(ok, out)
    assert.are.equal('exact 20', out:match('^%s*(.-)%s*$'))
  end)

  it('equals the single-device run over the visible GPUs', function()
    local n = torch.cuda.device_count()
    if n < 2 then
      pending(n == 0 and ('no CUDA device: ' .. tostring(select(2, pcall(torch.ones, 1, { device = 'cuda' }))))
        or 'one GPU: DataParallel over GPUs needs two')
      return
    end
    local out, ok = run(1, 'spec/support/data_parallel_check.lua', 'cuda', n * 2, n * 2 + 1, 1)
    assert(ok, out)
    local lines = 0
    for b, dev, oerr, gerr in out:gmatch('batch (%d+) (%S+) (%S+) (%S+)') do
      lines = lines + 1
      assert.are.equal('cuda:0', dev)
      assert(tonumber(oerr) <= 1e-5 and tonumber(gerr) <= 1e-5, out)
    end
    assert.are.equal(3, lines, out)
  end)

  it("gives the replicas the script's globals (and goes without those that cannot move)", function()
    local out, ok = run(2, 'spec/support/data_parallel_globals.lua')
    assert(ok, out)
    local d = tonumber(out:match('ok (%S+)'))
    assert(d and d <= 1e-5, out)
  end)

  it('scatters along dim, runs each chunk on its device, and gathers on the output device', function()
    local Probe = nn.Module:extend('Probe')
    function Probe:init() nn.Module.init(self); self.scale = nn.Parameter(torch.ones(1)) end
    function Probe:forward(x, tag)
      -- each replica reports its device, its chunk and the repeated non-tensor argument
      return { y = x * self.scale, dev = torch.full({ x:size(1), 1 }, x.device.index), tag = tag }
    end
    local dp = nn.DataParallel(Probe(), { device_ids = { 'cpu:0', 'cpu:1' }, output_device = 'cpu:1' })
    local x = torch.arange(1, 6):reshape(5, 1):float()
    local out = dp(x, 'same')
    assert.are.equal('cpu:1', tostring(out.y.device))
    H.assert_values(out.y, { { 1 }, { 2 }, { 3 }, { 4 }, { 5 } })
    -- ceil(5 / 2) = 3 rows on cpu:0, 2 on cpu:1
    H.assert_values(out.dev, { { 0 }, { 0 }, { 0 }, { 1 }, { 1 } })
    assert.are.equal('same', out.tag)
    -- dim = 2 splits columns
    local dp2 = nn.DataParallel(Probe(), { dim = 2 })
    local y = dp2(torch.ones(2, 4), 'x').y
    assert.are.same({ 2, 4 }, y:size())
  end)

  it("keeps each replica's copy of the module between forwards, copied again when either changes", function()
    local Scale = nn.Module:extend('Scale')
    function Scale:init()
      nn.Module.init(self)
      self.w = nn.Parameter(torch.ones(1))
      self.factor = 2
      self.cfg = { offset = 0 }
      self.extra = function(v) return v end
    end
    function Scale:forward(x) return self.extra(x * self.w * self.factor + self.cfg.offset) end
    local m = Scale()
    local dp = nn.DataParallel(m)
    local x = torch.ones(4, 1)
    local function rows() local y = dp(x); return { y[1][1], y[4][1] } end
    local function copies() return rawget(dp, '_copies') end
    assert.are.same({ 2, 2 }, rows())
    assert.are.same({ 2, 2 }, rows())
    assert.are.equal(1, copies()) -- kept
    m.factor = 3 -- a field
    assert.are.same({ 3, 3 }, rows())
    assert.are.equal(2, copies())
    m.cfg.offset = 10 -- inside a plain table of the module
    assert.are.same({ 13, 13 }, rows())
    assert.are.equal(3, copies())
    m.extra = function(v) return v + 100 end -- another function
    assert.are.same({ 113, 113 }, rows())
    torch.no_grad(function() m.w:fill_(2) end) -- parameters are the module's own at every forward
    assert.are.same({ 116, 116 }, rows())
    assert.are.equal(4, copies())
    m:eval()
    rows()
    assert.are.equal(5, copies())
    -- a loaded module in a field is named, not walked (the description holds it by identity), and
    -- the copy is kept after it is copied once
    local functional = require('torch.nn.functional')
    m.functional = functional
    local desc, named = nn.DataParallel._describe(m), false
    for i = 1, desc.n do named = named or rawequal(desc[i], functional) end
    assert(named, 'the loaded module is named in the description')
    assert(desc.n < 40, 'the loaded module is not walked: ' .. desc.n .. ' entries')
    rows()
    rows()
    assert.are.equal(6, copies())
    -- a parameter replaced: the parameter lists are taken again, and gradients reach the new one
    local old = m.w
    m.w = nn.Parameter(torch.full({ 1 }, 5.0))
    local y = dp(x)
    assert.are.same({ 125, 125 }, { y[1][1], y[4][1] })
    y:sum():backward()
    assert.are.same({ 12 }, m.w.grad:totable())
    assert.is_nil(old.grad)
    assert.are.equal(7, copies())

    -- a forward that changes the module on the second device only: PyTorch's replicas start from
    -- the wrapped module at every forward, so the change never shows in the next forward
    local Count = nn.Module:extend('Count')
    function Count:init() nn.Module.init(self); self.w = nn.Parameter(torch.ones(1)); self.cfg = {} end
    function Count:forward(x)
      if x.device.index == 1 then
        self.count = (self.count or 0) + 1
        self.cfg.n = (self.cfg.n or 0) + 1
      end
      return x * self.w + (self.count or 0) * 1000 + (self.cfg.n or 0)
    end
    local dpc = nn.DataParallel(Count())
    for _ = 1, 3 do
      local y = dpc(x)
      assert.are.same({ 1, 1002 }, { y[1][1], y[4][1] })
    end
    assert.are.equal(3, rawget(dpc, '_copies'))

    -- a replica a forward left out (fewer chunks than devices) gets the changed module too
    local out, ok = run(3, 'spec/support/data_parallel_keep.lua')
    assert(ok, out)
    assert.are.equal('2 2 2 2 2 2\n3 3 3 3\n3 3 3 3 3 3\n', out)
  end)

  it('compares a tree of modules alone by their change counts, and still copies it again after any change', function()
    local Tag = nn.Module:extend('Tag')
    function Tag:init(k) nn.Module.init(self); self.k = k end
    function Tag:forward(x)
      if x.device.index == 1 and self.bump then self.k = self.k + 1 end -- on the second device only
      return x + self.k
    end
    local m = nn.Sequential(nn.Linear(1, 1), Tag(1))
    torch.no_grad(function() m[1].weight:fill_(1); m[1].bias:zero_() end)
    local dp = nn.DataParallel(m)
    local x = torch.ones(4, 1)
    local function rows() local y = dp(x); return { y[1][1], y[4][1] } end
    local function copies() return rawget(dp, '_copies') end
    -- no plain table in the tree: the description keeps the modules, their counts and metatables
    local desc = nn.DataParallel._describe(m)
    assert.is_not_nil(desc.fast)
    assert.are.equal(3, #desc.fast.mods) -- the Sequential, the Linear, the Tag
    assert.is_nil(nn.DataParallel._describe(nn.Sequential(Tag({}))).fast) -- a plain table: walked
    assert.are.same({ 2, 2 }, rows())
    assert.are.same({ 2, 2 }, rows())
    assert.are.equal(1, copies())
    m[2].k = 5 -- a field of a submodule
    assert.are.same({ 6, 6 }, rows())
    assert.are.equal(2, copies())
    m[2] = Tag(7) -- a submodule replaced
    assert.are.same({ 8, 8 }, rows())
    assert.are.equal(3, copies())
    local Tag2 = Tag:extend('Tag2')
    function Tag2:forward(x) return x - self.k end
    setmetatable(m[2], Tag2) -- another class
    assert.are.same({ -6, -6 }, rows())
    assert.are.equal(4, copies())
    rows()
    assert.are.equal(4, copies())
    -- a forward that changes the copy on the second device only: the copy is dropped after it, so
    -- each forward starts from the wrapped module
    setmetatable(m[2], Tag)
    m[2].bump = true
    for _ = 1, 3 do assert.are.same({ 8, 9 }, rows()) end
    assert.are.equal(7, copies())
  end)

  it('trains 100 steps to the same parameters as the plain module', function()
    local function make()
      torch.manual_seed(3)
      return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3))
    end
    local plain, wrapped = make(), make()
    local dp = nn.DataParallel(wrapped)
    local o1 = torch.optim.SGD(plain:parameters(), { lr = 0.1, momentum = 0.9 })
    local o2 = torch.optim.SGD(dp:parameters(), { lr = 0.1, momentum = 0.9 })
    torch.manual_seed(11)
    local loss_fn = nn.CrossEntropyLoss()
    for step = 1, 100 do
      local x = torch.randn(13, 8)
      local t = torch.randint(1, 4, { 13 })
      o1:zero_grad(); loss_fn(plain(x), t):backward(); o1:step()
      o2:zero_grad(); loss_fn(dp(x), t):backward(); o2:step()
    end
    local p1, p2 = plain:parameters(), wrapped:parameters()
    for i = 1, #p1 do
      assert(max_err(p1[i], p2[i]) <= 1e-4, 'parameter ' .. i .. ' differs by ' .. max_err(p1[i], p2[i]))
    end
  end)

  it('prefixes state_dict keys with module. and loads into a plain module after consume_prefix', function()
    torch.manual_seed(1)
    local dp = nn.DataParallel(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)))
    assert.are.equal(dp.module, dp._modules and dp._modules.module or dp.module)
    local sd = dp:state_dict()
    assert.is_not_nil(sd['module.1.weight'])
    assert.is_not_nil(sd['module.2.running_mean'])
    local plain = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    local err = H.raises(function() plain:load_state_dict(sd) end, 'Missing key(s)', 'Unexpected key(s)',
      'module.1.weight')
    assert(err:find('"1.weight"', 1, true), err)
    nn.utils.consume_prefix_in_state_dict_if_present(sd, 'module.')
    plain:load_state_dict(sd)
    assert.are.equal(0, max_err(plain[1].weight, dp.module[1].weight))
  end)

  it('raises a replica error in the caller, naming the replica and its device', function()
    local Bad = nn.Module:extend('Bad')
    function Bad:init() nn.Module.init(self); self.w = nn.Parameter(torch.ones(1)) end
    function Bad:forward(x)
      if x.device.index == 1 then error('boom on the second device') end
      return x * self.w
    end
    local dp = nn.DataParallel(Bad())
    H.raises(function() dp(torch.ones(4, 2)) end, 'replica 2 on device cpu:1', 'boom on the second device')
    -- and the wrapper still works afterwards with a batch that only fills replica 1
    H.assert_values(dp(torch.ones(1, 2)), { { 1, 1 } })
  end)

  it('runs the replicas with the caller autocast state', function()
    torch.manual_seed(4)
    local m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    local dp = nn.DataParallel(m)
    local x = torch.randn(7, 6)
    local ref = torch.autocast('cpu', {}, function() return m(x) end)
    local out = torch.autocast('cpu', {}, function() return dp(x) end)
    assert.are.equal(torch.bfloat16, ref.dtype)
    assert.are.equal(torch.bfloat16, out.dtype) -- rows 5..7 came from cpu:1's thread, in bfloat16 too
    assert((out:float() - ref:float()):abs():max():item() <= 2e-2 * ref:float():abs():max():item())
    -- and outside the region, float32 again in every replica
    assert.are.equal(torch.float32, dp(x).dtype)
  end)

  it('runs the module directly with one device, moving it there', function()
    local m = nn.Linear(3, 2)
    local dp = nn.DataParallel(m, { device_ids = { 'cpu:1' } })
    assert.are.equal('cpu:1', tostring(m.weight.device))
    local y = dp(torch.ones(2, 3))
    assert.are.equal('cpu:1', tostring(y.device))
  end)

  it('gives clear errors for bad input', function()
    local m = nn.Linear(3, 2)
    H.raises(function() nn.DataParallel(m, { device_ids = {} }) end, 'DataParallel', 'device_ids is empty')
    H.raises(function() nn.DataParallel(m, { device_ids = { 'cpu:0', 'cpu:7' } }) end, 'device_ids[2]',
      'cpu:7', 'does not exist')
    if pcall(torch.device, 'cuda:0') then -- a CUDA build: the types mix
      H.raises(function() nn.DataParallel(m, { device_ids = { 'cpu:0', 'cuda:0' } }) end, 'mixes device types')
    else
      H.raises(function() nn.DataParallel(m, { device_ids = { 'cpu:0', 'cuda:0' } }) end, 'device_ids[2]', 'cuda')
    end
    H.raises(function() nn.DataParallel(m, { device_ids = { 'cpu:0', 'gpu:0' } }) end, 'device_ids[2]')
    H.raises(function() nn.DataParallel(m, { device_ids = { 'cpu:0', 'cpu:0' } }) end, 'twice')
    H.raises(function() nn.DataParallel('not a module') end, 'expected an nn.Module')
    local moved = nn.Linear(3, 2):to('cpu:1')
    H.raises(function() nn.DataParallel(moved, { device_ids = { 'cpu:0', 'cpu:1' } })(torch.ones(2, 3)) end,
      'module must have its parameters and buffers on device cpu:0 (device_ids[1])', 'cpu:1')
    local dp = nn.DataParallel(m)
    H.raises(function() dp(torch.ones(0, 3)) end, 'cannot scatter a batch of size 0')
    local Shifty = nn.Module:extend('Shifty')
    function Shifty:forward(x)
      if x.device.index == 0 then return { a = x } end
      return { b = x }
    end
    H.raises(function() nn.DataParallel(Shifty())(torch.ones(4, 2)) end, 'DataParallel', 'key')
  end)

  it('runs replicas at the same time, one thread per device (on the OpenMP team, and on their own threads with more cores than devices)', function()
    -- each replica marks its own slot of a shared tensor and waits (bounded) for the other's mark:
    -- without concurrency the first replica would time out and report false
    local Meet = nn.Module:extend('Meet')
    function Meet:init(board) nn.Module.init(self); self.board = board end
    function Meet:forward(x)
      local me = x.device.index + 1
      self.board[me] = 1
      local t0 = os.time()
      while self.board[3 - me] == 0 and os.time() - t0 < 5 do end
      return torch.full({ x:size(1) }, self.board[3 - me])
    end
    local board = torch.zeros(2)
    local out = nn.DataParallel(Meet(board))(torch.ones(2, 1))
    H.assert_values(out, { 1, 1 })
    -- with two kernel threads per device the replicas run on Lua threads of their own: the same
    -- results, forward and backward
    local before = torch.get_num_threads()
    torch.set_num_threads(4)
    local ok, e = pcall(function()
      board:zero_()
      H.assert_values(nn.DataParallel(Meet(board))(torch.ones(2, 1)), { 1, 1 })
      torch.manual_seed(3)
      local m = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
      local x = torch.randn(7, 5)
      m(x):pow(2):sum():backward()
      local want = m[1].weight.grad:clone()
      m:zero_grad()
      nn.DataParallel(m)(x):pow(2):sum():backward()
      H.assert_values(m[1].weight.grad, want:totable(), 1e-6)
    end)
    torch.set_num_threads(before)
    assert(ok, e)
  end)
end)
