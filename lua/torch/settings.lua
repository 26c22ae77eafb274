-- Process-wide settings under PyTorch's names: deterministic algorithms (and their debug mode),
-- the float32 matmul precision, warn_always, flush-denormal, the inter-op thread count, torch.seed
-- and two questions about the build (compiled_with_cxx11_abi, is_storage). The C core keeps the
-- flags that ops consult (core/settings.c); this file checks the arguments.
local torch = require 'torch'
local as_int = require('torch.composite').as_int
local C = {
  set_deterministic = torch._set_deterministic, deterministic = torch._deterministic,
  set_warn_always = torch._set_warn_always, warn_always = torch._warn_always,
  set_flush_denormal = torch._set_flush_denormal,
}
torch._set_deterministic, torch._deterministic, torch._set_warn_always, torch._warn_always, torch._set_flush_denormal =
  nil, nil, nil, nil, nil

local function check_bool(v, op, what)
  if type(v) ~= 'boolean' then
    error(string.format('%s: %s must be a boolean, got %s', op, what, type(v)), 3)
  end
end

-- ---- deterministic algorithms ----

--- torch.use_deterministic_algorithms(mode, {warn_only = false}): with mode true, an op that has
--- no deterministic implementation raises an error (with warn_only, warns on stderr instead). On
--- the CPU every lutorch kernel is deterministic; on CUDA the pooling backwards (they add with
--- atomics) and cuBLAS products without CUBLAS_WORKSPACE_CONFIG=:4096:8 (or :16:8) are not. As in
--- PyTorch, warn_only is set even when mode is false.
function torch.use_deterministic_algorithms(mode, o)
  check_bool(mode, 'use_deterministic_algorithms', 'mode')
  o = require('torch.options').check(o, 'use_deterministic_algorithms', { 'warn_only' })
  local warn_only = o.warn_only
  if warn_only == nil then warn_only = false end
  check_bool(warn_only, 'use_deterministic_algorithms', 'warn_only')
  C.set_deterministic(mode, warn_only)
end

function torch.are_deterministic_algorithms_enabled() return (C.deterministic()) end
function torch.is_deterministic_algorithms_warn_only_enabled() return select(2, C.deterministic()) end

local debug_modes = { default = 0, warn = 1, error = 2 }

--- torch.set_deterministic_debug_mode(mode): 'default' (0) turns deterministic algorithms off,
--- 'warn' (1) on with warn_only, 'error' (2) on
function torch.set_deterministic_debug_mode(mode)
  local op = 'set_deterministic_debug_mode'
  local m
  mode = as_int(mode)
  if type(mode) == 'string' then
    m = debug_modes[mode]
    if m == nil then
      error(op .. ': invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got ' .. mode, 2)
    end
  elseif math.type(mode) == 'integer' then
    if mode < 0 or mode > 2 then
      error(op .. ': invalid value of debug_mode, expected 0, 1, or 2, but got ' .. mode, 2)
    end
    m = mode
  else
    error(op .. ': debug_mode must be a string or an integer, but got ' .. (math.type(mode) or type(mode)), 2)
  end
  C.set_deterministic(m > 0, m == 1)
end

--- torch.get_deterministic_debug_mode() -> 0, 1 or 2 (see set_deterministic_debug_mode)
function torch.get_deterministic_debug_mode()
  local on, warn_only = C.deterministic()
  if not on then return 0 end
  return warn_only and 1 or 2
end

-- ---- float32 matrix products ----

local matmul_precision = 'highest'
local precisions = { highest = true, high = true, medium = true }

--- torch.set_float32_matmul_precision('highest' | 'high' | 'medium'): recorded and reported by
--- get_float32_matmul_precision; lutorch always multiplies float32 matrices in float32 (no TF32 or
--- bfloat16 passes), which is what 'highest' asks and what the others allow. (PyTorch 1.13 only
--- warns about an unknown name; here it is an error.)
function torch.set_float32_matmul_precision(precision)
  local op = 'set_float32_matmul_precision'
  if type(precision) ~= 'string' then error(op .. ' expects a string, but got ' .. type(precision), 2) end
  if not precisions[precision] then
    error(string.format("%s: %s is not one of 'highest', 'high', or 'medium'", op, precision), 2)
  end
  matmul_precision = precision
end
function torch.get_float32_matmul_precision() return matmul_precision end

-- ---- warnings ----

--- torch.set_warn_always(b): warnings that are shown once per process (deterministic-algorithm
--- warnings, torch.utils.checkpoint's) are shown every time
function torch.set_warn_always(b)
  check_bool(b, 'set_warn_always', 'the flag')
  C.set_warn_always(b)
end
function torch.is_warn_always_enabled() return C.warn_always() end

-- ---- the CPU ----

--- torch.set_flush_denormal(mode) -> supported: on x86 CPUs with SSE3 sets (or clears) the flush-to-
--- zero and denormals-are-zero modes of the calling thread and returns true; false elsewhere. As in
--- PyTorch, only the calling thread changes, and threads created after it inherit its mode:
--- kernel threads already running (OpenMP's, a CPU device's worker) keep theirs.
function torch.set_flush_denormal(mode)
  check_bool(mode, 'set_flush_denormal', 'mode')
  return C.set_flush_denormal(mode)
end

local interop_threads, interop_set = 1, false

--- torch.get_num_interop_threads() -> n; torch.set_num_interop_threads(n), once, as in PyTorch.
--- lutorch has no inter-op thread pool: the ops a script issues run in order on their device's
--- stream (a CPU device's worker thread or the caller's), so the count is recorded and reported
--- only; it starts at 1.
function torch.get_num_interop_threads() return interop_threads end
function torch.set_num_interop_threads(n)
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 1 then
    error('set_num_interop_threads expects a positive integer, got ' .. tostring(n), 2)
  end
  if interop_set then
    error('set_num_interop_threads: cannot set number of interop threads after set_num_interop_threads called', 2)
  end
  interop_threads, interop_set = n, true
end

-- ---- the generator, the build ----

--- torch.seed() -> s: seeds the default generator (and every CUDA device's, where CUDA is
--- available) with a non-deterministic 63-bit seed and returns it
function torch.seed()
  local s = torch.default_generator:seed()
  if torch.cuda.is_available() then torch.cuda.manual_seed_all(s) end
  return s
end

--- false: lutorch is C (no C++ standard library in its interface)
function torch.compiled_with_cxx11_abi() return false end

--- false: lutorch tensors own their memory directly (it has no storage objects)
function torch.is_storage(_) return false end
