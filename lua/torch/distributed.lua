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

local C = torch._dist
local dist = {}

dist.ReduceOp = C.ReduceOp
-- group.WORLD: the default group (every rank of the job), the only group there is; the
-- process_group options (SyncBatchNorm's) take it or nil
dist.group = { WORLD = setmetatable({}, { __name = 'torch.distributed.ProcessGroup',
  __tostring = function() return 'torch.distributed.group.WORLD' end }) }

local NOT_INIT = 'Default process group has not been initialized, please make sure to call init_process_group.'

local function need_init(op)
  if not C.is_initialized() then error(op .. ': ' .. NOT_INIT, 3) end
end

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

function dist.get_rank()
  need_init('get_rank')
  return C.rank()
end

function dist.get_world_size()
  need_init('get_world_size')
  return C.size()
end

function dist.get_backend()
  need_init('get_backend')
  return C.backend()
end

function dist.destroy_process_group()
  need_init('destroy_process_group')
  C.destroy()
end

function dist.barrier()
  need_init('barrier')
  C.barrier()
end

local function check_op(name, op)
  if op == nil then return dist.ReduceOp.SUM end
  if math.type(op) ~= 'integer' or op < 0 or op > 4 then
    error(string.format('%s: op must be one of torch.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got %s',
      name, tostring(op)), 3)
  end
  return op
end

local function check_tensor(name, what, t)
  if not torch.is_tensor(t) then error(string.format('%s: %s must be a tensor, got %s', name, what, type(t)), 3) end
end

-- all_reduce(t, op = SUM): t becomes op over the ranks' t, in place; returns t
function dist.all_reduce(t, op)
  need_init('all_reduce')
  check_tensor('all_reduce', 'tensor', t)
  return C.all_reduce(t, check_op('all_reduce', op))
end

-- broadcast(t, src): t becomes rank src's t; returns t
function dist.broadcast(t, src)
  need_init('broadcast')
  check_tensor('broadcast', 'tensor', t)
  if math.type(src) ~= 'integer' then error('broadcast: src must be an integer rank, got ' .. tostring(src), 2) end
  return C.broadcast(t, src)
end

-- all_gather(list, t): list[r + 1] becomes rank r's t (list holds world_size tensors of t's shape)
function dist.all_gather(list, t)
  need_init('all_gather')
  if type(list) ~= 'table' then error('all_gather: tensor_list must be a table of tensors, got ' .. type(list), 2) end
  check_tensor('all_gather', 'tensor', t)
  return C.all_gather(list, t)
end

-- reduce_scatter(out, list, op = SUM): out becomes op over the ranks of their list[rank + 1]
function dist.reduce_scatter(out, list, op)
  need_init('reduce_scatter')
  check_tensor('reduce_scatter', 'output', out)
  if type(list) ~= 'table' then error('reduce_scatter: input_list must be a table of tensors, got ' .. type(list), 2) end
  return C.reduce_scatter(out, list, check_op('reduce_scatter', op))
end

dist._NOT_INIT = NOT_INIT
return dist
