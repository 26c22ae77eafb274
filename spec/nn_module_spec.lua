-- nn.Module and the class mechanism: registration by assignment (order, kinds, PyTorch's rules),
-- traversal, train/eval, zero_grad, in-place conversions that keep tensor identity, state dicts and
-- their errors in PyTorch's words, printing compared with PyTorch's exact strings, containers.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local class = require 'torch.class'

-- a small net: fc (Linear 3->2), act (ReLU), a buffer, a nested block
local function make_net()
  local Block = nn.Module:extend('Block')
  function Block:init()
    nn.Module.init(self)
    self.lin = nn.Linear(2, 2)
    self:register_buffer('count', torch.zeros(1))
  end
  function Block:forward(x) return self.lin(x) end
  local Net = nn.Module:extend('Net')
  function Net:init()
    nn.Module.init(self)
    self.fc = nn.Linear(3, 2)
    self.act = nn.ReLU()
    self.scale = nn.Parameter(torch.ones(1))
    self.block = Block()
    self:register_buffer('steps', torch.zeros(1))
    self:register_buffer('scratch', torch.zeros(2), false)
  end
  function Net:forward(x) return self.block(self.act(self.fc(x))) * self.scale end
  return Net()
end

local function names_of(iter_fn)
  local out = {}
  for name in iter_fn do out[#out + 1] = name end
  return out
end

describe('classes', function()
  it('inherit methods two levels deep and call a parent method explicitly', function()
    local A = class('A')
    function A:init(x) self.x = x end
    function A:value() return self.x end
    function A:kind() return 'A' end
    local B = A:extend('B')
    function B:init(x, y) A.init(self, x); self.y = y end
    function B:kind() return 'B' end
    local C = B:extend('C')
    function C:value() return B.value(self) * 10 end
    local c = C(2, 3)
    assert.are.equal(20, c:value())
    assert.are.equal(3, c.y)
    assert.are.equal('B', c:kind())
    assert.are.equal(A, B.super)
    assert.are.equal(B, C.super)
    assert.is_true(class.isinstance(c, A))
    assert.is_true(class.isinstance(c, C))
    assert.is_false(class.isinstance(B(1, 2), C))
    assert.is_false(class.isinstance(42, A))
    assert.is_true(class.issubclass(C, A))
    assert.are.equal(C, class.classof(c))
    assert.are.equal("class 'C'", tostring(C))
    assert.is_true(class.isinstance(torch.zeros(1), torch.Tensor))
  end)

  it('module classes extend two levels deep, with metamethods inherited', function()
    local Base = nn.Module:extend('Base')
    function Base:init(n) nn.Module.init(self); self.fc = nn.Linear(n, n) end
    function Base:forward(x) return self.fc(x) end
    local Derived = Base:extend('Derived')
    function Derived:init(n) Base.init(self, n); self.extra = nn.Linear(n, 1) end
    function Derived:forward(x) return self.extra(Base.forward(self, x)) end
    local d = Derived(4)
    assert.are.equal(4, #d:parameters())
    local x = torch.randn(2, 4)
    local want = d.extra(d.fc(x))
    assert.is_true(d(x):allclose(want))
    assert.is_true(class.isinstance(d, nn.Module))
    assert.are.equal('Derived(\n  (fc): Linear(in_features=4, out_features=4, bias=True)\n'
      .. '  (extra): Linear(in_features=4, out_features=1, bias=True)\n)', tostring(d))
  end)

  it('rejects a class name that is not a string', function()
    H.raises(function() nn.Module:extend(3) end, 'extend', 'class name')
  end)
end)

describe('registration', function()
  it('keeps the assignment order of parameters, buffers and children', function()
    local net = make_net()
    assert.are.same({ 'fc', 'act', 'block' }, names_of(net:named_children()))
    assert.are.same({ 'scale', 'fc.weight', 'fc.bias', 'block.lin.weight', 'block.lin.bias' },
      names_of(net:named_parameters()))
    assert.are.same({ 'steps', 'scratch', 'block.count' }, names_of(net:named_buffers()))
    assert.are.same({ '', 'fc', 'act', 'block', 'block.lin' }, names_of(net:named_modules()))
    assert.are.equal(5, #net:parameters())
    assert.are.equal(3, #net:buffers())
    assert.are.equal(3, #net:children())
    assert.are.equal(5, #net:modules())
    assert.are.equal(net.fc.weight, net:parameters()[2])
    assert.are.equal(net, net:modules()[1])
    -- non-recursive
    assert.are.same({ 'scale' }, names_of(net:named_parameters({ recurse = false })))
    assert.are.equal(1, #net:parameters(false))
    assert.are.same({ 'p.scale', 'p.fc.weight' }, { table.unpack(names_of(net:named_parameters('p')), 1, 2) })
  end)

  it('finds fields through the registries and plain fields', function()
    local m = nn.Module()
    m.w = nn.Parameter(torch.ones(2))
    m.k = 5
    m.plain = torch.zeros(1) -- a plain tensor on a fresh name is a plain field, not a buffer
    assert.are.equal(5, m.k)
    assert.are.equal(1, #m:parameters())
    assert.are.equal(0, #m:buffers())
    assert.is_true(m.training)
    -- a plain field can later become a module: every assignment goes through registration
    m.k = nn.ReLU()
    assert.are.equal(1, #m:children())
  end)

  it('follows PyTorch for assignments to registered names', function()
    local m = nn.Linear(2, 2)
    H.raises(function() m.weight = torch.zeros(2, 2) end,
      "cannot assign 'torch.Tensor' as parameter 'weight' (torch.nn.Parameter or nil expected)")
    m.bias = nil
    assert.is_nil(m.bias)
    assert.are.equal(1, #m:parameters())
    assert.is_nil(m:state_dict().bias)
    m.bias = nn.Parameter(torch.zeros(2)) -- back, in its old place
    assert.are.same({ 'weight', 'bias' }, names_of(m:named_parameters()))
    local s = nn.Sequential(nn.ReLU())
    local holder = nn.Module()
    holder.child = s
    H.raises(function() holder.child = 3 end, "cannot assign 'number' as child module 'child'")
    holder:register_buffer('buf', torch.zeros(1))
    H.raises(function() holder.buf = 'x' end, "cannot assign 'string' as buffer 'buf'")
    holder.buf = torch.ones(3)
    assert.are.equal(3, holder:buffers()[1]:numel())
    -- a parameter assigned over a buffer name moves registries
    holder.buf = nn.Parameter(torch.ones(1))
    assert.are.equal(0, #holder:buffers())
    assert.are.equal(1, #holder:parameters())
  end)

  it('checks names and kinds in register_*/add_module', function()
    local m = nn.Module()
    H.raises(function() m:register_buffer('a.b', torch.zeros(1)) end, 'buffer name can\'t contain "."')
    H.raises(function() m:register_buffer('', torch.zeros(1)) end, "buffer name can't be empty")
    H.raises(function() m:register_buffer('x', 3) end, "cannot assign 'number' object to buffer 'x'")
    H.raises(function() m:register_parameter('p', torch.zeros(1)) end,
      "cannot assign 'torch.Tensor' object to parameter 'p'")
    H.raises(function() m:add_module('c', 5) end, 'add_module: number is not a Module subclass')
    m.plain = 1
    H.raises(function() m:register_buffer('plain', torch.zeros(1)) end, "attribute 'plain' already exists")
    H.raises(function() m:register_buffer('forward', torch.zeros(1)) end, "attribute 'forward' already exists")
    m:add_module('child', nn.Tanh())
    assert.are.equal('Tanh', m.child:_get_name())
    m:register_parameter('p', nn.Parameter(torch.zeros(1)))
    assert.are.equal(1, #m:parameters())
  end)

  it('counts a shared parameter or module once, and state_dict names each use', function()
    local shared = nn.Linear(2, 2)
    local s = nn.Sequential(shared, nn.ReLU(), shared)
    assert.are.equal(2, #s:parameters())
    assert.are.equal(3, #s:modules()) -- the Sequential, the Linear once, the ReLU
    local sd = s:state_dict()
    assert.is_not_nil(sd['1.weight'])
    assert.is_not_nil(sd['3.weight'])
  end)

  it('makes parameters that share data with their source and are leaves', function()
    local t = torch.zeros(3)
    local p = nn.Parameter(t)
    assert.is_true(p.requires_grad)
    assert.is_true(p.is_leaf)
    assert.is_true(nn.parameter.is_parameter(p))
    assert.is_false(nn.parameter.is_parameter(t))
    torch.no_grad(function() p:fill_(2) end)
    assert.are.equal(2, t[1])
    assert.is_false(nn.Parameter(torch.zeros(1), false).requires_grad)
    H.raises(function() nn.Parameter(torch.zeros(1, { dtype = torch.int64 })) end, 'floating point')
    H.raises(function() nn.Parameter(3) end, 'Parameter: expected a tensor')
  end)

  it('get_submodule follows dotted paths', function()
    local net = make_net()
    assert.are.equal(net.block.lin, net:get_submodule('block.lin'))
    H.raises(function() net:get_submodule('block.nope') end, 'has no attribute `nope`')
  end)
end)

describe('apply, train and eval', function()
  it('apply visits children before the module itself', function()
    local net = make_net()
    local seen = {}
    local r = net:apply(function(m) seen[#seen + 1] = m:_get_name() end)
    assert.are.equal(net, r)
    assert.are.same({ 'Linear', 'ReLU', 'Linear', 'Block', 'Net' }, seen)
  end)

  it('train(false)/eval()/train() reach every submodule', function()
    local net = make_net()
    assert.are.equal(net, net:eval())
    for _, m in ipairs(net:modules()) do assert.is_false(m.training) end
    net:train()
    for _, m in ipairs(net:modules()) do assert.is_true(m.training) end
    net.block:train(false)
    assert.is_true(net.training)
    assert.is_false(net.block.lin.training)
    H.raises(function() net:train('yes') end, 'training mode is expected to be boolean')
  end)

  it('requires_grad_ switches every parameter', function()
    local net = make_net()
    net:requires_grad_(false)
    for _, p in ipairs(net:parameters()) do assert.is_false(p.requires_grad) end
    net:requires_grad_()
    for _, p in ipairs(net:parameters()) do assert.is_true(p.requires_grad) end
  end)
end)

describe('zero_grad', function()
  it('sets gradients to nil by default and zeroes them in place when asked', function()
    local net = make_net()
    net(torch.randn(4, 3)):sum():backward()
    for _, p in ipairs(net:parameters()) do assert.is_not_nil(p.grad) end
    local g = net.fc.weight.grad
    net:zero_grad(false)
    assert.are.equal(0, net.fc.weight.grad:abs():sum():item())
    assert.are.equal(0, g:abs():sum():item()) -- the same gradient tensor, zeroed
    net:zero_grad()
    for _, p in ipairs(net:parameters()) do assert.is_nil(p.grad) end
    net(torch.randn(4, 3)):sum():backward()
    net:zero_grad({ set_to_none = true })
    assert.is_nil(net.fc.weight.grad)
  end)
end)

describe('conversions', function()
  it('to(float64) changes parameters, grads and float buffers in place; integer buffers keep their dtype', function()
    local bn = nn.BatchNorm1d(3)
    local net = nn.Sequential(nn.Linear(3, 3), bn)
    local w, rm, nbt = net[1].weight, bn.running_mean, bn.num_batches_tracked
    local before = w:detach():double():clone()
    w.grad = torch.ones(3, 3)
    assert.are.equal(net, net:to(torch.float64))
    assert.are.equal(w, net[1].weight) -- the same object
    assert.are.equal(torch.float64, w.dtype)
    assert.is_true(w.requires_grad)
    assert.is_true(w.is_leaf)
    assert.are.equal(torch.float64, w.grad.dtype)
    assert.are.equal(torch.float64, rm.dtype)
    assert.are.equal(rm, bn.running_mean)
    assert.are.equal(torch.int64, nbt.dtype)
    assert.is_true(w:detach():equal(before))
    net:float()
    assert.are.equal(torch.float32, w.dtype)
    net:half()
    assert.are.equal(torch.float16, w.dtype)
    net:bfloat16()
    assert.are.equal(torch.bfloat16, bn.weight.dtype)
    net:to({ dtype = torch.float64 })
    assert.are.equal(torch.float64, w.dtype)
    net:to(torch.zeros(1))
    assert.are.equal(torch.float32, w.dtype)
    assert.are.equal(torch.int64, nbt.dtype)
  end)

  it('to(device) and cpu() keep identity; bad targets raise', function()
    local m = nn.Linear(2, 2)
    local w = m.weight
    assert.are.equal(m, m:cpu())
    assert.are.equal(m, m:to('cpu'))
    assert.are.equal(w, m.weight)
    assert.are.equal('cpu', w.device.type)
    H.raises(function() m:to(torch.int32) end,
      'nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.int32')
    H.raises(function() m:to(true) end, 'Module.to: expected a device, a dtype or a tensor')
    H.raises(function() m:to('gpu') end)
  end)

  it('moves to another CPU device in place when there are several', function()
    if torch.cpu.device_count() < 2 then return end
    local m = nn.Linear(2, 2)
    local w = m.weight
    m:to('cpu:1')
    assert.are.equal(w, m.weight)
    assert.are.equal(torch.device('cpu:1'), w.device)
    assert.are.equal(torch.device('cpu:1'), m(torch.randn(1, 2, { device = 'cpu:1' })).device)
  end)
end)

describe('state_dict', function()
  it('has dotted keys in module order, detached tensors sharing storage, no non-persistent buffers', function()
    local net = make_net()
    local sd = net:state_dict()
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    assert.are.same({ 'scale', 'steps', 'fc.weight', 'fc.bias', 'block.count', 'block.lin.weight', 'block.lin.bias' },
      keys)
    assert.is_false(sd['fc.weight'].requires_grad)
    torch.no_grad(function() net.fc.weight:fill_(7) end)
    assert.are.equal(7, sd['fc.weight'][1][1])
    assert.is_nil(sd.scratch)
    local kv = net:state_dict({ keep_vars = true })
    assert.are.equal(net.fc.weight, kv['fc.weight'])
    -- keys added later iterate after the module's
    sd.extra = torch.zeros(1)
    local last
    for k in pairs(sd) do last = k end
    assert.are.equal('extra', last)
  end)

  it('load_state_dict copies values, keeping the module dtype and tensors', function()
    local a, b = make_net(), make_net()
    local w = b.fc.weight
    local sd = a:state_dict()
    sd['fc.weight'] = sd['fc.weight']:double() -- a float64 checkpoint into a float32 module
    local r = b:load_state_dict(sd)
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    assert.are.equal('<All keys matched successfully>', tostring(r))
    assert.are.equal(w, b.fc.weight)
    assert.are.equal(torch.float32, w.dtype)
    assert.is_true(w:equal(a.fc.weight))
    assert.is_true(b.block.lin.bias:equal(a.block.lin.bias))
  end)

  it('strict mode raises one error listing missing and unexpected keys in PyTorch\'s format', function()
    local net = make_net()
    local sd = net:state_dict()
    sd['fc.weight'], sd['fc.bias'] = nil, nil
    sd.x = torch.zeros(1)
    sd.y = torch.zeros(1)
    local err = H.raises(function() net:load_state_dict(sd) end)
    assert.truthy(err:find('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.weight", '
      .. '"fc.bias". \n\tUnexpected key(s) in state_dict: "x", "y". ', 1, true))
    -- non-strict: reported, not raised
    local r = net:load_state_dict(sd, { strict = false })
    assert.are.same({ 'fc.weight', 'fc.bias' }, r.missing_keys)
    assert.are.same({ 'x', 'y' }, r.unexpected_keys)
    r = net:load_state_dict(sd, false)
    assert.are.same({ 'x', 'y' }, r.unexpected_keys)
  end)

  it('a plain table of a Linear: missing only, then unexpected only', function()
    local m = nn.Linear(2, 2)
    local err = H.raises(function() m:load_state_dict({ weight = torch.zeros(2, 2) }) end)
    assert.truthy(err:find('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". ', 1,
      true))
    assert.is_nil(err:find('Unexpected', 1, true))
    err = H.raises(function()
      m:load_state_dict({ weight = torch.zeros(2, 2), bias = torch.zeros(2), ['x.y'] = torch.zeros(1) })
    end)
    assert.truthy(err:find('Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) in state_dict: "x.y". ',
      1, true))
  end)

  it('names a size mismatch even when not strict, and still loads the rest', function()
    local net = nn.Sequential(nn.Linear(3, 3))
    local sd = { ['1.weight'] = torch.zeros(2, 3), ['1.bias'] = torch.full({ 3 }, 5.0) }
    local err = H.raises(function() net:load_state_dict(sd, { strict = false }) end)
    assert.truthy(err:find('Error(s) in loading state_dict for Sequential:\n\tsize mismatch for 1.weight: copying a '
      .. 'param with shape torch.Size([2, 3]) from checkpoint, the shape in current model is torch.Size([3, 3]).', 1,
      true))
    assert.are.equal(5, net[1].bias[2])
    -- strict: missing and unexpected first, then the size mismatch
    sd.z = torch.zeros(1)
    err = H.raises(function() net:load_state_dict(sd) end)
    assert.truthy(err:find('\n\tUnexpected key(s) in state_dict: "z". \n\tsize mismatch for 1.weight', 1, true))
    H.raises(function() net:load_state_dict({ ['1.weight'] = 3, ['1.bias'] = torch.zeros(3) }) end,
      'While copying the parameter named "1.weight", expected torch.Tensor or Tensor-like object from checkpoint but '
      .. 'received number')
    H.raises(function() net:load_state_dict(5) end, 'load_state_dict: expected state_dict to be a table, got number')
  end)

  it('a BatchNorm state without num_batches_tracked is not reported missing', function()
    local bn = nn.BatchNorm1d(2)
    local sd = nn.BatchNorm1d(2):state_dict()
    sd.num_batches_tracked = nil
    local r = bn:load_state_dict(sd)
    assert.are.same({}, r.missing_keys)
  end)
end)

describe('printing', function()
  it('matches PyTorch\'s module tree', function()
    local Net = nn.Module:extend('Net')
    function Net:init()
      nn.Module.init(self)
      self.fc1 = nn.Linear(784, 512)
      self.act = nn.ReLU()
    end
    assert.are.equal('Net(\n  (fc1): Linear(in_features=784, out_features=512, bias=True)\n  (act): ReLU()\n)',
      tostring(Net()))
    local seq = nn.Sequential(nn.Conv2d(1, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Dropout(0.25), nn.Linear(10, 2, { bias = false }))
    assert.are.equal('Sequential(\n'
      .. '  (1): Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n'
      .. '  (2): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n'
      .. '  (3): ReLU()\n'
      .. '  (4): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n'
      .. '  (5): Flatten(start_dim=2, end_dim=-1)\n'
      .. '  (6): Dropout(p=0.25, inplace=False)\n'
      .. '  (7): Linear(in_features=10, out_features=2, bias=False)\n'
      .. ')', tostring(seq))
    local outer = nn.Module()
    outer.inner = nn.Sequential(nn.Sequential(nn.Tanh()))
    assert.are.equal('Module(\n  (inner): Sequential(\n    (1): Sequential(\n      (1): Tanh()\n    )\n  )\n)',
      tostring(outer))
    assert.are.equal('Sequential()', tostring(nn.Sequential()))
  end)

  it('prints every layer\'s extra_repr as PyTorch', function()
    local cases = {
      { nn.Conv2d(3, 8, { 3, 5 }, { stride = 2, dilation = 2, groups = 1, bias = false }),
        'Conv2d(3, 8, kernel_size=(3, 5), stride=(2, 2), dilation=(2, 2), bias=False)' },
      { nn.Conv2d(4, 4, 3, { padding = 'same', groups = 2 }),
        'Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=same, groups=2)' },
      { nn.BatchNorm1d(3, { momentum = false, eps = 1e-3, affine = false }),
        'BatchNorm1d(3, eps=0.001, momentum=None, affine=False, track_running_stats=True)' },
      { nn.LayerNorm({ 4, 5 }), 'LayerNorm((4, 5), eps=1e-05, elementwise_affine=True)' },
      { nn.LayerNorm(10), 'LayerNorm((10,), eps=1e-05, elementwise_affine=True)' },
      { nn.Embedding(10, 3, { padding_idx = -1 }), 'Embedding(10, 3, padding_idx=10)' },
      { nn.Embedding(10, 3), 'Embedding(10, 3)' },
      { nn.GELU({ approximate = 'tanh' }), "GELU(approximate='tanh')" },
      { nn.ReLU({ inplace = true }), 'ReLU(inplace=True)' },
      { nn.Softmax(-1), 'Softmax(dim=-1)' },
      { nn.LogSoftmax(), 'LogSoftmax(dim=None)' },
      { nn.AvgPool2d({ 2, 3 }), 'AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0)' },
      { nn.AdaptiveAvgPool2d(1), 'AdaptiveAvgPool2d(output_size=1)' },
      { nn.MaxPool2d(3, { stride = 1, padding = 1, ceil_mode = true }),
        'MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=1, ceil_mode=True)' },
      { nn.Identity(), 'Identity()' },
      { nn.Tanh(), 'Tanh()' },
      { nn.Sigmoid(), 'Sigmoid()' },
      { nn.MSELoss(), 'MSELoss()' },
      { nn.CrossEntropyLoss({ label_smoothing = 0.1 }), 'CrossEntropyLoss()' },
      { nn.BCEWithLogitsLoss(), 'BCEWithLogitsLoss()' },
      { nn.Dropout(), 'Dropout(p=0.5, inplace=False)' },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], tostring(c[1])) end
  end)

  it('ModuleList compresses runs of identical children', function()
    local l = nn.ModuleList({ nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2) })
    assert.are.equal('ModuleList(\n  (1-3): 3 x Linear(in_features=2, out_features=2, bias=True)\n  (4): ReLU()\n'
      .. '  (5): Linear(in_features=2, out_features=2, bias=True)\n)', tostring(l))
    assert.are.equal('ModuleList()', tostring(nn.ModuleList()))
  end)

  it('formats floats as Python\'s repr does', function()
    local f = nn.Module._pyfloat
    local cases = { [0.1] = '0.1', [1e-5] = '1e-05', [0.5] = '0.5', [1.0] = '1.0', [100.0] = '100.0',
      [1e-3] = '0.001', [1.5e-7] = '1.5e-07', [1e16] = '1e+16', [123456.789] = '123456.789', [-2.5] = '-2.5',
      [0.0001] = '0.0001', [1e22] = '1e+22', [1/3] = '0.3333333333333333' }
    for x, want in pairs(cases) do assert.are.equal(want, f(x)) end
  end)
end)

describe('calling', function()
  it('a module without forward raises PyTorch\'s error', function()
    local NoFwd = nn.Module:extend('NoFwd')
    H.raises(function() NoFwd()(torch.zeros(1)) end, 'Module [NoFwd] is missing the required "forward" function')
    H.raises(function() nn.ModuleList({ nn.ReLU() })(torch.zeros(1)) end,
      'Module [ModuleList] is missing the required "forward" function')
  end)

  it('__call passes every argument to forward', function()
    local Add = nn.Module:extend('Add')
    function Add:forward(a, b, c) return a + b + (c or 0) end
    assert.are.equal(6, Add()(1, 2, 3))
  end)
end)

describe('containers', function()
  it('Sequential: varargs or a list, 1-based and negative indexing, #, append, insert, pop, assignment', function()
    local a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    local s = nn.Sequential(a, b, c)
    local s2 = nn.Sequential({ a, b, c })
    assert.are.equal(3, #s)
    assert.are.equal(3, #s2)
    assert.are.equal(a, s[1])
    assert.are.equal(c, s[-1])
    assert.is_nil(s[4])
    local x = torch.randn(4, 2)
    assert.is_true(s(x):allclose(c(b(a(x)))))
    local seen = {}
    for i, m in ipairs(s) do seen[i] = m end
    assert.are.same({ a, b, c }, seen)
    local t = nn.Tanh()
    s:append(t)
    assert.are.equal(t, s[4])
    s:insert(1, nn.Identity())
    assert.are.equal('Identity', s[1]:_get_name())
    assert.are.equal(a, s[2])
    assert.are.equal(t, s:pop())
    assert.are.equal(4, #s)
    s[1] = nil -- removes and renumbers
    assert.are.equal(a, s[1])
    assert.are.same({ '1.weight', '1.bias', '3.weight', '3.bias' }, names_of(s:named_parameters()))
    s[2] = nn.Sigmoid()
    assert.are.equal('Sigmoid', s[2]:_get_name())
    H.raises(function() s[7] = nn.ReLU() end, 'index 7 is out of range')
    H.raises(function() s[1] = 3 end, 'expected a Module')
    H.raises(function() nn.Sequential(nn.ReLU(), 5) end, 'Sequential: expected a Module, got number')
    s:extend({ nn.ReLU(), nn.ReLU() })
    assert.are.equal(5, #s)
  end)

  it('can be extended as a class despite the extend method', function()
    local MySeq = nn.Sequential:extend('MySeq')
    local m = MySeq(nn.ReLU())
    assert.are.equal(1, #m)
    assert.are.equal('MySeq(\n  (1): ReLU()\n)', tostring(m))
  end)

  it('ModuleList registers its modules', function()
    local l = nn.ModuleList()
    for _ = 1, 3 do l:append(nn.Linear(2, 2)) end
    assert.are.equal(3, #l)
    assert.are.equal(6, #l:parameters())
    local holder = nn.Module()
    holder.layers = l
    assert.are.equal('layers.2.weight', names_of(holder:named_parameters())[3])
  end)

  it('ModuleDict: names in order, pairs, keys, pop, deletion', function()
    local d = nn.ModuleDict({ { 'conv', nn.Conv2d(1, 1, 1) }, { 'act', nn.ReLU() } })
    assert.are.same({ 'conv', 'act' }, d:keys())
    assert.are.equal(2, #d)
    assert.are.equal('ReLU', d.act:_get_name())
    local d2 = nn.ModuleDict({ b = nn.ReLU(), a = nn.Tanh() })
    assert.are.same({ 'a', 'b' }, d2:keys())
    local seen = {}
    for k, m in pairs(d) do seen[#seen + 1] = k .. '=' .. m:_get_name() end
    assert.are.same({ 'conv=Conv2d', 'act=ReLU' }, seen)
    d.extra = nn.Identity()
    assert.are.equal(3, #d)
    d.extra = nil
    assert.are.equal(2, #d)
    assert.are.equal('ReLU', d:pop('act'):_get_name())
    assert.are.same({ 'conv' }, d:keys())
    assert.are.equal(1, #d:items())
    H.raises(function() d:pop('zzz') end, "no module named 'zzz'")
    H.raises(function() nn.ModuleDict({ a = 3 }) end, 'expected a Module')
  end)
end)
