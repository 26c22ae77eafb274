-- nn.Module's state methods (module_state.lua and module.lua's state dicts), as PyTorch 1.13's:
-- get_parameter / get_buffer by dotted path, extra state in state_dict and load_state_dict, the
-- state-dict hooks (their arguments, edits and replacements, removal), to_empty, type and
-- share_memory. The expected keys and hook arguments are those PyTorch 1.13 gives for the same
-- modules (indices 1-based here).
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local f64 = torch.float64

-- a module with a parameter and extra state (a plain table)
local Extra = nn.Module:extend('Extra')
function Extra:init() self.w = nn.Parameter(torch.zeros(1, { dtype = f64 })); self.v = 7 end
function Extra:get_extra_state() return { v = self.v } end
function Extra:set_extra_state(st) self.v = st.v end

local function keys(sd)
  local out = {}
  for k in pairs(sd) do out[#out + 1] = k end
  return out
end

local function ordered(pairs_list)
  local sd = nn.Module._ordered_dict()
  for _, kv in ipairs(pairs_list) do sd[kv[1]] = kv[2] end
  return sd
end

describe('Module:get_parameter and get_buffer', function()
  local net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
  it('find the tensors by dotted path', function()
    assert.are.equal(net[1].weight, net:get_parameter('1.weight'))
    assert.are.equal(net[2].bias, net:get_parameter('2.bias'))
    assert.are.equal(net[2].running_var, net:get_buffer('2.running_var'))
    assert.are.equal(net[1].bias, net[1]:get_parameter('bias'))
  end)
  it('raise PyTorch\'s errors, naming the method', function()
    H.raises(function() net:get_parameter('1.foo') end, 'get_parameter: Linear has no attribute `foo`')
    H.raises(function() net:get_parameter('3.weight') end, 'get_parameter: Sequential has no attribute `3`')
    H.raises(function() net:get_parameter('2.running_mean') end, 'get_parameter: `running_mean` is not an nn.Parameter')
    H.raises(function() net:get_parameter('1.forward') end, 'get_parameter: `forward` is not an nn.Parameter')
    H.raises(function() net:get_buffer('1.weight') end, 'get_buffer: `weight` is not a buffer')
    H.raises(function() net:get_buffer('2.nothing') end, 'get_buffer: BatchNorm1d has no attribute `nothing`')
    H.raises(function() net:get_parameter(3) end, 'get_parameter: expected the target to be a string, got number')
    local nobias = nn.Linear(2, 2, { bias = false })
    H.raises(function() nobias:get_parameter('bias') end, 'get_parameter: `bias` is not an nn.Parameter')
  end)
end)

describe('Module extra state', function()
  it('state_dict saves get_extra_state() under prefix .. "_extra_state", after the tensors', function()
    local net = nn.Sequential(nn.Linear(2, 2), Extra())
    net[2].v = 11
    local sd = net:state_dict()
    assert.are.same({ '1.weight', '1.bias', '2.w', '2._extra_state' }, keys(sd))
    assert.are.same({ v = 11 }, sd['2._extra_state'])
    assert.are.same({ 'w', '_extra_state' }, keys(Extra():state_dict()))
  end)
  it('load_state_dict passes it to set_extra_state; a missing one is a missing key', function()
    local a, b = Extra(), Extra()
    a.v = 42
    torch.no_grad(function() a.w:fill_(3) end)
    b:load_state_dict(a:state_dict())
    assert.are.equal(42, b.v)
    assert.are.equal(3, b.w:item())
    local r = b:load_state_dict({ w = torch.zeros(1, { dtype = f64 }) }, false)
    assert.are.same({ '_extra_state' }, r.missing_keys)
    H.raises(function() b:load_state_dict({ w = torch.zeros(1, { dtype = f64 }) }) end,
      'Missing key(s) in state_dict: "_extra_state".')
  end)
  it('a module without set_extra_state finds "_extra_state" unexpected; the base methods raise', function()
    local m = nn.Linear(1, 1)
    local r = m:load_state_dict({ weight = torch.zeros(1, 1), bias = torch.zeros(1), _extra_state = 5 }, false)
    assert.are.same({ '_extra_state' }, r.unexpected_keys)
    assert.are.same({}, r.missing_keys)
    H.raises(function() m:get_extra_state() end, 'get_extra_state: Linear does not define get_extra_state')
    H.raises(function() m:set_extra_state(1) end, 'set_extra_state: Linear does not define set_extra_state')
  end)
end)

describe('load_state_dict hooks', function()
  it('post-hooks run after the submodules, with the lists so far (PyTorch 1.13\'s)', function()
    local net = nn.Sequential(nn.Linear(2, 2), Extra())
    local log = {}
    local function post(m, k)
      log[#log + 1] = { m:_get_name(), table.concat(k.missing_keys, ','), table.concat(k.unexpected_keys, ',') }
    end
    net:register_load_state_dict_post_hook(post)
    net[2]:register_load_state_dict_post_hook(post)
    net[1]:register_load_state_dict_post_hook(post)
    local sd = ordered { { 'a', 1 }, { '1.weight', torch.zeros(2, 2) }, { '1.x', 1 }, { 'b', 2 },
      { '2.w', torch.ones(1, { dtype = f64 }) }, { '2.w.z', 3 } }
    local r = net:load_state_dict(sd, false)
    -- PyTorch 1.13 gives missing ['0.bias', '1._extra_state'], unexpected ['a', 'b', '0.x'] ('1.w.z'
    -- is under a parameter's name, which it does not flag), and these calls in this order
    assert.are.same({ '1.bias', '2._extra_state' }, r.missing_keys)
    assert.are.same({ 'a', 'b', '1.x' }, r.unexpected_keys)
    assert.are.same({
      { 'Linear', '1.bias', 'a,b,1.x' },
      { 'Extra', '1.bias,2._extra_state', 'a,b,1.x' },
      { 'Sequential', '1.bias,2._extra_state', 'a,b,1.x' },
    }, log)
    assert.are.equal(1, net[2].w:item())
  end)
  it('a post-hook may clear the keys in place, and strict mode then passes; handles remove', function()
    local m = Extra()
    local calls = 0
    local h = m:register_load_state_dict_post_hook(function(mod, k)
      calls = calls + 1
      assert.are.equal(m, mod)
      for i = #k.missing_keys, 1, -1 do table.remove(k.missing_keys, i) end
      for i = #k.unexpected_keys, 1, -1 do table.remove(k.unexpected_keys, i) end
    end)
    local r = m:load_state_dict({ junk = torch.zeros(1) })
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    assert.are.equal(1, calls)
    h:remove()
    H.raises(function() m:load_state_dict({ junk = torch.zeros(1) }) end, 'Missing key(s) in state_dict: "w", '
      .. '"_extra_state". ', 'Unexpected key(s) in state_dict: "junk". ')
    assert.are.equal(1, calls)
  end)
  it('a post-hook that returns a value is an error; a hook must be callable', function()
    local m = nn.Linear(1, 1)
    m:register_load_state_dict_post_hook(function() return 1 end)
    H.raises(function() m:load_state_dict(m:state_dict()) end,
      'load_state_dict: hooks registered with register_load_state_dict_post_hook are not expected to return')
    H.raises(function() m:register_load_state_dict_post_hook(5) end,
      'register_load_state_dict_post_hook: expected a function, got number')
    H.raises(function() m:_register_load_state_dict_pre_hook('x') end,
      '_register_load_state_dict_pre_hook: expected a function, got string')
    H.raises(function() m:_register_state_dict_hook({}) end, '_register_state_dict_hook: expected a function, got table')
  end)
  it('pre-hooks get (state_dict, prefix, local_metadata, strict, missing, unexpected, errors) and may edit the '
    .. 'state dict', function()
    local net = nn.Sequential(nn.Linear(2, 2), Extra())
    local seen
    net[2]:_register_load_state_dict_pre_hook(function(sd, prefix, md, strict, missing, unexpected, errs)
      seen = { prefix, md, strict, table.concat(missing, ','), table.concat(unexpected, ','), #errs }
      sd[prefix .. 'w'] = sd[prefix .. 'old_w']   -- a renamed key
      sd[prefix .. 'old_w'] = nil
    end)
    local r = net:load_state_dict({ ['2._extra_state'] = { v = 3 }, ['2.old_w'] = torch.full({ 1 }, 5.0) }, false)
    -- PyTorch 1.13: pre '1.' {} True ['0.weight', '0.bias'] [] []
    assert.are.same({ '2.', {}, true, '1.weight,1.bias', '', 0 }, seen)
    assert.are.equal(3, net[2].v)
    assert.are.equal(5, net[2].w:item())
    assert.are.same({ '1.weight', '1.bias' }, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
  end)
  it('with_module puts the module first; an error message a pre-hook adds is raised', function()
    local m = nn.Linear(1, 1)
    local got
    m:_register_load_state_dict_pre_hook(function(mod, sd, prefix, md, strict, missing, unexpected, errs)
      got = mod
      errs[#errs + 1] = 'the hook says no'
    end, true)
    H.raises(function() m:load_state_dict(m:state_dict()) end, 'Error(s) in loading state_dict for Linear:',
      'the hook says no')
    assert.are.equal(m, got)
    -- a deep copy's hook gets the copy, as PyTorch's deepcopy of the hook's partial(hook, module)
    local c = m:_deepcopy()
    pcall(c.load_state_dict, c, c:state_dict())
    assert.are.equal(c, got)
  end)
end)

describe('state_dict hooks', function()
  it('get (module, state_dict, prefix, local_metadata) after the module\'s state and may edit it', function()
    local net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    local seen = {}
    net[2]:_register_state_dict_hook(function(m, sd, prefix, md)
      seen[#seen + 1] = { m, keys(sd), prefix, md }
      sd[prefix .. 'note'] = 'hi'
    end)
    local sd = net:state_dict()
    assert.are.equal(1, #seen)
    assert.are.equal(net[2], seen[1][1])
    assert.are.same({ '1.weight', '1.bias', '2.weight', '2.bias' }, seen[1][2])
    assert.are.equal('2.', seen[1][3])
    assert.are.same({}, seen[1][4])
    assert.are.same({ '1.weight', '1.bias', '2.weight', '2.bias', '2.note' }, keys(sd))
    assert.are.equal('hi', sd['2.note'])
  end)
  it('a replacement is the result at the top, and ignored below (as PyTorch\'s parent ignores it)', function()
    local net = nn.Sequential(nn.Linear(2, 2))
    net[1]:_register_state_dict_hook(function() return { ignored = true } end)
    assert.are.same({ '1.weight', '1.bias' }, keys(net:state_dict()))
    local h = net:_register_state_dict_hook(function(_, sd)
      local only = {}
      only.w = sd['1.weight']
      return only
    end)
    local sd = net:state_dict()
    assert.are.same({ 'w' }, keys(sd))
    assert.is_true(sd.w:equal(net[1].weight))
    h:remove()
    assert.are.same({ '1.weight', '1.bias' }, keys(net:state_dict()))
  end)
end)

describe('Module:to_empty, type and share_memory', function()
  it('to_empty keeps every tensor object, shape, dtype and requires_grad, on the device', function()
    local m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)):double()
    local w, rm = m[1].weight, m[2].running_mean
    assert.are.equal(m, m:to_empty({ device = 'cpu' }))
    assert.are.equal(w, m[1].weight)
    assert.are.equal(rm, m[2].running_mean)
    assert.are.same({ 2, 3 }, { w:size(1), w:size(2) })
    assert.are.equal(f64, w.dtype)
    assert.are.equal(torch.int64, m[2].num_batches_tracked.dtype)
    assert.is_true(w.requires_grad)
    assert.are.equal('cpu', w.device.type)
    m:to_empty(torch.device('cpu'))
    H.raises(function() m:to_empty() end, "to_empty: expected the device, as to_empty({device = 'cpu'})")
    H.raises(function() m:to_empty({ device = 3 }) end, 'to_empty: expected the device to be a torch.device or a '
      .. 'string, got number')
    H.raises(function() m:to_empty({ device = 'nowhere' }) end, 'to_empty: ')
  end)
  it('type casts floating and integer tensors alike (to casts only the floating ones)', function()
    local m = nn.Linear(2, 2)
    m:register_buffer('count', torch.tensor({ 1, 2 }))
    m.weight.grad = torch.ones(2, 2)
    assert.are.equal(m, m:type(f64))
    assert.are.equal(f64, m.weight.dtype)
    assert.are.equal(f64, m.weight.grad.dtype)
    assert.are.equal(f64, m.count.dtype)
    assert.are.same({ 1, 2 }, m.count:totable())
    m:requires_grad_(false)
    m.weight.grad = nil
    m.weight:copy_(torch.tensor({ { 1.7, -2.2 }, { 3, 4 } }))
    m:type(torch.int32)
    assert.are.equal(torch.int32, m.weight.dtype)
    assert.are.same({ { 1, -2 }, { 3, 4 } }, m.weight:totable())
    assert.is_true(nn.Module.is_module(m))
  end)
  it('type refuses an integer dtype for a parameter that requires grad, and a non-dtype', function()
    local m = nn.Sequential(nn.Linear(2, 2))
    H.raises(function() m:type(torch.int64) end, "type: cannot cast parameter '1.weight' to torch.int64")
    assert.are.equal(torch.float32, m[1].weight.dtype)
    H.raises(function() m:type('torch.DoubleTensor') end, 'type: expected a dtype (torch.float64, torch.int32, ...), '
      .. 'got string')
  end)
  it('share_memory returns the module unchanged', function()
    local m = nn.Linear(2, 2)
    local w = m.weight:clone()
    assert.are.equal(m, m:share_memory())
    assert.is_true(w:equal(m.weight))
  end)
end)
