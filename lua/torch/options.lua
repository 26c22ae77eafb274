-- Options tables: PyTorch's keyword arguments, passed as a Lua table after the positional ones,
-- checked so that a misspelt option is an error naming it (it would otherwise be ignored without a
-- word). Shared by torch's functions, torch.linalg, torch.nn.functional and the modules.
local torch = require 'torch'

local options = {}

local function refuse_unknown(o, op, keys, level)
  for k in pairs(o) do
    local known = false
    for _, name in ipairs(keys) do
      if k == name then known = true; break end
    end
    if not known then
      error(string.format("%s: unknown option '%s' (its options are %s)", op, tostring(k), table.concat(keys, ', ')),
        level + 1)
    end
  end
end

--- options.check(o, op, keys, level = 3) -> o, or {} for nil: an error (at `level`, counted from
--- the caller of check: 3 is the caller of the function that called check) for anything but a
--- table, and for a key not in the list `keys`
function options.check(o, op, keys, level)
  level = level or 3
  if o == nil then return {} end
  if type(o) ~= 'table' or torch.is_tensor(o) then
    error(string.format('%s: expected an options table, got %s', op, torch.is_tensor(o) and 'a tensor' or type(o)),
      level)
  end
  refuse_unknown(o, op, keys, level)
  return o
end

--- options.args(op, given, names, defaults = {}, level = 3) -> the values of `names` in order:
--- given's positional values, or, when given[1] is a table that is not a tensor, its fields (keys
--- not in names are an error); nil values take `defaults`' entries
function options.args(op, given, names, defaults, level)
  level = level or 3
  defaults = defaults or {}
  local v = {}
  local t = given[1]
  if type(t) == 'table' and not torch.is_tensor(t) then
    refuse_unknown(t, op, names, level)
    for i, n in ipairs(names) do v[i] = t[n] end
  else
    for i = 1, #names do v[i] = given[i] end
  end
  for i = 1, #names do
    if v[i] == nil then v[i] = defaults[i] end
  end
  return table.unpack(v, 1, #names)
end

return options
