-- nn.utils.stateless.functional_call, as PyTorch 1.13's: a module's forward run with other tensors in
-- place of its parameters and buffers, by dotted name. Only the names given are replaced (a weight
-- tied under two names keeps its original under the name not given, as in 1.13); a name the module
-- does not have becomes a field for the call. A tensor the forward assigns to a replaced name goes
-- back into the caller's table; the module's own tensors are back in place afterwards, even when
-- the forward raises.
local torch = require 'torch'
local Module = require 'torch.nn.module'

local VALS, CHANGES = Module._VALS, Module._CHANGES
local stateless = {}

local function what(v)
  if torch.is_tensor(v) then return 'a tensor' end
  if Module.is_module(v) then return 'a ' .. v:_get_name() end
  return 'a ' .. type(v)
end

local function changed(m) rawset(m, CHANGES, (rawget(m, CHANGES) or 0) + 1) end

-- the module that holds name's last part, and that part
local function owner(module, name)
  local m, rest = module, name
  while true do
    local head, tail = rest:match('^([^.]*)%.(.*)$')
    if head == nil then return m, rest end
    local c = m[VALS][head]
    if not Module.is_module(c) then
      error(string.format('functional_call: %s has no attribute `%s` (in %q)', m:_get_name(), head, name), 3)
    end
    m, rest = c, tail
  end
end

local warned = false
local function warn_tied()
  if warned and not torch.is_warn_always_enabled() then return end
  warned = true -- once, as Python's warnings
  io.stderr:write('functional_call was passed multiple values for tied weights. This behavior is deprecated and '
    .. 'will be an error in future versions\n')
end

-- functional_call(module, parameters_and_buffers, args, kwargs) -> module's results:
-- parameters_and_buffers maps dotted names ('0.weight', 'bn.running_mean') to tensors; args is one
-- argument or a table of them (a table that is not a tensor or a module is the argument list: wrap
-- a table argument as {t}); kwargs, a table, goes last, as lutorch's options table
function stateless.functional_call(module, parameters_and_buffers, args, kwargs)
  if not Module.is_module(module) then
    error('functional_call: expected an nn.Module, got ' .. what(module), 2)
  end
  if type(parameters_and_buffers) ~= 'table' or torch.is_tensor(parameters_and_buffers)
    or Module.is_module(parameters_and_buffers) then
    error('functional_call: expected parameters_and_buffers to be a table of dotted names to tensors, got '
      .. what(parameters_and_buffers), 2)
  end
  if kwargs ~= nil and (type(kwargs) ~= 'table' or torch.is_tensor(kwargs) or Module.is_module(kwargs)) then
    error('functional_call: expected kwargs to be a table, got ' .. what(kwargs), 2)
  end
  local argv
  if args == nil then
    argv = { n = 0 }
  elseif type(args) == 'table' and not torch.is_tensor(args) and not Module.is_module(args) then
    argv = table.move(args, 1, args.n or #args, 1, { n = args.n or #args })
  else
    argv = { args, n = 1 }
  end
  if kwargs ~= nil then
    argv.n = argv.n + 1
    argv[argv.n] = kwargs
  end

  local swaps, replaced = {}, {}
  for name, t in pairs(parameters_and_buffers) do
    if type(name) ~= 'string' then
      error('functional_call: expected the names to be strings, got ' .. what(name), 2)
    end
    if not torch.is_tensor(t) then
      error(string.format("functional_call: the value for '%s' is %s, expected a tensor", name, what(t)), 2)
    end
    local m, attr = owner(module, name)
    local old = m[VALS][attr]
    if old ~= nil then
      if replaced[old] == nil then replaced[old] = t elseif replaced[old] ~= t then warn_tied() end
    end
    swaps[#swaps + 1] = { m, attr, old, t, name }
  end
  for _, s in ipairs(swaps) do
    s[1][VALS][s[2]] = s[4]
    changed(s[1])
  end
  local out = table.pack(pcall(module, table.unpack(argv, 1, argv.n)))
  for i = #swaps, 1, -1 do
    local s = swaps[i]
    local vals = s[1][VALS]
    if not rawequal(vals[s[2]], s[4]) then parameters_and_buffers[s[5]] = vals[s[2]] end
    vals[s[2]] = s[3]
    changed(s[1])
  end
  if not out[1] then error(out[2], 0) end
  return table.unpack(out, 2, out.n)
end

return stateless
