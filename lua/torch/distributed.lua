-- torch.distributed: one process per rank, started by MPI's launcher, and collectives between them
-- (PyTorch's torch.distributed). Ranks are 0-based, as MPI's and PyTorch's.
--   mpirun -np 2 build/lutorch train.lua
--   local dist = torch.distributed
--   dist.init_process_group{backend = 'mpi'}
--   dist.all_reduce(t, dist.ReduceOp.SUM)
-- Backends: 'mpi' (CPU tensors; the ranks of the MPI job) and 'nccl' (CUDA tensors, in a CUDA build
-- with NCCL; the ranks still come from MPI, which carries NCCL's unique id). Every collective gives
-- up with an error after `timeout` seconds (default 1800) instead of hanging when a rank died or
-- hangs; the job is then aborted when the process exits.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

local C = torch._dist
local dist = {}

dist.ReduceOp = C.ReduceOp

-- ProcessGroup: group.WORLD (the default group: every rank of the job), or a group of new_group,
-- which holds its members' ranks in the default group (ascending: its own ranks follow them), the
-- index of each, and on a member the C group (_c); nil there on a rank not in it.
local PG = { __name = 'torch.distributed.ProcessGroup' }
PG.__index = PG
function PG.__tostring(g)
  if g._world then return 'torch.distributed.group.WORLD' end
  return 'torch.distributed.ProcessGroup(ranks = {' .. table.concat(g.ranks, ', ') .. '})'
end
dist.ProcessGroup = PG
dist.group = { WORLD = setmetatable({ _world = true }, PG) }
dist.GroupMember = { WORLD = dist.group.WORLD, NON_GROUP_MEMBER = -100 }

local NOT_INIT = 'Default process group has not been initialized, please make sure to call init_process_group.'

local function need_init(op)
  if not C.is_initialized() then error(op .. ': ' .. NOT_INIT, 3) end
end

local function is_group(v) return getmetatable(v) == PG end

-- the group argument of op: the C group and the ProcessGroup for a group of new_group, nothing for
-- the default one, false on a rank not in the group (the call then does nothing and returns nil, as
-- PyTorch's, which warns)
local function group_of(op, g, level)
  level = (level or 2) + 1
  if not C.is_initialized() then error(op .. ': ' .. NOT_INIT, level) end
  if g == nil or rawequal(g, dist.group.WORLD) then return nil, nil end
  if not is_group(g) then
    error(string.format('%s: group must be a ProcessGroup (torch.distributed.new_group or group.WORLD), got %s', op,
      type(g)), level)
  end
  if g._destroyed then error(op .. ': the process group was destroyed (destroy_process_group)', level) end
  if g._c == nil then return false, g end
  return g._c, g
end

-- the rank in group pg (nil: the default group) of global rank r; what names the argument
local function group_rank(op, pg, r, what, level)
  level = (level or 2) + 1
  r = as_int(r)
  if math.type(r) ~= 'integer' then
    error(string.format('%s: %s must be an integer rank, got %s', op, what, tostring(r)), level)
  end
  if pg == nil then return r end
  local k = pg._index[r]
  if k == nil then error(string.format('%s: The global rank %d is not part of the group %s', op, r, tostring(pg)), level) end
  return k
end

-- the global rank of rank k of group pg (nil: the default group)
local function global_rank(pg, k)
  if pg == nil then return k end
  return pg.ranks[k + 1]
end

-- a trailing options table: a plain table without positional entries (an empty one too)
local function is_opts(v)
  return type(v) == 'table' and getmetatable(v) == nil and rawget(v, 1) == nil
end

-- PyTorch's arguments of op after its first ones: positionally in PyTorch's order (names), or as a
-- trailing options table of those names; a table of them, by name (errors at `level`: 3, the
-- caller's caller)
local function kwargs_at(level, op, names, ...)
  local n = select('#', ...)
  local args = { ... }
  while n > 0 and args[n] == nil do n = n - 1 end
  local o = {}
  if n > 0 and is_opts(args[n]) then
    local known = {}
    for _, k in ipairs(names) do known[k] = true end
    for k, v in pairs(args[n]) do
      if not known[k] then error(string.format("%s: unknown option '%s'", op, tostring(k)), level) end
      o[k] = v
    end
    n = n - 1
  end
  if n > #names then error(string.format('%s: too many arguments (%d after the first)', op, n), level) end
  for i = 1, n do
    if args[i] ~= nil then
      if o[names[i]] ~= nil then error(string.format("%s: '%s' is given twice (positionally and as an option)", op, names[i]), level) end
      o[names[i]] = args[i]
    end
  end
  return o
end
local function kwargs(op, names, ...) return kwargs_at(3, op, names, ...) end


local KNOWN = { mpi = true, nccl = true, gloo = true, ucc = true }

local function env_int(name)
  local v = os.getenv(name)
  if v == nil then return nil end
  local n = math.tointeger(tonumber(v))
  if n == nil then error(string.format('init_process_group: environment variable %s is not an integer: %q', name, v), 4) end
  return n
end

-- init_process_group{backend = 'mpi' | 'nccl', init_method = 'env://', timeout = 1800, rank, world_size}
function dist.init_process_group(opts)
  opts = opts or {}
  if type(opts) == 'string' then opts = { backend = opts } end
  if type(opts) ~= 'table' then error('init_process_group: expected an options table, got ' .. type(opts), 2) end
  for k in pairs(opts) do
    if not ({ backend = true, init_method = true, timeout = true, rank = true, world_size = true })[k] then
      error(string.format("init_process_group: unknown option '%s'", tostring(k)), 2)
    end
  end
  if C.is_initialized() then error('trying to initialize the default process group twice!', 2) end
  local backend = opts.backend
  if backend == nil then backend = (torch.cuda.is_available() and C.available('nccl')) and 'nccl' or 'mpi' end
  if type(backend) ~= 'string' then error('init_process_group: backend must be a string, got ' .. type(backend), 2) end
  local b = backend:lower()
  if not KNOWN[b] then error(string.format("Invalid backend: '%s'", backend), 2) end
  if b == 'gloo' or b == 'ucc' then
    error(string.format("init_process_group: backend '%s' is not available in this build (use 'mpi' or 'nccl')", b), 2)
  end
  local im = opts.init_method
  if im ~= nil and im ~= 'env://' then
    error(string.format("init_process_group: init_method '%s' is not supported: the ranks come from MPI "
      .. "(start them with mpirun); use 'env://'", tostring(im)), 2)
  end
  local timeout = opts.timeout or 1800
  if type(timeout) ~= 'number' or not (timeout > 0) then
    error('init_process_group: timeout must be a positive number of seconds, got ' .. tostring(timeout), 2)
  end
  if b == 'nccl' and not C.available('nccl') then error("Distributed package doesn't have NCCL built in", 2) end
  -- without the MPI plugin, C.init says why: not built, or not found (and where it looked)
  -- RANK / WORLD_SIZE (as torchrun sets them) must agree with the MPI job
  local want_rank = opts.rank or env_int('RANK')
  local want_size = opts.world_size or env_int('WORLD_SIZE')
  local device = 0
  if b == 'nccl' then
    device = env_int('LOCAL_RANK') or env_int('OMPI_COMM_WORLD_LOCAL_RANK') or 0
    local count = torch.cuda.device_count()
    if count > 0 then device = device % count end
  end
  local rank, size = C.init(b, timeout, device)
  if (want_size ~= nil and want_size ~= -1 and want_size ~= size) or (want_rank ~= nil and want_rank ~= -1 and want_rank ~= rank) then
    C.destroy()
    error(string.format('init_process_group: rank %s of world_size %s was asked for (options or RANK/WORLD_SIZE), '
      .. 'but MPI started this process as rank %d of %d: start the ranks with mpirun -np %s',
      tostring(want_rank), tostring(want_size), rank, size, tostring(want_size)), 2)
  end
end

function dist.is_initialized() return C.is_initialized() end
function dist.is_available() return C.available('mpi') or C.available('nccl') end
function dist.is_mpi_available() return C.available('mpi') end
function dist.is_nccl_available() return C.available('nccl') end

-- get_rank(group): this rank in group (-1 where it is not a member)
function dist.get_rank(group)
  local cg = group_of('get_rank', group)
  if cg == false then return -1 end
  return C.rank(cg)
end

-- get_world_size(group): the ranks of group (-1 on a rank not in it)
function dist.get_world_size(group)
  local cg = group_of('get_world_size', group)
  if cg == false then return -1 end
  return C.size(cg)
end

function dist.get_backend(group)
  group_of('get_backend', group)
  return C.backend()
end

-- destroy_process_group(group): group, or every group with the default one (nil or group.WORLD)
local groups = setmetatable({}, { __mode = 'k' }) -- the groups of new_group, to destroy with the default one
function dist.destroy_process_group(group)
  local cg, pg = group_of('destroy_process_group', group)
  if pg then
    if cg then C.destroy_group(cg) end
    pg._destroyed, pg._c = true, nil
    return
  end
  for g in pairs(groups) do
    if g._c then C.destroy_group(g._c) end
    g._destroyed, g._c = true, nil
  end
  C.destroy()
end

-- new_group(ranks, {timeout, backend}) (or PyTorch's order: new_group(ranks, timeout, backend)): the
-- group of those ranks of the default group (all of them when nil), ordered by rank. Every rank of
-- the job calls it, in the same order, as in PyTorch; a rank not in it gets a group it is not a
-- member of (get_rank gives -1; collectives on it do nothing).
function dist.new_group(ranks, timeout, backend)
  local o = kwargs('new_group', { 'timeout', 'backend', 'pg_options' }, timeout, backend)
  need_init('new_group')
  local size = C.size()
  if ranks == nil then
    ranks = {}
    for r = 0, size - 1 do ranks[r + 1] = r end
  end
  if type(ranks) ~= 'table' then error('new_group: ranks must be a table of ranks, got ' .. type(ranks), 2) end
  local sorted, index = {}, {}
  for i, r in ipairs(ranks) do
    r = as_int(r)
    if math.type(r) ~= 'integer' or r < 0 or r >= size then
      error(string.format('new_group: ranks[%d] = %s is not a rank of the default group [0, %d]', i, tostring(r), size - 1), 2)
    end
    if index[r] then error(string.format('new_group: rank %d is listed twice', r), 2) end
    index[r] = true
    sorted[#sorted + 1] = r
  end
  if #sorted == 0 then error('new_group: ranks is empty', 2) end
  table.sort(sorted)
  for k, r in ipairs(sorted) do index[r] = k - 1 end
  local t = o.timeout or 1800
  if type(t) ~= 'number' or not (t > 0) then
    error('new_group: timeout must be a positive number of seconds, got ' .. tostring(t), 2)
  end
  if o.backend ~= nil and (type(o.backend) ~= 'string' or o.backend:lower() ~= C.backend()) then
    error(string.format("new_group: backend '%s' differs from the default group's ('%s'): one backend a job here",
      tostring(o.backend), C.backend()), 2)
  end
  if o.pg_options ~= nil then error('new_group: pg_options is not supported', 2) end
  local g = setmetatable({ ranks = sorted, _index = index }, PG)
  g._c = C.new_group(sorted, t)
  groups[g] = true
  return g
end

-- barrier(group)
function dist.barrier(group)
  local o = kwargs('barrier', { 'group' }, group)
  local cg = group_of('barrier', o.group)
  if cg == false then return nil end
  C.barrier(cg)
end

local function check_op(name, op)
  if op == nil then return dist.ReduceOp.SUM end
  op = as_int(op)
  if math.type(op) ~= 'integer' or op < 0 or op > 4 then
    error(string.format('%s: op must be one of torch.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got %s',
      name, tostring(op)), 3)
  end
  return op
end

local function check_tensor(name, what, t, level)
  if not torch.is_tensor(t) then error(string.format('%s: %s must be a tensor, got %s', name, what, type(t)), level or 3) end
end

-- The preamble of a collective op: its optional arguments after the first ones (names, given in
-- ...: kwargs), its C group (group_of: false on a rank not in the group), its tensor t checked
-- (when `what` names it), and, when `root` names the option of its source or destination rank
-- (`default` when not given), that rank in the group. Returns the options, the C group and the rank.
local function preamble(op, t, what, names, root, default, ...)
  local o = kwargs_at(4, op, names, ...)
  local cg, pg = group_of(op, o.group, 3)
  if what then check_tensor(op, what, t, 4) end
  if root == nil then return o, cg end
  local r = o[root]
  if r == nil then r = default end
  return o, cg, group_rank(op, pg, r, root, 3)
end

-- Every collective takes PyTorch's optional arguments positionally or as a trailing options table
-- ({op, group, ...}); ranks (src, dst) are ranks of the default group, as PyTorch's; lists are
-- indexed by rank in the group (list[k + 1]: the group's rank k). On a rank not in the group a
-- collective does nothing and returns nil.

-- all_reduce(t, op = SUM, group): t becomes op over the ranks' t, in place; returns t
function dist.all_reduce(t, op, group)
  local o, cg = preamble('all_reduce', t, 'tensor', { 'op', 'group' }, nil, nil, op, group)
  if cg == false then return nil end
  return C.all_reduce(t, check_op('all_reduce', o.op), cg)
end

-- broadcast(t, src, group): t becomes rank src's t; returns t
function dist.broadcast(t, src, group)
  local o, cg, k = preamble('broadcast', t, 'tensor', { 'src', 'group' }, 'src', nil, src, group)
  if cg == false then return nil end
  return C.broadcast(t, k, cg)
end

-- all_gather(list, t, group): list[k + 1] becomes the group's rank k's t (list holds as many tensors of
-- t's shape as the group has ranks)
function dist.all_gather(list, t, group)
  local _, cg = preamble('all_gather', t, 'tensor', { 'group' }, nil, nil, group)
  if type(list) ~= 'table' then error('all_gather: tensor_list must be a table of tensors, got ' .. type(list), 2) end
  if cg == false then return nil end
  return C.all_gather(list, t, cg)
end

-- reduce_scatter(out, list, op = SUM, group): out becomes op over the ranks of their list[rank + 1]
function dist.reduce_scatter(out, list, op, group)
  local o, cg = preamble('reduce_scatter', out, 'output', { 'op', 'group' }, nil, nil, op, group)
  if type(list) ~= 'table' then error('reduce_scatter: input_list must be a table of tensors, got ' .. type(list), 2) end
  if cg == false then return nil end
  return C.reduce_scatter(out, list, check_op('reduce_scatter', o.op), cg)
end

-- reduce(t, dst, op = SUM, group): rank dst's t becomes op over the ranks' t; the others' t is left
-- as it was; returns t
function dist.reduce(t, dst, op, group)
  local o, cg, k = preamble('reduce', t, 'tensor', { 'dst', 'op', 'group' }, 'dst', nil, dst, op, group)
  if cg == false then return nil end
  return C.reduce(t, k, check_op('reduce', o.op), cg)
end

-- gather(t, gather_list, dst = 0, group) or gather(t, {gather_list, dst, group}): on rank dst,
-- gather_list[k + 1] becomes the group's rank k's t; the other ranks give no list
function dist.gather(t, gather_list, dst, group)
  local o, cg, k = preamble('gather', t, 'tensor', { 'gather_list', 'dst', 'group' }, 'dst', 0, gather_list, dst,
    group)
  if cg == false then return nil end
  C.gather(t, o.gather_list, k, cg)
end

-- scatter(t, scatter_list, src = 0, group) or scatter(t, {scatter_list, src, group}): t becomes rank
-- src's scatter_list[k + 1] on the group's rank k; the other ranks give no list; returns t
function dist.scatter(t, scatter_list, src, group)
  local o, cg, k = preamble('scatter', t, 'tensor', { 'scatter_list', 'src', 'group' }, 'src', 0, scatter_list, src,
    group)
  if cg == false then return nil end
  return C.scatter(t, o.scatter_list, k, cg)
end

-- all_to_all(output_list, input_list, group): output_list[k + 1] becomes the group's rank k's
-- input_list[rank + 1]; tensors of one dtype, each of the size its peer sends
function dist.all_to_all(output_list, input_list, group)
  local o = kwargs('all_to_all', { 'group' }, group)
  local cg = group_of('all_to_all', o.group)
  if type(output_list) ~= 'table' then error('all_to_all: output_tensor_list must be a table of tensors, got ' .. type(output_list), 2) end
  if type(input_list) ~= 'table' then error('all_to_all: input_tensor_list must be a table of tensors, got ' .. type(input_list), 2) end
  if cg == false then return nil end
  return C.all_to_all(output_list, input_list, cg)
end

-- the pieces of t along dim 0 by splits (nil: equal pieces, one a rank of n), as narrow views
local function split_rows(op, what, t, splits, n)
  local rows = t:dim() > 0 and t:size(1) or 1
  if t:dim() == 0 then error(string.format('%s: %s must have at least one dimension', op, what), 4) end
  local parts, at = {}, 0
  if splits == nil then
    if rows % n ~= 0 then
      error(string.format('%s: the size of %s along dim 0 (%d) is not divisible by the group size (%d)', op, what, rows, n), 4)
    end
    for k = 1, n do parts[k] = t:narrow(1, at + 1, rows // n); at = at + rows // n end
    return parts
  end
  if type(splits) ~= 'table' or #splits ~= n then
    error(string.format('%s: %s split sizes must be a table of %d sizes (one a rank), got %s', op, what, n,
      type(splits) == 'table' and #splits .. ' of them' or type(splits)), 4)
  end
  for k = 1, n do
    local s = splits[k]
    s = as_int(s)
    if math.type(s) ~= 'integer' or s < 0 then error(string.format('%s: %s split size %d is %s', op, what, k, tostring(s)), 4) end
    if at + s > rows then
      error(string.format('%s: %s split sizes add up to more than its %d rows', op, what, rows), 4)
    end
    parts[k] = t:narrow(1, at + 1, s)
    at = at + s
  end
  if at ~= rows then error(string.format('%s: %s split sizes add up to %d, not its %d rows', op, what, at, rows), 4) end
  return parts
end

-- all_to_all_single(output, input, output_split_sizes, input_split_sizes, group) or
-- all_to_all_single(output, input, {output_split_sizes, input_split_sizes, group}): input's rows are
-- split (equally when no sizes are given) and piece k goes to the group's rank k; output's rows, split
-- likewise, receive them; returns output
function dist.all_to_all_single(output, input, output_split_sizes, input_split_sizes, group)
  local o = kwargs('all_to_all_single', { 'output_split_sizes', 'input_split_sizes', 'group' },
    output_split_sizes, input_split_sizes, group)
  local cg = group_of('all_to_all_single', o.group)
  check_tensor('all_to_all_single', 'output', output)
  check_tensor('all_to_all_single', 'input', input)
  if cg == false then return nil end
  if output.dtype ~= input.dtype then
    error(string.format('all_to_all_single: output is %s and input %s: they must be of one dtype', output.dtype, input.dtype), 2)
  end
  local n = C.size(cg)
  C.all_to_all(split_rows('all_to_all_single', 'output', output, o.output_split_sizes, n),
    split_rows('all_to_all_single', 'input', input, o.input_split_sizes, n), cg)
  return output
end

-- send(t, dst, group, tag = 0) or send(t, dst, {group, tag}): t's values to rank dst, which receives
-- them with a recv of the same tag; returns when t can be changed again
function dist.send(t, dst, group, tag)
  local o = kwargs('send', { 'group', 'tag' }, group, tag)
  local cg, pg = group_of('send', o.group)
  check_tensor('send', 'tensor', t)
  local k = group_rank('send', pg, dst, 'dst')
  if cg == false then return nil end
  C.send(t, k, o.tag, cg)
end

-- recv(t, src, group, tag = 0) or recv(t, src, {group, tag}): t becomes what rank src (any rank when
-- nil) sent with that tag; returns the sender's rank (in the default group). The message must be
-- exactly t's size.
function dist.recv(t, src, group, tag)
  local o = kwargs('recv', { 'group', 'tag' }, group, tag)
  local cg, pg = group_of('recv', o.group)
  check_tensor('recv', 'tensor', t)
  local k = src ~= nil and group_rank('recv', pg, src, 'src') or nil
  if cg == false then return -1 end
  return global_rank(pg, C.recv(t, k, o.tag, cg))
end

-- isend / irecv: as send and recv, without waiting: they return a work object (work:wait() waits, up
-- to the group's timeout, and returns true; work:is_completed()). t must not be used until then (the
-- work keeps it alive).
function dist.isend(t, dst, group, tag)
  local o = kwargs('isend', { 'group', 'tag' }, group, tag)
  local cg, pg = group_of('isend', o.group)
  check_tensor('isend', 'tensor', t)
  local k = group_rank('isend', pg, dst, 'dst')
  if cg == false then return nil end
  return C.isend(t, k, o.tag, cg)
end

function dist.irecv(t, src, group, tag)
  local o = kwargs('irecv', { 'group', 'tag' }, group, tag)
  local cg, pg = group_of('irecv', o.group)
  check_tensor('irecv', 'tensor', t)
  local k = src ~= nil and group_rank('irecv', pg, src, 'src') or nil
  if cg == false then return nil end
  return C.irecv(t, k, o.tag, cg)
end

require('torch.distributed_objects').install(dist, preamble)

dist._NOT_INIT = NOT_INIT
dist._group_of = group_of
return dist
