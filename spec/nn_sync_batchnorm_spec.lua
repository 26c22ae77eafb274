-- nn.SyncBatchNorm and SyncBatchNorm.convert_sync_batchnorm. Without a process group it is BatchNorm
-- (checked in this process); under mpirun (2 and 3 ranks, spec/support/dist_sync_bn.lua) each rank
-- normalises its slice of a fixed global batch, and what it wrote is checked here against plain
-- BatchNorm on the whole batch in this process and against plain-Lua statistics (float64, 1e-10).
local torch = require 'torch'
local nn = torch.nn
local MPI = require 'spec.support.mpi'

local TOL = 1e-10
local f64 = { dtype = torch.float64 }

local function mpi_it(name, fn)
  if MPI.HAVE_MPI then it(name, fn) else pending(MPI.NO_MPI_WHY .. ': ' .. name) end
end

local function maxdiff(a, b) return (a:double() - b:double()):abs():max():item() end

-- a BatchNorm-like module's weight and bias set to fixed values (those of dist_sync_bn.lua)
local function set_affine(m)
  torch.no_grad(function()
    m.weight:copy_(torch.tensor({ 1.5, -0.5, 0.75 }, f64))
    m.bias:copy_(torch.tensor({ 0.25, 0, -1 }, f64))
  end)
  return m
end

describe('nn.SyncBatchNorm without a process group', function()
  for _, momentum in ipairs { 0.3, false } do
    it('is BatchNorm2d in training and eval mode (outputs, gradients, running statistics; momentum '
      .. tostring(momentum) .. ')', function()
      local sbn = set_affine(nn.SyncBatchNorm(3, { momentum = momentum }):double())
      local bn = set_affine(nn.BatchNorm2d(3, { momentum = momentum }):double())
      torch.manual_seed(1)
      for step = 1, 2 do
        local x = torch.randn({ 4, 3, 2, 5 }, f64) * 3 + 1
        local g = torch.randn({ 4, 3, 2, 5 }, f64)
        local xa, xb = x:clone():requires_grad_(), x:clone():requires_grad_()
        local ya, yb = sbn(xa), bn(xb)
        assert.is_true(maxdiff(ya, yb) < TOL)
        ;(ya * g):sum():backward()
        ;(yb * g):sum():backward()
        assert.is_true(maxdiff(xa.grad, xb.grad) < TOL)
        assert.is_true(maxdiff(sbn.weight.grad, bn.weight.grad) < TOL)
        assert.is_true(maxdiff(sbn.bias.grad, bn.bias.grad) < TOL)
        assert.is_true(maxdiff(sbn.running_mean, bn.running_mean) < TOL)
        assert.is_true(maxdiff(sbn.running_var, bn.running_var) < TOL)
        assert.are.equal(step, sbn.num_batches_tracked:item())
      end
      sbn:eval(); bn:eval()
      local x = torch.randn({ 2, 3, 4 }, f64)
      assert.is_true(maxdiff(sbn(x), bn(x:unsqueeze(-1)):squeeze(-1)) < TOL)
    end)
  end

  it('takes inputs of 2 to 5 dimensions, as BatchNorm1d/2d/3d', function()
    torch.manual_seed(2)
    for _, c in ipairs { { nn.BatchNorm1d, { 5, 3 } }, { nn.BatchNorm1d, { 5, 3, 4 } }, { nn.BatchNorm2d, { 2, 3, 2, 2 } },
      { nn.BatchNorm3d, { 2, 3, 2, 1, 2 } } } do
      local x = torch.randn(c[2], f64)
      assert.is_true(maxdiff(nn.SyncBatchNorm(3):double()(x), c[1](3):double()(x)) < TOL)
    end
  end)

  it("raises PyTorch's errors and BatchNorm's", function()
    local m = nn.SyncBatchNorm(3)
    assert.has_error(function() m(torch.randn(3)) end, 'SyncBatchNorm: expected at least 2D input (got 1D input)')
    assert.has_error(function() m(torch.randn(2, 0)) end, 'SyncBatchNorm number of input channels should be non-zero')
    local ok, err = pcall(m, torch.randn(4, 5))
    assert.is_false(ok)
    assert.truthy(tostring(err):find('batch_norm: expected weight of shape [5]', 1, true), err)
    assert.has_error(function() nn.SyncBatchNorm(3, { process_group = 'g' }) end)
    assert.are.equal('SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)', tostring(m))
    local world = torch.distributed.group.WORLD
    assert.are.equal(world, nn.SyncBatchNorm(3, { process_group = world }).process_group)
  end)
end)

