-- nn.utils.skip_init(module_cls, ...): a module made without its random initialisation, as PyTorch
-- 1.13's: its parameters and buffers are allocated but left uninitialised, and the random number
-- generator is where it was before the call. PyTorch builds the module on the 'meta' device; lutorch
-- has none, so the module is built on the CPU with the generator's state put back afterwards (the
-- initialisation's arithmetic still runs), then every tensor is replaced by an uninitialised one on
-- the device the options asked for (to_empty), else where it was made. The class must take its
-- options (device) last.
local torch = require 'torch'
local class = require 'torch.class'
local Module = require 'torch.nn.module'

return function(module_cls, ...)
  if type(module_cls) ~= 'table' or not class.issubclass(module_cls, Module) then
    error('skip_init: expected a Module class, got ' .. (Module.is_module(module_cls)
      and 'an instance of ' .. module_cls:_get_name() or type(module_cls)), 2)
  end
  local args = table.pack(...)
  local device -- nil: where the constructor put them
  local last = args[args.n]
  if args.n > 0 and type(last) == 'table' and not torch.is_tensor(last) and last.device ~= nil then
    local o = {}
    for k, v in pairs(last) do o[k] = v end
    device, o.device = last.device, 'cpu'
    args[args.n] = o
  end
  local state = torch.get_rng_state()
  local ok, m = pcall(module_cls, table.unpack(args, 1, args.n))
  torch.set_rng_state(state)
  if not ok then error(m, 0) end
  if device ~= nil then return m:to_empty({ device = device }) end
  return m:_apply(function(t) return torch.empty_like(t) end)
end
