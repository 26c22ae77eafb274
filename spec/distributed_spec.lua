-- torch.distributed, nn.DistributedDataParallel and data.DistributedSampler. The collectives and DDP
-- run as MPI jobs of the scripts in spec/support/dist_*.lua (mpirun -np 2 and -np 3 of
-- $LUTORCH_BIN), which write their results per rank to files this spec reads; the sampler and the
-- errors before init run in this process. Without mpirun (or a build without MPI) the MPI cases are
-- pending.
local torch = require 'torch'
local dist = torch.distributed
local nn = torch.nn

local MPI = require 'spec.support.mpi'
local BIN, MPIRUN, HAVE_MPI, sh, mpi_job = MPI.BIN, MPI.MPIRUN, MPI.HAVE_MPI, MPI.sh, MPI.mpi_job

local function mpi_it(name, fn)
  if HAVE_MPI then it(name, fn) else pending(MPI.NO_MPI_WHY .. ': ' .. name) end
end

-- every rank of a dist_collectives.lua job wrote `want` checks, all passed
local function check_collectives(ranks, out, R, want)
  for r = 0, R - 1 do
    local lines = ranks[r]
    assert(#lines > 0, 'rank ' .. r .. ' wrote no results:\n' .. out)
    local fails, oks, checks = {}, 0, nil
    for _, l in ipairs(lines) do
      if l:match('^RESULT fail') then fails[#fails + 1] = l end
      if l:match('^RESULT ok') then oks = oks + 1 end
      checks = checks or tonumber(l:match('^RESULT checks (%d+)'))
    end
    assert.are.same({}, fails)
    assert.are.equal(want, checks)
    assert.are.equal(checks, oks)
  end
end

describe('torch.distributed collectives (MPI)', function()
  -- the ranks on one node reduce float32/float64 SUM and AVG through shared memory (core/comm_shm.h);
  -- LUTORCH_MPI_SHM=0 leaves everything to MPI
  for _, c in ipairs { { 2, '' }, { 3, '' }, { 2, 'LUTORCH_MPI_SHM=0' }, { 3, 'LUTORCH_MPI_SHM=0' } } do
    local np, env = c[1], c[2]
    mpi_it(string.format('every collective on every dtype, contiguous and not, over %d ranks%s', np,
      env ~= '' and (' (' .. env .. ')') or ''), function()
      local ranks, out = mpi_job(np, 'spec/support/dist_collectives.lua', nil,
        env ~= '' and ('-x ' .. env) or nil)
      -- 10 dtypes x 2 layouts x (5 all_reduce ops, broadcast, np all_gather, 3 reduce_scatter ops), less bool AVG
      -- and bool's third reduce_scatter op, plus 16 others
      check_collectives(ranks, out, np, 20 * (5 + 1 + np + 3) - 4 + 16)
    end)
  end
end)

-- Each rank's reducer overlaps its all-reduces with backward on its own thread, or (one core a
-- rank) reduces at the end of backward: both forced, and the choice made for ranks bound to a core.
for _, mode in ipairs { { '1', '', true }, { '0', '', false }, { nil, '--bind-to core', false } } do
describe(string.format('nn.DistributedDataParallel (MPI, 2 ranks, %s)', mode[1] == nil and 'ranks bound to a core'
  or mode[1] == '1' and 'overlapped' or 'reduced at the end of backward'), function()
  local res
  local function results()
    if res then return res end
    local ranks, out = mpi_job(2, 'spec/support/dist_ddp.lua', nil,
      (mode[1] and '-x LUTORCH_DDP_OVERLAP=' .. mode[1] .. ' ' or '-x LUTORCH_DDP_OVERLAP= ') .. mode[2])
    res = {}
    for r = 0, 1 do
      res[r] = {}
      for _, l in ipairs(ranks[r]) do
        local k, v = l:match('^RESULT (%S+) (.*)$')
        if k then res[r][k] = v end
      end
      assert(next(res[r]), 'rank ' .. r .. ' wrote no results:\n' .. out)
    end
    return res
  end
  local function each_rank(fn) for r = 0, 1 do fn(results()[r], r) end end

  mpi_it('broadcasts rank 0 parameters at construction', function()
    each_rank(function(x) for _, tag in ipairs { 'one_bucket', 'many_buckets' } do
      assert.are.equal(0, tonumber(x[tag .. '_init_maxdiff']))
    end end)
  end)
  mpi_it('gives the gradients of one process on the whole batch (1e-5), in one bucket and in many', function()
    each_rank(function(x)
      assert.is_true(tonumber(x.one_bucket_grad_maxdiff) < 1e-5)
      assert.is_true(tonumber(x.many_buckets_grad_maxdiff) < 1e-5)
      assert.are.equal('1', x.one_bucket_buckets)
      assert.are.equal('6', x.many_buckets_buckets)
    end)
  end)
  mpi_it('gives the parameters of one process after 50 SGD steps (1e-4)', function()
    each_rank(function(x)
      assert.is_true(tonumber(x.one_bucket_param_maxdiff_50) < 1e-4)
      assert.is_true(tonumber(x.many_buckets_param_maxdiff_50) < 1e-4)
    end)
  end)
  mpi_it('no_sync accumulates locally, then averages the accumulated gradients', function()
    each_rank(function(x)
      for _, tag in ipairs { 'one_bucket', 'many_buckets' } do
        assert.are.equal('true', x[tag .. '_nosync_local_differs'])
        assert.is_true(tonumber(x[tag .. '_nosync_grad_maxdiff']) < 1e-5)
        assert.is_true(tonumber(x[tag .. '_nosync_fn_grad_maxdiff']) < 1e-5)
      end
    end)
  end)
  mpi_it('averages a parameter used twice in the graph', function()
    each_rank(function(x) assert.is_true(tonumber(x.shared_grad_maxdiff) < 1e-5) end)
  end)
  mpi_it('averages the gradients of a module across two CPU devices (backward on two threads)', function()
    each_rank(function(x) assert.is_true(tonumber(x.two_devices_grad_maxdiff) < 1e-5) end)
  end)
  mpi_it("raises PyTorch's error for an unused parameter at the next forward; find_unused_parameters works", function()
    each_rank(function(x)
      assert.are.equal('true', x.unused_error)
      assert.are.equal('3 4', x.unused_error_indices)
      assert.are.equal('true', x.find_unused_ok)
      assert.is_true(tonumber(x.used_on_one_rank_maxdiff) < 1e-6, x.used_on_one_rank_maxdiff)
      assert.are.equal('trying to initialize the default process group twice!', x.double_init)
    end)
  end)
  mpi_it("averages as PyTorch's example: Linear(3, 1), x = 1 and x = 2 give weight grad 1.5", function()
    each_rank(function(x) assert.are.equal('1.5 1.5 1.5', x.linear_grad) end)
  end)
  mpi_it("re-broadcasts rank 0's buffers at every forward, or leaves them with broadcast_buffers = false", function()
    each_rank(function(x, r)
      assert.are.equal(100, tonumber(x.buffer_after_forward_true))
      assert.are.equal(100 + r, tonumber(x.buffer_after_forward_false))
    end)
  end)
  mpi_it("gives PyTorch's constructor errors", function()
    each_rank(function(x)
      assert.are.equal('true', x.device_ids_cpu_error)
      assert.are.equal('true', x.no_grad_params_error)
      assert.are.equal('true', x.device_ids_two_error)
      assert.are.equal('true', x.mismatch_error)
    end)
  end)
  mpi_it(mode[3] and 'overlaps the all-reduces with backward' or 'reduces at the end of backward', function()
    each_rank(function(x) assert.are.equal(tostring(mode[3]), x.overlap) end)
  end)
end)
end

describe('a rank that fails (MPI, 2 ranks, timeout 5 s)', function()
  mpi_it('a hanging rank makes the other fail with a timeout error, not hang', function()
    local _, out, secs = mpi_job(2, 'spec/support/dist_fault.lua', 'hang')
    assert.truthy(out:find('all_reduce: timed out after 5 s on rank 0', 1, true), out)
    assert.truthy(out:find('STEP 4', 1, true), out)
    assert.is_true(secs < 15, 'took ' .. secs .. ' s')
  end)
  mpi_it('a killed rank makes the other fail with a timeout error', function()
    -- --enable-recovery: mpirun leaves the survivors running, so rank 0 itself must notice
    local _, out, secs = mpi_job(2, 'spec/support/dist_fault.lua', 'kill', '--enable-recovery')
    assert.truthy(out:find('all_reduce: timed out after 5 s on rank 0', 1, true), out)
    assert.is_true(secs < 15, 'took ' .. secs .. ' s')
  end)
end)

-- CUDA tensors: on the NCCL backend, one rank a GPU (NCCL refuses two ranks on one device), under
-- mpirun over every visible GPU; on the MPI backend (staged through the host), 2 ranks on the GPU
-- under mpirun. Without mpirun and with one GPU, one MPI process on its own (a singleton: Open MPI's
-- isolated mode starts no daemon). CI has no GPU: pending there, with the reason.
local GPU_WHY = not torch.cuda.is_available() and 'no CUDA device: ' .. tostring(torch._cuda.unavailable_reason())
  or not dist.is_mpi_available() and 'this build has no MPI'
  or nil
local GPU_CASES = {
  { backend = 'nccl', title = 'torch.distributed on NCCL (CUDA tensors, a rank a GPU)',
    why = GPU_WHY or (not dist.is_nccl_available() and 'this build has no NCCL (make CUDA=1 where Open MPI and nccl.h are present)')
      or (not HAVE_MPI and torch.cuda.device_count() > 1 and 'several GPUs but no mpirun to start a rank on each') or nil,
    ranks = HAVE_MPI and torch.cuda.device_count() or 1 },
  { backend = 'mpi', device = 'cuda', title = 'torch.distributed on MPI with CUDA tensors (staged through the host)',
    why = GPU_WHY, ranks = HAVE_MPI and 2 or 1 },
}

-- the script's per-rank results {rank = {lines}} and the output, under mpirun or as a singleton
local function gpu_job(case, script)
  local extra = case.backend .. ' ' .. (case.device or '')
  if HAVE_MPI then return mpi_job(case.ranks, script, extra) end
  local dir = sh('mktemp -d'):gsub('%s+$', '')
  local out = sh(string.format('OMPI_MCA_ess_singleton_isolated=1 timeout 60 %s %s %s %s; echo "RC $?"', BIN, script, dir, extra))
  local lines = {}
  local f = io.open(dir .. '/rank0.txt')
  if f then
    for l in f:lines() do lines[#lines + 1] = l end
    f:close()
  end
  os.execute('rm -rf ' .. dir)
  return { [0] = lines }, out
end

for _, case in ipairs(GPU_CASES) do
  local nccl = case.backend == 'nccl'
  local function gpu_case_it(name, fn)
    if case.why then pending(case.why .. ': ' .. name) else it(name, fn) end
  end
  describe(case.title, function()
    gpu_case_it(nccl and 'every collective on every NCCL dtype, contiguous and not; CPU tensors and int16 refused'
        or 'every collective on every dtype, contiguous and not', function()
      local ranks, out = gpu_job(case, 'spec/support/dist_collectives.lua')
      local R = case.ranks
      -- NCCL: 9 dtypes x 2 layouts x (5 all_reduce ops, broadcast, R all_gather, 3 reduce_scatter ops), less 4
      -- for bool; int16's refusal; the 16 others of the MPI run; CPU tensor, CPU list, barrier. MPI: as on the CPU.
      check_collectives(ranks, out, R, nccl and 18 * (9 + R) - 4 + 1 + 16 + 3 or 20 * (9 + R) - 4 + 16)
    end)
    gpu_case_it('DistributedDataParallel on the GPU: the gradients and parameters of one process, no_sync, errors', function()
      local ranks, out = gpu_job(case, 'spec/support/dist_ddp.lua')
      local R = case.ranks
      for r = 0, R - 1 do
        local x = {}
        for _, l in ipairs(ranks[r]) do
          local k, v = l:match('^RESULT (%S+) (.*)$')
          if k then x[k] = v end
        end
        assert(next(x), 'rank ' .. r .. ' wrote no results:\n' .. out)
        for _, tag in ipairs { 'one_bucket', 'many_buckets' } do
          assert.are.equal(0, tonumber(x[tag .. '_init_maxdiff']))
          assert.is_true(tonumber(x[tag .. '_grad_maxdiff']) < 1e-5, tag)
          assert.is_true(tonumber(x[tag .. '_param_maxdiff_50']) < 1e-4, tag)
          assert.are.equal('true', x[tag .. '_nosync_local_differs'])
          assert.is_true(tonumber(x[tag .. '_nosync_grad_maxdiff']) < 1e-5, tag)
          assert.is_true(tonumber(x[tag .. '_nosync_fn_grad_maxdiff']) < 1e-5, tag)
        end
        assert.are.equal('1', x.one_bucket_buckets)
        assert.are.equal('6', x.many_buckets_buckets)
        assert.is_true(tonumber(x.shared_grad_maxdiff) < 1e-5)
        assert.are.equal('true', x.unused_error)
        assert.are.equal('3 4', x.unused_error_indices)
        assert.are.equal('true', x.find_unused_ok)
      assert.is_true(tonumber(x.used_on_one_rank_maxdiff) < 1e-6, x.used_on_one_rank_maxdiff)
        local g = string.format('%g', (R + 1) / 2) -- the mean of x = rank + 1
        assert.are.equal(g .. ' ' .. g .. ' ' .. g, x.linear_grad)
        assert.are.equal(100, tonumber(x.buffer_after_forward_true))
        assert.are.equal(100 + r, tonumber(x.buffer_after_forward_false))
        assert.are.equal('true', x.device_ids_cpu_error)
        assert.are.equal('true', x.no_grad_params_error)
        assert.are.equal('true', x.device_ids_two_error)
        assert.are.equal(tostring(R > 1), x.mismatch_error) -- one rank wraps what it wraps
        if nccl then
          assert.are.equal('true', x.nccl_cpu_module_error)
          assert.are.equal('true', x.nccl_device_ids_ok)
        end
        assert.are.equal('trying to initialize the default process group twice!', x.double_init)
      end
    end)
  end)
end

describe('examples/ddp.lua (MPI, 2 ranks)', function()
  mpi_it('trains, logs on rank 0 only and saves a checkpoint that loads', function()
    local dir = sh('mktemp -d'):gsub('%s+$', '')
    local out = sh(string.format('OMP_NUM_THREADS=1 timeout 120 %s -np 2 %s examples/ddp.lua --epochs 1 --limit 30 '
      .. '--out %s', MPIRUN, BIN, dir))
    local acc = tonumber(out:match('epoch 1  loss [%d.]+  test accuracy ([%d.]+)'))
    assert(acc, out)
    assert.is_true(acc > 0.5, out) -- 30 steps of 2 x 64 samples: well above chance (0.1)
    local _, n = out:gsub('epoch 1 ', '')
    assert.are.equal(1, n) -- rank 0 alone logs
    assert.truthy(out:find('2 ranks', 1, true), out)
    local ck = torch.load(dir .. '/ddp_mlp.safetensors')
    assert.are.equal(2, ck.world_size)
    assert.are.same({ 512, 784 }, ck.model['1.weight']:size())
    os.execute('rm -rf ' .. dir)
  end)
end)

describe('torch.distributed without a process group', function()
  local NOT_INIT = 'Default process group has not been initialized, please make sure to call init_process_group.'
  it('refuses use before init', function()
    assert.is_false(dist.is_initialized())
    for _, f in ipairs { function() return dist.get_rank() end, function() return dist.get_world_size() end,
      function() return dist.barrier() end, function() return dist.all_reduce(torch.zeros(2)) end,
      function() return dist.broadcast(torch.zeros(2), 0) end, function() return dist.destroy_process_group() end } do
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.truthy(tostring(err):find(NOT_INIT, 1, true), err)
    end
    local ok, err = pcall(nn.DistributedDataParallel, nn.Linear(2, 2))
    assert.is_false(ok)
    assert.truthy(tostring(err):find(NOT_INIT, 1, true), err)
  end)
  it('names unknown and unavailable backends', function()
    local ok, err = pcall(dist.init_process_group, { backend = 'foo' })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Invalid backend: 'foo'", 1, true), err)
    if not dist.is_nccl_available() then
      ok, err = pcall(dist.init_process_group, { backend = 'NCCL' })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("Distributed package doesn't have NCCL built in", 1, true), err)
    end
    ok, err = pcall(dist.init_process_group, { backend = 'gloo' })
    assert.truthy(tostring(err):find("backend 'gloo' is not available", 1, true), err)
    ok, err = pcall(dist.init_process_group, { backend = 'mpi', init_method = 'tcp://10.0.0.1:23456' })
    assert.truthy(tostring(err):find("init_method 'tcp://10.0.0.1:23456' is not supported", 1, true), err)
    ok, err = pcall(dist.init_process_group, { backend = 'mpi', timeout = -1 })
    assert.truthy(tostring(err):find('timeout must be a positive number', 1, true), err)
    ok, err = pcall(dist.init_process_group, { backend = 'mpi', bogus = 1 })
    assert.truthy(tostring(err):find("unknown option 'bogus'", 1, true), err)
    assert.is_false(dist.is_initialized())
  end)
  it('has the reduce ops', function()
    for _, k in ipairs { 'SUM', 'AVG', 'PRODUCT', 'MIN', 'MAX' } do assert.is_not_nil(dist.ReduceOp[k]) end
  end)
end)

describe('the MPI plugin (lutorch_mpi.so, loaded on first use)', function()
  local BUILD = os.getenv('LUTORCH_BUILD') or 'build'
  local built = io.open(BUILD .. '/lutorch_mpi.so') ~= nil
  -- a chunk printing whether Open MPI's library is mapped, before and after asking for the backend
  local probe = [[local function mapped() local f = io.open('/proc/self/maps'); local m = f:read('a'); f:close()
return m:find('libmpi', 1, true) ~= nil end
local before = mapped()
local avail = torch.distributed.is_mpi_available()
print(before, avail, mapped())]]

  it('is not loaded at start-up, only when the MPI backend is asked for', function()
    local out, rc = sh(BIN .. " -e " .. string.format('%q', probe):gsub('\\\n', ' '))
    assert.are.equal(0, rc, out)
    assert.are.equal(string.format('false\t%s\t%s\n', built, built), out)
  end)

  it('says where it looked when it is missing', function()
    local dir = sh('mktemp -d'):gsub('%s+$', '')
    sh('cp ' .. BIN .. ' ' .. dir .. '/lutorch')
    local out, rc = sh(dir .. "/lutorch -e \"print(torch.distributed.is_mpi_available()); " ..
      "torch.distributed.init_process_group('mpi')\"")
    os.execute('rm -rf ' .. dir)
    assert.are_not.equal(0, rc)
    assert.truthy(out:find('false\n', 1, true), out)
    if built then
      assert.truthy(out:find("backend 'mpi' is not available: its plugin lutorch_mpi.so is not in " .. dir, 1, true), out)
    else
      assert.truthy(out:find("backend 'mpi' is not available in this build", 1, true), out)
    end
  end)
end)

describe('data.DistributedSampler', function()
  local DS = torch.data.DistributedSampler
  local function ds(n) return torch.data.TensorDataset(torch.arange(n)) end
  local function lists(n, R, opts)
    local out = {}
    for r = 0, R - 1 do
      local o = { num_replicas = R, rank = r, shuffle = false }
      for k, v in pairs(opts or {}) do o[k] = v end
      out[r + 1] = DS(ds(n), o):indices()
    end
    return out
  end
  -- PyTorch's worked examples, plus 1 (indices are 1-based)
  it('N = 10, R = 3: padded by wrapping, strided per rank', function()
    assert.are.same({ { 1, 4, 7, 10 }, { 2, 5, 8, 1 }, { 3, 6, 9, 2 } }, lists(10, 3))
    assert.are.equal(4, #DS(ds(10), { num_replicas = 3, rank = 0 }))
  end)
  it('N = 10, R = 3 with drop_last', function()
    assert.are.same({ { 1, 4, 7 }, { 2, 5, 8 }, { 3, 6, 9 } }, lists(10, 3, { drop_last = true }))
    assert.are.equal(3, #DS(ds(10), { num_replicas = 3, rank = 2, drop_last = true }))
    assert.are.equal(3, #DS(ds(11), { num_replicas = 3, rank = 2, drop_last = true })) -- ceil((11 - 3) / 3)
    assert.are.equal(4, #DS(ds(12), { num_replicas = 3, rank = 2, drop_last = true }))
  end)
  it('N = 2, R = 5', function()
    assert.are.same({ { 1 }, { 2 }, { 1 }, { 2 }, { 1 } }, lists(2, 5))
  end)
  it("shuffles as PyTorch's randperm with seed + epoch; the ranks cover the dataset", function()
    local s0 = DS(ds(10), { num_replicas = 2, rank = 0 })
    assert.are.same({ 5, 8, 4, 1, 7 }, s0:indices()) -- randperm(10, seed 0)[0::2] = [4, 7, 3, 0, 6]
    assert.are.same(s0:indices(), s0:indices())
    local s1 = DS(ds(10), { num_replicas = 2, rank = 1 })
    local seen = {}
    for _, i in ipairs(s0:indices()) do seen[i] = (seen[i] or 0) + 1 end
    for _, i in ipairs(s1:indices()) do seen[i] = (seen[i] or 0) + 1 end
    for i = 1, 10 do assert.are.equal(1, seen[i]) end
    local e0 = s0:indices()
    s0:set_epoch(1)
    assert.are_not.same(e0, s0:indices())
    -- epoch 1 is the permutation of seed 1
    local perm = torch._data_generator(1):randperm(10):totable()
    assert.are.same({ perm[1], perm[3], perm[5], perm[7], perm[9] }, s0:indices())
    local seeded = DS(ds(10), { num_replicas = 2, rank = 0, seed = 1 })
    assert.are.same(s0:indices(), seeded:indices())
  end)
  it('feeds a DataLoader', function()
    local loader = torch.data.DataLoader(ds(10), { batch_size = 2,
      sampler = DS(ds(10), { num_replicas = 3, rank = 1, shuffle = false }) })
    local got = {}
    for x in loader:iter() do for _, v in ipairs(x:totable()) do got[#got + 1] = v end end
    assert.are.same({ 1, 4, 7, 0 }, got) -- dataset values are index - 1
  end)
  it('checks its arguments', function()
    local ok, err = pcall(DS, ds(10), { num_replicas = 2, rank = 2 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find('Invalid rank 2, rank should be in the interval [0, 1]', 1, true), err)
    ok, err = pcall(DS, ds(10), { num_replicas = 2, rank = -1 })
    assert.truthy(tostring(err):find('Invalid rank -1', 1, true), err)
    ok, err = pcall(DS, ds(10))
    assert.truthy(tostring(err):find('Default process group has not been initialized', 1, true), err)
    ok, err = pcall(DS, ds(10), { num_replicas = 0, rank = 0 })
    assert.truthy(tostring(err):find('num_replicas must be a positive integer', 1, true), err)
    ok, err = pcall(DS, ds(10), { num_replicas = 2, rank = 0, nope = 1 })
    assert.truthy(tostring(err):find("unknown option 'nope'", 1, true), err)
  end)
end)
