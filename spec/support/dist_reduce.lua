-- The reference reduction of the MPI specs' scripts (spec/support/dist_collectives.lua,
-- dist_p2p.lua): op over the ranks' values vals of one element, in plain Lua, as torch.distributed
-- reduces dtype dt: bool's SUM and MAX are "or", PRODUCT and MIN "and"; AVG truncates integers (the
-- values are positive: floor).
local Op = require('torch').distributed.ReduceOp

return function(dt, op, vals)
  if dt == 'bool' then
    local any, all = false, true
    for _, v in ipairs(vals) do any = any or v; all = all and v end
    if op == Op.PRODUCT or op == Op.MIN then return all end
    return any
  end
  local acc = vals[1]
  for k = 2, #vals do
    local v = vals[k]
    if op == Op.SUM or op == Op.AVG then acc = acc + v
    elseif op == Op.PRODUCT then acc = acc * v
    elseif op == Op.MIN then acc = math.min(acc, v)
    else acc = math.max(acc, v) end
  end
  if op == Op.AVG then
    if dt:match('int') then
      acc = acc // #vals -- values are positive: truncation is floor
    else
      acc = acc / #vals
    end
  end
  return acc
end