describe('nn.SyncBatchNorm.convert_sync_batchnorm', function()
  it('replaces every BatchNorm1d/2d/3d, sharing parameters and buffers, keeping flags', function()
    local inner = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, { momentum = false, eps = 1e-3 }))
    local model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.ReLU(), nn.InstanceNorm2d(3),
      nn.BatchNorm3d(3, { affine = false }), inner)
    inner:eval()
    model[2].weight.requires_grad = false
    local old = { model[2], model[5], inner[2] }
    local keys = {}
    for k in pairs(model:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    local conv = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert.are.equal(model, conv)
    for i, new in ipairs { model[2], model[5], inner[2] } do
      assert.are.equal('SyncBatchNorm', new:_get_name())
      assert.are_not.equal(old[i], new)
      assert.are.equal(old[i].weight, new.weight)
      assert.are.equal(old[i].bias, new.bias)
      assert.are.equal(old[i].running_mean, new.running_mean)
      assert.are.equal(old[i].running_var, new.running_var)
      assert.are.equal(old[i].num_batches_tracked, new.num_batches_tracked)
      assert.are.equal(old[i].training, new.training)
      assert.are.equal(old[i].eps, new.eps)
      assert.are.equal(old[i].momentum, new.momentum)
      assert.are.equal(old[i].affine, new.affine)
    end
    assert.is_false(model[2].weight.requires_grad)
    assert.is_true(model[2].training)
    assert.is_false(inner[2].training)
    assert.is_nil(inner[2].momentum)
    assert.are.equal('InstanceNorm2d', model[4]:_get_name())
    local after = {}
    for k in pairs(model:state_dict()) do after[#after + 1] = k end
    table.sort(after)
    assert.are.same(keys, after)
    -- a BatchNorm given alone comes back replaced; process_group is checked
    local bn = nn.BatchNorm1d(2)
    local sbn = nn.SyncBatchNorm.convert_sync_batchnorm(bn, { process_group = torch.distributed.group.WORLD })
    assert.are.equal('SyncBatchNorm', sbn:_get_name())
    assert.are.equal(torch.distributed.group.WORLD, sbn.process_group)
    assert.has_error(function() nn.SyncBatchNorm.convert_sync_batchnorm(bn, { process_group = 1 }) end)
  end)
end)

-- ---- under mpirun ----
-- a rank's RESULT lines as {name = {numbers}}
local function parse(lines, out)
  local res = {}
  for _, l in ipairs(lines) do
    local k, v = l:match('^RESULT (%S+) ?(.*)$')
    if k then
      local vals = {}
      for n in v:gmatch('%S+') do vals[#vals + 1] = tonumber(n) end
      res[k] = vals
    end
  end
  assert(next(res), 'a rank wrote no results:\n' .. out)
  return res
end

local function close(want, got, what)
  want = want:double():reshape(-1):totable()
  assert(#want == #got, string.format('%s: %d values, want %d', what, #got, #want))
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) < TOL, string.format('%s[%d]: %.17g, want %.17g', what, i, got[i], want[i]))
  end
end

