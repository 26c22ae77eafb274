-- The Lua side of torch: runs once when the module opens, with the table the C bindings built.
local torch = ...

local Tensor = torch.Tensor
-- submodules reach the table with require 'torch' while it is being built
package.loaded.torch = torch
local format = require 'torch.format'

-- printing
debug.getregistry()['lutorch.format'] = format.format
torch.set_printoptions = format.set_printoptions
torch.get_printoptions = format.get_printoptions

torch.__version__ = '0.1.0'

-- dtype objects print as torch.float32
local dtype_mt = debug.getregistry()['torch.dtype']
dtype_mt.__tostring = function(d) return 'torch.' .. d.name end
dtype_mt.__index = function(_, k) error("torch.dtype has no field '" .. tostring(k) .. "'", 2) end

-- shapes (x.shape, x:size()) print as torch.Size([2, 3]) and compare with ==
local Size = torch.Size
Size.__name = 'torch.Size'
function Size.__tostring(s)
  local parts = {}
  for i = 1, #s do parts[i] = tostring(s[i]) end
  return 'torch.Size([' .. table.concat(parts, ', ') .. '])'
end
function Size.__eq(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
function Size.numel(s)
  local n = 1
  for i = 1, #s do n = n * s[i] end
  return n
end
Size.__index = { numel = Size.numel }
-- torch.Size({2, 3}) (or torch.Size(2, 3)): a shape, as x.shape gives
setmetatable(Size, { __call = function(_, ...)
  local sizes = type((...)) == 'table' and (...) or { ... }
  local s = {}
  for i, v in ipairs(sizes) do
    v = math.type(v) and math.tointeger(v) or v -- 3.0 as 3 (composite's as_int, not loaded yet)
    if math.type(v) ~= 'integer' or v < 0 then
      error(string.format('torch.Size: size %d is %s (expected a non-negative integer)', i, tostring(v)), 2)
    end
    s[i] = v
  end
  return setmetatable(s, Size)
end })

function torch.typename(x)
  if torch.is_tensor(x) then return 'torch.Tensor' end
  return nil
end
function torch.numel(x) return x:numel() end

-- elementwise predicates built from the primitives
function Tensor.isnan(x) return x:ne(x) end
function Tensor.isinf(x)
  if not x.dtype.is_floating_point then return torch.zeros_like(x, { dtype = torch.bool }) end
  return x:abs():eq(math.huge)
end
function Tensor.isfinite(x)
  if not x.dtype.is_floating_point then return torch.ones_like(x, { dtype = torch.bool }) end
  return (x - x):eq(0)
end
function Tensor.is_nonzero(x)
  if x:numel() == 0 then error('is_nonzero: Boolean value of Tensor with no values is ambiguous', 2) end
  if x:numel() > 1 then error('is_nonzero: Boolean value of Tensor with more than one value is ambiguous', 2) end
  local v = x:item()
  return v ~= 0 and v ~= false
end

-- allclose / isclose as in PyTorch: |a - b| <= atol + rtol * |b|
function Tensor.isclose(a, b, opts)
  opts = opts or {}
  local rtol, atol = opts.rtol or 1e-5, opts.atol or 1e-8
  -- bool tensors compare as the default float dtype's 0 and 1 (PyTorch's cast)
  if a.dtype == torch.bool then a = a:to(torch.get_default_dtype()) end
  if torch.is_tensor(b) and b.dtype == torch.bool then b = b:to(torch.get_default_dtype()) end
  local diff = (a - b):abs()
  -- a finite difference within the tolerance (so an infinity is close only to itself)
  local close = diff:le((b:abs() * rtol) + atol):logical_and(diff:isfinite())
  if opts.equal_nan then close = close:logical_or(a:isnan():logical_and(b:isnan())) end
  return close:logical_or(a:eq(b))
end
function Tensor.allclose(a, b, opts) return a:isclose(b, opts):all():item() end
torch.isclose, torch.allclose = Tensor.isclose, Tensor.allclose
torch.isnan, torch.isinf, torch.isfinite = Tensor.isnan, Tensor.isinf, Tensor.isfinite

-- x.is_cuda and x.is_cpu, and x:get_device() (torch.get_device(x)): the index of a CUDA tensor's
-- device, -1 for a CPU tensor (on any cpu:k, as PyTorch's -1 for its one CPU device)
Tensor.__properties = Tensor.__properties or {}
function Tensor.__properties.is_cuda(x) return x.device.type == 'cuda' end
function Tensor.__properties.is_cpu(x) return x.device.type == 'cpu' end
function Tensor.get_device(x)
  if not torch.is_tensor(x) then error('get_device: expected a tensor, got ' .. type(x), 2) end
  return x.device.type == 'cpu' and -1 or x.device.index
end
torch.get_device = Tensor.get_device

-- x:new(...) is Torch7's way to make an empty tensor of the same type
function Tensor.new(x, ...) return x:new_empty(...) end

-- torch.memory.summary: a table in the manner of PyTorch's memory_summary
-- PyTorch's _format_size: the next unit once the value reaches 768 * 1024 of the current one
local function fmt_size(b)
  local prefixes = { 'B ', 'KB', 'MB', 'GB', 'TB', 'PB' }
  local u, pref = 1, b
  while u < #prefixes and pref >= 768 * 1024 do
    u = u + 1
    b = b // 1024
    pref = pref / 1024
  end
  return string.format('%7d %s', b, prefixes[u])
end
function torch.memory.summary(device)
  local s = torch.memory.stats(device)
  local name = tostring(device and torch.device(device) or torch.device('cpu:' .. torch.cpu.current_device()))
  local line = string.rep('=', 76)
  local row = '| %-21s | %14s | %14s | %14s |'
  local rows = {
    line,
    string.format('| %-73s|', 'lutorch memory summary, device ' .. name),
    string.rep('-', 76),
    string.format(row, 'Metric', 'Cur Usage', 'Peak Usage', 'Tot Alloc'),
    string.rep('-', 76),
    string.format(row, 'Allocated memory', fmt_size(s['allocated_bytes.all.current']),
      fmt_size(s['allocated_bytes.all.peak']), fmt_size(s['allocated_bytes.all.allocated'])),
    string.format(row, 'Active memory', fmt_size(s['active_bytes.all.current']),
      fmt_size(s['active_bytes.all.peak']), fmt_size(s['active_bytes.all.allocated'])),
    string.format(row, 'Reserved memory', fmt_size(s['reserved_bytes.all.current']),
      fmt_size(s['reserved_bytes.all.peak']), fmt_size(s['reserved_bytes.all.allocated'])),
    string.format(row, 'Non-releasable', fmt_size(s['inactive_split_bytes.all.current']),
      fmt_size(s['inactive_split_bytes.all.peak']), fmt_size(s['inactive_split_bytes.all.allocated'])),
    string.format(row, 'Allocations', s['allocation.all.current'], s['allocation.all.peak'],
      s['allocation.all.allocated']),
    string.format(row, 'Active allocs', s['active.all.current'], s['active.all.peak'], s['active.all.allocated']),
    string.format(row, 'Reserved segments', s['segment.all.current'], s['segment.all.peak'],
      s['segment.all.allocated']),
    string.format(row, 'Non-releasable allocs', s['inactive_split.all.current'], s['inactive_split.all.peak'],
      s['inactive_split.all.allocated']),
    string.format(row, 'OOMs', s.num_ooms, '', ''),
    line,
  }
  return table.concat(rows, '\n')
end

require 'torch.dtypes'
require 'torch.autograd'
require 'torch.autograd_functional'
require 'torch.sort'
require 'torch.composite'
require 'torch.shapes'
require 'torch.indexing'
require 'torch.statistics'
require 'torch.builders'
require 'torch.special'
require 'torch.testing'
require 'torch.random'
require 'torch.settings'
require 'torch.bytes'
require 'torch.segments'
require 'torch.windows'
torch.linalg = require 'torch.linalg'
require 'torch.lowrank'
require 'torch.rearrange'
require 'torch.einsum'
require 'torch.inplace'
require 'torch.legacy'
require 'torch.layout'
torch.class = require 'torch.class'
torch.utils.progress = require 'torch.utils.progress'
torch.utils.checkpoint = require 'torch.utils.checkpoint'
torch.isinstance = torch.class.isinstance
require 'torch.serialization'
require 'torch.amp'
require 'torch.nn.torch_aliases'
require 'torch.nn.native_aliases'

-- torch.nn, torch.F (torch.nn.functional), torch.optim, torch.data, torch.distributions and
-- torch.profiler load on first use
local lazy = { nn = 'torch.nn', F = 'torch.nn.functional', optim = 'torch.optim', data = 'torch.data', cuda = 'torch.cuda', distributed = 'torch.distributed',
  distributions = 'torch.distributions', profiler = 'torch.profiler' }
setmetatable(torch, {
  __index = function(t, k)
    local m = lazy[k]
    if m == nil then return nil end
    local v = require(m)
    rawset(t, k, v)
    return v
  end,
})
-- torch.utils.data (PyTorch's name for torch.data) loads on first use too
setmetatable(torch.utils, {
  __index = function(t, k)
    if k ~= 'data' then return nil end
    local v = require 'torch.utils.data'
    rawset(t, k, v)
    return v
  end,
})

return torch
