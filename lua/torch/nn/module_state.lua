-- nn.Module's methods for its state beyond forward, as PyTorch 1.13's: parameters and buffers by
-- dotted path (get_parameter, get_buffer), extra state (get_extra_state / set_extra_state, which a
-- class defines to have state_dict save and load_state_dict restore something that is not a
-- tensor), the state-dict hooks (_register_state_dict_hook, _register_load_state_dict_pre_hook,
-- register_load_state_dict_post_hook; module.lua's state_dict and load_state_dict run them), and
-- the conversions that replace every tensor (to_empty, type) or have nothing to do (share_memory).
-- module.lua calls this file's function with the Module class and its private helpers.
local torch = require 'torch'

return function(Module, P)
  local VALS, KIND, get_name, typename = P.VALS, P.KIND, P.get_name, P.typename

  -- the module holding target's last name, and that name; what names the caller in errors
  local function owner_of(self, target, what)
    if type(target) ~= 'string' then
      error(string.format('%s: expected the target to be a string, got %s', what, typename(target)), 3)
    end
    local path, name = target:match('^(.*)%.([^.]*)$')
    if path == nil then path, name = '', target end
    local mod = P.submodule_at(self, path, what, 3)
    if mod[VALS][name] == nil and mod[KIND][name] == nil and getmetatable(mod)[name] == nil then
      error(string.format('%s: %s has no attribute `%s`', what, get_name(mod), name), 3)
    end
    return mod, name
  end

  -- m:get_parameter('0.weight'): the parameter at a dotted path
  function Module:get_parameter(target)
    local mod, name = owner_of(self, target, 'get_parameter')
    local p = mod[VALS][name]
    if mod[KIND][name] ~= 'param' or p == nil then
      error(string.format('get_parameter: `%s` is not an nn.Parameter', name), 2)
    end
    return p
  end

  -- m:get_buffer('bn.running_mean'): the buffer at a dotted path (nil for one registered as nil)
  function Module:get_buffer(target)
    local mod, name = owner_of(self, target, 'get_buffer')
    if mod[KIND][name] ~= 'buffer' then error(string.format('get_buffer: `%s` is not a buffer', name), 2) end
    return mod[VALS][name]
  end

  -- a class that has extra state defines both: state_dict saves get_extra_state() under
  -- prefix .. '_extra_state', load_state_dict passes that value to set_extra_state
  function Module:get_extra_state()
    error(string.format('get_extra_state: %s does not define get_extra_state (a class with extra state defines '
      .. 'get_extra_state and set_extra_state)', get_name(self)), 2)
  end

  function Module:set_extra_state()
    error(string.format('set_extra_state: %s does not define set_extra_state (a class with extra state defines '
      .. 'get_extra_state and set_extra_state)', get_name(self)), 2)
  end

  -- m:_register_state_dict_hook(hook) -> handle: hook(module, state_dict, prefix, local_metadata)
  -- after the module's state (its submodules' included) is in state_dict; it may edit state_dict,
  -- or return a replacement (which becomes the result of the state_dict call made on this module)
  function Module:_register_state_dict_hook(hook)
    return Module._add_hook(self, '_state_dict_hooks', hook, '_register_state_dict_hook')
  end

  -- m:_register_load_state_dict_pre_hook(hook, with_module) -> handle: before the module loads,
  -- hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs), with
  -- the module first when with_module; state_dict is load_state_dict's copy, which the hook may edit;
  -- strict is true, as PyTorch 1.13 passes it (load_state_dict's strict decides only the error)
  function Module:_register_load_state_dict_pre_hook(hook, with_module)
    if type(with_module) == 'table' then with_module = with_module.with_module end
    local handle = Module._add_hook(self, '_load_state_dict_pre_hooks', hook, '_register_load_state_dict_pre_hook')
    -- the module is the one that loads, so that a deep copy's hook gets the copy
    handle.hooks[#handle.hooks].with_module = with_module and true or nil
    return handle
  end

  -- m:register_load_state_dict_post_hook(hook) -> handle: hook(module, incompatible_keys) after the
  -- module and its submodules have loaded; incompatible_keys.missing_keys and .unexpected_keys are
  -- load_state_dict's lists so far, which the hook may edit in place (before strict mode's check);
  -- it must return nothing
  function Module:register_load_state_dict_post_hook(hook)
    return Module._add_hook(self, '_load_state_dict_post_hooks', hook, 'register_load_state_dict_post_hook')
  end

  -- m:to_empty({device = d}): every parameter and buffer (and gradient) replaced in place by an
  -- uninitialised tensor of its shape and dtype on d
  function Module:to_empty(opts)
    local device = opts
    if type(opts) == 'table' then device = opts.device end
    if device == nil then error("to_empty: expected the device, as to_empty({device = 'cpu'})", 2) end
    if type(device) == 'string' then
      local ok, d = pcall(torch.device, device)
      if not ok then error('to_empty: ' .. tostring(d), 2) end
      device = d
    elseif not P.is_device(device) then
      error('to_empty: expected the device to be a torch.device or a string, got ' .. typename(device), 2)
    end
    return self:_apply(function(t) return torch.empty_like(t, { device = device }) end)
  end

  -- m:type(dtype): every parameter and buffer cast to dtype, floating or not (Module.to casts only
  -- the floating ones); a parameter that requires grad cannot become an integer one
  function Module:type(dst_type)
    if not P.is_dtype(dst_type) then
      error('type: expected a dtype (torch.float64, torch.int32, ...), got ' .. typename(dst_type), 2)
    end
    if not dst_type.is_floating_point then
      for name, p in self:named_parameters() do
        if p.requires_grad then
          error(string.format("type: cannot cast parameter '%s' to %s: a tensor that requires gradients must be "
            .. 'floating point', name, tostring(dst_type)), 2)
        end
      end
    end
    return self:_apply(function(t) return t:to(dst_type) end)
  end

  -- m:share_memory(): returns m. lutorch's tensors already live in memory that every Lua state of
  -- the process (DataLoader workers, DataParallel replicas) reaches, so there is nothing to move.
  function Module:share_memory() return self end
end
