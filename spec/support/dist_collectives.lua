-- Run by spec/distributed_spec.lua under mpirun (2 and 3 ranks): every collective on every dtype,
-- on contiguous and non-contiguous (transposed) tensors, against values computed here with plain
-- Lua loops over what each rank holds. Writes "RESULT ok <case>" or "RESULT fail <case> <why>" lines,
-- then "RESULT checks <n>", to arg[1]/rank<r>.txt. arg[2] is the backend ('mpi' by default; 'nccl':
-- CUDA tensors, one GPU a rank, every dtype NCCL has -- int16, which it lacks, must be refused), arg[3]
-- the tensors' device ('cuda' with 'mpi': staged through the host).
local torch = require 'torch'
local dist = torch.distributed
local BACKEND = arg[2] or 'mpi'
local DEV = arg[3] or (BACKEND == 'nccl' and 'cuda' or 'cpu')

dist.init_process_group { backend = BACKEND, timeout = 20 }
local rank, R = dist.get_rank(), dist.get_world_size()
local Op = dist.ReduceOp
local lines, checks = {}, 0

local function report(ok, case, why)
  checks = checks + 1
  lines[#lines + 1] = ok and ('RESULT ok ' .. case) or string.format('RESULT fail %s %s', case, why or '')
end

local dtypes = { 'float32', 'float64', 'float16', 'bfloat16', 'int64', 'int32', 'int16', 'int8', 'uint8', 'bool' }
local ROWS, COLS = 3, 4 -- the base tensor; the non-contiguous case is its transpose

-- what rank r holds at element (i, j) of the [ROWS, COLS] base (1-based), salt varying per use
local function value(dt, r, i, j, salt)
  local k = (r + i * 2 + j + salt) % 3
  if dt == 'bool' then return k ~= 1 end
  return k + 1
end

local function make(dt, r, salt, transposed)
  local rows = {}
  for i = 1, ROWS do
    rows[i] = {}
    for j = 1, COLS do rows[i][j] = value(dt, r, i, j, salt) end
  end
  local t = torch.tensor(rows, { dtype = torch[dt], device = DEV })
  if transposed then t = t:t() end
  return t
end

-- the element of tensor t (maybe transposed) at base position (i, j), as a Lua value
local function get(tab, transposed, i, j)
  if transposed then return tab[j][i] end
  return tab[i][j]
end

local reduce = require('spec.support.dist_reduce')

local function tol(dt)
  if dt == 'float16' then return 2e-3 end
  if dt == 'bfloat16' then return 1e-2 end
  if dt == 'float32' then return 1e-6 end
  return 0
end

local function same(dt, got, want)
  if dt == 'bool' then return got == want end
  return math.abs(got - want) <= tol(dt) * math.max(1, math.abs(want))
end

-- compares tensor t (holding base positions, maybe transposed) with want(i, j)
local function compare(case, dt, t, transposed, want)
  if tostring(t.dtype) ~= tostring(torch[dt]) then return report(false, case, 'dtype changed to ' .. tostring(t.dtype)) end
  local tab = t:totable()
  for i = 1, ROWS do
    for j = 1, COLS do
      local g, w = get(tab, transposed, i, j), want(i, j)
      if not same(dt, g, w) then
        return report(false, case, string.format('at (%d,%d): got %s, want %s', i, j, tostring(g), tostring(w)))
      end
    end
  end
  report(true, case)
end

-- in one order on every rank (pairs' order differs between processes)
local opnames = { { 'SUM', Op.SUM }, { 'AVG', Op.AVG }, { 'PRODUCT', Op.PRODUCT }, { 'MIN', Op.MIN }, { 'MAX', Op.MAX } }

local function check_error(case, pattern, fn)
  local ok, err = pcall(fn)
  report(not ok and tostring(err):find(pattern, 1, true) ~= nil, case, tostring(err))
end

for _, dt in ipairs(dtypes) do
  if BACKEND == 'nccl' and dt == 'int16' then
    check_error('nccl_int16_refused', 'NCCL does not support tensors of dtype int16', function()
      dist.all_reduce(make(dt, rank, 0, false))
    end)
    goto next_dtype
  end
  for _, tr in ipairs { false, true } do
    local tag = dt .. (tr and '_noncontig' or '')
    -- all_reduce with every op
    for _, no in ipairs(opnames) do
      local name, op = no[1], no[2]
      if not (dt == 'bool' and op == Op.AVG) then
        local t = make(dt, rank, 0, tr)
        local ok, err = pcall(dist.all_reduce, t, op)
        if not ok then report(false, 'all_reduce_' .. name .. '_' .. tag, err)
        else
          compare('all_reduce_' .. name .. '_' .. tag, dt, t, tr, function(i, j)
            local vals = {}
            for r = 0, R - 1 do vals[#vals + 1] = value(dt, r, i, j, 0) end
            return reduce(dt, op, vals)
          end)
        end
      end
    end
    -- broadcast from the last rank
    local b = make(dt, rank, 1, tr)
    dist.broadcast(b, R - 1)
    compare('broadcast_' .. tag, dt, b, tr, function(i, j) return value(dt, R - 1, i, j, 1) end)
    -- all_gather: list[r + 1] is rank r's
    local list = {}
    for r = 1, R do list[r] = torch.zeros(tr and { COLS, ROWS } or { ROWS, COLS }, { dtype = torch[dt], device = DEV }) end
    if tr then for r = 1, R do list[r] = torch.zeros({ ROWS, COLS }, { dtype = torch[dt], device = DEV }):t() end end
    dist.all_gather(list, make(dt, rank, 2, tr))
    for r = 0, R - 1 do
      compare(string.format('all_gather_%s_from_%d', tag, r), dt, list[r + 1], tr,
        function(i, j) return value(dt, r, i, j, 2) end)
    end
    -- reduce_scatter: rank r gets op over the ranks s of their input k = r
    local ops = dt == 'bool' and { { 'SUM', Op.SUM }, { 'MIN', Op.MIN } }
      or { { 'SUM', Op.SUM }, { 'MAX', Op.MAX }, { 'AVG', Op.AVG } }
    for _, no in ipairs(ops) do
      local name, op = no[1], no[2]
      local ins = {}
      for k = 0, R - 1 do ins[k + 1] = make(dt, rank, 10 + k, tr) end
      local out = torch.zeros({ ROWS, COLS }, { dtype = torch[dt], device = DEV })
      if tr then out = torch.zeros({ COLS, ROWS }, { dtype = torch[dt], device = DEV }) end
      dist.reduce_scatter(out, ins, op)
      compare('reduce_scatter_' .. name .. '_' .. tag, dt, out, tr, function(i, j)
        local vals = {}
        for s = 0, R - 1 do vals[#vals + 1] = value(dt, s, i, j, 10 + rank) end
        return reduce(dt, op, vals)
      end)
    end
  end
  ::next_dtype::
end

-- a 0-element tensor and a large one (several MPI segments)
do
  local e = torch.zeros({ 0 }, { device = DEV })
  dist.all_reduce(e)
  report(e:numel() == 0, 'all_reduce_empty')
  local big = torch.full({ 300000 }, rank + 1, { dtype = torch.float64, device = DEV })
  dist.all_reduce(big)
  local want = R * (R + 1) / 2
  report(big:min():item() == want and big:max():item() == want, 'all_reduce_large', tostring(big[1]))
end

-- SUM and AVG of float32 and float64 tensors over several of the shared-memory path's 4 MiB pieces
-- (and MPI's segments), against the rank-order sum made here from every rank's values; the shared
-- memory path (LUTORCH_MPI_SHM not 0) also gives every rank the same bits
for _, c in ipairs { { 'float32', 2500000 }, { 'float64', 1048577 } } do
  local dt, n = torch[c[1]], c[2]
  local function held(r) return (torch.arange(n, { dtype = dt }) % 1000) * (1e-3 / 3) + 0.1 * (r + 1) end
  local sum = held(0)
  for r = 1, R - 1 do sum = sum + held(r) end
  for _, no in ipairs { { 'SUM', Op.SUM }, { 'AVG', Op.AVG } } do
    local want = no[2] == Op.AVG and sum / R or sum
    local t = held(rank):to(DEV)
    dist.all_reduce(t, no[2])
    t = t:cpu()
    local err = (t - want):abs():max():item()
    local case = string.format('all_reduce_pieces_%s_%s', no[1], c[1])
    local ok, why = err <= (c[1] == 'float32' and 1e-6 or 1e-14) * R, string.format('max error %g', err)
    if BACKEND == 'mpi' and DEV == 'cpu' and os.getenv('LUTORCH_MPI_SHM') ~= '0' then
      -- every rank calls all_gather, whatever its own result
      local sums = {}
      for r = 1, R do sums[r] = torch.zeros(1, { dtype = torch.float64 }) end
      dist.all_gather(sums, (t:double() * torch.arange(n, { dtype = torch.float64 })):sum():reshape(1))
      for r = 2, R do
        if sums[r]:item() ~= sums[1]:item() then ok, why = false, 'the ranks hold different bits' end
      end
    end
    report(ok, case, why)
  end
end

-- argument errors
local function z(n, dt) return torch.zeros(n, { dtype = dt, device = DEV }) end
check_error('broadcast_bad_src', string.format('Invalid rank %d, rank should be in the interval [0, %d]', R, R - 1),
  function() dist.broadcast(z(2), R) end)
check_error('all_gather_short_list', 'all_gather: tensor_list must hold world_size', function()
  dist.all_gather({}, z(2)) -- none: short for every world size
end)
check_error('all_gather_bad_shape', 'all_gather: tensor_list[', function()
  local l = {}
  for r = 1, R do l[r] = z(3) end
  dist.all_gather(l, z(2))
end)
check_error('reduce_scatter_bad_dtype', 'reduce_scatter: input_list[', function()
  local l = {}
  for r = 1, R do l[r] = z(2, torch.int64) end
  dist.reduce_scatter(z(2), l)
end)
check_error('all_reduce_bad_op', 'all_reduce: op must be one of torch.distributed.ReduceOp', function()
  dist.all_reduce(z(2), 9)
end)
check_error('all_reduce_bool_avg', 'all_reduce: ReduceOp.AVG is not supported for bool tensors', function()
  dist.all_reduce(z(2, torch.bool), Op.AVG)
end)
check_error('double_init', 'trying to initialize the default process group twice!', function()
  dist.init_process_group { backend = BACKEND }
end)
report(dist.get_backend() == BACKEND, 'get_backend')
if BACKEND == 'nccl' then
  -- PyTorch's NCCL backend takes CUDA tensors only
  check_error('nccl_cpu_tensor', 'all_reduce: the NCCL backend needs CUDA tensors, but tensor is on the CPU',
    function() dist.all_reduce(torch.zeros(2)) end)
  check_error('nccl_cpu_list', 'all_gather: the NCCL backend needs CUDA tensors, but tensor_list[1] is on the CPU',
    function()
      local l = {}
      for r = 1, R do l[r] = torch.zeros(2) end
      dist.all_gather(l, z(2))
    end)
  dist.barrier()
  report(true, 'barrier')
end

dist.destroy_process_group()
report(not dist.is_initialized(), 'destroyed')
check_error('after_destroy', 'Default process group has not been initialized', function() dist.get_rank() end)
lines[#lines + 1] = 'RESULT checks ' .. checks
-- each rank writes its own file (arg[1]/rank<r>.txt): mpirun may interleave the ranks' stdout
local f = assert(io.open(string.format('%s/rank%d.txt', arg[1] or '.', rank), 'w'))
f:write(table.concat(lines, '\n'), '\n')
f:close()
