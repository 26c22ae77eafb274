-- torch.segment_reduce: reductions over consecutive segments of a dim, composed from
-- scatter_reduce (whose gradients it takes: max and min share a segment's gradient among its equal
-- extremes, as PyTorch).
local torch = require 'torch'
local U = require 'torch.composite'
local check_tensor, norm_dim = U.check_tensor, U.norm_dim

local reductions = { max = 'amax', min = 'amin', sum = 'sum', prod = 'prod', mean = 'sum' }
-- an empty segment's value without `initial`
local empty_value = { max = -math.huge, min = math.huge, sum = 0, prod = 1, mean = 0 / 0 }

local function check_integer_tensor(t, op, what)
  check_tensor(t, op, what)
  if t.dtype ~= torch.int64 and t.dtype ~= torch.int32 then
    error(string.format('%s: %s must be an int64 or int32 tensor, got %s', op, what, t.dtype.name), 3)
  end
end

--- torch.segment_reduce(data, reduce, {lengths, offsets, axis = 1, unsafe = false, initial}):
--- data's consecutive segments along axis reduced with 'max', 'mean', 'min', 'sum' or 'prod'.
--- lengths gives the segments' sizes (a 1-D tensor, or for axis > 1 one row of sizes for each
--- index of the dims before axis: lengths has axis dims, its last the segments); offsets instead
--- gives each segment's first 1-based index along axis and, last, one past the end (PyTorch's
--- 0-based offsets plus 1). Without unsafe the sizes must add up to data's size along axis.
--- An empty segment gives `initial` or -inf (max), inf (min), 0 (sum), 1 (prod), NaN (mean);
--- initial also takes part in every segment (mean: (initial + sum) / count). Floating data.
function torch.segment_reduce(data, reduce, o)
  local op = 'segment_reduce'
  check_tensor(data, op, 'data')
  o = U.opts_of(o, op, { 'lengths', 'indices', 'offsets', 'axis', 'unsafe', 'initial' })
  if not reductions[reduce] then
    error(op .. ": reduce must be one of 'max', 'mean', 'min', 'sum' or 'prod', got " .. tostring(reduce), 2)
  end
  if not data.dtype.is_floating_point then
    error(string.format('%s: not implemented for %s (expected floating point data)', op, data.dtype.name), 2)
  end
  if o.indices ~= nil then error(op .. ': indices based reduction is not supported (as in PyTorch)', 2) end
  if (o.lengths == nil) == (o.offsets == nil) then error(op .. ': give exactly one of lengths and offsets', 2) end
  if o.initial ~= nil and type(o.initial) ~= 'number' then error(op .. ': initial must be a number', 2) end
  if data:dim() == 0 then error(op .. ': data must have at least 1 dimension', 2) end
  local axis = norm_dim(o.axis or 1, data:dim(), op, 'axis')
  local lengths
  if o.lengths ~= nil then
    check_integer_tensor(o.lengths, op, 'lengths')
    lengths = o.lengths:long()
  else
    check_integer_tensor(o.offsets, op, 'offsets')
    local off = o.offsets:long()
    if off:dim() == 0 or off:size(-1) < 1 then error(op .. ': offsets must have at least one entry along its last dim', 2) end
    local n = off:size(-1)
    lengths = off:narrow(-1, 2, n - 1) - off:narrow(-1, 1, n - 1)
    if not o.unsafe and off:numel() > 0 and (not off:select(-1, 1):eq(1):all():item()) then
      error(op .. ': offsets must start at 1 (1-based)', 2)
    end
  end
  local what = o.lengths ~= nil and 'lengths' or 'offsets'
  if lengths:dim() ~= axis then
    error(string.format('%s: expected axis (%d) to be the last dimension of %s, which has %d', op, axis, what,
      lengths:dim()), 2)
  end
  for d = 1, axis - 1 do
    if lengths:size(d) ~= data:size(d) then
      error(string.format('%s: %s of shape %s does not match data of shape %s before axis %d', op, what,
        tostring(lengths.shape), tostring(data.shape), axis), 2)
    end
  end
  if lengths:numel() > 0 and lengths:min():item() < 0 then error(op .. ': ' .. what .. ' gives a negative length', 2) end
  local size = data:size(axis)
  if not o.unsafe and not lengths:sum(-1):eq(size):all():item() then
    error(string.format('%s: the segment lengths must add up to data:size(%d) = %d along every row (unless unsafe)', op,
      axis, size), 2)
  end
  local S = lengths:size(-1)
  -- each position's 1-based segment along axis: one more than the number of segment ends at or before it
  local ends = lengths:cumsum(-1):unsqueeze(-1)
  local pos = torch.arange(0, size, { dtype = torch.int64, device = data.device })
  local seg = ends:le(pos):sum(-2) + 1 -- lead..., size
  local shape = {}
  for d = 1, data:dim() do shape[d] = d <= axis and data:size(d) or 1 end
  local index = seg:clamp(1, math.max(S, 1)):reshape(shape):expand(data.shape)
  -- positions past the last segment (unsafe lengths that fall short) are left out
  local keep = seg:le(S):reshape(shape):expand(data.shape)
  local out_shape = {}
  for d = 1, data:dim() do out_shape[d] = d == axis and S or data:size(d) end
  local base_value = o.initial
  if base_value == nil then base_value = reduce == 'mean' and 0 or empty_value[reduce] end
  local base = torch.full(out_shape, base_value, { dtype = data.dtype, device = data.device })
  if S == 0 then return base end
  local identity = ({ amax = -math.huge, amin = math.huge, sum = 0, prod = 1 })[reductions[reduce]]
  local src = torch.where(keep, data, torch.full_like(data, identity))
  local r = base:scatter_reduce(axis, index, src, reductions[reduce], { include_self = true })
  if reduce ~= 'mean' then return r end
  local count = lengths:to(data.dtype)
  for _ = axis + 1, data:dim() do count = count:unsqueeze(-1) end
  local mean = r / count
  return torch.where(count:eq(0), torch.full_like(mean, o.initial or 0 / 0), mean)
end