-- per-channel mean and biased variance of X (N, C, ...) by plain-Lua loops, and each value's channel
local function lua_stats(X)
  local C, vals = X.shape[2], X:reshape(-1):totable()
  local S = #vals // (X.shape[1] * C)
  local function chan(i) return ((i - 1) // S) % C + 1 end
  local sum, n = {}, {}
  for c = 1, C do sum[c], n[c] = 0, 0 end
  for i, v in ipairs(vals) do sum[chan(i)], n[chan(i)] = sum[chan(i)] + v, n[chan(i)] + 1 end
  local mean, var = {}, {}
  for c = 1, C do mean[c], var[c] = sum[c] / n[c], 0 end
  for i, v in ipairs(vals) do var[chan(i)] = var[chan(i)] + (v - mean[chan(i)]) ^ 2 end
  for c = 1, C do var[c] = var[c] / n[c] end
  return mean, var, n[1], vals, chan
end

local CASES = { { 2, { 3, 4 } }, { 3, { 2, 3, 2 } }, { 3, { 0, 4, 3 } } }
local BN = { [2] = nn.BatchNorm1d, [3] = nn.BatchNorm1d, [4] = nn.BatchNorm2d, [5] = nn.BatchNorm3d }

for _, case in ipairs(CASES) do
  local np, sizes = case[1], case[2]
  describe(string.format('nn.SyncBatchNorm (MPI, %d ranks, slices %s)', np, table.concat(sizes, ', ')), function()
    local res, N = nil, 0
    for _, s in ipairs(sizes) do N = N + s end
    local function results()
      if res then return res end
      local ranks, out = MPI.mpi_job(np, 'spec/support/dist_sync_bn.lua', table.concat(sizes, ','),
        '-x LUTORCH_DDP_OVERLAP=1')
      res = {}
      for r = 0, np - 1 do res[r] = parse(ranks[r], out) end
      return res
    end
    -- each rank's first row and rows
    local function each_rank(fn)
      local first = 1
      for r = 0, np - 1 do
        fn(results()[r], r, first, sizes[r + 1])
        first = first + sizes[r + 1]
      end
    end

    for nd = 2, 5 do
      local tag = nd .. 'd'
      -- what dist_sync_bn.lua draws, and plain BatchNorm on the whole batch
      local function reference()
        local shape = { N, 3, 4, 2, 2 }
        if nd == 3 then shape = { N, 3, 4 } elseif nd == 4 then shape = { N, 3, 2, 3 }
        elseif nd == 5 then shape = { N, 3, 2, 2, 2 } else shape = { N, 3 } end
        torch.manual_seed(nd - 1)
        local X = torch.randn(shape, f64) * 2 + 0.5
        local G = torch.randn(shape, f64)
        local bn = set_affine(BN[nd](3, { momentum = 0.3 }):double())
        local x = X:clone():requires_grad_()
        local y = bn(x)
        ;(y * G):sum():backward()
        return X, G, bn, y:detach(), x.grad
      end

      mpi_it(tag .. ': each rank gives the rows of one process on the whole batch (output and grad_input)', function()
        local _, _, _, y, gx = reference()
        each_rank(function(x, r, first, rows)
          close(y:narrow(1, first, rows), x[tag .. '_out'], 'rank ' .. r .. ' output')
          close(gx:narrow(1, first, rows), x[tag .. '_grad_input'], 'rank ' .. r .. ' grad_input')
        end)
      end)

      mpi_it(tag .. ": weight.grad and bias.grad are the rank's own part, which add up to the whole batch's", function()
        local X, G, bn = reference()
        local mean, var, _, xs, chan = lua_stats(X)
        local gs = G:reshape(-1):totable()
        local per_row = #xs // N
        local sum_w, sum_b = torch.zeros(3, f64), torch.zeros(3, f64)
        each_rank(function(x, r, first, rows)
          local gw, gb = { 0, 0, 0 }, { 0, 0, 0 }
          for i = (first - 1) * per_row + 1, (first - 1 + rows) * per_row do
            local c = chan(i)
            gw[c] = gw[c] + gs[i] * (xs[i] - mean[c]) / math.sqrt(var[c] + 1e-5)
            gb[c] = gb[c] + gs[i]
          end
          close(torch.tensor(gw, f64), x[tag .. '_grad_weight'], 'rank ' .. r .. ' weight.grad')
          close(torch.tensor(gb, f64), x[tag .. '_grad_bias'], 'rank ' .. r .. ' bias.grad')
          sum_w:add_(torch.tensor(x[tag .. '_grad_weight'], f64))
          sum_b:add_(torch.tensor(x[tag .. '_grad_bias'], f64))
        end)
        close(bn.weight.grad, sum_w:totable(), 'the ranks\' weight.grad summed')
        close(bn.bias.grad, sum_b:totable(), 'the ranks\' bias.grad summed')
      end)

      mpi_it(tag .. ': every rank updates the running statistics with the global batch; eval mode uses them', function()
        local X, _, bn = reference()
        local mean, var, n = lua_stats(X)
        local rm, rv = {}, {}
        for c = 1, 3 do
          rm[c] = 0.3 * mean[c]
          rv[c] = 0.7 + 0.3 * var[c] * n / (n - 1)
        end
        bn:eval()
        local ye = bn(X)
        each_rank(function(x, r, first, rows)
          close(torch.tensor(rm, f64), x[tag .. '_running_mean'], 'rank ' .. r .. ' running_mean')
          close(torch.tensor(rv, f64), x[tag .. '_running_var'], 'rank ' .. r .. ' running_var')
          close(bn.running_mean, x[tag .. '_running_mean'], 'rank ' .. r .. ' running_mean (BatchNorm)')
          close(bn.running_var, x[tag .. '_running_var'], 'rank ' .. r .. ' running_var (BatchNorm)')
          assert.are.same({ 1 }, x[tag .. '_batches'])
          close(ye:narrow(1, first, rows), x[tag .. '_eval_out'], 'rank ' .. r .. ' eval output')
        end)
      end)
    end

    mpi_it('under DDP (converted model, buckets overlapped with backward), the averaged gradients are the whole batch\'s over the ranks', function()
      torch.manual_seed(3)
      local X = torch.randn({ N, 3, 2, 2 }, f64)
      local model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3), nn.ReLU(), nn.Conv2d(3, 2, 1),
        nn.BatchNorm2d(2)):double()
      model(X):pow(2):sum():backward()
      each_rank(function(x, r)
        for i, p in ipairs(model:parameters()) do
          close(p.grad / np, x['ddp_grad' .. i], 'rank ' .. r .. ' DDP grad of parameter ' .. i)
        end
      end)
    end)
  end)
end
