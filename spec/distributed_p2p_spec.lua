-- torch.distributed's point-to-point transfers (send, recv, isend, irecv), rooted collectives (reduce,
-- gather, scatter), all_to_all, the object collectives and groups of some of the ranks (new_group).
-- spec/support/dist_p2p.lua runs under mpirun with 2 and 3 ranks and writes, per rank, one line a
-- check (each against values computed there from the senders' ranks); this spec reads them. Without
-- mpirun (or a build without MPI) the MPI cases are pending.
local torch = require 'torch'
local dist = torch.distributed

local MPI = require 'spec.support.mpi'

local function mpi_it(name, fn)
  if MPI.HAVE_MPI then it(name, fn) else pending(MPI.NO_MPI_WHY .. ': ' .. name) end
end

-- the checks each rank makes: ring transfers, reduce, gather (on rank 1), scatter, all_to_all, objects,
-- groups (3 ranks), bad calls (some on one rank only)
local WANT = { [2] = { 138, 179 }, [3] = { 158, 218, 153 } }

for _, np in ipairs { 2, 3 } do
  describe(string.format('torch.distributed point to point, rooted collectives, objects (MPI, %d ranks)', np), function()
    local res, output
    -- {rank = {case = 'ok' | why}} of one run of the script
    local function results()
      if res then return res end
      local ranks, out = MPI.mpi_job(np, 'spec/support/dist_p2p.lua')
      output = out
      res = {}
      for r = 0, np - 1 do
        res[r] = { checks = nil, fails = {} }
        for _, l in ipairs(ranks[r]) do
          local case = l:match('^RESULT ok (%S+)')
          if case then res[r][case] = 'ok' end
          local fcase, why = l:match('^RESULT fail (%S+) ?(.*)$')
          if fcase then
            res[r][fcase] = why
            res[r].fails[#res[r].fails + 1] = l
          end
          res[r].checks = res[r].checks or tonumber(l:match('^RESULT checks (%d+)'))
        end
        assert(res[r].checks, 'rank ' .. r .. ' wrote no results:\n' .. out)
      end
      return res
    end
    -- every case named passed on the ranks given (all by default)
    local function passed(cases, ranks)
      local x = results()
      for _, r in ipairs(ranks or (function()
        local all = {}
        for k = 0, np - 1 do all[#all + 1] = k end
        return all
      end)()) do
        for _, c in ipairs(cases) do
          assert.are.equal('ok', x[r][c], string.format('rank %d, %s: %s', r, c, tostring(x[r][c])))
        end
      end
    end
    local dtypes = { 'float32', 'float64', 'float16', 'bfloat16', 'int64', 'int32', 'int16', 'int8', 'uint8', 'bool' }
    local function each_layout(prefix, suffix)
      local cases = {}
      for _, dt in ipairs(dtypes) do
        cases[#cases + 1] = prefix .. dt .. (suffix or '')
        cases[#cases + 1] = prefix .. dt .. '_noncontig' .. (suffix or '')
      end
      return cases
    end

    mpi_it('every rank passes all its checks, and makes all of them', function()
      local x = results()
      for r = 0, np - 1 do
        assert.are.same({}, x[r].fails)
        assert.are.equal(WANT[np][r + 1], x[r].checks, output)
      end
    end)
    mpi_it('isend / recv in a ring on every dtype, contiguous and not; the sender rank returned', function()
      passed(each_layout('ring_'))
      passed(each_layout('ring_sender_'))
    end)
    mpi_it('send / recv with tags received out of order, any source, irecv:is_completed, a large message', function()
      passed({ 'tags_out_of_order', 'send_noncontig_int64', 'irecv_is_completed', 'work_waited_twice' }, { 1 })
      passed({ 'recv_any_source' }, { 0 })
      passed({ 'large_message' }, { 0, 1 })
    end)
    mpi_it('reduce to the last rank (SUM, MIN, MAX, AVG by dtype); the other ranks keep their tensor', function()
      passed({ 'reduce_SUM_float32', 'reduce_AVG_float64_noncontig', 'reduce_MIN_bfloat16', 'reduce_MAX_int8_noncontig',
        'reduce_MAX_bool', 'reduce_MIN_bool_noncontig', 'reduce_SUM_uint8' })
    end)
    mpi_it('gather into rank 1 and scatter from rank 0 on every dtype, contiguous and not', function()
      local cases = {}
      for k = 0, np - 1 do
        for _, c in ipairs(each_layout('gather_', '_from_' .. k)) do cases[#cases + 1] = c end
      end
      passed(cases, { 1 })
      passed(each_layout('scatter_'))
    end)
    mpi_it('all_to_all with a size a pair of ranks, all_to_all_single equal and with split sizes', function()
      passed({ 'all_to_all_float32', 'all_to_all_int64', 'all_to_all_uint8', 'all_to_all_single_equal',
        'all_to_all_single_splits' })
    end)
    mpi_it('the object collectives carry nested tables of tensors, strings, numbers and booleans', function()
      passed({ 'all_gather_object', 'broadcast_object_list', 'scatter_object_list' })
      passed({ 'gather_object' }, { 0 })
    end)
    mpi_it('bad calls are clear errors, and the ranks are still in step after them', function()
      passed({ 'send_dst_out_of_range', 'recv_src_negative', 'send_to_self', 'send_unknown_option',
        'reduce_dst_out_of_range', 'gather_dst_out_of_range', 'scatter_src_not_integer', 'reduce_bool_avg',
        'all_to_all_mixed_dtypes', 'all_to_all_single_bad_splits', 'object_with_function', 'all_to_all_size_mismatch',
        'in_step_at_end' })
      passed({ 'gather_no_list_on_root', 'scatter_no_list_on_root', 'gather_list_wrong_shape', 'scatter_list_mixed_dtypes',
        'scatter_list_short', 'scatter_object_list_short' }, { 0 })
      passed({ 'gather_list_on_non_root', 'scatter_list_on_non_root', 'gather_object_list_on_non_root' }, { 1 })
      passed({ 'recv_too_small', 'recv_too_large' }, { 1 })
    end)
    if np == 3 then
      mpi_it('groups of two of the three ranks: ranks, collectives, point to point, objects, non-members', function()
        passed({ 'group_get_rank', 'group_get_world_size', 'group12_rank_size', 'group_broadcast', 'group_reduce',
          'group_destroyed', 'new_group_bad_rank', 'new_group_twice' })
        passed({ 'group_all_reduce_float32', 'group_all_reduce_int64', 'group_all_reduce_float16', 'group_scatter',
          'group_rank_not_in_group' }, { 0, 2 })
        passed({ 'group_all_reduce_nonmember_nil_float32', 'group_all_reduce_nonmember_float16' }, { 1 })
        passed({ 'group_gather_0', 'group_gather_1', 'group_recv_any_source_global_rank' }, { 2 })
        passed({ 'group_reduce_scatter', 'group_all_gather', 'group_all_gather_object' }, { 1, 2 })
        passed({ 'group_reduce_scatter_nonmember', 'group_all_gather_nonmember', 'group_all_gather_object_nonmember' }, { 0 })
      end)
      mpi_it('DistributedDataParallel and SyncBatchNorm over a group (process_group); a rank not in it refused or local', function()
        passed({ 'group_ddp' }, { 0, 2 })
        passed({ 'group_ddp_nonmember' }, { 1 })
        passed({ 'group_sync_batchnorm' })
      end)
      mpi_it("a receive nobody sends fails after the group's timeout (1 s), without a hang", function()
        passed({ 'recv_timeout', 'recv_timeout_quick' }, { 0 })
      end)
    end
  end)
end

describe('the new torch.distributed functions without a process group', function()
  it('refuse use before init', function()
    local t = torch.zeros(2)
    for name, f in pairs {
      send = function() return dist.send(t, 1) end, recv = function() return dist.recv(t) end,
      isend = function() return dist.isend(t, 1) end, irecv = function() return dist.irecv(t, 0) end,
      reduce = function() return dist.reduce(t, 0) end, gather = function() return dist.gather(t) end,
      scatter = function() return dist.scatter(t) end, all_to_all = function() return dist.all_to_all({}, {}) end,
      all_to_all_single = function() return dist.all_to_all_single(t, t) end,
      all_gather_object = function() return dist.all_gather_object({}, 1) end,
      broadcast_object_list = function() return dist.broadcast_object_list({}, 0) end,
      gather_object = function() return dist.gather_object(1) end,
      scatter_object_list = function() return dist.scatter_object_list({}, {}) end,
      new_group = function() return dist.new_group({ 0 }) end,
    } do
      local ok, err = pcall(f)
      assert.is_false(ok, name)
      assert.truthy(tostring(err):find(name .. ': ' .. dist._NOT_INIT, 1, true), err)
    end
  end)
  it('group.WORLD prints as PyTorch names it and is a ProcessGroup', function()
    assert.are.equal('torch.distributed.group.WORLD', tostring(dist.group.WORLD))
    assert.are.equal(dist.ProcessGroup, getmetatable(dist.group.WORLD))
  end)
end)
