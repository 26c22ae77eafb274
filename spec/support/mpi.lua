-- What the specs that run MPI jobs share (spec/distributed_spec.lua, spec/nn_sync_batchnorm_spec.lua):
-- the launcher, whether there is one, and mpi_job, which runs a script of spec/support under it.
local torch = require 'torch'

local M = {}
M.BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'
-- LUTORCH_MPIRUN: the launcher (default mpirun, as root, oversubscribed); 'none': as if there were none
-- (a machine whose own Open MPI is not the one this build was linked with)
M.MPIRUN = os.getenv('LUTORCH_MPIRUN') or 'mpirun --allow-run-as-root --oversubscribe'
M.HAVE_MPI = M.MPIRUN ~= 'none' and os.execute('command -v ' .. M.MPIRUN:match('^%S+') .. ' >/dev/null 2>&1') == true
  and torch.distributed.is_mpi_available()
M.NO_MPI_WHY = 'no mpirun (not installed, or LUTORCH_MPIRUN=none)'

-- runs cmd in a shell; returns its output (stdout and stderr) and exit status
function M.sh(cmd)
  local p = io.popen('{ ' .. cmd .. '; } 2>&1')
  local out = p:read('a')
  local _, _, rc = p:close()
  return out, rc
end

-- runs script under mpirun with np ranks, with its result folder and extra as arguments; returns
-- {rank = {lines of rank<r>.txt}}, the output, the seconds it took, the exit status
function M.mpi_job(np, script, extra, mpirun_opts)
  local dir = M.sh('mktemp -d'):gsub('%s+$', '')
  local cmd = string.format('s=$(date +%%s%%N); OMP_NUM_THREADS=1 timeout 60 %s %s -np %d %s %s %s %s; '
    .. 'echo "RC $?"; echo "ELAPSED_MS $(( ($(date +%%s%%N) - s) / 1000000 ))"',
    M.MPIRUN, mpirun_opts or '', np, M.BIN, script, dir, extra or '')
  local out = M.sh(cmd)
  local ranks = {}
  for r = 0, np - 1 do
    local f = io.open(string.format('%s/rank%d.txt', dir, r))
    local lines = {}
    if f then
      for l in f:lines() do lines[#lines + 1] = l end
      f:close()
    end
    ranks[r] = lines
  end
  os.execute('rm -rf ' .. dir)
  return ranks, out, tonumber(out:match('ELAPSED_MS (%d+)')) / 1000, tonumber(out:match('RC (%d+)'))
end

return M
