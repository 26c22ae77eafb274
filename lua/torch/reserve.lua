-- reserve(op, like, shape, level): some functions build Lua tables as long as their output (index
-- lists, rows) before making any tensor. They first make sure that a tensor of the output's shape
-- (like's dtype and device) can exist, so that a size no memory holds fails at once, with the
-- allocator's error under the function's name, instead of after the loop has filled the memory.
-- The block, given back at once, stays in the allocator's cache for the output. Sizes may be
-- floats (sums that could pass 2^63 are made in floats). level: error's, counted from the caller.
local torch = require 'torch'

return function(op, like, shape, level)
  local numel, ints = 1.0, {}
  for i, s in ipairs(shape) do
    numel = numel * s
    ints[i] = math.tointeger(s)
  end
  local ok, t = false, 'size is too large'
  if numel < 2.0 ^ 62 then ok, t = pcall(torch.empty, ints, { dtype = like.dtype, device = like.device }) end
  if not ok then
    local sizes = {}
    for i, s in ipairs(shape) do sizes[i] = ints[i] and tostring(ints[i]) or string.format('%.0f', s) end
    error(string.format('%s: an output of size [%s] cannot be made: %s', op, table.concat(sizes, ', '),
      (tostring(t):gsub('^[^:]*%.lua:%d+: ', ''))), (level or 1) + 1)
  end
  t:set_(torch.empty(0, { dtype = like.dtype, device = like.device }))
end
