-- Run by spec/distributed_p2p_spec.lua under mpirun (2 and 3 ranks): point-to-point transfers, the
-- rooted collectives, all_to_all, the object collectives, groups of some of the ranks, and bad calls,
-- each rank's data made from its rank so that every expected value is computed here, with plain Lua,
-- from the sender's rank. Writes "RESULT ok <case>" or "RESULT fail <case> <why>" lines, then
-- "RESULT checks <n>", to arg[1]/rank<r>.txt.
local torch = require 'torch'
local dist = torch.distributed
local Op = dist.ReduceOp

dist.init_process_group { backend = 'mpi', timeout = 20 }
local rank, R = dist.get_rank(), dist.get_world_size()
local lines, checks = {}, 0

local function report(ok, case, why)
  checks = checks + 1
  lines[#lines + 1] = ok and ('RESULT ok ' .. case) or string.format('RESULT fail %s %s', case, tostring(why or ''))
end

local function check_error(case, pattern, fn)
  local ok, err = pcall(fn)
  report(not ok and tostring(err):find(pattern, 1, true) ~= nil, case, ok and 'no error' or tostring(err))
end

local dtypes = { 'float32', 'float64', 'float16', 'bfloat16', 'int64', 'int32', 'int16', 'int8', 'uint8', 'bool' }
local ROWS, COLS = 3, 4

-- what rank r holds at (i, j) (1-based) for the use salt: small integers, exact in every dtype
local function value(dt, r, i, j, salt)
  local v = (r + 1) * 7 + i * 3 + j + salt
  if dt == 'bool' then return v % 2 == 0 end
  return v % 60
end

-- a [ROWS, COLS] tensor of rank r's values; transposed: a view of a [COLS, ROWS] one (not contiguous)
local function make(dt, r, salt, transposed)
  local rows = {}
  if transposed then
    for j = 1, COLS do
      rows[j] = {}
      for i = 1, ROWS do rows[j][i] = value(dt, r, i, j, salt) end
    end
    return torch.tensor(rows, { dtype = torch[dt] }):t()
  end
  for i = 1, ROWS do
    rows[i] = {}
    for j = 1, COLS do rows[i][j] = value(dt, r, i, j, salt) end
  end
  return torch.tensor(rows, { dtype = torch[dt] })
end

-- an empty [ROWS, COLS] tensor to receive into (a transposed view when transposed)
local function blank(dt, transposed)
  if transposed then return torch.zeros({ COLS, ROWS }, { dtype = torch[dt] }):t() end
  return torch.zeros({ ROWS, COLS }, { dtype = torch[dt] })
end

local function same(dt, g, w)
  if dt == 'bool' then return g == w end
  local tol = dt == 'bfloat16' and 1e-2 or dt == 'float16' and 2e-3 or 1e-6
  return math.abs(g - w) <= tol * math.max(1, math.abs(w))
end

-- t (of shape [ROWS, COLS]) against want(i, j)
local function compare(case, dt, t, want)
  if t == nil then return report(false, case, 'no tensor') end
  if tostring(t.dtype) ~= 'torch.' .. dt then return report(false, case, 'dtype ' .. tostring(t.dtype)) end
  local tab = t:totable()
  for i = 1, ROWS do
    for j = 1, COLS do
      if not same(dt, tab[i][j], want(i, j)) then
        return report(false, case, string.format('at (%d,%d): got %s, want %s', i, j, tostring(tab[i][j]), tostring(want(i, j))))
      end
    end
  end
  report(true, case)
end

local reduce = require('spec.support.dist_reduce')

local nxt, prev = (rank + 1) % R, (rank - 1) % R

-- ---- point to point on every dtype and layout: a ring (isend to the next, recv from the previous)
for _, dt in ipairs(dtypes) do
  for _, tr in ipairs { false, true } do
    local tag = dt .. (tr and '_noncontig' or '')
    local w = dist.isend(make(dt, rank, 1, tr), nxt, { tag = 5 })
    local got = blank(dt, tr)
    local from = dist.recv(got, prev, { tag = 5 })
    local ok = w:wait()
    report(ok == true and from == prev, 'ring_sender_' .. tag, tostring(from))
    compare('ring_' .. tag, dt, got, function(i, j) return value(dt, prev, i, j, 1) end)
  end
end

-- blocking send / recv between ranks 0 and 1, with tags received in the other order than sent
if rank == 0 then
  local a, b = dist.isend(torch.full({ 5 }, 11.5), 1, nil, 1), dist.isend(torch.full({ 5 }, 22.5), 1, nil, 2)
  a:wait()
  b:wait()
  dist.send(torch.arange(6, { dtype = torch.int64 }):view(2, 3):t(), 1, { tag = 3 })
elseif rank == 1 then
  local x2, x1 = torch.zeros(5), torch.zeros(5)
  dist.recv(x2, 0, { tag = 2 })
  dist.recv(x1, 0, nil, 1)
  report(x2:totable()[5] == 22.5 and x1:totable()[1] == 11.5 and x2:totable()[1] == 22.5, 'tags_out_of_order',
    tostring(x1[1]) .. ' ' .. tostring(x2[1]))
  local y = torch.zeros({ 3, 2 }, { dtype = torch.int64 })
  dist.recv(y, 0, { tag = 3 })
  report(table.concat(y:contiguous():view(-1):totable(), ' ') == '0 3 1 4 2 5', 'send_noncontig_int64',
    table.concat(y:contiguous():view(-1):totable(), ' '))
end

-- any source: rank 0 receives one message from each other rank, sent as 100 * sender
if rank == 0 then
  local seen, ok = {}, true
  for _ = 1, R - 1 do
    local t = torch.zeros(2)
    local from = dist.recv(t, nil, { tag = 4 })
    ok = ok and t:totable()[2] == 100 * from and not seen[from] and from >= 1 and from < R
    seen[from] = true
  end
  report(ok, 'recv_any_source')
else
  dist.send(torch.full({ 2 }, 100.0 * rank), 0, { tag = 4 })
end

-- irecv: not completed before its sender sent (the sender waits for the barrier), completed after wait
if rank == 1 then
  local t = torch.zeros(3, { dtype = torch.int32 })
  local w = dist.irecv(t, 0, { tag = 6 })
  local before = w:is_completed()
  dist.barrier()
  local ok, extra = w:wait()
  report(before == false and ok == true and extra == nil and w:is_completed() == true
    and table.concat(t:totable(), ' ') == '7 8 9', 'irecv_is_completed', tostring(before) .. ' ' .. tostring(t))
  check_error('work_waited_twice', 'waited for already', function() w:wait() end)
else
  dist.barrier()
  if rank == 0 then dist.send(torch.tensor({ 7, 8, 9 }, { dtype = torch.int32 }), 1, { tag = 6 }) end
end

-- a large message (past MPI's eager limit), both ways between 0 and 1
if rank <= 1 then
  local n = 200000
  local w = dist.isend(torch.arange(n, { dtype = torch.float64 }) + rank, 1 - rank, { tag = 8 })
  local t = torch.zeros(n, { dtype = torch.float64 })
  dist.recv(t, 1 - rank, { tag = 8 })
  w:wait()
  report(t[1] == 1 - rank and t[n] == n - 1 + (1 - rank), 'large_message')
end

-- ---- reduce to the last rank: its t is op over the ranks; the others' t is left as it was
for _, dt in ipairs(dtypes) do
  for _, tr in ipairs { false, true } do
    local tag = dt .. (tr and '_noncontig' or '')
    local ops = dt == 'bool' and { { 'MAX', Op.MAX }, { 'MIN', Op.MIN } }
      or dt:match('float') and { { 'SUM', Op.SUM }, { 'MIN', Op.MIN }, { 'AVG', Op.AVG } }
      or { { 'SUM', Op.SUM }, { 'MAX', Op.MAX } }
    for _, no in ipairs(ops) do
      local t = make(dt, rank, 2, tr)
      local back = dist.reduce(t, R - 1, no[2])
      compare(string.format('reduce_%s_%s', no[1], tag), dt, back, function(i, j)
        if rank ~= R - 1 then return value(dt, rank, i, j, 2) end
        local vals = {}
        for r = 0, R - 1 do vals[#vals + 1] = value(dt, r, i, j, 2) end
        return reduce(dt, no[2], vals)
      end)
    end
  end
end

-- ---- gather to rank 1, scatter from rank 0
for _, dt in ipairs(dtypes) do
  for _, tr in ipairs { false, true } do
    local tag = dt .. (tr and '_noncontig' or '')
    local list
    if rank == 1 then
      list = {}
      for k = 1, R do list[k] = blank(dt, tr) end
    end
    dist.gather(make(dt, rank, 3, tr), { gather_list = list, dst = 1 })
    if rank == 1 then
      for k = 0, R - 1 do
        compare(string.format('gather_%s_from_%d', tag, k), dt, list[k + 1], function(i, j) return value(dt, k, i, j, 3) end)
      end
    end
    local ins
    if rank == 0 then
      ins = {}
      for k = 0, R - 1 do ins[k + 1] = make(dt, k, 4 + k, tr) end
    end
    local out = dist.scatter(blank(dt, tr), ins, 0)
    compare('scatter_' .. tag, dt, out, function(i, j) return value(dt, rank, i, j, 4 + rank) end)
  end
end

-- ---- all_to_all: rank r sends rank k r + k + 1 elements of 100 r + k
for _, dt in ipairs { 'float32', 'int64', 'uint8' } do
  local ins, outs = {}, {}
  for k = 0, R - 1 do
    ins[k + 1] = torch.full({ rank + k + 1 }, (100 * rank + k) % 250, { dtype = torch[dt] })
    outs[k + 1] = torch.zeros({ k + rank + 1 }, { dtype = torch[dt] })
  end
  dist.all_to_all(outs, ins)
  local ok, why = true, ''
  for k = 0, R - 1 do
    local got = outs[k + 1]:totable()
    for e = 1, k + rank + 1 do
      if got[e] ~= (100 * k + rank) % 250 then ok, why = false, string.format('from %d: %s', k, tostring(got[e])) end
    end
  end
  report(ok, 'all_to_all_' .. dt, why)
end

-- all_to_all_single: equal pieces, and uneven ones of [n, 2] rows (row e of the piece for rank k from
-- rank r holds 1000 r + 10 k + e, and its negation)
do
  local input = torch.arange(2 * R, { dtype = torch.float64 }) + 100 * rank
  local out = torch.zeros(2 * R, { dtype = torch.float64 })
  local back = dist.all_to_all_single(out, input)
  local got, ok = out:totable(), back == out
  for k = 0, R - 1 do
    for e = 1, 2 do ok = ok and got[2 * k + e] == 100 * k + 2 * rank + e - 1 end
  end
  report(ok, 'all_to_all_single_equal', table.concat(got, ' '))
  local rows, insz, outsz = {}, {}, {}
  for k = 0, R - 1 do
    insz[k + 1], outsz[k + 1] = rank + k + 1, k + rank + 1
    for e = 1, rank + k + 1 do rows[#rows + 1] = { 1000 * rank + 10 * k + e, -(1000 * rank + 10 * k + e) } end
  end
  local n = 0
  for k = 1, R do n = n + outsz[k] end
  local o = torch.zeros({ 2, n }, { dtype = torch.int32 }):t() -- not contiguous
  dist.all_to_all_single(o, torch.tensor(rows, { dtype = torch.int32 }), { output_split_sizes = outsz, input_split_sizes = insz })
  local tab, at = o:totable(), 0
  ok = true
  for k = 0, R - 1 do
    for e = 1, k + rank + 1 do
      at = at + 1
      local want = 1000 * k + 10 * rank + e
      ok = ok and tab[at][1] == want and tab[at][2] == -want
    end
  end
  report(ok, 'all_to_all_single_splits')
end

-- ---- objects: nested tables with tensors, strings, numbers and booleans
local function object_of(r)
  return { rank = r, name = 'rank' .. r, ratio = r / 4, even = r % 2 == 0,
    t = torch.full({ 2, 3 }, r + 0.5, { dtype = torch.float64 }), ints = torch.arange(r + 1, { dtype = torch.int16 }),
    nested = { list = { r, r * 2, 'x' .. r }, [10] = { deep = { r } } } }
end

local function object_ok(o, r)
  return type(o) == 'table' and o.rank == r and math.type(o.rank) == 'integer' and o.name == 'rank' .. r
    and o.ratio == r / 4 and o.even == (r % 2 == 0)
    and torch.is_tensor(o.t) and tostring(o.t.dtype) == 'torch.float64' and table.concat(o.t:size(), 'x') == '2x3'
    and o.t:min():item() == r + 0.5 and o.t:max():item() == r + 0.5
    and tostring(o.ints.dtype) == 'torch.int16' and table.concat(o.ints:totable(), ' ') == table.concat((function()
      local l = {}
      for e = 0, r do l[#l + 1] = e end
      return l
    end)(), ' ')
    and o.nested.list[1] == r and o.nested.list[2] == r * 2 and o.nested.list[3] == 'x' .. r
    and o.nested[10].deep[1] == r
end

do
  local list = {}
  dist.all_gather_object(list, object_of(rank))
  local ok = #list == R
  for k = 0, R - 1 do ok = ok and object_ok(list[k + 1], k) end
  report(ok, 'all_gather_object')

  local bl = rank == 1 and { 'hello', object_of(7), 42, 2.5, false } or {}
  dist.broadcast_object_list(bl, 1)
  report(#bl == 5 and bl[1] == 'hello' and object_ok(bl[2], 7) and bl[3] == 42 and bl[4] == 2.5 and bl[5] == false,
    'broadcast_object_list')

  local gl = rank == 0 and {} or nil
  dist.gather_object({ who = rank, data = string.rep('ab', 1000 * (rank + 1)) }, gl, 0)
  if rank == 0 then
    ok = #gl == R
    for k = 0, R - 1 do ok = ok and gl[k + 1].who == k and gl[k + 1].data == string.rep('ab', 1000 * (k + 1)) end
    report(ok, 'gather_object')
  end

  local out = {}
  local inl
  if rank == R - 1 then
    inl = {}
    for k = 0, R - 1 do inl[k + 1] = object_of(10 + k) end
  end
  dist.scatter_object_list(out, inl, R - 1)
  report(object_ok(out[1], 10 + rank), 'scatter_object_list')
end

-- ---- groups (3 ranks): {0, 2} (given as {2, 0}) and {1, 2}
if R == 3 then
  local g = dist.new_group({ 2, 0 })
  local g12 = dist.new_group({ 1, 2 }, { timeout = 10 })
  local member = rank ~= 1
  report(dist.get_rank(g) == (rank == 0 and 0 or rank == 2 and 1 or -1), 'group_get_rank', dist.get_rank(g))
  report(dist.get_world_size(g) == (member and 2 or -1), 'group_get_world_size', dist.get_world_size(g))
  report(dist.get_rank(g12) == rank - 1 and dist.get_world_size(g12) == (rank >= 1 and 2 or -1), 'group12_rank_size')
  -- all_reduce over {0, 2}: rank 1's tensor is left alone and nil returned
  for _, dt in ipairs { 'float32', 'int64', 'float16' } do
    local t = make(dt, rank, 5, true)
    local back = dist.all_reduce(t, Op.SUM, g)
    if member then
      compare('group_all_reduce_' .. dt, dt, back, function(i, j) return value(dt, 0, i, j, 5) + value(dt, 2, i, j, 5) end)
    else
      report(back == nil, 'group_all_reduce_nonmember_nil_' .. dt)
      compare('group_all_reduce_nonmember_' .. dt, dt, t, function(i, j) return value(dt, 1, i, j, 5) end)
    end
  end
  -- broadcast from global rank 2, in the options form
  local b = make('int32', rank, 6, false)
  dist.broadcast(b, { src = 2, group = g })
  compare('group_broadcast', 'int32', b, function(i, j) return value('int32', member and 2 or 1, i, j, 6) end)
  -- gather to global rank 2: its list holds the group's ranks 0 (global 0) and 1 (global 2)
  local list = rank == 2 and { blank('float64'), blank('float64') } or nil
  dist.gather(make('float64', rank, 7, false), list, 2, g)
  if rank == 2 then
    compare('group_gather_0', 'float64', list[1], function(i, j) return value('float64', 0, i, j, 7) end)
    compare('group_gather_1', 'float64', list[2], function(i, j) return value('float64', 2, i, j, 7) end)
  end
  -- scatter from global rank 0 over {0, 2}; reduce to global 1 over {1, 2}
  local sl = rank == 0 and { make('int8', 0, 8, false), make('int8', 2, 8, false) } or nil
  local so = blank('int8')
  dist.scatter(so, { scatter_list = sl, src = 0, group = g })
  if member then compare('group_scatter', 'int8', so, function(i, j) return value('int8', rank, i, j, 8) end) end
  local rt = make('float32', rank, 9, false)
  dist.reduce(rt, 1, Op.MAX, g12)
  compare('group_reduce', 'float32', rt, function(i, j)
    if rank == 1 then return math.max(value('float32', 1, i, j, 9), value('float32', 2, i, j, 9)) end
    return value('float32', rank, i, j, 9)
  end)
  -- reduce_scatter and all_gather over {1, 2}
  if rank >= 1 then
    local out = torch.zeros(2)
    dist.reduce_scatter(out, { torch.full({ 2 }, 10.0 * rank + 1), torch.full({ 2 }, 10.0 * rank + 2) }, Op.SUM, g12)
    report(out:totable()[1] == (11 + 21) + (rank - 1) * 2, 'group_reduce_scatter', tostring(out))
    local ag = { torch.zeros(1), torch.zeros(1) }
    dist.all_gather(ag, torch.full({ 1 }, rank * 3.0), g12)
    report(ag[1]:item() == 3 and ag[2]:item() == 6, 'group_all_gather')
  else
    report(dist.reduce_scatter(torch.zeros(2), {}, Op.SUM, g12) == nil, 'group_reduce_scatter_nonmember')
    report(dist.all_gather({}, torch.zeros(1), g12) == nil, 'group_all_gather_nonmember')
  end
  -- send / recv in g: global ranks in, the sender's global rank out
  if rank == 0 then
    dist.send(torch.full({ 3 }, 5.25), 2, { group = g, tag = 2 })
  elseif rank == 2 then
    local t = torch.zeros(3)
    local from = dist.recv(t, nil, { group = g, tag = 2 })
    report(from == 0 and t:totable()[3] == 5.25, 'group_recv_any_source_global_rank', tostring(from))
  end
  -- objects over {1, 2}
  local ol = {}
  dist.all_gather_object(ol, object_of(rank), g12)
  if rank >= 1 then
    report(#ol == 2 and object_ok(ol[1], 1) and object_ok(ol[2], 2), 'group_all_gather_object')
  else
    report(#ol == 0, 'group_all_gather_object_nonmember')
  end
  dist.barrier(g)
  -- DDP over {0, 2}: Linear(3, 1) without bias on x = rank + 1 averages weight's gradient over ranks 0
  -- and 2 only: (1 + 3) / 2; rank 1 is refused
  if member then
    torch.manual_seed(rank) -- different weights: DDP broadcasts global rank 0's
    local lin = torch.nn.Linear(3, 1, { bias = false })
    local w0 = rank == 0 and lin.weight:clone() or nil
    local ddp = torch.nn.DistributedDataParallel(lin, { process_group = g })
    local wl = {}
    dist.all_gather_object(wl, lin.weight:clone(), g)
    ddp(torch.full({ 1, 3 }, rank + 1.0)):sum():backward()
    report(table.concat(lin.weight.grad:view(-1):totable(), ' ') == '2.0 2.0 2.0' and torch.equal(wl[1], wl[2])
      and (rank ~= 0 or torch.equal(w0, wl[1])), 'group_ddp', tostring(lin.weight.grad))
  else
    check_error('group_ddp_nonmember', 'DistributedDataParallel: this rank is not a member of process_group',
      function() torch.nn.DistributedDataParallel(torch.nn.Linear(3, 1), { process_group = g }) end)
  end
  -- SyncBatchNorm over {1, 2}: one channel, rank 1 holds 1, 2 and rank 2 3, 4: mean 2.5, variance
  -- 1.25; rank 0, outside, normalises its own 5, 7 (mean 6, variance 1)
  do
    local bn = torch.nn.SyncBatchNorm(1, { process_group = g12, affine = false, track_running_stats = false })
    local x = rank == 0 and torch.tensor({ { 5.0 }, { 7.0 } }) or torch.tensor({ { 2.0 * rank - 1 }, { 2.0 * rank } })
    x.requires_grad = true
    local y = bn(x)
    local mean, var = rank == 0 and 6 or 2.5, rank == 0 and 1 or 1.25
    local ok = true
    for k, v in ipairs(x:detach():view(-1):totable()) do
      ok = ok and math.abs(y:detach():view(-1):totable()[k] - (v - mean) / math.sqrt(var + 1e-5)) < 1e-5
    end
    y:sum():backward() -- the sum of a normalised batch has a zero gradient
    report(ok and x.grad:abs():max():item() < 1e-5, 'group_sync_batchnorm', tostring(y))
  end
  -- a rank outside the group given as src / dst
  if member then
    check_error('group_rank_not_in_group', 'The global rank 1 is not part of the group', function()
      dist.broadcast(torch.zeros(1), 1, g)
    end)
  end
  -- a receive nobody sends times out with an error, not a hang (the group's timeout: 1 s)
  local quick = dist.new_group({ 0, 1, 2 }, { timeout = 1 })
  if rank == 0 then
    local t0 = os.time()
    check_error('recv_timeout', 'recv: timed out after 1 s on rank 0 waiting for rank 1 to send', function()
      dist.recv(torch.zeros(2), 1, { group = quick, tag = 77 })
    end)
    report(os.time() - t0 <= 4, 'recv_timeout_quick')
  end
  -- destroyed groups refuse
  dist.barrier()
  dist.destroy_process_group(g)
  check_error('group_destroyed', 'the process group was destroyed', function() dist.all_reduce(torch.zeros(1), Op.SUM, g) end)
  check_error('new_group_bad_rank', 'new_group: ranks[2] = 3 is not a rank of the default group [0, 2]', function()
    dist.new_group({ 0, 3 })
  end)
  check_error('new_group_twice', 'rank 1 is listed twice', function() dist.new_group({ 1, 1 }) end)
end

-- ---- bad calls: each either made by every rank (every rank fails before any transfer) or by the
-- ranks that fail only
local t4 = torch.zeros(4)
check_error('send_dst_out_of_range', 'send: Invalid rank ' .. R .. ', rank should be in the interval [0, ' .. (R - 1) .. ']',
  function() dist.send(t4, R) end)
check_error('recv_src_negative', 'recv: Invalid rank -1', function() dist.recv(t4, -1) end)
check_error('send_to_self', 'destination rank should not be the same as the rank of the current process',
  function() dist.send(t4, rank) end)
check_error('send_unknown_option', "send: unknown option 'bogus'", function() dist.send(t4, nxt, { bogus = 1 }) end)
check_error('reduce_dst_out_of_range', 'reduce: Invalid rank ' .. R, function() dist.reduce(t4, R) end)
check_error('gather_dst_out_of_range', 'gather: Invalid rank ' .. (R + 2), function() dist.gather(t4, nil, R + 2) end)
check_error('scatter_src_not_integer', 'scatter: src must be an integer rank, got 0.5', function() dist.scatter(t4, nil, 0.5) end)
check_error('reduce_bool_avg', 'reduce: ReduceOp.AVG is not supported for bool tensors',
  function() dist.reduce(torch.zeros(2, { dtype = torch.bool }), 0, Op.AVG) end)
if rank ~= 0 then
  check_error('gather_list_on_non_root', 'gather: Argument ``gather_list`` must NOT be specified on non-destination ranks.',
    function() dist.gather(t4, { torch.zeros(4), torch.zeros(4) }, 0) end)
  check_error('scatter_list_on_non_root', 'scatter: Argument ``scatter_list`` must NOT be specified on non-source ranks.',
    function() dist.scatter(t4, { scatter_list = { t4 }, src = 0 }) end)
  check_error('gather_object_list_on_non_root', 'must NOT be specified on non-destination ranks',
    function() dist.gather_object(1, {}, 0) end)
else
  check_error('gather_no_list_on_root', 'gather: Argument ``gather_list`` must be specified on destination rank.',
    function() dist.gather(t4, nil, 0) end)
  check_error('scatter_no_list_on_root', 'scatter: Argument ``scatter_list`` must be specified on source rank.',
    function() dist.scatter(t4, {}, 0) end)
  local wrong = {}
  for k = 1, R do wrong[k] = torch.zeros(4) end
  wrong[2] = torch.zeros(5)
  check_error('gather_list_wrong_shape', 'gather: gather_list[2] is a float32 tensor of shape [5], expected float32 of shape [4]',
    function() dist.gather(t4, wrong, 0) end)
  local mixed = {}
  for k = 1, R do mixed[k] = torch.zeros(4) end
  mixed[R] = torch.zeros(4, { dtype = torch.float64 })
  check_error('scatter_list_mixed_dtypes', string.format('scatter: scatter_list[%d] is a float64 tensor of shape [4], expected float32', R),
    function() dist.scatter(t4, mixed, 0) end)
  check_error('scatter_list_short', 'scatter: scatter_list must hold world_size (' .. R .. ') tensors, got 1',
    function() dist.scatter(t4, { t4 }, 0) end)
  check_error('scatter_object_list_short', 'scatter_object_input_list must be a table of ' .. R .. ' objects',
    function() dist.scatter_object_list({}, { 1 }, 0) end)
end
check_error('all_to_all_mixed_dtypes', 'all_to_all: input_tensor_list[2] is a int64 tensor, expected float32', function()
  local ins = { torch.zeros(1), torch.zeros(1, { dtype = torch.int64 }) }
  for k = 3, R do ins[k] = torch.zeros(1) end
  local outs = {}
  for k = 1, R do outs[k] = torch.zeros(1) end
  dist.all_to_all(outs, ins)
end)
check_error('all_to_all_single_bad_splits', 'all_to_all_single: input split sizes add up to ' .. (R + 1) .. ', not its ' .. (R + 2) .. ' rows',
  function()
    local s = {}
    for k = 1, R do s[k] = 1 end
    s[1] = 2
    local os_ = { R + 2 }
    for k = 2, R do os_[k] = 0 end
    dist.all_to_all_single(torch.zeros(R + 2), torch.zeros(R + 2), { input_split_sizes = s, output_split_sizes = os_ })
  end)
check_error('object_with_function', 'all_gather_object: cannot send a function', function()
  dist.all_gather_object({}, { f = print })
end)
-- all_to_all where rank 0 expects one element more from every rank: every rank fails, none hangs
do
  local ins, outs = {}, {}
  for k = 1, R do
    ins[k] = torch.zeros(2)
    outs[k] = torch.zeros(rank == 0 and 3 or 2)
  end
  check_error('all_to_all_size_mismatch', rank == 0 and 'all_to_all: rank 0 sends 2 elements to rank 0, which expects 3'
    or 'all_to_all: the ranks\' input and output sizes do not match', function() dist.all_to_all(outs, ins) end)
end
-- a receive into a tensor of the wrong size: a clear error, naming the sizes
if rank == 0 then
  dist.send(torch.ones(4), 1, { tag = 9 })
  dist.send(torch.ones(4), 1, { tag = 10 })
elseif rank == 1 then
  check_error('recv_too_small', 'recv: the message from rank 0 (tag 9) is larger than the tensor (12 bytes: 3 float32 elements)',
    function() dist.recv(torch.zeros(3), 0, { tag = 9 }) end)
  check_error('recv_too_large', 'recv: the message from rank 0 (tag 10) has 16 bytes, the tensor 20 (5 float32 elements)',
    function() dist.recv(torch.zeros(5), 0, { tag = 10 }) end)
end
-- still in step after all that
local s = torch.full({ 1 }, rank + 1)
dist.all_reduce(s)
report(s:item() == R * (R + 1) / 2, 'in_step_at_end')

lines[#lines + 1] = 'RESULT checks ' .. checks
local f = assert(io.open(string.format('%s/rank%d.txt', arg[1], rank), 'w'))
f:write(table.concat(lines, '\n'), '\n')
f:close()
dist.destroy_process_group()
